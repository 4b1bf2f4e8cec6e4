"""Run the operators on one block of a larger problem, bit for bit as the whole problem would.

The tasks of the Dask layer call these functions; they know nothing of Dask. A block is given
by its ranges on the spatial axes of the whole problem and receives the arrays it needs, already
gathered:

* a forward block computes output cells ``[o0, o1)`` of each axis from the input range
  ``[start(o0), end(o1 - 1))`` (:func:`~adaptive_pool.windows.input_spans`), which holds each
  of its windows whole;
* a backward block computes the gradient of input positions ``[i0, i1)`` from the output cells
  ``[cover_lo(i0), cover_hi(i1 - 1))`` that cover them
  (:func:`~adaptive_pool.windows.cover_spans`).

Each runs the library's own kernels, through an :class:`~adaptive_pool.executors.Executor`
given the global window tables rebased to the block
(:func:`~adaptive_pool.windows.build_block_tables`): every window keeps its global extent and
volume, and every sum has the same terms in the same order as in the single-array call. Only
small tables are built here, from the sizes of the whole problem and the block's ranges.

Max indices are global flat offsets inside each ``(n, c)`` plane; they are converted to and
from the block's own offsets here. Arrays may be NumPy or CuPy: the arithmetic on them uses
array methods and operators (NumPy functions dispatch to CuPy).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from . import windows
from .dispatch import backend_for
from .executors import Executor, plan_key

__all__ = [
    "NO_BAD_INDEX",
    "pad3",
    "forward_block",
    "backward_block",
    "first_bad_index",
]

#: What :func:`first_bad_index` reports for a block whose indices are all inside their windows.
NO_BAD_INDEX = np.iinfo(np.int64).max

Ranges = Sequence[tuple[int, int]]


def pad3(sizes: Sequence[Any], fill: Any = 1) -> tuple:
    """``sizes`` of 1 to 3 spatial axes as 3 axes (d, h, w): leading singleton axes, as the
    kernels see every problem."""
    return (fill,) * (3 - len(sizes)) + tuple(sizes)


def _tables(in_sizes, out_sizes, in_ranges: Ranges, out_ranges: Ranges) -> np.ndarray:
    return windows.build_block_tables(
        pad3(in_sizes), pad3(out_sizes), pad3(in_ranges, (0, 1)), pad3(out_ranges, (0, 1))
    )


def _starts(tab: np.ndarray, in_ranges: Ranges, out_ranges: Ranges) -> list[np.ndarray]:
    """The rebased window starts of the block's outputs on each of the 3 axes."""
    res, base = [], 0
    for (i0, i1), (o0, o1) in zip(pad3(in_ranges, (0, 1)), pad3(out_ranges, (0, 1))):
        res.append(tab[base : base + o1 - o0])
        base += windows.table_size((i1 - i0,), (o1 - o0,))
    return res


def _executor(op: str, x_shape, dtype, out_local, index_dtype, tab, like, skipna) -> Executor:
    be = backend_for(x=like)
    key = plan_key(op, be, tuple(x_shape), dtype, tuple(out_local), index_dtype, skipna=skipna)
    return Executor(key, be, tables=tab)


def _like(table: np.ndarray, ref: Any) -> Any:
    """A host table on ``ref``'s device (itself for NumPy arrays)."""
    return np.asarray(table, like=ref)


def _coords(k, sizes3):
    """``(d, h, w)`` of flat in-plane offsets ``k`` (int64) of a plane of ``sizes3``."""
    _, H, W = sizes3
    t = k // W
    return t // H, t % H, k % W


def _flat(d, h, w, sizes3):
    _, H, W = sizes3
    return (d * H + h) * W + w


def _axes3(lead: int, a):
    """``a``, one table per axis (d, h, w), shaped to broadcast against a 5-D block."""
    d, h, w = a
    return d.reshape((1,) * lead + (-1, 1, 1)), h.reshape(-1, 1), w


