"""What the benchmark measures: the operators, the shape syntax, the fixed suite, random shapes.

This module is loaded by path into the worker processes (see :mod:`.worker`), so it imports
nothing but the standard library and NumPy, and nothing from the rest of the package.

A *shape* is an input shape and an output size; its rank (1, 2 or 3 pooled axes) is the number
of output sizes, and it applies to every operator of that rank (average and max, forward and
backward). A *case* is one operator, dtype and backend on one shape.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, replace
from typing import Any, Optional

import numpy as np

__all__ = [
    "OPS",
    "OpSpec",
    "Shape",
    "Case",
    "DTYPES",
    "DEFAULT_DTYPES",
    "parse_shape",
    "shape_text",
    "suite",
    "random_cases",
    "cases_for",
    "select_ops",
    "case_seed",
]

DTYPES = ("float32", "float64", "float16", "bfloat16")
# every dtype by default: the issue asks for global pooling "in every dtype"
DEFAULT_DTYPES = DTYPES

OutSize = tuple[Optional[int], ...]


@dataclass(frozen=True)
class OpSpec:
    """One operator of the family."""

    name: str  # short name: avg2d, max3d_backward, ...
    kind: str  # "avg" or "max"
    rank: int  # pooled axes
    backward: bool

    @property
    def function(self) -> str:
        """The public function's name in :mod:`adaptive_pool`."""
        return f"adaptive_{self.kind}_pool{self.rank}d" + ("_backward" if self.backward else "")

    @property
    def indices(self) -> bool:
        """Whether it returns indices beside its values (the max forwards)."""
        return self.kind == "max" and not self.backward


OPS: dict[str, OpSpec] = {
    f"{k}{r}d{'_backward' if b else ''}": OpSpec(f"{k}{r}d{'_backward' if b else ''}", k, r, b)
    for b in (False, True)
    for k in ("avg", "max")
    for r in (1, 2, 3)
}

# Group names accepted by --ops (besides the short names and the public function names).
OP_GROUPS: dict[str, list[str]] = {
    "all": list(OPS),
    "avg": [n for n, o in OPS.items() if o.kind == "avg"],
    "max": [n for n, o in OPS.items() if o.kind == "max"],
    "forward": [n for n, o in OPS.items() if not o.backward],
    "backward": [n for n, o in OPS.items() if o.backward],
    "1d": [n for n, o in OPS.items() if o.rank == 1],
    "2d": [n for n, o in OPS.items() if o.rank == 2],
    "3d": [n for n, o in OPS.items() if o.rank == 3],
    # the two CANN seed operators and the forwards that feed them (the old benchmark's four)
    "seed": ["avg2d", "avg2d_backward", "max3d", "max3d_backward"],
}


def select_ops(text: str) -> list[str]:
    """Operators named by a comma-separated list of short names, function names and groups.

    Raises
    ------
    ValueError
        For an unknown name (the message lists what is accepted).
    """
    aliases = dict(OP_GROUPS)
    for n, o in OPS.items():
        aliases[o.function] = [n]
        aliases[n.replace("_backward", "_bwd")] = [n]
    out: list[str] = []
    for item in (t.strip() for t in text.split(",") if t.strip()):
        names = [item] if item in OPS else aliases.get(item)
        if names is None:
            raise ValueError(
                f"unknown operator {item!r}; choose from {', '.join(OPS)}, the function names "
                f"(adaptive_avg_pool2d, ...) or the groups {', '.join(OP_GROUPS)}"
            )
        out.extend(n for n in names if n not in out)
    return out


@dataclass(frozen=True)
class Shape:
    """An input shape and an output size (``None`` keeps an axis), with where it came from."""

    x: tuple[int, ...]
    out: OutSize
    source: str = "custom"  # suite, global, tiny, channels-last, random, custom
    # the input (and gradient) stored with the channels innermost, as PyTorch's channels_last
    # (batched 2-D and 3-D shapes): an NCHW view of NHWC memory on our side
    channels_last: bool = False

    @property
    def rank(self) -> int:
        return len(self.out)

    @property
    def y(self) -> tuple[int, ...]:
        """The output's shape."""
        lead = self.x[: len(self.x) - self.rank]
        spatial = self.x[len(self.x) - self.rank :]
        return lead + tuple(i if o is None else o for i, o in zip(spatial, self.out))

    @property
    def text(self) -> str:
        return shape_text(self.x, self.out)


