"""The one-call functions (PyTorch-style names) for NumPy and CUDA arrays: the whole family.

Average and max pooling over 1, 2 or 3 trailing axes, forward and backward: twelve functions
with one set of conventions. Each call validates its arguments, fetches the cached executor for
its plan and runs it; the backend follows the arrays (NumPy -> CPU, CUDA arrays -> GPU). Every
rank runs the same kernels (1-D and 2-D problems are 3-D ones with singleton axes), so the
functions differ only in their names, their ranks and their docstrings, which are written once
below and filled in per rank. Arrays of a library with an integration layer (torch tensors,
dask arrays: :data:`~adaptive_pool.dispatch.LAYERS`) are handed to that layer whole.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .arguments import (
    OutputSize,
    check_backward,
    check_index_dtype,
    check_rank,
    parse_output_size,
    require,
)
from .dispatch import backend_for, layer_for
from .executors import (
    _PREPARED,
    OPERATORS,
    Executor,
    get_executor,
    keep_prepared,
    plan_key,
    prepared_call,
    recall,
    remember,
    storage_refused,
)

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "adaptive_avg_pool1d_backward",
    "adaptive_avg_pool2d_backward",
    "adaptive_avg_pool3d_backward",
    "adaptive_max_pool1d_backward",
    "adaptive_max_pool2d_backward",
    "adaptive_max_pool3d_backward",
    "forward_executor",
    "backward_executor",
]


def forward_executor(
    op: str,
    x: Any,
    output_size: OutputSize,
    index_dtype: Any = None,
    skipna: Any = False,
    **outputs: Any,
) -> Executor:
    """Validate a forward call and return its (cached) executor.

    A given ``indices_out`` decides the index dtype (``index_dtype`` is then ignored).
    """
    # outputs (out=, checked by the run) that are NumPy arrays leave the plan as it is, but
    # for indices_out, whose dtype is the index dtype
    fast = (
        type(x) is np.ndarray
        and _plain_size(output_size)
        and all(a is None or type(a) is np.ndarray for a in outputs.values())
    )
    if fast:
        given = outputs.get("indices_out")
        idt = index_dtype if given is None else ("indices_out", given.dtype)
        memo = ("f", op, x.shape, x.dtype, output_size, idt, type(skipna), skipna)
        ex = recall(memo)
        if ex is not None:
            return ex
    require(x, "x")
    be = backend_for(x=x, **outputs)
    if outputs.get("indices_out") is not None:
        index_dtype = check_index_dtype(be.describe(outputs["indices_out"])[1], "indices_out")
    shape, dtype = be.describe(x)
    o = OPERATORS[op]
    check_rank(shape, o.ranks, "x", o.layout)
    out_spatial = parse_output_size(output_size, tuple(shape[-o.spatial :]))
    key = plan_key(op, be, shape, dtype, out_spatial, index_dtype, skipna=skipna)
    ex = get_executor(key, be)
    return remember(memo, ex) if fast else ex


def _plain_size(output_size: Any) -> bool:
    """Whether ``output_size`` is an int or a tuple of ints and None, exactly: values that equal
    those of other types (``2.0 == 2``, ``True == 1``) must meet the checks, not the memo."""
    if type(output_size) is int:
        return True
    return type(output_size) is tuple and all(
        type(o) is int or o is None for o in output_size
    )


def backward_executor(
    op: str, grad_output: Any, x: Any, indices: Any = None, skipna: Any = False, **outputs: Any
) -> Executor:
    """Validate a backward call (agreement of ``grad_output``, ``x``, ``indices``) and plan it."""
    fast = (
        type(grad_output) is np.ndarray
        and type(x) is np.ndarray
        and (indices is None or type(indices) is np.ndarray)
        and all(a is None or type(a) is np.ndarray for a in outputs.values())
    )
    if fast:
        memo = ("b", op, grad_output.shape, grad_output.dtype, x.shape, x.dtype, type(skipna),
                skipna) + (
            () if indices is None else (indices.shape, indices.dtype)
        )
        ex = recall(memo)
        if ex is not None:
            return ex
    o = OPERATORS[op]
    require(grad_output, "grad_output")
    require(x, "x")
    if o.max:
        require(indices, "indices")
    be = backend_for(grad_output=grad_output, x=x, indices=indices, **outputs)
    xs, xdt = be.describe(x)
    gs, gdt = be.describe(grad_output)
    ishape, idt = be.describe(indices) if o.max else (None, None)
    index_dtype = check_backward(o, xs, xdt, gs, gdt, ishape, idt)
    lead = len(xs) - o.spatial
    key = plan_key(op, be, xs, xdt, tuple(int(s) for s in gs[lead:]), index_dtype, skipna=skipna)
    ex = get_executor(key, be)
    return remember(memo, ex) if fast else ex



# -- docstrings, written once and filled in per rank ---------------------------------------------
_ORDER = {1: "l", 2: "h, w", 3: "d, h, w"}

_ARRAYS = """x : array, shape {layout}
        float32, float64, float16 or bfloat16; NumPy (CPU) or a CUDA array (GPU); any strides."""

_OUTPUT_SIZE = """output_size : int or tuple of {rank} (int or None)
        ``{out}``; an int is used for every axis; ``None`` keeps that axis's input size."""

