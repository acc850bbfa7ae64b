#!/usr/bin/env bash
# run_model.sh — the speed of whole language models on an NVIDIA GPU, wick
# against Hugging Face transformers in the same run (issue 14's speed rows).
# One command on a machine with nvcc, torch and transformers (no network):
#   1. builds the library, `wick`, build/wick-llm-bench and the CUDA plugin
#      (for the GPU's own architecture), while
#   2. bench/run_model.py builds random-weight models of two real shapes on
#      the GPU in bf16 (SmolLM2-135M; Llama-3 8B), times transformers on
#      them (prefill of 2048 tokens, greedy decode at context 512 and 4096,
#      bf16, batch 1) and writes each as a llama GGUF in bf16; it also
#      times the device's copy bandwidth (the roofline's denominator);
#   3. times wick on the same files (build/wick-llm-bench, bf16
#      activations), with the plugin's launch counter on
#      (WICK_GPU_COUNT_LAUNCHES=1) to count launches per decode token;
#   4. quantizes the 8B file with `wick quantize ... q4_k_m` (timed, on
#      the cpu) and times wick on that;
#   5. with TP=N (a machine with N GPUs), times the 8B bf16 file split over
#      cuda:0 .. cuda:N-1 too (label 8b-bf16-tpN, against 8b-bf16);
#   6. with ORACLE=1, runs tools/llm_oracle.py on cuda:0 (correctness;
#      with TP=N, each model split over N GPUs as well).
# Results: $OUT/RESULTS.md (the table), $OUT/results.tar (the JSON lines and
# logs). Models go to $WORK (default /tmp/wick-run-model; about 21 GB).
#   MODELS=smol,8b Q4=1 ORACLE=0 HF=1 (0: no transformers timing) [TP=2] [TP_VARIANTS=..] [LLM_TIMING=2] [SMOL_VARIANTS="name:VAR=value .."] [B8_VARIANTS=..] [Q4_VARIANTS=..]
#     [ORACLE_GGUF_ENV="VAR=value"] bench/run_model.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/run-model}
WORK=${WORK:-/tmp/wick-run-model}
MODELS=${MODELS:-smol,8b}
Q4=${Q4:-1}
ORACLE=${ORACLE:-0}
TP=${TP:-1}
LLM_TIMING=${LLM_TIMING:-1}   # 2: also the device time by part of a one-token pass (events; a little host time)
mkdir -p "$OUT" "$WORK"
rm -f "$WORK"/*.jsonl "$WORK"/*.err
export PYTHONUNBUFFERED=1
T0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
arch=${CUDA_ARCHS:-${arch:-90}}
commit=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}

stamp "build (sm_$arch) and transformers side start"
(make -j16 lib build/wick build/wick-llm-bench build/wick-llm-oracle cuda CUDA_ARCHS="$arch" > "$OUT/build.log" 2>&1
 echo $? > "$WORK/build.rc") &
bpid=$!
python3 bench/run_model.py make --out "$WORK" --models "$MODELS" $([ "${HF:-1}" = 0 ] && echo --no-hf) > "$WORK/hf.log" 2>&1 || { tail -20 "$WORK/hf.log"; }
stamp "transformers side done"
wait $bpid
if [ "$(cat "$WORK/build.rc")" != 0 ]; then tail -30 "$OUT/build.log"; exit 1; fi
stamp "build done"
# the host cost of one small op on this machine (bench/README.md)
make -s build/wick-launch-overhead > /dev/null 2>&1 && build/wick-launch-overhead --device cuda:0 > "$WORK/launch_overhead.log" 2>&1
cat "$WORK/launch_overhead.log" 2>/dev/null

# wick-llm-bench LABEL FILE [args] (WB_ENV: VAR=value settings for it): JSON
# lines to $WORK/wick-LABEL.jsonl, and
# the launches of one decode step (the difference of the plugin's two counts
# after the bench's marker line) as one more line
wbench() {
    local label=$1 file=$2; shift 2
    env WICK_GPU_COUNT_LAUNCHES=1 WICK_LLM_TIMING="$LLM_TIMING" ${WB_ENV:-} timeout 300 build/wick-llm-bench "$file" --label "$label" "$@" \
        > "$WORK/wick-$label.jsonl" 2> "$WORK/wick-$label.err"
    local rc=$?
    local n=$(awk '/one decode step/{f=1; next} f && /launches so far/{v[++k]=$NF} END{if (k>=2) print v[2]-v[1]}' "$WORK/wick-$label.err")
    [ -n "$n" ] && echo "{\"label\": \"$label\", \"what\": \"launches\", \"launches\": $n}" >> "$WORK/wick-$label.jsonl"
    local tl=$(grep -h "one-token forward passes" "$WORK/wick-$label.err" | head -1 | sed 's/^wick: //')   # one rank's line
    [ -n "$tl" ] && echo "{\"label\": \"$label\", \"what\": \"host_split\", \"text\": \"$tl\"}" >> "$WORK/wick-$label.jsonl"
    local tp=$(grep -h "device time of a timed pass by part" "$WORK/wick-$label.err" | head -1 | sed 's/^wick: //')
    [ -n "$tp" ] && echo "{\"label\": \"$label\", \"what\": \"device_parts\", \"text\": \"$tp\"}" >> "$WORK/wick-$label.jsonl"
    stamp "wick $label (exit $rc)"; cat "$WORK/wick-$label.jsonl"; [ $rc = 0 ] || tail -5 "$WORK/wick-$label.err"
}
case ",$MODELS," in *,smol,*)
    wbench smol-bf16 "$WORK/smol.gguf" --steps 128 --reps 5
    # SMOL_VARIANTS="nofuse:WICK_LLM_FUSE=0 wickmv:WICK_MATVEC=wick": the
    # same run under other settings (label smol-bf16-NAME), for A/B rows
    for v in ${SMOL_VARIANTS:-}; do
        WB_ENV="$(echo "${v#*:}" | tr , " ")" wbench "smol-bf16-${v%%:*}" "$WORK/smol.gguf" --steps 128 --reps 5
    done ;;
esac
case ",$MODELS," in *,8b,*)
    wbench 8b-bf16 "$WORK/8b.gguf" --steps 48 --reps 3
    for v in ${B8_VARIANTS:-}; do
        WB_ENV="${v#*:}" wbench "8b-bf16-${v%%:*}" "$WORK/8b.gguf" --steps 48 --reps 3
    done
    if [ "$TP" -gt 1 ]; then
        wbench "8b-bf16-tp$TP" "$WORK/8b.gguf" --steps 48 --reps 3 --tp "$TP"
        for v in ${TP_VARIANTS:-}; do   # TP_VARIANTS="nccl:WICK_COMM_P2P=0"
            WB_ENV="${v#*:}" wbench "8b-bf16-tp$TP-${v%%:*}" "$WORK/8b.gguf" --steps 48 --reps 3 --tp "$TP"
        done
    fi
    if [ "$Q4" = 1 ]; then
        t=$(date +%s)
        if timeout 400 build/wick quantize -q "$WORK/8b.gguf" "$WORK/8b-q4km.gguf" q4_k_m > "$WORK/quantize.log" 2>&1; then
            echo "{\"what\": \"quantize\", \"type\": \"q4_k_m\", \"seconds\": $(( $(date +%s) - t )), \"threads\": $(nproc), \"bytes\": $(stat -c %s "$WORK/8b-q4km.gguf")}" > "$WORK/quantize.jsonl"
            stamp "quantized"; cat "$WORK/quantize.jsonl"
            wbench 8b-q4km "$WORK/8b-q4km.gguf" --steps 48 --reps 3
            for v in ${Q4_VARIANTS:-}; do
                WB_ENV="${v#*:}" wbench "8b-q4km-${v%%:*}" "$WORK/8b-q4km.gguf" --steps 48 --reps 3
            done
        else
            stamp "quantize failed or took too long"; tail -5 "$WORK/quantize.log"
        fi
    fi ;;
esac
status=0
if [ "$ORACLE" = 1 ]; then
    python3 tools/llm_oracle.py --device cuda:0 --exe build/wick-llm-oracle --out "$WORK/llm-oracle" --tp "$TP" > "$WORK/oracle.log" 2>&1 || status=1
    stamp "oracle (exit $status)"; tail -25 "$WORK/oracle.log"
    if [ -n "${ORACLE_GGUF_ENV:-}" ]; then   # the GGUF checks again under other settings
        env $ORACLE_GGUF_ENV python3 tools/llm_oracle.py --device cuda:0 --exe build/wick-llm-oracle --only gguf \
            --out "$WORK/llm-oracle-gguf" > "$WORK/oracle_gguf.log" 2>&1 || status=1
        stamp "oracle GGUF checks with $ORACLE_GGUF_ENV (status $status)"; tail -8 "$WORK/oracle_gguf.log"
    fi
    cp "$WORK/oracle.log" "$OUT/" 2>/dev/null
fi
python3 bench/run_model.py report --out "$WORK" --commit "$commit" > "$OUT/RESULTS.md"
cat "$OUT/RESULTS.md"
grep -h quantize "$WORK"/quantize.jsonl 2>/dev/null
(cd "$WORK" && tar cf - *.jsonl *.err *.log llm-oracle* 2>/dev/null) > "$OUT/results.tar"
stamp "done"
exit $status
