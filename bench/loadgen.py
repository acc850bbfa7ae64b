#!/usr/bin/env python3
"""loadgen.py — a load generator for OpenAI-compatible servers on this
machine (`wick serve`, llama.cpp's `llama-server`): streamed completions or
chat completions, open loop (Poisson arrivals at a rate) or closed loop (a
fixed number of clients), prompts of a set token length and replies forced
to a set length; it measures time to first token (TTFT), the gaps between
streamed chunks (ITL), each request's end-to-end time, and the aggregate
output tokens/s, prints percentiles and writes JSON lines.

Standard library only (Python 3.8+), so it runs on a bare machine. Traffic
goes to 127.0.0.1 / localhost / ::1 only; every loop is bounded in count and
in time (--requests, --duration, --timeout).

    python3 bench/loadgen.py --url http://127.0.0.1:8080 --clients 8 --requests 64
    python3 bench/loadgen.py --rate 2.5 --duration 60 --prompt-tokens 512 --output-tokens 256 --jsonl out.jsonl

How lengths are forced (bench/README.md says more):
  - replies: `max_tokens` with `ignore_eos: true` (wick's and vLLM's field;
    llama-server takes the same field, and `n_predict`, sent too when the
    server is llama-server). The reply's `usage.completion_tokens` is
    checked against the length asked for.
  - prompts: neither server needs a tokenizer here. Prompts are made of
    common English words (one token each in the usual BPE vocabularies)
    after a per-request number (so no two prompts share a prefix beyond
    the chat template), and the word count is calibrated by a few probe
    requests (max_tokens 1) whose `usage.prompt_tokens` says how many
    tokens the server saw. Each request's own prompt count is recorded.
"""
import argparse
import http.client
import json
import math
import os
import random
import socket
import sys
import threading
import time
import urllib.parse

WORDS = (
    "the of and to in is it you that he was for on are with as his they be at one have this from or had by "
    "word but what some we can out other were all there when up use your how said an each she which do their "
    "time if will way about many then them write would like so these her long make thing see him two has look "
    "more day could go come did number sound no most people my over know water than call first who may down "
    "side been now find any new work part take get place made live where after back little only round man year "
    "came show every good me give our under name very through just form sentence great think say help low line "
    "differ turn cause much mean before move right boy old too same tell does set three want air well also play "
    "small end put home read hand port large spell add even land here must big high such follow act why ask men "
    "change went light kind off need house picture try us again animal point mother world near build self earth "
    "father head stand own page should country found answer school grow study still learn plant cover food sun "
    "four between state keep eye never last let thought city tree cross farm hard start might story saw far sea "
    "draw left late run while press close night real life few north open seem together next white children begin "
    "got walk example ease paper group always music those both mark often letter until mile river car feet care "
    "second book carry took science eat room friend began idea fish mountain stop once base hear horse cut sure "
    "watch color face wood main enough plain girl usual young ready above ever red list though feel talk bird soon"
).split()

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}


def pct(sorted_vals, p):
    """The p-th percentile (0..100) of sorted values, linear between ranks."""
    if not sorted_vals:
        return None
    if len(sorted_vals) == 1:
        return sorted_vals[0]
    k = (len(sorted_vals) - 1) * p / 100.0
    lo = math.floor(k)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (k - lo)


class Server:
    """Where the server is and what kind it is; one connection per call."""

    def __init__(self, url, api_key=None, timeout=600.0):
        u = urllib.parse.urlparse(url)
        if u.scheme != "http" or u.hostname not in LOCAL_HOSTS:
            raise SystemExit("loadgen: only http://127.0.0.1, localhost or [::1] (got %s)" % url)
        self.host, self.port = u.hostname, u.port or 80
        self.prefix = u.path.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.kind = "unknown"
        self.model = None

    def conn(self, timeout=None):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout or self.timeout)

    def headers(self):
        h = {"Content-Type": "application/json"}
        if self.api_key:
            h["Authorization"] = "Bearer " + self.api_key
        return h

    def get_json(self, path, timeout=30.0):
        c = self.conn(timeout)
        try:
            c.request("GET", self.prefix + path, headers=self.headers())
            r = c.getresponse()
            body = r.read()
            return r.status, (json.loads(body) if body else None)
        finally:
            c.close()

    def post_json(self, path, obj, timeout=None):
        c = self.conn(timeout)
        try:
            c.request("POST", self.prefix + path, body=json.dumps(obj), headers=self.headers())
            r = c.getresponse()
            body = r.read()
            try:
                return r.status, json.loads(body)
            except ValueError:
                return r.status, {"raw": body[:200].decode("utf-8", "replace")}
        finally:
            c.close()

    def wait_ready(self, seconds):
        """Polls /health until it answers 200 (at most `seconds`)."""
        end = time.monotonic() + seconds
        for _ in range(int(seconds * 4) + 1):
            try:
                st, _ = self.get_json("/health", timeout=5)
                if st == 200:
                    return True
            except (OSError, http.client.HTTPException, ValueError):
                pass
            if time.monotonic() > end:
                break
            time.sleep(0.25)
        return False

    def detect(self):
        """The server's kind (wick, llama.cpp) and model name, from /v1/models."""
        st, js = self.get_json("/v1/models")
        if st != 200 or not js or not js.get("data"):
            raise SystemExit("loadgen: GET /v1/models answered %s" % st)
        d = js["data"][0]
        self.model = d.get("id")
        owner = str(d.get("owned_by", "")).lower()
        self.kind = "wick" if owner == "wick" else "llama" if "llama" in owner else "other"
        return self.kind


