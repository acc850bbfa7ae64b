#!/usr/bin/env bash
# run_tp.sh — issue 16's checks on a host with two or more NVIDIA GPUs, one
# command (docs/tensor-parallel.md):
#   checks  builds the library, the CUDA plugin (the GPUs' architecture) and
#           the drivers, then
#           - wick-comm-checks: the collectives with every GPU as a rank,
#             against sums made there;
#           - bench/comm_vs_torch.py: all_reduce bus bandwidth against
#             torch.distributed's (NCCL) in the same run, 8 KiB .. 256 MiB;
#           - tools/llm_oracle.py --tp N: each architecture's random-weight
#             model split over N GPUs against the same model on cuda:0
#             and against transformers, and the GGUF files' quantized
#             weights split by rows of blocks;
#   8b      bench/run_model.sh with MODELS=8b TP=N: a Llama-3 8B shape in
#           bf16 (random weights), decode and prefill on one GPU and split
#           over N (and split with WICK_COMM_P2P=0: NCCL for every
#           all_reduce), transformers timed beside them.
# Usage: bench/run_tp.sh [checks] [8b]   (default: both; TP=N, default all
# GPUs; TP_VARIANTS= to skip the NCCL-only run; LLM_TIMING=2: the 8B step's device time by part; OUT=dir for the
# logs and tables, default build/tp-run)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/tp-run}
mkdir -p "$OUT"
steps=${*:-checks 8b}
n=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
TP=${TP:-$n}
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
arch=${CUDA_ARCHS:-${arch:-90}}
export PYTHONUNBUFFERED=1
T0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
nccl=$(tools/find-nccl.sh); [ -n "$nccl" ] && export WICK_NCCL_LIB="$nccl"
stamp "$n GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); TP=$TP; NCCL: ${WICK_NCCL_LIB:-from the loader}"
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
status=0
case " $steps " in *" checks "*)
    make -j"$(nproc)" lib build/wick build/wick-comm-checks build/wick-comm-bench build/wick-llm-oracle cuda \
        CUDA_ARCHS="$arch" > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
    stamp "built"
    build/wick-comm-checks > "$OUT/comm_checks.log" 2>&1 || status=1
    stamp "wick-comm-checks: $(grep -E '^[0-9]+ passed' "$OUT/comm_checks.log" | tail -1)"
    python3 bench/comm_vs_torch.py --bench build/wick-comm-bench --ranks "$TP" --json "$OUT/comm.jsonl" \
        > "$OUT/comm_vs_torch.md" 2>&1 || status=1
    stamp "comm_vs_torch"; cat "$OUT/comm_vs_torch.md"
    python3 tools/llm_oracle.py --device cuda:0 --exe build/wick-llm-oracle --tp "$TP" --out "$OUT/llm-oracle" \
        > "$OUT/oracle.log" 2>&1 || status=1
    stamp "oracle --tp $TP"; tail -30 "$OUT/oracle.log" ;;
esac
case " $steps " in *" 8b "*)
    OUT="$OUT/model" MODELS=8b Q4=0 TP="$TP" TP_VARIANTS="${TP_VARIANTS-nccl:WICK_COMM_P2P=0}" LLM_TIMING="${LLM_TIMING:-1}" \
        bench/run_model.sh > "$OUT/run_model.log" 2>&1 || status=1
    stamp "8b"; tail -25 "$OUT/run_model.log" ;;
esac
exit $status
