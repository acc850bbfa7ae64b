#!/usr/bin/env bash
# run_gpu.sh — the GPU verification run, one command on a machine with an
# NVIDIA GPU: builds the CUDA plugin and its virtual-wave64 twin, then runs
# the parity runner on cuda:0 in both, with wick's own tiled GEMM, the
# device checks (errors, events, pinned memory, >2^31 elements), the
# software MFMA of the virtual-wave64 build against a plain product, the
# event and pinned-memory tests, the collectives (wick-comm-checks,
# NCCL from the loader or from PyTorch's wheels), the custom-op and run-time kernel
# checks (wick-rtc-checks), compute-sanitizer memcheck over the quick
# parity cases, the attention parity cases with the portable attention path
# forced (a third plugin, built with ATTN_PORTABLE=1 in build-ap/), the
# Python bindings' GPU tests against PyTorch (when python3 has torch; pytest
# from $WHEELS, a folder of wheels, when it is not installed) and the model
# oracle (tools/llm_oracle.py: transformers' random-weight models of every
# architecture against wick on cuda:0, when transformers is installed).
# Writes summary.md to $OUT (default build/gpu-run) and the logs to
# $OUT/logs, or, with PACK=1, into one archive $OUT/logs.tgz refreshed
# after every step (for a machine that returns few files, and a run that
# may be stopped: what finished is in summary.md and the archive).
# Usage: tests/run_gpu.sh [--skip-sanitizer]   (on the device machine:
# PACK=1 OUT=$OUT tests/run_gpu.sh, so that two files come back)
# (COMMIT=<hash> names the commit where the tree travels without .git)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-run}
mkdir -p "$OUT"
if [ "${PACK:-0}" = 1 ]; then LOGS=$(mktemp -d); else LOGS="$OUT/logs"; mkdir -p "$LOGS"; fi
pack() { [ "${PACK:-0}" = 1 ] && tar czf "$OUT/logs.tgz.tmp" -C "$LOGS" . && mv "$OUT/logs.tgz.tmp" "$OUT/logs.tgz"; true; }
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d . )
arch=${CUDA_ARCHS:-${arch:-90}}
sum="$OUT/summary.md"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
{
  echo "### $(date -u +%Y-%m-%d) — $gpu"
  echo
  echo "commit ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}, plugin built for sm_$arch, command \`tests/run_gpu.sh\`"
  echo
  echo "| run | result |"
  echo "|---|---|"
} > "$sum"

