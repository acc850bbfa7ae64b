#!/usr/bin/env python3
"""soak.py — `wick serve` under a random mix of requests for a set time,
then checks that nothing leaked: a soak test (CI runs it for 5 minutes).

    python3 bench/soak.py [path/to/wick] [--duration 300] [--out DIR] [--model FILE]

It starts `wick serve` on 127.0.0.1 (the default SmolLM2-135M-Instruct from
the cache, or --model; on the cpu, WICK_NUM_THREADS=--threads) and runs
--clients client threads until --duration has passed. Each client sends one
request after another, with a pause of up to --think seconds between them,
each drawn from a seeded mix: chat or completions; streamed or not; 1 to 96
tokens; n of 1 to 3; stop strings; sampled or greedy, seeded or not; JSON
mode or a small JSON schema now and then; prompts of 3 to 300 words, some
sharing a long prefix (the prefix cache); a few invalid requests (bad JSON,
a field out of range); and clients that go away: a stream dropped after 0
to 6 chunks, a whole request dropped before its answer.

Every request must end in one of: a whole answer (each choice ended with
stop or length; a JSON reply that ended with stop, and had no stop
string, parses), a stream that
ends with [DONE] after each choice's finish_reason, a clean error (OpenAI's
error object with 400 for the invalid ones, 429 when the queue is full, or
a stream's error event then [DONE]), or the client's own leaving. (A
400 for a valid request is a clean error too: the mix may ask for more
than the context holds.) Anything
else (a timeout, a reset the client did not cause, a malformed answer, a
5xx) is a failure.

Leaks, measured with the server idle (no request in flight, the engine
empty) twice: after the warm-up (the first --warmup seconds) and at the end:
- KV blocks in use (`wick_kv_blocks_used`) back to 0, their value before
  any request;
- tensors, storages and storage bytes alive (`wick_tensors_live`,
  `wick_storages_live`, `wick_storage_bytes_live`: wk_live_stats_get) the
  same at the end as after the warm-up: the weights, the KV pools and the
  engine's buffers are made once (by the warm-up's requests: each client's
  first is the mix's largest, so their batch and lengths cover the mix's
  however slow the machine) and a request's temporaries are all
  released when its step ends;
- resident memory (VmRSS, sampled every second from /proc): at the end,
  idle, within RSS_GROWTH of the highest value of the warm-up (an idle
  reading lands anywhere in the working set's swing: freed large blocks
  go back to the system and come again), and the
  highest sample of the last third of the run within RSS_GROWTH of the
  highest of the first third after the warm-up (see RSS_GROWTH for why
  that bound).

Writes, into --out (default: a fresh folder under $TMPDIR): memory.csv
(the curve: seconds, VmRSS kB, KV blocks used, tensors, storages, storage
bytes, requests in flight, requests ended), outcomes.json (counts by kind,
the checks and their numbers) and server.log. Prints a summary and ends
with "soak: passed" or "soak: FAILED"; exits 1 on failure, 2 when it could
not run (no model: skipped unless WICK_REQUIRE_MODEL=1). All traffic goes to
127.0.0.1; every loop and wait is bounded; the server is killed at the end.
"""
import argparse
import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Growth of the resident memory allowed, as a fraction of the idle value
# after the warm-up. What moves once the server has warmed up is the
# allocator's free memory not yet given back: glibc keeps an arena per
# thread (the HTTP threads, the engine's) whose high-water marks follow
# the largest replies and bodies seen, which a random mix keeps raising a
# little for a while. tests/server/test_load.py measured under 0.3 MB of
# live growth and 2-3 MB a round of VmRSS on a ~615 MB server with fixed
# requests; 5% (about 30 MB of this server) is well above that and below
# what a leak of 30 KB a request over the ~1000 requests of a 5-minute
# run would add. Leaks of tensors and KV blocks, the ones that matter
# most, are checked exactly instead.
RSS_GROWTH = 0.05
WORDS = ("time year people way day man thing woman life child world school state family student group country "
         "problem hand part place case week company system program question work government number night point "
         "home water room mother area money story fact month lot right study book eye job word business issue side "
         "kind head house service friend father power hour game line end member law car city community name").split()
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 99}},
          "required": ["name", "age"], "additionalProperties": False}
SHARED_PREFIX = "You are a careful assistant. " + " ".join(WORDS[:60]) + ". "


