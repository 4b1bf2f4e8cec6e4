"""Tiny problems that make the CPU backend compile (or load) each of its kernels.

Each entry of :data:`KERNELS` runs one group of kernels through the backend's own launch code,
so the specialisations compiled are exactly the ones real calls use (same argument types),
and then checks that the kernels it meant to reach have a specialisation for the dtype: in a
process that had compiled nothing (a warm-up worker), a change of the backend's choice of
kernel fails here instead of leaving a kernel cold.

A group is what one process of ``python -m adaptive_pool warmup`` compiles: Numba keeps one
cache index per kernel, so no two processes may compile the same kernel at once.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..dtypes import SUPPORTED, resolve_dtype
from ..windows import build_tables
from . import backend, kernels, tiers, tiny
from .backend import BACKEND

__all__ = ["KERNELS", "INDEX_DTYPES", "warm", "kernel_names", "group_of"]

#: Index dtypes the max kernels are compiled for (CANN's int32, PyTorch's int64).
INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))


def _problem(storage: np.dtype, in3: tuple, out3: tuple, c: int = 1):
    """``x`` (1, c, *in3) in ``storage``, its window table and the kernels' ``dims``."""
    x = np.zeros((1, c) + in3, storage)
    return x, build_tables(in3, out3), (1, c) + in3 + out3


def _channels_last_view(a: np.ndarray) -> np.ndarray:
    """``a`` (5-D) with the same values, its channels adjacent in memory."""
    return np.ascontiguousarray(np.moveaxis(a, 1, -1)).transpose(0, 4, 1, 2, 3)


def _avg(in3: tuple, out3: tuple, c: int, order: str | None = None) -> Callable:
    """The average forward on a problem that takes the loop order of the group (``order``
    where a problem small enough for a warm-up takes it on some CPUs only), plain and
    NaN-skipping (a specialisation each)."""

    def run(storage: np.dtype, index: np.dtype, skipna: bool) -> None:
        x, tab, dims = _problem(storage, in3, out3, c)
        forced = backend._FORCE_ORDER
        backend._FORCE_ORDER = order or forced
        try:
            for skip in (False, True)[: 1 + skipna]:
                BACKEND.avg_pool(x, np.empty((1, c) + out3, storage), tab, dims, skipna=skip)
        finally:
            backend._FORCE_ORDER = forced

    return run


def _avg_backward(in3: tuple, out3: tuple, c: int, channels_last: bool = False) -> Callable:
    """The average backward, plain and NaN-skipping; of channels-last gradients plain only
    (NaN-skipping calls take the kernels of other groups)."""

    def run(storage: np.dtype, index: np.dtype, skipna: bool) -> None:
        x, tab, dims = _problem(storage, in3, out3, c)
        go = np.zeros((1, c) + out3, storage)
        if channels_last:
            go = _channels_last_view(go)
            skipna = False
        for skip in (False, True)[: 1 + skipna]:
            BACKEND.avg_pool_backward(go, np.empty_like(x), tab, dims, skipna=skip, x=x)

    return run


def _max(in3: tuple, out3: tuple) -> Callable[[np.dtype, np.dtype, bool], None]:
    """The max forward, plain and NaN-skipping."""

    def run(storage: np.dtype, index: np.dtype, skipna: bool) -> None:
        x, tab, dims = _problem(storage, in3, out3)
        y = np.empty((1, 1) + out3, storage)
        for skip in (False, True)[: 1 + skipna]:
            BACKEND.max_pool(x, y, np.empty(y.shape, index), tab, dims, skipna=skip)

    return run


def _channels_last(kind: str) -> Callable[[np.dtype, np.dtype, bool], None]:
    """The average or max forward of a channels-last input of 8 channels, plain and
    NaN-skipping."""

    def run(storage: np.dtype, index: np.dtype, skipna: bool) -> None:
        x, tab, dims = _problem(storage, (1, 2, 3), (1, 1, 2), 8)
        x = _channels_last_view(x)
        y = np.empty((1, 8, 1, 1, 2), storage)
        for skip in (False, True)[: 1 + skipna]:
            if kind == "avg":
                BACKEND.avg_pool(x, y, tab, dims, skipna=skip)
            else:
                BACKEND.max_pool(x, y, np.empty(y.shape, index), tab, dims, skipna=skip)

    return run


