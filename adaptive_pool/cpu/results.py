"""Memory for large NumPy results: the memory of freed results, kept for the next result of
the same size.

glibc's ``malloc`` serves requests of 32 MiB and more with a fresh ``mmap`` every time (its
adaptive threshold stops there), so each such result is paid again in page faults, the kernel
zeroing every page before our kernels write it: a float64 average backward of 1x16x64x64x64
took 4.7 ms into a fresh result and 2.1 ms into one already written (Zen 3, 2026-12-03).
Smaller results come back from ``malloc``'s own heap already. So a result of
:data:`SMALLEST` bytes or more is a view of a block that, once the last array on it is freed,
waits here for the next result of its size class, as CuPy's and PyTorch's CUDA memory pools
keep device memory. At most :data:`BUDGET` bytes wait (``ADAPTIVE_POOL_RESULT_CACHE_MB``; 0
keeps none), the oldest going first; :func:`adaptive_pool.clear_cache` frees them.

A result from a block is a plain, writeable, C-contiguous :class:`numpy.ndarray`, a view of
the block (``flags.owndata`` is False). A block is only taken again once no array uses it: its
holder is freed with the last view on it.
"""

from __future__ import annotations

import os
import threading
from functools import partial
from typing import Callable

import numpy as np

__all__ = ["SMALLEST", "BUDGET", "empty", "allocator", "release", "cached_bytes"]

#: Results of this many bytes or more come from blocks (see the module's docstring).
SMALLEST = 32 << 20

#: Size classes: bytes rounded up to a huge page, so that results of nearby sizes share
#: blocks (at most 2 MiB, 6 %, unused at the end of one).
_CLASS = 2 << 20


def _budget() -> int:
    text = os.environ.get("ADAPTIVE_POOL_RESULT_CACHE_MB", "512")
    try:
        return max(0, int(float(text) * (1 << 20)))
    except ValueError:
        raise ValueError(
            f"ADAPTIVE_POOL_RESULT_CACHE_MB must be a number of MiB (0 keeps none), not {text!r}"
        ) from None


#: Bytes of freed blocks kept at most.
BUDGET = _budget()

_free: list[np.ndarray] = []  # raw uint8 blocks, oldest first
# Taken without waiting where a block comes back: a holder may be freed while this thread
# holds the lock (a garbage collection inside empty()); that block is then simply freed.
_lock = threading.Lock()


def _after_fork() -> None:
    # a child forked while another thread held the lock would wait for it forever
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


class _Holder:
    """The base of every result on a block; gives the block back when it is freed."""

    __slots__ = ("block", "__array_interface__")

    def __init__(self, block: np.ndarray) -> None:
        self.block = block
        self.__array_interface__ = {
            "data": (block.__array_interface__["data"][0], False),
            "shape": block.shape,
            "typestr": "|u1",
            "version": 3,
        }

    def __del__(self) -> None:
        try:
            _give_back(self.block)
        except Exception:  # interpreter shutdown: module globals may be gone
            pass


def _give_back(block: np.ndarray) -> None:
    if block.nbytes > BUDGET or not _lock.acquire(blocking=False):
        return
    try:
        _free.append(block)
        held = sum(b.nbytes for b in _free)
        while held > BUDGET:
            held -= _free.pop(0).nbytes
    finally:
        _lock.release()


def _take(nbytes: int) -> np.ndarray:
    with _lock:
        for k in range(len(_free) - 1, -1, -1):  # the newest first: its pages are warmest
            if _free[k].nbytes == nbytes:
                return _free.pop(k)
    return np.empty(nbytes, np.uint8)


def empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An uninitialised C-contiguous array, from a block where it is :data:`SMALLEST` bytes or
    more."""
    return allocator(shape, dtype)()


def allocator(shape: tuple[int, ...], dtype: np.dtype) -> Callable[[], np.ndarray]:
    """A function of no arguments returning :func:`empty` ``(shape, dtype)``: chosen once for a
    prepared call (``numpy.empty`` itself below :data:`SMALLEST`)."""
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for s in shape:
        nbytes *= int(s)
    if nbytes < SMALLEST or BUDGET <= 0:
        # a partial, not a lambda: no Python frame on the prepared calls' path (0.1 us a call)
        return partial(np.empty, shape, dtype)
    size = -(-nbytes // _CLASS) * _CLASS

    def from_block() -> np.ndarray:
        raw = np.asarray(_Holder(_take(size)))
        return raw[:nbytes].view(dtype).reshape(shape)

    return from_block


def release() -> int:
    """Free every kept block; returns the bytes freed."""
    with _lock:
        freed = sum(b.nbytes for b in _free)
        _free.clear()
    return freed


def cached_bytes() -> int:
    """Bytes of freed results' memory kept for the next results."""
    with _lock:
        return sum(b.nbytes for b in _free)
