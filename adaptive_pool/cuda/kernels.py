"""The CUDA kernels: one ``@cuda.jit`` body per algorithm, bitwise equal to the CPU kernels.

Every kernel sees the problem as ``(N, C, D, H, W) -> (OD, OH, OW)`` (1-D and 2-D problems are
singleton axes) and its arrays as flat 1-D storage arrays plus a geometry tuple
``(offset, sN, sC, sD, sH, sW)`` in elements, exactly like :mod:`adaptive_pool.cpu.kernels`: any
strides use the same compiled code, and every offset is 64-bit. ``tab`` is the packed window
table of :mod:`adaptive_pool.windows`; ``dims`` is ``(N, C, D, H, W, OD, OH, OW)``.

Threads: forwards run one thread per output element, or one warp per output window where
windows are large (``*_warps``: the lanes of the contract's order are a warp's lanes);
backwards one thread per *input* element (a gather: each sums the contributions of the output
cells covering it, in ascending order), except the max backward where windows tile the input
(``max_pool_backward_scatter``: a thread per output writes the one gradient its index
receives, into a zeroed result). Grid-stride loops (``cuda.grid``/``cuda.gridsize`` compute in
64 bits). No atomics except the index check's error flag.

Bitwise equality with the CPU: an average sums its window in the lane order of the contract
(element k of the window's flattened (d, h, w) order goes into lane ``k % 32``, each lane from
+0.0 in ascending k, then the lanes are combined by halving: lane i += lane i + 16, then + 8, 4,
2, 1), divides by the integer window volume (or count of non-NaN elements) converted to the
accumulation type, and rounds once through the same codecs; a backward adds its covering output
cells in ascending order. The CPU kernels reach the codecs through
``numba.extending.overload`` (``cpu/access.py``), which numba-cuda cannot compile without a
driver; here :func:`_make_kernels` binds ``decode``, ``encode`` and the accumulation type into the
one body per algorithm as closure constants, once per storage dtype (:func:`kernels_for`).
Every value read is wrapped in the accumulation type, which keeps float32 arithmetic in the CUDA
simulator (where njit helpers return Python floats) and compiles to nothing on the GPU.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numba
import numpy as np
from numba import cuda

from ..dtypes import bf16_decode, bf16_encode, f16_decode, f16_encode
from ..windows import axes_layout, index_in_window

__all__ = [
    "SIMULATOR",
    "KernelSet",
    "STORAGE_DTYPES",
    "kernels_for",
    "first_bad_index",
    "fill_zero",
    "NO_BAD_INDEX",
]

#: Whether numba.cuda is Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``).
SIMULATOR = bool(numba.config.ENABLE_CUDASIM)

#: The error flag's value when every index lies inside its window (no atomic min happened):
#: all bits set, which a byte-wise memset writes.
NO_BAD_INDEX = np.iinfo(np.uint64).max


@numba.njit(inline="always")
def _split(t, C, A, B, E):
    """``t`` as C-order coordinates ``(n, c, a, b, e)`` of an ``(N, C, A, B, E)`` array."""
    e = t % E
    t = t // E
    b = t % B
    t = t // B
    a = t % A
    p = t // A
    n = p // C
    return n, p - n * C, a, b, e


@numba.njit(inline="always")
def _carry(d, q, carry, R):
    """Digit ``d + q + carry`` of radix ``R`` (``d, q < R``, ``carry`` 0 or 1) and its carry."""
    d += q + carry
    return (d - R, 1) if d >= R else (d, 0)


@numba.njit(inline="always")
def _step(n, c, a, b, e, qn, qc, qa, qb, qe, C, A, B, E):
    """``(n, c, a, b, e)`` advanced by the grid's stride ``(qn, qc, qa, qb, qe)`` (both as
    :func:`_split` gives them), carrying from digit to digit: a grid-stride loop's next item
    without dividing. A 64-bit division is a long instruction sequence on a GPU, and the
    backwards' one thread per input element paid eight per element."""
    e, k = _carry(e, qe, 0, E)
    b, k = _carry(b, qb, k, B)
    a, k = _carry(a, qa, k, A)
    c, k = _carry(c, qc, k, C)
    return n + qn + k, c, a, b, e


