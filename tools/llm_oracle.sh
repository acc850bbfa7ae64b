#!/usr/bin/env bash
# llm_oracle.sh — the model oracle on a machine with a GPU (the device
# machine): builds wick, its CUDA plugin and build/wick-llm-oracle, then runs
# tools/llm_oracle.py (transformers against wick on cuda:0, f32 and bf16,
# every architecture; and the bf16 speed of SmolLM2-135M's shape). Results
# (results.json, RESULTS.md) go to $OUT, or build/llm-oracle.
#   tools/llm_oracle.sh [extra arguments of llm_oracle.py]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 4)
make -j"$jobs" lib build/wick-llm-oracle >/dev/null
make -j"$jobs" cuda >/dev/null
out=${OUT:-build/llm-oracle}
python3 tools/llm_oracle.py --device cuda:0 --exe build/wick-llm-oracle --out "$out" --speed "$@"
