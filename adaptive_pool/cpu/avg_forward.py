"""The average forward's kernels: five loop orders (window by window, row by row, columns
side by side, 8 planes side by side, channels-last runs) and contiguous runs, all in the
contract's lane order (see :mod:`.kernels`)."""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import overload

from ..windows import axes_layout
from .access import (
    NATIVE_MASKS, acc, borrow, decodes, enc, get, keep, load_row, prefetch_to, put, scratch,
    store_row,
)
from .calls import run_chunks
from .lanes import add_block, add_planes, add_segment, rows_sum, run_sum, vector_runs
from .work import (
    LANES, OUTPUT_BUFFER, RUN_OUTPUTS, SUM_LANES, _BODY, _forward_item, _chunk,
    _interleave_band, _output_buffer, _plane_offsets, _step, _store_outputs, _stream, _unravel,
    _window_extent,
)


#: How far ahead of its reads the average forward over contiguous windows, one an item
#: (global pooling, whole rows), prefetches its input, in bytes: a window's sum is short work,
#: so more lines must be on their way than the 2 KiB of other streams (Zen 4: float32
#: 128x2048x7x7 -> 1x1 0.89 -> 0.68 ms, float64 2.28 -> 1.95, float64 32x256x28x28 -> (None,
#: 1) 0.89 -> 0.69; the rows of 1-D windows and the NaN-skipping backward's reads were
#: 0.86-0.95x as fast 8 KiB ahead).
WINDOWS_AHEAD = 8192


#: The fewest channels a work item of the channels-last average (:func:`avg_pool_channels`)
#: takes side by side, a unit-stride run of them each window element, where the backend splits
#: the channels to give every thread work. Otherwise an item takes them all: longer runs are
#: read closer to memory speed (128 -> 256, medians of seven alternated rounds on Zen 4: float32
#: 32x256x56x56 -> 7x7 9.7 -> 7.6 ms, float16 64x512x14x14 -> 5x5 2.84 -> 2.24, float64 18.0
#: -> 13.6; 256 -> all of them: see ``cpu/backend.py``, ``_channel_block``).
CHANNEL_BLOCK = 256


@numba.njit(inline="always")
def _run_add(src, b, step, n, lanes, L, cnt, skip):
    """Add ``src[b + j * step]`` (decoded, ``j < n``) into ``lanes[(L + j) % 32]``, the window's
    elements from its position ``L`` on; returns the next position's lane and ``cnt`` plus the
    elements added. With :data:`SKIPNA`, NaN adds +0.0 instead (a lane is never -0.0: the same
    bits as not adding) and is not counted. A unit-stride run is vector code
    (:func:`~adaptive_pool.cpu.lanes.add_segment`)."""
    if step == 1 and _rows_in_place(src):
        L, k = _add_segment(lanes, L, src, b, n, skip)
        return L, cnt + k
    j = 0
    while j < n:
        m = min(n - j, SUM_LANES - L)
        bj = b + j * step
        if skip is not None:
            z = acc(src, 0)
            for i in range(m):
                v = get(src, bj + i * step)
                ok = v == v
                lanes[np.uint64(L + i)] += v if ok else z
                cnt += np.int64(ok)
        else:
            for i in range(m):
                lanes[np.uint64(L + i)] += get(src, bj + i * step)
            cnt += m
        j += m
        L = (L + m) & (SUM_LANES - 1)
    return L, cnt


def _add_segment(lanes, L, src, b, n, skip):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(_add_segment, inline="always")
def _add_segment_impl(lanes, L, src, b, n, skip):
    """:func:`~adaptive_pool.cpu.lanes.add_segment` where it reads ``src``'s storage; elsewhere
    (float16 without F16C) a stand-in that types, for code that :func:`_rows_in_place` keeps
    from running."""
    if vector_runs(src.dtype):
        return lambda lanes, L, src, b, n, skip: add_segment(lanes, L, src, b, n, skip)
    return lambda lanes, L, src, b, n, skip: (L, np.int64(0))


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


