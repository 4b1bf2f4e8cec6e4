# %% [markdown]
# # adaptive_pool: quick start
#
# Adaptive pooling shrinks (or grows) the spatial axes of an array to a size you choose, whatever
# the input size: each output cell pools a *window* of the input. This notebook runs the operators
# forward and backward on arrays small enough to read, tours the whole family (average and max
# pooling in 1, 2 and 3 dimensions), shows the two-phase (workspace / executor) API, checks the
# results against a reference and draws the windows and a gradient.
#
# It is also a script: `python examples/quickstart.py` prints the same results and shows the
# figures, or saves them as PNG files in the current directory when there is no display.

# %%
import numpy as np
import matplotlib
import matplotlib.pyplot as plt

import adaptive_pool as ap

np.set_printoptions(precision=3, suppress=True, linewidth=100)
rng = np.random.default_rng(0)


def show(fig, name):
    """Jupyter draws figures by itself; a script without a display saves them as PNG files."""
    backend = matplotlib.get_backend().lower()
    if "inline" in backend or "ipympl" in backend or "widget" in backend:
        return
    if backend in ("agg", "pdf", "ps", "svg", "cairo", "pgf", "template"):
        fig.savefig(f"{name}.png", dpi=100)
        plt.close(fig)
        print(f"saved {name}.png")
    else:
        plt.show()


# %% [markdown]
# ## Average pooling, forward
#
# `adaptive_avg_pool2d` takes a `(C, H, W)` or `(N, C, H, W)` NumPy array and an output size.
# Here a 5 x 7 image becomes 2 x 3. Neither 5 nor 7 is a multiple of the output size, so
# neighbouring windows overlap: row 2 belongs to both output rows.

# %%
x = np.arange(35, dtype=np.float32).reshape(1, 1, 5, 7)
y = ap.adaptive_avg_pool2d(x, (2, 3))
print("x:\n", x[0, 0])
print("y = adaptive_avg_pool2d(x, (2, 3)):\n", y[0, 0])

# %% [markdown]
# ## Average pooling, backward
#
# `adaptive_avg_pool2d_backward(grad_output, x)` returns the gradient with respect to `x`. With a
# gradient of ones, each input position receives `1 / window size` from every window that
# contains it, so the overlapped row and columns stand out.

# %%
grad_y = np.ones_like(y)
grad_x = ap.adaptive_avg_pool2d_backward(grad_y, x)
print("grad_x:\n", grad_x[0, 0])
print("total gradient:", round(float(grad_x.sum()), 4), "(one per output cell)")

# %% [markdown]
# ## Max pooling in 3-D, forward
#
# `adaptive_max_pool3d` pools the last three axes of a `(C, D, H, W)` or `(N, C, D, H, W)` array
# and also returns where each maximum was: a flat offset `d*H*W + h*W + w` inside its `(n, c)`
# volume, `int32` by default.

# %%
v = rng.integers(0, 100, size=(1, 1, 2, 3, 4)).astype(np.float32)
vy, idx = ap.adaptive_max_pool3d(v, (1, 2, 2))
print("v:\n", v[0, 0])
print("maxima:\n", vy[0, 0])
print("indices (", idx.dtype, "):\n", idx[0, 0])
d, h, w = np.unravel_index(idx[0, 0], v.shape[2:])
print("as (d, h, w):", [(int(a), int(b), int(c)) for a, b, c in zip(d.flat, h.flat, w.flat)])

# %% [markdown]
# ## Max pooling in 3-D, backward
#
# The gradient flows only to the positions of the maxima.

# %%
grad_vy = np.arange(1, vy.size + 1, dtype=np.float32).reshape(vy.shape)
grad_v = ap.adaptive_max_pool3d_backward(grad_vy, v, idx)
print("grad_output:\n", grad_vy[0, 0])
print("grad_v:\n", grad_v[0, 0])

