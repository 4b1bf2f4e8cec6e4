"""The benchmark package: its suite, data, cross-check and report, and seconds-long runs.

No timing is asserted: these runs only show that the two-process machinery works and reports.
"""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest

from adaptive_pool import bench
from adaptive_pool.__main__ import main
from adaptive_pool.bench import check, data, report, suite
from adaptive_pool.bench.compile import render_compile
from adaptive_pool.bench.runner import Result

# one small shape per rank, and a global one: every operator of the family has a case
SHAPES = ["2x3x17:5", "2x3x9x10:4x3", "2x3x9x10:_x1", "1x2x3x9x10:2x4x3"]


def test_parse_shape():
    s = suite.parse_shape("32x256x56x56:7x7")
    assert (s.x, s.out, s.rank, s.y) == ((32, 256, 56, 56), (7, 7), 2, (32, 256, 7, 7))
    s = suite.parse_shape("64x512x14x14:_x1")
    assert s.out == (None, 1) and s.y == (64, 512, 14, 1)
    assert suite.parse_shape("4x16x9x9x9:3x3x3").rank == 3
    assert suite.parse_shape("16x1000:10").y == (16, 10)  # un-batched 1-D
    assert suite.parse_shape("32x256x1024:64").rank == 1
    for bad in ("32x256:7x7", "2x3x4:0", "2x3x4", "2xax4:2", "1x2x3x4x5x6:1x1x1x1"):
        with pytest.raises(ValueError):
            suite.parse_shape(bad)


def test_shape_text():
    assert suite.shape_text((32, 256, 56, 56), (7, 7)) == "32x256x56x56->7x7"
    assert suite.parse_shape("8x4x6x6x6:1x_x_").text == "8x4x6x6x6->1x_x_"


def test_select_ops():
    assert suite.select_ops("all") == list(suite.OPS)
    assert len(suite.OPS) == 12
    assert suite.select_ops("seed") == ["avg2d", "avg2d_backward", "max3d", "max3d_backward"]
    assert suite.select_ops("adaptive_max_pool1d_backward,avg2d_bwd,1d") == [
        "max1d_backward", "avg2d_backward", "avg1d", "max1d", "avg1d_backward"]
    with pytest.raises(ValueError, match="unknown operator"):
        suite.select_ops("avg4d")


@pytest.mark.parametrize("quick", [False, True])
def test_suite_has_global_pooling_for_every_operator_and_dtype(quick):
    cases = suite.cases_for(list(suite.OPS), list(suite.DTYPES), ["cpu"], suite.suite(quick))
    for op, spec in suite.OPS.items():
        for dt in suite.DTYPES:
            outs = {c.shape.out for c in cases
                    if c.op == op and c.dtype == dt and c.shape.source == "global"}
            assert (1,) * spec.rank in outs
            if spec.rank > 1:  # a kept axis, as (None, 1) and (1, None)
                assert any(None in o for o in outs)
            assert any(c.op == op and c.dtype == dt and c.shape.source == "tiny" for c in cases)
    assert {(None, 1), (1, None)} <= {s.out for s in suite.suite(quick)}


def test_random_cases_are_reproducible_from_the_seed():
    a = suite.random_cases(1234, 20)
    assert a == suite.random_cases(1234, 20)
    assert a != suite.random_cases(1235, 20)
    assert {s.rank for s in a} == {1, 2, 3}
    for s in a:
        assert s.source == "random"
        assert suite.parse_shape(s.text.replace("->", ":")).x == s.x  # valid in the syntax
        assert np.prod(s.x) <= 1 << 22 and np.prod(s.y) <= 1 << 22


def test_case_seed_depends_on_shape_and_dtype_only():
    s = suite.parse_shape("2x3x9x10:4x3")
    a, b = suite.Case("avg2d", "float16", "cpu", s), suite.Case("max2d_backward", "float16",
                                                                 "cpu", s)
    assert suite.case_seed(7, a) == suite.case_seed(7, b)
    assert suite.case_seed(7, a) != suite.case_seed(8, a)
    assert suite.Case.from_json(a.to_json()) == a


def test_bfloat16_inputs_are_the_bits_of_both_libraries(torch):
    import ml_dtypes

    v = np.random.default_rng(0).standard_normal(100_000, dtype=np.float32)
    v = np.concatenate([v, np.float32([0, -0.0, np.inf, -np.inf, 3.4e38, 1e-40, 1e-45])])
    bits = data.bf16_bits(v)
    assert np.array_equal(bits, v.astype(ml_dtypes.bfloat16).view(np.uint16))
    theirs = torch.from_numpy(v).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(bits, theirs)
    a = data.make_array(np.random.default_rng([1, 2]), (3, 4), "float16")
    assert a.dtype == np.float16
    assert np.array_equal(a, data.make_array(np.random.default_rng([1, 2]), (3, 4), "float16"))


