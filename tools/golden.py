"""Bitwise regression check for kernel work: ``save`` before a change, ``check`` after.

    python tools/golden.py save     # outputs of the current kernels -> .golden.npz
    python tools/golden.py check    # same cases again, compared bit for bit (exit 1 on a change)

About 2,900 cases: every operator and dtype, both index dtypes, strided, negative-stride and
permuted views, overlapping windows, upsampling, D > 1 averages, NaN/inf/ties/-0 data, and the
NaN-skipping averages (forward and backward). The
summation order is the contract (docs/semantics.md, "Summation order"), so a faster kernel must give the
same bits; only the sign and payload of NaNs produced by arithmetic may differ (IEEE 754).
Clear Numba's cache after editing helpers outside a kernel's own file.
"""
import os, sys

import numpy as np
import adaptive_pool as ap
from adaptive_pool import windows
from adaptive_pool.cpu.backend import BACKEND
from adaptive_pool.dtypes import bfloat16

GOLDEN = os.environ.get("ADAPTIVE_POOL_GOLDEN", ".golden.npz")

DT = [np.float32, np.float64, np.float16, bfloat16]
STORE = {np.dtype(np.float32): np.float32, np.dtype(np.float64): np.float64,
         np.dtype(np.float16): np.uint16, bfloat16: np.int16}

def bits(a):
    a = np.ascontiguousarray(a)

    if a.dtype.kind == 'V' or a.dtype == np.float16:
        return a.view(np.uint16)
    if a.dtype == np.float32: return a.view(np.uint32)
    if a.dtype == np.float64: return a.view(np.uint64)
    return a

def data(rng, shape, dt, special=False):
    x = rng.standard_normal(shape).astype(np.float32)
    if special:
        m = rng.random(shape)
        x[m < 0.05] = np.nan
        x[(m >= 0.05) & (m < 0.1)] = -np.inf
        x[(m >= 0.1) & (m < 0.15)] = np.inf
        x[(m >= 0.15) & (m < 0.4)] = 1.0  # ties
        x[(m >= 0.4) & (m < 0.45)] = -0.0
    return x.astype(dt)

def views(rng, x):
    """contiguous, strided, negative-stride, channels-last-ish."""
    out = [("c", x)]
    big = np.empty(tuple(s * 2 for s in x.shape[:-1]) + (x.shape[-1] * 2 + 1,), x.dtype)
    sl = tuple(slice(None, None, 2) for _ in x.shape[:-1]) + (slice(1, None, 2),)
    big[sl] = x
    out.append(("strided", big[sl]))
    out.append(("neg", np.ascontiguousarray(x[..., ::-1, ::-1])[..., ::-1, ::-1]))
    perm = list(range(x.ndim)); perm = perm[:-3] + [perm[-1], perm[-3], perm[-2]] if x.ndim >= 3 else perm
    t = np.ascontiguousarray(np.transpose(x, perm))
    inv = np.argsort(perm)
    out.append(("perm", np.transpose(t, inv)))
    return out

AVG = [((2, 3, 8, 8), (3, 3)), ((1, 4, 7, 9), (3, 4)), ((2, 2, 5, 6), (7, 9)), ((3, 6, 6), (2, 3)),
       ((2, 3, 17, 13), (5, 4)), ((1, 2, 4, 4), (4, 4)), ((1, 2, 9, 10), (1, 1)), ((2, 5, 12, 12), (12, 5)),
       ((1, 3, 3, 31), (2, 7)), ((3, 2, 1, 1), (4, 3)), ((2, 3, 9, 70), (2, 3)), ((1, 2, 4, 50), (7, 1)),
       ((2, 11, 9, 7), (4, 3)), ((1, 9, 5, 5), (1, 1))]
MAX = [((2, 3, 4, 8, 8), (2, 3, 3)), ((1, 2, 5, 7, 9), (3, 3, 4)), ((1, 2, 3, 4, 5), (5, 6, 7)),
       ((3, 4, 6, 6), (2, 3, 2)), ((2, 2, 3, 11, 13), (3, 4, 5)), ((1, 3, 2, 5, 5), (1, 1, 1)),
       ((1, 2, 4, 4, 4), (4, 4, 4)), ((2, 3, 1, 16, 9), (1, 5, 9))]
# skipna-only shapes: windows that are runs of memory, then 8-planes shapes
RUNS = [((2, 3, 7, 7), (1, 1)), ((2, 4, 9, 70), (1, 1)), ((2, 5, 6, 37), (6, 1)), ((3, 4, 70), (1,)),
        ((2, 6, 33), (1,)), ((1, 3, 4, 5, 6), (1, 1, 1)), ((1, 3, 4, 5, 33), (4, 5, 1)),
        ((2, 3, 4, 6, 8), (4, 1, 1)), ((1, 9, 4, 5, 6), (3, 2, 4)), ((2, 8, 5, 7, 9), (2, 3, 4)),
        ((1, 10, 13), (5,)), ((1, 12, 6, 7), (4, 3))]
AVG3 = [((2, 3, 5, 7, 9), (3, 4, 5)), ((1, 2, 3, 4, 5), (5, 6, 7)), ((1, 2, 6, 6, 6), (2, 2, 2))]

