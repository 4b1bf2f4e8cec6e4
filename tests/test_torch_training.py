"""Training with the PyTorch layer: a small CNN with squeeze-and-excitation and CBAM blocks,
trained with PyTorch's pooling modules and with ours (swapped in by ``swap_modules``);
determinism, deterministic mode, and torch's thread count.

The CUDA cases (marked ``gpu``) run where a GPU is present and are skipped otherwise.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")

import adaptive_pool.torch as apt  # noqa: E402

nn = torch.nn
STEPS = 5


class SqueezeExcite(nn.Module):
    def __init__(self, c: int, r: int = 4) -> None:
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Sequential(nn.Linear(c, c // r), nn.ReLU(), nn.Linear(c // r, c),
                                nn.Sigmoid())

    def forward(self, x):
        return x * self.fc(self.pool(x).flatten(1))[:, :, None, None]


class CBAM(nn.Module):
    """Channel attention from average- and max-pooled descriptors, then spatial attention."""

    def __init__(self, c: int, r: int = 4) -> None:
        super().__init__()
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.max = nn.AdaptiveMaxPool2d(1)
        self.mlp = nn.Sequential(nn.Conv2d(c, c // r, 1), nn.ReLU(), nn.Conv2d(c // r, c, 1))
        self.spatial = nn.Conv2d(2, 1, 7, padding=3)

    def forward(self, x):
        x = x * torch.sigmoid(self.mlp(self.avg(x)) + self.mlp(self.max(x)))
        s = torch.cat([x.mean(1, keepdim=True), x.amax(1, keepdim=True)], dim=1)
        return x * torch.sigmoid(self.spatial(s))


def make_net() -> nn.Module:
    # odd input sizes and output sizes that do not divide them: overlapping windows
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), SqueezeExcite(8),
        nn.Conv2d(8, 16, 3, stride=2), nn.ReLU(), CBAM(16),
        nn.AdaptiveMaxPool2d((5, 4)), nn.AdaptiveAvgPool2d(3), nn.Flatten(), nn.Linear(144, 4),
    )


def train(model: nn.Module, device: str) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """``STEPS`` SGD steps on fixed random data; the losses and the final parameters."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(8, 3, 13, 15, generator=g).to(device)
    target = torch.randint(0, 4, (8,), generator=g).to(device)
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.detach().cpu())
    return losses, [p.detach().cpu() for p in model.parameters()]


def _deterministic_training(device: str) -> None:
    torch.manual_seed(0)
    initial = make_net()
    ours = [apt.swap_modules(copy.deepcopy(initial)) for _ in range(2)]
    assert sum(type(m).__module__ == "adaptive_pool.torch.modules" for m in ours[0].modules()) == 5
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            runs = [train(m, device) for m in ours]
    finally:
        torch.use_deterministic_algorithms(was)
    (l1, p1), (l2, p2) = runs
    assert all(torch.equal(a, b) for a, b in zip(l1, l2)), "losses differ between two runs"
    assert all(torch.equal(a, b) for a, b in zip(p1, p2)), "parameters differ between two runs"
    if device == "cpu":
        ref_losses, ref_params = train(copy.deepcopy(initial), device)
        torch.testing.assert_close(torch.stack(l1), torch.stack(ref_losses), rtol=1e-5, atol=1e-6)
        for a, b in zip(p1, ref_params):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
        assert l1[-1] < l1[0]  # it learns


def test_training_matches_torch_and_is_deterministic():
    _deterministic_training("cpu")


def test_torch_thread_count_unchanged():
    # A fresh process: the first Numba parallel call is the one reported to reset torch's
    # threads (numba issue 9387); 1 thread is not torch's default, so a reset would show.
    code = """
import torch
torch.set_num_threads(1)
import adaptive_pool as ap, adaptive_pool.torch as apt
x = torch.randn(2, 3, 9, 9, requires_grad=True)
(apt.adaptive_avg_pool2d(x, 4).sum() + apt.adaptive_max_pool2d(x, 3).sum()).backward()
ap.adaptive_max_pool3d(x.detach(), 2)
assert torch.get_num_threads() == 1, torch.get_num_threads()
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]


def _cuda() -> bool:
    return torch.cuda.is_available() and os.environ.get("NUMBA_ENABLE_CUDASIM") != "1"


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="no CUDA GPU")
def test_cuda_training_is_deterministic():
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS
    _deterministic_training("cuda")


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="no CUDA GPU")
def test_cuda_ops_equal_cpu_bitwise():
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        x = torch.randn(2, 3, 13, 11, dtype=dtype)
        xc = x.cuda().requires_grad_(True)
        xh = x.clone().requires_grad_(True)
        for f in (lambda t: apt.adaptive_avg_pool2d(t, (5, 4)),
                  lambda t: apt.adaptive_max_pool2d(t, (5, 4))):
            yc, yh = f(xc), f(xh)
            g = torch.randn(yh.shape, dtype=dtype)
            (gc,) = torch.autograd.grad(yc, xc, g.cuda())
            (gh,) = torch.autograd.grad(yh, xh, g)
            assert torch.equal(yc.cpu(), yh) and torch.equal(gc.cpu(), gh)