def test_check_compares_summaries():
    s = suite.parse_shape("2x3x9x10:4x3")
    y = data.make_array(np.random.default_rng(0), (2, 3, 4, 3), "float32")
    i = np.arange(y.size, dtype=np.int32).reshape(y.shape)
    mx = suite.Case("max2d", "float32", "cpu", s)
    ours = data.summarize([y, i], "float32", 1)
    assert check.compare(mx, ours, data.summarize([y, i.astype(np.int64)], "float32", 1))[0] \
        == "bitwise"
    j = i.copy()
    j.flat[0] = 1
    status, detail = check.compare(mx, ours, data.summarize([y, j], "float32", 1))
    assert status == "MISMATCH" and "indices" in detail
    av = suite.Case("avg2d", "float32", "cpu", s)
    near = np.nextafter(y, np.float32(np.inf))
    assert check.compare(av, data.summarize([y], "float32"),
                         data.summarize([near], "float32"))[0] == "close"
    assert check.compare(av, data.summarize([y], "float32"),
                         data.summarize([y + 1], "float32"))[0] == "MISMATCH"


def test_float64_referees_results_that_differ():
    s = suite.parse_shape("2x3x9x10:4x3")
    av = suite.Case("avg2d", "float16", "cpu", s)
    exact = np.random.default_rng(0).standard_normal((2, 3, 4, 3))
    ref = data.summarize([exact], "float64")
    near = data.summarize([exact.astype(np.float16)], "float16")
    off = data.summarize([(exact * 1.01).astype(np.float16)], "float16")
    assert check.compare(av, near, off)[0] == "MISMATCH"
    status, detail = check.referee(av, near, off, ref)
    assert status == "ours exact" and "PyTorch's" in detail
    assert check.referee(av, off, near, ref)[0] == "MISMATCH"  # ours is the one off
    assert check.referee(av, off, off, ref)[0] == "MISMATCH"


def _result(op, dtype, ours, theirs, text="2x3x9x10:4x3"):
    s = suite.parse_shape(text)
    return Result(suite.Case(op, dtype, "cpu", s), ours_samples=ours, torch_samples=theirs,
                  check="bitwise")


def test_report_geomeans_and_slower_cases():
    rs = [_result("avg2d", "float32", [1.0, 1.1, 1.2], [2.0, 2.0, 2.0]),
          _result("avg2d", "float16", [1.0, 1.0, 1.0], [0.5, 0.5, 0.5]),
          _result("max2d", "float32", [2.0, 2.0], [2.0, 2.0])]
    text = report.render(rs, {}, True)
    assert "geometric mean" in text and "where adaptive_pool is slower (1 of 3" in text
    assert "0.50x  cpu avg2d float16" in text
    out = report.to_json(rs, {}, True)
    assert out["geomean"]["cpu/avg2d"] == pytest.approx(1.0, rel=0.1)
    assert out["geomean"]["cpu/avg2d/float16"] == pytest.approx(0.5)
    assert out["cases"][0]["ratio"] == pytest.approx(2 / 1.1)
    assert report.geomean([2.0, 8.0, float("nan")]) == pytest.approx(4.0)


def test_render_compile():
    runs = {"cold": {"avg1d": 3.0, "max3d": 4.0}, "warm": {"avg1d": 0.1, "max3d": 0.2}}
    text = render_compile({"import_s": [0.5, 0.4, 0.6], "ops": ["avg1d", "max3d"],
                           "first_call": {"float32": runs}})
    assert "median 0.500 s" in text and "max3d" in text


def test_no_torch_run(tmp_path, capsys):
    out = tmp_path / "bench.json"
    status = main(["bench", "--quick", "--quiet", "--no-torch", "--repeat", "1", "--warmup", "1",
                   "--dtypes", "float32,bfloat16", "--seed", "3", "--shapes", *SHAPES,
                   "--json", str(out)])
    assert status == 0
    table = capsys.readouterr().out
    for op in suite.OPS:
        assert op in table
    res = json.loads(out.read_text())
    assert len(res["cases"]) == 4 * len(SHAPES) * 2
    assert all(c["ours_s"] > 0 and not c["error"] and c["torch_s"] is None
               for c in res["cases"])
    assert res["copy_bandwidth"]["cpu"]["bytes_per_s"] > 0
    assert res["meta"]["seed"] == 3
    assert "torch" not in res["meta"]["workers"]["cpu"]["ours"]["imported"]


