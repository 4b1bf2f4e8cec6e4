"""DESIGN §3 dtypes: the 16-bit codecs bit for bit, and the accuracy of 16-bit results."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import warnings

import numba
import numpy as np
import pytest

import adaptive_pool as ap
import reference as ref
from adaptive_pool import dtypes
from adaptive_pool.cpu import access
from support import ALL_DTYPES, BF16, DTYPE_IDS, F16, F32, F64, rand


# -- the codecs, called from compiled code as the kernels call them -----------------------------
@numba.njit
def _apply(codec, values, out):
    for k in range(values.size):
        out[k] = codec(values[k])
    return out


def _f16_decode_all(bits):
    return _apply(dtypes.f16_decode, bits, np.empty(bits.size, np.float32))


def _f16_encode_all(values):
    return _apply(dtypes.f16_encode, values, np.empty(values.size, np.uint16))


def _bf16_decode_all(bits):
    return _apply(dtypes.bf16_decode, bits, np.empty(bits.size, np.float32))


def _bf16_encode_all(values):
    return _apply(dtypes.bf16_encode, values, np.empty(values.size, np.int16))


def _f32(bits):
    return np.asarray(bits, np.int64).astype(np.uint32).view(np.float32)


def _cast_bits(values_f32, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return values_f32.astype(dtype).view(np.uint16)


def _boundary_values(patterns16: np.ndarray, to_f32) -> np.ndarray:
    """float32 values at and around every rounding boundary of a 16-bit format.

    For each pair of adjacent 16-bit values: both values, their midpoint, and 1 and 2 float32
    ulps either side of each; plus NaN payloads, infinities, zeros and random bit patterns.
    """
    lo = to_f32(patterns16).view(np.uint32).astype(np.int64)
    hi = to_f32((patterns16 + 1) & 0xFFFF).view(np.uint32).astype(np.int64)
    lo_f = _f32(lo)
    hi_f = _f32(hi)
    ok = np.isfinite(lo_f) & np.isfinite(hi_f)
    ok[ok] = np.signbit(lo_f[ok]) == np.signbit(hi_f[ok])  # neighbours, not -0/+inf wraps
    mid = ((lo_f[ok].astype(np.float64) + hi_f[ok].astype(np.float64)) / 2).astype(np.float32)
    mid_bits = mid.view(np.uint32).astype(np.int64)
    centres = np.concatenate([lo, mid_bits])
    around = [centres + d for d in (-2, -1, 0, 1, 2)]
    rng = np.random.default_rng(0)
    nan_payloads = rng.integers(0x7F800001, 0x80000000, 20000)
    special = np.array(
        [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7F800001, 0x7FC00000, 0x7FFFFFFF,
         0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF]
    )
    random_bits = rng.integers(0, 2**32, 2_000_000)
    allbits = np.concatenate(
        around + [nan_payloads, nan_payloads | 0x80000000, special, random_bits]
    )
    allbits = allbits[(allbits >= 0) & (allbits < 2**32)]
    return _f32(allbits)


ALL16 = np.arange(65536, dtype=np.int64)


def test_f16_decode_all_patterns():
    bits = ALL16.astype(np.uint16)
    got = _f16_decode_all(bits).view(np.uint32)
    want = bits.view(np.float16).astype(np.float32).view(np.uint32)
    np.testing.assert_array_equal(got, want)


def test_bf16_decode_all_patterns():
    bits = ALL16.astype(np.uint16).view(np.int16)
    got = _bf16_decode_all(bits).view(np.uint32)
    want = bits.view(BF16).astype(np.float32).view(np.uint32)
    np.testing.assert_array_equal(got, want)


# -- the codecs the CPU kernels use (hardware float16 conversions where the target has them) --
@numba.njit
def _kernel_f16_decode(bits):
    out = np.empty(bits.size, np.float32)
    for k in range(bits.size):
        out[k] = access.dec(bits, bits[k])
    return out


@numba.njit
def _kernel_f16_encode(values, like):
    out = np.empty(values.size, np.uint16)
    for k in range(values.size):
        out[k] = access.enc(like, values[k])
    return out


@numba.njit
def _kernel_put_all(values, out):
    for k in range(values.size):
        access.put(out, k, values[k])
    return out


@numba.njit
def _kernel_store_rows(values, out):
    """``values`` stored as rows of 1 to 40 elements (whole vectors and masked tails)."""
    j, n = 0, 1
    while j < values.size:
        r = min(n, values.size - j)
        access.store_row(out, j, 1, r, values, j)
        j, n = j + r, n % 40 + 1
    return out


@numba.njit
def _kernel_store_numbers(values, x, out):
    """``values`` stored as rows of 1 to 40 elements, +0.0 where ``x`` is NaN."""
    j, n = 0, 1
    while j < values.size:
        r = min(n, values.size - j)
        access.store_numbers(out, j, 1, r, values, j, x, j, 1)
        j, n = j + r, n % 40 + 1
    return out


def test_kernel_bf16_store_numbers_matches_the_shared_codec():
    """Rows stored with +0.0 where a bfloat16 ``x`` is NaN (the NaN-skipping average backward):
    the codec's bits of the selected values, whatever the values and NaN patterns."""
    rng = np.random.default_rng(3)
    v = _boundary_values(
        ALL16, lambda b: b.astype(np.uint16).view(np.int16).view(BF16).astype(np.float32)
    )
    x = rng.standard_normal(v.size).astype(BF16)
    x[rng.random(v.size) < 0.05] = np.nan
    x[: v.size // 3][(np.arange(v.size // 3) // 64) % 3 == 0] = np.nan  # whole blocks NaN
    x = x.view(np.int16)
    got = _kernel_store_numbers(v, x, np.empty(v.size, np.int16))
    want = _bf16_encode_all(np.where(np.isnan(x.view(BF16)), np.float32(0), v))
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(int(v[k:k + 1].view(np.uint32)[0])), hex(int(got[k])),
                            hex(int(want[k]))) for k in bad[:10]]


