"""Tiny problems: the baseline kernels, called from one packed plan.

On a problem of a few dozen elements a call's time is what surrounds the work: a tuned
kernel's chunk sets up its scratch, tables and loop order (0.3 us on a 4x4 plane), and Python
hands compiled code each geometry as a tuple of ints, which it unboxes one element at a time
(0.35 us for four tuples). A prepared call of such a problem
(:meth:`~adaptive_pool.executors.Executor.prepared`) calls one of these functions instead, with
its flat arrays and one int64 ``plan``: the baseline kernel's address, ``dims``, the three
geometries and the window table. Each runs its kernel of :mod:`~adaptive_pool.cpu.baseline`
(plain loops, no setup) through that address (:func:`~adaptive_pool.cpu.calls.call`), the code
every other call of the kernel runs, whose results are the tuned kernels' bit for bit.
"""

from __future__ import annotations

from functools import partial
from typing import Callable

import numba
import numpy as np

from . import baseline
from .access import borrow
from .calls import address, call, compiled
from .work import _BODY

__all__ = ["avg_pool", "avg_pool_backward", "launch", "max_pool", "max_pool_backward"]

#: Entries before the window table in a plan: address, dims, three geometries.
_HEAD = 1 + 8 + 3 * 6


def launch(f, args: tuple, like: tuple) -> Callable[..., object]:
    """``partial(f, plan[, skip])``, bound to ``f``'s compiled code for arrays of the types of
    ``like``: ``f`` then runs its baseline kernel (:mod:`.baseline`'s function of the same
    name) as ``kernel(*args)`` would on the arrays it is given, from a plan of the kernel's
    address, ``dims``, the geometries (``args``' tuples of six ints, in their order) and the
    window table ``tab`` (``args`` named by the kernel's parameters)."""
    kernel = getattr(baseline, f.__name__)
    named = dict(zip(kernel.py_func.__code__.co_varnames, args))
    geometries = [a for a in args if isinstance(a, tuple) and len(a) == 6]
    head = [address(kernel, args, index=False), *named["dims"]]
    head += [v for g in geometries + [(0,) * 6] * (3 - len(geometries)) for v in g]
    p = np.concatenate([np.array(head, np.int64), named["tab"]])
    lead = (named["skip"],) if "skip" in named else ()
    return partial(compiled(f, (p, *lead, *like), index=False).entry_point, p, *lead)


@numba.njit(inline="always")
def _dims(p):
    return (p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8])


@numba.njit(inline="always")
def _geometry(p, k):
    b = 9 + 6 * k
    return (p[b], p[b + 1], p[b + 2], p[b + 3], p[b + 4], p[b + 5])


# (each takes ``p`` without a reference count: the prepared call that hands it over holds it)


@numba.njit(**_BODY)
def avg_pool(p, skip, x, y):
    """:func:`~adaptive_pool.cpu.baseline.avg_pool` of ``x`` into ``y``."""
    p = borrow(p)
    call(baseline.avg_pool, p[0],
         (x, _geometry(p, 0), y, _geometry(p, 1), p[_HEAD:], _dims(p), skip))


@numba.njit(**_BODY)
def max_pool(p, skip, x, y, ind):
    """:func:`~adaptive_pool.cpu.baseline.max_pool` of ``x`` into ``y`` and ``ind``."""
    p = borrow(p)
    call(baseline.max_pool, p[0],
         (x, _geometry(p, 0), y, _geometry(p, 1), ind, _geometry(p, 2), p[_HEAD:], _dims(p),
          skip))


@numba.njit(**_BODY)
def avg_pool_backward(p, skip, go, gi, x):
    """:func:`~adaptive_pool.cpu.baseline.avg_pool_backward` of ``go`` into ``gi``; ``x``
    (None where not read) for its NaN with ``skip``."""
    p = borrow(p)
    if x is None:  # (the kernel reads its x argument with skip only: the gradients stand in)
        x = go
    call(baseline.avg_pool_backward, p[0],
         (go, _geometry(p, 0), gi, _geometry(p, 1), p[_HEAD:], _dims(p), x, _geometry(p, 2),
          skip))


@numba.njit(**_BODY)
def max_pool_backward(p, go, ind, gi):
    """:func:`~adaptive_pool.cpu.baseline.max_pool_backward`: the C-order position of the
    first index outside its window (``gi`` untouched), else -1."""
    p = borrow(p)
    return call(baseline.max_pool_backward, p[0],
                (go, _geometry(p, 0), ind, _geometry(p, 1), gi, _geometry(p, 2), p[_HEAD:],
                 _dims(p)))
