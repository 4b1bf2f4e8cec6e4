"""Executors: a validated plan for one operator, shape, dtype and backend.

Building an executor checks every argument once and precomputes the window tables of
:mod:`adaptive_pool.windows` on its backend: that memory is the workspace. Running it checks only
that the arrays handed in fit the plan (and, for the max backward, the index values), then
launches one kernel. Executors are reusable, safe to run from several threads on different
outputs, and cached by their key so the one-call functions plan once per shape.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Optional

import numpy as np

from . import windows
from .arguments import MAX_SIZE, check_flag, check_index_dtype, check_rank, require
from .cpu import results
from .dtypes import DTypeSpec, resolve_dtype
from .errors import AdaptivePoolIndexError, AdaptivePoolTypeError, AdaptivePoolValueError
from .limits import CHECKED_BYTES, require_memory

__all__ = [
    "Operator",
    "OPERATORS",
    "PlanKey",
    "Executor",
    "get_executor",
    "recall",
    "remember",
    "prepared_call",
    "keep_prepared",
    "storage_refused",
    "clear_cache",
]

INT32_MAX = 2**31 - 1


#: Spatial axis names by rank, as the docs and messages write them.
_AXES = {1: ("L",), 2: ("H", "W"), 3: ("D", "H", "W")}


@dataclass(frozen=True)
class Operator:
    """Static facts about one operator of the family."""

    name: str
    spatial: int  # number of spatial axes: 1, 2 or 3
    backward: bool
    max: bool

    @property
    def ranks(self) -> tuple[int, int]:
        return (self.spatial + 1, self.spatial + 2)

    @property
    def axes(self) -> tuple[str, ...]:
        """The spatial axes' names: ``("L",)``, ``("H", "W")`` or ``("D", "H", "W")``."""
        return _AXES[self.spatial]

    @property
    def layout(self) -> str:
        sp = ", ".join(self.axes)
        return f"(C, {sp}) or (N, C, {sp})"

    @property
    def flat_index(self) -> str:
        """How a max index addresses its plane: ``l``, ``h*W + w`` or ``d*H*W + h*W + w``."""
        return {1: "l", 2: "h*W + w", 3: "d*H*W + h*W + w"}[self.spatial]

    @property
    def forward(self) -> str:
        """The name of the forward operator (the operator itself for a forward)."""
        return self.name.removesuffix("_backward")


OPERATORS = {
    op.name: op
    for op in (
        Operator(f"adaptive_{kind}_pool{rank}d{suffix}", rank, bool(suffix), kind == "max")
        for kind in ("avg", "max")
        for rank in (1, 2, 3)
        for suffix in ("", "_backward")
    )
}


@dataclass(frozen=True)
class PlanKey:
    """What an executor is specialised for. Strides are not part of it: any layout runs."""

    op: str
    backend: str
    x_shape: tuple[int, ...]
    out_spatial: tuple[int, ...]
    dtype: np.dtype
    index_dtype: Optional[np.dtype] = None
    skipna: bool = False


