"""adaptive_pool.viz: the window and gradient plots (Agg backend) and the missing-extra message."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import adaptive_pool as ap
from adaptive_pool.viz import MissingExtraError
from adaptive_pool.windows import axis_tables

mpl = pytest.importorskip("matplotlib")
mpl.use("Agg", force=True)
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _bars(ax):
    """The window rectangles (shading patches are labelled ``_shared``)."""
    return [p for p in ax.patches if isinstance(p, Rectangle) and p.get_label() != "_shared"]


@pytest.mark.parametrize("n_in, n_out", [(10, 4), (8, 4), (3, 5), (1, 3), (7, 1)])
def test_plot_windows_one_axis_draws_one_bar_per_output_cell(n_in, n_out):
    ax = ap.plot_windows(n_in, n_out)
    bars = _bars(ax)
    t = axis_tables(n_in, n_out)
    assert len(bars) == n_out
    for o, bar in enumerate(bars):
        assert bar.get_x() == t["start"][o]
        assert bar.get_width() == t["end"][o] - t["start"][o]
    shared = [p for p in ax.patches if p.get_label() == "_shared"]
    assert len(shared) == int(np.count_nonzero(t["cover_hi"] - t["cover_lo"] > 1))
    assert ax.get_xlim() == (0, n_in)


def test_plot_windows_shades_exactly_the_overlaps():
    ax = ap.plot_windows(10, 4)  # windows [0,3) [2,5) [5,8) [7,10): positions 2 and 7 shared
    shared = sorted(p.get_x() for p in ax.patches if p.get_label() == "_shared")
    assert shared == [2, 7]
    assert "2 shared" in ax.get_title()
    ax = ap.plot_windows(8, 4)  # divisible: no overlap
    assert not [p for p in ax.patches if p.get_label() == "_shared"]


def test_plot_windows_two_axes_draws_the_grid_of_windows():
    ax = ap.plot_windows((7, 10), (3, 4))
    rects = _bars(ax)
    assert len(rects) == 3 * 4
    th, tw = axis_tables(7, 3), axis_tables(10, 4)
    # Row-major order; each rectangle lies inside its window (a small inset keeps borders apart).
    for k, r in enumerate(rects):
        oh, ow = divmod(k, 4)
        assert th["start"][oh] < r.get_y() + r.get_height() / 2 < th["end"][oh]
        assert tw["start"][ow] <= r.get_x() < r.get_x() + r.get_width() <= tw["end"][ow]
        assert r.get_width() > tw["end"][ow] - tw["start"][ow] - 0.5
    assert len(ax.texts) == 12
    assert ax.get_xlim() == (0, 10) and ax.get_ylim() == (7, 0)


def test_plot_windows_uses_the_given_axes():
    fig, (a, b) = plt.subplots(1, 2)
    assert ap.plot_windows(5, 3, ax=a) is a
    assert ap.plot_windows((4, 4), (2, 3), ax=b) is b
    assert len(fig.axes) == 2


@pytest.mark.parametrize(
    "args, exc, words",
    [
        ((10, (2, 2)), ValueError, "both be ints or both be pairs"),
        ((0, 3), ValueError, "input_size entries must be between 1"),
        ((4, 0), ValueError, "output_size"),
        ((2.5, 3), TypeError, "must be ints"),
        (((1, 2, 3), (1, 1, 1)), ValueError, "an int or a pair"),
        ((10**6, 3), ValueError, "4096"),
    ],
)
def test_plot_windows_rejects_bad_sizes(args, exc, words):
    with pytest.raises(exc, match=words) as info:
        ap.plot_windows(*args)
    assert isinstance(info.value, ap.AdaptivePoolError)


def test_plot_gradient_2d_has_image_and_colorbar():
    g = np.arange(12.0).reshape(3, 4) - 5
    ax = ap.plot_gradient(g)
    assert len(ax.images) == 1
    im = ax.images[0]
    np.testing.assert_array_equal(im.get_array(), g)
    assert im.colorbar is not None and im.colorbar.ax in ax.figure.axes
    # Both signs: a diverging colormap centred on 0.
    assert im.get_cmap().name == "RdBu_r"
    assert im.get_clim() == (-6.0, 6.0)


def test_plot_gradient_selects_a_plane_of_a_higher_rank_gradient():
    rng = np.random.default_rng(0)
    g = rng.random((2, 3, 4, 5, 6)).astype(np.float32)
    ax = ap.plot_gradient(g, plane=(1, 2, 3), title="plane")
    np.testing.assert_array_equal(ax.images[0].get_array(), g[1, 2, 3])
    assert ax.get_title() == "plane"
    assert ax.images[0].get_cmap().name == "viridis"  # one sign
    ax = ap.plot_gradient(g)  # default: the first plane
    np.testing.assert_array_equal(ax.images[0].get_array(), g[0, 0, 0])
    assert "(0, 0, 0)" in ax.get_title()


@pytest.mark.parametrize("dtype", [np.float16, ap.bfloat16])
def test_plot_gradient_16bit_from_a_real_backward(dtype):
    x = np.zeros((1, 2, 7, 9), dtype)
    gy = np.ones((1, 2, 3, 4), dtype)
    g = ap.adaptive_avg_pool2d_backward(gy, x)
    ax = ap.plot_gradient(g, plane=(0, 1), cmap="magma")
    np.testing.assert_array_equal(ax.images[0].get_array(), g[0, 1].astype(np.float32))
    assert ax.images[0].get_cmap().name == "magma"


@pytest.mark.parametrize(
    "g, plane, words",
    [
        (np.zeros(5), None, "at least 2 axes"),
        (np.zeros((2, 3, 3)), (2,), "plane must give one index"),
        (np.zeros((2, 3, 3)), (0, 0), "plane must give one index"),
        (np.zeros((2, 0, 3)), None, "empty plane"),
    ],
)
def test_plot_gradient_rejects_bad_input(g, plane, words):
    with pytest.raises(ValueError, match=words):
        ap.plot_gradient(g, plane=plane)


def _hide_matplotlib(monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails


@pytest.mark.parametrize(
    "call", [lambda: ap.plot_windows(5, 3), lambda: ap.plot_gradient(np.zeros((2, 2)))]
)
def test_missing_matplotlib_names_the_extra(monkeypatch, call):
    _hide_matplotlib(monkeypatch)
    with pytest.raises(ImportError) as info:
        call()
    err = info.value
    assert isinstance(err, MissingExtraError) and isinstance(err, ap.AdaptivePoolError)
    assert "pip install adaptive_pool[viz]" in str(err)
    assert "matplotlib" in str(err) and err.name == "matplotlib"
    assert "aclnn" not in str(err)


def test_import_adaptive_pool_does_not_import_matplotlib():
    code = (
        "import sys, adaptive_pool as ap; "
        "assert callable(ap.plot_windows) and callable(ap.plot_gradient); "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'IPython')]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