@numba.njit(**_BODY)
def _avg_direct_chunk(ch, x, xg, y, yg, tab, dims, skip, nchunk):
    """Chunk ``ch`` of :func:`avg_pool_direct`."""
    x, y, tab = borrow(x), borrow(y), borrow(tab)
    N, C, D, H, W, OD, OH, OW = dims
    _, _, _, _, _, _, _, _, sw, ew, _, _ = axes_layout(dims)
    _, _, xc, xd, xh, xw = xg
    yw = yg[5]
    r_lo, r_hi = _chunk(ch, nchunk, N * C * OD * OH)
    ws = tab[sw : sw + OW]
    we = tab[ew : ew + OW]
    s = scratch(x, OW)
    lanes = scratch(x, SUM_LANES)
    in_place = _rows_in_place(x) and xw == 1
    depth, height = _window_extent(tab, dims)
    band = scratch(x, depth * height * W if decodes(x) and not in_place else 0)
    owners = (s, lanes, band)  # views without counts (access.keep)
    s, lanes, band = borrow(owners)
    # a C-contiguous input is read in memory order: prefetched as one stream
    end = _contiguous_end(xg, dims) if in_place else 0
    pf = 0
    oh, od, c, n = _unravel(r_lo, OH, OD, C)
    for _ in range(r_lo, r_hi):
        d0, d1, h0, h1, _, xb, yb, _, _ = _forward_item(tab, dims, xg, yg, 1, oh, od, c, n)
        if in_place:  # unit-stride rows, summed (and decoded) in registers
            b = xb + d0 * xd + h0 * xh
            pf = prefetch_to(x, max(pf, b), b + (d1 - d0 - 1) * xd + (h1 - h0) * xh, end)
            for ow in range(OW):
                w0 = ws[ow]
                nd, nh, nw = _runs_of(d1 - d0, h1 - h0, we[ow] - w0, W, xd, xh, xw)
                t, k = _sum_rows(x, b + w0, nw, nh, xh, nd, xd, skip)
                s[ow] = _mean(x, t, k)
        else:
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
    keep(owners)


@numba.njit(**_BODY)
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
    run_chunks(_avg_direct_chunk, at, (x, xg, y, yg, tab, dims, skip, nchunk), nchunk)


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
    x, y, tab = borrow(x), borrow(y), borrow(tab)
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
    owners = (row, lanes, pos, cnt, s)  # views without counts (access.keep)
    row, lanes, pos, cnt, s = borrow(owners)
    # the masked loads of add_segment need x prefetched (us, float32 8x64x224x224 -> 6x6 plain
    # / skipna, two threads, Zen 5: the scalar adds 2980 / 4300, with the prefetches 3311 /
    # 4090, vector adds alone 8294 / 8443, both 2078 / 2613): a C-contiguous input as one
    # stream, other rows of unit stride a row ahead (rows 240 apart: 7108 / 9270 without, 2352
    # / 2716 with; contiguous rows a row ahead 1976 / 2677, float64 112x112 -> 4x4 1.04-1.2x
    # slower than the stream)
    end, pf = _contiguous_end(xg, dims), 0
    oh, od, c, n = _unravel(r_lo, OH, OD, C)
    for _ in range(r_lo, r_hi):
        d0, d1, h0, h1, _, xb, yb, vdh, _ = _forward_item(tab, dims, xg, yg, 1, oh, od, c, n)
        for ow in range(OW):
            o = ow * SUM_LANES
            _zero(lanes[o : o + SUM_LANES], min(vdh * (we[ow] - ws[ow]), SUM_LANES))
            pos[ow] = 0
            cnt[ow] = 0
        for d in range(d0, d1):
            for h in range(h0, h1):
                b = xb + d * xd + h * xh
                if end:
                    pf = prefetch_to(x, max(pf, b), b + W, end)
                elif xw == 1 and (h + 1 < h1 or d + 1 < d1):  # the band's next row
                    nb = b + xh if h + 1 < h1 else xb + (d + 1) * xd + h0 * xh
                    prefetch_to(x, nb, nb + W, nb + W, 0)
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
    keep(owners)


