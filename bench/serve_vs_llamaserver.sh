#!/usr/bin/env bash
# serve_vs_llamaserver.sh — `wick serve` beside llama.cpp's `llama-server` on
# one GGUF file: for each client count (1 8 32 64 128 by default) it starts
# each server in turn on 127.0.0.1 (the order alternating from one count to
# the next, so that drift in the machine's state does not favour one side),
# runs bench/loadgen.py against it (closed loop at that many clients,
# streamed requests of PROMPT tokens forced to GEN generated tokens), stops
# it, and writes a markdown table with the device, date, commit and command.
#
#   bench/serve_vs_llamaserver.sh MODEL.gguf
#   DEVICE=cuda:0 LLAMA_SERVER=/path/to/llama-server bench/serve_vs_llamaserver.sh MODEL.gguf
#   CLIENTS="1 4" PROMPT=128 GEN=32 REQS=8 bench/serve_vs_llamaserver.sh MODEL.gguf   # a short run
#
# Variables (defaults in brackets):
#   WICK [build/wick]           the wick command
#   LLAMA_SERVER [llama-server in PATH]   without it, wick alone is measured (said in the table)
#   DEVICE [cpu]                wick's --device; any other than cpu gives llama-server -ngl 999
#   CLIENTS ["1 8 32 64 128"]   client counts; each server gets as many sequences
#                               (wick --max-seqs, llama-server --parallel)
#   PROMPT [512] GEN [256]      prompt tokens, generated tokens (ignore_eos)
#   REQS [4 x clients, at least 8]  requests per count (after one warm-up request)
#   DURATION [300]              seconds of sending per count at most
#   ENDPOINT [completions]      or chat
#   THREADS [all cores]         cpu threads of both servers (WICK_NUM_THREADS, llama-server -t)
#   ARGS_WICK, ARGS_LLAMA       more options for either server
#   OUT [a fresh folder under $TMPDIR]   logs, JSON lines and RESULTS.md
#   PORT [18480]                wick on PORT, llama-server on PORT+1
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL=${1:?usage: bench/serve_vs_llamaserver.sh MODEL.gguf}
[ -f "$MODEL" ] || { echo "no such file: $MODEL" >&2; exit 1; }
WICK=${WICK:-build/wick}
LLAMA_SERVER=${LLAMA_SERVER:-$(command -v llama-server || true)}
DEVICE=${DEVICE:-cpu}
CLIENTS=${CLIENTS:-"1 8 32 64 128"}
PROMPT=${PROMPT:-512}
GEN=${GEN:-256}
DURATION=${DURATION:-300}
ENDPOINT=${ENDPOINT:-completions}
THREADS=${THREADS:-$(nproc)}
PORT=${PORT:-18480}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/serve-vs-llama.XXXXXX")}
mkdir -p "$OUT"
CTX=$(( (PROMPT * 3 / 2 + GEN * 3 / 2 + 64 + 255) / 256 * 256 ))   # room for a uniform draw too
PYTHON=${PYTHON:-python3}

servers="wick"
if [ -n "$LLAMA_SERVER" ] && [ -x "$LLAMA_SERVER" ]; then servers="wick llama"; else LLAMA_SERVER=""; fi
[ -x "$WICK" ] || { echo "$WICK is not built (make)" >&2; exit 1; }

pid=""
stop_server() {
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
}
trap stop_server EXIT
trap 'stop_server; exit 130' INT TERM   # stop the run, not only the server

start_server() {   # $1: wick|llama, $2: clients
  local which=$1 n=$2 log="$OUT/$1-$2.log"
  if [ "$which" = wick ]; then
    # shellcheck disable=SC2086
    WICK_NUM_THREADS=$THREADS "$WICK" serve "$MODEL" --host 127.0.0.1 --port "$PORT" --device "$DEVICE" \
      --max-seqs "$n" --max-queue $(( 4 * n + 16 )) --ctx "$CTX" -q ${ARGS_WICK:-} > "$log" 2>&1 &
  else
    local ngl=0
    [ "$DEVICE" = cpu ] || ngl=999
    # shellcheck disable=SC2086
    "$LLAMA_SERVER" -m "$MODEL" --host 127.0.0.1 --port $(( PORT + 1 )) --parallel "$n" \
      --ctx-size $(( CTX * n )) -ngl "$ngl" -t "$THREADS" --no-webui ${ARGS_LLAMA:-} > "$log" 2>&1 &
  fi
  pid=$!
}

