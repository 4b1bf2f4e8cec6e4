"""Seeded differential fuzz campaign for the CPU backend: tuned kernels against baseline kernels
(bit for bit), against vectorised float64 references (every case) and against
``tests/reference.py`` (small cases).

Run from the repository root, with the tests on the path (``make fuzz`` does)::

    ADAPTIVE_POOL_KERNELS=tuned NUMBA_NUM_THREADS=2 PYTHONPATH=$PWD:$PWD/tests \\
        python tools/fuzz.py --seed 1 --minutes 20 --out fuzz-1.txt

``--edge`` pushes most draws to edge regimes; ``--case SEED`` runs one case verbosely. What it
checks, and the campaigns run so far: ``docs/fuzzing.md``.

Each case draws a rank, shapes, output sizes, a dtype, storage layouts of every operand (x,
both gradients, the indices given to the max backward, and ``out=`` arrays), values with a NaN
pattern, skipna and an index dtype; runs the four operators of that rank in tuned and in
baseline mode; and compares. A failing case is written to ``--out`` with its description, then
shrunk, and the smallest reproducer is written as a standalone snippet.
"""

from __future__ import annotations

import argparse
import warnings
import inspect
import json
import math
import os
import sys
import time
import traceback
from collections import Counter

os.environ.setdefault("ADAPTIVE_POOL_KERNELS", "tuned")
os.environ.setdefault("NUMBA_NUM_THREADS", "2")

import ml_dtypes  # noqa: E402
import numba  # noqa: E402
import numpy as np  # noqa: E402

import adaptive_pool as ap  # noqa: E402
from adaptive_pool.cpu import backend, relayout, results, tiers  # noqa: E402

import reference as ref  # noqa: E402  (tests/, on the path as the docstring says)
from support import bits  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {"float32": np.dtype(np.float32), "float64": np.dtype(np.float64),
          "float16": np.dtype(np.float16), "bfloat16": BF16}
UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}

# ---------------------------------------------------------------------------------------------
# Self-contained helpers (their source is copied into the reproducer snippets)
# ---------------------------------------------------------------------------------------------


