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
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ..windows import index_in_window, table_layout
from .access import acc, get, put, scratch

_JIT = dict(parallel=True, cache=True, nogil=True, error_model="numpy")


@numba.njit(inline="always")
def _layout(dims):
    """Table offsets ``(start, end, lo, hi)`` of the d, h and w axes."""
    _, _, D, H, W, OD, OH, OW = dims
    sd, ed, ld, hd, b = table_layout(D, OD, 0)
    sh, eh, lh, hh, b = table_layout(H, OH, b)
    sw, ew, lw, hw, _ = table_layout(W, OW, b)
    return sd, ed, ld, hd, sh, eh, lh, hh, sw, ew, lw, hw


@numba.njit(**_JIT)
def avg_pool(x, xg, y, yg, tab, dims):
    """``y[o] = sum(x[window(o)]) / volume(o)``; one work item per output row."""
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = _layout(dims)
    x0, xn, xc, xd, xh, xw = xg
    y0, yn, yc, yd, yh, yw = yg
    for r in prange(N * C * OD * OH):
        oh = r % OH
        t = r // OH
        od = t % OD
        p = t // OD
        n = p // C
        c = p - n * C
        d0, d1 = tab[sd + od], tab[ed + od]
        h0, h1 = tab[sh + oh], tab[eh + oh]
        xb = x0 + n * xn + c * xc
        yb = y0 + n * yn + c * yc + od * yd + oh * yh
        for ow in range(OW):
            w0, w1 = tab[sw + ow], tab[ew + ow]
            s = acc(x, 0)
            for d in range(d0, d1):
                sdh = acc(x, 0)
                for h in range(h0, h1):
                    sdw = acc(x, 0)
                    b = xb + d * xd + h * xh
                    for w in range(w0, w1):
                        sdw += get(x, b + w * xw)
                    sdh += sdw
                s += sdh
            put(y, yb + ow * yw, s / acc(x, (d1 - d0) * (h1 - h0) * (w1 - w0)))


@numba.njit(**_JIT)
def avg_pool_backward(go, gog, gi, gig, tab, dims, rows_per_item):
    """Gather: ``gi[i] = sum over covering o of go[o] / volume(o)``.

    A work item is ``rows_per_item`` input rows of one ``(n, c, d)`` slab. It first reduces the
    covering output rows along w (``part[od, oh, iw]``, the innermost level of the sum), then
    adds those partial rows along h and d with contiguous, vectorisable row operations.
    """
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, ld, hd, sh, eh, lh, hh, sw, ew, lw, hw = _layout(dims)
    g0, gn, gc, gd, gh, gw = gog
    i0, in_, ic, id_, ih_, iw_ = gig
    nblk = (H + rows_per_item - 1) // rows_per_item
    for it in prange(N * C * D * nblk):
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
        gb = g0 + n * gn + c * gc
        part = scratch(go, (od1 - od0) * nh * W)
        g = scratch(go, OW)
        for od in range(od0, od1):
            vd = tab[ed + od] - tab[sd + od]
            for oh in range(oh0, oh1):
                vdh = vd * (tab[eh + oh] - tab[sh + oh])
                b = gb + od * gd + oh * gh
                for ow in range(OW):
                    g[ow] = get(go, b + ow * gw) / acc(go, vdh * (tab[ew + ow] - tab[sw + ow]))
                q = ((od - od0) * nh + (oh - oh0)) * W
                for w in range(W):
                    s = acc(go, 0)
                    for ow in range(tab[lw + w], tab[hw + w]):
                        s += g[ow]
                    part[q + w] = s
        row = scratch(go, W)
        rowd = scratch(go, W)
        ib = i0 + n * in_ + c * ic + d * id_
        for h in range(h_first, h_last):
            lo, hi = tab[lh + h], tab[hh + h]
            for od in range(od0, od1):
                q = ((od - od0) * nh + (lo - oh0)) * W
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
            b = ib + h * ih_
            for w in range(W):
                put(gi, b + w * iw_, row[w])