_STREAM = """stream : optional
        CUDA stream for GPU arrays."""

_AVG_DOC = """Adaptive average pooling over {last}.

    Parameters
    ----------
    {arrays}
    {output_size}
    skipna : bool, default False
        Skip NaN: each window's mean over its non-NaN elements (NaN where there are none).
    out : array, optional
        Where to write the result (may be strided; must not overlap ``x``).
    {stream}

    Returns
    -------
    array, shape (..., {outs})
        ``y[o] = sum(x[window(o)]) / volume(o)``, summed in float32 for 16-bit dtypes (float64
        for float64) and rounded once.

    Examples
    --------
    >>> import numpy as np, adaptive_pool as ap
    >>> ap.{name}(np.arange(6.0).reshape({shape}), {size})
    array({avg})
    """

_MAX_DOC = """Adaptive max pooling over {last}, with the argmax indices.

    Parameters
    ----------
    {arrays}
    {output_size}
    skipna : bool, default False
        Skip NaN: NaN never wins; a window of NaN only gives NaN and its first element's index.
    index_dtype : numpy dtype, default int32
        int32 (CANN) or int64 (PyTorch). Ignored when ``indices_out`` is given.
    out, indices_out : array, optional
        Where to write the values and the indices.
    {stream}

    Returns
    -------
    y : array, shape (..., {outs})
        The window maxima. Ties keep the first maximum in {order} order; NaN propagates.
    indices : array of ``index_dtype``, same shape
        Flat offsets ``{flat}`` of each maximum inside its ``(n, c)`` plane.

    Examples
    --------
    >>> import numpy as np, adaptive_pool as ap
    >>> y, i = ap.{name}(np.arange(6.0).reshape({shape}), {size})
    >>> i
    array({idx}, dtype=int32)
    """

_AVG_BACKWARD_DOC = """Gradient of :func:`{forward}` with respect to its input.

    Parameters
    ----------
    grad_output : array, shape (..., {outs})
        Gradient of the forward output; same rank, N, C and dtype as ``x``.
    x : array, shape {layout}
        The forward input (only its shape and dtype are used, and its NaN with ``skipna``).
    skipna : bool, default False
        The gradient of the NaN-skipping forward: NaN inputs get 0, the others divide by their
        windows' counts of non-NaN elements.
    out : array, optional
        Where to write ``grad_input``.
    {stream}

    Returns
    -------
    array, shape and dtype of ``x``
        ``grad_input[i] = sum over covering o of grad_output[o] / volume(o)``, a deterministic
        gather (no atomics), in ascending order of ``o``.
    """

_MAX_BACKWARD_DOC = """Gradient of :func:`{forward}` with respect to its input.

    Parameters
    ----------
    grad_output : array, shape (..., {outs})
        Gradient of the forward output; same rank, N, C and dtype as ``x``.
    x : array, shape {layout}
        The forward input (only its shape and dtype are used).
    indices : array of int32 or int64, shape of ``grad_output``
        The forward's indices, flat offsets ``{flat}``. Each must lie inside its own window,
        else :class:`~adaptive_pool.AdaptivePoolIndexError` (an ``IndexError``) naming it.
    skipna : bool, default False
        Accepted for symmetry with the forward; the indices alone decide the gradient.
    out : array, optional
        Where to write ``grad_input``.
    {stream}

    Returns
    -------
    array, shape and dtype of ``x``
        ``grad_input[i] = sum of grad_output[o] over covering o with indices[o] == i``, a
        deterministic gather.
    """


