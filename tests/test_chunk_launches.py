"""How a CPU kernel runs its chunks (``cpu.calls.run_chunks``): each chunk once, on the
threads Numba's thread count allows, exceptions raised on the calling thread, kernels loaded
from the cache in a process that has not started Numba's threads; and stores into borrowed
views (``cpu.access.borrow``) that Numba's dead-code elimination must keep."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

from adaptive_pool.cpu.access import borrow, put
from adaptive_pool.cpu.calls import address, run_chunks


@numba.njit(nogil=True)
def _note(ch, seen, thread, fail, nchunk):
    seen[ch] += 1
    thread[ch] = numba.get_thread_id()
    if ch == fail:
        raise ValueError("chunk failed")


@numba.njit(nogil=True)
def _launch(at, seen, thread, fail, nchunk):
    run_chunks(_note, at, (seen, thread, fail, nchunk), nchunk)


def _run(nchunk: int, fail: int = -1) -> tuple[np.ndarray, np.ndarray]:
    seen, thread = np.zeros(nchunk, np.int64), np.full(nchunk, -1, np.int64)
    args = (seen, thread, np.int64(fail), np.int64(nchunk))
    _launch(address(_note, args), *args)
    return seen, thread


@pytest.mark.parametrize("nchunk", [1, 2, 7, 64])
def test_every_chunk_runs_once_on_the_pools_threads(nchunk):
    seen, thread = _run(nchunk)
    assert (seen == 1).all()
    threads = numba.get_num_threads()
    assert thread.min() >= 0 and thread.max() < threads
    if nchunk >= threads > 1:
        # a contiguous block of chunks a thread, in thread order
        assert len(set(thread.tolist())) == threads
        assert (np.diff(thread) >= 0).all()


def test_the_thread_count_of_the_calling_thread_is_kept():
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        _, thread = _run(16)
    finally:
        numba.set_num_threads(before)
    assert (thread == 0).all()


@pytest.mark.parametrize("fail", [0, 5])
def test_a_chunk_that_raises_raises_on_the_calling_thread(fail):
    with pytest.raises(ValueError, match="chunk failed"):
        _run(8, fail)
    seen, _ = _run(8)  # and the pool still works
    assert (seen == 1).all()


_MODULE = """
import numba
from adaptive_pool.cpu.calls import run_chunks

@numba.njit(cache=True, nogil=True)
def chunk(ch, out, n):
    out[ch] = ch + 1

@numba.njit(cache=True, nogil=True)
def kernel(at, out, n):
    run_chunks(chunk, at, (out, n), n)
"""

_PRELUDE = """
import sys
import numba
import numpy as np
sys.path.insert(0, sys.argv[1])
import launched
from adaptive_pool.cpu.calls import address

def launch(n):
    out = np.zeros(n, np.int64)
    args = (out, np.int64(n))
    launched.kernel(address(launched.chunk, args), *args)
    return out
"""


def _launched(tmp_path, script: str, module: str = _MODULE, **env: str):
    """``_PRELUDE + script`` run in a fresh process, ``launched`` being ``module``."""
    (tmp_path / "launched.py").write_text(module)
    return subprocess.run([sys.executable, "-c", _PRELUDE + script, str(tmp_path)],
                          env={"PATH": "", "HOME": str(tmp_path), **env},
                          capture_output=True, text=True, timeout=120)


def test_a_kernel_from_the_cache_starts_the_threads_it_links_to(tmp_path):
    script = "print(launch(8).tolist(), sum(launched.kernel.stats.cache_hits.values()))\n"
    runs = [_launched(tmp_path, script, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr[-2000:]
    assert runs[0].stdout.split("]")[1].strip() == "0"  # compiled
    assert runs[1].stdout.strip() == f"{list(range(1, 9))} 1"  # loaded, and it ran


_LAYER = """
for n in (1, 2, 3, 7, 16):
    out = launch(n)
    assert out.tolist() == list(range(1, n + 1)), (n, out)
print(numba.threading_layer())
"""


@pytest.mark.parametrize("layer", ["workqueue", "omp"])
def test_every_layer_runs_every_chunk_once(tmp_path, layer):
    # workqueue hands each thread a block of chunks in one call of the body, OpenMP's layer one
    # chunk at a time; a body that ran only the first of its block passed on OpenMP alone
    r = _launched(tmp_path, _LAYER, _MODULE.replace("cache=True, ", ""),
                  NUMBA_THREADING_LAYER=layer, NUMBA_NUM_THREADS="2")
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == layer


@numba.njit(nogil=True)
def _last_store(ch, a, flag):
    a, flag = borrow(a), borrow(flag)
    found = np.int64(-1)
    for i in range(a.size):
        if a[i] < 0 and found < 0:
            found = i
        put(a, i, a[i])  # an inlined overload: Numba eliminates dead code again after it
    flag[ch] = found
    return found


def test_a_last_store_into_a_borrowed_argument_is_kept():
    flag = np.zeros(3, np.int64)
    assert _last_store(1, np.arange(5.0), flag) == -1
    assert flag.tolist() == [0, -1, 0]


@numba.njit(nogil=True)
def _fill(ch, a, b):
    a[ch] = ch
    b[ch] = -ch


@numba.njit(nogil=True)
def _launch_uniform(at, a, b, nchunk):
    run_chunks(_fill, at, (a, b), nchunk)


def test_arguments_of_one_type_a_uniform_tuple():
    a, b = np.zeros(6, np.int64), np.zeros(6, np.int64)
    _launch_uniform(address(_fill, (a, b)), a, b, 6)
    assert a.tolist() == list(range(6)) and b.tolist() == [-k for k in range(6)]
