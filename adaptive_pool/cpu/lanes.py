"""Eight-lane vector helpers for the average forward's lane order, written in LLVM IR.

The lane order sums ``LANES`` (8) planes side by side, one plane per lane. Read from the planes
themselves, every step gathers one element of each plane: 8 scalar loads and additions. These
helpers instead copy a block of 8 planes *lane-major* (element k of the 8 planes next to each
other) with 8x8 in-register transposes, then add whole vectors of 8 lanes. Each lane still adds
its own plane's terms in the contract's order, so the sums are bit for bit the scalar ones.
Numba has no vector types (and its SLP vectoriser is off), so both are intrinsics.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

WIDTH = 8
_I32x8 = ir.VectorType(ir.IntType(32), WIDTH)


def _vector_at(context, builder, arrty, arr, index, vt):
    """A pointer to ``WIDTH`` elements of ``arr`` from ``index`` on, as a vector pointer."""
    data = context.make_array(arrty)(context, builder, arr).data
    return builder.bitcast(builder.gep(data, [index]), vt.as_pointer())


def _transpose(builder, rows):
    """The 8x8 transpose of 8 vectors (unpack, 64-bit shuffle, 128-bit halves: the shuffles
    that x86's AVX has as single instructions)."""

    def sh(a, b, mask):
        return builder.shuffle_vector(a, b, ir.Constant(_I32x8, mask))

    lo, hi = [0, 8, 1, 9, 4, 12, 5, 13], [2, 10, 3, 11, 6, 14, 7, 15]
    t = []
    for i in range(0, WIDTH, 2):
        t += [sh(rows[i], rows[i + 1], lo), sh(rows[i], rows[i + 1], hi)]
    a, b = [0, 1, 8, 9, 4, 5, 12, 13], [2, 3, 10, 11, 6, 7, 14, 15]
    u = []
    for i in (0, 4):
        u += [sh(t[i], t[i + 2], a), sh(t[i], t[i + 2], b),
              sh(t[i + 1], t[i + 3], a), sh(t[i + 1], t[i + 3], b)]
    first, second = [0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15]
    return [sh(u[k], u[k + 4], first) for k in range(4)] + [
        sh(u[k], u[k + 4], second) for k in range(4)
    ]


@intrinsic
def transpose_block(typingctx, src, base, stride, dst, at):
    """``dst[at + 8 * k + l] = src[base + l * stride + k]`` for ``k, l`` in ``0..7``: elements
    ``k`` of 8 planes ``stride`` apart, lane-major. Reads and writes 8 whole runs of 8."""

    def codegen(context, builder, sig, args):
        src, base, stride, dst, at = args
        vt = ir.VectorType(context.get_data_type(sig.args[0].dtype), WIDTH)
        rows = [
            builder.load(
                _vector_at(context, builder, sig.args[0], src,
                           builder.add(base, builder.mul(stride, ir.Constant(stride.type, l))), vt),
                align=sig.args[0].dtype.bitwidth // 8,
            )
            for l in range(WIDTH)
        ]
        for k, col in enumerate(_transpose(builder, rows)):
            p = _vector_at(context, builder, sig.args[3], dst,
                           builder.add(at, ir.Constant(at.type, WIDTH * k)), vt)
            builder.store(col, p, align=sig.args[3].dtype.bitwidth // 8)
        return context.get_dummy_value()

    if src.dtype != dst.dtype:
        return None
    return types.void(src, base, stride, dst, at), codegen


@intrinsic
def lane_run_sums(typingctx, buf, at, n):
    """Per lane ``l``: the sum, from +0.0 and in order, of ``buf[at + 8 * i + l]`` for
    ``i < n``: each lane's run of ``n`` lane-major elements, as a tuple of 8."""

    def codegen(context, builder, sig, args):
        buf, at, n = args
        et = context.get_data_type(sig.args[0].dtype)
        vt = ir.VectorType(et, WIDTH)
        total = cgutils.alloca_once_value(builder, ir.Constant(vt, [ir.Constant(et, 0.0)] * WIDTH))
        with cgutils.for_range(builder, n) as loop:
            i = builder.add(at, builder.mul(loop.index, ir.Constant(at.type, WIDTH)))
            v = builder.load(_vector_at(context, builder, sig.args[0], buf, i, vt),
                             align=sig.args[0].dtype.bitwidth // 8)
            builder.store(builder.fadd(builder.load(total), v), total)
        vec = builder.load(total)
        out = context.get_constant_undef(sig.return_type)
        for l in range(WIDTH):
            lane = builder.extract_element(vec, ir.Constant(ir.IntType(32), l))
            out = builder.insert_value(out, lane, l)
        return out

    return types.UniTuple(buf.dtype, WIDTH)(buf, at, n), codegen