def _document(f: Callable, name: str, template: str) -> Callable:
    """Name ``f`` after the operator and fill ``template`` in for its rank."""
    op = OPERATORS[name]
    rank = op.spatial
    outs = ", ".join(f"O{a}" for a in op.axes)
    # the examples: one channel of six elements along the last axis, pooled to two cells
    nest = "[" * (rank + 1)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = template.format(
        name=name,
        forward=op.forward,
        rank=rank,
        last={1: "the last axis", 2: "the last two axes", 3: "the last three axes"}[rank],
        layout=op.layout,
        outs=outs,
        order=_ORDER[rank],
        flat=op.flat_index,
        arrays=_ARRAYS.format(layout=op.layout),
        output_size=_OUTPUT_SIZE.format(rank=rank, out=f"({outs},)" if rank == 1 else f"({outs})"),
        stream=_STREAM,
        shape=(1,) * rank + (6,),
        size=2 if rank == 1 else (None,) * (rank - 1) + (2,),
        avg=f"{nest}1., 4.{']' * (rank + 1)}",
        idx=f"{nest}2, 5{']' * (rank + 1)}",
    )
    return f


#: NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE: the arrays prepared calls
#: (:func:`~adaptive_pool.executors.prepared_call`) read. The one-call functions test their
#: arrays inline, and of ``x`` only its type where they do not read it (0.07 us of a 2 us call).
_PLAIN_FLAGS = 0x0001 | 0x0100 | 0x0400
#: NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE: arrays of other layouts, whose prepared calls are
#: kept under keys that also hold their strides (``Executor.prepared(*layouts)``)
_STRIDED_FLAGS = 0x0100 | 0x0400


_ND = np.ndarray


def _other_layout(key: tuple, flags: int, *arrays: Any) -> tuple[tuple | None, tuple]:
    """``(key, arrays)`` of a call whose arrays are not all plain (``flags``: theirs ANDed):
    ``key`` with the arrays' strides where they are aligned and writeable (a prepared call of
    their layout, or False, is kept under it), else ``(None, ())``: the long way."""
    if flags & _STRIDED_FLAGS != _STRIDED_FLAGS:
        return None, ()
    return key + tuple(a.strides for a in arrays), arrays


def _avg(name: str) -> Callable:
    def pool(
        x: Any,
        output_size: OutputSize,
        *,
        skipna: bool = False,
        out: Any = None,
        stream: Any = None,
    ) -> Any:
        key, given = None, ()
        if (out is None and stream is None and type(skipna) is bool and type(x) is _ND
                and (type(output_size) is int or _plain_size(output_size))):
            flags = x.flags.num
            key = (name, x.shape, x.dtype, output_size, skipna)
            if flags & _PLAIN_FLAGS != _PLAIN_FLAGS:
                key, given = _other_layout(key, flags, x)
        if key is not None:
            run = _PREPARED.get(key)  # (a key of hashable values only)
            if run:
                try:
                    return run(x)
                except TypeError:
                    storage_refused()
        layer = layer_for(x, out)
        if layer is not None:
            return layer.run(name, x, output_size, skipna=skipna, out=out, stream=stream)
        ex = forward_executor(name, x, output_size, skipna=skipna, out=out)
        y = ex.run(x, out=out, stream=stream)
        if key is not None:
            keep_prepared(key, ex, *given)
        return y

    return _document(pool, name, _AVG_DOC)


def _max(name: str) -> Callable:
    def pool(
        x: Any,
        output_size: OutputSize,
        *,
        skipna: bool = False,
        index_dtype: Any = np.int32,
        out: Any = None,
        indices_out: Any = None,
        stream: Any = None,
    ) -> tuple[Any, Any]:
        key, given = None, ()
        if (out is None and indices_out is None and stream is None and type(skipna) is bool
                and type(x) is _ND and (type(output_size) is int or _plain_size(output_size))):
            flags = x.flags.num
            key = (name, x.shape, x.dtype, output_size, skipna, index_dtype)
            if flags & _PLAIN_FLAGS != _PLAIN_FLAGS:
                key, given = _other_layout(key, flags, x)
        if key is not None:
            run = prepared_call(key)
            if run:
                try:
                    return run(x)
                except TypeError:
                    storage_refused()
        layer = layer_for(x, out, indices_out)
        if layer is not None:
            return layer.run(
                name, x, output_size, skipna=skipna, index_dtype=index_dtype, out=out,
                indices_out=indices_out, stream=stream,
            )
        ex = forward_executor(
            name, x, output_size, index_dtype, skipna, out=out, indices_out=indices_out
        )
        result = ex.run(x, out=out, indices_out=indices_out, stream=stream)
        if key is not None:
            keep_prepared(key, ex, *given)
        return result

    return _document(pool, name, _MAX_DOC)