def _max_backward(dense: bool) -> Callable[[np.dtype, np.dtype], None]:
    """The max backward into a result with dense planes (the sparse kernel), or into a strided
    one (the index check, then the gather). One output cell pools the whole plane, so index 0
    is valid for it."""

    def run(storage: np.dtype, index: np.dtype, skipna: bool) -> None:
        gi, tab, dims = _problem(storage, (2, 3, 3), (1, 1, 1))
        if not dense:
            gi = np.zeros((1, 1, 2, 3, 6), storage)[..., ::2]
        go = np.zeros((1, 1, 1, 1, 1), storage)
        ind = np.zeros(go.shape, index)
        BACKEND.max_pool_backward(go, ind, gi, tab, dims, fresh=True)

    return run


#: The functions of tiny problems' prepared calls; the averages' take no indices.
_TINY_TARGETS = (
    "tiny.avg_pool", "tiny.max_pool", "tiny.avg_pool_backward", "tiny.max_pool_backward",
)
_NO_INDEX = {"tiny.avg_pool", "tiny.avg_pool_backward"}


def _tiny(storage: np.dtype, index: np.dtype, skipna: bool) -> None:
    """The prepared calls of tiny problems (:mod:`.tiny`): each operator's function and its
    baseline kernel, through the backend's own prepare methods."""
    _, tab, dims = _problem(storage, (1, 2, 2), (1, 1, 1))
    xg, yg = (0, 4, 4, 4, 2, 1), (0, 1, 1, 1, 1, 1)
    data, idx = np.empty(0, storage), np.empty(0, index)
    for skip in (False, True)[: 1 + skipna]:
        BACKEND.prepare_avg_pool(xg, yg, tab, dims, storage, skip, like=(data, data))
        BACKEND.prepare_max_pool(xg, yg, yg, tab, dims, skip, like=(data, data, idx))
        BACKEND.prepare_avg_pool_backward(yg, xg, tab, dims, xg if skip else None,
                                          like=(data, data, data if skip else None))
    BACKEND.prepare_max_pool_backward(yg, yg, xg, tab, dims, True, like=(data, idx, data))


#: name -> (kernels it compiles, whether it depends on the index dtype, how to reach them),
#: longest compile first (every dtype, two at a time, 2026-12-06, Zen 4: 75 s for the first
#: two down to 13 s for avg_pool_runs), so that the last group to start is a short one
KERNELS: dict[str, tuple[tuple[str, ...], bool, Callable[[np.dtype, np.dtype], None]]] = {
    "max_pool_channels": (("max_pool_channels",), True, _channels_last("max")),
    "avg_pool_backward_lanes": (
        ("avg_pool_backward_lanes",), False, _avg_backward((1, 3, 3), (1, 2, 2), 8)
    ),
    "avg_pool_backward": (  # (windows two d deep: a count pass when NaN-skipping)
        ("avg_pool_backward", "count_valid"), False,
        _avg_backward((2, 6, 6), (1, 2, 2), 1),
    ),
    "avg_pool_lanewise": (("avg_pool_lanewise",), False, _avg((1, 3, 3), (1, 2, 2), 8)),
    "max_pool_runs": (("max_pool_runs",), True, _max((2, 3, 3), (1, 1, 1))),
    "max_pool": (("max_pool",), True, _max((2, 3, 3), (1, 2, 2))),
    "max_pool_backward_sparse": (("max_pool_backward_sparse",), True, _max_backward(True)),
    "avg_pool_direct": (("avg_pool_direct",), False, _avg((1, 3, 3), (1, 2, 2), 1)),
    "avg_pool_channels": (("avg_pool_channels",), False, _channels_last("avg")),
    # (on Zen 4 small float32 inputs go window by window: backend._ROWWISE_CACHED)
    "avg_pool_rowwise": (("avg_pool_rowwise",), False,
                         _avg((1, 2, 66), (1, 1, 2), 1, "rowwise")),
    "avg_pool_backward_runs": (
        ("avg_pool_backward_runs",), False, _avg_backward((1, 3, 3), (1, 1, 1), 1)
    ),
    "max_pool_backward": (
        ("first_bad_index", "max_pool_backward"), True, _max_backward(False)
    ),
    "avg_pool_backward_columns": (  # (rows of 8 one element in h: planes of 24 as one row)
        ("avg_pool_backward_columns",), False, _avg_backward((2, 3, 8), (1, 3, 8), 1)
    ),
    "avg_pool_backward_block": (
        ("avg_pool_backward_block",), False, _avg_backward((1, 3, 3), (1, 2, 2), 8, True)
    ),
    "avg_pool_columns": (("avg_pool_columns",), False, _avg((1, 3, 3), (1, 1, 3), 1)),
    "avg_pool_runs": (("avg_pool_runs",), False, _avg((1, 3, 3), (1, 1, 1), 1)),
    "tiny": (_TINY_TARGETS, True, _tiny),
}


