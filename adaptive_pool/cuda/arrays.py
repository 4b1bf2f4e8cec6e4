"""CUDA array interop: views, flat aliases, like-kind allocation and streams.

Arrays arrive as Numba device arrays, CuPy arrays, PyTorch CUDA tensors (anything with a
``__cuda_array_interface__``) or, under ``NUMBA_ENABLE_CUDASIM=1``, simulator arrays (which have
no interface: their memory is a NumPy array). They are read through a :class:`DeviceView`
(pointer, shape, byte strides, dtype), never through the library that made them, so neither
CuPy nor PyTorch is imported unless the caller's arrays are theirs.

Kernels get the memory an array spans as a flat run (:class:`~adaptive_pool.cuda.launch.Flat`)
plus ``(offset, *strides)`` in elements (:func:`flat`), like
:func:`adaptive_pool.cpu.backend.flat_geometry`, so one compiled kernel per dtype serves every
layout.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
from numba import cuda

from ..cpu.backend import flat_geometry as _host_flat_geometry
from ..dispatch import SIMULATOR_MODULES
from ..dtypes import bfloat16
from ..errors import AdaptivePoolTypeError, AdaptivePoolValueError
from .kernels import SIMULATOR
from .launch import Flat

if SIMULATOR:  # pragma: no cover - depends on the process's mode
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray as _FakeCUDAArray

__all__ = [
    "DeviceView",
    "kind_of",
    "device_view",
    "span",
    "flat",
    "ghost",
    "empty",
    "read_element",
    "resolve_stream",
]

_KINDS = ("torch", "cupy")


def kind_of(a: object) -> str:
    """``"torch"``, ``"cupy"``, ``"simulator"`` or ``"numba"`` (any other interface exporter)."""
    mod = type(a).__module__
    if SIMULATOR and mod.startswith(SIMULATOR_MODULES):
        return "simulator"
    top = mod.partition(".")[0]
    return top if top in _KINDS else "numba"


def _dtype(typestr: str) -> np.dtype:
    """The NumPy dtype of an interface typestr; PyTorch exports bfloat16 as ``<V2``."""
    if typestr[1:] == "V2":
        return bfloat16
    return np.dtype(typestr)


class DeviceView:
    """A strided view of device memory, independent of the library that owns it.

    ``ptr`` is the address of element ``(0, ..., 0)``; ``strides`` are in bytes. In the simulator
    ``host`` is the NumPy array holding the memory (``ptr`` is then unused). A class with slots,
    not a dataclass: a call makes several, and a frozen dataclass costs microseconds each.
    """

    __slots__ = ("owner", "kind", "ptr", "shape", "strides", "dtype", "readonly", "stream",
                 "host")

    def __init__(
        self,
        owner: Any,
        kind: str,
        ptr: int,
        shape: tuple[int, ...],
        strides: tuple[int, ...],
        dtype: np.dtype,
        readonly: bool = False,
        stream: int | None = None,
        host: np.ndarray | None = None,
    ) -> None:
        self.owner, self.kind, self.ptr, self.shape, self.strides = owner, kind, ptr, shape, strides
        self.dtype, self.readonly, self.stream, self.host = dtype, readonly, stream, host

    def __repr__(self) -> str:
        return (f"DeviceView({self.kind}, ptr={self.ptr:#x}, shape={self.shape}, "
                f"strides={self.strides}, dtype={self.dtype})")

    def _with(self, ptr: int, shape: tuple, strides: tuple, dtype: np.dtype, host: Any
              ) -> "DeviceView":
        return DeviceView(self.owner, self.kind, ptr, shape, strides, dtype, self.readonly,
                          self.stream, host)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def as_dtype(self, dtype: np.dtype) -> "DeviceView":
        """The same memory read as another dtype of the same itemsize."""
        dtype = np.dtype(dtype)
        host = None if self.host is None else self.host.view(dtype)
        return self._with(self.ptr, self.shape, self.strides, dtype, host)

    def expand(self, axis: int) -> "DeviceView":
        """Insert a singleton axis at ``axis``."""
        if self.host is not None:
            host = np.expand_dims(self.host, axis)
            return self._with(self.ptr, host.shape, host.strides, self.dtype, host)
        shape = self.shape[:axis] + (1,) + self.shape[axis:]
        strides = self.strides[:axis] + (0,) + self.strides[axis:]
        return self._with(self.ptr, shape, strides, self.dtype, None)

    def index(self, pos: tuple[int, ...]) -> "DeviceView":
        """The 0-D view of element ``pos``."""
        if self.host is not None:
            return self._with(0, (), (), self.dtype, self.host[tuple(pos) + (Ellipsis,)])
        ptr = self.ptr + sum(int(i) * s for i, s in zip(pos, self.strides))
        return self._with(ptr, (), (), self.dtype, None)


def _interface(a: object) -> dict:
    try:
        return a.__cuda_array_interface__
    except RuntimeError:
        # PyTorch refuses the interface of tensors that require grad; the memory is the same.
        if kind_of(a) == "torch":
            return a.detach().__cuda_array_interface__
        raise


def device_view(a: object, argument: str = "array") -> DeviceView:
    """The :class:`DeviceView` of a CUDA array (or a TypeError naming ``argument``)."""
    kind = kind_of(a)
    if kind == "simulator":
        host = a._ary
        return DeviceView(
            a, kind, 0, host.shape, host.strides, host.dtype, not host.flags.writeable, None, host
        )
    try:
        cai = _interface(a)
    except (AttributeError, RuntimeError, TypeError):
        raise AdaptivePoolTypeError(
            f"{argument} must be a CUDA array (Numba device array, CuPy array, PyTorch CUDA "
            f"tensor), got {type(a).__module__}.{type(a).__name__}",
            argument=argument,
        ) from None
    if cai.get("mask") is not None:
        raise AdaptivePoolTypeError(f"{argument}: masked CUDA arrays are not supported",
                                    argument=argument)
    shape = tuple(map(int, cai["shape"]))
    dtype = _dtype(cai["typestr"])
    strides = cai.get("strides")
    if strides is None:  # C-contiguous
        strides, step = [], dtype.itemsize
        for n in reversed(shape):
            strides.append(step)
            step *= max(n, 1)
        strides.reverse()
    ptr, readonly = cai["data"]
    return DeviceView(
        a, kind, int(ptr or 0), shape, tuple(map(int, strides)), dtype, bool(readonly),
        cai.get("stream"),
    )


def span(v: DeviceView, argument: str = "array") -> tuple[int, int, tuple[int, ...]]:
    """The memory a non-empty view spans: ``(address, elements, (offset, *strides))``.

    ``address`` is the lowest element's, ``offset`` and ``strides`` are in elements from it (as
    :func:`adaptive_pool.cpu.backend.flat_geometry` computes them for NumPy arrays). Byte
    strides that are not whole elements are a ValueError naming ``argument``.
    """
    item = v.dtype.itemsize
    strides, low, high = [], 0, 0
    for n, s in zip(v.shape, v.strides):
        if n > 1:
            if s % item:
                raise AdaptivePoolValueError(
                    f"{argument} has byte strides {v.strides} that are not multiples of its "
                    f"itemsize ({item}); pass a contiguous copy",
                    argument=argument,
                )
            s //= item
            if s < 0:
                low += (n - 1) * s
            else:
                high += (n - 1) * s
            strides.append(s)
        else:
            strides.append(0)
    return v.ptr + low * item, high - low + 1, (-low, *strides)


def flat(v: DeviceView, argument: str = "array") -> tuple[Flat, tuple[int, ...]]:
    """The memory ``v`` spans as a :class:`~adaptive_pool.cuda.launch.Flat` run and
    ``(offset, *strides)`` in elements.

    Any strides work (negative, zero, channels-last) without a copy. The run is writeable:
    kernels never write their inputs.
    """
    address, n, geometry = span(v, argument)  # (in the simulator too: it checks the strides)
    if v.host is not None:
        a, geometry = _host_flat_geometry(v.host)
        fake = _FakeCUDAArray(a)
        return Flat(0, a.size, a.dtype, fake, fake), tuple(int(g) for g in geometry)
    if 0 in v.shape:
        return Flat(0, 0, v.dtype, v.owner), (0,) * (len(v.shape) + 1)
    return Flat(address, n, v.dtype, v.owner), geometry


class _Ghost:
    """Array interface of a host array *describing* device memory; it is never dereferenced."""

    def __init__(self, v: DeviceView) -> None:
        self.__array_interface__ = {
            "version": 3,
            "data": (v.ptr, True),
            "shape": v.shape,
            "strides": v.strides,
            "typestr": f"|V{v.dtype.itemsize}",
        }


def ghost(v: DeviceView) -> np.ndarray:
    """A NumPy array with ``v``'s address, shape and strides, for stride arithmetic only.

    :func:`numpy.shares_memory` and friends work on it exactly; reading it would crash, and
    nothing does.
    """
    if v.host is not None:
        return v.host
    return np.asarray(_Ghost(v))


def _torch_dtype(torch: Any, dtype: np.dtype) -> Any:
    name = "bfloat16" if dtype == bfloat16 else np.dtype(dtype).name
    return getattr(torch, name)


def empty(shape: tuple[int, ...], dtype: np.dtype, like: object) -> Any:
    """A C-contiguous uninitialised array of the same kind (and device) as ``like``."""
    kind = kind_of(like)
    if kind == "torch":
        torch = sys.modules["torch"]
        return torch.empty(shape, dtype=_torch_dtype(torch, dtype), device=like.device)
    if kind == "cupy":
        cupy = sys.modules["cupy"]
        with like.device:
            return cupy.empty(shape, dtype)
    return cuda.device_array(shape, dtype)


def read_element(v: DeviceView) -> Any:
    """The value of a 0-D view, copied to the host (a Python scalar)."""
    dtype = v.dtype
    if v.host is not None:
        return v.host[()].item() if dtype != bfloat16 else float(v.host[()])
    storage = np.dtype(np.int16) if dtype == bfloat16 else dtype
    desc = {"shape": (1,), "strides": None, "typestr": storage.str, "data": (v.ptr, True),
            "version": 3}
    value = cuda.from_cuda_array_interface(desc, owner=v.owner, sync=False).copy_to_host()
    return float(value.view(bfloat16)[0]) if dtype == bfloat16 else value[0].item()


#: Numba stream objects by handle: making one costs microseconds (a context lookup through
#: the driver) and a call needs one. They own nothing (an external stream is not destroyed
#: with its wrapper), so keeping them is safe.
_STREAMS: dict[int, Any] = {}


def _stream_from_handle(handle: int) -> Any:
    """The Numba stream of a handle (0, 1, 2: Numba's default, the legacy and the per-thread
    default streams)."""
    stream = _STREAMS.get(handle)
    if stream is None:
        if handle == 0:
            stream = cuda.default_stream()
        elif handle == 1:
            stream = cuda.legacy_default_stream()
        elif handle == 2:
            stream = cuda.per_thread_default_stream()
        else:
            stream = cuda.external_stream(handle)
        if len(_STREAMS) >= 256:
            _STREAMS.clear()
        _STREAMS[handle] = stream
    return stream


def resolve_stream(stream: Any, *views: DeviceView) -> Any:
    """The Numba stream to queue work on.

    ``stream`` may be a Numba stream, an int handle, or an object with ``__cuda_stream__``
    (cuda.core), ``cuda_stream`` (PyTorch) or ``ptr`` (CuPy). ``None`` means the producer's
    stream: PyTorch's current stream for tensors, else the ``stream`` entry of an array's
    interface (CuPy exports one), else the default stream.
    """
    if stream is None:
        for v in views:
            if v.kind == "torch":
                current = sys.modules["torch"].cuda.current_stream(v.owner.device)
                return _stream_from_handle(int(current.cuda_stream))
        for v in views:
            if v.stream is not None:
                return _stream_from_handle(int(v.stream))
        return _stream_from_handle(0)
    mod = type(stream).__module__
    if mod.startswith(("numba.cuda", "numba_cuda")):
        return stream
    if isinstance(stream, (int, np.integer)) and not isinstance(stream, bool):
        return _stream_from_handle(int(stream))
    protocol = getattr(stream, "__cuda_stream__", None)  # cuda.core's stream protocol
    if callable(protocol):
        return _stream_from_handle(int(protocol()[1]))
    for attr in ("cuda_stream", "ptr"):
        handle = getattr(stream, attr, None)
        if isinstance(handle, (int, np.integer)) and not isinstance(handle, bool):
            return _stream_from_handle(int(handle))
    raise AdaptivePoolTypeError(
        f"stream must be None, a Numba stream, an int handle or a PyTorch/CuPy stream, got "
        f"{type(stream).__module__}.{type(stream).__name__}",
        argument="stream",
    )
