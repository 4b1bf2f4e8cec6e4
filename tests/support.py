"""Small helpers shared by the test files: data makers, dtype lists, NaN-aware bit patterns."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import adaptive_pool as ap
from adaptive_pool.errors import AdaptivePoolError

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
ALL_DTYPES = (F32, F64, F16, BF16)
DTYPE_IDS = ("float32", "float64", "float16", "bfloat16")
INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))

OPS = (
    "adaptive_avg_pool2d",
    "adaptive_avg_pool2d_backward",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_backward",
)


def rand(shape, dtype, seed=0, low=-4.0, high=4.0):
    """Random values in [low, high), rounded to ``dtype`` (so the reference sees the same data)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(low, high, size=shape).astype(dtype)


def small_ints(shape, dtype, seed=0, high=3):
    """Small non-negative integers: many ties for the max, exact sums for the average."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, high, size=shape).astype(dtype)


def out_spatial(output_size, in_spatial):
    if isinstance(output_size, int):
        return (output_size,) * len(in_spatial)
    return tuple(i if o is None else o for o, i in zip(output_size, in_spatial))


def fresh_forward_max(x, output_size, index_dtype=np.int32):
    return ap.adaptive_max_pool3d(x, output_size, index_dtype=index_dtype)


def tol(dtype):
    """(rtol, atol) for a float32/float64 result against a float64 reference on data in [-4, 4)."""
    dtype = np.dtype(dtype)
    if dtype == F64:
        return 1e-13, 1e-13
    return 2e-6, 2e-6


def channels_last(a: np.ndarray) -> np.ndarray:
    """``a`` with the same values, stored with its planes one element apart (axis 1 innermost)."""
    return np.moveaxis(np.moveaxis(a, 1, -1).copy(), -1, 1)


def bits(a: np.ndarray) -> np.ndarray:
    """The bit patterns of ``a``, every NaN as one pattern.

    IEEE 754 leaves the sign and payload of a NaN produced by arithmetic unspecified (x86
    returns an operand's, NVIDIA GPUs a canonical one), so results are bitwise equal up to them.
    """
    a = np.ascontiguousarray(a)
    b = a.view(f"u{a.itemsize}").copy()
    b[np.isnan(a.astype(np.float64))] = np.iinfo(b.dtype).max
    return b


MISSING, INVALID = 161001, 161002


def check(builtin, argument, fn, *args, status=INVALID, contains=(), **kwargs):
    """Call ``fn`` and check every promise the contract makes about the error it raises."""
    with pytest.raises(AdaptivePoolError) as info:
        fn(*args, **kwargs)
    e = info.value
    assert isinstance(e, builtin), (type(e).__mro__, str(e))
    assert e.status == status, str(e)
    assert e.argument == argument, (e.argument, str(e))
    msg = str(e)
    assert argument in msg, msg
    assert str(status) in msg, msg
    for part in contains:
        assert part in msg, (part, msg)
    return e