class Executor:
    """A reusable plan for one adaptive pooling operator.

    Use :func:`get_executor` (cached) rather than the constructor. Call :meth:`run` with the
    operator's arrays; the acl two-phase API and the functions of
    :mod:`adaptive_pool.functional` are thin layers over it.

    Attributes
    ----------
    op : Operator
        The operator.
    backend : object
        The backend (``"cpu"`` or ``"cuda"``) it runs on.
    x_shape, y_shape : tuple of int
        The forward input and output shapes (for a backward: ``grad_input`` and ``grad_output``).
    spec : DTypeSpec
        The data dtype and how it is stored and accumulated.
    index_dtype : numpy.dtype or None
        int32 or int64 for the max operators.
    workspace_size : int
        Bytes of workspace (the window tables); 0 for an empty problem.
    """

    def __init__(self, key: PlanKey, backend: Any, tables: Optional[np.ndarray] = None) -> None:
        """Plan ``key`` on ``backend``.

        ``tables`` replaces the plan's own window tables with explicit ones in the same layout
        (for example a block of a larger problem's, from
        :func:`~adaptive_pool.windows.build_block_tables`); such executors are not cached.
        """
        self.key = key
        self.op = OPERATORS[key.op]
        self.backend = backend
        self.spec: DTypeSpec = resolve_dtype(key.dtype, "x")
        self.index_dtype = key.index_dtype
        self.skipna = key.skipna
        sp = self.op.spatial
        self.x_shape = key.x_shape
        self.lead = key.x_shape[:-sp]
        self.batched = len(self.lead) == 2
        self.y_shape = self.lead + key.out_spatial
        n, c = self.lead if self.batched else (1, self.lead[0])
        in3 = (1,) * (3 - sp) + key.x_shape[-sp:]
        out3 = (1,) * (3 - sp) + key.out_spatial
        self.dims = (n, c) + in3 + out3
        # Nothing to compute: no planes, or an empty output (a backward of it is all zeros).
        self.empty = n * c == 0 or 0 in out3
        # Windows of given tables (a Dask block's, rebased) need not follow from the sizes, as
        # some of the backends' loop orders assume (one output per input row, say)
        self._given_windows = {} if tables is None else {"sized_windows": False}
        if self.empty:
            self.tables_host = np.empty(0, np.int64)
        elif tables is None:
            self._require_memory(
                8 * windows.table_size(in3, out3), "the window tables (2 * (I + O) int64 "
                "entries per axis)", lambda free: f"output sizes up to about "
                f"{max(0, free // 16 - sum(in3)) // sp} per axis would fit",
            )
            self.tables_host = windows.build_tables(in3, out3)
        else:
            size = windows.table_size(in3, out3)
            if tables.dtype != np.int64 or tables.shape != (size,):
                raise AdaptivePoolValueError(
                    f"tables must be a 1-D int64 array of {size} entries for {in3} -> {out3}, "
                    f"got {tables.dtype} with shape {tables.shape}",
                    argument="tables",
                )
            self.tables_host = tables
        self.workspace_size = int(self.tables_host.nbytes)
        self._tables = backend.tables(self.tables_host) if not self.empty else None
        self._prepared: Any = None
        # the backend's launches for the operands' geometries seen by run() (own tables only)
        self._launches: dict = {}

    def _require_memory(self, nbytes: int, what: str, fits: Callable[[int], str]) -> None:
        """An error naming the argument that sized an allocation too large for the memory."""
        given = self.key.out_spatial if not self.op.backward else self.y_shape
        require_memory(
            nbytes, self.backend.memory_available, what,
            "grad_output" if self.op.backward else "output_size", given, fits,
        )

    # -- descriptions ------------------------------------------------------------------------
    @property
    def in_spatial(self) -> tuple[int, ...]:
        return self.x_shape[-self.op.spatial :]

    @property
    def out_spatial(self) -> tuple[int, ...]:
        return self.key.out_spatial

    def __repr__(self) -> str:
        idx = f", indices={self.index_dtype}" if self.index_dtype is not None else ""
        return (
            f"<Executor {self.op.name} {self.x_shape}->{self.y_shape} {self.spec.name}{idx} "
            f"on {self.backend.name}, workspace {self.workspace_size} B>"
        )

    def _repr_html_(self) -> str:
        """Jupyter's rich display: shapes, dtypes, workspace and the window tables."""
        from .display import executor_html  # noqa: PLC0415

        return executor_html(self)

    # -- argument checks against the plan ----------------------------------------------------
    def _check(self, a: Any, name: str, shape: tuple[int, ...], dtype: np.dtype) -> None:
        require(a, name)
        got_shape, got_dtype = self.backend.describe(a)
        if got_dtype != dtype:
            raise AdaptivePoolTypeError(
                f"{name} has dtype {got_dtype}, expected {dtype}", argument=name
            )
        if tuple(got_shape) != tuple(shape):
            raise AdaptivePoolValueError(
                f"{name} has shape {tuple(got_shape)}, expected {tuple(shape)}", argument=name
            )

    def _check_out(self, out: Any, name: str, shape, dtype, inputs: dict[str, Any]) -> None:
        self._check(out, name, shape, dtype)
        if not self.backend.is_writeable(out):
            raise AdaptivePoolValueError(f"{name} is read-only", argument=name)
        if self.backend.self_overlapping(out):
            raise AdaptivePoolValueError(
                f"{name} has overlapping elements (a zero or too-small stride)", argument=name
            )
        for other, a in inputs.items():
            if a is not None and self.backend.shares_memory(out, a):
                raise AdaptivePoolValueError(
                    f"{name} overlaps {other}; outputs must not share memory with inputs",
                    argument=name,
                )

    def _output(self, out, name, shape, dtype, like, inputs):
        if out is None:
            # a backward's result is the size of its input x; small results are not checked
            # (and their message is not built: a call's Python overhead is what small
            # problems pay)
            per_cell = np.dtype(dtype).itemsize
            nbytes = math.prod(map(int, shape)) * per_cell
            if not self.op.backward and nbytes >= CHECKED_BYTES:
                planes = math.prod(map(int, self.lead))
                self._require_memory(
                    nbytes,
                    f"the result ({shape}, {np.dtype(dtype).name})",
                    lambda free: f"at most about {free // (per_cell * max(planes, 1))} output "
                    f"elements per (n, c) plane would fit",
                )
            return self.backend.empty(shape, dtype, like)
        self._check_out(out, name, shape, dtype, inputs)
        return out

    def _direct(self, a: Any, like: Any) -> Any:
        """``a``, or a temporary to compute into when kernels cannot write ``a`` in place."""
        if self.backend.writes_through(a):
            return a
        shape, dtype = self.backend.describe(a)
        return self.backend.empty(shape, dtype, like)

    def _finish(self, a: Any, tmp: Any, stream: Any) -> None:
        if tmp is not a:
            self.backend.copy_into(a, tmp, stream)

    def _view(self, a: Any, storage: np.dtype | None = None) -> Any:
        return self.backend.view5(a, storage, self.batched, self.op.spatial)

    def _skipna(self) -> dict[str, bool]:
        """The keyword that asks a backend's forward to skip NaN (only passed when asked)."""
        return {"skipna": True} if self.skipna else {}

    def _memo(self, workspace: Any) -> Optional[dict]:
        """Where the backend keeps the launches it prepares for :meth:`run`'s operands (by
        their geometry): planning one again took 10-40 us of a 50-125 us call with ``out=``
        on a tiny input. None with a caller's workspace (its tables are bound anew)."""
        if workspace is not None:
            return None
        if len(self._launches) >= _MEMO_SIZE:
            self._launches.clear()
        return self._launches

    def _tables_for(self, workspace: Any) -> Any:
        if workspace is None:
            return self._tables
        return self.backend.bind_workspace(self.tables_host, workspace, self.workspace_size)

    # -- repeated calls ----------------------------------------------------------------------
    def prepared(
        self, *layouts: Any, order: Optional[tuple[int, ...]] = None
    ) -> Optional[Callable[..., Any]]:
        """:meth:`run` for the common case of a small call, as lean as it gets, or None.

        The function takes the operator's inputs (``x``; ``grad_output, x``; ``grad_output,
        indices``) and returns fresh results as :meth:`run` would, or None where the max
        backward found an index outside its window (:meth:`run` then says which). It checks
        nothing: the caller vouches that the inputs are C-contiguous, aligned, writeable
        NumPy arrays of the plan's shapes and dtypes. None where the backend prepares no
        launches (CUDA) or there is nothing to compute.

        With ``layouts`` (inputs in that order, of the plan's shapes and dtypes), a function
        for inputs of their strides instead (the caller vouches for those, and that they are
        aligned and writeable), or None where one of them is not a dense block in some axis
        order (channels-last, Fortran order, transposed) or the NaN-skipping average backward
        would read a copy of ``x`` (``copies_x``).

        With ``order`` (a permutation of the results' axes, outermost first: ``(0, 2, 3, 1)``
        for PyTorch's ``channels_last``), the results are laid out in that axis order instead
        of C order, as dense blocks (the torch layer's results of channels-last tensors).
        """
        if order == tuple(range(len(order or ()))):
            order = None  # (C order)
        if layouts or order:
            return self._prepare(layouts, order)
        if self._prepared is None:
            self._prepared = self._prepare() or False
        return self._prepared or None

    def _prepare(
        self, layouts: tuple = (), order: Optional[tuple[int, ...]] = None
    ) -> Optional[Callable[..., Any]]:
        be = self.backend
        if self.empty or not hasattr(be, "prepare_avg_pool"):
            return None
        dt, st, tab, dims = self.spec.dtype, self.spec.storage, self._tables, self.dims
        n, c, d, h, w, od, oh, ow = dims
        # the flat geometry (offset, strides in elements) of C-contiguous 5-D views
        xg = (0, c * d * h * w, d * h * w, h * w, w, 1)
        yg = (0, c * od * oh * ow, od * oh * ow, oh * ow, ow, 1)
        xs, ys = self.x_shape, self.y_shape
        # flat views: ravel() is a view of a C-contiguous array and costs half of
        # reshape(-1). The launches are bound to compiled code for the storage dtype, which
        # takes 16-bit arrays as they are (it checks the item size only): a reinterpreting
        # view cost 0.3 us an array. Where Numba refuses them, views in the storage dtype.
        if st == dt or _RAW_STORAGE:
            flat = np.ndarray.ravel
        else:
            def flat(a):
                return a.view(st).ravel()
        # each input's geometry and flat view; other layouts than C order: the geometry of
        # the input's 5-D view, and ravel("K"), a view of a dense block in any axis order
        geo = [yg, yg if self.op.max else xg] if self.op.backward else [xg]
        flats = [flat, np.ndarray.ravel if self.op.max else flat][: len(geo)]
        for k, a in enumerate(layouts):
            if a.flags.c_contiguous:
                continue
            if self.op.backward and not self.op.max and k == 1 and not self.skipna:
                continue  # x is not read
            g = be.dense_geometry(self._view(a, None if self.op.max and k == 1 else st))
            if g is None or (k == 1 and self.skipna and be.copies_x(g, dims)):
                return None  # (a NaN-skipping backward's copy of x: the long way)
            geo[k], flats[k] = g, _flat_in_memory_order(flats[k])
        # results in C order, or dense in ``order``: the geometry of their 5-D views, and
        # ravel("K") as for inputs
        new, flat_r, flat_i = results.allocator, flat, np.ndarray.ravel
        rg = xg if self.op.backward else yg
        if order is not None:
            new = partial(_allocator_in_order, order=order)
            rg = be.dense_geometry(self._view(new(xs if self.op.backward else ys, dt)(), st))
            flat_r, flat_i = _flat_in_memory_order(flat), _RAVEL_K
        # what every call hands its launch: flat arrays of the types the launches are
        # compiled for (the backends' ``like``), of data and of indices
        data = np.empty(0, st)
        idx = np.empty(0, self.index_dtype) if self.op.max else None
        if not self.op.backward and self.op.max:
            launch = be.prepare_max_pool(
                geo[0], rg, rg, tab, dims, self.skipna, like=(data, data, idx)
            )
            new_y, new_i = new(ys, dt), new(ys, self.index_dtype)
            flat_x = flats[0]

            def max_pool(x):
                y, i = new_y(), new_i()
                launch(flat_x(x), flat_r(y), flat_i(i))
                return y, i

            return max_pool
        if not self.op.backward:
            launch = be.prepare_avg_pool(
                geo[0], rg, tab, dims, st, self.skipna, like=(data, data), **self._given_windows
            )
            new_y = new(ys, dt)
            flat_x = flats[0]

            def avg_pool(x):
                y = new_y()
                launch(flat_x(x), flat_r(y))
                return y

            return avg_pool
        flat_g = flats[0]
        if self.op.max:
            launch = be.prepare_max_pool_backward(
                geo[0], geo[1], rg, tab, dims, True, like=(data, idx, data), itemsize=st.itemsize
            )
            new_gi = new(xs, dt)
            flat_ind = flats[1]

            def max_pool_backward(grad_output, indices):
                gi = new_gi()
                bad = launch(flat_g(grad_output), flat_ind(indices), flat_r(gi))
                return gi if bad < 0 else None

            return max_pool_backward
        # x is read where NaN are skipped only
        x_flat = flats[1] if self.skipna else _nothing
        launch = be.prepare_avg_pool_backward(
            geo[0], rg, tab, dims, geo[1] if self.skipna else None,
            like=(data, data, x_flat(data)), itemsize=st.itemsize,
        )
        new_gi = new(xs, dt)

        def avg_pool_backward(grad_output, x):
            gi = new_gi()
            launch(flat_g(grad_output), flat_r(gi), x_flat(x))
            return gi

        return avg_pool_backward

    # -- running -----------------------------------------------------------------------------
    def run(
        self,
        x: Any = None,
        *,
        grad_output: Any = None,
        indices: Any = None,
        out: Any = None,
        indices_out: Any = None,
        workspace: Any = None,
        stream: Any = None,
    ) -> Any:
        """Run the operator.

        Parameters
        ----------
        x : array
            Forward input. Backward operators take its shape from the plan and use ``x`` only to
            check that ``out`` does not overlap it (optional there).
        grad_output : array
            Gradient of the forward output (backward operators).
        indices : array of int32 or int64
            Indices from the max forward (max backward).
        out, indices_out : array, optional
            Where to write the result (and the max forward's indices).
        workspace : array of uint8, optional
            A caller-owned workspace of at least :attr:`workspace_size` bytes.
        stream : optional
            CUDA stream (GPU backend only).

        Returns
        -------
        array or tuple of arrays
            The result (``(y, indices)`` for the max forward).
        """
        be = self.backend
        dt = self.spec.dtype
        if not self.op.backward:
            self._check(x, "x", self.x_shape, dt)
            y = self._output(out, "out", self.y_shape, dt, x, {"x": x})
            if self.op.max:
                idx = self._output(
                    indices_out, "indices_out", self.y_shape, self.index_dtype, x,
                    {"x": x, "out": y},
                )
            if not self.empty:
                tab = self._tables_for(workspace)
                memo = self._memo(workspace)
                st = self.spec.storage
                yt = self._direct(y, x)
                if self.op.max:
                    it = self._direct(idx, x)
                    be.max_pool(
                        self._view(x, st), self._view(yt, st), self._view(it), tab, self.dims,
                        stream, **self._skipna(), memo=memo,
                    )
                    self._finish(idx, it, stream)
                else:
                    be.avg_pool(
                        self._view(x, st), self._view(yt, st), tab, self.dims, stream,
                        **self._skipna(), **self._given_windows, memo=memo,
                    )
                self._finish(y, yt, stream)
            return (y, idx) if self.op.max else y

        self._check(grad_output, "grad_output", self.y_shape, dt)
        inputs = {"grad_output": grad_output}
        reads_x = self.skipna and not self.op.max  # which inputs are NaN decides the counts
        if reads_x:
            self._check(x, "x", self.x_shape, dt)
        if x is not None:  # otherwise only its shape is used, but it is an input all the same
            inputs["x"] = x
        if self.op.max:
            self._check(indices, "indices", self.y_shape, self.index_dtype)
            inputs["indices"] = indices
        gi = self._output(out, "out", self.x_shape, dt, grad_output, inputs)
        if self.empty:
            if 0 not in self.dims[:2]:
                be.zero(gi, stream)
            return gi
        tab = self._tables_for(workspace)
        memo = self._memo(workspace)
        st = self.spec.storage
        git = self._direct(gi, grad_output)
        go5, gi5 = self._view(grad_output, st), self._view(git, st)
        if self.op.max:
            ind5 = self._view(indices)
            # a result of our own may be left partly written by a bad index (the backend may
            # then check as it goes); a caller's out= is untouched
            bad = be.max_pool_backward(
                go5, ind5, gi5, tab, self.dims, stream, out is None, memo=memo
            )
            if bad >= 0:
                pos = tuple(int(i) for i in np.unravel_index(bad, self.y_shape))
                value = be.read_element(indices, pos)
                raise AdaptivePoolIndexError(
                    f"indices{list(pos)} = {value} lies outside the window of its output cell "
                    f"(indices are flat offsets {self.op.flat_index} inside the (n, c) plane "
                    f"of x with shape {self.x_shape})",
                    argument="indices",
                )
        else:
            skip = {"skipna": True, "x": self._view(x, st)} if reads_x else {}
            be.avg_pool_backward(go5, gi5, tab, self.dims, stream, **skip, memo=memo)
        self._finish(gi, git, stream)
        return gi


