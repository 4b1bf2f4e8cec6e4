"""The max backward's kernels: the index check of the contract, the checked gather, and the
sparse kernel that zeroes each plane of its own result and writes only the elements that
receive a gradient."""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import overload

from ..windows import axes_layout, index_in_window
from .access import acc, borrow, dec, decodes, get, keep, load_row, put, scratch, store_row
from .calls import run_chunks
from .work import _BODY, _chunk, _first_flagged, _item_outputs, _step, _unravel


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


@numba.njit(**_BODY)
def _first_bad_chunk(ch, ind, ig, tab, dims, bad, nchunk):
    """Chunk ``ch`` of :func:`first_bad_index`: flags ``bad[r]`` for its output rows and
    returns the C-order position of its first bad index, or -1."""
    ind, tab, bad = borrow(ind), borrow(tab), borrow(bad)
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


@numba.njit(**_BODY)
def first_bad_index(at, ind, ig, tab, dims, bad, nchunk):
    """The C-order position of the first index outside its window, or -1.

    Each output row flags its first bad ow (``bad[r]``, one per ``(n, c, od, oh)``) in
    parallel; the first flag wins.
    """
    run_chunks(_first_bad_chunk, at, (ind, ig, tab, dims, bad, nchunk), nchunk)
    return _first_flagged(bad, dims[7])


@numba.njit(**_BODY)
def _max_backward_chunk(ch, go, gog, ind, ig, gi, gig, tab, dims, rows_per_item, nchunk):
    """Chunk ``ch`` of :func:`max_pool_backward`."""
    go, ind, gi, tab = borrow(go), borrow(ind), borrow(gi), borrow(tab)
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
    # the block's touched elements, to clear it again: at most one an output it meets
    planes, rows = _item_outputs(tab, ld, hd, lh, hh, D, H, rows_per_item)
    hits = np.empty(planes * rows * OW, np.int64)
    owners = (blkbuf, hits)  # (views without counts: see access.keep)
    blkbuf, hits = borrow(owners)
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
    keep(owners)


@numba.njit(**_BODY)
def max_pool_backward(at, go, gog, ind, ig, gi, gig, tab, dims, rows_per_item, nchunk):
    """Gather: ``gi[i] = sum of go[o] over covering o with ind[o] == i``, in ascending o.

    A work item is ``rows_per_item`` input rows of one ``(n, c, d)`` slab. It visits each output
    row covering the block once, in ascending (od, oh, ow) order, and adds every gradient whose
    index lands in the block to a float block that starts at zero, and writes the block whole.
    Indices must have passed :func:`first_bad_index`: an index inside its window lands only in
    rows (and columns) its output cell covers, so this is exactly the per-element gather.
    """
    run_chunks(_max_backward_chunk, at, (
        go, gog, ind, ig, gi, gig, tab, dims, rows_per_item, nchunk
    ), nchunk)