def forward_block(
    xb: Any,
    out_ranges: Ranges,
    *,
    op: str,
    in_sizes: tuple[int, ...],
    out_sizes: tuple[int, ...],
    index_dtype: Optional[np.dtype] = None,
    skipna: bool = False,
    stream: Any = None,
) -> Any:
    """The forward of output cells ``out_ranges`` from their gathered input ``xb``.

    Parameters
    ----------
    xb : array
        The input ``x[..., start(o0):end(o1 - 1), ...]`` (every spatial axis) of the block,
        with the leading (N, C) axes of the block.
    out_ranges : sequence of (int, int)
        The block's output cells ``[o0, o1)`` on each spatial axis.
    op : str
        The forward operator's name.
    in_sizes, out_sizes : tuple of int
        Spatial input and output sizes of the whole problem.
    index_dtype : numpy dtype, optional
        The max operators' index dtype.
    skipna : bool
        Skip NaN (each window is whole in the block, so the counts are too).
    stream : optional
        CUDA stream for CuPy blocks.

    Returns
    -------
    array or (array, array)
        The block of the result; for the max, with its global flat indices.
    """
    spans = [
        tuple(int(v) for v in windows.input_spans(o0, o1, i, o)[0])
        for (o0, o1), i, o in zip(out_ranges, in_sizes, out_sizes)
    ]
    tab = _tables(in_sizes, out_sizes, spans, out_ranges)
    out_local = tuple(o1 - o0 for o0, o1 in out_ranges)
    ex = _executor(op, xb.shape, xb.dtype, out_local, index_dtype, tab, xb, skipna)
    if index_dtype is None:
        return ex.run(xb, stream=stream)
    y, local = ex.run(xb, stream=stream)
    # the block's flat offsets (a plane of the gathered input) -> the whole plane's
    local_sizes = pad3(tuple(i1 - i0 for i0, i1 in spans))
    d, h, w = _coords(local.astype(np.int64), local_sizes)
    d0, h0, w0 = pad3([i0 for i0, _ in spans], 0)
    return y, _flat(d + d0, h + h0, w + w0, pad3(in_sizes)).astype(index_dtype)


def backward_block(
    grad_output: Any,
    indices: Any,
    in_ranges: Ranges,
    *,
    op: str,
    in_sizes: tuple[int, ...],
    out_sizes: tuple[int, ...],
    x: Any = None,
    stream: Any = None,
) -> Any:
    """The gradient of input positions ``in_ranges`` from the output cells covering them.

    Parameters
    ----------
    grad_output : array
        ``grad_output[..., cover_lo(i0):cover_hi(i1 - 1), ...]`` (every spatial axis), with the
        leading (N, C) axes of the block.
    indices : array or None
        The same block of the max forward's indices (global flat offsets), for the max
        backward. They must lie inside their windows (checked beforehand,
        :func:`first_bad_index`): an index outside its window is not detected here.
    in_ranges : sequence of (int, int)
        The block's input positions ``[i0, i1)`` on each spatial axis.
    op : str
        The backward operator's name.
    in_sizes, out_sizes : tuple of int
        Spatial input and output sizes of the whole problem.
    x : array, optional
        For the NaN-skipping average: ``x`` over every window of the covering cells,
        ``x[..., start(c0):end(c1 - 1), ...]``, so that their counts of non-NaN elements are
        whole. The gradient is computed over that range and the block cut out of it.
    stream : optional
        CUDA stream for CuPy blocks.

    Returns
    -------
    array
        The block ``grad_input[..., i0:i1, ...]``.
    """
    sp = len(in_sizes)
    covers = [
        tuple(int(v) for v in windows.cover_spans(i0, i1, i, o)[0])
        for (i0, i1), i, o in zip(in_ranges, in_sizes, out_sizes)
    ]
    lead = tuple(grad_output.shape[:-sp])
    if x is not None:
        return _skipna_backward_block(grad_output, x, in_ranges, covers, op, in_sizes,
                                      out_sizes, stream)
    tab = _tables(in_sizes, out_sizes, in_ranges, covers)
    in_local = tuple(i1 - i0 for i0, i1 in in_ranges)
    out_local = tuple(c1 - c0 for c0, c1 in covers)
    index_dtype = None if indices is None else indices.dtype
    ex = _executor(
        op, lead + in_local, grad_output.dtype, out_local, index_dtype, tab, grad_output, False
    )
    if indices is None:
        return ex.run(grad_output=grad_output, stream=stream)
    go, local = _localise(grad_output, indices, tab, in_ranges, covers, in_sizes)
    return ex.run(grad_output=go, indices=local, stream=stream)


def _skipna_backward_block(grad_output, x, in_ranges, covers, op, in_sizes, out_sizes, stream):
    """The NaN-skipping average's gradient over the whole input range of the covering cells
    (their counts need every element of their windows), cut down to the block: its elements
    are covered by those cells alone, so theirs are the whole problem's sums."""
    spans = [
        tuple(int(v) for v in windows.input_spans(c0, c1, i, o)[0])
        for (c0, c1), i, o in zip(covers, in_sizes, out_sizes)
    ]
    tab = _tables(in_sizes, out_sizes, spans, covers)
    out_local = tuple(c1 - c0 for c0, c1 in covers)
    ex = _executor(op, x.shape, x.dtype, out_local, None, tab, grad_output, True)
    gi = ex.run(x, grad_output=grad_output, stream=stream)
    cut = tuple(slice(i0 - s0, i1 - s0) for (i0, i1), (s0, _) in zip(in_ranges, spans))
    return gi[(Ellipsis,) + cut]