def make_values(shape, dtype, seed, values, nan, batched):
    """Logical C-order values of ``shape`` in ``dtype``: ``values`` in (uniform, ints,
    ints_inf, signed_zeros), then the NaN pattern ``nan`` in (none, one, p10, p90, plane,
    rows, all, negnan)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    if values == "uniform":
        v = rng.uniform(-4.0, 4.0, size=shape)
    elif values == "ints":
        v = rng.integers(0, 3, size=shape).astype(np.float64)
    elif values == "ints_inf":
        v = rng.integers(-1, 3, size=shape).astype(np.float64)
        v[v == -1] = -np.inf
        v[rng.random(shape) < 0.02] = np.inf
    elif values == "signed_zeros":
        v = np.where(rng.random(shape) < 0.5, -0.0, 0.0)
        v[rng.random(shape) < 0.1] = 1.0
    else:
        raise ValueError(values)
    v = v.astype(dtype)
    f = v.astype(np.float64)
    if nan == "one":
        f.reshape(-1)[rng.integers(0, f.size)] = np.nan
    elif nan == "p10":
        f[rng.random(shape) < 0.1] = np.nan
    elif nan == "p90":
        f[rng.random(shape) < 0.9] = np.nan
    elif nan == "plane":  # one (n, c) plane all NaN, and 5% elsewhere
        f[rng.random(shape) < 0.05] = np.nan
        lead = 2 if batched else 1
        idx = tuple(rng.integers(0, n) for n in shape[:lead])
        f[idx] = np.nan
    elif nan == "rows":  # whole rows NaN
        rows = f.reshape(-1, shape[-1])
        rows[rng.random(rows.shape[0]) < 0.3] = np.nan
    elif nan == "all":
        f[...] = np.nan
    elif nan == "negnan":  # NaNs of other signs and payloads, 10%
        f[rng.random(shape) < 0.1] = np.nan
    elif nan != "none":
        raise ValueError(nan)
    out = f.astype(dtype)
    if nan == "negnan":
        bits = out.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[out.itemsize])
        mask = np.isnan(f) & (rng.random(shape) < 0.5)
        sign = np.array(1, bits.dtype) << np.array(8 * out.itemsize - 1, bits.dtype)
        bits[mask] |= sign  # -NaN
        pay = np.isnan(f) & (rng.random(shape) < 0.5)
        bits[pay] ^= np.array(1, bits.dtype)  # another payload (still NaN: quiet bit set)
    return out


def build(values, perm, steps, flips, offset, broadcast=None, readonly=False):
    """``values`` stored with axis order ``perm`` (outermost first), ``steps`` and ``flips``
    per logical axis, ``offset`` elements into its buffer; every byte of the buffer outside the
    view is 0xFF (a NaN in every float dtype). ``broadcast``: an axis given stride 0 (the
    values are taken at index 0 along it). Returns ``(array, buffer)``."""
    import numpy as np
    shape = values.shape
    src = values
    if broadcast is not None:
        src = np.take(values, [0], axis=broadcast)
    sshape = src.shape
    ext = [n * s for n, s in zip(sshape, steps)]
    pshape = [ext[a] for a in perm]
    total = int(np.prod(pshape)) if pshape else 1
    buf = np.empty(offset + total + 3, values.dtype)
    buf.view(np.uint8)[...] = 0xFF
    base = buf[offset:offset + total].reshape(pshape).transpose(np.argsort(perm))
    sl = tuple(slice(None, None, -s) if f else slice(None, None, s) for s, f in zip(steps, flips))
    a = base[sl]
    assert a.shape == sshape, (a.shape, sshape)
    a[...] = src
    if broadcast is not None:
        a = np.broadcast_to(a, shape)
    elif readonly:
        a = a.view()
        a.flags.writeable = False
    return a, buf


def layout_recipe(kind, ndim, batched, rng):
    """A layout recipe (perm, steps, flips, offset) of ``kind``."""
    import numpy as np
    cax = 1 if batched else 0
    sp = list(range(cax + 1, ndim))
    perm = list(range(ndim))
    steps = [1] * ndim
    flips = [False] * ndim
    offset = 0
    if kind in ("cl", "mixed") and (kind == "cl" or rng.random() < 0.5):
        perm = [a for a in perm if a != cax] + [cax]
    if kind in ("tr", "mixed") and len(sp) >= 2 and (kind == "tr" or rng.random() < 0.4):
        i, j = rng.choice(len(sp), 2, replace=False)
        pi, pj = perm.index(sp[i]), perm.index(sp[j])
        perm[pi], perm[pj] = perm[pj], perm[pi]
    if kind == "perm":
        perm = list(rng.permutation(ndim))
    if kind in ("strided", "mixed"):
        for a in range(ndim):
            if rng.random() < 0.5:
                steps[a] = 2
        if kind == "strided" and all(s == 1 for s in steps):
            steps[ndim - 1] = 2
    if kind in ("flip", "mixed"):
        for a in range(ndim):
            if rng.random() < 0.5:
                flips[a] = True
        if kind == "flip" and not any(flips):
            flips[ndim - 1] = True
    if kind in ("offset", "mixed"):
        offset = int(rng.integers(1, 8))
    return [int(p) for p in perm], steps, [bool(f) for f in flips], offset


# ---------------------------------------------------------------------------------------------
# Case drawing
# ---------------------------------------------------------------------------------------------

C_CHOICES = [1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 33, 64, 130]
C_WEIGHTS = np.array([6, 4, 5, 4, 6, 8, 7, 4, 6, 5, 4, 3, 2], float)
LAYOUTS = ["C", "cl", "tr", "strided", "flip", "offset", "mixed", "perm"]
LAYOUT_W = np.array([30, 25, 8, 10, 8, 5, 10, 4], float)
OUT_LAYOUTS = ["C", "cl", "strided", "flip", "mixed", "offset"]
NANS = ["none", "one", "p10", "p90", "plane", "rows", "all", "negnan"]
NAN_W = np.array([30, 8, 20, 8, 12, 8, 4, 6], float)
VALUES = ["uniform", "ints", "ints_inf", "signed_zeros"]
VALUE_W = np.array([55, 20, 18, 7], float)
RUN_PATTERNS = {
    1: [1, (1,), (None,)],
    2: [1, (1, 1), (None, 1), (1, None), (None, None)],
    3: [1, (1, 1, 1), (None, None, 1), (None, 1, 1), (1, None, None), (None, 1, None),
        (1, 1, None)],
}


def _pick(rng, items, weights=None):
    if weights is None:
        return items[int(rng.integers(0, len(items)))]
    p = np.asarray(weights, float)
    return items[int(rng.choice(len(items), p=p / p.sum()))]


def _axis_size(rng):
    r = rng.random()
    if r < 0.45:
        return int(rng.integers(1, 13))
    if r < 0.75:
        return int(rng.integers(13, 41))
    if r < 0.95:
        return int(rng.integers(41, 91))
    return int(rng.integers(91, 301))


def _out_axis(rng, i):
    kind = _pick(rng, ["eq", "one", "none", "div", "nondiv", "up", "rand", "small"],
                 [10, 10, 10, 12, 12, 10, 20, 16])
    if kind == "eq":
        return i
    if kind == "one":
        return 1
    if kind == "none":
        return None
    if kind == "div":
        divs = [d for d in range(1, i + 1) if i % d == 0]
        return int(_pick(rng, divs))
    if kind == "nondiv":
        nd = [d for d in range(1, i + 1) if i % d]
        return int(_pick(rng, nd)) if nd else i + 1
    if kind == "up":
        return int(rng.integers(i + 1, 3 * i + 2))
    if kind == "small":
        return int(rng.integers(1, min(i, 8) + 1))
    return int(rng.integers(1, i + 1))


EDGE = [False]


def draw_case(seed):
    rng = np.random.default_rng(seed)
    if EDGE[0] and rng.random() < 0.6:
        return draw_edge_case(seed, rng)
    rank = int(rng.integers(1, 4))
    batched = bool(rng.random() < 0.6)
    n = int(rng.integers(1, 5)) if batched else 1
    c = int(_pick(rng, C_CHOICES, C_WEIGHTS))
    sp = [_axis_size(rng) for _ in range(rank)]
    bucket = rng.random()
    lo, hi = ((1, 1 << 15) if bucket < 0.35 else
              ((1 << 15, 300_000) if bucket < 0.8 else (300_000, 2_000_000)))
    target = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    long_axis = int(rng.integers(0, rank)) if rng.random() < 0.3 else -1
    limit = [300 if k == long_axis or rank == 1 else 90 for k in range(rank)]
    for _ in range(200):
        total = n * c * math.prod(sp)
        if total >= target:
            break
        r = rng.random()
        k = int(rng.integers(0, rank))
        if r < 0.6 and sp[k] < limit[k]:
            sp[k] = min(limit[k], max(sp[k] + 1, sp[k] * 3 // 2))
        elif r < 0.85 and c < C_CHOICES[-1]:
            c = min(x for x in C_CHOICES if x > c)
        elif batched and n < 4:
            n += 1
    while n * c * math.prod(sp) > hi:
        k = int(np.argmax(sp))
        sp[k] = max(1, sp[k] * 2 // 3)
        if max(sp) == 1:
            break
    while n * c * math.prod(sp) > hi and (c > 1 or n > 1):
        if c > 1:
            c = max(x for x in [1] + C_CHOICES if x < c)
        else:
            n -= 1
    r = rng.random()
    if r < 0.2:
        size = RUN_PATTERNS[rank][int(rng.integers(0, len(RUN_PATTERNS[rank])))]
    elif r < 0.4:
        o = _out_axis(rng, min(sp))
        size = o if o is not None else 1
        if rank == 1 and rng.random() < 0.3:
            size = (size,)
    else:
        size = tuple(_out_axis(rng, i) for i in sp)
    out_sp = ref.resolve_output_size(size, sp)
    while n * c * math.prod(out_sp) > 2_000_000:  # upsampling too far
        size = tuple(max(1, o // 2) for o in out_sp)
        out_sp = ref.resolve_output_size(size, sp)
    dtype = _pick(rng, list(DTYPES), [35, 25, 20, 20])
    skipna = bool(rng.random() < 0.5)
    case = dict(
        seed=int(seed), rank=rank, batched=batched, n=n, c=c, sp=[int(s) for s in sp],
        size=size if isinstance(size, int) else [None if o is None else int(o) for o in size],
        size_tuple=not isinstance(size, int), dtype=dtype, skipna=skipna,
        index_dtype=_pick(rng, ["int32", "int64"]),
        values=_pick(rng, VALUES, VALUE_W), nan=_pick(rng, NANS, NAN_W),
        g_values=_pick(rng, ["uniform", "ints", "nan"], [80, 15, 5]),
        x_layout=_pick(rng, LAYOUTS, LAYOUT_W),
        g1_layout=_pick(rng, LAYOUTS + ["bcast"], np.r_[LAYOUT_W, 4]),
        g2_layout=_pick(rng, LAYOUTS + ["bcast"], np.r_[LAYOUT_W, 4]),
        i_layout=_pick(rng, LAYOUTS, LAYOUT_W),
        x_readonly=bool(rng.random() < 0.1),
        x_bcast=bool(rng.random() < 0.04),
        use_out=bool(rng.random() < 0.3),
        out_layouts=[_pick(rng, OUT_LAYOUTS) for _ in range(5)],
        layout_seed=int(rng.integers(0, 2**31)),
        # knobs the results must not depend on: chunks a thread (emulates more threads),
        # every launch parallel, one thread
        chunks_per_thread=int(_pick(rng, [1, 3, 8, 32], [60, 15, 10, 15])),
        serial_work=int(_pick(rng, [1 << 15, 0], [80, 20])),
        threads=int(_pick(rng, [2, 1], [85, 15])),
        bad_indices=int(_pick(rng, [0, 1, 2, 3], [70, 15, 8, 7])),
        bad_out=bool(rng.random() < 0.5),
        indices_out_dtype=_pick(rng, ["same", "int32", "int64"], [70, 15, 15]),
    )
    return case


def draw_edge_case(seed, rng):
    """A case from the ordinary draw, pushed to the edges: thin axes, channels over 256,
    large upsampling, NaN-heavy skipna, 16-bit dtypes, many chunks, one thread."""
    EDGE[0] = False
    try:
        case = draw_case(int(rng.integers(0, 2**62)))
    finally:
        EDGE[0] = True
    case["seed"] = int(seed)
    r = rng.random()
    sp = list(case["sp"])
    rank = case["rank"]
    if r < 0.25:  # thin: several axes of 1 or 2
        for k in range(rank):
            if rng.random() < 0.5:
                sp[k] = int(rng.integers(1, 3))
    elif r < 0.45 and case["c"] < 256:  # channels past CHANNEL_BLOCK, channels-last
        case["c"] = int(_pick(rng, [255, 256, 257, 264, 300, 520]))
        case["x_layout"] = _pick(rng, ["cl", "cl", "mixed", "C"])
        case["batched"] = bool(rng.random() < 0.5)
        case["n"] = 1 if not case["batched"] else int(rng.integers(1, 3))
    elif r < 0.6:  # large upsampling
        k = int(rng.integers(0, rank))
        sp[k] = int(rng.integers(1, 12))
        size = list(ref.resolve_output_size(out_size_arg(case), case["sp"]))
        size[k] = int(sp[k] * rng.integers(3, 9) + rng.integers(0, 3))
        case["size"] = [int(v) for v in size]
        case["size_tuple"] = True
    elif r < 0.8:  # wide rows around the 64-element words and the 8-/16-wide thresholds
        sp[-1] = int(_pick(rng, [7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129]))
    # keep the problem under about 2e6 elements
    case["sp"] = sp
    while math.prod(case_shape(case)) > 2_000_000:
        k = int(np.argmax(case["sp"]))
        case["sp"][k] = max(1, case["sp"][k] * 2 // 3)
    osp = ref.resolve_output_size(out_size_arg(case), case["sp"])
    lead = case_shape(case)[: -rank]
    if isinstance(case["size"], list):
        # None entries keep the input's size; numbers stay what they were
        pass
    while math.prod(lead) * math.prod(osp) > 2_000_000:
        case["size"] = [max(1, o // 2) for o in osp]
        case["size_tuple"] = True
        osp = ref.resolve_output_size(out_size_arg(case), case["sp"])
    if rng.random() < 0.5:
        case["skipna"] = True
        case["nan"] = _pick(rng, ["p10", "p90", "plane", "rows", "all", "negnan"])
    if rng.random() < 0.5:
        case["dtype"] = _pick(rng, ["float16", "bfloat16"])
    case["chunks_per_thread"] = int(_pick(rng, [1, 3, 8, 32], [30, 20, 20, 30]))
    case["serial_work"] = int(_pick(rng, [1 << 15, 0], [50, 50]))
    case["threads"] = int(_pick(rng, [2, 1], [70, 30]))
    return case


def case_shape(case):
    lead = (case["n"], case["c"]) if case["batched"] else (case["c"],)
    return lead + tuple(case["sp"])


def out_size_arg(case):
    s = case["size"]
    return s if isinstance(s, int) else tuple(s)


def make_arrays(case):
    """x, g1 (avg backward), g2 (max backward) and their buffers; recipes drawn from the
    case's layout seed."""
    shape = case_shape(case)
    dt = DTYPES[case["dtype"]]
    ndim = len(shape)
    batched = case["batched"]
    lrng = np.random.default_rng(case["layout_seed"])
    xv = make_values(shape, dt, case["seed"], case["values"], case["nan"], batched)
    xr = layout_recipe(case["x_layout"], ndim, batched, lrng)
    bc = None
    if case["x_bcast"]:
        bc = int(lrng.integers(0, ndim))
    x, xbuf = build(xv, *xr, broadcast=bc, readonly=case["x_readonly"])
    sp = tuple(case["sp"])
    osp = ref.resolve_output_size(out_size_arg(case), sp)
    yshape = shape[: ndim - case["rank"]] + osp
    gvals = case["g_values"]
    gv = make_values(yshape, dt, case["seed"] + 1, "ints" if gvals == "ints" else "uniform",
                     "p10" if gvals == "nan" else "none", batched)
    grads = []
    for key in ("g1_layout", "g2_layout"):
        kind = case[key]
        if kind == "bcast":
            r = layout_recipe("C", ndim, batched, lrng)
            g, _ = build(gv, *r, broadcast=int(lrng.integers(0, ndim)))
        else:
            r = layout_recipe(kind, ndim, batched, lrng)
            g, _ = build(gv, *r)
        grads.append(g)
    irecipe = layout_recipe(case["i_layout"], ndim, batched, lrng)
    orecipes = [layout_recipe(k, ndim, batched, lrng) for k in case["out_layouts"]]
    return dict(x=x, xbuf=xbuf, xr=xr, bc=bc, g1=grads[0], g2=grads[1], irecipe=irecipe,
                orecipes=orecipes, yshape=yshape, osp=osp)


