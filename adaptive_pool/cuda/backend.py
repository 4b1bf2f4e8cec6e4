"""The CUDA backend: CUDA arrays in, ``@cuda.jit`` kernels, CUDA arrays of the same kind out.

Driven by :class:`adaptive_pool.executors.Executor` through the same methods as
:class:`adaptive_pool.cpu.backend.CpuBackend`. Arrays are handled as
:class:`~adaptive_pool.cuda.arrays.DeviceView` objects (``view5`` returns one), so Numba, CuPy and
PyTorch arrays, including PyTorch's bfloat16, go through one path. All work is queued on the
call's stream (see :func:`~adaptive_pool.cuda.arrays.resolve_stream`); the one synchronisation is
the read-back of the max backward's index check.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np
from numba import cuda

from ..cpu.backend import BACKEND as _CPU
from ..dispatch import is_cuda_array
from ..errors import AdaptivePoolTypeError, AdaptivePoolValueError
from ..limits import host_memory_available
from . import kernels
from .arrays import (
    DeviceView,
    device_view,
    empty,
    flat,
    ghost,
    read_element,
    resolve_stream,
)
from .kernels import NO_BAD_INDEX, SIMULATOR
from .launch import Flat, launch

if SIMULATOR:  # pragma: no cover - depends on the process's mode
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray as _FakeCUDAArray

    _DeviceNDArray = None
else:
    from numba.cuda.cudadrv.devicearray import DeviceNDArray as _DeviceNDArray

__all__ = ["CudaBackend", "BACKEND"]

_UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_NO_BAD = int(NO_BAD_INDEX)


class _Flag:
    """The index check's one-element uint64 result on the device, and where it is read back.

    On a GPU it is reset by a memset and read into pinned memory through the driver: Numba's
    copies (to the device from pageable memory, back into a new array) cost ~100 us a check.
    """

    def __init__(self) -> None:
        self.device = Flat.of(cuda.device_array(1, np.uint64))
        self.host = None if SIMULATOR else cuda.pinned_array(1, np.uint64)

    def reset(self, stream: Any) -> None:
        if SIMULATOR:
            self.device.numba.copy_to_device(np.full(1, NO_BAD_INDEX, np.uint64), stream=stream)
        else:
            _driver().cuMemsetD8Async(self.device.ptr, 0xFF, 8, stream.handle)

    def read(self, stream: Any) -> int:
        if SIMULATOR:
            return int(self.device.numba.copy_to_host(stream=stream)[0])
        drv = _driver()
        drv.cuMemcpyDtoHAsync(self.host.ctypes.data, self.device.ptr, 8, stream.handle)
        drv.cuStreamSynchronize(stream.handle)
        return int(self.host[0])


#: When the forwards run a warp per output window rather than a thread (the same bits either
#: way): windows of at least WARP_WINDOW elements on average, or of an eighth of that when
#: there are at most WARP_FEW outputs (too few threads to fill the GPU). Nsight Compute on an
#: H200 (docs/gpu.md): warps 23x faster on 256 windows of 6,272, 2.3x on 18,432 of 1,394 and 3x
#: on 8,000 of 262; threads 1.3-1.6x faster on 16,384 and 50,176 windows of 256, and several
#: times faster on many small windows.
WARP_WINDOW = 1024
WARP_FEW = 8192


def _warps(dims: tuple[int, ...]) -> bool:
    n, c, d, h, w, od, oh, ow = dims
    cells = od * oh * ow
    volume = d * h * w
    return volume >= WARP_WINDOW * cells or (
        8 * volume >= WARP_WINDOW * cells and n * c * cells <= WARP_FEW
    )


def _disjoint(dims: tuple[int, ...]) -> bool:
    """Whether no element lies in two windows: along each axis the windows tile the input
    (``I % O == 0``, ``O <= I``)."""
    return all(o <= i and i % o == 0 for i, o in zip(dims[2:5], dims[5:8]))


def _driver() -> Any:
    """Numba's wrapper of the CUDA driver API (it raises CudaAPIError on errors)."""
    from numba.cuda.cudadrv.driver import driver  # noqa: PLC0415

    return driver


class _BoundTable:
    """The window table bound to a caller's workspace, copied in on the first kernel's stream.

    The copy is queued on the stream the kernels run on, so it cannot overtake earlier work on
    that stream that still reads the workspace.
    """

    def __init__(self, device: Flat, host: np.ndarray) -> None:
        self.device = device
        self.host = host
        self._copied = False

    def on(self, stream: Any) -> Flat:
        if not self._copied:
            self.device.numba.copy_to_device(self.host, stream=stream)
            self._copied = True
        return self.device


