"""The average backward's kernels: gathers that add each input's covering output cells in
ascending order (row blocks of a plane, 8 planes side by side, windows that are runs of
memory, windows one column wide), plain or NaN-skipping."""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import overload

from ..windows import axes_layout
from .access import (
    acc, borrow, decodes, enc, get, keep, load_row, prefetch_run, prefetch_to, put, scratch,
    store_numbers, store_row,
)
from .calls import run_chunks
from .lanes import (
    add_numbers, copy_numbers, count_bits, count_ones, fill_run, number_word, plane_numbers,
    plane_row_words, run_count, run_fill, share_planes, store_bits, store_planes, sum_blocks,
    vector_runs,
)
from .nan_counts import WORDS_LIMIT, _count_row, _word_spans
from .work import (
    LANES, _BODY, _chunk, _item_outputs, _slab_planes, _step, _stream, _unravel,
    _window_extent,
)


#: The 8-planes backward stores a block of planes as one run (``seq`` in
#: :func:`_avg_backward_lanes_chunk`) where it holds at most this many elements and the result
#: more than :data:`SEQ_RESULT` bytes. Out of the cache, one stream of stores beats eight
#: interleaved ones (float32 64x512x14x14 -> 5x5 1.05-1.24x); blocks of 28x28 planes (25 KB)
#: no longer fit L1 beside the rows (0.77x), and results in the cache lose the extra pass
#: (4x16x28x28 -> 7x7 and 8x64x100 -> 300, 0.88-0.90x).
SEQ_BLOCK = 2048
SEQ_RESULT = 4 << 20

#: Bytes of x in a block of 8 planes above which the NaN-skipping 8-planes backward of 32-
#: and 64-bit inputs spreads its prefetches of the next block over the rows it sums (a row's
#: share each) rather than issuing them all as the item starts, which stalled it until enough
#: of them had come. Zen 5, 2 threads, A/B on the same arrays: float32 128x1024x7x7 -> 3x3
#: (1568-byte blocks) 1.13-1.34x, 64x512x14x14 -> 5x5 1.11-1.14x, 64x512x10x10 -> 3x3
#: 1.03-1.27x, float64 1.00-1.11x; bfloat16 7x7 planes (784 bytes) 0.96-0.99x and 10x10 and
#: 14x14 0.98x, so 16-bit inputs keep the burst.
SPREAD_BLOCK = 1024

#: The largest work item (bytes of x) whose NaN-skipping average backward prefetches the next
#: item's x while it stores its own (see :func:`_avg_backward_chunk`).
PREFETCH_ITEM = 64 << 10


