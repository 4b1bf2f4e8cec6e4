"""The CPU kernels: one ``@njit(parallel=True, cache=True)`` body per algorithm.

Every kernel sees the problem as ``(N, C, D, H, W) -> (OD, OH, OW)``; 1-D and 2-D problems are
singleton axes. Arrays arrive as flat 1-D storage arrays plus a geometry tuple
``(offset, sN, sC, sD, sH, sW)`` in elements, so any strides (negative, zero, channels-last) use
the same compiled code: one specialisation per storage dtype (and index dtype), never per layout
or rank. ``tab`` is the packed window table of :mod:`adaptive_pool.windows`.

Summation order (the contract that makes CPU and CUDA results bitwise equal): sums run over
w innermost, then h, then d, each level starting from +0.0 and adding in ascending order.
A level whose only term is itself such a sum may take the term as is: a sum started from +0.0 is
never -0.0, so ``0.0 + term == term`` bit for bit.

How they go fast (all memory-bound when they do): work is handed out in ``nchunk`` contiguous
ranges of work items so that scratch rows are allocated once per range, not per item; input
rows are decoded and output rows encoded whole, with branch-free codecs, through unit-stride
loops that LLVM vectorises (:func:`~adaptive_pool.cpu.access.load_row`/``store_row``); the sums
are separable (w sums per input row, then element-wise adds of whole rows along h and d), which
keeps the contract's order while every level but the innermost runs vectorised.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ..windows import index_in_window, table_layout
from .access import acc, enc, get, key, key_nan, load_row, scratch, store_row

_JIT = dict(parallel=True, cache=True, nogil=True, error_model="numpy")


@numba.njit(inline="always")
def _layout(dims):
    """Table offsets ``(start, end, lo, hi)`` of the d, h and w axes."""
    _, _, D, H, W, OD, OH, OW = dims
    sd, ed, ld, hd, b = table_layout(D, OD, 0)
    sh, eh, lh, hh, b = table_layout(H, OH, b)
    sw, ew, lw, hw, _ = table_layout(W, OW, b)
    return sd, ed, ld, hd, sh, eh, lh, hh, sw, ew, lw, hw


@numba.njit(inline="always")
def _chunk(ch, nchunk, total):
    """Work items ``[lo, hi)`` of chunk ``ch`` when ``total`` items are cut into ``nchunk``."""
    return ch * total // nchunk, (ch + 1) * total // nchunk


@numba.njit(**_JIT)
def avg_pool(x, xg, y, yg, tab, dims, nchunk):
    """``y[o] = sum(x[window(o)]) / volume(o)``; a work item is one output row.

    Each input row of the window is decoded once into ``buf``; its w sums for every ``ow``
    (``rs``) are added, element-wise over ``ow``, into the h level (``sh``) and that into the d
    level (``sd``). The first term of a level is taken as is.
    """
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = _layout(dims)
    x0, xn, xc, xd, xh, xw = xg
    y0, yn, yc, yd, yh, yw = yg
    total = N * C * OD * OH
    for ch in prange(nchunk):
        r_lo, r_hi = _chunk(ch, nchunk, total)
        buf = scratch(x, W)
        rs = scratch(x, OW)
        sdh = scratch(x, OW)
        s = scratch(x, OW)
        ws = tab[sw : sw + OW]
        we = tab[ew : ew + OW]
        for r in range(r_lo, r_hi):
            oh = r % OH
            t = r // OH
            od = t % OD
            p = t // OD
            n = p // C
            c = p - n * C
            d0, d1 = tab[sd + od], tab[ed + od]
            h0, h1 = tab[sh + oh], tab[eh + oh]
            xb = x0 + n * xn + c * xc
            for d in range(d0, d1):
                for h in range(h0, h1):
                    load_row(x, xb + d * xd + h * xh, xw, W, buf)
                    for ow in range(OW):
                        v = acc(x, 0)
                        for w in range(ws[ow], we[ow]):
                            v += buf[w]
                        rs[ow] = v
                    if h == h0:
                        for ow in range(OW):
                            sdh[ow] = rs[ow]
                    else:
                        for ow in range(OW):
                            sdh[ow] += rs[ow]
                if d == d0:
                    for ow in range(OW):
                        s[ow] = sdh[ow]
                else:
                    for ow in range(OW):
                        s[ow] += sdh[ow]
            vdh = (d1 - d0) * (h1 - h0)
            for ow in range(OW):
                s[ow] = s[ow] / acc(x, vdh * (we[ow] - ws[ow]))
            store_row(y, y0 + n * yn + c * yc + od * yd + oh * yh, yw, OW, s, 0)


@numba.njit(**_JIT)
def avg_pool_backward(go, gog, gi, gig, tab, dims, rows_per_item, nchunk):
    """Gather: ``gi[i] = sum over covering o of go[o] / volume(o)``.

    A work item is ``rows_per_item`` input rows of one ``(n, c, d)`` slab. It first reduces the
    covering output rows along w (``part[od, oh, iw]``, the innermost level of the sum), then
    adds those partial rows along h and d with contiguous, vectorisable row operations. An input
    row covered by a single output row is written straight from its partial row.
    """
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, ld, hd, sh, eh, lh, hh, sw, ew, lw, hw = _layout(dims)
    g0, gn, gc, gd, gh, gw = gog
    i0, in_, ic, id_, ih_, iw_ = gig
    nblk = (H + rows_per_item - 1) // rows_per_item
    total = N * C * D * nblk
    for ch in prange(nchunk):
        it_lo, it_hi = _chunk(ch, nchunk, total)
        part = scratch(go, W)
        g = scratch(go, OW)
        row = scratch(go, W)
        rowd = scratch(go, W)
        vw = scratch(go, OW)
        for ow in range(OW):
            vw[ow] = acc(go, tab[ew + ow] - tab[sw + ow])
        wl = tab[lw : lw + W]
        wh = tab[hw : hw + W]
        for it in range(it_lo, it_hi):
            blk = it % nblk
            t = it // nblk
            d = t % D
            p = t // D
            n = p // C
            c = p - n * C
            h_first = blk * rows_per_item
            h_last = min(H, h_first + rows_per_item)
            od0, od1 = tab[ld + d], tab[hd + d]
            oh0, oh1 = tab[lh + h_first], tab[hh + h_last - 1]
            nh = oh1 - oh0
            need = (od1 - od0) * nh * W
            if part.size < need:
                part = scratch(go, need)
            gb = g0 + n * gn + c * gc
            for od in range(od0, od1):
                vd = tab[ed + od] - tab[sd + od]
                for oh in range(oh0, oh1):
                    vdh = vd * (tab[eh + oh] - tab[sh + oh])
                    load_row(go, gb + od * gd + oh * gh, gw, OW, g)
                    for ow in range(OW):
                        # volume as the integer product, converted once (bit-identical)
                        g[ow] = g[ow] / acc(go, vdh * (tab[ew + ow] - tab[sw + ow]))
                    q = ((od - od0) * nh + (oh - oh0)) * W
                    for w in range(W):
                        s = acc(go, 0)
                        for ow in range(wl[w], wh[w]):
                            s += g[ow]
                        part[q + w] = s
            ib = i0 + n * in_ + c * ic + d * id_
            for h in range(h_first, h_last):
                lo, hi = tab[lh + h], tab[hh + h]
                b = ib + h * ih_
                q0 = (lo - oh0) * W
                if od1 - od0 == 1 and hi - lo == 1:
                    store_row(gi, b, iw_, W, part, q0)
                    continue
                for od in range(od0, od1):
                    q = (od - od0) * nh * W + q0
                    if od == od0:
                        for w in range(W):
                            row[w] = part[q + w]
                        for oh in range(lo + 1, hi):
                            q += W
                            for w in range(W):
                                row[w] += part[q + w]
                    else:
                        for w in range(W):
                            rowd[w] = part[q + w]
                        for oh in range(lo + 1, hi):
                            q += W
                            for w in range(W):
                                rowd[w] += part[q + w]
                        for w in range(W):
                            row[w] += rowd[w]
                store_row(gi, b, iw_, W, row, 0)


@numba.njit(**_JIT)
def max_pool(x, xg, y, yg, ind, ig, tab, dims, nchunk):
    """Max over each window with its flat in-plane index; a work item is one output row.

    The contract: the window is scanned in d, h, w order from -inf with the index of its first
    element, and a value is taken when ``v > best or v != v``. So the result is the window's
    last NaN if it has one, else its first element equal to the maximum (-0 == +0). That is
    computed column-wise: over the window's input rows, element-wise for every w at once,
    ``cm[w]`` keeps the column's best order key and ``cr[w]`` the flat row ``d*H + h`` where it
    was taken by the same rule; then each window picks, among its columns holding the maximum
    key, the smallest ``(row, w)`` (largest for NaN). The value is copied as stored (NaN
    payloads survive). Keys (see :func:`~adaptive_pool.cpu.access.key`) order like the values.
    """
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = _layout(dims)
    x0, xn, xc, xd, xh, xw = xg
    y0, yn, yc, yd, yh, yw = yg
    j0, jn, jc, jd, jh, jw = ig
    total = N * C * OD * OH
    knan = key_nan(x)
    for ch in prange(nchunk):
        r_lo, r_hi = _chunk(ch, nchunk, total)
        cm = np.full(W, knan)
        cr = np.empty(W, np.int64)
        ws = tab[sw : sw + OW]
        we = tab[ew : ew + OW]
        for r in range(r_lo, r_hi):
            oh = r % OH
            t = r // OH
            od = t % OD
            p = t // OD
            n = p // C
            c = p - n * C
            d0, d1 = tab[sd + od], tab[ed + od]
            h0, h1 = tab[sh + oh], tab[eh + oh]
            xb = x0 + n * xn + c * xc
            for d in range(d0, d1):
                for h in range(h0, h1):
                    b = xb + d * xd + h * xh
                    kr = d * H + h
                    if xw == 1:
                        seg = x[b : b + W]
                        if kr == d0 * H + h0:
                            for w in range(W):
                                cm[w] = key(x, seg[w])
                                cr[w] = kr
                        else:
                            for w in range(W):
                                k = key(x, seg[w])
                                take = (k > cm[w]) | (k == knan)
                                cm[w] = k if take else cm[w]
                                cr[w] = kr if take else cr[w]
                    else:
                        for w in range(W):
                            k = key(x, x[b + w * xw])
                            if kr == d0 * H + h0 or k > cm[w] or k == knan:
                                cm[w] = k
                                cr[w] = kr
            yb = y0 + n * yn + c * yc + od * yd + oh * yh
            jb = j0 + n * jn + c * jc + od * jd + oh * jh
            for ow in range(OW):
                w0, w1 = ws[ow], we[ow]
                m = cm[w0]
                for w in range(w0 + 1, w1):
                    m = max(m, cm[w])
                bw = w0
                brow = cr[w0]
                found = cm[w0] == m
                if m == knan:
                    for w in range(w0 + 1, w1):
                        if cm[w] == m and (not found or cr[w] >= brow):
                            bw, brow, found = w, cr[w], True
                else:
                    for w in range(w0 + 1, w1):
                        if cm[w] == m and (not found or cr[w] < brow):
                            bw, brow, found = w, cr[w], True
                dd = brow // H
                hh_ = brow - dd * H
                y[yb + ow * yw] = x[xb + dd * xd + hh_ * xh + bw * xw]
                ind[jb + ow * jw] = brow * W + bw


@numba.njit(inline="always")
def _divmod_small(k, m, rm):
    """``divmod(k, m)`` for ``0 <= k < 2**50``, ``m >= 1``, ``rm = 1.0 / m``: no division.

    The float estimate is off by at most one either way; one correction step makes it exact.
    """
    q = np.int64(np.float64(k) * rm)
    r = k - q * m
    lo = np.int64(r < 0)
    hi = np.int64(r >= m)
    return q - lo + hi, r + lo * m - hi * m


@numba.njit(**_JIT)
def first_bad_index(ind, ig, tab, dims, bad):
    """Flag each output row's first index outside its window: ``bad[r]`` = its ow, else -1.

    The same test as :func:`~adaptive_pool.windows.index_in_window`, with the divisions by W
    and H done through exact reciprocal estimates (integer divisions dominated the check).
    """
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = _layout(dims)
    j0, jn, jc, jd, jh, jw = ig
    plane = D * H * W
    small = plane < (np.int64(1) << 50)
    rw = 1.0 / W
    rh = 1.0 / H
    for r in prange(N * C * OD * OH):
        oh = r % OH
        t = r // OH
        od = t % OD
        p = t // OD
        n = p // C
        c = p - n * C
        d0, d1 = tab[sd + od], tab[ed + od]
        h0, h1 = tab[sh + oh], tab[eh + oh]
        jb = j0 + n * jn + c * jc + od * jd + oh * jh
        nbad = 0
        if small:
            for ow in range(OW):
                k = np.int64(ind[jb + ow * jw])
                kk = min(max(k, np.int64(0)), plane - 1)
                q, w = _divmod_small(kk, W, rw)
                d, h = _divmod_small(q, H, rh)
                ok = (k == kk) & (d0 <= d) & (d < d1) & (h0 <= h) & (h < h1)
                ok = ok & (tab[sw + ow] <= w) & (w < tab[ew + ow])
                nbad += not ok
        bad[r] = -1
        if nbad or not small:
            for ow in range(OW):
                k = np.int64(ind[jb + ow * jw])
                if not index_in_window(k, H, W, d0, d1, h0, h1, tab[sw + ow], tab[ew + ow]):
                    bad[r] = ow
                    break


@numba.njit(**_JIT)
def max_pool_backward(go, gog, ind, ig, gi, gig, tab, dims, rows_per_item, nchunk):
    """Gather: ``gi[i] = sum of go[o] over covering o with ind[o] == i``, in ascending o.

    A work item is ``rows_per_item`` input rows of one ``(n, c, d)`` slab. It visits each output
    row covering the block once, in ascending (od, oh, ow) order, and adds every gradient whose
    index lands in the block to a zeroed float block; the block is then encoded and written
    whole. Indices must have passed :func:`first_bad_index`: an index inside its window lands
    only in rows (and columns) its output cell covers, so this is exactly the per-element gather.
    """
    N, C, D, H, W, OD, OH, OW = dims
    _, _, ld, hd, _, _, lh, hh, _, _, _, _ = _layout(dims)
    g0, gn, gc, gd, gh, gw = gog
    j0, jn, jc, jd, jh, jw = ig
    i0, in_, ic, id_, ih_, iw_ = gig
    nblk = (H + rows_per_item - 1) // rows_per_item
    total = N * C * D * nblk
    for ch in prange(nchunk):
        it_lo, it_hi = _chunk(ch, nchunk, total)
        blkbuf = scratch(go, rows_per_item * W)
        for it in range(it_lo, it_hi):
            blk = it % nblk
            t = it // nblk
            d = t % D
            p = t // D
            n = p // C
            c = p - n * C
            h_first = blk * rows_per_item
            h_last = min(H, h_first + rows_per_item)
            nk = (h_last - h_first) * W
            for k in range(nk):
                blkbuf[k] = 0
            gb = g0 + n * gn + c * gc
            jb = j0 + n * jn + c * jc
            k0 = (d * H + h_first) * W
            for od in range(tab[ld + d], tab[hd + d]):
                for oh in range(tab[lh + h_first], tab[hh + h_last - 1]):
                    gr = gb + od * gd + oh * gh
                    jr = jb + od * jd + oh * jh
                    for ow in range(OW):
                        k = np.int64(ind[jr + ow * jw]) - k0
                        if 0 <= k < nk:
                            blkbuf[k] += get(go, gr + ow * gw)
            ib = i0 + n * in_ + c * ic + d * id_
            if iw_ == 1 and ih_ == W:  # the block's rows are one run of memory
                store_row(gi, ib + h_first * ih_, 1, nk, blkbuf, 0)
            else:
                for h in range(h_first, h_last):
                    store_row(gi, ib + h * ih_, iw_, W, blkbuf, (h - h_first) * W)