# %% [markdown]
# ## The whole family
#
# Average and max pooling over the last 1, 2 or 3 axes, each with its backward: twelve functions
# with the same conventions. Inputs are `(C, *spatial)` or `(N, C, *spatial)`; max indices are
# flat offsets inside each `(n, c)` plane (`l`, `h*W + w` or `d*H*W + h*W + w`), as PyTorch's.

# %%
family = [f"adaptive_{kind}_pool{rank}d{suffix}" for kind in ("avg", "max")
          for rank in (1, 2, 3) for suffix in ("", "_backward")]
for name in family:
    print(f"{name:30} {getattr(ap, name).__doc__.splitlines()[0]}")

# %% [markdown]
# A 1-D signal of 10 samples pooled to 4 values, and where each maximum was:

# %%
signal = np.array([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3]], np.float32)  # (C, L)
print("mean:", ap.adaptive_avg_pool1d(signal, 4))
peaks, where = ap.adaptive_max_pool1d(signal, 4)
print("max: ", peaks, "at", where)

# %% [markdown]
# Global pooling, as attention blocks use it (squeeze-and-excitation, CBAM, coordinate attention):
# `1` pools each whole plane, `(None, 1)` each row, `(1, None)` each column.

# %%
feat = rng.standard_normal((2, 8, 6, 5)).astype(np.float32)  # (N, C, H, W)
channel_avg = ap.adaptive_avg_pool2d(feat, 1)
channel_max, _ = ap.adaptive_max_pool2d(feat, 1)
rows, cols = ap.adaptive_avg_pool2d(feat, (None, 1)), ap.adaptive_avg_pool2d(feat, (1, None))
print("channel descriptors:", channel_avg.shape, channel_max.shape)
print("per row:", rows.shape, " per column:", cols.shape)
print("same as NumPy's mean:", np.allclose(channel_avg[..., 0, 0], feat.mean(axis=(2, 3))))

# %% [markdown]
# A volume averaged to 2 x 2 x 2, and the gradient of the average flowing back:

# %%
vol = np.arange(4 * 5 * 6, dtype=np.float64).reshape(1, 4, 5, 6)  # (C, D, H, W)
small = ap.adaptive_avg_pool3d(vol, 2)
print("pooled:\n", small[0])
grad = ap.adaptive_avg_pool3d_backward(np.ones_like(small), vol)
print("gradient sum:", round(float(grad.sum()), 6), "(one per output cell)")

# %% [markdown]
# ## The windows
#
# For an axis of input size `I` and output size `O`, output cell `o` pools the input positions
# `[floor(o*I/O), ceil((o+1)*I/O))`, computed with integers only. `adaptive_pool.windows` shows
# the tables the library precomputes: `start`/`end` per output cell and, for the backward, the
# range `cover_lo`/`cover_hi` of output cells that contain each input position.

# %%
from adaptive_pool.windows import axis_tables

for name, table in axis_tables(7, 3).items():
    print(f"{name:9}", table)

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.6), layout="constrained")
ap.plot_windows(7, 3, ax=ax1)
ap.plot_windows((5, 7), (2, 3), ax=ax2)
show(fig, "quickstart_windows")

# %% [markdown]
# ## The two-phase API: workspace and executor
#
# `adaptive_pool.acl` mirrors CANN's `aclnn*GetWorkspaceSize` + `aclnn*` calls. Phase one checks
# the arguments and returns the workspace size in bytes and an executor bound to the arrays;
# phase two runs it on your workspace (or `None` to use the executor's own). Unlike CANN's,
# these executors can be run again: refill the inputs in place and call phase two again.

# %%
from adaptive_pool import acl

grad_output = np.ones((1, 1, 2, 3), np.float32)
grad_input = np.empty_like(x)
size, executor = acl.adaptive_avg_pool2d_backward_get_workspace_size(grad_output, x, grad_input)
workspace = np.empty(size, np.uint8)
acl.adaptive_avg_pool2d_backward(workspace, size, executor)
print("workspace:", size, "bytes")
print(grad_input[0, 0])

