"""PyTorch's own test inputs as a peer suite: every sample and error input that PyTorch's OpInfo
database generates for ``nn.functional.adaptive_*`` runs through our function of the same name.

Samples must give PyTorch's results (max values, indices and gradients bit for bit; averages and
their gradients within the contract's rounding of the exact value); every input PyTorch rejects
must raise one of our errors, never crash.
"""

from __future__ import annotations

import numpy as np
import pytest

import adaptive_pool as ap
import reference as ref
from adaptive_pool.errors import AdaptivePoolError
from support import BF16, bits, tol

op_db = pytest.importorskip(
    "torch.testing._internal.common_methods_invocations", reason="needs PyTorch's test modules"
).op_db
torch = pytest.importorskip("torch")

OPINFOS = [o for o in op_db if o.name.startswith("nn.functional.adaptive_")]
DTYPES = {
    torch.float32: np.dtype(np.float32),
    torch.float64: np.dtype(np.float64),
    torch.float16: np.dtype(np.float16),
    torch.bfloat16: BF16,
}


def _ours(opinfo):
    return getattr(ap, opinfo.name.removeprefix("nn.functional."))


def _numpy(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(BF16)
    return t.numpy()


def _tensor(a):
    if a.dtype == BF16:
        return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a))


def _assert_close(got, exact, scale, what):
    """16-bit results within one ulp of the exact value (float32 sums rounded once); wider ones
    within their own type's accumulation error relative to the data's magnitude (the samples are
    signed, so sums may cancel)."""
    if got.dtype in (np.float16, BF16):
        assert ref.max_ulp(got, exact) <= 1, what
    else:
        rtol, atol = tol(got.dtype)
        np.testing.assert_allclose(got, exact, rtol=rtol, atol=atol * scale, err_msg=what)


def _samples(opinfo, dtype):
    return list(opinfo.sample_inputs("cpu", dtype, requires_grad=True))


def test_the_database_has_the_whole_family():
    names = {o.name for o in OPINFOS}
    assert names == {
        f"nn.functional.adaptive_{k}_pool{r}d" for k in ("avg", "max") for r in (1, 2, 3)
    }


@pytest.mark.parametrize("dtype", list(DTYPES), ids=[str(d).removeprefix("torch.") for d in DTYPES])
@pytest.mark.parametrize("opinfo", OPINFOS, ids=lambda o: o.name.removeprefix("nn.functional."))
def test_sample_inputs(opinfo, dtype):
    samples = _samples(opinfo, dtype)
    assert samples
    rank = int(opinfo.name[-2])
    for s in samples:
        x = _numpy(s.input)
        output_size = s.args[0] if s.args else s.kwargs["output_size"]
        want = opinfo.op(s.input, *s.args, **s.kwargs)
        want_y = want[0] if isinstance(want, tuple) else want
        g = torch.ones_like(want_y) if want_y.numel() == 0 else torch.rand_like(want_y) + 0.5
        (want_gi,) = torch.autograd.grad(want_y, s.input, g, allow_unused=True)
        gn = _numpy(g)
        if "max" in opinfo.name:
            y, idx = _ours(opinfo)(x, output_size, index_dtype=np.int64)
            np.testing.assert_array_equal(bits(y), bits(_numpy(want_y)), err_msg=str(s))
            if isinstance(want, tuple):
                np.testing.assert_array_equal(idx, want[1].numpy(), err_msg=str(s))
            gi = getattr(ap, f"adaptive_max_pool{rank}d_backward")(gn, x, idx)
            exact_gi = ref.max_pool_backward(gn, x.shape, idx, rank)
        else:
            y = _ours(opinfo)(x, output_size)
            assert y.shape == tuple(want_y.shape), str(s)
            _assert_close(y, ref.avg_pool(x, output_size, rank), 10, str(s))
            gi = getattr(ap, f"adaptive_avg_pool{rank}d_backward")(gn, x)
            exact_gi = ref.avg_pool_backward(gn, x.shape, rank)
        assert gi.shape == x.shape and gi.dtype == x.dtype
        _assert_close(gi, exact_gi, 10, str(s))
        if want_gi is not None and "max" in opinfo.name and dtype == torch.float64:
            np.testing.assert_array_equal(bits(gi), bits(_numpy(want_gi)), err_msg=str(s))


@pytest.mark.parametrize("opinfo", OPINFOS, ids=lambda o: o.name.removeprefix("nn.functional."))
def test_error_inputs_are_our_errors(opinfo):
    errors = list(opinfo.error_inputs("cpu"))
    assert errors
    for e in errors:
        s = e.sample_input
        with pytest.raises(e.error_type):  # PyTorch rejects it ...
            opinfo.op(s.input, *s.args, **s.kwargs)
        output_size = s.args[0] if s.args else s.kwargs["output_size"]
        with pytest.raises(AdaptivePoolError) as info:  # ... and so do we, with our error
            _ours(opinfo)(_numpy(s.input), output_size)
        assert info.value.argument in ("x", "output_size"), str(info.value)