@numba.njit(inline="always")
def _digits(k, wh, ww):
    """Element ``k`` of a window with rows of ``ww`` and planes of ``wh * ww`` elements as
    offsets ``(d, h, w)`` from its first element."""
    t = k // ww
    return t // wh, t % wh, k % ww


@numba.njit(inline="always")
def _advance(pd, ph, pw, sd, sh, sw, wh, ww):
    """Window offsets ``(pd, ph, pw)`` advanced by ``(sd, sh, sw)`` (both as :func:`_digits`
    gives them), carrying instead of dividing."""
    pw, k = _carry(pw, sw, 0, ww)
    ph, k = _carry(ph, sh, k, wh)
    return pd + sd + k, ph, pw


#: Lanes of the average's summation order (a warp's width).
LANES = 32

@numba.njit(inline="always")
def _warp_grid(tid, block, blocks, threads):
    """A grid of a warp per item: ``(lane, the block's first item, items a grid step, this
    warp's first item)``, from the thread's, the block's and the grid's indices and sizes."""
    warps = threads // LANES
    base = np.int64(block) * warps
    return tid % LANES, base, np.int64(blocks) * warps, base + tid // LANES


#: Threads a block of the warp-per-window kernels has at most (the size of their shared arrays).
WARP_BLOCK = 128


class KernelSet(NamedTuple):
    """The data kernels of one storage dtype (and one ``skipna``)."""

    avg_pool: object
    avg_pool_backward: object
    max_pool: object
    max_pool_backward: object
    count_valid: object
    avg_pool_warps: object
    max_pool_warps: object
    max_pool_backward_scatter: object
    avg_pool_backward_tiled: object


