"""A slow, obviously correct NumPy reference for the adaptive pooling contract (DESIGN.md §2-3).

Written independently of :mod:`adaptive_pool`: the windows come straight from the definition
with Python integers, the loops run over output cells (forward) and scatter into input cells
(backward, the opposite direction from the library's gathers), and every sum is computed in
float64 from the values decoded exactly to float64. Nothing here is fast; keep shapes small.

Also: exact rounding of float64 to each supported dtype, and the distance in ulps between two
arrays of one dtype, for the accuracy tests.
"""

from __future__ import annotations

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


def _as5(a: np.ndarray, spatial: int, batched: bool) -> np.ndarray:
    if not batched:
        a = a[np.newaxis]
    if spatial == 2:
        a = a[:, :, np.newaxis]
    return a


def _batched(a: np.ndarray, spatial: int) -> bool:
    return a.ndim == spatial + 2


# -- forward ------------------------------------------------------------------------------------
def avg_pool2d(x: np.ndarray, output_size) -> np.ndarray:
    """Adaptive average pooling of ``(C,H,W)``/``(N,C,H,W)``; float64 result (not rounded)."""
    x64 = to_f64(x)
    H, W = x64.shape[-2:]
    OH, OW = resolve_output_size(output_size, (H, W))
    y = np.zeros(x64.shape[:-2] + (OH, OW), np.float64)
    for oh in range(OH):
        h0, h1 = window(oh, H, OH)
        for ow in range(OW):
            w0, w1 = window(ow, W, OW)
            cells = x64[..., h0:h1, w0:w1]
            count = (h1 - h0) * (w1 - w0)
            y[..., oh, ow] = cells.reshape(cells.shape[:-2] + (count,)).sum(-1) / count
    return y


def max_pool3d(x: np.ndarray, output_size) -> tuple[np.ndarray, np.ndarray]:
    """Adaptive max pooling of ``(C,D,H,W)``/``(N,C,D,H,W)``: (values as float64, int64 indices).

    The literal scan of the contract: each window in d, h, w order from -inf with the index of
    its first element, taking ``v`` when ``v > best or isnan(v)``.
    """
    batched = _batched(x, 3)
    x5 = _as5(to_f64(x), 3, batched)
    N, C, D, H, W = x5.shape
    OD, OH, OW = resolve_output_size(output_size, (D, H, W))
    y = np.zeros((N, C, OD, OH, OW), np.float64)
    ind = np.zeros((N, C, OD, OH, OW), np.int64)
    planes = x5.tolist()
    for n in range(N):
        for c in range(C):
            p = planes[n][c]
            for od in range(OD):
                d0, d1 = window(od, D, OD)
                for oh in range(OH):
                    h0, h1 = window(oh, H, OH)
                    for ow in range(OW):
                        w0, w1 = window(ow, W, OW)
                        best = -math.inf
                        where = (d0 * H + h0) * W + w0
                        for d in range(d0, d1):
                            for h in range(h0, h1):
                                for w in range(w0, w1):
                                    v = p[d][h][w]
                                    if v > best or math.isnan(v):
                                        best = v
                                        where = (d * H + h) * W + w
                        y[n, c, od, oh, ow] = best
                        ind[n, c, od, oh, ow] = where
    if not batched:
        y, ind = y[0], ind[0]
    return y, ind


# -- backward -----------------------------------------------------------------------------------
def avg_pool2d_backward(grad_output: np.ndarray, x_shape: tuple[int, ...]) -> np.ndarray:
    """Scatter ``grad_output[o] / volume(o)`` over each window; float64 result."""
    g = to_f64(grad_output)
    H, W = x_shape[-2:]
    OH, OW = g.shape[-2:]
    gi = np.zeros(x_shape, np.float64)
    for oh in range(OH):
        h0, h1 = window(oh, H, OH)
        for ow in range(OW):
            w0, w1 = window(ow, W, OW)
            gi[..., h0:h1, w0:w1] += (g[..., oh, ow] / ((h1 - h0) * (w1 - w0)))[..., None, None]
    return gi


def max_pool3d_backward(
    grad_output: np.ndarray, x_shape: tuple[int, ...], indices: np.ndarray
) -> np.ndarray:
    """Scatter ``grad_output[o]`` to the flat in-plane position ``indices[o]``; float64 result."""
    batched = len(x_shape) == 5
    g = _as5(to_f64(grad_output), 3, batched)
    ind = _as5(np.asarray(indices), 3, batched)
    N, C = g.shape[:2]
    D, H, W = x_shape[-3:]
    gi = np.zeros((N, C, D * H * W), np.float64)
    for n in range(N):
        for c in range(C):
            for k, v in zip(ind[n, c].ravel().tolist(), g[n, c].ravel().tolist()):
                gi[n, c, k] += v
    gi = gi.reshape((N, C, D, H, W))
    return gi if batched else gi[0]


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
    # bfloat16: choose among the neighbours of the cast the nearest one, ties to even.
    bits = first.view(np.uint16).astype(np.int64)
    out = first.copy()
    flat_v = v64.ravel()
    flat_b = bits.ravel()
    flat_o = out.ravel()
    for k in range(flat_v.size):
        v = flat_v[k]
        if not np.isfinite(v) or not np.isfinite(flat_o[k].astype(np.float64)):
            continue
        best = None
        for delta in (-1, 0, 1):
            cand_bits = np.array([(int(flat_b[k]) + delta) & 0xFFFF], np.uint16)
            cand = cand_bits.view(BF16)
            c64 = float(cand.astype(np.float64)[0])
            if not math.isfinite(c64):
                continue
            key = (abs(c64 - v), int(cand_bits[0]) & 1)
            if best is None or key < best[0]:
                best = (key, cand[0])
        flat_o[k] = best[1]
    return out


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