# ---------------------------------------------------------------------------------------------
# Running the operators
# ---------------------------------------------------------------------------------------------

RECORD: list = []
RECORDING = [False]
_orig_runner = backend.CpuBackend._runner


def _recording_runner(self, kernel, work):
    r = _orig_runner(self, kernel, work)
    if RECORDING[0]:
        name = getattr(kernel, "py_func", kernel).__name__
        RECORD.append(f"{name}{'' if r[1] else '[par]'}")
    return r


backend.CpuBackend._runner = _recording_runner
warnings.simplefilter("ignore", RuntimeWarning)
np.seterr(all="ignore")
_orig_relayout = relayout.channels_first


def _recording_relayout(*args):
    if RECORDING[0]:
        RECORD.append("relayout")
    return _orig_relayout(*args)


relayout.channels_first = _recording_relayout

# Results of the library's own come from results.allocator: fill them with 0xFF bytes (a NaN
# in every float dtype, -1 in an index) so that an element no kernel writes shows up.
_orig_allocator = results.allocator


def _poisoned_allocator(shape, dtype):
    make = _orig_allocator(shape, dtype)

    def poisoned():
        a = make()
        a.view(np.uint8)[...] = 0xFF
        return a

    return poisoned


results.allocator = _poisoned_allocator
_orig_scratch = backend._scratch


def _poisoned_scratch(n, dtype, keep):
    take, give = _orig_scratch(n, dtype, keep)

    def poisoned_take():
        a = take()
        a.view(np.uint8)[...] = 0xA5
        return a

    return poisoned_take, give


backend._scratch = _poisoned_scratch


def _fns(rank):
    return (getattr(ap, f"adaptive_avg_pool{rank}d"), getattr(ap, f"adaptive_max_pool{rank}d"),
            getattr(ap, f"adaptive_avg_pool{rank}d_backward"),
            getattr(ap, f"adaptive_max_pool{rank}d_backward"))


def _empty_like_recipe(shape, dtype, recipe):
    vals = np.zeros(shape, dtype)
    a, buf = build(vals, *recipe)
    # refill the view with 0xFF too: an unwritten element shows up as NaN / garbage
    raw = a.view(UINT[a.itemsize]) if a.dtype.kind == "f" or a.dtype == BF16 else a
    raw[...] = np.iinfo(raw.dtype).max if raw.dtype.kind == "u" else -7
    return a, buf


def _gaps_untouched(a, buf):
    """Whether every byte of ``buf`` outside the view ``a`` is still 0xFF."""
    b = buf.copy()
    # the same view on the copy: locate it by offset arithmetic
    off = (a.__array_interface__["data"][0] - buf.__array_interface__["data"][0]) // a.itemsize
    v = np.lib.stride_tricks.as_strided(b[off:], shape=a.shape, strides=a.strides)
    v.view(np.uint8 if a.itemsize == 1 else UINT.get(a.itemsize, np.uint8))[...] = \
        np.iinfo(UINT[a.itemsize]).max
    return bool((b.view(np.uint8) == 0xFF).all())


def set_knobs(case):
    backend._CHUNKS_PER_THREAD = case.get("chunks_per_thread", 1)
    backend._SERIAL_WORK = case.get("serial_work", 1 << 15)
    numba.set_num_threads(case.get("threads", 2))


def run_mode(mode, case, arrs, repeat):
    """Every operator in ``mode``: a dict of name -> array, or name -> ('EXC', text); and
    name -> kernels recorded (tuned mode)."""
    tiers.MODE = mode
    set_knobs(case)
    ap.clear_cache()
    rank, skipna = case["rank"], case["skipna"]
    avg, mx, avgb, mxb = _fns(rank)
    size = out_size_arg(case)
    idt = np.dtype(case["index_dtype"])
    x, g1, g2 = arrs["x"], arrs["g1"], arrs["g2"]
    res, kern, extra = {}, {}, {}

    def call(name, f):
        RECORD.clear()
        RECORDING[0] = mode == "tuned"
        try:
            res[name] = f()
        except Exception as e:  # noqa: BLE001
            res[name] = ("EXC", f"{type(e).__name__}: {e}\n" + traceback.format_exc(limit=6))
        finally:
            RECORDING[0] = False
            if mode == "tuned":
                kern[name] = list(RECORD)

    call("avg", lambda: avg(x, size, skipna=skipna))
    call("max", lambda: mx(x, size, skipna=skipna, index_dtype=idt))
    call("avgb", lambda: avgb(g1, x, skipna=skipna))
    ind = arrs.get("ind")
    if ind is not None:
        call("maxb", lambda: mxb(g2, x, ind, skipna=skipna))
    if repeat:
        call("avg#2", lambda: avg(x, size, skipna=skipna))
        call("max#2", lambda: mx(x, size, skipna=skipna, index_dtype=idt))
        call("avgb#2", lambda: avgb(g1, x, skipna=skipna))
        if ind is not None:
            call("maxb#2", lambda: mxb(g2, x, ind, skipna=skipna))
    if case["use_out"]:
        ys, xs = arrs["yshape"], x.shape
        dt = x.dtype
        o = [_empty_like_recipe(ys, dt, arrs["orecipes"][0]),
             _empty_like_recipe(ys, dt, arrs["orecipes"][1]),
             _empty_like_recipe(ys, idt if case.get("indices_out_dtype", "same") == "same"
                                else np.dtype(case["indices_out_dtype"]), arrs["orecipes"][2]),
             _empty_like_recipe(xs, dt, arrs["orecipes"][3]),
             _empty_like_recipe(xs, dt, arrs["orecipes"][4])]
        extra["outs"] = o
        call("avg@out", lambda: avg(x, size, skipna=skipna, out=o[0][0]))
        call("max@out", lambda: mx(x, size, skipna=skipna, index_dtype=idt, out=o[1][0],
                                   indices_out=o[2][0]))
        call("avgb@out", lambda: avgb(g1, x, skipna=skipna, out=o[3][0]))
        if ind is not None:
            call("maxb@out", lambda: mxb(g2, x, ind, skipna=skipna, out=o[4][0]))
    tiers.MODE = "tuned"
    return res, kern, extra


# ---------------------------------------------------------------------------------------------
# Vectorised float64 references (every case)
# ---------------------------------------------------------------------------------------------


def win_bounds(i, o):
    """The starts and ends of an axis's windows (the reference's rule) as two arrays."""
    return np.array(ref.windows(i, o), np.int64).reshape(-1, 2).T


