#!/usr/bin/env bash
# run_engine.sh — the batched engine on an NVIDIA GPU, one command on a
# machine with nvcc and torch (no network):
#   1. builds the library, the test and parity runners, wick-engine-bench
#      and the CUDA plugin (with W64=1 its virtual-wave64 twin too) for the
#      GPU's architecture, while bench/run_model.py makes random-weight
#      bf16 llama GGUF files of real shapes (MODELS: smol = SmolLM2-135M,
#      8b = Llama-3 8B);
#   2. tests on cuda:0 in each plugin: wick-tests --filter llm_batch,
#      engine, paged (batches and the engine against the references and
#      each sequence alone), wick-parity --op paged_attention (the cpu
#      against the GPU);
#   3. times build/wick-engine-bench on each file: B = BATCHES sequences of
#      PROMPT random tokens, GEN generated each (llama-batched-bench's
#      workload), and the prefix-cache case (PREFIX tokens shared by 64
#      users) on the largest file;
#   each test and timing once per paged-attention kernel in PAGED
#   (WICK_GPU_PAGED: portable = the FMA kernel, mma = the matrix-core one),
#   and bench/paged_bench.c (the attention alone) in each.
# Results: $OUT/engine.md (the tables), $OUT/engine.jsonl, $OUT/logs.tar.
#   [MODELS=smol,8b] [BATCHES=1,8,32,64] [PROMPT=512] [GEN=128] [PREFIX=2000] [W64=1] [TESTS=1]
#   [PAGED=portable,mma] [TEST_PAGED=$PAGED] bench/run_engine.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/run-engine}
WORK=${WORK:-/tmp/wick-run-engine}
MODELS=${MODELS-smol,8b}
BATCHES=${BATCHES:-1,8,32,64}
PROMPT=${PROMPT:-512}
GEN=${GEN:-128}
PREFIX=${PREFIX:-2000}
W64=${W64:-1}
TESTS=${TESTS:-1}
PAGED=${PAGED:-portable,mma}
TEST_PAGED=${TEST_PAGED:-$PAGED}
IFS=, read -r -a modes <<< "$PAGED"
IFS=, read -r -a test_modes <<< "$TEST_PAGED"
mkdir -p "$OUT" "$WORK/logs"
LOGS="$WORK/logs"
export PYTHONUNBUFFERED=1
T0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
arch=${CUDA_ARCHS:-${arch:-90}}
goals="lib build/wick-tests build/wick-parity build/wick-engine-bench cuda"
[ "$W64" = 1 ] && goals="$goals cuda-wave64"
# the timings so far as a table ($OUT/engine-bench.md; after every run, so
# that a run stopped by a time limit keeps what it measured)
table() {
python3 - "$OUT/engine.jsonl" > "$OUT/engine-bench.md" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
print("| file | B | prompt | gen | prefill tok/s | decode tok/s (aggregate) | TTFT median / max ms | prefix-cached tokens | steps | complete |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['label']} | {r['batch']} | {r['prompt']} | {r['gen']} | {r['prefill_tok_s']:.0f} | {r['decode_tok_s']:.0f} | "
          f"{r['ttft_median_ms']:.0f} / {r['ttft_max_ms']:.0f} | {r['cached_tokens']} | {r['steps']} | {r['all_complete']} |")
EOF
}
finish() { table; tar cf "$OUT/logs.tar" -C "$WORK" logs; }
trap finish EXIT

stamp "build (sm_$arch) and the models start"
(make -j"$(nproc)" $goals CUDA_ARCHS="$arch" W64_ARCHS="$arch" > "$LOGS/build.log" 2>&1; echo $? > "$WORK/build.rc") &
bpid=$!
[ -n "$MODELS" ] && { python3 bench/run_model.py make --out "$WORK" --models "$MODELS" --no-hf > "$LOGS/models.log" 2>&1 || tail -20 "$LOGS/models.log"; }
stamp "models made"
wait $bpid
if [ "$(cat "$WORK/build.rc")" != 0 ]; then tail -30 "$LOGS/build.log"; echo "the build failed"; exit 1; fi
cc -O2 -Iinclude bench/paged_bench.c build/libwick.a -lm -ldl -pthread -o build/paged-bench >> "$LOGS/build.log" 2>&1 \
  || echo "paged_bench did not build"
stamp "build done"

