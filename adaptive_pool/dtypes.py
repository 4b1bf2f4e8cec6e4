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
from llvmlite import ir
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


# The codecs are branch-free: every case (normal, subnormal, inf/NaN) is computed and the
# result selected with masks, so loops over them vectorise on the CPU and do not diverge on the
# GPU. (Conditional expressions in inlined helpers also upset numba's SSA checks.)


@numba.njit(inline="always")
def _mask32(c):
    """All ones where ``c`` holds, else zero, as int32."""
    return -np.int32(c)


@numba.njit(inline="always")
def f16_decode(u):
    """float16 bit pattern (uint16) -> float32, exactly (subnormals, inf, NaN payloads).

    The exponent and mantissa bits, moved to float32's positions, read as a float32 that is
    2**112 too small (a subnormal one for float16 subnormals): one exact multiplication scales
    it. Only inf/NaN need their exponent set. (Exact because no backend flushes subnormals:
    the PTX tests check for the absence of ``.ftz``.)
    """
    h = np.int32(u) & np.int32(0xFFFF)
    em = h & np.int32(0x7FFF)
    f = _bitcast(np.int32(em << np.int32(13)), np.float32) * np.float32(5.192296858534828e33)
    is_special = _mask32(em >= np.int32(0x7C00))
    bits = (_bitcast(np.float32(f), np.int32) & ~is_special) | (
        ((em << np.int32(13)) | np.int32(0x7F800000)) & is_special
    )
    return _bitcast(np.int32(bits | ((h & np.int32(0x8000)) << np.int32(16))), np.float32)


@numba.njit(inline="always")
def f16_encode(x):
    """float32 -> float16 bit pattern (uint16), round to nearest even, as NumPy's cast."""
    f = _bitcast(np.float32(x), np.int32)
    a = f & np.int32(0x7FFFFFFF)
    # NaN: keep the payload's top bits, but never become an infinity
    h_nan = np.int32(0x7C00) + ((a & np.int32(0x7FFFFF)) >> np.int32(13))
    h_nan = h_nan + np.int32(h_nan == np.int32(0x7C00))
    # normal: rebias the exponent, round to nearest even by biasing before the shift
    h_norm = (a - np.int32(0x38000000) + np.int32(0xFFF) + ((a >> np.int32(13)) & np.int32(1)))
    h_norm = h_norm >> np.int32(13)
    # below 2**-14 (subnormal or zero): in 0.5 + |x| float32's step is 2**-24, float16's
    # subnormal step, so the hardware's rounding leaves the float16 pattern in the low bits
    h_sub = _bitcast(
        np.float32(_bitcast(np.int32(a), np.float32) + np.float32(0.5)), np.int32
    ) - np.int32(0x3F000000)
    is_nan = _mask32(a > np.int32(0x7F800000))
    is_inf = _mask32(a >= np.int32(0x477FF000)) & ~is_nan  # also every value >= 65520
    is_norm = _mask32(a >= np.int32(0x38800000)) & ~(is_nan | is_inf)
    h = (h_nan & is_nan) | (np.int32(0x7C00) & is_inf) | (h_norm & is_norm)
    h = h | (h_sub & ~(is_nan | is_inf | is_norm))
    return np.uint16(((f >> np.int32(16)) & np.int32(0x8000)) | h)


@numba.njit(inline="always")
def bf16_decode(b):
    """bfloat16 bit pattern (int16) -> float32, exactly: the pattern is float32's top half."""
    return _bitcast(np.int32((np.int32(b) & np.int32(0xFFFF)) << np.int32(16)), np.float32)


def bf16_round_ir(builder, f):
    """LLVM IR of float32 bits ``f`` (i32) -> bfloat16 bits (i16), round to nearest even; NaN
    -> quiet NaN (its sign, no payload).

    In 32-bit integer instructions: numba widens integer arithmetic to 64 bits, which halved
    the width of the vectorised loops and made this encode 2.4x slower than float16's.
    """
    i32 = ir.IntType(32)

    def c(v):
        return ir.Constant(i32, v)

    hi = builder.lshr(f, c(16))
    nan = builder.or_(builder.and_(hi, c(0x8000)), c(0x7FC0))  # sign, canonical quiet NaN
    # round to nearest even by biasing before the shift (it wraps only for NaNs)
    r = builder.lshr(builder.add(builder.add(f, c(0x7FFF)), builder.and_(hi, c(1))), c(16))
    is_nan = builder.icmp_unsigned(">", builder.and_(f, c(0x7FFFFFFF)), c(0x7F800000))
    return builder.trunc(builder.select(is_nan, nan, r), ir.IntType(16))


@intrinsic
def _bf16_round(typingctx, x):
    """float32 -> bfloat16 bit pattern (int16): :func:`bf16_round_ir`."""

    def codegen(context, builder, signature, args):
        return bf16_round_ir(builder, builder.bitcast(args[0], ir.IntType(32)))

    return types.int16(types.float32), codegen


@numba.njit(inline="always")
def bf16_encode(x):
    """float32 -> bfloat16 bit pattern (int16), round to nearest even, as ml_dtypes' cast."""
    return _bf16_round(np.float32(x))
