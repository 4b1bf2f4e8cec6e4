"""DESIGN §3 sizes: empty problems, size-0 outputs, and no limits beyond memory."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import adaptive_pool as ap
import reference as ref
from support import ALL_DTYPES, DTYPE_IDS, F32, F64, rand


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("lead", [(0, 3), (2, 0), (0, 0), (0,)], ids=str)
def test_empty_batches_give_empty_results(lead, dtype):
    x = np.ones(lead + (5, 4), dtype)
    y = ap.adaptive_avg_pool2d(x, (2, 3))
    assert y.shape == lead + (2, 3) and y.dtype == dtype
    gi = ap.adaptive_avg_pool2d_backward(np.ones(lead + (2, 3), dtype), x)
    assert gi.shape == x.shape and gi.dtype == dtype
    v = np.ones(lead + (3, 5, 4), dtype)
    y, idx = ap.adaptive_max_pool3d(v, (2, 3, 1), index_dtype=np.int64)
    assert y.shape == idx.shape == lead + (2, 3, 1) and idx.dtype == np.int64
    gi = ap.adaptive_max_pool3d_backward(y, v, idx)
    assert gi.shape == v.shape
    # with out= too
    out = np.empty(lead + (2, 3), dtype)
    assert ap.adaptive_avg_pool2d(x, (2, 3), out=out) is out


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("osz2,osz3", [((0, 3), (0, 2, 2)), ((2, 0), (2, 0, 2)),
                                       ((0, 0), (2, 2, 0)), (0, 0)], ids=str)
def test_output_size_zero(osz2, osz3, dtype):
    x = rand((2, 3, 5, 4), dtype)
    y = ap.adaptive_avg_pool2d(x, osz2)
    assert y.size == 0 and y.shape[:2] == (2, 3)
    out = np.full(x.shape, 7, dtype)
    gi = ap.adaptive_avg_pool2d_backward(y, x, out=out)
    assert gi is out and (gi.astype(np.float64) == 0).all()
    assert (ap.adaptive_avg_pool2d_backward(y, x).astype(np.float64) == 0).all()
    v = rand((2, 3, 4, 5, 6), dtype)
    y, idx = ap.adaptive_max_pool3d(v, osz3)
    assert y.size == idx.size == 0
    out = np.full(v.shape, 7, dtype)[:, :, ::-1]
    gi = ap.adaptive_max_pool3d_backward(y, v, idx, out=out)
    assert (gi.astype(np.float64) == 0).all()
    # unbatched
    gi = ap.adaptive_max_pool3d_backward(y[0], v[0], idx[0])
    assert gi.shape == v.shape[1:] and (gi.astype(np.float64) == 0).all()


@pytest.mark.parametrize("spatial", [(0, 4), (4, 0), (0, 0)], ids=str)
def test_zero_spatial_input_is_an_error(spatial):
    x = np.ones((2, 3) + spatial, F32)
    for fn in (lambda: ap.adaptive_avg_pool2d(x, 2),
               lambda: ap.adaptive_avg_pool2d_backward(np.ones((2, 3, 2, 2), F32), x),
               lambda: ap.adaptive_max_pool3d(x[:, :, None], 2),
               lambda: ap.adaptive_max_pool3d_backward(
                   np.ones((2, 3, 1, 2, 2), F32), x[:, :, None],
                   np.zeros((2, 3, 1, 2, 2), np.int32))):
        with pytest.raises(ap.AdaptivePoolValueError) as info:
            fn()
        assert info.value.argument == "x" and "positive" in str(info.value)
    # even when the batch is empty too
    with pytest.raises(ap.AdaptivePoolValueError):
        ap.adaptive_avg_pool2d(np.ones((0, 3) + spatial, F32), 2)


@pytest.mark.parametrize("in_size,out_size", [(1, 1), (1, 300), (3, 256), (255, 1), (97, 96)])
def test_extreme_ratios(in_size, out_size):
    x = rand((1, 2, in_size, 3), F64, seed=in_size)
    y = ap.adaptive_avg_pool2d(x, (out_size, 5))
    np.testing.assert_allclose(y, ref.avg_pool2d(x, (out_size, 5)), rtol=1e-14)
    g = rand(y.shape, F64, seed=out_size)
    np.testing.assert_allclose(ap.adaptive_avg_pool2d_backward(g, x),
                               ref.avg_pool2d_backward(g, x.shape), rtol=1e-12, atol=1e-12)


def _correctly_rounded_f32(num: int, den: int) -> np.float32:
    """``num / den`` rounded once to float32 (nearest, ties to even), by exact arithmetic."""
    q = Fraction(num, den)
    c = np.float32(float(q))
    best = None
    for cand in (np.nextafter(c, np.float32(-np.inf)), c, np.nextafter(c, np.float32(np.inf))):
        key = (abs(Fraction(float(cand)) - q), int(np.array(cand).view(np.uint32)) & 1)
        if best is None or key < best[0]:
            best = (key, cand)
    return best[1]


def test_axis_longer_than_2_to_the_24_is_exact():
    # float index arithmetic breaks above 2**24 (CANN's limit); ours is integer arithmetic.
    n = 2**24 + 3
    rng = np.random.default_rng(0)
    data = rng.integers(0, 4, n, dtype=np.int8)
    x = data.astype(F32).reshape(1, 1, 1, n)  # 64 MiB; sums stay below 2**24: exact
    y = ap.adaptive_avg_pool2d(x, (1, 7))
    csum = np.concatenate([[0], np.cumsum(data, dtype=np.int64)])
    for o in range(7):
        s, e = ref.window(o, n, 7)
        assert y[0, 0, 0, o] == _correctly_rounded_f32(int(csum[e] - csum[s]), e - s), o
    # the max over the same axis: indices above 2**24 are exact
    data[n - 2] = 9
    data[ref.window(3, n, 7)[0] + 1] = 9
    x = data.astype(F32).reshape(1, 1, 1, 1, n)
    del data
    y, idx = ap.adaptive_max_pool3d(x, (1, 1, 7))
    assert idx[0, 0, 0, 0, 6] == n - 2 and idx[0, 0, 0, 0, 3] == ref.window(3, n, 7)[0] + 1
    for o in (0, 1, 2, 4, 5):
        s, e = ref.window(o, n, 7)
        assert idx[0, 0, 0, 0, o] == s + int(np.argmax(x[0, 0, 0, 0, s:e]))
    del x
    # the backward over the same axis: each cell gathers from one or two windows
    g = np.arange(1, 8, dtype=F32).reshape(1, 1, 1, 7)
    gi = ap.adaptive_avg_pool2d_backward(g, np.broadcast_to(np.float32(0), (1, 1, 1, n)))
    for i in (0, n // 7, n // 7 + 1, n // 2, n - 1):
        want = sum(Fraction(o + 1, ref.window(o, n, 7)[1] - ref.window(o, n, 7)[0])
                   for o in ref.covering_fast(i, n, 7))
        assert abs(Fraction(float(gi[0, 0, 0, i])) - want) <= want * Fraction(1, 2**22), i


@pytest.mark.slow
def test_more_than_2_to_the_31_elements_avg():
    # A zero-stride view: 2**31 + ~2**16 elements, 256 KiB of memory, pooled to 2 x 3.
    H, W = 2**16 + 1, 2**15 + 1
    row = (np.arange(W) % 4).astype(F64)
    x = np.broadcast_to(row, (1, 1, H, W))
    assert x.size > 2**31
    y = ap.adaptive_avg_pool2d(x, (2, 3))
    for oh in range(2):
        h0, h1 = ref.window(oh, H, 2)
        for ow in range(3):
            w0, w1 = ref.window(ow, W, 3)
            total = (h1 - h0) * int(row[w0:w1].sum())
            volume = (h1 - h0) * (w1 - w0)
            assert volume > 2**28
            assert y[0, 0, oh, ow] == total / volume  # Python's int division is correctly rounded


@pytest.mark.slow
def test_more_than_2_to_the_31_elements_max_int64_indices():
    # One plane of 2**31 + 2**15 elements (a zero-stride view); a NaN at the end of every row:
    # the last NaN's index, H*W - 1 > 2**31, must come back exactly.
    H, W = 2**16 + 1, 2**15
    row = np.zeros(W, F32)
    row[-1] = np.nan
    row[5] = 1.0
    x = np.broadcast_to(row, (1, 1, 1, H, W))
    y, idx = ap.adaptive_max_pool3d(x, (1, 2, 1), index_dtype=np.int64)
    assert np.isnan(y).all()
    h0, h1 = ref.window(1, H, 2)
    assert idx[0, 0, 0, 1, 0] == H * W - 1 > 2**31
    assert idx[0, 0, 0, 0, 0] == (ref.window(0, H, 2)[1] - 1) * W + W - 1
    # and the backward's index check copes with those offsets
    g = np.ones(y.shape, F32)
    bad = idx.copy()
    bad[0, 0, 0, 0, 0] = H * W - 1  # inside the plane, outside window 0
    with pytest.raises(ap.AdaptivePoolIndexError, match=str(H * W - 1)):
        ap.adaptive_max_pool3d_backward(g, x, bad)
