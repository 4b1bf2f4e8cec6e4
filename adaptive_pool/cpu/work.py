"""What every CPU kernel module shares: compile options, work items cut into chunks and
walked with counters, where a forward's item reads and writes, prefetched streams, blocks of
planes copied side by side, and the constants of the contract's order (lanes, the ``skip``
flags). See :mod:`.kernels`."""

from __future__ import annotations

import numba
import numpy as np
from numba.extending import overload

from ..windows import axes_layout
from .access import NATIVE_MASKS
from .lanes import PLANES, interleave_planes, store_channel_runs, vector_runs


#: Compile options of the kernels and their chunk functions. A kernel is one call of
#: :func:`~adaptive_pool.cpu.calls.run_chunks`, which runs its chunk function (a chunk's work)
#: on Numba's threads through the function's address ``at``: the chunk's code is typed,
#: lowered and optimised once, and no parfor is compiled around it.
_BODY = dict(nogil=True, cache=True, error_model="numpy")


@numba.njit(inline="always")
def _chunk(ch, nchunk, total):
    """Work items ``[lo, hi)`` of chunk ``ch`` when ``total`` items are cut into ``nchunk``."""
    return ch * total // nchunk, (ch + 1) * total // nchunk


@numba.njit(inline="always")
def _unravel(r, a, b, c):
    """Item ``r`` of an ``(…, c, b, a)`` grid as ``(i0, i1, i2, i3)``, innermost first."""
    i0 = r % a
    t = r // a
    i1 = t % b
    t = t // b
    i2 = t % c
    return i0, i1, i2, t // c


@numba.njit(inline="always")
def _step(i0, i1, i2, i3, a, b, c):
    """The item after ``(i0, i1, i2, i3)``: counters instead of four divisions per item."""
    i0 += 1
    if i0 == a:
        i0 = 0
        i1 += 1
        if i1 == b:
            i1 = 0
            i2 += 1
            if i2 == c:
                i2 = 0
                i3 += 1
    return i0, i1, i2, i3


#: Planes side by side in the average forward's lanewise loop order and the average
#: backward's lanes kernel.
LANES = PLANES

#: Lanes of the contract's summation order (a GPU warp's width): element k of a window's
#: flattened (d, h, w) order is added into lane ``k % SUM_LANES``.
SUM_LANES = 32


#: The ``skip`` argument of the average and max kernels: NaN counts (``PLAIN``) or is skipped
#: (``SKIPNA``). Kernels test it as ``skip is not None`` right in each branch condition: with
#: ``PLAIN`` (typed ``none``) Numba's dead-branch pruning removes the NaN-skipping branches
#: before type inference, even inside the inlined helpers, so a plain kernel never types or
#: lowers them (a tenth of a cold first call's Python work); ``SKIPNA`` compiles a
#: specialisation of its own. The test must stay a literal ``is not None`` on the argument: a
#: helper returning it hides the constant from the pruning.
PLAIN = None
SKIPNA = True


#: Outputs of a row of channels (``g x block``) the forwards of adjacent channels keep before
#: storing them (:func:`_store_outputs`).
OUTPUT_BUFFER = 1 << 12


#: Outputs of a row from which :func:`_store_outputs` stores C-order runs of channels through
#: transposes in registers (:func:`~adaptive_pool.cpu.lanes.store_channel_runs`, 8 outputs a
#: block: two of them took 0.63-0.69x the time of the stores one element at a time).
RUN_OUTPUTS = 4


@numba.njit(inline="always")
def _slab_planes(tab, ld, hd, D):
    """The most output planes one input slab lies in (at least 1)."""
    planes = 1
    for d in range(D):
        planes = max(planes, tab[hd + d] - tab[ld + d])
    return planes


@numba.njit(inline="always")
def _item_outputs(tab, ld, hd, lh, hh, D, H, rows_per_item):
    """``(planes, rows)``: the most output planes one input slab lies in, and the most output
    rows a block of ``rows_per_item`` input rows does: a gather's scratch for one work item,
    sized once (an array assigned again in a kernel's loop took an atomic count and dropped
    one every item, :func:`~adaptive_pool.cpu.access.borrow`)."""
    planes, rows = _slab_planes(tab, ld, hd, D), 1
    for h0 in range(0, H, rows_per_item):
        rows = max(rows, tab[hh + min(H, h0 + rows_per_item) - 1] - tab[lh + h0])
    return planes, rows


@numba.njit(inline="always")
def _window_extent(tab, dims):
    """``(depth, height)``: the deepest and the tallest window's extents, for scratch holding
    any window's band of rows, sized once (see :func:`_item_outputs`)."""
    sd, ed, _, _, sh, eh, _, _, _, _, _, _ = axes_layout(dims)
    depth = height = 1
    for od in range(dims[5]):
        depth = max(depth, tab[ed + od] - tab[sd + od])
    for oh in range(dims[6]):
        height = max(height, tab[eh + oh] - tab[sh + oh])
    return depth, height


