"""``python -m adaptive_pool warmup``: every CPU kernel is reached, and a missed one is an error.

The checks of :func:`adaptive_pool.cpu.warm.warm` are exact in a process that has compiled
nothing yet, so those tests run in fresh interpreters (loading kernels from the cache that the
test run has already filled).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numba

from adaptive_pool import warmup
from adaptive_pool.cpu import kernels, warm

ROOT = Path(__file__).resolve().parent.parent


def _python(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter on this checkout's package."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout=900)


def test_every_kernel_has_a_warmup_group():
    launched = {
        name for name, obj in vars(kernels).items()
        if isinstance(obj, numba.core.registry.CPUDispatcher) and obj in kernels.CHUNKS
    }
    covered = {t for targets, _, _ in warm.KERNELS.values() for t in targets if "." not in t}
    assert launched == covered


def test_each_group_reaches_its_kernels_in_a_fresh_process():
    r = _python(
        "from adaptive_pool.cpu.warm import warm, kernel_names\n"
        "print(sum(warm(n, ['float32', 'bfloat16'], ['int32']) for n in kernel_names()))"
    )
    assert r.returncode == 0, r.stderr[-3000:]
    # 6 average forwards (direct, rowwise, lanewise, runs, columns, channels), the average
    # backward with its counts, its lanes, its blocks, its runs and its columns, the max
    # forward, its runs and its channels, the sparse backward, the check + gather, and the four
    # functions of tiny problems: 22 a dtype
    assert int(r.stdout.split()[-1]) == 22 * 2


def test_a_kernel_the_backend_no_longer_picks_is_an_error():
    r = _python(
        "from adaptive_pool.cpu import backend\n"
        "backend._FORCE_ORDER = 'rowwise'  # the direct order is never chosen\n"
        "from adaptive_pool.cpu.warm import warm\n"
        "warm('avg_pool_direct', ['float32'])"
    )
    assert r.returncode != 0
    assert "did not reach avg_pool_direct for float32" in r.stderr


def test_command_line(capsys):
    assert warmup.main(["--list"]) == 0
    assert capsys.readouterr().out.split() == warm.kernel_names()
    assert warmup.main(["--kernels", "no_such_kernel"]) == 2
    assert "unknown kernels ['no_such_kernel']" in capsys.readouterr().err
