"""Inputs that are bit-identical in both workers, and summaries of results to cross-check.

Loaded by path into the worker processes (see :mod:`.worker`): NumPy and the standard library
only. Each worker converts these NumPy arrays to its own library's arrays.

The 16-bit inputs are produced here as bit patterns (NumPy's float16 cast, and a float32 ->
bfloat16 round-to-nearest-even written with integer operations), so neither side's conversion
routines can make the two inputs differ.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

__all__ = ["STORAGE", "make_array", "bf16_bits", "values", "summarize", "SAMPLE_SIZE"]

# How each benchmark dtype travels between NumPy and the libraries: bfloat16 as uint16 bits.
STORAGE = {"float32": np.float32, "float64": np.float64, "float16": np.float16,
           "bfloat16": np.uint16}

SAMPLE_SIZE = 256


def bf16_bits(a: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns (uint16), rounding to nearest even; NaN stays NaN."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32)
    rounded = (u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))) >> np.uint32(16)
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    return np.where(nan, (u >> np.uint32(16)) | np.uint32(0x40), rounded).astype(np.uint16)


def make_array(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Standard normal values of ``dtype`` in its storage form (:data:`STORAGE`).

    Drawn in float32 for every dtype (float64 too), so one seed gives the same values
    whatever the dtype, up to the dtype's rounding.
    """
    v = rng.standard_normal(shape, dtype=np.float32)
    if dtype == "bfloat16":
        return bf16_bits(v)
    return v.astype(STORAGE[dtype])


def values(storage: np.ndarray, dtype: str) -> np.ndarray:
    """Storage -> float64 values (bfloat16 bits widened exactly)."""
    if dtype == "bfloat16":
        return (storage.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return storage.astype(np.float64)


def summarize(arrays: list[np.ndarray], dtype: str, index_arrays: int = 0) -> dict[str, Any]:
    """What a worker reports of a case's result, for the runner to compare.

    Parameters
    ----------
    arrays : list of numpy.ndarray
        The result's value arrays in storage form (:data:`STORAGE`), then ``index_arrays``
        index arrays (compared as int64, so int32 and int64 indices agree).
    dtype : str
        The benchmark dtype of the value arrays.
    index_arrays : int
        How many of the trailing arrays are indices.

    Returns
    -------
    dict
        Per array: its shape, a SHA-256 of its bits and the float64 values (or indices) at
        :data:`SAMPLE_SIZE` positions drawn from a fixed seed, the same in both workers.
    """
    out = []
    for k, a in enumerate(arrays):
        is_index = k >= len(arrays) - index_arrays
        a = np.ascontiguousarray(a.astype(np.int64) if is_index else a)
        flat = a.reshape(-1)
        pos = (np.random.default_rng(k).integers(0, flat.size, min(SAMPLE_SIZE, flat.size))
               if flat.size else np.zeros(0, np.int64))
        vals = flat[pos]
        sample = [int(v) for v in vals] if is_index else [float(v) for v in values(vals, dtype)]
        out.append({"shape": list(a.shape), "index": is_index,
                    "sha256": hashlib.sha256(a.tobytes()).hexdigest(), "sample": sample})
    return {"arrays": out}
