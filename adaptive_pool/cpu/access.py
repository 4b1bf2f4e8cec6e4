"""Typed element access for the CPU kernels: one kernel body serves every dtype.

``get(a, i)`` reads element ``i`` of a storage array as its accumulation type, ``put(a, i, v)``
rounds ``v`` once and writes it, ``acc(a, v)`` converts a number to ``a``'s accumulation type and
``scratch(a, n)`` allocates ``n`` elements of it.
They dispatch on the storage dtype at compile time (see :mod:`adaptive_pool.dtypes`) and inline to
the shared codecs. CPU only: numba-cuda compiles overloads as device functions, which needs a
driver, so the CUDA backend binds the same codecs into its kernels directly.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from ..dtypes import bf16_decode, bf16_encode, f16_decode, f16_encode


def get(a, i):  # pragma: no cover - typing stub, implemented by the overload below
    raise NotImplementedError


def put(a, i, v):  # pragma: no cover - typing stub
    raise NotImplementedError


def acc(a, v):  # pragma: no cover - typing stub
    raise NotImplementedError


def scratch(a, n):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(get, inline="always")
def _get(a, i):
    dt = a.dtype
    if dt == types.uint16:
        return lambda a, i: f16_decode(a[i])
    if dt == types.int16:
        return lambda a, i: bf16_decode(a[i])
    if dt in (types.float32, types.float64):
        return lambda a, i: a[i]


@overload(put, inline="always")
def _put(a, i, v):
    dt = a.dtype
    if dt == types.uint16:

        def impl(a, i, v):
            a[i] = f16_encode(v)

    elif dt == types.int16:

        def impl(a, i, v):
            a[i] = bf16_encode(v)

    elif dt == types.float32:

        def impl(a, i, v):
            a[i] = np.float32(v)

    elif dt == types.float64:

        def impl(a, i, v):
            a[i] = np.float64(v)

    else:
        return None
    return impl


@overload(acc, inline="always")
def _acc(a, v):
    if a.dtype == types.float64:
        return lambda a, v: np.float64(v)
    if a.dtype in (types.float32, types.uint16, types.int16):
        return lambda a, v: np.float32(v)


@overload(scratch, inline="always")
def _scratch(a, n):
    if a.dtype == types.float64:
        return lambda a, n: np.empty(n, np.float64)
    if a.dtype in (types.float32, types.uint16, types.int16):
        return lambda a, n: np.empty(n, np.float32)