@numba.njit(**_BODY)
def _check_plane(src, b, m, mp, plane, W, H, rw, rh, lo, nn, keys):
    """``keys[q]``: index ``src[b + q]`` plus its plane's offset in the group (``lo[3, q]``),
    for ``m`` outputs of consecutive planes of ``mp`` each; returns the first ``q`` whose
    index is outside its window (``lo[:3]``/``nn``: each output's window start and length per
    axis), or -1 (``keys`` is then complete: every key inside the group; a group with a bad
    index is not written, so its keys are never used).

    Indices are not clamped into the plane first. An index ``k`` is taken as its int32 ``kk``
    (``k == kk`` rejects a 64-bit one that does not fit); the quotients ``r`` and ``d`` may be
    anything for a wrong one, but the remainders ``w = kk - r * W`` and ``h = r - d * H`` are
    exact modulo ``2**32``, so an index that passes the three window tests is congruent modulo
    ``2**32`` to ``(d * H + h) * W + w``, an index inside the window, and, being an int32,
    equal to it. Without the clamp (three of some 30 vector instructions a block of 16) the
    check of float32 4x64x8x28x28 -> (1, None, None) took 27 us instead of 38 (one thread,
    Zen 5); ``tests/test_errors.py`` tries wrapping, rounding and neighbouring values.

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
                kk = np.int32(k)
                ok = (k == kk) & (np.uint32(kk - lo[2, q]) < np.uint32(nn[2, q]))
                keys[np.uint64(o + q)] = kk + off
                bad = min(bad, n if ok else np.int32(q))
            if bad < n:
                return o + bad
        return -1
    if plane == W:
        for q in range(m):
            k = src[np.uint64(b + q)]
            kk = np.int32(k)
            ok = (k == kk) & (np.uint32(kk - lo[2, q]) < np.uint32(nn[2, q]))
            keys[q] = kk + lo[3, q]
            first = min(first, np.int32(m) if ok else np.int32(q))
        return -1 if first == m else np.int64(first)
    if plane == H * W:  # one d (2-D problems): the row is h, one division
        return _check_rows(src, b, m, W32, H32, rw, rh, lo, nn, keys, False)
    return _check_rows(src, b, m, W32, H32, rw, rh, lo, nn, keys, True)


#: Outputs a plane from which :func:`_check_plane` checks planes of one row one at a time:
#: below it, the flat loop over a group's outputs (a minimum reduced across the vector and a
#: branch per plane cost more than a plane's few table reads save). A/B, Zen 4, the same
#: bits, 16 -> 64: 8x256x40 -> 16, 20, 26 1.11-1.49x, 2x512x22 -> 26 1.09-1.18x, 8x256x60
#: -> 33 1.00-1.09x, 48 and 60 outputs 0.97-1.06x, 100 and more unchanged.
_CHECK_BY_PLANE = 64


@numba.njit(inline="always")
def _check_rows(src, b, m, W32, H32, rw, rh, lo, nn, keys, deep):
    """:func:`_check_plane` for planes of several rows: ``r = k // W`` through ``rw``, then
    where ``deep`` ``(d, h)`` from ``r`` through ``rh`` (a constant at each call: the loop of
    2-D planes has one division and no d)."""
    zero, half = np.int32(0), np.float32(0.5)
    first = np.int32(m)
    for q in range(m):
        k = src[np.uint64(b + q)]
        kk = np.int32(k)
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


@numba.njit(inline="always")
def _merged(OW, W, plane):
    """Whether :func:`_scatter_add` adds the gradients of consecutive outputs with one key in a
    register: upsampling along rows (planes of one row), or along w by 2 or more in planes of
    several rows (several outputs a column). Planes of several rows upsampled by less share
    few keys between consecutive windows, whose maxima lie in different rows or columns:
    merged, 8x512x5x53 -> 1x61 took 1.7-2.2x as long and 8x64x10x100 -> 10x150 1.5-2.0x (Zen
    4); rows of one row upsampled by 1.5-2 (8x64x100 -> 150, 199) took 0.8-0.9x the time."""
    return OW > W and (plane == W or 2 * W <= OW)


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


def _value(a, v):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(_value, inline="always")
def _value_impl(a, v):
    """``v``, an element of ``a``, decoded where ``a`` holds 16-bit floats (indices as they are)."""
    if isinstance(a.dtype, types.Integer) and a.dtype.bitwidth > 16:
        return lambda a, v: v
    return lambda a, v: dec(a, v)


@numba.njit(**_BODY)
def _copy_group(src, b, sc, sd, sh, sw, B, OD, OH, OW, dst, runs):
    """``dst[t * m + (od * OH + oh) * OW + ow] = src[b + t * sc + od * sd + oh * sh + ow * sw]``
    (decoded where 16-bit floats; ``m = OD * OH * OW``) for the ``B`` planes ``t`` of a group:
    a group's indices or gradients made one run. Where the planes are adjacent (``sc == 1``,
    channels-last) each output's ``B`` planes are read as one run into ``runs`` (scratch of
    ``dst``'s dtype, ``B * m`` elements), then transposed; otherwise a row at a time.
    Counters, not divisions, locate the rows (three divisions a row, and a slice of ``dst``,
    took float16 channels-last 64x512x14x14 -> 5x5 to 1.6x the time of C order). Compiled
    apart: inlined at its two call sites, the chunk took 0.6 s longer to compile."""
    m = OD * OH * OW
    if sc == 1 and B > 1:
        q = 0
        for od in range(OD):
            for oh in range(OH):
                rb = b + od * sd + oh * sh
                for ow in range(OW):
                    o = rb + ow * sw
                    for t in range(B):
                        runs[np.uint64(q * B + t)] = _value(src, src[np.uint64(o + t)])
                    q += 1
        for t in range(B):  # transposed: unit-stride stores
            for q in range(m):
                dst[np.uint64(t * m + q)] = runs[np.uint64(q * B + t)]
        return
    r = 0
    for t in range(B):
        for od in range(OD):
            for oh in range(OH):
                rb = b + t * sc + od * sd + oh * sh
                for ow in range(OW):
                    dst[np.uint64(r)] = _value(src, src[np.uint64(rb + ow * sw)])
                    r += 1


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
    first bad index, or -1, and stores it in ``bad[ch]`` (the kernel's flags)."""
    # (not bad: Numba's dead-code elimination does not see a borrow unpacked from a tuple as
    # its argument, and dropped the one store into it; see access._borrow_aliases)
    go, ind, gi = borrow(go), borrow(ind), borrow(gi)
    lo, nn = borrow(lo), borrow(nn)
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
    # (output-major runs of adjacent planes, before they are transposed: _copy_group)
    j_runs = np.empty(group * m if j_copy and jc == 1 else 0, ind.dtype)
    g_runs = scratch(go, group * m if g_copy and gc == 1 else 0)
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
    # windows of one element, the identity: every element written, output q's (checked) at q
    identity = disjoint and m == plane
    # views without counts (see access.keep): each group's calls and slices took atomic counts
    owners = (j_runs, g_runs, keys, run, gv, sums)
    j_runs, g_runs, keys, run, gv, sums = borrow(owners)
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
            _copy_group(ind, jb, jc, jd, jh, jw, B, OD, OH, OW, run, j_runs)
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
            elif not identity:
                for k in range(B * plane):
                    gi[np.uint64(ib + k)] = 0
            if first < 0:
                # the gradients decoded first, in unit-stride loops: a scalar float16 decode
                # between the additions chained each one to the last (10 cycles an index)
                if g_copy:
                    _copy_group(go, gb, gc, gd, gh, gw, B, OD, OH, OW, gv, g_runs)
                elif not direct:
                    load_row(go, gb, 1, B * m, gv)
                vals, vo = _gradients(go, gv, gb, direct)
                # keys are offsets in the group: one loop over its outputs, in ascending order
                if disjoint:  # a store, not a load and an add: the same bits
                    z = acc(go, 0)
                    if identity:  # one run (float32 32x512x7x7 -> 7x7 1.62x, 512x14 -> 14
                        # 1.17-1.50x, against the stores through the keys)
                        for q in range(B * m):
                            put(gi, ib + q, z + vals[np.uint64(vo + q)])
                    else:
                        for q in range(B * m):
                            put(gi, ib + keys[q], z + vals[np.uint64(vo + q)])
                elif decodes(gi):
                    if whole:
                        _scatter_add(sums, 0, keys, gv, B * m, _merged(OW, W, plane))
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
                    _scatter_add(gi, ib, keys, vals[vo:], B * m, _merged(OW, W, plane))
            if whole:
                store_row(gi, ib, 1, B * plane, sums, 0)
        p += B
        c += B  # (n, c) of the next group, dividing only where it wraps
        if c >= C:
            n, c = n + c // C, c % C
    keep(owners)
    bad[ch] = found
    return found


@numba.njit(**_BODY)
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
    and the result is written straight, ``+0.0 + g`` (rounded once where 16-bit; windows of one
    element, the identity, as one run). Zeroing the planes here, just before the scattered
    writes, keeps their cache lines hot for them and spreads the fill over the threads (1.3-2x
    against a zeroed allocation). Planes must be at most
    ``2**22`` elements (:func:`_check_plane`).
    """
    run_chunks(_sparse_chunk, at, (
        go, gog, ind, ig, gi, gig, dims, lo, nn, group, bad, write, disjoint, nchunk
    ), nchunk)
    # chunks in plane order: the first that found one has the first
    return _first_flagged(bad[:nchunk], 0)