@pytest.mark.parametrize("store", [_kernel_put_all, _kernel_store_rows], ids=["put", "rows"])
def test_kernel_bf16_stores_match_the_shared_codec(store):
    """The kernels' bfloat16 stores, scattered and whole rows (``vcvtneps2bf16`` behind a test
    for subnormals and NaN where the target has AVX-512 BF16): the codec's bits on every
    rounding boundary, every subnormal's neighbourhood and every 97th float32 pattern."""
    v = _boundary_values(
        ALL16, lambda b: b.astype(np.uint16).view(np.int16).view(BF16).astype(np.float32)
    )
    subnormal = np.arange(0, 2**23, 7, dtype=np.int64)
    v = np.concatenate([v, _f32(subnormal), _f32(subnormal | 2**31), _f32(0x7F800000 + subnormal),
                        (np.arange(0, 2**32, 97, dtype=np.uint64).astype(np.uint32)
                         .view(np.float32))])
    got = store(v, np.empty(v.size, np.int16))
    want = _bf16_encode_all(v)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(int(v[k:k + 1].view(np.uint32)[0])), hex(int(got[k])),
                            hex(int(want[k]))) for k in bad[:10]]


def _quiet(bits32):
    """float32 patterns with every NaN quiet, as arithmetic on a signalling NaN leaves it."""
    nan = (bits32 & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, bits32 | 0x00400000, bits32)


def test_kernel_f16_decode_all_patterns():
    """Equal to the shared codec on every pattern, up to quieting signalling NaNs."""
    bits = ALL16.astype(np.uint16)
    got = _kernel_f16_decode(bits).view(np.uint32)
    want = _f16_decode_all(bits).view(np.uint32)
    np.testing.assert_array_equal(_quiet(got), _quiet(want))
    quiet = (bits & 0x7E00) != 0x7C00  # not a signalling NaN: exactly equal
    np.testing.assert_array_equal(got[quiet], want[quiet])


def test_kernel_f16_encode_matches_the_shared_codec():
    v = _boundary_values(ALL16, lambda b: b.astype(np.uint16).view(np.float16).astype(np.float32))
    v = np.concatenate([v, (np.arange(0, 2**32, 997, dtype=np.uint64).astype(np.uint32)
                            .view(np.float32))])
    got = _kernel_f16_encode(v, np.empty(1, np.uint16))
    want = _f16_encode_all(v)
    signalling = ((v.view(np.uint32) & 0x7FC00000) == 0x7F800000) & np.isnan(v)
    np.testing.assert_array_equal(got[~signalling], want[~signalling])
    assert np.all((got[signalling] & 0x7E00) == 0x7E00)  # a quiet NaN, as F16C returns
    np.testing.assert_array_equal(got[signalling] & 0x8000, want[signalling] & 0x8000)


