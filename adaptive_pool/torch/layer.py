"""The integration layer for adaptive_pool's own functions called with tensors.

:func:`adaptive_pool.dispatch.layer_for` sends every call of :mod:`adaptive_pool.functional`
that involves a ``torch.Tensor`` to :func:`run`, which keeps the library's conventions (the max
forward returns ``(y, indices)`` with ``index_dtype``, int32 by default; ``out=`` is honoured)
and returns tensors. Calls without ``out=`` go through the registered operators, so they are
differentiable; calls with ``out=`` write into the given tensors directly and, as PyTorch's
``out=`` variants, refuse to run when autograd would have to record them.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from ..arguments import check_flag, check_index_dtype, check_rank, parse_output_size, require
from ..errors import AdaptivePoolTypeError, AdaptivePoolValueError
from ..executors import OPERATORS
from ..functional import backward_executor, forward_executor
from . import _functorch as calls
from ._bridge import as_array, current_stream, new_output, torch_index_dtype

__all__ = ["run"]


def _tensors(**arrays: Any) -> dict[str, torch.Tensor]:
    """The non-None arguments, checked to be tensors on one device."""
    given = {k: a for k, a in arrays.items() if a is not None}
    first = next((k for k, a in given.items() if isinstance(a, torch.Tensor)), None)
    if first is None:  # a torch object that is not a tensor (a Size, a dtype, ...)
        k, a = next(iter(given.items()))
        raise AdaptivePoolTypeError(
            f"{k} must be an array or a tensor, got {type(a).__module__}.{type(a).__name__}",
            argument=k,
        )
    for k, a in given.items():
        if not isinstance(a, torch.Tensor):
            raise AdaptivePoolTypeError(
                f"{k} is a {type(a).__module__}.{type(a).__name__} but {first} is a "
                f"torch.Tensor; pass arrays of one kind (tensors throughout, or NumPy arrays "
                f"from .numpy())",
                argument=k,
            )
    devices = {k: a.device for k, a in given.items()}
    if len(set(devices.values())) > 1:
        where = ", ".join(f"{k} on {d}" for k, d in devices.items())
        odd = next(k for k, d in devices.items() if d != devices[first])
        raise AdaptivePoolTypeError(f"arrays must all be on one device, got {where}",
                                    argument=odd)
    return given


def _refuse_grad(name: str, tensors: dict[str, torch.Tensor]) -> None:
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors.values()):
        raise AdaptivePoolValueError(
            f"{name} with out= is not differentiable (as PyTorch's out= variants): call it "
            f"without out=, or under torch.no_grad()",
            argument="out",
        )


def _stream_handle(stream: Any) -> int:
    protocol = getattr(stream, "__cuda_stream__", None)  # cuda.core's stream protocol
    if callable(protocol):
        return int(protocol()[1])
    for attr in ("cuda_stream", "ptr"):  # PyTorch, CuPy
        handle = getattr(stream, attr, None)
        if isinstance(handle, int):
            return handle
    try:
        return int(stream)  # an int handle, or a Numba stream
    except (TypeError, ValueError):
        raise AdaptivePoolTypeError(
            f"stream must be None, a PyTorch, CuPy or Numba stream or an int handle, got "
            f"{type(stream).__module__}.{type(stream).__name__}",
            argument="stream",
        ) from None


def _on_stream(stream: Any, x: torch.Tensor) -> Any:
    """A context running the registered operators on ``stream`` (PyTorch's current stream
    when None; CPU tensors have none)."""
    if stream is None or x.device.type != "cuda":
        return contextlib.nullcontext()
    if not isinstance(stream, torch.cuda.Stream):
        stream = torch.cuda.ExternalStream(_stream_handle(stream), device=x.device)
    return torch.cuda.stream(stream)


def _bump(*tensors: Any) -> None:
    """Tell autograd that tensors written through a view have changed."""
    for t in tensors:
        if t is not None:
            torch.autograd.graph.increment_version(t)


def run(name: str, *args: Any, out: Any = None, indices_out: Any = None, stream: Any = None,
        index_dtype: Any = None, skipna: bool = False) -> Any:
    """Compute ``adaptive_pool.<name>(*args, ...)`` on tensors, returning tensors.

    Parameters
    ----------
    name : str
        A function of :mod:`adaptive_pool.functional`, e.g. ``"adaptive_max_pool2d_backward"``.
    *args, out, indices_out, stream, index_dtype, skipna
        That function's arguments, exactly as the caller passed them.

    Returns
    -------
    torch.Tensor or tuple of torch.Tensor
        What the function returns for NumPy arrays, as tensors on the inputs' device.
    """
    op = OPERATORS[name]
    check_flag(skipna, "skipna")
    if op.backward:
        return _backward(op, *args, out=out, stream=stream, skipna=bool(skipna))
    x, output_size = args
    require(x, "x")
    tensors = _tensors(x=x, out=out, indices_out=indices_out)
    if out is not None or indices_out is not None:
        _refuse_grad(name, tensors)
        return _forward_into(op, x, output_size, index_dtype, out, indices_out, stream, skipna)
    if op.max:
        index_dtype = check_index_dtype(index_dtype, "index_dtype")
    check_rank(tuple(x.shape), op.ranks, "x", op.layout)
    sizes = list(parse_output_size(output_size, tuple(x.shape[x.dim() - op.spatial :])))
    with _on_stream(stream, x):
        if op.max:
            return calls.max_pool(x, sizes, torch_index_dtype(index_dtype), bool(skipna))
        return calls.avg_pool(x, sizes, bool(skipna))


def _forward_into(op, x, output_size, index_dtype, out, indices_out, stream, skipna) -> Any:
    xa = as_array(x, "x")
    oa = as_array(out, "out") if out is not None else None
    ia = as_array(indices_out, "indices_out") if indices_out is not None else None
    ex = forward_executor(op.name, xa, output_size, index_dtype, skipna, out=oa, indices_out=ia)
    y = out if out is not None else new_output(x, ex.y_shape, op.spatial)
    stream = current_stream(x) if stream is None else stream
    if op.max:
        idx = indices_out
        if idx is None:
            idx = new_output(x, ex.y_shape, op.spatial, torch_index_dtype(ex.index_dtype))
        ex.run(xa, out=as_array(y, "out"), indices_out=as_array(idx, "indices_out"),
               stream=stream)
        _bump(out, indices_out)
        return y, idx
    ex.run(xa, out=as_array(y, "out"), stream=stream)
    _bump(out)
    return y


def _backward(op, grad_output, x, indices=None, *, out, stream, skipna) -> Any:
    require(grad_output, "grad_output")
    require(x, "x")
    if op.max:
        require(indices, "indices")
    tensors = _tensors(grad_output=grad_output, x=x, indices=indices, out=out)
    if out is None:
        with _on_stream(stream, x):
            if op.max:
                return calls.max_pool_backward(grad_output, x, indices, op.spatial)
            return calls.avg_pool_backward(grad_output, x, op.spatial, skipna)
    _refuse_grad(op.name, tensors)
    arrays = {k: as_array(t, k) for k, t in tensors.items()}
    ex = backward_executor(op.name, **arrays, skipna=skipna)
    ex.run(arrays["x"], grad_output=arrays["grad_output"], indices=arrays.get("indices"),
           out=arrays["out"], stream=current_stream(x) if stream is None else stream)
    _bump(out)
    return out