def run_all():
    res = {}
    rng = np.random.default_rng(1234)
    for dt in DT:
        dn = np.dtype(dt).name
        for si, (xs, ys) in enumerate(AVG):
            x = data(rng, xs, dt)
            go = data(rng, xs[:-2] + ys, dt)
            for vn, xv in views(rng, x):
                res[f"avg/{dn}/{si}/{vn}"] = bits(ap.adaptive_avg_pool2d(xv, ys))
            for vn, gv in views(rng, go):
                res[f"avgb/{dn}/{si}/{vn}"] = bits(ap.adaptive_avg_pool2d_backward(gv, x))
        for si, (xs, ys) in enumerate(MAX):
            for sp in (False, True):
                x = data(rng, xs, dt, special=sp)
                for vn, xv in views(rng, x):
                    for idt in (np.int32, np.int64):
                        y, i = ap.adaptive_max_pool3d(xv, ys, index_dtype=idt)
                        res[f"max/{dn}/{si}/{sp}/{vn}/{np.dtype(idt).name}/y"] = bits(y)
                        res[f"max/{dn}/{si}/{sp}/{vn}/{np.dtype(idt).name}/i"] = i
                y, i = ap.adaptive_max_pool3d(x, ys)
                go = data(rng, y.shape, dt, special=sp)
                for vn, gv in views(rng, go):
                    res[f"maxb/{dn}/{si}/{sp}/{vn}"] = bits(ap.adaptive_max_pool3d_backward(gv, x, i))
                    res[f"maxb/{dn}/{si}/{sp}/{vn}/i64"] = bits(ap.adaptive_max_pool3d_backward(gv, x, i.astype(np.int64)))
        # skipna: NaN-laden data, windows that are runs of memory among them
        for si, (xs, ys) in enumerate(AVG + RUNS):
            x = data(rng, xs, dt, special=True)
            f = getattr(ap, f"adaptive_avg_pool{len(ys)}d")
            fb = getattr(ap, f"adaptive_avg_pool{len(ys)}d_backward")
            go = data(rng, xs[:-len(ys)] + ys, dt)
            for vn, xv in views(rng, x):
                res[f"avgs/{dn}/{si}/{vn}"] = bits(f(xv, ys, skipna=True))
                res[f"avgsb/{dn}/{si}/{vn}"] = bits(fb(go, xv, skipna=True))
        # avg with D > 1 through the backend directly (one kernel, D as a real axis)
        st = STORE[np.dtype(dt)]
        for si, (xs, ys) in enumerate(AVG3):
            x = data(rng, xs, dt)
            n, c = xs[:2]
            tab = windows.build_tables(xs[2:], ys)
            dims = (n, c) + xs[2:] + ys
            y = np.empty(xs[:2] + ys, dt)
            BACKEND.avg_pool(x.view(st), y.view(st), tab, dims)
            res[f"avg3/{dn}/{si}"] = bits(y)
            go = data(rng, xs[:2] + ys, dt)
            for vn, gv in views(rng, go):
                gi = np.empty(xs, dt)
                BACKEND.avg_pool_backward(gv.view(st), gi.view(st), tab, dims)
                res[f"avg3b/{dn}/{si}/{vn}"] = bits(gi)
    # a few bigger random cases (parallel splitting paths)
    rng = np.random.default_rng(99)
    for dt in DT:
        dn = np.dtype(dt).name
        for k, (xs, ys) in enumerate([((1, 2, 57, 61), (7, 9)), ((4, 64, 14, 14), (5, 5)), ((1, 1, 100, 3), (13, 2)),
                                      ((2, 3, 30, 40), (60, 80))]):
            x = data(rng, xs, dt); go = data(rng, xs[:2] + ys, dt)
            res[f"bigavg/{dn}/{k}"] = bits(ap.adaptive_avg_pool2d(x, ys))
            res[f"bigavgb/{dn}/{k}"] = bits(ap.adaptive_avg_pool2d_backward(go, x))
        for k, (xs, ys) in enumerate([((1, 2, 9, 30, 31), (4, 7, 9)), ((2, 8, 8, 14, 14), (3, 5, 5)), ((1, 1, 20, 3, 50), (7, 2, 60))]):
            x = data(rng, xs, dt, special=(k == 1))
            y, i = ap.adaptive_max_pool3d(x, ys)
            go = data(rng, y.shape, dt)
            res[f"bigmax/{dn}/{k}/y"] = bits(y); res[f"bigmax/{dn}/{k}/i"] = i
            res[f"bigmaxb/{dn}/{k}"] = bits(ap.adaptive_max_pool3d_backward(go, x, i))
    return res

# NaN exponent and mantissa masks of each dtype's bit pattern
_NAN_BITS = {"float16": (0x7C00, 0x3FF), "bfloat16": (0x7F80, 0x7F),
             "float32": (0x7F800000, 0x7FFFFF), "float64": (0x7FF0000000000000, 0xFFFFFFFFFFFFF)}


def canon(b, key):
    """Bit patterns with every NaN made one: their sign and payload from arithmetic are open."""
    dn = key.split("/")[1]
    if dn not in _NAN_BITS or b.dtype.kind != "u":
        return b
    e, m = _NAN_BITS[dn]
    b = b.copy()
    b[((b & b.dtype.type(e)) == e) & ((b & b.dtype.type(m)) != 0)] = e | 1
    return b


def main(argv):
    if argv not in (["save"], ["check"]):
        print(__doc__)
        return 2
    res = run_all()
    if argv == ["save"]:
        np.savez_compressed(GOLDEN, **res)
        print("saved", len(res), "cases to", GOLDEN)
        return 0
    g = np.load(GOLDEN)
    if set(g.files) != set(res):
        print("the case list changed: save again from the old kernels")
        return 1
    bad = [k for k in g.files if g[k].shape != res[k].shape or g[k].dtype != res[k].dtype
           or not np.array_equal(canon(g[k], k), canon(res[k], k))]
    print("checked", len(res), "cases;", len(bad), "differ", bad[:20])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
