"""The max forward's kernels: one axis at a time keeping the first position of each
maximum, windows that are runs of memory one vectorised pass each, and channels-last runs."""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import overload

from ..windows import axes_layout
from .access import borrow, dec, key, key_nan, prefetch_run
from .calls import run_chunks
from .work import (
    LANES, OUTPUT_BUFFER, _BODY, _forward_item, _chunk, _interleave_band, _step,
    _output_buffer, _store_outputs, _unravel,
)


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
    x, y, ind, tab = borrow(x), borrow(y), borrow(ind), borrow(tab)
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


@numba.njit(**_BODY)
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
    run_chunks(_max_chunk, at, (
        x, xg, y, yg, ind, ig, tab, dims, rpi, part, tracked, skip, nchunk
    ), nchunk)


#: Runs of :func:`_run_argmax` up to this long are scanned element by element: with int64
#: keys (float64), windows of 1-3 took 1.3-2.2x as long in passes (Zen 5), windows of 7-8
#: 0.75-0.9x (Zen 4); since the passes find the first maximum by a vectorised minimum
#: (2026-12-06), windows of 3 0.89x, of 4 1.47-2.13x, of 5-6 1.56-1.66x (Zen 4)...
SHORT_RUN = 3
#: ... and with int32 keys (float32 and the 16-bit types), whose pass is one vectorised
#: maximum of key and position, from 2 elements on the pass is faster: windows of 2 1.7-1.9x
#: (32x512x50 -> 25, 64x512x51 -> 34), of 3 2.0-2.2x, of 4-8 2.2-4.9x (Zen 4)
SHORT_RUN_32 = 1


@numba.njit(inline="always")
def _run_argmax(x, b, n, skip):
    """The contract's maximum of the unit-stride run ``x[b:b+n]`` (``n < 2**31``): the offset
    of its first maximum key (:func:`_mkey`), or of its last NaN where a NaN wins (plain
    calls, rare: scanned backwards).

    int32 keys: one pass, a maximum of key and position as one int64 that LLVM vectorises
    (``k << 32 | ~i``: unlike :func:`_rank`, it has room for skipna's NaN key, the smallest
    int32). int64 keys: the largest key, then, in runs of more than 64, the first block of 64
    that holds it (a scalar search of the whole run made 3136-element windows 1.3x slower than
    :func:`max_pool`), then its first position there as a minimum of positions (all three
    vectorised; that block element by element took float64 runs of 15-64 elements 1.4-2.1x
    as long: 16x512x999 -> 50, 64x512x49 -> 1, 32x256x28x28 -> (None, 1)). Where a NaN wins,
    a second pass finds the last one (a scalar scan backwards took 2.6x the time of a skipna
    call on 16-element windows a tenth NaN). Runs of up to :data:`SHORT_RUN` elements (int32
    keys: :data:`SHORT_RUN_32`) are one scalar scan: the passes cost more to set up than they
    save there."""
    knan = key_nan(x)
    if n <= (SHORT_RUN_32 if knan == 0x7FFFFFFF else SHORT_RUN):
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
        i, e = 0, n
        if n > 64:  # the first block of 64 that holds it
            while True:
                e = min(i + 64, n)  # (a trip count known at run time only: not unrolled)
                hit = False
                for j in range(i, e):
                    hit |= _mkey(x, x[np.uint64(b + j)], skip) == m
                if hit:
                    break
                i = e
        f = e  # its first position there, a vectorised minimum
        for j in range(i, e):
            f = min(f, j if _mkey(x, x[np.uint64(b + j)], skip) == m else e)
        i = f
    if m == knan and skip is None:  # a NaN wins: the last one, in a pass that vectorises
        i = -1
        for j in range(n):
            i = max(i, j if _mkey(x, x[np.uint64(b + j)], skip) == m else -1)
    return i


