"""The lane-order sum of a contiguous run, written as LLVM vector code (CPU only).

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

from .access import NATIVE_HALF

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
    """A vector of stored elements to the accumulation type (the codecs of ``access``)."""
    if dtype == types.int16:  # bfloat16: the bits are the top half of a float32
        w = builder.zext(v, ir.VectorType(ir.IntType(32), _LANES))
        w = builder.shl(w, ir.Constant(w.type, [16] * _LANES))
        return builder.bitcast(w, acc_ty)
    if dtype == types.uint16:  # float16: fpext half (vcvtph2ps), exact
        return builder.fpext(builder.bitcast(v, ir.VectorType(ir.HalfType(), _LANES)), acc_ty)
    return v


@intrinsic
def run_sum(typingctx, src, b, n):
    """The lane-order sum of ``src[b : b + n]`` (decoded), in the accumulation type.

    ``src`` is a 1-D array of a dtype that :func:`vector_runs` accepts; ``0 <= b`` and
    ``b + n <= src.size`` are the caller's to keep (nothing is checked, nothing outside the
    run is read)."""
    if not (isinstance(src, types.Array) and src.ndim == 1 and vector_runs(src.dtype)):
        return None
    acc_nb = _ACC[src.dtype]
    sig = acc_nb(src, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, value=args[0])
        elem = context.get_data_type(aryty.dtype)
        size = aryty.dtype.bitwidth // 8
        acc_el = context.get_value_type(acc_nb)
        vec = ir.VectorType(elem, _LANES)
        acc_ty = ir.VectorType(acc_el, _LANES)
        i64 = ir.IntType(64)
        base = builder.gep(ary.data, [args[1]])
        n = args[2]
        nfull = builder.lshr(n, ir.Constant(i64, 5))
        zero = ir.Constant(acc_ty, None)

        # whole blocks: acc += decode(load <32 x elem>)
        pre = builder.basic_block
        loop = builder.append_basic_block("lanes.loop")
        body = builder.append_basic_block("lanes.body")
        done = builder.append_basic_block("lanes.done")
        builder.branch(loop)
        builder.position_at_end(loop)
        j = builder.phi(i64)
        acc = builder.phi(acc_ty)
        j.add_incoming(ir.Constant(i64, 0), pre)
        acc.add_incoming(zero, pre)
        builder.cbranch(builder.icmp_unsigned("<", j, nfull), body, done)
        builder.position_at_end(body)
        p = builder.gep(base, [builder.shl(j, ir.Constant(i64, 5))])
        v = builder.load(builder.bitcast(p, vec.as_pointer()), align=size)
        nacc = builder.fadd(acc, _decode(builder, v, src.dtype, acc_ty))
        j2 = builder.add(j, ir.Constant(i64, 1))
        j.add_incoming(j2, builder.basic_block)
        acc.add_incoming(nacc, builder.basic_block)
        builder.branch(loop)

        # the last r = n % 32 elements into lanes 0 .. r-1 (a masked load: the other lanes
        # read nothing and add +0.0)
        builder.position_at_end(done)
        r = builder.and_(n, ir.Constant(i64, _LANES - 1))
        with builder.if_then(builder.icmp_unsigned("!=", r, ir.Constant(i64, 0))):
            i32, i32v = ir.IntType(32), ir.VectorType(ir.IntType(32), _LANES)
            rv = builder.insert_element(ir.Constant(i32v, None), builder.trunc(r, i32),
                                        ir.Constant(i32, 0))
            rv = builder.shuffle_vector(rv, rv, ir.Constant(i32v, [0] * _LANES))
            mask = builder.icmp_unsigned("<", ir.Constant(i32v, list(range(_LANES))), rv)
            p = builder.bitcast(builder.gep(base, [builder.shl(nfull, ir.Constant(i64, 5))]),
                                vec.as_pointer())
            fn = cgutils.get_or_insert_function(
                builder.module,
                ir.FunctionType(vec, [vec.as_pointer(), ir.IntType(32), mask.type, vec]),
                f"llvm.masked.load.v{_LANES}{elem.intrinsic_name}.p0",
            )
            t = builder.call(fn, [p, ir.Constant(ir.IntType(32), size), mask,
                                  ir.Constant(vec, None)])
            tacc = builder.fadd(acc, _decode(builder, t, src.dtype, acc_ty))
            tail_bb = builder.basic_block
        merged = builder.phi(acc_ty)
        merged.add_incoming(acc, done)
        merged.add_incoming(tacc, tail_bb)

        # the halving steps: lane i += lane i + h for h = 16, 8, 4, 2, 1
        s, h = merged, _LANES // 2
        while h >= 1:
            i32v = ir.VectorType(ir.IntType(32), h)
            lo = builder.shuffle_vector(s, s, ir.Constant(i32v, list(range(h))))
            hi = builder.shuffle_vector(s, s, ir.Constant(i32v, list(range(h, 2 * h))))
            s = builder.fadd(lo, hi)
            h //= 2
        return builder.extract_element(s, ir.Constant(ir.IntType(32), 0))

    return sig, codegen
