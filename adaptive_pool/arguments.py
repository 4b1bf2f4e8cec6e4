"""Argument checks shared by every entry point: one wording, one exception per mistake."""

from __future__ import annotations

import numbers
from typing import Sequence, Union

import numpy as np

from .errors import AdaptivePoolTypeError, AdaptivePoolValueError, MissingArgumentError

__all__ = [
    "OutputSize",
    "require",
    "parse_output_size",
    "check_rank",
    "check_index_dtype",
    "check_flag",
    "check_backward",
]

OutputSize = Union[int, Sequence[Union[int, None]]]

#: Sizes must stay below this: the window helpers are exact 64-bit arithmetic up to 2**62.
MAX_SIZE = 2**62

INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))


def require(value: object, name: str) -> object:
    """``value``, or a :class:`MissingArgumentError` (aclnn 161001) naming ``name``."""
    if value is None:
        raise MissingArgumentError(f"{name} is required but got None", argument=name)
    return value


def _size(value: object, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise AdaptivePoolTypeError(
            f"{name} entries must be int or None, got {value!r} ({type(value).__name__})",
            argument=name,
        )
    if value < 0:
        raise AdaptivePoolValueError(f"{name} entries must be >= 0, got {value}", argument=name)
    if value >= MAX_SIZE:
        raise AdaptivePoolValueError(
            f"{name} entries must be below 2**62, got {value}", argument=name
        )
    return int(value)


def parse_output_size(
    output_size: OutputSize, in_spatial: tuple[int, ...], name: str = "output_size"
) -> tuple[int, ...]:
    """Normalise ``output_size`` to one int per spatial axis (``None`` keeps the input size)."""
    require(output_size, name)
    n = len(in_spatial)
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != n:
            raise AdaptivePoolValueError(
                f"{name} must have {n} entries (one per spatial axis), got {len(output_size)}: "
                f"{tuple(output_size)!r}",
                argument=name,
            )
        return tuple(
            i if o is None else _size(o, name) for o, i in zip(output_size, in_spatial)
        )
    if isinstance(output_size, (numbers.Integral,)) and not isinstance(output_size, bool):
        return (_size(output_size, name),) * n
    raise AdaptivePoolTypeError(
        f"{name} must be an int or a tuple of {n} ints/None, got {type(output_size).__name__}",
        argument=name,
    )


def check_rank(shape: tuple[int, ...], ranks: tuple[int, ...], name: str, layout: str) -> None:
    """A ValueError unless ``len(shape)`` is one of ``ranks``; spatial sizes must be positive."""
    if len(shape) not in ranks:
        raise AdaptivePoolValueError(
            f"{name} must be {' or '.join(f'{r}-D' for r in ranks)} ({layout}), "
            f"got shape {tuple(shape)}",
            argument=name,
        )


def check_index_dtype(dtype: object, name: str) -> np.dtype:
    """``dtype`` as int32 or int64, or a TypeError naming ``name``."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt not in INDEX_DTYPES:
        raise AdaptivePoolTypeError(
            f"{name} must have dtype int32 or int64, got {dtype}", argument=name
        )
    return dt


def check_flag(value: object, name: str) -> bool:
    """``value`` as a bool, or a TypeError naming ``name`` unless it is True or False."""
    if type(value) not in (bool, np.bool_):
        raise AdaptivePoolTypeError(
            f"{name} must be True or False, got {value!r} ({type(value).__name__})",
            argument=name,
        )
    return bool(value)


def check_backward(
    op: "object", x_shape, x_dtype, g_shape, g_dtype, i_shape=None, i_dtype=None
) -> "np.dtype | None":
    """The checks of a backward's arrays against each other: ranks, N and C, dtypes, and the
    indices' shape and dtype (``op`` an :class:`~adaptive_pool.executors.Operator`). Returns
    the index dtype (None for an average)."""
    xs, gs = tuple(x_shape), tuple(g_shape)
    check_rank(xs, op.ranks, "x", op.layout)
    if len(gs) != len(xs):
        raise AdaptivePoolValueError(
            f"grad_output must have the rank of x ({len(xs)}-D, {op.layout}), got shape "
            f"{gs} for x of shape {xs}",
            argument="grad_output",
        )
    lead = len(xs) - op.spatial
    if gs[:lead] != xs[:lead]:
        what = "N and C" if lead == 2 else "C"
        raise AdaptivePoolValueError(
            f"grad_output and x must agree in {what}: got grad_output {gs} and x {xs}",
            argument="grad_output",
        )
    if g_dtype != x_dtype:
        raise AdaptivePoolTypeError(
            f"grad_output has dtype {g_dtype} but x has dtype {x_dtype}; they must match",
            argument="grad_output",
        )
    if not op.max:
        return None
    index_dtype = check_index_dtype(i_dtype, "indices")
    if tuple(i_shape) != gs:
        raise AdaptivePoolValueError(
            f"indices must have grad_output's shape {gs}, got {tuple(i_shape)}",
            argument="indices",
        )
    return index_dtype
