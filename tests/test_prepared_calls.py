"""Repeated small calls: prepared calls and kernels run as one chunk on the calling thread.

A NumPy call that passed every check leaves a prepared call (``Executor.prepared``) behind; a
later call with plain arrays of the same shapes, dtypes and arguments takes it and skips the
checks. These tests hold it to the long path bit for bit and to the reference, and check that
nothing that would fail a check ever reaches it. Small problems run each kernel's chunk function
on the calling thread; they must give the parallel kernels' bits.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import adaptive_pool as ap
import reference as ref
from adaptive_pool import executors
from adaptive_pool.cpu import backend
from adaptive_pool.errors import (
    AdaptivePoolIndexError,
    AdaptivePoolTypeError,
    AdaptivePoolValueError,
)
from support import ALL_DTYPES, DTYPE_IDS, bits, channels_last, rand, tol

CASES = [
    (1, (2, 3, 10), 4),
    (2, (2, 3, 9, 7), (4, 3)),
    (2, (3, 6, 5), (2, None)),
    (2, (2, 40, 7, 7), 1),
    (2, (1, 2, 4, 3), (7, 5)),
    (3, (2, 2, 5, 4, 6), (2, 3, 4)),
]


def _ops(rank):
    f = lambda kind, b="": getattr(ap, f"adaptive_{kind}_pool{rank}d{b}")  # noqa: E731
    return f("avg"), f("max"), f("avg", "_backward"), f("max", "_backward")


def _read_only(a):
    a = a.copy()
    a.flags.writeable = False  # not a plain array: always the long path
    return a


def _all_results(rank, x, size, skipna):
    avg, mx, avg_b, mx_b = _ops(rank)
    y, i = mx(x, size, skipna=skipna)
    g = rand(y.shape, x.dtype, seed=3)
    return [avg(x, size, skipna=skipna), y, i, avg_b(g, x, skipna=skipna), mx_b(g, x, i)]


@pytest.mark.parametrize("skipna", [False, True], ids=["plain", "skipna"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("rank, shape, size", CASES)
def test_repeated_calls_match_the_long_path_and_the_reference(rank, shape, size, dtype, skipna):
    x = rand(shape, dtype)
    if skipna:
        x.reshape(-1)[::5] = np.nan
    ap.clear_cache()
    first = _all_results(rank, x, size, skipna)
    n = len(executors._PREPARED)
    assert n == 4  # one per operator
    again = _all_results(rank, x, size, skipna)  # prepared
    assert len(executors._PREPARED) == n
    long = _all_results(rank, _read_only(x), size, skipna)
    for a, b, c in zip(first, again, long):
        np.testing.assert_array_equal(bits(a), bits(b))
        np.testing.assert_array_equal(bits(a), bits(c))
    want = ref.avg_pool(x, size, rank, skipna=skipna)
    rtol, atol = tol(dtype) if np.dtype(dtype).itemsize >= 4 else (8e-3, 8e-3)  # 16-bit: 1 ulp
    np.testing.assert_allclose(again[0].astype(np.float64), want, rtol=rtol, atol=atol)
    y, i = ref.max_pool(x, size, rank, skipna=skipna)
    np.testing.assert_array_equal(again[1].astype(np.float64), y)
    np.testing.assert_array_equal(again[2], i)


#: problems of at most ``backend._TINY_WORK`` elements: batched and not, overlapping windows
TINY_CASES = [
    (1, (1, 1, 8), 4),
    (1, (2, 9), 4),
    (2, (1, 1, 4, 4), 2),
    (2, (3, 4, 3), (2, None)),
    (2, (1, 1, 3, 2), (5, 4)),
    (3, (1, 1, 2, 4, 4), (1, 2, 2)),
    (3, (2, 2, 3, 2), (2, 3, 1)),
]


@pytest.mark.parametrize("skipna", [False, True], ids=["plain", "skipna"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("rank, shape, size", TINY_CASES)
def test_tiny_problems_give_the_tuned_kernels_bits(rank, shape, size, dtype, skipna,
                                                   monkeypatch):
    """Prepared calls of a few dozen elements run the baseline kernels from a packed plan
    (``cpu.tiny``): the bits of the tuned kernels' prepared calls and of the long path."""
    x = rand(shape, dtype)
    if skipna:
        x.reshape(-1)[::3] = np.nan
    taken = []
    is_tiny = backend._tiny

    def spy(dims, like):
        taken.append(is_tiny(dims, like))
        return taken[-1]

    monkeypatch.setattr(backend, "_tiny", spy)
    ap.clear_cache()
    _all_results(rank, x, size, skipna)
    assert sum(taken) == 4  # the four operators' prepared calls
    tiny = _all_results(rank, x, size, skipna)
    monkeypatch.setattr(backend, "_TINY_WORK", -1)
    ap.clear_cache()
    _all_results(rank, x, size, skipna)
    tuned = _all_results(rank, x, size, skipna)
    long = _all_results(rank, _read_only(x), size, skipna)
    for a, b, c in zip(tiny, tuned, long):
        assert a.shape == c.shape and a.dtype == c.dtype
        np.testing.assert_array_equal(bits(a), bits(b))
        np.testing.assert_array_equal(bits(a), bits(c))
    y, i = ref.max_pool(x, size, rank, skipna=skipna)
    np.testing.assert_array_equal(tiny[1].astype(np.float64), y)
    np.testing.assert_array_equal(tiny[2], i)
    ap.clear_cache()


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
def test_a_numba_that_refuses_16_bit_arrays_gets_views(dtype, monkeypatch):
    """Prepared calls hand 16-bit arrays to code compiled for their storage as they are
    (Numba checks the item size only); one that raises TypeError turns that off for good,
    and calls go on with reinterpreting views, bit for bit."""
    monkeypatch.setattr(executors, "_RAW_STORAGE", True)
    x = rand((2, 3, 9, 7), dtype)
    ap.clear_cache()
    first = _all_results(2, x, (4, 3), False)

    def refuse(*arrays):
        raise TypeError("can't unbox array from PyObject into native value")

    for key in executors._PREPARED:
        executors._PREPARED[key] = refuse
    again = _all_results(2, x, (4, 3), False)  # refused: the long path
    assert executors._RAW_STORAGE is False
    views = _all_results(2, x, (4, 3), False)  # prepared again, with views
    assert len(executors._PREPARED) == 4
    for a, b, c in zip(first, again, views):
        np.testing.assert_array_equal(bits(a), bits(b))
        np.testing.assert_array_equal(bits(a), bits(c))
    ap.clear_cache()