def model_path():
    if os.environ.get("WICK_SMOLLM2"):
        return os.environ["WICK_SMOLLM2"]
    cache = os.environ.get("WICK_CACHE") or ""
    if not cache:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        cache = os.path.join(xdg, "wick")
    return os.path.join(cache, MODEL_FILE)


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class Server:
    def __init__(self, wick, model, out, threads, extra):
        self.log_path = os.path.join(out, "server.log")
        self.log = open(self.log_path, "w")
        env = dict(os.environ, WICK_NUM_THREADS=str(threads))
        self.proc = subprocess.Popen(
            [wick, "serve", model, "--host", "127.0.0.1", "--port", "0", "--device", "cpu", "--ctx", "1024",
             "--max-seqs", "8", "--max-queue", "6", "-q"] + extra,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        self.port = None
        deadline = time.time() + 300
        while time.time() < deadline and self.proc.poll() is None and self.port is None:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.text())
            if m:
                self.port = int(m.group(1))
            else:
                time.sleep(0.2)
        if self.port is None:
            raise RuntimeError("wick serve did not start: " + self.text()[-2000:])

    def text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
                return None
        return self.proc.returncode


def get(port, path, timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def metrics(port):
    st, data = get(port, "/metrics")
    out = {}
    if st == 200:
        for line in data.decode().splitlines():
            if line and not line.startswith("#") and "{" not in line:
                k, v = line.split()
                f = float(v)
                out[k] = int(f) if f.is_integer() else f
    return out


def error_ok(body):
    try:
        e = json.loads(body).get("error")
    except (ValueError, AttributeError):
        return False
    return isinstance(e, dict) and isinstance(e.get("message"), str) and {"message", "type", "param", "code"} <= set(e)


def draw(rng, largest=False):
    """One request of the mix: (path, body bytes, stream, n, json kind, leave: None or chunks to read, invalid).
    largest: the mix's largest request (the longest prompt, n 3, 96 tokens whatever the model says), which
    every client sends first, so that the warm-up reaches the biggest batch and lengths of the mix
    whatever the machine's speed (the memory baseline is taken after it)."""
    chat = rng.random() < 0.5
    stream = rng.random() < 0.6
    n = 1 if rng.random() < 0.8 else rng.randint(2, 3)
    words = int(3 * (100 ** rng.random()))   # 3 .. 300, log-uniform
    if largest:
        n, words = 3, 300
    text = " ".join(rng.choice(WORDS) for _ in range(words))
    if largest or rng.random() < 0.3:
        text = SHARED_PREFIX + text
    body = {"max_tokens": 96 if largest else rng.randint(1, 96), "n": n, "stream": stream}
    if largest:
        body.update(temperature=0, ignore_eos=True)
        path = "/v1/chat/completions" if chat else "/v1/completions"
        body["messages" if chat else "prompt"] = [{"role": "user", "content": text}] if chat else text
        return path, json.dumps(body).encode(), stream, n, None, None, None
    if rng.random() < 0.6:
        body["temperature"] = round(rng.uniform(0.2, 1.2), 2)
        if rng.random() < 0.5:
            body["seed"] = rng.randint(0, 1 << 30)
    else:
        body["temperature"] = 0
    if rng.random() < 0.3:
        body["stop"] = rng.sample([".", "\n", " the", ",", "!", " and"], rng.randint(1, 3))
    if stream and rng.random() < 0.5:
        body["stream_options"] = {"include_usage": True}
    if rng.random() < 0.1:
        body["ignore_eos"] = True
    fmt = None
    r = rng.random()
    if r < 0.08:
        fmt = "json_object"
        body["response_format"] = {"type": "json_object"}
    elif r < 0.13:
        fmt = "json_schema"
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "p", "schema": SCHEMA}}
    if "stop" in body:
        fmt = None   # a stop string may cut the JSON short, with finish_reason "stop": nothing to parse
    if chat:
        body["messages"] = [{"role": "user", "content": text}]
        path = "/v1/chat/completions"
    else:
        body["prompt"] = text
        path = "/v1/completions"
    invalid = None
    r = rng.random()
    if r < 0.02:
        invalid = "json"
        raw = b'{"prompt": "unfinished'
    elif r < 0.04:
        invalid = "field"
        body["temperature"] = 7
        raw = json.dumps(body).encode()
    else:
        raw = json.dumps(body).encode()
    leave = None
    if not invalid:
        if stream and rng.random() < 0.15:
            leave = rng.randint(0, 6)
        elif not stream and rng.random() < 0.04:
            leave = 0
    return path, raw, stream, n, fmt, leave, invalid


