"""Large results come from the memory of freed results (``adaptive_pool.cpu.results``).

The threshold is lowered here (1 KiB instead of 32 MiB) so that small problems take blocks.
A block must only be handed out again once no array uses it, every result on one must hold what
a fresh array would (the reference's values, the bits of a result from ``numpy.empty``), and the
memory kept must stay within its budget and go with ``clear_cache()``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import adaptive_pool as ap
import reference as ref
from adaptive_pool.cpu import results
from support import ALL_DTYPES, DTYPE_IDS, bits, rand, tol

SHAPE, SIZE = (2, 3, 24, 20), (5, 7)  # inputs of 2,880 elements


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(results, "SMALLEST", 1024)
    monkeypatch.setattr(results, "_CLASS", 4096)
    monkeypatch.setattr(results, "BUDGET", 1 << 20)
    ap.clear_cache()  # prepared calls choose their allocation once
    yield
    ap.clear_cache()


def _calls(x, g):
    """Each operator on ``x`` (gradients ``g``; the average forward upsamples) as (name,
    function returning a tuple of results) pairs."""
    y, i = ap.adaptive_max_pool2d(x, SIZE)
    return [
        ("avg", lambda: (ap.adaptive_avg_pool2d(x, (48, 40)),)),
        ("max", lambda: ap.adaptive_max_pool2d(x, (20, 17), index_dtype=np.int64)),
        ("avg_backward", lambda: (ap.adaptive_avg_pool2d_backward(g, x),)),
        ("max_backward", lambda: (ap.adaptive_max_pool2d_backward(g, x, i),)),
    ]


def _reference(name, x, g):
    if name == "avg":
        return (ref.avg_pool(x, (48, 40), 2),)
    if name == "max":
        return ref.max_pool(x, (20, 17), 2)
    if name == "avg_backward":
        return (ref.avg_pool_backward(g, x.shape, 2),)
    _, i = ref.max_pool(x, SIZE, 2)
    return (ref.max_pool_backward(g, x.shape, i, 2),)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
def test_a_freed_result_s_memory_serves_the_next_one_with_fresh_values(dtype):
    x1, x2 = rand(SHAPE, dtype, seed=1), rand(SHAPE, dtype, seed=2)
    g1 = rand((2, 3) + SIZE, dtype, seed=3)
    g2 = rand((2, 3) + SIZE, dtype, seed=4)
    for (name, first), (_, second) in zip(_calls(x1, g1), _calls(x2, g2)):
        results.release()  # only this operator's blocks
        out = first()
        for a in out:
            assert type(a) is np.ndarray and a.flags.c_contiguous and a.flags.writeable
            assert not a.flags.owndata, name  # from a block
        freed = {a.ctypes.data for a in out}
        del out, a
        assert results.cached_bytes() > 0
        again = second()  # the same sizes: the blocks just freed, taken from the cache
        assert {b.ctypes.data for b in again} == freed, name
        assert results.cached_bytes() == 0, name
        rtol, atol = tol(dtype) if np.dtype(dtype).itemsize >= 4 else (8e-3, 8e-3)
        for b, want in zip(again, _reference(name, x2, g2)):
            np.testing.assert_allclose(b.astype(np.float64), want, rtol=rtol, atol=atol)
        del again, b


def test_results_equal_those_of_fresh_arrays_bit_for_bit(monkeypatch):
    x, g = rand(SHAPE, np.float32), rand((2, 3) + SIZE, np.float32, seed=3)
    blocks = [a for _, f in _calls(x, g) for a in f()]
    monkeypatch.setattr(results, "BUDGET", 0)  # numpy.empty, as below SMALLEST
    ap.clear_cache()
    fresh = [a for _, f in _calls(x, g) for a in f()]
    for a, b in zip(blocks, fresh):
        assert b.flags.owndata
        np.testing.assert_array_equal(bits(a), bits(b))


def test_live_results_and_their_views_keep_their_memory():
    x, g = rand(SHAPE, np.float64), rand((2, 3) + SIZE, np.float64, seed=3)
    ap.adaptive_avg_pool2d_backward(g, x)  # a block waits
    kept = ap.adaptive_avg_pool2d_backward(g, x)  # takes it
    view = ap.adaptive_avg_pool2d_backward(g, x)[1, :, 3:9]  # only a view holds this one
    want_kept, want_view = kept.copy(), view.copy()
    for _ in range(3):
        other = ap.adaptive_avg_pool2d_backward(g * 2, x)
        assert not np.shares_memory(other, kept) and not np.shares_memory(other, view)
        del other
    np.testing.assert_array_equal(kept, want_kept)
    np.testing.assert_array_equal(view, want_view)


def test_kept_memory_stays_within_its_budget_and_goes_with_clear_cache(monkeypatch):
    x = rand(SHAPE, np.float32)
    one = ap.adaptive_avg_pool2d(x, (48, 40)).nbytes  # 23,040 bytes: a block of 24,576
    monkeypatch.setattr(results, "BUDGET", 2 * 24576)
    live = [ap.adaptive_avg_pool2d(x, (48, 40)) for _ in range(5)]
    assert all(a.nbytes == one for a in live)
    del live
    assert results.cached_bytes() == 2 * 24576  # the two newest kept
    ap.clear_cache()
    assert results.cached_bytes() == 0


def test_threads_never_share_a_block():
    x = rand(SHAPE, np.float32)
    gs = [rand((2, 3) + SIZE, np.float32, seed=s) for s in range(4)]
    wants = [ref.avg_pool_backward(g, SHAPE, 2) for g in gs]
    errors = []

    def work(k):
        try:
            for _ in range(50):
                gi = ap.adaptive_avg_pool2d_backward(gs[k], x)
                np.testing.assert_allclose(gi, wants[k], rtol=2e-6, atol=2e-6)
        except Exception as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_torch_tensors_keep_their_blocks():
    pytest.importorskip("torch")
    import torch

    import adaptive_pool.torch as apt

    x = torch.from_numpy(rand(SHAPE, np.float32)).requires_grad_()
    y = apt.adaptive_avg_pool2d(x, SIZE)
    y.backward(torch.ones_like(y))
    up = apt.adaptive_avg_pool2d(x.detach(), (48, 40))
    want_up, want_grad = up.clone(), x.grad.clone()
    for _ in range(3):
        apt.adaptive_avg_pool2d(x.detach() * 2, (48, 40))
        z = apt.adaptive_avg_pool2d(x * 2, SIZE)
        torch.autograd.grad(z.sum(), x)
    torch.testing.assert_close(up, want_up, rtol=0, atol=0)
    torch.testing.assert_close(x.grad, want_grad, rtol=0, atol=0)


@pytest.mark.parametrize("text, kept", [("0", "0"), ("1.5", "1572864"), ("lots", None)])
def test_the_budget_comes_from_the_environment(text, kept):
    env = dict(os.environ, ADAPTIVE_POOL_RESULT_CACHE_MB=text)
    r = subprocess.run([sys.executable, "-c", "from adaptive_pool.cpu import results; "
                        "print(results.BUDGET)"], env=env, capture_output=True, text=True)
    if kept is None:
        assert r.returncode != 0 and "ADAPTIVE_POOL_RESULT_CACHE_MB must be a number" in r.stderr
    else:
        assert r.returncode == 0 and r.stdout.split() == [kept], r.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_while_the_lock_is_held_still_allocates():
    x = rand(SHAPE, np.float32)
    want = ap.adaptive_avg_pool2d(x, (48, 40))
    with results._lock:  # as if another thread were taking a block
        pid = os.fork()
        if pid == 0:  # the child: exit status 0 if its call returns the right values
            ok = np.array_equal(ap.adaptive_avg_pool2d(x, (48, 40)), want)
            os._exit(0 if ok else 1)
    for _ in range(600):  # at most a minute: a child waiting on the lock never ends
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child waited on the parent's lock")
    assert os.waitstatus_to_exitcode(status) == 0
