"""Typed element access for the CPU kernels: one kernel body serves every dtype.

``get(a, i)`` reads element ``i`` of a storage array as its accumulation type, ``put(a, i, v)``
rounds ``v`` once and writes it, ``acc(a, v)`` converts a number to ``a``'s accumulation type and
``scratch(a, n)`` allocates ``n`` elements of it.
They dispatch on the storage dtype at compile time (see :mod:`adaptive_pool.dtypes`) and inline to
the shared codecs. CPU only: numba-cuda compiles overloads as device functions, which needs a
driver, so the CUDA backend binds the same codecs into its kernels directly.
"""

from __future__ import annotations

import numba
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


# ---------------------------------------------------------------------------------------------
# Whole-row access with branch-free codecs, so that LLVM vectorises unit-stride rows.
#
# The scalar codecs of :mod:`adaptive_pool.dtypes` branch on the class of the value (normal,
# subnormal, inf/NaN), which keeps loops over them scalar. The versions below compute every case
# and select, with the same integer arithmetic, so they return the same bits for every input
# (checked exhaustively over all 2**16 patterns and all 2**32 float32 values by
# tests/test_cpu_codecs.py). CPU only: the CUDA kernels keep the shared codecs.

from ..dtypes import _bitcast  # noqa: E402


@numba.njit(inline="always")
def _f16_decode_v(u):
    h = np.int32(u) & np.int32(0xFFFF)
    sign = (h & np.int32(0x8000)) << np.int32(16)
    e = (h >> np.int32(10)) & np.int32(0x1F)
    m = h & np.int32(0x3FF)
    normal = sign | ((e + np.int32(112)) << np.int32(23)) | (m << np.int32(13))
    special = sign | np.int32(0x7F800000) | (m << np.int32(13))
    sub = _bitcast(np.float32(np.float32(m) * np.float32(5.9604644775390625e-08)), np.int32) | sign
    # select by masks (conditional expressions here upset numba's SSA checks when inlined)
    m_sp = np.int32(-np.int32(e == np.int32(0x1F)))
    m_sub = np.int32(-np.int32(e == np.int32(0))) & ~m_sp
    bits = (special & m_sp) | (sub & m_sub) | (normal & ~(m_sp | m_sub))
    return _bitcast(np.int32(bits), np.float32)


@numba.njit(inline="always")
def _f16_encode_v(x):
    f = _bitcast(np.float32(x), np.int32)
    sign = (f >> np.int32(16)) & np.int32(0x8000)
    a = f & np.int32(0x7FFFFFFF)
    # NaN: keep the payload's top bits, never becoming an infinity
    hn = np.int32(0x7C00) + ((a & np.int32(0x7FFFFF)) >> np.int32(13))
    hn = hn + np.int32(hn == np.int32(0x7C00))
    # normal: round to nearest even by biasing before the shift
    hm = (a - np.int32(0x38000000) + np.int32(0xFFF) + ((a >> np.int32(13)) & np.int32(1))) \
        >> np.int32(13)
    # subnormal: the 24-bit significand shifted to units of 2**-24
    shift = np.int32(126) - (a >> np.int32(23))
    shift = min(max(shift, np.int32(14)), np.int32(24))
    m = (a & np.int32(0x7FFFFF)) | np.int32(0x800000)
    hs = m >> shift
    rem = m & ((np.int32(1) << shift) - np.int32(1))
    half = np.int32(1) << (shift - np.int32(1))
    hs = hs + np.int32((rem > half) | ((rem == half) & ((hs & np.int32(1)) != 0)))
    m_nan = np.int32(-np.int32(a > np.int32(0x7F800000)))
    m_inf = np.int32(-np.int32(a >= np.int32(0x477FF000))) & ~m_nan
    m_nrm = np.int32(-np.int32(a >= np.int32(0x38800000))) & ~(m_nan | m_inf)
    m_sub = np.int32(-np.int32(a >= np.int32(0x33000000))) & ~(m_nan | m_inf | m_nrm)
    h = (hn & m_nan) | (np.int32(0x7C00) & m_inf) | (hm & m_nrm) | (hs & m_sub)
    return np.uint16(sign | h)


@numba.njit(inline="always")
def _bf16_decode_v(b):
    return _bitcast(np.int32((np.int32(b) & np.int32(0xFFFF)) << np.int32(16)), np.float32)


