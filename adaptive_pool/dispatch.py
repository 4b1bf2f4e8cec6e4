"""Choose the backend from the kind of array: NumPy -> CPU, CUDA arrays -> GPU.

``numba.cuda`` is never imported here: the CUDA backend module is loaded only when a CUDA array
is first seen (an object exposing ``__cuda_array_interface__``, or an array of Numba's CUDA
simulator, whose module can only have been imported by the caller).
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from .cpu.backend import BACKEND as CPU
from .errors import AdaptivePoolTypeError

__all__ = ["backend_for", "layer_for", "is_cuda_array", "cuda_backend"]

#: Array libraries served by an integration layer of their own, by the top-level module of
#: their array type, and the module of that layer (imported on first use).
LAYERS = {"torch": "adaptive_pool.torch", "dask": "adaptive_pool.dask"}

#: Modules whose arrays are Numba CUDA-simulator arrays (they have no interface to test).
SIMULATOR_MODULES = ("numba.cuda.simulator", "numba_cuda.numba.cuda.simulator")


def is_cuda_array(a: object) -> bool:
    """Whether ``a`` lives on a CUDA device (or in Numba's CUDA simulator)."""
    if isinstance(a, np.ndarray):
        return False
    if type(a).__module__.startswith(SIMULATOR_MODULES):
        return True
    try:
        a.__cuda_array_interface__  # PyTorch raises AttributeError on CPU tensors
    except RuntimeError:
        # PyTorch refuses the interface of a CUDA tensor that requires grad.
        return bool(getattr(a, "is_cuda", False))
    except (AttributeError, TypeError):
        return False
    return True


def layer_for(*arrays: object) -> Any:
    """The integration layer (a module with ``run(name, *args, **kwargs)``) that owns the first
    array of a library in :data:`LAYERS` or masked array, or None for NumPy and CUDA arrays."""
    for a in arrays:
        if a is None or type(a) is np.ndarray:
            continue
        if isinstance(a, np.ma.MaskedArray):
            return importlib.import_module("adaptive_pool.masked")
        root = type(a).__module__.partition(".")[0]
        if root in LAYERS:
            return importlib.import_module(LAYERS[root])
    return None


def cuda_backend() -> Any:
    """The CUDA backend, imported on first use."""
    from .cuda.backend import BACKEND  # noqa: PLC0415 - lazy by design

    return BACKEND


#: ndarray subclasses whose only difference is where their data lives: read as plain arrays.
PLAIN_SUBCLASSES = (np.memmap,)


def _check_subclass(a: np.ndarray, name: str) -> None:
    """Refuse ndarray subclasses whose meaning a plain result would drop silently (np.matrix,
    record arrays; masked arrays have a layer of their own); memory-mapped arrays are plain
    data."""
    if type(a) is np.ndarray or isinstance(a, PLAIN_SUBCLASSES):
        return
    kind = f"{type(a).__module__}.{type(a).__name__}"
    raise AdaptivePoolTypeError(
        f"{name} is a {kind}, a numpy.ndarray subclass whose meaning a plain result would lose; "
        f"pass numpy.asarray({name}) to pool its data as a plain array",
        argument=name,
    )


def backend_for(**arrays: object) -> Any:
    """The backend that owns every non-None array in ``arrays`` (keyword = argument name)."""
    if all(a is None or type(a) is np.ndarray for a in arrays.values()):
        return CPU  # the common case, without building the report below
    chosen: dict[str, str] = {}
    for name, a in arrays.items():
        if a is None:
            continue
        if isinstance(a, np.ndarray):
            _check_subclass(a, name)
            chosen[name] = "cpu"
        elif is_cuda_array(a):
            chosen[name] = "cuda"
        else:
            hint = " (call .numpy() on a CPU tensor)" if type(a).__module__ == "torch" else ""
            raise AdaptivePoolTypeError(
                f"{name} must be a numpy.ndarray or a CUDA array (Numba device array, CuPy "
                f"array, PyTorch CUDA tensor), got {type(a).__module__}.{type(a).__name__}{hint}",
                argument=name,
            )
    kinds = set(chosen.values())
    if len(kinds) > 1:
        where = ", ".join(f"{n} on {k}" for n, k in chosen.items())
        raise AdaptivePoolTypeError(
            f"arrays must all be on one device, got {where}",
            argument=next(n for n, k in chosen.items() if k != next(iter(chosen.values()))),
        )
    return cuda_backend() if kinds == {"cuda"} else CPU