_CACHE: "OrderedDict[PlanKey, Executor]" = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 256


_KEYS: dict[tuple, PlanKey] = {}
_KEYS_SIZE = 1024


def plan_key(
    op: str,
    backend: Any,
    x_shape: tuple[int, ...],
    x_dtype: Any,
    out_spatial: tuple[int, ...],
    index_dtype: Any = None,
    x_name: str = "x",
    skipna: Any = False,
) -> PlanKey:
    """Validate the plan-level facts (rank, sizes, dtypes) and return the executor's key.

    Facts that passed once are remembered: a repeated call skips the checks (tens of
    microseconds, a large part of a small call).
    """
    raw = (op, backend.name, tuple(x_shape), x_dtype, out_spatial, index_dtype, x_name,
           type(skipna), skipna)
    try:
        key = _KEYS.get(raw)
    except TypeError:  # an unhashable argument: it will fail the checks below
        return _plan_key(op, backend, x_shape, x_dtype, out_spatial, index_dtype, x_name, skipna)
    if key is None:
        key = _plan_key(op, backend, x_shape, x_dtype, out_spatial, index_dtype, x_name, skipna)
        if len(_KEYS) >= _KEYS_SIZE:
            _KEYS.clear()
        _KEYS[raw] = key
    return key


def _plan_key(
    op, backend, x_shape, x_dtype, out_spatial, index_dtype, x_name, skipna
) -> PlanKey:
    op_ = OPERATORS[op]
    check_rank(x_shape, op_.ranks, x_name, op_.layout)
    in_spatial = x_shape[-op_.spatial :]
    if 0 in in_spatial:
        raise AdaptivePoolValueError(
            f"{x_name} has shape {tuple(x_shape)}: spatial sizes must be positive",
            argument=x_name,
        )
    if max(in_spatial) >= MAX_SIZE:
        raise AdaptivePoolValueError(
            f"{x_name} has shape {tuple(x_shape)}: spatial sizes must be below 2**62",
            argument=x_name,
        )
    spec = resolve_dtype(x_dtype, x_name)
    idx = None
    if op_.max:
        idx_name = "indices" if op_.backward else "index_dtype"
        idx = check_index_dtype(index_dtype, idx_name)
        plane = int(np.prod(in_spatial, dtype=object))
        if idx == np.int32 and plane > INT32_MAX:
            fix = "int64 indices" if op_.backward else "index_dtype=numpy.int64"
            raise AdaptivePoolValueError(
                f"a plane of {x_name} has {plane} elements, more than int32 indices can address "
                f"(2**31 - 1); use {fix}",
                argument=idx_name,
            )
    # the max backward adds where the indices say, NaN or not: skipna changes nothing there
    skip = check_flag(skipna, "skipna") and not (op_.max and op_.backward)
    return PlanKey(
        op, backend.name, tuple(int(s) for s in x_shape), out_spatial, spec.dtype, idx, skip
    )