def test_results_are_fresh_arrays():
    x = rand((2, 3, 8, 8), np.float32)
    a, b = ap.adaptive_avg_pool2d(x, 3), ap.adaptive_avg_pool2d(x, 3)
    assert a is not b and not np.shares_memory(a, b)
    (y1, i1), (y2, i2) = ap.adaptive_max_pool2d(x, 3), ap.adaptive_max_pool2d(x, 3)
    assert not np.shares_memory(y1, y2) and not np.shares_memory(i1, i2)


@pytest.mark.parametrize(
    "size",
    [2.0, (2, 2.0), (True, 2), [2, 2], np.int64(2)],
    ids=["float", "float_in", "bool", "list", "np_int"],
)
def test_arguments_equal_to_valid_ones_still_meet_the_checks(size):
    x = rand((1, 2, 4, 4), np.float32)
    for _ in range(2):
        ap.adaptive_avg_pool2d(x, 2)
        ap.adaptive_avg_pool2d(x, (2, 2))
        ap.adaptive_avg_pool2d(x, (1, 2))
    want = ap.adaptive_avg_pool2d(x, 2)
    if isinstance(size, (list, np.integer)):  # accepted: the same result, the long way
        np.testing.assert_array_equal(bits(ap.adaptive_avg_pool2d(x, size)), bits(want))
        return
    with pytest.raises(AdaptivePoolTypeError):
        ap.adaptive_avg_pool2d(x, size)


def test_outputs_still_meet_the_checks_after_valid_ones():
    """Plans of calls with NumPy outputs are remembered like those without; the outputs are
    checked on every call all the same, and indices_out's dtype decides the index dtype."""
    x = rand((1, 2, 4, 4), np.float32)
    y, i = np.empty((1, 2, 2, 2), np.float32), np.empty((1, 2, 2, 2), np.int64)
    for _ in range(2):
        ap.adaptive_max_pool2d(x, 2, out=y, indices_out=i)
        ap.adaptive_avg_pool2d_backward(y, x, out=np.empty_like(x))
    with pytest.raises(AdaptivePoolTypeError, match="indices_out"):
        ap.adaptive_max_pool2d(x, 2, out=y, indices_out=i.astype(np.float32))
    with pytest.raises(AdaptivePoolTypeError, match="out"):
        ap.adaptive_max_pool2d(x, 2, out=y.astype(np.float64), indices_out=i)
    with pytest.raises(AdaptivePoolValueError, match="out"):
        ap.adaptive_avg_pool2d_backward(y, x, out=np.empty((1, 2, 4, 5), np.float32))
    with pytest.raises(AdaptivePoolValueError, match="overlap"):
        ap.adaptive_avg_pool2d(x, 2, out=x[:, :, :2, :2])
    got = ap.adaptive_max_pool2d(x, 2, out=y, indices_out=i.astype(np.int32))[1]
    assert got.dtype == np.int32


