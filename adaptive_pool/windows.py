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

import types

import numba
import numpy as np

__all__ = [
    "start",
    "end",
    "cover_lo",
    "cover_hi",
    "table_layout",
    "axes_layout",
    "axes_offsets",
    "index_in_window",
    "table_size",
    "build_tables",
    "axis_tables",
    "input_spans",
    "cover_spans",
    "build_block_tables",
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


#: :func:`axes_layout` for Python callers: its own body (code object), run with
#: :func:`table_layout`'s Python function, whose dispatcher, called from Python, would compile
#: it (a quarter of a second in every process).
axes_offsets = types.FunctionType(
    axes_layout.py_func.__code__,
    {**globals(), "table_layout": table_layout.py_func},
    "axes_offsets",
)


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


def _fill_axis_small(tab: np.ndarray, in_size: int, out_size: int, base: int) -> None:
    """:func:`_fill_axis` for axes whose products ``(I + 1) * (O + 1)`` stay below ``2**63``
    (every axis whose tables fit in memory), in NumPy: the helpers' quotients are then plain
    int64 floor divisions. Compiling ``_fill_axis`` was 1.3 s of every cold first call."""
    s_at, e_at, l_at, h_at, next_base = table_layout.py_func(in_size, out_size, base)
    oi = np.arange(out_size + 1, dtype=np.int64) * in_size  # o * I for o = 0 .. O
    tab[s_at:e_at] = oi[:-1] // out_size
    tab[e_at:l_at] = -(-oi[1:] // out_size)
    io = np.arange(in_size + 1, dtype=np.int64) * out_size  # i * O for i = 0 .. I
    tab[l_at:h_at] = io[:-1] // in_size
    tab[h_at:next_base] = np.minimum(-(-io[1:] // in_size), out_size)


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
        fill = _fill_axis_small if (i + 1) * (o + 1) < 1 << 63 else _fill_axis
        fill(tab, i, o, base)
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


# -- blocks of a larger problem ------------------------------------------------------------------
# A block computes output cells [o0, o1) of an axis from the input range [i0, i1) they need (a
# forward), or input positions [i0, i1) from the output cells that cover them (a backward). Its
# kernels run on the global tables rebased to the block, so every window keeps its global extent
# and volume, and each sum sees the same terms in the same order as in the whole problem.


@numba.njit(cache=True)
def _spans(lo, hi, in_size, out_size, cover, res):
    for k in range(lo.size):
        if cover:
            res[k, 0] = cover_lo(lo[k], in_size, out_size)
            res[k, 1] = cover_hi(hi[k] - 1, in_size, out_size)
        else:
            res[k, 0] = start(lo[k], in_size, out_size)
            res[k, 1] = end(hi[k] - 1, in_size, out_size)


def _span_table(lo, hi, in_size: int, out_size: int, cover: bool) -> np.ndarray:
    lo = np.asarray(lo, np.int64).reshape(-1)
    hi = np.asarray(hi, np.int64).reshape(-1)
    if lo.shape != hi.shape or np.any(hi <= lo):
        raise ValueError("spans need lo < hi, entry by entry")
    res = np.empty((lo.size, 2), np.int64)
    _spans(lo, hi, np.int64(in_size), np.int64(out_size), cover, res)
    return res


def input_spans(lo, hi, in_size: int, out_size: int) -> np.ndarray:
    """The input range ``[start(lo), end(hi - 1))`` that output cells ``[lo, hi)`` read.

    Parameters
    ----------
    lo, hi : int or array_like of int
        Non-empty ranges of output cells (``lo < hi``), one per entry.
    in_size, out_size : int
        The axis's input and output sizes.

    Returns
    -------
    numpy.ndarray of int64, shape (n, 2)
        Each range's first input position and one past its last.
    """
    return _span_table(lo, hi, in_size, out_size, False)


def cover_spans(lo, hi, in_size: int, out_size: int) -> np.ndarray:
    """The output cells ``[cover_lo(lo), cover_hi(hi - 1))`` whose windows meet inputs ``[lo, hi)``.

    Same parameters and result layout as :func:`input_spans`, with ranges of input positions.
    """
    return _span_table(lo, hi, in_size, out_size, True)


@numba.njit(cache=True)
def _fill_block_axis(tab, in_size, out_size, i0, i1, o0, o1, base):
    s_at, e_at, l_at, h_at, _ = table_layout(i1 - i0, o1 - o0, base)
    for o in range(o1 - o0):
        tab[s_at + o] = start(o0 + o, in_size, out_size) - i0
        tab[e_at + o] = end(o0 + o, in_size, out_size) - i0
    for i in range(i1 - i0):
        lo = cover_lo(i0 + i, in_size, out_size) - o0
        hi = cover_hi(i0 + i, in_size, out_size) - o0
        tab[l_at + i] = min(max(lo, 0), o1 - o0)
        tab[h_at + i] = min(max(hi, 0), o1 - o0)


def build_block_tables(
    in_sizes: tuple[int, ...],
    out_sizes: tuple[int, ...],
    in_ranges: tuple[tuple[int, int], ...],
    out_ranges: tuple[tuple[int, int], ...],
) -> np.ndarray:
    """The packed tables of one block of a larger problem, rebased to the block.

    The layout is :func:`build_tables`'s for the block's own sizes ``(i1 - i0) -> (o1 - o0)``
    per axis, with the global windows in the block's coordinates:

    * ``start[o] = start(o0 + o) - i0`` and ``end[o] = end(o0 + o) - i0``: a window keeps its
      global extent and volume, and may reach outside ``[0, i1 - i0)``;
    * ``cover_lo[i] = cover_lo(i0 + i) - o0`` and ``cover_hi[i] = cover_hi(i0 + i) - o0``, both
      clipped to ``[0, o1 - o0]``: the block's outputs that cover the block's inputs.

    A forward block takes ``out_ranges`` and their :func:`input_spans` (every window inside the
    block); a backward block takes ``in_ranges`` and their :func:`cover_spans` (every covering
    output inside the block).

    Parameters
    ----------
    in_sizes, out_sizes : tuple of int
        The whole problem's input and output size of each axis, outermost first.
    in_ranges, out_ranges : tuple of (int, int)
        The block's half-open ranges of input positions and output cells on each axis.

    Returns
    -------
    numpy.ndarray of int64
        The packed table.
    """
    sizes = [(i1 - i0, o1 - o0) for (i0, i1), (o0, o1) in zip(in_ranges, out_ranges)]
    tab = np.empty(table_size(*zip(*sizes)) if sizes else 0, np.int64)
    base = 0
    for I, O, (i0, i1), (o0, o1) in zip(in_sizes, out_sizes, in_ranges, out_ranges):
        _fill_block_axis(tab, I, O, i0, i1, o0, o1, base)
        base += 2 * (i1 - i0) + 2 * (o1 - o0)
    return tab