def get_executor(key: PlanKey, backend: Any) -> Executor:
    """The cached executor for ``key`` (built on first use)."""
    with _CACHE_LOCK:
        ex = _CACHE.get(key)
        if ex is not None:
            _CACHE.move_to_end(key)
            return ex
    ex = Executor(key, backend)
    with _CACHE_LOCK:
        ex = _CACHE.setdefault(key, ex)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return ex


#: Executors by the raw arguments (kinds, shapes, dtypes, sizes) of NumPy calls that passed
#: validation once. Every check of a call depends only on these, so a repeated call skips them
#: and the plan lookup: the common path of a small call.
_MEMO: dict[tuple, Executor] = {}
_MEMO_SIZE = 1024


def recall(memo: tuple) -> Executor | None:
    """The executor :func:`remember` stored for ``memo``, or None."""
    try:
        return _MEMO.get(memo)
    except TypeError:  # an unhashable argument (a list output_size): the checks decide
        return None


def remember(memo: tuple, ex: Executor) -> Executor:
    """Store ``ex`` as the plan of calls whose raw arguments are ``memo``; return it."""
    try:
        if len(_MEMO) >= _MEMO_SIZE:
            _MEMO.clear()
        _MEMO[memo] = ex
    except TypeError:
        pass
    return ex