def test_f16_encode_round_trips_every_pattern():
    bits = ALL16.astype(np.uint16)
    np.testing.assert_array_equal(_f16_encode_all(bits.view(np.float16).astype(np.float32)), bits)


def test_f16_encode_matches_numpy_around_every_boundary():
    v = _boundary_values(ALL16, lambda b: b.astype(np.uint16).view(np.float16).astype(np.float32))
    extra = np.array([65519.998, 65520.0, 65520.004, 65504.0, 2.0**-24, 2.0**-25, 2.0**-26,
                      3 * 2.0**-26, 2.0**-14, 2.0**-14 - 2.0**-25], np.float32)
    v = np.concatenate([v, extra, -extra, np.nextafter(extra, np.float32(np.inf)),
                        np.nextafter(extra, np.float32(0))])
    assert v.size > 2_500_000
    got = _f16_encode_all(v)
    want = _cast_bits(v, np.float16)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [
        (hex(int(v[k:k + 1].view(np.uint32)[0])), hex(int(got[k])), hex(int(want[k])))
        for k in bad[:10]
    ]


@pytest.mark.parametrize("codec", ["float16", "bfloat16"])
def test_encode_matches_the_casts_on_every_97th_float32_pattern(codec):
    # 44 M patterns across the whole float32 range: every exponent, NaN payloads, both signs
    v = (np.arange(0, 2**32, 97, dtype=np.uint64).astype(np.uint32)).view(np.float32)
    if codec == "float16":
        got, want = _f16_encode_all(v), _cast_bits(v, np.float16)
    else:
        got, want = _bf16_encode_all(v).view(np.uint16), _cast_bits(v, BF16)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(int(v[k:k + 1].view(np.uint32)[0])), hex(int(got[k])),
                            hex(int(want[k]))) for k in bad[:10]]


def test_bf16_encode_matches_ml_dtypes_around_every_boundary():
    v = _boundary_values(
        ALL16, lambda b: b.astype(np.uint16).view(np.int16).view(BF16).astype(np.float32)
    )
    assert v.size > 2_500_000
    got = _bf16_encode_all(v).view(np.uint16)
    want = _cast_bits(v, BF16)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [
        (hex(int(v[k:k + 1].view(np.uint32)[0])), hex(int(got[k])), hex(int(want[k])))
        for k in bad[:10]
    ]


# -- operator accuracy --------------------------------------------------------------------------
def test_reference_rounds_float64_to_bfloat16_once():
    """The target of the ulp bounds below: float64 rounded to the nearest bfloat16, ties to an
    even pattern, against exact rational arithmetic, on ties, values one float64 ulp off a tie
    (a cast through float32 rounds those twice), their negatives and random values."""
    from bisect import bisect_left
    from fractions import Fraction

    grid = np.arange(0x7F80, dtype=np.uint16)  # every finite bfloat16 of positive sign
    values = grid.view(BF16).astype(np.float64)
    k = np.random.default_rng(3).integers(0, grid.size - 1, 300)
    mid = (values[k] + values[k + 1]) / 2
    v = np.concatenate([mid, np.nextafter(mid, 0), np.nextafter(mid, np.inf),
                        np.random.default_rng(4).standard_normal(300) * 1e3])
    v = np.concatenate([v, -v])

    def exact(x):
        i = min(bisect_left(values, abs(x)), grid.size - 1)
        near = min((abs(Fraction(abs(x)) - Fraction(values[j])), int(grid[j]) & 1, j)
                   for j in (i - 1, i) if j >= 0)
        return int(grid[near[2]]) | (0x8000 if x < 0 else 0)

    want = np.array([exact(x) for x in v], np.uint16)
    np.testing.assert_array_equal(ref.round_exact(v, BF16).view(np.uint16), want)