def _make_kernels(decode, encode, acc_t, skipna) -> KernelSet:
    """Instantiate the kernel bodies for one storage dtype.

    ``decode(stored) -> number`` reads an element, ``acc_t`` is the accumulation type (float32 or
    float64) and ``encode(acc_t) -> stored`` rounds once on the way out. With ``skipna`` (a
    compile-time constant) averages skip NaN and divide by the count of the others, and NaN
    never wins a maximum.
    """

    @cuda.jit
    def avg_pool(x, xg, y, yg, tab, dims):
        """``y[o] = sum(x[window(o)]) / volume(o)`` in the lane order; a thread per output."""
        N, C, D, H, W, OD, OH, OW = dims
        sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = axes_layout(dims)
        x0, xn, xc, xd, xh, xw = xg
        y0, yn, yc, yd, yh, yw = yg
        lanes = cuda.local.array(LANES, acc_t)
        t, g = cuda.grid(1), cuda.gridsize(1)
        n, c, od, oh, ow = _split(t, C, OD, OH, OW)
        qn, qc, qd, qh, qw = _split(g, C, OD, OH, OW)
        while t < N * C * OD * OH * OW:
            d0, d1 = tab[sd + od], tab[ed + od]
            h0, h1 = tab[sh + oh], tab[eh + oh]
            w0, w1 = tab[sw + ow], tab[ew + ow]
            xb = x0 + n * xn + c * xc
            for i in range(LANES):
                lanes[i] = acc_t(0)
            k = 0
            count = 0
            for d in range(d0, d1):
                for h in range(h0, h1):
                    b = xb + d * xd + h * xh
                    for w in range(w0, w1):
                        v = acc_t(decode(x[b + w * xw]))
                        if not skipna or v == v:
                            lanes[k % LANES] += v
                            count += 1
                        k += 1
            # lane i += lane i + 16, + 8, 4, 2, 1; only the first k lanes were written, the
            # others hold +0.0, which changes no lane (a lane starting at +0.0 is never -0.0)
            m = min(k, LANES)
            half = LANES // 2
            while half >= 1:
                if m > half:
                    for i in range(m - half):
                        lanes[i] += lanes[i + half]
                    m = half
                half //= 2
            s = lanes[0]
            # k is the volume; with skipna an all-NaN window divides 0 by 0: NaN
            y[y0 + n * yn + c * yc + od * yd + oh * yh + ow * yw] = encode(acc_t(s / acc_t(count)))
            t += g
            n, c, od, oh, ow = _step(n, c, od, oh, ow, qn, qc, qd, qh, qw, C, OD, OH, OW)

    @cuda.jit
    def count_valid(x, xg, cnt, tab, dims):
        """``cnt[o]`` = how many elements of window ``o`` are not NaN (C order of outputs)."""
        N, C, D, H, W, OD, OH, OW = dims
        sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = axes_layout(dims)
        x0, xn, xc, xd, xh, xw = xg
        t, g = cuda.grid(1), cuda.gridsize(1)
        n, c, od, oh, ow = _split(t, C, OD, OH, OW)
        qn, qc, qd, qh, qw = _split(g, C, OD, OH, OW)
        while t < N * C * OD * OH * OW:
            xb = x0 + n * xn + c * xc
            count = 0
            for d in range(tab[sd + od], tab[ed + od]):
                for h in range(tab[sh + oh], tab[eh + oh]):
                    b = xb + d * xd + h * xh
                    for w in range(tab[sw + ow], tab[ew + ow]):
                        v = acc_t(decode(x[b + w * xw]))
                        if v == v:
                            count += 1
            cnt[t] = count
            t += g
            n, c, od, oh, ow = _step(n, c, od, oh, ow, qn, qc, qd, qh, qw, C, OD, OH, OW)

    @cuda.jit
    def avg_pool_backward(go, gog, gi, gig, tab, dims, x, xg, cnt):
        """Gather: ``gi[i] = sum over covering o of go[o] / volume(o)``; a thread per input.

        With ``skipna``: NaN inputs get 0 and the others divide by ``cnt[o]``, the count of
        window ``o``'s non-NaN elements (``x``, ``cnt`` are unused otherwise).
        """
        N, C, D, H, W, OD, OH, OW = dims
        sd, ed, ld, hd, sh, eh, lh, hh, sw, ew, lw, hw = axes_layout(dims)
        g0, gn, gc, gd, gh, gw = gog
        i0, in_, ic, id_, ih_, iw_ = gig
        x0, xn, xc, xd, xh, xw = xg
        t, g = cuda.grid(1), cuda.gridsize(1)
        n, c, d, h, w = _split(t, C, D, H, W)
        qn, qc, qd, qh, qw = _split(g, C, D, H, W)
        while t < N * C * D * H * W:
            gb = g0 + n * gn + c * gc
            cb = (n * C + c) * OD
            ow0, ow1 = tab[lw + w], tab[hw + w]
            s = acc_t(0)
            if skipna:
                v = acc_t(decode(x[x0 + n * xn + c * xc + d * xd + h * xh + w * xw]))
                nan = v != v
            else:
                nan = False
            if not nan:
                for od in range(tab[ld + d], tab[hd + d]):
                    vd = tab[ed + od] - tab[sd + od]
                    sh_ = acc_t(0)
                    for oh in range(tab[lh + h], tab[hh + h]):
                        vdh = vd * (tab[eh + oh] - tab[sh + oh])
                        b = gb + od * gd + oh * gh
                        cr = ((cb + od) * OH + oh) * OW
                        sw_ = acc_t(0)
                        for ow in range(ow0, ow1):
                            if skipna:
                                vol = acc_t(cnt[cr + ow])
                            else:
                                vol = acc_t(vdh * (tab[ew + ow] - tab[sw + ow]))
                            sw_ += acc_t(acc_t(decode(go[b + ow * gw])) / vol)
                        sh_ += sw_
                    s += sh_
            gi[i0 + n * in_ + c * ic + d * id_ + h * ih_ + w * iw_] = encode(s)
            t += g
            n, c, d, h, w = _step(n, c, d, h, w, qn, qc, qd, qh, qw, C, D, H, W)

    @cuda.jit
    def max_pool(x, xg, y, yg, ind, ig, tab, dims):
        """Max of each window and its flat in-plane index; one thread per output element.

        Scan in d, h, w order from -inf with the window's first index; take ``v`` when
        ``v > best or v != v`` (with ``skipna``: when ``v > best``, or ``v`` is the first
        number). The stored value is copied as is (no re-encoding).
        """
        N, C, D, H, W, OD, OH, OW = dims
        sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = axes_layout(dims)
        x0, xn, xc, xd, xh, xw = xg
        y0, yn, yc, yd, yh, yw = yg
        j0, jn, jc, jd, jh, jw = ig
        t, g = cuda.grid(1), cuda.gridsize(1)
        n, c, od, oh, ow = _split(t, C, OD, OH, OW)
        qn, qc, qd, qh, qw = _split(g, C, OD, OH, OW)
        while t < N * C * OD * OH * OW:
            d0, d1 = tab[sd + od], tab[ed + od]
            h0, h1 = tab[sh + oh], tab[eh + oh]
            w0, w1 = tab[sw + ow], tab[ew + ow]
            xb = x0 + n * xn + c * xc
            best = acc_t(-np.inf)
            bpos = xb + d0 * xd + h0 * xh + w0 * xw
            bk = (d0 * H + h0) * W + w0
            seen = False  # skipna: a number was seen (the first one wins, even -inf)
            for d in range(d0, d1):
                for h in range(h0, h1):
                    b = xb + d * xd + h * xh
                    kb = (d * H + h) * W
                    for w in range(w0, w1):
                        v = acc_t(decode(x[b + w * xw]))
                        if skipna:
                            take = v > best or (not seen and v == v)
                        else:
                            take = v > best or v != v
                        if take:
                            best = v
                            bpos = b + w * xw
                            bk = kb + w
                            seen = True
            y[y0 + n * yn + c * yc + od * yd + oh * yh + ow * yw] = x[bpos]
            ind[j0 + n * jn + c * jc + od * jd + oh * jh + ow * jw] = bk
            t += g
            n, c, od, oh, ow = _step(n, c, od, oh, ow, qn, qc, qd, qh, qw, C, OD, OH, OW)

    @cuda.jit
    def max_pool_backward(go, gog, ind, ig, gi, gig, tab, dims):
        """Gather: ``gi[i] = sum of go[o] over covering o with ind[o] == i``, in ascending o.

        Indices must have passed :func:`first_bad_index`; unchecked ones cannot make it write
        out of bounds either (each thread writes only its own element).
        """
        N, C, D, H, W, OD, OH, OW = dims
        _, _, ld, hd, _, _, lh, hh, _, _, lw, hw = axes_layout(dims)
        g0, gn, gc, gd, gh, gw = gog
        j0, jn, jc, jd, jh, jw = ig
        i0, in_, ic, id_, ih_, iw_ = gig
        t, g = cuda.grid(1), cuda.gridsize(1)
        n, c, d, h, w = _split(t, C, D, H, W)
        qn, qc, qd, qh, qw = _split(g, C, D, H, W)
        while t < N * C * D * H * W:
            k = (d * H + h) * W + w
            gb = g0 + n * gn + c * gc
            jb = j0 + n * jn + c * jc
            ow0, ow1 = tab[lw + w], tab[hw + w]
            s = acc_t(0)
            for od in range(tab[ld + d], tab[hd + d]):
                for oh in range(tab[lh + h], tab[hh + h]):
                    gr = gb + od * gd + oh * gh
                    jr = jb + od * jd + oh * jh
                    for ow in range(ow0, ow1):
                        if np.int64(ind[jr + ow * jw]) == k:
                            s += acc_t(decode(go[gr + ow * gw]))
            gi[i0 + n * in_ + c * ic + d * id_ + h * ih_ + w * iw_] = encode(s)
            t += g
            n, c, d, h, w = _step(n, c, d, h, w, qn, qc, qd, qh, qw, C, D, H, W)

    @cuda.jit
    def avg_pool_warps(x, xg, y, yg, tab, dims):
        """:func:`avg_pool` with a warp per output, for large windows: lane L sums the window's
        elements k = L, L + 32, ... in ascending k (the contract's lane ``k % 32``, so the same
        bits), then lanes combine by halving through shared memory (lane i += lane i + 16, ...).
        Lanes past the window's end hold +0.0, which changes no lane."""
        N, C, D, H, W, OD, OH, OW = dims
        sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = axes_layout(dims)
        x0, xn, xc, xd, xh, xw = xg
        y0, yn, yc, yd, yh, yw = yg
        part = cuda.shared.array(WARP_BLOCK, acc_t)
        valid = cuda.shared.array(WARP_BLOCK, np.int64)
        tid = cuda.threadIdx.x
        lane, base, step, o = _warp_grid(tid, cuda.blockIdx.x, cuda.gridDim.x, cuda.blockDim.x)
        total = N * C * OD * OH * OW
        n, c, od, oh, ow = _split(o, C, OD, OH, OW)
        qn, qc, qd, qh, qw = _split(step, C, OD, OH, OW)
        while base < total:  # the same trips for every thread of a block (it synchronises)
            s = acc_t(0)
            count = 0
            if o < total:
                d0, h0, w0 = tab[sd + od], tab[sh + oh], tab[sw + ow]
                wh, ww = tab[eh + oh] - h0, tab[ew + ow] - w0
                volume = (tab[ed + od] - d0) * wh * ww
                xb = x0 + n * xn + c * xc + d0 * xd + h0 * xh + w0 * xw
                # the lane's first element and the step of 32 elements as window offsets
                pd, ph, pw = _digits(lane, wh, ww)
                sd_, sh_, sw_ = _digits(LANES, wh, ww)
                k = lane
                while k < volume:
                    v = acc_t(decode(x[xb + pd * xd + ph * xh + pw * xw]))
                    if not skipna or v == v:
                        s += v
                        count += 1
                    k += LANES
                    pd, ph, pw = _advance(pd, ph, pw, sd_, sh_, sw_, wh, ww)
            part[tid] = s
            valid[tid] = count
            cuda.syncthreads()
            half = LANES // 2
            while half >= 1:
                if lane < half:
                    part[tid] += part[tid + half]
                    valid[tid] += valid[tid + half]
                cuda.syncthreads()
                half //= 2
            if lane == 0 and o < total:
                # with skipna an all-NaN window divides 0 by 0: NaN
                y[y0 + n * yn + c * yc + od * yd + oh * yh + ow * yw] = encode(
                    acc_t(part[tid] / acc_t(valid[tid]))
                )
            cuda.syncthreads()
            base += step
            o += step
            n, c, od, oh, ow = _step(n, c, od, oh, ow, qn, qc, qd, qh, qw, C, OD, OH, OW)

    @cuda.jit
    def max_pool_warps(x, xg, y, yg, ind, ig, tab, dims):
        """:func:`max_pool` with a warp per output, for large windows: lane L scans the
        window's elements k = L, L + 32, ... as :func:`max_pool` scans the whole window, then
        lanes merge by halving, keeping what the whole scan keeps: the last NaN, else the first
        maximum (with ``skipna``: the first maximum of the numbers, else the first element)."""
        N, C, D, H, W, OD, OH, OW = dims
        sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = axes_layout(dims)
        x0, xn, xc, xd, xh, xw = xg
        y0, yn, yc, yd, yh, yw = yg
        j0, jn, jc, jd, jh, jw = ig
        best_s = cuda.shared.array(WARP_BLOCK, acc_t)
        k_s = cuda.shared.array(WARP_BLOCK, np.int64)
        seen_s = cuda.shared.array(WARP_BLOCK, np.int32)
        tid = cuda.threadIdx.x
        lane, base, step, o = _warp_grid(tid, cuda.blockIdx.x, cuda.gridDim.x, cuda.blockDim.x)
        total = N * C * OD * OH * OW
        n, c, od, oh, ow = _split(o, C, OD, OH, OW)
        qn, qc, qd, qh, qw = _split(step, C, OD, OH, OW)
        while base < total:  # the same trips for every thread of a block (it synchronises)
            best = acc_t(-np.inf)
            bk = np.int64(lane)
            seen = False
            d0, h0, w0 = 0, 0, 0
            wh, ww = 1, 1
            if o < total:
                d0, h0, w0 = tab[sd + od], tab[sh + oh], tab[sw + ow]
                wh, ww = tab[eh + oh] - h0, tab[ew + ow] - w0
                volume = (tab[ed + od] - d0) * wh * ww
                xb = x0 + n * xn + c * xc + d0 * xd + h0 * xh + w0 * xw
                pd, ph, pw = _digits(lane, wh, ww)
                sd_, sh_, sw_ = _digits(LANES, wh, ww)
                k = np.int64(lane)
                while k < volume:
                    v = acc_t(decode(x[xb + pd * xd + ph * xh + pw * xw]))
                    if skipna:
                        take = v > best or (not seen and v == v)
                    else:
                        take = v > best or v != v
                    if take:
                        best = v
                        bk = k
                        seen = True
                    k += LANES
                    pd, ph, pw = _advance(pd, ph, pw, sd_, sh_, sw_, wh, ww)
            best_s[tid] = best
            k_s[tid] = bk
            seen_s[tid] = 1 if seen else 0
            cuda.syncthreads()
            half = LANES // 2
            while half >= 1:
                if lane < half:
                    a, b = best_s[tid], best_s[tid + half]
                    ka, kb = k_s[tid], k_s[tid + half]
                    if skipna:
                        # lanes that saw no number rank last (the earlier of them first)
                        sa, sb = seen_s[tid] != 0, seen_s[tid + half] != 0
                        later = sb and (not sa or b > a or (b == a and kb < ka))
                        if sb:
                            seen_s[tid] = 1
                    else:
                        # NaN ranks first (the later NaN first), then the larger, then the earlier
                        if a != a or b != b:
                            later = b != b and (a == a or kb > ka)
                        else:
                            later = b > a or (b == a and kb < ka)
                    if later:
                        best_s[tid] = b
                        k_s[tid] = kb
                cuda.syncthreads()
                half //= 2
            if lane == 0 and o < total:
                pd, ph, pw = _digits(k_s[tid], wh, ww)
                bpos = x0 + n * xn + c * xc + (d0 + pd) * xd + (h0 + ph) * xh + (w0 + pw) * xw
                y[y0 + n * yn + c * yc + od * yd + oh * yh + ow * yw] = x[bpos]
                ind[j0 + n * jn + c * jc + od * jd + oh * jh + ow * jw] = (
                    ((d0 + pd) * H + h0 + ph) * W + w0 + pw
                )
            cuda.syncthreads()
            base += step
            o += step
            n, c, od, oh, ow = _step(n, c, od, oh, ow, qn, qc, qd, qh, qw, C, OD, OH, OW)

    @cuda.jit
    def max_pool_backward_scatter(go, gog, ind, ig, gi, gig, tab, dims, flag):
        """The max backward where no two windows share an element (each axis's windows tile
        it): a thread per output writes its gradient, as the gather rounds it (+0.0 plus the
        value), to its index, the one gradient that element receives; ``gi`` holds +0.0
        elsewhere. An index outside its window is not written: ``flag[0]`` becomes the least
        such position, as :func:`first_bad_index` reports it."""
        N, C, D, H, W, OD, OH, OW = dims
        sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = axes_layout(dims)
        g0, gn, gc, gd, gh, gw = gog
        j0, jn, jc, jd, jh, jw = ig
        i0, in_, ic, id_, ih_, iw_ = gig
        t, g = cuda.grid(1), cuda.gridsize(1)
        n, c, od, oh, ow = _split(t, C, OD, OH, OW)
        qn, qc, qd, qh, qw = _split(g, C, OD, OH, OW)
        while t < N * C * OD * OH * OW:
            k = np.int64(ind[j0 + n * jn + c * jc + od * jd + oh * jh + ow * jw])
            if index_in_window(
                k, H, W, tab[sd + od], tab[ed + od], tab[sh + oh], tab[eh + oh], tab[sw + ow],
                tab[ew + ow],
            ):
                d, h, w = _digits(k, H, W)
                v = acc_t(decode(go[g0 + n * gn + c * gc + od * gd + oh * gh + ow * gw]))
                gi[i0 + n * in_ + c * ic + d * id_ + h * ih_ + w * iw_] = encode(acc_t(0) + v)
            else:
                cuda.atomic.min(flag, 0, np.uint64(t))
            t += g
            n, c, od, oh, ow = _step(n, c, od, oh, ow, qn, qc, qd, qh, qw, C, OD, OH, OW)

    @cuda.jit
    def avg_pool_backward_tiled(go, gog, gi, gig, tab, dims, x, xg, cnt):
        """:func:`avg_pool_backward` where the windows tile the input: each element's one
        covering output comes from the tables (no loops over covering ranges), and its
        gradient is the gather's one term, +0.0 plus ``go[o] / volume(o)``."""
        N, C, D, H, W, OD, OH, OW = dims
        sd, ed, ld, _, sh, eh, lh, _, sw, ew, lw, _ = axes_layout(dims)
        g0, gn, gc, gd, gh, gw = gog
        i0, in_, ic, id_, ih_, iw_ = gig
        x0, xn, xc, xd, xh, xw = xg
        t, g = cuda.grid(1), cuda.gridsize(1)
        n, c, d, h, w = _split(t, C, D, H, W)
        qn, qc, qd, qh, qw = _split(g, C, D, H, W)
        while t < N * C * D * H * W:
            od, oh, ow = tab[ld + d], tab[lh + h], tab[lw + w]
            v = acc_t(decode(go[g0 + n * gn + c * gc + od * gd + oh * gh + ow * gw]))
            if skipna:
                e = acc_t(decode(x[x0 + n * xn + c * xc + d * xd + h * xh + w * xw]))
                s = acc_t(0)
                if e == e:
                    s += v / acc_t(cnt[((n * C + c) * OD + od) * OH * OW + oh * OW + ow])
            else:
                vol = (tab[ed + od] - tab[sd + od]) * (tab[eh + oh] - tab[sh + oh]) * (
                    tab[ew + ow] - tab[sw + ow]
                )
                s = acc_t(0) + v / acc_t(vol)
            gi[i0 + n * in_ + c * ic + d * id_ + h * ih_ + w * iw_] = encode(s)
            t += g
            n, c, d, h, w = _step(n, c, d, h, w, qn, qc, qd, qh, qw, C, D, H, W)

    return KernelSet(avg_pool, avg_pool_backward, max_pool, max_pool_backward, count_valid,
                     avg_pool_warps, max_pool_warps, max_pool_backward_scatter,
                     avg_pool_backward_tiled)


