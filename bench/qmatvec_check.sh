#!/usr/bin/env bash
# qmatvec_check.sh — the quantized and dense matvec in one command on a
# machine with an NVIDIA GPU, nvcc and PyTorch: builds the library, the
# CUDA plugin and its virtual-wave64 twin, runs the parity cases of
# qmatmul (8-bit activations, the default, and WICK_QMATVEC=f32) and of the
# dense matvec (WICK_MATVEC=wick and =blas) in both plugins, then the quant rows of
# bench/gpu_vs_torch.py (m = 1 and 8; the prefill rows with --prefill)
# with the launch-knob sweep of gpu_bench.c (WICK_QMV_SWEEP) in the
# driver's log. Logs to $OUT (default build/qmatvec-check); a summary last.
# A file COMMIT in the root names the commit where the tree travels without
# .git.
#
#   bench/qmatvec_check.sh [--prefill] [--no-bench]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/qmatvec-check}
mkdir -p "$OUT"
export OUT PYTHONUNBUFFERED=1
prefill=0 bench=1
for a in "$@"; do
    case "$a" in --prefill) prefill=1 ;; --no-bench) bench=0 ;; *) echo "unknown option $a"; exit 2 ;; esac
done
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
arch=${CUDA_ARCHS:-${arch:-90}}
t0=$(date +%s)
if ! make -j"$(nproc)" all tests cuda cuda-wave64 build/wick-gpu-bench CUDA_ARCHS="$arch" W64_ARCHS="$arch" > "$OUT/build.log" 2>&1; then
    tail -30 "$OUT/build.log"
    echo "qmatvec_check.sh: the build failed"
    exit 1
fi
echo "built in $(( $(date +%s) - t0 )) s"
sum="$OUT/summary.txt"
: > "$sum"
status=0
check() {  # name, log, command...
    local name=$1 log=$2; shift 2
    "$@" > "$OUT/$log" 2>&1
    local rc=$?
    [ $rc -eq 0 ] || status=1
    local line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$OUT/$log" | tail -1)
    echo "$name: ${line:-$(tail -1 "$OUT/$log")} (exit $rc)" | tee -a "$sum"
    grep '^FAIL' "$OUT/$log" | head -5
}
W64=build/libwick_cuda_w64.so
check "qmatmul, q8 activations" parity_q8.log build/wick-parity --device cuda:0 --op qmatmul
if [ $bench = 1 ]; then
    cases=$(python3 bench/gpu_vs_torch.py --list | awk '$2=="quant"{print $1}' | grep -v "$([ $prefill = 1 ] && echo NONE || echo _m2048)" | paste -sd,)
    commit=$(cat COMMIT 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)
    WICK_QMV_SWEEP=${WICK_QMV_SWEEP:-0:0,f32,1:32,2:16,2:32,2:64,4:8,4:16,4:32,4:64} \
        python3 bench/gpu_vs_torch.py --case "$cases" --no-write --commit "$commit" --reps 30 --timeout 150 2>&1 |
        tee "$OUT/bench.log" | tail -45
    grep -h '^sweep' "$OUT"/*.log "$OUT"/*/*.log 2>/dev/null | sort -u > "$OUT/sweep.txt"
fi
check "qmatmul, WICK_QMATVEC=f32" parity_f32.log env WICK_QMATVEC=f32 build/wick-parity --device cuda:0 --op qmatmul
check "matmul, WICK_MATVEC=wick" parity_mv.log env WICK_MATVEC=wick build/wick-parity --device cuda:0 --op matmul
check "matmul, WICK_MATVEC=blas" parity_blas.log env WICK_MATVEC=blas build/wick-parity --device cuda:0 --op matmul
check "qmatmul, q8, virtual wave64" parity_q8_w64.log env WICK_CUDA_PLUGIN=$W64 build/wick-parity --device cuda:0 --op qmatmul
check "qmatmul, f32, virtual wave64" parity_f32_w64.log env WICK_CUDA_PLUGIN=$W64 WICK_QMATVEC=f32 build/wick-parity --device cuda:0 --op qmatmul
check "matmul, WICK_MATVEC=wick, virtual wave64" parity_mv_w64.log env WICK_CUDA_PLUGIN=$W64 WICK_MATVEC=wick build/wick-parity --device cuda:0 --op matmul
check "dequantize + qgather" parity_deq.log sh -c 'build/wick-parity --device cuda:0 --op dequantize && build/wick-parity --device cuda:0 --op qgather'
cat "$sum"
exit $status