_RAVEL_K = partial(np.ndarray.ravel, order="K")


def _flat_in_memory_order(flat: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``flat`` of an array's elements in memory order (a view of a dense block)."""
    if flat is np.ndarray.ravel:
        return _RAVEL_K
    return lambda a: flat(_RAVEL_K(a))


def _allocator_in_order(
    shape: tuple[int, ...], dtype: np.dtype, order: tuple[int, ...]
) -> Callable[[], np.ndarray]:
    """:func:`~adaptive_pool.cpu.results.allocator` of arrays of ``shape`` whose axes lie in
    memory in ``order`` (outermost first), as one dense block."""
    new = results.allocator(tuple(shape[k] for k in order), dtype)
    back = tuple(int(k) for k in np.argsort(order))
    return lambda: new().transpose(back)


def _nothing(a: Any) -> None:
    """What a prepared call hands its launch for an array the launch does not read."""


#: Prepared calls (:meth:`Executor.prepared`) by the name, shapes, dtypes and other arguments
#: of NumPy calls that ran once the long way: a repeated small call costs a few microseconds
#: instead of tens. The one-call functions keep them for plain arrays (C-contiguous, aligned,
#: writeable) and fresh results only, so each call that takes one has arguments just like one
#: that passed every check; arrays in other layouts (aligned, writeable, dense in some axis
#: order) under keys that also hold their strides. (Cleared, never rebound: the one-call
#: functions look calls up in it directly.)
_PREPARED: dict[tuple, Any] = {}


#: Whether prepared calls hand 16-bit arrays to compiled code as they are (see
#: :meth:`Executor.prepared`); :func:`storage_refused` turns it off.
_RAW_STORAGE = True


def storage_refused() -> None:
    """A prepared call raised TypeError: this Numba checks more than an array's item size
    when it unboxes one. Prepare calls with views in the storage dtype from now on."""
    global _RAW_STORAGE
    _RAW_STORAGE = False
    clear_cache()  # executors keep their prepared calls


def prepared_call(key: tuple) -> Any:
    """The prepared call :func:`keep_prepared` stored for ``key``, or something false (None:
    none stored; False: the call's layouts have none)."""
    try:
        return _PREPARED.get(key)
    except TypeError:  # an unhashable argument: the checks will say what is wrong with it
        return None


def keep_prepared(
    key: tuple, ex: Executor, *layouts: Any, order: Optional[tuple[int, ...]] = None
) -> None:
    """Store ``ex``'s prepared call, if it has one, for calls whose arguments are ``key``
    (with ``layouts``, the inputs of a call in other layouts, and ``order``, the results'
    axis order: see :meth:`Executor.prepared`; where they have none, False, so that they are
    not tried again)."""
    run = ex.prepared(*layouts, order=order)
    if run is not None or layouts or order:
        if len(_PREPARED) >= _MEMO_SIZE:
            _PREPARED.clear()
        _PREPARED[key] = run or False


def clear_cache() -> None:
    """Forget every cached executor (frees their workspaces) and prepared call, and free the
    memory kept for large results (:mod:`adaptive_pool.cpu.results`)."""
    with _CACHE_LOCK:
        _CACHE.clear()
        _MEMO.clear()
        _PREPARED.clear()
    results.release()
