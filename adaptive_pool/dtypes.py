"""The dtype policy and the 16-bit codecs.

Accepted dtypes: float32, float64, float16 and ``ml_dtypes.bfloat16``. Numba's CPU target has no
float16 arrays, and numba-cuda's bfloat16 needs compute capability 8.0 and is absent from the
simulator, so both 16-bit types reach the kernels as their bit patterns, through a view whose
*signedness is the codec tag*: float16 as ``uint16``, bfloat16 as ``int16``. Kernels decode to
float32, accumulate in float32 and encode once, rounding to nearest even.

The codecs are ``@numba.njit(inline="always")`` scalar functions shared by the CPU and CUDA
kernels. The float<->bits reinterpretation is an LLVM ``bitcast`` intrinsic: one instruction on
every target. (It does not run with ``NUMBA_DISABLE_JIT=1`` and would need rewriting for
numba-cuda-mlir; that is the price of exact, fast codecs.)
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

from .errors import AdaptivePoolTypeError

__all__ = [
    "DTypeSpec",
    "SUPPORTED",
    "resolve_dtype",
    "f16_decode",
    "f16_encode",
    "bf16_decode",
    "bf16_encode",
]

bfloat16 = np.dtype(ml_dtypes.bfloat16)


@dataclass(frozen=True)
class DTypeSpec:
    """How one user dtype is stored, accumulated and named."""

    dtype: np.dtype
    storage: np.dtype
    acc: np.dtype

    @property
    def name(self) -> str:
        return str(self.dtype)

    @property
    def is_16bit(self) -> bool:
        return self.dtype.itemsize == 2


SUPPORTED: dict[np.dtype, DTypeSpec] = {
    spec.dtype: spec
    for spec in (
        DTypeSpec(np.dtype(np.float32), np.dtype(np.float32), np.dtype(np.float32)),
        DTypeSpec(np.dtype(np.float64), np.dtype(np.float64), np.dtype(np.float64)),
        DTypeSpec(np.dtype(np.float16), np.dtype(np.uint16), np.dtype(np.float32)),
        DTypeSpec(bfloat16, np.dtype(np.int16), np.dtype(np.float32)),
    )
}

_ACCEPTED = "float32, float64, float16, bfloat16 (ml_dtypes.bfloat16)"


def resolve_dtype(dtype: object, argument: str) -> DTypeSpec:
    """The :class:`DTypeSpec` of ``dtype``, or a TypeError naming ``argument``."""
    try:
        spec = SUPPORTED.get(np.dtype(dtype))
    except TypeError:
        spec = None
    if spec is None:
        raise AdaptivePoolTypeError(
            f"{argument} has dtype {dtype}; accepted dtypes are {_ACCEPTED}", argument=argument
        )
    return spec


@intrinsic
def _bitcast(typingctx, value, target):
    """Reinterpret ``value``'s bits as the (same-width) number type ``target``."""
    to = target.dtype if isinstance(target, types.NumberClass) else target

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(to))

    return to(value, target), codegen


@numba.njit(inline="always")
def _f32_from_bits(bits):
    return _bitcast(np.uint32(bits), np.float32)


@numba.njit(inline="always")
def _bits_from_f32(x):
    return np.int64(_bitcast(np.float32(x), np.uint32))


# The codecs have a single return each: numba's inliner mishandles early returns of
# inline="always" functions inlined into overloads (NumbaIRAssumptionWarning).


@numba.njit(inline="always")
def f16_decode(u):
    """float16 bit pattern (uint16) -> float32, exactly (subnormals, inf, NaN payloads)."""
    h = np.int64(u) & 0xFFFF
    sign = (h & 0x8000) << 16
    e = (h >> 10) & 0x1F
    m = h & 0x3FF
    if e == 0x1F:
        bits = sign | 0x7F800000 | (m << 13)
    elif e == 0:  # zero or subnormal: m * 2**-24, exact in float32
        bits = sign | _bits_from_f32(np.float32(m) * np.float32(5.9604644775390625e-08))
    else:
        bits = sign | ((e + 112) << 23) | (m << 13)
    return _f32_from_bits(bits)


@numba.njit(inline="always")
def f16_encode(x):
    """float32 -> float16 bit pattern (uint16), round to nearest even, as NumPy's cast."""
    f = _bits_from_f32(x)
    a = f & 0x7FFFFFFF
    if a > 0x7F800000:  # NaN: keep the payload's top bits, but never become infinity
        h = max(0x7C00 + ((a & 0x7FFFFF) >> 13), 0x7C01)
    elif a >= 0x477FF000:  # infinity, or at least 65520: rounds to infinity
        h = 0x7C00
    elif a >= 0x38800000:  # normal float16
        h = (a - 0x38000000) >> 13
        rem = a & 0x1FFF
        h += rem > 0x1000 or (rem == 0x1000 and (h & 1))
    elif a < 0x33000000:  # at most 2**-25: rounds to zero
        h = 0
    else:  # subnormal float16: the 24-bit significand in units of 2**-24
        shift = 126 - (a >> 23)
        m = (a & 0x7FFFFF) | 0x800000
        h = m >> shift
        rem = m & ((np.int64(1) << shift) - 1)
        half = np.int64(1) << (shift - 1)
        h += rem > half or (rem == half and (h & 1))
    return np.uint16(((f >> 16) & 0x8000) | h)


@numba.njit(inline="always")
def bf16_decode(b):
    """bfloat16 bit pattern (int16) -> float32, exactly: the pattern is float32's top half."""
    return _f32_from_bits((np.int64(b) & 0xFFFF) << 16)


@numba.njit(inline="always")
def bf16_encode(x):
    """float32 -> bfloat16 bit pattern (int16), round to nearest even, as ml_dtypes' cast."""
    f = _bits_from_f32(x)
    if (f & 0x7FFFFFFF) > 0x7F800000:
        b = ((f >> 16) & 0x8000) | 0x7FC0  # ml_dtypes returns the canonical quiet NaN
    else:
        b = (f + 0x7FFF + ((f >> 16) & 1)) >> 16
    return np.int16(np.uint16(b & 0xFFFF))
