"""Counts of the numbers (non-NaN elements) in each window: the NaN-skipping average
backward's divisors, counted in a pass of their own (:func:`count_valid`) or an output row at
a time by the gathers (:func:`_count_row`)."""

from __future__ import annotations

import numba
import numpy as np

from ..windows import axes_layout
from .access import borrow, get, keep
from .calls import run_chunks
from .lanes import add_numbers, count_bits, count_ones, number_bits, number_word
from .work import LANES, _BODY, _chunk, _step, _unravel, _window_extent


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
    x, cnt, tab = borrow(x), borrow(cnt), borrow(tab)
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = axes_layout(dims)
    x0, xn, xc, xd, xh, xw = xg
    P = LANES if planes else 1
    CB = (C + P - 1) // P
    r_lo, r_hi = _chunk(ch, nchunk, N * CB * OD * OH)
    ws = tab[sw : sw + OW]
    we = tab[ew : ew + OW]
    col = np.zeros(0 if planes else W, np.int32)
    depth, height = _window_extent(tab, dims)
    bits = np.empty(depth * height * LANES if planes else 0, np.int64)
    cw = np.empty(LANES, np.int32)
    spans = _word_spans(ws, we, W, True)
    owners = (col, bits, cw, spans)  # views without counts (access.keep)
    col, bits, cw, spans = borrow(owners)
    wbits = spans[2]  # (planes: rows of at most 64)
    oh, od, cb, n = _unravel(r_lo, OH, OD, CB)
    for _ in range(r_lo, r_hi):
        d0, d1, h0, h1 = tab[sd + od], tab[ed + od], tab[sh + oh], tab[eh + oh]
        if planes:  # a bit per element of the band's rows, popcounts of the windows' columns
            c0 = cb * LANES
            nl = min(LANES, C - c0)
            rows = (d1 - d0) * (h1 - h0)
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
    keep(owners)


@numba.njit(**_BODY)
def count_valid(at, x, xg, cnt, tab, dims, planes, nchunk):
    """``cnt[o]``: how many elements of window ``o`` are not NaN (C order of the outputs): the
    divisors of the NaN-skipping average backward. Counts are exact integers, so any order
    serves. A work item is one output row: its band's rows added into int32 column counts
    (vectorised), then each window's columns summed; or, with ``planes`` (unit-stride rows of
    at most 64 elements, planes of fewer than 2**31), one output row of ``LANES`` planes: a
    bit mask per row and plane, then each window's popcounts, the planes side by side."""
    run_chunks(_count_chunk, at, (x, xg, cnt, tab, dims, planes, nchunk), nchunk)