def win_matrix(i, o):
    s, e = win_bounds(i, o)
    pos = np.arange(i)
    return ((pos[None, :] >= s[:, None]) & (pos[None, :] < e[:, None])).astype(np.float64)


def box_sum(a, sp, osp):
    """Sum of ``a`` (P, *sp) over each window: (P, *osp), in long double, axis by axis, each
    window's elements added in turn. (A float64 product with the windows' matrix erred by tens
    of float64 ulps where a window repeats one value, as a broadcast input does, more than
    the bound checked against it allows our float64 averages.)"""
    a = np.asarray(a, np.longdouble)
    for k, (i, o) in enumerate(zip(sp, osp)):
        s, e = win_bounds(i, o)
        pad = [(0, 0)] * a.ndim
        pad[k + 1] = (0, 1)  # (an element past the last, for windows ending at the axis's end)
        idx = np.stack([s, e], 1).reshape(-1)  # window j: the slice from idx[2j] to idx[2j+1]
        a = np.add.reduceat(np.pad(a, pad), idx, axis=k + 1).take(
            np.arange(0, 2 * o, 2), axis=k + 1)
    return a


def box_scatter(a, sp, osp):
    """The transpose: each output cell's value added over its window: (P, *sp)."""
    for k, (i, o) in enumerate(zip(sp, osp)):
        m = win_matrix(i, o)
        a = np.moveaxis(np.tensordot(a, m, axes=([k + 1], [0])), -1, k + 1)
    return a


MANT = {"float16": (10, -14), "bfloat16": (7, -126), "float32": (23, -126),
        "float64": (52, -1022)}


def ulp(v, dtype):
    m, emin = MANT[dtype]
    a = np.abs(v)
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    e = np.where(a > 0, np.maximum(e, emin), emin)
    return np.exp2(e - m)


def close(got, want, bound, dtype):
    """Indices where ``got`` (float array) is not within ``bound`` + 1 ulp of ``want``; NaN
    and infinities must match exactly."""
    g = got.astype(np.float64)
    gn, wn = np.isnan(g), np.isnan(want)
    bad = gn != wn
    fin = ~gn & ~wn & np.isfinite(want) & np.isfinite(g)
    inf = ~gn & ~wn & ~(np.isfinite(want) & np.isfinite(g))
    bad |= inf & (g != want)
    with np.errstate(invalid="ignore"):
        tol = bound + ulp(want, dtype)
        bad |= fin & (np.abs(g - want) > tol)
    return bad


def eps_acc(dtype):
    return 2.0**-52 if dtype == "float64" else 2.0**-23


def expected_max(x64, sp, osp, skipna):
    """The contract's max index of every window (P, *osp) via a separable lexicographic
    reduction of (level, value, +-position)."""
    P = x64.shape[0]
    nan = np.isnan(x64)
    flat = np.arange(int(np.prod(sp)), dtype=np.int64).reshape(sp)
    flat = np.broadcast_to(flat, x64.shape)
    if skipna:
        L = np.where(nan, 0, 1).astype(np.int8)
        S = -flat
    else:
        L = np.where(nan, 2, 1).astype(np.int8)
        S = np.where(nan, flat, -flat)
    V = np.where(nan, 0.0, x64)
    for k, (i, o) in enumerate(zip(sp, osp)):
        s, e = win_bounds(i, o)
        ax = k + 1
        shp = list(L.shape)
        shp[ax] = o
        nL, nV, nS = np.empty(shp, np.int8), np.empty(shp), np.empty(shp, np.int64)
        for j in range(o):
            sl = [slice(None)] * L.ndim
            sl[ax] = slice(int(s[j]), int(e[j]))
            sl = tuple(sl)
            Ls, Vs, Ss = L[sl], V[sl], S[sl]
            lm = Ls.max(axis=ax, keepdims=True)
            m1 = Ls == lm
            vm = np.where(m1, Vs, -np.inf).max(axis=ax, keepdims=True)
            m2 = m1 & (Vs == vm)
            sm = np.where(m2, Ss, np.iinfo(np.int64).min).max(axis=ax, keepdims=True)
            dst = [slice(None)] * L.ndim
            dst[ax] = slice(j, j + 1)
            dst = tuple(dst)
            nL[dst], nV[dst], nS[dst] = lm, vm, sm
        L, V, S = nL, nV, nS
    return np.where(L == 2, S, -S).reshape(P, -1)


def cover_max(sp, osp):
    return int(np.prod([win_matrix(i, o).sum(0).max() for i, o in zip(sp, osp)]))


def window_max(sp, osp):
    return int(np.prod([int((e - s).max()) for s, e in (win_bounds(i, o) for i, o in
                                                          zip(sp, osp))]))


# ---------------------------------------------------------------------------------------------
# Checking one case
# ---------------------------------------------------------------------------------------------


def raw_bits(a):
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.itemsize}")


def _first_diff(a, b):
    d = np.argwhere(a != b) if a.shape == b.shape else None
    if d is None:
        return f"shapes {a.shape} vs {b.shape}"
    n = len(d)
    pos = tuple(int(v) for v in d[0]) if n else None
    return f"{n} of {a.size} elements differ, first at {pos}"


def _same(a, b, is_index=False):
    """None if equal bit for bit (NaN as one pattern), else a description."""
    if is_exc(a):
        return None if (is_exc(b) and b[1].split("\n")[0] == a[1].split("\n")[0]) \
            else "exception differs"
    if is_exc(b):
        return "exception differs"
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"shape/dtype {a.shape} {a.dtype} vs {b.shape} {b.dtype}"
    if is_index:
        return None if np.array_equal(a, b) else _first_diff(np.asarray(a), np.asarray(b))
    ba, bb = bits(a), bits(b)
    return None if np.array_equal(ba, bb) else _first_diff(ba, bb)


def is_exc(v):
    return isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str)