def body_for(args, server, prompt, n_out, stream=True):
    """The request body: the prompt or one user message, the length forced."""
    b = {"model": server.model or "m", "max_tokens": n_out, "temperature": args.temperature, "ignore_eos": True,
         "stream": stream}
    if args.seed_requests:
        b["seed"] = 1
    if stream:
        b["stream_options"] = {"include_usage": True}
    if server.kind == "llama":
        b["n_predict"] = n_out   # llama-server's own name, besides max_tokens
        b["cache_prompt"] = True
    if args.endpoint == "chat":
        b["messages"] = [{"role": "user", "content": prompt}]
    else:
        b["prompt"] = prompt
    return b


def path_for(args):
    return "/v1/chat/completions" if args.endpoint == "chat" else "/v1/completions"


def make_prompt(rng, idx, n_words):
    return "Request %d: " % idx + " ".join(rng.choice(WORDS) for _ in range(max(n_words, 1)))


def calibrate(args, server, target):
    """Words per prompt so that the server counts about `target` prompt
    tokens (the chat template's included): a few probes of max_tokens 1."""
    rng = random.Random(12345)
    words = max(target - 8, 1)
    got = None
    for _ in range(5):
        st, js = server.post_json(path_for(args), body_for(args, server, make_prompt(rng, 0, words), 1, stream=False),
                                  timeout=args.timeout)
        if st != 200 or "usage" not in js:
            raise SystemExit("loadgen: a probe request answered %s: %s" % (st, json.dumps(js)[:300]))
        got = js["usage"]["prompt_tokens"]
        if got == target:
            break
        words = max(1, words + (target - got))
    return words, got


class Result:
    __slots__ = ("idx", "t_send", "ttft", "itl", "e2e", "n_out", "n_prompt", "chunks", "ok", "error", "status",
                 "want_out", "want_prompt")

    def as_json(self, t0):
        return {"type": "request", "idx": self.idx, "start_s": round(self.t_send - t0, 6), "ok": self.ok,
                "status": self.status, "error": self.error, "prompt_tokens": self.n_prompt,
                "output_tokens": self.n_out, "want_output_tokens": self.want_out, "chunks": self.chunks,
                "ttft_ms": None if self.ttft is None else round(self.ttft * 1e3, 3),
                "e2e_ms": None if self.e2e is None else round(self.e2e * 1e3, 3),
                "itl_ms": [round(x * 1e3, 3) for x in self.itl]}


def chunk_text(obj, chat):
    """The text a streamed chunk carries ('' for none)."""
    out = []
    for ch in obj.get("choices") or []:
        if chat:
            d = ch.get("delta") or {}
            out.append(d.get("content") or "")
        else:
            out.append(ch.get("text") or "")
    return "".join(out)


def one_request(args, server, idx, prompt, n_out, want_prompt):
    """One streamed request: times of its chunks, its usage, how it ended."""
    r = Result()
    r.idx, r.want_out, r.want_prompt = idx, n_out, want_prompt
    r.ttft = r.e2e = None
    r.itl, r.n_out, r.n_prompt, r.chunks, r.ok, r.error, r.status = [], 0, None, 0, False, None, None
    chat = args.endpoint == "chat"
    body = json.dumps(body_for(args, server, prompt, n_out))
    c = server.conn(args.timeout)
    r.t_send = time.perf_counter()
    deadline = r.t_send + args.timeout
    last = None
    usage = None
    try:
        c.request("POST", server.prefix + path_for(args), body=body, headers=server.headers())
        resp = c.getresponse()
        r.status = resp.status
        if resp.status != 200:
            r.error = "HTTP %d: %s" % (resp.status, resp.read()[:200].decode("utf-8", "replace"))
            return r
        done = False
        for _ in range(1 << 22):   # bounded: a line per event
            line = resp.readline()
            now = time.perf_counter()
            if not line:
                break
            if now > deadline:
                r.error = "timed out after %.0f s" % args.timeout
                break
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                done = True
                break
            try:
                obj = json.loads(data)
            except ValueError:
                r.error = "a chunk that is not JSON: %r" % data[:100]
                break
            if obj.get("error"):
                r.error = "error event: %s" % json.dumps(obj["error"])[:200]
                break
            if obj.get("usage"):
                usage = obj["usage"]
            if chunk_text(obj, chat):
                r.chunks += 1
                if r.ttft is None:
                    r.ttft = now - r.t_send
                else:
                    r.itl.append(now - last)
                last = now
        r.e2e = time.perf_counter() - r.t_send
        if usage:
            r.n_out = usage.get("completion_tokens", r.chunks)
            r.n_prompt = usage.get("prompt_tokens")
        else:
            r.n_out = r.chunks   # no usage: one token a chunk, as both servers stream
        if r.error is None and not done:
            r.error = "the stream ended without [DONE]"
        r.ok = r.error is None and r.ttft is not None
        if r.ok and r.n_out != n_out:
            r.error = "%d tokens, not %d" % (r.n_out, n_out)   # kept ok: counted as a length mismatch
    except (OSError, http.client.HTTPException) as e:
        r.error = "%s: %s" % (type(e).__name__, e)
        r.e2e = time.perf_counter() - r.t_send
    finally:
        c.close()
    return r


