"""The calls the Python wrappers make: the registered operator, or under ``torch.func``
transforms an ``autograd.Function`` over it.

The ``autograd.Function`` that ``register_autograd`` generates has no ``setup_context``, so
``torch.func.grad``, ``jacrev`` and friends refuse it (PyTorch issues 168393, 170834, 179652,
open in 2.13). While a transform is active the wrappers go through the Functions below instead:
their forwards call the same registered operators, their backwards the same backward operators
(through these Functions again, for higher derivatives), and their vmap rule is generated from
the forward, i.e. it is the operators' own ``register_vmap`` rule. Outside transforms
:func:`~adaptive_pool.torch.ops.call` decides: the registered operators under
``torch.compile``, tracing and modes, else their kernels (each through an
``autograd.Function`` of its own where autograd history is recorded).
"""

from typing import Any

import torch
from torch import Tensor

from . import ops

__all__ = ["avg_pool", "avg_pool_backward", "max_pool", "max_pool_backward"]


class _AvgPool(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x: Tensor, output_size: list, skipna: bool) -> Tensor:
        return ops.avg_pool(x, output_size, skipna)

    setup_context = staticmethod(ops._avg_pool_setup)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        (x,) = ctx.saved_tensors
        return _AvgPoolBackward.apply(grad, x, ctx.spatial, ctx.skipna), None, None


class _AvgPoolBackward(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(grad_output: Tensor, x: Tensor, spatial: int, skipna: bool) -> Tensor:
        return ops.avg_pool_backward(grad_output, x, spatial, skipna)

    setup_context = staticmethod(ops._avg_pool_backward_setup)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        if ctx.skipna:  # plain PyTorch ops around the registered forward
            return ops._avg_pool_backward_grad(ctx, grad)
        return _AvgPool.apply(grad, ctx.output_size, False), None, None, None


class _MaxPool(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x: Tensor, output_size: list, index_dtype: torch.dtype, skipna: bool) -> tuple:
        return ops.max_pool(x, output_size, index_dtype, skipna)

    setup_context = staticmethod(ops._max_pool_setup)

    @staticmethod
    def backward(ctx: Any, grad: Tensor, _grad_indices: Any) -> tuple:
        x, indices = ctx.saved_tensors
        return _MaxPoolBackward.apply(grad, x, indices, ctx.spatial), None, None, None


class _MaxPoolBackward(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(grad_output: Tensor, x: Tensor, indices: Tensor, spatial: int) -> Tensor:
        return ops.max_pool_backward(grad_output, x, indices, spatial)

    setup_context = staticmethod(ops._max_pool_backward_setup)
    backward = staticmethod(ops._max_pool_backward_grad)  # a gather: plain PyTorch ops


def _transforming() -> bool:
    # torch.compile treats this as a constant: no graph break
    return torch._C._are_functorch_transforms_active()


def avg_pool(x: Tensor, output_size: list, skipna: bool = False) -> Tensor:
    if _transforming():
        return _AvgPool.apply(x, output_size, skipna)
    return ops.call(ops.avg_pool, x, output_size, skipna)


def avg_pool_backward(grad_output: Tensor, x: Tensor, spatial: int, skipna: bool = False) -> Tensor:
    if _transforming():
        return _AvgPoolBackward.apply(grad_output, x, spatial, skipna)
    return ops.call(ops.avg_pool_backward, grad_output, x, spatial, skipna)


def max_pool(x: Tensor, output_size: list, index_dtype: torch.dtype, skipna: bool = False) -> tuple:
    if _transforming():
        return _MaxPool.apply(x, output_size, index_dtype, skipna)
    return ops.call(ops.max_pool, x, output_size, index_dtype, skipna)


def max_pool_backward(grad_output: Tensor, x: Tensor, indices: Tensor, spatial: int) -> Tensor:
    if _transforming():
        return _MaxPoolBackward.apply(grad_output, x, indices, spatial)
    return ops.call(ops.max_pool_backward, grad_output, x, indices, spatial)
