"""Planning limits: an output size whose window tables or result cannot fit in memory is an
error naming ``output_size``, what it would need and what would fit, raised before anything
large is allocated (not NumPy's MemoryError about an array nobody asked for)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import adaptive_pool as ap
from adaptive_pool.limits import describe_bytes
from support import F32


@pytest.mark.parametrize(
    "rank, output_size, what",
    [
        (2, (2**40, 2**40), "window tables"),
        (2, (2**31, 4), "window tables"),
        (1, 2**36, "window tables"),
        (3, (1, 2**31, 1), "window tables"),
        (2, (2**20, 2**20), "result"),
        (3, (2**12, 2**12, 2**12), "result"),
    ],
    ids=str,
)
@pytest.mark.parametrize("kind", ["avg", "max"])
def test_impossible_output_sizes_are_errors_before_allocating(kind, rank, output_size, what):
    x = np.ones((2, 3) + (4,) * rank, F32)
    fn = getattr(ap, f"adaptive_{kind}_pool{rank}d")
    tracemalloc.start()
    try:
        with pytest.raises(ap.AdaptivePoolValueError) as info:
            fn(x, output_size)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 26  # nothing large was allocated first (at most the tables: 32 MiB)
    e = info.value
    msg = str(e)
    assert e.argument == "output_size" and "output_size=" in msg
    assert what in msg and "bytes" in msg and "available" in msg and "would fit" in msg


def test_sizes_that_fit_still_plan():
    x = np.ones((1, 1, 3), F32)
    assert ap.adaptive_avg_pool1d(x, 2**20).shape == (1, 1, 2**20)  # 16 MiB of tables


def test_describe_bytes():
    assert describe_bytes(512) == "512 B"
    assert describe_bytes(3 * 2**30) == "3.0 GiB"
    assert describe_bytes(2**45) == "32.0 TiB"