@numba.njit(inline="always")
def _output_buffer(g, P):
    """The elements of a buffer of ``g`` outputs of ``P`` channels side by side
    (:func:`_store_outputs`): rows up to a multiple of ``PLANES`` and ``PLANES`` more, so that
    :func:`~adaptive_pool.cpu.lanes.store_channel_runs` loads its blocks whole."""
    return -(-g // PLANES) * PLANES * P + PLANES


@numba.njit(inline="always")
def _store_outputs(y, yb, yc, yw, v, P, nc, o0, m):
    """Store outputs ``o0 .. o0 + m - 1`` of a row of ``nc`` adjacent channels (output ``t`` of
    channel ``l`` at ``v[t * P + l]``): each output's channels as one run where they are
    adjacent in ``y`` (``yc == 1``), else each channel's outputs together (a C-order result of a
    channels-last input). There, one output of every channel at a time wrote a cache line per
    channel for one element (max forward, values and indices, A/B: float32 64x512x14x14 -> 5x5
    1.19-1.23x, 32x256x56x56 -> 7x7 1.41-1.45x); and a strided loop over the channels, which
    LLVM vectorises as scattered stores, took adjacent results 1.2x as long."""
    if yc == 1:
        for t in range(m):
            yo = yb + (o0 + t) * yw
            for l in range(nc):
                y[np.uint64(yo + l)] = v[np.uint64(t * P + l)]
    elif NATIVE_MASKS and yw == 1 and m >= RUN_OUTPUTS:
        store_channel_runs(y, yb + o0, yc, v, P, m, nc)
    else:
        for l in range(nc):
            for t in range(m):
                y[np.uint64(yb + l * yc + (o0 + t) * yw)] = v[np.uint64(t * P + l)]


@numba.njit(inline="always")
def _forward_item(tab, dims, xg, yg, lanes, oh, od, cb, n):
    """Where work item ``(n, cb, od, oh)`` of a forward (the average's loop orders, the
    channels-last max) reads and writes: ``(d0, d1, h0, h1, c0, xb, yb, vdh, nl)`` (window
    band, first plane, bases, band area, planes)."""
    _, C, _, _, _, _, _, _ = dims
    sd, ed, _, _, sh, eh, _, _, _, _, _, _ = axes_layout(dims)
    x0, xn, xc, _, _, _ = xg
    y0, yn, yc, yd, yh, _ = yg
    d0, d1 = tab[sd + od], tab[ed + od]
    h0, h1 = tab[sh + oh], tab[eh + oh]
    c0 = cb * lanes
    xb = x0 + n * xn + c0 * xc
    yb = y0 + n * yn + c0 * yc + od * yd + oh * yh
    return d0, d1, h0, h1, c0, xb, yb, (d1 - d0) * (h1 - h0), min(lanes, C - c0)


@numba.njit(inline="always")
def _stream(xg, dims, V, r_lo, r_hi, on):
    """``(stream, pf, end)`` for :func:`~adaptive_pool.cpu.access.prefetch_to` over items
    ``[r_lo, r_hi)`` of ``V`` elements each: ``stream`` where item r lies at ``x0 + r * V`` in
    output (n, c, od, oh) order; ``end`` 0 unless ``stream`` and ``on`` (nothing prefetched)."""
    N, C, _, _, W, OD, OH, _ = dims
    x0, xn, xc, xd, xh, xw = xg
    Q = OD * OH * V
    stream = ((W == 1 or xw == 1) and (OH == 1 or xh == V) and (OD == 1 or xd == OH * V)
              and (C == 1 or xc == Q) and (N == 1 or xn == C * Q))
    return stream, x0 + r_lo * V, x0 + r_hi * V if stream and on else 0


@numba.njit(inline="always")
def _first_flagged(bad, per):
    """Position ``r * per + bad[r]`` of the first unit ``r`` with a flag (``bad[r] >= 0``: its
    first flagged position of ``per``), or -1: found here, not by a second Python call."""
    for r in range(bad.size):
        if bad[r] >= 0:
            return r * per + bad[r]
    return np.int64(-1)


def _interleave(band, o, stride, x, b, poff, n):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(_interleave, inline="always")
def _interleave_impl(band, o, stride, x, b, poff, n):
    """:func:`~adaptive_pool.cpu.lanes.interleave_planes` where it reads ``x``'s storage;
    elsewhere a stand-in (a compile-time choice: the kernels call it only where it reads)."""
    if vector_runs(x.dtype):
        return lambda band, o, stride, x, b, poff, n: interleave_planes(
            band, o, stride, x, b, poff, n)
    return lambda band, o, stride, x, b, poff, n: None


@numba.njit(inline="always")
def _plane_offsets(poff, nl, stride):
    """``poff[l]``: plane l's offset, ``stride`` apart; a last block of fewer than ``LANES``
    planes repeats its last plane."""
    for l in range(LANES):
        poff[l] = min(l, nl - 1) * stride


@numba.njit(inline="always")
def _interleave_band(x, xb, xc, nl, xd, xh, d0, d1, h0, h1, W, band, poff, P):
    """Copy the band ``d0:d1, h0:h1`` of ``nl`` planes of unit-stride rows (plane l at ``xb +
    l * xc``) into ``band`` side by side: element (d, h, w) of plane l at ``band[((d - d0) *
    nh + h - h0) * W + w) * P + l]``, decoded where ``band`` holds the accumulation dtype (as
    they are where it holds ``x``'s), 8 planes at a time (a last 8 of fewer repeat their last
    plane; ``nl == 0`` copies nothing). Returns ``(band, base, d, h, w strides)``.
    Rows, or the whole band, that are one run of memory are one copy (one call site: compile
    time)."""
    nd, nh = d1 - d0, h1 - h0
    run = xh == W and (nd == 1 or xd == nh * W)
    nr, L = (1, nd * nh * W) if run else (nd * nh, W)
    for g in range(0, nl, LANES):
        _plane_offsets(poff, min(LANES, nl - g), xc)
        for r in range(nr):
            d, h = r // nh, r % nh
            _interleave(band, r * L * P + g, P, x, xb + g * xc + (d0 + d) * xd + (h0 + h) * xh,
                        poff, L)
    return band, 0, nh * W * P, W * P, P
