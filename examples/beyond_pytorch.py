# %% [markdown]
# # What adaptive_pool does beyond PyTorch
#
# The operators compute what `torch.nn.functional.adaptive_avg_pool2d` and
# `adaptive_max_pool3d` compute, plus a few things that matter when the shapes get odd, the
# dtypes get small or the results must be reproducible:
#
# 1. 16-bit dtypes accumulate in float32, and every result is rounded once
# 2. deterministic results, bit for bit
# 3. axes longer than 2**24, with exact windows
# 4. int32 indices by default (int64 on request)
# 5. clear errors
# 6. the same calls on GPU arrays
#
# It is also a script: `python examples/beyond_pytorch.py`.

# %%
import ml_dtypes
import numpy as np

import adaptive_pool as ap

np.set_printoptions(precision=4, suppress=True, linewidth=100)
rng = np.random.default_rng(0)

try:
    import torch
except ImportError:
    torch = None
    print("PyTorch is not installed: the comparisons with it are skipped")

# %% [markdown]
# ## 1. 16-bit gradients, accumulated in float32
#
# `float16` and `bfloat16` (`ml_dtypes.bfloat16`, also `ap.bfloat16`) are read as 16-bit values,
# summed in float32 and rounded once at the end. The backward sums many terms when windows
# share inputs, most of all when upsampling (output larger than input): below, each input
# position of the average pooling receives 32 x 32 = 1024 terms, and one input element of the
# max pooling receives 4096. We compare PyTorch's CPU backward in the same 16-bit dtype (which
# keeps its running sums in 16 bits) with ours, both against a float64 reference.

# %%
def relative_error(got, ref):
    return float(np.max(np.abs(got.astype(np.float64) - ref) / np.abs(ref)))


def avg_case(dtype, torch_dtype):
    x = np.zeros((1, 8, 2, 2), dtype)
    gy = rng.uniform(0.5, 1.0, (1, 8, 64, 64)).astype(dtype)
    ref = ap.adaptive_avg_pool2d_backward(gy.astype(np.float64), x.astype(np.float64))
    ours = ap.adaptive_avg_pool2d_backward(gy, x)
    theirs = None
    if torch is not None:
        go_t = torch.from_numpy(gy.astype(np.float32)).to(torch_dtype)
        x_t = torch.zeros(x.shape, dtype=torch_dtype)
        theirs = torch.ops.aten._adaptive_avg_pool2d_backward(go_t, x_t)
        theirs = theirs.float().numpy()
    return ref, ours, theirs


def max_case(dtype, torch_dtype):
    v = np.ones((1, 4, 1, 1, 1), dtype)
    y, idx = ap.adaptive_max_pool3d(v, (1, 1, 4096))
    gy = rng.uniform(0.5, 1.0, y.shape).astype(dtype)
    ref = ap.adaptive_max_pool3d_backward(gy.astype(np.float64), v.astype(np.float64), idx)
    ours = ap.adaptive_max_pool3d_backward(gy, v, idx)
    theirs = None
    if torch is not None:
        t = lambda a: torch.from_numpy(a.astype(np.float32)).to(torch_dtype)  # noqa: E731
        idx_t = torch.from_numpy(idx).long()
        theirs = torch.ops.aten.adaptive_max_pool3d_backward(t(gy), t(v), idx_t)
        theirs = theirs.float().numpy()
    return ref, ours, theirs

# %%
print(f"{'case':34} {'PyTorch 16-bit':>15} {'adaptive_pool':>14} {'one rounding':>13}")
for name, dtype in [("float16", np.float16), ("bfloat16", ap.bfloat16)]:
    torch_dtype = getattr(torch, name) if torch is not None else None
    unit = float(ml_dtypes.finfo(dtype).eps) / 2  # the error of rounding once to this dtype
    cases = [("avg backward 2x2 <- 64x64", avg_case), ("max backward 1 <- 4096", max_case)]
    for case, run in cases:
        ref, ours, theirs = run(dtype, torch_dtype)
        t_err = f"{relative_error(theirs, ref):15.3%}" if theirs is not None else f"{'-':>15}"
        print(f"{case + ', ' + name:34} {t_err} {relative_error(ours, ref):14.3%} {unit:13.3%}")