@numba.njit(inline="always")
def _rings(tab, dims, on):
    """``(depth, planes)``: the slabs of the deepest window of d and the most output planes a
    slab lies in (1 and 1 unless ``on``), the slabs' bit words and the planes' counts that a
    gather counting windows of d deeper than one keeps (a ring of each)."""
    if not on:
        return 1, 1
    _, _, ld, hd, _, _, _, _, _, _, _, _ = axes_layout(dims)
    return _window_extent(tab, dims)[0], _slab_planes(tab, ld, hd, dims[2])


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
def _in_order(ws, we, W):
    """Whether the windows ``[ws, we)`` lie in a row of ``W``, none empty, each starting after
    the last one's start and at most one column before its end (as adaptive windows of fewer
    outputs than inputs do): a column lies in two windows at most, consecutive ones."""
    ok = ws[0] >= 0 and we[ws.size - 1] <= W
    for ow in range(ws.size):
        ok &= we[ow] > ws[ow] and (ow == 0 or (ws[ow] > ws[ow - 1] and ws[ow] >= we[ow - 1] - 1))
    return ok


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
    go, gi, tab, x, cnt = borrow(go), borrow(gi), borrow(tab), borrow(x), borrow(cnt)
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, ld, hd, sh, eh, lh, hh, sw, ew, lw, hw = axes_layout(dims)
    g0, gn, gc, gd, gh, gw = gog
    i0, in_, ic, id_, ih_, iw_ = gig
    nblk = (H + rows_per_item - 1) // rows_per_item
    it_lo, it_hi = _chunk(ch, nchunk, N * C * D * nblk)
    g, row, rowd = scratch(go, OW), scratch(go, W), scratch(go, W)
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
    depth, lring = _rings(tab, dims, fused and nblk == 1)
    od_next = d_next = 0
    ws = tab[sw : sw + OW]
    we = tab[ew : ew + OW]
    # fewer windows than columns, in order inside the row (a Dask block's may reach outside
    # it), rows of 16 or more: on shorter rows the columns' sums were as fast or faster
    # (float64 2x3x5x9x10 -> 2x4x3 1.08x, 2x3x9x10 -> 4x3 1.06x against adds over windows;
    # 0.98-1.07x against the stores below on rows of 10-14)
    spread = 16 <= W and OW < W and _in_order(ws, we, W)
    col = np.zeros(W if fused else 0, np.int32)
    spans = _word_spans(ws, we, W, fused)
    # rows at unit stride, items holding every row of their windows (for ``depth`` slabs):
    # each row's numbers as bit words, the windows counted from the words,
    # and the rows stored where their bits are set (x read once, no counts in memory; float32
    # 16x64x64x64 -> 9x11 1.36x, bfloat16 32x256x56x56 -> 7x7 1.66x, Zen 4), up to
    # WORDS_LIMIT words an item
    R = depth * rows_per_item
    words = np.empty(R * ((W + 63) // 64) if fused and xw == 1 and iw_ == 1
                     and R * ((W + 63) // 64) <= WORDS_LIMIT else 0, np.int64)
    erow = np.empty(W if words.size and decodes(gi) else 0, gi.dtype)
    # the partial rows and the counts sized once for any item: grown in the loop, they took an
    # atomic count and dropped one every item, and so did each scratch array an inlined helper
    # took (a third of bfloat16 32x256x56x56 -> 7x7's NaN-skipping call, one thread, Zen 5);
    # the views without counts below do not. ``part`` and ``lc`` keep theirs (as such views,
    # the float32 8x64x224x224 -> 6x6 NaN-skipping call took 1.15x as long), ``part`` lent as
    # one where a variable takes it or ``row`` row by row
    planes, nh_most = _item_outputs(tab, ld, hd, lh, hh, D, H, rows_per_item)
    part = scratch(go, planes * nh_most * W)
    lc = np.empty(lring * nh_most * OW if fused else 0, np.int64)
    owners = (g, row, rowd, col, spans, words, erow)
    g, row, rowd, col, spans, words, erow = borrow(owners)
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
            if fused:
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
                            # volume as the integer product, converted once (bit-identical);
                            # the row's tables (``we``, ``ws``) by an index LLVM knows is not
                            # negative: read as vectors, where ``tab[ew + ow]`` took a gather
                            # (float32 4x64x64x64 -> 9x11 1.07x, float64 1.10x, one thread)
                            g[ow] = g[ow] / acc(go, vdh * (we[ow] - ws[ow]))
                    q = ((od - od0) * nh + (oh - oh0)) * W
                    if one_w:
                        for w in range(W):
                            part[np.uint64(q + w)] = acc(go, 0) + g[np.uint64(wl[w])]
                    elif spread:
                        # each window's share stored over its columns in ascending ow, +0.0
                        # plus it, and the column it shares with the last window (at most
                        # one) given the sum of both: each column's sum in the order below, a
                        # vector store a window rather than a scalar chain a column (float32
                        # 1x4x13x43x57 -> 3x21x7 1.33-1.38x, 16x64x64x64 -> 9x11 1.20-1.22x),
                        # masked (stores, not adds into the row: 1.15x float32, 1.23x
                        # float64, 1.12-1.37x bfloat16, 1.25x float16 on 16x64x64x64 -> 9x11)
                        z = acc(go, 0)
                        end, last = 0, z
                        for ow in range(OW):
                            s = g[np.uint64(ow)]
                            w0 = ws[ow]
                            if w0 > end:  # (columns in no window)
                                fill_run(part, q + end, w0 - end, z)
                            fill_run(part, q + w0, we[ow] - w0, z + s)
                            if w0 < end:
                                part[np.uint64(q + w0)] = last + s
                            end, last = we[ow], z + s
                        fill_run(part, q + end, W - end, z)
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
                pf = _store_words(gi, ib, ih_, borrow(part), row, rowd, W, tab, lh, hh,
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
                src, so = row, 0
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
    keep(owners)


@numba.njit(**_BODY)
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
    run_chunks(_avg_backward_chunk, at, (
        go, gog, gi, gig, tab, dims, rows_per_item, x, xg, cnt, skip, nchunk
    ), nchunk)


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
    go, gi, tab, x = borrow(go), borrow(gi), borrow(tab), borrow(x)
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


@numba.njit(**_BODY)
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
    run_chunks(_avg_backward_runs_chunk, at, (
        go, gog, gi, gig, tab, dims, x, xg, skip, prefetch, nchunk
    ), nchunk)


@numba.njit(**_BODY)
def _avg_backward_columns_chunk(ch, go, gog, gi, gig, tab, dims, x, xg, skip, prefetch, nchunk):
    """Chunk ``ch`` of :func:`avg_pool_backward_columns`."""
    go, gi, tab, x = borrow(go), borrow(gi), borrow(tab), borrow(x)
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, _, _, sh, eh, _, _, _, _, _, _ = axes_layout(dims)
    g0, gn, gc, gd, gh, gw = gog
    i0, in_, ic, id_, ih_, _ = gig
    x0, xn, xc, xd, xh, _ = xg
    r_lo, r_hi = _chunk(ch, nchunk, N * C * OD * OH)
    share = scratch(go, W)
    eshare = np.empty(W if decodes(gi) else 0, gi.dtype)
    col = np.empty(W if skip is not None else 0, np.int32)
    z = acc(go, 0)
    # with ``prefetch``, items of whole planes of x in one stream: the next plane prefetched as
    # the rows are stored, a row of it for each (see the backend's _from_memory)
    plane = D * H * W
    _, pf, end = _stream(xg, dims, plane, r_lo, r_hi, prefetch and OD * OH == 1)
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
        if decodes(gi):
            # 16-bit shares encoded once, not once a row of the band (bfloat16 4x64x8x28x28 ->
            # (1, None, None) 1.9-2.0x, 32x256x28x28 -> (1, None) 1.2-1.8x), with skipna copied
            # where x holds numbers (copy_numbers)
            store_row(eshare, 0, 1, W, share, 0)
        for d in range(d0, d1):
            for h in range(h0, h1):
                b = ib + d * id_ + h * ih_
                if skip is not None:
                    if end:  # (unguarded, in-cache calls took 1.15x as long)
                        pf = prefetch_to(x, pf, xb + d * xd + (h + 1) * xh, end,
                                         plane * x.itemsize)
                    if decodes(gi):
                        copy_numbers(gi, b, eshare, 0, x, xb + d * xd + h * xh, W)
                    else:
                        store_numbers(gi, b, 1, W, share, 0, x, xb + d * xd + h * xh, 1)
                elif decodes(gi):
                    for w in range(W):
                        gi[np.uint64(b + w)] = eshare[w]
                else:
                    store_row(gi, b, 1, W, share, 0)
        oh, od, c, n = _step(oh, od, c, n, OH, OD, C)


@numba.njit(**_BODY)
def avg_pool_backward_columns(at, go, gog, gi, gig, tab, dims, x, xg, skip, prefetch, nchunk):
    """The average backward for windows one column wide (``OW == W``) that tile ``D`` and
    ``H`` (each input row in exactly one output row's band), rows of unit stride in ``gi`` (and
    ``x``): ``(1, None)``, ``(1, None, None)`` and the like. A work item is one output row: its
    ``W`` shares (``+0.0 + go / volume``, or with :data:`SKIPNA` ``/ count`` of each column's
    numbers in the band, counted in one vector pass over the band's rows), stored into each
    row of the band (with :data:`SKIPNA`, +0.0 where ``x`` is NaN): the bits of
    :func:`avg_pool_backward`'s gather, whose element takes the one share of its one window.
    With ``prefetch`` (and :data:`SKIPNA`), whole planes of a C-contiguous ``x`` are
    prefetched a plane ahead."""
    run_chunks(_avg_backward_columns_chunk, at, (
        go, gog, gi, gig, tab, dims, x, xg, skip, prefetch, nchunk
    ), nchunk)


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
def _plane_bit_counts(x, xb, xd, xl, H, W, w0, d0, d1, ring, hs, he, wbits, bits, cw, cb, cwt,
                      words):
    """``cw[cb + (oh * OW + ow) * LANES + l]``: the numbers in window ``(oh, ow)`` of slabs
    ``[d0, d1)`` of the volume at ``xb + xl[l]`` (slab ``d`` at ``d * xd``; rows of ``W <= 64``
    at unit stride, planes that are runs): a bit mask per row, made for slabs ``w0 <= d < d1``
    (the others' are in ``bits``, ``ring`` slabs kept), then popcounts of the windows' columns
    (``wbits``), the ``LANES`` planes side by side, slab by slab (``cwt``: scratch of one
    slab's counts where windows are deeper). Once per output plane: compiled once rather than
    inlined (compile time)."""
    OW = wbits.size
    for d in range(w0, d1):
        plane_row_words(bits, (d % ring) * H * LANES, x, xb + d * xd, xl, H, W, words)
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
                cw[np.uint64(cb + k)] += cwt[np.uint64(k)]


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
def _avg_backward_lanes_chunk(ch, go, gog, gi, gig, tab, dims, x, xg, cnt, skip, prefetch,
                              nchunk):
    """Chunk ``ch`` of :func:`avg_pool_backward_lanes`."""
    go, gi, tab, x, cnt = borrow(go), borrow(gi), borrow(tab), borrow(x), borrow(cnt)
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, ld, hd, sh, eh, lh, hh, sw, ew, lw, hw = axes_layout(dims)
    g0, gn, gc, gd, gh, gw = gog
    i0, in_, ic, id_, ih_, iw_ = gig
    CB = (C + LANES - 1) // LANES
    WL = W * LANES
    plane_run = iw_ == 1 and ih_ == W  # each plane's rows (per d) are one run of memory
    it_lo, it_hi = _chunk(ch, nchunk, N * CB * D)
    gv = scratch(go, OW * LANES)
    part = scratch(go, _slab_planes(tab, ld, hd, D) * OH * WL)
    rows = scratch(go, H * WL)
    rowd = scratch(go, WL)
    # 16-bit results: rows encoded before they are stored (all of them where planes are runs)
    enc_rows = np.empty((H if plane_run else 1) * WL if decodes(gi) else 0, gi.dtype)
    lane = np.empty(LANES, np.int64)
    ioff = np.arange(LANES) * ic  # the planes of a whole block in the result
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
    # C-order results of one d larger than the cache is likely to hold, whose block of 8 small
    # planes is one run: transposed into ``blk`` (in L1) and stored in one unit-stride pass
    # rather than 8 interleaved ones (with skipna, where x's 8 planes are one run too, +0.0 at
    # its NaN in the same pass)
    one_run = (plane_run and ic == H * W and LANES * H * W <= SEQ_BLOCK
               and gi.size * gi.itemsize > SEQ_RESULT)
    x_seq = one_run and skip is not None and not mask and xc == H * W
    seq = one_run and (x_seq or not decodes(gi))
    boff = np.arange(LANES) * (H * W)
    blk = scratch(go, LANES * H * W if seq else 0)
    okv = np.empty(H * WL if mask else 0, np.int32)
    colc = np.empty(WL if fused and not (x_bits or x_count) else 0, np.int32)
    colp = np.zeros(W if x_count else 0, np.int32)
    lcnt = np.empty(OW if x_count else 0, np.int64)
    ws = tab[sw : sw + OW]
    we = tab[ew : ew + OW]
    # windows deeper than one (bit counts only): each output plane's counted once, at the first
    # slab that needs them, as in _avg_backward_chunk (``lring`` planes of counts kept, the
    # bits of ``depth`` slabs)
    depth, lring = _rings(tab, dims, x_bits)
    od_next = d_next = 0
    cw = np.empty(lring * OH * OW * LANES if fused else 0, np.int32)
    cwt = np.empty(OH * OW * LANES if depth > 1 else 0, np.int32)
    bits = np.empty(depth * H * LANES if x_bits else 0, np.int64)
    words = np.empty(((H * W + 63) // 64 + 1) * LANES if x_bits else 0, np.int64)
    spans = _word_spans(ws, we, W, x_bits or x_count)
    z = acc(go, 0)
    z_enc = enc(gi, z)
    wl = tab[lw : lw + W]
    wh = tab[hw : hw + W]
    # views without counts (access.keep): 1.05-1.17x on 14x14 -> 5x5, plain or NaN-skipping
    owners = (gv, part, rows, rowd, enc_rows, lane, ioff, cl, xl, boff, blk, okv, colc, colp,
              lcnt, cw, cwt, bits, words, spans)
    (gv, part, rows, rowd, enc_rows, lane, ioff, cl, xl, boff, blk, okv, colc, colp, lcnt, cw,
     cwt, bits, words, spans) = borrow(owners)
    wbits = spans[2]  # (read where x_bits: rows of at most 64)
    _, d, cb, n = _unravel(it_lo, 1, D, CB)
    # with skipna, C-order blocks of 8 small planes (at most SEQ_BLOCK elements, 2-D) read x
    # as one stream: prefetched an item ahead (one thread, float32 64x512x14x14 -> 5x5
    # 1.11-1.15x, 64x512x10x10 -> 3x3 1.22-1.42x, 128x1024x7x7 -> 3x3 1.11-1.27x, bfloat16
    # 1.13-1.25x, Zen 5; blocks of 28x28 planes took 1.01-1.11x as long so). A block of more
    # than SPREAD_BLOCK bytes is prefetched a row of it at a time as the rows are summed: a
    # burst of its lines at the item's start stalled until enough of them had come (see
    # SPREAD_BLOCK)
    pf = x0 + n * xn + cb * LANES * xc
    pf_end = x0 + N * C * H * W if (x_run and D == 1 and xc == H * W and (N == 1 or xn == C * H * W)
                                    and LANES * H * W <= SEQ_BLOCK) else 0
    ahead = LANES * H * W * x.itemsize
    spread = pf_end != 0 and x.itemsize >= 4 and ahead > SPREAD_BLOCK
    # with ``prefetch`` (x from memory), slabs of deeper planes that count their own windows:
    # each plane of the next item's prefetched as the same plane of this one is stored (in
    # the loop over rows of sums, the 2-D calls took 1.05-1.19x as long: its code)
    slabs = prefetch and fused and x_run and D > 1
    # an item's gradients, 8 planes of one run, prefetched as it starts where they are 512
    # bytes to 4 KiB: the shares' loads of them waited otherwise (one thread, float32
    # 64x512x14x14 -> 5x5 NaN-skipping 4.5 -> 4.0 ms; A/B, two threads: 1.12-1.18x, float64
    # 1.25-1.30x, plain 1.02-1.13x; 288 bytes (-> 3x3) and 31 KiB (16x64x33x36 -> 36x27)
    # 0.92-0.99x, Zen 5)
    g_ahead = gw == 1 and gc == OD * OH * OW and 512 <= LANES * gc * go.itemsize <= 4096
    nxb = nnl = 0
    for it in range(it_lo, it_hi):
        c0 = cb * LANES
        nl = min(LANES, C - c0)
        for l in range(LANES):
            lane[l] = min(l, nl - 1) * gc
            cl[l] = min(l, nl - 1) * (OD * OH * OW)
            xl[l] = min(l, nl - 1) * xc
        xv = x0 + n * xn + c0 * xc
        xb = xv + d * xd
        pf = prefetch_to(x, pf, xb if spread else xb + LANES * H * W, pf_end, ahead)
        if g_ahead and d == 0:
            prefetch_run(go, g0 + n * gn + c0 * gc, nl * OD * OH * OW)
        if slabs:  # the next item's planes (none after the last sample)
            _, d_n, cb_n, n_n = _step(0, d, cb, n, 1, D, CB)
            nxb = x0 + n_n * xn + cb_n * LANES * xc + d_n * xd
            nnl = min(LANES, C - cb_n * LANES) if n_n < N else 0
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
                                      (od % lring) * OH * OW * LANES, cwt, words)
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
                        # (the 8 planes' counts a vector: scalar adds were 15% of
                        # 8x64x100 -> 300's call)
                        for ow in range(OW):
                            sum_blocks(cw, (oh * OW + ow) * LANES, colc, ws[ow], we[ow])
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
                    # each column's shares added from +0.0 in ascending ow, the 8 planes a
                    # vector held in a register (8-element loops over arrays LLVM could not tell
                    # apart, and no SLP vectoriser, stayed scalar: a quarter of float32
                    # 64x512x14x14 -> 5x5)
                    q = ((od - od0) * OH + oh) * WL
                    for w in range(W):
                        sum_blocks(part, q + w * LANES, gv, wl[w], wh[w])
        ib = i0 + n * in_ + c0 * ic + d * id_
        if fresh or mask:
            for h in range(H):
                if spread:
                    pf = prefetch_to(x, pf, xb + (h + 1) * WL, pf_end, ahead)
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
                if seq:
                    store_planes(blk, 0, boff, rows, 0, H * W)
                    if x_seq:
                        store_numbers(gi, ib, 1, LANES * H * W, blk, 0, x, xb, 1)
                    else:
                        store_row(gi, ib, 1, LANES * H * W, blk, 0)
                else:
                    _store_lane_rows(gi, ib, ioff, rows, enc_rows, H * W)
            else:
                # each plane stored as one run: 1.4x (float32) to 2x (bfloat16) on 7x7 planes
                # against stores interleaved over the LANES planes, row by row
                for l in range(nl):
                    for k in range(H * W):
                        put(gi, ib + l * ic + k, rows[np.uint64(k * LANES + l)])
            if skip is not None and not mask and not (x_seq and nl == LANES):
                for l in range(nl):  # NaN inputs get +0.0
                    run_fill(gi, ib + l * ic, x, xb + xl[l], H * W, None, z_enc)
                    if l < nnl:  # (slabs) the next item's plane l
                        prefetch_run(x, nxb + l * xc, H * W)
        else:
            for h in range(H):
                row = rows[h * WL :]
                if decodes(gi):  # encoded in one unit-stride loop: vectorised, 1.4x for bf16
                    store_row(enc_rows, 0, 1, WL, row, 0)
                    _scatter_lanes(gi, ib + h * ih_, ic, iw_, W, nl, enc_rows)
                else:
                    _scatter_lanes(gi, ib + h * ih_, ic, iw_, W, nl, row)
        _, d, cb, n = _step(0, d, cb, n, 1, D, CB)
    keep(owners)


@numba.njit(**_BODY)
def avg_pool_backward_lanes(at, go, gog, gi, gig, tab, dims, x, xg, cnt, skip, prefetch,
                            nchunk):
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
    read. C-order blocks of 2-D planes prefetch the next block of ``x`` (:data:`SPREAD_BLOCK`);
    with ``prefetch``, slabs of deeper planes that count their windows prefetch the next
    item's slabs.
    """
    run_chunks(_avg_backward_lanes_chunk, at, (
        go, gog, gi, gig, tab, dims, x, xg, cnt, skip, prefetch, nchunk
    ), nchunk)
