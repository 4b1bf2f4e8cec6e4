"""Typed element access for the CPU kernels: one kernel body serves every dtype.

They dispatch on the storage dtype at compile time (see :mod:`adaptive_pool.dtypes`: float16
is stored as uint16, bfloat16 as int16) and inline to the shared codecs:

* ``dec(a, v)`` / ``enc(a, v)``: a stored element of ``a``'s dtype to its accumulation type and
  back (rounded once);
* ``get(a, i)`` / ``put(a, i, v)``: the same through element ``i`` of a flat array (``put``
  for scattered stores, where a branch is cheaper than arithmetic; ``enc`` in loops LLVM
  vectorises);
* ``load_row`` / ``store_row``: whole rows, vectorised at unit stride (``store_numbers``: +0.0
  where another array is NaN);
* ``acc(a, v)``: a number in ``a``'s accumulation type; ``scratch(a, n)``: ``n`` of them;
* ``decodes(a)``: whether ``a`` holds 16-bit patterns (a compile-time constant);
* ``key(a, v)`` / ``key_nan(a)``: integers ordered like the stored values (max pooling);
* ``prefetch_to(a, pf, upto, end)``: ask for cache lines ahead of a stream's reads;
* ``borrow(a)``: a view that holds no reference (no atomic counts where a loop reassigns it;
  a tuple's views for a tuple); ``keep(owners)``: the last use of the arrays such views were
  made from.

Flat indices are never negative (a flat view starts at the lowest address it spans), so they
are cast to unsigned: numba then skips its negative-index wraparound, which otherwise blocks
vectorisation and cost 3x on short rows. The kernels do the same for scratch indices that are
not plain ``range`` counters from zero (LLVM proves those non-negative itself): 1.3-2x on the
average backward.

CPU only: numba-cuda compiles overloads as device functions, which needs a driver, so the CUDA
backend binds the same codecs into its kernels directly.

float16 conversions use the CPU's own instructions where numba's target has them (x86 F16C:
``vcvtph2ps``/``vcvtps2ph``, 2-3x faster than the integer codec, and vectorised): the same
values bit for bit, except that a signalling NaN comes out quiet, which is what any arithmetic
on it would do next (the tests check every pattern). Without F16C, LLVM would call a runtime
helper that numba's JIT does not link (a crash), so the integer codec serves there.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils, ir_utils
from numba.extending import intrinsic, overload

from ..dtypes import _bitcast, bf16_decode, bf16_encode, bf16_round_ir, f16_decode, f16_encode


def _target() -> tuple[str, str, str]:
    """Numba's CPU target: LLVM's triple, CPU name and features (empty where unknown)."""
    try:
        from numba.core.registry import cpu_target  # noqa: PLC0415

        return cpu_target.target_context.codegen().magic_tuple()
    except Exception:  # noqa: BLE001 - an unknown target: the portable code is always right
        return "", "", ""


_TRIPLE, _CPU, _FEATURES = _target()


def _x86_feature(name: str) -> bool:
    """Whether numba's CPU target is x86-64 with instruction set extension ``name``."""
    return _TRIPLE.startswith("x86_64") and f"+{name}" in _FEATURES.split(",")


#: float16 conversions by LLVM's ``half`` type (F16C instructions) instead of integer codecs.
NATIVE_HALF = _x86_feature("f16c")

#: bfloat16 encodes by ``vcvtneps2bf16`` (AVX-512 BF16) for the values it rounds as the integer
#: codec does: :func:`_bf16_one` (scattered stores) and :func:`_bf16_sixteen` (rows; its
#: ``vfpclassps`` is AVX-512 DQ, its masked 16-bit moves BW and VL, which every such CPU has).
NATIVE_BF16 = all(_x86_feature(f) for f in ("avx512bf16", "avx512dq", "avx512bw", "avx512vl"))

#: Masked loads and stores of every element size in hardware (AVX-512BW). Elsewhere LLVM
#: expands 16-bit ones into a branch per lane and 32/64-bit ones are slow ``vmaskmov``, so
#: ``lanes`` reads whole vectors inside the array (masked only at its edges) and stores tails
#: lane by lane, and the backend's order choice keeps away from row-by-row masked loads.
NATIVE_MASKS = _x86_feature("avx512bw")

#: AVX-512 that runs 512-bit operations as two 256-bit halves (AMD Zen 4, LLVM's ``znver4``),
#: where the average forward's rows summed in registers lost to 8 planes side by side in all
#: but float64 (backend's order choice), and gathers are slow (the 8-plane backward's stores).
SPLIT_512 = NATIVE_MASKS and _CPU == "znver4"