# %% [markdown]
# Our error stays within one rounding of the dtype; a 16-bit running sum loses more with every
# term it adds, up to wrong leading digits in bfloat16.
#
# Rounding once matters in float32 too: the average divides by the window volume once, where
# PyTorch divides by the window height and then by its width. A 3 x 3 window summing to 5:

# %%
x6 = np.zeros((1, 1, 6, 6), np.float32)
x6[0, 0, 0, 0] = 5.0
print("5/9 rounded once:", np.float32(5) / np.float32(9))
print("adaptive_pool   :", ap.adaptive_avg_pool2d(x6, 2)[0, 0, 0, 0])
if torch is not None:
    y6 = torch.nn.functional.adaptive_avg_pool2d(torch.from_numpy(x6), 2)
    print("PyTorch         :", y6.numpy()[0, 0, 0, 0])

# %% [markdown]
# ## 2. Deterministic, bit for bit
#
# Backward kernels are *gathers*: each input element adds up the output cells that cover it, in
# ascending order. No atomic additions, so the result does not depend on thread scheduling or the
# number of threads. (PyTorch's CUDA backward of adaptive average pooling uses atomics and is
# listed as nondeterministic under `torch.use_deterministic_algorithms`.)

# %%
import numba

gy = rng.standard_normal((4, 16, 7, 9)).astype(np.float32)
xz = np.zeros((4, 16, 40, 50), np.float32)
runs = [ap.adaptive_avg_pool2d_backward(gy, xz) for _ in range(5)]
bits = [r.view(np.uint32) for r in runs]
print("5 runs bitwise equal:", all(np.array_equal(b, bits[0]) for b in bits))

threads = numba.get_num_threads()
numba.set_num_threads(1)
one_thread = ap.adaptive_avg_pool2d_backward(gy, xz)
numba.set_num_threads(threads)
same = np.array_equal(one_thread.view(np.uint32), bits[0])
print(f"1 thread vs {threads} threads bitwise equal:", same)

# %% [markdown]
# ## 3. Axes longer than 2**24
#
# Window bounds are computed with 64-bit integers only. Computed in float32, as index maths on
# accelerators often is (CANN documents a 2**24 limit for non-divisible shapes), they go wrong
# once an axis passes 2**24 = 16,777,216, because float32 cannot hold every integer beyond it.
# Here is an axis of 2**24 + 3 inputs pooled to 7 cells.

# %%
from adaptive_pool import windows