def _dispatcher(target: str):
    """A group's target by name: a kernel of :mod:`~adaptive_pool.cpu.kernels`, or
    ``tiny.<name>`` of :mod:`~adaptive_pool.cpu.tiny`."""
    module, _, name = target.rpartition(".")
    return getattr(tiny if module else kernels, name)


def group_of(dispatcher) -> str | None:
    """The group that compiles ``dispatcher`` (a kernel of :mod:`~adaptive_pool.cpu.kernels`
    or its chunk function), or None."""
    if not _GROUPS:
        for name, (targets, _, _) in KERNELS.items():
            for target in targets:
                if target in _TINY_TARGETS:
                    continue  # (never tiered: compiled where a prepared call needs them)
                kernel = getattr(kernels, target)
                _GROUPS[kernel] = _GROUPS[kernels.CHUNKS[kernel]] = name
    return _GROUPS.get(dispatcher)


_GROUPS: dict = {}


def kernel_names() -> list[str]:
    """The names :func:`warm` accepts, in the order the warm-up starts them (longest first)."""
    return list(KERNELS)


def warm(
    name: str,
    dtypes: list[str] | None = None,
    index_dtypes: list[str] | None = None,
    skipna: bool = True,
) -> int:
    """Compile (or load from Numba's cache) kernel group ``name`` for each of ``dtypes``.

    Parameters
    ----------
    name : str
        A key of :data:`KERNELS`.
    dtypes : list of str, optional
        dtype names (``"float32"``, ``"bfloat16"``, ...); every supported dtype by default.
    index_dtypes : list of str, optional
        Index dtypes for the max kernels (``"int32"``, ``"int64"``); both by default.
    skipna : bool, default True
        Also the NaN-skipping specialisations (``skipna=True`` calls).

    Returns
    -------
    int
        The number of specialisations now compiled or loaded.

    Raises
    ------
    RuntimeError
        If the backend did not launch the kernels the group is meant to reach.
    """
    targets, indexed, run = KERNELS[name]
    specs = [resolve_dtype(d, "dtypes") for d in dtypes] if dtypes else list(SUPPORTED.values())
    indices = [np.dtype(d) for d in index_dtypes] if index_dtypes else list(INDEX_DTYPES)
    if not set(indices) <= set(INDEX_DTYPES):
        raise ValueError(f"index dtypes must be int32 or int64, got {index_dtypes}")
    targets = [t for t in targets if skipna or t not in _SKIPNA_ONLY]
    count = 0
    mode, tiers.MODE = tiers.MODE, "tuned"  # compile the tuned kernels here and now
    try:
        for spec in specs:
            for index in indices if indexed else indices[:1]:
                # the parallel kernels (which compile their chunk functions as they go),
                # then the chunk functions small problems call on their own
                serial_work, backend._SERIAL_WORK = backend._SERIAL_WORK, 0
                try:
                    run(spec.storage, index, skipna)
                finally:
                    backend._SERIAL_WORK = serial_work
                run(spec.storage, index, skipna)
                count += _check(name, targets, spec, index, indexed)
    finally:
        tiers.MODE = mode
    return count


def _check(name: str, targets: list[str], spec, index: np.dtype, indexed: bool) -> int:
    """How many of ``targets`` have a specialisation for ``spec`` (and ``index``); raises if
    one has none."""
    for target in targets:
        # the array dtypes that name this specialisation among the kernel's signatures
        want = {index} if target in _INDEX_ONLY else {spec.storage}
        if indexed and target not in _NO_INDEX:
            want.add(index)
        if not any(want <= _array_dtypes(sig) for sig in _dispatcher(target).signatures):
            raise RuntimeError(f"warm-up {name!r} did not reach {target} for {spec.name}")
    return len(targets)


#: Kernels only NaN-skipping calls use.
_SKIPNA_ONLY = {"count_valid"}

#: Kernels whose only dtype-dependent argument is the indices.
_INDEX_ONLY = {"first_bad_index"}


def _array_dtypes(signature: tuple) -> set[np.dtype]:
    """The NumPy dtypes of the array arguments of a compiled signature."""
    return {np.dtype(str(t.dtype)) for t in signature if hasattr(t, "dtype") and hasattr(t, "ndim")}