def check_case(case, repeat=True, use_ref=True):
    """Run a case; return (failures, kernels, info). A failure: (kind, op, detail)."""
    fails = []
    arrs = make_arrays(case)
    x = arrs["x"]
    rank, skipna, dt = case["rank"], case["skipna"], case["dtype"]
    xbuf_before = arrs["xbuf"].copy()
    # the tuned forward first, to get the indices for the backward
    tiers.MODE = "tuned"
    set_knobs(case)
    ap.clear_cache()
    _, mx, _, _ = _fns(rank)
    try:
        _, i0 = mx(x, out_size_arg(case), skipna=skipna, index_dtype=np.dtype(case["index_dtype"]))
        iv = np.asarray(i0)
        arrs["ind"], _ = build(iv.copy(), *arrs["irecipe"])
    except Exception as e:  # noqa: BLE001
        fails.append(("exception", "max(pre)", f"{type(e).__name__}: {e}"))
        arrs["ind"] = None
    tuned, kern, textra = run_mode("tuned", case, arrs, repeat)
    base, _, bextra = run_mode("baseline", case, arrs, False)
    if not np.array_equal(arrs["xbuf"].view(np.uint8), xbuf_before.view(np.uint8)):
        fails.append(("input_modified", "x", "x's buffer changed"))

    def get(d, name, part=None):
        v = d.get(name)
        if v is None or is_exc(v):
            return v
        return v if part is None else v[part]

    for mode, d in (("tuned", tuned), ("baseline", base)):
        for name, v in d.items():
            if is_exc(v):
                fails.append(("exception", f"{name}[{mode}]", v[1][:1500]))
    # tuned vs baseline, and the tuned variants against the tuned first call
    parts = {"avg": [None], "max": [0, 1], "avgb": [None], "maxb": [None]}
    for name in tuned:
        op = name.split("#")[0].split("@")[0]
        for part in parts[op]:
            t = get(tuned, name, part)
            if is_exc(t):
                continue
            label = name + ("" if part is None else (".values" if part == 0 else ".indices"))
            if name in base:
                b = get(base, name, part)
                if not (is_exc(b)):
                    d = _same(t, b, part == 1)
                    if d:
                        fails.append(("tuned!=baseline", label, d))
            if name != op:
                t0 = get(tuned, op, part)
                if not is_exc(t0) and part == 1 and t.dtype != t0.dtype:
                    t0 = t0.astype(t.dtype)  # indices_out= of another index dtype
                if not is_exc(t0):
                    d = _same(t, t0, part == 1)
                    if d:
                        fails.append(("variant!=first", label, d))
            if "@" not in name and not t.flags.c_contiguous:
                fails.append(("not_c_contiguous", label, str(t.strides)))
    # out= arrays: returned and their gaps untouched
    for extra, mode in ((textra, "tuned"), (bextra, "baseline")):
        if "outs" not in extra:
            continue
        res = tuned if mode == "tuned" else base
        names = ["avg@out", "max@out", "max@out", "avgb@out", "maxb@out"]
        for k, (a, buf) in enumerate(extra["outs"]):
            name = names[k]
            if name not in res:
                continue
            r = res[name]
            if is_exc(r):
                continue
            if k == 1:
                r = r[0]
            elif k == 2:
                r = r[1]
            if not np.shares_memory(r, a):
                fails.append(("out_not_used", f"{name}[{mode}]", f"part {k}"))
            if not _gaps_untouched(a, buf):
                fails.append(("out_gaps_written", f"{name}[{mode}]", f"part {k}"))
    if case.get("bad_indices", 0) and arrs.get("ind") is not None:
        fails += check_bad_indices(case, arrs)
    # semantic checks on the tuned results
    sp = tuple(case["sp"])
    osp = arrs["osp"]
    P = int(np.prod(x.shape[: x.ndim - rank]))
    x64 = np.asarray(x).astype(np.float64).reshape((P,) + sp)
    m = get(tuned, "max")
    if m is not None and not is_exc(m):
        vals, idx = m
        if idx.dtype != np.dtype(case["index_dtype"]):
            fails.append(("index_dtype", "max", str(idx.dtype)))
        want = expected_max(x64, sp, osp, skipna)
        got = np.asarray(idx).astype(np.int64).reshape(P, -1)
        if not np.array_equal(got, want):
            bad = np.argwhere(got != want)
            p, o = (int(v) for v in bad[0])
            ocell = np.unravel_index(o, osp)
            inside = all(s <= q < e for q, (s, e) in zip(
                np.unravel_index(int(got[p, o]), sp) if 0 <= got[p, o] < np.prod(sp) else
                [(-1,)] * rank,
                [tuple(int(t[oc]) for t in win_bounds(i, oo)) for i, oo, oc in
                 zip(sp, osp, ocell)])) if 0 <= got[p, o] < np.prod(sp) else False
            gv = x64[p].reshape(-1)[got[p, o]] if 0 <= got[p, o] < np.prod(sp) else None
            fails.append(("max_index", "max.indices",
                          f"{len(bad)} of {got.size} wrong; first plane {p} cell {ocell}: "
                          f"got {int(got[p, o])} (value {gv}, inside window: {inside}), "
                          f"want {int(want[p, o])} (value {x64[p].reshape(-1)[want[p, o]]})"))
        # the values: the bits of x at the indices, NaN payloads included
        okidx = np.clip(got, 0, int(np.prod(sp)) - 1)
        xs = np.ascontiguousarray(x).reshape(P, -1).view(f"u{x.itemsize}")
        vb = np.take_along_axis(xs, okidx, 1)
        if not np.array_equal(raw_bits(vals).reshape(P, -1), vb):
            fails.append(("max_value_bits", "max.values",
                          _first_diff(raw_bits(vals).reshape(P, -1), vb)))
    e = eps_acc(dt)
    a = get(tuned, "avg")
    nanx = np.isnan(x64)
    if a is not None and not is_exc(a):
        fin = np.where(np.isfinite(x64), x64, 0.0)
        s = box_sum(fin, sp, osp)
        sa = box_sum(np.abs(fin), sp, osp)
        nn = box_sum(nanx.astype(float), sp, osp)
        pi = box_sum((x64 == np.inf).astype(float), sp, osp)
        ni = box_sum((x64 == -np.inf).astype(float), sp, osp)
        vol = float(1)
        if skipna:
            cnt = box_sum((~nanx).astype(float), sp, osp)
        else:
            cnt = box_sum(np.ones_like(x64), sp, osp)
        with np.errstate(invalid="ignore", divide="ignore"):
            want = s / cnt
            want = np.where(pi > 0, np.inf, want)
            want = np.where(ni > 0, -np.inf, want)
            want = np.where((pi > 0) & (ni > 0), np.nan, want)
            if not skipna:
                want = np.where(nn > 0, np.nan, want)
            want = np.where(cnt == 0, np.nan, want)
            k = window_max(sp, osp)
            bound = (math.ceil(k / 32) + 7) * e * sa / np.maximum(cnt, 1)
        got = np.asarray(a).reshape(want.shape)
        bad = close(got, want, bound, dt)
        if bad.any():
            w = np.argwhere(bad)[0]
            fails.append(("avg_vs_f64", "avg", f"{int(bad.sum())} of {bad.size} off; first "
                          f"{tuple(int(v) for v in w)}: got {got[tuple(w)]!r} want "
                          f"{want[tuple(w)]!r}"))
    gfin1 = np.isfinite(np.asarray(arrs["g1"]).astype(np.float64)).all()
    b = get(tuned, "avgb")
    if b is not None and gfin1 and not is_exc(b):
        g64 = np.asarray(arrs["g1"]).astype(np.float64).reshape((P,) + osp)
        if skipna:
            cnt = box_sum((~nanx).astype(float), sp, osp)
        else:
            cnt = box_sum(np.ones_like(x64), sp, osp)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(cnt > 0, g64 / cnt, 0.0)
        want = box_scatter(share, sp, osp)
        absw = box_scatter(np.abs(share), sp, osp)
        if skipna:
            want = np.where(nanx, 0.0, want)
            absw = np.where(nanx, 0.0, absw)
        k = cover_max(sp, osp)
        got = np.asarray(b).reshape(want.shape)
        bad = close(got, want, (k + 3) * e * absw, dt)
        if skipna:  # NaN inputs get +0.0
            bad |= nanx & (raw_bits(got) != 0)
        if bad.any():
            w = np.argwhere(bad)[0]
            fails.append(("avgb_vs_f64", "avgb", f"{int(bad.sum())} of {bad.size} off; first "
                          f"{tuple(int(v) for v in w)}: got {got[tuple(w)]!r} want "
                          f"{want[tuple(w)]!r}"))
    c_ = get(tuned, "maxb")
    gfin2 = np.isfinite(np.asarray(arrs["g2"]).astype(np.float64)).all()
    if c_ is not None and gfin2 and not is_exc(c_):
        g64 = np.asarray(arrs["g2"]).astype(np.float64).reshape(P, -1)
        ind = np.asarray(arrs["ind"]).astype(np.int64).reshape(P, -1)
        plane = int(np.prod(sp))
        want = np.zeros((P, plane))
        absw = np.zeros((P, plane))
        hits = np.zeros((P, plane))
        rows = np.repeat(np.arange(P), ind.shape[1])
        np.add.at(want, (rows, ind.reshape(-1)), g64.reshape(-1))
        np.add.at(absw, (rows, ind.reshape(-1)), np.abs(g64.reshape(-1)))
        np.add.at(hits, (rows, ind.reshape(-1)), 1.0)
        got = np.asarray(c_).reshape(P, plane)
        bad = close(got, want, (hits.max() + 2) * e * absw, dt)
        if bad.any():
            w = np.argwhere(bad)[0]
            fails.append(("maxb_vs_f64", "maxb", f"{int(bad.sum())} of {bad.size} off; first "
                          f"{tuple(int(v) for v in w)}: got {got[tuple(w)]!r} want "
                          f"{want[tuple(w)]!r}"))
    # tests/reference.py on small problems
    windows_total = P * int(np.prod(osp)) * window_max(sp, osp)
    if use_ref and x.size <= 20000 and windows_total <= 40000:
        fails += check_reference(case, arrs, tuned, P, sp, osp)
    info = dict(kernels=kern, P=P, osp=list(osp))
    return fails, kern, info