def test_skipna_must_still_be_a_bool():
    x = rand((1, 2, 4, 4), np.float32)
    ap.adaptive_avg_pool2d(x, 2, skipna=True)
    ap.adaptive_avg_pool2d(x, 2, skipna=True)
    with pytest.raises(AdaptivePoolTypeError, match="skipna"):
        ap.adaptive_avg_pool2d(x, 2, skipna=1)


@pytest.mark.parametrize("rank, shape, size", [
    (2, (1, 2, 6, 6), 3), (3, (2, 1, 3, 4, 4), 2), (2, (1, 1, 4, 4), 2), (1, (1, 1, 8), 4),
])
def test_an_index_outside_its_window_still_raises(rank, shape, size):
    _, mx, _, mx_b = _ops(rank)
    x = rand(shape, np.float32)
    y, i = mx(x, size)
    g = np.ones_like(y)
    mx_b(g, x, i)
    mx_b(g, x, i)  # prepared
    bad = i.copy()
    bad.reshape(-1)[-1] = 0  # the last window does not start at 0
    with pytest.raises(AdaptivePoolIndexError, match="outside the window"):
        mx_b(g, x, bad)


def test_other_kinds_take_the_long_path():
    x = rand((2, 3, 8, 8), np.float32)
    want = ap.adaptive_avg_pool2d(x, 3)
    ap.adaptive_avg_pool2d(x, 3)
    for other in (np.asfortranarray(x), x[:, :, ::-1][:, :, ::-1], _read_only(x)):
        np.testing.assert_array_equal(bits(ap.adaptive_avg_pool2d(other, 3)), bits(want))
    wrong = rand((2, 3, 8, 8), np.float64)  # same shape, another dtype: another plan
    assert ap.adaptive_avg_pool2d(wrong, 3).dtype == np.float64


def _strided(a):
    """``a``'s values as a strided view of a larger array (every other element of its rows)."""
    wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    wide[..., ::2] = a
    return wide[..., ::2]


_OTHER_LAYOUTS = {  # (a layout, whether it is a dense block: a prepared call of its own)
    "fortran": (np.asfortranarray, True),
    "channels-last": (channels_last, True),
    "sliced": (_strided, False),
}


