"""The baseline CPU kernels: the first tier of :mod:`adaptive_pool.cpu.tiers`.

One plain loop nest per algorithm, one output (forwards) or input element (the average
backward) at a time, serial: the CUDA kernels' algorithms (:mod:`adaptive_pool.cuda.kernels`,
a thread per element) with loops over the axes in place of the grid, but for the max
backward of planes up to a million elements, which adds into a plane of sums (the same
order). They compute the contract's operations in the contract's order, so their results are
bit for bit those of the tuned kernels in :mod:`adaptive_pool.cpu.kernels`; what they leave
out is what makes those slow to compile (vector code, loop orders, blocking, threads). One
compiles cold in about a second where a tuned kernel takes 2-10 s, so a process whose cache
lacks a tuned kernel answers its first calls with these while the tuned one compiles in the
background; they run 5-50x slower.

Arrays are flat storage with geometry tuples ``(offset, sN, sC, sD, sH, sW)`` in elements and
``dims = (N, C, D, H, W, OD, OH, OW)``, as for every kernel; ``skip`` is
:data:`~adaptive_pool.cpu.kernels.PLAIN` or :data:`~adaptive_pool.cpu.kernels.SKIPNA`.
"""

from __future__ import annotations

import numba
import numpy as np

from ..windows import axes_layout, index_in_window
from .access import acc, get, put, scratch

__all__ = ["avg_pool", "avg_pool_backward", "max_pool", "max_pool_backward",
           "max_pool_backward_gather"]

_BASE = dict(nogil=True, cache=True, error_model="numpy")

#: Lanes of the contract's summation order (``kernels.SUM_LANES``).
_LANES = 32


