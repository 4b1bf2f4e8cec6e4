"""The CPU kernels: one ``@njit(parallel=True, cache=True)`` body per algorithm.

Every kernel sees the problem as ``(N, C, D, H, W) -> (OD, OH, OW)``; 1-D and 2-D problems are
singleton axes. Arrays arrive as flat 1-D storage arrays plus a geometry tuple
``(offset, sN, sC, sD, sH, sW)`` in elements, so any strides (negative, zero, channels-last) use
the same compiled code: one specialisation per storage dtype (and index dtype), never per layout
or rank. ``tab`` is the packed window table of :mod:`adaptive_pool.windows`.

Summation order (the contract that makes CPU and CUDA results bitwise equal; see
``docs/summation-order.md``): an average forward window is summed in the *lane order*:
element k of the window's flattened (d, h, w) order is added into lane ``k % 32`` (each lane
from +0.0, in ascending k, in the accumulation type), then the lanes are combined by halving
(lane i += lane i + 16, + 8, + 4, + 2, + 1) and lane 0 is divided by the integer volume (with
skipna: the count of non-NaN elements; NaN elements add nothing). A lane is never -0.0, so
lanes no element reached are skipped in the combination (or added as +0.0: the same bits),
and a skipped NaN may add +0.0. The average backward keeps its order: covering output cells in
ascending order, w innermost, then h, then d, each level from +0.0 (a level whose only term is
itself such a sum may take it as is: ``0.0 + term == term`` bit for bit).

How they go fast: work is handed out in ``nchunk`` contiguous ranges of work items, walked with
counters (:func:`_step`) instead of divisions, and scratch is allocated once per range; flat
indices are unsigned (see :mod:`~adaptive_pool.cpu.access`). The average forward has five
loop orders, all in the lane order: window by window (unit-stride rows placed at their lanes
of a 32-lane register accumulator by masked vector loads,
:func:`~adaptive_pool.cpu.lanes.rows_sum`; other strides element by element,
:func:`_run_add`), row by row for long windows,
columns side by side for windows one column wide (a ``32 x W`` accumulator), 8 planes side by
side for small windows (a ``32 x 8`` accumulator) and contiguous runs (global pooling,
(None, 1)). skipna is a compile-time flag (:data:`SKIPNA`): the plain kernels compile exactly
as without it. The average backward reduces along w once per covering output row and adds
whole rows (or writes each window's share over it, where every window is a run of memory:
:func:`avg_pool_backward_runs`), and the max backward fills blocks of rows, both decoding and
encoding through unit-stride loops that LLVM vectorises
(:func:`~adaptive_pool.cpu.access.load_row` and ``store_row``). Into a result of its own, the
max backward zeroes a plane and writes only the elements that receive a gradient
(:func:`max_pool_backward_sparse`). The max forward reduces one
axis at a time, keeping the first position of each maximum as it goes (:func:`max_pool`), or
takes windows that are runs of memory one vectorised pass each (:func:`max_pool_runs`).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange, types
from numba.extending import overload

from ..windows import axes_layout, index_in_window
from .access import (
    acc,
    borrow,
    dec,
    decodes,
    enc,
    get,
    key,
    key_nan,
    load_row,
    prefetch_to,
    put,
    scratch,
    store_numbers,
    store_row,
)
from .calls import call
from .lanes import (
    PLANES, add_block, add_numbers, add_planes, count_bits, count_ones, interleave_planes,
    number_bits, number_word, plane_numbers, rows_sum, run_count, run_fill, run_sum,
    share_planes, store_bits, store_planes, vector_runs,
)

#: The kernels: each is a one-line ``prange`` loop over chunks, calling a plain function that
#: does a chunk's work (``_BODY``) through its address ``at`` (:mod:`~adaptive_pool.cpu.calls`).
#: Numba's parfor passes (copy propagation, fusion, a second typing and lowering of the loop
#: body as a gufunc) grow faster than the body they work on, and a callee called by name is
#: linked into the gufunc and the kernel and optimised again in each: a chunk function called
#: by address is typed, lowered and optimised once.
_JIT = dict(parallel=True, cache=True, nogil=True, error_model="numpy")
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

#: The largest work item (bytes of x) whose NaN-skipping average backward prefetches the next
#: item's x while it stores its own (see :func:`_avg_backward_chunk`).
PREFETCH_ITEM = 64 << 10


#: How far ahead of its reads the average forward over contiguous windows, one an item
#: (global pooling, whole rows), prefetches its input, in bytes: a window's sum is short work,
#: so more lines must be on their way than the 2 KiB of other streams (Zen 4: float32
#: 128x2048x7x7 -> 1x1 0.89 -> 0.68 ms, float64 2.28 -> 1.95, float64 32x256x28x28 -> (None,
#: 1) 0.89 -> 0.69; the rows of 1-D windows and the NaN-skipping backward's reads were
#: 0.86-0.95x as fast 8 KiB ahead).
WINDOWS_AHEAD = 8192


#: Channels a work item of the channels-last average (:func:`avg_pool_channels`) takes side by
#: side, a unit-stride run of them each window element. 256 rather than 128: longer runs are
#: read closer to memory speed (seven alternated rounds on Zen 4, medians: float32 32x256x56x56
#: -> 7x7 9.7 -> 7.6 ms, float16 64x512x14x14 -> 5x5 2.84 -> 2.24, float64 18.0 -> 13.6).
CHANNEL_BLOCK = 256


#: The ``skip`` argument of the average and max kernels: NaN counts (``PLAIN``) or is skipped
#: (``SKIPNA``). Kernels test it as ``skip is not None`` right in each branch condition: with
#: ``PLAIN`` (typed ``none``) Numba's dead-branch pruning removes the NaN-skipping branches
#: before type inference, even inside the inlined helpers, so a plain kernel never types or
#: lowers them (a tenth of a cold first call's Python work); ``SKIPNA`` compiles a
#: specialisation of its own. The test must stay a literal ``is not None`` on the argument: a
#: helper returning it hides the constant from the pruning.
PLAIN = None
SKIPNA = True


@numba.njit(inline="always")
def _run_add(src, b, step, n, lanes, L, cnt, skip):
    """Add ``src[b + j * step]`` (decoded, ``j < n``) into ``lanes[(L + j) % 32]``, the window's
    elements from its position ``L`` on; returns the next position's lane and ``cnt`` plus the
    elements added. Contiguous chunks ``lanes[L:L+m]``, so a unit-stride run is vector adds.
    With :data:`SKIPNA`, NaN adds +0.0 instead (a lane is never -0.0: the same bits as not
    adding) and is not counted."""
    j = 0
    while j < n:
        m = min(n - j, SUM_LANES - L)
        bj = b + j * step
        if skip is not None:
            z = acc(src, 0)
            if step == 1:
                for i in range(m):
                    v = get(src, bj + i)
                    ok = v == v
                    lanes[np.uint64(L + i)] += v if ok else z
                    cnt += np.int64(ok)
            else:
                for i in range(m):
                    v = get(src, bj + i * step)
                    ok = v == v
                    lanes[np.uint64(L + i)] += v if ok else z
                    cnt += np.int64(ok)
        else:
            if step == 1:
                for i in range(m):
                    lanes[np.uint64(L + i)] += get(src, bj + i)
            else:
                for i in range(m):
                    lanes[np.uint64(L + i)] += get(src, bj + i * step)
            cnt += m
        j += m
        L = (L + m) & (SUM_LANES - 1)
    return L, cnt


@numba.njit(inline="always")
def _combine(a, P, filled):
    """The lanes' halving steps on ``a``, ``SUM_LANES`` rows of ``P`` independent sums
    (``a[lane * P + p]``): row i += row i + 16, + 8, + 4, + 2, + 1; the sums end in
    ``a[:P]``. Only the first ``filled`` rows were written; the others would be +0.0, which
    changes no lane, so they are skipped (CUDA's ``_combine_lanes``). Each step is one
    contiguous loop (vectorised for any ``P``)."""
    m = min(filled, SUM_LANES)
    half = SUM_LANES // 2
    while half >= 1:
        if m > half:
            hp = half * P
            for t in range((m - half) * P):
                a[np.uint64(t)] += a[np.uint64(t + hp)]
            m = half
        half //= 2


@numba.njit(inline="always")
def _combine1(a, filled):
    """:func:`_combine` of one set of lanes (``P == 1``); all 32 reached: constant trip counts,
    which LLVM unrolls into a few vector adds without run-time overlap checks."""
    if filled >= SUM_LANES:
        for t in range(16):
            a[t] += a[t + 16]
        for t in range(8):
            a[t] += a[t + 8]
        for t in range(4):
            a[t] += a[t + 4]
        for t in range(2):
            a[t] += a[t + 2]
        a[0] += a[1]
    else:
        _combine(a, 1, filled)


@numba.njit(inline="always")
def _rows_in_use(vol):
    """Rows of lanes a window of ``vol`` elements is added into: all 32 from 33 elements on;
    below, the largest power of two under ``vol`` (``vol`` itself for 1 or 2), element ``k``
    going to row ``k % rows``. That is the halving steps larger than ``rows`` (no-ops then)
    and the one of ``rows`` (row i += row i + rows) done as the elements are read: the same
    bits (adding ``x`` to a lane or to ``0.0 + x`` differ only for ``x == -0.0``, and a lane
    that already holds a number is never -0.0), from fewer rows (14x14 -> 5x5: 9-16 rows
    become 8)."""
    if vol > SUM_LANES:
        return SUM_LANES
    rows = min(vol, 2)  # two elements stay in two rows: one would chain their additions
    while rows * 2 < vol:
        rows *= 2
    return rows


@numba.njit(inline="always")
def _zero(a, n):
    for t in range(n):
        a[t] = 0


@numba.njit(inline="always")
def _runs_of(nd, nh, nw, W, xd, xh, xw):
    """A window's ``nd x nh`` rows of ``nw`` as ``(nd, nh, nw)`` runs of memory: rows, or whole
    planes, that follow each other in memory are one run (a contiguous plane in global
    pooling: one vectorised pass)."""
    if xw == 1 and nw == W and xh == W:
        nh, nw = 1, nh * W
        if xd == nw:
            nd, nw = 1, nd * nw
    return nd, nh, nw


@numba.njit(inline="always")
def _window_sum(x, xb, xd, xh, xw, d0, d1, h0, h1, w0, w1, W, lanes, skip):
    """Window ``[d0,d1)x[h0,h1)x[w0,w1)``'s sum in the lane order and its element count
    (non-NaN with :data:`SKIPNA`), element by element into ``lanes`` (rows of any stride)."""
    vol = (d1 - d0) * (h1 - h0) * (w1 - w0)
    _zero(lanes, min(vol, SUM_LANES))
    nrd, nrh, run = _runs_of(d1 - d0, h1 - h0, w1 - w0, W, xd, xh, xw)
    b0 = xb + d0 * xd + h0 * xh + w0 * xw
    L, cnt = 0, 0
    for d in range(nrd):
        for h in range(nrh):
            L, cnt = _run_add(x, b0 + d * xd + h * xh, xw, run, lanes, L, cnt, skip)
    _combine1(lanes, vol)
    return lanes[0], cnt


def _band(x, xb, xc, nl, xd, xh, xw, d0, d1, h0, h1, W, band):  # pragma: no cover - stub
    raise NotImplementedError


@numba.njit(**_BODY)
def _decode_band(x, xb, xc, nl, xd, xh, xw, d0, d1, h0, h1, W, band):
    """:func:`_band` of a 16-bit array, and the 8-plane order's copy of every dtype's planes.
    Compiled once per dtype and called once per band rather than inlined: typed and
    vectorised at each call site, it was a fifth of the 16-bit average forward's cold first
    call (1.0-1.5 s of 5-7 s), for a call per band at run time."""
    nd, nh = d1 - d0, h1 - h0
    run = nh * W
    # rows, then planes, that are one run of memory are decoded as one: a short run costs
    # more to set up than to decode (one call site: compile time)
    rows_run = xw == 1 and xh == W
    nr, L = (1, run) if rows_run else (nh, W)
    n_l, n_d = nl, nd
    if rows_run and (nd == 1 or xd == run) and xc == nd * run:
        n_l, n_d, L = 1, 1, nl * nd * run
    for l in range(n_l):
        for d in range(n_d):
            b = xb + l * xc + (d0 + d) * xd + h0 * xh
            o = (l * nd + d) * run
            for r in range(nr):
                load_row(x, b + r * xh, xw, L, band[o + r * L :])
    return band, 0, nd * run, run, W, 1, 0, nd, 0, nh


@overload(_band, inline="always")
def _band_impl(x, xb, xc, nl, xd, xh, xw, d0, d1, h0, h1, W, band):
    """Where the average forward's sums read the band ``d0:d1, h0:h1`` of ``nl`` planes
    ``xc`` apart: ``(array, base, plane, d, h, w strides, d0, d1, h0, h1)``.

    float32 and float64 read ``x`` itself. 16-bit bands are first decoded into ``band``
    (at least ``nl * (d1 - d0) * (h1 - h0) * W`` long; ``nl == 0`` decodes nothing) in
    unit-stride loops that vectorise, instead of a scalar decode per addition: 1.1-1.5x on
    7x7 to 28x28 planes, 1.1-1.2x on 56x56 -> 7x7. Chosen at compile time, so each dtype
    compiles one copy of the sums.
    """
    if x.dtype in (types.float32, types.float64):
        return lambda x, xb, xc, nl, xd, xh, xw, d0, d1, h0, h1, W, band: (
            x, xb, xc, xd, xh, xw, d0, d1, h0, h1
        )

    return lambda x, xb, xc, nl, xd, xh, xw, d0, d1, h0, h1, W, band: _decode_band(
        x, xb, xc, nl, xd, xh, xw, d0, d1, h0, h1, W, band
    )


@numba.njit(inline="always")
def _avg_item(tab, dims, xg, yg, lanes, oh, od, cb, n):
    """Where work item ``(n, cb, od, oh)`` of the average forward (and of the channels-last
    max) reads and writes: ``(d0, d1, h0, h1, c0, xb, yb, vdh, nl)`` (window band, first plane,
    bases, band area, planes)."""
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
def _mean(x, s, n):
    """The window's mean: its lane sum over its element count, in the accumulation type (an
    empty count with skipna gives 0/0: NaN)."""
    return s / acc(x, n)


@numba.njit(inline="always")
def _contiguous_end(xg, dims):
    """Where a C-contiguous input ends (the end of a prefetched stream over it), else 0: the
    :func:`_stream` of its rows."""
    N, C, D, H, W, _, _, _ = dims
    return _stream(xg, (N, C, D, H, W, D, H, W), W, 0, N * C * D * H, True)[2]


def _rows_in_place(x):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(_rows_in_place, inline="always")
def _rows_in_place_impl(x):
    """Whether :func:`~adaptive_pool.cpu.lanes.rows_sum` reads ``x``'s storage (a
    compile-time constant: float32, float64, bfloat16, float16 with F16C)."""
    v = vector_runs(x.dtype)
    return lambda x: v


def _sum_rows(x, b, nw, nh, hstep, nd, dstep, skip):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(_sum_rows, inline="always")
def _sum_rows_impl(x, b, nw, nh, hstep, nd, dstep, skip):
    """:func:`~adaptive_pool.cpu.lanes.rows_sum` where it reads ``x``'s storage; elsewhere
    (float16 without F16C) a stand-in that types, for code that :func:`_rows_in_place` keeps
    from running."""
    if vector_runs(x.dtype):
        return lambda x, b, nw, nh, hstep, nd, dstep, skip: rows_sum(
            x, b, nw, nh, hstep, nd, dstep, skip)
    return lambda x, b, nw, nh, hstep, nd, dstep, skip: (acc(x, 0), np.int64(0))


def _interleave(band, o, x, b, poff, n):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(_interleave, inline="always")
def _interleave_impl(band, o, x, b, poff, n):
    """:func:`~adaptive_pool.cpu.lanes.interleave_planes` where it reads ``x``'s storage;
    elsewhere a stand-in, as :func:`_sum_rows`."""
    if vector_runs(x.dtype):
        return lambda band, o, x, b, poff, n: interleave_planes(band, o, x, b, poff, n)
    return lambda band, o, x, b, poff, n: None


@numba.njit(**_BODY)
def _avg_direct_chunk(ch, x, xg, y, yg, tab, dims, skip, nchunk):
    """Chunk ``ch`` of :func:`avg_pool_direct`."""
    N, C, D, H, W, OD, OH, OW = dims
    _, _, _, _, _, _, _, _, sw, ew, _, _ = axes_layout(dims)
    _, _, xc, xd, xh, xw = xg
    yw = yg[5]
    r_lo, r_hi = _chunk(ch, nchunk, N * C * OD * OH)
    ws = tab[sw : sw + OW]
    we = tab[ew : ew + OW]
    s = scratch(x, OW)
    lanes = scratch(x, SUM_LANES)
    band = scratch(x, 0)
    in_place = _rows_in_place(x) and xw == 1
    # a C-contiguous input is read in memory order: prefetched as one stream
    end = _contiguous_end(xg, dims) if in_place else 0
    pf = 0
    oh, od, c, n = _unravel(r_lo, OH, OD, C)
    for _ in range(r_lo, r_hi):
        d0, d1, h0, h1, _, xb, yb, _, _ = _avg_item(tab, dims, xg, yg, 1, oh, od, c, n)
        if in_place:  # unit-stride rows, summed (and decoded) in registers
            b = xb + d0 * xd + h0 * xh
            pf = prefetch_to(x, max(pf, b), b + (d1 - d0 - 1) * xd + (h1 - h0) * xh, end)
            for ow in range(OW):
                w0 = ws[ow]
                nd, nh, nw = _runs_of(d1 - d0, h1 - h0, we[ow] - w0, W, xd, xh, xw)
                t, k = _sum_rows(x, b + w0, nw, nh, xh, nd, xd, skip)
                s[ow] = _mean(x, t, k)
        else:
            need = (d1 - d0) * (h1 - h0) * W
            if decodes(x) and band.size < need:
                band = scratch(x, need)
            bx, bb, _, bd, bh, bw, e0, e1, f0, f1 = _band(
                x, xb, xc, 1, xd, xh, xw, d0, d1, h0, h1, W, band
            )
            for ow in range(OW):
                t, k = _window_sum(
                    bx, bb, bd, bh, bw, e0, e1, f0, f1, ws[ow], we[ow], W, lanes, skip
                )
                s[ow] = _mean(x, t, k)
        store_row(y, yb, yw, OW, s, 0)
        oh, od, c, n = _step(oh, od, c, n, OH, OD, C)


@numba.njit(**_JIT)
def avg_pool_direct(at, x, xg, y, yg, tab, dims, skip, nchunk):
    """``y[o] = sum(x[window(o)]) / volume(o)``, window by window; a work item is one output
    row of one plane.

    The average forward has four loop orders with the same sums (the contract's lane order),
    each a kernel of its own, so that a call compiles only the one it uses; the backend picks
    one from the window sizes:

    * this one, the general one: each window summed on its own, its unit-stride rows in
      registers (:func:`~adaptive_pool.cpu.lanes.rows_sum`: windows of rows 8 to 32 wide,
      whatever the planes, and input C-contiguous prefetched as one stream), other strides
      element by element (:func:`_window_sum`); rows that are one run of memory as one run
      (global pooling of contiguous planes);
    * :func:`avg_pool_rowwise` for long windows (and (None, 1): windows that are rows);
    * :func:`avg_pool_columns` for windows one column wide ((1, None));
    * :func:`avg_pool_lanewise` for small windows of many planes.

    16-bit bands are decoded before they are summed (:func:`_band`); the backend sends bands
    longer than its limit to :func:`avg_pool_rowwise`. ``skip``: :data:`PLAIN` or :data:`SKIPNA`.
    """
    for ch in prange(nchunk):
        call(_avg_direct_chunk, at, (np.int64(ch), x, xg, y, yg, tab, dims, skip, nchunk))


@numba.njit(inline="always")
def _add_row_windows(src, b, step, ws, we, lanes, pos, cnt, skip):
    """One input row's segments into every window's lanes: window ow's segment
    ``[ws[ow], we[ow])`` goes on at its position ``pos[ow]`` in ``lanes[32 ow:]``."""
    for ow in range(ws.size):
        w0 = ws[ow]
        o = ow * SUM_LANES
        pos[ow], cnt[ow] = _run_add(
            src, b + w0 * step, step, we[ow] - w0, lanes[o : o + SUM_LANES], pos[ow], cnt[ow],
            skip,
        )


@numba.njit(**_BODY)
def _avg_rowwise_chunk(ch, x, xg, y, yg, tab, dims, skip, nchunk):
    """Chunk ``ch`` of :func:`avg_pool_rowwise`."""
    N, C, D, H, W, OD, OH, OW = dims
    _, _, _, _, _, _, _, _, sw, ew, _, _ = axes_layout(dims)
    _, _, _, xd, xh, xw = xg
    yw = yg[5]
    r_lo, r_hi = _chunk(ch, nchunk, N * C * OD * OH)
    ws = tab[sw : sw + OW]
    we = tab[ew : ew + OW]
    row = scratch(x, W if decodes(x) else 0)
    lanes = scratch(x, OW * SUM_LANES)
    pos = np.empty(OW, np.int64)
    cnt = np.empty(OW, np.int64)
    s = scratch(x, OW)
    oh, od, c, n = _unravel(r_lo, OH, OD, C)
    for _ in range(r_lo, r_hi):
        d0, d1, h0, h1, _, xb, yb, vdh, _ = _avg_item(tab, dims, xg, yg, 1, oh, od, c, n)
        for ow in range(OW):
            o = ow * SUM_LANES
            _zero(lanes[o : o + SUM_LANES], min(vdh * (we[ow] - ws[ow]), SUM_LANES))
            pos[ow] = 0
            cnt[ow] = 0
        for d in range(d0, d1):
            for h in range(h0, h1):
                b = xb + d * xd + h * xh
                if decodes(x):
                    load_row(x, b, xw, W, row)
                    _add_row_windows(row, 0, 1, ws, we, lanes, pos, cnt, skip)
                else:
                    _add_row_windows(x, b, xw, ws, we, lanes, pos, cnt, skip)
        for ow in range(OW):
            o = ow * SUM_LANES
            la = lanes[o : o + SUM_LANES]
            _combine1(la, vdh * (we[ow] - ws[ow]))
            s[ow] = _mean(x, la[0], cnt[ow])
        store_row(y, yb, yw, OW, s, 0)
        oh, od, c, n = _step(oh, od, c, n, OH, OD, C)


@numba.njit(**_JIT)
def avg_pool_rowwise(at, x, xg, y, yg, tab, dims, skip, nchunk):
    """The average forward for long windows: each input row of the band is read once, in
    order, adding its segment to every window's lanes at the window's running position
    (16-bit rows decoded once): a streaming read where the direct loop jumps between rows.
    A window that is one row ((None, 1)) is one vectorised pass over it."""
    for ch in prange(nchunk):
        call(_avg_rowwise_chunk, at, (np.int64(ch), x, xg, y, yg, tab, dims, skip, nchunk))


@numba.njit(inline="always")
def _add_numbers_row(a, o, src, b, W, cnt, z):
    """``a[o + w] += src[b + w]`` where it is a number, and ``cnt[w]`` counts it."""
    for w in range(W):
        v = src[np.uint64(b + w)]
        ok = v == v
        a[np.uint64(o + w)] += v if ok else z
        cnt[w] += np.int32(ok)


@numba.njit(**_BODY)
def _avg_columns_chunk(ch, x, xg, y, yg, tab, dims, skip, nchunk):
    """Chunk ``ch`` of :func:`avg_pool_columns`."""
    N, C, D, H, W, OD, OH, OW = dims
    _, _, _, xd, xh, xw = xg
    yw = yg[5]
    r_lo, r_hi = _chunk(ch, nchunk, N * C * OD * OH)
    a = scratch(x, SUM_LANES * W)
    # skipna: 32- and 64-bit rows of unit stride read in place, int32 counts (the backend
    # keeps windows below 2**31 elements): float32 32x256x28x28 -> (1, None) 2.8-4.5 ->
    # 2.4-2.6 ms, bfloat16 4.6-4.7 -> 3.3-3.4, float32 4x64x8x28x28 -> (1, None, None)
    # 1.35-1.49 -> 0.82-0.96 (int64 counts and a copy of each row before)
    row = scratch(x, W if decodes(x) or (skip is not None and xw != 1) else 0)
    cnt = np.zeros(W if skip is not None else 0, np.int32)
    z = acc(x, 0)
    oh, od, c, n = _unravel(r_lo, OH, OD, C)
    for _ in range(r_lo, r_hi):
        d0, d1, h0, h1, _, xb, yb, vdh, _ = _avg_item(tab, dims, xg, yg, 1, oh, od, c, n)
        _zero(a, min(vdh, SUM_LANES) * W)
        if skip is not None:
            _zero(cnt, W)
        k = 0
        for d in range(d0, d1):
            for h in range(h0, h1):
                b = xb + d * xd + h * xh
                o = (k & (SUM_LANES - 1)) * W
                if skip is not None and not decodes(x) and xw == 1:
                    _add_numbers_row(a, o, x, b, W, cnt, z)
                elif decodes(x) or skip is not None:
                    load_row(x, b, xw, W, row)
                    if skip is not None:
                        _add_numbers_row(a, o, row, 0, W, cnt, z)
                    else:
                        for w in range(W):
                            a[np.uint64(o + w)] += row[w]
                elif xw == 1:
                    for w in range(W):
                        a[np.uint64(o + w)] += x[np.uint64(b + w)]
                else:
                    for w in range(W):
                        a[np.uint64(o + w)] += x[np.uint64(b + w * xw)]
                k += 1
        _combine(a, W, vdh)
        if skip is not None:
            for w in range(W):
                a[w] = _mean(x, a[w], cnt[w])
        else:
            for w in range(W):
                a[w] = _mean(x, a[w], vdh)
        store_row(y, yb, yw, W, a, 0)
        oh, od, c, n = _step(oh, od, c, n, OH, OD, C)


@numba.njit(**_JIT)
def avg_pool_columns(at, x, xg, y, yg, tab, dims, skip, nchunk):
    """The average forward for windows one column wide (``OW == W``: (1, None) and the like):
    every column of an output row's band side by side. Element k of a window is its k-th band
    row, so band row k is added whole into row ``k % 32`` of a ``32 x W`` accumulator (one
    vectorised loop along the contiguous row) and the halving steps combine whole rows."""
    for ch in prange(nchunk):
        call(_avg_columns_chunk, at, (np.int64(ch), x, xg, y, yg, tab, dims, skip, nchunk))


@numba.njit(nogil=True, error_model="numpy")
def _load(x, i):
    """:func:`~adaptive_pool.cpu.access.get` compiled once per dtype, for
    :func:`_channel_eight`'s 16 loads (each an inlined ``get`` typed again: 0.9 s of a cold
    call); LLVM inlines it all the same."""
    return get(x, i)


@numba.njit(nogil=True, error_model="numpy")
def _channel_eight(x, eo, i, s, rows, vol, nc, a, q, at, cnt, skip):
    """``a[q:q+nc]``: lanes ``i, i + s, ..., i + 7 * s`` of a window of ``8 < vol <= 64``
    elements of ``nc`` channels (element ``k`` at ``x[eo[k]:]``) in ``rows = 8 * s`` lanes
    (:func:`_rows_in_use`), combined by the halving steps among them, in registers: lane ``r``
    holds element ``r`` and, where ``r + rows < vol``, element ``r + rows``. The ``s`` parts
    make the window's sum with the steps from ``s / 2`` down (:func:`_combine`). With
    :data:`SKIPNA`, a NaN adds +0.0 and ``cnt[q:q+nc]`` gets the lanes' counts of numbers the
    same way. ``at``: scratch of 24.

    Against every lane kept in a row of the scratch array, a store and a reload per element and
    per halving step fewer: float32 channels-last 64x512x14x14 -> 5x5 1.26x, 32x256x56x56 ->
    7x7 1.33x. Compiled once per dtype, not inlined, and written out: generated loops of 2-64
    named lanes, inlined, took a cold call from 1.7 to 9.8 s (each ``get`` typed again)."""
    z = acc(x, 0)
    for j in range(8):
        r = i + s * j
        two = r + rows < vol
        at[j], at[16 + j] = eo[r], two
        at[8 + j] = eo[r + rows] if two else eo[r]  # (else read again, not used)
    e0, e1, e2, e3, e4, e5, e6, e7 = at[0], at[1], at[2], at[3], at[4], at[5], at[6], at[7]
    f0, f1, f2, f3, f4, f5, f6, f7 = at[8], at[9], at[10], at[11], at[12], at[13], at[14], at[15]
    p0, p1, p2, p3 = at[16] != 0, at[17] != 0, at[18] != 0, at[19] != 0
    p4, p5, p6, p7 = at[20] != 0, at[21] != 0, at[22] != 0, at[23] != 0
    plain = skip is None  # (every element a number: the NaN tests fold away)
    # lanes 0, 4, 2, 6 then 1, 5, 3, 7: the last step adds the two halves, so each loop reads 8
    # streams, not 16 (with 16, half their pointers were reloaded from the stack every
    # iteration: float64 8x512x14x14 -> 5x5 1.2-1.5x, float32 32x256x56x56 -> 7x7 1.1-1.2x);
    # written out: the halves as one inlined helper returning a lane sum and a count kept the
    # loops from vectorising (0.15-0.5x)
    for l in range(nc):
        u0, u4, u2, u6 = _load(x, e0 + l), _load(x, e4 + l), _load(x, e2 + l), _load(x, e6 + l)
        t0, t4, t2, t6 = _load(x, f0 + l), _load(x, f4 + l), _load(x, f2 + l), _load(x, f6 + l)
        k0, m0 = plain | (u0 == u0), p0 & (plain | (t0 == t0))
        k4, m4 = plain | (u4 == u4), p4 & (plain | (t4 == t4))
        k2, m2 = plain | (u2 == u2), p2 & (plain | (t2 == t2))
        k6, m6 = plain | (u6 == u6), p6 & (plain | (t6 == t6))
        l0 = ((u0 if k0 else z) + z) + (t0 if m0 else z)
        l4 = ((u4 if k4 else z) + z) + (t4 if m4 else z)
        l2 = ((u2 if k2 else z) + z) + (t2 if m2 else z)
        l6 = ((u6 if k6 else z) + z) + (t6 if m6 else z)
        a[np.uint64(q + l)] = (l0 + l4) + (l2 + l6)
        if skip is not None:
            c0, c4 = np.int32(k0) + np.int32(m0), np.int32(k4) + np.int32(m4)
            c2, c6 = np.int32(k2) + np.int32(m2), np.int32(k6) + np.int32(m6)
            cnt[np.uint64(q + l)] = (c0 + c4) + (c2 + c6)
    for l in range(nc):
        u1, u5, u3, u7 = _load(x, e1 + l), _load(x, e5 + l), _load(x, e3 + l), _load(x, e7 + l)
        t1, t5, t3, t7 = _load(x, f1 + l), _load(x, f5 + l), _load(x, f3 + l), _load(x, f7 + l)
        k1, m1 = plain | (u1 == u1), p1 & (plain | (t1 == t1))
        k5, m5 = plain | (u5 == u5), p5 & (plain | (t5 == t5))
        k3, m3 = plain | (u3 == u3), p3 & (plain | (t3 == t3))
        k7, m7 = plain | (u7 == u7), p7 & (plain | (t7 == t7))
        l1 = ((u1 if k1 else z) + z) + (t1 if m1 else z)
        l5 = ((u5 if k5 else z) + z) + (t5 if m5 else z)
        l3 = ((u3 if k3 else z) + z) + (t3 if m3 else z)
        l7 = ((u7 if k7 else z) + z) + (t7 if m7 else z)
        a[np.uint64(q + l)] = a[np.uint64(q + l)] + ((l1 + l5) + (l3 + l7))
        if skip is not None:
            c1, c5 = np.int32(k1) + np.int32(m1), np.int32(k5) + np.int32(m5)
            c3, c7 = np.int32(k3) + np.int32(m3), np.int32(k7) + np.int32(m7)
            cnt[np.uint64(q + l)] += (c1 + c5) + (c3 + c7)


@numba.njit(**_BODY)
def _avg_channels_chunk(ch, x, xg, y, yg, tab, dims, skip, nchunk):
    """Chunk ``ch`` of :func:`avg_pool_channels`."""
    N, C, D, H, W, OD, OH, OW = dims
    _, _, _, _, _, _, _, _, sw, ew, _, _ = axes_layout(dims)
    _, _, _, xd, xh, xw = xg
    yc, yw = yg[2], yg[5]
    CB = -(-C // CHANNEL_BLOCK)
    P = CHANNEL_BLOCK
    a = scratch(x, SUM_LANES * P)  # row r: lane r of the contract's order, for each channel
    cnt = np.empty(SUM_LANES * P if skip is not None else 0, np.int32)
    o = np.empty(P, x.dtype)
    eo = np.empty(2 * SUM_LANES, np.int64)  # a window's elements (_channel_eight)
    at = np.empty(24, np.int64)  # and those of eight of its lanes
    ws = tab[sw : sw + OW]
    we = tab[ew : ew + OW]
    r_lo, r_hi = _chunk(ch, nchunk, N * OD * OH * CB)
    # blocks of channels vary fastest: consecutive items read the same window rows
    cb, oh, od, n = _unravel(r_lo, CB, OH, OD)
    for _ in range(r_lo, r_hi):
        d0, d1, h0, h1, _, xb, yb, _, nc = _avg_item(tab, dims, xg, yg, P, oh, od, cb, n)
        for ow in range(OW):
            w0, w1 = ws[ow], we[ow]
            vol = (d1 - d0) * (h1 - h0) * (w1 - w0)
            rows = _rows_in_use(vol)
            # eight lanes at a time in registers (_channel_eight), their sums in rows; other
            # windows each element into its lane's row
            eight = 8 < vol <= 2 * SUM_LANES
            k = 0
            for d in range(d0, d1):
                for h in range(h0, h1):
                    b = xb + d * xd + h * xh
                    for w in range(w0, w1):
                        if eight:
                            eo[k] = b + w * xw
                        else:
                            _channel_run(x, b + w * xw, nc, a, cnt, (k & (rows - 1)) * P,
                                         k < rows, skip)
                        k += 1
            filled = rows // 8 if eight else rows
            if eight:
                for i in range(filled):
                    _channel_eight(x, eo, i, filled, rows, vol, nc, a, i * P, at, cnt, skip)
            _combine(a, P, filled)
            if skip is not None:
                _combine(cnt, P, filled)
            # the means encoded in a contiguous pass (vectorised), then stored at the
            # result's channel stride (float16 64x512x14x14 -> 5x5: a third of the time in
            # scalar divisions and conversions before)
            for l in range(nc):
                o[l] = enc(x, _mean(x, a[l], cnt[l] if skip is not None else vol))
            yo = yb + ow * yw
            for l in range(nc):
                y[np.uint64(yo + l * yc)] = o[l]
        cb, oh, od, n = _step(cb, oh, od, n, CB, OH, OD)


@numba.njit(inline="always")
def _channel_run(x, e, nc, a, cnt, q, first, skip):
    """Add ``x[e:e+nc]`` (one window element of ``nc`` channels) into row ``q`` of the lanes
    ``a`` (and, with :data:`SKIPNA`, its non-NaN count into ``cnt``). A lane's ``first``
    element is stored as ``v + 0.0`` (the bits of adding it to a lane reset to +0.0): no pass
    zeroing the rows, no load of them (float16 64x512x14x14 -> 5x5 spent 15% in memset)."""
    z = acc(x, 0)
    if first:
        for l in range(nc):
            v = get(x, e + l)
            if skip is not None:
                # a NaN keeps its lane's place and adds nothing (+0.0 changes no lane: one
                # never holds -0.0)
                ok = v == v
                a[np.uint64(q + l)] = (v if ok else z) + z
                cnt[np.uint64(q + l)] = np.int32(ok)
            else:
                a[np.uint64(q + l)] = v + z
    else:
        for l in range(nc):
            v = get(x, e + l)
            if skip is not None:
                ok = v == v
                a[np.uint64(q + l)] += v if ok else z
                cnt[np.uint64(q + l)] += np.int32(ok)
            else:
                a[np.uint64(q + l)] += v


@numba.njit(**_JIT)
def avg_pool_channels(at, x, xg, y, yg, tab, dims, skip, nchunk):
    """The average forward of inputs whose channels are adjacent in memory (``xc == 1``:
    PyTorch's channels-last layout): up to :data:`CHANNEL_BLOCK` channels at a time, each
    window element a unit-stride run of them added into its lane's row of a ``32 x
    CHANNEL_BLOCK`` accumulator (the contract's lane order, per channel), then the halving
    steps on whole rows; windows of 9-64 elements take eight lanes at a time in registers
    (:func:`_channel_eight`). A work item is one output row of a block of channels. The
    8-plane order read such an input 8 channels at a time, a half cache line (float32
    channels-last 64x512x14x14 -> 5x5 7.0 ms against PyTorch's 1.71)."""
    for ch in prange(nchunk):
        call(_avg_channels_chunk, at, (np.int64(ch), x, xg, y, yg, tab, dims, skip, nchunk))


def _narrow(x):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(_narrow, inline="always")
def _narrow_impl(x):
    """Whether ``x``'s elements are narrower than float64's (a compile-time constant). The
    8-plane average forward copies the bands of such planes where they are too large to copy
    whole, and reads float64 ones in place (copied, 4x64x16x56x56 -> 4x7x7 took 1.35x as long;
    float32 took 0.4x)."""
    narrow = x.dtype != types.float64
    return lambda x: narrow


#: Input bytes above which the 8-plane average forward prefetches the next block of planes:
#: smaller inputs are likely in the cache (4x16x28x28 -> 7x7 float32, 200 KB: 23-27 us
#: without, 29 with).
_PREFETCHED_INPUT = 1 << 22


@numba.njit(inline="always")
def _plane_offsets(poff, nl, stride):
    """``poff[l]``: plane l's offset, ``stride`` apart; a last block of fewer than ``LANES``
    planes repeats its last plane."""
    for l in range(LANES):
        poff[l] = min(l, nl - 1) * stride


@numba.njit(inline="always")
def _interleave_band(x, xb, nl, xd, xh, d0, d1, h0, h1, W, band, poff):
    """Copy the band ``d0:d1, h0:h1`` of 8 planes of unit-stride rows (plane l at ``xb +
    poff[l]``) into ``band`` side by side: element (d, h, w) of plane l at ``band[((d - d0) *
    nh + h - h0) * W + w) * LANES + l]``, decoded (``nl == 0`` copies nothing). Returns ``(band,
    base, d, h, w strides)``. Rows, or the whole band, that are one run of memory are one
    copy (one call site: compile time)."""
    nd, nh = d1 - d0, h1 - h0
    run = xh == W and (nd == 1 or xd == nh * W)
    nr, L = (1, nd * nh * W) if run else (nd * nh, W)
    for r in range(nr if nl > 0 else 0):
        d, h = r // nh, r % nh
        _interleave(band, r * L * LANES, x, xb + (d0 + d) * xd + (h0 + h) * xh, poff, L)
    return band, 0, nh * W * LANES, W * LANES, LANES


@numba.njit(**_BODY)
def _avg_lanewise_chunk(ch, x, xg, y, yg, tab, dims, band_limit, skip, nchunk):
    """Chunk ``ch`` of :func:`avg_pool_lanewise`."""
    N, C, D, H, W, OD, OH, OW = dims
    _, _, _, _, _, _, _, _, sw, ew, _, _ = axes_layout(dims)
    _, _, xc, xd, xh, xw = xg
    yc, yw = yg[2], yg[5]
    CB = (C + LANES - 1) // LANES
    r_lo, r_hi = _chunk(ch, nchunk, N * CB * OD * OH)
    ws = tab[sw : sw + OW]
    we = tab[ew : ew + OW]
    a = scratch(x, SUM_LANES * LANES)
    # int32 counts (the backend sends windows of 2**31 elements or more elsewhere): one
    # vector of 8 beside the 8 sums, where int64 took two; a row of them per lane, like the
    # sums, so that no addition waits on the last one's count (one row: 2x the plain time)
    cnt = np.empty(SUM_LANES * LANES, np.int32)
    poff = np.empty(LANES, np.int64)
    band = scratch(x, 0)
    # copies of unit-stride rows are interleaved (the 8 planes' elements side by side)
    inter = _rows_in_place(x) and xw == 1
    # inputs of a few MiB, likely in the cache already, are not prefetched
    big = N * C * D * H * W * x.itemsize > _PREFETCHED_INPUT
    end = _contiguous_end(xg, dims) if big else 0
    pf = 0
    last = -1  # the block of planes (n * CB + cb) that ``band`` holds whole
    oh, od, cb, n = _unravel(r_lo, OH, OD, CB)
    for _ in range(r_lo, r_hi):
        d0, d1, h0, h1, _, xb, yb, vdh, nl = _avg_item(tab, dims, xg, yg, LANES, oh, od, cb, n)
        # planes that fit band_limit are copied whole, once for all their output rows; other
        # bands are copied each time (float64 ones are read in place: _narrow)
        whole = nl * D * H * W <= band_limit
        copy = whole or _narrow(x)
        bd0, bd1, bh0, bh1 = (0, D, 0, H) if whole else (d0, d1, h0, h1)
        need = (LANES if inter else nl) * (bd1 - bd0) * (bh1 - bh0) * W
        if copy and band.size < need:
            band = scratch(x, need)
        blk = n * CB + cb
        ndec = 0 if whole and blk == last else nl
        last = blk if whole else -1
        side = copy and inter
        if side:
            if whole and ndec > 0:  # the next block's planes are read next: fetched now
                pf = prefetch_to(x, max(pf, xb + nl * xc), xb + 2 * LANES * xc, end)
            _plane_offsets(poff, nl, xc)
            bx, bb, bd, bh, bw = _interleave_band(
                x, xb, ndec, xd, xh, bd0, bd1, bh0, bh1, W, band, poff
            )
            e0 = f0 = 0
        else:
            if copy:
                bx, bb, bc, bd, bh, bw, e0, _, f0, _ = _decode_band(
                    x, xb, xc, ndec, xd, xh, xw, bd0, bd1, bh0, bh1, W, band
                )
            else:
                bx, bb, bc, bd, bh, bw, e0, _, f0, _ = _band(
                    x, xb, xc, ndec, xd, xh, xw, bd0, bd1, bh0, bh1, W, band
                )
            _plane_offsets(poff, nl, bc)
        # the window in the band's coordinates (its origin is (bd0, bh0) of the planes)
        e0, e1, f0, f1 = e0 + d0 - bd0, e0 + d1 - bd0, f0 + h0 - bh0, f0 + h1 - bh0
        for ow in range(OW):
            w0, w1 = ws[ow], we[ow]
            vol = vdh * (w1 - w0)
            rows = _rows_in_use(vol)
            _zero(a, rows * LANES)
            if skip is not None:
                _zero(cnt, rows * LANES)
            k = 0
            for d in range(e0, e1):
                for h in range(f0, f1):
                    b = bb + d * bd + h * bh
                    for w in range(w0, w1):
                        q = (k & (rows - 1)) * LANES
                        if side:
                            add_block(a, q, bx, b + w * bw, cnt, skip)
                        else:
                            add_planes(a, q, bx, b + w * bw, poff, cnt, skip)
                        k += 1
            _combine(a, LANES, rows)
            if skip is not None:
                _combine(cnt, LANES, rows)
            for p in range(nl):  # (a loop variable of its own: reusing ``l`` lost the stores)
                t = _mean(x, a[p], cnt[p] if skip is not None else vol)
                put(y, yb + p * yc + ow * yw, t)
        oh, od, cb, n = _step(oh, od, cb, n, OH, OD, CB)


@numba.njit(**_JIT)
def avg_pool_lanewise(at, x, xg, y, yg, tab, dims, band_limit, skip, nchunk):
    """The average forward for small windows: ``LANES`` planes side by side, so the loop
    overhead of a small window is paid once for all of them; a work item is one output row of
    ``LANES`` planes. The accumulator is ``32 x LANES`` (lane-major), each of its rows a lane
    of the contract's order for every plane at once, so the halving steps are vector adds
    too. A last block of fewer planes computes its last plane in the spare planes and does not
    store them. The planes are copied (16-bit ones decoded) before they are summed: whole
    planes when ``LANES`` of them fit ``band_limit`` elements, else the windows' bands (float64
    reads those in place, gathering). Unit-stride rows are copied side by side
    (:func:`_interleave_band`: element i of plane l at ``8 i + l``), so that an addition is one
    vector load (``add_block``) where gathering one element of each plane (``add_planes``)
    was half the time; other strides one plane after the other (:func:`_decode_band`).
    Copied, the 8 planes are read from memory one after the other, then side by side from
    cache: reading them side by side from memory took 2-2.8x as long in float32 and up to 2.2x
    in float64 (Zen 5)."""
    for ch in prange(nchunk):
        call(_avg_lanewise_chunk, at, (
            np.int64(ch), x, xg, y, yg, tab, dims, band_limit, skip, nchunk
        ))


def _vector_source(x, b, n, buf):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(_vector_source, inline="always")
def _vector_source_impl(x, b, n, buf):
    """Where :func:`~adaptive_pool.cpu.lanes.run_sum` reads the run ``x[b:b+n]``: ``(x, b)``
    where it reads ``x``'s dtype, else ``(buf, 0)`` once the run is decoded into ``buf``
    (float16 without F16C)."""
    if vector_runs(x.dtype):
        return lambda x, b, n, buf: (x, b)

    def decoded(x, b, n, buf):
        load_row(x, b, 1, n, buf)
        return buf, 0

    return decoded


@numba.njit(inline="always")
def _run_sum(x, b, n, buf, skip):
    """The lane-order sum of the unit-stride run ``x[b:b+n]`` (a whole window) and its count
    (non-NaN with :data:`SKIPNA`): LLVM vector code (:func:`~adaptive_pool.cpu.lanes.run_sum`,
    16-bit runs decoded in its registers, or into ``buf`` first where float16 has no vector
    conversion; see :func:`_run_buf`)."""
    src, sb = _vector_source(x, b, n, buf)
    return run_sum(src, sb, n, skip)


def _run_buf(x, n):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(_run_buf, inline="always")
def _run_buf_impl(x, n):
    """The decoding scratch of :func:`_run_sum` for runs of ``n`` elements (empty where the
    run is summed in place)."""
    if vector_runs(x.dtype):
        return lambda x, n: scratch(x, 0)
    return lambda x, n: scratch(x, n)


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


@numba.njit(**_BODY)
def _avg_runs_chunk(ch, x, xg, y, yg, tab, dims, skip, prefetch, nchunk):
    """Chunk ``ch`` of :func:`avg_pool_runs`."""
    N, C, D, H, W, OD, OH, OW = dims
    _, _, _, _, _, _, _, _, sw, ew, _, _ = axes_layout(dims)
    x0, xn, xc, xd, xh, _ = xg
    y0, yn, yc, yd, yh, yw = yg
    # an item's input: its window (OW == 1), or its row of W, the OW windows of the tables
    V = (D // OD) * (H // OH) * W if OW == 1 else W
    ws = tab[sw : sw + OW]
    we = tab[ew : ew + OW]
    r_lo, r_hi = _chunk(ch, nchunk, N * C * OD * OH)
    buf = _run_buf(x, V)
    R = OD * OH
    # item r's input starts at x0 + r * V: the chunk reads one stream, prefetched ahead where
    # the backend asks
    stream, pf, end = _stream(xg, dims, V, r_lo, r_hi, prefetch)
    flat = (stream and OW == 1 and (OH == 1 or yh == 1) and (OD == 1 or yd == OH)
            and (C == 1 or yc == R) and (N == 1 or yn == C * R))
    if flat:
        # contiguous input and result (the usual case): item r's run starts at x0 + r * V and
        # its mean goes to y0 + r. A loop of its own: with the general one's index arithmetic
        # behind a branch in the same loop, float64 7x7 windows took 2.7x as long (Zen 5).
        for r in range(r_lo, r_hi):
            b = x0 + r * V
            pf = prefetch_to(x, pf, b + V, end, WINDOWS_AHEAD)
            t, k = _run_sum(x, b, V, buf, skip)
            put(y, y0 + r, _mean(x, t, k))
        return
    oh, od, c, n = _unravel(r_lo, OH, OD, C)
    for r in range(r_lo, r_hi):
        b = x0 + n * xn + c * xc + od * xd + oh * xh
        yo = y0 + n * yn + c * yc + od * yd + oh * yh
        oh, od, c, n = _step(oh, od, c, n, OH, OD, C)
        for ow in range(OW):
            s0, m = (0, V) if OW == 1 else (ws[ow], we[ow] - ws[ow])
            pf = prefetch_to(x, pf, b + s0 + m, end)
            t, k = _run_sum(x, b + s0, m, buf, skip)
            put(y, yo + ow * yw, _mean(x, t, k))


@numba.njit(**_JIT)
def avg_pool_runs(at, x, xg, y, yg, tab, dims, skip, prefetch, nchunk):
    """The average forward when every window is one contiguous run of memory: global pooling
    of contiguous planes (``OD == OH == OW == 1``), windows that are whole rows (``OD == D``,
    ``OH == H``, ``OW == 1``: (None, 1)), and windows along rows (``OD == D``, ``OH == H``: every
    1-D problem), ``xw == 1``. A work item is one window, or one row of windows: a lane-order
    sum at memory speed with no per-row bookkeeping (:func:`_run_sum`)."""
    for ch in prange(nchunk):
        call(_avg_runs_chunk, at,
             (np.int64(ch), x, xg, y, yg, tab, dims, skip, prefetch, nchunk))


#: The most bit words (8 bytes each) a work item of the NaN-skipping row gather keeps for its
#: rows (see :func:`_count_words`); items that need more count and store as before.
WORDS_LIMIT = 1 << 18


#: Rows the count kernel adds into its int32 column counts before it moves them into the
#: int64 window counts (so no column count can overflow, however tall the window).
COUNT_FLUSH = (1 << 31) - 1


@numba.njit(inline="always")
def _flush_counts(col, ws, we, cnt, r0):
    """``cnt[r0 + ow] += sum(col[ws[ow]:we[ow]])`` for every window; ``col`` is zeroed. An
    unsigned index: a signed one may be negative (NumPy's wraparound), which LLVM vectorised
    as gathers (none left in ``_count_row``'s code on Zen 4; the time within this VM's noise)."""
    for ow in range(ws.size):
        k = np.int64(0)
        for w in range(ws[ow], we[ow]):
            k += col[np.uint64(w)]
        cnt[np.uint64(r0 + ow)] += k
    for w in range(col.size):
        col[w] = 0


@numba.njit(inline="always")
def _word_spans(ws, we, W, on):
    """The windows' columns word by word, for counts from a row's bit words
    (:func:`~adaptive_pool.cpu.lanes.number_word`, 64 columns a word): word ``j`` of a row of
    ``W`` meets the windows ``span_k[first[j]:first[j + 1]]``, whose columns in it are the
    bits ``span_m[...]`` of the same entries (no words unless ``on``). A row of at most 64 is
    one word: ``span_m[ow]`` is then window ``ow``'s columns, the masks of
    :func:`~adaptive_pool.cpu.lanes.count_bits`."""
    if not on:  # empty views of one array: each allocation is a share of a tiny call
        first = np.zeros(1, np.int64)
        return first, first[:0], first[:0]
    nw = (W + 63) // 64
    first = np.zeros(nw + 1, np.int64)
    for ow in range(ws.size):
        for j in range(ws[ow] // 64, (we[ow] + 63) // 64):
            first[j + 1] += 1
    for j in range(nw):
        first[j + 1] += first[j]
    span_k = np.empty(first[nw], np.int64)
    span_m = np.empty(first[nw], np.int64)
    at = first[:nw].copy()
    for ow in range(ws.size):
        for j in range(ws[ow] // 64, (we[ow] + 63) // 64):
            lo = max(ws[ow], 64 * j) - 64 * j
            n = min(we[ow], 64 * j + 64) - 64 * j - lo
            span_k[at[j]] = ow
            ones = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - n)
            span_m[at[j]] = np.int64(ones << np.uint64(lo))
            at[j] += 1
    return first, span_k, span_m


@numba.njit(**_BODY)
def _count_row(x, xb, xd, xh, xw, d0, d1, h0, h1, W, col, ws, we, spans, cnt, r0):
    """``cnt[r0 + ow]``: the numbers in window ``ow`` of the output row whose band is
    ``[d0, d1) x [h0, h1)`` of the plane at ``xb`` (``col``: ``W`` zeroed int32 counts;
    ``spans``: :func:`_word_spans` of the windows). Called once per output row, so compiled
    once rather than inlined into its three callers (inlined into the average backward:
    1.04x on float32 32x256x56x56 -> 7x7, and 1.8 s more to compile it, Zen 4)."""
    for ow in range(ws.size):
        cnt[np.uint64(r0 + ow)] = 0
    if xw == 1 and ws.size * (d1 - d0) * (h1 - h0) <= W:
        # few rows of wide windows: each row's numbers as bits, 64 columns a word, and each
        # window's part of a word one and + popcnt with the masks of _word_spans (a vector
        # count of each window's run: float32 32x256x56x56 -> 7x7 27.5-30.2 -> 19.5-27.4 ms;
        # masks made per row and window: 24.3-27.9 -> 17.5-21.5 with these); column counts do
        # better where bands have more rows (64x64 -> 9x11, 3-D; bits for every unit-stride
        # row: 2x32x32x32x32 -> 5x5x5 1.2-1.3 -> 1.7-1.9 ms)
        first, span_k, span_m = spans
        for d in range(d0, d1):
            for h in range(h0, h1):
                b = xb + d * xd + h * xh
                for j in range(first.size - 1):
                    c0 = 64 * j
                    bits = number_word(x, b + c0, min(W - c0, 64))
                    for p in range(first[j], first[j + 1]):
                        q = np.uint64(p)
                        cnt[np.uint64(r0 + span_k[q])] += count_ones(bits & span_m[q])
        return
    rows = 0
    for d in range(d0, d1):
        h = h0
        while h < h1:
            nr = min(h1 - h, COUNT_FLUSH - rows)
            b = xb + d * xd + h * xh
            # the band's non-NaN elements per column: at unit stride, vector code that
            # keeps each column block's counts in registers over the rows; rows of 128 or
            # more one at a time, in memory order (a column block walked down such rows read
            # x, not yet in cache, at half the pace: float32 8x64x224x224 -> 6x6 19.5-20.5 ->
            # 15.8-16.4 ms, bfloat16 12.1-12.6 -> 10.7-11.1, one thread; rows of 64 one at a
            # time: float32 64x64 -> 9x11 1.1x faster, bfloat16 and 3-D 1.1-1.2x slower, Zen 4)
            if xw == 1:
                step = 1 if W >= 128 else nr
                for r in range(0, nr, step):
                    add_numbers(col, x, b + r * xh, W, min(step, nr - r), xh)
            else:
                for r in range(nr):
                    for w in range(W):
                        v = get(x, b + r * xh + w * xw)
                        col[w] += np.int32(v == v)
            rows += nr
            h += nr
            if rows == COUNT_FLUSH:
                _flush_counts(col, ws, we, cnt, r0)
                rows = 0
    _flush_counts(col, ws, we, cnt, r0)


@numba.njit(**_BODY)
def _count_chunk(ch, x, xg, cnt, tab, dims, planes, nchunk):
    """Chunk ``ch`` of :func:`count_valid`."""
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = axes_layout(dims)
    x0, xn, xc, xd, xh, xw = xg
    P = LANES if planes else 1
    CB = (C + P - 1) // P
    r_lo, r_hi = _chunk(ch, nchunk, N * CB * OD * OH)
    ws = tab[sw : sw + OW]
    we = tab[ew : ew + OW]
    col = np.zeros(0 if planes else W, np.int32)
    bits = np.empty(0, np.int64)
    cw = np.empty(LANES, np.int32)
    spans = _word_spans(ws, we, W, True)
    wbits = spans[2]  # (planes: rows of at most 64)
    oh, od, cb, n = _unravel(r_lo, OH, OD, CB)
    for _ in range(r_lo, r_hi):
        d0, d1, h0, h1 = tab[sd + od], tab[ed + od], tab[sh + oh], tab[eh + oh]
        if planes:  # a bit per element of the band's rows, popcounts of the windows' columns
            c0 = cb * LANES
            nl = min(LANES, C - c0)
            rows = (d1 - d0) * (h1 - h0)
            if bits.size < rows * LANES:
                bits = np.empty(rows * LANES, np.int64)
            xb = x0 + n * xn + c0 * xc
            k = 0
            for d in range(d0, d1):
                for h in range(h0, h1):
                    b = xb + d * xd + h * xh
                    for l in range(LANES):  # a last block of fewer planes repeats its last
                        number_bits(bits, k * LANES + l, x, b + min(l, nl - 1) * xc, W)
                    k += 1
            r0 = ((n * C + c0) * OD + od) * OH + oh
            for ow in range(OW):
                count_bits(cw, 0, bits, 0, rows, wbits[ow])
                for l in range(nl):
                    cnt[np.uint64((r0 + l * OD * OH) * OW + ow)] = cw[l]
        else:
            _count_row(x, x0 + n * xn + cb * xc, xd, xh, xw, d0, d1, h0, h1, W, col, ws, we,
                       spans, cnt, (((n * C + cb) * OD + od) * OH + oh) * OW)
        oh, od, cb, n = _step(oh, od, cb, n, OH, OD, CB)


@numba.njit(**_JIT)
def count_valid(at, x, xg, cnt, tab, dims, planes, nchunk):
    """``cnt[o]``: how many elements of window ``o`` are not NaN (C order of the outputs): the
    divisors of the NaN-skipping average backward. Counts are exact integers, so any order
    serves. A work item is one output row: its band's rows added into int32 column counts
    (vectorised), then each window's columns summed; or, with ``planes`` (unit-stride rows of
    at most 64 elements, planes of fewer than 2**31), one output row of ``LANES`` planes: a
    bit mask per row and plane, then each window's popcounts, the planes side by side."""
    for ch in prange(nchunk):
        call(_count_chunk, at, (np.int64(ch), x, xg, cnt, tab, dims, planes, nchunk))


@numba.njit(inline="always")
def _rings(tab, sd, ed, ld, hd, OD, D, on):
    """``(depth, planes)``: the slabs of the deepest window of d and the most output planes a
    slab lies in (1 and 1 unless ``on``), the slabs' bit words and the planes' counts that a
    gather counting windows of d deeper than one keeps (a ring of each)."""
    depth = planes = 1
    for od in range(OD if on else 0):
        depth = max(depth, tab[ed + od] - tab[sd + od])
    for d in range(D if on else 0):
        planes = max(planes, tab[hd + d] - tab[ld + d])
    return depth, planes


@numba.njit(inline="always")
def _planes_as_last_d(tab, ld, hd, d):
    """Whether input plane ``d`` lies in the same output planes as ``d - 1``."""
    return d > 0 and tab[ld + d] == tab[ld + d - 1] and tab[hd + d] == tab[hd + d - 1]


@numba.njit(inline="always")
def _sum_part_rows(part, nd, nh, r0, nr, L, row, rowd):
    """``row[:L]``: the h and d levels of the backward sum, from rows of ``L`` partial sums.

    ``part`` holds ``nd`` blocks of ``nh`` rows; level h adds rows ``r0 .. r0 + nr`` of a block
    (the first as is), level d adds the blocks' results (the first as is).
    """
    for dd in range(nd):
        acc_h = row if dd == 0 else rowd
        q = (dd * nh + r0) * L
        for k in range(L):
            acc_h[k] = part[np.uint64(q + k)]
        for _ in range(1, nr):
            q += L
            for k in range(L):
                acc_h[k] += part[np.uint64(q + k)]
        if dd != 0:
            for k in range(L):
                row[k] += rowd[k]


def _store_where(a, b, src, so, words, i, R, n, buf):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(_store_where, inline="always")
def _store_where_impl(a, b, src, so, words, i, R, n, buf):
    """:func:`~adaptive_pool.cpu.lanes.store_bits` of ``src[so:so + n]`` (the accumulation
    type) into ``a[b:]``, 64 elements a word ``words[j * R + i]``, or of ``buf`` (``a``'s
    dtype) where it must be encoded: ``buf`` then holds the row, encoded by ``store_row``."""
    if a.dtype == src.dtype:
        return lambda a, b, src, so, words, i, R, n, buf: store_bits(a, b, src, so, words, i, R,
                                                                     n)
    return lambda a, b, src, so, words, i, R, n, buf: store_bits(a, b, buf, 0, words, i, R, n)


@numba.njit(inline="always")
def _tiles(wl, wh):
    """Whether every column lies in exactly one window (``[wl, wh)``: the windows covering each
    column), i.e. the windows tile the row: a column's sum is then its window's share, without
    a loop of one iteration over its covering windows (perf: 12% of float64 4x16x28x28 -> 7x7's
    backward went to that loop's bookkeeping)."""
    one = True
    for w in range(wl.size):
        one &= wh[w] - wl[w] == 1
    return one


@numba.njit(inline="always")
def _count_words(x, xb, xd, xh, W, w0, d0, d1, h0, nr, ring, tab, sh, eh, oh0, oh1, ws, we, wmask,
                 words, R, lc, lb):
    """The bit words of slabs ``w0 <= d < d1`` (none where ``w0 >= d1``), then the numbers of
    the windows of slabs ``[d0, d1)``, rows ``tab[sh + oh]`` to ``tab[eh + oh]`` for ``oh0 <= oh
    < oh1``, from the words of those slabs (made now or before).

    ``words[j * R + (d % ring) * nr + r]``: bit ``w`` set where element ``64 * j + w`` of row
    ``h0 + r`` of slab ``d`` is a number (``x[xb + d * xd + (h0 + r) * xh:]``, rows of ``W`` at
    unit stride, 64 elements a word; ``ring`` slabs kept, the deepest window's); ``lc[lb + (oh
    - oh0) * OW + ow]``: the numbers of window ``(oh, ow)``, popcounts of the words under the
    masks of its columns ``[ws[ow], we[ow])`` (rows of one word: the masks ``wmask``). A word's
    rows are contiguous: no gathers."""
    OW = ws.size
    for d in range(w0, d1):
        xr = xb + d * xd + h0 * xh
        wr = (d % ring) * nr
        for r in range(nr):
            if W <= 64:  # (the loop below for one word: bfloat16 56x56 -> 7x7 1.06-1.11x as long)
                words[wr + r] = number_word(x, xr + r * xh, W)
                continue
            for j in range((W + 63) // 64):
                words[j * R + wr + r] = number_word(x, xr + r * xh + 64 * j, min(64, W - 64 * j))
    ones = np.uint64(0xFFFFFFFFFFFFFFFF)
    for d in range(d0, d1):  # slab by slab (slabs within each window: 2-D 1.07x as long)
        wr = (d % ring) * nr
        for oh in range(oh0, oh1):
            r0 = wr + tab[sh + oh] - h0
            r1 = wr + tab[eh + oh] - h0
            for ow in range(OW):
                q = np.uint64(lb + (oh - oh0) * OW + ow)
                k = lc[q] if d > d0 else np.int64(0)
                if W <= 64:  # (the loop below for one word: 1.04-1.2x as long in the cache)
                    for r in range(r0, r1):
                        k += count_ones(words[np.uint64(r)] & wmask[ow])
                    lc[q] = k
                    continue
                for j in range(ws[ow] // 64, (we[ow] + 63) // 64):
                    lo = max(ws[ow] - 64 * j, 0)
                    m = np.int64((ones >> np.uint64(64 - (min(we[ow] - 64 * j, 64) - lo)))
                                 << np.uint64(lo))
                    for r in range(j * R + r0, j * R + r1):  # (unsigned: no gathers)
                        k += count_ones(words[np.uint64(r)] & m)
                lc[q] = k


@numba.njit(inline="always")
def _store_words(gi, ib, ih_, part, row, rowd, W, tab, lh, hh, h_first, h_last, oh0, nh, nd, OH,
                 words, wd, R, erow, x, pf, pb, end):
    """Rows ``h_first`` to ``h_last`` of the result's slab at ``gi[ib:]``, from the partial rows
    ``part`` (``nd`` output planes of ``nh`` rows from ``oh0``), each element where its bit of the
    words ``words[j * R + wd + h]`` is set and +0.0 elsewhere; returns where the prefetch of
    ``x`` goes on (to ``pb + h * W`` for row ``h``). Rows of the same windows as the last one
    store the same sums, encoded once (once a row: bfloat16 32x256x56x56 -> 7x7 took 1.8x as
    long, Zen 4). ``part`` and ``row`` come borrowed
    (:func:`~adaptive_pool.cpu.access.borrow`): ``src`` takes them without a count."""
    if nh == 1:  # a band: every row stores the same sums (1.03-1.09x as fast as below)
        src = part
        if nd > 1:
            _sum_part_rows(part, nd, 1, 0, 1, W, row, rowd)
            src = row
        if decodes(gi):
            store_row(erow, 0, 1, W, src, 0)
        for h in range(h_first, h_last):
            pf = prefetch_to(x, pf, pb + h * W, end)
            _store_where(gi, ib + h * ih_, src, 0, words, wd + h, R, W, erow)
        return pf
    src, so, last = part, 0, -1
    for h in range(h_first, h_last):
        lo, hi = tab[lh + h], tab[hh + h]
        again = lo * (OH + 1) + hi != last  # (a key of the pair)
        if again and hi - lo == 1 and nd == 1:
            src, so = part, (lo - oh0) * W
        elif again:
            _sum_part_rows(part, nd, nh, lo - oh0, hi - lo, W, row, rowd)
            src, so = row, 0
        if again and decodes(gi):
            store_row(erow, 0, 1, W, src, so)
        last = lo * (OH + 1) + hi
        pf = prefetch_to(x, pf, pb + h * W, end)
        _store_where(gi, ib + h * ih_, src, so, words, wd + h, R, W, erow)
    return pf


@numba.njit(**_BODY)
def _avg_backward_chunk(ch, go, gog, gi, gig, tab, dims, rows_per_item, x, xg, cnt, skip, nchunk):
    """Chunk ``ch`` of :func:`avg_pool_backward`."""
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, ld, hd, sh, eh, lh, hh, sw, ew, lw, hw = axes_layout(dims)
    g0, gn, gc, gd, gh, gw = gog
    i0, in_, ic, id_, ih_, iw_ = gig
    nblk = (H + rows_per_item - 1) // rows_per_item
    it_lo, it_hi = _chunk(ch, nchunk, N * C * D * nblk)
    part = scratch(go, W)
    g = scratch(go, OW)
    row = scratch(go, W)
    rowd = scratch(go, W)
    x0, xn, xc, xd, xh, xw = xg
    wl = tab[lw : lw + W]
    wh = tab[hw : hw + W]
    one_w = _tiles(wl, wh)
    # skipna with ``cnt`` empty: the item counts its output rows' windows itself, just
    # before it reads the same rows of x again (from cache), instead of a pass of
    # count_valid over all of x first. Whole-plane items count each output plane's windows
    # once, at the first slab that needs them (their slabs read at once): ``od_next``, the
    # first plane not counted yet, ``d_next`` the first slab without bit words; the counts of
    # ``lring`` planes kept (as many as cover one slab), the words of ``depth`` slabs (the
    # deepest window's). Overlapping windows of d are counted once too (float32
    # 1x16x64x64x64 -> 7x9x11 took a count_valid pass first)
    fused = skip is not None and cnt.size == 0
    depth, lring = _rings(tab, sd, ed, ld, hd, OD, D, fused and nblk == 1)
    od_next = d_next = 0
    ws = tab[sw : sw + OW]
    we = tab[ew : ew + OW]
    # fewer windows than columns, all inside the row (a Dask block's may reach outside it),
    # rows of 16 or more: on shorter rows the vector loop a window is a masked remainder, and
    # the next window's load waits on the last one's store (float64 2x3x5x9x10 -> 2x4x3
    # 1.08x, 2x3x9x10 -> 4x3 1.06x as scalar columns; float32 and bfloat16 the same)
    spread = 16 <= W and OW < W and ws.min() >= 0 and we.max() <= W
    col = np.zeros(W if fused else 0, np.int32)
    spans = _word_spans(ws, we, W, fused)
    lc = spans[0][:0]  # empty, without an allocation of its own (grown where counts are kept)
    # rows at unit stride, items holding every row of their windows (for ``depth`` slabs):
    # each row's numbers as bit words, the windows counted from the words,
    # and the rows stored where their bits are set (x read once, no counts in memory; float32
    # 16x64x64x64 -> 9x11 1.36x, bfloat16 32x256x56x56 -> 7x7 1.66x, Zen 4), up to
    # WORDS_LIMIT words an item
    R = depth * rows_per_item
    words = np.empty(R * ((W + 63) // 64) if fused and xw == 1 and iw_ == 1
                     and R * ((W + 63) // 64) <= WORDS_LIMIT else 0, np.int64)
    erow = np.empty(W if words.size and decodes(gi) else 0, gi.dtype)
    # with skipna, x is read: in C order the items read it as one stream (rows, planes),
    # prefetched an item ahead as in _avg_runs_chunk where a fused count reads whole items
    # of at most PREFETCH_ITEM bytes (float32 4x64x16x56x56 -> 4x7x7 4.8 -> 4.1 ms,
    # 16x64x64x64 -> 9x11 2.0 -> 1.6); larger items, bands of rows and counts made before
    # read x where they count it, the hardware's prefetcher keeping up (float32 8x64x224x224
    # -> 6x6 8.7 -> 7.5 ms without, 1x16x64x64x64 -> 7x9x11 1.6 -> 1.4, Zen 4)
    # (items of rows: its rows as the stream's items)
    ahead = fused and nblk == 1 and depth * H * W * x.itemsize <= PREFETCH_ITEM
    _, pf, end = _stream(xg, (N, C, D, H, W, D, H, W), W,
                         (it_lo // nblk) * H + (it_lo % nblk) * rows_per_item, N * C * D * H,
                         ahead)
    blk, d, c, n = _unravel(it_lo, nblk, D, C)
    for it in range(it_lo, it_hi):
        h_first = blk * rows_per_item
        h_last = min(H, h_first + rows_per_item)
        pf = prefetch_to(x, pf, x0 + (((n * C + c) * D + d) * H + h_last) * W, end)
        od0, od1 = tab[ld + d], tab[hd + d]
        oh0, oh1 = tab[lh + h_first], tab[hh + h_last - 1]
        nh = oh1 - oh0
        bitrows = (words.size > 0 and tab[sh + oh0] >= h_first
                   and tab[eh + oh1 - 1] <= h_last)
        # whole-plane items (the usual ones) whose d lies in the same output planes as the last
        # item's take its partial rows as they are (float64 4x64x8x28x28 -> (1, None, None)
        # computed them 8 times: 5.6 -> 1.2 ms)
        if nblk > 1 or it == it_lo or d == 0:  # (items of rows count their own windows)
            od_next, d_next = od0, tab[sd + od0]
        if not (nblk == 1 and it > it_lo and _planes_as_last_d(tab, ld, hd, d)):
            need = (od1 - od0) * nh * W
            if part.size < need:
                part = scratch(go, need)
            if fused:
                if lc.size < lring * nh * OW:
                    lc = np.empty(lring * nh * OW, np.int64)
                xp = x0 + n * xn + c * xc
                for od in range(max(od_next, od0), od1):
                    lb = (od % lring) * nh * OW
                    if bitrows:
                        if skip is not None:  # (pruned from the plain specialisation)
                            _count_words(x, xp, xd, xh, W, max(d_next, tab[sd + od]),
                                         tab[sd + od], tab[ed + od], h_first, h_last - h_first,
                                         depth, tab, sh, eh, oh0, oh1, ws, we, spans[2], words,
                                         R, lc, lb)
                    else:
                        for oh in range(oh0, oh1):
                            _count_row(x, xp, xd, xh, xw, tab[sd + od], tab[ed + od],
                                       tab[sh + oh], tab[eh + oh], W, col, ws, we, spans, lc,
                                       lb + (oh - oh0) * OW)
                    d_next = max(d_next, tab[ed + od])
                od_next = max(od_next, od1)
            gb = g0 + n * gn + c * gc
            for od in range(od0, od1):
                vd = tab[ed + od] - tab[sd + od]
                for oh in range(oh0, oh1):
                    vdh = vd * (tab[eh + oh] - tab[sh + oh])
                    load_row(go, gb + od * gd + oh * gh, gw, OW, g)
                    if skip is not None:  # each window's count of non-NaN elements
                        counts = lc if fused else cnt
                        cr = (((od % lring) * nh + oh - oh0) * OW if fused
                              else (((n * C + c) * OD + od) * OH + oh) * OW)
                        for ow in range(OW):
                            g[ow] = g[ow] / acc(go, counts[np.uint64(cr + ow)])
                    else:
                        for ow in range(OW):
                            # volume as the integer product, converted once (bit-identical)
                            g[ow] = g[ow] / acc(go, vdh * (tab[ew + ow] - tab[sw + ow]))
                    q = ((od - od0) * nh + (oh - oh0)) * W
                    if one_w:
                        for w in range(W):
                            part[np.uint64(q + w)] = acc(go, 0) + g[np.uint64(wl[w])]
                    elif spread:
                        # each window's share added over its columns in ascending ow, from
                        # +0.0: each column's sum in the order below, a vector loop a window
                        # rather than a scalar chain a column (float32 1x4x13x43x57 -> 3x21x7
                        # 1.33-1.38x, 16x64x64x64 -> 9x11 1.20-1.22x)
                        for w in range(W):
                            part[np.uint64(q + w)] = 0
                        for ow in range(OW):
                            s = g[np.uint64(ow)]
                            for w in range(ws[ow], we[ow]):
                                part[np.uint64(q + w)] += s
                    else:
                        for w in range(W):
                            s = acc(go, 0)
                            for ow in range(wl[w], wh[w]):
                                s += g[np.uint64(ow)]
                            part[np.uint64(q + w)] = s
        ib = i0 + n * in_ + c * ic + d * id_
        # (skipna) row h's store prefetches x to pb + h * W: the row ``depth`` items ahead
        pb = x0 + (((n * C + c) * D + d) * H + 1 + (h_last - h_first) * depth) * W
        if skip is not None:  # (a branch numba prunes from the plain specialisation)
            if bitrows:
                pf = _store_words(gi, ib, ih_, borrow(part), borrow(row), rowd, W, tab, lh, hh,
                                  h_first, h_last, oh0, nh, od1 - od0, OH, words,
                                  (d % depth) * (h_last - h_first) - h_first, R, erow, x, pf, pb,
                                  end)
                blk, d, c, n = _step(blk, d, c, n, nblk, D, C)
                continue
        for h in range(h_first, h_last):
            lo, hi = tab[lh + h], tab[hh + h]
            b = ib + h * ih_
            q0 = (lo - oh0) * W
            if od1 - od0 == 1 and hi - lo == 1:
                src, so = borrow(part), q0
            else:
                _sum_part_rows(part, od1 - od0, nh, lo - oh0, hi - lo, W, row, rowd)
                src, so = borrow(row), 0
            if skip is None:
                store_row(gi, b, iw_, W, src, so)
            else:  # NaN inputs get +0.0
                # the row ``depth`` items ahead is fetched as this one is stored, so that the
                # next count finds x in the cache rather than waiting for all its lines at once
                # (4x64x16x56x56 -> 4x7x7 float32 5.45-5.61 -> 4.16-5.04, bfloat16 3.18-4.75
                # -> 2.49-2.67; two threads, Zen 4)
                pf = prefetch_to(x, pf, pb + h * W, end)
                store_numbers(gi, b, iw_, W, src, so, x,
                              x0 + n * xn + c * xc + d * xd + h * xh, xw)
        blk, d, c, n = _step(blk, d, c, n, nblk, D, C)


@numba.njit(**_JIT)
def avg_pool_backward(at, go, gog, gi, gig, tab, dims, rows_per_item, x, xg, cnt, skip, nchunk):
    """Gather: ``gi[i] = sum over covering o of go[o] / volume(o)``.

    A work item is ``rows_per_item`` input rows of one ``(n, c, d)`` slab. It first reduces the
    covering output rows along w (``part[od, oh, iw]``, the innermost level of the sum), then
    adds those partial rows along h and d with contiguous, vectorisable row operations. An input
    row covered by a single output row is written straight from its partial row.

    With :data:`SKIPNA`, the NaN-skipping average's gradient: output o's share is
    ``go[o] / cnt[o]`` (its window's non-NaN count, :func:`count_valid`; where ``cnt`` is
    empty, each work item counts its output rows' windows first, once for the consecutive
    whole-plane items of the same output planes) and the inputs that are NaN in ``x``
    (storage ``xg``) get +0.0; otherwise ``x``, ``cnt`` are not read.
    """
    for ch in prange(nchunk):
        call(_avg_backward_chunk, at, (
            np.int64(ch), go, gog, gi, gig, tab, dims, rows_per_item, x, xg, cnt, skip, nchunk
        ))


@numba.njit(inline="always")
def _row_shares(dst, db, go, gb, gw, x, xb, ws, we, skip):
    """A row's shares into ``dst[db:]`` (in the accumulation type), windows ``[ws, we)`` in
    ascending order: each element's first share written and a second one (where two windows
    overlap) added, the gather's order. With :data:`SKIPNA` a share divides by its window's
    count of numbers; a 32- or 64-bit element that is NaN in ``x`` takes +0.0 instead of it in
    the same pass (a pass of its own after the shares read ``x`` and the result again:
    16x512x999 -> 50 float32 6.1 -> 5.0 ms, 1x256x559 -> 11 float64 101 -> 81 us), a 16-bit one
    in the caller's pass over the encoded row (``run_fill``: its vector decoding of ``x`` is
    cheaper than element by element here, 5.8 against 6.8 ms on bfloat16 16x512x999 -> 50)."""
    z = acc(go, 0)
    end = 0
    for ow in range(ws.size):
        w0, w1 = ws[ow], we[ow]
        n_w = run_count(x, xb + w0, w1 - w0) if skip is not None else w1 - w0
        share = z + get(go, gb + ow * gw) / acc(go, n_w)
        if skip is not None and not decodes(x):
            for w in range(w0, min(w1, end)):
                v = get(x, xb + w)
                dst[np.uint64(db + w)] += share if v == v else z
            for w in range(max(w0, end), w1):
                v = get(x, xb + w)
                dst[np.uint64(db + w)] = share if v == v else z
        else:
            for w in range(w0, min(w1, end)):
                dst[np.uint64(db + w)] += share
            for w in range(max(w0, end), w1):
                dst[np.uint64(db + w)] = share
        end = max(end, w1)


@numba.njit(**_BODY)
def _avg_backward_runs_chunk(ch, go, gog, gi, gig, tab, dims, x, xg, skip, prefetch, nchunk):
    """Chunk ``ch`` of :func:`avg_pool_backward_runs`."""
    N, C, D, H, W, OD, OH, OW = dims
    _, _, _, _, _, _, _, _, sw, ew, _, _ = axes_layout(dims)
    g0, gn, gc, gd, gh, gw = gog
    i0, in_, ic, id_, ih_, _ = gig
    x0, xn, xc, xd, xh, _ = xg
    # a work item's run: its window (one per item), or its row of windows along w
    L = (D // OD) * (H // OH) * W if OW == 1 else W
    z = acc(go, 0)
    nan_share = enc(gi, z)
    row = scratch(go, L if OW > 1 and decodes(gi) else 0)
    ws = tab[sw : sw + OW]
    we = tab[ew : ew + OW]
    r_lo, r_hi = _chunk(ch, nchunk, N * C * OD * OH)
    # with skipna, x is read: one stream where item r's run starts at x0 + r * L, prefetched
    # ahead as in _avg_runs_chunk (float32 32x256x28x28 -> (None, 1) 4.8 -> 3.0 ms, 16x512x999
    # -> 50 5.8 -> 2.5-3.3 ms, Zen 5)
    x_stream, pf, end = _stream(xg, dims, L, r_lo, r_hi, prefetch)
    if (OW == 1 and _stream(gog, dims, 1, 0, 0, False)[0] and _stream(gig, dims, L, 0, 0, False)[0]
            and (skip is None or x_stream)):
        # contiguous arrays (the usual case): item r's window starts at r * L in gi and x, its
        # gradient at r in go. A loop of its own, as in _avg_runs_chunk (the general one's index
        # arithmetic spilled to the stack: 64x512x49 -> 1 float32 0.36 -> 0.14 ms, Zen 3)
        for r in range(r_lo, r_hi):
            b = i0 + r * L
            g = get(go, g0 + r)
            if skip is not None:
                xb = x0 + r * L
                pf = prefetch_to(x, pf, xb + L, end)
                run_fill(gi, b, x, xb, L, enc(gi, z + g / acc(go, run_count(x, xb, L))), nan_share)
            else:
                share = enc(gi, z + g / acc(go, L))
                for e in range(L):
                    gi[np.uint64(b + e)] = share
        return
    oh, od, c, n = _unravel(r_lo, OH, OD, C)
    for _ in range(r_lo, r_hi):
        gb = g0 + n * gn + c * gc + od * gd + oh * gh
        b = i0 + n * in_ + c * ic + od * id_ + oh * ih_
        xb = x0 + n * xn + c * xc + od * xd + oh * xh
        pf = prefetch_to(x, pf, xb + L, end)
        if OW == 1:
            g = get(go, gb)
            if skip is not None:
                share = enc(gi, z + g / acc(go, run_count(x, xb, L)))
                run_fill(gi, b, x, xb, L, share, nan_share)
            else:
                share = enc(gi, z + g / acc(go, L))
                for e in range(L):
                    gi[np.uint64(b + e)] = share
        else:
            # 16-bit rows are summed in the accumulation type, then encoded in one pass
            if decodes(gi):
                _row_shares(row, 0, go, gb, gw, x, xb, ws, we, skip)
                store_row(gi, b, 1, L, row, 0)
                if skip is not None:  # NaN inputs get +0.0 (see _row_shares)
                    run_fill(gi, b, x, xb, L, None, nan_share)
            else:
                _row_shares(gi, b, go, gb, gw, x, xb, ws, we, skip)
        oh, od, c, n = _step(oh, od, c, n, OH, OD, C)


@numba.njit(**_JIT)
def avg_pool_backward_runs(at, go, gog, gi, gig, tab, dims, x, xg, skip, prefetch, nchunk):
    """The average backward when every window is one contiguous run of memory in ``gi`` (and,
    with :data:`SKIPNA`, in ``x``), as :func:`avg_pool_runs` takes them (global pooling of
    contiguous planes, windows that are whole rows), or lies along a row of unit stride with
    at most two windows over any element (every 1-D problem but upsampling).

    A work item is one window, or one row of windows. A window's share is
    ``+0.0 + go[o] / volume(o)`` (with :data:`SKIPNA`, ``go[o] / count`` of its non-NaN
    elements, counted over its run first, and +0.0 where ``x`` is NaN), written over its run;
    where two windows of a row overlap, the second share is added to the first: the bits of
    :func:`avg_pool_backward`'s gather.
    """
    for ch in prange(nchunk):
        call(_avg_backward_runs_chunk, at, (
            np.int64(ch), go, gog, gi, gig, tab, dims, x, xg, skip, prefetch, nchunk
        ))


@numba.njit(**_BODY)
def _avg_backward_columns_chunk(ch, go, gog, gi, gig, tab, dims, x, xg, skip, nchunk):
    """Chunk ``ch`` of :func:`avg_pool_backward_columns`."""
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, _, _, sh, eh, _, _, _, _, _, _ = axes_layout(dims)
    g0, gn, gc, gd, gh, gw = gog
    i0, in_, ic, id_, ih_, _ = gig
    x0, xn, xc, xd, xh, _ = xg
    r_lo, r_hi = _chunk(ch, nchunk, N * C * OD * OH)
    share = scratch(go, W)
    eshare = np.empty(W if decodes(gi) and skip is None else 0, gi.dtype)
    col = np.empty(W if skip is not None else 0, np.int32)
    z = acc(go, 0)
    oh, od, c, n = _unravel(r_lo, OH, OD, C)
    for _ in range(r_lo, r_hi):
        d0, d1, h0, h1 = tab[sd + od], tab[ed + od], tab[sh + oh], tab[eh + oh]
        xb = x0 + n * xn + c * xc
        ib = i0 + n * in_ + c * ic
        load_row(go, g0 + n * gn + c * gc + od * gd + oh * gh, gw, W, share)
        if skip is not None:  # each column's numbers over the band, in registers over its rows
            for w in range(W):
                col[w] = 0
            if h1 - h0 == 1:  # the band's rows are its slabs: all of them in one pass
                add_numbers(col, x, xb + d0 * xd + h0 * xh, W, d1 - d0, xd)
            else:
                for d in range(d0, d1):
                    add_numbers(col, x, xb + d * xd + h0 * xh, W, h1 - h0, xh)
            for w in range(W):
                share[w] = z + share[w] / acc(go, col[w])
        else:
            v = acc(go, (d1 - d0) * (h1 - h0))  # the integer volume, converted once
            for w in range(W):
                share[w] = z + share[w] / v
        if skip is None and decodes(gi):
            # 16-bit shares encoded once, not once a row of the band (bfloat16 4x64x8x28x28 ->
            # (1, None, None) 1.9-2.0x, 32x256x28x28 -> (1, None) 1.2-1.8x; the same with skipna,
            # selected by x, slowed (1, None) down 2x: not done)
            store_row(eshare, 0, 1, W, share, 0)
        for d in range(d0, d1):
            for h in range(h0, h1):
                b = ib + d * id_ + h * ih_
                if skip is not None:
                    store_numbers(gi, b, 1, W, share, 0, x, xb + d * xd + h * xh, 1)
                elif decodes(gi):
                    for w in range(W):
                        gi[np.uint64(b + w)] = eshare[w]
                else:
                    store_row(gi, b, 1, W, share, 0)
        oh, od, c, n = _step(oh, od, c, n, OH, OD, C)


@numba.njit(**_JIT)
def avg_pool_backward_columns(at, go, gog, gi, gig, tab, dims, x, xg, skip, nchunk):
    """The average backward for windows one column wide (``OW == W``) that tile ``D`` and
    ``H`` (each input row in exactly one output row's band), rows of unit stride in ``gi`` (and
    ``x``): ``(1, None)``, ``(1, None, None)`` and the like. A work item is one output row: its
    ``W`` shares (``+0.0 + go / volume``, or with :data:`SKIPNA` ``/ count`` of each column's
    numbers in the band, counted in one vector pass over the band's rows), stored into each
    row of the band (with :data:`SKIPNA`, +0.0 where ``x`` is NaN): the bits of
    :func:`avg_pool_backward`'s gather, whose element takes the one share of its one window."""
    for ch in prange(nchunk):
        call(_avg_backward_columns_chunk, at, (
            np.int64(ch), go, gog, gi, gig, tab, dims, x, xg, skip, nchunk
        ))


@numba.njit(inline="always")
def _scatter_lanes(a, b, sc, sw, W, nl, src):
    """``a[b + l * sc + w * sw] = src[w * LANES + l]`` for the first ``nl`` lanes: a lane-major
    row of ``LANES`` planes written back to them (``src`` already encoded)."""
    if nl == LANES:
        for w in range(W):
            o = b + w * sw
            for l in range(LANES):
                a[np.uint64(o + l * sc)] = src[w * LANES + l]
    else:
        for l in range(nl):
            for w in range(W):
                a[np.uint64(b + l * sc + w * sw)] = src[w * LANES + l]


@numba.njit(**_BODY)
def _plane_bit_counts(x, xb, xd, xl, H, W, w0, d0, d1, ring, hs, he, wbits, bits, cw, cb, cwt):
    """``cw[cb + (oh * OW + ow) * LANES + l]``: the numbers in window ``(oh, ow)`` of slabs
    ``[d0, d1)`` of the volume at ``xb + xl[l]`` (slab ``d`` at ``d * xd``; rows of ``W <= 64``
    at unit stride, planes that are runs): a bit mask per row, made for slabs ``w0 <= d < d1``
    (the others' are in ``bits``, ``ring`` slabs kept), then popcounts of the windows' columns
    (``wbits``), the ``LANES`` planes side by side, slab by slab (``cwt``: scratch of one
    slab's counts where windows are deeper). Once per output plane: compiled once rather than
    inlined (compile time)."""
    OW = wbits.size
    for d in range(w0, d1):
        o = (d % ring) * H * LANES
        for l in range(LANES):
            for h in range(H):
                number_bits(bits, o + h * LANES + l, x, xb + d * xd + xl[l] + h * W, W)
    for d in range(d0, d1):
        o = (d % ring) * H * LANES
        dst, q0 = (cw, cb) if d == d0 else (cwt, 0)
        for oh in range(hs.size):
            h0 = hs[oh]
            for ow in range(OW):
                count_bits(dst, q0 + (oh * OW + ow) * LANES, bits, o + h0 * LANES, he[oh] - h0,
                           wbits[ow])
        if d > d0:
            for k in range(hs.size * OW * LANES):
                cw[cb + k] += cwt[k]


def _shares(a, q, go, b, lane, v, cnt, cq):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(_shares, inline="always")
def _shares_impl(a, q, go, b, lane, v, cnt, cq):
    """``a[q + l] = go[b + lane[l]] / v`` (decoded) for every lane, or ``/ cnt[cq + l]`` where
    ``cnt`` (int32) is not None: :func:`~adaptive_pool.cpu.lanes.share_planes` where it reads
    ``go``'s storage (one vector division), else element by element."""
    if vector_runs(go.dtype):
        return lambda a, q, go, b, lane, v, cnt, cq: share_planes(a, q, go, b, lane, v, cnt, cq)
    if isinstance(cnt, types.NoneType):

        def scalar(a, q, go, b, lane, v, cnt, cq):
            for l in range(LANES):
                a[q + l] = get(go, b + lane[l]) / v

        return scalar

    def counted(a, q, go, b, lane, v, cnt, cq):
        for l in range(LANES):
            a[q + l] = get(go, b + lane[l]) / acc(go, cnt[cq + l])

    return counted


def _store_lane_rows(gi, ib, ioff, rows, buf, n):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(_store_lane_rows, inline="always")
def _store_lane_rows_impl(gi, ib, ioff, rows, buf, n):
    """``gi[ib + ioff[l] + k] = rows[k * LANES + l]`` (encoded) for ``k < n`` and every lane:
    :func:`~adaptive_pool.cpu.lanes.store_planes`, from ``rows`` where ``gi`` stores the
    accumulation dtype, else from ``buf`` (``gi``'s dtype) once ``rows`` is encoded into it in
    one unit-stride (vector) loop."""
    if gi.dtype == rows.dtype:
        return lambda gi, ib, ioff, rows, buf, n: store_planes(gi, ib, ioff, rows, 0, n)

    def encoded(gi, ib, ioff, rows, buf, n):
        store_row(buf, 0, 1, n * LANES, rows, 0)
        store_planes(gi, ib, ioff, buf, 0, n)

    return encoded


@numba.njit(**_BODY)
def _avg_backward_lanes_chunk(ch, go, gog, gi, gig, tab, dims, x, xg, cnt, skip, nchunk):
    """Chunk ``ch`` of :func:`avg_pool_backward_lanes`."""
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, ld, hd, sh, eh, lh, hh, sw, ew, lw, hw = axes_layout(dims)
    g0, gn, gc, gd, gh, gw = gog
    i0, in_, ic, id_, ih_, iw_ = gig
    CB = (C + LANES - 1) // LANES
    WL = W * LANES
    plane_run = iw_ == 1 and ih_ == W  # each plane's rows (per d) are one run of memory
    it_lo, it_hi = _chunk(ch, nchunk, N * CB * D)
    gv = scratch(go, OW * LANES)
    part = scratch(go, OH * WL)
    rows = scratch(go, H * WL)
    rowd = scratch(go, WL)
    # 16-bit results: rows encoded before they are stored (all of them where planes are runs)
    enc_rows = np.empty((H if plane_run else 1) * WL if decodes(gi) else 0, gi.dtype)
    lane = np.empty(LANES, np.int64)
    ioff = np.arange(LANES) * ic  # the planes of a whole block in the result
    no_count = np.empty(0, np.int32)
    # skipna: each lane's plane in ``cnt`` and in ``x``; the slab's validity (1 for a number)
    # and, counted here where windows do not span d (``cnt`` empty), its windows' counts
    cl = np.empty(LANES, np.int64)
    xl = np.empty(LANES, np.int64)
    fused = skip is not None and cnt.size == 0
    x0, xn, xc, xd, xh, xw = xg
    # Where the planes of ``x`` and of the result are runs (the C-contiguous case), ``x`` is
    # read plane by plane at unit stride: NaN inputs set to +0.0 once a plane is stored, and
    # windows counted from a bit per element where rows hold at most 64 (popcounts of the
    # windows' columns, the 8 planes side by side: 1.4-1.8x less time for the whole skipna
    # call than the column counts below on 14x14 and 28x28 planes), else per plane as
    # count_valid counts an output row (:func:`_count_row`) where they hold 4 elements or more
    # on average (shorter windows count the 8 planes side by side). Otherwise a lane-major
    # validity mask of the slab serves both.
    x_run = skip is not None and plane_run and xw == 1 and xh == W
    x_bits = fused and x_run and W <= 64
    x_count = fused and x_run and not x_bits and H * W >= 4 * OH * OW
    mask = skip is not None and not (x_run and (x_bits or x_count or not fused))
    okv = np.empty(H * WL if mask else 0, np.int32)
    colc = np.empty(WL if fused and not (x_bits or x_count) else 0, np.int32)
    colp = np.zeros(W if x_count else 0, np.int32)
    lcnt = np.empty(OW if x_count else 0, np.int64)
    ws = tab[sw : sw + OW]
    we = tab[ew : ew + OW]
    # windows deeper than one (bit counts only): each output plane's counted once, at the first
    # slab that needs them, as in _avg_backward_chunk (``lring`` planes of counts kept, the
    # bits of ``depth`` slabs)
    depth, lring = _rings(tab, sd, ed, ld, hd, OD, D, x_bits)
    od_next = d_next = 0
    cw = np.empty(lring * OH * OW * LANES if fused else 0, np.int32)
    cwt = np.empty(OH * OW * LANES if depth > 1 else 0, np.int32)
    bits = np.empty(depth * H * LANES if x_bits else 0, np.int64)
    spans = _word_spans(ws, we, W, x_bits or x_count)
    wbits = spans[2]  # (read where x_bits: rows of at most 64)
    z = acc(go, 0)
    z_enc = enc(gi, z)
    wl = tab[lw : lw + W]
    wh = tab[hw : hw + W]
    _, d, cb, n = _unravel(it_lo, 1, D, CB)
    for it in range(it_lo, it_hi):
        c0 = cb * LANES
        nl = min(LANES, C - c0)
        for l in range(LANES):
            lane[l] = min(l, nl - 1) * gc
            cl[l] = min(l, nl - 1) * (OD * OH * OW)
            xl[l] = min(l, nl - 1) * xc
        xv = x0 + n * xn + c0 * xc
        xb = xv + d * xd
        if skip is not None and mask:
            for h in range(H):
                for w in range(W):
                    plane_numbers(okv, (h * W + w) * LANES, x, xb + h * xh + w * xw, xl)
        od0, od1 = tab[ld + d], tab[hd + d]
        # as in _avg_backward_chunk: a d in the same output planes as the last item's takes
        # its partial rows, and its row sums where no NaN mask was applied to them
        fresh = not (it > it_lo and _planes_as_last_d(tab, ld, hd, d))
        if it == it_lo or d == 0:
            od_next, d_next = od0, tab[sd + od0]
        if fresh:
            if x_bits:
                for od in range(max(od_next, od0), od1):
                    _plane_bit_counts(x, xv, xd, xl, H, W, max(d_next, tab[sd + od]),
                                      tab[sd + od], tab[ed + od], depth, tab[sh : sh + OH],
                                      tab[eh : eh + OH], wbits, bits, cw,
                                      (od % lring) * OH * OW * LANES, cwt)
                    d_next = max(d_next, tab[ed + od])
                od_next = max(od_next, od1)
            elif fused:  # exact integers: rows of columns, then columns of windows
                for oh in range(OH):
                    h0, h1 = tab[sh + oh], tab[eh + oh]
                    if x_count:  # each plane's band counted at unit stride
                        for l in range(LANES):
                            _count_row(x, xb + xl[l], 0, W, 1, 0, 1, h0, h1, W, colp, ws, we,
                                       spans, lcnt, 0)
                            for ow in range(OW):
                                cw[(oh * OW + ow) * LANES + l] = lcnt[ow]
                    else:
                        for k in range(WL):
                            colc[k] = 0
                        for h in range(h0, h1):
                            q = h * WL
                            for k in range(WL):
                                colc[k] += okv[np.uint64(q + k)]
                        for ow in range(OW):
                            q = (oh * OW + ow) * LANES
                            for l in range(LANES):
                                cw[q + l] = 0
                            # (a vector add of the 8 planes' counts a column: scalar adds
                            # were 15% of 8x64x100 -> 300's call)
                            for w in range(tab[sw + ow], tab[ew + ow]):
                                add_block(cw, q, colc, w * LANES, no_count, PLAIN)
            if part.size < (od1 - od0) * OH * WL:
                part = scratch(go, (od1 - od0) * OH * WL)
            gb = g0 + n * gn + c0 * gc
            for od in range(od0, od1):
                vd = tab[ed + od] - tab[sd + od]
                for oh in range(OH):
                    vdh = vd * (tab[eh + oh] - tab[sh + oh])
                    gr = gb + od * gd + oh * gh
                    if fused:  # each window's count of non-NaN elements
                        for ow in range(OW):
                            _shares(gv, ow * LANES, go, gr + ow * gw, lane, z, cw,
                                    (((od % lring) * OH + oh) * OW + ow) * LANES)
                    elif skip is not None:
                        cr = (((n * C + c0) * OD + od) * OH + oh) * OW
                        for ow in range(OW):
                            for l in range(LANES):
                                gv[ow * LANES + l] = get(go, gr + ow * gw + lane[l]) / acc(
                                    go, cnt[np.uint64(cr + ow + cl[l])]
                                )
                    else:
                        for ow in range(OW):
                            # volume as the integer product, converted once (bit-identical)
                            v = acc(go, vdh * (tab[ew + ow] - tab[sw + ow]))
                            _shares(gv, ow * LANES, go, gr + ow * gw, lane, v, None, 0)
                    # each column's shares added from +0.0 in ascending ow, a vector add of the
                    # 8 planes each (8-element loops over arrays LLVM could not tell apart, and
                    # no SLP vectoriser, stayed scalar: a quarter of float32 64x512x14x14 -> 5x5)
                    q = ((od - od0) * OH + oh) * WL
                    for w in range(W):
                        qw = q + w * LANES
                        for l in range(LANES):
                            part[np.uint64(qw + l)] = 0
                        for ow in range(wl[w], wh[w]):
                            add_block(part, qw, gv, ow * LANES, no_count, PLAIN)
        ib = i0 + n * in_ + c0 * ic + d * id_
        if fresh or mask:
            for h in range(H):
                lo, hi = tab[lh + h], tab[hh + h]
                _sum_part_rows(part, od1 - od0, OH, lo, hi - lo, WL, rows[h * WL :], rowd)
        if skip is not None and mask:  # NaN inputs get +0.0
            for k in range(H * WL):
                rows[k] = rows[k] if okv[k] != 0 else z
        if plane_run:
            if nl == LANES:
                # transposed in registers, 8 elements of each plane a block. A plane at a time,
                # LLVM gathered the lane-major rows (slow on Zen 4; float64, whose rows of lanes
                # are 64 bytes, took 0.9x as long so on 64x512x14x14 -> 5x5, 1.3x on
                # 8x128x8x14x14 -> 3x5x5); element k of each plane in turn, it paid a shuffle
                # and a 16-byte store per 4 elements
                _store_lane_rows(gi, ib, ioff, rows, enc_rows, H * W)
            else:
                # each plane stored as one run: 1.4x (float32) to 2x (bfloat16) on 7x7 planes
                # against stores interleaved over the LANES planes, row by row
                for l in range(nl):
                    for k in range(H * W):
                        put(gi, ib + l * ic + k, rows[np.uint64(k * LANES + l)])
            if skip is not None and not mask:  # NaN inputs get +0.0
                for l in range(nl):
                    run_fill(gi, ib + l * ic, x, xb + xl[l], H * W, None, z_enc)
        else:
            for h in range(H):
                row = rows[h * WL :]
                if decodes(gi):  # encoded in one unit-stride loop: vectorised, 1.4x for bf16
                    store_row(enc_rows, 0, 1, WL, row, 0)
                    _scatter_lanes(gi, ib + h * ih_, ic, iw_, W, nl, enc_rows)
                else:
                    _scatter_lanes(gi, ib + h * ih_, ic, iw_, W, nl, row)
        _, d, cb, n = _step(0, d, cb, n, 1, D, CB)


@numba.njit(**_JIT)
def avg_pool_backward_lanes(at, go, gog, gi, gig, tab, dims, x, xg, cnt, skip, nchunk):
    """The average backward for small planes: ``LANES`` planes side by side.

    The sums of :func:`avg_pool_backward`, term for term, in buffers whose innermost axis is
    the plane (``part[od, oh, w, lane]``, ``rows[h, w, lane]``), so every row operation is
    ``LANES`` times longer and the per-row overhead that dominates planes of a few dozen
    elements is paid once for all of them (1.2-1.7x on 7x7 and 14x14 planes). All ``H`` rows
    are summed before any is stored, so planes whose rows are one run are stored plane by
    plane. A work item is one ``(n, d)`` slab of ``LANES`` planes; a last block of fewer
    planes computes its last plane in the spare lanes and does not store them.

    With :data:`SKIPNA`, the NaN-skipping gradient as in :func:`avg_pool_backward`:
    NaN inputs of ``x`` get +0.0 and shares divide by the windows' counts of numbers, from
    ``cnt`` (:func:`count_valid`) or, where ``cnt`` is empty (windows one d deep: ``OD == D``,
    every 1-D and 2-D problem), counted by the work item as it reads ``x`` anyway: where planes
    are runs, from bit masks of rows of at most 64 elements, or plane by plane with vector code
    where windows hold 4 elements or more on average; else from a lane-major validity mask of
    the slab (int32 sums over rows, then over columns). Otherwise ``x`` and ``cnt`` are not
    read.
    """
    for ch in prange(nchunk):
        call(_avg_backward_lanes_chunk, at, (
            np.int64(ch), go, gog, gi, gig, tab, dims, x, xg, cnt, skip, nchunk
        ))


@numba.njit(inline="always")
def _mkey(x, v, skip):
    """The max forward's key of stored value ``v``: :func:`~adaptive_pool.cpu.access.key`, or
    with :data:`SKIPNA` NaN as the smallest key of all (below -inf), so the first maximum of the
    numbers wins and a window of NaN only points at its first element."""
    k = key(x, v)
    if skip is not None:
        kn = key_nan(x)
        return -kn - 1 if k == kn else k
    return k


@numba.njit(inline="always")
def _fold_max(x, b, xw, n, dd, pk, pd, skip, first, zk):
    """Fold element ``i`` of a row (stride ``xw`` from ``b``) into ``pk[i]``, the larger key,
    and ``pd[i] = dd`` where it is strictly larger: ``pd`` keeps the first of equal maxima.
    The ``first`` row of a fold is stored as it is (what folding it into the smallest key with
    ``pd = dd = 0`` gives: even skipna's NaN key, the smallest, leaves that pair).

    Written for any stride: LLVM versions the loop for a unit stride and vectorises it.
    ``zk`` is a zero of the keys' type that LLVM cannot see (:func:`_max_chunk`).
    """
    if first:
        # stored, not folded into rows reset to the smallest key: a pass and a load fewer
        # (float64 32x256x56x56 -> 7x7 40.5-45.0 -> 31.3-33.0 ms while the fold's larger key
        # was still a masked store, see _max_chunk)
        for i in range(n):
            pk[i], pd[i] = _mkey(x, x[np.uint64(b + i * xw)], skip), dd
        return
    for i in range(n):
        # every load before any store: a reload after the store to pk became a masked store
        # (vpmaskmovd), 4x slower on Zen 3
        k, kp, dp = _mkey(x, x[np.uint64(b + i * xw)], skip), pk[i], pd[i]
        pk[i] = max(kp, k) + zk
        pd[i] = dd if k > kp else dp


@numba.njit(inline="always")
def _rank(k, r):
    """Key ``k`` and position ``r`` as one int64 ordered by ``k``, then by the smaller ``r``
    (for int32 keys; ``r`` is taken as unsigned, so any ``m = max k`` gives back ``r`` as
    ``(m << 32) - rank``)."""
    return (np.int64(k) << 32) - np.int64(np.uint32(r))


@numba.njit(inline="always")
def _log2_above(n):
    """The smallest ``s`` with ``2**s >= n``."""
    s = 0
    while (1 << s) < n:
        s += 1
    return s


@numba.njit(**_BODY)
def _rescan(x, xb, xd, xh, xw, d0, d1, h0, h1, w0, w1, m, last, skip):
    """Where in window ``[d0,d1)x[h0,h1)x[w0,w1)`` key ``m`` is first (last if ``last``): the
    contract's scan order (backwards for the last), stopping at the first hit. Compiled apart
    and called (rare: windows with a NaN or past the tracked positions), not inlined: a fifth
    of the max forward's cold first call when it was."""
    # one loop nest for both directions: each copy of _mkey is typed again
    nd, nh, nw = d1 - d0, h1 - h0, w1 - w0
    sd, sh, sw = (-1, -1, -1) if last else (1, 1, 1)
    bd, bh, bw = (d1 - 1, h1 - 1, w1 - 1) if last else (d0, h0, w0)
    for i in range(nd):
        d = bd + i * sd
        for j in range(nh):
            h = bh + j * sh
            for k in range(nw):
                w = bw + k * sw
                if _mkey(x, x[np.uint64(xb + d * xd + h * xh + w * xw)], skip) == m:
                    return d, h, w
    return d0, h0, w0  # not reached: m is a key of the window


@numba.njit(inline="always")
def _fold_rows(pk, pd, o, n, W, hh, first, qk, qr, zk):
    """Fold ``n`` rows of ``pk``/``pd`` from row ``o`` into ``qk``/``qr`` (``hh``: the first
    one's h in the window; ``first``: it starts the window; ``zk``: as in :func:`_fold_max`).
    Ties go to the smaller position."""
    for i in range(n):
        kr = pk[(o + i) * W : (o + i + 1) * W]
        dr = pd[(o + i) * W : (o + i + 1) * W]
        r = np.int32(hh + i)
        if first and i == 0:
            for w in range(W):
                qk[w], qr[w] = kr[w], dr[w]
        else:
            for w in range(W):
                # every load before any store (see _fold_max)
                k, kq, rk, rq = kr[w], qk[w], np.int32(dr[w] + r), qr[w]
                qk[w] = max(kq, k) + zk
                qr[w] = rk if (k > kq) | ((k == kq) & (rk < rq)) else rq


@numba.njit(**_BODY)
def _max_chunk(ch, x, xg, y, yg, ind, ig, tab, dims, rpi, part, tracked, skip, nchunk):
    """Chunk ``ch`` of :func:`max_pool`, reading at most ``part`` input rows at a time."""
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = axes_layout(dims)
    x0, xn, xc, xd, xh, xw = xg
    y0, yn, yc, yd, yh, yw = yg
    j0, jn, jc, jd, jh, jw = ig
    nb = -(-OH // rpi)
    total = N * C * OD * nb
    knan = key_nan(x)
    flat = xw == 1 and xh == W  # a part's input rows are one run
    int32_keys = knan == 0x7FFFFFFF  # a key and a position pack into one int64
    r_lo, r_hi = _chunk(ch, nchunk, total)
    pk = np.full(part * W, knan)
    pd = np.empty(part * W, np.int32)
    qk = np.full(W, knan)
    qr = np.empty(W, np.int32)
    # int64 keys: a zero LLVM cannot see (``tracked`` is below 2**62; qk's first element,
    # written before the folds read it), added to the folds' larger keys, keeps their stores
    # plain; stored back where it was read, the larger key became a masked store (vpmaskmovq),
    # slow on Zen 3 (float64 4x64x16x56x56 -> 4x7x7 8.1-11.0 -> 6.3-7.5 ms). int32 keys are
    # stored plainly already: their zero folds away (the add cost float32 56x56 -> 7x7 1.1x)
    qk[0] = tracked >> 62
    zk = qk[0] - qk[0] if int32_keys else qk[0]
    ws = tab[sw : sw + OW]
    we = tab[ew : ew + OW]
    bl, od, c, n = _unravel(r_lo, nb, OD, C)
    for _ in range(r_lo, r_hi):
        d0, d1 = tab[sd + od], tab[ed + od]
        oh0, oh1 = bl * rpi, min(OH, bl * rpi + rpi)
        hb0, hb1 = tab[sh + oh0], tab[eh + oh1 - 1]
        sr = _log2_above(hb1 - hb0)
        exact = (d1 - d0) << sr <= tracked
        xb = x0 + n * xn + c * xc
        for ha in range(hb0, hb1, part):
            hz = min(hb1, ha + part)
            for d in range(d0, d1):
                dd = np.int32((d - d0) << sr)
                b = xb + d * xd + ha * xh
                # one call site (each is another vectorised copy to compile): a flat part's
                # rows as one run
                nr, L = (1, (hz - ha) * W) if flat else (hz - ha, W)
                for r in range(nr):
                    _fold_max(x, b + r * xh, xw, L, dd, pk[r * W :], pd[r * W :], skip, d == d0,
                              zk)
            for oh in range(oh0, oh1):
                h0, h1 = tab[sh + oh], tab[eh + oh]
                lo, hi = max(h0, ha), min(h1, hz)
                if lo >= hi:
                    continue
                _fold_rows(pk, pd, lo - ha, hi - lo, W, lo - h0, lo == h0, qk, qr, zk)
                if hi < h1:
                    continue  # the window goes on in the next part
                yb = y0 + n * yn + c * yc + od * yd + oh * yh
                jb = j0 + n * jn + c * jc + od * jd + oh * jh
                for ow in range(OW):
                    w0, w1 = ws[ow], we[ow]
                    u = np.uint64(w0)
                    m, br, bw = qk[u], np.int64(qr[u]), w0
                    bv = _rank(m, br)
                    for w in range(w0 + 1, w1):
                        u = np.uint64(w)
                        k, r = qk[u], np.int64(qr[u])
                        if int32_keys:
                            v = _rank(k, r)
                            bw = w if v > bv else bw
                            bv = max(bv, v)
                        elif (k > m) | ((k == m) & (r < br)):
                            br, bw = r, w
                        m = max(m, k)
                    # with skipna NaN is the smallest key: never the last-NaN rule
                    nan_won = m == knan and skip is None
                    if nan_won or not exact:
                        d, h, w = _rescan(
                            x, xb, xd, xh, xw, d0, d1, h0, h1, w0, w1, m, nan_won, skip
                        )
                    else:
                        r = (np.int64(m) << 32) - bv if int32_keys else br
                        d, h, w = d0 + (r >> sr), h0 + (r & ((1 << sr) - 1)), bw
                    y[np.uint64(yb + ow * yw)] = x[np.uint64(xb + d * xd + h * xh + w * xw)]
                    ind[np.uint64(jb + ow * jw)] = (d * H + h) * W + w
        bl, od, c, n = _step(bl, od, c, n, nb, OD, C)


@numba.njit(**_JIT)
def max_pool(at, x, xg, y, yg, ind, ig, tab, dims, rpi, part, tracked, skip, nchunk):
    """Max over each window with its flat in-plane index; a work item is ``rpi`` output rows
    of one ``(n, c, od)``.

    The contract: the window is scanned in d, h, w order from -inf with the index of its first
    element, and a value is taken when ``v > best or v != v``. So the result is the window's
    last NaN if it has one, else its first element equal to the maximum (-0 == +0). Keys (see
    :func:`~adaptive_pool.cpu.access.key`) order like the values; the value is copied as
    stored (NaN payloads survive). With :data:`SKIPNA`, NaN keys are the smallest
    (:func:`_mkey`): the first maximum of the window's numbers (even -inf), or for a window of
    NaN only its first element, as the CUDA kernel's "``v > best``, or the first number" scan.

    Computed axis by axis, each level keeping the first position of its maximum:

    * over d, for the item's input rows as flat runs (unit-stride loops that LLVM vectorises):
      ``pk`` the largest key of each ``(h, w)`` and ``pd`` its first ``(d - d0) << sr``,
      where ``2**sr`` is at least the item's input rows;
    * over h, for each output row: ``qk`` and ``qr = pd + (h - h0)``, ties going to the
      smaller ``qr``, which orders the window's positions as ``(d, h)`` does;
    * over w, for each window: ties going to the smaller ``qr``, then ``w``; int32 keys
      compared with their position as one int64 (:func:`_rank`: the branch of the float64
      path mispredicted on most windows).

    ``pk`` and ``pd`` hold ``part`` input rows (the backend sizes them): an item of one output
    row whose window has more rows takes them in parts, folding each into ``qk`` and ``qr``.
    Positions are int32 (twice the lanes of int64). Windows with a NaN, or whose positions
    reach ``tracked``, are located by :func:`_rescan` instead.
    """
    for ch in prange(nchunk):
        call(_max_chunk, at, (
            np.int64(ch), x, xg, y, yg, ind, ig, tab, dims, rpi, part, tracked, skip, nchunk
        ))


#: Runs of :func:`_run_argmax` up to this long are scanned element by element.
SHORT_RUN = 8


@numba.njit(inline="always")
def _run_argmax(x, b, n, skip):
    """The contract's maximum of the unit-stride run ``x[b:b+n]`` (``n < 2**31``): the offset
    of its first maximum key (:func:`_mkey`), or of its last NaN where a NaN wins (plain
    calls, rare: scanned backwards).

    int32 keys: one pass, a maximum of key and position as one int64 that LLVM vectorises
    (``k << 32 | ~i``: unlike :func:`_rank`, it has room for skipna's NaN key, the smallest
    int32). int64 keys: the largest key, then the first block of 64 that holds it (both
    vectorised), then that block element by element (a scalar search of the whole run made
    3136-element windows 1.3x slower than :func:`max_pool`). Where a NaN wins, a second pass
    finds the last one (a scalar scan backwards took 2.6x the time of a skipna call on
    16-element windows a tenth NaN). Runs of up to
    :data:`SHORT_RUN` elements are one scalar scan: the passes cost more to set up than they
    save there (windows of 1-3 float64 elements took 1.3-2.2x as long, Zen 5)."""
    knan = key_nan(x)
    if n <= SHORT_RUN:
        i = 0
        m = _mkey(x, x[np.uint64(b)], skip)
        for j in range(1, n):
            k = _mkey(x, x[np.uint64(b + j)], skip)
            # the first maximum; a NaN that wins (plain calls): the last one
            if k > m or (skip is None and k == knan):
                m, i = k, j
        return i
    if knan == 0x7FFFFFFF:
        low = np.int64(0xFFFFFFFF)
        bv = np.int64(-1) << 63
        for i in range(n):
            bv = max(bv, (np.int64(_mkey(x, x[np.uint64(b + i)], skip)) << 32) | (low - i))
        m = bv >> 32
        i = low - (bv & low)
    else:
        m = -knan - 1
        for i in range(n):
            m = max(m, _mkey(x, x[np.uint64(b + i)], skip))
        i = 0
        while True:
            e = min(i + 64, n)  # (a trip count known at run time only: not unrolled)
            hit = False
            for j in range(i, e):
                hit |= _mkey(x, x[np.uint64(b + j)], skip) == m
            if hit:
                break
            i = e
        while _mkey(x, x[np.uint64(b + i)], skip) != m:
            i += 1
    if m == knan and skip is None:  # a NaN wins: the last one, in a pass that vectorises
        i = -1
        for j in range(n):
            i = max(i, j if _mkey(x, x[np.uint64(b + j)], skip) == m else -1)
    return i


@numba.njit(**_BODY)
def _max_runs_chunk(ch, x, xg, y, yg, ind, ig, tab, dims, skip, nchunk):
    """Chunk ``ch`` of :func:`max_pool_runs`."""
    N, C, D, H, W, OD, OH, OW = dims
    _, _, _, _, _, _, _, _, sw, ew, _, _ = axes_layout(dims)
    x0, xn, xc, xd, xh, _ = xg
    y0, yn, yc, yd, yh, yw = yg
    j0, jn, jc, jd, jh, jw = ig
    KD, KH = D // OD, H // OH  # each is the whole axis or one element
    # a run over whole d (KD > 1) of one row of h each (KH < H: d and h transposed in memory,
    # as a C-order input's runs never are) steps H * W flat positions a slab, not KH * W
    gap = (H - KH) * W if KD > 1 else 0
    ws = tab[sw : sw + OW]
    we = tab[ew : ew + OW]
    r_lo, r_hi = _chunk(ch, nchunk, N * C * OD * OH)
    # nothing prefetched ahead of the runs: with the average's stream every max case took
    # 1.15-1.3x as long, in and out of the cache (Zen 3): the comparisons set the pace
    # windows of one element each (an output as large as its input): each is its element,
    # copied without a search (512x14 -> 14: 9 ns a window through _run_argmax)
    single = KD * KH == 1
    for ow in range(OW):
        single &= we[ow] - ws[ow] == 1
    oh, od, c, n = _unravel(r_lo, OH, OD, C)
    for _ in range(r_lo, r_hi):
        b = x0 + n * xn + c * xc + od * xd + oh * xh
        yb = y0 + n * yn + c * yc + od * yd + oh * yh
        jb = j0 + n * jn + c * jc + od * jd + oh * jh
        p = (od * KD * H + oh * KH) * W  # the flat index of the item's first element
        if single:
            for ow in range(OW):
                i = ws[ow]
                y[np.uint64(yb + ow * yw)] = x[np.uint64(b + i)]
                ind[np.uint64(jb + ow * jw)] = p + i
        else:
            for ow in range(OW):
                w0 = ws[ow]
                m = KD * KH * (we[ow] - w0)
                i = w0 + _run_argmax(x, b + w0, m, skip)
                y[np.uint64(yb + ow * yw)] = x[np.uint64(b + i)]
                ind[np.uint64(jb + ow * jw)] = p + i + (i // (KH * W) * gap if gap else 0)
        oh, od, c, n = _step(oh, od, c, n, OH, OD, C)


@numba.njit(**_JIT)
def max_pool_runs(at, x, xg, y, yg, ind, ig, tab, dims, skip, nchunk):
    """The max forward when every window is one contiguous run of memory: the windows of
    :func:`avg_pool_runs` (global pooling, (None, 1), ...) and windows along rows (each
    window one element deep in d and h: every 1-D problem); a work item is one output row.
    The same result as :func:`max_pool`, without its per-row position bookkeeping, which cost
    more than the comparisons on small planes (110 ns a 7x7 plane)."""
    for ch in prange(nchunk):
        call(_max_runs_chunk, at, (np.int64(ch), x, xg, y, yg, ind, ig, tab, dims, skip, nchunk))


def _by_keys(x):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(_by_keys, inline="always")
def _by_keys_impl(x):
    """Whether :func:`_fold_channels` compares ``x``'s elements by their keys (float32: the
    float compare took 1.03-1.15x as long) rather than decoded (float64 and 16-bit: the keys
    took 1.15-1.47x as long), a compile-time constant."""
    keys = x.dtype == types.float32
    return lambda x: keys


@numba.njit(inline="always")
def _fold_channels(x, e, nc, at, v, r, skip):
    """Fold the run ``x[e:e+nc]`` (in-plane position ``r`` of ``nc`` channels' windows) into
    each channel's maximum so far, its value ``v`` (as stored) and position ``at``: the first
    maximum, or (plain calls) the last NaN; with :data:`SKIPNA` a number replaces a NaN kept
    as the window's first element, and NaN nothing. The maximum's key is not kept: it is
    computed again from ``v`` (integer operations instead of a third array's load and store),
    or the decoded values are compared (the same order: -0.0 == +0.0, NaN apart), whichever is
    faster for the dtype (:func:`_by_keys`). A function of its own, LLVM vectorises it (inline
    in the loop nest it stayed scalar; bfloat16 64x512x14x14 -> 5x5 3.6-4.4 -> 2.5-3.7 ms)."""
    for l in range(nc):
        i = np.uint64(l)
        u = x[np.uint64(e + l)]
        vk, ak = v[i], at[i]
        if _by_keys(x):
            k = _mkey(x, u, skip)
            take = (k > _mkey(x, vk, skip)) | ((skip is None) & (k == key_nan(x)))
        else:
            a, b = dec(x, u), dec(x, vk)
            if skip is not None:
                take = (a > b) | ((b != b) & (a == a))
            else:
                take = (a > b) | (a != a)
        at[i] = np.int32(r) if take else ak
        v[i] = u if take else vk


@numba.njit(**_BODY)
def _max_channels_chunk(ch, x, xg, y, yg, ind, ig, tab, dims, block, skip, nchunk):
    """Chunk ``ch`` of :func:`max_pool_channels`."""
    N, C, D, H, W, OD, OH, OW = dims
    _, _, _, _, _, _, _, _, sw, ew, _, _ = axes_layout(dims)
    _, _, _, xd, xh, xw = xg
    yc, yw = yg[2], yg[5]
    j0, jn, jc, jd, jh, jw = ig
    CB = -(-C // block)
    P = block
    at = np.empty(P, np.int32)  # the in-plane index of each channel's maximum
    v = np.empty(P, x.dtype)  # and its value as stored
    ws = tab[sw : sw + OW]
    we = tab[ew : ew + OW]
    r_lo, r_hi = _chunk(ch, nchunk, N * OD * OH * CB)
    cb, oh, od, n = _unravel(r_lo, CB, OH, OD)
    for _ in range(r_lo, r_hi):
        # (the average's items: blocks of channels vary fastest, so consecutive items read
        # the same window rows)
        d0, d1, h0, h1, c0, xb, yb, _, nc = _avg_item(tab, dims, xg, yg, P, oh, od, cb, n)
        jb = j0 + n * jn + c0 * jc + od * jd + oh * jh
        for ow in range(OW):
            w0, w1 = ws[ow], we[ow]
            b = xb + d0 * xd + h0 * xh + w0 * xw
            r0 = np.int32((d0 * H + h0) * W + w0)
            for l in range(nc):
                # the first element as it is: what folding it into a smallest key gives (a
                # skipna NaN too: the window of NaN only keeps its first element)
                at[l], v[l] = r0, x[np.uint64(b + l)]
            for d in range(d0, d1):
                for h in range(h0, h1):
                    b = xb + d * xd + h * xh
                    q = np.int32((d * H + h) * W)
                    for w in range(w0 + 1 if d == d0 and h == h0 else w0, w1):
                        _fold_channels(x, b + w * xw, nc, at, v, q + np.int32(w), skip)
            for l in range(nc):
                y[np.uint64(yb + l * yc + ow * yw)] = v[l]
                ind[np.uint64(jb + l * jc + ow * jw)] = at[l]
        cb, oh, od, n = _step(cb, oh, od, n, CB, OH, OD)


@numba.njit(**_JIT)
def max_pool_channels(at, x, xg, y, yg, ind, ig, tab, dims, block, skip, nchunk):
    """The max forward of inputs whose channels are adjacent in memory (``xc == 1``:
    PyTorch's channels-last layout): up to ``block`` channels at a time, each
    window element a unit-stride run of them, compared channel by channel in the contract's
    scan order (d, h, w ascending; a value is taken when its key is larger, or, in plain
    calls, when it is NaN), keeping each channel's value and in-plane index (int32). A work
    item is one output row of a block of channels. :func:`max_pool` reads such an input one
    channel at a time, an element of each cache line (float32 channels-last 4-15x slower than
    PyTorch's channels-last kernels)."""
    for ch in prange(nchunk):
        call(_max_channels_chunk, at, (
            np.int64(ch), x, xg, y, yg, ind, ig, tab, dims, block, skip, nchunk
        ))


#: Planes up to this many elements are checked with :func:`_divmod_magic`.
MAGIC_LIMIT = np.int64(1) << 31


@numba.njit(inline="always")
def _magic(m):
    """Multiplier and shift that turn ``k // m`` into ``(k * M) >> S`` for ``0 <= k < 2**31``.

    Granlund and Montgomery's round-up method with 32-bit dividends: ``l = ceil(log2 m)``,
    ``M = ceil(2**(32 + l) / m)`` (at most 33 bits) is exact for every ``k < 2**32``; keeping
    ``k < 2**31`` keeps ``k * M`` below ``2**64``. For ``1 <= m < 2**31``.
    """
    lg = np.uint64(0)
    um = np.uint64(m)
    while (np.uint64(1) << lg) < um:
        lg += np.uint64(1)
    sh = np.uint64(32) + lg  # up to 63: unsigned arithmetic
    return ((np.uint64(1) << sh) + um - np.uint64(1)) // um, sh


@numba.njit(inline="always")
def _divmod_magic(k, m, mul, sh):
    """``divmod(k, m)`` for ``0 <= k < 2**31`` with ``(mul, sh) = _magic(m)``: no division."""
    q = (np.uint64(k) * mul) >> sh
    return np.int64(q), k - np.int64(q) * m


@numba.njit(inline="always")
def _in_window_small(k, plane, H, W, mh, sh, mw, sw, d0, d1, h0, h1, w0, w1):
    """Whether flat in-plane index ``k`` lies in the window, for planes up to ``2**31``.

    The test of :func:`~adaptive_pool.windows.index_in_window` with the divisions by W and H
    done by multiplication (integer divisions made the check cost more than the backward).
    Also returns ``k`` clamped into the plane: an index safe to touch whatever ``k`` was.
    """
    kk = min(max(k, np.int64(0)), plane - 1)
    q, w = _divmod_magic(kk, W, mw, sw)
    d, h = _divmod_magic(q, H, mh, sh)
    ok = (k == kk) & (d0 <= d) & (d < d1) & (h0 <= h) & (h < h1) & (w0 <= w) & (w < w1)
    return ok, kk


@numba.njit(inline="always")
def _first_flagged(bad, per):
    """Position ``r * per + bad[r]`` of the first unit ``r`` with a flag (``bad[r] >= 0``: its
    first flagged position of ``per``), or -1: found here, not by a second Python call."""
    for r in range(bad.size):
        if bad[r] >= 0:
            return r * per + bad[r]
    return np.int64(-1)


@numba.njit(**_BODY)
def _first_bad_chunk(ch, ind, ig, tab, dims, bad, nchunk):
    """Chunk ``ch`` of :func:`first_bad_index`: flags ``bad[r]`` for its output rows and
    returns the C-order position of its first bad index, or -1."""
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = axes_layout(dims)
    j0, jn, jc, jd, jh, jw = ig
    plane = D * H * W
    small = plane <= MAGIC_LIMIT
    mw, sw_ = _magic(W)
    mh, sh_ = _magic(H)
    r_lo, r_hi = _chunk(ch, nchunk, bad.size)
    oh, od, c, n = _unravel(r_lo, OH, OD, C)
    first = np.int64(-1)
    for r in range(r_lo, r_hi):
        d0, d1 = tab[sd + od], tab[ed + od]
        h0, h1 = tab[sh + oh], tab[eh + oh]
        jb = j0 + n * jn + c * jc + od * jd + oh * jh
        bad[r] = -1
        for ow in range(OW):
            k = np.int64(ind[np.uint64(jb + ow * jw)])
            w0, w1 = tab[sw + ow], tab[ew + ow]
            if small:
                ok, _ = _in_window_small(
                    k, plane, H, W, mh, sh_, mw, sw_, d0, d1, h0, h1, w0, w1
                )
            else:
                ok = index_in_window(k, H, W, d0, d1, h0, h1, w0, w1)
            if not ok:
                bad[r] = ow
                if first < 0:
                    first = r * OW + ow
                break
        oh, od, c, n = _step(oh, od, c, n, OH, OD, C)
    return first


@numba.njit(**_JIT)
def first_bad_index(at, ind, ig, tab, dims, bad, nchunk):
    """The C-order position of the first index outside its window, or -1.

    Each output row flags its first bad ow (``bad[r]``, one per ``(n, c, od, oh)``) in
    parallel; the first flag wins.
    """
    for ch in prange(nchunk):
        call(_first_bad_chunk, at, (np.int64(ch), ind, ig, tab, dims, bad, nchunk))
    return _first_flagged(bad, dims[7])


@numba.njit(**_BODY)
def _max_backward_chunk(ch, go, gog, ind, ig, gi, gig, tab, dims, rows_per_item, nchunk):
    """Chunk ``ch`` of :func:`max_pool_backward`."""
    N, C, D, H, W, OD, OH, OW = dims
    _, _, ld, hd, _, _, lh, hh, _, _, _, _ = axes_layout(dims)
    g0, gn, gc, gd, gh, gw = gog
    j0, jn, jc, jd, jh, jw = ig
    i0, in_, ic, id_, ih_, iw_ = gig
    nblk = (H + rows_per_item - 1) // rows_per_item
    total = N * C * D * nblk
    it_lo, it_hi = _chunk(ch, nchunk, total)
    blkbuf = scratch(go, rows_per_item * W)
    for k in range(blkbuf.size):
        blkbuf[k] = 0
    hits = np.empty(64, np.int64)  # the block's touched elements, to clear it again
    blk, d, c, n = _unravel(it_lo, nblk, D, C)
    for _ in range(it_lo, it_hi):
        h_first = blk * rows_per_item
        h_last = min(H, h_first + rows_per_item)
        nk = (h_last - h_first) * W
        gb = g0 + n * gn + c * gc
        jb = j0 + n * jn + c * jc
        k0 = (d * H + h_first) * W
        nhit = 0
        for od in range(tab[ld + d], tab[hd + d]):
            for oh in range(tab[lh + h_first], tab[hh + h_last - 1]):
                gr = gb + od * gd + oh * gh
                jr = jb + od * jd + oh * jh
                for ow in range(OW):
                    k = np.int64(ind[np.uint64(jr + ow * jw)]) - k0
                    if 0 <= k < nk:
                        blkbuf[np.uint64(k)] += get(go, gr + ow * gw)
                        if nhit == hits.size:
                            # element by element: a slice copy here fails Numba's array
                            # analysis once the buffer has grown twice (a SystemError)
                            grown = np.empty(2 * nhit, np.int64)
                            for t in range(nhit):
                                grown[t] = hits[t]
                            hits = grown
                        hits[nhit] = k
                        nhit += 1
        ib = i0 + n * in_ + c * ic + (d * id_ + h_first * ih_)
        if iw_ == 1 and ih_ == W:  # the block's rows are one run of memory
            store_row(gi, ib, 1, nk, blkbuf, 0)
        else:
            for h in range(h_last - h_first):
                store_row(gi, ib + h * ih_, iw_, W, blkbuf, h * W)
        for t in range(nhit):
            blkbuf[np.uint64(hits[t])] = 0
        blk, d, c, n = _step(blk, d, c, n, nblk, D, C)


@numba.njit(**_JIT)
def max_pool_backward(at, go, gog, ind, ig, gi, gig, tab, dims, rows_per_item, nchunk):
    """Gather: ``gi[i] = sum of go[o] over covering o with ind[o] == i``, in ascending o.

    A work item is ``rows_per_item`` input rows of one ``(n, c, d)`` slab. It visits each output
    row covering the block once, in ascending (od, oh, ow) order, and adds every gradient whose
    index lands in the block to a float block that starts at zero, and writes the block whole.
    Indices must have passed :func:`first_bad_index`: an index inside its window lands only in
    rows (and columns) its output cell covers, so this is exactly the per-element gather.
    """
    for ch in prange(nchunk):
        call(_max_backward_chunk, at, (
            np.int64(ch), go, gog, ind, ig, gi, gig, tab, dims, rows_per_item, nchunk
        ))


@numba.njit(**_BODY)
def _check_plane(src, b, m, mp, plane, W, H, rw, rh, lo, nn, keys):
    """``keys[q]``: index ``src[b + q]`` clamped into its plane plus the plane's offset in the
    group (``lo[3, q]``), for ``m`` outputs of consecutive planes of ``mp`` each; returns the
    first ``q`` whose index is outside its window (``lo[:3]``/``nn``: each output's window
    start and length per axis), or -1 (``keys`` is then complete).

    One loop over the outputs in int32 that vectorises, where the same check output by output,
    between the gradient additions, took 13 cycles an index. Planes of one row (1-D problems)
    compare the index itself (0.28 ns an index here); others divide through the float32
    reciprocals ``rw = 1 / W`` and ``rh = 1 / H`` (0.58 ns; 0.77-0.94 in float64, with half
    the vector lanes), exact for planes up to ``2**22`` elements: ``(k + 0.5) / W`` lies at
    least ``0.5 / W`` from an integer, and two roundings err by less than
    ``(k + 0.5) / W * 2**-23``. Compiled apart, not inlined: it touches no data, so every
    dtype shares it (one compile per index dtype), for one call per group of planes.

    Planes of one row with :data:`_CHECK_BY_PLANE` outputs or more are checked a plane at a
    time against the windows of the group's first plane: three table reads an index from L1
    rather than four from a group's tables in L2 (8x64x100 -> 300, 40 planes a group: max
    backward 1.04-1.14x in every dtype). Planes of several rows gained nothing so
    (the divisions bound their loop) and short planes lose the vector loop's length.
    """
    W32, H32 = np.int32(W), np.int32(H)
    zero, top = np.int32(0), np.int32(plane - 1)  # int32 bounds keep int32 indices int32
    first = np.int32(m)
    # (the loops below are written out: a helper returning each index's key and check kept
    # them from vectorising, 0.35-0.41x)
    if plane == W and mp >= _CHECK_BY_PLANE:
        n = np.int32(mp)
        for o in range(0, m, mp):
            off = np.int32(o // mp * plane)
            bad = n
            for q in range(mp):
                k = src[np.uint64(b + o + q)]
                kk = np.int32(min(max(k, zero), top))
                ok = (k == kk) & (np.uint32(kk - lo[2, q]) < np.uint32(nn[2, q]))
                keys[np.uint64(o + q)] = kk + off
                bad = min(bad, n if ok else np.int32(q))
            if bad < n:
                return o + bad
        return -1
    if plane == W:
        for q in range(m):
            k = src[np.uint64(b + q)]
            kk = np.int32(min(max(k, zero), top))
            ok = (k == kk) & (np.uint32(kk - lo[2, q]) < np.uint32(nn[2, q]))
            keys[q] = kk + lo[3, q]
            first = min(first, np.int32(m) if ok else np.int32(q))
        return -1 if first == m else np.int64(first)
    if plane == H * W:  # one d (2-D problems): the row is h, one division
        return _check_rows(src, b, m, W32, H32, rw, rh, lo, nn, keys, top, False)
    return _check_rows(src, b, m, W32, H32, rw, rh, lo, nn, keys, top, True)


#: Outputs a plane from which :func:`_check_plane` checks planes of one row one at a time.
_CHECK_BY_PLANE = 16


@numba.njit(inline="always")
def _check_rows(src, b, m, W32, H32, rw, rh, lo, nn, keys, top, deep):
    """:func:`_check_plane` for planes of several rows: ``r = k // W`` through ``rw``, then
    where ``deep`` ``(d, h)`` from ``r`` through ``rh`` (a constant at each call: the loop of
    2-D planes has one division and no d)."""
    zero, half = np.int32(0), np.float32(0.5)
    first = np.int32(m)
    for q in range(m):
        k = src[np.uint64(b + q)]
        kk = np.int32(min(max(k, zero), top))
        r = np.int32((np.float32(kk) + half) * rw)
        w = np.int32(kk - r * W32)
        d = np.int32((np.float32(r) + half) * rh) if deep else zero
        h = np.int32(r - d * H32)
        ok = (
            (k == kk)
            & (not deep or np.uint32(d - lo[0, q]) < np.uint32(nn[0, q]))
            & (np.uint32(h - lo[1, q]) < np.uint32(nn[1, q]))
            & (np.uint32(w - lo[2, q]) < np.uint32(nn[2, q]))
        )
        keys[q] = kk + lo[3, q]
        first = min(first, np.int32(m) if ok else np.int32(q))
    return -1 if first == m else np.int64(first)


@numba.njit(inline="always")
def _one_run(sd, sh, sw, D, H, W):
    """Whether a ``(D, H, W)`` block with these strides is one unit-stride run. The strides of
    axes of one element do not matter: 1-D and 2-D problems have them (a per-row copy and two
    divisions a plane took 40% of the sparse max backward on 64x512x49 -> 1)."""
    return (W == 1 or sw == 1) and (H == 1 or sh == W) and (D == 1 or sd == H * W)


@numba.njit(**_BODY)
def window_bounds(tab, dims, group):
    """``(lo, nn)`` for ``group`` consecutive planes, each of their outputs in C order:
    ``lo[:3]``/``nn`` the start and length of its window per axis, ``lo[3]`` its plane's offset
    in the group (int32: a group spans at most ``2**31`` elements)."""
    _, _, D, H, W, OD, OH, OW = dims
    sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = axes_layout(dims)
    m, plane = OD * OH * OW, D * H * W
    lo = np.empty((4, group * m), np.int32)
    nn = np.empty((3, group * m), np.int32)
    q = 0
    for t in range(group):
        for od in range(OD):
            for oh in range(OH):
                for ow in range(OW):
                    lo[0, q], nn[0, q] = tab[sd + od], tab[ed + od] - tab[sd + od]
                    lo[1, q], nn[1, q] = tab[sh + oh], tab[eh + oh] - tab[sh + oh]
                    lo[2, q], nn[2, q] = tab[sw + ow], tab[ew + ow] - tab[sw + ow]
                    lo[3, q] = t * plane
                    q += 1
    return lo, nn


@numba.njit(inline="always")
def _scatter_add(dst, base, keys, vals, n, merge):
    """``dst[base + keys[q]] += vals[q]`` for ``q < n`` in ascending order (``n >= 1``). With
    ``merge``, the gradients of consecutive outputs with the same key are added in a register:
    the same additions, without each waiting for the last one's store (upsampling along w,
    8x64x100 -> 300 float32: 48 -> 35 us, Zen 5). Elsewhere consecutive outputs rarely share
    an element, and the branch mispredicted: 64x512x14x14 -> 5x5 took 1.3-1.6x as long."""
    if not merge:
        for q in range(n):
            dst[np.uint64(base + keys[q])] += vals[q]
        return
    k = keys[0]
    t = dst[np.uint64(base + k)] + vals[0]
    for q in range(1, n):
        kq = keys[q]
        if kq != k:
            dst[np.uint64(base + k)] = t
            k = kq
            t = dst[np.uint64(base + k)]
        t += vals[q]
    dst[np.uint64(base + k)] = t


@numba.njit(**_BODY)
def _chain_sums(gi, ib, keys, vals, n):
    """``gi[ib + keys[q]] = +0.0 + the vals[q] of its run``, for runs of equal keys among the
    first ``n`` (``n >= 1``), added in ascending q in the accumulation type and encoded once:
    the sparse max backward's 16-bit sums where an element's outputs are consecutive. Compiled
    apart: inlined, it changed the code of the chunk's other loops (bfloat16 8x64x100 -> 300,
    which does not take it, 0.87-0.93x; float16 1.20x)."""
    z = acc(vals, 0)
    k = keys[0]
    t = z + vals[0]
    for q in range(1, n):
        kq = keys[q]
        if kq != k:
            put(gi, ib + k, t)
            k = kq
            t = z + vals[q]
        else:
            t += vals[q]
    put(gi, ib + k, t)


@numba.njit(inline="always")
def _planes_follow(sn, sc, size, N, C):
    """Whether planes of ``size`` elements with these sample and channel strides follow each
    other in memory, across samples too."""
    return (C == 1 or sc == size) and (N == 1 or sn == C * size)


@numba.njit(inline="always")
def _group_row(b, r, sc, sd, sh, OD, OH):
    """Where row ``r`` of a group's planes (``OD x OH`` rows each, the planes ``sc`` apart)
    starts, from ``b``."""
    t = r // (OD * OH)
    return b + t * sc + (r // OH - t * OD) * sd + (r % OH) * sh


def _gradients(go, gv, gb, direct):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(_gradients, inline="always")
def _gradients_impl(go, gv, gb, direct):
    """``(go, gb)``, the gradients in place, where ``direct`` and they need no decoding, else
    ``(gv, 0)``, their decoded copy (a compile-time choice for 16-bit ones, whose arrays'
    types differ)."""
    if go.dtype in (types.float32, types.float64):
        return lambda go, gv, gb, direct: (go, gb) if direct else (gv, np.int64(0))
    return lambda go, gv, gb, direct: (gv, np.int64(0))


@numba.njit(**_BODY)
def _sparse_chunk(ch, go, gog, ind, ig, gi, gig, dims, lo, nn, group, bad, write, disjoint,
                  nchunk):
    """Chunk ``ch`` of :func:`max_pool_backward_sparse`: returns the C-order position of its
    first bad index, or -1 (``bad`` is the kernel's, for the chunks' results)."""
    N, C, D, H, W, OD, OH, OW = dims
    g0, gn, gc, gd, gh, gw = gog
    j0, jn, jc, jd, jh, jw = ig
    i0, in_, ic, _, _, _ = gig
    m = OD * OH * OW
    plane = D * H * W
    dense = _one_run(jd, jh, jw, OD, OH, OW)  # a plane's indices are one run
    g_one = _one_run(gd, gh, gw, OD, OH, OW)
    # planes that follow each other in all three arrays: a group's indices and gradients are
    # one run each, and a group may span samples. Otherwise (channels-last gradients and
    # indices) a group stays in one sample, where the caller's result has its planes one after
    # the other, and its indices and gradients are copied plane after plane first
    follow = (dense and g_one and _planes_follow(jn, jc, m, N, C)
              and _planes_follow(gn, gc, m, N, C) and _planes_follow(in_, ic, plane, N, C))
    p_lo, p_hi = _chunk(ch, nchunk, N * C)
    group = min(group, p_hi - p_lo)  # scratch for the planes there are (tiny calls: one)
    j_copy = not (follow or (dense and (jc == m or group == 1)))
    g_copy = not (follow or (g_one and (gc == m or group == 1)))
    keys = np.empty(group * m, np.int32)
    run = np.empty(group * m if j_copy else 0, ind.dtype)
    direct = not (g_copy or decodes(go))  # 32- and 64-bit gradients of a run read in place
    gv = scratch(go, 0 if direct else group * m)
    # 16-bit planes whose windows overlap add into float sums. With an output per eight
    # elements or more, the group's sums are zeroed, then encoded whole (two vectorised
    # passes) instead of zeroing ``gi`` and encoding each output's element (three scalar
    # ones; bfloat16 64x512x14x14 -> 5x5, an output per 7.8 elements, 1.22-1.56 -> 1.00-1.09
    # ms, float16 0.93 -> 0.77, Zen 4; an output per 21, 8x128x8x14x14 -> 3x5x5, took 1.3x
    # as long whole); otherwise only the sums the group's outputs touch are zeroed. Disjoint
    # windows give an element one gradient at most: written straight (its sum from +0.0).
    # Along one axis an element's gradients come from consecutive outputs: its windows are
    # consecutive, and one between two that hold it holds nothing else (window o ends at
    # ceil((o + 1) * W / O), at most one past where o + 1 starts, so o + 1 starts at the
    # element or after it; likewise it ends at most one past where o + 2 starts). So planes of
    # one row whose outputs are one row too (outputs repeated along h or d would come back to
    # the element) keep each sum in a register, stored once its key changes, where they have
    # no more outputs than elements (upsampled, each element's store cost more than encoding
    # the planes whole: bfloat16 8x64x100 -> 300 0.86x)
    summed = decodes(gi) and not disjoint
    chain = summed and plane == W and m == OW <= W
    sums = scratch(go, group * plane if summed and write and not chain else 0)
    whole = summed and not chain and 8 * m >= plane
    found = np.int64(-1)
    rw, rh = np.float32(1.0 / W), np.float32(1.0 / H)
    p = p_lo
    n = p_lo // C
    c = p_lo - n * C
    while p < p_hi:
        B = min(group, p_hi - p) if follow else min(group, p_hi - p, C - c)
        ib = i0 + n * in_ + c * ic
        jb = j0 + n * jn + c * jc
        gb = g0 + n * gn + c * gc
        src, sb = ind, jb
        if j_copy:  # copied into one run first (one check call site: compile time)
            for r in range(B * OD * OH):
                rb = _group_row(jb, r, jc, jd, jh, OD, OH)
                for ow in range(OW):
                    run[r * OW + ow] = ind[np.uint64(rb + ow * jw)]
            src, sb = run, 0
        first = _check_plane(src, sb, B * m, m, plane, W, H, rw, rh, lo, nn, keys)
        if first >= 0 and found < 0:
            # the first bad index is all the call reports (the planes after its group are
            # still checked: the chunk's loop has no early exit)
            found = p * m + first
        if write:
            if whole:
                for k in range(B * plane):
                    sums[k] = 0
            else:
                for k in range(B * plane):
                    gi[np.uint64(ib + k)] = 0
            if first < 0:
                # the gradients decoded first, in unit-stride loops: a scalar float16 decode
                # between the additions chained each one to the last (10 cycles an index)
                # one call site, the group's run or a copied group's rows one at a time (a
                # loop nest of its own for the copy: 1.2x the compile, 1.05-1.15x as fast)
                if not direct:
                    for r in range(B * OD * OH if g_copy else 1):
                        rb = _group_row(gb, r, gc, gd, gh, OD, OH) if g_copy else gb
                        load_row(go, rb, gw if g_copy else 1, OW if g_copy else B * m,
                                 gv[r * OW :])
                vals, vo = _gradients(go, gv, gb, direct)
                # keys are offsets in the group: one loop over its outputs, in ascending order
                if disjoint:  # a store, not a load and an add: the same bits
                    z = acc(go, 0)
                    for q in range(B * m):
                        put(gi, ib + keys[q], z + vals[np.uint64(vo + q)])
                elif decodes(gi):
                    if whole:
                        _scatter_add(sums, 0, keys, gv, B * m, OW > W)
                    elif chain:
                        _chain_sums(gi, ib, keys, gv, B * m)
                    else:
                        for q in range(B * m):
                            sums[np.uint64(keys[q])] = 0
                        # each element's sum stored as it grows, its last store its whole
                        # sum: the additions and the stores one pass, not two
                        for q in range(B * m):
                            k = keys[q]
                            s = sums[np.uint64(k)] + gv[q]
                            sums[np.uint64(k)] = s
                            put(gi, ib + k, s)
                else:  # the result's own elements are float accumulators
                    _scatter_add(gi, ib, keys, vals[vo:], B * m, OW > W)
            if whole:
                store_row(gi, ib, 1, B * plane, sums, 0)
        p += B
        c += B  # (n, c) of the next group, dividing only where it wraps
        if c >= C:
            n, c = n + c // C, c % C
    return found


@numba.njit(**_JIT)
def max_pool_backward_sparse(
    at, go, gog, ind, ig, gi, gig, dims, lo, nn, group, bad, write, disjoint, nchunk
):
    """The max backward a plane at a time, for ``gi`` with dense planes (an element's address
    is its plane's plus its flat index): each plane is zeroed, then only its elements that
    receive a gradient are written.

    Returns the C-order position of the first index outside its window, or -1.

    A work item is ``group`` consecutive ``(n, c)`` planes where the result's planes follow
    each other (one check, one zeroing and one gradient load for many small planes; indices and
    gradients whose planes do not are copied plane after plane, and the group stays in its
    sample), else one plane. It first checks all its indices (:func:`_check_plane`; ``lo`` and ``nn`` are
    the windows' bounds of a group, :func:`window_bounds`): a group with an index outside its
    window is left zero, and no index is ever used unchecked; ``bad[ch]`` (at least ``nchunk``
    of them) takes chunk ch's first such position, or -1 (a flag per plane, scanned after the
    chunks, took 0.09 ms of 0.2 on bfloat16 64x512x49 -> 1, Zen 3). Without ``write``
    it stops there and ``gi`` is untouched (a caller's result is checked whole before any of it
    is written: 5x faster than the checked gather on 8x128x8x14x14). Gradients are then
    added in ascending output order: a float32 or float64 result is its own plane of
    accumulators; a 16-bit one adds into ``sums``, planes of float accumulators (zeroed where the
    item's outputs land, or, with an output per eight elements or more, zeroed whole and
    encoded whole; planes and outputs of one row, no more outputs than elements, keep each
    element's sum in a register instead, its outputs being consecutive), so each element's
    sum starts from +0.0 and takes its gradients in ascending output order: bit for bit the gather's result. Where the
    windows are ``disjoint`` (no element in two of them) an element takes one gradient at most,
    and the result is written straight, ``+0.0 + g`` (rounded once where 16-bit). Zeroing the
    planes here, just before the scattered writes, keeps their cache lines hot for them and
    spreads the fill over the threads (1.3-2x against a zeroed allocation). Planes must be at most
    ``2**22`` elements (:func:`_check_plane`).
    """
    for ch in prange(nchunk):
        bad[ch] = call(_sparse_chunk, at, (
            np.int64(ch), go, gog, ind, ig, gi, gig, dims, lo, nn, group, bad, write, disjoint,
            nchunk,
        ))
    # chunks in plane order: the first that found one has the first
    return _first_flagged(bad[:nchunk], 0)


#: The chunk function of each kernel: ``chunk(0, *args, 1)`` is ``kernel(*args, 1)`` on the
#: calling thread, with the same result (a chunk returns its first flagged position where the
#: kernel returns the first of all), without the parallel launch (2-3 us) or a compile of the
#: parfor. Each kernel is a ``prange`` loop over its chunk function, but a final reduction of
#: ``bad`` flags.
CHUNKS = {
    avg_pool_direct: _avg_direct_chunk,
    avg_pool_rowwise: _avg_rowwise_chunk,
    avg_pool_columns: _avg_columns_chunk,
    avg_pool_lanewise: _avg_lanewise_chunk,
    avg_pool_channels: _avg_channels_chunk,
    avg_pool_runs: _avg_runs_chunk,
    count_valid: _count_chunk,
    avg_pool_backward: _avg_backward_chunk,
    avg_pool_backward_lanes: _avg_backward_lanes_chunk,
    avg_pool_backward_runs: _avg_backward_runs_chunk,
    avg_pool_backward_columns: _avg_backward_columns_chunk,
    max_pool: _max_chunk,
    max_pool_runs: _max_runs_chunk,
    max_pool_channels: _max_channels_chunk,
    first_bad_index: _first_bad_chunk,
    max_pool_backward: _max_backward_chunk,
    max_pool_backward_sparse: _sparse_chunk,
}