@cuda.jit
def first_bad_index(ind, ig, tab, dims, flag):
    """``flag[0] = min`` C-order position of an index outside its own window (else untouched);
    ``flag`` is uint64."""
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, _, _, sh, eh, _, _, sw, ew, _, _ = axes_layout(dims)
    j0, jn, jc, jd, jh, jw = ig
    t, g = cuda.grid(1), cuda.gridsize(1)
    n, c, od, oh, ow = _split(t, C, OD, OH, OW)
    qn, qc, qd, qh, qw = _split(g, C, OD, OH, OW)
    while t < N * C * OD * OH * OW:
        k = np.int64(ind[j0 + n * jn + c * jc + od * jd + oh * jh + ow * jw])
        if not index_in_window(
            k, H, W, tab[sd + od], tab[ed + od], tab[sh + oh], tab[eh + oh], tab[sw + ow],
            tab[ew + ow],
        ):
            cuda.atomic.min(flag, 0, np.uint64(t))
        t += g
        n, c, od, oh, ow = _step(n, c, od, oh, ow, qn, qc, qd, qh, qw, C, OD, OH, OW)


@cuda.jit
def fill_zero(a, ag, shape):
    """Write 0 to every element of a (up to) 5-D array given as flat storage + geometry."""
    a0, s0, s1, s2, s3, s4 = ag
    n0, n1, n2, n3, n4 = shape
    t, g = cuda.grid(1), cuda.gridsize(1)
    i0, i1, i2, i3, i4 = _split(t, n1, n2, n3, n4)
    q0, q1, q2, q3, q4 = _split(g, n1, n2, n3, n4)
    while t < n0 * n1 * n2 * n3 * n4:
        a[a0 + i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3 + i4 * s4] = 0
        t += g
        i0, i1, i2, i3, i4 = _step(i0, i1, i2, i3, i4, q0, q1, q2, q3, q4, n1, n2, n3, n4)


#: Storage dtype -> (decode, encode, accumulation type); see :mod:`adaptive_pool.dtypes`.
STORAGE_DTYPES = {
    np.dtype(np.float32): (np.float32, np.float32, np.float32),
    np.dtype(np.float64): (np.float64, np.float64, np.float64),
    np.dtype(np.uint16): (f16_decode, f16_encode, np.float32),  # float16 bits
    np.dtype(np.int16): (bf16_decode, bf16_encode, np.float32),  # bfloat16 bits
}

_SETS: dict[tuple[np.dtype, bool], KernelSet] = {}
_SETS_LOCK = threading.Lock()


def kernels_for(storage: np.dtype, skipna: bool = False) -> KernelSet:
    """The kernels for one storage dtype (float32, float64, uint16 = float16, int16 = bf16),
    plain or NaN-skipping (each compiled on first use)."""
    key = (np.dtype(storage), bool(skipna))
    ks = _SETS.get(key)
    if ks is None:
        with _SETS_LOCK:
            ks = _SETS.get(key)
            if ks is None:
                ks = _SETS[key] = _make_kernels(*STORAGE_DTYPES[key[0]], key[1])
    return ks
