#!/usr/bin/env bash
# tune_stream.sh — a tuning sweep for the GPU's streaming kernels (one
# command on a machine with an NVIDIA GPU and nvcc). Builds the CUDA
# plugin once per variant of the compile-time knobs (src/gpu/gpu_internal.h:
# WK_GPU_STREAM_WIDE_U, WK_GPU_STREAM_NARROW_BYTES, WK_GPU_STREAM_ELEMS:
# units per thread; WK_GPU_HW_BF16: the hardware's bf16 rounding;
# src/gpu/copy.hip: CP_TILE, CP_ROWS: the transpose tile; src/gpu/index.hip:
# IX_ROWS_K: units per thread of index_select's row copy, whose block is
# the stream block; src/gpu/reduce.hip:
# RED_ROWS_U, RED_ROWS_U1: vectors in flight per thread of the rows
# reductions), then times a
# few cases with the benchmark's C driver under several block sizes
# (WICK_GPU_STREAM_BLOCK). Prints one line per (variant, block, case): wick's
# times in ms from the driver's JSON. No PyTorch: variants are compared
# with each other, in one run.
#
#   bench/tune_stream.sh [cases] [blocks]
#   e.g. bench/tune_stream.sh exp_f32,add_bf16 "128 256"
set -uo pipefail
cd "$(dirname "$0")/.."
cases=${1:-exp_f32,affine_f32,add_f32,exp_bf16,silu_bf16,affine_bf16,add_bf16,cast_f32_bf16,transpose_copy_f32}
blocks=${2:-128 256 512}
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
arch=${CUDA_ARCHS:-${arch:-90}}
# name:flag,flag,... (VARIANTS in the environment replaces the list)
VARIANTS=${VARIANTS:-"base:-DWK_GPU_STREAM_WIDE_U=1 wide2:-DWK_GPU_STREAM_WIDE_U=2 narrow32:-DWK_GPU_STREAM_NARROW_BYTES=32 swbf16:-DWK_GPU_HW_BF16=0 t64:-DCP_TILE=64,-DCP_ROWS=4"}
make -j16 lib build/wick-gpu-bench > /tmp/tune-build.log 2>&1 || { tail -20 /tmp/tune-build.log; exit 1; }
for v in $VARIANTS; do
    name=${v%%:*}; flags=${v#*:}
    make -j16 BUILD=build-tune-$name cuda CUDA_ARCHS="$arch" GPU_OPT="-O3 ${flags//,/ }" > /tmp/tune-$name.log 2>&1 &
done
wait
for v in $VARIANTS; do
    name=${v%%:*}
    [ -f build-tune-$name/libwick_cuda.so ] || { echo "$name: build failed"; tail -5 /tmp/tune-$name.log; continue; }
    for b in $blocks; do
        WICK_CUDA_PLUGIN=build-tune-$name/libwick_cuda.so WICK_GPU_STREAM_BLOCK=$b \
            build/wick-gpu-bench --device cuda:0 --case "$cases" --reps 30 --warmup 3 2>/dev/null |
        python3 -c '
import json, sys
for line in sys.stdin:
    try: r = json.loads(line)
    except ValueError: continue
    ms = " ".join("%s=%.4f" % (k, v) for k, v in r.items() if k.endswith("_ms") and isinstance(v, (int, float)))
    print("%-10s block=%-4s %-20s %s" % (sys.argv[1], sys.argv[2], r.get("case", "?"), ms))
' "$name" "$b"
    done
done