@numba.njit(**_JIT)
def max_pool(x, xg, y, yg, ind, ig, tab, dims):
    """Max over each window with its flat in-plane index; one work item per output row.

    The window is scanned in d, h, w order from -inf with the index of its first element, and a
    value is taken when ``v > best or v != v``: ties keep the first maximum, NaN propagates with
    the last NaN's index, an all -inf window points at its first element. The value is copied
    as stored (no re-encoding), so NaN payloads survive.
    """
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = _layout(dims)
    x0, xn, xc, xd, xh, xw = xg
    y0, yn, yc, yd, yh, yw = yg
    j0, jn, jc, jd, jh, jw = ig
    for r in prange(N * C * OD * OH):
        oh = r % OH
        t = r // OH
        od = t % OD
        p = t // OD
        n = p // C
        c = p - n * C
        d0, d1 = tab[sd + od], tab[ed + od]
        h0, h1 = tab[sh + oh], tab[eh + oh]
        xb = x0 + n * xn + c * xc
        yb = y0 + n * yn + c * yc + od * yd + oh * yh
        jb = j0 + n * jn + c * jc + od * jd + oh * jh
        for ow in range(OW):
            w0, w1 = tab[sw + ow], tab[ew + ow]
            best = acc(x, -np.inf)
            bpos = xb + d0 * xd + h0 * xh + w0 * xw
            bk = (d0 * H + h0) * W + w0
            for d in range(d0, d1):
                for h in range(h0, h1):
                    b = xb + d * xd + h * xh
                    kb = (d * H + h) * W
                    for w in range(w0, w1):
                        v = get(x, b + w * xw)
                        if v > best or v != v:
                            best = v
                            bpos = b + w * xw
                            bk = kb + w
            y[yb + ow * yw] = x[bpos]
            ind[jb + ow * jw] = bk


@numba.njit(**_JIT)
def first_bad_index(ind, ig, tab, dims, bad):
    """Flag each output row's first index outside its window: ``bad[r]`` = its ow, else -1."""
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = _layout(dims)
    j0, jn, jc, jd, jh, jw = ig
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
        bad[r] = -1
        for ow in range(OW):
            k = np.int64(ind[jb + ow * jw])
            if not index_in_window(k, H, W, d0, d1, h0, h1, tab[sw + ow], tab[ew + ow]):
                bad[r] = ow
                break


@numba.njit(**_JIT)
def max_pool_backward(go, gog, ind, ig, gi, gig, tab, dims, rows_per_item):
    """Gather: ``gi[i] = sum of go[o] over covering o with ind[o] == i``, in ascending o.

    A work item is ``rows_per_item`` input rows of one ``(n, c, d)`` slab. Each row visits the
    output rows that cover it and adds the gradients whose index lands in the row. Indices must
    have passed :func:`first_bad_index`: an index inside its window lands only in rows (and
    columns) its output cell covers, so this is exactly the per-element gather.
    """
    N, C, D, H, W, OD, OH, OW = dims
    _, _, ld, hd, _, _, lh, hh, _, _, _, _ = _layout(dims)
    g0, gn, gc, gd, gh, gw = gog
    j0, jn, jc, jd, jh, jw = ig
    i0, in_, ic, id_, ih_, iw_ = gig
    nblk = (H + rows_per_item - 1) // rows_per_item
    for it in prange(N * C * D * nblk):
        blk = it % nblk
        t = it // nblk
        d = t % D
        p = t // D
        n = p // C
        c = p - n * C
        h_first = blk * rows_per_item
        h_last = min(H, h_first + rows_per_item)
        gb = g0 + n * gn + c * gc
        jb = j0 + n * jn + c * jc
        ib = i0 + n * in_ + c * ic + d * id_
        row = scratch(go, W)
        for h in range(h_first, h_last):
            for w in range(W):
                row[w] = 0
            row_k = (d * H + h) * W
            for od in range(tab[ld + d], tab[hd + d]):
                for oh in range(tab[lh + h], tab[hh + h]):
                    gr = gb + od * gd + oh * gh
                    jr = jb + od * jd + oh * jh
                    for ow in range(OW):
                        w = np.int64(ind[jr + ow * jw]) - row_k
                        if 0 <= w < W:
                            row[w] += get(go, gr + ow * gw)
            b = ib + h * ih_
            for w in range(W):
                put(gi, b + w * iw_, row[w])