@numba.njit(**_BODY)
def avg_pool_rowwise(at, x, xg, y, yg, tab, dims, skip, nchunk):
    """The average forward for long windows: each input row of the band is read once, in
    order, adding its segment to every window's lanes at the window's running position
    (16-bit rows decoded once): a streaming read where the direct loop jumps between rows.
    A window that is one row ((None, 1)) is one vectorised pass over it."""
    run_chunks(_avg_rowwise_chunk, at, (x, xg, y, yg, tab, dims, skip, nchunk), nchunk)


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
    x, y, tab = borrow(x), borrow(y), borrow(tab)
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
    owners = (a, row, cnt)  # views without counts (access.keep)
    a, row, cnt = borrow(owners)
    z = acc(x, 0)
    oh, od, c, n = _unravel(r_lo, OH, OD, C)
    for _ in range(r_lo, r_hi):
        d0, d1, h0, h1, _, xb, yb, vdh, _ = _forward_item(tab, dims, xg, yg, 1, oh, od, c, n)
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
    keep(owners)


@numba.njit(**_BODY)
def avg_pool_columns(at, x, xg, y, yg, tab, dims, skip, nchunk):
    """The average forward for windows one column wide (``OW == W``: (1, None) and the like):
    every column of an output row's band side by side. Element k of a window is its k-th band
    row, so band row k is added whole into row ``k % 32`` of a ``32 x W`` accumulator (one
    vectorised loop along the contiguous row) and the halving steps combine whole rows."""
    run_chunks(_avg_columns_chunk, at, (x, xg, y, yg, tab, dims, skip, nchunk), nchunk)


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
    same way. ``at``: scratch of 24. A lane holds ``e_r + e_(r + rows)``, not the contract's
    ``(0.0 + e_r) + e_(r + rows)``: the two differ only where both elements are -0.0, and
    then only in the sign of a zero, which the caller's ``sum + 0.0`` sets right (a lane that
    starts at +0.0 never holds -0.0, nor does a sum of such lanes): 8 of 23 additions fewer,
    16-bit 64x512x14x14 -> 5x5 1.07-1.10x.

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
        l0 = (u0 if k0 else z) + (t0 if m0 else z)
        l4 = (u4 if k4 else z) + (t4 if m4 else z)
        l2 = (u2 if k2 else z) + (t2 if m2 else z)
        l6 = (u6 if k6 else z) + (t6 if m6 else z)
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
        l1 = (u1 if k1 else z) + (t1 if m1 else z)
        l5 = (u5 if k5 else z) + (t5 if m5 else z)
        l3 = (u3 if k3 else z) + (t3 if m3 else z)
        l7 = (u7 if k7 else z) + (t7 if m7 else z)
        a[np.uint64(q + l)] = a[np.uint64(q + l)] + ((l1 + l5) + (l3 + l7))
        if skip is not None:
            c1, c5 = np.int32(k1) + np.int32(m1), np.int32(k5) + np.int32(m5)
            c3, c7 = np.int32(k3) + np.int32(m3), np.int32(k7) + np.int32(m7)
            cnt[np.uint64(q + l)] += (c1 + c5) + (c3 + c7)


