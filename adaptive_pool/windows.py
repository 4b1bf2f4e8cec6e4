"""Adaptive pooling windows: the only place their arithmetic is written.

For one axis with input size ``I`` and output size ``O``, output cell ``o`` pools the half-open
input range ``[start(o), end(o))`` with::

    start(o) = floor(o * I / O)        end(o) = ceil((o + 1) * I / O)

and input position ``i`` is covered by the contiguous output range ``[cover_lo(i), cover_hi(i))``::

    cover_lo(i) = floor(i * O / I)     cover_hi(i) = min(ceil((i + 1) * O / I), O)

Everything is exact 64-bit integer arithmetic (never floats), exact for every size below 2**62.

The scalar helpers are ``@numba.njit(inline="always")`` without a signature, the one form that
the CPU kernels, the CUDA kernels, the CUDA simulator and driverless PTX compiles all accept. They
take scalars only, never arrays. Executors precompute per-axis tables with them (the workspace).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = [
    "start",
    "end",
    "cover_lo",
    "cover_hi",
    "table_layout",
    "axes_layout",
    "index_in_window",
    "table_size",
    "build_tables",
    "axis_tables",
]

# Below this, a*b of two non-negative int64 operands cannot overflow.
_SQRT_INT64_MAX = 3037000499


@numba.njit(inline="always")
def _mul_divmod(a, b, c):
    """``divmod(a * b, c)`` exactly, for ``0 <= a <= c``, ``b >= 0``, ``0 < c < 2**62``.

    ``a * b`` may exceed 64 bits; the quotient never does (it is at most ``b``).
    """
    a = np.int64(a)
    b = np.int64(b)
    c = np.int64(c)
    qb = b // c
    rb = b - qb * c
    if a < _SQRT_INT64_MAX and rb < _SQRT_INT64_MAX:
        p = a * rb
        q = p // c
        return a * qb + q, p - q * c
    # Long multiplication by bits of a, keeping the partial product reduced modulo c. Every
    # intermediate stays below 2 * c < 2**63.
    q = np.int64(0)
    r = np.int64(0)
    for k in range(62, -1, -1):
        q = q + q
        r = r + r
        if r >= c:
            q += 1
            r -= c
        if (a >> k) & 1:
            r += rb
            if r >= c:
                q += 1
                r -= c
    return a * qb + q, r


@numba.njit(inline="always")
def start(o, in_size, out_size):
    """First input position pooled by output cell ``o``: ``floor(o * I / O)``."""
    q, _ = _mul_divmod(o, in_size, out_size)
    return q


@numba.njit(inline="always")
def end(o, in_size, out_size):
    """One past the last input position pooled by output cell ``o``: ``ceil((o+1) * I / O)``."""
    q, r = _mul_divmod(o + 1, in_size, out_size)
    return q + (r != 0)


@numba.njit(inline="always")
def cover_lo(i, in_size, out_size):
    """First output cell whose window contains input position ``i``: ``floor(i * O / I)``."""
    q, _ = _mul_divmod(i, out_size, in_size)
    return q


@numba.njit(inline="always")
def cover_hi(i, in_size, out_size):
    """One past the last output cell whose window contains ``i``: ``min(ceil((i+1)*O/I), O)``."""
    q, r = _mul_divmod(i + 1, out_size, in_size)
    return min(q + (r != 0), np.int64(out_size))


@numba.njit(inline="always")
def table_layout(in_size, out_size, base):
    """Offsets of one axis's four tables inside the packed window table.

    An axis occupies ``2 * O + 2 * I`` entries from ``base``: ``start[O]``, ``end[O]``,
    ``cover_lo[I]``, ``cover_hi[I]``. Returns ``(start_at, end_at, lo_at, hi_at, next_base)``.
    """
    end_at = base + out_size
    lo_at = end_at + out_size
    hi_at = lo_at + in_size
    return base, end_at, lo_at, hi_at, hi_at + in_size


@numba.njit(inline="always")
def axes_layout(dims):
    """Table offsets ``(start, end, lo, hi)`` of the d, h and w axes, flattened to 12 values.

    ``dims = (N, C, D, H, W, OD, OH, OW)``, the kernels' view of every problem; the table is the
    one :func:`build_tables` packs for ``(D, H, W) -> (OD, OH, OW)``.
    """
    _, _, D, H, W, OD, OH, OW = dims
    sd, ed, ld, hd, b = table_layout(D, OD, 0)
    sh, eh, lh, hh, b = table_layout(H, OH, b)
    sw, ew, lw, hw, _ = table_layout(W, OW, b)
    return sd, ed, ld, hd, sh, eh, lh, hh, sw, ew, lw, hw


@numba.njit(inline="always")
def index_in_window(k, plane_h, plane_w, d0, d1, h0, h1, w0, w1):
    """Whether flat in-plane index ``k = d*H*W + h*W + w`` lies in ``[d0,d1)x[h0,h1)x[w0,w1)``."""
    if k < 0:
        return False
    hw = plane_h * plane_w
    d = k // hw
    rem = k - d * hw
    h = rem // plane_w
    w = rem - h * plane_w
    return d0 <= d < d1 and h0 <= h < h1 and w0 <= w < w1


def table_size(in_sizes: tuple[int, ...], out_sizes: tuple[int, ...]) -> int:
    """Number of int64 entries of the packed window table for these axes."""
    return sum(2 * i + 2 * o for i, o in zip(in_sizes, out_sizes))


@numba.njit(cache=True)
def _fill_axis(tab, in_size, out_size, base):
    s_at, e_at, l_at, h_at, _ = table_layout(in_size, out_size, base)
    for o in range(out_size):
        tab[s_at + o] = start(o, in_size, out_size)
        tab[e_at + o] = end(o, in_size, out_size)
    for i in range(in_size):
        tab[l_at + i] = cover_lo(i, in_size, out_size)
        tab[h_at + i] = cover_hi(i, in_size, out_size)


def build_tables(
    in_sizes: tuple[int, ...], out_sizes: tuple[int, ...], out: np.ndarray | None = None
) -> np.ndarray:
    """Pack the window tables of every axis into one int64 array.

    Parameters
    ----------
    in_sizes, out_sizes : tuple of int
        Input and output size of each axis, outermost first. Output sizes must be positive.
    out : numpy.ndarray, optional
        A 1-D int64 array of at least :func:`table_size` entries to fill (a workspace).

    Returns
    -------
    numpy.ndarray
        The packed table: for each axis, ``start[O], end[O], cover_lo[I], cover_hi[I]``.
    """
    n = table_size(in_sizes, out_sizes)
    tab = np.empty(n, np.int64) if out is None else out[:n]
    base = 0
    for i, o in zip(in_sizes, out_sizes):
        _fill_axis(tab, i, o, base)
        base += 2 * i + 2 * o
    return tab


def axis_tables(in_size: int, out_size: int) -> dict[str, np.ndarray]:
    """The four window tables of one axis, by name (for inspection, plots and tests)."""
    tab = build_tables((in_size,), (out_size,))
    o, i = out_size, in_size
    return {
        "start": tab[:o],
        "end": tab[o : 2 * o],
        "cover_lo": tab[2 * o : 2 * o + i],
        "cover_hi": tab[2 * o + i :],
    }
