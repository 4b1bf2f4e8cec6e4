"""The Dask layer on ``dask.distributed``: worker processes (spawned) compute the same bits.

Workers load the kernels from the Numba cache that the session's ``warm_kernels`` filled.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

import dask  # noqa: E402

import adaptive_pool as ap  # noqa: E402
from support import bits  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client():
    # processes are spawned: nothing at import time of this module starts one
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
        silence_logs=logging.ERROR,
    ) as cluster, distributed.Client(cluster) as c:
        yield c


def test_local_cluster_computes_the_same_bits(client):
    rng = np.random.default_rng(5)
    x = rng.integers(0, 4, size=(2, 3, 37, 29)).astype(np.float32)
    dx = da.from_array(x, chunks=(1, 2, 10, 7))
    out = (9, 13)
    y, i = ap.adaptive_max_pool2d(x, out)
    g = rng.uniform(-1, 1, size=y.shape).astype(np.float32)
    dg = da.from_array(g, chunks=(2, 3, 4, 5))
    lazy = [
        ap.adaptive_avg_pool2d(dx, out),
        *ap.adaptive_max_pool2d(dx, out),
        ap.adaptive_avg_pool2d_backward(dg, dx),
        ap.adaptive_max_pool2d_backward(dg, dx, da.from_array(i, chunks=(1, 1, 3, 3))),
    ]
    got = dask.compute(*lazy)  # the client's scheduler: the cluster's worker processes
    want = [
        ap.adaptive_avg_pool2d(x, out), y, i,
        ap.adaptive_avg_pool2d_backward(g, x), ap.adaptive_max_pool2d_backward(g, x, i),
    ]
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(bits(a), bits(b))
    workers = client.run(lambda: __import__("os").getpid())
    assert len(set(workers.values())) == 2


def test_bad_index_error_reaches_the_client(client):
    x = np.ones((1, 6, 6), np.float32)
    y, i = ap.adaptive_max_pool2d(x, 3)
    i = i.copy()
    i[0, 1, 1] = 0
    gx = ap.adaptive_max_pool2d_backward(
        da.from_array(y, chunks=2), da.from_array(x, chunks=3), da.from_array(i, chunks=2)
    )
    with pytest.raises(IndexError, match=r"indices\[0, 1, 1\] = 0"):
        gx.compute()
