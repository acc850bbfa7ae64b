#!/usr/bin/env bash
# ab_trees.sh — two trees of wick on one NVIDIA GPU, side by side in one
# run: a reference tree (REF: a folder holding another commit's sources,
# e.g. `git archive --prefix=.dev-ref/ <commit> | tar -x`) and this one.
# For a change that must keep every result and every speed (a refactor):
#   1. builds both (library, wick, wick-llm-bench, wick-llm-oracle, the CUDA
#      plugin and its virtual-wave64 twin, for the GPU's architecture) while
#      bench/run_model.py makes the random-weight bf16 models of
#      bench/run_model.sh (SmolLM2-135M's and Llama-3 8B's shapes, GGUF);
#   2. quantizes the 8B file to q4_k_m (the reference's `wick quantize`);
#   3. times decode and prefill with build/wick-llm-bench, the two trees
#      alternating ROUNDS times per model (same files, same GPU), and
#      prints each side's decode tokens/s and the ratio new / ref;
#   4. compares every logit bit for bit (tools/llm_bitcheck.py: every
#      architecture's random transformers model, f32 and bf16, window
#      caches) in the CUDA plugin and in the virtual-wave64 one;
#   5. runs the model tests on the GPU (build/wick-tests --filter llm).
# Results: $OUT/ab.md (the tables), $OUT/ab.tar (JSON lines and logs).
#   REF=.dev-ref [MODELS=smol,8b] [Q4=1] [ROUNDS=2] [BITCHECK=1] [W64=1] [TESTS=1] bench/ab_trees.sh
# (W64=0: no virtual-wave64 builds or checks; TESTS=0: no model tests;
# MODELS= empty: no timings)
set -uo pipefail
cd "$(dirname "$0")/.."
REF=${REF:?REF=folder of the reference tree}
OUT=${OUT:-build/ab}
WORK=${WORK:-/tmp/wick-ab}
MODELS=${MODELS-smol,8b}
Q4=${Q4:-1}
ROUNDS=${ROUNDS:-2}
BITCHECK=${BITCHECK:-1}
W64=${W64:-1}
TESTS=${TESTS:-1}
mkdir -p "$OUT" "$WORK"
rm -f "$WORK"/*.jsonl
export PYTHONUNBUFFERED=1
T0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
arch=${CUDA_ARCHS:-${arch:-90}}
goals="lib build/wick build/wick-tests build/wick-llm-bench build/wick-llm-oracle cuda"
[ "$W64" = 1 ] && goals="$goals cuda-wave64"
jobs=$(( $(nproc) / 2 )); [ "$jobs" -ge 1 ] || jobs=1

stamp "builds (sm_$arch) and the models start"
(make -j"$jobs" $goals CUDA_ARCHS="$arch" W64_ARCHS="$arch" > "$WORK/build-new.log" 2>&1; echo $? > "$WORK/new.rc") &
(make -C "$REF" -j"$jobs" $goals CUDA_ARCHS="$arch" W64_ARCHS="$arch" > "$WORK/build-ref.log" 2>&1; echo $? > "$WORK/ref.rc") &
[ -n "$MODELS" ] && { python3 bench/run_model.py make --out "$WORK" --models "$MODELS" --no-hf > "$WORK/models.log" 2>&1 || tail -20 "$WORK/models.log"; }
stamp "models made"
wait
for side in new ref; do
  if [ "$(cat "$WORK/$side.rc")" != 0 ]; then tail -30 "$WORK/build-$side.log"; echo "the $side build failed"; exit 1; fi
done
stamp "builds done"
files=()
case ",$MODELS," in *,smol,*) files+=("smol:$WORK/smol.gguf:--steps 128 --reps 5") ;; esac
case ",$MODELS," in *,8b,*)
  files+=("8b-bf16:$WORK/8b.gguf:--steps 48 --reps 3")
  if [ "$Q4" = 1 ] && timeout 400 "$REF/build/wick" quantize -q "$WORK/8b.gguf" "$WORK/8b-q4km.gguf" q4_k_m > "$WORK/quantize.log" 2>&1; then
    stamp "quantized"
    files+=("8b-q4km:$WORK/8b-q4km.gguf:--steps 48 --reps 3")
  fi ;;
esac
for f in "${files[@]}"; do
  IFS=: read -r label path args <<< "$f"
  for r in $(seq "$ROUNDS"); do
    for side in ref new; do
      b=build; [ "$side" = ref ] && b="$REF/build"
      timeout 300 "$b/wick-llm-bench" "$path" --label "$label-$side-$r" $args >> "$WORK/$side.jsonl" 2> "$WORK/$label-$side-$r.err" \
        || { echo "$label $side round $r failed"; tail -3 "$WORK/$label-$side-$r.err"; }
    done
  done
  stamp "timed $label"
done
python3 - "$WORK" > "$OUT/ab.md" <<'EOF'
import json, os, statistics, sys
work = sys.argv[1]
rows = {}
for side in ("ref", "new"):
    p = os.path.join(work, side + ".jsonl")
    if not os.path.exists(p):
        continue
    for line in open(p):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("what") not in ("decode", "generate", "prefill"):
            continue
        model = r["label"].rsplit("-", 2)[0]
        key = (model, r["what"], r.get("context", r.get("tokens")))
        rows.setdefault(key, {}).setdefault(side, []).append(r.get("tokens_per_s"))
print("| model | run | ref tok/s (each round) | new tok/s (each round) | new / ref (medians) |")
print("|---|---|---|---|---|")
for (model, what, n), v in sorted(rows.items()):
    ref, new = v.get("ref", []), v.get("new", [])
    ratio = statistics.median(new) / statistics.median(ref) if ref and new and None not in ref + new else float("nan")
    fmt = lambda xs: ", ".join("%.1f" % x for x in xs if x is not None)
    print(f"| {model} | {what} {n} | {fmt(ref)} | {fmt(new)} | {ratio:.3f} |")
EOF
cat "$OUT/ab.md"
status=0
if [ "$BITCHECK" = 1 ]; then
  python3 tools/llm_bitcheck.py --ref "$REF/build" --new build --device cuda:0 --out "$WORK/bit" > "$OUT/bitcheck.md" 2> "$WORK/bitcheck.err" || status=1
  stamp "bitcheck, CUDA plugin (status $status)"; tail -2 "$OUT/bitcheck.md"
  # the virtual-wave64 plugins of both trees
  if [ "$W64" = 1 ]; then
    python3 tools/llm_bitcheck.py --ref "$REF/build" --new build --device cuda:0 --out "$WORK/bit64" \
      --ref-env "WICK_CUDA_PLUGIN=$PWD/$REF/build/libwick_cuda_w64.so" --new-env "WICK_CUDA_PLUGIN=$PWD/build/libwick_cuda_w64.so" \
      > "$OUT/bitcheck-w64.md" 2> "$WORK/bitcheck-w64.err" || status=1
    stamp "bitcheck, virtual-wave64 plugins (status $status)"; tail -2 "$OUT/bitcheck-w64.md"
  fi
fi
if [ "$TESTS" = 1 ]; then
  build/wick-tests --filter llm > "$WORK/tests-llm.log" 2>&1 || status=1
  stamp "wick-tests --filter llm: $(tail -1 "$WORK/tests-llm.log")"
  if [ "$W64" = 1 ]; then
    WICK_CUDA_PLUGIN=build/libwick_cuda_w64.so build/wick-tests --filter llm > "$WORK/tests-llm-w64.log" 2>&1 || status=1
    stamp "wick-tests --filter llm, virtual wave64: $(tail -1 "$WORK/tests-llm-w64.log")"
  fi
fi
(cd "$WORK" && tar cf - *.jsonl *.err *.log 2>/dev/null) > "$OUT/ab.tar"
stamp "done"
exit $status