def _avg_backward(name: str) -> Callable:
    def backward(
        grad_output: Any, x: Any, *, skipna: bool = False, out: Any = None, stream: Any = None
    ) -> Any:
        key, given = None, ()
        if (out is None and stream is None and type(grad_output) is _ND and type(x) is _ND
                and (skipna is False or skipna is True)):
            flags = grad_output.flags.num & (x.flags.num if skipna else -1)
            key = (name, grad_output.shape, grad_output.dtype, x.shape, x.dtype, skipna)
            if flags & _PLAIN_FLAGS != _PLAIN_FLAGS:
                key, given = _other_layout(key, flags, grad_output, x)
        if key is not None:
            run = _PREPARED.get(key)  # (a key of hashable values only)
            if run:
                try:
                    return run(grad_output, x)
                except TypeError:
                    storage_refused()
        layer = layer_for(grad_output, x, out)
        if layer is not None:
            return layer.run(name, grad_output, x, skipna=skipna, out=out, stream=stream)
        ex = backward_executor(name, grad_output, x, skipna=skipna, out=out)
        gi = ex.run(x, grad_output=grad_output, out=out, stream=stream)
        if key is not None:
            keep_prepared(key, ex, *given)
        return gi

    return _document(backward, name, _AVG_BACKWARD_DOC)


def _max_backward(name: str) -> Callable:
    def backward(
        grad_output: Any,
        x: Any,
        indices: Any,
        *,
        skipna: bool = False,
        out: Any = None,
        stream: Any = None,
    ) -> Any:
        key, given = None, ()
        if (out is None and stream is None and type(grad_output) is _ND and type(x) is _ND
                and type(indices) is _ND and (skipna is False or skipna is True)):
            flags = grad_output.flags.num & indices.flags.num
            key = (name, grad_output.shape, grad_output.dtype, x.shape, x.dtype, indices.shape,
                   indices.dtype, skipna)
            if flags & _PLAIN_FLAGS != _PLAIN_FLAGS:
                key, given = _other_layout(key, flags, grad_output, indices)
        if key is not None:
            run = _PREPARED.get(key)  # (a key of hashable values only)
            try:
                gi = run(grad_output, indices) if run else None
            except TypeError:
                storage_refused()
                gi = None
            if gi is not None:
                return gi  # else an index outside its window: the long way raises
        layer = layer_for(grad_output, x, indices, out)
        if layer is not None:
            return layer.run(name, grad_output, x, indices, skipna=skipna, out=out, stream=stream)
        ex = backward_executor(name, grad_output, x, indices, skipna, out=out)
        gi = ex.run(x, grad_output=grad_output, indices=indices, out=out, stream=stream)
        if key is not None:
            keep_prepared(key, ex, *given)
        return gi

    return _document(backward, name, _MAX_BACKWARD_DOC)


adaptive_avg_pool1d = _avg("adaptive_avg_pool1d")
adaptive_avg_pool2d = _avg("adaptive_avg_pool2d")
adaptive_avg_pool3d = _avg("adaptive_avg_pool3d")
adaptive_max_pool1d = _max("adaptive_max_pool1d")
adaptive_max_pool2d = _max("adaptive_max_pool2d")
adaptive_max_pool3d = _max("adaptive_max_pool3d")
adaptive_avg_pool1d_backward = _avg_backward("adaptive_avg_pool1d_backward")
adaptive_avg_pool2d_backward = _avg_backward("adaptive_avg_pool2d_backward")
adaptive_avg_pool3d_backward = _avg_backward("adaptive_avg_pool3d_backward")
adaptive_max_pool1d_backward = _max_backward("adaptive_max_pool1d_backward")
adaptive_max_pool2d_backward = _max_backward("adaptive_max_pool2d_backward")
adaptive_max_pool3d_backward = _max_backward("adaptive_max_pool3d_backward")
