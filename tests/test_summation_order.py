"""DESIGN §8: every loop order of the CPU average forward sums in the contract's lane order.

Element k of a window's flattened (d, h, w) order goes into lane ``k % 32``; the lanes are
combined by halving (``reference.lane_sum``). Each loop order is forced through the backend
(``_FORCE_ORDER``) and compared bit for bit with ``reference.avg_pool_in_order``, in every
dtype, for windows of 1 to 100 elements (so lanes that wrap and partial last rounds), on
strided, negative-stride and channels-last views, for global pooling, (None, 1) and (1, None),
with and without skipna. Shapes stay small: the reference is a Python loop.
"""

from __future__ import annotations

import numpy as np
import pytest

import adaptive_pool as ap
import reference as ref
from support import ALL_DTYPES, DTYPE_IDS, bits, channels_last, rand

ORDERS = ("direct", "rowwise", "lanewise", "columns", "runs", "channels")

# (shape, output size): windows from 1 to 100 elements
CASES = [
    ((2, 9, 1, 1), (1, 1)),  # windows of one element
    ((1, 9, 7, 7), (1, 1)),  # global: 49 elements, one wrap of the lanes
    ((1, 3, 10, 10), (1, 1)),  # global: 100 elements, 3 wraps + 4
    ((2, 2, 4, 8), (1, 1)),  # global: exactly 32
    ((1, 3, 5, 33), (None, 1)),  # rows of 33
    ((1, 2, 3, 100), (None, 1)),  # rows of 100
    ((1, 3, 40, 5), (1, None)),  # columns of 40
    ((2, 2, 65, 3), (1, None)),  # columns of 65
    ((1, 9, 11, 13), (2, 3)),  # overlapping windows of 30-42 elements
    ((1, 2, 9, 70), (3, 2)),  # windows of 105 in rows of 35
    ((1, 3, 6, 7), (4, 5)),  # small overlapping windows (2-6 elements)
    ((1, 2, 3, 4), (5, 7)),  # upsampling: windows of 1-2 elements
    ((1, 2, 17, 4), (3, None)),  # columns of 6-7 (OW == W, OH > 1)
    ((1, 9, 9, 70), (3, 2)),  # 8 float64 planes too large to copy whole: read in place
    ((1, 8, 91, 91), (2, 3)),  # 8 planes too large for any dtype to copy whole: bands
    ((2, 3, 1, 70), (1, 9)),  # windows of 8-9 along rows (a 1-D problem)
    ((1, 2, 3, 40), (None, 3)),  # overlapping windows of 14 along rows (OH == H)
    ((1, 2, 20, 60), (2, 2)),  # rows of 30: most rows wrap the lanes (two segments)
    ((1, 3, 12, 77), (1, 3)),  # rows of 25-26, 12 of them, from odd positions
]


def _views(x):
    """Contiguous, strided, negative-stride and channels-last views of the same values."""
    big = np.zeros(x.shape[:-1] + (2 * x.shape[-1] + 1,), x.dtype)
    big[..., 1::2] = x
    neg = np.ascontiguousarray(x[..., ::-1, ::-1])[..., ::-1, ::-1]
    return {"c": x, "strided": big[..., 1::2], "neg": neg, "cl": channels_last(x)}


def _valid(order, shape, osz, view):
    """Whether ``order`` can take the case: columns need windows one column wide, runs
    windows that are one contiguous run (global pooling or whole rows of a C-order view) or
    lie along rows of unit stride (OH == H), channels a view whose channels are adjacent."""
    out = tuple(i if o is None else o for o, i in zip(osz, shape[-2:]))
    if order == "columns":
        return out[-1] == shape[-1] > 1
    if order == "runs":
        return view == "c" and (out[0] == shape[-2] or out == (1, 1))
    if order == "channels":
        return view == "cl"  # (channels one element apart)
    return True