@numba.njit(**_BODY)
def _max_runs_chunk(ch, x, xg, y, yg, ind, ig, tab, dims, skip, nchunk):
    """Chunk ``ch`` of :func:`max_pool_runs`."""
    x, y, ind, tab = borrow(x), borrow(y), borrow(ind), borrow(tab)
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


@numba.njit(**_BODY)
def max_pool_runs(at, x, xg, y, yg, ind, ig, tab, dims, skip, nchunk):
    """The max forward when every window is one contiguous run of memory: the windows of
    :func:`avg_pool_runs` (global pooling, (None, 1), ...) and windows along rows (each
    window one element deep in d and h: every 1-D problem); a work item is one output row.
    The same result as :func:`max_pool`, without its per-row position bookkeeping, which cost
    more than the comparisons on small planes (110 ns a 7x7 plane)."""
    run_chunks(_max_runs_chunk, at, (x, xg, y, yg, ind, ig, tab, dims, skip, nchunk), nchunk)


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
def _channel_max_row(x, xb, xd, xh, xw, d0, d1, h0, h1, H, W, ws, we, nc, P, at, v, g, y, yb,
                     yc, yw, ind, jb, jc, jw, skip, prefetch):
    """The maxima and their in-plane positions of one output row (windows ``ws[ow]`` to
    ``we[ow]`` in w) of ``nc`` channels adjacent in ``x``: element ``(d, h, w)`` of channel
    ``l`` at ``x[xb + d * xd + h * xh + w * xw + l]``, position ``(d * H + h) * W + w``. Kept
    ``g`` outputs at a time in ``at`` and ``v`` (``g * P`` each), then stored. Compiled apart,
    once for its two call sites (the copied band and ``x`` itself have one type): inlined at
    both, it took 40% of the kernel's compile (float32 and bfloat16, both index dtypes: 51.2
    -> 37.6 s), at the same speed (A/B 0.96-1.01x).

    With ``prefetch`` (``x`` read from memory), each element's channels are prefetched for
    the next window of the row as this window's are compared: the window's rows are runs of
    memory that start anew at every window, which the hardware's prefetcher left waiting on
    each (float32 channels-last 32x256x56x56 -> 7x7 2.07x, 8x256 1.28x, skipna 1.75x,
    float16 2.16x, float64 1.11x; Zen 5)."""
    OW = ws.size
    for ow in range(OW):
        w0, w1 = ws[ow], we[ow]
        # (elements ``nxt`` apart in the next window; none after the row's last)
        nxt = (ws[ow + 1] - w0) * xw if prefetch and ow + 1 < OW else 0
        b = xb + d0 * xd + h0 * xh + w0 * xw
        r0 = np.int32((d0 * H + h0) * W + w0)
        k = ow % g
        vk, ak = v[k * P : k * P + nc], at[k * P : k * P + nc]
        for l in range(nc):
            # the first element as it is: what folding it into a smallest key gives (a skipna
            # NaN too: the window of NaN only keeps its first element)
            ak[l], vk[l] = r0, x[np.uint64(b + l)]
        for d in range(d0, d1):
            for h in range(h0, h1):
                b = xb + d * xd + h * xh
                q = np.int32((d * H + h) * W)
                for w in range(w0 + 1 if d == d0 and h == h0 else w0, w1):
                    if nxt:  # the same element's channels in the next window
                        prefetch_run(x, b + w * xw + nxt, nc)
                    _fold_channels(x, b + w * xw, nc, ak, vk, q + np.int32(w), skip)
        if k == g - 1 or ow == OW - 1:
            _store_outputs(y, yb, yc, yw, v, P, nc, ow - k, k + 1)
            _store_outputs(ind, jb, jc, jw, at, P, nc, ow - k, k + 1)