@numba.njit(inline="always")
def _bf16_encode_v(x):
    f = _bitcast(np.float32(x), np.uint32)
    nan = ((f >> np.uint32(16)) & np.uint32(0x8000)) | np.uint32(0x7FC0)
    r = (f + np.uint32(0x7FFF) + ((f >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    m = np.uint32(0) - np.uint32((f & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000))
    b = (nan & m) | (r & ~m)
    return np.int16(np.uint16(b & np.uint32(0xFFFF)))


def dec(a, v):  # pragma: no cover - typing stub
    raise NotImplementedError


def enc(a, v):  # pragma: no cover - typing stub
    raise NotImplementedError


def key(a, v):  # pragma: no cover - typing stub
    raise NotImplementedError


def key_nan(a):  # pragma: no cover - typing stub
    raise NotImplementedError


@overload(dec, inline="always")
def _dec(a, v):
    """Storage element ``v`` of ``a``'s dtype -> accumulation type (branch-free)."""
    dt = a.dtype
    if dt == types.uint16:
        return lambda a, v: _f16_decode_v(v)
    if dt == types.int16:
        return lambda a, v: _bf16_decode_v(v)
    if dt in (types.float32, types.float64):
        return lambda a, v: v


@overload(enc, inline="always")
def _enc(a, v):
    """Accumulation value ``v`` -> ``a``'s storage element, rounded once (branch-free)."""
    dt = a.dtype
    if dt == types.uint16:
        return lambda a, v: _f16_encode_v(v)
    if dt == types.int16:
        return lambda a, v: _bf16_encode_v(v)
    if dt == types.float32:
        return lambda a, v: np.float32(v)
    if dt == types.float64:
        return lambda a, v: np.float64(v)


@overload(key, inline="always")
def _key(a, v):
    """An integer with the order of the stored value: -0 == +0, every NaN == key_nan(a).

    Max pooling compares keys instead of decoded values: the same order, the same ties.
    Sign-magnitude bits become two's complement; NaNs are masked to the largest key.
    """
    dt = a.dtype
    if dt == types.float64:
        return lambda a, v: _key64(_bitcast(v, np.int64), np.int64(0x7FF0000000000000))
    if dt == types.float32:
        return lambda a, v: _key32(_bitcast(v, np.int32), np.int32(0x7F800000))
    if dt == types.uint16:
        return lambda a, v: _key16(np.int32(v), np.int32(0x7C00))
    if dt == types.int16:
        return lambda a, v: _key16(np.int32(v), np.int32(0x7F80))


@numba.njit(inline="always")
def _key32(b, inf):
    neg = np.int32(b >> np.int32(31))  # 0 or -1 (arithmetic shift)
    mag = np.int32(b & np.int32(0x7FFFFFFF))
    k = np.int32((mag ^ neg) - neg)
    nan = np.int32(-np.int32(mag > inf))
    return np.int32((k & ~nan) | (np.int32(0x7FFFFFFF) & nan))


@numba.njit(inline="always")
def _key64(b, inf):
    neg = b >> np.int64(63)
    mag = b & np.int64(0x7FFFFFFFFFFFFFFF)
    k = (mag ^ neg) - neg
    nan = -np.int64(mag > inf)
    return (k & ~nan) | (np.int64(0x7FFFFFFFFFFFFFFF) & nan)


@numba.njit(inline="always")
def _key16(v, inf):
    b = v & np.int32(0xFFFF)
    neg = -(b >> np.int32(15))
    mag = b & np.int32(0x7FFF)
    k = (mag ^ neg) - neg
    nan = -np.int32(mag > inf)
    return np.int32((k & ~nan) | (np.int32(0x7FFFFFFF) & nan))


@overload(key_nan, inline="always")
def _key_nan(a):
    if a.dtype == types.float64:
        return lambda a: np.int64(0x7FFFFFFFFFFFFFFF)
    if a.dtype in (types.float32, types.uint16, types.int16):
        return lambda a: np.int32(0x7FFFFFFF)


@numba.njit(inline="always")
def load_row(a, base, stride, n, buf):
    """``buf[j] = a[base + j * stride]`` decoded, for ``j < n`` (vectorised at unit stride)."""
    if stride == 1:
        seg = a[base : base + n]
        for j in range(n):
            buf[j] = dec(a, seg[j])
    else:
        for j in range(n):
            buf[j] = dec(a, a[base + j * stride])


@numba.njit(inline="always")
def store_row(a, base, stride, n, buf, off):
    """``a[base + j * stride] = buf[off + j]`` encoded once, for ``j < n``."""
    if stride == 1:
        seg = a[base : base + n]
        src = buf[off : off + n]
        for j in range(n):
            seg[j] = enc(a, src[j])
    else:
        for j in range(n):
            a[base + j * stride] = enc(a, buf[off + j])