@numba.njit(inline="always")
def _output_group(x, OW, P):
    """How many outputs of a row the channels-last average keeps before storing them: float64
    means of up to ``OUTPUT_BUFFER // P`` outputs, then each channel's stored together into a
    C-order result (a row's 512 channel planes of 25 outputs span 100 KB there, and one output
    of each went to a line of its own: 64x512x14x14 -> 5x5 1.12-1.17x, skipna 1.14x), and
    those of other dtypes where :data:`RUN_OUTPUTS` or more are stored as runs of channels
    through transposes in registers (float32, 16-bit 14x14 -> 5x5 1.14-1.23x, 28x28 -> 7x7
    1.20-1.27x). Stored one element at a time, narrower results lost by it (float32 0.97x,
    16-bit 0.66-0.81x): their planes stay in L1."""
    g = max(1, min(OW, OUTPUT_BUFFER // P))
    return g if x.itemsize == 8 or (NATIVE_MASKS and g >= RUN_OUTPUTS) else 1


@numba.njit(inline="always")
def _channel_window(src, xb, xd, xh, xw, d0, d1, h0, h1, w0, w1, nc, P, a, cnt, eo, at, o,
                    skip):
    """``o[:nc]``: the means (encoded in ``o``'s dtype) of window ``[d0, d1) x [h0, h1) x [w0,
    w1)`` of ``nc`` channels adjacent in ``src``, element ``(d, h, w)`` of channel ``l`` at
    ``src[xb + d * xd + h * xh + w * xw + l]``. Scratch: ``a`` (and with :data:`SKIPNA`
    ``cnt``) of ``SUM_LANES * P``, row r the contract's lane r of every channel; ``eo`` and
    ``at`` for :func:`_channel_eight`."""
    z = acc(src, 0)
    vol = (d1 - d0) * (h1 - h0) * (w1 - w0)
    rows = _rows_in_use(vol)
    # eight lanes at a time in registers (_channel_eight), their sums in rows; other windows
    # each element into its lane's row
    eight = 8 < vol <= 2 * SUM_LANES
    k = 0
    for d in range(d0, d1):
        for h in range(h0, h1):
            b = xb + d * xd + h * xh
            for w in range(w0, w1):
                if eight:
                    eo[k] = b + w * xw
                else:
                    _channel_run(src, b + w * xw, nc, a, cnt, (k & (rows - 1)) * P, k < rows,
                                 skip)
                k += 1
    filled = rows // 8 if eight else rows
    if eight:
        for i in range(filled):
            _channel_eight(src, eo, i, filled, rows, vol, nc, a, i * P, at, cnt, skip)
    _combine(a, P, filled)
    if skip is not None:
        _combine(cnt, P, filled)
    # the means encoded in a contiguous pass (vectorised), stored by the caller (float16
    # 64x512x14x14 -> 5x5: a third of the time in scalar divisions and conversions before);
    # + 0.0: the sign of a zero sum, which the lanes leave (_channel_eight)
    for l in range(nc):
        o[l] = enc(o, _mean(src, a[l] + z, cnt[l] if skip is not None else vol))


@numba.njit(**_BODY)
def _avg_channels_chunk(ch, x, xg, y, yg, tab, dims, block, skip, nchunk):
    """Chunk ``ch`` of :func:`avg_pool_channels`."""
    x, y, tab = borrow(x), borrow(y), borrow(tab)
    N, C, D, H, W, OD, OH, OW = dims
    _, _, _, _, _, _, _, _, sw, ew, _, _ = axes_layout(dims)
    _, _, _, xd, xh, xw = xg
    yc, yw = yg[2], yg[5]
    CB = -(-C // block)
    P = block
    a = scratch(x, SUM_LANES * P)
    cnt = np.empty(SUM_LANES * P if skip is not None else 0, np.int32)
    g = _output_group(x, OW, P)
    o = np.empty(_output_buffer(g, P), x.dtype)
    eo = np.empty(2 * SUM_LANES, np.int64)  # a window's elements (_channel_eight)
    at = np.empty(24, np.int64)  # and those of eight of its lanes
    owners = (a, cnt, o, eo, at)  # views without counts (access.keep)
    a, cnt, o, eo, at = borrow(owners)
    ws = tab[sw : sw + OW]
    we = tab[ew : ew + OW]
    r_lo, r_hi = _chunk(ch, nchunk, N * OD * OH * CB)
    # blocks of channels vary fastest: consecutive items read the same window rows
    cb, oh, od, n = _unravel(r_lo, CB, OH, OD)
    for _ in range(r_lo, r_hi):
        d0, d1, h0, h1, _, xb, yb, _, nc = _forward_item(tab, dims, xg, yg, P, oh, od, cb, n)
        for ow in range(OW):
            k = ow % g
            _channel_window(x, xb, xd, xh, xw, d0, d1, h0, h1, ws[ow], we[ow], nc, P, a, cnt,
                            eo, at, o[k * P :], skip)
            # stored at the result's channel stride by a loop of its own: through
            # _store_outputs, one output at a time, 2.0-2.5x as long (float32 and 16-bit)
            if g == 1:
                yo = yb + ow * yw
                for l in range(nc):
                    y[np.uint64(yo + l * yc)] = o[l]
            elif k == g - 1 or ow == OW - 1:
                _store_outputs(y, yb, yc, yw, o, P, nc, ow - k, k + 1)
        cb, oh, od, n = _step(cb, oh, od, n, CB, OH, OD)
    keep(owners)


@numba.njit(inline="always")
def _channel_run(x, e, nc, a, cnt, q, first, skip):
    """Add ``x[e:e+nc]`` (one window element of ``nc`` channels) into row ``q`` of the lanes
    ``a`` (and, with :data:`SKIPNA`, its non-NaN count into ``cnt``). A lane's ``first``
    element is stored as it is, not added to a lane of +0.0: no pass zeroing the rows, no load
    of them (float16 64x512x14x14 -> 5x5 spent 15% in memset); that differs only in the sign
    of a zero, which the caller's ``sum + 0.0`` sets right (see :func:`_channel_eight`)."""
    z = acc(x, 0)
    if first:
        for l in range(nc):
            v = get(x, e + l)
            if skip is not None:
                ok = v == v  # (a NaN keeps its lane's place and adds nothing)
                a[np.uint64(q + l)] = v if ok else z
                cnt[np.uint64(q + l)] = np.int32(ok)
            else:
                a[np.uint64(q + l)] = v
    else:
        for l in range(nc):
            v = get(x, e + l)
            if skip is not None:
                ok = v == v
                a[np.uint64(q + l)] += v if ok else z
                cnt[np.uint64(q + l)] += np.int32(ok)
            else:
                a[np.uint64(q + l)] += v


@numba.njit(**_BODY)
def avg_pool_channels(at, x, xg, y, yg, tab, dims, block, skip, nchunk):
    """The average forward of inputs whose channels are adjacent in memory (``xc == 1``:
    PyTorch's channels-last layout): ``block`` channels at a time, each
    window element a unit-stride run of them added into its lane's row of a ``32 x
    block`` accumulator (the contract's lane order, per channel), then the halving
    steps on whole rows; windows of 9-64 elements take eight lanes at a time in registers
    (:func:`_channel_eight`). A work item is one output row of a block of channels. The
    8-plane order read such an input 8 channels at a time, a half cache line (float32
    channels-last 64x512x14x14 -> 5x5 7.0 ms against PyTorch's 1.71)."""
    run_chunks(_avg_channels_chunk, at, (x, xg, y, yg, tab, dims, block, skip, nchunk), nchunk)


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


@numba.njit(**_BODY)
def _avg_lanewise_chunk(ch, x, xg, y, yg, tab, dims, band_limit, block, skip, nchunk):
    """Chunk ``ch`` of :func:`avg_pool_lanewise`."""
    x, y, tab = borrow(x), borrow(y), borrow(tab)
    N, C, D, H, W, OD, OH, OW = dims
    _, _, _, _, _, _, _, _, sw, ew, _, _ = axes_layout(dims)
    _, _, xc, xd, xh, xw = xg
    yc, yw = yg[2], yg[5]
    P = block
    CB = (C + P - 1) // P
    r_lo, r_hi = _chunk(ch, nchunk, N * CB * OD * OH)
    ws = tab[sw : sw + OW]
    we = tab[ew : ew + OW]
    a = scratch(x, SUM_LANES * P)
    # int32 counts (the backend sends windows of 2**31 elements or more elsewhere): one
    # vector of 8 beside the 8 sums, where int64 took two; a row of them per lane, like the
    # sums, so that no addition waits on the last one's count (one row: 2x the plain time)
    cnt = np.empty(SUM_LANES * P, np.int32)
    # more than LANES planes a block (the backend's choice where they are copied whole):
    # summed as the channels of a channels-last input (_channel_window), a row's means then
    # stored each plane's together
    wide = P > LANES
    o = np.empty(_output_buffer(OW, P) if wide else 0, x.dtype)
    eo = np.empty(2 * SUM_LANES if wide else 0, np.int64)
    at = np.empty(24 if wide else 0, np.int64)
    poff = np.empty(LANES, np.int64)
    # copies of unit-stride rows are interleaved (the block's planes' elements side by side)
    inter = _rows_in_place(x) and xw == 1
    # the largest copy an item makes: whole planes (the last block's fewest), or a window's
    # band where not float64
    depth, height = _window_extent(tab, dims)
    band = scratch(x, P * W * max(D * H if (C - (CB - 1) * P) * D * H * W <= band_limit else 0,
                                  depth * height if _narrow(x) else 0))
    owners = (a, cnt, o, eo, at, poff, band)  # views without counts (access.keep)
    a, cnt, o, eo, at, poff, band = borrow(owners)
    # inputs of a few MiB, likely in the cache already, are not prefetched
    big = N * C * D * H * W * x.itemsize > _PREFETCHED_INPUT
    end = _contiguous_end(xg, dims) if big else 0
    pf = 0
    last = -1  # the block of planes (n * CB + cb) that ``band`` holds whole
    oh, od, cb, n = _unravel(r_lo, OH, OD, CB)
    for _ in range(r_lo, r_hi):
        d0, d1, h0, h1, _, xb, yb, vdh, nl = _forward_item(tab, dims, xg, yg, P, oh, od, cb, n)
        # planes that fit band_limit are copied whole, once for all their output rows; other
        # bands are copied each time (float64 ones are read in place: _narrow)
        whole = nl * D * H * W <= band_limit
        copy = whole or _narrow(x)
        bd0, bd1, bh0, bh1 = (0, D, 0, H) if whole else (d0, d1, h0, h1)
        blk = n * CB + cb
        ndec = 0 if whole and blk == last else nl
        last = blk if whole else -1
        side = copy and inter
        if side:
            if whole and ndec > 0:  # the next block's planes are read next: fetched now
                pf = prefetch_to(x, max(pf, xb + nl * xc), xb + 2 * P * xc, end)
            bx, bb, bd, bh, bw = _interleave_band(
                x, xb, xc, ndec, xd, xh, bd0, bd1, bh0, bh1, W, band, poff, P
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
        if wide:
            for ow in range(OW):
                _channel_window(bx, bb, bd, bh, bw, e0, e1, f0, f1, ws[ow], we[ow], nl, P, a,
                                cnt, eo, at, o[ow * P :], skip)
            _store_outputs(y, yb, yc, yw, o, P, nl, 0, OW)
        else:
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
    keep(owners)


@numba.njit(**_BODY)
def avg_pool_lanewise(at, x, xg, y, yg, tab, dims, band_limit, block, skip, nchunk):
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
    in float64 (Zen 5).

    With ``block`` above ``LANES`` (unit-stride rows copied whole: the backend's
    ``_lanewise_block``), a work item takes that many planes, copied side by side 8 at a time
    (element i of plane l at ``block * i + l``), and sums them as the channels of a
    channels-last input (:func:`_channel_window`, the channels-last order's code): a window's
    bookkeeping, which 8 planes left at 20-30 cycles an element, is paid once for up to 128
    (float32 4x512x14x14 -> 5x5 2.2x, 64x512x14x14 -> 5x5 1.3x, bfloat16 2.0x, float64 1.4x;
    Zen 4)."""
    run_chunks(_avg_lanewise_chunk, at, (
        x, xg, y, yg, tab, dims, band_limit, block, skip, nchunk
    ), nchunk)


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


@numba.njit(**_BODY)
def _avg_runs_chunk(ch, x, xg, y, yg, tab, dims, skip, prefetch, nchunk):
    """Chunk ``ch`` of :func:`avg_pool_runs`."""
    x, y, tab = borrow(x), borrow(y), borrow(tab)
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


@numba.njit(**_BODY)
def avg_pool_runs(at, x, xg, y, yg, tab, dims, skip, prefetch, nchunk):
    """The average forward when every window is one contiguous run of memory: global pooling
    of contiguous planes (``OD == OH == OW == 1``), windows that are whole rows (``OD == D``,
    ``OH == H``, ``OW == 1``: (None, 1)), and windows along rows (``OD == D``, ``OH == H``: every
    1-D problem), ``xw == 1``. A work item is one window, or one row of windows: a lane-order
    sum at memory speed with no per-row bookkeeping (:func:`_run_sum`)."""
    run_chunks(_avg_runs_chunk, at, (x, xg, y, yg, tab, dims, skip, prefetch, nchunk), nchunk)
