"""The CPU kernels: one ``@njit(cache=True)`` body per algorithm, run on Numba's threads.

They live in a module per operator (:mod:`.avg_forward`, :mod:`.avg_backward` and the NaN
counts it divides by, :mod:`.nan_counts`; :mod:`.max_forward`, :mod:`.max_backward`), what they
share in :mod:`.work`. This module names them for the backend and maps each to its chunk
function (:data:`CHUNKS`).

Every kernel sees the problem as ``(N, C, D, H, W) -> (OD, OH, OW)``; 1-D and 2-D problems are
singleton axes. Arrays arrive as flat 1-D storage arrays plus a geometry tuple
``(offset, sN, sC, sD, sH, sW)`` in elements, so any strides (negative, zero, channels-last) use
the same compiled code: one specialisation per storage dtype (and index dtype), never per layout
or rank. ``tab`` is the packed window table of :mod:`adaptive_pool.windows`.

Summation order (the contract that makes CPU and CUDA results bitwise equal; see
``docs/summation-order.md``): an average forward window is summed in the *lane order*:
element k of the window's flattened (d, h, w) order is added into lane ``k % 32`` (each lane
from +0.0, in ascending k, in the accumulation type), then the lanes are combined by halving
(lane i += lane i + 16, + 8, + 4, + 2, + 1) and lane 0 is divided by the integer volume (with
skipna: the count of non-NaN elements; NaN elements add nothing). A lane is never -0.0, so
lanes no element reached are skipped in the combination (or added as +0.0: the same bits),
and a skipped NaN may add +0.0. The average backward keeps its order: covering output cells in
ascending order, w innermost, then h, then d, each level from +0.0 (a level whose only term is
itself such a sum may take it as is: ``0.0 + term == term`` bit for bit).

How they go fast: work is handed out in ``nchunk`` contiguous ranges of work items, walked with
counters (:func:`_step`) instead of divisions, and scratch is allocated once per range; flat
indices are unsigned (see :mod:`~adaptive_pool.cpu.access`). The average forward has five
loop orders, all in the lane order: window by window (unit-stride rows placed at their lanes
of a 32-lane register accumulator by masked vector loads,
:func:`~adaptive_pool.cpu.lanes.rows_sum`; other strides element by element,
:func:`_run_add`), row by row for long windows,
columns side by side for windows one column wide (a ``32 x W`` accumulator), 8 planes side by
side for small windows (a ``32 x 8`` accumulator) and contiguous runs (global pooling,
(None, 1)). skipna is a compile-time flag (:data:`SKIPNA`): the plain kernels compile exactly
as without it. The average backward reduces along w once per covering output row and adds
whole rows (or writes each window's share over it, where every window is a run of memory:
:func:`avg_pool_backward_runs`; small planes of channels-last gradients up to 128 side by side:
:func:`avg_pool_backward_block`), and the max backward fills blocks of rows, both decoding and
encoding through unit-stride loops that LLVM vectorises
(:func:`~adaptive_pool.cpu.access.load_row` and ``store_row``). Into a result of its own, the
max backward zeroes a plane and writes only the elements that receive a gradient
(:func:`max_pool_backward_sparse`). The max forward reduces one
axis at a time, keeping the first position of each maximum as it goes (:func:`max_pool`), or
takes windows that are runs of memory one vectorised pass each (:func:`max_pool_runs`).
"""

from __future__ import annotations

from .avg_backward import (
    _avg_backward_chunk, _avg_backward_columns_chunk, _avg_backward_lanes_chunk,
    _avg_backward_runs_chunk, avg_pool_backward, avg_pool_backward_columns,
    avg_pool_backward_lanes, avg_pool_backward_runs,
)
from .avg_backward_blocks import _avg_backward_block_chunk, avg_pool_backward_block
from .avg_forward import (
    CHANNEL_BLOCK, _avg_channels_chunk, _avg_columns_chunk, _avg_direct_chunk,
    _avg_lanewise_chunk, _avg_rowwise_chunk, _avg_runs_chunk, avg_pool_channels,
    avg_pool_columns, avg_pool_direct, avg_pool_lanewise, avg_pool_rowwise, avg_pool_runs,
)
from .max_backward import (
    _first_bad_chunk, _max_backward_chunk, _sparse_chunk, first_bad_index, max_pool_backward,
    max_pool_backward_sparse, window_bounds,
)
from .max_forward import (
    _max_channels_chunk, _max_chunk, _max_runs_chunk, max_pool, max_pool_channels,
    max_pool_runs,
)
from .nan_counts import _count_chunk, count_valid
from .work import LANES, PLAIN, SKIPNA, SUM_LANES

__all__ = [
    "CHANNEL_BLOCK", "CHUNKS", "LANES", "PLAIN", "SKIPNA", "SUM_LANES", "avg_pool_backward",
    "avg_pool_backward_block", "avg_pool_backward_columns", "avg_pool_backward_lanes",
    "avg_pool_backward_runs", "avg_pool_channels", "avg_pool_columns", "avg_pool_direct",
    "avg_pool_lanewise", "avg_pool_rowwise", "avg_pool_runs", "count_valid", "first_bad_index",
    "max_pool", "max_pool_backward", "max_pool_backward_sparse", "max_pool_channels",
    "max_pool_runs", "window_bounds",
]


#: The chunk function of each kernel: ``chunk(0, *args, 1)`` is ``kernel(*args, 1)`` on the
#: calling thread, with the same result (a chunk returns its first flagged position where the
#: kernel returns the first of all), without the parallel launch (about 1 us) or a compile of
#: the kernel. Each kernel runs its chunk function for every chunk in one parallel region
#: (:func:`~adaptive_pool.cpu.calls.run_chunks`), but a final reduction of ``bad`` flags.
CHUNKS = {
    avg_pool_direct: _avg_direct_chunk,
    avg_pool_rowwise: _avg_rowwise_chunk,
    avg_pool_columns: _avg_columns_chunk,
    avg_pool_lanewise: _avg_lanewise_chunk,
    avg_pool_channels: _avg_channels_chunk,
    avg_pool_runs: _avg_runs_chunk,
    count_valid: _count_chunk,
    avg_pool_backward: _avg_backward_chunk,
    avg_pool_backward_lanes: _avg_backward_lanes_chunk,
    avg_pool_backward_block: _avg_backward_block_chunk,
    avg_pool_backward_runs: _avg_backward_runs_chunk,
    avg_pool_backward_columns: _avg_backward_columns_chunk,
    max_pool: _max_chunk,
    max_pool_runs: _max_runs_chunk,
    max_pool_channels: _max_channels_chunk,
    first_bad_index: _first_bad_chunk,
    max_pool_backward: _max_backward_chunk,
    max_pool_backward_sparse: _sparse_chunk,
}