{
  echo "### $(date -u +%Y-%m-%d) — $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  echo
  echo "commit ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}, \`MODELS=$MODELS BATCHES=$BATCHES PROMPT=$PROMPT GEN=$GEN bench/run_engine.sh\`"
  echo
} > "$OUT/engine.md"

plugins=("CUDA:")
[ "$W64" = 1 ] && plugins+=("virtual wave64:build/libwick_cuda_w64.so")
if [ "$TESTS" = 1 ]; then
  echo "| tests | plugin | result |" >> "$OUT/engine.md"
  echo "|---|---|---|" >> "$OUT/engine.md"
  for pl in "${plugins[@]}"; do
    name=${pl%%:*}; lib=${pl#*:}
    for m in "${test_modes[@]}"; do
      tag=${lib:+w64-}$m
      for f in llm_batch engine paged; do
        env ${lib:+WICK_CUDA_PLUGIN=$lib} WICK_GPU_PAGED=$m timeout 300 build/wick-tests --filter "$f" > "$LOGS/tests-$f-$tag.log" 2>&1
        echo "| \`wick-tests --filter $f\` | $name, $m | $(tail -1 "$LOGS/tests-$f-$tag.log") |" >> "$OUT/engine.md"
      done
      env ${lib:+WICK_CUDA_PLUGIN=$lib} WICK_GPU_PAGED=$m timeout 300 build/wick-parity --device cuda:0 --op paged_attention > "$LOGS/parity-$tag.log" 2>&1
      echo "| \`wick-parity --op paged_attention\` | $name, $m | $(tail -1 "$LOGS/parity-$tag.log") |" >> "$OUT/engine.md"
      grep -h "^FAIL" "$LOGS"/tests-*-"$tag".log "$LOGS/parity-$tag.log" 2>/dev/null | head -5
    done
  done
  echo >> "$OUT/engine.md"
  stamp "tests done"
fi

if [ -x build/paged-bench ]; then
  for m in "${modes[@]}"; do
    { echo; echo "paged_bench, WICK_GPU_PAGED=$m:"; echo '```'; WICK_GPU_PAGED=$m timeout 120 build/paged-bench cuda:0 2>&1; echo '```'; } >> "$OUT/paged-bench.md"
  done
  stamp "paged_bench done"
fi

files=()
case ",$MODELS," in *,smol,*) files+=("smol:$WORK/smol.gguf") ;; esac
case ",$MODELS," in *,8b,*) files+=("8b-bf16:$WORK/8b.gguf") ;; esac
: > "$OUT/engine.jsonl"
last=""
for f in "${files[@]}"; do
  label=${f%%:*}; path=${f#*:}
  [ -f "$path" ] || { echo "no $path"; continue; }
  for m in "${modes[@]}"; do
    WICK_GPU_PAGED=$m timeout 400 build/wick-engine-bench "$path" --batch "$BATCHES" --prompt "$PROMPT" --gen "$GEN" --label "$label-$m" \
      >> "$OUT/engine.jsonl" 2> "$LOGS/bench-$label-$m.err" || { echo "$label $m failed"; tail -3 "$LOGS/bench-$label-$m.err"; }
  done
  table
  stamp "timed $label"
  last=$path; lastlabel=$label
done
if [ -n "$last" ] && [ "$PREFIX" -gt 0 ]; then
  WICK_GPU_PAGED=${modes[-1]} timeout 300 build/wick-engine-bench "$last" --batch 64 --shared-prefix "$PREFIX" --gen 16 --label "$lastlabel-prefix" \
    >> "$OUT/engine.jsonl" 2> "$LOGS/bench-prefix.err" || { echo "prefix case failed"; tail -3 "$LOGS/bench-prefix.err"; }
  WICK_GPU_PAGED=${modes[-1]} timeout 300 build/wick-engine-bench "$last" --batch 64 --prompt $((PREFIX + 32)) --gen 16 --label "$lastlabel-noprefix" \
    >> "$OUT/engine.jsonl" 2> "$LOGS/bench-noprefix.err" || true
  stamp "prefix case"
fi
cat "$OUT/engine-bench.md" >> "$OUT/engine.md"
[ -f "$OUT/paged-bench.md" ] && cat "$OUT/paged-bench.md" >> "$OUT/engine.md"
cat "$OUT/engine.md"
stamp "done"