@pytest.mark.slow
def test_two_process_run_against_torch(tmp_path, capsys, torch):
    out = tmp_path / "bench.json"
    status = main(["bench", "--quiet", "--repeat", "2", "--block", "1", "--warmup", "1",
                   "--min-sample-ms", "1", "--dtypes", "bfloat16", "--seed", "5",
                   "--shapes", *SHAPES, "--random", "1", "--json", str(out),
                   "--plot", str(tmp_path / "b.png")])
    text = capsys.readouterr().out
    assert status == 0, text
    assert "geometric mean" in text and "seed 5 (1 random shapes)" in text
    res = json.loads(out.read_text())
    cases = res["cases"]
    assert {c["op"] for c in cases} == set(suite.OPS)
    assert any(c["source"] == "random" for c in cases)
    for c in cases:
        assert not c["error"] and not c["torch_error"], c
        assert len(c["ours_samples"]) == len(c["torch_samples"]) == 2
        assert c["ratio"] > 0 and c["check"] in ("bitwise", "close"), c
        if c["op"] in ("max1d", "max2d", "max3d"):
            assert c["check"] == "bitwise"
    workers = res["meta"]["workers"]["cpu"]
    # each library in its own process: neither imports the other
    assert workers["torch"]["imported"] == ["torch"]
    assert "torch" not in workers["ours"]["imported"]
    assert workers["ours"]["pid"] != workers["torch"]["pid"]
    assert (tmp_path / "b.png").stat().st_size > 0


@pytest.mark.slow
def test_channels_last_inputs_against_torch(tmp_path, capsys, torch):
    """Channels-last cases: each side gets its library's channels-last input (an NCHW view of
    NHWC memory; PyTorch's channels_last format), and the results agree."""
    path = tmp_path / "bench.json"
    status = main(["bench", "--quiet", "--repeat", "1", "--block", "1", "--warmup", "1",
                   "--min-sample-ms", "1", "--dtypes", "float32", "--seed", "3",
                   "--ops", "2d,3d", "--shapes", "2x9x11x13:4x5", "1x8x5x6x7:2x3x2",
                   "--channels-last", "--json", str(path)])
    text = capsys.readouterr().out
    assert status == 0, text
    cases = json.loads(path.read_text())["cases"]
    assert len(cases) == 8
    for c in cases:
        assert c["source"] == "channels-last" and c["check"] in ("bitwise", "close"), c
    cl = [s for s in suite.suite() if s.channels_last]
    assert cl and all(s.source == "channels-last" for s in cl)
    case = suite.cases_for(["avg2d"], ["float32"], ["cpu"], cl)[0]
    assert suite.Case.from_json(case.to_json()) == case
    assert not suite.cases_for(["avg2d"], ["float32"], ["cuda"], cl)  # the CPU backend only


def test_modes_are_imported_only_when_asked_for(monkeypatch, capsys):
    monkeypatch.setitem(bench.MODES, "nosuch", "adaptive_pool.bench_nosuch")
    assert main(["bench", "nosuch", "--help"]) == 2
    assert "not available" in capsys.readouterr().err
    seen = []
    fake = types.ModuleType("adaptive_pool.bench_fake")
    fake.main = lambda argv: seen.append(argv) or 0
    monkeypatch.setitem(sys.modules, "adaptive_pool.bench_fake", fake)
    monkeypatch.setitem(bench.MODES, "fake", "adaptive_pool.bench_fake")
    assert main(["bench", "fake", "--x", "1"]) == 0
    assert seen == [["--x", "1"]]


@pytest.mark.parametrize("argv", [["--dtypes", "int8"], ["--ops", "avg4d"],
                                  ["--shapes", "32x256:7x7"], ["--repeat", "0"]])
def test_bad_arguments(argv):
    with pytest.raises(SystemExit):
        main(["bench", *argv])


@pytest.mark.cudasim
def test_cuda_path_runs_in_the_simulator(tmp_path, capsys):
    # The GPU benchmark's Numba-array path, end to end, in the worker process (which inherits
    # NUMBA_ENABLE_CUDASIM); PyTorch CUDA needs a real GPU.
    from numba import config

    if not config.ENABLE_CUDASIM:
        pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 (its own pytest process)")
    out = tmp_path / "bench.json"
    status = main([
        "bench", "--quiet", "--no-torch", "--backends", "cuda", "--repeat", "1", "--warmup", "1",
        "--min-sample-ms", "1", "--dtypes", "float32,bfloat16", "--seed", "1",
        "--ops", "2d,max3d,max3d_backward", "--shapes", "1x2x5x6:2x3", "1x2x3x4x5:2x2x3",
        "--json", str(out),
    ])
    assert status == 0
    cases = json.loads(out.read_text())["cases"]
    assert {c["backend"] for c in cases} == {"cuda"}
    assert not [c for c in cases if c["error"]]
    assert len(cases) == 2 * 2 * 2 + 2 * 2  # 4 2-D ops and 2 3-D ops, 1 shape each, 2 dtypes


def test_skipna_mode_runs(capsys):
    status = main(["bench", "skipna", "--shapes", "2x3x9x10:4x3", "--dtypes", "float32",
                   "--samples", "1"])
    assert status == 0
    out = capsys.readouterr().out
    assert "avg2d_backward float32" in out and "geometric mean" in out
    assert out.startswith("adaptive_pool bench skipna, ") and " commit " in out.splitlines()[0]
    # the backward beside a copy of x: what reading x and writing a result costs alone
    backward = next(line for line in out.splitlines() if "avg2d_backward" in line)
    assert len(backward.split()) == 3 + 5 and "copy x" in out
    assert "backwards above the target:" in out
