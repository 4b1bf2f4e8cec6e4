"""The xarray layer (issue 17): pooling by dimension name, coordinates, attrs, dims order, and
Dask-backed arrays that stay lazy."""

from __future__ import annotations

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
da = pytest.importorskip("dask.array")

import adaptive_pool as ap  # noqa: E402
from adaptive_pool import windows  # noqa: E402
from adaptive_pool.xarray import adaptive_avg_pool, adaptive_max_pool  # noqa: E402
from support import bits  # noqa: E402


def _window_means(values, out):
    t = windows.axis_tables(len(values), out)
    return np.array([np.mean(values[s:e]) for s, e in zip(t["start"], t["end"])])


@pytest.fixture
def raster():
    rng = np.random.default_rng(0)
    data = rng.uniform(size=(2, 11, 3, 9)).astype(np.float32)
    return xr.DataArray(
        data,
        dims=("time", "y", "band", "x"),
        coords={
            "time": np.array(["2026-01-01", "2026-01-02"], "datetime64[ns]"),
            "y": np.linspace(50.0, 40.0, 11),
            "x": np.arange(9) * 30 + 500_000,  # integer metres
            "band": ["r", "g", "b"],
            "crs": 32633,
            "lat": (("y", "x"), rng.uniform(size=(11, 9))),
            "label": ("y", [f"row{i}" for i in range(11)]),
        },
        name="reflectance",
        attrs={"units": "1", "source": "test"},
    )


def test_average_by_dimension_name(raster):
    got = adaptive_avg_pool(raster, {"y": 4, "x": 5})
    assert got.dims == raster.dims and got.shape == (2, 4, 3, 5)
    assert got.name == "reflectance" and got.attrs == raster.attrs
    # the values: the 2-D operator on (time, band) planes
    planes = raster.transpose("time", "band", "y", "x").values
    want = ap.adaptive_avg_pool2d(planes, (4, 5)).transpose(0, 2, 1, 3)
    np.testing.assert_array_equal(bits(got.values), bits(want))
    # pooled coordinates: each window's mean; others kept
    np.testing.assert_allclose(got.y.values, _window_means(raster.y.values, 4), rtol=1e-15)
    np.testing.assert_allclose(got.x.values, _window_means(raster.x.values, 5), rtol=1e-15)
    assert got.x.dtype == np.float64
    np.testing.assert_array_equal(got.time.values, raster.time.values)
    assert list(got.band.values) == ["r", "g", "b"] and int(got.crs) == 32633
    assert got.lat.dims == ("y", "x") and got.lat.shape == (4, 5)
    np.testing.assert_allclose(
        got.lat.values, ap.adaptive_avg_pool2d(raster.lat.values[None], (4, 5))[0]
    )
    assert "label" not in got.coords  # strings have no window mean


def test_max_with_indices(raster):
    values, idx = adaptive_max_pool(raster, {"x": 4}, return_indices=True)
    assert values.dims == idx.dims == raster.dims and idx.dtype == np.int64
    y, i = ap.adaptive_max_pool1d(raster.values.reshape(-1, 9), 4, index_dtype=np.int64)
    np.testing.assert_array_equal(bits(values.values), bits(y.reshape(2, 11, 3, 4)))
    np.testing.assert_array_equal(idx.values, i.reshape(2, 11, 3, 4))
    assert idx.name == "reflectance_indices"
    np.testing.assert_array_equal(idx.x.values, values.x.values)
    assert isinstance(adaptive_max_pool(raster, {"x": 4}), xr.DataArray)


def test_three_dims_and_datetime_coordinates(raster):
    got = adaptive_avg_pool(raster, {"time": 1, "y": 2, "x": 3})
    assert got.dims == raster.dims and got.shape == (2 - 1, 2, 3, 3)
    assert got.time.values[0] == np.datetime64("2026-01-01T12:00", "ns")
    planes = raster.transpose("band", "time", "y", "x").values
    want = ap.adaptive_avg_pool3d(planes, (1, 2, 3))
    np.testing.assert_array_equal(bits(got.transpose("band", "time", "y", "x").values), bits(want))


def test_dask_backed_stays_lazy_and_exact(raster):
    lazy = raster.chunk({"y": 3, "x": 2, "band": 1})
    got = adaptive_avg_pool(lazy, {"y": 4, "x": 5})
    assert isinstance(got.data, da.Array)
    want = adaptive_avg_pool(raster, {"y": 4, "x": 5})
    np.testing.assert_array_equal(bits(got.values), bits(want.values))
    xr.testing.assert_identical(got.compute(), want)
    v, i = adaptive_max_pool(lazy, {"y": 4, "x": 5}, return_indices=True)
    assert isinstance(v.data, da.Array) and isinstance(i.data, da.Array)
    wv, wi = adaptive_max_pool(raster, {"y": 4, "x": 5}, return_indices=True)
    np.testing.assert_array_equal(i.values, wi.values)
    np.testing.assert_array_equal(bits(v.values), bits(wv.values))


def test_errors_name_the_argument(raster):
    with pytest.raises(ValueError, match="lon") as e:
        adaptive_avg_pool(raster, {"lon": 3})
    assert e.value.argument == "sizes"
    with pytest.raises(ValueError) as e:
        adaptive_avg_pool(raster, {"time": 1, "y": 2, "x": 3, "band": 1})
    assert e.value.argument == "sizes"
    with pytest.raises(TypeError) as e:
        adaptive_avg_pool(raster.values, {"y": 3})
    assert e.value.argument == "da"
    with pytest.raises(TypeError) as e:
        adaptive_avg_pool(raster.astype(np.int32), {"y": 3})
    assert e.value.argument == "x"


def test_missing_data_skipped_by_default_as_coarsen_does(raster):
    """On a divisible case with NaN holes, the default (skipna for floating data) gives
    ``coarsen(...).mean()``'s values; ``skipna=False`` propagates NaN; maxima never pick NaN."""
    data = raster.isel(y=slice(0, 10)).astype(np.float64).drop_vars("label")  # coarsen: no str
    holes = np.random.default_rng(3).random(data.shape) < 0.3
    holes[0, :2, 0, :3] = True  # a window with nothing valid
    data = data.where(~holes)
    got = adaptive_avg_pool(data, {"y": 5, "x": 3})
    want = data.coarsen(y=2, x=3).mean()
    np.testing.assert_allclose(got.values, want.values, rtol=1e-14)
    assert np.isnan(got.values[0, 0, 0, 0])
    plain = adaptive_avg_pool(data, {"y": 5, "x": 3}, skipna=False)
    assert np.isnan(plain.values).sum() > np.isnan(got.values).sum()
    peak = adaptive_max_pool(data, {"y": 5, "x": 3})
    np.testing.assert_array_equal(peak.values, data.coarsen(y=2, x=3).max().values)
