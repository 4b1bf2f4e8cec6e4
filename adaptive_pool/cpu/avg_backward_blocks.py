"""The plain average backward of channels-last gradients: blocks of planes side by side.

The 8-planes backward (:func:`~adaptive_pool.cpu.avg_backward.avg_pool_backward_lanes`) reads a
gradient's 8 adjacent channels at a time; where the channels of ``grad_output`` are adjacent
(PyTorch's ``channels_last``), a work item here takes up to :data:`BLOCK` of them, so that
each window's bookkeeping (its shares, the partial rows of its output row, the rows of the
input) serves them all, and stores each plane of the result as one run through transposes
in registers (:func:`~adaptive_pool.cpu.work._store_outputs`). The sums are the lanes
kernel's, term for term: the same bits. A module of its own: Numba's cache of the other
average backward kernels stays valid.
"""

from __future__ import annotations

import numba
import numpy as np
from numba.extending import overload

from ..windows import axes_layout
from .access import acc, borrow, decodes, get, keep, scratch, store_row
from .avg_backward import _planes_as_last_d, _sum_part_rows
from .calls import run_chunks
from .work import (
    _BODY, _chunk, _output_buffer, _slab_planes, _step, _store_outputs, _unravel,
)

__all__ = ["BLOCK", "avg_pool_backward_block"]

#: The most planes a work item takes side by side (a multiple of ``LANES``): with 14x14
#: planes, 128 of them keep every row of the item in 100 KB of float32 sums (L2).
BLOCK = 128


def _store_planes(gi, ib, ic, ih_, iw_, rows, buf, P, nl, H, W):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(_store_planes, inline="always")
def _store_planes_impl(gi, ib, ic, ih_, iw_, rows, buf, P, nl, H, W):
    """Planes ``l < nl`` of the result (``gi[ib + l * ic + h * ih_ + w * iw_]``) from ``rows``
    (element ``(h, w)`` of plane ``l`` at ``rows[(h * W + w) * P + l]``), encoded into ``buf``
    first (one unit-stride loop) where ``gi`` holds 16-bit floats (a compile-time choice: the
    two arrays' types differ)."""
    if gi.dtype == rows.dtype:
        return lambda gi, ib, ic, ih_, iw_, rows, buf, P, nl, H, W: _store_rows(
            gi, ib, ic, ih_, iw_, rows, P, nl, H, W)

    def encoded(gi, ib, ic, ih_, iw_, rows, buf, P, nl, H, W):
        store_row(buf, 0, 1, H * W * P, rows, 0)
        _store_rows(gi, ib, ic, ih_, iw_, buf, P, nl, H, W)

    return encoded


@numba.njit(inline="always")
def _store_rows(gi, ib, ic, ih_, iw_, src, P, nl, H, W):
    """:func:`_store_planes` from ``src`` in ``gi``'s dtype: each plane as one run of ``H * W``
    where its rows follow each other (C-order results), else row by row. Row by row into
    C-order planes, 14 elements a run, the float32 64x512x14x14 -> 5x5 backward took 1.4x as
    long."""
    if ih_ == W * iw_:
        _store_outputs(gi, ib, ic, iw_, src, P, nl, 0, H * W)
    else:
        for h in range(H):
            _store_outputs(gi, ib + h * ih_, ic, iw_, src[h * W * P :], P, nl, 0, W)


@numba.njit(**_BODY)
def _avg_backward_block_chunk(ch, go, gog, gi, gig, tab, dims, block, nchunk):
    """Chunk ``ch`` of :func:`avg_pool_backward_block`."""
    go, gi, tab = borrow(go), borrow(gi), borrow(tab)
    N, C, D, H, W, OD, OH, OW = dims
    sd, ed, ld, hd, sh, eh, lh, hh, sw, ew, lw, hw = axes_layout(dims)
    g0, gn, gc, gd, gh, gw = gog
    i0, in_, ic, id_, ih_, iw_ = gig
    P = block
    CB = (C + P - 1) // P
    WP = W * P
    it_lo, it_hi = _chunk(ch, nchunk, N * CB * D)
    gv = scratch(go, OW * P)  # an output row's shares
    for k in range(gv.size):
        gv[k] = 0  # (lanes past a last block's planes hold numbers, never stored)
    part = scratch(go, _slab_planes(tab, ld, hd, D) * OH * WP)
    rowd = scratch(go, WP)
    rows = scratch(go, _output_buffer(H * W, P))  # (padded for the transposes' loads)
    buf = np.empty(rows.size if decodes(gi) else 0, gi.dtype)
    owners = (gv, part, rowd, rows, buf)  # views without counts (access.keep)
    gv, part, rowd, rows, buf = borrow(owners)
    wl = tab[lw : lw + W]
    wh = tab[hw : hw + W]
    _, d, cb, n = _unravel(it_lo, 1, D, CB)
    for it in range(it_lo, it_hi):
        c0 = cb * P
        nl = min(P, C - c0)
        od0, od1 = tab[ld + d], tab[hd + d]
        # a d in the same output planes as the last item's takes its partial rows as they are
        if not (it > it_lo and _planes_as_last_d(tab, ld, hd, d)):
            gb = g0 + n * gn + c0 * gc
            for od in range(od0, od1):
                vd = tab[ed + od] - tab[sd + od]
                for oh in range(OH):
                    vdh = vd * (tab[eh + oh] - tab[sh + oh])
                    gr = gb + od * gd + oh * gh
                    for ow in range(OW):
                        # volume as the integer product, converted once (bit-identical)
                        v = acc(go, vdh * (tab[ew + ow] - tab[sw + ow]))
                        o, q = gr + ow * gw, ow * P
                        for l in range(nl):  # (a run of go where its channels are adjacent)
                            gv[np.uint64(q + l)] = get(go, o + l * gc)
                        for l in range(nl):  # (the divisions one vector loop)
                            gv[np.uint64(q + l)] /= v
                    # each column's shares from +0.0 in ascending ow, all planes a vector loop
                    q = ((od - od0) * OH + oh) * WP
                    for w in range(W):
                        a = q + w * P
                        for l in range(P):
                            part[np.uint64(a + l)] = 0
                        for ow in range(wl[w], wh[w]):
                            s = ow * P
                            for l in range(P):
                                part[np.uint64(a + l)] += gv[np.uint64(s + l)]
        for h in range(H):
            lo, hi = tab[lh + h], tab[hh + h]
            _sum_part_rows(part, od1 - od0, OH, lo, hi - lo, WP, rows[h * WP :], rowd)
        _store_planes(gi, i0 + n * in_ + c0 * ic + d * id_, ic, ih_, iw_, rows, buf, P, nl, H,
                      W)
        _, d, cb, n = _step(0, d, cb, n, 1, D, CB)
    keep(owners)


@numba.njit(**_BODY)
def avg_pool_backward_block(at, go, gog, gi, gig, tab, dims, block, nchunk):
    """The plain average backward, ``block`` planes side by side (see the module's docstring).

    The sums of :func:`~adaptive_pool.cpu.avg_backward.avg_pool_backward_lanes`, term for
    term, in buffers whose innermost axis is the plane (``part[od, oh, w, plane]``,
    ``rows[h, w, plane]``); a work item is one ``(n, d)`` slab of a block of planes, all its
    rows summed before its planes are stored. A last block of fewer planes computes its spare
    lanes and does not store them.
    """
    run_chunks(_avg_backward_block_chunk, at, (go, gog, gi, gig, tab, dims, block, nchunk), nchunk)
