"""The registered operators: ``torch.ops.adaptive_pool.{avg_pool,max_pool}{,_backward}``.

One operator per algorithm and direction; the rank (1, 2 or 3 spatial axes) is the length of
``output_size`` for a forward and the ``spatial`` argument for a backward, as the executors run
every rank through one kernel. Each operator has

* a real kernel that plans with the executors and writes a torch-allocated result through a
  zero-copy view (:mod:`._bridge`), on PyTorch's current stream for CUDA tensors;
* a fake kernel returning the real kernel's shape, strides, dtype and device;
* an autograd rule whose backward is another registered operator (so gradients are our
  deterministic gathers), with PyTorch's double-backward formulas: the average backward's
  gradient with respect to ``grad_output`` is the forward pool, the max backward's a gather at
  the indices (``derivatives.yaml``);
* a vmap rule folding the vmapped axis into the channels.

Indices are int32 or int64 (``index_dtype``); :mod:`adaptive_pool.torch.functional` asks for
int64 as PyTorch does.
"""

import math
from typing import Any, Optional

import numpy as np
import torch
from torch import Tensor

from .. import functional
from ..executors import keep_prepared, prepared_call, storage_refused
from ..functional import backward_executor, forward_executor
from ._bridge import (
    as_array, as_tensor, current_stream, dense_like, new_output, numpy_index_dtype,
    result_order,
)

__all__ = ["avg_pool", "avg_pool_backward", "max_pool", "max_pool_backward"]


def _name(kind: str, spatial: int, backward: bool = False) -> str:
    return f"adaptive_{kind}_pool{spatial}d" + ("_backward" if backward else "")


def _numpy_call(x: Tensor) -> bool:
    """Whether a call on ``x`` goes through the NumPy functions' prepared calls, its result
    allocated by NumPy and handed over without a copy: a contiguous CPU ``x``, whose results
    are contiguous too. Planning and writing into a torch-allocated result through
    :meth:`~adaptive_pool.executors.Executor.run` cost 60-80 us more a call (of 200-260 us on
    a 1x1x8x8 input, the rest torch's custom-operator dispatch)."""
    return x.is_cpu and x.is_contiguous()


def _layout_key(x: Tensor, spatial: int, *args: Any) -> Optional[tuple]:
    """The key of a prepared call for a CPU ``x`` that is not contiguous (``args``: the
    call's name, arguments and input arrays, whose shapes, dtypes and strides it holds),
    beginning with its results' axis order; None for CUDA tensors."""
    if not x.is_cpu:
        return None
    return (result_order(x, spatial),) + tuple(
        (a.shape, a.dtype, a.strides) if isinstance(a, np.ndarray) else a for a in args
    )


def _prepared(key: Optional[tuple], *inputs: np.ndarray) -> Any:
    """The results of the prepared call kept for ``key`` (:func:`_keep`), or None: no key,
    none kept yet, none for these layouts, or an index outside its window."""
    run = prepared_call(key) if key is not None else None
    if run:
        try:
            return run(*inputs)
        except TypeError:
            storage_refused()
    return None


def _keep(key: Optional[tuple], ex: Any, *inputs: np.ndarray) -> None:
    """After a call of ``key`` that took the long way (every check passed), keep a prepared
    call for the next ones, where its inputs are dense blocks in some axis order
    (channels-last, ``channels_last_3d``, transposed): results allocated by NumPy in the order
    :func:`~._bridge.new_output` would give them (``Executor.prepared(order=...)``) and handed
    to torch without a copy: a no-grad average of a channels-last 2x8x9x10 tensor took 17 us a
    call instead of 36 planning and writing into a torch-allocated result (other inputs keep
    that way: False is kept for them)."""
    if key is not None and prepared_call(key) is None:
        keep_prepared(key, ex, *inputs, order=key[0])


def _unwatched() -> bool:
    """Whether nothing would see an operator's kernel run in its place: no ``torch.func``
    transform, compilation, tracing, or torch function or dispatch mode."""
    return not (
        torch._C._are_functorch_transforms_active()
        or torch.compiler.is_compiling()
        or torch.jit.is_tracing()
        or torch._C._len_torch_dispatch_stack()
        or torch._C._len_torch_function_stack()
    )


