"""The CPU kernels' branch-free 16-bit codecs give exactly the shared codecs' bits."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numba import prange

from adaptive_pool.cpu.access import (
    _bf16_decode_v,
    _bf16_encode_v,
    _f16_decode_v,
    _f16_encode_v,
)
from adaptive_pool.dtypes import _bitcast, bf16_decode, bf16_encode, f16_decode, f16_encode


@numba.njit(parallel=True)
def _encode_mismatches(lo, hi, step):
    bad = 0
    for j in prange((hi - lo) // step):
        x = _bitcast(np.uint32(lo + j * step), np.float32)
        a = (np.int64(f16_encode(x)) & 0xFFFF) != (np.int64(_f16_encode_v(x)) & 0xFFFF)
        b = (np.int64(bf16_encode(x)) & 0xFFFF) != (np.int64(_bf16_encode_v(x)) & 0xFFFF)
        bad += np.int64(a) + np.int64(b)
    return bad


@numba.njit
def _decode_mismatches():
    bad = 0
    for i in range(65536):
        a = _bitcast(np.float32(f16_decode(np.uint16(i))), np.uint32)
        b = _bitcast(np.float32(_f16_decode_v(np.uint16(i))), np.uint32)
        c = _bitcast(np.float32(bf16_decode(np.int16(np.uint16(i)))), np.uint32)
        d = _bitcast(np.float32(_bf16_decode_v(np.int16(np.uint16(i)))), np.uint32)
        bad += (a != b) + (c != d)
    return bad


def test_decode_all_patterns():
    assert _decode_mismatches() == 0


def test_encode_sampled():
    # every 97th float32 pattern, plus every pattern around the float16 boundaries
    assert _encode_mismatches(0, 1 << 32, 97) == 0
    for edge in (0x33000000, 0x38800000, 0x477FF000, 0x7F800000):
        for sign in (0, 1 << 31):
            lo = sign + edge - (1 << 16)
            assert _encode_mismatches(lo, lo + (1 << 17), 1) == 0


@pytest.mark.slow
def test_encode_all_float32():
    assert _encode_mismatches(0, 1 << 32, 1) == 0
