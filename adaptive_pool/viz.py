"""Pictures of adaptive pooling: the windows of a shape, and a gradient as a heatmap.

Matplotlib is an optional extra (``pip install adaptive_pool[viz]``). It is imported inside the
functions, on first use, so ``import adaptive_pool`` never pays for it; without it they raise
:class:`MissingExtraError` (an ``ImportError``) saying what to install.

>>> import adaptive_pool as ap
>>> ax = ap.plot_windows(10, 4)                   # one axis: 4 overlapping windows over 10 inputs
>>> ax = ap.plot_windows((5, 7), (3, 4))          # a 2-D grid of windows
>>> ax = ap.plot_gradient(grad_input)             # a heatmap of the last two axes, with a colorbar
"""

from __future__ import annotations

import numbers
from typing import Any, Sequence

import numpy as np

from .errors import AdaptivePoolError, AdaptivePoolTypeError, AdaptivePoolValueError
from .windows import axis_tables

__all__ = ["MissingExtraError", "plot_windows", "plot_gradient"]

#: Axes longer than this are refused by :func:`plot_windows` (a picture of them is unreadable).
MAX_PLOT_SIZE = 4096


class MissingExtraError(AdaptivePoolError, ImportError):
    """An optional dependency (an *extra* of the package) is not installed."""

    def __init__(self, message: str, *, name: str) -> None:
        super().__init__(message)
        self.name = name  # ImportError's attribute: the module that is missing

    def __str__(self) -> str:  # no aclnn status: this is not an operator error
        return str(self.args[0])


def _matplotlib(what: str) -> Any:
    """``matplotlib.pyplot``, or a :class:`MissingExtraError` naming the extra to install."""
    try:
        import matplotlib.pyplot as plt  # noqa: PLC0415 - optional, imported on first use
    except ImportError as e:
        raise MissingExtraError(
            f"adaptive_pool.{what} needs matplotlib, which is not installed; install the "
            f"plotting extra with: pip install adaptive_pool[viz]  (or: pip install matplotlib)",
            name="matplotlib",
        ) from e
    return plt


def _sizes(value: Any, name: str) -> tuple[int, ...]:
    """An int or a tuple of 1 or 2 ints, as a tuple of positive ints."""
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if not 1 <= len(items) <= 2:
        raise AdaptivePoolValueError(
            f"{name} must be an int or a pair (H, W), got {value!r}", argument=name
        )
    for v in items:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
            raise AdaptivePoolTypeError(
                f"{name} entries must be ints, got {v!r} ({type(v).__name__})", argument=name
            )
        if not 1 <= v <= MAX_PLOT_SIZE:
            raise AdaptivePoolValueError(
                f"{name} entries must be between 1 and {MAX_PLOT_SIZE} to be drawn, got {v}",
                argument=name,
            )
    return tuple(int(v) for v in items)


def _new_axes(plt: Any, ax: Any, size: tuple[float, float]) -> Any:
    if ax is not None:
        return ax
    _, ax = plt.subplots(figsize=size, layout="constrained")
    return ax