def _size(v: str) -> Optional[int]:
    return None if v == "_" else int(v)


def parse_shape(text: str, source: str = "custom") -> Shape:
    """Parse ``INPUT:OUTPUT``, e.g. ``32x256x56x56:7x7`` or ``64x512x14x14:_x1``.

    The number of output sizes is the rank (1, 2 or 3); ``_`` keeps that axis's input size
    (PyTorch's ``None``). The input has ``rank + 1`` (un-batched ``C, *S``) or ``rank + 2``
    (``N, C, *S``) positive sizes.

    Raises
    ------
    ValueError
        With the accepted syntax in the message.
    """
    try:
        a, b = text.strip().lower().split(":")
        x = tuple(int(v) for v in a.split("x"))
        o = tuple(_size(v) for v in b.split("x"))
    except ValueError:
        raise ValueError(
            f"bad shape {text!r}: expected INPUT:OUTPUT like 32x256x1024:64 (1-D), "
            f"32x256x56x56:7x7 (2-D), 4x64x16x56x56:4x7x7 (3-D); '_' keeps an axis "
            f"(64x512x14x14:_x1)"
        ) from None
    if len(o) not in (1, 2, 3) or len(x) not in (len(o) + 1, len(o) + 2):
        raise ValueError(
            f"bad shape {text!r}: 1, 2 or 3 output sizes (the rank) need an input of rank + 1 "
            f"(C, *S) or rank + 2 (N, C, *S) sizes"
        )
    if min(x) < 1 or any(v is not None and v < 1 for v in o):
        raise ValueError(f"bad shape {text!r}: every size must be positive")
    return Shape(x, o, source)


def shape_text(x: tuple[int, ...], o: OutSize) -> str:
    """``(32, 256, 56, 56), (7, 7)`` -> ``"32x256x56x56->7x7"`` (``None`` as ``_``)."""
    return "x".join(map(str, x)) + "->" + "x".join("_" if v is None else str(v) for v in o)


def _shapes(source: str, *texts: str) -> list[Shape]:
    return [parse_shape(t, source) for t in texts]


def channels_last(shape: Shape) -> Shape:
    """``shape`` with its input (and gradient) stored channels-last."""
    return replace(shape, source="channels-last", channels_last=True)


def _channels_last(*texts: str) -> list[Shape]:
    return [channels_last(parse_shape(t, "custom")) for t in texts]


# Typical layers: classifier heads, detection/segmentation necks, video and audio models;
# non-divisible sizes (overlapping windows) and upsampling (O > I) on purpose.
_FULL = (
    _shapes(
        "suite",
        "32x256x1024:64", "16x512x999:50", "8x64x100:300",
        "32x256x56x56:7x7", "64x512x14x14:5x5", "8x64x224x224:6x6", "16x64x64x64:9x11",
        "4x16x28x28:7x7",
        "4x64x16x56x56:4x7x7", "2x32x32x32x32:5x5x5", "8x128x8x14x14:3x5x5",
        "1x16x64x64x64:7x9x11",
    )
    + _shapes(
        "global",
        "64x512x49:1",
        "128x2048x7x7:1x1", "32x256x28x28:_x1", "32x256x28x28:1x_",
        "4x64x8x28x28:1x1x1", "4x64x8x28x28:_x1x1", "4x64x8x28x28:1x_x_",
    )
    # per-call overhead: the kernels' work is negligible here
    + _shapes("tiny", "1x1x8:4", "2x3x17:5", "1x1x4x4:2x2", "2x3x9x10:4x3", "1x1x2x4x4:1x2x2",
              "2x3x5x9x10:2x4x3")
    # what a channels_last model hands the layer (the CPU backend only: a CUDA copy in is
    # C-order)
    + _channels_last("32x256x56x56:7x7", "64x512x14x14:5x5", "128x2048x7x7:1x1",
                     "4x64x16x56x56:4x7x7")
)

_QUICK = (
    _shapes("suite", "2x8x50:7", "4x16x28x28:7x7", "2x8x15x17:4x6", "2x8x8x14x14:3x5x5",
            "1x4x5x9x11:3x4x7")
    + _shapes("global", "2x8x33:1", "2x8x12x12:1x1", "2x8x12x12:_x1", "2x8x12x12:1x_",
              "1x4x6x6x6:1x1x1", "1x4x6x6x6:_x1x1", "1x4x6x6x6:1x_x_")
    + _shapes("tiny", "1x1x8:4", "1x1x4x4:2x2", "1x1x2x4x4:1x2x2")
)


