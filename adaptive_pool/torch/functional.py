"""``torch.nn.functional``'s adaptive pooling functions, computed by adaptive_pool's kernels.

Same names, signatures and results as PyTorch's (int64 indices, ``return_indices``), but every
backward is adaptive_pool's gather: deterministic on CUDA, bitwise equal on CPU and GPU.
The argument handling is plain Python on shapes, so ``torch.compile`` traces it without a
graph break.
"""

from __future__ import annotations

import numbers
from typing import Any, Sequence, Union

import torch
from torch import Tensor

from ..errors import AdaptivePoolTypeError, AdaptivePoolValueError, MissingArgumentError
from . import _functorch as calls

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "output_sizes",
]

Size = Union[int, Sequence[Union[int, None]]]
_LAYOUT = {1: "(C, L) or (N, C, L)", 2: "(C, H, W) or (N, C, H, W)",
           3: "(C, D, H, W) or (N, C, D, H, W)"}


def _entry(value: Any, name: str) -> Any:
    if type(value) is int and value >= 0:  # (the ABC test below costs 0.3 us an entry)
        return value
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, torch.SymInt)):
        raise AdaptivePoolTypeError(
            f"{name} entries must be int or None, got {value!r} ({type(value).__name__})",
            argument=name,
        )
    if value < 0:
        raise AdaptivePoolValueError(f"{name} entries must be >= 0, got {value}", argument=name)
    return value


def output_sizes(x: Tensor, output_size: Size, spatial: int, name: str = "output_size") -> list:
    """``output_size`` as one size per spatial axis of ``x`` (``None`` keeps the input size).

    Also checks the rank of ``x``, as :mod:`adaptive_pool.arguments` does for arrays.
    """
    if not isinstance(x, torch.Tensor):
        raise AdaptivePoolTypeError(
            f"input must be a torch.Tensor, got {type(x).__module__}.{type(x).__name__}",
            argument="input",
        )
    if x.dim() not in (spatial + 1, spatial + 2):
        raise AdaptivePoolValueError(
            f"input must be {spatial + 1}-D or {spatial + 2}-D ({_LAYOUT[spatial]}), got shape "
            f"{tuple(x.shape)}",
            argument="input",
        )
    if output_size is None:
        raise MissingArgumentError(f"{name} is required but got None", argument=name)
    in_spatial = list(x.shape[x.dim() - spatial :])
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != spatial:
            raise AdaptivePoolValueError(
                f"{name} must have {spatial} entries (one per spatial axis), got "
                f"{len(output_size)}: {tuple(output_size)!r}",
                argument=name,
            )
        return [i if o is None else _entry(o, name) for o, i in zip(output_size, in_spatial)]
    return [_entry(output_size, name)] * spatial


def _avg(spatial: int) -> Any:
    def pool(input: Tensor, output_size: Size) -> Tensor:
        return calls.avg_pool(input, output_sizes(input, output_size, spatial))

    pool.__name__ = pool.__qualname__ = f"adaptive_avg_pool{spatial}d"
    pool.__doc__ = f"""Adaptive average pooling over the last {spatial} axes, as
    :func:`torch.nn.functional.{pool.__name__}`.

    Parameters
    ----------
    input : torch.Tensor, shape {_LAYOUT[spatial]}
        float32, float64, float16 or bfloat16, on the CPU or a CUDA device; any strides.
    output_size : int or tuple of {spatial} (int or None)
        The output's spatial size; ``None`` keeps that axis's input size.

    Returns
    -------
    torch.Tensor
        The window means; differentiable (twice), with a deterministic backward.
    """
    return pool


def _max(spatial: int) -> Any:
    def pool(input: Tensor, output_size: Size, return_indices: bool = False) -> Any:
        y, indices = calls.max_pool(input, output_sizes(input, output_size, spatial), torch.int64)
        return (y, indices) if return_indices else y

    pool.__name__ = pool.__qualname__ = f"adaptive_max_pool{spatial}d"
    pool.__doc__ = f"""Adaptive max pooling over the last {spatial} axes, as
    :func:`torch.nn.functional.{pool.__name__}`.

    Parameters
    ----------
    input : torch.Tensor, shape {_LAYOUT[spatial]}
        float32, float64, float16 or bfloat16, on the CPU or a CUDA device; any strides.
    output_size : int or tuple of {spatial} (int or None)
        The output's spatial size; ``None`` keeps that axis's input size.
    return_indices : bool, default False
        Also return the int64 indices of the maxima: flat offsets inside each ``(n, c)`` plane.

    Returns
    -------
    torch.Tensor or (torch.Tensor, torch.Tensor)
        The window maxima (first maximum on ties, NaN propagates), and the indices when asked.
    """
    return pool


adaptive_avg_pool1d = _avg(1)
adaptive_avg_pool2d = _avg(2)
adaptive_avg_pool3d = _avg(3)
adaptive_max_pool1d = _max(1)
adaptive_max_pool2d = _max(2)
adaptive_max_pool3d = _max(3)