def call(op: Any, *args: Any) -> Any:
    """``op(*args)``: a registered operator, or, on plain tensors where :func:`_unwatched`,
    its kernel called straight, through an ``autograd.Function`` with the operator's own
    autograd rule where a tensor records autograd history (:data:`_EAGER`). The dispatch of
    a ``custom_op`` cost 60-80 us of a 80-100 us call on a tiny tensor (Zen 3), the kernel 14
    us; with autograd, a forward and backward on a 1x1x8x8 float32 tensor took 50 us through
    the operators and 31 through the Functions (PyTorch's own 17; Zen 5)."""
    grad = torch.is_grad_enabled()
    record = False
    for a in args:  # (a loop: generator expressions cost 0.5 us of a 9 us call)
        if isinstance(a, Tensor):
            if type(a) is not Tensor:
                return op(*args)
            record = record or (grad and a.requires_grad)
    if not _unwatched():
        return op(*args)
    return _EAGER[op].apply(*args) if record else _KERNELS[op](*args)


def _pooled_shape(x: Tensor, output_size: list[int]) -> list[Any]:
    return list(x.shape[: x.dim() - len(output_size)]) + list(output_size)


# -- average ------------------------------------------------------------------------------------
def _avg_pool(x: Tensor, output_size: list[int], skipna: bool = False) -> Tensor:
    """Adaptive average pooling over the last ``len(output_size)`` axes of ``x`` (of its
    non-NaN elements with ``skipna``)."""
    xa = as_array(x, "x")
    name = _name("avg", len(output_size))
    if _numpy_call(x):
        return as_tensor(getattr(functional, name)(xa, tuple(output_size), skipna=skipna))
    key = _layout_key(x, len(output_size), name, xa, tuple(output_size), skipna)
    ya = _prepared(key, xa)
    if ya is not None:
        return as_tensor(ya)
    ex = forward_executor(name, xa, tuple(output_size), skipna=skipna)
    y = new_output(x, ex.y_shape, len(output_size))
    ex.run(xa, out=as_array(y, "out"), stream=current_stream(x))
    _keep(key, ex, xa)
    return y


avg_pool = torch.library.custom_op("adaptive_pool::avg_pool", _avg_pool, mutates_args=())


@avg_pool.register_fake
def _avg_pool_fake(x: Tensor, output_size: list[int], skipna: bool = False) -> Tensor:
    return new_output(x, _pooled_shape(x, output_size), len(output_size))


def _avg_pool_backward(
    grad_output: Tensor, x: Tensor, spatial: int, skipna: bool = False
) -> Tensor:
    """Gradient of :func:`avg_pool` over ``spatial`` axes (``x`` gives the shape and dtype, and
    with ``skipna`` which elements are NaN)."""
    name = _name("avg", spatial, True)
    if _numpy_call(x):
        # (an output-sized copy where autograd hands an expanded gradient: sum().backward())
        ga = as_array(grad_output.contiguous(), "grad_output")
        return as_tensor(getattr(functional, name)(ga, as_array(x, "x"), skipna=skipna))
    ga, xa = as_array(dense_like(grad_output, x, spatial), "grad_output"), as_array(x, "x")
    key = _layout_key(x, spatial, name, ga, xa, skipna)
    gia = _prepared(key, ga, xa)
    if gia is not None:
        return as_tensor(gia)
    ex = backward_executor(name, ga, xa, skipna=skipna)
    gi = new_output(x, x.shape, spatial)
    ex.run(xa, grad_output=ga, out=as_array(gi, "out"), stream=current_stream(x))
    _keep(key, ex, ga, xa)
    return gi


avg_pool_backward = torch.library.custom_op(
    "adaptive_pool::avg_pool_backward", _avg_pool_backward, mutates_args=()
)


@avg_pool_backward.register_fake
def _avg_pool_backward_fake(
    grad_output: Tensor, x: Tensor, spatial: int, skipna: bool = False
) -> Tensor:
    return new_output(x, x.shape, spatial)


def _avg_pool_setup(ctx: Any, inputs: tuple, output: Tensor) -> None:
    x, output_size, skipna = inputs
    ctx.save_for_backward(x)
    ctx.spatial = len(output_size)
    ctx.skipna = skipna


def _avg_pool_grad(ctx: Any, grad: Tensor) -> tuple:
    (x,) = ctx.saved_tensors
    return call(avg_pool_backward, grad, x, ctx.spatial, ctx.skipna), None, None


def _avg_pool_backward_setup(ctx: Any, inputs: tuple, output: Tensor) -> None:
    grad_output, x, spatial, skipna = inputs
    ctx.spatial = spatial
    ctx.skipna = skipna
    ctx.output_size = list(grad_output.shape[grad_output.dim() - spatial :])
    if skipna:
        ctx.save_for_backward(x)