@intrinsic
def _half_decode(typingctx, u):
    """float16 bits (uint16) -> float32 through LLVM's ``fpext half``."""

    def codegen(context, builder, signature, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())

    return types.float32(types.uint16), codegen


@intrinsic
def _half_encode(typingctx, x):
    """float32 -> float16 bits (uint16) through LLVM's ``fptrunc`` (round to nearest even)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))

    return types.uint16(types.float32), codegen


class _BFloat(ir.types._BaseFloatType):
    """LLVM's ``bfloat``, which llvmlite does not name."""

    null = "0.0"
    intrinsic_name = "bf16"

    def __str__(self) -> str:
        return "bfloat"


_BFloat._create_instance()


#: ``vfpclass`` classes that ``vcvtneps2bf16`` rounds unlike the codec: quiet NaN 0x01,
#: subnormal 0x20, signalling NaN 0x80.
_ODD_CLASSES = 0xA1


def _call(builder, name, ty, args):
    """A call of LLVM function ``name`` returning ``ty``."""
    fnty = ir.FunctionType(ty, [a.type for a in args])
    return builder.call(cgutils.get_or_insert_function(builder.module, fnty, name), args)


@intrinsic
def _bf16_one(typingctx, x):
    """float32 -> bfloat16 bits (int16) as :func:`~adaptive_pool.dtypes.bf16_encode`, a value at
    a time: ``fptrunc`` to ``bfloat`` (one ``vcvtneps2bf16``) for all but subnormals (which it
    flushes to zero) and NaN (whose payload it keeps), which take the integer codec behind a
    branch (one ``vfpclassss`` tests for both). Against the codec's ten integer instructions;
    in a vectorised loop LLVM would compute both sides, so only scattered stores use it."""
    i16, i32 = ir.IntType(16), ir.IntType(32)

    def codegen(context, builder, signature, args):
        (v,) = args
        # vfpclassss itself (LLVM's own llvm.is.fpclass became seven integer instructions)
        f32x4, i8 = ir.VectorType(ir.FloatType(), 4), ir.IntType(8)
        vec = builder.insert_element(ir.Constant(f32x4, ir.Undefined), v, ir.Constant(i32, 0))
        flags = _call(builder, "llvm.x86.avx512.mask.fpclass.ss", i8,
                      [vec, ir.Constant(i32, _ODD_CLASSES), ir.Constant(i8, 1)])
        odd = builder.icmp_unsigned("!=", flags, ir.Constant(i8, 0))
        with builder.if_else(odd, likely=False) as (slow, fast):
            with slow:
                by_codec = bf16_round_ir(builder, builder.bitcast(v, i32))
                from_slow = builder.block
            with fast:
                by_cvt = builder.bitcast(builder.fptrunc(v, _BFloat()), i16)
                from_fast = builder.block
        bits = builder.phi(i16)
        bits.add_incoming(by_codec, from_slow)
        bits.add_incoming(by_cvt, from_fast)
        return bits

    return types.int16(types.float32), codegen


def dec(a, v):  # pragma: no cover - typing stub, implemented by the overload below
    raise NotImplementedError


def enc(a, v):  # pragma: no cover - typing stub
    raise NotImplementedError


def _enc_one(a, v):  # pragma: no cover - typing stub
    raise NotImplementedError


def acc(a, v):  # pragma: no cover - typing stub
    raise NotImplementedError


def scratch(a, n):  # pragma: no cover - typing stub
    raise NotImplementedError


def decodes(a):  # pragma: no cover - typing stub
    raise NotImplementedError


def key(a, v):  # pragma: no cover - typing stub
    raise NotImplementedError


def key_nan(a):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(dec, inline="always")
def _dec(a, v):
    dt = a.dtype
    if dt == types.uint16:
        if NATIVE_HALF:
            return lambda a, v: _half_decode(np.uint16(v))
        return lambda a, v: f16_decode(v)
    if dt == types.int16:
        return lambda a, v: bf16_decode(v)
    if dt in (types.float32, types.float64):
        return lambda a, v: v


@overload(enc, inline="always")
def _enc(a, v):
    dt = a.dtype
    if dt == types.uint16:
        if NATIVE_HALF:
            return lambda a, v: _half_encode(np.float32(v))
        return lambda a, v: f16_encode(v)
    if dt == types.int16:
        return lambda a, v: bf16_encode(v)
    if dt == types.float32:
        return lambda a, v: np.float32(v)
    if dt == types.float64:
        return lambda a, v: np.float64(v)