grad_output[...] = 2.0  # new values, same arrays: run the same executor again
acl.adaptive_avg_pool2d_backward(workspace, size, executor)
print(grad_input[0, 0])

# %% [markdown]
# An executor describes itself: one line as text, and in Jupyter a table of its plan and of its
# window tables.

# %%
print(repr(executor))
executor

# %% [markdown]
# Executors are also available without the acl layer. The one-call functions use the same
# cached plans, so they pay the planning cost once per shape.

# %%
from adaptive_pool.functional import forward_executor

plan = forward_executor("adaptive_avg_pool2d", x, (2, 3))
print(plan)
print(np.array_equal(plan.run(x), y))

# %% [markdown]
# ## Check against a reference
#
# A few lines of NumPy with the same window formula, and PyTorch when it is installed, on random
# batched data with overlapping windows.

# %%
xb = rng.standard_normal((2, 3, 11, 13)).astype(np.float32)
out_hw = (4, 5)


def numpy_avg_pool2d(a, out):
    (oh, ow), (h, w) = out, a.shape[-2:]
    res = np.empty(a.shape[:-2] + out, np.float64)
    for i in range(oh):
        h0, h1 = i * h // oh, -(-(i + 1) * h // oh)  # floor and ceil, with integers
        for j in range(ow):
            w0, w1 = j * w // ow, -(-(j + 1) * w // ow)
            res[..., i, j] = a[..., h0:h1, w0:w1].astype(np.float64).mean(axis=(-2, -1))
    return res


yb = ap.adaptive_avg_pool2d(xb, out_hw)
print("NumPy reference, max |difference|:", np.abs(yb - numpy_avg_pool2d(xb, out_hw)).max())

# %%
try:
    import torch
except ImportError:
    torch = None
    print("PyTorch is not installed: the NumPy reference above is the check")

if torch is not None:
    F = torch.nn.functional
    # average pooling, forward and backward
    xt = torch.from_numpy(xb).requires_grad_()
    yt = F.adaptive_avg_pool2d(xt, out_hw)
    gy = rng.standard_normal(yt.shape).astype(np.float32)
    yt.backward(torch.from_numpy(gy))
    gx = ap.adaptive_avg_pool2d_backward(gy, xb)
    print("avg forward  max |diff|:", np.abs(yb - yt.detach().numpy()).max())
    print("avg backward max |diff|:", np.abs(gx - xt.grad.numpy()).max())
    # max pooling in 3-D: same maxima, same indices, same gradient
    vb = rng.standard_normal((2, 3, 5, 7, 9)).astype(np.float32)
    vt = torch.from_numpy(vb).requires_grad_()
    vyt, it = F.adaptive_max_pool3d(vt, (2, 3, 4), return_indices=True)
    gvy = rng.standard_normal(vyt.shape).astype(np.float32)
    vyt.backward(torch.from_numpy(gvy))
    vyb, ib = ap.adaptive_max_pool3d(vb, (2, 3, 4))
    gvb = ap.adaptive_max_pool3d_backward(gvy, vb, ib)
    print("max forward equal:", np.array_equal(vyb, vyt.detach().numpy()))
    print("indices equal    :", np.array_equal(ib, it.numpy()))
    print("max backward equal:", np.array_equal(gvb, vt.grad.numpy()))

# %% [markdown]
# ## A gradient, as a picture
#
# The backward of a 12 x 17 -> 5 x 7 average pooling with a gradient of ones: input positions
# shared by two windows receive more, and smaller windows give more per position.

# %%
img = np.zeros((1, 1, 12, 17), np.float32)
g = ap.adaptive_avg_pool2d_backward(np.ones((1, 1, 5, 7), np.float32), img)
ax = ap.plot_gradient(g, title="d(sum of y)/dx, 12 x 17 -> 5 x 7")
show(ax.figure, "quickstart_gradient")