port_of() { [ "$1" = wick ] && echo "$PORT" || echo $(( PORT + 1 )); }

# the command as typed, with the variables that were set
cmdline="$0 $*"
for v in DEVICE CLIENTS PROMPT GEN REQS DURATION ENDPOINT THREADS ARGS_WICK ARGS_LLAMA; do
  val=$(printenv "$v" || true)
  [ -n "$val" ] && cmdline="$v=\"$val\" $cmdline"
done
echo "results and logs: $OUT"
i=0
for n in $CLIENTS; do
  order=$servers
  if [ "$servers" = "wick llama" ] && [ $(( i % 2 )) -eq 1 ]; then order="llama wick"; fi
  reqs=${REQS:-$(( 4 * n > 8 ? 4 * n : 8 ))}
  for s in $order; do
    echo "== $s, $n clients, $reqs requests"
    start_server "$s" "$n"
    if ! nice -n 5 "$PYTHON" bench/loadgen.py --url "http://127.0.0.1:$(port_of "$s")" --endpoint "$ENDPOINT" \
         --clients "$n" --requests "$reqs" --prompt-tokens "$PROMPT" --output-tokens "$GEN" \
         --duration "$DURATION" --wait-ready 600 --timeout 900 --label "$s" --jsonl "$OUT/$s.jsonl"; then
      echo "($s at $n clients: some requests failed; see $OUT/$s-$n.log)"
    fi
    stop_server
  done
  i=$(( i + 1 ))
done

# the device's name: the GPU's, else the cpu's
dev_name=$DEVICE
if [ "$DEVICE" != cpu ] && command -v nvidia-smi >/dev/null; then
  dev_name="$DEVICE: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
elif [ "$DEVICE" = cpu ]; then
  dev_name="cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores, $THREADS threads"
fi
commit=$(git rev-parse --short HEAD 2>/dev/null || echo "?")
git diff --quiet 2>/dev/null || commit="$commit (uncommitted changes)"

"$PYTHON" - "$OUT" "$servers" "$dev_name" "$commit" "$cmdline" "$MODEL" "$PROMPT" "$GEN" "$ENDPOINT" "${LLAMA_SERVER:-}" <<'EOF' | tee "$OUT/RESULTS.md"
import json, os, sys, time
out, servers, dev, commit, cmd, model, prompt, gen, endpoint, llama = sys.argv[1:11]
rows = {}
for s in servers.split():
    p = os.path.join(out, s + ".jsonl")
    if not os.path.exists(p):
        continue
    for line in open(p):
        d = json.loads(line)
        if d.get("type") == "summary":
            rows[(d["clients"], s)] = d
def f(v, k="p50"):
    return "-" if not v else "%.0f" % v[k]
print("### wick serve and llama-server, %s\n" % os.path.basename(model))
print("- date: %s" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
print("- device: %s" % dev)
print("- commit: %s" % commit)
print("- command: `%s`" % cmd)
print("- workload: closed loop, %s, prompts of %s tokens, %s generated (ignore_eos), greedy, streamed" % (endpoint, prompt, gen))
if not llama:
    print("- llama-server: not found (LLAMA_SERVER), wick alone")
print()
print("| clients | server | ok / sent | output tok/s | req/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms | E2E p50 s | E2E p99 s | wick / llama output tok/s |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for n in sorted({k[0] for k in rows}):
    w, l = rows.get((n, "wick")), rows.get((n, "llama"))
    ratio = "%.2f" % (w["output_tok_per_s"] / l["output_tok_per_s"]) if w and l and l["output_tok_per_s"] else "-"
    for s, d in (("wick", w), ("llama-server", l)):
        if not d:
            continue
        e2e = d["e2e_ms"]
        print("| %d | %s | %d / %d | %.1f | %.2f | %s | %s | %s | %s | %s | %s | %s |" % (
            n, s, d["ok"], d["requests"], d["output_tok_per_s"] or 0, d["req_per_s"] or 0,
            f(d["ttft_ms"]), f(d["ttft_ms"], "p99"), f(d["itl_ms"]), f(d["itl_ms"], "p99"),
            "-" if not e2e else "%.2f" % (e2e["p50"] / 1e3), "-" if not e2e else "%.2f" % (e2e["p99"] / 1e3),
            ratio if s == "wick" else ""))
EOF