@overload(_enc_one, inline="always")
def _enc_one_impl(a, v):
    if a.dtype == types.int16 and NATIVE_BF16:
        return lambda a, v: _bf16_one(np.float32(v))
    return lambda a, v: enc(a, v)


@numba.njit(inline="always")
def get(a, i):
    """Element ``i`` of flat array ``a``, decoded to the accumulation type."""
    return dec(a, a[np.uint64(i)])


@numba.njit(inline="always")
def put(a, i, v):
    """Write ``v`` to element ``i`` of flat array ``a``, encoded (rounded) once."""
    a[np.uint64(i)] = _enc_one(a, v)


@overload(acc, inline="always")
def _acc(a, v):
    if a.dtype == types.float64:
        return lambda a, v: np.float64(v)
    if a.dtype in (types.float32, types.uint16, types.int16):
        return lambda a, v: np.float32(v)


# Compiled once per dtype rather than inlined: Numba types an inline overload again at every
# resolution of every call site, and an allocation gains nothing from inlining.
@overload(scratch)
def _scratch(a, n):
    if a.dtype == types.float64:
        return lambda a, n: np.empty(n, np.float64)
    if a.dtype in (types.float32, types.uint16, types.int16):
        return lambda a, n: np.empty(n, np.float32)


@overload(decodes, inline="always")
def _decodes(a):
    """Whether ``a``'s elements need decoding (16-bit storage): a compile-time constant."""
    wide = a.dtype in (types.float32, types.float64)
    return lambda a: not wide


@overload(key, inline="always")
def _key(a, v):
    """An integer with the order of the stored value: -0 == +0, every NaN == key_nan(a).

    Max pooling compares keys instead of decoded values: the same order, the same ties.
    Sign-magnitude bits become two's complement; NaNs are masked to the largest key.
    """
    dt = a.dtype
    if dt == types.float64:
        return lambda a, v: _key64(_bitcast(v, np.int64), np.int64(0x7FF0000000000000))
    if dt == types.float32:
        return lambda a, v: _key32(_bitcast(v, np.int32), np.int32(0x7F800000))
    if dt == types.uint16:
        return lambda a, v: _key16(v, np.int32(0x7C00))
    if dt == types.int16:
        return lambda a, v: _key16(v, np.int32(0x7F80))


@numba.njit(inline="always")
def _key32(b, inf):
    neg = np.int32(b >> np.int32(31))  # 0 or -1 (arithmetic shift)
    mag = np.int32(b & np.int32(0x7FFFFFFF))
    k = np.int32((mag ^ neg) - neg)
    nan = np.int32(-np.int32(mag > inf))
    return np.int32((k & ~nan) | (np.int32(0x7FFFFFFF) & nan))


@numba.njit(inline="always")
def _key64(b, inf):
    neg = b >> np.int64(63)
    mag = b & np.int64(0x7FFFFFFFFFFFFFFF)
    k = (mag ^ neg) - neg
    nan = -np.int64(mag > inf)
    return (k & ~nan) | (np.int64(0x7FFFFFFFFFFFFFFF) & nan)


@intrinsic
def _key16(typingctx, v, inf):
    """:func:`_key32` of a 16-bit pattern ``v`` (a stored float16 or bfloat16, ``inf`` its
    infinity's magnitude) as a 32-bit key, computed in 32-bit integers: numba's own arithmetic
    widens them to 64 bits, which halved the lanes of the max kernels' vectorised loops
    (float16 keys were built 8 to a 512-bit register instead of 16)."""
    if not (isinstance(v, types.Integer) and v.bitwidth == 16 and inf == types.int32):
        return None

    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        b = builder.zext(args[0], i32)
        neg = builder.neg(builder.lshr(b, ir.Constant(i32, 15)))
        mag = builder.and_(b, ir.Constant(i32, 0x7FFF))
        k = builder.sub(builder.xor(mag, neg), neg)
        nan = builder.icmp_signed(">", mag, args[1])
        return builder.select(nan, ir.Constant(i32, 0x7FFFFFFF), k)

    return types.int32(v, inf), codegen


@overload(key_nan, inline="always")
def _key_nan(a):
    if a.dtype == types.float64:
        return lambda a: np.int64(0x7FFFFFFFFFFFFFFF)
    if a.dtype in (types.float32, types.uint16, types.int16):
        return lambda a: np.int32(0x7FFFFFFF)