def _avg_pool_backward_grad(ctx: Any, grad: Tensor) -> tuple:
    # linear in grad_output: d/d(grad_output) is the forward pool, over x's non-NaN elements
    # with skipna (0 for cells that have none: their grad_output reaches no input)
    if not ctx.skipna:
        return avg_pool(grad, ctx.output_size), None, None, None
    (x,) = ctx.saved_tensors
    nan = torch.isnan(x)
    pooled = avg_pool(grad.masked_fill(nan, float("nan")), ctx.output_size, True)
    reached = avg_pool((~nan).to(grad.dtype), ctx.output_size) > 0
    return torch.where(reached, pooled, torch.zeros_like(pooled)), None, None, None


# -- max ----------------------------------------------------------------------------------------
def _max_pool(
    x: Tensor, output_size: list[int], index_dtype: torch.dtype, skipna: bool = False
) -> tuple[Tensor, Tensor]:
    """Adaptive max pooling over the last ``len(output_size)`` axes, with flat plane indices
    (NaN never wins with ``skipna``)."""
    xa = as_array(x, "x")
    idt = numpy_index_dtype(index_dtype)
    name = _name("max", len(output_size))
    if _numpy_call(x):
        y, indices = getattr(functional, name)(
            xa, tuple(output_size), skipna=skipna, index_dtype=idt
        )
        return as_tensor(y), as_tensor(indices)
    key = _layout_key(x, len(output_size), name, xa, tuple(output_size), skipna, np.dtype(idt))
    yi = _prepared(key, xa)
    if yi is not None:
        return as_tensor(yi[0]), as_tensor(yi[1])
    ex = forward_executor(name, xa, tuple(output_size), idt, skipna)
    y = new_output(x, ex.y_shape, len(output_size))
    indices = new_output(x, ex.y_shape, len(output_size), index_dtype)
    ex.run(xa, out=as_array(y, "out"), indices_out=as_array(indices, "indices_out"),
           stream=current_stream(x))
    _keep(key, ex, xa)
    return y, indices


max_pool = torch.library.custom_op("adaptive_pool::max_pool", _max_pool, mutates_args=())


@max_pool.register_fake
def _max_pool_fake(
    x: Tensor, output_size: list[int], index_dtype: torch.dtype, skipna: bool = False
) -> tuple[Tensor, Tensor]:
    shape = _pooled_shape(x, output_size)
    s = len(output_size)
    return new_output(x, shape, s), new_output(x, shape, s, index_dtype)


def _max_pool_backward(grad_output: Tensor, x: Tensor, indices: Tensor, spatial: int) -> Tensor:
    """Gradient of :func:`max_pool`: each input element gathers the gradients that chose it."""
    name = _name("max", spatial, True)
    if _numpy_call(x):
        ga = as_array(grad_output.contiguous(), "grad_output")
        ia = as_array(indices.contiguous(), "indices")
        return as_tensor(getattr(functional, name)(ga, as_array(x, "x"), ia))
    ga, xa = as_array(dense_like(grad_output, x, spatial), "grad_output"), as_array(x, "x")
    ia = as_array(indices, "indices")
    key = _layout_key(x, spatial, name, ga, xa, ia)
    gia = _prepared(key, ga, ia)
    if gia is not None:
        return as_tensor(gia)
    ex = backward_executor(name, ga, xa, ia)
    gi = new_output(x, x.shape, spatial)
    ex.run(xa, grad_output=ga, indices=ia, out=as_array(gi, "out"), stream=current_stream(x))
    _keep(key, ex, ga, ia)
    return gi


max_pool_backward = torch.library.custom_op(
    "adaptive_pool::max_pool_backward", _max_pool_backward, mutates_args=()
)


@max_pool_backward.register_fake
def _max_pool_backward_fake(
    grad_output: Tensor, x: Tensor, indices: Tensor, spatial: int
) -> Tensor:
    return new_output(x, x.shape, spatial)


def _max_pool_setup(ctx: Any, inputs: tuple, output: tuple) -> None:
    x, output_size, _, _ = inputs
    _, indices = output
    ctx.mark_non_differentiable(indices)
    ctx.save_for_backward(x, indices)
    ctx.spatial = len(output_size)


def _max_pool_grad(ctx: Any, grad: Tensor, _grad_indices: Optional[Tensor]) -> tuple:
    x, indices = ctx.saved_tensors
    return call(max_pool_backward, grad, x, indices, ctx.spatial), None, None, None


def _max_pool_backward_setup(ctx: Any, inputs: tuple, output: Tensor) -> None:
    _, _, indices, spatial = inputs
    ctx.save_for_backward(indices)
    ctx.spatial = spatial


def _max_pool_backward_grad(ctx: Any, grad: Tensor) -> tuple:
    # linear in grad_output: d/d(grad_output) reads the incoming gradient at each index
    (indices,) = ctx.saved_tensors
    s = ctx.spatial
    picked = grad.flatten(grad.dim() - s).gather(-1, indices.flatten(indices.dim() - s).long())
    return picked.reshape(indices.shape), None, None, None