def run_one(port, req, timeout):
    """One request; returns (outcome, detail). Outcomes: ok, left, refused_invalid, error_400, error_429,
    stream_error, and for failures fail_*."""
    path, raw, stream, n, fmt, leave, invalid = req
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", path, body=raw, headers={"Content-Type": "application/json"})
        if leave == 0 and not stream:
            c.sock.shutdown(socket.SHUT_RDWR)   # gone before the answer
            return "left", ""
        r = c.getresponse()
        if r.status != 200:
            body = r.read()
            if r.status in (400, 429) and error_ok(body):
                if r.status == 400 and invalid:
                    return "refused_invalid", ""
                return "error_%d" % r.status, body[:200].decode(errors="replace")
            return "fail_status_%d" % r.status, body[:200].decode(errors="replace")
        if invalid:
            r.read()
            return "fail_invalid_accepted", invalid
        if not stream:
            js = json.loads(r.read())
            ch = js.get("choices") or []
            if len(ch) != n or any(x.get("finish_reason") not in ("stop", "length") for x in ch):
                return "fail_answer", json.dumps(js)[:200]
            if fmt:
                for x in ch:
                    t = x["message"]["content"] if "message" in x else x["text"]
                    if x["finish_reason"] == "stop":
                        try:
                            json.loads(t)
                        except ValueError:
                            return "fail_json", t[:200]
            return "ok", ""
        finished = set()
        chunks = 0
        for _ in range(100000):
            line = r.readline()
            if not line:
                return "fail_no_done", "the stream ended without [DONE]"
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                if len(finished) != n:
                    return "fail_stream", "[DONE] after %d of %d finish reasons" % (len(finished), n)
                return "ok", ""
            obj = json.loads(data)
            if obj.get("error"):
                rest = r.read()   # [DONE] must follow
                return ("stream_error", "") if b"[DONE]" in rest else ("fail_stream_error", str(obj)[:200])
            for ch in obj.get("choices") or []:
                if ch.get("finish_reason"):
                    finished.add(ch.get("index", 0))
            chunks += 1
            if leave is not None and chunks > leave:
                c.sock.shutdown(socket.SHUT_RDWR)
                return "left", ""
        return "fail_stream", "too many events"
    except (OSError, http.client.HTTPException, ValueError) as e:
        return "fail_" + type(e).__name__, str(e)[:200]
    finally:
        c.close()


def wait_idle(port, seconds):
    """Waits until no generation is in flight and the engine is empty; the metrics then."""
    end = time.time() + seconds
    m = {}
    for _ in range(int(seconds * 2) + 1):
        m = metrics(port)
        if (m.get("wick_generations_in_flight", 1) == 0 and m.get("wick_engine_sequences_running", 1) == 0 and
                m.get("wick_engine_sequences_waiting", 1) == 0):
            time.sleep(1.0)   # the last step's buffers go; then read again
            return metrics(port)
        if time.time() > end:
            break
        time.sleep(0.5)
    return m