def suite(quick: bool = False) -> list[Shape]:
    """The fixed shapes: typical layers, global pooling for every rank, tiny shapes,
    channels-last inputs.

    Parameters
    ----------
    quick : bool
        The small suite of a smoke run (same kinds of shapes, seconds in all).
    """
    return list(_QUICK if quick else _FULL)


def _log_uniform(rng: np.random.Generator, lo: int, hi: int) -> int:
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi + 0.999)) - 0.4999)))


def random_cases(seed: int, n: int, max_elements: int = 1 << 22) -> list[Shape]:
    """``n`` shapes drawn from a generator seeded with ``seed`` (the same seed, the same shapes).

    Ranks, batch and channel counts, spatial sizes (log-uniform) and output sizes are drawn
    independently of any suite: sizes that do not divide, upsampling, ``None`` axes and global
    pooling all occur. Inputs hold at most ``max_elements`` elements.

    Parameters
    ----------
    seed : int
        The generator's seed; report it with the results.
    n : int
        How many shapes.
    max_elements : int
        Upper bound on an input's element count (and on an output's).
    """
    rng = np.random.default_rng([0x5EED, seed])
    shapes = []
    for _ in range(n):
        rank = int(rng.integers(1, 4))
        spatial_cap = {1: 4096, 2: 256, 3: 64}[rank]
        spatial = [_log_uniform(rng, {1: 8, 2: 4, 3: 2}[rank], spatial_cap) for _ in range(rank)]
        out: list[Optional[int]] = []
        for i in spatial:
            u = rng.uniform()
            if u < 0.1:
                out.append(None)
            elif u < 0.2:
                out.append(1)
            else:
                out.append(_log_uniform(rng, 1, max(1, min(2 * i, 128))))
        batched = rng.uniform() < 0.85
        n_ = int(rng.choice([1, 2, 4, 8, 16, 32])) if batched else None
        c = int(rng.choice([1, 3, 16, 32, 64, 128, 256, 512]))
        per_plane = max(math.prod(spatial),
                        math.prod(i if o is None else o for i, o in zip(spatial, out)))
        # shrink channels, then the batch, until the arrays fit the budget
        while c > 1 and (n_ or 1) * c * per_plane > max_elements:
            c //= 2
        while n_ is not None and n_ > 1 and n_ * c * per_plane > max_elements:
            n_ //= 2
        lead = (c,) if n_ is None else (n_, c)
        shapes.append(Shape(lead + tuple(spatial), tuple(out), "random"))
    return shapes


@dataclass(frozen=True)
class Case:
    """One operator, dtype and backend on one shape: what both workers build and time."""

    op: str
    dtype: str
    backend: str
    shape: Shape
    index_dtype: str = "int32"

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "dtype": self.dtype, "backend": self.backend,
                "x_shape": list(self.shape.x), "out_size": list(self.shape.out),
                "source": self.shape.source, "index_dtype": self.index_dtype,
                "channels_last": self.shape.channels_last}

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Case":
        shape = Shape(tuple(d["x_shape"]), tuple(d["out_size"]), d.get("source", "custom"),
                      bool(d.get("channels_last", False)))
        return Case(d["op"], d["dtype"], d["backend"], shape, d.get("index_dtype", "int32"))

    @property
    def spec(self) -> OpSpec:
        return OPS[self.op]

    @property
    def label(self) -> str:
        return f"{self.backend} {self.op} {self.dtype} {self.shape.text}"


def cases_for(ops: list[str], dtypes: list[str], backends: list[str], shapes: list[Shape],
              index_dtype: str = "int32") -> list[Case]:
    """Every operator x dtype x shape of the operator's rank, per backend, in report order."""
    return [
        Case(op, dt, be, s, index_dtype)
        for be in backends
        for op in ops
        for dt in dtypes
        for s in shapes
        if s.rank == OPS[op].rank and not (s.channels_last and be == "cuda")
    ]


def case_seed(seed: int, case: Case) -> list[int]:
    """The data seed of a case: from the run's seed, its input shape and dtype only.

    So the data of a case do not depend on which other cases run, and the average and max
    operators of one shape see the same input.
    """
    key = f"{case.shape.text}|{case.dtype}".encode()
    return [seed, zlib.crc32(key)]
