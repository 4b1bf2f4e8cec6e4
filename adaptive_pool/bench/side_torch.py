"""The PyTorch side of a case, as the worker process of PyTorch builds and runs it.

Loaded by path into the ``torch`` worker only (see :mod:`.worker`): it imports PyTorch and
NumPy and nothing of adaptive_pool (no Numba, no OpenMP runtime but PyTorch's own).

Forwards are ``torch.nn.functional``'s functions, which users call. Backwards are the ATen
kernels that autograd runs (called as ``torch.ops.aten.<op>.default``), so only the backward
kernel is timed, not a graph. PyTorch has no 1-D backward kernels: ``adaptive_*_pool1d`` runs
the 2-D operator on an input with a unit height, so its backward is the 2-D backward on those
unsqueezed views, prepared once outside the timed call, as autograd saves them.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F

NAME = "torch"

_ATEN = torch.ops.aten
_BACKWARD = {
    ("avg", 1): _ATEN._adaptive_avg_pool2d_backward.default,
    ("avg", 2): _ATEN._adaptive_avg_pool2d_backward.default,
    ("avg", 3): _ATEN._adaptive_avg_pool3d_backward.default,
    ("max", 1): _ATEN.adaptive_max_pool2d_backward.default,
    ("max", 2): _ATEN.adaptive_max_pool2d_backward.default,
    ("max", 3): _ATEN.adaptive_max_pool3d_backward.default,
}


class Side:
    """Tensors, calls and synchronisation of PyTorch on one backend (``cpu``/``cuda``)."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        if backend == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("no CUDA GPU is available to PyTorch")
        self.device = torch.device(backend)

    def put(self, a: np.ndarray, dtype: str) -> torch.Tensor:
        """Storage-form NumPy data -> a tensor in PyTorch's own memory (its allocator)."""
        t = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16) if dtype == "bfloat16" \
            else torch.from_numpy(a)
        return t.to(self.device, copy=True)

    def channels_last(self, t: torch.Tensor) -> torch.Tensor:
        """The same values in PyTorch's channels-last memory format (4-D and 5-D tensors)."""
        fmt = torch.channels_last if t.dim() == 4 else torch.channels_last_3d
        return t.contiguous(memory_format=fmt)

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def host(self, t: torch.Tensor) -> np.ndarray:
        """A result -> NumPy in storage form (bfloat16 as uint16 bits)."""
        t = t.detach().cpu().contiguous()
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(np.uint16)
        return t.numpy()

    def build(self, kind: str, rank: int, backward: bool, x: torch.Tensor, go: torch.Tensor,
              out_size: tuple, index_dtype: str) -> tuple[Callable[[], Any], Callable[[Any], list]]:
        """The timed call of a case and a function from its result to the compared arrays."""
        fwd = getattr(F, f"adaptive_{kind}_pool{rank}d")
        osz = out_size[0] if rank == 1 else out_size  # the 1-D functions take an int
        if not backward:
            if kind == "max":
                return (lambda: fwd(x, osz, return_indices=True)), lambda r: [r[0], r[1]]
            return (lambda: fwd(x, osz)), lambda r: [r]
        bwd = _BACKWARD[kind, rank]
        shape = x.shape
        if kind == "max":
            _, ind = fwd(x, osz, return_indices=True)
            if rank == 1:
                go, x, ind = go.unsqueeze(-2), x.unsqueeze(-2), ind.unsqueeze(-2)
            return (lambda: bwd(go, x, ind)), lambda r: [r.reshape(shape)]
        if rank == 1:
            go, x = go.unsqueeze(-2), x.unsqueeze(-2)
        return (lambda: bwd(go, x)), lambda r: [r.reshape(shape)]

    def info(self) -> dict[str, Any]:
        d = {"library": "torch", "version": torch.__version__,
             "threads": torch.get_num_threads(),
             "interop_threads": torch.get_num_interop_threads(),
             "parallel_backend": _parallel_backend(), "cpu_count": os.cpu_count()}
        if self.device.type == "cuda":
            d["device"] = torch.cuda.get_device_name()
        return d


def cuda_available() -> bool:
    return bool(torch.cuda.is_available())


def _parallel_backend() -> str:
    for line in torch.__config__.parallel_info().splitlines():
        if line.startswith("ATen parallel backend"):
            return line.split(":", 1)[1].strip()
    return "unknown"