@numba.njit(**_BODY)
def _max_channels_chunk(ch, x, xg, y, yg, ind, ig, tab, dims, block, skip, prefetch, nchunk):
    """Chunk ``ch`` of :func:`max_pool_channels`."""
    x, y, ind, tab = borrow(x), borrow(y), borrow(ind), borrow(tab)
    N, C, D, H, W, OD, OH, OW = dims
    _, _, _, _, _, _, _, _, sw, ew, _, _ = axes_layout(dims)
    _, _, xc, xd, xh, xw = xg
    yc, yw = yg[2], yg[5]
    j0, jn, jc, jd, jh, jw = ig
    CB = -(-C // block)
    P = block
    # the maxima of up to ``g`` outputs of a row, stored together (_store_outputs)
    g = max(1, min(OW, OUTPUT_BUFFER // P))
    size = _output_buffer(g, P)
    at = np.empty(size, np.int32)  # the in-plane index of each channel's maximum
    v = np.empty(size, x.dtype)  # and its value as stored
    ws = tab[sw : sw + OW]
    we = tab[ew : ew + OW]
    # planes whose channels are not adjacent (C order): each block's whole planes copied side
    # by side first (as they are, 16-bit ones not decoded), for all of its output rows
    copied = xc != 1
    band = np.empty(P * D * H * W if copied else 0, x.dtype)
    poff = np.empty(LANES, np.int64)
    last = -1  # the block of planes that ``band`` holds
    r_lo, r_hi = _chunk(ch, nchunk, N * OD * OH * CB)
    if copied:
        oh, od, cb, n = _unravel(r_lo, OH, OD, CB)
    else:  # blocks of channels vary fastest: consecutive items read the same window rows
        cb, oh, od, n = _unravel(r_lo, CB, OH, OD)
    for _ in range(r_lo, r_hi):
        d0, d1, h0, h1, c0, xb, yb, _, nc = _forward_item(tab, dims, xg, yg, P, oh, od, cb, n)
        jb = j0 + n * jn + c0 * jc + od * jd + oh * jh
        if copied:
            if n * CB + cb != last:
                last = n * CB + cb
                _interleave_band(x, xb, xc, nc, xd, xh, 0, D, 0, H, W, band, poff, P)
            _channel_max_row(band, 0, H * W * P, W * P, P, d0, d1, h0, h1, H, W, ws, we, nc,
                             P, at, v, g, y, yb, yc, yw, ind, jb, jc, jw, skip, False)
            oh, od, cb, n = _step(oh, od, cb, n, OH, OD, CB)
        else:
            _channel_max_row(x, xb, xd, xh, xw, d0, d1, h0, h1, H, W, ws, we, nc, P, at, v, g,
                             y, yb, yc, yw, ind, jb, jc, jw, skip, prefetch)
            cb, oh, od, n = _step(cb, oh, od, n, CB, OH, OD)


@numba.njit(**_BODY)
def max_pool_channels(at, x, xg, y, yg, ind, ig, tab, dims, block, skip, prefetch, nchunk):
    """The max forward of inputs whose channels are adjacent in memory (``xc == 1``:
    PyTorch's channels-last layout): up to ``block`` channels at a time, each
    window element a unit-stride run of them, compared channel by channel in the contract's
    scan order (d, h, w ascending; a value is taken when its key is larger, or, in plain
    calls, when it is NaN), keeping each channel's value and in-plane index (int32). A work
    item is one output row of a block of channels. :func:`max_pool` reads such an input one
    channel at a time, an element of each cache line (float32 channels-last 4-15x slower than
    PyTorch's channels-last kernels).

    Small C-order planes of unit-stride rows (``xc != 1``: the backend's
    ``_lanewise_block``) take it too: each block of ``block`` planes is copied side by side
    once, as it is, for all of its output rows (then blocks vary slowest), and its rows are
    compared as channels (float32 4x512x14x14 -> 5x5 3.0x, float64 3.9x, 16-bit 3.7x against
    :func:`max_pool`, one plane at a time; Zen 4). With ``prefetch``, channels-last inputs
    are prefetched a window ahead (:func:`_channel_max_row`)."""
    run_chunks(_max_channels_chunk, at, (
        x, xg, y, yg, ind, ig, tab, dims, block, skip, prefetch, nchunk
    ), nchunk)
