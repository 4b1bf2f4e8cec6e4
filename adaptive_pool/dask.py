"""The Dask layer: every operator of the family on ``dask.array.Array``, lazily and exactly.

:mod:`adaptive_pool.dispatch` hands calls with a dask array here (:func:`run`); the result is a
lazy dask array (for the max forward: values and indices), bitwise equal to the single-array
call on the same data for every chunking.

How (the gather scheme): no task combines partial sums or maxima of another. Along each spatial
axis,

* a forward output block ``[o0, o1)`` needs the input range ``[start(o0), end(o1 - 1))``: the
  input is sliced per block, concatenated and rechunked to one chunk per output block (ranges
  of neighbouring blocks overlap by at most a window);
* a backward input block ``[i0, i1)`` (the chunks of ``x``) needs the output cells
  ``[cover_lo(i0), cover_hi(i1 - 1))`` of ``grad_output`` (and of the indices), gathered alike.

One ``map_blocks`` then runs one kernel call per block (:mod:`adaptive_pool.blocks`), which
builds its own small window tables from the problem's sizes and its block's location: plans are
never shipped in the graph. Forward output blocks follow the input's chunk boundaries (the
outputs whose windows start in an input chunk), split where upsampling would make them longer
than the input's chunks.

The max backward first checks every index against its window (one small task per block of the
indices, then one that raises :class:`~adaptive_pool.AdaptivePoolIndexError` naming the first
bad index in C order); the gradient tasks wait for that check.

dask is imported on first use only (``import adaptive_pool`` does not import it).
"""

from __future__ import annotations

import functools
import math
import operator
import os
from typing import Any, Optional

import numpy as np

from . import blocks, windows
from .arguments import check_backward, check_index_dtype, check_rank, parse_output_size, require
from .cpu.backend import BACKEND as CPU
from .errors import AdaptivePoolIndexError, AdaptivePoolTypeError, AdaptivePoolValueError
from .executors import OPERATORS, Operator, plan_key

__all__ = ["run"]


def run(name: str, *args: Any, **kwargs: Any) -> Any:
    """Run operator ``name`` of :mod:`adaptive_pool.functional` on dask arrays.

    Takes the arguments of the public function of that name. ``out=`` and ``indices_out=``
    are not supported (dask arrays are immutable: store a result with ``dask.array.store``).
    """
    op = OPERATORS[name]
    if op.backward:
        return _backward(op, *args, **kwargs)
    return _forward(op, *args, **kwargs)


# -- arguments ---------------------------------------------------------------------------------
def _da():
    import dask.array  # noqa: PLC0415 - lazy by design

    return dask.array


def _no_out(value: Any, name: str) -> None:
    if value is not None:
        raise AdaptivePoolTypeError(
            f"{name}= is not supported for dask arrays (they are immutable); store the result "
            f"with dask.array.store instead",
            argument=name,
        )


def _as_dask(a: Any, name: str) -> Any:
    """``a`` as a dask array with known chunk sizes."""
    da = _da()
    if not isinstance(a, da.Array):
        if not hasattr(a, "shape") or not hasattr(a, "dtype"):
            raise AdaptivePoolTypeError(
                f"{name} must be an array (dask, NumPy or CuPy), got {type(a).__name__}",
                argument=name,
            )
        a = da.asarray(a)
    _known_chunks(a, name)
    return a


def _known_chunks(a: Any, name: str) -> None:
    if any(math.isnan(c) for cs in a.chunks for c in cs):
        raise AdaptivePoolValueError(
            f"{name} has unknown chunk sizes (NaN) along axes "
            f"{[i for i, cs in enumerate(a.chunks) if any(math.isnan(c) for c in cs)]}; call "
            f"{name}.compute_chunk_sizes() first (pooling windows need each block's position)",
            argument=name,
        )


def _meta(a: Any, ndim: int, dtype: Any) -> Any:
    """An empty array of ``a``'s kind (CuPy chunks stay CuPy)."""
    from dask.array.utils import meta_from_array  # noqa: PLC0415

    return meta_from_array(a, ndim=ndim, dtype=dtype)