I, O = 2**24 + 3, 7
exact = [o * I // O for o in range(O)]  # Python integers: exact
ours = [int(windows.start(o, I, O)) for o in range(O)]
f32 = [int(np.floor(np.float32(o) * np.float32(I) / np.float32(O))) for o in range(O)]
print("exact start :", exact)
print("ours        :", ours)
print("float32     :", f32)
print("float32 wrong for cells", [o for o in range(O) if f32[o] != exact[o]])
last_end = int(np.ceil(np.float32(O) * np.float32(I) / np.float32(O)))
print("float32 end of the last window:", last_end, "> I =", I, "(a read out of bounds)")

# %% [markdown]
# The operators run on such axes too. To keep memory small, the input is a read-only
# zero-stride view: 16 million elements in 2 bytes (any strides are accepted). All values tie, so
# each maximum is the first element of its window: its index is exactly the window's start.
# (The window tables take 16 bytes per position of the axis, 256 MiB here, freed by
# `clear_cache`.)

# %%
x_long = np.broadcast_to(np.float16(0), (1, 1, 1, 1, I))
_, idx_long = ap.adaptive_max_pool3d(x_long, (1, 1, O), index_dtype=np.int64)
print("indices     :", idx_long.ravel().tolist())
print("exact       :", idx_long.ravel().tolist() == exact)
del idx_long
ap.clear_cache()

# %% [markdown]
# ## 4. int32 indices by default, int64 on request
#
# The max-pool indices are flat offsets `d*H*W + h*W + w` inside each `(n, c)` volume. int32
# (CANN's choice) halves their memory; `index_dtype=np.int64` gives PyTorch's. The backward
# accepts either.

# %%
v = rng.standard_normal((8, 16, 12, 12, 12)).astype(np.float32)
y32, i32 = ap.adaptive_max_pool3d(v, 5)
y64, i64 = ap.adaptive_max_pool3d(v, 5, index_dtype=np.int64)
print(i32.dtype, i32.nbytes, "bytes;", i64.dtype, i64.nbytes, "bytes")
print("same indices:", np.array_equal(i32, i64))
g = rng.standard_normal(y32.shape).astype(np.float32)
g32 = ap.adaptive_max_pool3d_backward(g, v, i32)
g64 = ap.adaptive_max_pool3d_backward(g, v, i64)
print("same gradient:", np.array_equal(g32, g64))

# %% [markdown]
# A volume too large for int32 offsets is refused before any work, with the fix in the message.
# (The array is again a zero-stride view, so it costs no memory.)

# %%
huge = np.broadcast_to(np.float32(0), (1, 1, 2048, 1024, 1025))
try:
    ap.adaptive_max_pool3d(huge, 1)
except ValueError as e:
    print(e)

# %% [markdown]
# ## 5. Clear errors
#
# Every mistake is caught before a kernel runs. Errors derive from `ap.AdaptivePoolError` and
# from the built-in you would catch (`TypeError`, `ValueError`, `IndexError`), name the argument
# and carry `.status`, the aclnn status code CANN returns for the same mistake. A `grad_output`
# whose channels do not match `x`:

# %%
grad_output = np.ones((2, 3, 4, 4), np.float32)
x = np.ones((2, 5, 8, 8), np.float32)
try:
    ap.adaptive_avg_pool2d_backward(grad_output, x)
except ValueError as e:
    print(type(e).__name__, "| argument:", e.argument, "| status:", e.status)
    print(e)

# %% [markdown]
# An index that points outside its window (a corrupted or mismatched `indices`) is found before
# anything is written:

# %%
v4 = rng.standard_normal((1, 1, 4, 4, 4)).astype(np.float32)
y4, idx4 = ap.adaptive_max_pool3d(v4, 2)
idx4[0, 0, 1, 1, 1] = 0
try:
    ap.adaptive_max_pool3d_backward(np.ones_like(y4), v4, idx4)
except IndexError as e:
    print(e)

# %% [markdown]
# ## 6. GPU arrays
#
# CUDA arrays (Numba device arrays, CuPy arrays, PyTorch CUDA tensors) run on the GPU and come
# back as the same kind of array; nothing else changes. CPU and GPU sum in the same order, so
# their results are bitwise equal.

# %%
try:
    from numba import cuda
    has_gpu = cuda.is_available()
except ImportError:
    has_gpu = False

if has_gpu:
    xg = rng.standard_normal((2, 3, 37, 41)).astype(np.float32)
    gg = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    y_gpu = ap.adaptive_avg_pool2d(cuda.to_device(xg), (5, 7))
    g_gpu = ap.adaptive_avg_pool2d_backward(cuda.to_device(gg), cuda.to_device(xg))
    print(type(y_gpu).__name__, "on the GPU")
    y_cpu = ap.adaptive_avg_pool2d(xg, (5, 7))
    g_cpu = ap.adaptive_avg_pool2d_backward(gg, xg)
    print("forward  CPU == GPU bitwise:", np.array_equal(y_gpu.copy_to_host(), y_cpu))
    print("backward CPU == GPU bitwise:", np.array_equal(g_gpu.copy_to_host(), g_cpu))
else:
    print("No CUDA GPU here: skipping the GPU cell.")
    print("(To try it: pip install adaptive_pool[cuda] on a machine with an NVIDIA GPU.)")
