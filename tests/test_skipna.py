"""Missing data: ``skipna=True`` averages and maxima, their gradients, and masked arrays,
against ``np.nanmean`` / ``np.nanmax`` / ``np.nanargmax`` over each window of the reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import adaptive_pool as ap
import reference as ref
from support import ALL_DTYPES, DTYPE_IDS, F32, F64, MISSING, bits, channels_last, check

RANKS = (1, 2, 3)


def fn(kind, rank, backward=False):
    return getattr(ap, f"adaptive_{kind}_pool{rank}d" + ("_backward" if backward else ""))


def _assert_avg(got, exact, dtype):
    """16-bit within one ulp of the exact value; float32/float64 within their summation error
    (positive data: no cancellation)."""
    bound = 1 if np.dtype(dtype).itemsize == 2 else 8
    assert ref.max_ulp(got, exact) <= bound


@st.composite
def problems(draw):
    """A shape of any rank, an output size, a dtype and a NaN pattern: none, some, whole
    windows' worth (a block), or everything."""
    rank = draw(st.sampled_from(RANKS))
    lead = draw(st.sampled_from([(2, 3), (3,), (1, 1)]))
    spatial = tuple(draw(st.integers(1, 7)) for _ in range(rank))
    osz = tuple(draw(st.integers(1, 8)) for _ in range(rank))
    dtype = draw(st.sampled_from(ALL_DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.uniform(0.25, 4.0, size=lead + spatial).astype(dtype)
    pattern = draw(st.sampled_from(["none", "some", "block", "all"]))
    if pattern == "some":
        x[rng.random(x.shape) < 0.3] = np.nan
    elif pattern == "block":
        x[(Ellipsis,) + tuple(slice(0, max(1, s // 2)) for s in spatial)] = np.nan
    elif pattern == "all":
        x[...] = np.nan
    return rank, x, osz


@given(problems())
def test_skipna_forwards_and_backwards_vs_nan_reductions(problem):
    rank, x, osz = problem
    dtype = x.dtype
    y = fn("avg", rank)(x, osz, skipna=True)
    _assert_avg(y, ref.avg_pool(x, osz, rank, skipna=True), dtype)
    # the contract's order, bit for bit
    np.testing.assert_array_equal(bits(y), bits(ref.avg_pool_in_order(x, osz, rank, True)))
    g = np.random.default_rng(1).uniform(0.25, 4.0, size=y.shape).astype(dtype)
    gi = fn("avg", rank, True)(g, x, skipna=True)
    _assert_avg(gi, ref.avg_pool_backward(g, x.shape, rank, x=x), dtype)
    ym, im = fn("max", rank)(x, osz, skipna=True, index_dtype=np.int64)
    want_y, want_i = ref.max_pool(x, osz, rank, skipna=True)
    np.testing.assert_array_equal(im, want_i)
    np.testing.assert_array_equal(bits(ym), bits(want_y.astype(dtype)))
    gm = fn("max", rank, True)(g, x, im, skipna=True)
    _assert_avg(gm, ref.max_pool_backward(g, x.shape, im, rank), dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("rank", RANKS)
def test_without_nan_skipna_changes_nothing(rank, dtype):
    x = np.random.default_rng(rank).uniform(-4, 4, size=(2, 3) + (9, 8, 7)[3 - rank :])
    x = x.astype(dtype)
    np.testing.assert_array_equal(
        bits(fn("avg", rank)(x, 4)), bits(fn("avg", rank)(x, 4, skipna=True))
    )
    for a, b in zip(fn("max", rank)(x, 4), fn("max", rank)(x, 4, skipna=True)):
        np.testing.assert_array_equal(bits(a), bits(b))


def test_max_skipna_rules():
    nan, inf = np.nan, np.inf
    x = np.array([[nan, -inf, 3, nan, 3, nan, nan, nan, -inf, nan]], F32)  # (C, L)
    y, i = ap.adaptive_max_pool1d(x, 5, skipna=True)  # windows of two
    # [nan, -inf] -> -inf at 1 (a number beats NaN, even -inf); [3, nan] -> 3 at 2;
    # [3, nan] -> 3 at 4; [nan, nan] -> NaN at its first element 6; [-inf, nan] -> -inf at 8
    np.testing.assert_array_equal(i, [[1, 2, 4, 6, 8]])
    np.testing.assert_array_equal(y, [[-inf, 3, 3, nan, -inf]])
    y, i = ap.adaptive_max_pool1d(x, 5)  # without skipna NaN wins (the last one)
    np.testing.assert_array_equal(i, [[0, 3, 5, 7, 9]])


def test_avg_skipna_backward_gives_nan_inputs_zero():
    x = np.array([[1.0, np.nan, 3.0, np.nan]], F64)
    g = np.array([[6.0, 4.0]], F64)
    gi = ap.adaptive_avg_pool1d_backward(g, x, skipna=True)
    np.testing.assert_array_equal(gi, [[6.0, 0.0, 4.0, 0.0]])  # each window has one number
    np.testing.assert_array_equal(ap.adaptive_avg_pool1d(x, 2, skipna=True), [[1.0, 3.0]])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape,output_size",
    [((2, 11, 9, 7), (4, 3)), ((3, 17, 7, 7), (1, 1)), ((1, 9, 6, 5), (9, 7)),
     ((2, 9, 5, 6, 7), (2, 3, 4)), ((2, 8, 6, 5, 4), (6, 2, 3)), ((2, 3, 4, 5, 6), (1, 1, 1)),
     ((2, 3, 4, 5, 6), (4, 5, 1)), ((2, 9, 7, 6), (7, 1)), ((2, 9, 3, 70), (2, 4)),
     ((2, 9, 150), (5,)), ((1, 9, 8, 12, 12), (2, 2, 3)), ((1, 3, 9, 130), (2, 40)),
     ((2, 9, 8, 6), (4, 3)), ((1, 2, 12, 10), (6, 5)), ((1, 3, 16, 64), (8, 4)),
     ((1, 2, 12, 64), (4, 8)), ((1, 2, 12, 130), (6, 40)), ((1, 9, 4, 6, 70), (2, 3, 7)),
     ((1, 2, 9, 5, 6), (4, 2, 3)), ((1, 3, 7, 4, 70), (3, 2, 5)), ((2, 9, 70), (150,))],
)
def test_skipna_backward_kernels_agree_with_the_reference(shape, output_size, dtype, knobs):
    """The CPU average backward's kernels (row blocks of one plane, counted column by
    column or, rows of 128 or more, row by row, or from bit words where rows hold at most
    64 and items all their windows' rows: whole planes, bands of one output row, slabs of
    windows deeper than one, overlapping or not; 8 planes side by side with a partial last
    block, counted from bit masks, plane by plane or from the 8 planes' validity (rows of
    more than 64 with more windows than elements, channels-last inputs); a window at a time
    where windows are runs of memory), with
    skipna, in C order and channels-last, against the reference: shares divide by each
    window's count of numbers and NaN inputs get +0.0 (so a window without numbers, here a
    whole plane, gives nothing). In many chunks: a chunk may begin inside a window of d."""
    from adaptive_pool.cpu import backend  # noqa: PLC0415

    rank = len(output_size)
    rng = np.random.default_rng(16)
    x = rng.uniform(0.25, 4.0, size=shape).astype(dtype)
    x[rng.random(shape) < 0.3] = np.nan
    x[0, 0] = np.nan  # a plane without numbers
    g = rng.uniform(0.25, 4.0, size=shape[:2] + output_size).astype(dtype)
    want = ref.avg_pool_backward(g, x.shape, rank, x=x)
    runs, never = backend._run_windows, lambda *args: False
    got = {}
    for name, plane, windows in [("rows", 0, never), ("lanes", 10**9, never), ("runs", 0, runs)]:
        knobs(_LANES_PLANE=plane, _LANES_SCRATCH=plane, _run_windows=windows)
        got[name] = [
            bits(fn("avg", rank, True)(a, b, skipna=True))
            for a in (g, channels_last(g)) for b in (x, channels_last(x))
        ]
        _assert_avg(fn("avg", rank, True)(g, x, skipna=True), want, dtype)
    for other in ("lanes", "runs"):
        for a, b in zip(got["rows"], got[other]):
            np.testing.assert_array_equal(a, b, err_msg=other)


@pytest.mark.parametrize("height", [2**31 - 1, 2**31])
def test_skipna_column_windows_count_in_int32_only_below_2_31(height):
    """The column kernel counts a NaN-skipping window's numbers in int32: windows of
    ``2**31`` elements or more go to another loop order (planned only: nothing allocated)."""
    from adaptive_pool.cpu.backend import CpuBackend  # noqa: PLC0415

    dims = (1, 1, 1, height, 40, 1, 1, 40)  # (1, None) over planes of height x 40
    xg = (0, 40 * height, 40 * height, 40 * height, 40, 1)
    order = CpuBackend._avg_order(np.dtype(np.float32), xg, dims, True, True)
    assert (order == "columns") == (height < 2**31)
    assert CpuBackend._avg_order(np.dtype(np.float32), xg, dims, True, False) == "columns"


def test_skipna_must_be_a_bool():
    x = np.ones((2, 4), F32)
    check(TypeError, "skipna", ap.adaptive_avg_pool1d, x, 2, skipna="yes")
    check(TypeError, "skipna", ap.adaptive_max_pool1d, x, 2, skipna=1)
    check(TypeError, "x", ap.adaptive_avg_pool1d_backward, np.ones((2, 2), F32), None,
          skipna=True, status=MISSING)


# -- masked arrays ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("rank", RANKS)
def test_masked_arrays_in_masked_arrays_out(rank, dtype):
    rng = np.random.default_rng(rank)
    shape = (2, 3) + (6, 5, 7)[3 - rank :]
    data = rng.uniform(0.25, 4, size=shape).astype(dtype)
    mask = rng.random(shape) < 0.4
    mask[0, 0] = True  # a plane with nothing valid
    x = np.ma.MaskedArray(data, mask=mask)
    filled = np.where(mask, np.nan, data.astype(np.float64)).astype(dtype)
    y = fn("avg", rank)(x, 3)
    assert isinstance(y, np.ma.MaskedArray)
    want = fn("avg", rank)(filled, 3, skipna=True)
    nothing_valid = np.isnan(ref.avg_pool(filled, 3, rank, skipna=True))
    np.testing.assert_array_equal(np.ma.getmaskarray(y), nothing_valid)
    np.testing.assert_array_equal(bits(y.data[~nothing_valid]), bits(want[~nothing_valid]))
    ym, im = fn("max", rank)(x, 3)
    assert isinstance(ym, np.ma.MaskedArray) and isinstance(im, np.ma.MaskedArray)
    np.testing.assert_array_equal(np.ma.getmaskarray(ym), nothing_valid)
    want_y, want_i = ref.max_pool(filled, 3, rank, skipna=True)
    np.testing.assert_array_equal(im.data, want_i)
    g = np.ma.MaskedArray(np.ones(y.shape, dtype), mask=np.ma.getmaskarray(y))
    gi = fn("avg", rank, True)(g, x)
    assert isinstance(gi, np.ma.MaskedArray)
    np.testing.assert_array_equal(np.ma.getmaskarray(gi), mask)
    exact = ref.avg_pool_backward(np.where(nothing_valid, 0, 1.0), shape, rank, x=filled)
    _assert_avg(gi.data, exact, dtype)
    gm = fn("max", rank, True)(g, x, im)
    assert isinstance(gm, np.ma.MaskedArray)
    np.testing.assert_array_equal(np.ma.getmaskarray(gm), mask)


def test_masked_mean_matches_numpy_ma():
    rng = np.random.default_rng(5)
    data = rng.uniform(0, 1, size=(3, 12))
    x = np.ma.MaskedArray(data, mask=rng.random(data.shape) < 0.5)
    y = ap.adaptive_avg_pool1d(x, 4)  # divisible: windows of three
    want = x.reshape(3, 4, 3).mean(axis=-1)
    np.testing.assert_array_equal(np.ma.getmaskarray(y), np.ma.getmaskarray(want))
    np.testing.assert_allclose(y.compressed(), want.compressed(), rtol=1e-15)


# -- torch tensors ------------------------------------------------------------------------------
@pytest.mark.parametrize("rank", RANKS)
def test_skipna_on_tensors_differentiates(torch, rank):
    """Tensors in, tensors out, the NumPy call's bits; gradients (and second derivatives) of
    the NaN-skipping average checked by finite differences through a NaN mask."""
    rng = np.random.default_rng(rank)
    shape = (2, 3) + (5, 4, 6)[3 - rank :]
    x = rng.uniform(0.25, 4, size=shape)
    hole = rng.random(shape) < 0.3
    xn = np.where(hole, np.nan, x)
    t = torch.from_numpy(xn)
    np.testing.assert_array_equal(
        bits(fn("avg", rank)(t, 3, skipna=True).numpy()), bits(fn("avg", rank)(xn, 3, skipna=True))
    )
    ym, im = fn("max", rank)(t, 3, skipna=True)
    want_y, want_i = fn("max", rank)(xn, 3, skipna=True)
    np.testing.assert_array_equal(im.numpy(), want_i)
    mask = torch.from_numpy(hole)

    def pooled(v):
        return fn("avg", rank)(v.masked_fill(mask, float("nan")), 3, skipna=True).nan_to_num()

    v = torch.from_numpy(x).requires_grad_(True)
    assert torch.autograd.gradcheck(pooled, (v,))
    assert torch.autograd.gradgradcheck(pooled, (v,))
