"""Kernel launches: Numba's launch path once per compiled kernel, then a lean one.

A launch through a Numba dispatcher types every argument, looks the overload up and marshals
each array through a device-array object: most of the 0.5-2 ms that a call on a small problem
cost on an H200 (docs/gpu.md). The kernels here take only flat 1-D arrays (:class:`Flat`) and
tuples of int64, whose marshalled form is known: ``(meminfo, parent, size, itemsize, address,
shape, stride)`` for an array, the integers for a tuple. So the first launch of a kernel for a
set of array dtypes goes through Numba (which compiles it), and the marshalled arguments of that
launch, as Numba's own ``_prepare_args`` makes them, are compared with ours. Where they are
equal, every later launch hands ours straight to ``cuda.core.launch`` with the kernel's compiled
function; where not (another numba-cuda, a debug build), every launch stays on Numba's path.

``ADAPTIVE_POOL_CUDA_LAUNCH=numba`` keeps every launch on Numba's path (for comparisons).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from numba import cuda

from .kernels import SIMULATOR

__all__ = ["Flat", "launch", "lean_launches"]

#: Whether launches may leave Numba's path once checked (never in the simulator).
LEAN = not SIMULATOR and os.environ.get("ADAPTIVE_POOL_CUDA_LAUNCH", "lean") != "numba"


class Flat:
    """A flat 1-D run of device memory as the kernels take it: address, elements, dtype.

    ``owner`` keeps the memory alive (and owns the Numba alias made for Numba's launch path);
    ``numba`` is that alias, made on first use (given at once in the simulator).
    """

    __slots__ = ("ptr", "size", "dtype", "owner", "_numba")

    def __init__(self, ptr: int, size: int, dtype: np.dtype, owner: Any, numba: Any = None):
        self.ptr, self.size, self.dtype, self.owner, self._numba = ptr, size, dtype, owner, numba

    @classmethod
    def of(cls, a: Any) -> "Flat":
        """A 1-D contiguous Numba device array (or simulator array) as a :class:`Flat`."""
        ptr = 0 if SIMULATOR else a.__cuda_array_interface__["data"][0]
        return cls(int(ptr or 0), int(a.size), a.dtype, a, a)

    @property
    def numba(self) -> Any:
        """The Numba device array over the same memory (what Numba's launch path takes)."""
        if self._numba is None:
            if self.size == 0:
                self._numba = cuda.device_array(0, self.dtype)
            else:
                desc = {"shape": (self.size,), "strides": None, "typestr": self.dtype.str,
                        "data": (self.ptr, False), "version": 3}
                self._numba = cuda.from_cuda_array_interface(desc, owner=self.owner, sync=False)
        return self._numba


def _marshal(args: tuple) -> list:
    """The kernel parameters of ``args`` as Numba lays them out (Python ints are intptr_t)."""
    out: list = []
    for a in args:
        if type(a) is Flat:
            item = a.dtype.itemsize
            out += (0, 0, a.size, item, a.ptr, a.size, item)
        else:
            out += a
    return out


class _Lean:
    """A compiled kernel and what launching it without Numba's dispatcher takes.

    Its compiled function is kept per CUDA context (one per device), found by the driver's
    current context: Numba's own lookup of the current context costs several driver calls.
    """

    __slots__ = ("library", "core_launch", "config", "configs", "functions", "current")

    def __init__(self, kernel: Any, core_launch: Any, config: Any, current: Any) -> None:
        self.library = kernel._codelibrary
        self.core_launch, self.config, self.current = core_launch, config, current
        self.configs: dict[tuple[int, int], Any] = {}
        self.functions: dict[int, Any] = {}

    def __call__(self, blocks: int, threads: int, stream: Any, args: tuple) -> None:
        config = self.configs.get((blocks, threads))
        if config is None:
            config = self.configs[blocks, threads] = self.config(
                grid=blocks, block=threads, shmem_size=0
            )
        context = int(self.current()[1])
        function = self.functions.get(context)
        if function is None:
            # Numba's lookup, which also makes a context current where none is (0: not kept)
            function = self.library.get_cufunc().kernel
            if context:
                self.functions[context] = function
        self.core_launch(_core_stream(stream), config, function, *_marshal(args))


#: cuda.core streams by handle.
_CORE_STREAMS: dict[int, Any] = {}


def _core_stream(stream: Any) -> Any:
    """The cuda.core stream of a Numba stream, as Numba's launch makes it."""
    handle = int(stream.handle or 0)
    core = _CORE_STREAMS.get(handle)
    if core is None:
        from numba.cuda.cudadrv import driver  # noqa: PLC0415

        if len(_CORE_STREAMS) >= 256:
            _CORE_STREAMS.clear()
        core = _CORE_STREAMS[handle] = driver._to_core_stream(stream)
    return core


#: (dispatcher, array dtypes) -> a :class:`_Lean` launch, or False where Numba's path stays.
_LEAN: dict[tuple, Any] = {}


def _key(kernel: Any, args: tuple) -> tuple:
    return (kernel, *[a.dtype for a in args if type(a) is Flat])


def _same(numba_arg: Any, ours: int) -> bool:
    """Whether Numba's marshalled argument is 8 bytes holding ``ours`` (a Python int, which
    ``cuda.core.launch`` passes as an intptr_t)."""
    if type(numba_arg) is int:
        return numba_arg == ours
    value = getattr(numba_arg, "value", numba_arg)  # a ctypes or NumPy integer
    try:
        dtype = np.dtype(type(numba_arg))
    except TypeError:
        return False
    return dtype.kind in "iu" and dtype.itemsize == 8 and int(value) == ours


def _checked(dispatcher: Any, args: tuple, stream: Any) -> Any:
    """A :class:`_Lean` launch for ``args``' types, if Numba's marshalling of them (just used
    to launch them) equals :func:`_marshal`'s; else False."""
    try:
        from numba.cuda import dispatcher as nd  # noqa: PLC0415

        numba_args = [a.numba if type(a) is Flat else a for a in args]
        types = tuple(dispatcher.typeof_pyval(a) for a in numba_args)
        kernel = dispatcher.overloads.get(types)
        if kernel is None or kernel.debug or kernel.cooperative or dispatcher.extensions:
            return False
        expected: list = []
        for t, v in zip(kernel.argument_types, numba_args):
            kernel._prepare_args(t, v, stream, [], expected)
        ours = _marshal(args)
        if len(expected) != len(ours) or not all(map(_same, expected, ours)):
            return False
        from cuda.bindings.driver import cuCtxGetCurrent  # noqa: PLC0415

        return _Lean(kernel, nd.launch, nd.LaunchConfig, cuCtxGetCurrent)
    except Exception:  # noqa: BLE001 - any surprise in Numba's internals keeps Numba's path
        return False


def launch(kernel: Any, blocks: int, threads: int, stream: Any, args: tuple) -> None:
    """Launch ``kernel[blocks, threads, stream](*args)``; ``args`` are :class:`Flat` arrays
    and tuples of integers."""
    if LEAN:
        key = _key(kernel, args)
        lean = _LEAN.get(key)
        if lean:
            lean(blocks, threads, stream, args)
            return
    kernel[blocks, threads, stream](*[a.numba if type(a) is Flat else a for a in args])
    if LEAN and lean is None:  # the first launch of these types: may the next ones be lean?
        _LEAN[key] = _checked(kernel, args, stream)


def lean_launches() -> dict[str, bool]:
    """Which kernels (by name and array dtypes) launch on the lean path: for tests and tools."""
    return {
        f"{k[0].py_func.__name__}{tuple(str(d) for d in k[1:])}": bool(v)
        for k, v in _LEAN.items()
    }