def main():
    ap = argparse.ArgumentParser(description="wick serve under a random mix of requests; leak checks")
    ap.add_argument("wick", nargs="?", default="build/wick")
    ap.add_argument("--model", default=None)
    ap.add_argument("--duration", type=float, default=300.0, help="seconds of load (default 300)")
    ap.add_argument("--warmup", type=float, default=0.0, help="seconds of warm-up (default: a fifth, 20 .. 60)")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--think", type=float, default=1.0, help="seconds of pause at most between a client's requests")
    ap.add_argument("--threads", type=int, default=1, help="the server's cpu threads (default 1)")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("WICK_TEST_SEED", "0")) or None)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds a request may take")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    warm = args.warmup or min(60.0, max(20.0, args.duration / 5))
    model = args.model or model_path()
    if not os.path.exists(model):
        print("soak: skipped (no model at %s)" % model)
        return 1 if os.environ.get("WICK_REQUIRE_MODEL") == "1" else 2
    out = args.out or tempfile.mkdtemp(prefix="wick-soak.")
    os.makedirs(out, exist_ok=True)
    print("soak: seed %d, %g s (warm-up %g s), %d clients, results in %s" % (seed, args.duration, warm,
                                                                            args.clients, out), flush=True)
    srv = Server(args.wick, model, out, args.threads, [])
    pid, port = srv.proc.pid, srv.port
    outcomes, details = {}, {}
    lock = threading.Lock()
    curve = []
    stop = threading.Event()
    pause = threading.Event()    # set: clients hold their next request (the idle reading after warm-up)
    ended = [0]
    checks = {}
    try:
        m0 = wait_idle(port, 60)
        kv0 = m0.get("wick_kv_blocks_used")
        t0 = time.time()

        def client(k):
            rng = random.Random(seed * 1000 + k)
            for i in range(1 << 20):
                if stop.is_set():
                    return
                if pause.is_set():
                    time.sleep(0.2)
                    continue
                res, det = run_one(port, draw(rng, largest=i == 0), args.timeout)
                with lock:
                    outcomes[res] = outcomes.get(res, 0) + 1
                    ended[0] += 1
                    if res not in ("ok", "left") and len(details.get(res, [])) < 5:
                        details.setdefault(res, []).append(det)
                time.sleep(rng.uniform(0, args.think))

        def sampler():
            for _ in range(int((args.duration + 600) * 2)):
                if stop.is_set():
                    return
                t = time.time() - t0
                rss = rss_kb(pid)
                try:
                    m = metrics(port)
                except OSError:
                    m = {}
                with lock:
                    curve.append((round(t, 1), rss, m.get("wick_kv_blocks_used"), m.get("wick_tensors_live"),
                                  m.get("wick_storages_live"), m.get("wick_storage_bytes_live"),
                                  m.get("wick_generations_in_flight"), ended[0]))
                stop.wait(1.0)

        th = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(args.clients)]
        smp = threading.Thread(target=sampler, daemon=True)
        smp.start()
        for t in th:
            t.start()
        # warm-up, then an idle reading (the baseline), then the rest of the run
        time.sleep(warm)
        pause.set()
        base = wait_idle(port, args.timeout)
        base_rss = rss_kb(pid)
        t_base = time.time() - t0
        pause.clear()
        print("soak: after the warm-up (%.0f s, %d requests): VmRSS %s kB, %s tensors, %s storages, %s bytes" % (
            t_base, ended[0], base_rss, base.get("wick_tensors_live"), base.get("wick_storages_live"),
            base.get("wick_storage_bytes_live")), flush=True)
        time.sleep(max(0.0, args.duration - (time.time() - t0)))
        stop.set()
        for t in th:
            t.join(args.timeout + 10)
        end = wait_idle(port, 120)
        end_rss = rss_kb(pid)
        smp.join(5)
        t_end = time.time() - t0

        fails = {k: v for k, v in outcomes.items() if k.startswith("fail")}
        hung = sum(1 for t in th if t.is_alive())
        checks["every_request_ended_cleanly"] = (not fails and not hung, {"failures": fails, "hung_clients": hung,
                                                                          "examples": details})
        checks["kv_blocks_back"] = (end.get("wick_kv_blocks_used") == kv0 == 0,
                                    {"start": kv0, "end": end.get("wick_kv_blocks_used")})
        for k in ("wick_tensors_live", "wick_storages_live", "wick_storage_bytes_live"):
            checks[k + "_flat"] = (k in end and end.get(k) == base.get(k),
                                   {"after_warmup": base.get(k), "end": end.get(k), "before_any_request": m0.get(k)})
        # the idle reading falls anywhere between the low and the high of
        # the working set (glibc gives large freed blocks back and takes
        # them again; a cached block may be held or not): the end's idle
        # VmRSS is held to the highest the warm-up reached, idle or not
        warm_peak = max([c[1] for c in curve if c[0] <= t_base and c[1]] + [base_rss or 0])
        checks["idle_rss_flat"] = (base_rss and end_rss and end_rss <= warm_peak * (1 + RSS_GROWTH),
                                   {"after_warmup_kb": base_rss, "warmup_peak_kb": warm_peak, "end_kb": end_rss,
                                    "bound": RSS_GROWTH})
        loaded = [c for c in curve if c[0] > t_base + 5 and c[0] < t_end - 5 and c[1]]
        third = max(1, len(loaded) // 3)
        first, last = max((c[1] for c in loaded[:third]), default=None), max((c[1] for c in loaded[-third:]), default=None)
        checks["loaded_rss_flat"] = (first is not None and last <= first * (1 + RSS_GROWTH),
                                     {"first_third_peak_kb": first, "last_third_peak_kb": last, "samples": len(loaded)})
        checks["server_alive"] = (srv.proc.poll() is None, {})
    finally:
        stop.set()
        rc = srv.stop()
    checks["server_exit_0_on_sigterm"] = (rc == 0, {"status": rc})
    with open(os.path.join(out, "memory.csv"), "w") as f:
        f.write("seconds,vmrss_kb,kv_blocks_used,tensors_live,storages_live,storage_bytes_live,in_flight,ended\n")
        for c in curve:
            f.write(",".join("" if v is None else str(int(v) if isinstance(v, float) and v.is_integer() else v)
                             for v in c) + "\n")
    ok = all(bool(v[0]) for v in checks.values())
    with open(os.path.join(out, "outcomes.json"), "w") as f:
        json.dump({"seed": seed, "duration_s": args.duration, "warmup_s": warm, "clients": args.clients,
                   "requests": sum(outcomes.values()), "outcomes": outcomes, "examples": details,
                   "checks": {k: {"ok": bool(v[0]), **v[1]} for k, v in checks.items()}, "passed": ok}, f, indent=1)
    print("soak: %d requests: %s" % (sum(outcomes.values()), ", ".join("%s %d" % kv for kv in sorted(outcomes.items()))))
    for k, v in checks.items():
        print("soak: %-32s %s  %s" % (k, "ok" if v[0] else "FAILED", json.dumps(v[1])[:400]))
    print("soak: memory curve %s, outcomes %s" % (os.path.join(out, "memory.csv"), os.path.join(out, "outcomes.json")))
    print("soak: passed" if ok else "soak: FAILED (seed %d; WICK_TEST_SEED=%d repeats the mix)" % (seed, seed))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
