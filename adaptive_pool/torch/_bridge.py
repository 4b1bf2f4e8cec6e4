"""Tensors as the arrays the executors take, and outputs allocated by torch.

CPU tensors become NumPy views of their memory (no copy; bfloat16 through an ``int16`` view
re-read as ``ml_dtypes.bfloat16``, since NumPy has no torch bfloat16). CUDA tensors are handed to
the CUDA backend as they are (detached: a tensor that requires grad refuses its
``__cuda_array_interface__``), with PyTorch's current stream. Results are allocated by torch and
written through such a view, or (contiguous CPU calls) allocated by NumPy and handed to torch
without a copy (:func:`as_tensor`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..dtypes import bfloat16
from ..errors import AdaptivePoolTypeError

__all__ = [
    "as_array", "as_tensor", "dense_like", "new_output", "result_order", "current_stream",
    "numpy_index_dtype", "torch_index_dtype",
]

#: torch dtypes the kernels read or write: the four data types and the two index types.
_NUMPY = {
    torch.float32: np.dtype(np.float32),
    torch.float64: np.dtype(np.float64),
    torch.float16: np.dtype(np.float16),
    torch.bfloat16: bfloat16,
    torch.int32: np.dtype(np.int32),
    torch.int64: np.dtype(np.int64),
}
_INDEX = {np.dtype(np.int32): torch.int32, np.dtype(np.int64): torch.int64}


def as_array(t: torch.Tensor, argument: str) -> Any:
    """The executor-side array of ``t``: a NumPy view (CPU) or the detached tensor (CUDA)."""
    if t.dtype not in _NUMPY:
        raise AdaptivePoolTypeError(
            f"{argument} has dtype {t.dtype}; accepted: float32, float64, float16, bfloat16 "
            f"(and int32 or int64 for indices)",
            argument=argument,
        )
    if t.requires_grad:  # (numpy() refuses it; detach() costs 0.4 us of a tiny call)
        t = t.detach()
    if t.is_cpu:
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(bfloat16)
        return t.numpy()
    if t.device.type == "cuda":
        return t
    raise AdaptivePoolTypeError(
        f"{argument} is on device {t.device}; adaptive_pool runs on CPU and CUDA tensors",
        argument=argument,
    )


def as_tensor(a: np.ndarray) -> torch.Tensor:
    """The CPU tensor over NumPy array ``a``'s memory (no copy): :func:`as_array`'s inverse."""
    if a.dtype == bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def _memory_format(x: torch.Tensor, spatial: int) -> torch.memory_format:
    """The layout a result of ``x``'s rank is allocated in by an operator over ``spatial``
    axes: channels-last where PyTorch's pooling keeps it (the 2-D operators on a batched
    channels-last ``x``), else contiguous (PyTorch's 3-D adaptive pooling returns contiguous
    results of ``channels_last_3d`` inputs). The fake kernels call this too, so strides
    always match."""
    if spatial == 2 and x.dim() == 4 and not x.is_contiguous():
        if x.is_contiguous(memory_format=torch.channels_last):
            return torch.channels_last
    return torch.contiguous_format


def result_order(x: torch.Tensor, spatial: int) -> tuple[int, ...]:
    """The axis order in memory (outermost first) of the results :func:`new_output`
    allocates in ``x``'s rank."""
    if _memory_format(x, spatial) is torch.channels_last:
        return (0, 2, 3, 1)
    return tuple(range(x.dim()))


def dense_like(t: torch.Tensor, x: torch.Tensor, spatial: int) -> torch.Tensor:
    """``t``, or where a CPU ``t`` is not contiguous in C order nor in the results' memory
    format (an expanded gradient), a copy of it in that format: what a prepared call reads
    (the copy is of an output-sized gradient)."""
    fmt = _memory_format(x, spatial)
    if not t.is_cpu or t.is_contiguous() or t.is_contiguous(memory_format=fmt):
        return t
    return t.contiguous(memory_format=fmt)


def new_output(
    x: torch.Tensor, shape: Any, spatial: int, dtype: torch.dtype | None = None
) -> torch.Tensor:
    """An uninitialised result of ``shape`` on ``x``'s device, of an operator over
    ``spatial`` axes, laid out as PyTorch's would be."""
    fmt = _memory_format(x, spatial) if len(shape) == x.dim() else torch.contiguous_format
    return torch.empty(
        tuple(shape), dtype=dtype or x.dtype, device=x.device, memory_format=fmt
    )


def current_stream(t: torch.Tensor) -> Any:
    """PyTorch's current stream on ``t``'s device (None for CPU tensors)."""
    if t.device.type == "cuda":
        return torch.cuda.current_stream(t.device)
    return None


def numpy_index_dtype(dtype: torch.dtype) -> Any:
    """The NumPy dtype of torch.int32 / torch.int64 (anything else is returned as it is, for
    :func:`~adaptive_pool.arguments.check_index_dtype` to refuse by name)."""
    return _NUMPY.get(dtype, dtype) if dtype in _INDEX.values() else dtype


def torch_index_dtype(dtype: np.dtype) -> torch.dtype:
    """torch.int32 or torch.int64 for a validated NumPy index dtype."""
    return _INDEX[np.dtype(dtype)]