@pytest.mark.parametrize("skipna", [False, True], ids=["plain", "skipna"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("layout", list(_OTHER_LAYOUTS))
@pytest.mark.parametrize("rank, shape, size", CASES + [TINY_CASES[2], TINY_CASES[5]])
def test_other_layouts_take_prepared_calls_of_their_own(rank, shape, size, layout, dtype,
                                                         skipna):
    """Operands that are dense blocks in another axis order (Fortran order, channels-last)
    leave prepared calls under keys that also hold their strides, which later calls in that
    layout take, with the bits of C-order operands; other strided views leave none (False)
    and keep the long path."""
    avg, mx, avg_b, mx_b = _ops(rank)
    lay, dense = _OTHER_LAYOUTS[layout]
    x = rand(shape, dtype)
    if skipna:
        x.reshape(-1)[::5] = np.nan
    y, i = mx(x, size, skipna=skipna)
    g = rand(y.shape, dtype, seed=3)
    want = [avg(x, size, skipna=skipna), y, i, avg_b(g, x, skipna=skipna), mx_b(g, x, i)]
    xl, gl, il = lay(x), lay(g), lay(i)
    ap.clear_cache()
    for _ in range(2):  # the long path, then the prepared calls
        got = [avg(xl, size, skipna=skipna), *mx(xl, size, skipna=skipna),
               avg_b(gl, xl, skipna=skipna), mx_b(gl, xl, il)]
        for a, b in zip(want, got):
            np.testing.assert_array_equal(bits(a), bits(b))
        assert all(b.flags.c_contiguous for b in got)
    kept = list(executors._PREPARED.values())
    assert len(kept) == 4 and all(bool(run) is dense for run in kept)


def _layouts(a):
    """``a`` C-ordered, Fortran-ordered, reversed twice along its last axis (the same values
    through negative strides) and as a strided view of a larger array."""
    return [a, np.asfortranarray(a), a[..., ::-1][..., ::-1], _strided(a)]


@pytest.mark.parametrize("rank, shape, size", CASES[:3] + CASES[-1:])
def test_one_plan_remembers_a_launch_per_layout(rank, shape, size):
    """The long path keeps the launch it plans for each layout of the operands (the executor's
    memo): calls that alternate layouts, inputs and out= arrays each get their own."""
    avg, mx, avg_b, mx_b = _ops(rank)
    x = rand(shape, np.float32)
    y, i = mx(x, size)
    g = rand(y.shape, np.float32, seed=3)
    want = [avg(x, size), y, i, avg_b(g, x), mx_b(g, x, i)]
    ap.clear_cache()
    for _ in range(2):  # the second round finds every launch planned
        for xl, gl, il in zip(_layouts(x), _layouts(g)[::-1], _layouts(i)[1:] + [i]):
            outs = _layouts(np.empty_like(want[0]))[1], _layouts(np.empty_like(x))[3]
            got = [avg(xl, size, out=outs[0]), *mx(xl, size), avg_b(gl, xl, out=outs[1]),
                   mx_b(gl, xl, il)]
            for a, b in zip(want, got):
                np.testing.assert_array_equal(bits(a), bits(b))


def test_threads_share_prepared_calls():
    xs = [rand((2, 4, 9, 9), np.float32, seed=s) for s in range(8)]
    want = [ap.adaptive_avg_pool2d(x, 4) for x in xs]
    got = [None] * len(xs)

    def work(k):
        for _ in range(200):
            got[k] = ap.adaptive_avg_pool2d(xs[k], 4)

    _in_threads(work, len(xs))
    for a, b in zip(got, want):
        np.testing.assert_array_equal(bits(a), bits(b))


def _in_threads(work, n):
    """``work(k)`` for ``k < n``, each on a thread of its own, all at once."""
    threads = [threading.Thread(target=work, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("rank, shape, size", CASES)
def test_repeated_parallel_calls_match_the_first(rank, shape, size, dtype, knobs):
    """Prepared calls of parallel kernels (knobs: every kernel parallel) pass the chunk
    functions' addresses they bound once: the first call's bits."""
    x = rand(shape, dtype, seed=9)
    x.reshape(-1)[::5] = np.nan
    for skipna in (False, True):
        first, again = (_all_results(rank, x, size, skipna) for _ in range(2))
        for a, b in zip(first, again):
            np.testing.assert_array_equal(bits(a), bits(b))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("rank, shape, size", CASES)
def test_one_chunk_on_the_calling_thread_gives_the_parallel_kernels_bits(
    rank, shape, size, dtype, knobs
):
    x = rand(shape, dtype, seed=7)
    x.reshape(-1)[::7] = np.nan
    for skipna in (False, True):
        parallel = _all_results(rank, x, size, skipna)  # knobs: parallel kernels, many chunks
        knobs(_SERIAL_WORK=1 << 16)
        serial = _all_results(rank, x, size, skipna)
        knobs(_SERIAL_WORK=0)
        for a, b in zip(parallel, serial):
            np.testing.assert_array_equal(bits(a), bits(b))


def test_threads_each_take_their_own_scratch():
    """The max backward's flags and the NaN-skipping backward's counts are reused from call to
    call (a free list), never shared by calls in flight in several threads (kernels run without
    the GIL)."""
    rng = np.random.default_rng(0)
    # windows two d deep: a count pass
    xs = [rand((1, 1, 3, 9, 9), np.float32, seed=s) for s in range(6)]
    for x in xs:
        x.reshape(-1)[rng.integers(0, 243, 60)] = np.nan
    gs = [rand((1, 1, 2, 4, 4), np.float32, seed=10 + s) for s in range(6)]
    ids = [ap.adaptive_max_pool3d(x, (2, 4, 4))[1] for x in xs]

    def results(k):
        return (ap.adaptive_avg_pool3d_backward(gs[k], xs[k], skipna=True),
                ap.adaptive_max_pool3d_backward(gs[k], xs[k], ids[k]))

    want = [results(k) for k in range(len(xs))]
    got = [None] * len(xs)

    def work(k):
        for _ in range(300):
            got[k] = results(k)
            if any(not np.array_equal(bits(a), bits(b)) for a, b in zip(got[k], want[k])):
                return

    _in_threads(work, len(xs))
    for a, b in zip(got, want):
        for u, v in zip(a, b):
            np.testing.assert_array_equal(bits(u), bits(v))


def test_scratch_in_use_is_never_handed_out_again():
    from adaptive_pool.cpu.backend import _scratch

    take, give = _scratch(3, np.int64, keep=True)
    a, b = take(), take()  # two calls in flight
    assert a is not b and a.shape == b.shape == (3,) and a.dtype == np.int64
    give(a)
    assert take() is a  # reused once handed back
    take, give = _scratch(3, np.int64, keep=False)
    a = take()
    give(a)
    assert take() is not a
