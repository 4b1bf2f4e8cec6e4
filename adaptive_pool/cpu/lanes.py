"""Vector code written as LLVM vector IR (CPU only). Over contiguous runs of memory: the
lane-order sum of a run (:func:`run_sum`, NaN-skipping or not) or of a window of runs
(:func:`rows_sum`, rows of any width placed at their lanes), and what the NaN-skipping
averages do over runs besides: count a run's numbers (:func:`run_count`), add them into column
counts over rows (:func:`add_numbers`), write a share where ``x`` is a number and zero where
it is NaN, or the zeros alone (:func:`run_fill`), or everywhere (:func:`fill_run`), mark a
short row's numbers in a bit mask (:func:`number_bits`, or returned as a word,
:func:`number_word`), count the bits of such a word that a window's columns select
(:func:`count_ones`) and store a row where its bits are set (:func:`store_bits`). Each works
in blocks of 32 elements and a masked load (or store) for the last ``n % 32``, so a short run
is one masked operation, not a scalar loop. Over ``PLANES`` planes side by side (the 8-plane
kernels): runs of 8 planes copied side by side (:func:`interleave_planes`, a transpose in
registers), one element of each added into its own sum (:func:`add_block` from such a copy,
:func:`add_planes` gathering them), a window's columns of such a copy summed in a register
(:func:`sum_blocks`), the planes' rows marked in bit masks (:func:`plane_row_words`) and
windows' numbers counted from them (:func:`count_bits`).

The contract's summation order (``docs/summation-order.md``) adds element ``k`` of a window
into lane ``k % 32`` and combines the 32 lanes by halving. For a unit-stride run that is: an
accumulator of 32 lanes, ``acc += x[32 j : 32 j + 32]`` for every whole block, the last
``r = n % 32`` elements into lanes ``0 .. r-1`` (the others add +0.0: no change, a lane is
never -0.0), then ``acc[:16] + acc[16:]``, ``[:8] + [8:]``, ... ``[0] + [1]``. Every lane is
its own dependency chain and every step a lane-wise add, so no reassociation is needed: it is
SIMD by construction.

Why the scalar forms did not vectorise: Numba runs LLVM without the SLP vectoriser
(``NUMBA_SLP_VECTORIZE=0``, numba/core/config.py), which is the pass that would fuse 8
independent scalar adds into one vector add, and the loop vectoriser vectorises *across
iterations* of the block loop, i.e. along one lane's dependency chain, which needs
reassociation (fastmath). So the register form (four 8-tuples of float32) compiled to 32 scalar
``vaddss`` per block (checked with ``inspect_asm``), and a 32-element scratch array pays a load
and a store per lane and block. :func:`run_sum` is an ``@intrinsic`` that emits the loop with
LLVM vector types directly: the accumulator is one ``<32 x float>`` (``<32 x double>``) value
that LLVM splits into the target's registers (two AVX-512 ``zmm`` here, four AVX2 ``ymm``
elsewhere), a whole block is one vector load and add per register, the tail one masked load
(``llvm.masked.load``: nothing past the run is read), and 16-bit blocks are decoded in the
registers: float16 by ``fpext half`` (F16C ``vcvtph2ps``, only where the target has it, see
:data:`~adaptive_pool.cpu.access.NATIVE_HALF`), bfloat16 by a shift. From L1/L2 it sums about
0.03 ns an element (float32; 784-element planes), where the tuple form took about 1 ns.

CPU only (numba-cuda-mlir cannot run llvmlite-level code); the CUDA kernels keep their own
loop, in the same order.

The same IEEE additions in the same order as the scalar forms: bit for bit the same sums.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .access import NATIVE_HALF, NATIVE_MASKS

#: The lanes of the contract's order.
_LANES = 32

#: Storage dtypes whose runs :func:`run_sum` reads, and their accumulation types.
_ACC = {types.float32: types.float32, types.float64: types.float64,
        types.int16: types.float32}  # bfloat16 bits
if NATIVE_HALF:
    _ACC[types.uint16] = types.float32  # float16 bits


def vector_runs(dtype) -> bool:
    """Whether :func:`run_sum` reads runs of this storage dtype (a Numba type or a NumPy
    dtype; float16 only with F16C)."""
    return dtype in _ACC or dtype in _NUMPY


_NUMPY = frozenset(np.dtype(str(t)) for t in _ACC)


def _decode(builder, v, dtype, acc_ty):
    """Stored elements (a scalar or a vector) to the accumulation type ``acc_ty`` (the codecs of
    ``access``): bfloat16 by a shift (its bits are the top half of a float32), float16 by
    ``fpext half`` (``vcvtph2ps``, exact), float32 and float64 as they are."""
    count = acc_ty.count if isinstance(acc_ty, ir.VectorType) else None

    def like(t):
        return t if count is None else ir.VectorType(t, count)

    def const(t, c):
        return ir.Constant(t, c if count is None else [c] * count)

    if dtype == types.int16:
        w = builder.zext(v, like(ir.IntType(32)))
        return builder.bitcast(builder.shl(w, const(w.type, 16)), acc_ty)
    if dtype == types.uint16:
        return builder.fpext(builder.bitcast(v, like(ir.HalfType())), acc_ty)
    return v


#: The bits of +inf (the largest pattern below NaN once the sign is cleared) of 16-bit storage.
_INF16 = {types.int16: 0x7F80, types.uint16: 0x7C00}


def _numbers(builder, v, dtype):
    """Which lanes of a vector of stored elements are not NaN (``<n x i1>``). 16-bit patterns
    are tested as integers (no conversion needed, F16C or not)."""
    if dtype in _INF16:
        t = v.type
        a = builder.and_(v, ir.Constant(t, [0x7FFF] * t.count))
        return builder.icmp_unsigned("<=", a, ir.Constant(t, [_INF16[dtype]] * t.count))
    return builder.fcmp_ordered("ord", v, v)


def _blocks(builder, n, block, tail=None):
    """``block(offset, mask, count)`` for every whole block of 32 elements of a run of ``n``
    (``mask`` and ``count`` None), then for its last ``count = n % 32`` elements if any
    (``mask``: their lanes), or ``tail(offset, count)`` for them."""
    i64 = ir.IntType(64)
    nfull = builder.lshr(n, ir.Constant(i64, 5))
    with cgutils.for_range(builder, nfull) as loop:
        block(builder.shl(loop.index, ir.Constant(i64, 5)), None, None)
    r = builder.and_(n, ir.Constant(i64, _LANES - 1))
    with builder.if_then(builder.icmp_unsigned("!=", r, ir.Constant(i64, 0))):
        off = builder.shl(nfull, ir.Constant(i64, 5))
        if tail is not None:
            tail(off, r)
        else:
            block(off, _lane_range(builder, None, r), r)


def _ending_block(builder, n, block, short):
    """A run's last ``n % 32`` elements as the whole block that ends with the run where it
    holds 32 elements or more (``block(n - 32, None, None)``: stores whose elements depend on
    their positions alone, written twice harmlessly, and no masked store of part of a
    register, which stalls Zen 5), else ``short()``."""
    with builder.if_else(builder.icmp_signed(">=", n, ir.Constant(n.type, _LANES)),
                         likely=True) as (over, under):
        with over:
            block(builder.sub(n, ir.Constant(n.type, _LANES)), None, None)
        with under:
            short()


def _tail(builder, run, acc, cnt, off, r, width):
    """Add the last ``r < 32`` elements of a float32 or float64 run (from ``off``) into lanes
    ``0 .. r - 1`` of the accumulator ``acc`` (a pointer to its 32 lanes), one 64-byte
    register of lanes at a time, the last one masked; ``cnt`` (a pointer, or None) counts the
    numbers, added by a masked add (float32 rows of 28 and 999 1.05x, float64 1.03x against
    a select, then an add). As one 32-lane masked load, a float64 tail reaching the third
    register took 1.7-2x as long as a whole block (Zen 5)."""
    i64 = ir.IntType(64)
    part = ir.VectorType(run.vec.element, width)
    lanes = builder.bitcast(acc, part.as_pointer())
    count = builder.udiv(builder.add(r, ir.Constant(i64, width - 1)), ir.Constant(i64, width))
    with cgutils.for_range(builder, count) as loop:
        first = builder.mul(loop.index, ir.Constant(i64, width))
        mask = _lane_range(builder, None, builder.sub(r, first), width)
        ptr = builder.bitcast(builder.gep(run.base, [builder.add(off, first)]),
                              part.as_pointer())
        v = _masked(builder, "load", part, ptr, run.size, mask)
        at = builder.gep(lanes, [loop.index])
        a = builder.load(at, align=run.size)
        if cnt is not None:
            ok = builder.and_(builder.fcmp_ordered("ord", v, v), mask)
            builder.store(builder.add(builder.load(cnt), _count(builder, ok)), cnt)
            builder.store(builder.select(ok, builder.fadd(a, v), a), at, align=run.size)
        else:
            builder.store(builder.fadd(a, v), at, align=run.size)


def _masked(builder, op, vec, ptr, size, mask, value=None):
    """``llvm.masked.load`` (``value`` None; lanes outside ``mask`` read nothing and are 0) or
    ``llvm.masked.store`` of ``value`` at ``ptr``."""
    i32 = ir.IntType(32)
    align = ir.Constant(i32, size)
    elem = vec.element
    name = f"llvm.masked.{op}.v{vec.count}{elem.intrinsic_name}.p0"
    if value is None:
        ty = ir.FunctionType(vec, [vec.as_pointer(), i32, mask.type, vec])
        fn = cgutils.get_or_insert_function(builder.module, ty, name)
        return builder.call(fn, [ptr, align, mask, ir.Constant(vec, None)])
    ty = ir.FunctionType(ir.VoidType(), [vec, vec.as_pointer(), i32, mask.type])
    fn = cgutils.get_or_insert_function(builder.module, ty, name)
    return builder.call(fn, [value, ptr, align, mask])


def _lane_range(builder, lo, hi, lanes=_LANES):
    """``<lanes x i1>``: lanes ``lo <= i < hi`` (integer bounds; ``lo`` None: from lane 0), by
    vector compares. A bitcast of an integer's bits to the mask is one ``kmov`` with AVX-512
    but, on AVX2, a test and an insert per lane (32 of each before every masked load: rows_sum
    took 10x as long on Zen 3)."""
    i32 = ir.IntType(32)
    iota = ir.Constant(ir.VectorType(i32, lanes), list(range(lanes)))
    below = builder.icmp_unsigned("<", iota, _splat(builder, iota.type, builder.trunc(hi, i32)))
    if lo is None:
        return below
    return builder.and_(builder.icmp_unsigned(
        ">=", iota, _splat(builder, iota.type, builder.trunc(lo, i32))), below)


def _data(context, builder, aryty, ary):
    """The data pointer of array ``ary`` (Numba type ``aryty``)."""
    return context.make_array(aryty)(context, builder, value=ary).data


class _Run:
    """A unit-stride run ``a[b:]`` of a 1-D array, read and written 32 elements at a time."""

    def __init__(self, context, builder, aryty, ary, b):
        self.builder = builder
        self.dtype = aryty.dtype
        self.size = aryty.dtype.bitwidth // 8
        self.vec = ir.VectorType(context.get_data_type(aryty.dtype), _LANES)
        arr = context.make_array(aryty)(context, builder, value=ary)
        self.base = builder.gep(arr.data, [b])
        self.b, self.nitems = b, arr.nitems

    def _ptr(self, off):
        return self.builder.bitcast(self.builder.gep(self.base, [off]), self.vec.as_pointer())

    def load(self, off, mask):
        builder = self.builder
        if mask is None:
            return builder.load(self._ptr(off), align=self.size)
        if NATIVE_MASKS:
            return _masked(builder, "load", self.vec, self._ptr(off), self.size, mask)
        # without AVX-512: a whole load where all 32 lanes lie inside the array (LLVM expands
        # a masked load of 16-bit lanes into a branch per lane: 2.5x the time of a 1-D
        # bfloat16 average on Zen 3), the masked load at its edges
        start = builder.add(self.b, off)
        inside = builder.and_(
            builder.icmp_signed(">=", start, ir.Constant(start.type, 0)),
            builder.icmp_signed("<=", builder.add(start, ir.Constant(start.type, _LANES)),
                                self.nitems))
        with builder.if_else(inside, likely=True) as (whole, edge):
            with whole:
                v_whole = builder.select(mask, builder.load(self._ptr(off), align=self.size),
                                         ir.Constant(self.vec, None))
                at_whole = builder.block
            with edge:
                v_edge = _masked(builder, "load", self.vec, self._ptr(off), self.size, mask)
                at_edge = builder.block
        v = builder.phi(self.vec)
        v.add_incoming(v_whole, at_whole)
        v.add_incoming(v_edge, at_edge)
        return v

    def store(self, off, mask, value, count=None):
        """``value``'s lanes in ``mask`` stored (all of them where ``mask`` is None); ``count``:
        ``mask`` is the first ``count`` lanes."""
        builder = self.builder
        if mask is None:
            builder.store(value, self._ptr(off), align=self.size)
        elif count is None or NATIVE_MASKS:
            _masked(builder, "store", self.vec, self._ptr(off), self.size, mask, value)
        else:
            # without AVX-512 a masked store is vmaskmov (32 and 64 bits: the NaN-skipping
            # backward of rows of 28 took 1.4x as long with it on Zen 3) or a branch per lane
            # (16 bits): the first lanes copied from a stack slot one by one instead
            slot = cgutils.alloca_once(builder, self.vec)
            builder.store(value, slot)
            lanes = builder.bitcast(slot, self.vec.element.as_pointer())
            with cgutils.for_range(builder, count) as loop:
                e = builder.load(builder.gep(lanes, [loop.index]))
                builder.store(e, builder.gep(self.base, [builder.add(off, loop.index)]))

    def part(self, off, width):
        """A pointer to ``width`` elements from ``off`` (a ``<width x T>*``)."""
        vec = ir.VectorType(self.vec.element, width)
        return self.builder.bitcast(self.builder.gep(self.base, [off]), vec.as_pointer())

    def numbers(self, v, mask):
        ok = _numbers(self.builder, v, self.dtype)
        return ok if mask is None else self.builder.and_(ok, mask)


def _splat(builder, vec, value):
    """A vector of type ``vec`` with ``value`` in every lane."""
    i32 = ir.IntType(32)
    one = builder.insert_element(ir.Constant(vec, None), value, ir.Constant(i32, 0))
    return builder.shuffle_vector(one, ir.Constant(vec, None),
                                  ir.Constant(ir.VectorType(i32, vec.count), [0] * vec.count))


def _popcount(builder, v):
    """``llvm.ctpop`` of an integer or a vector of integers (lane by lane)."""
    t = v.type
    name = f"v{t.count}i{t.element.width}" if isinstance(t, ir.VectorType) else f"i{t.width}"
    fn = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(t, [t]), f"llvm.ctpop.{name}")
    return builder.call(fn, [v])


def _count(builder, ok):
    """How many lanes of ``ok`` (a vector of i1) are set, as an int64."""
    bits = _popcount(builder, builder.bitcast(ok, ir.IntType(ok.type.count)))
    return builder.zext(bits, ir.IntType(64))


def _accumulate(builder, run, off, mask, acc, cnt):
    """``*acc += decode(run[off:off + 32])`` (lanes outside ``mask`` read nothing and add +0.0);
    with ``cnt`` (a pointer), NaN adds +0.0 too and ``*cnt`` counts the numbers."""
    v = run.load(off, mask)
    acc_ty = acc.type.pointee
    d = _decode(builder, v, run.dtype, acc_ty)
    if cnt is not None:
        # 16-bit patterns tested as integers, 32 lanes a compare, and their numbers added
        # by a masked add (bfloat16 (None, 1, 1) of 28x28 planes 1.29x, 7x7 -> 1x1 1.24x,
        # against a test of the decoded float32 lanes, selected, then added; Zen 5). The
        # same bits as adding +0.0: a lane is never -0.0. 32- and 64-bit blocks keep the
        # select and add (the masked add: float32 0.93x); their tails take it (_tail)
        ok = run.numbers(v, mask)
        builder.store(builder.add(builder.load(cnt), _count(builder, ok)), cnt)
        if run.dtype in _INF16:
            a = builder.load(acc)
            builder.store(builder.select(ok, builder.fadd(a, d), a), acc)
            return
        d = builder.select(ok, d, ir.Constant(acc_ty, None))
    builder.store(builder.fadd(builder.load(acc), d), acc)


def _accumulate_lanes(builder, run, off, lo, hi, acc, cnt):
    """:func:`_accumulate` of lanes ``lo <= i < hi`` only (lane ``i`` reads ``run[off + i]``).
    Counting numbers (``cnt``) with AVX-512, one 64-byte register of accumulators at a time: a
    register that holds none of those lanes is neither loaded nor tested nor added to (a
    float32 row of 16 is one register of the two, a float64 row of 8 one of the four, where
    the 32-lane masked load, test and add took them all: the NaN-skipping sums of rows window
    by window 1.3-2x faster, row by row 1.06-1.17x), each register's numbers added by a masked
    add (the same bits: a lane is never -0.0). Plain sums (float64 2-D windows 1.09-1.23x by
    register, but 3-D ones 0.74-0.85x, float32 0.97-1.00x) and targets without AVX-512 (whose
    masked loads are slow: :meth:`_Run.load`) take the 32 lanes at once."""
    if cnt is None or not NATIVE_MASKS:
        _accumulate(builder, run, off, _lane_range(builder, lo, hi), acc, cnt)
        return
    acc_ty = acc.type.pointee
    width = 8 if isinstance(acc_ty.element, ir.DoubleType) else 16
    i64, i32 = ir.IntType(64), ir.IntType(32)
    for p in range(_LANES // width):
        first = ir.Constant(i64, p * width)
        inside = builder.and_(
            builder.icmp_signed("<", lo, ir.Constant(i64, (p + 1) * width)),
            builder.icmp_signed(">", hi, first))
        with builder.if_then(inside):
            # the register's lanes from max(lo, first) (unsigned compares: no negative bound)
            a = builder.sub(lo, first)
            a = builder.select(builder.icmp_signed("<", a, ir.Constant(i64, 0)),
                               ir.Constant(i64, 0), a)
            mask = _lane_range(builder, a, builder.sub(hi, first), width)
            v = _masked(builder, "load", ir.VectorType(run.vec.element, width),
                        run.part(builder.add(off, first), width), run.size, mask)
            d = _decode(builder, v, run.dtype, ir.VectorType(acc_ty.element, width))
            ok = run.numbers(v, mask)
            builder.store(builder.add(builder.load(cnt), _count(builder, ok)), cnt)
            whole = builder.load(acc)
            part = ir.Constant(ir.VectorType(i32, width), list(range(p * width, (p + 1) * width)))
            old = builder.shuffle_vector(whole, whole, part)
            new = builder.select(ok, builder.fadd(old, d), old)
            # the register put back among the others: lane i of ``whole``, or of ``new`` where
            # it lies in the register (``new`` repeated to 32 lanes, so its lane i % width)
            wide = builder.shuffle_vector(new, new, ir.Constant(
                ir.VectorType(i32, _LANES), [i % width for i in range(_LANES)]))
            pick = [_LANES + i if p * width <= i < (p + 1) * width else i for i in range(_LANES)]
            builder.store(builder.shuffle_vector(whole, wide, ir.Constant(
                ir.VectorType(i32, _LANES), pick)), acc)


def _stretches(builder, j, start, n, name, stretch):
    """``stretch(k, L, m)`` for each stretch of a segment of ``n`` elements whose first goes
    into lane ``start % 32``: its ``m`` elements from element ``k`` on, into lanes ``L .. L + m
    - 1``, up to the next lane 0 (``j``: an i64 slot the loop counts in)."""
    word = ir.IntType(64)
    full, last = ir.Constant(word, _LANES), ir.Constant(word, _LANES - 1)
    builder.store(ir.Constant(word, 0), j)
    cond = builder.append_basic_block(f"{name}.cond")
    body = builder.append_basic_block(f"{name}.body")
    done = builder.append_basic_block(f"{name}.done")
    builder.branch(cond)
    builder.position_at_end(cond)
    k = builder.load(j)
    builder.cbranch(builder.icmp_signed("<", k, n), body, done)
    builder.position_at_end(body)
    L = builder.and_(builder.add(start, k), last)
    left, room = builder.sub(n, k), builder.sub(full, L)
    m = builder.select(builder.icmp_signed("<", left, room), left, room)
    stretch(k, L, m)
    builder.store(builder.add(k, m), j)
    builder.branch(cond)
    builder.position_at_end(done)


def _halve(builder, s):
    """Lane 0 after the halving steps of the 32 lanes ``s``: lane i += lane i + h for h = 16,
    8, 4, 2, 1."""
    h = _LANES // 2
    while h >= 1:
        i32v = ir.VectorType(ir.IntType(32), h)
        lo = builder.shuffle_vector(s, s, ir.Constant(i32v, list(range(h))))
        hi = builder.shuffle_vector(s, s, ir.Constant(i32v, list(range(h, 2 * h))))
        s = builder.fadd(lo, hi)
        h //= 2
    return builder.extract_element(s, ir.Constant(ir.IntType(32), 0))


@intrinsic
def run_sum(typingctx, src, b, n, skip):
    """The lane-order sum of ``src[b : b + n]`` (decoded), in the accumulation type, and the
    count of elements added: ``(sum, n)``, or with ``skip`` not None the non-NaN elements only
    (NaN adds +0.0 to its lane, the same bits as not adding: a lane is never -0.0).

    ``src`` is a 1-D array of a dtype that :func:`vector_runs` accepts; ``0 <= b`` and
    ``b + n <= src.size`` are the caller's to keep (nothing is checked, nothing outside the
    run is read)."""
    if not (isinstance(src, types.Array) and src.ndim == 1 and vector_runs(src.dtype)):
        return None
    acc_nb = _ACC[src.dtype]
    skip_on = not isinstance(skip, types.NoneType)
    sig = types.Tuple((acc_nb, types.int64))(src, types.int64, types.int64, skip)

    def codegen(context, builder, signature, args):
        run = _Run(context, builder, signature.args[0], args[0], args[1])
        acc_ty = ir.VectorType(context.get_value_type(acc_nb), _LANES)
        acc = cgutils.alloca_once_value(builder, ir.Constant(acc_ty, None))
        cnt = cgutils.alloca_once_value(builder, args[2] if not skip_on else
                                        ir.Constant(ir.IntType(64), 0))

        # acc += decode(block); the tail's other lanes read nothing and add +0.0
        def block(off, mask, _):
            _accumulate(builder, run, off, mask, acc, cnt if skip_on else None)

        width = 64 // run.size  # (16-bit runs: one register of 32 lanes, one masked load)
        tail = None if width >= _LANES else lambda off, r: _tail(
            builder, run, acc, cnt if skip_on else None, off, r, width)
        _blocks(builder, args[2], block, tail)

        total = _halve(builder, builder.load(acc))
        return context.make_tuple(builder, signature.return_type, [total, builder.load(cnt)])

    return sig, codegen


@intrinsic
def add_segment(typingctx, lanes, L, src, b, n, skip):
    """Add ``src[b : b + n]`` (decoded) into the 32 lanes ``lanes[:32]`` from lane ``L`` on,
    element ``j`` into lane ``(L + j) % 32``: the contract's order for a window's unit-stride
    segment that starts at its position ``L``. Returns ``((L + n) % 32, count)``,
    the count being ``n``, or with ``skip`` not None the non-NaN elements (NaN adds +0.0, as
    :func:`run_sum`).

    Each stretch up to the next lane 0 is one masked load placed at its lanes and one add of
    all 32 (the others add +0.0: no change), as :func:`rows_sum`'s segments, but into lanes in
    memory, which the row-by-row average keeps for every window of a row. The scalar loop it
    replaces vectorised only in blocks of 16, took the rest one by one and counted in int64
    lanes. Masked loads that miss the cache stall here (Zen 5: 3x the time without the row
    order's prefetch), so callers reading memory prefetch it. The caller keeps the segment
    inside ``src`` and gives ``lanes`` 32 elements at least."""
    if not (isinstance(src, types.Array) and src.ndim == 1 and vector_runs(src.dtype)
            and isinstance(lanes, types.Array) and lanes.dtype == _ACC[src.dtype]):
        return None
    skip_on = not isinstance(skip, types.NoneType)
    i64 = types.int64
    sig = types.UniTuple(i64, 2)(lanes, i64, src, i64, i64, skip)

    def codegen(context, builder, signature, args):
        lanes_v, L, _, b, n, _ = args
        word = ir.IntType(64)
        run = _Run(context, builder, signature.args[2], args[2], b)
        acc_ty = ir.VectorType(context.get_value_type(signature.args[0].dtype), _LANES)
        home = builder.bitcast(_data(context, builder, signature.args[0], lanes_v),
                               acc_ty.as_pointer())
        align = signature.args[0].dtype.bitwidth // 8
        # the lanes in registers over the segment's stretches, loaded and stored once
        acc = cgutils.alloca_once_value(builder, builder.load(home, align=align))
        cnt = cgutils.alloca_once_value(builder, ir.Constant(word, 0))

        def stretch(k, Lk, m):
            _accumulate_lanes(builder, run, builder.sub(k, Lk), Lk, builder.add(Lk, m), acc,
                              cnt if skip_on else None)

        _stretches(builder, cgutils.alloca_once(builder, word), L, n, "add_segment", stretch)
        builder.store(builder.load(acc), home, align=align)
        end = builder.and_(builder.add(L, n), ir.Constant(word, _LANES - 1))
        return context.make_tuple(builder, signature.return_type,
                                  [end, builder.load(cnt) if skip_on else n])

    return sig, codegen


def _storage(a) -> bool:
    return isinstance(a, types.Array) and a.ndim == 1 and (a.dtype in _ACC or a.dtype in _INF16)


@intrinsic
def run_count(typingctx, src, b, n):
    """How many of ``src[b : b + n]`` are not NaN (any storage dtype; 16-bit patterns tested
    as integers). The caller keeps the run inside ``src``."""
    if not _storage(src):
        return None

    def codegen(context, builder, signature, args):
        run = _Run(context, builder, signature.args[0], args[0], args[1])
        cnt = cgutils.alloca_once_value(builder, ir.Constant(ir.IntType(64), 0))

        def block(off, mask, _, whole_load=False):
            ok = run.numbers(run.load(off, None if whole_load else mask), mask)
            builder.store(builder.add(builder.load(cnt), _count(builder, ok)), cnt)

        n = args[2]
        whole = ir.Constant(n.type, _LANES)

        def tail(off, r):
            # a run of at least 32 ends in the whole block that ends with it, its lanes before
            # the last r masked off (a masked load of the r lanes costs more without AVX-512)
            with builder.if_else(builder.icmp_signed(">=", n, whole), likely=True) as (
                    over, short):
                with over:
                    block(builder.sub(n, whole), _lane_range(builder, builder.sub(whole, r),
                                                             whole), None, True)
                with short:
                    block(off, _lane_range(builder, None, r), r)

        _blocks(builder, n, block, None if NATIVE_MASKS else tail)
        return builder.load(cnt)

    return types.int64(src, types.int64, types.int64), codegen


@intrinsic
def run_fill(typingctx, dst, db, src, sb, n, share, other):
    """``dst[db + i] = share if src[sb + i] is not NaN else other`` for ``i < n``; with
    ``share`` None, ``dst`` keeps its elements where ``src`` is a number (a masked store of the
    NaN positions only, or without AVX-512 the run rewritten: no other thread may write it).
    ``share`` and ``other``: stored elements of ``dst``'s dtype (any storage dtypes; 16-bit
    patterns tested as integers). The caller keeps both runs inside their arrays."""
    if not (_storage(dst) and _storage(src)):
        return None
    keep = isinstance(share, types.NoneType)
    i64 = types.int64
    sig = types.none(dst, i64, src, i64, i64, share if keep else dst.dtype, dst.dtype)

    def codegen(context, builder, signature, args):
        out = _Run(context, builder, signature.args[0], args[0], args[1])
        run = _Run(context, builder, signature.args[2], args[2], args[3])
        other = _splat(builder, out.vec, args[6])
        share = None if keep else _splat(builder, out.vec, args[5])

        def block(off, mask, count):
            ok = run.numbers(run.load(off, mask), None)
            if keep and NATIVE_MASKS:
                nan = builder.not_(ok)
                out.store(off, nan if mask is None else builder.and_(nan, mask), other)
            elif keep:  # the run rewritten (the caller's own elements): see _Run.store
                out.store(off, mask, builder.select(ok, out.load(off, mask), other), count)
            else:
                out.store(off, mask, builder.select(ok, share, other), count)

        n = args[4]
        i64 = ir.IntType(64)
        width = 32 // out.size  # one 32-byte register of dst

        def register(at):
            """``block`` for the ``width`` elements from ``at``."""
            ptr = out.part(at, width)
            ok = run.numbers(builder.load(run.part(at, width), align=run.size), None)
            zero = _splat(builder, ptr.type.pointee, args[6])
            kept = builder.load(ptr, align=out.size) if keep else _splat(
                builder, ptr.type.pointee, args[5])
            builder.store(builder.select(ok, kept, zero), ptr, align=out.size)

        def tail(off, r):
            # a run of at least 32 ends in the whole block that ends with it, a shorter one of
            # at least a register in registers, the last one ending with the run (each
            # element's value depends on its position alone: writing it twice is harmless).
            # Without AVX-512 a masked store is vmaskmov or a store per lane: the NaN-skipping
            # backward of float32 64x512x49 -> 1 took 0.76 ms with it, 0.66 with registers
            # (Zen 3, before its runs had a loop of their own)
            w = ir.Constant(i64, width)

            def short():
                with builder.if_else(builder.icmp_signed(">=", n, w)) as (registers, lanewise):
                    with registers:
                        count = builder.udiv(builder.add(r, ir.Constant(i64, width - 1)), w)
                        last = builder.sub(n, w)
                        with cgutils.for_range(builder, count) as loop:
                            at = builder.add(off, builder.mul(loop.index, w))
                            register(builder.select(builder.icmp_signed("<", at, last), at,
                                                    last))
                    with lanewise:
                        block(off, _lane_range(builder, None, r), r)

            _ending_block(builder, n, block, short)

        # with AVX-512 too for 32- and 64-bit elements: a masked store of part of a register
        # stalled this VM (Zen 5: 36% of float32 32x256x28x28 -> (None, 1)'s samples on the
        # second register of each run of 28; overlapping whole stores 1.23-1.42x, float64
        # 1.23x, 64x512x49 -> 1 1.06-1.18x); 16-bit runs keep their masked store (bfloat16
        # 0.85-0.92x with the registers)
        _blocks(builder, n, block, None if NATIVE_MASKS and out.size == 2 else tail)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def copy_numbers(typingctx, dst, db, row, rb, src, sb, n):
    """``dst[db + i] = row[rb + i] if src[sb + i] is not NaN else +0.0`` (all bits clear) for
    ``i < n``: a row of stored elements (``row``, ``dst``'s storage dtype) written where ``src``
    holds numbers, 32 at a time (16-bit patterns tested as integers). The caller keeps every
    run inside its array."""
    if not (_storage(dst) and _storage(row) and _storage(src) and dst.dtype == row.dtype):
        return None
    i64 = types.int64

    def codegen(context, builder, signature, args):
        out = _Run(context, builder, signature.args[0], args[0], args[1])
        kept = _Run(context, builder, signature.args[2], args[2], args[3])
        run = _Run(context, builder, signature.args[4], args[4], args[5])
        zero = ir.Constant(out.vec, None)

        def block(off, mask, count):
            ok = run.numbers(run.load(off, mask), None)
            out.store(off, mask, builder.select(ok, kept.load(off, mask), zero), count)

        _blocks(builder, args[6], block)
        return context.get_dummy_value()

    return types.none(dst, i64, row, i64, src, i64, i64), codegen


@intrinsic
def fill_run(typingctx, dst, b, n, v):
    """``dst[b + i] = v`` for ``i < n`` (a float32 or float64 array): with AVX-512 a 64-byte
    register at a time, the last one masked, so a run of a few elements is one store where
    LLVM's loop made a scalar store an element (a vector body only for runs of 8 or more);
    without, a loop. The caller keeps the run inside ``dst`` (``n >= 0``)."""
    if not (isinstance(dst, types.Array) and dst.ndim == 1
            and dst.dtype in (types.float32, types.float64)):
        return None
    i64 = types.int64

    def codegen(context, builder, signature, args):
        run = _Run(context, builder, signature.args[0], args[0], args[1])
        n = args[2]
        if not NATIVE_MASKS:
            with cgutils.for_range(builder, n) as loop:
                builder.store(args[3], builder.gep(run.base, [loop.index]))
            return context.get_dummy_value()
        t = ir.IntType(64)
        width = 64 // run.size
        part = ir.VectorType(run.vec.element, width)
        value = _splat(builder, part, args[3])
        lanes = ir.Constant(t, width)
        count = builder.udiv(builder.add(n, ir.Constant(t, width - 1)), lanes)
        with cgutils.for_range(builder, count) as loop:
            first = builder.mul(loop.index, lanes)
            left = builder.sub(n, first)  # (at most ``width``: the mask's bound is 32-bit)
            left = builder.select(builder.icmp_signed("<", left, lanes), left, lanes)
            mask = _lane_range(builder, None, left, width)
            ptr = builder.bitcast(builder.gep(run.base, [first]), part.as_pointer())
            _masked(builder, "store", part, ptr, run.size, mask, value)
        return context.get_dummy_value()

    return types.none(dst, i64, i64, dst.dtype), codegen


@intrinsic
def add_numbers(typingctx, col, src, b, n, rows, step):
    """``col[i] += `` how many of ``src[b + r * step + i]``, ``r < rows``, are not NaN, for
    ``i < n`` (``col``: int32, from its first element, each count below ``2**31 - rows``;
    ``src`` any storage dtype). A column block's counts stay in registers over the rows. The
    caller keeps every run inside its array."""
    if not (_storage(src) and isinstance(col, types.Array) and col.ndim == 1
            and col.dtype == types.int32):
        return None
    i64 = types.int64
    sig = types.none(col, src, i64, i64, i64, i64)

    def codegen(context, builder, signature, args):
        out = _Run(context, builder, signature.args[0], args[0], ir.Constant(ir.IntType(64), 0))
        run = _Run(context, builder, signature.args[1], args[1], args[2])
        total = cgutils.alloca_once(builder, out.vec)

        def block(off, mask, count):
            builder.store(out.load(off, mask), total)
            with cgutils.for_range(builder, args[4]) as loop:
                o = builder.add(off, builder.mul(loop.index, args[5]))
                ok = builder.zext(run.numbers(run.load(o, mask), mask), out.vec)
                builder.store(builder.add(builder.load(total), ok), total)
            out.store(off, mask, builder.load(total), count)

        _blocks(builder, args[3], block)
        return context.get_dummy_value()

    return sig, codegen


#: The planes that :func:`add_planes` adds side by side (``kernels.LANES``).
PLANES = 8


def _add_planes_at(context, builder, adata, q, v, cdata):
    """``a[q:q + PLANES] += v`` (``v``: one element of each plane); with ``cdata`` (the counts'
    data pointer), NaN adds +0.0 and ``cnt[q:q + PLANES]`` counts the numbers."""
    vec = v.type
    if cdata is not None:
        ok = builder.fcmp_ordered("ord", v, v)
        v = builder.select(ok, v, ir.Constant(vec, None))
        cvec = ir.VectorType(ir.IntType(32), PLANES)
        cptr = builder.bitcast(builder.gep(cdata, [q]), cvec.as_pointer())
        builder.store(builder.add(builder.load(cptr, align=4), builder.zext(ok, cvec)), cptr,
                      align=4)
    size = vec.element.get_abi_size(context.target_data)
    aptr = builder.bitcast(builder.gep(adata, [q]), vec.as_pointer())
    add = builder.add if isinstance(vec.element, ir.IntType) else builder.fadd
    builder.store(add(builder.load(aptr, align=size), v), aptr, align=size)


def _plane_starts(builder, data, b, pdata):
    """Pointers to element ``b + poff[l]`` of ``data`` for the ``PLANES`` planes ``l``
    (``pdata``: the int64 offsets ``poff``)."""
    word = ir.IntType(64)
    return [builder.gep(data, [builder.add(b, builder.load(
        builder.gep(pdata, [ir.Constant(word, l)])))]) for l in range(PLANES)]


def _gather_planes(builder, data, b, pdata, elem):
    """``<PLANES x elem>``: element ``b + poff[l]`` of ``data`` in lane ``l``."""
    v = ir.Constant(ir.VectorType(elem, PLANES), None)
    for lane, ptr in enumerate(_plane_starts(builder, data, b, pdata)):
        v = builder.insert_element(v, builder.load(ptr), ir.Constant(ir.IntType(32), lane))
    return v


@intrinsic
def add_planes(typingctx, a, q, src, o, poff, cnt, skip):
    """``a[q + l] += src[o + poff[l]]`` for the ``PLANES`` planes ``l``: one element of each,
    gathered into one vector, added by one vector operation (Numba's LLVM has no SLP
    vectoriser, so the scalar loop is 8 scalar read-modify-writes). With ``skip`` not None, a
    NaN adds +0.0 instead and ``cnt[q + l]`` (int32) counts the numbers: counts beside the
    sums, so that consecutive additions do not all wait on one count's store.

    ``a`` and ``src``: float32 or float64, the same dtype; ``poff``: int64. The caller keeps
    every index inside its array."""
    i64 = types.int64
    if not (isinstance(a, types.Array) and isinstance(src, types.Array)
            and a.dtype == src.dtype and a.dtype in (types.float32, types.float64)
            and isinstance(poff, types.Array) and poff.dtype == i64
            and isinstance(cnt, types.Array) and cnt.dtype == types.int32):
        return None
    skip_on = not isinstance(skip, types.NoneType)
    sig = types.none(a, i64, src, i64, poff, cnt, skip)

    def codegen(context, builder, signature, args):
        adata, sdata, pdata, cdata = (_data(context, builder, signature.args[k], args[k])
                                      for k in (0, 2, 4, 5))
        elem = context.get_data_type(signature.args[0].dtype)
        v = _gather_planes(builder, sdata, args[3], pdata, elem)
        _add_planes_at(context, builder, adata, args[1], v, cdata if skip_on else None)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def plane_numbers(typingctx, ok, q, src, o, poff):
    """``ok[q + l] = 1`` where ``src[o + poff[l]]`` is a number, else 0, for the ``PLANES``
    planes ``l``: one element of each gathered into one vector, tested and stored by one
    vector operation each (the scalar loop tested and stored them one by one). ``ok``: int32;
    ``src``: float32, float64 or 16-bit storage (tested as integers); ``poff``: int64. The
    caller keeps every index inside its array."""
    i64 = types.int64
    if not (isinstance(ok, types.Array) and ok.dtype == types.int32 and _storage(src)
            and isinstance(poff, types.Array) and poff.dtype == i64):
        return None

    def codegen(context, builder, signature, args):
        odata, sdata, pdata = (_data(context, builder, signature.args[k], args[k])
                               for k in (0, 2, 4))
        st = signature.args[2].dtype
        v = _gather_planes(builder, sdata, args[3], pdata, context.get_data_type(st))
        cvec = ir.VectorType(ir.IntType(32), PLANES)
        optr = builder.bitcast(builder.gep(odata, [args[1]]), cvec.as_pointer())
        builder.store(builder.zext(_numbers(builder, v, st), cvec), optr, align=4)
        return context.get_dummy_value()

    return types.none(ok, i64, src, i64, poff), codegen


@intrinsic
def share_planes(typingctx, a, q, src, o, poff, v, cnt, cq):
    """``a[q + l] = src[o + poff[l]] / v`` (decoded) for the ``PLANES`` planes ``l``, or, with
    ``cnt`` an int32 array rather than None, ``/ cnt[cq + l]`` (``v`` unused): one element of
    each gathered into one vector and divided by one vector division (the scalar loop is 8
    scalar divisions, whose throughput bounds the average backward's shares of small
    windows). ``a``: the accumulation dtype of ``src`` (a dtype :func:`vector_runs` accepts),
    ``v`` a scalar of it; ``poff``: int64. The caller keeps every index inside its array."""
    i64 = types.int64
    counted = isinstance(cnt, types.Array) and cnt.dtype == types.int32
    if not (isinstance(src, types.Array) and vector_runs(src.dtype)
            and isinstance(a, types.Array) and a.dtype == _ACC[src.dtype] and v == a.dtype
            and isinstance(poff, types.Array) and poff.dtype == i64
            and (counted or isinstance(cnt, types.NoneType))):
        return None

    def codegen(context, builder, signature, args):
        adata, sdata, pdata = (_data(context, builder, signature.args[k], args[k])
                               for k in (0, 2, 4))
        st = context.get_data_type(signature.args[2].dtype)
        at = context.get_data_type(signature.args[0].dtype)
        g = _gather_planes(builder, sdata, args[3], pdata, st)
        vec = ir.VectorType(at, PLANES)
        if counted:
            cdata = _data(context, builder, signature.args[6], args[6])
            cvec = ir.VectorType(ir.IntType(32), PLANES)
            cptr = builder.bitcast(builder.gep(cdata, [args[7]]), cvec.as_pointer())
            by = builder.sitofp(builder.load(cptr, align=4), vec)
        else:
            by = _splat(builder, vec, args[5])
        d = builder.fdiv(_decode(builder, g, signature.args[2].dtype, vec), by)
        ptr = builder.bitcast(builder.gep(adata, [args[1]]), vec.as_pointer())
        builder.store(d, ptr, align=at.get_abi_size(context.target_data))
        return context.get_dummy_value()

    return types.none(a, i64, src, i64, poff, v, cnt, i64), codegen


def _number_word(builder, run, n):
    """An i64 with bit ``i`` set where ``run[i]`` is not NaN, for ``i < n <= 64``."""
    word = ir.IntType(64)
    bits = cgutils.alloca_once_value(builder, ir.Constant(word, 0))

    def block(off, mask, _):
        ok = builder.bitcast(run.numbers(run.load(off, mask), mask), ir.IntType(_LANES))
        builder.store(builder.or_(builder.load(bits), builder.shl(builder.zext(ok, word), off)),
                      bits)

    _blocks(builder, n, block)
    return builder.load(bits)


@intrinsic
def number_bits(typingctx, out, o, src, b, n):
    """``out[o]``: bit ``i`` set where ``src[b + i]`` is not NaN, for ``i < n <= 64`` (``out``:
    int64; ``src`` any storage dtype, 16-bit patterns tested as integers). The caller keeps the
    run inside ``src`` and ``n <= 64``."""
    if not (_storage(src) and isinstance(out, types.Array) and out.dtype == types.int64):
        return None
    i64 = types.int64

    def codegen(context, builder, signature, args):
        run = _Run(context, builder, signature.args[2], args[2], args[3])
        out = _data(context, builder, signature.args[0], args[0])
        builder.store(_number_word(builder, run, args[4]), builder.gep(out, [args[1]]))
        return context.get_dummy_value()

    return types.none(out, i64, src, i64, i64), codegen


@intrinsic
def plane_row_words(typingctx, out, o, src, b, poff, H, W, words):
    """``out[o + h * PLANES + l]``: :func:`number_bits`'s word of row ``h`` of plane ``l``, for
    ``h < H`` and the ``PLANES`` planes whose rows of ``W <= 64`` elements follow each other
    in a run of ``H * W`` from ``src[b + poff[l]]``. Each run is marked 64 elements a word
    (``words``: int64 scratch of ``(ceil(H * W / 64) + 1) * PLANES``, plane-interleaved),
    then each row's word is shifted out of the two words it spans, the ``PLANES`` planes one
    vector (a masked load and a test for each row of each plane took longer). The caller
    keeps every run inside ``src`` and ``W <= 64``."""
    i64 = types.int64
    if not (_storage(src) and all(isinstance(a, types.Array) and a.dtype == i64
                                  for a in (out, poff, words))):
        return None

    def codegen(context, builder, signature, args):
        _, o, _, b, _, H, W, _ = args
        t = ir.IntType(64)
        odata, pdata, wdata = (_data(context, builder, signature.args[k], args[k])
                               for k in (0, 4, 7))
        eight, full = ir.Constant(t, PLANES), ir.Constant(t, 64)
        n = builder.mul(H, W)
        nw = builder.lshr(builder.add(n, ir.Constant(t, 63)), ir.Constant(t, 6))
        for l in range(PLANES):
            lane = ir.Constant(t, l)
            start = builder.add(b, builder.load(builder.gep(pdata, [lane])))
            with cgutils.for_range(builder, nw) as loop:
                first = builder.shl(loop.index, ir.Constant(t, 6))
                run = _Run(context, builder, signature.args[2], args[2],
                           builder.add(start, first))
                left = builder.sub(n, first)
                count = builder.select(builder.icmp_unsigned("<", left, full), left, full)
                at = builder.add(builder.mul(loop.index, eight), lane)
                builder.store(_number_word(builder, run, count), builder.gep(wdata, [at]))
            # a zero word after the last: a row ending in the last word reads it
            builder.store(ir.Constant(t, 0),
                          builder.gep(wdata, [builder.add(builder.mul(nw, eight), lane)]))
        vec = ir.VectorType(t, PLANES)

        def planes(k):
            """The ``PLANES`` planes' word ``k``."""
            ptr = builder.gep(wdata, [builder.mul(k, eight)])
            return builder.load(builder.bitcast(ptr, vec.as_pointer()), align=8)

        keep = _splat(builder, vec, builder.lshr(ir.Constant(t, -1), builder.sub(full, W)))
        one = ir.Constant(vec, [1] * PLANES)
        with cgutils.for_range(builder, H) as loop:
            s = builder.mul(loop.index, W)
            k = builder.lshr(s, ir.Constant(t, 6))
            shift = builder.and_(s, ir.Constant(t, 63))
            low = builder.lshr(planes(k), _splat(builder, vec, shift))
            # the next word's bits above the row's first: shifted by 64 - shift in two steps
            # (a shift by 64 is undefined)
            high = builder.shl(builder.shl(planes(builder.add(k, ir.Constant(t, 1))), one),
                               _splat(builder, vec, builder.sub(ir.Constant(t, 63), shift)))
            row = builder.and_(builder.or_(low, high), keep)
            ptr = builder.gep(odata, [builder.add(o, builder.mul(loop.index, eight))])
            builder.store(row, builder.bitcast(ptr, vec.as_pointer()), align=8)
        return context.get_dummy_value()

    return types.none(out, i64, src, i64, poff, i64, i64, words), codegen


@intrinsic
def number_word(typingctx, src, b, n):
    """:func:`number_bits`'s word, returned: bit ``i`` of an int64 set where ``src[b + i]`` is
    not NaN, for ``i < n <= 64``."""
    if not _storage(src):
        return None
    i64 = types.int64

    def codegen(context, builder, signature, args):
        run = _Run(context, builder, signature.args[0], args[0], args[1])
        return _number_word(builder, run, args[2])

    return i64(src, i64, i64), codegen


@intrinsic
def store_bits(typingctx, dst, db, src, sb, words, wi, R, n):
    """``dst[db + i] = src[sb + i] if bit i % 64 of words[(i // 64) * R + wi] else 0`` (all
    bits clear: +0.0 in every float format) for ``i < n``: a row stored where
    :func:`number_word` found numbers (64 elements a word, a row's words ``R`` apart), without
    reading them again. ``dst`` and ``src``: the same storage dtype; ``words``: int64. The
    caller keeps every index inside its array."""
    if not (_storage(dst) and _storage(src) and dst.dtype == src.dtype
            and isinstance(words, types.Array) and words.dtype == types.int64):
        return None
    i64 = types.int64

    def codegen(context, builder, signature, args):
        out = _Run(context, builder, signature.args[0], args[0], args[1])
        run = _Run(context, builder, signature.args[2], args[2], args[3])
        wdata = _data(context, builder, signature.args[4], args[4])
        t = ir.IntType(64)
        zero = ir.Constant(out.vec, None)

        def blocks(first):
            """The row's blocks; ``first``: its one word, or None (a word loaded a block)."""

            def block(off, mask, count):
                word = first
                if first is None:
                    at = builder.add(builder.mul(builder.lshr(off, ir.Constant(t, 6)), args[6]),
                                     args[5])
                    word = builder.load(builder.gep(wdata, [at]))
                bits = builder.trunc(builder.lshr(word, builder.and_(off, ir.Constant(t, 63))),
                                     ir.IntType(_LANES))
                ok = builder.bitcast(bits, ir.VectorType(ir.IntType(1), _LANES))
                out.store(off, mask, builder.select(ok, run.load(off, mask), zero), count)

            def tail(off, r):  # (a row of one word)
                _ending_block(builder, args[7], block,
                              lambda: block(off, _lane_range(builder, None, r), r))

            _blocks(builder, args[7], block, tail if first is not None else None)

        # a row of one word keeps it in a register (a load a block: 4-8% slower on 56-wide
        # rows in the cache, Zen 4)
        short = builder.icmp_signed("<=", args[7], ir.Constant(t, 64))
        with builder.if_else(short, likely=True) as (one, many):
            with one:
                blocks(builder.load(builder.gep(wdata, [args[5]])))
            with many:
                blocks(None)
        return context.get_dummy_value()

    return types.none(dst, i64, src, i64, words, i64, i64, i64), codegen


@intrinsic
def count_ones(typingctx, bits):
    """How many bits of the integer ``bits`` are set (one ``popcnt``)."""
    if not isinstance(bits, types.Integer):
        return None
    i64 = types.int64

    def codegen(context, builder, signature, args):
        return _popcount(builder, context.cast(builder, args[0], signature.args[0], i64))

    return i64(bits), codegen


@intrinsic
def count_bits(typingctx, cnt, q, bits, o, rows, wmask):
    """``cnt[q + l] = sum(popcount(bits[o + r * PLANES + l] & wmask) for r < rows)`` for the
    ``PLANES`` planes ``l`` (``cnt``: int32, ``bits``: int64 rows of :func:`number_bits`, plane
    by plane): the numbers of ``PLANES`` windows whose columns ``wmask`` selects, in vector
    code. The caller keeps every index inside its array."""
    i64 = types.int64
    if not (isinstance(cnt, types.Array) and cnt.dtype == types.int32
            and isinstance(bits, types.Array) and bits.dtype == i64):
        return None

    def codegen(context, builder, signature, args):
        def ptr(k, off, vec):
            data = _data(context, builder, signature.args[k], args[k])
            return builder.bitcast(builder.gep(data, [off]), vec.as_pointer())

        wide = ir.VectorType(ir.IntType(64), PLANES)
        total = cgutils.alloca_once_value(builder, ir.Constant(wide, None))
        m = _splat(builder, wide, args[5])
        with cgutils.for_range(builder, args[4]) as loop:
            step = ir.Constant(loop.index.type, PLANES)
            row = builder.add(args[3], builder.mul(loop.index, step))
            v = builder.load(ptr(2, row, wide), align=8)
            c = _popcount(builder, builder.and_(v, m))
            builder.store(builder.add(builder.load(total), c), total)
        narrow = ir.VectorType(ir.IntType(32), PLANES)
        builder.store(builder.trunc(builder.load(total), narrow), ptr(0, args[1], narrow), align=4)
        return context.get_dummy_value()

    return types.none(cnt, i64, bits, i64, i64, i64), codegen


@intrinsic
def rows_sum(typingctx, src, b, nw, nh, hstep, nd, dstep, skip):
    """The lane-order sum of a window of ``nd x nh`` unit-stride rows of ``nw`` elements, row
    ``(d, h)`` at ``src[b + d * dstep + h * hstep:]`` (decoded), in the accumulation type, and
    the count of elements added (with ``skip`` not None the non-NaN ones only, as
    :func:`run_sum`).

    The 32 lanes stay in registers. Row ``r`` starts at the window's position ``r * nw``, lane
    ``L = r * nw % 32``: its elements go on as segments of at most ``32 - L``, each one masked
    load placed at its lanes (the load starts ``L`` elements before the segment; masked-off
    lanes read nothing and add +0.0) and one vector add; with ``skip`` and AVX-512, only the
    64-byte registers of lanes it falls in (:func:`_accumulate_lanes`). A row of up to 32 is
    one or two segments without a loop (one loop over segments for every row took 5-8% longer
    on rows 13-21 wide, 128x128 -> 6x6 and 64x64 -> 5x5). The caller keeps every row inside
    ``src``."""
    if not (isinstance(src, types.Array) and src.ndim == 1 and vector_runs(src.dtype)):
        return None
    acc_nb = _ACC[src.dtype]
    skip_on = not isinstance(skip, types.NoneType)
    i64 = types.int64
    sig = types.Tuple((acc_nb, i64))(src, i64, i64, i64, i64, i64, i64, skip)

    def codegen(context, builder, signature, args):
        _, b, nw, nh, hstep, nd, dstep, _ = args
        word = ir.IntType(64)
        run = _Run(context, builder, signature.args[0], args[0], ir.Constant(word, 0))
        acc_ty = ir.VectorType(context.get_value_type(acc_nb), _LANES)
        acc = cgutils.alloca_once_value(builder, ir.Constant(acc_ty, None))
        cnt = cgutils.alloca_once_value(builder, ir.Constant(word, 0))
        k = cgutils.alloca_once_value(builder, ir.Constant(word, 0))
        j = cgutils.alloca_once(builder, word)
        full = ir.Constant(word, _LANES)
        last = ir.Constant(word, _LANES - 1)

        def segment(at, L, m):
            """Elements ``at .. at + m - 1`` into lanes ``L .. L + m - 1`` (``L + m <= 32``)."""
            _accumulate_lanes(builder, run, builder.sub(at, L), L, builder.add(L, m), acc,
                              cnt if skip_on else None)

        short = builder.icmp_signed("<=", nw, full)
        with cgutils.for_range(builder, nd) as ld:
            with cgutils.for_range(builder, nh) as lh:
                row = builder.add(b, builder.add(builder.mul(ld.index, dstep),
                                                 builder.mul(lh.index, hstep)))
                k0 = builder.load(k)
                builder.store(builder.add(k0, nw), k)
                L = builder.and_(k0, last)
                room = builder.sub(full, L)
                with builder.if_else(short) as (few, many):
                    with few:  # one segment, and the rest from lane 0 where it wraps
                        m = builder.select(builder.icmp_signed("<", nw, room), nw, room)
                        segment(row, L, m)
                        rest = builder.sub(nw, m)
                        zero64 = ir.Constant(word, 0)
                        with builder.if_then(builder.icmp_signed(">", rest, zero64)):
                            segment(builder.add(row, m), zero64, rest)
                    with many:
                        _stretches(builder, j, k0, nw, "rows_sum",
                                   lambda k, Lk, m: segment(builder.add(row, k), Lk, m))
        total = _halve(builder, builder.load(acc))
        n = builder.load(cnt) if skip_on else builder.mul(builder.mul(nd, nh), nw)
        return context.make_tuple(builder, signature.return_type, [total, n])

    return sig, codegen


def _transpose(builder, rows):
    """The ``PLANES x PLANES`` transpose of ``rows`` (vectors of ``PLANES``): three rounds of
    pairing row l with row l + 4 lane by lane (a perfect shuffle), one two-source shuffle
    each."""
    i32 = ir.IntType(32)
    half = PLANES // 2
    lo = ir.Constant(ir.VectorType(i32, PLANES), [k // 2 + (k % 2) * PLANES for k in range(PLANES)])
    hi = ir.Constant(ir.VectorType(i32, PLANES),
                     [half + k // 2 + (k % 2) * PLANES for k in range(PLANES)])
    for _ in range(3):
        nxt = []
        for l in range(half):
            nxt.append(builder.shuffle_vector(rows[l], rows[l + half], lo))
            nxt.append(builder.shuffle_vector(rows[l], rows[l + half], hi))
        rows = nxt
    return rows


@intrinsic
def interleave_planes(typingctx, dst, o, stride, src, b, poff, n):
    """``dst[o + stride * i + l] = src[b + poff[l] + i]`` (decoded, where ``dst`` holds the
    accumulation dtype) for ``i < n`` and the
    ``PLANES`` planes ``l``: runs of 8 planes copied side by side (``stride``: ``PLANES``, or
    a multiple of it where more planes are side by side, each 8 copied by a call), so that
    the 8-plane order adds one element of each with one contiguous vector load
    (:func:`add_block`) instead of gathering them (:func:`add_planes`). Blocks of ``PLANES``
    elements are loaded a row of each plane at a time and transposed in registers; the last
    ``n % PLANES`` are masked loads.

    ``dst``: the accumulation dtype of ``src`` (float32, or float64 for float64), or
    ``src``'s own (copied as they are: 16-bit ones not decoded); ``src``: a dtype
    :func:`vector_runs` accepts; ``poff``: int64. The caller keeps every index inside its
    array."""
    i64 = types.int64
    if not (isinstance(src, types.Array) and vector_runs(src.dtype)
            and isinstance(dst, types.Array) and dst.dtype in (_ACC[src.dtype], src.dtype)
            and isinstance(poff, types.Array) and poff.dtype == i64):
        return None

    def codegen(context, builder, signature, args):
        _, o, stride, _, b, _, n = args
        word = ir.IntType(64)
        ddata, sdata, pdata = (_data(context, builder, signature.args[k], args[k])
                               for k in (0, 3, 5))
        st = context.get_data_type(signature.args[3].dtype)
        at = context.get_data_type(signature.args[0].dtype)
        svec, avec = ir.VectorType(st, PLANES), ir.VectorType(at, PLANES)
        ssize = st.get_abi_size(context.target_data)
        asize = at.get_abi_size(context.target_data)
        rows = _plane_starts(builder, sdata, b, pdata)
        eight = ir.Constant(word, PLANES)
        same = signature.args[0].dtype == signature.args[3].dtype  # (copied as they are)

        def block(i, mask, count):
            vs = []
            for l in range(PLANES):
                ptr = builder.bitcast(builder.gep(rows[l], [i]), svec.as_pointer())
                v = (builder.load(ptr, align=ssize) if mask is None
                     else _masked(builder, "load", svec, ptr, ssize, mask))
                vs.append(v if same else _decode(builder, v, signature.args[3].dtype, avec))
            cols = _transpose(builder, vs)
            for j, col in enumerate(cols):
                at_j = builder.add(o, builder.mul(builder.add(i, ir.Constant(word, j)), stride))
                ptr = builder.bitcast(builder.gep(ddata, [at_j]), avec.as_pointer())
                if count is None:
                    builder.store(col, ptr, align=asize)
                else:
                    with builder.if_then(builder.icmp_unsigned(">", count, ir.Constant(word, j))):
                        builder.store(col, ptr, align=asize)

        nfull = builder.udiv(n, eight)
        with cgutils.for_range(builder, nfull) as loop:
            block(builder.mul(loop.index, eight), None, None)
        r = builder.urem(n, eight)
        with builder.if_then(builder.icmp_unsigned("!=", r, ir.Constant(word, 0))):
            block(builder.mul(nfull, eight), _lane_range(builder, None, r, PLANES), r)
        return context.get_dummy_value()

    return types.none(dst, i64, i64, src, i64, poff, i64), codegen


#: Storage types :func:`store_planes` moves (float16 and bfloat16 as their bits).
_MOVED = (types.float32, types.float64, types.uint16, types.int16)


@intrinsic
def store_planes(typingctx, dst, b, poff, src, o, n):
    """``dst[b + poff[l] + i] = src[o + PLANES * i + l]`` for ``i < n`` and the ``PLANES``
    planes ``l``: the inverse of :func:`interleave_planes`, 8 planes side by side written
    back as runs of their own, elements already encoded (``dst`` and ``src`` the same storage
    dtype). Blocks of ``PLANES`` elements are loaded a row of lanes at a time, transposed in
    registers and stored a run of each plane at a time; the last ``n % PLANES`` one by one.
    The caller keeps every index inside its array."""
    i64 = types.int64
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array)
            and dst.dtype == src.dtype and dst.dtype in _MOVED
            and isinstance(poff, types.Array) and poff.dtype == i64):
        return None

    def codegen(context, builder, signature, args):
        _, b, _, _, o, n = args
        word = ir.IntType(64)
        ddata, pdata, sdata = (_data(context, builder, signature.args[k], args[k])
                               for k in (0, 2, 3))
        et = context.get_data_type(signature.args[0].dtype)
        vec = ir.VectorType(et, PLANES)
        size = et.get_abi_size(context.target_data)
        runs = _plane_starts(builder, ddata, b, pdata)
        eight = ir.Constant(word, PLANES)
        nfull = builder.udiv(n, eight)
        with cgutils.for_range(builder, nfull) as loop:
            i = builder.mul(loop.index, eight)
            rows = []
            for j in range(PLANES):
                at = builder.add(o, builder.mul(builder.add(i, ir.Constant(word, j)), eight))
                ptr = builder.bitcast(builder.gep(sdata, [at]), vec.as_pointer())
                rows.append(builder.load(ptr, align=size))
            for l, run in enumerate(_transpose(builder, rows)):
                ptr = builder.bitcast(builder.gep(runs[l], [i]), vec.as_pointer())
                builder.store(run, ptr, align=size)
        first = builder.mul(nfull, eight)
        with cgutils.for_range(builder, builder.sub(n, first)) as loop:
            i = builder.add(first, loop.index)
            at = builder.add(o, builder.mul(i, eight))
            for l in range(PLANES):
                v = builder.load(builder.gep(sdata, [builder.add(at, ir.Constant(word, l))]))
                builder.store(v, builder.gep(runs[l], [i]))
        return context.get_dummy_value()

    return types.none(dst, i64, poff, src, i64, i64), codegen


@intrinsic
def store_channel_runs(typingctx, dst, b, stride, src, P, m, nc):
    """``dst[b + l * stride + t] = src[t * P + l]`` for ``t < m`` and ``l < nc``: outputs of a
    row kept channel by channel side by side (output ``t`` of channel ``l`` at ``t * P + l``)
    stored as each channel's run of ``m`` (a C-order result of channels-last inputs), a block
    of ``PLANES`` channels by ``PLANES`` outputs a transpose in registers and ``PLANES``
    masked stores, where each element was a store of its own into another cache line. A block
    is loaded whole where ``src`` holds it (its lanes past ``nc`` and rows past ``m`` are
    loaded and not stored: callers pad ``src``, ``work._output_buffer``), else lane by lane
    through masks (loads masked right after the stores that wrote them wait for those stores:
    0.35-0.6x). ``dst`` and ``src``: the same dtype of :data:`_MOVED` or int32 / int64, or
    int32 into int64 (indices, sign-extended). For AVX-512 (``NATIVE_MASKS``): the
    caller keeps every index of ``dst`` inside it."""
    ints = (types.int32, types.int64)
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array)
            and (dst.dtype == src.dtype and dst.dtype in _MOVED + ints
                 or (src.dtype, dst.dtype) == ints)):
        return None
    i64 = types.int64

    def codegen(context, builder, signature, args):
        _, b, stride, src, P, m, nc = args
        t = ir.IntType(64)
        ddata, sdata = (_data(context, builder, signature.args[k], args[k]) for k in (0, 3))
        size = context.make_array(signature.args[3])(context, builder, value=src).nitems
        st = context.get_data_type(signature.args[3].dtype)
        dt = context.get_data_type(signature.args[0].dtype)
        svec, dvec = ir.VectorType(st, PLANES), ir.VectorType(dt, PLANES)
        ssize, dsize = (e.get_abi_size(context.target_data) for e in (st, dt))
        eight = ir.Constant(t, PLANES)
        bools = ir.VectorType(ir.IntType(1), PLANES)

        def blocks(n):
            return builder.udiv(builder.add(n, ir.Constant(t, PLANES - 1)), eight)

        with cgutils.for_range(builder, blocks(nc)) as cl:
            c0 = builder.mul(cl.index, eight)
            lanes = _lane_range(builder, None, builder.sub(nc, c0), PLANES)
            with cgutils.for_range(builder, blocks(m)) as tl:
                t0 = builder.mul(tl.index, eight)
                last = builder.add(builder.mul(builder.add(t0, ir.Constant(t, PLANES - 1)), P),
                                   builder.add(c0, eight))
                whole = builder.icmp_unsigned("<=", last, size)
                rows = []
                for j in range(PLANES):
                    tj = builder.add(t0, ir.Constant(t, j))
                    ptr = builder.bitcast(
                        builder.gep(sdata, [builder.add(builder.mul(tj, P), c0)]),
                        svec.as_pointer())
                    with builder.if_else(whole, likely=True) as (plain, masked):
                        with plain:
                            v_plain = builder.load(ptr, align=ssize)
                            at_plain = builder.block
                        with masked:
                            inside = _splat(builder, bools, builder.icmp_unsigned("<", tj, m))
                            v_masked = _masked(builder, "load", svec, ptr, ssize,
                                               builder.and_(lanes, inside))
                            at_masked = builder.block
                    v = builder.phi(svec)
                    v.add_incoming(v_plain, at_plain)
                    v.add_incoming(v_masked, at_masked)
                    rows.append(v if st == dt else builder.sext(v, dvec))
                outputs = _lane_range(builder, None, builder.sub(m, t0), PLANES)
                for l, run in enumerate(_transpose(builder, rows)):
                    c = builder.add(c0, ir.Constant(t, l))
                    at = builder.add(builder.add(b, builder.mul(c, stride)), t0)
                    ptr = builder.bitcast(builder.gep(ddata, [at]), dvec.as_pointer())
                    with builder.if_then(builder.icmp_unsigned("<", c, nc)):
                        _masked(builder, "store", dvec, ptr, dsize, outputs, run)
        return context.get_dummy_value()

    return types.none(dst, i64, i64, src, i64, i64, i64), codegen


@intrinsic
def sum_blocks(typingctx, a, q, src, lo, hi):
    """``a[q + l] = 0 + src[lo * PLANES + l] + ... + src[(hi - 1) * PLANES + l]`` in
    ascending order for the ``PLANES`` planes ``l`` (columns ``lo <= k < hi`` of planes side
    by side: :func:`interleave_planes`): a window's sum kept in a register and stored once,
    from +0.0 (0 for int32 counts), the bits of zeroing ``a`` and adding each column into it
    (:func:`add_block`), without a store and a reload a column. ``a`` and ``src``: float32,
    float64 or int32, the same dtype. The caller keeps every index inside its array."""
    i64 = types.int64
    if not (isinstance(a, types.Array) and isinstance(src, types.Array) and a.dtype == src.dtype
            and a.dtype in (types.float32, types.float64, types.int32)):
        return None
    floating = a.dtype != types.int32

    def codegen(context, builder, signature, args):
        adata, sdata = (_data(context, builder, signature.args[k], args[k]) for k in (0, 2))
        elem = context.get_data_type(signature.args[0].dtype)
        vec = ir.VectorType(elem, PLANES)
        size = elem.get_abi_size(context.target_data)
        total = cgutils.alloca_once_value(builder, ir.Constant(vec, None))
        add = builder.fadd if floating else builder.add
        one = ir.Constant(ir.IntType(64), 1)
        with cgutils.for_range_slice(builder, args[3], args[4], one) as (k, _):
            at = builder.mul(k, ir.Constant(k.type, PLANES))
            v = builder.load(builder.bitcast(builder.gep(sdata, [at]), vec.as_pointer()),
                             align=size)
            builder.store(add(builder.load(total), v), total)
        ptr = builder.bitcast(builder.gep(adata, [args[1]]), vec.as_pointer())
        builder.store(builder.load(total), ptr, align=size)
        return context.get_dummy_value()

    return types.none(a, i64, src, i64, i64), codegen


@intrinsic
def add_block(typingctx, a, q, src, o, cnt, skip):
    """``a[q + l] += src[o + l]`` for the ``PLANES`` planes ``l`` (one element of each, side
    by side: :func:`interleave_planes`), one vector operation; with ``skip`` not None a NaN
    adds +0.0 instead and ``cnt[q + l]`` (int32) counts the numbers (as :func:`add_planes`).
    ``a`` and ``src``: float32 or float64, the same dtype. The caller keeps every index
    inside its array."""
    i64 = types.int64
    skip_on = not isinstance(skip, types.NoneType)
    if not (isinstance(a, types.Array) and isinstance(src, types.Array)
            and a.dtype == src.dtype and a.dtype in (types.float32, types.float64)
            and isinstance(cnt, types.Array) and cnt.dtype == types.int32):
        return None

    def codegen(context, builder, signature, args):
        adata, sdata, cdata = (_data(context, builder, signature.args[k], args[k])
                               for k in (0, 2, 4))
        elem = context.get_data_type(signature.args[0].dtype)
        vec = ir.VectorType(elem, PLANES)
        sptr = builder.bitcast(builder.gep(sdata, [args[3]]), vec.as_pointer())
        v = builder.load(sptr, align=elem.get_abi_size(context.target_data))
        _add_planes_at(context, builder, adata, args[1], v, cdata if skip_on else None)
        return context.get_dummy_value()

    return types.none(a, i64, src, i64, cnt, skip), codegen