def plot_windows(input_size: Any, output_size: Any, ax: Any = None) -> Any:
    """Draw the adaptive pooling windows of one axis, or of a 2-D ``(H, W) -> (OH, OW)`` shape.

    Output cell ``o`` pools the input positions ``[floor(o*I/O), ceil((o+1)*I/O))`` (see
    :mod:`adaptive_pool.windows`). When ``I % O != 0`` neighbouring windows overlap.

    Parameters
    ----------
    input_size, output_size : int or pair of ints
        Two ints draw one axis: one horizontal bar per output cell, spanning its input positions;
        input positions pooled by more than one cell are shaded, so the overlaps stand out.
        Two pairs ``(H, W), (OH, OW)`` draw the input grid with one translucent rectangle per
        output cell (overlaps look darker), each labelled with its output coordinates.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure is made when omitted.

    Returns
    -------
    matplotlib.axes.Axes
        One :class:`~matplotlib.patches.Rectangle` per output cell, in output order (row-major
        in 2-D), precedes any shading patches in ``ax.patches``.
    """
    ins = _sizes(input_size, "input_size")
    outs = _sizes(output_size, "output_size")
    if len(ins) != len(outs):
        raise AdaptivePoolValueError(
            f"input_size and output_size must both be ints or both be pairs, got "
            f"{input_size!r} and {output_size!r}",
            argument="output_size",
        )
    plt = _matplotlib("plot_windows")
    from matplotlib.patches import Rectangle  # noqa: PLC0415

    cmap = plt.get_cmap("tab10")
    if len(ins) == 1:
        (n_in,), (n_out,) = ins, outs
        t = axis_tables(n_in, n_out)
        ax = _new_axes(plt, ax, (min(3 + 0.35 * n_in, 12), min(1.5 + 0.35 * n_out, 8)))
        for o in range(n_out):
            s, e = int(t["start"][o]), int(t["end"][o])
            ax.add_patch(
                Rectangle(
                    (s, o - 0.35), e - s, 0.7, facecolor=cmap(o % 10), alpha=0.75,
                    edgecolor="black", linewidth=0.8, label=f"o={o}: [{s}, {e})",
                )
            )
        shared = np.flatnonzero(t["cover_hi"] - t["cover_lo"] > 1)
        for i in shared:
            ax.add_patch(
                Rectangle(
                    (i, -0.5), 1, n_out, facecolor="0.5", alpha=0.18, edgecolor="none",
                    zorder=0, label="_shared",
                )
            )
        ax.set_xlim(0, n_in)
        ax.set_ylim(n_out - 0.5, -0.5)
        step = max(1, n_in // 20)
        ax.set_xticks(np.arange(0, n_in, step) + 0.5, [str(i) for i in range(0, n_in, step)])
        ax.set_yticks(range(n_out) if n_out <= 40 else [0, n_out - 1])
        ax.set_xlabel("input position i")
        ax.set_ylabel("output cell o")
        over = f"\n{len(shared)} shared input positions (shaded)" if len(shared) else ""
        ax.set_title(f"adaptive windows {n_in} -> {n_out}{over}", fontsize=10)
        return ax

    (h, w), (oh, ow) = ins, outs
    th, tw = axis_tables(h, oh), axis_tables(w, ow)
    ax = _new_axes(plt, ax, (min(1.5 + 0.45 * w, 12), min(1.5 + 0.45 * h, 10)))
    k = 0
    for r in range(oh):
        h0, h1 = int(th["start"][r]), int(th["end"][r])
        for c in range(ow):
            w0, w1 = int(tw["start"][c]), int(tw["end"][c])
            inset = 0.06 + 0.04 * ((r + c) % 2)  # keeps shared borders of neighbours apart
            ax.add_patch(
                Rectangle(
                    (w0 + inset, h0 + inset), w1 - w0 - 2 * inset, h1 - h0 - 2 * inset,
                    facecolor=cmap(k % 10), alpha=0.3, edgecolor=cmap(k % 10), linewidth=1.5,
                    label=f"({r}, {c}): h [{h0}, {h1}), w [{w0}, {w1})",
                )
            )
            if oh * ow <= 64:
                ax.text(
                    (w0 + w1) / 2, (h0 + h1) / 2, f"{r},{c}", ha="center", va="center",
                    fontsize=8,
                )
            k += 1
    ax.set_xlim(0, w)
    ax.set_ylim(h, 0)
    ax.set_xticks(np.arange(w + 1), minor=True)
    ax.set_yticks(np.arange(h + 1), minor=True)
    ax.grid(which="minor", color="0.85", linewidth=0.6)
    ax.tick_params(which="minor", length=0)
    ax.set_aspect("equal")
    ax.set_xlabel("w")
    ax.set_ylabel("h")
    ax.set_title(f"adaptive windows ({h}, {w}) -> ({oh}, {ow})", fontsize=10)
    return ax


def _host(a: Any) -> np.ndarray:
    """A NumPy copy of ``a`` (NumPy, Numba/CuPy CUDA arrays, PyTorch tensors) for plotting."""
    if isinstance(a, np.ndarray):
        return a
    for method in ("copy_to_host", "get"):  # Numba device arrays, CuPy arrays
        if callable(getattr(a, method, None)):
            return np.asarray(getattr(a, method)())
    if type(a).__module__.startswith("torch"):
        return a.detach().cpu().numpy()
    return np.asarray(a)


def plot_gradient(
    grad: Any,
    ax: Any = None,
    *,
    plane: Sequence[int] | None = None,
    title: str | None = None,
    cmap: str | None = None,
) -> Any:
    """Draw a 2-D gradient (or one plane of a higher-rank one) as a heatmap with a colorbar.

    Parameters
    ----------
    grad : array
        2-D, or higher rank: the last two axes are drawn. Any supported dtype (16-bit values
        are shown as float32); a CUDA array is copied to the host.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure is made when omitted.
    plane : sequence of int, optional
        Which plane of a higher-rank ``grad`` to draw: one index per leading axis (for a
        ``(N, C, D, H, W)`` gradient, ``(n, c, d)``). Default: the first plane, all zeros.
    title : str, optional
        The axes title (default: the shape and the plane drawn).
    cmap : str, optional
        A matplotlib colormap. Default: ``"RdBu_r"`` centred on 0 when the values have both
        signs, else ``"viridis"``.

    Returns
    -------
    matplotlib.axes.Axes
        With one image (``ax.images[0]``) and a colorbar (``ax.images[0].colorbar``).
    """
    g = _host(grad)
    if g.ndim < 2:
        raise AdaptivePoolValueError(
            f"grad must have at least 2 axes to draw a heatmap, got shape {g.shape}",
            argument="grad",
        )
    lead = g.shape[:-2]
    if plane is None:
        plane = (0,) * len(lead)
    plane = tuple(int(p) for p in plane)
    if len(plane) != len(lead) or any(not 0 <= p < n for p, n in zip(plane, lead)):
        raise AdaptivePoolValueError(
            f"plane must give one index per leading axis of grad {g.shape} (that is "
            f"{len(lead)} indices, each within {lead}), got {plane}",
            argument="plane",
        )
    if 0 in g.shape[-2:]:
        raise AdaptivePoolValueError(f"grad of shape {g.shape} has an empty plane", argument="grad")
    img = np.asarray(g[plane], dtype=np.float32 if g.dtype.itemsize <= 4 else np.float64)
    plt = _matplotlib("plot_gradient")

    finite = img[np.isfinite(img)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    kwargs: dict[str, Any] = {}
    if cmap is None and lo < 0 < hi:
        m = max(-lo, hi)
        cmap, kwargs = "RdBu_r", {"vmin": -m, "vmax": m}
    rows, cols = img.shape
    inch = min(7 / cols, 5 / rows, 0.45)  # per cell: the image fits in 7 x 5 inches
    ax = _new_axes(plt, ax, (max(inch * cols, 2) + 1.6, max(inch * rows, 1.5) + 1.0))
    im = ax.imshow(img, cmap=cmap or "viridis", interpolation="nearest", **kwargs)
    ax.figure.colorbar(im, ax=ax)
    ax.set_xlabel("w")
    ax.set_ylabel("h")
    if title is None:
        where = f", plane {plane}" if plane else ""
        title = f"gradient {tuple(g.shape)} {g.dtype}{where}"
    ax.set_title(title, fontsize=10)
    return ax
