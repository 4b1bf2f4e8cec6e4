"""The CPU backend: NumPy arrays in, compiled kernels on Numba's threads, NumPy arrays out."""

from __future__ import annotations

import glob
import threading
from functools import partial
from typing import Callable

import numba
import numpy as np

from .. import windows
from ..errors import AdaptivePoolTypeError, AdaptivePoolValueError
from ..limits import host_memory_available
from . import baseline, calls, kernels, relayout, results, tiers, tiny
from .access import _CPU, NATIVE_MASKS, SPLIT_512
from .avg_backward_blocks import BLOCK
from .lanes import vector_runs

__all__ = ["CpuBackend", "BACKEND"]


class _Alias:
    """Array-interface holder for a flat alias of ``owner``'s memory (kept alive as its base)."""

    def __init__(self, owner: np.ndarray, address: int, n: int) -> None:
        self.owner = owner
        self.__array_interface__ = {
            "version": 3,
            "data": (address, False),
            "shape": (n,),
            "typestr": owner.dtype.str,
        }


def flat_geometry(a: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    """A 1-D alias of the memory ``a`` spans and ``(offset, *strides)`` in elements.

    Any strides work (negative, zero, channels-last) without a copy, so one compiled kernel per
    dtype serves every layout. The alias is writeable even for read-only inputs because numba
    types read-only arrays separately (another compile per kernel); kernels never write inputs.
    """
    item = a.itemsize
    if a.size == 0:
        return np.empty(0, a.dtype), (0,) * (a.ndim + 1)
    geometry = dense_geometry(a)
    if geometry is not None:
        # the common case, without the alias's array-interface round trip (4.9 us)
        return a.ravel("K"), geometry
    if any(s % item for s in a.strides):
        a = np.ascontiguousarray(a)  # strides that are not whole elements: rare, copy
    strides = tuple(s // item for s in a.strides)
    low = sum((n - 1) * s for n, s in zip(a.shape, strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(a.shape, strides) if s > 0)
    address = a.__array_interface__["data"][0] + low * item
    flat = np.asarray(_Alias(a, address, high - low + 1))
    return flat, (-low,) + strides


def dense_geometry(a: np.ndarray) -> tuple[int, ...] | None:
    """``(0, *strides)`` in elements of a writeable array whose elements fill the memory from
    its first one in some axis order (C order, or another: channels-last, Fortran, transposed;
    ``a.ravel("K")`` is then a view of it in memory order), else None."""
    strides = a.strides
    if not a.flags.writeable:
        return None
    if not a.flags.c_contiguous:
        if not all(s > 0 or n == 1 for s, n in zip(strides, a.shape)):
            return None
        # C-contiguous once its axes are sorted by stride (1.1 us)
        order = sorted(range(a.ndim), key=strides.__getitem__, reverse=True)
        if not a.transpose(order).flags.c_contiguous:
            return None
    return (0, *[s // a.itemsize for s in strides])


#: Index expressions inserting the singleton spatial axes of a 1-D or 2-D problem.
_SINGLETONS = {1: (slice(None), slice(None), None, None), 2: (slice(None), slice(None), None)}


_THREADS: Callable[[], int] | None = None


def _threads() -> int:
    """This thread's Numba thread count.

    The getter is looked up on first use: that starts Numba's thread pool, which ``import
    adaptive_pool`` must not pay for. The public ``numba.get_num_threads`` checks the pool on
    every call (1-2 us of a small call); once the pool is up its C entry point does the same
    work. Numba versions without it get the public function.
    """
    global _THREADS
    if _THREADS is None:
        numba.get_num_threads()  # starts the pool (the first kernel would anyway)
        from numba.np.ufunc import parallel  # noqa: PLC0415

        get = getattr(parallel, "_get_num_threads", None)
        ok = callable(get) and get() == numba.get_num_threads()
        _THREADS = get if ok else numba.get_num_threads
    return _THREADS()


def _serial(work: int) -> bool:
    """Whether a launch touching ``work`` elements runs on the calling thread alone (below
    :data:`_SERIAL_WORK`)."""
    return work < _SERIAL_WORK


def _launch_threads(work: int) -> int:
    """The threads a launch touching ``work`` elements runs on (:func:`_serial`, else the
    pool's). Work is split into blocks for that many threads: a launch on the calling thread
    takes its planes in blocks as large as for one thread (blocks sized for two threads ran
    1.1-1.5x slower there)."""
    return 1 if _serial(work) else _threads()


def _tiny(dims, like) -> bool:
    """Whether a launch runs its baseline kernel from a packed plan (:mod:`.tiny`): a prepared
    call's (``like`` given) of at most :data:`_TINY_WORK` elements."""
    n, c, d, h, w, od, oh, ow = dims
    return like is not None and n * c * (d * h * w + od * oh * ow) <= _TINY_WORK


def _bind(call, runs, like, baseline=None, skipna=False) -> Callable[..., object]:
    """``partial(call, *runs)``: a launch of the flat arrays, ``call(*runs, *arrays)``.

    With ``like`` (arrays of the types of every later call's arrays, in the same order: a
    prepared call's), each run is bound to compiled code for the argument types that ``call``
    hands it, compiled (or loaded from the cache) now: a run on the calling thread calls its
    chunk function's straight, skipping the dispatcher's typing of each argument (0.5-1 us of
    a small call), and a parallel one its kernel's, with the chunk's address looked up once
    (:meth:`CpuBackend._launch`). Those types are read from one call of ``call`` on ``like``
    with runs that only take note of their arguments, so they come from the code that makes
    the real calls. Compiled code unboxes an array checking its item size only, so it also
    takes a float16 or bfloat16 array for its int16 or uint16 storage, without a view
    (:meth:`~adaptive_pool.executors.Executor.prepared`).

    With ``baseline`` (the same launch by :mod:`~adaptive_pool.cpu.baseline`'s kernel), a
    launch whose kernels are cold runs that while they compile in the background
    (:mod:`~adaptive_pool.cpu.tiers`).
    """
    if baseline is not None and tiers.MODE != "tuned":
        return tiers.launch(call, runs, like, baseline, skipna, _needs, _bind)
    if like is None:
        return partial(call, *runs)
    bound = []
    for run, args in zip(runs, tiers.noted(call, runs, like)):
        if args is not None and run.func in _CHUNK_FUNCTIONS:  # partial(chunk, 0)
            run = partial(calls.compiled(run.func, args).entry_point, 0)
        elif args is not None:  # partial(backend._launch, kernel, chunk)
            kernel, chunk = run.args
            entry = calls.compiled(kernel, args).entry_point
            run = partial(run.func.__self__._parallel, entry, calls.address(chunk, args))
        bound.append(run)
    return partial(call, *bound)


_CHUNK_FUNCTIONS = frozenset(kernels.CHUNKS.values())


def _needs(run) -> tuple:
    """The dispatchers a run calls: ``partial(chunk, 0)``, or ``partial(backend._launch,
    kernel, chunk)``."""
    return (run.func,) if run.func in _CHUNK_FUNCTIONS else run.args


def _scratch(n: int, dtype, keep: bool) -> tuple[Callable[[], np.ndarray], Callable]:
    """``(take, give)``: ``take()`` returns a scratch array of ``n`` elements for one call of a
    launch, ``give(a)`` hands it back when the call is done.

    Where ``keep`` (the small scratch of a launch on the calling thread, which a prepared call
    makes again and again), arrays handed back wait on a free list for the next call instead of
    being allocated again (an allocation is a tenth of a small call). ``list.pop`` and
    ``append`` are atomic, so calls from several threads, or a call reentered from a signal
    handler, each hold an array of their own.
    """
    if not keep:
        return partial(np.empty, n, dtype), _drop
    free = [np.empty(n, dtype)]

    def take() -> np.ndarray:
        try:
            return free.pop()
        except IndexError:  # every array is in a call: another of its own
            return np.empty(n, dtype)

    return take, free.append


def _drop(a: np.ndarray) -> None:
    """Hands a scratch array back to nobody."""


class CpuBackend:
    """Runs the executors' kernels on NumPy arrays."""

    name = "cpu"
    array_kind = "numpy.ndarray"

    def __init__(self) -> None:
        # numba's workqueue threading layer aborts the process when two Python threads enter a
        # parallel region at once. Launches are serialised until the first one has shown which
        # layer numba picked, and for good if it is workqueue.
        self._lock: threading.Lock | None = threading.Lock()
        self._layer_known = False
        self._runs: dict = {}

    # -- arrays ------------------------------------------------------------------------------
    def owns(self, a: object) -> bool:
        return isinstance(a, np.ndarray)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype, like: object = None) -> np.ndarray:
        return results.empty(shape, dtype)

    def zero(self, a: np.ndarray, stream: object = None) -> None:
        a[...] = 0

    def describe(self, a: np.ndarray) -> tuple[tuple[int, ...], np.dtype]:
        return a.shape, a.dtype

    def read_element(self, a: np.ndarray, pos: tuple[int, ...]) -> object:
        return a[pos].item()

    def view5(self, a: np.ndarray, storage, batched: bool, spatial: int) -> np.ndarray:
        """``a`` as its storage dtype with singleton N (unbatched) and leading spatial axes
        (D for 2-D, D and H for 1-D): a 5-D view."""
        if storage is not None and a.dtype != storage:
            a = a.view(storage)
        if not batched:
            a = a[np.newaxis]
        return a[_SINGLETONS[spatial]] if spatial < 3 else a

    @staticmethod
    def copies_x(xg, dims) -> bool:
        """Whether the NaN-skipping average backward reads a copy of ``x`` (geometry ``xg``)
        in C order: channels-last planes of :data:`_RELAYOUT_PLANE` positions or more, which
        read per plane would touch one element a cache line at a time."""
        return _channels_adjacent(xg, dims[1]) and np.prod(dims[2:5]) >= _RELAYOUT_PLANE

    dense_geometry = staticmethod(dense_geometry)

    def self_overlapping(self, a: np.ndarray) -> bool:
        """Whether two elements of ``a`` may share memory (conservative: sorted-stride test)."""
        if a.size == 0:
            return False  # NumPy gives empty arrays all-zero strides
        extent = a.itemsize
        for s, n in sorted((abs(s), n) for s, n in zip(a.strides, a.shape) if n > 1):
            if s < extent:
                return True
            extent = s * (n - 1) + extent
        return False

    def shares_memory(self, a: np.ndarray, b: np.ndarray) -> bool:
        if not np.may_share_memory(a, b):
            return False
        try:
            return bool(np.shares_memory(a, b, max_work=1_000_000))
        except np.exceptions.TooHardError:
            return True

    def is_writeable(self, a: np.ndarray) -> bool:
        return bool(a.flags.writeable)

    def writes_through(self, a: np.ndarray) -> bool:
        """Whether kernels can write ``a`` in place: :func:`flat_geometry` copies arrays whose
        strides are not whole elements (fields of packed records), so those need a temporary."""
        return a.size == 0 or not any(s % a.itemsize for s in a.strides)

    def copy_into(self, dst: np.ndarray, src: np.ndarray, stream: object = None) -> None:
        np.copyto(dst, src)

    def memory_available(self) -> int | None:
        return host_memory_available()

    # -- workspace ---------------------------------------------------------------------------
    def tables(self, tab: np.ndarray) -> np.ndarray:
        return tab

    def bind_workspace(self, tab: np.ndarray, workspace: object, size: int) -> np.ndarray:
        """Copy the window tables into a caller's ``uint8`` workspace; return the int64 view."""
        if not isinstance(workspace, np.ndarray):
            raise AdaptivePoolTypeError(
                f"workspace must be a numpy.ndarray of uint8 for the CPU backend, "
                f"got {type(workspace).__name__}",
                argument="workspace",
            )
        if workspace.dtype != np.uint8 or workspace.ndim != 1 or not workspace.flags.c_contiguous:
            raise AdaptivePoolTypeError(
                f"workspace must be a contiguous 1-D uint8 array, got dtype {workspace.dtype} "
                f"with shape {workspace.shape}",
                argument="workspace",
            )
        if workspace.nbytes < size:
            raise AdaptivePoolValueError(
                f"workspace has {workspace.nbytes} bytes; this executor needs {size}",
                argument="workspace",
            )
        if workspace.ctypes.data % 8:
            raise AdaptivePoolValueError(
                "workspace must be 8-byte aligned (allocate it with numpy.empty)",
                argument="workspace",
            )
        view = workspace[:size].view(np.int64)
        view[:] = tab
        return view

    # -- kernels -----------------------------------------------------------------------------
    # Each operator is a ``prepare_*`` method, which takes the arrays' geometries (from
    # :func:`flat_geometry`), the tables and the sizes and returns a launch of the flat arrays,
    # and a method that runs it once. The executors keep prepared launches for repeated calls.

    def _runner(self, kernel, work: int) -> tuple[Callable[..., object], bool]:
        """``(run, serial)``: ``run(*args)`` returns ``kernel(at, *args)`` (``at``: the address
        of its chunk function), whose last argument is the chunk count, which must be 1 where
        ``serial``.

        Kernels touching fewer than :data:`_SERIAL_WORK` elements run on the calling thread
        alone, as their chunk function (:data:`~adaptive_pool.cpu.kernels.CHUNKS`),
        ``partial(chunk, 0)``: waking the pool's sleeping threads costs more than it saves.
        Others are ``partial(self._launch, kernel, chunk)``. :func:`_bind` knows both forms.
        """
        serial = _serial(work)
        run = self._runs.get((kernel, serial))
        if run is None:  # (kept: tiers tell launches apart by their runs)
            chunk = kernels.CHUNKS[kernel]
            run = partial(chunk, 0) if serial else partial(self._launch, kernel, chunk)
            self._runs[(kernel, serial)] = run
        return run, serial

    def _launch(self, kernel, chunk, *args):
        """``kernel(address of chunk, *args)``, a parallel region."""
        return self._parallel(kernel, calls.address(chunk, args), *args)

    def _parallel(self, kernel, at, *args):
        """``kernel(at, *args)``, serialised under the workqueue threading layer."""
        lock = self._lock
        if lock is None:
            return kernel(at, *args)
        with lock:
            result = kernel(at, *args)
            if not self._layer_known:
                self._layer_known = True
                if numba.threading_layer() != "workqueue":
                    self._lock = None
            return result

    @staticmethod
    def _rows_per_item(slabs: int, rows: int, threads: int) -> int:
        """Split each slab's rows into blocks so that there are work items for every thread
        (``threads``: :func:`_launch_threads`)."""
        target = 8 * threads
        if slabs >= target:
            return max(rows, 1)
        blocks = min(rows, -(-target // max(slabs, 1)))
        return -(-rows // max(blocks, 1))

    @staticmethod
    def _chunks(items: int, serial: bool = False) -> int:
        """How many contiguous ranges to cut ``items`` work items into
        (:data:`_CHUNKS_PER_THREAD` a thread)."""
        return 1 if serial else max(1, min(items, _CHUNKS_PER_THREAD * _threads()))

    def avg_pool(
        self, x, y, tab, dims, stream=None, skipna=False, sized_windows=True, memo=None
    ) -> None:
        """The average forward in the contract's lane order; ``skipna`` averages the non-NaN
        elements of each window (a specialisation of its own of the same kernels). Without
        ``sized_windows`` the tables' windows are not those of the sizes (a Dask block's): only
        the loop orders that read them serve. ``memo``: see :func:`_memoised`."""
        xf, xg = flat_geometry(x)
        yf, yg = flat_geometry(y)
        _memoised(memo, ("avg", xg, yg, x.dtype, skipna, sized_windows), lambda: (
            self.prepare_avg_pool(xg, yg, tab, dims, x.dtype, skipna, sized_windows)
        ))(xf, yf)

    def prepare_avg_pool(
        self, xg, yg, tab, dims, storage, skipna=False, sized_windows=True, like=None
    ):
        """:meth:`avg_pool` as ``launch(xf, yf)`` for storage dtype ``storage`` (``like``: see
        :func:`_bind`)."""
        skip = kernels.SKIPNA if skipna else kernels.PLAIN
        if _tiny(dims, like):
            args = (like[0], xg, like[1], yg, tab, dims, skip)
            return tiny.launch(tiny.avg_pool, args, like)
        dims = _samples_as_channels(dims, xg, yg)
        work = _touched(dims)
        order = _FORCE_ORDER or self._avg_order(storage, xg, dims, sized_windows, skipna)
        merged = (None if _FORCE_ORDER or order in ("runs", "channels")
                  else _window_runs(tab, dims, (yg,), (xg,)))
        if merged is not None and self._avg_order(storage, xg, merged[0], True, skipna) == "runs":
            dims, tab = merged  # (the baseline's too: the same problem)
            order = "runs"
        n, c, d, h, w, od, oh, ow = dims
        rows = n * c * od * oh
        kernel = getattr(kernels, "avg_pool_" + order)
        run, serial = self._runner(kernel, work)

        def base(xf, yf):
            baseline.avg_pool(xf, xg, yf, yg, tab, dims, skip)

        if order == "runs":
            nch = self._chunks(rows, serial)
            prefetch = _prefetched(dims, storage.itemsize, _PREFETCH_CACHED)

            def call(run, xf, yf):
                run(xf, xg, yf, yg, tab, dims, skip, prefetch, nch)
        elif order == "channels":
            block = _channel_block(c, n * od * oh, _launch_threads(work))
            nch = self._chunks(n * -(-c // block) * od * oh, serial)

            def call(run, xf, yf):
                run(xf, xg, yf, yg, tab, dims, block, skip, nch)
        elif order == "lanewise":
            limit = _copied_band(dims, storage)
            block = _lanewise_block(c, d * h * w, xg, storage, threads=_launch_threads(work),
                                    window=_window_bound(dims))
            if block > kernels.LANES:
                limit = max(limit, block * d * h * w)  # (copied whole)
            # chunks of whole blocks of planes where there is one for every thread: a block
            # copied whole serves all its output rows, and each chunk sets up its scratch (a
            # chunk an output row: 4x16x28x28 -> 7x7 float32 69 -> 34 us, bfloat16 80 -> 35,
            # float64, read in place, 52 -> 42)
            blocks = n * -(-c // block)
            nch = self._chunks(blocks if blocks >= _threads() else blocks * od * oh, serial)

            def call(run, xf, yf):
                run(xf, xg, yf, yg, tab, dims, limit, block, skip, nch)
        else:
            cdims, ctab = _plane_rows(tab, dims, xg, yg) if order == "columns" else (dims, tab)
            nch = self._chunks(n * c * cdims[5] * cdims[6], serial)

            def call(run, xf, yf):
                run(xf, xg, yf, yg, ctab, cdims, skip, nch)

        return _bind(call, (run,), like, base, skipna)

    @staticmethod
    def _avg_order(storage, xg, dims, sized_windows=True, skipna=False) -> str:
        """Which loop order of the average forward serves ``dims`` for storage dtype
        ``storage`` (all give the same bits); "columns" and "runs" take their windows from the
        sizes, not the tables."""
        n, c, d, h, w, od, oh, ow = dims
        itemsize = storage.itemsize
        longest = _window_bound(dims)
        if _channels_adjacent(xg, c) and longest < 1 << 31:  # (int32 counts)
            return "channels"
        # rows and runs summed straight from storage (16-bit ones decoded in registers); the
        # runs order's 16-bit runs need no decoded copy of the window then
        rows_in_place = vector_runs(storage)
        in_place = not skipna and rows_in_place
        # rows of the windows of one output row, which a 16-bit input decodes before summing
        band = (-(-d // od) + 1) * (-(-h // oh) + 1) * w
        # larger windows of narrow rows too: the direct order's masked load a row is short
        # work there (2x8x44x43x40 -> 1x5x20, rows of 2, 757 elements a window: float32 3.9x,
        # float64 3.9x; 4x16x1024x64 -> 2x16 float32 1.9x, float64 0.85-0.95x; 2x8x32x32x32
        # -> 1x1x8 float32 2.1x, float64 1.4x)
        narrow = c >= kernels.LANES and w < _ROWS_WIDTH * ow
        few = longest <= _FEW_PLANES_WINDOW or _longest(w, ow) <= _FEW_PLANES_ROW
        lanewise = (
            (c >= kernels.LANES or (c >= 3 and few))
            and (d * h * w <= _LANEWISE_WINDOW * od * oh * ow or narrow)
            and (itemsize != 2 or kernels.LANES * band <= _DECODED_BAND)
            and longest < 1 << 31  # int32 counts
        )
        # windows one column wide, (1, None): a row of columns is one vector, too short in
        # rows narrower than _COLUMNS_ROW (1.2-5x slower than 8 planes side by side on rows of
        # 2-6), but where windows are also one row tall (the identity, VGG's 7x7 -> 7x7, or
        # deep in d only) and x's rows follow each other, each plane is one row there
        # (_plane_rows):
        # 32x512x7x7 -> 7x7 3.7-4.6x (skipna 4.8-5.5x), 16x256x28x3 -> 28x3 6-7x, 64x256x3x3
        # -> 3x3 1.1-1.8x, 1x32x17x6x4 -> 19x6x4 1.7-2.9x in every dtype; not planes of 2 rows
        # or 2 columns (0.5-1.0x), nor 1-D rows (1024x5 -> 5 0.75x)
        plane_rows = h > 2 and w > 2 and _planes_are_rows(dims, xg)
        if (sized_windows and ow == w and w > 1
                and (w >= _COLUMNS_ROW[itemsize] or not lanewise or plane_rows)
                and (not skipna or _longest(d, od) * _longest(h, oh) < 1 << 31)):  # int32 counts
            return "columns"
        row_run = _ROW_RUN_LANES[itemsize] if c >= kernels.LANES and lanewise else _ROW_RUN
        rows = row_run * ow <= w and _windows_along_rows(dims, xg)  # (1-D problems)
        if (
            sized_windows
            and (itemsize != 2 or in_place or (w if rows else d * h * w) <= _DECODED_BAND)
            and (_windows_are_runs(dims, xg) or rows)
        ):
            return "runs"
        # Where 8 planes side by side also serve, they took 0.35-0.87x the time of the rows
        # summed in registers with skipna (every dtype) while each row took all 32 lanes (now
        # its registers only: _SKIPNA_ROWS), and on Zen 4 (SPLIT_512) 0.38-1.02x
        # in float32 and 16 bits, in float64 0.34-0.95x for small windows of small planes
        # (_PLANES_FIRST_WINDOW) but up to 2.4x for larger ones; Zen 5 took the rows in
        # 0.4-1.0x the planes' time in float32 (_ROWS_WIDTH; performance-kernels.md,
        # 2026-12-04), but 1.2-2.6x in 16 bits, decoded row by row (us, bfloat16, direct /
        # planes: 32x256x56x56 -> 7x7 5065 / 2535, 32x256x1024 -> 64 1389 / 621, 16x64x64x64
        # -> 8x8 817 / 413, 8x64x112x112 -> 7x7 508 / 427; float16 the same; 2026-12-07)
        # float64 NaN-skipping windows of wide rows read from memory: row by row, where 8 planes
        # side by side and the window-by-window order took 1.1-1.6x its time (us, Zen 5,
        # 8x64x112x112 -> 7x7 lanewise 2088 / 1279, -> 4x4 direct 1625 / 1157, 64x512x32x32 ->
        # 2x2 11258 / 8952, 2x16x32x64x64 -> 8x4x4 2104 / 1671); in the cache it lost (4x8x64x64
        # -> 4x4 24 / 33), as did plain sums (direct 0.6-0.85x its time) and float32 (8 planes
        # side by side, 0.45-0.9x)
        from_memory = n * c * d * h * w * itemsize > _CACHED_INPUT
        if (skipna and itemsize == 8 and NATIVE_MASKS and xg[5] == 1
                and w >= _ROWWISE_WIDTH * ow and from_memory):
            return "rowwise"
        small = longest <= _PLANES_FIRST_WINDOW and d * h * w <= _PLANES_FIRST_PLANE
        # NaN-skipping windows one plane deep whose rows fill a register of lanes (float64 8
        # wide on average, float32 16, or 8 from memory): rows in registers (_SKIPNA_ROWS)
        rows_skipna = (skipna and od == d and not SPLIT_512 and itemsize in _SKIPNA_ROWS
                       and w >= _SKIPNA_ROWS[itemsize][from_memory] * ow)
        planes_first = lanewise and (
            (skipna and not rows_skipna) or itemsize == 2
            or (SPLIT_512 and (itemsize != 8 or small))
        )
        # windows deeper than one plane: their bands do not follow each other for the direct
        # order's prefetch stream (2x64x32x224x224 -> 2x14x14 float32 73 ms, row by row 42),
        # but where the 8-plane order would read float64 planes in place, gathering, rows of
        # 16 or more in registers serve better (us, Zen 5, direct / 8 planes: 2x16x32x64x64
        # -> 8x4x4 878 / 1134, 4x16x16x64x64 -> 4x4x4 860 / 1051, 2x64x16x64x64 -> 4x4x4 2777
        # / 3446, 2x16x32x128x128 -> 8x8x8 7429 / 8051); rows of 8 no longer (4x64x16x56x56 ->
        # 4x7x7 6269 / 2982, -> 2x7x7 7219 / 3192, 4x32x16x64x64 -> 4x8x8 4141 / 2291,
        # 1x64x32x64x64 -> 4x8x8 4734 / 2662; on 2026-12-06, before the 8-plane order's later
        # changes, 7.1 against 9.1-9.5 ms)
        if (
            NATIVE_MASKS and rows_in_place and not planes_first and xg[5] == 1
            and _ROWS_WIDTH * ow <= w and _longest(w, ow) <= kernels.SUM_LANES
            and (od == d or (itemsize == 8 and 2 * _ROWS_WIDTH * ow <= w
                             and kernels.LANES * d * h * w > _copied_band(dims, storage)
                             and _lanewise_block(c, d * h * w, xg, storage) == kernels.LANES))
        ):
            return "direct"  # (rows summed in registers, lanes.rows_sum)
        if lanewise:
            return "lanewise"
        if w >= _ROWWISE_WIDTH * ow or (itemsize == 2 and band > _DECODED_BAND):
            # (see _ROWWISE_CACHED)
            if SPLIT_512 and itemsize == 4 and (
                    n * c * d * h * w * itemsize <= _ROWWISE_CACHED * _CACHED_INPUT):
                return "direct"
            if (itemsize == 2 or (SPLIT_512 and itemsize == 4)) and c >= kernels.LANES:
                return "lanewise"
            return "rowwise"  # (a long 16-bit band: row by row, not decoded whole)
        return "direct"

    def avg_pool_backward(
        self, go, gi, tab, dims, stream=None, skipna=False, x=None, memo=None
    ) -> None:
        """The average backward gather; with ``skipna`` (``x``: the forward's input, its 5-D
        storage view) shares divide by each window's count of non-NaN elements of ``x`` and NaN
        inputs get +0.0. ``memo``: see :func:`_memoised`."""
        gf, gg = flat_geometry(go)
        if_, ig = flat_geometry(gi)
        xf, xg = flat_geometry(x) if skipna else (None, None)
        if skipna and self.copies_x(xg, dims):
            c_order = results.empty(x.shape, x.dtype)  # (a large one: a cached block)
            relayout.channels_first(xf, xg, c_order.reshape(-1), dims)
            xf, xg = flat_geometry(c_order)
        _memoised(memo, ("avgb", gg, ig, xg, go.dtype), lambda: (
            self.prepare_avg_pool_backward(gg, ig, tab, dims, xg, itemsize=go.dtype.itemsize)
        ))(gf, if_, xf)

    @staticmethod
    def _lanes(dims, itemsize: int, threads: int, short: bool = False) -> bool:
        """Whether the average backward takes the 8-planes kernel: small planes of many
        channels (at most :data:`_LANES_PLANE` elements), or of 2 to 7
        (:data:`_FEW_LANES_PLANE`); larger planes of many channels where windows are short
        (``short``: along rows, as the caller found; else fewer than :data:`_LANES_WINDOW`
        elements an output, or in float32 and 16 bits overlapping along h,
        :data:`_LANES_OVERLAP_PLANE`), their sums fit :data:`_LANES_SCRATCH` and every thread
        (``threads``: :func:`_launch_threads`) has a block of planes."""
        n, c, d, h, w, _, oh, ow = dims
        if h * w <= _LANES_PLANE:
            return c >= kernels.LANES or (c >= 2 and h * w <= _FEW_LANES_PLANE)
        short = short or h * w < _LANES_WINDOW * oh * ow or (
            itemsize <= 4 and h * w <= _LANES_OVERLAP_PLANE and h % oh != 0
            and _LANES_OVERLAP_ROWS * oh >= h)
        sums = max(h, oh) * w * kernels.LANES * max(itemsize, 4)
        return (short and c >= kernels.LANES and sums * threads <= _LANES_SCRATCH
                and n * -(-c // kernels.LANES) * d >= threads)

    @classmethod
    def _short_rows(cls, dims, itemsize: int, skipna: bool, threads: int) -> bool:
        """Whether windows along rows are short enough on average for the average backward to
        take 8 planes side by side (of 8 planes or more) rather than a row of windows at a
        time (:data:`_ROW_WINDOW_LANES`)."""
        c, w, ow = dims[1], dims[4], dims[7]
        limit = _ROW_WINDOW_LANES_SKIPNA if skipna else _ROW_WINDOW_LANES[itemsize]
        return (c >= kernels.LANES and w < limit * ow
                and cls._lanes(dims, itemsize, threads, short=True))

    def prepare_avg_pool_backward(self, gg, ig, tab, dims, xg=None, like=None, itemsize=4):
        """:meth:`avg_pool_backward` as ``launch(gf, if_, xf)``: NaN-skipping where ``xg`` (the
        geometry of ``xf``) is given, else ``xf`` is not read (``like``: see :func:`_bind`;
        ``itemsize``: the arrays' element size).

        Windows one column wide that tile d and h ((1, None), (1, None, None), ...) an output
        row at a time; windows that are runs of memory (global pooling, whole rows) one window
        at a time, and windows along rows of unit stride (1-D problems) a row at a time, as
        are windows of whole rows over h or of whole planes over d ((k, 1), (k, 1, 1):
        :func:`_window_runs`) along their merged axes; 8
        planes side by side for small planes of many channels, else row blocks of one plane.
        NaN-skipping over windows one d deep (every 1-D and 2-D problem), or over deeper
        windows of d in the row gather whose items are whole planes, each work item of the
        gather counts its windows itself, just before it reads the same part of ``x`` again;
        other windows are counted first, in a pass of their own (one int64 per output cell).
        """
        reads_x = xg is not None
        if _tiny(dims, like):
            skip = kernels.SKIPNA if reads_x else kernels.PLAIN
            args = (like[0], gg, like[1], ig, tab, dims, like[2 if reads_x else 0],
                    xg if reads_x else gg, skip)
            return tiny.launch(tiny.avg_pool_backward, args, like)
        geometries = (ig, xg) if reads_x else (ig,)
        dims = _samples_as_channels(dims, gg, *geometries)
        n, c, d, h, w, od, oh, ow = dims
        # elements only: with rows counted, rows of 4 went to two threads, where they took as
        # long (bfloat16 1.57x as long)
        work = _touched(dims, row_work=0)

        def base(gf, if_, xf):
            if reads_x:
                baseline.avg_pool_backward(gf, gg, if_, ig, tab, dims, xf, xg, kernels.SKIPNA)
            else:
                baseline.avg_pool_backward(gf, gg, if_, ig, tab, dims, gf, gg, kernels.PLAIN)

        # the columns and runs kernels: where x is not read, the gradients stand in for it
        skip, xg_ = (kernels.SKIPNA, xg) if reads_x else (kernels.PLAIN, gg)
        # x read from memory (x and the result), where kernels that otherwise do not prefetch it
        streamed = reads_x and _from_memory(2 * n * c * d * h * w * itemsize)
        columns = _column_problem(tab, dims, gg, geometries)
        if columns is not None:
            cdims, ctab = columns
            run, serial = self._runner(kernels.avg_pool_backward_columns, work)
            nch = self._chunks(n * c * cdims[5] * cdims[6], serial)

            def call(run, gf, if_, xf):
                run(gf, gg, if_, ig, ctab, cdims, xf if reads_x else gf, xg_, skip, streamed,
                    nch)

            return _bind(call, (run,), like, base, reads_x)
        tiled = _tiled_rows(tab, dims, geometries)
        threads = _launch_threads(work)
        short = tiled and self._short_rows(dims, itemsize, reads_x, threads)  # (8 planes)
        runs = _run_windows(tab, dims, *geometries) or (tiled and not short)
        merged = None if runs else _window_runs(tab, dims, (gg,), geometries)
        if merged is not None and _tiled_rows(merged[1], merged[0], geometries) and (
                itemsize != 2 or merged[0][4] <= _DECODED_RUN_ROW):
            dims, tab = merged  # (the baseline's too: the same problem)
            n, c, d, h, w, od, oh, ow = dims
            runs = True
        if runs:
            run, serial = self._runner(kernels.avg_pool_backward_runs, work)
            nch = self._chunks(n * c * od * oh, serial)
            # (an item's run, as the kernel takes it: its window, or its row of windows)
            item = (d // od) * (h // oh) * w if ow == 1 else w
            anywhere = _PREFETCH_CACHED and (item < _PREFETCHED_SHORT_RUN or itemsize == 2)
            prefetch = reads_x and _prefetched(dims, itemsize, anywhere, narrow=_PREFETCH_CACHED)

            def call(run, gf, if_, xf):
                run(gf, gg, if_, ig, tab, dims, xf if reads_x else gf, xg_, skip, prefetch, nch)

            return _bind(call, (run,), like, base, reads_x)
        if not reads_x and _channel_blocks(gg, dims):
            block = _backward_block(c, n * d, threads)
            run, serial = self._runner(kernels.avg_pool_backward_block, work)
            nch = self._chunks(n * -(-c // block) * d, serial)

            def call(run, gf, if_, xf):
                run(gf, gg, if_, ig, tab, dims, block, nch)

            return _bind(call, (run,), like, base, reads_x)
        # the gathers count windows one d deep themselves (``_one_deep``: a Dask block's tables
        # may have od == d with deeper windows, which keep their global extent)
        counting = reads_x and od == d and _one_deep(tab, dims)
        if short or self._lanes(dims, itemsize, threads):
            # and deeper windows of d where the kernel counts from bit masks: rows of at most 64
            # at unit stride, planes that are runs in x and in the result (float32
            # 8x128x8x14x14 -> 3x5x5 took a count_valid pass first)
            counting = counting or (reads_x and od < d and w <= 64
                                    and all(g[5] == 1 and g[4] == w for g in (ig, xg)))
            run, serial = self._runner(kernels.avg_pool_backward_lanes, work)
            nch = self._chunks(n * -(-c // kernels.LANES) * d, serial)
            # 3-D slabs of 32- and 64-bit x read from memory: the next item's prefetched (float32
            # 16x128x8x14x14 and 32x128 -> 8x5x5 1.23-1.28x, float64 1.12x; 8x128 from the
            # cache 0.92-0.95x, bfloat16 0.95-0.97x: not prefetched; Zen 5, A/B on the same
            # arrays)
            prefetch = streamed and d > 1 and itemsize >= 4

            def gather(run, gf, if_, xf, xg, cnt, skip):
                run(gf, gg, if_, ig, tab, dims, xf, xg, cnt, skip, prefetch, nch)
        else:
            slabs, rows = n * c * d, h
            rpi = self._rows_per_item(slabs, rows, threads)
            # with whole-plane items, also deeper windows of d, each output plane counted once
            # (float32 4x64x16x56x56 -> 4x7x7 9.6-9.7 -> 8.2-8.5 ms)
            counting = counting or (reads_x and od < d and rpi == h)
            if counting and od == d and h % oh == 0:
                # items of one output row's band: each counts its windows just before it
                # stores their rows, which then read x again from L1 (float32 32x256x56x56
                # -> 7x7 10.3 -> 7.3 ms); not where windows overlap, whose shared rows two
                # items would count (16x64x64x64 -> 9x11 0.78x)
                rpi = min(rpi, h // oh)
            run, serial = self._runner(kernels.avg_pool_backward, work)
            nch = self._chunks(slabs * -(-rows // rpi), serial)

            def gather(run, gf, if_, xf, xg, cnt, skip):
                run(gf, gg, if_, ig, tab, dims, rpi, xf, xg, cnt, skip, nch)

        if not reads_x:  # x and counts are not read

            def call(run, gf, if_, xf):
                gather(run, gf, if_, gf, gg, _NO_COUNTS, kernels.PLAIN)

            return _bind(call, (run,), like, base, reads_x)
        if counting:

            def call(run, gf, if_, xf):
                gather(run, gf, if_, xf, xg, _NO_COUNTS, kernels.SKIPNA)

            return _bind(call, (run,), like, base, reads_x)
        count, cserial = self._runner(kernels.count_valid, work)
        # 8 planes side by side where rows fit a 64-bit mask and windows span few rows (a
        # mask per row costs more than adding rows into column counts where they are many:
        # 8x128x8x14x14 -> 3x5x5, 9 rows, 2.1x -> 1.65x the plain call; 49 and 80 rows slower)
        planes = (c >= kernels.LANES and xg[5] == 1 and w <= 64 and d * h * w < 1 << 31
                  and -(-d // od) * -(-h // oh) <= 16)
        cch = self._chunks(n * (-(-c // kernels.LANES) if planes else c) * od * oh, cserial)
        take, give = _scratch(n * c * od * oh * ow, np.int64, like is not None and cserial)

        def call(count, run, gf, if_, xf):
            cnt = take()
            count(xf, xg, cnt, tab, dims, planes, cch)
            gather(run, gf, if_, xf, xg, cnt, kernels.SKIPNA)
            give(cnt)

        return _bind(call, (count, run), like, base, reads_x)

    def max_pool(self, x, y, ind, tab, dims, stream=None, skipna=False, memo=None) -> None:
        xf, xg = flat_geometry(x)
        yf, yg = flat_geometry(y)
        jf, jg = flat_geometry(ind)
        _memoised(memo, ("max", xg, yg, jg, x.dtype, ind.dtype, skipna), lambda: (
            self.prepare_max_pool(xg, yg, jg, tab, dims, skipna, storage=x.dtype)
        ))(xf, yf, jf)

    def prepare_max_pool(self, xg, yg, jg, tab, dims, skipna=False, like=None, storage=None):
        """:meth:`max_pool` as ``launch(xf, yf, jf)`` (``like``: see :func:`_bind`;
        ``storage``: the input's storage dtype where ``like`` does not say it)."""
        skip = kernels.SKIPNA if skipna else kernels.PLAIN
        if _tiny(dims, like):
            args = (like[0], xg, like[1], yg, like[2], jg, tab, dims, skip)
            return tiny.launch(tiny.max_pool, args, like)
        storage = like[0].dtype if like is not None else storage
        itemsize = storage.itemsize
        dims, tab = _identity_rows(tab, dims, xg, yg, jg)
        n, c, d, h, w, od, oh, ow = dims

        def base(xf, yf, jf):
            baseline.max_pool(xf, xg, yf, yg, jf, jg, tab, dims, skip)

        # (not upsampling rows: windows of 1-2 elements, each a call, ran 1.1-2x slower)
        work = _touched(dims)
        if _channels_adjacent(xg, c) and d * h * w < 1 << 31:  # (int32 indices)
            run, serial = self._runner(kernels.max_pool_channels, work)
            block = min(c, _MAX_CHANNEL_STATE // (itemsize + 4))
            nch = self._chunks(n * -(-c // block) * od * oh, serial)
            prefetch = _from_memory(n * c * d * h * w * itemsize)

            def call(run, xf, yf, jf):
                run(xf, xg, yf, yg, jf, jg, tab, dims, block, skip, prefetch, nch)

            return _bind(call, (run,), like, base, skipna)
        runs = _run_windows(tab, dims, xg) or (ow <= w and _row_windows(tab, dims, xg))
        pdims = _samples_as_channels(dims, xg, yg, jg)
        threads = _launch_threads(work)
        block = _lanewise_block(pdims[1], d * h * w, xg, storage,
                                _ROW_WIDE_MIN if runs or d * h * w <= _MAX_FEW_PLANE
                                else _WIDE_MIN, threads, _window_bound(dims))
        # windows that are runs, a vectorised pass each, unless short enough that a pass costs
        # more to set up than 16 planes or more side by side (below) take to compare (each
        # axis of a run's window is whole or one element in d and h)
        if runs and block > kernels.LANES:
            length = 1 if (od, oh, ow) == (d, h, w) else (d // od) * (h // oh) * _longest(w, ow)
            runs = not _side_by_side(length, od * oh * ow == 1, block, itemsize,
                                     n * c * d * h * w * itemsize)
        # windows of whole rows over h or d as runs (_window_runs): float32 1.3-2.5x against
        # both orders below; other dtypes only against row blocks (against 8 planes side by
        # side 0.8-1.3x: 8x256x10x50 -> (6, 1) float64 0.81x, float16 0.85x). Not upsampling
        # (windows of one row, two a row: float32 1.0x, bfloat16 0.7x on 8x64x10x50 -> (20, 1))
        wide = block > kernels.LANES and storage != np.float32
        merged = (None if runs or oh > h or od > d or wide
                  else _window_runs(tab, dims, (yg, jg), (xg,)))
        if merged is not None and _row_windows(merged[1], merged[0], xg):
            dims, tab = merged  # (the baseline's too: the same problem)
            n, c, d, h, w, od, oh, ow = dims
            runs = True
        if runs and d * h * w < 1 << 31:  # (int32 positions)
            run, serial = self._runner(kernels.max_pool_runs, work)
            nch = self._chunks(n * c * od * oh, serial)

            def call(run, xf, yf, jf):
                run(xf, xg, yf, yg, jf, jg, tab, dims, skip, nch)

            return _bind(call, (run,), like, base, skipna)
        # small planes of unit-stride rows: blocks of them copied side by side and taken as
        # the channels of a channels-last input (as the average's 8-plane order does)
        if block > kernels.LANES:
            run, serial = self._runner(kernels.max_pool_channels, work)
            blocks = pdims[0] * -(-pdims[1] // block)
            nch = self._chunks(blocks if blocks >= _threads() else blocks * od * oh, serial)

            def call(run, xf, yf, jf):
                run(xf, xg, yf, yg, jf, jg, tab, pdims, block, skip, False, nch)

            return _bind(call, (run,), like, base, skipna)
        # blocks of output rows whose input rows (about rpi * h / oh of them) fit _MAX_BLOCK
        rpi = min(self._rows_per_item(n * c * od, oh, threads), max(1, _MAX_BLOCK // w * oh // h))
        # input rows of the largest block; one output row's window may be taken in parts
        _, _, _, _, sh, eh, _, _, _, _, _, _ = windows.axes_offsets(dims)
        first = np.arange(0, oh, rpi)
        rows = int((tab[eh + np.minimum(oh, first + rpi) - 1] - tab[sh + first]).max())
        part = rows if rpi > 1 else max(1, min(rows, _MAX_BLOCK // w))
        run, serial = self._runner(kernels.max_pool, work)
        nch = self._chunks(n * c * od * -(-oh // rpi), serial)

        def call(run, xf, yf, jf):
            run(xf, xg, yf, yg, jf, jg, tab, dims, rpi, part, _TRACKED_WINDOW, skip, nch)

        return _bind(call, (run,), like, base, skipna)

    def max_pool_backward(
        self, go, ind, gi, tab, dims, stream=None, fresh=False, memo=None
    ) -> int:
        """Check the indices and run the max backward; return the flat position (C order of
        ``ind``) of the first index outside its window, or -1.

        Into a result whose planes are dense and small enough to keep one plane of
        accumulators per chunk, the sparse kernel checks each plane's indices, then writes its
        gradients into the zeroed plane (small planes that follow each other in memory a group
        at a time). A result that is not ``fresh`` (the caller's, which a
        bad index must leave untouched; the call's own may be left partly written) is checked
        whole by the same kernel first. Other results take the gather, once every index
        has passed :func:`~adaptive_pool.cpu.kernels.first_bad_index`.
        """
        gf, gg = flat_geometry(go)
        jf, jg = flat_geometry(ind)
        if_, ig = flat_geometry(gi)
        return _memoised(memo, ("maxb", gg, jg, ig, go.dtype, ind.dtype, fresh), lambda: (
            self.prepare_max_pool_backward(gg, jg, ig, tab, dims, fresh,
                                           itemsize=go.dtype.itemsize)
        ))(gf, jf, if_)

    def prepare_max_pool_backward(
        self, gg, jg, ig, tab, dims, fresh=False, like=None, itemsize=4
    ):
        """:meth:`max_pool_backward` as ``launch(gf, jf, if_)``, which returns what it does
        (``like``: see :func:`_bind`; ``itemsize``: the result's element size)."""
        if _tiny(dims, like):
            args = (like[0], gg, like[1], jg, like[2], ig, tab, dims)
            return tiny.launch(tiny.max_pool_backward, args, like)
        n, c, d, h, w, od, oh, ow = dims
        planes, plane = n * c, d * h * w

        kernel = (baseline.max_pool_backward if plane <= baseline.SUMMED_PLANE
                  else baseline.max_pool_backward_gather)

        def base(gf, jf, if_):
            return kernel(gf, gg, jf, jg, if_, ig, tab, dims)

        # (each chunk keeps a plane of sums)
        sparse = (plane <= _SPARSE_PLANE and plane * self._chunks(planes) <= _SPARSE_SCRATCH
                  and od * oh * ow <= _SPARSE_OUTPUTS)
        # dense planes: an element's address is its plane's plus its flat index
        if sparse and _c_order(ig[3:], (d, h, w)):
            m = od * oh * ow
            # planes that follow each other in the result are taken many at a time, their
            # gradients and indices copied plane after plane where they do not follow too
            # (channels-last gradients: 64x512x14x14 -> 5x5 1.2-1.35x against one plane at a time)
            disjoint = _disjoint(tab, dims)
            group = (_sparse_group(m, plane, itemsize, disjoint)
                     if _c_order(ig[2:], (c, d, h, w)) else 1)
            lo, nn = kernels.window_bounds(tab, dims, group)
            check, cserial = self._runner(kernels.max_pool_backward_sparse, planes * m)
            write, serial = self._runner(kernels.max_pool_backward_sparse,
                                         _sparse_work(planes, m, plane, itemsize))
            cch, nch = self._chunks(planes, cserial), self._chunks(planes, serial)
            take, give = _scratch(max(cch, nch), np.int64, like is not None and serial)

            def call(check, write, gf, jf, if_):
                bad = take()
                if not fresh:
                    first = check(gf, gg, jf, jg, if_, ig, dims, lo, nn, group, bad, False,
                                  disjoint, cch)
                    if first >= 0:
                        give(bad)
                        return first
                first = write(gf, gg, jf, jg, if_, ig, dims, lo, nn, group, bad, True, disjoint,
                              nch)
                give(bad)
                return first

            return _bind(call, (check, write), like, base)
        out_rows = planes * od * oh
        check, cserial = self._runner(kernels.first_bad_index, out_rows * ow)
        cch = self._chunks(out_rows, cserial)
        slabs, rows = planes * d, h
        work = _touched(dims)
        rpi = self._rows_per_item(slabs, rows, _launch_threads(work))
        run, serial = self._runner(kernels.max_pool_backward, work)
        nch = self._chunks(slabs * -(-rows // rpi), serial)

        def call(check, run, gf, jf, if_):
            first = check(jf, jg, tab, dims, np.empty(out_rows, np.int64), cch)
            if first < 0:
                run(gf, gg, jf, jg, if_, ig, tab, dims, rpi, nch)
            return first

        return _bind(call, (check, run), like, base)


def _copied_band(dims, storage) -> int:
    """Elements of a block of planes that the 8-plane average forward copies whole (float64
    ones larger than that it reads in place)."""
    if storage.itemsize != 8:
        return _DECODED_BAND
    n, c, d, h, w = dims[:5]
    return _WHOLE_FLOAT64_STREAMED if n * c * d * h * w * 8 > _STREAMED_INPUT else _WHOLE_FLOAT64


def _lanewise_block(
    c: int, plane: int, xg, storage, least: int | None = None, threads: int | None = None,
    window: int = 0,
) -> int:
    """Planes a work item of the forwards of small C-order planes takes (the average's 8-plane
    order, the max on the channels-last kernel): from ``least`` (:data:`_WIDE_MIN`) to
    :data:`_WIDE_BLOCK` (a multiple of ``LANES``) where their unit-stride rows are copied whole
    into :data:`_WIDE_BAND` elements, side by side, and taken as the channels of a
    channels-last input, so that a window's bookkeeping serves them all; else ``LANES`` (the
    max: none). ``threads``: :func:`_launch_threads`, by default the pool's; ``window``: a
    bound on a window's elements (:data:`_SERIAL_FLOAT64`)."""
    lanes = kernels.LANES
    # a block for every thread at least: each copies its planes once
    threads = _threads() if threads is None else threads
    large = storage.itemsize == 8 and threads == 1 and window > _SERIAL_FLOAT64_WINDOW
    wide = _SERIAL_FLOAT64 if large else _WIDE_BLOCK
    block = min(wide, lanes * -(-c // (lanes * threads)),
                _WIDE_BAND // plane // lanes * lanes)
    least = _WIDE_MIN if least is None else least
    return block if block >= least and xg[5] == 1 and vector_runs(storage) else lanes


def _side_by_side(run: int, one: bool, block: int, itemsize: int, nbytes: int) -> bool:
    """Whether the max forward compares windows that are runs of ``run`` elements (``one`` a
    plane, or several) of an input of ``nbytes`` in blocks of ``block`` planes side by side
    rather than one vectorised pass each (:data:`_MAX_ROW_RUN` and the limits after it)."""
    if block < _MAX_ROW_MANY:  # (windows of one element: the runs kernel's copy, 1.1-1.4x)
        return 1 < run <= _MAX_ROW_RUN_FEW[itemsize] and not one
    if one and (itemsize == 2 or nbytes <= _MAX_ONE_RUN_CACHED * _CACHED_INPUT):
        return run <= (_MAX_ONE_RUN_16 if itemsize == 2 else _MAX_ONE_RUN)
    return run <= (_MAX_ROW_RUN_16 if itemsize == 2 else _MAX_ROW_RUN)


def _samples_as_channels(dims, *geometries):
    """``dims`` with the samples taken as more channels, ``(1, n * c, ...)``, where every array
    has its samples' planes right after each other's (stride of n = c * stride of c: C order):
    the average's kernels choose by the channels (8 planes side by side from 8 on), and the
    planes of the next sample serve as well (float32 8x1x64x256x256 -> 16x64x64 17.9 -> 7.8
    ms, float64 34 -> 19, bit for bit: each plane's sums are its own)."""
    n, c = dims[:2]
    if n == 1 or any(g[1] != c * g[2] for g in geometries):
        return dims
    return (1, n * c) + tuple(dims[2:])


def _memoised(memo: dict | None, key: tuple, prepare: Callable[[], Callable]) -> Callable:
    """``memo[key]``, ``prepare()``'s launch where it is not there yet; ``prepare()`` itself
    where ``memo`` is None. An executor hands its own dict (its tables are fixed, so the
    operands' flat geometries, dtypes and flags decide the launch)."""
    if memo is None:
        return prepare()
    launch = memo.get(key)
    if launch is None:
        launch = memo[key] = prepare()
    return launch


def _c_order(strides, shape) -> bool:
    """Whether axes of these extents and element strides are one C-order run of memory. The
    strides of one-element axes do not matter (1-D and 2-D problems have them)."""
    want = 1
    for s, e in zip(reversed(strides), reversed(shape)):
        if e > 1 and s != want:
            return False
        want *= e
    return True


def _disjoint(tab: np.ndarray, dims) -> bool:
    """Whether no element lies in two windows of ``tab`` (each axis's windows follow each
    other without overlap: ``I % O == 0`` and ``O <= I`` for the sizes' own tables)."""
    offsets = windows.axes_offsets(dims)
    for k, o in enumerate(dims[5:]):
        s, e = offsets[4 * k], offsets[4 * k + 1]
        if (tab[s + 1 : s + o] < tab[e : e + o - 1]).any():
            return False
    return True


def _one_deep(tab: np.ndarray, dims) -> bool:
    """Whether every window of the d axis in ``tab`` is one element deep."""
    sd, ed = windows.axes_offsets(dims)[:2]
    od = dims[5]
    return bool((tab[ed : ed + od] - tab[sd : sd + od] == 1).all())


def _windows_are_runs(dims, *geometries) -> bool:
    """Whether each window of the sizes is one contiguous run of memory in arrays of these
    geometries: whole rows (``ow == 1``), each of d and h whole (output extent 1) or one
    element (output extent the input's), laid out as one run (global pooling of contiguous
    planes, (None, 1), (None, 1, 1), ...)."""
    n, c, d, h, w, od, oh, ow = dims
    if ow != 1 or od not in (1, d) or oh not in (1, h):
        return False
    extents = (d // od, h // oh, w)
    return all(g[5] == 1 and _c_order(g[3:], extents) for g in geometries)


def _run_windows(tab: np.ndarray, dims, *geometries) -> bool:
    """:func:`_windows_are_runs`, where ``tab`` holds the sizes' windows (a Dask block's may
    not)."""
    return _windows_are_runs(dims, *geometries) and _sized_axes(tab, dims, 3)


def _windows_along_rows(dims, *geometries) -> bool:
    """Whether each window of the sizes lies along one row of unit stride in arrays of these
    geometries: one element deep in d and h (``od == d``, ``oh == h``), every 1-D problem."""
    n, c, d, h, w, od, oh, ow = dims
    return od == d and oh == h and all(g[5] == 1 for g in geometries)


def _row_windows(tab: np.ndarray, dims, *geometries) -> bool:
    """:func:`_windows_along_rows`, where ``tab`` holds the sizes' windows of d and h (a Dask
    block's may not)."""
    return _windows_along_rows(dims, *geometries) and _sized_axes(tab, dims, 2)


#: Positions per plane from which the NaN-skipping average backward copies a channels-last
#: ``x`` to C order first (float32 32x256x56x56 -> 7x7: see :mod:`.relayout`; planes of 14x14
#: = 196 positions, which the cache holds, were faster read in place).
_RELAYOUT_PLANE = 1024


def _channels_adjacent(xg, c: int) -> bool:
    """Whether the kernels of the channels-last layout serve: the channels adjacent in memory
    (element stride 1, PyTorch's ``channels_last``) and at least 8 of them."""
    return xg[2] == 1 and c >= kernels.LANES


#: What a row costs the kernels beyond its elements, in elements: short rows cost more per
#: element (their windows' bookkeeping), so a call of many short rows has more work to share
#: than its size says (float32 1x32x17x6x4 -> 19x6x4, 28k elements in rows of 4: max 100 us
#: on the calling thread, 59 on two; average 45 and 26).
_ROW_WORK = 8


def _channel_block(c: int, rows: int, threads: int) -> int:
    """Channels a work item of the channels-last average forward takes (``rows`` output rows
    of all channels): all of them, each window element read as one run of the whole pixel,
    unless that leaves fewer than ``4 * threads`` items; then split, down to
    :data:`~adaptive_pool.cpu.kernels.CHANNEL_BLOCK`. Against blocks of 256 (A/B, Zen 4, same
    bits): 64x512x14x14 -> 5x5 float32 1.09-1.32x, float64 1.03-1.07x, 16-bit 0.95-1.09x;
    128x2048x7x7 -> 1x1 1.37-1.62x; windows of 196 elements (32 rows of accumulators),
    4x2048x28x28 -> 2x2 float64, 1.53x."""
    parts = -(-4 * threads // max(rows, 1))
    return max(min(c, kernels.CHANNEL_BLOCK), -(-c // parts))


def _channel_blocks(gg, dims) -> bool:
    """Whether the plain average backward takes blocks of planes side by side
    (:func:`~adaptive_pool.cpu.kernels.avg_pool_backward_block`): gradients whose channels are
    adjacent (channels-last), 8 of them or more, planes of at most :data:`_BLOCK_PLANE`."""
    return _channels_adjacent(gg, dims[1]) and dims[3] * dims[4] <= _BLOCK_PLANE


def _backward_block(c: int, slabs: int, threads: int) -> int:
    """Planes a work item of the block backward takes (``slabs``: the ``(n, d)`` slabs of each
    plane): up to :data:`~adaptive_pool.cpu.avg_backward_blocks.BLOCK`, a multiple of
    ``LANES``, fewer where that leaves fewer than ``4 * threads`` work items."""
    lanes = kernels.LANES
    block = min(BLOCK, -(-c // lanes) * lanes)
    while block > lanes and slabs * -(-c // block) < 4 * threads:
        block = max(lanes, block // 2 // lanes * lanes)
    return block


def _sparse_group(m: int, plane: int, itemsize: int, disjoint: bool) -> int:
    """Planes a work item of the sparse max backward takes at once (see
    :data:`_SPARSE_GROUP` and :data:`_SPARSE_GROUP_OUTPUTS`)."""
    if _SPARSE_RATIO * m <= plane:
        group = _SPARSE_GROUP_OUTPUTS // m
        if itemsize == 2 and not disjoint:  # and a group's float sums
            group = min(group, _SPARSE_SUMS // plane)
        return max(1, group)
    per = m + plane
    if itemsize == 2 or per > _SPARSE_GROUP:
        return max(1, _SPARSE_GROUP // per)
    return _SPARSE_GROUP_WIDE // per


def _sparse_work(planes: int, m: int, plane: int, itemsize: int) -> int:
    """A sparse max backward's work against :data:`_SERIAL_WORK`: 8/3 an output (its index
    check and its addition), 1/12 a byte of the result (zeroed by ``memset``). Counted as
    elements touched, calls of a few thousand outputs into planes of a few thousand elements
    went to the pool, whose wake-up and barrier cost more than they saved (A/B, calling thread
    against two threads, Zen 4): 1x64x20x20 -> 5x5 float32 and bfloat16 2.1x, 2x8x64x64 -> 4x4
    float16 1.5x, 1x32x32x32 -> 8x8 float32 1.2x and float16 1.4x, 4x16x28x28 -> 7x7 float16
    1.09-1.26x and bfloat16 1.18-1.77x. A third of these units (5c424c1) kept calls of
    30-100k on the calling thread, which ``bench`` then measured slower than the pool (Zen 5,
    us, calling thread / two threads, two runs each): 1x32x17x6x4 -> 19x6x4 float32 8.9 /
    6.9, float64 9.4 / 7.3, bfloat16 10.1 / 7.6; 4x16x28x28 -> 14x14 float32 7.8 / 6.4,
    bfloat16 10.1 / 7.5; 1x256x559 -> 11 float32 6.4 / 5.7, float64 9.6 / 7.3; 8x16x35x60
    -> 1x9 float16 6.1 / 5.6. Below these units' 2^15 the calling thread stays ahead:
    4x16x28x28 -> 7x7 float32 (25k) 4.4 / 4.7-5.0, 512x14 -> 14 float64 (24k) 3.0 / 5.8,
    2x8x64x64 -> 4x4 float32 (23k) 3.4 / 4.3."""
    return planes * (8 * m + plane * itemsize // 4) // 3


def _touched(dims, row_work: int = _ROW_WORK) -> int:
    """The elements a pooling call touches, inputs and outputs, and ``row_work`` for each of
    their rows (what decides whether it runs on the calling thread: :data:`_SERIAL_WORK`)."""
    n, c, d, h, w, od, oh, ow = dims
    return n * c * (d * h * w + od * oh * ow + row_work * (d * h + od * oh))


def _tiled_rows(tab: np.ndarray, dims, geometries) -> bool:
    """Whether the average backward's runs kernel takes each row of windows whole: more than
    one window a row, each :data:`_ROW_WINDOW` elements or more on average, along rows of unit
    stride (:func:`_row_windows`) that they tile (:func:`_tiling`)."""
    ow, w = dims[7], dims[4]
    return (1 < ow and _ROW_WINDOW * ow <= w and _row_windows(tab, dims, *geometries)
            and _tiling(*_axes(tab, dims)[2][:3]))


def _tiling(starts, ends, size: int) -> bool:
    """Whether windows ``[starts, ends)`` cover ``[0, size)`` without a gap, their starts and
    ends in ascending order (the sizes' windows always do; a Dask block's may not)."""
    return bool(starts[0] == 0 and ends[-1] == size and (starts[1:] <= ends[:-1]).all()
                and (starts[1:] >= starts[:-1]).all() and (ends[1:] >= ends[:-1]).all())


def _column_tiles(tab: np.ndarray, dims) -> bool:
    """Whether the windows of ``tab`` are one column wide (``ow == w``, window ow the column
    ow) and tile d and h: each axis's windows follow each other from 0 to its end without gap
    or overlap, so that every input row lies in exactly one output row's band."""
    axes = _axes(tab, dims)
    if dims[7] != dims[4] or not _sized_axis(*axes[2]):
        return False
    return all(s[0] == 0 and e[-1] == i and (s[1:] == e[:-1]).all() for s, e, i, _ in axes[:2])


def _column_problem(tab: np.ndarray, dims, gg, geometries):
    """``(dims, tab)`` of the problem the average backward's columns kernel solves, or None
    where it does not serve: windows one column wide that tile d and h
    (:func:`_column_tiles`, counts below ``2**31``), rows of unit stride in ``geometries`` (the
    result's, and ``x``'s) at least :data:`_COLUMNS_WIDTH` wide. Where windows are one element
    in h too and each plane's rows follow each other in ``go`` (geometry ``gg``) and
    ``geometries``, each plane is one row (:func:`_plane_rows`)."""
    n, c, d, h, w, od, oh, ow = dims
    if not (all(g[5] == 1 for g in geometries) and _longest(d, od) * _longest(h, oh) < 1 << 31
            and _column_tiles(tab, dims)):
        return None
    dims, tab = _plane_rows(tab, dims, gg, *geometries)
    return (dims, tab) if dims[4] >= _COLUMNS_WIDTH else None


def _planes_are_rows(dims, *geometries) -> bool:
    """Whether windows one column wide (``ow == w``) are one element in h too
    (``oh == h``, more than one row) and each plane's rows follow each other in arrays of these
    geometries: each plane may then be taken as one row (:func:`_plane_rows`)."""
    n, c, d, h, w, od, oh, ow = dims
    return h > 1 and oh == h and ow == w and all(g[4] == w * g[5] for g in geometries)


def _plane_rows(tab: np.ndarray, dims, *geometries):
    """``(dims, tab)`` of the same problem with each plane's rows as one row where
    :func:`_planes_are_rows`, else ``(dims, tab)`` as they are. The columns kernels then take
    rows of ``h * w``: float32 4x64x8x28x28 -> (1, None, None), forward 0.33 -> 0.17 ms,
    skipna 0.69 -> 0.25; its skipna backward 0.65 -> 0.24."""
    if not _planes_are_rows(dims, *geometries):
        return dims, tab
    n, c, d, h, w, od, oh, ow = dims
    rows = windows.build_tables((1, h * w), (1, h * w))
    return (n, c, d, 1, h * w, od, 1, h * w), np.concatenate([tab[: 2 * (d + od)], rows])


def _identity_rows(tab: np.ndarray, dims, *geometries) -> tuple:
    """:func:`_plane_rows` where the windows of h and w in ``tab`` are the sizes' one-element
    windows (a Dask block's need not be), else ``(dims, tab)`` as they are: a max's flat
    indices are the same in both. The max forward then takes rows of ``h * w`` (A/B, every
    dtype: 32x512x7x7 -> 7x7 1.9-2.1x, 16x256x28x3 -> 28x3 3.2-3.6x, 64x256x3x3 -> 3x3
    1.5-1.6x); not the max backward, whose check of planes of one row goes plane by plane from
    16 outputs (64x256x5x5 -> 5x5 0.91-0.96x)."""
    if _planes_are_rows(dims, *geometries) and all(
        _sized_axis(*axis) for axis in _axes(tab, dims)[1:]
    ):
        return _plane_rows(tab, dims, *geometries)
    return dims, tab


def _window_runs(tab: np.ndarray, dims, outputs, inputs):
    """``(dims, tab)`` of the same problem with each window one run of a row, or None.

    Windows of whole rows (``ow == 1``) over h in one d (``od == d``) are runs of ``h * w``
    planes' rows, and windows of whole planes (``oh == ow == 1``) over d runs of the volume,
    whatever their extents (``(k, 1)`` for ``k`` other than 1 and ``h``; ``(k, 1, 1)``): the
    problem ``(d, 1, h * w) -> (d, 1, oh)``, or ``(1, 1, d * h * w) -> (1, 1, od)``, whose row
    windows are the axis's scaled by the elements after it (their covering tables repeated),
    serves as it is, with the same flat in-plane indices, the same element order in each window
    and the same covering outputs of each element. The axis's windows must tile it in ascending
    order (as the sizes' do; a Dask block's need not), ``inputs`` (geometries of arrays of
    the input's shape) must have the merged axes as one C-order run and ``outputs`` the merged
    output axis at the stride of w. None where the existing orders take the windows as runs
    already (extents 1 or the input's), or the merged row's tables would pass
    :data:`_RUN_ROW_TABLE` entries."""
    n, c, d, h, w, od, oh, ow = dims
    if ow != 1 or (oh in (1, h) and od in (1, d)):
        return None
    axes = _axes(tab, dims)
    ws, we = axes[2][:2]
    if ws[0] != 0 or we[0] != w:
        return None
    if od == d and _sized_axis(*axes[0]):  # windows over h, one d each
        k, inner = 1, w
        head = np.concatenate([tab[: 2 * (d + od)], windows.build_tables((1,), (1,))])
        new = (n, c, d, 1, h * w, d, 1, oh)
    elif oh == 1 and _sized_axis(*axes[1]):  # windows over d of whole planes
        k, inner = 0, h * w
        head = windows.build_tables((1, 1), (1, 1))
        new = (n, c, 1, 1, d * h * w, 1, 1, od)
    else:
        return None
    starts, ends, size, out = axes[k]
    # axes k to w one run of each input; output axis k at the stride of w
    if (2 * (out + size * inner) > _RUN_ROW_TABLE or not _tiling(starts, ends, size)
            or not all(_c_order(g[3 + k:], dims[2 + k : 5]) for g in inputs)
            or not all(g[3 + k] == g[5] for g in outputs)):
        return None
    lo, hi = windows.axes_offsets(dims)[4 * k + 2 : 4 * k + 4]
    row = np.concatenate([starts * inner, ends * inner, np.repeat(tab[lo : lo + size], inner),
                          np.repeat(tab[hi : hi + size], inner)])
    return new, np.concatenate([head, row])


#: Elements of a merged row (:func:`_window_runs`) up to which the average backward of a
#: 16-bit result takes it: the runs kernel sums each row's shares in float32 scratch of its
#: length before encoding it (bfloat16 (k, 1) on 64x64 planes 1.9x, 96x96 1.1x, 128x128 0.97x,
#: 224x224 0.69x against the row gather; float32 1.0-3.3x on all of them).
_DECODED_RUN_ROW = 8192

#: Entries the merged row's tables of :func:`_window_runs` may take (16 bytes per element of
#: a plane, or a volume).
_RUN_ROW_TABLE = 1 << 18


def _axes(tab: np.ndarray, dims) -> tuple:
    """``(starts, ends, input extent, output extent)`` of each of d, h, w in ``tab``."""
    offsets = windows.axes_offsets(dims)
    return tuple(
        (tab[offsets[4 * k] : offsets[4 * k] + o], tab[offsets[4 * k + 1] : offsets[4 * k + 1] + o],
         i, o)
        for k, (i, o) in enumerate(zip(dims[2:5], dims[5:]))
    )


def _sized_axis(starts, ends, i: int, o: int) -> bool:
    """Whether an axis of output extent 1 or the input's has the sizes' windows (the whole
    axis; one element each)."""
    if o == 1 and (starts[0] != 0 or ends[0] != i):
        return False
    return not (o == i and ((starts != np.arange(o)).any() or (ends != starts + 1).any()))


def _sized_axes(tab: np.ndarray, dims, axes: int) -> bool:
    """Whether the first ``axes`` of d, h, w whose output extent is 1 or the input's have the
    sizes' windows in ``tab`` (the whole axis; one element each)."""
    return all(_sized_axis(*axis) for axis in _axes(tab, dims)[:axes])


def _prefetched(dims, itemsize: int, cached: bool = False, narrow: bool = False) -> bool:
    """Whether the average's runs kernels prefetch the input ahead of its runs: 32- and 64-bit
    inputs (16-bit ones too with ``narrow``) read from memory (larger than the last-level
    cache, :data:`_CACHED_INPUT`; with ``cached`` any size) whose windows are short
    (:data:`_PREFETCHED_RUN`); the hardware's prefetcher follows longer ones."""
    n, c, d, h, w, od, oh, ow = dims
    big = cached or n * c * d * h * w * itemsize > _CACHED_INPUT
    short = d * h * w * itemsize <= _PREFETCHED_RUN * od * oh * ow
    return (itemsize >= 4 or narrow) and big and short


def _from_memory(nbytes: int) -> bool:
    """Whether a kernel that streams ``nbytes`` of arrays the size of ``x`` (``x`` and a
    backward's result, or ``x`` alone) reads ``x`` from memory, where the kernels that do not
    otherwise prefetch it do (the NaN-skipping columns backward, the 8-planes one of 3-D slabs,
    the channels-last max forward): more than half the last-level cache
    (:data:`_CACHED_INPUT`). Zen 5, 2 threads, A/B on the same arrays: the columns backward of
    28x28 planes -> (1, None), float32 32x256 (x and result 51 MB) 1.65-1.94x, 16x256 (26 MB)
    1.18-1.45x, 8x256 (13 MB) 0.94x; the channels-last max of 56x56 planes -> 7x7, float32
    16x256 (51 MB) 2.12x, 8x256 (26 MB) 1.28x, 4x256 (13 MB) 0.93x."""
    return nbytes > _CACHED_INPUT // 2


def _longest(i: int, o: int) -> int:
    """An upper bound of the longest window of an axis of ``i`` inputs and ``o`` outputs."""
    return min(i, -(-i // o) + 1)


def _window_bound(dims) -> int:
    """An upper bound of the elements of a window (:func:`_longest` of each axis)."""
    _, _, d, h, w, od, oh, ow = dims
    return _longest(d, od) * _longest(h, oh) * _longest(w, ow)


#: Tests force one loop order of the average forward: "direct", "rowwise", "lanewise",
#: (for windows one column wide only) "columns", (for windows that are one run of memory
#: only) "runs" or (for channels one element apart only) "channels".
_FORCE_ORDER = None

#: The counts the plain average backward does not read.
_NO_COUNTS = np.empty(0, np.int64)

#: Average windows at least this wide (on average) read their input row by row. The direct
#: loop was as fast or faster for windows up to 8 wide, and for 43-wide windows of an input
#: in cache, but 2.5x slower for 38-wide windows of an input read from memory.
_ROWWISE_WIDTH = 16

#: On Zen 4 (:data:`~adaptive_pool.cpu.access.SPLIT_512`) that order lost in float32 and 16
#: bits (forced orders, two threads, 2026-12-07; float64 kept it: from memory it was up to 2.2x
#: as fast as the others): float32 inputs up to this many times :data:`_CACHED_INPUT` (the
#: last-level cache, 32 MiB there) took 0.45-0.58x its time window by window (8x64x112x112
#: -> 3x3, 16x64x64x64 -> 2x2, 2x64x224x224 -> 6x6, 1x128x112x153 -> 1x2; 35 MB 0.80x), larger
#: ones 0.71x on 8 planes side by side (8x64x224x224 -> 6x6, 103 MB; window by window
#: 1.39x), and 16-bit inputs of 8 planes or more 0.44-0.65x on 8 planes side by side, in and
#: out of the cache (the same shapes; bfloat16 8x64x224x224 -> 6x6 4.53 -> 2.08 ms). 16-bit
#: inputs of 8 planes or more take 8 planes side by side on Zen 5 too (us, bfloat16 plain and
#: skipna, row by row / 8 planes: 8x64x224x224 -> 6x6 3194 / 1685, 3735 / 1953, -> 4x4 2010 /
#: 1697, 4x64x100x100 -> 2x2 266 / 146, 1x16x224x224 -> 6x6 99 / 53, 2x8x512x512 -> 8x8 259
#: / 246; float16 the same; 2026-12-07). float32 there kept the rows: 8 planes side by side
#: took 0.70-1.5x their time (plain), 0.55-1.16x with skipna.
_ROWWISE_CACHED = 1.5

#: The NaN-skipping average's windows one plane deep take the rows in registers
#: (``lanes.rows_sum``, each row's register of lanes alone) where their rows are at least this
#: wide on average (by item size; inputs in the last-level cache, from memory), else 8 planes
#: side by side (Zen 5, two threads, forced orders, us, rows / planes; float64: 32x256x56x56 ->
#: 7x7 5594 / 7496, 16x64x64x64 -> 8x8 701 / 1064, -> 5x5 672 / 990, 64x512x32x32 -> 4x4 5629 /
#: 10753, 4x64x64x64 -> 8x8 169 / 208, 2x64x128x128 -> 8x8 240 / 329; float32, rows of 16 and
#: more: 16x64x128x128 -> 6x6 1653 / 2006, 8x64x112x112 -> 7x7 489 / 579, 2x64x128x128 -> 8x8
#: 164 / 180; rows of 8 from memory: 32x256x56x56 -> 7x7 3765 / 4719, 64x512x32x32 -> 4x4 5239
#: / 5844, 16x64x128x128 -> 16x16 2485 / 2696, but in the cache 0.80-0.89x: 16x64x64x64 -> 8x8
#: 632 / 578, -> 5x5 484 / 420, 8x64x112x112 -> 14x14 959 / 882). Wider float64 rows read from
#: memory stay row by row (see _avg_order); 16-bit ones, decoded row by row, 8 planes wide.
_SKIPNA_ROWS = {4: (16, 8), 8: (8, 8)}

#: Average windows one plane deep whose rows of unit stride are at least this wide on average
#: (and at most 32) take the direct order, each row a masked vector load or two added into the
#: 32 lanes in registers (``lanes.rows_sum``), float32 and float64 read in place and 16-bit
#: decoded in the registers. Against 8 planes side by side (ms, float32, 2 threads, Zen 5): 64x64
#: -> 8x8 (8 wide) 0.56-0.79 / 0.67-0.70, -> 5x5 (13) 0.39-0.42 / 0.67-0.69, 128x128 -> 6x6
#: (21) 0.23 / 0.56, 56x56 -> 7x7 32x256 planes 3.4 / 5.2-5.7; rows of 4 (64x64 -> 16x16) 1.4 /
#: 1.0 and of 7 (28x28 -> 4x4, 14x14 -> 2x2) 0.59-0.74 / 0.53-0.54 stay 8 planes wide. Rows
#: longer than 32 (224x224 -> 6x6, 37: 5.0-5.3 / 3.1 row by row) loop over their segments.
#: Only with AVX-512 (:data:`~adaptive_pool.cpu.access.NATIVE_MASKS`): with AVX2 a 32-lane
#: masked load is four (eight for float64) and the order took 2-2.5x the time of 8 planes side
#: by side on Zen 3 (56x56 -> 7x7 float32 18.3 / 8.3 ms, 64x64 -> 5x5 2.1 / 1.0); on Zen 4
#: (:data:`~adaptive_pool.cpu.access.SPLIT_512`) for float64 only, and never with skipna,
#: where 8 planes side by side serve (:meth:`CpuBackend._avg_order`).
_ROWS_WIDTH = 8

#: Rows at least this wide (by the element size) take the average forward's columns order
#: where windows are one column wide and 8 planes side by side also serve (A/B, one thread,
#: Zen 4, forced orders, 8 planes against columns: (1, None) of 12 rows 8 wide float32 2.1x,
#: float64 1.1x, bfloat16 2.6x; (5, None) of 20x13 2.55x, 1.42x, 3.9x; 16 wide 1.22-1.43x,
#: 0.78-0.95x, 1.49-1.74x; 24 wide 1.0x, 0.87x, 2.3x; 32 wide 0.90x, 0.79x, 1.14x; 48 wide
#: bfloat16 0.87x; 64 wide 0.63x, 0.69x, 0.81x; 1-D outputs as large as their input, 512x13 ->
#: 13, 1.95x, 2.03x, 2.55x). Until 2026-12-07 every dtype from 8 (older machines' figures).
_COLUMNS_ROW = {2: 40, 4: 24, 8: 16}

#: Rows at least this wide take the average backward's columns kernel where windows are one
#: column wide and tile d and h (:func:`_column_problem`): against the other kernels, float32
#: rows of 8 1.27x as fast (64x64x12x8 -> (1, None), plain and skipna), of 4 as fast.
_COLUMNS_WIDTH = 8

#: Average windows along rows of unit stride (1-D problems) at least this wide on average are
#: summed one vector pass each (the runs order, a row of windows a work item), instead of 8
#: planes side by side: 0.32-0.35x the time on 1x256x559 -> 11 and 16x512x999 -> 50 bfloat16,
#: 0.65-0.84x on 2x3x17 -> 5 and 8x64x100 -> 25, the same on large float32 and float64
#: problems (memory-bound), but 1.25-1.46x slower on windows of 2.4 (64x512x120 -> 50).
_ROW_RUN = 3

#: The same for inputs of 8 planes or more, by the element size: the 8-plane order's windows
#: cost less than a vectorised pass each for windows shorter than 12 in float32 (A/B, one
#: thread, Zen 4, 16x512xL -> 20 or 16: windows of 3 2.6x, 5 1.94x, 8 1.45x, 12 1.02x, 16
#: 0.76x, 20 0.48x; 8x64x100 -> 25 2.1x), than 6 in float64 (3 1.47x, 5 1.04x, 8 0.63x) and
#: than 18 in 16 bits, which it decodes a block at a time (8 2.5x, 12 2.0x, 16 1.5-1.6x, 20
#: 0.89-0.94x). Until 2026-12-06 float32 and float64 took :data:`_ROW_RUN`, and 16 bits 8
#: (windows of 8-10 measured as fast either way then).
_ROW_RUN_LANES = {2: 18, 4: 12, 8: 6}

#: Average windows of at most this many elements (on average) sum 8 planes side by side,
#: planes of 8 or more channels: with the planes added as one vector operation (``add_planes``)
#: that order is 1.2-5x faster than the direct and row-wise ones wherever the input is not
#: read at memory speed by all of them: 1.4x on 56x56 -> 7x7 (64 elements a window), 2.9x on
#: 64x64 -> 9x11 (41), 2.6x on 999 -> 50 (20), 2x on 35x60 -> 1x9 (233), 2.2x on 64^3 ->
#: 7x9x11 (377). Larger ones (1394 and 4096) ran as fast in float32 and float64 and 1.1-2x
#: slower in 16 bits.
_LANEWISE_WINDOW = 512

#: Zen 4's float64 average forward takes 8 planes side by side rather than rows summed in
#: registers (the direct order) where windows hold at most this many elements
#: (:func:`_longest`) in planes of at most ``_PLANES_FIRST_PLANE``. Forced orders, two
#: threads, us, direct / 8 planes: 4x16x14x76 -> 17x9 65 / 38, 8x16x8x64 -> 16x8 84 / 28,
#: 2x16x100x40 -> 50x5 58 / 43, 4x16x28x128 -> 14x16 91 / 69, 4x64x28x64 -> 7x8 142 / 111,
#: 16x64x48x48 -> 6x6 644 / 583, 16x64x64x64 -> 8x8 1324 / 1156, 8x256x56x56 -> 7x7 2363 /
#: 2029, 4x16x56x64 -> 7x8 65 / 68; larger windows or planes keep the direct order
#: (16x64x64x64 -> 5x5 913 / 935, 4x64x96x96 -> 12x12 630 / 666, 4x64x128x128 -> 16x16 1522
#: / 3608, 4x64x128x128 -> 6x6 2.1 / 3.9 ms).
_PLANES_FIRST_WINDOW = 81
_PLANES_FIRST_PLANE = 4096

#: Planes at most and at least in a work item of a forward that copies them side by side,
#: and the elements their copy may take (:func:`_lanewise_block`).
_WIDE_BLOCK = 128
#: ... and of float64 planes in a launch on the calling thread (:func:`_launch_threads`)
#: whose windows may hold more than :data:`_SERIAL_FLOAT64_WINDOW` elements (more of the 32
#: lanes of sums in use): blocks of 128 against 64, 0.77x on 8x16x3x33 -> 1x2 (windows of 51
#: elements); of smaller windows 64 against 128, 0.84x on 8x64x1x1x4 -> 1x1x5, 0.92x on
#: 256x3x6 -> 1x5 (A/B, 2026-12-07, Zen 4). float32 and 16-bit planes took 128 as fast or
#: faster.
_SERIAL_FLOAT64 = 64
_SERIAL_FLOAT64_WINDOW = 16
_WIDE_MIN = 32
_WIDE_BAND = 1 << 16

#: The max forward's windows along rows (every 1-D problem) compare planes side by side where
#: they are short (:func:`_longest` at most this) and a block takes :data:`_MAX_ROW_MANY`
#: planes or more, rather than one vectorised pass a window (the runs kernel, whose set-up a
#: short window does not repay). A/B, Zen 4, 2026-12-06, float32 and float64: windows of 2-3
#: 3.0-5.7x as fast (32x16x9 -> 7, 32x512x50 -> 25, 64x512x51 -> 34), of 12 1.42-1.55x
#: (8x512x192 -> 16), of 16 1.26-1.28x, of 24 1.03-1.13x, of 32 0.81-0.91x, of 64 0.58-0.68x...
_MAX_ROW_RUN = 17
#: ... 16-bit ones, which the runs kernel decodes first: windows of 2-3 7.1x, of 12-32
#: 1.42-3.58x, of 64 0.99x, of 100 0.99-1.12x...
_MAX_ROW_RUN_16 = 48
#: ... and in blocks of fewer planes (from :data:`_ROW_WIDE_MIN`), whose windows' bookkeeping
#: fewer planes share, by element size: windows of 4-6 1.24-2.53x (2x16x177 -> 45, 2x16x96
#: -> 16); the runs kernel is slower in float64 and 16 bits (two threads, blocks of 24-48
#: planes, 2026-12-07: windows of 9-14 float32 1.25-1.59x, float64 1.33-2.11x, bfloat16
#: 1.25-2.35x; of 17-21 float32 0.80-1.09x, float64 1.23-1.46x, bfloat16 1.12-1.56x; of 25-32
#: float64 1.18-1.22x, bfloat16 0.99-1.13x; blocks of 16, one thread: float32 windows of 9-11
#: 1.02-1.26x, 14 0.87x; float64 of 17-21 0.94-1.00x; bfloat16 of 14 1.43x, 17 0.84-0.91x).
_MAX_ROW_RUN_FEW = {2: 14, 4: 11, 8: 21}
_MAX_ROW_MANY = 64
#: Windows that are the only one of their plane (global pooling) up to this long, in blocks of
#: :data:`_MAX_ROW_MANY` planes or more (fewer took 1.0-1.2x as long): float32 and float64
#: runs of 25-36 1.58-2.0x (64x512x5x5, 6x6 -> 1x1; 64x512x25 -> 1), of 49 1.17-1.32x (7x7,
#: 49 -> 1), of 64 0.82-0.85x, of 100 0.83-0.93x (rows of several windows, (None, 1), break
#: even sooner: 14 1.53x, 28 0.89x, 49 0.93x, as the limits above)...
_MAX_ONE_RUN = 49
#: ... in inputs up to this many times :data:`_CACHED_INPUT` (32 MiB there; 12.8 MB
#: 1.12-1.29x, 25.7 MB 1.05-1.26x);
#: larger ones, read from memory, took 1.13-1.5x as long side by side with runs of 25-49
#: (38-103 MB: 128x2048x5x5, 6x6 and 7x7 -> 1x1, 64x2048x49 -> 1) and take
#: :data:`_MAX_ROW_RUN` (runs of 16: 1.56-1.61x)...
_MAX_ONE_RUN_CACHED = 0.5
#: ... 16-bit: runs of 25-64 1.46-2.38x, of 100-144 1.15-1.41x, of 196 1.07x, of 256
#: 0.89-1.03x.
_MAX_ONE_RUN_16 = 144
#: Planes at least in a block of windows along rows: 16-31 planes of short windows 1.24-2.53x
#: as fast as the runs kernel (above). Windows over several rows keep :data:`_WIDE_MIN`
#: (1x20x40x40 -> 9x9 took 1.2-1.7x as long in blocks of 24)...
_ROW_WIDE_MIN = 16
#: ... but in planes of at most this many elements, where the general kernel's set-up of each
#: window costs more than 16-31 planes side by side take (A/B, two threads, Zen 4, the same
#: bits: 16x3x32x3 -> (1, None) 2.45-2.76x, 1x48x12x12 -> 3x3 1.56-1.91x, 2x16x20x20 -> 5x5
#: 1.22-1.63x, 1x24x7x7 -> 3x3 1.37-1.52x; larger planes in blocks of 16 and a remainder,
#: float32: 1x20x20x24 -> 5x6 0.93x, 1x20x16x40 -> 4x8 0.82x, 1x20x28x28 -> 7x7 0.88x).
_MAX_FEW_PLANE = 400

#: Window size (:func:`_longest`'s bound) up to which the average forward takes the 8-plane
#: order with 3 to 7 planes (the other lanes compute copies): a window of the direct order is
#: summed on its own, about 30 ns for 16 elements (Zen 5), so 3-7 planes of such windows ran
#: 1.1-2.6x faster 8 planes wide (9x10 -> 4x3 to 28x28 -> 5x5, bounds 20 to 49), windows of
#: 56 or 64 elements 1.3-1.8x slower; 2 planes gained nothing in 32 or 64 bits. Without
#: AVX-512 (each row of the direct order four or eight masked loads, Zen 3) 8 planes wide
#: ran 1.4-1.7x faster up to 80 (5x9x10 -> 2x4x3 float32 21 -> 12 us, bfloat16 56x56 -> 7x7
#: 39 -> 28), as fast at 81 (64x64 -> 8x8) and 3.6x slower at 289 (112x112 -> 7x7).
_FEW_PLANES_WINDOW = 49 if NATIVE_MASKS else 81

#: Larger windows of rows at most this long also take the 8-plane order with 3 to 7 planes:
#: the direct order pays for each row of a window, 8 planes side by side for its elements
#: (Zen 4, us, direct / 8 planes: 2x3x5x9x10 -> 2x4x3 float32 6.5 / 4.3, bfloat16 8.2 / 4.4,
#: float64 7.7 / 5.8-6.7; 1x5x6x12x12 -> 2x4x4 6.9 / 4.7; 1x3x8x8x8 -> 3x3x3 5.0 / 4.6,
#: bfloat16 6.1 / 4.5; 1x3x12x30x12 -> 2x2x4 11.1 / 8.7, bfloat16 16.9 / 9.2; 1x4x40x12 ->
#: 3x4 3.9 / 3.4; float64 as fast or 1.07-1.4x). Rows of 7 or 8 stay direct (1x4x64x64 -> 8x8
#: 8.5 / 9.7, 1x3x32x32 -> 4x4 3.3 / 4.2, 28x28 -> 4x4 3.4 / 3.9).
_FEW_PLANES_ROW = 5

#: Elements of a window's band up to which the average forward's direct order decodes
#: 16-bit input before summing it (1.1-1.2x on 56x56 -> 7x7); the lane order always does.
_DECODED_BAND = 1 << 16

#: Elements of 8 float64 planes up to which the 8-plane average forward copies them whole
#: (16 KiB); larger ones are read in place. Copied, 64x512x14x14 -> 5x5 took 0.45x the time;
#: 4x16x28x28 -> 7x7 (50 KiB) 1.4x as long.
_WHOLE_FLOAT64 = 2048

#: The same for float64 inputs of more than :data:`_STREAMED_INPUT` bytes, read from memory:
#: 8 planes of up to 4096 elements each (256 KiB). Read in place, 8 large planes at once took
#: twice as long on Zen 3 (ms: 32x256x56x56 -> 7x7 35.4 / 14.7, 8x64x56x56 -> 7x7 1.79 /
#: 0.81, 16x64x64x64 -> 9x11 5.0 / 2.9; 28x28 planes as fast either way); inputs of up to 6.4
#: MB, in the cache, took 1.3-3x as long copied (4x64x56x56 -> 7x7 0.46 / 0.81).
_WHOLE_FLOAT64_STREAMED = 1 << 15

#: Bytes of input above which the 8-plane order copies float64 planes of up to
#: :data:`_WHOLE_FLOAT64_STREAMED` elements (9.6 MB gained 1.2x, 12.8 MB 2x on Zen 3).
_STREAMED_INPUT = 8 << 20

#: Bytes of a run (on average) up to which the average's runs kernels prefetch the input
#: ahead of its runs where it is read from memory (more than :data:`_CACHED_INPUT` bytes):
#: 2 threads, Zen 3, ms without / with: float32 runs of 64 (64x4096x64 -> 1) 3.13 / 2.53,
#: 128 2.99 / 2.62, 256 2.2 / 2.2; float64 runs of 32 2.9 / 2.3, 64 2.8 / 2.3, 128 2.5 / 2.5;
#: 56x56 planes (64x64x56x56 -> 1, 51 MB) 1.43-1.57 / 1.85-1.89. 16-bit inputs are never
#: prefetched (bfloat16 128x2048x7x7 -> 1 2.88 / 2.93, and 1.6x slower at 103 MB).
_PREFETCHED_RUN = 512


def _last_level_cache() -> int:
    """Bytes of this machine's largest CPU cache (Linux's sysfs), else 32 MiB (the L3 of
    the machines measured)."""
    sizes = []
    for f in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*/size"):
        try:
            with open(f) as text:
                size = text.read().strip().upper()
            sizes.append(int(size.rstrip("KMG")) << {"K": 10, "M": 20, "G": 30}.get(size[-1], 0))
        except (OSError, ValueError, IndexError):
            pass
    return max(sizes, default=32 << 20)


#: Bytes of input up to which the runs kernels take it to be in the cache, where prefetches
#: only cost: the last-level cache (8 MiB until 2026-12-05). Zen 4 (32 MiB L3), 2 threads, us
#: without / with: float64 64x512x49 -> 1 (12.8 MB) 88-90 / 108-110 (1.28x in one process),
#: 9.2 MB 68-71 / 82-83, 24.5 MB 232-350 / 261-539; float32 32x256x28x28 -> (None, 1) (25.7
#: MB) 1.20x; float32 runs of 128, 9.2-12.2 MB, 77-96 / 99-143; NaN-skipping backwards
#: 1.00-1.05x. From memory this VM's drift (1.9-3.2 ms for the same float64 128x2048x7x7 -> 1
#: call) hid any difference, so larger inputs keep their prefetches.
_CACHED_INPUT = _last_level_cache()

#: Whether the average forward's runs kernel prefetches inputs that fit the last-level cache
#: too. On the Zen 5 VM (2026-12-07, 2 threads, median us without / with, float32 and float64
#: windows of 16, 49 and 999/50 elements) prefetches pay at every size: 0.92-0.97x the time
#: in 1-16 MiB, 0.25-0.65x in 20-32 MiB, which behave as read from memory there (float32
#: 32x256x1024 -> 64, 32 MiB, 1979 / 625; 32x256x28x28 -> (None, 1), 25.7 MB, 612 / 229;
#: float64 64x512x7x7 -> 1, 12.8 MB, 93 / 74). The NaN-skipping backward's runs, which read x
#: beside their stores, take them at any size for items shorter than
#: :data:`_PREFETCHED_SHORT_RUN` only. Zen 4 took 1.2-1.28x the time with them in its cache
#: (above).
_PREFETCH_CACHED = _CPU == "znver5"

#: Items (runs) of the NaN-skipping average backward shorter than this many elements read x
#: with prefetches at any size on Zen 5. (None, 1) windows of float32 rows, 25-29 MB, us
#: without / with: 16 elements 863 / 535, 24 1611 / 882, 28 1935 / 622, but 32 515 / 564, 40
#: 843 / 901, 56 1107 / 1178; float64 rows of 8-20, 7-18 MB, 0.60-0.97x; 3-6 MB 0.87-0.93x.
#: Longer items keep the rule (global windows of 49 0.91-1.05x, 1-D rows of 999 1.05-1.08x).
#: 16-bit inputs' short windows (:data:`_PREFETCHED_RUN`) prefetch at any size on Zen 5:
#: bfloat16, 2 threads, us without / with: 32x256x1024 -> 64 (16.8 MB) 2317 / 1111, 16x512x999
#: -> 50 2405 / 1269, 32x256x28x28 -> (None, 1) 1376 / 589, 128x2048x7x7 -> 1 1139 / 946,
#: 2-8 MB 0.89-0.94x; global windows of 49 in 3-13 MB 1.01-1.05x; windows of 4096 0.99-1.05x.
_PREFETCHED_SHORT_RUN = 32

#: Average backward planes (per d) of at most this many elements take the lane kernel (8
#: planes of float32 sums: 28 KiB, within the L1 cache). On Zen 3, 1.4-2x on 7x7 and 14x14
#: planes, 1.1-1.7x on 28x28 and 32x32, from 1.3x faster to 2.3x slower on 56x56 and larger.
#: On Zen 5 (row blocks over lanes): float32 and bfloat16 7x7 to 28x28 planes 1.27-2.3, 32x32
#: 0.82-1.0; float64 7x7 1.47, 14x14 0.84-1.31, 28x28 and 32x32 0.62-0.97, so float64 planes
#: took half as many elements until 2026-12-06; on Zen 4, after the row gather's changes of
#: that day, float64 planes of 506-784 elements took 1.1-2.0x as long in row blocks (one
#: thread: 22x23 -> 4x5 1.32x, 24x24 -> 5x5 1.64x, 26x30 -> 7x7 1.83x, 28x28 -> 5x5 1.20x;
#: NaN-skipping 1.33-1.58x; 800 elements 1.01x, 1,024 0.71x).
_LANES_PLANE = 896

#: Elements of the planes up to which 2 to 7 of them take the average backward's 8-planes
#: kernel, its spare lanes computing copies of the last plane: one item for all of them
#: rather than row blocks of each (A/B, calls on the calling thread, Zen 4, us): 2x3x5x9x10
#: -> 2x4x3 float32 7.0 -> 4.8, float64 7.2 -> 5.1, bfloat16 7.0 -> 5.4, skipna 11.2 ->
#: 6.4-7.1; 2x3x9x10 -> 4x3 3.6 -> 3.0 (skipna 7.3 -> 3.7-3.9); 1x3x12x12 -> 5x5 3.6 ->
#: 3.0; 1x3x14x14 -> 5x5 3.5-3.7 -> 3.2-3.3 (skipna 6.1-7.2 -> 4.0-4.3); two planes,
#: 1x2x5x9x10 -> 2x4x3 4.7-4.8 -> 3.9-4.0; as fast on 16x16 -> 4x4 and 20x20 -> 3x3, and
#: slower on 28x28 -> 7x7 (float32 4.6 -> 4.9, bfloat16 4.7 -> 6.4).
_FEW_LANES_PLANE = 256

#: Larger planes of 8 channels or more take the 8-planes kernel where their windows hold fewer
#: elements than this an output (upsampling, or windows of 2-3 columns, overlapping where the
#: sizes do not divide) or, along rows, are short (:data:`_ROW_WINDOW_LANES`): the row blocks
#: pay each output row's windows and each input row's sum of overlapping output rows. A/B
#: against the row blocks or runs, two threads, Zen 4, the same bits: 2-D upsampling of
#: 1,188-65,536-element planes (16x64x33x36 -> 36x27, 8x64x40x40 -> 48x48, 2x64x90x90 ->
#: 100x100, 4x32x128x128 -> 130x130, 1x16x256x256 -> 300x300) 1.6-4.3x in every dtype
#: (skipna 2.3-5.2x), 3-D 2x16x8x40x40 -> 9x48x48 2.1-2.4x; 2-3 elements an output
#: (64x64 -> 40x40, 56x56 -> 32x32, 48x48 -> 32x32, 100x100 -> 60x60, 33x36 -> 16x27)
#: 1.9-3.6x, 64x64 -> 48x32 0.83-1.03x; short windows along rows of 1,000-100,000 elements
#: (8x256x1000 -> 300, 2x64x8000 -> 3000, 1x16x100000 -> 30000, 4x128x16x73 -> (None, 13))
#: 1.1-2.2x (skipna 1.4-2.3x). Windows of 2x2 and larger stay in row blocks (64x64 -> 32x32
#: 0.64-0.76x, 40x40 -> 20x20 1.04-1.28x, 32x64 -> 16x16 0.84-0.88x).
_LANES_WINDOW = 4

#: ... and, in float32 and 16 bits, planes of up to this many elements whose windows overlap
#: along h (``H % OH``) and are at most ``_LANES_OVERLAP_ROWS`` rows tall on average: the row
#: blocks sum the two output rows of each shared input row apart. A/B as above, float32 /
#: bfloat16: 16x64x56x56 -> 13x13 1.53x / 1.45x, 16x64x35x35 -> 8x8 1.78x / 1.68x, 8x64x45x45
#: -> 10x10 1.64x / 1.38x, 16x64x30x40 -> 7x9 1.65x / 1.51x, 8x64x52x60 -> 12x14 1.63x /
#: 1.48x, 16x64x40x56 -> 9x9 1.28x / 1.25x, 16x64x33x64 -> 16x4 1.67x / 1.50x,
#: 2x64x102x32 -> 24x2 1.41x / 1.23x, 16x64x60x60 -> 13x13 1.53x / 1.40x; not taken:
#: windows taller (16x64x56x56 -> 5x5 0.95x / 0.90x, 16x64x64x48 -> 9x11 0.85x / 1.21x),
#: larger planes (16x64x64x64 -> 13x13 0.77x / 0.89x, -> 9x11 0.66x / 0.70x), float64
#: (0.85-1.47x).
_LANES_OVERLAP_PLANE = 3600
_LANES_OVERLAP_ROWS = 6

#: ... as long as their sums (8 planes of the larger of the input's and the output's rows, in
#: the accumulation dtype) of every thread fit in this: a quarter of the last-level cache.
#: Beyond it the 8 planes' sums went to memory: 2x8x512x512 -> (None, 128) float64 (16 MiB
#: of sums) 15x slower, 1x8x1000000 -> 300000 float32 (32 MiB) 5.5x slower.
_LANES_SCRATCH = _CACHED_INPUT // 4

#: Elements of the planes up to which the plain average backward of channels-last gradients
#: takes blocks of up to 128 of them side by side (:func:`_channel_blocks`) rather than the
#: 8-planes kernel. A/B, one thread, Zen 4, the same bits: 64x512x14x14 -> 5x5 1.21-1.27x in
#: every dtype, 32x512x7x7 -> 3x3 1.5-2.3x, 4x128x12x12 -> 5x5 1.32-1.36x, 16x64x20x20 ->
#: 6x6 (400 elements) 0.97-1.15x, 28x28 -> 7x7 0.81-0.94x. Gradients in C order keep the
#: 8-planes kernel: the blocks, which gather each plane's gradients apart, ran 0.87-1.45x as
#: fast there by shape.
_BLOCK_PLANE = 256

#: Input elements per plane block of the max forward (its key and position scratch: 64 KiB);
#: larger windows are taken in parts of this many elements (or one row).
_MAX_BLOCK = 1 << 13

#: Max windows with more positions ``(d, h)`` in their block than this are located by a
#: second scan: the kernel keeps positions in int32.
_TRACKED_WINDOW = 1 << 31

#: The average backward of windows along rows of unit stride (1-D problems) at least this
#: wide on average takes the runs kernel, a row of windows a work item: 0.33-0.52x the time of
#: the 8-plane kernel on 1x256x559 -> 11, 16x512x999 -> 50 and 32x256x1024 -> 64, 0.84-0.88x
#: on 2x3x17 -> 5 and 1x1x8 -> 4; 1.1-1.4x slower on windows of one element (512x14 -> 14)
#: and 2-3x slower on upsampling (8x64x100 -> 300), whose windows are a call each.
_ROW_WINDOW = 2

#: Windows along rows of 8 planes or more narrower than this on average (by the element size)
#: take 8 planes side by side instead: the runs kernel's loops over a window's few elements
#: cost more than the 8 planes' shares (A/B, one thread, Zen 4: float32 windows of 2-5
#: 2.13-2.25x, 6.7 1.53x, 8 0.90x; float64 2-3 1.36-1.52x, 4 0.82-1.07x, 5 0.82x; bfloat16
#: 2-8 1.41-2.29x, 10 1.03x; two threads: float32 2-4 1.67-2.31x, float64 2-3 1.52-1.62x,
#: bfloat16 2-4 1.52-2.23x)...
_ROW_WINDOW_LANES = {2: 10, 4: 7, 8: 4}
#: ... and with ``skipna`` (windows of 3 1.88-2.07x, 5 0.94-1.01x, 8 0.65-0.71x).
_ROW_WINDOW_LANES_SKIPNA = 4

#: Kernels touching fewer elements (inputs and outputs) run on the calling thread alone:
#: waking the pool's threads costs more than half the work saves below about 2^14.5 elements
#: (repeated calls on 28x28 planes, threads still spinning: serial 0.56-0.98x the parallel
#: time at 3-6k elements, about even at 19k, 1.3-1.45x slower at 50k), and a sleeping
#: thread's wake-up cost 70-90 us here (futex wake-ups under virtualisation). PyTorch's
#: ``at::parallel_for`` has the same rule with a grain of 2^15.
_SERIAL_WORK = 1 << 15

#: Prepared calls of problems of at most this many elements (inputs and outputs) run the
#: baseline kernels from a packed plan (:func:`_tiny`, :mod:`.tiny`). Against the tuned
#: kernels' prepared calls (Zen 5, float32 / bfloat16 / float64): 1.15-1.8x faster at 20-80
#: elements, the max backward even at 116 (1.00x) and slower at 180 (0.86x), the forwards
#: even at about 220.
_TINY_WORK = 128

#: Contiguous ranges of work items a parallel kernel is cut into, per thread. Numba divides a
#: parallel loop's iterations into one contiguous block per thread (its default chunk size, 0),
#: so more ranges balance nothing, and each sets up its scratch again (32 a thread until
#: 2026-12-05: float64 4x16x28x28 -> 7x7 average backward 38.5 -> 21.1 us, float32 max forward
#: 47 -> 36, Zen 4). Tests set more, for chunk boundaries everywhere (the results never depend
#: on them).
_CHUNKS_PER_THREAD = 1

#: Bytes of per-channel state (its maximum as stored and an int32 position) of the channels a
#: work item of the channels-last max forward takes side by side: every channel where they fit
#: (2048 float64 ones, 24 KiB, still gained), so that an item reads whole runs of positions,
#: not a slice of each. Against 128 channels an item (Zen 4, A/B): 128x2048x7x7 -> 1x1
#: float16 2.5x, float32 1.25x, float64 1.3x; float32 32x256x56x56 -> 7x7 1.25x, float64 1.8x;
#: 32x512x28x28 -> 7x7 1.4x; float16 64x512x14x14 -> 5x5 0.84-0.9x.
_MAX_CHANNEL_STATE = 1 << 15

#: Accumulator elements the sparse max backward may keep (plane size x chunks): 64 MiB of
#: float32. Larger planes take the checked gather, which needs no per-plane scratch.
_SPARSE_SCRATCH = 1 << 24

#: Outputs and input elements of the planes the sparse max backward takes at once where they
#: follow each other in memory: one index check, one zeroing and one gradient load for many
#: small planes instead of a loop setup each (0.38-0.54x the time on 64x512x49 -> 1, 0.8x on
#: 1x256x559 -> 11 against 1024). 16384 made 16-bit planes of 1000 elements 1.4-1.6x slower
#: (a group's float sums no longer fit the L1 cache).
_SPARSE_GROUP = 1 << 12

#: The same for planes of 32- and 64-bit results under :data:`_SPARSE_GROUP` elements (their
#: sums are the result's own elements; no float scratch to keep in L1): fewer checks and
#: loop setups a plane (two threads, A/B: float32 8x128x8x14x14 -> 3x5x5 1.06x, float64
#: 1.19x; 8x16x35x60 -> 1x9 1.15x and 1.09x; 1x256x559 -> 11 1.05-1.07x; planes of 3136 in
#: memory, 32x256x56x56 -> 7x7, 0.97x and 1.03x; others 0.98-1.02x).
_SPARSE_GROUP_WIDE = 1 << 14

#: Outputs of the planes the sparse max backward takes at once where a plane has at least
#: :data:`_SPARSE_RATIO` elements an output (16-bit results of overlapping windows: at most
#: :data:`_SPARSE_SUMS` too): a work item is then usually the whole chunk, zeroed by one
#: ``memset`` (glibc streams one larger than its share of the cache with non-temporal stores,
#: no read for ownership) and checked by one call, the few writes after. Against at most
#: :data:`_SPARSE_GROUP` elements a group (A/B, 2 threads, Zen 4, same bits): 4x64x8x28x28 ->
#: 1x1x1 float32 1.10x, float64 1.15-1.18x, float16 1.22-1.28x, bfloat16 1.28x, -> (None, 1,
#: 1) 1.16-1.27x; 8x64x224x224 -> 6x6 (51 MB) float32 1.68-2.1x, float64 2.3x; 2x32x32x32x32
#: -> 5x5x5 1.01-1.08x; 1x16x64x64x64 -> 7x9x11 0.99-1.00x.
_SPARSE_GROUP_OUTPUTS = 1 << 14

#: Elements a plane has for each output, at least, for :data:`_SPARSE_GROUP_OUTPUTS`. With
#: 64, 32x256x56x56 -> 7x7 (disjoint windows) took float16 groups of 334 planes, 0.72-0.77x
#: as fast: its 49 writes a plane found their lines gone from the cache.
_SPARSE_RATIO = 128

#: Float sums of a group of those planes for a 16-bit result of overlapping windows (its sums
#: are zeroed and read where the outputs land): 8x16x35x60 -> 1x9 float16 1.21-1.27x,
#: bfloat16 1.21-1.24x.
_SPARSE_SUMS = 1 << 16

#: Elements per plane up to which the sparse max backward takes them (its index check
#: divides in float32, exact up to 2**22: ``max_backward._check_plane``).
_SPARSE_PLANE = 1 << 22

#: Outputs per plane up to which the sparse max backward keeps its window tables (8 bytes an
#: output) and a plane of checked indices per chunk (4 bytes an output).
_SPARSE_OUTPUTS = 1 << 20


BACKEND = CpuBackend()