def _ulps_of_every_operator(dtype, seed, signed=True):
    low = -4.0 if signed else 0.25
    out = {}
    x2 = rand((2, 3, 11, 13), dtype, seed=seed, low=low)
    for osz in ((4, 5), (11, 13), (17, 29)):
        y = ap.adaptive_avg_pool2d(x2, osz)
        out.setdefault("avg", []).append(ref.max_ulp(y, ref.avg_pool2d(x2, osz)))
        g = rand(y.shape, dtype, seed=seed + 1, low=low)
        gi = ap.adaptive_avg_pool2d_backward(g, x2)
        out.setdefault("avg_backward", []).append(
            ref.max_ulp(gi, ref.avg_pool2d_backward(g, x2.shape))
        )
    x3 = rand((2, 2, 5, 6, 7), dtype, seed=seed + 2, low=low)
    for osz in ((2, 3, 4), (5, 6, 7), (9, 11, 13)):
        y, idx = ap.adaptive_max_pool3d(x3, osz)
        wy, wi = ref.max_pool3d(x3, osz)
        out.setdefault("max", []).append(ref.max_ulp(y, wy))
        np.testing.assert_array_equal(idx, wi)
        g = rand(y.shape, dtype, seed=seed + 3, low=low)
        gi = ap.adaptive_max_pool3d_backward(g, x3, idx)
        out.setdefault("max_backward", []).append(
            ref.max_ulp(gi, ref.max_pool3d_backward(g, x3.shape, idx))
        )
    return {k: max(v) for k, v in out.items()}