@numba.njit(**_BASE)
def _counts(x, xg, cnt, tab, dims):
    """``cnt[o]``: how many elements of window ``o`` are not NaN (C order of the outputs)."""
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = axes_layout(dims)
    x0, xn, xc, xd, xh, xw = xg
    t = 0
    for p in range(N * C):
        xb = x0 + (p // C) * xn + (p % C) * xc
        for od in range(OD):
            for oh in range(OH):
                for ow in range(OW):
                    k = 0
                    for d in range(tab[sd + od], tab[ed + od]):
                        for h in range(tab[sh + oh], tab[eh + oh]):
                            b = xb + d * xd + h * xh
                            for w in range(tab[sw + ow], tab[ew + ow]):
                                v = get(x, b + w * xw)
                                k += np.int64(v == v)
                    cnt[t] = k
                    t += 1


@numba.njit(**_BASE)
def avg_pool(x, xg, y, yg, tab, dims, skip):
    """``y[o] = sum(x[window(o)]) / volume(o)`` in the lane order (with ``skip``: the non-NaN
    elements over their count)."""
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = axes_layout(dims)
    x0, xn, xc, xd, xh, xw = xg
    y0, yn, yc, yd, yh, yw = yg
    lanes = scratch(x, _LANES)
    for p in range(N * C):
        n, c = p // C, p % C
        xb = x0 + n * xn + c * xc
        for od in range(OD):
            for oh in range(OH):
                yr = y0 + n * yn + c * yc + od * yd + oh * yh
                for ow in range(OW):
                    for i in range(_LANES):
                        lanes[i] = 0
                    k = 0
                    count = 0
                    for d in range(tab[sd + od], tab[ed + od]):
                        for h in range(tab[sh + oh], tab[eh + oh]):
                            b = xb + d * xd + h * xh
                            for w in range(tab[sw + ow], tab[ew + ow]):
                                v = get(x, b + w * xw)
                                if skip is None or v == v:
                                    lanes[k % _LANES] += v
                                    count += 1
                                k += 1
                    # lane i += lane i + 16, + 8, 4, 2, 1; lanes no element reached hold +0.0
                    m = min(k, _LANES)
                    half = _LANES // 2
                    while half >= 1:
                        if m > half:
                            for i in range(m - half):
                                lanes[i] += lanes[i + half]
                            m = half
                        half //= 2
                    put(y, yr + ow * yw, lanes[0] / acc(x, count))


@numba.njit(**_BASE)
def avg_pool_backward(go, gog, gi, gig, tab, dims, x, xg, skip):
    """Gather: ``gi[i] = sum over covering o of go[o] / volume(o)``, nested as the contract
    says (w innermost, then h, then d). With ``skip``: NaN inputs of ``x`` get +0.0 and the
    others divide by the count of their window's non-NaN elements."""
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, ld, hd, sh, eh, lh, hh, sw, ew, lw, hw = axes_layout(dims)
    g0, gn, gc, gd, gh, gw = gog
    i0, in_, ic, id_, ih_, iw_ = gig
    x0, xn, xc, xd, xh, xw = xg
    cnt = np.empty(N * C * OD * OH * OW if skip is not None else 0, np.int64)
    if skip is not None:
        _counts(x, xg, cnt, tab, dims)
    for p in range(N * C):
        n, c = p // C, p % C
        gb = g0 + n * gn + c * gc
        for d in range(D):
            od0, od1 = tab[ld + d], tab[hd + d]
            for h in range(H):
                oh0, oh1 = tab[lh + h], tab[hh + h]
                for w in range(W):
                    s = acc(go, 0)
                    nan = False
                    if skip is not None:
                        v = get(x, x0 + n * xn + c * xc + d * xd + h * xh + w * xw)
                        nan = v != v
                    if not nan:
                        for od in range(od0, od1):
                            vd = tab[ed + od] - tab[sd + od]
                            s_h = acc(go, 0)
                            for oh in range(oh0, oh1):
                                vdh = vd * (tab[eh + oh] - tab[sh + oh])
                                b = gb + od * gd + oh * gh
                                cr = ((p * OD + od) * OH + oh) * OW
                                s_w = acc(go, 0)
                                for ow in range(tab[lw + w], tab[hw + w]):
                                    if skip is not None:
                                        vol = cnt[cr + ow]
                                    else:
                                        vol = vdh * (tab[ew + ow] - tab[sw + ow])
                                    s_w += get(go, b + ow * gw) / acc(go, vol)
                                s_h += s_w
                            s += s_h
                    put(gi, i0 + n * in_ + c * ic + d * id_ + h * ih_ + w * iw_, s)


@numba.njit(**_BASE)
def max_pool(x, xg, y, yg, ind, ig, tab, dims, skip):
    """Max of each window and its flat in-plane index: scan in d, h, w order from -inf with
    the window's first index, take ``v`` when ``v > best or v != v`` (with ``skip``: when
    ``v > best``, or ``v`` is the window's first number). The value is copied as stored."""
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = axes_layout(dims)
    x0, xn, xc, xd, xh, xw = xg
    y0, yn, yc, yd, yh, yw = yg
    j0, jn, jc, jd, jh, jw = ig
    for p in range(N * C):
        n, c = p // C, p % C
        xb = x0 + n * xn + c * xc
        for od in range(OD):
            for oh in range(OH):
                yr = y0 + n * yn + c * yc + od * yd + oh * yh
                jr = j0 + n * jn + c * jc + od * jd + oh * jh
                for ow in range(OW):
                    d0, h0, w0 = tab[sd + od], tab[sh + oh], tab[sw + ow]
                    best = acc(x, -np.inf)
                    bpos = xb + d0 * xd + h0 * xh + w0 * xw
                    bk = (d0 * H + h0) * W + w0
                    seen = False
                    for d in range(d0, tab[ed + od]):
                        for h in range(h0, tab[eh + oh]):
                            b = xb + d * xd + h * xh
                            kb = (d * H + h) * W
                            for w in range(w0, tab[ew + ow]):
                                v = get(x, b + w * xw)
                                if skip is not None:
                                    take = v > best or (not seen and v == v)
                                else:
                                    take = v > best or v != v
                                if take:
                                    best = v
                                    bpos = b + w * xw
                                    bk = kb + w
                                    seen = True
                    y[yr + ow * yw] = x[bpos]
                    ind[jr + ow * jw] = bk


#: The largest plane (elements) whose baseline max backward adds into a plane of sums
#: (:func:`max_pool_backward`); the backend sends larger ones to the gather
#: (:func:`max_pool_backward_gather`), whose scratch does not grow with the plane.
SUMMED_PLANE = 1 << 20


@numba.njit(**_BASE)
def _first_bad(ind, ig, tab, dims):
    """The C-order position of the first index outside its window, or -1."""
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = axes_layout(dims)
    j0, jn, jc, jd, jh, jw = ig
    t = 0
    for p in range(N * C):
        jb = j0 + (p // C) * jn + (p % C) * jc
        for od in range(OD):
            for oh in range(OH):
                for ow in range(OW):
                    k = np.int64(ind[jb + od * jd + oh * jh + ow * jw])
                    if not index_in_window(
                        k, H, W, tab[sd + od], tab[ed + od], tab[sh + oh], tab[eh + oh],
                        tab[sw + ow], tab[ew + ow],
                    ):
                        return t
                    t += 1
    return -1


@numba.njit(**_BASE)
def max_pool_backward(go, gog, ind, ig, gi, gig, tab, dims):
    """Check every index against its window; return the C-order position of the first one
    outside it (``gi`` untouched), else ``gi[i] = +0.0 + the go[o] with ind[o] == i`` in
    ascending o (in the accumulation type, rounded once) and return -1.

    Each output's gradient is added into its plane's sums in ascending o: the order of the
    CUDA kernel's gather (a thread per element) without a loop over each element's covering
    windows (the gather took 0.17 us of a 1.47 us call on a 2x4x4 plane). For planes of at
    most :data:`SUMMED_PLANE` elements (a scratch plane)."""
    t = _first_bad(ind, ig, tab, dims)
    if t >= 0:
        return t
    N, C, D, H, W, OD, OH, OW = dims
    g0, gn, gc, gd, gh, gw = gog
    j0, jn, jc, jd, jh, jw = ig
    i0, in_, ic, id_, ih_, iw_ = gig
    sums = scratch(go, D * H * W)
    for p in range(N * C):
        n, c = p // C, p % C
        gb = g0 + n * gn + c * gc
        jb = j0 + n * jn + c * jc
        sums[:] = 0
        for od in range(OD):
            for oh in range(OH):
                for ow in range(OW):
                    sums[np.int64(ind[jb + od * jd + oh * jh + ow * jw])] += get(
                        go, gb + od * gd + oh * gh + ow * gw)
        ib = i0 + n * in_ + c * ic
        for d in range(D):
            for h in range(H):
                for w in range(W):
                    put(gi, ib + d * id_ + h * ih_ + w * iw_, sums[(d * H + h) * W + w])
    return -1


@numba.njit(**_BASE)
def max_pool_backward_gather(go, gog, ind, ig, gi, gig, tab, dims):
    """:func:`max_pool_backward` for planes of any size: each element gathers ``go[o]`` over
    the covering o with ``ind[o] == i``, in ascending o."""
    t = _first_bad(ind, ig, tab, dims)
    if t >= 0:
        return t
    N, C, D, H, W, OD, OH, OW = dims
    _, _, ld, hd, _, _, lh, hh, _, _, lw, hw = axes_layout(dims)
    g0, gn, gc, gd, gh, gw = gog
    j0, jn, jc, jd, jh, jw = ig
    i0, in_, ic, id_, ih_, iw_ = gig
    for p in range(N * C):
        n, c = p // C, p % C
        gb = g0 + n * gn + c * gc
        jb = j0 + n * jn + c * jc
        for d in range(D):
            od0, od1 = tab[ld + d], tab[hd + d]
            for h in range(H):
                oh0, oh1 = tab[lh + h], tab[hh + h]
                for w in range(W):
                    k = (d * H + h) * W + w
                    s = acc(go, 0)
                    for od in range(od0, od1):
                        for oh in range(oh0, oh1):
                            gr = gb + od * gd + oh * gh
                            jr = jb + od * jd + oh * jh
                            for ow in range(tab[lw + w], tab[hw + w]):
                                if np.int64(ind[jr + ow * jw]) == k:
                                    s += get(go, gr + ow * gw)
                    put(gi, i0 + n * in_ + c * ic + d * id_ + h * ih_ + w * iw_, s)
    return -1
