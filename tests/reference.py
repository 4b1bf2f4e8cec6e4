"""A slow, obviously correct NumPy reference for the adaptive pooling contract (DESIGN.md §2-3).

Written independently of :mod:`adaptive_pool`: the windows come straight from the definition
with Python integers, the loops run over output cells (forward) and scatter into input cells
(backward, the opposite direction from the library's gathers), and every sum is computed in
float64 from the values decoded exactly to float64. Nothing here is fast; keep shapes small.

Also: exact rounding of float64 to each supported dtype, and the distance in ulps between two
arrays of one dtype, for the accuracy tests.
"""

from __future__ import annotations

import itertools
import math

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16), BF16)


# -- windows ------------------------------------------------------------------------------------
def window(o: int, in_size: int, out_size: int) -> tuple[int, int]:
    """``[floor(o*I/O), ceil((o+1)*I/O))`` with exact Python integers."""
    start = (o * in_size) // out_size
    end = -((-(o + 1) * in_size) // out_size)
    return start, end


def windows(in_size: int, out_size: int) -> list[tuple[int, int]]:
    return [window(o, in_size, out_size) for o in range(out_size)]


def covering(i: int, in_size: int, out_size: int) -> list[int]:
    """Every output cell whose window contains input position ``i`` (brute force)."""
    return [o for o, (s, e) in enumerate(windows(in_size, out_size)) if s <= i < e]


def resolve_output_size(output_size, in_spatial):
    """``output_size`` as one int per axis (an int repeats, None keeps the input size)."""
    if isinstance(output_size, int):
        return (output_size,) * len(in_spatial)
    return tuple(i if o is None else int(o) for o, i in zip(output_size, in_spatial))


# -- helpers ------------------------------------------------------------------------------------
def to_f64(a: np.ndarray) -> np.ndarray:
    """Exact float64 copy of an array of any supported float dtype."""
    return np.asarray(a).astype(np.float64)


# -- forward ------------------------------------------------------------------------------------
def _cells(in_spatial, out_spatial):
    """Every output cell with its window: ``(o, (slice, ...))`` over the spatial axes."""
    per_axis = [
        [(o, slice(*window(o, i, n))) for o in range(n)] for i, n in zip(in_spatial, out_spatial)
    ]
    for combo in itertools.product(*per_axis):
        yield tuple(o for o, _ in combo), tuple(s for _, s in combo)


def avg_pool(x: np.ndarray, output_size, rank: int, skipna: bool = False) -> np.ndarray:
    """Adaptive average pooling over the last ``rank`` axes; float64 result (not rounded).
    With ``skipna``: ``np.nanmean`` of each window (NaN where a window has no number)."""
    x64 = to_f64(x)
    in_sp = x64.shape[-rank:]
    out_sp = resolve_output_size(output_size, in_sp)
    lead = x64.shape[:-rank]
    y = np.zeros(lead + out_sp, np.float64)
    for o, win in _cells(in_sp, out_sp):
        cells = x64[(Ellipsis,) + win]
        count = math.prod(s.stop - s.start for s in win)
        flat = cells.reshape(lead + (count,))
        if skipna:
            valid = ~np.isnan(flat)
            n = valid.sum(-1)
            with np.errstate(invalid="ignore", divide="ignore"):
                y[(Ellipsis,) + o] = np.where(valid, flat, 0).sum(-1) / n
        else:
            y[(Ellipsis,) + o] = flat.sum(-1) / count
    return y


def max_pool(
    x: np.ndarray, output_size, rank: int, skipna: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Adaptive max pooling over the last ``rank`` axes: (values as float64, int64 indices).

    The literal scan of the contract: each window in C order (d, h, w) from -inf with the index
    of its first element, taking ``v`` when ``v > best or isnan(v)``; an index is the flat
    offset of the element inside its ``(n, c)`` plane. With ``skipna``: ``np.nanmax`` and
    ``np.nanargmax`` of the window (NaN and the first element's index when it has no number).
    """
    if skipna:
        return _nanmax_pool(x, output_size, rank)
    x64 = to_f64(x)
    in_sp = x64.shape[-rank:]
    out_sp = resolve_output_size(output_size, in_sp)
    lead = x64.shape[:-rank]
    planes = x64.reshape((-1,) + in_sp)
    y = np.zeros((planes.shape[0],) + out_sp, np.float64)
    ind = np.zeros((planes.shape[0],) + out_sp, np.int64)
    for p in range(planes.shape[0]):
        plane = planes[p]
        for o, win in _cells(in_sp, out_sp):
            positions = list(itertools.product(*(range(s.start, s.stop) for s in win)))
            best = -math.inf
            where = int(np.ravel_multi_index(positions[0], in_sp))
            for pos in positions:
                v = float(plane[pos])
                if v > best or math.isnan(v):
                    best = v
                    where = int(np.ravel_multi_index(pos, in_sp))
            y[(p,) + o] = best
            ind[(p,) + o] = where
    return y.reshape(lead + out_sp), ind.reshape(lead + out_sp)


def lane_sum(values, acc_dtype, skipna: bool = False) -> np.generic:
    """The contract's summation order, literally: element k into lane ``k % 32`` (each lane from
    +0.0, in ascending k), then lane i += lane i + 16, + 8, + 4, + 2, + 1; in ``acc_dtype``.
    With ``skipna`` a NaN element is not added (its position k still counts)."""
    acc = np.dtype(acc_dtype).type
    lanes = [acc(0.0)] * 32
    for k, v in enumerate(values):
        if not (skipna and math.isnan(v)):
            lanes[k % 32] = acc(lanes[k % 32] + acc(v))
    half = 16
    while half >= 1:
        for i in range(half):
            lanes[i] = acc(lanes[i] + lanes[i + half])
        half //= 2
    return lanes[0]


def avg_pool_in_order(x: np.ndarray, output_size, rank: int, skipna: bool = False) -> np.ndarray:
    """The average exactly as the contract orders it, rounded once to ``x.dtype``: lane sums
    of each window's elements in C order, in float32 (float64 for float64), divided by the
    volume or, with ``skipna``, the number of non-NaN elements. Bits to compare with the
    kernels' (slow: tiny shapes)."""
    acc = np.float64 if x.dtype == np.float64 else np.float32
    xa = np.asarray(x).astype(acc)
    in_sp = xa.shape[-rank:]
    out_sp = resolve_output_size(output_size, in_sp)
    lead = xa.shape[:-rank]
    planes = xa.reshape((-1,) + in_sp)
    y = np.zeros((planes.shape[0],) + out_sp, acc)
    for p in range(planes.shape[0]):
        for o, win in _cells(in_sp, out_sp):
            vals = planes[p][win].ravel()
            count = int((~np.isnan(vals)).sum()) if skipna else len(vals)
            total = lane_sum(vals, acc, skipna)
            y[(p,) + o] = acc(total / acc(count)) if count else acc(np.nan)
    return y.reshape(lead + out_sp).astype(x.dtype)


def _nanmax_pool(x, output_size, rank):
    x64 = to_f64(x)
    in_sp = x64.shape[-rank:]
    out_sp = resolve_output_size(output_size, in_sp)
    lead = x64.shape[:-rank]
    planes = x64.reshape((-1,) + in_sp)
    y = np.full((planes.shape[0],) + out_sp, np.nan)
    ind = np.zeros((planes.shape[0],) + out_sp, np.int64)
    for p in range(planes.shape[0]):
        for o, win in _cells(in_sp, out_sp):
            vals = planes[p][win].ravel()
            # the first maximum of the numbers (np.nanargmax would take a NaN for -inf: it
            # ties NaN with -inf, so [nan, -inf] gave 0), or the first element if none
            valid = ~np.isnan(vals)
            at = int(np.flatnonzero(valid & (vals == vals[valid].max()))[0]) if valid.any() else 0
            pos = np.unravel_index(at, tuple(s.stop - s.start for s in win))
            y[(p,) + o] = vals[at]
            ind[(p,) + o] = np.ravel_multi_index(
                tuple(s.start + q for s, q in zip(win, pos)), in_sp
            )
    return y.reshape(lead + out_sp), ind.reshape(lead + out_sp)


# -- backward -----------------------------------------------------------------------------------
def avg_pool_backward(
    grad_output: np.ndarray, x_shape: tuple[int, ...], rank: int, x: np.ndarray | None = None
) -> np.ndarray:
    """Scatter ``grad_output[o] / volume(o)`` over each window; float64 result. Given ``x``
    (the NaN-skipping average's gradient): ``grad_output[o] / count(o)`` over the window's
    non-NaN elements only, ``count`` being how many there are."""
    g = to_f64(grad_output)
    in_sp = tuple(x_shape[-rank:])
    gi = np.zeros(x_shape, np.float64)
    valid = None if x is None else ~np.isnan(to_f64(x))
    for o, win in _cells(in_sp, g.shape[-rank:]):
        at = (Ellipsis,) + win
        if valid is None:
            count = math.prod(s.stop - s.start for s in win)
            gi[at] += (g[(Ellipsis,) + o] / count)[(Ellipsis,) + (None,) * rank]
        else:
            count = valid[at].reshape(valid.shape[:-rank] + (-1,)).sum(-1)
            with np.errstate(invalid="ignore", divide="ignore"):
                share = (g[(Ellipsis,) + o] / count)[(Ellipsis,) + (None,) * rank]
            gi[at] += np.where(valid[at], share, 0.0)
    return gi


def max_pool_backward(
    grad_output: np.ndarray, x_shape: tuple[int, ...], indices: np.ndarray, rank: int
) -> np.ndarray:
    """Scatter ``grad_output[o]`` to the flat in-plane position ``indices[o]``; float64 result."""
    plane = math.prod(x_shape[-rank:])
    g = to_f64(grad_output).reshape(-1, math.prod(grad_output.shape[-rank:]))
    ind = np.asarray(indices).reshape(g.shape)
    gi = np.zeros((g.shape[0], plane), np.float64)
    for p in range(g.shape[0]):
        for k, v in zip(ind[p].tolist(), g[p].tolist()):
            gi[p, k] += v
    return gi.reshape(x_shape)


def avg_pool2d(x, output_size):
    return avg_pool(x, output_size, 2)


def avg_pool2d_backward(grad_output, x_shape):
    return avg_pool_backward(grad_output, x_shape, 2)


def max_pool3d(x, output_size):
    return max_pool(x, output_size, 3)


def max_pool3d_backward(grad_output, x_shape, indices):
    return max_pool_backward(grad_output, x_shape, indices, 3)


# -- rounding and ulps --------------------------------------------------------------------------
def _ordered(a: np.ndarray) -> np.ndarray:
    """Map float bit patterns to int64s whose order is the floats' order (-0 == +0)."""
    a = np.asarray(a)
    b = a.view({2: np.int16, 4: np.int32, 8: np.int64}[a.itemsize]).astype(np.int64)
    mag = b & np.int64(2 ** (8 * a.itemsize - 1) - 1)
    return np.where(b < 0, -mag, mag)


def round_exact(v64: np.ndarray, dtype) -> np.ndarray:
    """Round float64 values to ``dtype`` once, to nearest even (NumPy's casts to bfloat16 go
    through float32 and may round twice, so the neighbours are checked here)."""
    dtype = np.dtype(dtype)
    v64 = np.asarray(v64, np.float64)
    if dtype == np.float64:
        return v64.copy()
    first = v64.astype(dtype)
    if dtype in (np.float32, np.float16):
        return first  # NumPy rounds float64 directly to these
    # bfloat16: choose among the neighbours of the cast the nearest one, ties to even (the
    # first of equals in the order -1, 0, +1; a neighbour that is not finite never wins).
    bits = first.view(np.uint16).astype(np.int64)

    def neighbour(delta):
        """The pattern ``delta`` away, its distance to ``v64`` and its last bit."""
        cand_bits = ((bits + delta) & 0xFFFF).astype(np.uint16)
        cand = cand_bits.view(BF16)
        with np.errstate(invalid="ignore"):  # (NaN neighbours of infinities and NaN)
            c64 = cand.astype(np.float64)
            dist = np.where(np.isfinite(c64), np.abs(c64 - v64), np.inf)
        return cand, dist, cand_bits & 1

    best, best_dist, best_odd = neighbour(-1)
    for delta in (0, 1):
        cand, dist, odd = neighbour(delta)
        better = (dist < best_dist) | ((dist == best_dist) & (odd < best_odd))
        best = np.where(better, cand, best)
        best_dist = np.where(better, dist, best_dist)
        best_odd = np.where(better, odd, best_odd)
    with np.errstate(invalid="ignore"):
        keep = ~(np.isfinite(v64) & np.isfinite(first.astype(np.float64)))
    return np.where(keep, first, best).astype(dtype)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many representable values of their (common) dtype lie between ``a`` and ``b``.

    NaN against NaN is 0; NaN against a number is a huge number.
    """
    a = np.asarray(a)
    b = np.asarray(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    d = np.abs(_ordered(a) - _ordered(b))
    an = np.isnan(a.astype(np.float64))
    bn = np.isnan(b.astype(np.float64))
    d = np.where(an & bn, 0, np.where(an | bn, 2**62, d))
    return d


def max_ulp(result: np.ndarray, ref64: np.ndarray) -> int:
    """Largest distance, in ulps of ``result.dtype``, from ``ref64`` rounded once to it."""
    if result.size == 0:
        return 0
    return int(np.max(ulp_distance(result, round_exact(ref64, result.dtype))))


def covering_fast(i: int, in_size: int, out_size: int) -> list[int]:
    """:func:`covering` for large sizes: only the cells near ``i * O / I`` can hold ``i``."""
    guess = (i * out_size) // in_size
    lo, hi = max(0, guess - 2), min(out_size, guess + 3 + out_size // in_size)
    cells = [o for o in range(lo, hi) if window(o, in_size, out_size)[0] <= i < window(o, in_size, out_size)[1]]
    assert cells and (cells[0] == 0 or i >= window(cells[0] - 1, in_size, out_size)[1])
    return cells