make -j"$(nproc)" all tests build/wick-device-checks build/wick-rtc-checks build/wick-comm-checks build/wick-llm-oracle build/wick-mfma-check cuda cuda-wave64 CUDA_ARCHS="$arch" > "$LOGS/build.log" 2>&1 &
make -j"$(nproc)" BUILD=build-ap ATTN_PORTABLE=1 build-ap/libwick_cuda.so CUDA_ARCHS="$arch" > "$LOGS/build_ap.log" 2>&1 &
wait %1 || { tail -30 "$LOGS/build.log"; pack; exit 1; }
wait %2 || { tail -30 "$LOGS/build_ap.log"; pack; exit 1; }
status=0
run() {  # name, log, command...
  local name=$1 log=$2; shift 2
  local t0=$(date +%s%N)
  "$@" > "$LOGS/$log" 2>&1; local rc=$?
  local t1=$(date +%s%N)
  local line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$LOGS/$log" | tail -1)
  [ -n "$line" ] || line=$(grep -v '^ *$' "$LOGS/$log" | tail -1 | cut -c1-200)
  [ $rc -eq 0 ] || status=1
  local ms=$(( (t1 - t0) / 1000000 ))
  printf '| %s | %s (exit %d, %d.%03d s) |\n' "$name" "${line:-no summary line}" $rc $((ms / 1000)) $((ms % 1000)) >> "$sum"
  pack
  echo "$name: ${line:-no summary line} (exit $rc)"
}
run "\`wick-parity --device cuda:0\`" parity_cuda.log build/wick-parity --device cuda:0
run "\`wick-parity --device cuda:0\`, virtual wave64 plugin" parity_w64.log env WICK_CUDA_PLUGIN=build/libwick_cuda_w64.so build/wick-parity --device cuda:0
run "\`wick-mfma-check\` (compat.h's software MFMA, virtual wave64, lane by lane against a plain matrix product)" mfma_check.log build/wick-mfma-check
run "\`WICK_GEMM=tiled wick-parity --op matmul\`" parity_tiled.log env WICK_GEMM=tiled build/wick-parity --device cuda:0 --op matmul
run "\`WICK_GEMM=tiled wick-parity --op matmul\`, virtual wave64" parity_tiled_w64.log env WICK_GEMM=tiled WICK_CUDA_PLUGIN=build/libwick_cuda_w64.so build/wick-parity --device cuda:0 --op matmul
run "\`wick-device-checks --device cuda:0\` (errors, events, pinned memory, 2^31+ elements)" device_checks.log build/wick-device-checks --device cuda:0
run "\`wick-rtc-checks --device cuda:0\` (custom ops launching NVRTC kernels on the device's stream, the disk cache across processes)" rtc_checks.log build/wick-rtc-checks --device cuda:0
# NCCL: the loader's, else the one PyTorch's wheels carry
nccl=$(tools/find-nccl.sh); [ -n "$nccl" ] && export WICK_NCCL_LIB="$nccl"
run "\`wick-comm-checks\` (collectives through NCCL on every GPU, one thread each; one-rank-per-process and torchrun-style set-up)" comm_checks.log build/wick-comm-checks
run "\`wick-tests --filter events/\` and \`--filter host_memory/\` (cpu and every cuda device)" events_pinned.log sh -c 'build/wick-tests --filter events/ && build/wick-tests --filter host_memory/'
run "\`wick-parity --op attention\`, portable attention path forced (ATTN_PORTABLE=1)" parity_ap.log env WICK_CUDA_PLUGIN=build-ap/libwick_cuda.so build/wick-parity --device cuda:0 --op attention
if python3 -c 'import torch' 2>/dev/null; then
  pyrun() (   # a subshell: its cd stays inside
    if [ -n "${WHEELS:-}" ]; then  # python3 -m pip: the pip of the python3 that runs the tests
      python3 -m pytest --version >/dev/null 2>&1 || python3 -m pip install -q --no-index --find-links "$WHEELS" pytest || return 1
      python3 -c 'import ml_dtypes' 2>/dev/null || python3 -m pip install -q --no-index --find-links "$WHEELS" ml_dtypes || true
    fi
    python3 -m pip install -q --no-build-isolation --no-deps ./python || return 1
    cd /tmp && python3 -m pytest -q -rs "$OLDPWD/python/tests/test_gpu.py" "$OLDPWD/python/tests/test_gpu_oracle.py"
  )
  run "Python bindings: \`pytest python/tests/test_gpu.py test_gpu_oracle.py\` (against PyTorch on cuda:0, DLPack sharing; PyTorch as the NN ops' second oracle)" python_gpu.log pyrun
  if python3 -c 'import transformers' 2>/dev/null; then
    run "model oracle: \`tools/llm_oracle.py --device cuda:0\` (transformers' random-weight models, f32 and bf16)" llm_oracle.log python3 tools/llm_oracle.py --device cuda:0 --exe build/wick-llm-oracle --out "$LOGS/llm-oracle"
  fi
fi
if [ "${1:-}" != "--skip-sanitizer" ]; then
  run "\`compute-sanitizer --tool memcheck wick-parity --quick\`" memcheck.log compute-sanitizer --tool memcheck --error-exitcode 3 build/wick-parity --device cuda:0 --quick
  grep -E 'ERROR SUMMARY' "$LOGS/memcheck.log" | tail -1 | sed 's/^/memcheck: /' | tee -a "$sum"
fi
{ echo; echo "Coverage on cuda:0 (from the parity run):"; echo; echo '```'; sed -n '/overage/,$p' "$LOGS/parity_cuda.log" | head -80; echo '```'; } >> "$sum"
pack
cat "$sum"
exit $status
