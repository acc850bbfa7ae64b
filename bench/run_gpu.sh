#!/usr/bin/env bash
# run_gpu.sh — the GPU benchmark in one command, for a machine with an
# NVIDIA GPU, nvcc and PyTorch: builds the library, the CUDA plugin and the
# benchmark driver (make -j16 lib cuda build/wick-gpu-bench), then runs
# bench/gpu_vs_torch.py, then the convolution, pool, upsampling and sort
# rows (bench/conv_sort_vs_torch.py; CONV_SORT=0 skips them). JSON, the
# results sections and logs go to $OUT (default build/bench-gpu/).
#
#   bench/run_gpu.sh [gpu_vs_torch.py options, e.g. --case exp_f32,add_f32]
#   NCU_CASES=exp_f32,add_row_f32 bench/run_gpu.sh   # then profile those (ncu)
#
# The plugin is built for the GPU's own architecture only (read from
# nvidia-smi; CUDA_ARCHS=... in the environment overrides), which halves
# the build time of the default two-architecture build.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/bench-gpu}
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
set +e
python3 bench/gpu_vs_torch.py "$@" 2>&1 | tee "$OUT/run.log"   # --out defaults to $OUT
status=${PIPESTATUS[0]}

# the convolution, pool, upsampling and sort rows (bench/RESULTS-conv-sort.md),
# same GPU, same run; CONV_SORT=0 leaves them out
if [ "${CONV_SORT:-1}" != 0 ]; then
    if cc -O2 -Iinclude bench/conv_sort_bench.c build/libwick.a -lm -ldl -pthread -o build/conv-sort-bench \
            >> "$OUT/build.log" 2>&1; then
        python3 bench/conv_sort_vs_torch.py --bench build/conv-sort-bench --md "$OUT/conv-sort.md" 2>&1 \
            | tee "$OUT/conv-sort.log"
        [ "${PIPESTATUS[0]}" = 0 ] || status=1
    else
        echo "run_gpu.sh: conv_sort_bench.c did not build (see $OUT/build.log)"
        status=1
    fi
fi

# NCU_CASES=a,b,..: then profile those cases' kernels with Nsight Compute
# (clocks as found): duration and DRAM bytes read and written per kernel,
# to compare with the bytes an op needs. One driver run per case, one rep.
if [ -n "${NCU_CASES:-}" ]; then
    echo "profiling ${NCU_CASES} (ncu; in $OUT/ncu.csv)"
    : > "$OUT/ncu.csv"
    for c in ${NCU_CASES//,/ }; do
        echo "== case $c" >> "$OUT/ncu.csv"
        timeout 120 ncu --clock-control none --csv --print-units base \
            --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,launch__block_size,launch__registers_per_thread \
            build/wick-gpu-bench --case "$c" --reps 1 --warmup 0 >> "$OUT/ncu.csv" 2>&1 \
            || echo "ncu failed for $c" >> "$OUT/ncu.csv"
    done
fi
exit "$status"
