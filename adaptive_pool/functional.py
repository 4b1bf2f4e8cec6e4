"""The one-call functions (PyTorch-style names) for NumPy and CUDA arrays.

Each call validates its arguments, fetches the cached executor for its plan and runs it; the
backend follows the arrays (NumPy -> CPU, CUDA arrays -> GPU).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .arguments import OutputSize, check_index_dtype, check_rank, parse_output_size, require
from .dispatch import backend_for
from .errors import AdaptivePoolTypeError, AdaptivePoolValueError
from .executors import OPERATORS, Executor, get_executor, plan_key

__all__ = [
    "adaptive_avg_pool2d",
    "adaptive_avg_pool2d_backward",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_backward",
    "forward_executor",
    "backward_executor",
]


def forward_executor(
    op: str, x: Any, output_size: OutputSize, index_dtype: Any = None, **outputs: Any
) -> Executor:
    """Validate a forward call and return its (cached) executor.

    A given ``indices_out`` decides the index dtype (``index_dtype`` is then ignored).
    """
    require(x, "x")
    be = backend_for(x=x, **outputs)
    if outputs.get("indices_out") is not None:
        index_dtype = check_index_dtype(be.describe(outputs["indices_out"])[1], "indices_out")
    shape, dtype = be.describe(x)
    o = OPERATORS[op]
    check_rank(shape, o.ranks, "x", o.layout)
    out_spatial = parse_output_size(output_size, tuple(shape[-o.spatial :]))
    return get_executor(plan_key(op, be, shape, dtype, out_spatial, index_dtype), be)


def backward_executor(
    op: str, grad_output: Any, x: Any, indices: Any = None, **outputs: Any
) -> Executor:
    """Validate a backward call (agreement of ``grad_output``, ``x``, ``indices``) and plan it."""
    o = OPERATORS[op]
    require(grad_output, "grad_output")
    require(x, "x")
    if o.max:
        require(indices, "indices")
    be = backend_for(grad_output=grad_output, x=x, indices=indices, **outputs)
    xs, xdt = be.describe(x)
    gs, gdt = be.describe(grad_output)
    check_rank(xs, o.ranks, "x", o.layout)
    if len(gs) != len(xs):
        raise AdaptivePoolValueError(
            f"grad_output must have the rank of x ({len(xs)}-D, {o.layout}), got shape "
            f"{tuple(gs)} for x of shape {tuple(xs)}",
            argument="grad_output",
        )
    lead = len(xs) - o.spatial
    if tuple(gs[:lead]) != tuple(xs[:lead]):
        what = "N and C" if lead == 2 else "C"
        raise AdaptivePoolValueError(
            f"grad_output and x must agree in {what}: got grad_output {tuple(gs)} and x "
            f"{tuple(xs)}",
            argument="grad_output",
        )
    if gdt != xdt:
        raise AdaptivePoolTypeError(
            f"grad_output has dtype {gdt} but x has dtype {xdt}; they must match",
            argument="grad_output",
        )
    index_dtype = None
    if o.max:
        ishape, idt = be.describe(indices)
        index_dtype = check_index_dtype(idt, "indices")
        if tuple(ishape) != tuple(gs):
            raise AdaptivePoolValueError(
                f"indices must have grad_output's shape {tuple(gs)}, got {tuple(ishape)}",
                argument="indices",
            )
    key = plan_key(op, be, xs, xdt, tuple(int(s) for s in gs[lead:]), index_dtype)
    return get_executor(key, be)


def adaptive_avg_pool2d(
    x: Any, output_size: OutputSize, *, out: Any = None, stream: Any = None
) -> Any:
    """Adaptive average pooling over the last two axes.

    Parameters
    ----------
    x : array, shape (C, H, W) or (N, C, H, W)
        float32, float64, float16 or bfloat16; NumPy (CPU) or a CUDA array (GPU); any strides.
    output_size : int or tuple of (int or None)
        ``(OH, OW)``; an int is used for both; ``None`` keeps that axis's input size.
    out : array, optional
        Where to write the result (may be strided; must not overlap ``x``).
    stream : optional
        CUDA stream for GPU arrays.

    Returns
    -------
    array, shape (..., OH, OW)
        ``y[o] = sum(x[window(o)]) / volume(o)`` with float32 accumulation for 16-bit dtypes.

    Examples
    --------
    >>> import numpy as np, adaptive_pool as ap
    >>> ap.adaptive_avg_pool2d(np.arange(6.0).reshape(1, 2, 3), (1, 2))
    array([[[2., 3.]]])
    """
    ex = forward_executor("adaptive_avg_pool2d", x, output_size, out=out)
    return ex.run(x, out=out, stream=stream)


def adaptive_avg_pool2d_backward(
    grad_output: Any, x: Any, *, out: Any = None, stream: Any = None
) -> Any:
    """Gradient of :func:`adaptive_avg_pool2d` with respect to its input.

    Parameters
    ----------
    grad_output : array, shape (..., OH, OW)
        Gradient of the forward output; same rank, N, C and dtype as ``x``.
    x : array, shape (C, H, W) or (N, C, H, W)
        The forward input (only its shape and dtype are used).
    out : array, optional
        Where to write ``grad_input``.
    stream : optional
        CUDA stream for GPU arrays.

    Returns
    -------
    array, shape and dtype of ``x``
        ``grad_input[i] = sum over covering o of grad_output[o] / volume(o)``, a deterministic
        gather.
    """
    ex = backward_executor("adaptive_avg_pool2d_backward", grad_output, x, out=out)
    return ex.run(x, grad_output=grad_output, out=out, stream=stream)


def adaptive_max_pool3d(
    x: Any,
    output_size: OutputSize,
    *,
    index_dtype: Any = np.int32,
    out: Any = None,
    indices_out: Any = None,
    stream: Any = None,
) -> tuple[Any, Any]:
    """Adaptive max pooling over the last three axes, with the argmax indices.

    Parameters
    ----------
    x : array, shape (C, D, H, W) or (N, C, D, H, W)
        float32, float64, float16 or bfloat16; NumPy (CPU) or a CUDA array (GPU); any strides.
    output_size : int or tuple of (int or None)
        ``(OD, OH, OW)``; an int is used for every axis; ``None`` keeps that axis's size.
    index_dtype : numpy dtype, default int32
        int32 (CANN) or int64 (PyTorch). Ignored when ``indices_out`` is given.
    out, indices_out : array, optional
        Where to write the values and the indices.
    stream : optional
        CUDA stream for GPU arrays.

    Returns
    -------
    y : array, shape (..., OD, OH, OW)
        The window maxima. Ties keep the first maximum in d, h, w order; NaN propagates.
    indices : array of ``index_dtype``, same shape
        Flat offsets ``d*H*W + h*W + w`` of each maximum inside its ``(n, c)`` plane.
    """
    ex = forward_executor(
        "adaptive_max_pool3d", x, output_size, index_dtype, out=out, indices_out=indices_out
    )
    return ex.run(x, out=out, indices_out=indices_out, stream=stream)


def adaptive_max_pool3d_backward(
    grad_output: Any, x: Any, indices: Any, *, out: Any = None, stream: Any = None
) -> Any:
    """Gradient of :func:`adaptive_max_pool3d` with respect to its input.

    Parameters
    ----------
    grad_output : array, shape (..., OD, OH, OW)
        Gradient of the forward output; same rank, N, C and dtype as ``x``.
    x : array, shape (C, D, H, W) or (N, C, D, H, W)
        The forward input (only its shape and dtype are used).
    indices : array of int32 or int64, shape of ``grad_output``
        The forward's indices. Each must lie inside its own window, else IndexError.
    out : array, optional
        Where to write ``grad_input``.
    stream : optional
        CUDA stream for GPU arrays.

    Returns
    -------
    array, shape and dtype of ``x``
        ``grad_input[i] = sum of grad_output[o] over covering o with indices[o] == i``, a
        deterministic gather.
    """
    ex = backward_executor("adaptive_max_pool3d_backward", grad_output, x, indices, out=out)
    return ex.run(x, grad_output=grad_output, indices=indices, out=out, stream=stream)
