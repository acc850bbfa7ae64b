#!/usr/bin/env bash
# cpu_vs_llamacpp.sh — wick beside llama.cpp on the cpu: the same GGUF
# files, the same thread count, the two engines alternating in one run (so
# that a machine's drift hits both), prefill and decode tokens/s, the
# median of ROUNDS rounds, as a markdown table with the machine, the date
# and the command.
#
#   LLAMA_BIN=DIR bench/cpu_vs_llamacpp.sh [-t THREADS] [-r ROUNDS] [-p N] [-n N] FILE.gguf...
#
# LLAMA_BIN holds llama.cpp's llama-bench (and llama-quantize for
# --make): a plain cmake build of the tree that
# ../shared/tools/anchors/llamacpp-source.sh unpacks from PyPI's
# llama-cpp-python source distribution, e.g.
#   cmake -S SRC -B SRC/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
#     -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
#     -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
#   ninja -C SRC/build llama-bench llama-quantize
#
# llama.cpp: llama-bench -m FILE -t T -p N -n M -r 1 (pp N and tg M, its
# own defaults otherwise: f16 KV cache, no flash attention on the cpu).
# wick: build/wick-llm-bench FILE --device cpu --dtype f32 --prefill N --decode-at
# M/2 --steps M --reps 1 with WICK_NUM_THREADS=T (the default integer
# path of the quantized products, f32 activations and KV cache).
# Decode is llama-bench's tg M (the mean over M tokens from an empty
# cache) against wick's median step at M/2 positions (the middle of the
# same stretch).
#
#   bench/cpu_vs_llamacpp.sh --make SRC.gguf DIR TYPE...
# writes DIR/<name>-TYPE.gguf for each TYPE (Q4_0 Q4_K_M Q5_K_M Q6_K
# Q8_0 F16 BF16) with llama-quantize --allow-requantize, so both engines
# read the same quantized file.
set -uo pipefail
cd "$(dirname "$0")/.."
LB=${LLAMA_BIN:?set LLAMA_BIN to the folder of llama-bench}
if [ "${1:-}" = --make ]; then
  src=${2:?source gguf}; dir=${3:?output folder}; shift 3
  mkdir -p "$dir"
  base=$(basename "$src" .gguf)
  for t in "$@"; do
    out="$dir/$base-$t.gguf"
    [ -f "$out" ] || "$LB/llama-quantize" --allow-requantize "$src" "$out" "$t" > "$out.log" 2>&1 ||
      { echo "llama-quantize $t failed:"; tail -3 "$out.log"; }
    echo "$out"
  done
  exit 0
fi
T=2; R=3; P=512; N=128
while [ $# -gt 0 ]; do
  case "$1" in
    -t) T=$2; shift 2 ;;
    -r) R=$2; shift 2 ;;
    -p) P=$2; shift 2 ;;
    -n) N=$2; shift 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: LLAMA_BIN=DIR $0 [-t T] [-r R] [-p N] [-n N] FILE.gguf..."; exit 2; }
make -s build/wick-llm-bench >/dev/null || exit 1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
echo "### $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo
echo "- machine: $cpu, $(nproc) logical CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg) before the run"
names=$(for f in "$@"; do printf ' DIR/%s' "$(basename "$f")"; done)
echo "- command: \`LLAMA_BIN=... bench/cpu_vs_llamacpp.sh -t $T -r $R -p $P -n $N$names\`"
echo "- $R rounds, the engines alternating within each; medians"
echo
echo "| file | threads | llama.cpp pp$P | wick pp$P | wick / llama.cpp | llama.cpp tg$N | wick tg$N | wick / llama.cpp |"
echo "|---|---|---|---|---|---|---|---|"
for f in "$@"; do
  : > "$tmp/l"; : > "$tmp/w"
  for r in $(seq "$R"); do
    "$LB/llama-bench" -m "$f" -t "$T" -p "$P" -n "$N" -r 1 -o json > "$tmp/lj" 2> "$tmp/le" &&
      python3 - "$tmp/lj" >> "$tmp/l" <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))
pp = [r["avg_ts"] for r in rows if r.get("n_prompt", 0) > 0 and r.get("n_gen", 0) == 0]
tg = [r["avg_ts"] for r in rows if r.get("n_gen", 0) > 0 and r.get("n_prompt", 0) == 0]
print(pp[0] if pp else "nan", tg[0] if tg else "nan")
EOF
    WICK_NUM_THREADS=$T build/wick-llm-bench "$f" --device cpu --dtype f32 --prefill "$P" --decode-at $((N / 2)) --steps "$N" \
      --reps 1 > "$tmp/wj" 2> "$tmp/we" &&
      python3 - "$tmp/wj" >> "$tmp/w" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
pp = [r["tokens_per_s"] for r in rows if r["what"] == "prefill"]
tg = [r["tokens_per_s"] for r in rows if r["what"] == "decode"]
print(pp[0] if pp else "nan", tg[0] if tg else "nan")
EOF
  done
  python3 - "$f" "$T" "$tmp/l" "$tmp/w" <<'EOF'
import math, os, statistics, sys
f, t, lf, wf = sys.argv[1:]
def cols(p):
    rows = [l.split() for l in open(p) if l.strip()]
    return [[float(r[i]) for r in rows] for i in (0, 1)] if rows else [[math.nan], [math.nan]]
(lp, lt), (wp, wt) = cols(lf), cols(wf)
m = lambda v: statistics.median(v)
r = lambda a, b: f"{a / b:.2f}" if b and not math.isnan(a) and not math.isnan(b) else "—"
print(f"| {os.path.basename(f)} | {t} | {m(lp):.1f} | {m(wp):.1f} | {r(m(wp), m(lp))} | {m(lt):.1f} | {m(wt):.1f} | {r(m(wt), m(lt))} |")
EOF
done