class CudaBackend:
    """Runs the executors' kernels on CUDA arrays (Numba, CuPy, PyTorch, or the simulator's).

    Its launches are not prepared ahead: the ``memo`` the executors hand every run method
    (the CPU backend's launches by geometry) is ignored; :mod:`.launch` keeps what launching a
    compiled kernel again takes."""

    name = "cuda"
    array_kind = "CUDA array (Numba device array, CuPy array, PyTorch CUDA tensor)"

    def __init__(self) -> None:
        self._max_blocks: int | None = None
        self._local = threading.local()
        self._empty_counts: Any = None

    # -- arrays ------------------------------------------------------------------------------
    def owns(self, a: object) -> bool:
        return is_cuda_array(a)

    def describe(self, a: object) -> tuple[tuple[int, ...], np.dtype]:
        if type(a) is _DeviceNDArray:  # its own attributes, without building its interface
            return a.shape, a.dtype
        v = device_view(a)
        return v.shape, v.dtype

    def read_element(self, a: object, pos: tuple[int, ...]) -> object:
        return read_element(device_view(a).index(pos))

    def view5(self, a: object, storage, batched: bool, spatial: int) -> DeviceView:
        """``a`` as its storage dtype with singleton N (unbatched) and leading spatial axes
        (D for 2-D, D and H for 1-D): a 5-D view."""
        v = a if isinstance(a, DeviceView) else device_view(a)
        if storage is not None and v.dtype != storage:
            v = v.as_dtype(storage)
        if not batched:
            v = v.expand(0)
        for _ in range(3 - spatial):
            v = v.expand(2)
        return v

    def empty(self, shape: tuple[int, ...], dtype: np.dtype, like: object = None) -> Any:
        return empty(tuple(int(s) for s in shape), np.dtype(dtype), like)

    def zero(self, a: object, stream: object = None) -> None:
        v = device_view(a, "out")
        if v.size:
            self._zero(v, resolve_stream(stream, v))

    def _zero(self, v: DeviceView, s: Any) -> None:
        v = v.as_dtype(_UINT_OF_SIZE[v.dtype.itemsize])  # 0 bits are +0.0 in every float type
        while len(v.shape) < 5:
            v = v.expand(0)
        af, ag = flat(v, "out")
        if af.size == v.size and not SIMULATOR:  # one run of memory (outputs never overlap)
            _driver().cuMemsetD8Async(af.ptr, 0, af.size * v.dtype.itemsize, s.handle)
            return
        self._launch(kernels.fill_zero, v.size, s, af, ag, tuple(int(n) for n in v.shape))

    def self_overlapping(self, a: object) -> bool:
        v = device_view(a)
        return v.size > 1 and _CPU.self_overlapping(ghost(v))

    def shares_memory(self, a: object, b: object) -> bool:
        va, vb = device_view(a), device_view(b)
        if va.size == 0 or vb.size == 0:
            return False
        return _CPU.shares_memory(ghost(va), ghost(vb))

    def is_writeable(self, a: object) -> bool:
        return not device_view(a).readonly

    def writes_through(self, a: object) -> bool:
        """Always: arrays whose strides are not whole elements are refused, not copied."""
        return True

    def memory_available(self) -> int | None:
        """The least of the host's (tables are built there) and the device's free memory."""
        host = host_memory_available()
        try:
            free, _ = cuda.current_context().get_memory_info()
        except Exception:  # noqa: BLE001 - the simulator and some drivers cannot say
            return host
        return int(free) if host is None else min(host, int(free))

    # -- workspace ---------------------------------------------------------------------------
    def tables(self, tab: np.ndarray) -> Flat:
        """Upload the window tables once (the executor's own device workspace)."""
        return Flat.of(cuda.to_device(tab))

    def bind_workspace(self, tab: np.ndarray, workspace: object, size: int) -> _BoundTable:
        """Bind the window tables to a caller's device ``uint8`` workspace.

        The table is copied in on the stream of the kernels that read it.
        """
        if isinstance(workspace, np.ndarray) or not is_cuda_array(workspace):
            raise AdaptivePoolTypeError(
                f"workspace must be a CUDA array of uint8 (Numba device array, CuPy array, "
                f"PyTorch CUDA tensor) for the CUDA backend, got "
                f"{type(workspace).__module__}.{type(workspace).__name__}",
                argument="workspace",
            )
        v = device_view(workspace, "workspace")
        contiguous = len(v.shape) == 1 and (v.shape[0] <= 1 or v.strides[0] == 1)
        if v.dtype != np.uint8 or not contiguous:
            raise AdaptivePoolTypeError(
                f"workspace must be a contiguous 1-D uint8 array, got dtype {v.dtype} with shape "
                f"{v.shape} and strides {v.strides}",
                argument="workspace",
            )
        if v.size < size:
            raise AdaptivePoolValueError(
                f"workspace has {v.size} bytes; this executor needs {size}", argument="workspace"
            )
        if v.readonly:
            raise AdaptivePoolValueError("workspace is read-only", argument="workspace")
        if v.host is not None:
            if v.host.ctypes.data % 8:
                raise AdaptivePoolValueError(
                    "workspace must be 8-byte aligned", argument="workspace"
                )
            fake = _FakeCUDAArray(v.host[:size].view(np.int64))
            device = Flat(0, size // 8, fake.dtype, fake, fake)
        else:
            if v.ptr % 8:
                raise AdaptivePoolValueError(
                    "workspace must be 8-byte aligned (CUDA allocations are; a slice of one may "
                    "not be)",
                    argument="workspace",
                )
            device = Flat(v.ptr, size // 8, np.dtype(np.int64), workspace)
        return _BoundTable(device, tab)

    # -- kernels -----------------------------------------------------------------------------
    def _launch(self, kernel: Any, total: int, stream: Any, *args: Any, warps: bool = False
                ) -> None:
        """Launch a grid-stride kernel over ``total`` work items on ``stream`` (with ``warps``,
        a warp-per-item kernel over ``total`` items)."""
        if total <= 0:
            return
        if SIMULATOR:
            # One OS thread per simulated CUDA thread: few threads, and a grid smaller than the
            # problem so that the grid-stride loops are exercised; two warps a block to warp
            # kernels, so that their blocks hold more than one.
            threads = 2 * kernels.LANES if warps else 8
            blocks = min(math.ceil(total * (kernels.LANES if warps else 1) / threads), 2)
        else:
            if self._max_blocks is None:
                sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
                self._max_blocks = max(128, 16 * sms)
            # At least 128 blocks (idle ones exit at once): smaller grids earn a Numba
            # low-occupancy warning on every small problem.
            threads = kernels.WARP_BLOCK if warps else 128
            per_block = threads // kernels.LANES if warps else threads
            blocks = min(max(math.ceil(total / per_block), 128), self._max_blocks)
        launch(kernel, blocks, threads, stream, args)

    @staticmethod
    def _tab(tab: Any, stream: Any) -> Any:
        return tab.on(stream) if isinstance(tab, _BoundTable) else tab

    @staticmethod
    def _dims(dims) -> tuple[int, ...]:
        return tuple(int(d) for d in dims)

    def avg_pool(
        self, x, y, tab, dims, stream=None, skipna=False, sized_windows=True, memo=None
    ) -> None:
        # one thread per output reads its window from the tables, whatever they hold
        s = resolve_stream(stream, x, y)
        xf, xg = flat(x, "x")
        yf, yg = flat(y, "out")
        dims = self._dims(dims)
        n, c, _, _, _, od, oh, ow = dims
        ks = kernels.kernels_for(x.dtype, skipna)
        warps = _warps(dims)
        self._launch(ks.avg_pool_warps if warps else ks.avg_pool, n * c * od * oh * ow, s, xf, xg,
                     yf, yg, self._tab(tab, s), dims, warps=warps)

    def avg_pool_backward(
        self, go, gi, tab, dims, stream=None, skipna=False, x=None, memo=None
    ) -> None:
        """The gather (where windows tile the input, each element's one term from the
        tables); with ``skipna`` the counts of each window's non-NaN elements of ``x`` are
        computed first (a temporary of one int64 per output cell)."""
        s = resolve_stream(stream, go, gi)
        gf, gg = flat(go, "grad_output")
        if_, ig = flat(gi, "out")
        dims = self._dims(dims)
        n, c, d, h, w, od, oh, ow = dims
        ks = kernels.kernels_for(go.dtype, skipna)
        t = self._tab(tab, s)
        if skipna:
            xf, xg = flat(x, "x")
            cnt = Flat.of(cuda.device_array(n * c * od * oh * ow, np.int64, stream=s))
            self._launch(ks.count_valid, cnt.size, s, xf, xg, cnt, t, dims)
        else:
            xf, xg, cnt = gf, gg, self._no_counts()  # unread without skipna
        k = ks.avg_pool_backward_tiled if _disjoint(dims) else ks.avg_pool_backward
        self._launch(k, n * c * d * h * w, s, gf, gg, if_, ig, t, dims, xf, xg, cnt)

    def _no_counts(self) -> Flat:
        if self._empty_counts is None:
            self._empty_counts = Flat.of(cuda.device_array(1, np.int64))
        return self._empty_counts

    def max_pool(self, x, y, ind, tab, dims, stream=None, skipna=False, memo=None) -> None:
        s = resolve_stream(stream, x, y, ind)
        xf, xg = flat(x, "x")
        yf, yg = flat(y, "out")
        jf, jg = flat(ind, "indices_out")
        dims = self._dims(dims)
        n, c, _, _, _, od, oh, ow = dims
        ks = kernels.kernels_for(x.dtype, skipna)
        warps = _warps(dims)
        self._launch(ks.max_pool_warps if warps else ks.max_pool, n * c * od * oh * ow, s, xf, xg,
                     yf, yg, jf, jg, self._tab(tab, s), dims, warps=warps)

    def _flag(self) -> _Flag:
        """This thread's index-check flag (a check reads it back before it returns, so it is
        idle between calls)."""
        flag = getattr(self._local, "flag", None)
        if flag is None:
            flag = self._local.flag = _Flag()
        return flag

    def _first_bad_index(self, ind, tab, dims, stream=None) -> int:
        """Flat position (C order of ``ind``) of the first out-of-window index, or -1.

        The check runs on the stream; its one-element result is read back.
        """
        s = resolve_stream(stream, ind)
        jf, jg = flat(ind, "indices")
        n, c, _, _, _, od, oh, ow = dims
        flag = self._flag()
        flag.reset(s)
        self._launch(kernels.first_bad_index, n * c * od * oh * ow, s, jf, jg,
                     self._tab(tab, s), dims, flag.device)
        bad = flag.read(s)
        return -1 if bad == _NO_BAD else bad

    def max_pool_backward(
        self, go, ind, gi, tab, dims, stream=None, fresh=False, memo=None
    ) -> int:
        """Check the indices and compute the gradient; return the flat position of the first
        index outside its window, or -1.

        Where no two windows share an element, a scatter: ``gi`` zeroed, each output's
        gradient written to its index (its only contribution). A ``fresh`` result (the call's
        own, which may be left partly written) is checked as it is written, a caller's before.
        Elsewhere the gather, every element summing its covering outputs' gradients in order,
        once every index has passed the check.
        """
        dims = self._dims(dims)
        scatter = _disjoint(dims)
        if not (scatter and fresh):
            bad = self._first_bad_index(ind, tab, dims, stream)
            if bad >= 0:
                return bad
        s = resolve_stream(stream, go, ind, gi)
        gf, gg = flat(go, "grad_output")
        jf, jg = flat(ind, "indices")
        if_, ig = flat(gi, "out")
        n, c, d, h, w, od, oh, ow = dims
        ks = kernels.kernels_for(go.dtype)
        if not scatter:
            self._launch(ks.max_pool_backward, n * c * d * h * w, s, gf, gg, jf, jg, if_, ig,
                         self._tab(tab, s), dims)
            return -1
        self._zero(gi, s)
        flag = self._flag()
        flag.reset(s)
        self._launch(ks.max_pool_backward_scatter, n * c * od * oh * ow, s, gf, gg, jf, jg, if_,
                     ig, self._tab(tab, s), dims, flag.device)
        if not fresh:
            return -1
        bad = flag.read(s)
        return -1 if bad == _NO_BAD else bad


BACKEND = CudaBackend()


def is_available() -> bool:
    """Whether CUDA arrays can be computed on here: a usable GPU, or Numba's simulator."""
    try:
        return bool(SIMULATOR or cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken driver means "not available", not a crash
        return False


def to_device(a: np.ndarray, stream: Any = None) -> Any:
    """Copy a NumPy array to the GPU as a Numba device array (16-bit dtypes included)."""
    a = np.ascontiguousarray(a)
    if a.dtype.itemsize == 2 and a.dtype.kind == "V":  # bfloat16: copy the bits, keep the dtype
        return cuda.to_device(a.view(np.uint16), stream=stream or 0).view(a.dtype)
    return cuda.to_device(a, stream=stream or 0)


def to_host(a: Any) -> np.ndarray:
    """Copy a Numba, CuPy or PyTorch CUDA array back to a NumPy array of the same dtype."""
    if hasattr(a, "copy_to_host"):
        if a.dtype.itemsize == 2 and a.dtype.kind == "V":  # bfloat16 exports no buffer format
            return a.view(np.uint16).copy_to_host().view(a.dtype)
        return a.copy_to_host()
    if hasattr(a, "get"):  # CuPy
        return a.get()
    if type(a).__module__.startswith("torch"):
        import torch  # noqa: PLC0415 - the input is already a PyTorch tensor

        dtype = BACKEND.describe(a)[1]
        if dtype.kind == "V":  # bfloat16: NumPy has no torch bfloat16, so copy the bits
            return a.detach().view(torch.int16).cpu().numpy().view(dtype)
        return a.detach().cpu().numpy()
    raise AdaptivePoolTypeError(f"cannot copy {type(a).__name__} to the host", argument="a")


def synchronize() -> None:
    """Wait for all work queued on the current device."""
    cuda.synchronize()


def device_name() -> str:
    """The current CUDA device's name."""
    name = getattr(cuda.get_current_device(), "name", "Numba's CUDA simulator")
    return name.decode() if isinstance(name, bytes) else str(name)