@pytest.mark.parametrize("skipna", [False, True], ids=["plain", "skipna"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("order", ORDERS)
def test_every_loop_order_sums_in_lane_order(order, dtype, skipna, knobs):
    rng = np.random.default_rng(7)
    for shape, osz in CASES:
        if not any(_valid(order, shape, osz, view) for view in ("c", "cl")):
            continue
        x = rand(shape, dtype, seed=len(shape) + shape[-1])
        if skipna:
            x[rng.random(shape) < 0.3] = np.nan
            x[..., :1, :] = np.nan  # rows of NaN only (all-NaN windows in some cases)
        want = bits(ref.avg_pool_in_order(x, osz, 2, skipna))
        knobs(_FORCE_ORDER=order)
        for name, v in _views(x).items():
            if not _valid(order, shape, osz, name):
                continue
            got = ap.adaptive_avg_pool2d(v, osz, skipna=skipna)
            np.testing.assert_array_equal(
                bits(got), want, err_msg=f"{order} {name} {shape}->{osz}"
            )
        knobs(_FORCE_ORDER=None)


@pytest.mark.parametrize("streamed", [None, 0], ids=["in-place", "copied"])
def test_float64_planes_read_in_place_or_copied_whole(streamed, knobs):
    """The 8-plane order reads large float64 planes in place, or copies them whole where the
    input comes from memory (``_STREAMED_INPUT``, forced to 0 here): the same bits."""
    x = rand((2, 9, 20, 20), np.float64, seed=5)
    x[0, 3, 4:9, 2:6] = np.nan
    want = bits(ref.avg_pool_in_order(x, (3, 5), 2))
    knobs(_FORCE_ORDER="lanewise")
    if streamed is not None:
        knobs(_STREAMED_INPUT=streamed)
    np.testing.assert_array_equal(bits(ap.adaptive_avg_pool2d(x, (3, 5))), want)


@pytest.mark.parametrize("shape, osz", [((2, 5, 7, 7), (1, 1)), ((1, 3, 6, 23), (None, 1)),
                                        ((2, 3, 1, 70), (1, 9))], ids=["global", "rows", "1-D"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_runs_prefetched_as_if_from_memory(dtype, shape, osz, knobs):
    """The runs kernels prefetch inputs larger than the last-level cache (``_CACHED_INPUT``,
    forced to 0 here) ahead of their windows: the same bits, forward and NaN-skipping
    backward, the prefetches never reaching past the input."""
    x = rand(shape, dtype, seed=9)
    x[0, 1, :, ::3] = np.nan
    g = rand(ap.adaptive_avg_pool2d(x, osz).shape, dtype, seed=10)
    knobs(_FORCE_ORDER="runs")
    want = [bits(ap.adaptive_avg_pool2d(x, osz, skipna=s)) for s in (False, True)]
    want_g = bits(ap.adaptive_avg_pool2d_backward(g, x, skipna=True))
    np.testing.assert_array_equal(want[0], bits(ref.avg_pool_in_order(x, osz, 2)))
    np.testing.assert_array_equal(want[1], bits(ref.avg_pool_in_order(x, osz, 2, skipna=True)))
    knobs(_CACHED_INPUT=0)
    for s in (False, True):
        np.testing.assert_array_equal(bits(ap.adaptive_avg_pool2d(x, osz, skipna=s)), want[s])
    np.testing.assert_array_equal(bits(ap.adaptive_avg_pool2d_backward(g, x, skipna=True)),
                                  want_g)


@pytest.mark.parametrize("shape, osz, kernel", [
    ((2, 3, 6, 23), (1, None), "avg_pool_backward_columns"),
    ((2, 9, 3, 6, 7), (None, 2, 3), "avg_pool_backward_lanes"),
    ((2, 9, 7, 7), (3, 3), "avg_pool_backward_lanes"),
], ids=["columns", "3-D slabs", "2-D blocks"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_nan_skipping_backward_prefetched_as_if_from_memory(dtype, shape, osz, kernel, knobs,
                                                           launched):
    """The NaN-skipping backwards prefetch ``x`` where it comes from memory (``_CACHED_INPUT``
    forced to 0: the columns kernel's next planes, the 8-plane kernel's next slabs of 3-D
    planes; its next blocks of 2-D ones at any size): the same bits as without, the
    reference's gradient (within the summation error of two shares: positive data)."""
    rank = len(osz)
    x = rand(shape, dtype, seed=11)
    x[..., ::4] = np.nan
    x[0, 1] = np.nan  # (a plane of NaN only: windows of no numbers)
    g = rand(getattr(ap, f"adaptive_avg_pool{rank}d")(x, osz).shape, dtype, seed=12, low=0.5)
    backward = getattr(ap, f"adaptive_avg_pool{rank}d_backward")
    want = bits(backward(g, x, skipna=True))
    knobs(_CACHED_INPUT=0)
    launched.clear()
    got = backward(g, x, skipna=True)
    assert kernel in launched
    np.testing.assert_array_equal(bits(got), want)
    assert ref.max_ulp(got, ref.avg_pool_backward(g, x.shape, rank, x=x)) <= 8


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
def test_every_window_size_1_to_100(dtype, knobs):
    """1-D windows of every size from 1 to 100 elements, in each order that can take them."""
    for n in range(1, 101):
        x = rand((1, 9, n), dtype, seed=n)
        want = bits(ref.avg_pool_in_order(x, 1, 1))
        for order in ("direct", "rowwise", "lanewise", "runs"):
            knobs(_FORCE_ORDER=order)
            got = ap.adaptive_avg_pool1d(x, 1)
            np.testing.assert_array_equal(bits(got), want, err_msg=f"{order} {n}")
    knobs(_FORCE_ORDER=None)


@pytest.mark.parametrize("skipna", [False, True], ids=["plain", "skipna"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
def test_channels_last_every_window_size_1_to_72(dtype, skipna):
    """Channels-last windows of every size from 1 to 72 (lanes in registers, eight at a time,
    from 9 to 64 elements; in rows of a scratch array otherwise), with -0.0 and NaN among the
    values (a channel of NaN only, one of some): the lane order's bits."""
    rng = np.random.default_rng(3)
    for n in range(1, 73):
        x = rand((1, 9, n), dtype, seed=n)
        x[:, 1::3] = -0.0  # (windows of -0.0 only: +0.0)
        x[:, 6] = np.where(rng.random(n) < 0.5, -0.0, 0.0)  # (signed zeros mixed)
        x[:, 8, rng.random(n) < 0.6] = -0.0
        x[:, 2, n // 2] = np.nan
        x[0, 4, rng.random(n) < 0.3] = np.nan
        x[:, 5] = np.nan
        got = ap.adaptive_avg_pool1d(channels_last(x), 1, skipna=skipna)
        want = ref.avg_pool_in_order(x, 1, 1, skipna)
        np.testing.assert_array_equal(bits(got), bits(want), str(n))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
def test_3d_windows_and_the_default_choice(dtype):
    """Windows over d too (k runs over d, then h, then w), through the backend's own choice."""
    for shape, osz in [((1, 9, 5, 7, 9), (2, 3, 2)), ((1, 2, 4, 6, 6), (1, 1, 1)),
                       ((1, 2, 3, 4, 40), (None, None, 1)), ((1, 2, 6, 7, 3), (1, 1, None)),
                       ((2, 3, 4, 5, 6), (None, 1, 1)), ((2, 3, 4, 5, 6), (1, None, 1))]:
        x = rand(shape, dtype, seed=3)
        y = ap.adaptive_avg_pool3d(x, osz)
        np.testing.assert_array_equal(bits(y), bits(ref.avg_pool_in_order(x, osz, 3)))


@pytest.mark.parametrize("skipna", [False, True], ids=["plain", "skipna"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape,osz",
    [((2, 9, 8, 7, 10), (1, None, None)), ((1, 3, 35, 3, 12), (1, None, None)),  # 35 rows: wraps
     ((2, 2, 6, 5, 9), (4, None, None)), ((1, 2, 3, 4, 5), (None, None, None))],
)
def test_columns_of_whole_planes(shape, osz, dtype, skipna, knobs, monkeypatch):
    """Windows one element in h and w take the columns order with each plane's rows as one row
    (``_plane_rows``) where they follow each other in memory, row by row where they do not:
    both in lane order (over d here)."""
    from adaptive_pool.cpu import backend  # noqa: PLC0415

    x = rand(shape, dtype, seed=shape[2])
    if skipna:
        x[np.random.default_rng(8).random(shape) < 0.3] = np.nan
        x[:, :, :, :1] = np.nan  # windows of NaN only
    want = bits(ref.avg_pool_in_order(x, osz, 3, skipna))
    merged = []
    plane_rows = backend._plane_rows
    monkeypatch.setattr(backend, "_plane_rows", lambda tab, dims, *g: (
        lambda r: (merged.append(r[0] != dims), r)[1])(plane_rows(tab, dims, *g)))
    knobs(_FORCE_ORDER="columns")
    for name, v in _views(x).items():
        if name == "cl":
            continue
        merged.clear()
        np.testing.assert_array_equal(bits(ap.adaptive_avg_pool3d(v, osz, skipna=skipna)), want,
                                      err_msg=name)
        assert set(merged) == {name in ("c", "neg")}, name  # (strided rows do not follow)


def _avg_order(dtype, dims, row=None, skipna=False):
    """The average forward's loop order for an input of ``dims`` in C order, its rows ``row``
    elements apart (``w`` unless given)."""
    from adaptive_pool.cpu.backend import CpuBackend  # noqa: PLC0415

    n, c, d, h, w = dims[:5]
    row = w if row is None else row
    xg = (0, c * d * h * row, d * h * row, h * row, row, 1)
    return CpuBackend._avg_order(np.dtype(dtype), xg, dims, skipna=skipna)


@pytest.mark.parametrize(
    "dtype,dims,order",
    [(np.float32, (2, 8, 44, 43, 40, 1, 5, 20), "lanewise"),  # rows of 2, 757 elements a window
     (np.float32, (4, 16, 1, 1024, 64, 1, 2, 16), "lanewise"),  # rows of 4, 2048 elements
     (np.float64, (2, 8, 44, 43, 40, 1, 5, 20), "lanewise"),
     (np.float32, (2, 8, 44, 43, 40, 1, 5, 5), "direct"),  # rows of 8: the direct order's
     (np.float32, (1, 4, 44, 43, 40, 1, 5, 20), "direct")],  # 4 planes of large windows
)
def test_narrow_rows_of_large_windows_take_eight_planes(dtype, dims, order):
    """Windows larger than ``_LANEWISE_WINDOW`` whose rows are narrower than ``_ROWS_WIDTH``
    take 8 planes side by side (the direct order's masked load a row is short work there)."""
    assert _avg_order(dtype, dims) == order


@pytest.mark.parametrize(
    "dtype,dims,order",
    [(np.float64, (2, 16, 32, 64, 64, 8, 4, 4), "direct"),  # float64 planes read in place
     (np.float64, (4, 64, 16, 56, 56, 4, 7, 7), "lanewise"),  # rows of 8
     (np.float32, (4, 64, 16, 56, 56, 4, 7, 7), "lanewise"),  # copied
     (np.float64, (4, 64, 4, 16, 16, 2, 2, 2), "lanewise")],  # copied whole, many side by side
)
def test_float64_windows_deeper_than_a_plane(dtype, dims, order):
    """Windows deeper than one plane take the direct order (rows summed in registers) where
    the 8-plane order would gather float64 planes in place and rows are 16 wide or more;
    rows of 8 and planes it copies keep it."""
    assert _avg_order(dtype, dims) == order


@pytest.mark.parametrize(
    "dims,strided,order",
    [((32, 512, 1, 7, 7, 1, 7, 7), False, "columns"),  # VGG's 7x7 -> 7x7: planes as rows
     ((1, 32, 17, 6, 4, 19, 6, 4), False, "columns"),  # deep in d only
     ((64, 256, 1, 3, 3, 1, 3, 3), False, "columns"),
     ((32, 512, 1, 7, 7, 1, 7, 7), True, "lanewise"),  # rows that do not follow each other
     ((64, 256, 1, 2, 3, 1, 2, 3), False, "lanewise"),  # planes of 2 rows
     ((64, 256, 1, 3, 2, 1, 3, 2), False, "lanewise"),  # or 2 columns
     ((32, 512, 1, 7, 7, 1, 1, 7), False, "lanewise")],  # windows 7 rows tall
)
def test_windows_one_element_in_h_and_w_take_the_columns_order(dims, strided, order):
    """Windows one column wide and one row tall take the columns order, whose rows are then
    whole planes (``_plane_rows``), where x's rows follow each other and planes are at least
    3x3; narrower rows of taller windows keep 8 planes side by side."""
    for dtype in (np.float32, np.float64, np.uint16):
        assert _avg_order(dtype, dims, dims[4] + 1 if strided else None) == order


@pytest.mark.parametrize(
    "dtype,dims,split,order",
    [(np.float32, (1, 16, 1, 224, 224, 1, 6, 6), True, "direct"),  # windows of 37-38 wide
     (np.float32, (8, 64, 1, 224, 224, 1, 6, 6), True, "lanewise"),  # 103 MB
     (np.float32, (1, 4, 1, 224, 224, 1, 6, 6), True, "direct"),
     (np.float32, (64, 4, 1, 224, 224, 1, 6, 6), True, "rowwise"),  # large, few planes
     (np.uint16, (1, 16, 1, 224, 224, 1, 6, 6), True, "lanewise"),
     (np.uint16, (1, 4, 1, 224, 224, 1, 6, 6), True, "rowwise"),
     (np.float64, (8, 64, 1, 224, 224, 1, 6, 6), True, "rowwise"),
     (np.float32, (1, 16, 1, 224, 224, 1, 6, 6), False, "rowwise"),
     (np.uint16, (1, 16, 1, 224, 224, 1, 6, 6), False, "lanewise"),
     (np.uint16, (1, 4, 1, 224, 224, 1, 6, 6), False, "rowwise")],
)
def test_wide_windows_row_by_row_except_on_zen_4(dtype, dims, split, order, monkeypatch):
    """Windows 16 wide or more on average that no other order takes go row by row, except
    on Zen 4 (``SPLIT_512``) in float32 (window by window in the cache, ``_ROWWISE_CACHED``,
    8 planes side by side beyond) and in 16 bits everywhere (8 planes side by side), where
    those took 0.44-0.71x its time (0.51-0.84x on Zen 5)."""
    from adaptive_pool.cpu import backend  # noqa: PLC0415

    monkeypatch.setattr(backend, "SPLIT_512", split)
    assert _avg_order(dtype, dims) == order


@pytest.mark.parametrize(
    "dtype,dims,skipna,order",
    [(np.float64, (8, 64, 1, 112, 112, 1, 7, 7), True, "rowwise"),  # 51 MB, rows of 16
     (np.float64, (8, 64, 1, 112, 112, 1, 4, 4), True, "rowwise"),
     (np.float64, (4, 16, 32, 64, 64, 8, 4, 4), True, "rowwise"),
     (np.float64, (8, 64, 1, 112, 112, 1, 9, 9), True, "direct"),  # rows of 12
     (np.float64, (4, 8, 1, 64, 64, 1, 4, 4), True, "direct"),  # 1 MB: in the cache
     (np.float64, (16, 64, 1, 64, 64, 1, 8, 8), True, "direct"),  # rows of 8
     (np.float64, (4, 64, 16, 56, 56, 4, 7, 7), True, "lanewise"),  # windows deeper than d
     (np.float64, (8, 64, 1, 112, 112, 1, 7, 7), False, "direct"),  # plain sums
     (np.float32, (8, 64, 1, 112, 112, 1, 7, 7), True, "direct"),  # rows of 16
     (np.float32, (16, 64, 1, 64, 64, 1, 8, 8), True, "lanewise"),  # rows of 8, 17 MB
     (np.float32, (32, 256, 1, 56, 56, 1, 7, 7), True, "direct"),  # rows of 8, 103 MB
     (np.uint16, (8, 64, 1, 112, 112, 1, 7, 7), True, "lanewise")],
)
def test_nan_skipping_orders_by_row_width(dtype, dims, skipna, order, monkeypatch):
    """float64 NaN-skipping windows 16 wide or more of inputs larger than the last-level
    cache go row by row (where the vector segments, prefetched, beat 8 planes side by side
    and the window-by-window order); other NaN-skipping windows one plane deep whose rows fill
    a register of lanes (float64 8 wide, float32 16; float32 8 from memory) are summed in
    registers, window by window (``_SKIPNA_ROWS``); narrower float32 rows, 16-bit ones and
    deeper windows go 8 planes side by side; plain sums keep their order."""
    from adaptive_pool.cpu import backend  # noqa: PLC0415

    monkeypatch.setattr(backend, "SPLIT_512", False)
    monkeypatch.setattr(backend, "NATIVE_MASKS", True)
    monkeypatch.setattr(backend, "_CACHED_INPUT", 32 << 20)
    assert _avg_order(dtype, dims, skipna=skipna) == order


@pytest.mark.parametrize(
    "dims,split,order",
    [((4, 16, 1, 14, 76, 1, 17, 9), True, "lanewise"),  # windows of 2 rows of 10
     ((16, 64, 1, 64, 64, 1, 8, 8), True, "lanewise"),  # 81 elements, planes of 4096
     ((8, 128, 8, 14, 14, 3, 5, 5), True, "lanewise"),  # 64 elements over several d
     ((16, 64, 1, 64, 64, 1, 5, 5), True, "direct"),  # windows of 196
     ((4, 64, 1, 96, 96, 1, 12, 12), True, "direct"),  # planes of 9216
     ((4, 16, 1, 14, 76, 1, 17, 9), False, "direct")],
)
def test_float64_small_windows_on_zen_4_take_eight_planes(dims, split, order, monkeypatch):
    """float64 windows of at most ``_PLANES_FIRST_WINDOW`` elements in planes of at most
    ``_PLANES_FIRST_PLANE`` take 8 planes side by side on Zen 4 (``SPLIT_512``), where rows
    summed in registers (the direct order) took 1.1-2.9x their time; larger ones and other
    CPUs with AVX-512 keep the direct order."""
    from adaptive_pool.cpu import backend  # noqa: PLC0415

    monkeypatch.setattr(backend, "SPLIT_512", split)
    monkeypatch.setattr(backend, "NATIVE_MASKS", True)
    assert _avg_order(np.float64, dims) == order


@pytest.mark.parametrize(
    "dtype,dims,order",
    [(np.float32, (1, 64, 1, 12, 16, 1, 1, 16), "lanewise"),  # (1, None), rows of 16
     (np.float32, (1, 64, 1, 12, 24, 1, 1, 24), "columns"),
     (np.float32, (1, 512, 1, 1, 13, 1, 1, 13), "lanewise"),  # 1-D, output as large
     (np.float64, (1, 64, 1, 20, 13, 1, 5, 13), "lanewise"),
     (np.float64, (1, 64, 1, 12, 16, 1, 1, 16), "columns"),
     (np.uint16, (1, 64, 1, 12, 32, 1, 1, 32), "lanewise"),
     (np.uint16, (1, 64, 1, 12, 40, 1, 1, 40), "columns")],
)
def test_column_windows_of_narrow_rows_take_eight_planes(dtype, dims, order):
    """Windows one column wide take the columns order from rows of ``_COLUMNS_ROW`` elements
    (by the element size) on, and 8 planes side by side below where those serve."""
    assert _avg_order(dtype, dims) == order


@pytest.mark.parametrize(
    "dtype,dims,order",
    [(np.uint16, (1, 64, 1, 1, 100, 1, 1, 33), "lanewise"),  # 16-bit rows of windows of 3
     (np.uint16, (16, 64, 1, 50, 100, 1, 50, 14), "lanewise"),  # of 7-8, along 2-D rows
     # of 17: 16-bit rows decoded and summed in registers took 1.2-2.6x as long (Zen 5)
     (np.uint16, (1, 64, 1, 1, 340, 1, 1, 20), "lanewise"),
     (np.uint16, (1, 64, 1, 1, 360, 1, 1, 20), "runs"),  # of 18
     (np.uint16, (1, 3, 1, 1, 17, 1, 1, 5), "runs"),  # few planes
     (np.float32, (1, 64, 1, 1, 100, 1, 1, 33), "lanewise"),  # 32-bit: lanes below 12
     (np.float32, (1, 64, 1, 1, 396, 1, 1, 33), "runs"),
     (np.float64, (1, 64, 1, 1, 165, 1, 1, 33), "lanewise"),  # 64-bit: below 6
     (np.float64, (1, 64, 1, 1, 198, 1, 1, 33), "runs"),
     (np.float64, (1, 3, 1, 1, 9, 1, 1, 3), "runs")],  # few planes: from 3
)
def test_short_windows_along_rows_take_eight_planes(dtype, dims, order):
    """Windows along rows shorter on average than ``_ROW_RUN_LANES`` (by the element size)
    take 8 planes side by side where the input has 8 planes or more, else one vector pass
    each from ``_ROW_RUN`` on."""
    assert _avg_order(dtype, dims) == order


# (shape, output size) of the 8-plane order's blocks of more planes: 24 to 37 planes, windows of
# 1 to 100 elements, a last block of fewer planes and a last 8 of fewer still (37 = 24 + 13)
WIDE_CASES = [
    ((1, 37, 14, 14), (5, 5)),  # windows of 9-16
    ((1, 24, 7, 7), (1, 1)),  # 49: eight lanes at a time, all 32 rows
    ((1, 24, 10, 10), (1, 1)),  # 100: each element into its row
    ((1, 24, 6, 7), (4, 5)),  # 2-6
    ((1, 24, 3, 4), (5, 7)),  # upsampling: 1-2
    ((2, 12, 11, 13), (2, 3)),  # 30-42, samples taken as more planes
    ((1, 24, 4, 6, 6), (2, 3, 3)),  # 3-D windows of 8-18
]


@pytest.mark.parametrize("skipna", [False, True], ids=["plain", "skipna"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
def test_lanewise_blocks_of_planes_side_by_side(dtype, skipna, knobs):
    """The 8-plane order takes blocks of more planes where their rows are unit-stride runs
    (``_lanewise_block``, its minimum lowered so that small shapes take it): copied side by
    side and summed as the channels of a channels-last input. The contract's bits, from C-order
    planes and from planes that do not follow each other, into C-order and channels-last
    results; windows of -0.0 alone give +0.0."""
    from adaptive_pool.cpu import backend
    from adaptive_pool.cpu.lanes import vector_runs
    from adaptive_pool.dtypes import SUPPORTED

    rng = np.random.default_rng(11)
    knobs(_FORCE_ORDER="lanewise", _WIDE_MIN=16)
    for shape, osz in WIDE_CASES:
        rank = len(osz)
        x = rand(shape, dtype, seed=shape[1] + shape[-1])
        if skipna:
            x[rng.random(shape) < 0.3] = np.nan
            x[:, 2] = np.nan  # a plane of NaN only
        x[:, 1] = -0.0
        storage = SUPPORTED[x.dtype].storage  # (float16 without F16C: 8 planes only)
        block = backend._lanewise_block(shape[0] * shape[1], int(np.prod(shape[2:])),
                                        (0, 0, 0, 0, 0, 1), storage)
        assert block > backend.kernels.LANES or not vector_runs(storage)
        want = ref.avg_pool_in_order(x, osz, rank, skipna)
        fn = getattr(ap, f"adaptive_avg_pool{rank}d")
        apart = np.zeros((shape[0], 2 * shape[1]) + shape[2:], dtype)
        apart[:, ::2] = x  # planes two apart, rows unit-stride runs
        for name, v in (("c", x), ("planes apart", apart[:, ::2])):
            got = fn(v, osz, skipna=skipna)
            np.testing.assert_array_equal(bits(got), bits(want), err_msg=f"{name} {shape}")
            into = channels_last(np.empty_like(want))
            fn(v, osz, skipna=skipna, out=into)
            np.testing.assert_array_equal(bits(into), bits(want), err_msg=f"{name} {shape} cl")
        zeros = want[:, 1].astype(np.float32)
        assert (zeros == 0).all() and not np.signbit(zeros).any()
