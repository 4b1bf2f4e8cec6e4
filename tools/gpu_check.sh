#!/usr/bin/env bash
# One run of every check that needs a real NVIDIA GPU, for a machine lent for a few minutes:
# versions, a smoke test with first-call (compile) times and PyTorch's backward determinism,
# where a small call's host time goes,
# the GPU benchmark against PyTorch CUDA, the CPU warm-up the oracles need, the real-GPU tests,
# the 2**31-element test, and kernel against call times (CUDA events, then Nsight Compute).
# Each stage has its own time limit (8 minutes in all) and the run goes on after a failure.
# Results (9 files) go under $OUT (default gpu-check/). Installs nothing but the wheels carried
# in .whl/: it uses the machine's python3 (numba, numba-cuda, torch, ml_dtypes, pytest-xdist)
# with this checkout on sys.path.
#
#   OUT=/tmp/gpu tools/gpu_check.sh            # or: BENCH_DTYPES=float32,bfloat16 tools/gpu_check.sh
#   STAGES="host bench tests" tools/gpu_check.sh  # only these stages
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-check}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/tmp/adaptive_pool-numba-cache}
JOBS=$(( $(nproc) < 8 ? $(nproc) : 8 ))
# Wheels carried in .whl/ go first on sys.path. On the H200 machines of 2026-12 a NumPy older
# than 2.5 is needed: their numba-cuda 0.30.4 registers np.row_stack, which NumPy 2.5 removed.
if compgen -G ".whl/*.whl" >/dev/null; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/adaptive_pool-wheels .whl/*.whl && PYTHONPATH="$PYTHONPATH:/tmp/adaptive_pool-wheels"
fi
stage() {  # stage NAME SECONDS CMD...: run with a limit, log to $OUT/NAME.txt, record the time
    local name=$1 limit=$2; shift 2
    if [ -n "${STAGES:-}" ] && [[ " $STAGES " != *" $name "* ]]; then return; fi
    local t0=$SECONDS
    timeout -k 10 "$limit" "$@" >"$OUT/$name.txt" 2>&1
    local rc=$?
    echo "stage $name: rc=$rc, $((SECONDS - t0)) s (limit $limit s)" | tee -a "$OUT/env.txt"
}

{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm,memory.total \
    --format=csv; nproc; grep -m1 'model name' /proc/cpuinfo
  $PY - <<'PY'
import importlib.metadata as md
import numpy
print("numpy imported from", numpy.__file__, numpy.__version__)
for p in ("numba", "numba-cuda", "llvmlite", "numpy", "ml_dtypes", "torch", "cupy-cuda13x",
          "cuda-bindings", "pytest", "pytest-xdist", "hypothesis"):
    try:
        print(p, md.version(p))
    except md.PackageNotFoundError:
        print(p, "absent")
PY
} >"$OUT/env.txt" 2>&1

# The CPU oracles' kernels compile in the background (niced, 4 cores left free) while the GPU
# is timed; both benchmark processes see the same machine, alternated.
nice -n 10 timeout -k 10 330 $PY -m adaptive_pool warmup --jobs $(( $(nproc) > 6 ? $(nproc) - 4 : 2 )) \
    >/tmp/adaptive_pool-warmup.txt 2>&1 &
WARMUP=$!
stage smoke 60 $PY tools/gpu_smoke.py
stage host 60 $PY tools/gpu_host.py
stage bench 120 $PY -m adaptive_pool bench --backends cuda --seed 20261201 \
    --dtypes "${BENCH_DTYPES:-float32}" --repeat 6 --block 3 --min-sample-ms 3 \
    --gap-ms 1 --json "$OUT/bench.json"
t0=$SECONDS; wait $WARMUP; echo "warmup: rc=$?, waited $((SECONDS - t0)) s more" >>"$OUT/env.txt"
tail -n 5 /tmp/adaptive_pool-warmup.txt >>"$OUT/env.txt"
stage tests 90 $PY -m pytest -q -n "$JOBS" -p no:cacheprovider -m "not slow" --tb=short \
    tests/test_cuda_backend.py tests/test_cuda_gpu.py tests/test_cuda_interop.py
stage slow 50 $PY -m pytest -q -p no:cacheprovider -m slow --tb=short tests/test_cuda_gpu.py
stage kernels 60 $PY tools/gpu_kernels.py
stage ncu 80 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
    $PY tools/gpu_kernels.py --once
