#!/usr/bin/env bash
# run_gpu.sh — the GPU benchmark in one command, for a machine with an
# NVIDIA GPU, nvcc and PyTorch: builds the library, the CUDA plugin and the
# benchmark driver (make -j16 lib cuda build/wick-gpu-bench), then runs
# bench/gpu_vs_torch.py. JSON, the results section and logs go to $OUT
# (default bench-out/); the table is printed last.
#
#   bench/run_gpu.sh [gpu_vs_torch.py options, e.g. --case exp_f32,add_f32]
#
# The plugin is built for the GPU's own architecture only (read from
# nvidia-smi; CUDA_ARCHS=... in the environment overrides), which halves
# the build time of the default two-architecture build.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
export OUT PYTHONUNBUFFERED=1

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu \
    --format=csv > "$OUT/nvidia-smi.txt" 2>&1 || true
if [ -z "${CUDA_ARCHS:-}" ]; then
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .' || true)
    case "$cap" in [0-9][0-9]|[0-9][0-9][0-9]) CUDA_ARCHS=$cap ;; *) CUDA_ARCHS="80 90" ;; esac
fi
echo "building (CUDA_ARCHS=$CUDA_ARCHS; log in $OUT/build.log)"
start=$(date +%s)
if ! make -j16 lib cuda build/wick-gpu-bench CUDA_ARCHS="$CUDA_ARCHS" > "$OUT/build.log" 2>&1; then
    tail -40 "$OUT/build.log"
    echo "run_gpu.sh: the build failed"
    exit 1
fi
echo "built in $(( $(date +%s) - start )) s"
python3 bench/gpu_vs_torch.py --out "$OUT" "$@" 2>&1 | tee "$OUT/run.log"
exit "${PIPESTATUS[0]}"