#: Each registered operator's kernel and autograd rule (``setup_context``, backward).
_RULES = {
    avg_pool: (_avg_pool, _avg_pool_setup, _avg_pool_grad),
    avg_pool_backward: (_avg_pool_backward, _avg_pool_backward_setup, _avg_pool_backward_grad),
    max_pool: (_max_pool, _max_pool_setup, _max_pool_grad),
    max_pool_backward: (_max_pool_backward, _max_pool_backward_setup, _max_pool_backward_grad),
}


def _eager(kernel: Any, setup: Any, grad: Any) -> type:
    """An ``autograd.Function`` running ``kernel`` with the autograd rule ``setup`` /
    ``grad`` that its operator registers. Its ``forward`` takes ``ctx`` and calls ``setup``
    itself: a Function with a ``setup_context`` binds its arguments to the forward's signature
    through ``inspect`` at each call (the transforms' Functions, :mod:`._functorch`, need that
    form), which took the tiny forward and backward to 78 us."""

    def forward(ctx: Any, *args: Any) -> Any:
        out = kernel(*args)
        setup(ctx, args, out)
        return out

    return type(f"_Eager{kernel.__name__}", (torch.autograd.Function,), {
        "forward": staticmethod(forward), "backward": staticmethod(grad),
    })


for _op, (_, _setup, _grad) in _RULES.items():
    _op.register_autograd(_grad, setup_context=_setup)

#: For :func:`call`: each operator's kernel, and its kernel under its autograd rule.
_KERNELS = {op: kernel for op, (kernel, _, _) in _RULES.items()}
_EAGER = {op: _eager(*rule) for op, rule in _RULES.items()}


# -- vmap: the vmapped axis joins the channels (pooling treats every plane alike) ---------------
def _batched(t: Tensor, bdim: Optional[int], size: int) -> Tensor:
    """``t`` with the vmapped axis first (broadcast when ``t`` is not vmapped)."""
    if bdim is None:
        return t.unsqueeze(0).expand(size, *t.shape)
    return t.movedim(bdim, 0)


def _fold(t: Tensor, spatial: int) -> Tensor:
    """``(B, *lead, *S)`` -> ``(B * prod(lead), *S)``: one unbatched input of many channels."""
    lead = t.shape[: t.dim() - spatial]
    return t.reshape((math.prod(lead),) + tuple(t.shape[t.dim() - spatial :]))


def _unfold(t: Tensor, lead: Any, spatial: int) -> Tensor:
    return t.reshape(tuple(lead) + tuple(t.shape[t.dim() - spatial :]))


@avg_pool.register_vmap
def _avg_pool_vmap(
    info: Any, in_dims: tuple, x: Tensor, output_size: list[int], skipna: bool = False
) -> tuple:
    s = len(output_size)
    x = _batched(x, in_dims[0], info.batch_size)
    y = avg_pool(_fold(x, s), output_size, skipna)
    return _unfold(y, x.shape[: x.dim() - s], s), 0


@max_pool.register_vmap
def _max_pool_vmap(
    info: Any,
    in_dims: tuple,
    x: Tensor,
    output_size: list[int],
    index_dtype: torch.dtype,
    skipna: bool = False,
) -> tuple:
    s = len(output_size)
    x = _batched(x, in_dims[0], info.batch_size)
    lead = x.shape[: x.dim() - s]
    y, indices = max_pool(_fold(x, s), output_size, index_dtype, skipna)
    return (_unfold(y, lead, s), _unfold(indices, lead, s)), (0, 0)


@avg_pool_backward.register_vmap
def _avg_pool_backward_vmap(
    info: Any, in_dims: tuple, grad_output: Tensor, x: Tensor, spatial: int, skipna: bool = False
) -> tuple:
    g = _batched(grad_output, in_dims[0], info.batch_size)
    x = _batched(x, in_dims[1], info.batch_size)
    gi = avg_pool_backward(_fold(g, spatial), _fold(x, spatial), spatial, skipna)
    return _unfold(gi, x.shape[: x.dim() - spatial], spatial), 0


@max_pool_backward.register_vmap
def _max_pool_backward_vmap(
    info: Any, in_dims: tuple, grad_output: Tensor, x: Tensor, indices: Tensor, spatial: int
) -> tuple:
    g = _batched(grad_output, in_dims[0], info.batch_size)
    x = _batched(x, in_dims[1], info.batch_size)
    i = _batched(indices, in_dims[2], info.batch_size)
    gi = max_pool_backward(_fold(g, spatial), _fold(x, spatial), _fold(i, spatial), spatial)
    return _unfold(gi, x.shape[: x.dim() - spatial], spatial), 0