def _localise(grad_output, indices, tab, in_ranges, covers, in_sizes):
    """The block's gradients and indices in the block's own plane.

    An output cell whose argmax lies outside the block contributes nothing to it. Its gradient
    becomes +0.0 and its index the first element of its window inside the block (its window
    meets the block on every axis, being in the cover range). Every element's sum starts from
    +0.0, so it is never -0.0, and adding +0.0 leaves its bits unchanged: the block's sums are
    those of the whole problem.
    """
    lead = len(indices.shape) - len(in_sizes)
    shape5 = tuple(indices.shape[:lead]) + pad3(tuple(c1 - c0 for c0, c1 in covers))
    k = indices.reshape(shape5).astype(np.int64)
    d, h, w = _coords(k, pad3(in_sizes))
    (d0, d1), (h0, h1), (w0, w1) = pad3(in_ranges, (0, 1))
    inside = (d >= d0) & (d < d1) & (h >= h0) & (h < h1) & (w >= w0) & (w < w1)
    local_sizes = pad3(tuple(i1 - i0 for i0, i1 in in_ranges))
    local = _flat(d - d0, h - h0, w - w0, local_sizes)
    starts = _starts(tab, in_ranges, covers)
    sd, sh, sw = _axes3(lead, [_like(np.maximum(s, 0), k) for s in starts])
    first = _flat(sd, sh, sw, local_sizes)
    local = np.where(inside, local, first).astype(indices.dtype).reshape(indices.shape)
    # +0.0 is the all-zero bit pattern in every dtype (16-bit ones are stored as such)
    raw = grad_output.reshape(shape5).view(f"u{grad_output.dtype.itemsize}")
    go = np.where(inside, raw, 0).astype(raw.dtype).view(grad_output.dtype)
    return go.reshape(grad_output.shape), local


def first_bad_index(
    indices: Any,
    origin: Sequence[int],
    *,
    in_sizes: tuple[int, ...],
    out_sizes: tuple[int, ...],
    shape: tuple[int, ...],
) -> np.ndarray:
    """The first index of a block of the max indices that lies outside its window.

    Parameters
    ----------
    indices : array
        A block of the indices (global flat offsets), any leading axes.
    origin : sequence of int
        The block's position in the whole indices array, one entry per axis.
    in_sizes, out_sizes : tuple of int
        Spatial input and output sizes of the whole problem.
    shape : tuple of int
        The whole indices array's shape.

    Returns
    -------
    numpy.ndarray of int64, shape (2,)
        The C-order position in ``shape`` of the block's first bad index and its value, or
        ``[NO_BAD_INDEX, 0]``.
    """
    sp = len(in_sizes)
    if indices.size == 0:
        return np.array([NO_BAD_INDEX, 0], np.int64)
    out_ranges = [(o0, o0 + n) for o0, n in zip(origin[-sp:], indices.shape[-sp:])]
    spans = [
        tuple(int(v) for v in windows.input_spans(o0, o1, i, o)[0])
        for (o0, o1), i, o in zip(out_ranges, in_sizes, out_sizes)
    ]
    tab = _tables(in_sizes, out_sizes, spans, out_ranges)
    lead = len(shape) - sp
    shape5 = tuple(indices.shape[:lead]) + pad3(tuple(o1 - o0 for o0, o1 in out_ranges))
    k = indices.reshape(shape5).astype(np.int64)
    sizes3 = pad3(in_sizes)
    plane = int(np.prod(sizes3))
    kk = np.clip(k, 0, plane - 1)
    d, h, w = _coords(kk, sizes3)
    ok = k == kk
    # the windows in the plane's coordinates: the block's tables plus its input origin
    origin3 = pad3([i0 for i0, _ in spans], 0)
    starts = _axes3(lead, [_like(t, k) for t in _starts(tab, spans, out_ranges)])
    ends = _axes3(lead, [_like(t, k) for t in _ends(tab, spans, out_ranges)])
    for c, s, e, o in zip((d, h, w), starts, ends, origin3):
        ok &= (c >= s + o) & (c < e + o)
    bad = np.flatnonzero(~ok.reshape(-1))
    if bad.size == 0:
        return np.array([NO_BAD_INDEX, 0], np.int64)
    q = int(bad[0])
    local = np.unravel_index(q, indices.shape)
    pos = np.ravel_multi_index(tuple(int(a) + int(b) for a, b in zip(local, origin)), shape)
    return np.array([pos, int(k.reshape(-1)[q])], np.int64)


def _ends(tab: np.ndarray, in_ranges: Ranges, out_ranges: Ranges) -> list[np.ndarray]:
    """The rebased window ends of the block's outputs on each of the 3 axes."""
    res, base = [], 0
    for (i0, i1), (o0, o1) in zip(pad3(in_ranges, (0, 1)), pad3(out_ranges, (0, 1))):
        res.append(tab[base + o1 - o0 : base + 2 * (o1 - o0)])
        base += windows.table_size((i1 - i0,), (o1 - o0,))
    return res