@numba.njit(inline="always")
def load_row(a, base, stride, n, buf):
    """``buf[j] = a[base + j * stride]`` decoded, for ``j < n`` (vectorised at unit stride)."""
    if stride == 1:
        for j in range(n):
            buf[j] = dec(a, a[np.uint64(base + j)])
    else:
        for j in range(n):
            buf[j] = dec(a, a[np.uint64(base + j * stride)])


@intrinsic
def _bf16_sixteen(typingctx, a, i, b, j, r, x, k):
    """``a[i:i + r] = b[j:j + r]`` (``r <= 16``) as bfloat16 bits by one ``vcvtneps2bf16``, and
    True, where none of the float32 is subnormal or NaN (one ``vfpclassps``); else False, and
    ``a`` untouched (see :func:`_bf16_one`). With bfloat16 ``x`` (not None), +0.0 where
    ``x[k:k + r]`` is NaN. Masked loads and stores: ``r`` of 16 lanes (a constant 16 folds to
    plain ones)."""
    f32x16, i16x16 = ir.VectorType(ir.FloatType(), 16), ir.VectorType(ir.IntType(16), 16)
    i1x16, i16, i32 = ir.VectorType(ir.IntType(1), 16), ir.IntType(16), ir.IntType(32)

    def pointer(context, builder, aty, arr, at, ty):
        data = context.make_array(aty)(context, builder, arr).data
        return builder.bitcast(builder.gep(data, [at]), ty.as_pointer())

    def lanes(context, builder, aty, arr, at, ty, name, mask):
        return _call(builder, f"llvm.masked.load.{name}.p0", ty,
                     [pointer(context, builder, aty, arr, at, ty),
                      ir.Constant(i32, aty.dtype.bitwidth // 8), mask, ir.Constant(ty, None)])

    def codegen(context, builder, signature, args):
        r = context.cast(builder, args[4], signature.args[4], types.int32)
        n_lanes = builder.sub(builder.shl(ir.Constant(i32, 1), r), ir.Constant(i32, 1))
        mask = builder.bitcast(builder.trunc(n_lanes, i16), i1x16)
        v = lanes(context, builder, signature.args[2], args[2], args[3], f32x16, "v16f32", mask)
        if not isinstance(signature.args[5], types.NoneType):
            xv = lanes(context, builder, signature.args[5], args[5], args[6], i16x16, "v16i16",
                       mask)
            magnitude = builder.and_(xv, ir.Constant(i16x16, [0x7FFF] * 16))
            nan = builder.icmp_unsigned(">", magnitude, ir.Constant(i16x16, [0x7F80] * 16))
            v = builder.select(nan, ir.Constant(f32x16, None), v)
        flags = _call(builder, "llvm.x86.avx512.fpclass.ps.512", i1x16,
                      [v, ir.Constant(i32, _ODD_CLASSES)])
        ok = builder.icmp_unsigned("==", builder.bitcast(flags, i16), ir.Constant(i16, 0))
        with builder.if_then(ok, likely=True):
            dst = pointer(context, builder, signature.args[0], args[0], args[1], i16x16)
            bits = builder.bitcast(builder.fptrunc(v, ir.VectorType(_BFloat(), 16)), i16x16)
            _call(builder, "llvm.masked.store.v16i16.p0", ir.VoidType(),
                  [bits, dst, ir.Constant(i32, 2), mask])
        return ok

    return types.boolean(a, i, b, j, r, x, k), codegen


@numba.njit
def _number_or(v, s, z):
    """``s`` where ``v`` is a number, else ``z`` (a function of its own: numba's inliner
    warned of an out-of-scope variable for the conditional expression inlined in a loop)."""
    return s if v == v else z


@numba.njit(inline="always")
def _encode_numbers(a, base, stride, buf, off, j, r, x, xb, xs):
    z = acc(a, 0)
    for t in range(j, j + r):
        v = get(x, xb + t * xs)
        a[np.uint64(base + t * stride)] = enc(a, _number_or(v, buf[np.uint64(off + t)], z))


def _encode_each(a, base, stride, buf, off, j, r, x, xb, xs):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(_encode_each, inline="always")
def _encode_each_impl(a, base, stride, buf, off, j, r, x, xb, xs):
    """``a[base + t * stride] = buf[off + t]`` encoded by the codec, for ``j <= t < j + r``;
    +0.0 where ``x[xb + t * xs]`` is NaN (``x`` not None)."""
    if isinstance(x, types.NoneType):
        def each(a, base, stride, buf, off, j, r, x, xb, xs):
            for t in range(j, j + r):
                a[np.uint64(base + t * stride)] = enc(a, buf[np.uint64(off + t)])

        return each
    return lambda a, base, stride, buf, off, j, r, x, xb, xs: _encode_numbers(
        a, base, stride, buf, off, j, r, x, xb, xs)


def _store_run(a, base, n, buf, off, x, xb):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(_store_run, inline="always")
def _store_run_impl(a, base, n, buf, off, x, xb):
    """``a[base + j] = buf[off + j]`` encoded once, for ``j < n`` (+0.0 where ``x[xb + j]`` is
    NaN, ``x`` not None): vectorised by LLVM, or, for bfloat16 on AVX-512 BF16, 16 at a time by
    :func:`_bf16_sixteen` (4 instructions for 16 values against the codec's 12; the tail
    masked; any 16 with a subnormal or NaN by the codec)."""
    if (a.dtype == types.int16 and buf.dtype == types.float32 and NATIVE_BF16
            and (isinstance(x, types.NoneType) or x.dtype == types.int16)):
        def blocks(a, base, n, buf, off, x, xb):
            whole = n - n % 16
            for j in range(0, whole, 16):  # (a constant 16: plain moves)
                if not _bf16_sixteen(a, np.uint64(base + j), buf, np.uint64(off + j), 16, x,
                                     np.uint64(xb + j)):
                    _encode_each(a, base, 1, buf, off, j, 16, x, xb, 1)
            r = n - whole
            if r > 0 and not _bf16_sixteen(a, np.uint64(base + whole), buf,
                                           np.uint64(off + whole), r, x, np.uint64(xb + whole)):
                _encode_each(a, base, 1, buf, off, whole, r, x, xb, 1)

        return blocks
    return lambda a, base, n, buf, off, x, xb: _encode_each(a, base, 1, buf, off, 0, n, x, xb, 1)


@numba.njit(inline="always")
def store_numbers(a, base, stride, n, buf, off, x, xb, xs):
    """``a[base + j * stride] = buf[off + j]`` encoded once where ``x[xb + j * xs]`` is a
    number, +0.0 where it is NaN, for ``j < n``: one pass, no masked copy of the row first
    (float32 32x256x56x56 -> 7x7 21.2-22.3 -> 18.6-20.2 ms, 4x64x16x56x56 -> 4x7x7 8.0-8.6 ->
    7.1-7.6, Zen 3)."""
    if stride == 1 and xs == 1:
        _store_run(a, base, n, buf, off, x, xb)
    else:
        _encode_each(a, base, stride, buf, off, 0, n, x, xb, xs)


@numba.njit(inline="always")
def store_row(a, base, stride, n, buf, off):
    """``a[base + j * stride] = buf[off + j]`` encoded once, for ``j < n``."""
    if stride == 1:
        _store_run(a, base, n, buf, off, None, 0)
    else:
        _encode_each(a, base, stride, buf, off, 0, n, None, 0, 0)


@intrinsic
def borrow(typingctx, a):
    """``a`` as a view that holds no reference, for an array variable a loop assigns again and
    again (the row an average backward stores from: ``src = part`` or ``row``, once a row).
    Each assignment of an array takes a reference to it and drops the last one: two atomic
    operations on the arrays' counts a row, which also wait for the row's stores to drain
    (NaN-skipping backward of 16x64x64x64 -> 9x11: 1.06x float32, 1.11x bfloat16 without
    them, Zen 4; the plain one the same). A view without a count (null meminfo) makes both a
    test of a null pointer. Only for a view that dies before ``a`` does.

    Every chunk function takes its array arguments so (its caller's references outlive the
    call): each inlined helper that took one, and each slice, cost an atomic operation on its
    count and another to drop it, 28 of the 82 a 4x4 average backward's chunk made.

    ``a`` may be a tuple (of arrays and such tuples): the tuple of their views, so that a
    function's scratch is borrowed in one line from the tuple that :func:`keep` keeps."""
    if not _borrowable(a):
        return None

    def codegen(context, builder, signature, args):
        return _uncounted(context, builder, signature.args[0], args[0])

    return a(a), codegen


def _borrow_aliases(lhs, args, alias_map, arg_aliases) -> None:
    """Tells Numba's alias analysis that ``lhs = borrow(a)`` aliases ``a``. Its dead-code
    elimination (run again after inlining overloads) drops a store into an array that neither
    aliases an argument nor is read later: without this, a chunk's last store into a borrowed
    argument (``bad[ch] = found`` after its loops) vanished."""
    rhs = args[0].name
    if rhs in arg_aliases:
        arg_aliases.add(lhs)
    else:
        alias_map.setdefault(rhs, set()).add(lhs)
        alias_map.setdefault(lhs, set()).add(rhs)


ir_utils.alias_func_extensions[("borrow", __name__)] = _borrow_aliases


def _borrowable(t) -> bool:
    return isinstance(t, types.Array) or (
        isinstance(t, types.BaseTuple) and all(map(_borrowable, t.types)))


def _uncounted(context, builder, ty, value):
    """``value`` of type ``ty`` with every array's meminfo null (:func:`borrow`)."""
    if isinstance(ty, types.Array):
        ary = context.make_array(ty)(context, builder, value=value)
        ary.meminfo = cgutils.get_null_value(ary.meminfo.type)
        return ary._getvalue()
    return context.make_tuple(builder, ty, [
        _uncounted(context, builder, t, builder.extract_value(value, i))
        for i, t in enumerate(ty.types)])


@intrinsic
def keep(typingctx, owners):
    """Nothing, at run time: a last use of ``owners`` (a tuple of the arrays a function
    allocated), so that they outlive the views without a count that the function works on
    (:func:`borrow`). Scratch arrays taken by inlined helpers, sliced a row at a time or
    assigned again in a loop paid an atomic count and its release each time (by ``perf``, up to
    half of a bfloat16 max backward's samples and a fifth of the 14x14 -> 5x5 average's)."""
    if not isinstance(owners, types.BaseTuple):
        return None

    def codegen(context, builder, signature, args):
        return context.get_dummy_value()

    return types.none(owners), codegen


#: How far ahead of its reads a kernel streaming through contiguous memory asks for its lines,
#: in bytes (see :func:`prefetch_to`).
PREFETCH_AHEAD = 2048


@intrinsic
def _prefetch(typingctx, a, i):
    """``llvm.prefetch`` of element ``i`` of the 1-D array ``a`` (its 64-byte line, a read, kept
    in every cache level). A hint: it never faults, whatever the address."""
    if not (isinstance(a, types.Array) and isinstance(i, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, value=args[0]).data
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0")
        ptr = builder.bitcast(builder.gep(data, [args[1]]), i8p)
        builder.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.none(a, i), codegen


def _per_line(a):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(_per_line, inline="always")
def _per_line_impl(a):
    """How many of ``a``'s elements fill a 64-byte line, a constant of the compiled code: an
    array's ``itemsize`` is read at run time, and the integer divisions by it stayed in the
    loops that call :func:`prefetch_to` once a window (two ``div`` a window: float32
    64x512x49 -> 1 took 1.7x as long as the same sums in a bare ``prange`` loop)."""
    n = 64 // np.dtype(str(a.dtype)).itemsize
    return lambda a: n


@numba.njit(inline="always")
def prefetch_to(a, pf, upto, end, ahead=PREFETCH_AHEAD):
    """Prefetch ``a`` a 64-byte line at a time from element ``pf`` to ``ahead`` bytes
    (:data:`PREFETCH_AHEAD` unless the caller knows better) past ``upto`` (where the reads
    about to be made end), never past ``end``; returns
    where the next call goes on: one prefetch per new line of a stream. Why: on the
    Zen 5 VM the hardware prefetcher left windows of 16-20 float32 or float64 elements read
    from DRAM at 8-12 GB/s a thread (each window's vector sum is 30-40 instructions, so the
    reorder buffer holds few outstanding lines); a stream kept 2 KiB ahead read them at 30-35
    GB/s, and runs of 49 or more elements at the same 35-40 GB/s as before. Prefetching each
    window's own lines, or one line a window, was as fast for one dtype and no faster than
    nothing for the other."""
    step = _per_line(a)
    top = min(upto + ahead // 64 * step, end)
    while pf < top:
        _prefetch(a, pf)
        pf += step
    return pf


@numba.njit(inline="always")
def prefetch_run(a, b, n):
    """Prefetch every 64-byte line of ``a[b:b + n]`` (``n >= 1``), the last one included
    wherever ``b`` falls in its line."""
    prefetch_to(a, b, b + n, b + n, 0)
    _prefetch(a, b + n - 1)
