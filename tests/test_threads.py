"""DESIGN §4: one executor run from several threads at once on different outputs."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import adaptive_pool as ap
from adaptive_pool import acl
from adaptive_pool.functional import backward_executor, forward_executor
from support import BF16, F32, F64, rand

THREADS = 4
ROUNDS = 25


def _hammer(work):
    """Run ``work(k)`` for k in 0..THREADS-1 concurrently, ROUNDS times each; re-raise errors."""
    barrier = threading.Barrier(THREADS)
    errors = []

    def body(k):
        try:
            barrier.wait()
            for _ in range(ROUNDS):
                work(k)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    if errors:
        raise errors[0]


@pytest.mark.parametrize("dtype", [F32, F64, BF16], ids=["float32", "float64", "bfloat16"])
def test_one_executor_many_threads(dtype):
    xs = [rand((4, 8, 33, 29), dtype, seed=k) for k in range(THREADS)]
    gs = [rand((4, 8, 7, 5), dtype, seed=10 + k) for k in range(THREADS)]
    vs = [rand((2, 4, 9, 10, 11), dtype, seed=20 + k) for k in range(THREADS)]
    avg_ex = forward_executor("adaptive_avg_pool2d", xs[0], (7, 5))
    avgb_ex = backward_executor("adaptive_avg_pool2d_backward", gs[0], xs[0])
    want_avg = [ap.adaptive_avg_pool2d(x, (7, 5)) for x in xs]
    want_avgb = [ap.adaptive_avg_pool2d_backward(g, x) for g, x in zip(gs, xs)]
    want_max = [ap.adaptive_max_pool3d(v, (4, 3, 5), index_dtype=np.int64) for v in vs]
    gms = [rand(y.shape, dtype, seed=30 + k) for k, (y, _) in enumerate(want_max)]
    want_maxb = [ap.adaptive_max_pool3d_backward(g, v, i) for g, v, (_, i) in
                 zip(gms, vs, want_max)]
    max_ex = forward_executor("adaptive_max_pool3d", vs[0], (4, 3, 5), np.int64)
    maxb_ex = backward_executor("adaptive_max_pool3d_backward", gms[0], vs[0], want_max[0][1])
    outs = [np.empty_like(w) for w in want_avg]
    gouts = [np.empty_like(w) for w in want_avgb]
    mouts = [(np.empty_like(y), np.empty_like(i)) for y, i in want_max]
    mgouts = [np.empty_like(w) for w in want_maxb]

    def work(k):
        out = outs[k]
        out[...] = 0
        avg_ex.run(xs[k], out=out)
        np.testing.assert_array_equal(out, want_avg[k])
        gouts[k][...] = 0
        avgb_ex.run(grad_output=gs[k], out=gouts[k])
        np.testing.assert_array_equal(gouts[k], want_avgb[k])
        y, i = mouts[k]
        max_ex.run(vs[k], out=y, indices_out=i)
        np.testing.assert_array_equal(y, want_max[k][0])
        np.testing.assert_array_equal(i, want_max[k][1])
        maxb_ex.run(grad_output=gms[k], indices=want_max[k][1], out=mgouts[k])
        np.testing.assert_array_equal(mgouts[k], want_maxb[k])
        # and through the one-call functions (the cache is shared by the threads)
        np.testing.assert_array_equal(ap.adaptive_avg_pool2d(xs[k], (7, 5)), want_avg[k])

    _hammer(work)


def test_acl_executors_with_own_workspaces_in_threads():
    xs = [rand((2, 16, 31, 17), F32, seed=40 + k) for k in range(THREADS)]
    want = [ap.adaptive_avg_pool2d_backward(ap.adaptive_avg_pool2d(x, 6), x) for x in xs]
    bound = []
    for k in range(THREADS):
        g = ap.adaptive_avg_pool2d(xs[k], 6)
        out = np.empty_like(xs[k])
        size, ex = acl.adaptive_avg_pool2d_backward_get_workspace_size(g, xs[k], out)
        bound.append((size, ex, out, np.empty(size, np.uint8)))

    def work(k):
        size, ex, out, ws = bound[k]
        out[...] = np.nan
        acl.adaptive_avg_pool2d_backward(ws if k % 2 else None, size, ex)
        np.testing.assert_array_equal(out, want[k])

    _hammer(work)


def test_bad_indices_in_one_thread_do_not_disturb_the_others():
    v = rand((2, 4, 6, 7, 8), F32, seed=50)
    y, idx = ap.adaptive_max_pool3d(v, 3)
    bad = idx.copy()
    bad[1, 3, 2, 2, 2] = -1
    want = ap.adaptive_max_pool3d_backward(y, v, idx)

    def work(k):
        if k == 0:
            with pytest.raises(ap.AdaptivePoolIndexError):
                ap.adaptive_max_pool3d_backward(y, v, bad)
        else:
            np.testing.assert_array_equal(ap.adaptive_max_pool3d_backward(y, v, idx), want)

    _hammer(work)


_WORKQUEUE_SCRIPT = r"""
import threading, numpy as np, numba
import adaptive_pool as ap
# over 2**16 elements: parallel kernels (smaller work runs on the calling thread)
xs = [np.random.default_rng(k).standard_normal((4, 8, 66, 58)).astype(np.float32) for k in range(4)]
want = [ap.adaptive_avg_pool2d(x, (7, 5)) for x in xs]
assert numba.threading_layer() == "workqueue", numba.threading_layer()
errors = []
def body(k):
    try:
        for _ in range(50):
            y = ap.adaptive_avg_pool2d(xs[k], (7, 5))
            g = ap.adaptive_avg_pool2d_backward(y, xs[k])
            assert (y == want[k]).all()
    except BaseException as e:
        errors.append(e)
ts = [threading.Thread(target=body, args=(k,)) for k in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
assert not errors, errors
print("ok")
"""


def test_threads_under_the_workqueue_layer():
    # numba's workqueue layer aborts the process on concurrent parallel launches; the CPU
    # backend must serialise them there. Its own process: the layer is chosen once.
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue")
    r = subprocess.run([sys.executable, "-c", _WORKQUEUE_SCRIPT], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stdout, r.stderr[-2000:])