def corrupt_indices(case, ind):
    """``ind`` (logical C order) with ``case['bad_indices']`` cells set to indices outside
    their windows; returns (bad array, flat C-order positions corrupted, kinds)."""
    rng = np.random.default_rng(case["seed"] + 7)
    sp = tuple(case["sp"])
    rank = case["rank"]
    osp = ind.shape[-rank:]
    plane = int(np.prod(sp))
    top = np.iinfo(ind.dtype).max
    bad = ind.copy()
    flat = bad.reshape(-1)
    cells = rng.choice(flat.size, size=min(case["bad_indices"], flat.size), replace=False)
    kinds = []
    for cell in cells:
        ocell = np.unravel_index(int(cell), ind.shape)[-rank:]
        wins = [tuple(int(t[o]) for t in win_bounds(i, oo)) for i, oo, o in zip(sp, osp, ocell)]
        cands = []
        lo = int(np.ravel_multi_index([s for s, e in wins], sp))
        hi = int(np.ravel_multi_index([e - 1 for s, e in wins], sp))
        cands += [("flat_before", lo - 1), ("flat_after", hi + 1), ("neg", -1),
                  ("neg_big", -plane - 3), ("plane", plane), ("top", int(top)),
                  ("plane_plus", plane + int(rng.integers(0, plane + 1)))]
        for ax in range(rank):
            s, e = wins[ax]
            outside = [q for q in (s - 1, e, 0, sp[ax] - 1) if 0 <= q < sp[ax] and not s <= q < e]
            if outside:
                coords = [int(rng.integers(a, b)) for a, b in wins]
                coords[ax] = outside[int(rng.integers(0, len(outside)))]
                cands.append((f"axis{ax}_out", int(np.ravel_multi_index(coords, sp))))
        # any position of the plane outside the window
        q = int(rng.integers(0, plane))
        coords = np.unravel_index(q, sp)
        if not all(a <= c < b for c, (a, b) in zip(coords, wins)):
            cands.append(("elsewhere", q))
        ok = []
        for kind, v in cands:
            if not (np.iinfo(ind.dtype).min <= v <= top):
                continue
            inside = 0 <= v < plane and all(
                a <= c < b for c, (a, b) in zip(np.unravel_index(v, sp), wins))
            if not inside:
                ok.append((kind, v))
        kind, v = ok[int(rng.integers(0, len(ok)))]
        flat[cell] = v
        kinds.append(kind)
    return bad, sorted(int(c) for c in cells), kinds


def check_bad_indices(case, arrs):
    """The max backward given indices outside their windows: an AdaptivePoolIndexError naming
    the first (C order), in tuned and baseline mode, and an out= left untouched."""
    fails = []
    rank = case["rank"]
    ind = np.ascontiguousarray(arrs["ind"])
    bad, cells, kinds = corrupt_indices(case, ind)
    badind, _ = build(bad, *arrs["irecipe"])
    first = cells[0]
    pos = [int(v) for v in np.unravel_index(first, ind.shape)]
    want = f"indices{pos} = {int(bad.reshape(-1)[first])}"
    x, g2 = arrs["x"], arrs["g2"]
    mxb = getattr(ap, f"adaptive_max_pool{rank}d_backward")
    for mode in ("tuned", "baseline"):
        tiers.MODE = mode
        set_knobs(case)
        ap.clear_cache()
        for use_out in ((False, True) if case.get("bad_out") else (False,)):
            o = buf = None
            if use_out:
                o, buf = _empty_like_recipe(x.shape, x.dtype, arrs["orecipes"][4])
                before = buf.copy()
            try:
                mxb(g2, x, badind, out=o)
                fails.append(("bad_index_accepted", f"maxb[{mode}]",
                              f"{kinds} at {cells}: no error (out={use_out})"))
            except ap.AdaptivePoolIndexError as e:
                if want not in str(e):
                    fails.append(("bad_index_message", f"maxb[{mode}]",
                                  f"want {want!r} in {str(e)[:200]!r} ({kinds} at {cells})"))
            except Exception as e:  # noqa: BLE001
                fails.append(("bad_index_exception", f"maxb[{mode}]",
                              f"{type(e).__name__}: {e} ({kinds})"))
            if use_out and not np.array_equal(buf.view(np.uint8), before.view(np.uint8)):
                fails.append(("bad_index_out_written", f"maxb[{mode}]", f"{kinds} at {cells}"))
    tiers.MODE = "tuned"
    return fails


def check_reference(case, arrs, tuned, P, sp, osp):
    fails = []
    x = np.ascontiguousarray(arrs["x"])
    rank, skipna, dt = case["rank"], case["skipna"], case["dtype"]
    size = out_size_arg(case)
    dtype = DTYPES[dt]
    a = tuned.get("avg")
    if a is not None and not is_exc(a):
        want = ref.avg_pool_in_order(x, size if not isinstance(size, tuple) else size, rank,
                                     skipna)
        if not np.array_equal(bits(a), bits(want)):
            fails.append(("avg_vs_reference_in_order", "avg", _first_diff(bits(a), bits(want))))
    m = tuned.get("max")
    if m is not None and not is_exc(m):
        rm, ri = ref.max_pool(x, size, rank, skipna)
        if not np.array_equal(np.asarray(m[1]).astype(np.int64), ri):
            fails.append(("max_vs_reference", "max.indices",
                          _first_diff(np.asarray(m[1]).astype(np.int64), ri)))
        if not np.array_equal(bits(m[0]), bits(rm.astype(dtype))):
            fails.append(("max_vs_reference", "max.values",
                          _first_diff(bits(m[0]), bits(rm.astype(dtype)))))
    g1 = np.ascontiguousarray(arrs["g1"])
    b = tuned.get("avgb")
    if b is not None and not is_exc(b) and \
            np.isfinite(g1.astype(np.float64)).all():
        want = ref.avg_pool_backward(g1, x.shape, rank, x if skipna else None)
        scale = ref.avg_pool_backward(np.abs(g1), x.shape, rank, x if skipna else None)
        if skipna:
            want = np.where(np.isnan(x.astype(np.float64)), 0.0, want)
            scale = np.where(np.isnan(x.astype(np.float64)), 0.0, scale)
        bad = _ref_close(b, want, dt, scale, cover_max(sp, osp))
        if bad:
            fails.append(("avgb_vs_reference", "avgb", bad))
    g2 = np.ascontiguousarray(arrs["g2"])
    c_ = tuned.get("maxb")
    if c_ is not None and arrs.get("ind") is not None and \
            not is_exc(c_) and \
            np.isfinite(g2.astype(np.float64)).all():
        want = ref.max_pool_backward(g2, x.shape, np.asarray(arrs["ind"]), rank)
        scale = ref.max_pool_backward(np.abs(g2), x.shape, np.asarray(arrs["ind"]), rank)
        bad = _ref_close(c_, want, dt, scale, int(np.prod(osp)))
        if bad:
            fails.append(("maxb_vs_reference", "maxb", bad))
    return fails


def _ref_close(got, want, dt, scale=None, terms=1):
    """The test suite's tolerances: 1 ulp (16-bit), rtol 3e-6 (float32), 1e-13 (float64);
    plus, where ``scale`` (the same sums of absolute values) is given, the rounding error of
    ``terms`` float32 (float64) additions, for sums that cancel."""
    g = np.asarray(got).astype(np.float64)
    slack = 0.0 if scale is None else (terms + 2) * eps_acc(dt) * scale
    with np.errstate(invalid="ignore"):
        near = np.abs(g - want) <= slack
    if dt in ("float16", "bfloat16"):
        d = ref.ulp_distance(np.asarray(got), ref.round_exact(want, DTYPES[dt]))
        badm = (d > 1) & ~near
        if badm.any():
            w = tuple(int(v) for v in np.argwhere(badm)[0])
            return (f"{int(badm.sum())} elements > 1 ulp, first {w}: got {got[w]!r} "
                    f"want {want[w]!r}")
        return None
    rtol = 1e-13 if dt == "float64" else 3e-6
    bad = ~np.isclose(g, want, rtol=rtol, atol=rtol, equal_nan=True) & ~near
    if bad.any():
        w = tuple(int(v) for v in np.argwhere(bad)[0])
        return f"{int(bad.sum())} elements off, first {w}: got {g[w]!r} want {want[w]!r}"
    return None


# ---------------------------------------------------------------------------------------------
# Shrinking and reproducers
# ---------------------------------------------------------------------------------------------


def signature(f):
    kind, op, _ = f
    op = op.replace("#2", "").replace("[tuned]", "").replace("[baseline]", "")
    return (kind, op)


def still_fails(case, sig):
    try:
        fails, _, _ = check_case(case)
    except Exception:  # noqa: BLE001  (a crash of the harness on a shrunk case: not the bug)
        return False
    return any(signature(f) == sig for f in fails)