def summarize(results, wall, args, server, words, calib):
    ok = [r for r in results if r.ok]
    ttft = sorted(r.ttft for r in ok)
    itl = sorted(x for r in ok for x in r.itl)
    e2e = sorted(r.e2e for r in ok)
    tpot = sorted((r.e2e - r.ttft) / (r.n_out - 1) for r in ok if r.n_out > 1)
    out_tok = sum(r.n_out for r in ok)
    in_tok = sum(r.n_prompt or 0 for r in ok)

    def ms(vals):
        return {"p50": pct(vals, 50) * 1e3, "p90": pct(vals, 90) * 1e3, "p99": pct(vals, 99) * 1e3,
                "mean": sum(vals) / len(vals) * 1e3, "max": vals[-1] * 1e3} if vals else None

    return {"type": "summary", "server": server.kind, "model": server.model, "endpoint": args.endpoint,
            "mode": "open" if args.rate else "closed", "clients": None if args.rate else args.clients,
            "rate": args.rate, "requests": len(results), "ok": len(ok),
            "failed": len(results) - len(ok),
            "length_mismatch": sum(1 for r in ok if r.n_out != r.want_out),
            "errors": sorted({r.error for r in results if r.error})[:5],
            "wall_s": wall, "req_per_s": len(ok) / wall if wall > 0 else None,
            "output_tok_per_s": out_tok / wall if wall > 0 else None,
            "total_tok_per_s": (out_tok + in_tok) / wall if wall > 0 else None,
            "prompt_tokens_mean": in_tok / len(ok) if ok else None,
            "output_tokens_mean": out_tok / len(ok) if ok else None,
            "prompt_words": words, "calibrated_prompt_tokens": calib,
            "ttft_ms": ms(ttft), "itl_ms": ms(itl), "tpot_ms": ms(tpot), "e2e_ms": ms(e2e)}


