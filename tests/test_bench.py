"""The benchmark CLI keeps working: a seconds-long ``--quick`` run on tiny shapes (no timing asserts)."""

from __future__ import annotations

import json

import pytest

from adaptive_pool import bench
from adaptive_pool.__main__ import main


def test_parse_shape():
    assert bench.parse_shape("32x256x56x56:7x7") == ((32, 256, 56, 56), (7, 7))
    assert bench.parse_shape("4x16x9x9x9:3x3x3") == ((4, 16, 9, 9, 9), (3, 3, 3))
    with pytest.raises(Exception):
        bench.parse_shape("32x256:7x7")


def test_quick_run_writes_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    status = main([
        "bench", "--quick", "--quiet", "--no-torch", "--repeat", "1", "--warmup", "1",
        "--dtypes", "float32,bfloat16", "--shapes", "2x3x9x10:4x3", "1x2x3x9x10:2x4x3",
        "--json", str(out),
    ])
    assert status == 0
    table = capsys.readouterr().out
    for op in ("avg2d", "avg2d_backward", "max3d", "max3d_backward"):
        assert op in table
    data = json.loads(out.read_text())
    assert len(data["cases"]) == 8
    assert all(c["ours_s"] > 0 and not c["error"] for c in data["cases"])
    assert data["copy_bandwidth"]["cpu"]["bytes_per_s"] > 0


def test_against_torch(tmp_path, capsys, torch):
    status = main([
        "bench", "--quick", "--quiet", "--repeat", "1", "--warmup", "1", "--ops", "avg",
        "--dtypes", "float16", "--shapes", "2x3x9x10:4x3", "--plot", str(tmp_path / "b.png"),
    ])
    assert status == 0
    assert "geometric mean" in capsys.readouterr().out


def test_bad_arguments():
    with pytest.raises(SystemExit):
        main(["bench", "--dtypes", "int8"])


@pytest.mark.cudasim
def test_cuda_path_runs_in_the_simulator(tmp_path, capsys):
    # The GPU benchmark's Numba-array path, end to end (PyTorch CUDA needs a real GPU).
    from numba import config

    if not config.ENABLE_CUDASIM:
        pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 (its own pytest process)")
    out = tmp_path / "bench.json"
    status = main([
        "bench", "--quiet", "--no-torch", "--backends", "cuda", "--repeat", "1", "--warmup", "1",
        "--dtypes", "float32,bfloat16", "--shapes", "1x2x5x6:2x3", "1x2x3x4x5:2x2x3",
        "--json", str(out),
    ])
    assert status == 0
    cases = json.loads(out.read_text())["cases"]
    assert {c["backend"] for c in cases} == {"cuda"}
    assert not [c for c in cases if c["error"]]
    assert len(cases) == 2 * 2 * 2  # 2 ops per shape kind x 2 shapes x 2 dtypes