def _candidates(case):
    """Simpler variants of ``case``, simplest first."""
    out = []

    def var(**kw):
        c = json.loads(json.dumps(case))
        c.update(kw)
        return c

    if case["batched"] and case["n"] > 1:
        out.append(var(n=1))
        out.append(var(n=case["n"] - 1))
    if case["batched"] and case["n"] == 1:
        out.append(var(batched=False))
    for cc in sorted(set([1] + C_CHOICES + [case["c"] - 1, case["c"] // 2])):
        if 1 <= cc < case["c"]:
            out.append(var(c=cc))
    for k, i in enumerate(case["sp"]):
        for ni in sorted({1, 2, 3, i // 2, i - 1, (2 * i) // 3, i - 8}):
            if 1 <= ni < i:
                sp = list(case["sp"])
                sp[k] = ni
                size = case["size"]
                if isinstance(size, int):
                    out.append(var(sp=sp))
                else:
                    s = list(size)
                    o = s[k]
                    cands = [o] if o is None or o <= 3 * ni + 1 else []
                    if o is not None and o == i:
                        cands.append(ni)
                    if o is not None and o > i:
                        cands.append(min(o, 3 * ni + 1))
                    if o is not None and o < i:
                        cands.append(max(1, (o * ni) // i))
                    for oo in dict.fromkeys(cands):
                        s2 = list(s)
                        s2[k] = oo
                        out.append(var(sp=sp, size=s2))
    if isinstance(case["size"], int):
        if case["size"] > 1:
            out.append(var(size=case["size"] // 2))
            out.append(var(size=case["size"] - 1))
    else:
        for k, o in enumerate(case["size"]):
            for no in (None, 1, (o or case["sp"][k]) - 1, (o or case["sp"][k]) // 2):
                if no != o and (no is None or no >= 1):
                    s = list(case["size"])
                    s[k] = no
                    out.append(var(size=s))
    for key in ("x_layout", "g1_layout", "g2_layout", "i_layout"):
        if case[key] != "C":
            out.append(var(**{key: "C"}))
    if case["use_out"]:
        out.append(var(use_out=False))
        for k in range(5):
            if case["out_layouts"][k] != "C":
                ol = list(case["out_layouts"])
                ol[k] = "C"
                out.append(var(out_layouts=ol))
    if case.get("bad_indices", 0):
        out.append(var(bad_indices=0))
        if case["bad_indices"] > 1:
            out.append(var(bad_indices=1))
    if case.get("bad_out"):
        out.append(var(bad_out=False))
    if case.get("indices_out_dtype", "same") != "same":
        out.append(var(indices_out_dtype="same"))
    if case.get("chunks_per_thread", 1) != 1:
        out.append(var(chunks_per_thread=1))
    if case.get("serial_work", 1 << 15) != 1 << 15:
        out.append(var(serial_work=1 << 15))
    if case.get("threads", 2) != 2:
        out.append(var(threads=2))
    if case["x_readonly"]:
        out.append(var(x_readonly=False))
    if case["x_bcast"]:
        out.append(var(x_bcast=False))
    if case["nan"] != "none":
        out.append(var(nan="none"))
        if case["nan"] not in ("p10", "one"):
            out.append(var(nan="p10"))
            out.append(var(nan="one"))
    if case["values"] != "uniform":
        out.append(var(values="uniform"))
    if case["g_values"] != "uniform":
        out.append(var(g_values="uniform"))
    if case["skipna"]:
        out.append(var(skipna=False))
    if case["dtype"] != "float32":
        out.append(var(dtype="float32"))
    if case["index_dtype"] != "int32":
        out.append(var(index_dtype="int32"))
    if case["size_tuple"] and rank_all_same(case):
        out.append(var(size=case["size"][0], size_tuple=False))
    return out


def rank_all_same(case):
    s = case["size"]
    return isinstance(s, list) and s and all(v == s[0] and v is not None for v in s)


def _elements(case):
    return math.prod(case_shape(case))


def cost(case):
    """How complicated a case is: its elements, then its features (shrinking only goes down)."""
    osp = ref.resolve_output_size(out_size_arg(case), case["sp"])
    lead = case_shape(case)[: -case["rank"]]
    elements = math.prod(case_shape(case)) + math.prod(lead) * math.prod(osp)
    features = (sum(case[k] != "C" for k in ("x_layout", "g1_layout", "g2_layout", "i_layout"))
                + case["use_out"] * (1 + sum(k != "C" for k in case["out_layouts"]))
                + case["x_readonly"] + case["x_bcast"] + (case["nan"] != "none")
                + (case["values"] != "uniform") + (case["g_values"] != "uniform")
                + case["skipna"] + (case["dtype"] != "float32")
                + (case["index_dtype"] != "int32") + case["batched"] + case["size_tuple"]
                + (case.get("chunks_per_thread", 1) != 1) + (case.get("threads", 2) != 2)
                + (case.get("serial_work", 1 << 15) != 1 << 15)
                + case.get("bad_indices", 0) + case.get("bad_out", False)
                + (case.get("indices_out_dtype", "same") != "same"))
    return (elements, features)


def shrink(case, sig, budget_s, log):
    start = time.time()
    best = case
    tries = 0
    progress = True
    while progress and time.time() - start < budget_s:
        progress = False
        for cand in _candidates(best):
            if time.time() - start > budget_s:
                break
            if cost(cand) >= cost(best):
                continue
            tries += 1
            if still_fails(cand, sig):
                best = cand
                progress = True
                log(f"    shrunk to {case_shape(best)} size={best['size']} "
                    f"{best['dtype']} x={best['x_layout']} skipna={best['skipna']}")
                break
    return best, tries


SNIPPET_HEAD = '''\
# Reproducer from tools/fuzz.py ({sig}); run from the repository root:
#   PYTHONPATH=$PWD:$PWD/tests python this.py
import os
os.environ.setdefault("NUMBA_NUM_THREADS", "2")
os.environ.setdefault("ADAPTIVE_POOL_KERNELS", "tuned")
import numpy as np
import ml_dtypes
import adaptive_pool as ap
from adaptive_pool.cpu import tiers, backend
import numba
from support import bits  # tests/support.py

'''

SNIPPET_BODY = '''
CASE = {case!r}
backend._CHUNKS_PER_THREAD = CASE.get("chunks_per_thread", 1)  # default 1
backend._SERIAL_WORK = CASE.get("serial_work", 1 << 15)  # default 1 << 15
numba.set_num_threads(CASE.get("threads", 2))
DT = {{"float32": np.float32, "float64": np.float64, "float16": np.float16,
      "bfloat16": ml_dtypes.bfloat16}}[CASE["dtype"]]
shape = {shape!r}
rank, skipna, size = CASE["rank"], CASE["skipna"], {size!r}
xv = make_values(shape, np.dtype(DT), CASE["seed"], CASE["values"], CASE["nan"], CASE["batched"])
x, _ = build(xv, *{xr!r}, broadcast={bc!r}, readonly={ro!r})
gv = make_values({yshape!r}, np.dtype(DT), CASE["seed"] + 1, {gkind!r}, {gnan!r}, CASE["batched"])
g1, _ = build(gv, *{g1r!r}, broadcast={g1b!r})
g2, _ = build(gv, *{g2r!r}, broadcast={g2b!r})
avg, mx = getattr(ap, f"adaptive_avg_pool{{rank}}d"), getattr(ap, f"adaptive_max_pool{{rank}}d")
avgb = getattr(ap, f"adaptive_avg_pool{{rank}}d_backward")
mxb = getattr(ap, f"adaptive_max_pool{{rank}}d_backward")
idt = np.dtype(CASE["index_dtype"])


def new_out(shape, dtype, recipe):
    a, _ = build(np.zeros(shape, dtype), *recipe)
    a.view("u%d" % a.itemsize)[...] = np.iinfo("u%d" % a.itemsize).max
    return a


def run(mode):
    tiers.MODE = mode
    ap.clear_cache()
    r = {{}}
    r["avg"] = avg(x, size, skipna=skipna)
    r["max.values"], r["max.indices"] = mx(x, size, skipna=skipna, index_dtype=idt)
    r["avgb"] = avgb(g1, x, skipna=skipna)
    r["maxb"] = mxb(g2, x, IND, skipna=skipna)
{outs}    return r


tiers.MODE = "tuned"
ap.clear_cache()
_, i0 = mx(x, size, skipna=skipna, index_dtype=idt)
IND, _ = build(np.asarray(i0).copy(), *{ir!r})


t, b = run("tuned"), run("baseline")
for k in t:
    ta, ba = (bits(t[k]), bits(b[k])) if t[k].dtype.kind != "i" else (t[k], b[k])
    if not np.array_equal(ta, ba):
        w = np.argwhere(ta != ba)
        print(k, ": tuned != baseline at", len(w), "of", ta.size, "elements; first", w[:5].tolist())
        for p in w[:5]:
            p = tuple(p)
            print("   ", p, "tuned", t[k][p], "baseline", b[k][p])
    else:
        print(k, ": same bits")
'''


def snippet(case, sig):
    arrs_case = case
    shape = case_shape(case)
    ndim = len(shape)
    lrng = np.random.default_rng(case["layout_seed"])
    xr = layout_recipe(case["x_layout"], ndim, case["batched"], lrng)
    bc = int(lrng.integers(0, ndim)) if case["x_bcast"] else None
    sp = tuple(case["sp"])
    osp = ref.resolve_output_size(out_size_arg(case), sp)
    yshape = shape[: ndim - case["rank"]] + osp
    grs = []
    for key in ("g1_layout", "g2_layout"):
        kind = case[key]
        if kind == "bcast":
            r = layout_recipe("C", ndim, case["batched"], lrng)
            grs.append((r, int(lrng.integers(0, ndim))))
        else:
            grs.append((layout_recipe(kind, ndim, case["batched"], lrng), None))
    ir = layout_recipe(case["i_layout"], ndim, case["batched"], lrng)
    ors = [layout_recipe(k, ndim, case["batched"], lrng) for k in case["out_layouts"]]
    outs = ""
    if case["use_out"]:
        outs = (f'    o = new_out({yshape!r}, DT, {ors[0]!r})\n'
                f'    r["avg@out"] = avg(x, size, skipna=skipna, out=o).copy()\n'
                f'    iodt = idt if CASE.get("indices_out_dtype", "same") == "same" else np.dtype(CASE["indices_out_dtype"])\n'
                f'    o, oi = new_out({yshape!r}, DT, {ors[1]!r}), new_out({yshape!r}, iodt, {ors[2]!r})\n'
                f'    v, i = mx(x, size, skipna=skipna, index_dtype=idt, out=o, indices_out=oi)\n'
                f'    r["max@out.values"], r["max@out.indices"] = v.copy(), i.copy()\n'
                f'    o = new_out({shape!r}, DT, {ors[3]!r})\n'
                f'    r["avgb@out"] = avgb(g1, x, skipna=skipna, out=o).copy()\n'
                f'    o = new_out({shape!r}, DT, {ors[4]!r})\n'
                f'    r["maxb@out"] = mxb(g2, x, IND, skipna=skipna, out=o).copy()\n')
    gv = case["g_values"]
    body = SNIPPET_BODY.format(
        case=arrs_case, shape=shape, size=out_size_arg(case), xr=tuple(xr), bc=bc,
        ro=case["x_readonly"], yshape=yshape, gkind="ints" if gv == "ints" else "uniform",
        gnan="p10" if gv == "nan" else "none", g1r=tuple(grs[0][0]), g1b=grs[0][1],
        g2r=tuple(grs[1][0]), g2b=grs[1][1], ir=tuple(ir), outs=outs)
    return (SNIPPET_HEAD.format(sig=sig) + inspect.getsource(make_values) + "\n\n"
            + inspect.getsource(build) + body)


# ---------------------------------------------------------------------------------------------
# Coverage
# ---------------------------------------------------------------------------------------------


def coverage_tags(case, info):
    tags = []
    shape = case_shape(case)
    total = math.prod(shape)
    tags.append(f"rank{case['rank']}")
    tags.append(case["dtype"])
    tags.append("skipna" if case["skipna"] else "plain")
    tags.append(f"x:{case['x_layout']}")
    if case["c"] >= 8:
        tags.append("C>=8")
    if total >= 1 << 15:
        tags.append("x>=2^15")
    if total >= 1 << 16:
        tags.append("x>=2^16")
    if total >= 1 << 20:
        tags.append("x>=2^20")
    if case["sp"][-1] > 64:
        tags.append("w>64")
    if math.prod(case["sp"]) >= 1024:
        tags.append("plane>=1024")
    if any(o > i for o, i in zip(info["osp"], case["sp"])):
        tags.append("upsampling")
    if case["use_out"]:
        tags.append("out=")
    if window_max(case["sp"], info["osp"]) > 8192:
        tags.append("window>8192")
    tags.append(f"chunks/thread={case.get('chunks_per_thread')}")
    tags.append(f"serial_work={case.get('serial_work')}")
    tags.append(f"threads={case.get('threads')}")
    if case.get("bad_indices"):
        tags.append("bad indices" + (" (+out=)" if case.get("bad_out") else ""))
    if case["use_out"] and case.get("indices_out_dtype", "same") != "same":
        tags.append("indices_out dtype given")
    if case["nan"] != "none":
        tags.append(f"nan:{case['nan']}")
    for op, ks in info["kernels"].items():
        for k in ks:
            tags.append(f"kernel {op.split('#')[0].split('@')[0]}: {k}")
    return sorted(set(tags))


# ---------------------------------------------------------------------------------------------
# Main loop
# ---------------------------------------------------------------------------------------------


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--minutes", type=float, default=3.0)
    p.add_argument("--out", default="fuzz_out.txt")
    p.add_argument("--shrink-seconds", type=float, default=240.0)
    p.add_argument("--case", type=int, default=None, help="run only this case seed, verbosely")
    p.add_argument("--edge", action="store_true", help="bias 60%% of the draws to edge regimes")
    args = p.parse_args(argv)
    EDGE[0] = args.edge
    outf = open(args.out, "a", buffering=1)

    def log(s):
        outf.write(s + "\n")

    if args.case is not None:
        case = draw_case(args.case)
        print(json.dumps(case))
        fails, kern, info = check_case(case)
        print(json.dumps(info["kernels"], indent=1))
        for f in fails:
            print(f)
        return 0
    log(f"# fuzz campaign seed={args.seed} minutes={args.minutes} edge={args.edge} started "
        f"{time.strftime('%Y-%m-%d %H:%M:%S')} threads={os.environ.get('NUMBA_NUM_THREADS')} "
        f"mode={tiers.MODE} package={ap.__file__}")
    t0 = time.time()
    deadline = t0 + 60 * args.minutes
    cov = Counter()
    seen = {}  # signature -> count
    shrunk = []
    n = 0
    fuzz_time = 0.0
    while time.time() < deadline:
        cs = args.seed * 1_000_003 + n
        n += 1
        case = draw_case(cs)
        tc = time.time()
        try:
            fails, kern, info = check_case(case)
        except Exception as e:  # noqa: BLE001
            fails = [("harness_error", "-", f"{type(e).__name__}: {e}\n{traceback.format_exc()}")]
            info = dict(kernels={}, osp=list(ref.resolve_output_size(out_size_arg(case), case["sp"])))
        fuzz_time += time.time() - tc
        cov.update(coverage_tags(case, info))
        if fails:
            sigs = {signature(f) for f in fails}
            new = [s for s in sigs if s not in seen]
            for s in sigs:
                seen[s] = seen.get(s, 0) + 1
            log(f"\n## FAIL case #{n} seed={cs} shape={case_shape(case)} "
                f"size={case['size']} dtype={case['dtype']} skipna={case['skipna']} "
                f"x_layout={case['x_layout']} nan={case['nan']} values={case['values']}")
            log("case = " + json.dumps(case))
            log("kernels = " + json.dumps(info.get("kernels", {})))
            for f in fails[:20]:
                log(f"  - {f[0]} | {f[1]} | {f[2][:800]}")
            if new and fails[0][0] != "harness_error":
                order = ["tuned!=baseline", "exception", "max_index", "max_value_bits",
                         "input_modified", "out_gaps_written"]
                new.sort(key=lambda s: order.index(s[0]) if s[0] in order else len(order))
                for sig in new[:1]:  # one shrink per failing case
                    log(f"  shrinking for {sig} ...")
                    ts = time.time()
                    small, tries = shrink(case, sig, args.shrink_seconds, log)
                    sf, sk, sinfo = check_case(small)
                    log(f"  minimal ({tries} tries, {time.time() - ts:.0f} s): "
                        + json.dumps(small))
                    log("  minimal kernels = " + json.dumps(sinfo["kernels"]))
                    for f in sf:
                        log(f"    * {f[0]} | {f[1]} | {f[2][:600]}")
                    code = snippet(small, sig)
                    path = f"{args.out}.repro_{len(shrunk) + 1}.py"
                    with open(path, "w") as fh:
                        fh.write(code)
                    log(f"  reproducer: {path}")
                    shrunk.append((sig, path))
        if n % 50 == 0:
            print(f"[{time.time() - t0:.0f}s] {n} cases, failures {dict(seen)}", flush=True)
    el = time.time() - t0
    log(f"\n# done: {n} cases in {el:.0f} s ({fuzz_time:.0f} s in cases); failure signatures:")
    for s, c in sorted(seen.items(), key=lambda kv: -kv[1]):
        log(f"#   {c:5d}  {s}")
    log("# coverage:")
    for k, v in sorted(cov.items()):
        log(f"#   {v:6d}  {k}")
    log("# reproducers: " + json.dumps(shrunk))
    print(f"done: {n} cases in {el:.0f} s; {len(seen)} failure signatures", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