def fmt_row(name, d):
    if not d:
        return "%-6s %s" % (name, "-")
    return "%-6s p50 %9.1f  p90 %9.1f  p99 %9.1f  mean %9.1f  max %9.1f ms" % (
        name, d["p50"], d["p90"], d["p99"], d["mean"], d["max"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8080", help="the server (127.0.0.1, localhost, [::1] only)")
    ap.add_argument("--api-key", default=os.environ.get("WICK_API_KEY"))
    ap.add_argument("--endpoint", choices=["completions", "chat"], default="completions")
    ap.add_argument("--clients", type=int, default=1, help="closed loop: requests in flight (default 1)")
    ap.add_argument("--rate", type=float, default=0.0, help="open loop: Poisson arrivals per second (0: closed loop)")
    ap.add_argument("--max-inflight", type=int, default=512, help="open loop: requests in flight at most")
    ap.add_argument("--requests", type=int, default=0, help="requests in all (default: 4 x clients, or 64 open)")
    ap.add_argument("--duration", type=float, default=600.0, help="seconds at most for sending (default 600)")
    ap.add_argument("--warmup", type=int, default=1, help="requests sent and not counted first (default 1)")
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--output-tokens", type=int, default=256)
    ap.add_argument("--dist", choices=["fixed", "uniform"], default="fixed",
                    help="lengths: fixed, or uniform in [x/2, 3x/2] of each, seeded (default fixed)")
    ap.add_argument("--seed", type=int, default=1, help="the seed of arrivals and lengths (default 1)")
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--seed-requests", action="store_true", help="send seed 1 in every request")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds a request may take (default 600)")
    ap.add_argument("--wait-ready", type=float, default=120.0, help="seconds to wait for /health first (default 120)")
    ap.add_argument("--jsonl", help="write one JSON line per request, then the summary")
    ap.add_argument("--label", default="", help="a label copied into the summary")
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args(argv)
    if args.clients < 1 or args.rate < 0 or args.prompt_tokens < 1 or args.output_tokens < 1:
        ap.error("clients, prompt and output tokens must be >= 1; rate >= 0")
    if not args.requests:
        args.requests = 64 if args.rate else 4 * args.clients
    args.requests = min(args.requests, 1 << 20)

    server = Server(args.url, args.api_key, args.timeout)
    if not server.wait_ready(args.wait_ready):
        raise SystemExit("loadgen: %s did not answer /health within %g s" % (args.url, args.wait_ready))
    server.detect()
    words, calib = calibrate(args, server, args.prompt_tokens)
    rng = random.Random(args.seed)

    # every request's prompt and output length, drawn up front (seeded)
    plan = []
    for i in range(args.warmup + args.requests):
        if args.dist == "uniform":
            pt = rng.randint(max(1, args.prompt_tokens // 2), args.prompt_tokens * 3 // 2)
            ot = rng.randint(max(1, args.output_tokens // 2), args.output_tokens * 3 // 2)
        else:
            pt, ot = args.prompt_tokens, args.output_tokens
        pw = max(1, words + (pt - args.prompt_tokens))
        plan.append((i, make_prompt(rng, i + 1, pw), ot, pt))
    if not args.quiet:
        print("loadgen: %s (%s) at %s: %s, %s, %d requests, prompt ~%d tokens (%d words -> %s), %d generated" % (
            server.kind, server.model, args.url, args.endpoint,
            "Poisson %.3g/s" % args.rate if args.rate else "%d clients" % args.clients, args.requests,
            args.prompt_tokens, words, calib, args.output_tokens), file=sys.stderr)
    for i in range(args.warmup):
        one_request(args, server, *plan[i])
    plan = plan[args.warmup:]

    results = []
    lock = threading.Lock()
    t0 = time.perf_counter()
    stop_at = t0 + args.duration

    if args.rate:
        # open loop: arrivals at exponential gaps, each its own thread
        sem = threading.BoundedSemaphore(args.max_inflight)
        threads = []
        late = 0

        def run(item):
            try:
                r = one_request(args, server, *item)
                with lock:
                    results.append(r)
            finally:
                sem.release()

        t_next = t0
        for item in plan:
            t_next += rng.expovariate(args.rate)
            if t_next > stop_at:
                break
            wait = t_next - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            if not sem.acquire(timeout=max(0.0, stop_at - time.perf_counter())):
                break
            if time.perf_counter() - t_next > 0.05:
                late += 1   # the in-flight cap held this arrival back
            th = threading.Thread(target=run, args=(item,), daemon=True)
            th.start()
            threads.append(th)
        for th in threads:
            th.join(args.timeout + 5)
    else:
        # closed loop: `clients` threads, each a request after the other
        nxt = [0]

        def client():
            for _ in range(len(plan)):
                with lock:
                    if nxt[0] >= len(plan) or time.perf_counter() > stop_at:
                        return
                    item = plan[nxt[0]]
                    nxt[0] += 1
                r = one_request(args, server, *item)
                with lock:
                    results.append(r)

        threads = [threading.Thread(target=client, daemon=True) for _ in range(args.clients)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(args.duration + args.timeout + 5)
    wall = time.perf_counter() - t0
    results.sort(key=lambda r: r.idx)
    s = summarize(results, wall, args, server, words, calib)
    s["label"] = args.label
    s["prompt_tokens_asked"], s["output_tokens_asked"], s["dist"] = args.prompt_tokens, args.output_tokens, args.dist
    if args.rate:
        s["arrivals_held_back"] = late
    if args.jsonl:
        with open(args.jsonl, "a") as f:
            for r in results:
                f.write(json.dumps(r.as_json(t0)) + "\n")
            f.write(json.dumps(s) + "\n")
    if not args.quiet:
        print("requests %d ok %d failed %d (length mismatches %d) in %.1f s: %.2f req/s, %.1f output tok/s, "
              "%.1f total tok/s" % (s["requests"], s["ok"], s["failed"], s["length_mismatch"], wall,
                                     s["req_per_s"] or 0, s["output_tok_per_s"] or 0, s["total_tok_per_s"] or 0))
        for name in ("ttft", "itl", "tpot", "e2e"):
            print(fmt_row(name.upper(), s[name + "_ms"]))
        for e in s["errors"]:
            print("error: %s" % e)
    print(json.dumps(s) if args.quiet else "", end="\n" if args.quiet else "")
    return 0 if s["ok"] and not s["failed"] else 1


if __name__ == "__main__":
    sys.exit(main())