# -- chunks and gathering --------------------------------------------------------------------
def _bounds(chunks: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    hi = np.cumsum(np.asarray(chunks, np.int64))
    return hi - np.asarray(chunks, np.int64), hi


def _forward_chunks(in_chunks: tuple[int, ...], in_size: int, out_size: int) -> tuple[int, ...]:
    """Output chunks of one axis: the outputs whose windows start in each input chunk, split to
    at most the longest input chunk (upsampling)."""
    lo, hi = _bounds(in_chunks)
    ends = windows.cover_spans(lo, hi, in_size, out_size)[:, 1]
    edges = np.unique(np.concatenate([[0], ends]))
    cap = max(in_chunks)
    chunks: list[int] = []
    for n in np.diff(edges).tolist():
        chunks += [cap] * (n // cap) + ([n % cap] if n % cap else [])
    return tuple(chunks)


def _gather(a: Any, axis: int, spans: np.ndarray) -> Any:
    """``a`` with chunk ``k`` of ``axis`` holding ``a[..., spans[k, 0]:spans[k, 1], ...]``."""
    da = _da()
    sizes = tuple(int(s) for s in spans[:, 1] - spans[:, 0])
    tiled = spans[0, 0] == 0 and spans[-1, 1] == a.shape[axis] and np.all(
        spans[1:, 0] == spans[:-1, 1]
    )
    if not tiled:  # overlapping (or upsampled, repeated) ranges: copies of the shared elements
        index = [slice(None)] * a.ndim
        pieces = []
        for s0, s1 in spans.tolist():
            index[axis] = slice(s0, s1)
            pieces.append(a[tuple(index)])
        a = da.concatenate(pieces, axis=axis)
    return a.rechunk({axis: sizes})


def _table_limit() -> int:
    """Bytes of memory on this machine: no block's window tables may need more."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX
        return 2**40


def _check_tables(in_spans: list[np.ndarray], out_spans: list[np.ndarray], name: str) -> None:
    """A clear error when a block's window tables would not fit in memory."""
    # per axis, 2 entries per input position and per output cell of the block (int64)
    entries = sum(
        int(np.max(2 * (i[:, 1] - i[:, 0]) + 2 * (o[:, 1] - o[:, 0])))
        for i, o in zip(in_spans, out_spans)
    )
    need, limit = 8 * entries, _table_limit()
    if need > limit:
        raise AdaptivePoolValueError(
            f"a block of {name} would need window tables of {need} bytes, more than this "
            f"machine's memory ({limit} bytes); rechunk {name} into smaller spatial chunks",
            argument=name,
        )


# -- forward -------------------------------------------------------------------------------------
def _forward(
    op: Operator,
    x: Any,
    output_size: Any,
    *,
    index_dtype: Any = None,
    skipna: Any = False,
    out: Any = None,
    indices_out: Any = None,
    stream: Any = None,
) -> Any:
    _no_out(out, "out")
    _no_out(indices_out, "indices_out")
    x = _as_dask(require(x, "x"), "x")
    check_rank(x.shape, op.ranks, "x", op.layout)
    sp = op.spatial
    in_sp = tuple(int(s) for s in x.shape[-sp:])
    out_sp = parse_output_size(output_size, in_sp)
    idt = check_index_dtype(index_dtype, "index_dtype") if op.max else None
    key = plan_key(op.name, CPU, tuple(x.shape), x.dtype, out_sp, idt, skipna=skipna)  # all
    dtype, idt = key.dtype, key.index_dtype
    lead_chunks = x.chunks[:-sp]
    meta_y = _meta(x, x.ndim, dtype)
    meta_i = _meta(x, x.ndim, idt) if op.max else None

    if math.prod(x.shape[:-sp]) == 0 or 0 in out_sp:
        chunks = lead_chunks + tuple((o,) for o in out_sp)
        y = _empty(x.shape[:-sp] + out_sp, chunks, meta_y)
        return (y, _empty(y.shape, chunks, meta_i)) if op.max else y

    out_chunks = tuple(
        _forward_chunks(c, i, o) for c, i, o in zip(x.chunks[-sp:], in_sp, out_sp)
    )
    out_spans = [np.stack(_bounds(c), axis=1) for c in out_chunks]
    in_spans = [
        windows.input_spans(s[:, 0], s[:, 1], i, o) for s, i, o in zip(out_spans, in_sp, out_sp)
    ]
    _check_tables(in_spans, out_spans, "x")
    g = x
    for a, spans in enumerate(in_spans):
        g = _gather(g, x.ndim - sp + a, spans)

    task = functools.partial(
        _forward_task,
        fn=functools.partial(
            blocks.forward_block, op=op.name, in_sizes=in_sp, out_sizes=out_sp,
            index_dtype=idt, skipna=key.skipna, stream=stream,
        ),
        spatial=sp,
    )
    chunks = lead_chunks + out_chunks
    name = f"{op.name}-{_token(g, out_sp, idt)}"
    if not op.max:
        return g.map_blocks(task, chunks=chunks, dtype=dtype, meta=meta_y, name=name)
    # One kernel call per block makes both results: the block tasks return (values, indices)
    # and two light tasks per block take them apart.
    pairs = g.map_blocks(
        task, chunks=chunks, dtype=object, meta=np.empty((0,) * x.ndim, object), name=name
    )
    y = pairs.map_blocks(operator.getitem, 0, dtype=dtype, meta=meta_y, name=f"{name}-values")
    i = pairs.map_blocks(operator.getitem, 1, dtype=idt, meta=meta_i, name=f"{name}-indices")
    return y, i


def _token(*parts: Any) -> str:
    from dask.base import tokenize  # noqa: PLC0415

    return tokenize(*parts)


def _forward_task(xb: Any, block_info: Optional[dict] = None, *, fn: Any, spatial: int) -> Any:
    loc = block_info[None]["array-location"]
    return fn(xb, tuple((int(a), int(b)) for a, b in loc[-spatial:]))


def _empty(shape: tuple[int, ...], chunks: tuple, meta: Any) -> Any:
    """A zero-filled dask array of ``meta``'s kind."""
    da = _da()
    z = da.zeros(shape, chunks=chunks, dtype=meta.dtype)
    if type(meta) is np.ndarray:
        return z
    return z.map_blocks(lambda b: np.asarray(b, like=meta), dtype=meta.dtype, meta=meta)


# -- backward ------------------------------------------------------------------------------------
def _backward(
    op: Operator,
    grad_output: Any,
    x: Any,
    indices: Any = None,
    *,
    skipna: Any = False,
    out: Any = None,
    stream: Any = None,
) -> Any:
    da = _da()
    _no_out(out, "out")
    go = _as_dask(require(grad_output, "grad_output"), "grad_output")
    require(x, "x")
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        raise AdaptivePoolTypeError(
            f"x must be an array (dask, NumPy or CuPy), got {type(x).__name__}", argument="x"
        )
    if isinstance(x, da.Array):
        _known_chunks(x, "x")
    xs, xdt = tuple(int(s) for s in x.shape), np.dtype(x.dtype)
    gs = tuple(int(s) for s in go.shape)
    if op.max:
        indices = _as_dask(require(indices, "indices"), "indices")
    idt = check_backward(
        op, xs, xdt, gs, go.dtype, *((indices.shape, indices.dtype) if op.max else ())
    )
    sp = op.spatial
    lead = len(xs) - sp
    in_sp, out_sp = xs[lead:], gs[lead:]
    key = plan_key(op.name, CPU, xs, xdt, out_sp, idt, skipna=skipna)  # sizes, dtypes, indices
    x_chunks = x.chunks if isinstance(x, da.Array) else da.core.normalize_chunks(
        "auto", xs, dtype=xdt
    )
    meta = _meta(go, len(xs), xdt)
    if math.prod(xs[:lead]) == 0 or 0 in out_sp:
        return _empty(xs, x_chunks, meta)

    in_spans = [np.stack(_bounds(c), axis=1) for c in x_chunks[lead:]]
    covers = [
        windows.cover_spans(s[:, 0], s[:, 1], i, o) for s, i, o in zip(in_spans, in_sp, out_sp)
    ]
    _check_tables(in_spans, covers, "x")
    arrays = [go] + ([indices] if op.max else [])
    gathered = []
    for a in arrays:
        a = a.rechunk(dict(enumerate(x_chunks[:lead])))
        for k, spans in enumerate(covers):
            a = _gather(a, lead + k, spans)
        gathered.append(a)
    if not op.max:
        gathered.append(None)
    else:
        gathered.append(_index_check(op, indices, xs, in_sp, out_sp))
    if key.skipna:  # the counts of the covering cells need all of their windows' x
        xg = _as_dask(x, "x").rechunk(dict(enumerate(x_chunks[:lead])))
        for k, (c, i, o) in enumerate(zip(covers, in_sp, out_sp)):
            xg = _gather(xg, lead + k, windows.input_spans(c[:, 0], c[:, 1], i, o))
        gathered[1] = xg
    task = functools.partial(
        _backward_task,
        fn=functools.partial(
            blocks.backward_block, op=op.name, in_sizes=in_sp, out_sizes=out_sp, stream=stream
        ),
        spatial=sp,
        with_x=key.skipna,
    )
    name = f"{op.name}-{_token(gathered[:2], xs, x_chunks)}"
    args = gathered if op.max else gathered[:1] + ([gathered[1]] if key.skipna else [])
    # map_blocks pairs blocks by position: x's gathered blocks may be larger than the others
    return da.map_blocks(task, *args, chunks=x_chunks, dtype=xdt, meta=meta, name=name)


def _backward_task(
    go: Any,
    indices: Any = None,
    verdict: Any = None,
    block_info: Optional[dict] = None,
    *,
    fn: Any,
    spatial: int,
    with_x: bool = False,
) -> Any:
    # ``verdict`` only orders this task after the index check, which raised if it failed;
    # the NaN-skipping average gets x's block where the max gets its indices
    loc = block_info[None]["array-location"]
    ranges = tuple((int(a), int(b)) for a, b in loc[-spatial:])
    if with_x:
        return fn(go, None, ranges, x=indices)
    return fn(go, indices, ranges)


def _index_check(op: Operator, indices: Any, xs, in_sp, out_sp) -> Any:
    """A 0-d dask array whose task raises for the first index (C order) outside its window."""
    nd = indices.ndim
    flags = indices.map_blocks(
        _check_task,
        in_sizes=in_sp,
        out_sizes=out_sp,
        shape=tuple(indices.shape),
        chunks=tuple((1,) * len(c) for c in indices.chunks[:-1])
        + ((2,) * len(indices.chunks[-1]),),
        dtype=np.int64,
        meta=np.empty((0,) * nd, np.int64),
    )
    return flags.rechunk(-1).map_blocks(
        functools.partial(_verdict, op=op.name, x_shape=xs, shape=tuple(indices.shape)),
        drop_axis=list(range(nd)),
        dtype=np.int64,
        meta=np.empty((), np.int64),
    )


def _check_task(indices: Any, block_info: Optional[dict] = None, **kw: Any) -> np.ndarray:
    origin = tuple(int(a) for a, _ in block_info[0]["array-location"])
    res = blocks.first_bad_index(indices, origin, **kw)
    return res.reshape((1,) * (indices.ndim - 1) + (2,))


def _verdict(flags: np.ndarray, *, op: str, x_shape, shape) -> np.ndarray:
    pairs = np.asarray(flags).reshape(-1, 2)
    k = int(np.argmin(pairs[:, 0]))
    pos, value = int(pairs[k, 0]), int(pairs[k, 1])
    if pos != blocks.NO_BAD_INDEX:
        where = [int(i) for i in np.unravel_index(pos, shape)]
        raise AdaptivePoolIndexError(
            f"indices{where} = {value} lies outside the window of its output cell (indices are "
            f"flat offsets {OPERATORS[op].flat_index} inside the (n, c) plane of x with shape "
            f"{tuple(x_shape)})",
            argument="indices",
        )
    return np.zeros((), np.int64)