@pytest.mark.parametrize("dtype", [F16, BF16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("signed", [False, True], ids=["positive", "signed"])
def test_16bit_results_within_one_ulp_of_the_reference(dtype, signed):
    ulps = {}
    for seed in (0, 10):
        for k, v in _ulps_of_every_operator(dtype, seed, signed).items():
            ulps[k] = max(ulps.get(k, 0), v)
    print(f"\nmax ulps {dtype} {'signed' if signed else 'positive'}: {ulps}")
    assert ulps["max"] == 0
    assert all(v <= 1 for v in ulps.values()), ulps


@pytest.mark.parametrize("dtype", [F32, F64], ids=["float32", "float64"])
def test_wide_results_within_a_few_ulps(dtype):
    # Positive data (no cancellation): float32 and float64 accumulate in their own type, so a
    # sum of k terms may be k/2 ulps off; the windows here hold at most 12 terms.
    ulps = _ulps_of_every_operator(dtype, 20, signed=False)
    print(f"\nmax ulps {dtype}: {ulps}")
    assert ulps["max"] == 0
    assert all(v <= 4 for v in ulps.values()), ulps


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
def test_results_have_the_input_dtype(dtype):
    x = rand((2, 4, 4), dtype)
    assert ap.adaptive_avg_pool2d(x, 3).dtype == dtype
    assert ap.adaptive_avg_pool2d_backward(rand((2, 3, 3), dtype), x).dtype == dtype
    v = rand((2, 3, 4, 4), dtype)
    y, idx = ap.adaptive_max_pool3d(v, 2)
    assert y.dtype == dtype and idx.dtype == np.int32
    assert ap.adaptive_max_pool3d_backward(y, v, idx).dtype == dtype


@pytest.mark.parametrize("dtype", [F16, BF16], ids=["float16", "bfloat16"])
def test_16bit_max_keeps_nan_payload_and_signs(dtype):
    bits = np.array([0x7C01 if dtype == F16 else 0x7F81, 0x8000, 0x0000, 0x3C00], np.uint16)
    x = bits.view(dtype).reshape(1, 1, 1, 1, 4)
    y, idx = ap.adaptive_max_pool3d(x, (1, 1, 1))
    assert y.view(np.uint16).item() == bits[0] and idx.item() == 0
    y, idx = ap.adaptive_max_pool3d(x[..., 1:3], (1, 1, 1))  # -0 then +0: a tie, keep -0
    assert y.view(np.uint16).item() == 0x8000 and idx.item() == 0


# -- PyTorch's 16-bit backward accumulates in 16 bits; ours in float32 ----------------------------
@pytest.mark.parametrize("dtype", [F16, BF16], ids=["float16", "bfloat16"])
def test_16bit_backward_more_accurate_than_torch(torch, dtype):
    tdt = {F16: torch.float16, BF16: torch.bfloat16}[dtype]
    # Upsampling 3x3 -> 64x64: each input cell gathers ~23 x 23 overlapping contributions.
    x = np.zeros((1, 1, 3, 3), dtype)
    g = rand((1, 1, 64, 64), dtype, seed=5, low=0.1, high=1.0)
    want = ref.avg_pool2d_backward(g, x.shape)
    ours = ref.max_ulp(ap.adaptive_avg_pool2d_backward(g, x), want)
    tg = torch.from_numpy(g.astype(np.float32)).to(tdt)
    tgi = torch.ops.aten._adaptive_avg_pool2d_backward(tg, torch.zeros(x.shape, dtype=tdt))
    theirs = ref.max_ulp(tgi.float().numpy().astype(dtype), want)
    # Max backward: every output cell of a 1x1x2 -> 1x1x200 upsampling points at one of two
    # cells, so each input cell sums 100 gradients.
    v = np.array([[[[[1.0, 2.0]]]]], dtype)
    gm = rand((1, 1, 1, 1, 200), dtype, seed=6, low=0.1, high=1.0)
    _, idx = ap.adaptive_max_pool3d(v, (1, 1, 200), index_dtype=np.int64)
    wantm = ref.max_pool3d_backward(gm, v.shape, idx)
    oursm = ref.max_ulp(ap.adaptive_max_pool3d_backward(gm, v, idx), wantm)
    tgm = torch.ops.aten.adaptive_max_pool3d_backward(
        torch.from_numpy(gm.astype(np.float32)).to(tdt),
        torch.from_numpy(v.astype(np.float32)).to(tdt),
        torch.from_numpy(idx),
    )
    theirsm = ref.max_ulp(tgm.float().numpy().astype(dtype), wantm)
    print(f"\n{dtype}: avg backward ulps ours {ours} torch {theirs}; "
          f"max backward ulps ours {oursm} torch {theirsm}")
    assert ours <= 1 and oursm <= 1
    assert theirs > ours and theirsm > oursm


def test_float16_sums_do_not_overflow():
    # 64 x 65504 overflows float16 but not the float32 accumulator: the mean is exact.
    x = np.full((1, 1, 8, 8), 65504, F16)
    assert ap.adaptive_avg_pool2d(x, 1).item() == 65504
    # a gather whose partial sums pass 65504 but whose result is back in range
    g = np.array([[[[65504, 65504, -65504, -65504]]]], F16)
    gi = ap.adaptive_avg_pool2d_backward(g, np.zeros((1, 1, 1, 1), F16))
    assert gi.item() == 0
    # ... while a sum that really exceeds float16's range rounds to inf once at the end
    v = np.full((1, 1, 1, 1, 2), 60000, F16)
    _, idx = ap.adaptive_max_pool3d(v, (1, 1, 4), index_dtype=np.int64)
    gm = np.full((1, 1, 1, 1, 4), 60000, F16)
    assert np.isinf(ap.adaptive_max_pool3d_backward(gm, v, idx).astype(np.float64)).all()


@pytest.mark.slow
def test_f16_without_f16c_uses_the_integer_codec(tmp_path):
    """A target without F16C (numba's generic CPU) must not get LLVM half conversions (no
    runtime helper is linked: they would crash) and must give the same bits."""
    x = rand((2, 3, 9, 40), F16, seed=5)
    sizes = [(4, 3), (3, 4)]  # 8 planes side by side; windows of rows 10 wide (direct)
    # and the 8-plane backward's shares, plain and NaN-skipping (9 planes: a whole block and a
    # last one)
    g = rand((1, 9, 5, 5), F16, seed=6)
    x14 = rand((1, 9, 14, 14), F16, seed=7)
    x14[x14 > 0.8] = np.nan
    arrays = {"x": x, "g": g, "x14": x14}
    for name, a in arrays.items():
        np.save(tmp_path / f"{name}.npy", a)
    body = (
        f"[ap.adaptive_avg_pool2d(x, s).view(np.uint16).tolist() for s in {sizes!r}]"
        " + [ap.adaptive_avg_pool2d_backward(g, x14, skipna=k).view(np.uint16).tolist()"
        " for k in (False, True)]"
    )
    code = (
        "import numpy as np, adaptive_pool as ap; from adaptive_pool.cpu import access; "
        + "".join(f"{n} = np.load({str(tmp_path / (n + '.npy'))!r}); " for n in arrays)
        + f"print(access.NATIVE_HALF, {body})"
    )
    env = {**os.environ, "NUMBA_CPU_NAME": "generic",
           "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=600, check=True).stdout.split(" ", 1)
    assert out[0] == "False"
    assert ast.literal_eval(out[1]) == eval(body, {"ap": ap, "np": np, **arrays})
