"""The xarray layer: adaptive pooling of ``xarray.DataArray`` by dimension name.

::

    from adaptive_pool.xarray import adaptive_avg_pool, adaptive_max_pool

    small = adaptive_avg_pool(da, {"y": 1000, "x": 1000})
    peak, where = adaptive_max_pool(da, {"y": 1000, "x": 1000}, return_indices=True)

One to three dimensions are pooled, named in ``sizes``; every other dimension is a batch
dimension. The data may be NumPy- or Dask-backed (a Dask-backed array stays lazy: the
:mod:`adaptive_pool.dask` layer computes it exactly, for every chunking). The result keeps the
dimension order, the name and the attrs; coordinates that do not involve a pooled dimension are
kept as they are, numeric ones along pooled dimensions become the mean of each window's values
(computed with the same adaptive windows, in float64 for integer coordinates; datetimes and
timedeltas as offsets from the first value), and other coordinates along pooled dimensions
(strings, objects) are dropped: a window has no single label.

Max indices (``return_indices=True``) are flat offsets of each maximum inside the plane of the
pooled dimensions, in their order in ``da.dims`` (``y * X + x`` for dims ``(..., "y", "x")``),
returned as a second DataArray with the values' dims and coordinates.

xarray is imported by this module only.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional

import numpy as np
import xarray as xr

from . import functional
from .errors import AdaptivePoolTypeError, AdaptivePoolValueError

__all__ = ["adaptive_avg_pool", "adaptive_max_pool"]


def adaptive_avg_pool(
    da: xr.DataArray, sizes: Mapping[str, Optional[int]], *, skipna: Optional[bool] = None
) -> xr.DataArray:
    """Adaptive average pooling of the named dimensions of ``da``.

    Parameters
    ----------
    da : xarray.DataArray
        float32, float64, float16 or bfloat16 data, NumPy- or Dask-backed.
    sizes : mapping of str to int or None
        The output size of each pooled dimension (1 to 3 of them); ``None`` keeps its size.
    skipna : bool, optional
        Skip NaN (missing data), as xarray's reductions do: the default (None) is True for
        floating data, which every supported dtype is.

    Returns
    -------
    xarray.DataArray
        The window means, with ``da``'s dims, name, attrs and pooled coordinates (the mean of
        each window's coordinate values).
    """
    plan = _Plan(da, sizes)
    fn = getattr(functional, f"adaptive_avg_pool{plan.rank}d")
    y = fn(plan.flat(da.data), plan.out, skipna=_skipna(skipna))
    return plan.result(y, da)


def adaptive_max_pool(
    da: xr.DataArray,
    sizes: Mapping[str, Optional[int]],
    *,
    skipna: Optional[bool] = None,
    index_dtype: Any = np.int64,
    return_indices: bool = False,
) -> xr.DataArray | tuple[xr.DataArray, xr.DataArray]:
    """Adaptive max pooling of the named dimensions of ``da``.

    Parameters
    ----------
    da : xarray.DataArray
        float32, float64, float16 or bfloat16 data, NumPy- or Dask-backed.
    sizes : mapping of str to int or None
        The output size of each pooled dimension (1 to 3 of them); ``None`` keeps its size.
    skipna : bool, optional
        NaN never wins (a window of NaN only gives NaN); the default (None) is True for
        floating data, as xarray's reductions.
    index_dtype : numpy dtype, default int64
        int64 (rasters larger than 2**31 elements are common here) or int32.
    return_indices : bool, default False
        Also return the argmax indices.

    Returns
    -------
    xarray.DataArray or (xarray.DataArray, xarray.DataArray)
        The window maxima (ties keep the first), and with ``return_indices``
        the flat offset of each maximum in the plane of the pooled dimensions (in their
        ``da.dims`` order), named ``"<name>_indices"`` (or ``"indices"``).
    """
    plan = _Plan(da, sizes)
    fn = getattr(functional, f"adaptive_max_pool{plan.rank}d")
    y, idx = fn(plan.flat(da.data), plan.out, skipna=_skipna(skipna), index_dtype=index_dtype)
    values = plan.result(y, da)
    if not return_indices:
        return values
    indices = plan.result(idx, da, coords=values.coords)
    indices.name = f"{da.name}_indices" if da.name is not None else "indices"
    indices.attrs = {
        "description": "flat offset of each window's maximum in the plane of "
        + ", ".join(plan.pooled)
    }
    return values, indices


def _skipna(skipna: Optional[bool]) -> bool:
    # every dtype the operators take is floating, where xarray skips NaN by default
    return True if skipna is None else skipna


class _Plan:
    """How a DataArray maps onto the functional API: batch dims first, pooled dims last."""

    def __init__(self, da: xr.DataArray, sizes: Mapping[str, Optional[int]]) -> None:
        if not isinstance(da, xr.DataArray):
            raise AdaptivePoolTypeError(
                f"da must be an xarray.DataArray, got {type(da).__name__}", argument="da"
            )
        if not isinstance(sizes, Mapping):
            raise AdaptivePoolTypeError(
                f"sizes must be a mapping of dimension name to output size, got "
                f"{type(sizes).__name__}",
                argument="sizes",
            )
        unknown = [d for d in sizes if d not in da.dims]
        if unknown:
            raise AdaptivePoolValueError(
                f"sizes names dimensions {unknown} that da does not have; its dimensions are "
                f"{list(da.dims)}",
                argument="sizes",
            )
        if not 1 <= len(sizes) <= 3:
            raise AdaptivePoolValueError(
                f"sizes must name 1 to 3 dimensions to pool, got {len(sizes)}", argument="sizes"
            )
        self.pooled = [d for d in da.dims if d in sizes]  # in the array's order
        self.batch = [d for d in da.dims if d not in sizes]
        self.rank = len(self.pooled)
        self.out = tuple(sizes[d] for d in self.pooled)
        self.dims = list(da.dims)
        self.order = [self.dims.index(d) for d in self.batch + self.pooled]
        self.batch_shape = tuple(da.sizes[d] for d in self.batch)

    def flat(self, data: Any) -> Any:
        """``data`` as ``(N, C, *pooled)``: batch dims merged into N (all but the last) and C."""
        data = data.transpose(self.order)
        b = self.batch_shape
        lead = (math.prod(b[:-1]), b[-1]) if b else (1,)
        return data.reshape(lead + tuple(data.shape[len(b) :]))

    def result(self, y: Any, da: xr.DataArray, coords: Any = None) -> xr.DataArray:
        """The pooled array ``y`` (flat layout) as a DataArray with ``da``'s dims order."""
        y = y.reshape(self.batch_shape + tuple(y.shape[-self.rank :]))
        inverse = list(np.argsort(self.order))
        y = y.transpose(inverse)
        if coords is None:
            out = {d: y.shape[self.dims.index(d)] for d in self.pooled}
            coords = self._coords(da, out)
        return xr.DataArray(y, dims=self.dims, coords=coords, name=da.name, attrs=dict(da.attrs))

    def _coords(self, da: xr.DataArray, out: dict[str, int]) -> dict[str, xr.Variable]:
        res = {}
        for name, c in da.coords.items():
            pooled = [d for d in c.dims if d in out]
            if not pooled:
                res[name] = c.variable
                continue
            v = _pool_coordinate(c.variable, {d: out[d] for d in pooled})
            if v is not None:
                res[name] = v
        return res


def _pool_coordinate(v: xr.Variable, sizes: dict[str, int]) -> Optional[xr.Variable]:
    """The window means of a coordinate along its pooled dims, or None if it has no mean."""
    kind = v.dtype.kind
    if kind not in "fiubmM":
        return None
    data = v.data
    if kind in "mM":
        base = data.reshape(-1)[0] if v.size else None
        unit = np.datetime_data(v.dtype)[0]
        vals = (data - base).astype(np.float64) if v.size else data.astype(np.float64)
    elif v.dtype in (np.float32, np.float64, np.float16) or v.dtype.name == "bfloat16":
        vals = data
    else:
        vals = data.astype(np.float64)
    tmp = xr.DataArray(vals, dims=v.dims)
    pooled = adaptive_avg_pool(tmp, sizes).data
    if kind in "mM":
        pooled = base + np.round(np.asarray(pooled)).astype(np.int64).astype(f"m8[{unit}]")
    return xr.Variable(v.dims, pooled, attrs=dict(v.attrs))
