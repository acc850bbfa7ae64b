#!/usr/bin/env python3
"""test_load.py — `wick serve` under load and under clients that misbehave,
on the real SmolLM2-135M-Instruct, with Python's standard library only (run
by `make test`; the harness is test_server.py's).

One server (--max-seqs 16) takes:
- 48 clients at once (threads), four rounds: every greedy reply equals the
  same request served alone before (a reply may differ only after a token
  whose two most likely choices are within 1e-3 in log-probability, where
  another summation order of a batch may pick the other: docs/engine.md);
  all finish; the KV blocks in use go back to their value before; the
  server's resident memory (VmRSS, read when it is idle after each round)
  stays flat after the first round (the warm-up; see RSS_GROWTH);
- invalid UTF-8 in a message, a prompt and a stop string; max_tokens
  negative, zero, huge, fractional and of the wrong type;
- a client that sends its request a byte at a time (another is served
  meanwhile), one that sends half a body and goes, malformed HTTP;
- a client that reads its stream late (the generation ends without it; the
  whole stream is there afterwards), one that reads a large whole answer late;
- clients that vanish mid-stream (one with n = 3) while others are served:
  each sequence is cancelled, the others' replies are right, no block is left;
- a burst of 1000 small requests from 16 keep-alive connections (tiny
  completions, /health, /v1/models, bad JSON, unknown paths): each gets its
  right answer or error.
A second server (--max-seqs 1 --max-queue 2) takes a burst of 12 requests at
once: some are refused with 429 (OpenAI's rate_limit_exceeded error and
Retry-After), the others' replies are right, and it serves normally after.
Both servers then drain and exit 0 on SIGTERM (under AddressSanitizer, with
no leak).

Skipped without the model unless WICK_REQUIRE_MODEL=1, like test_server.py.
Usage: test_load.py [path/to/wick]. Ends with "N passed, N failed"; exits 1
on any failure. All traffic goes to 127.0.0.1, every loop and wait is
bounded, and every server started is killed at the end.
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_server as ts  # noqa: E402 (the harness: Server, request, post, events, metric, check)
from test_server import check, error_shape, events, metric, post, request  # noqa: E402

CLIENTS = 48          # concurrent clients of the rounds
ROUNDS = 4            # the first is the warm-up of the memory check
# The resident memory, read when the server is idle after each round, may
# grow by this fraction of its value after the warm-up round. The server
# allocates its KV cache and scratch once and the rounds repeat the
# warm-up's requests, so what moves is the allocator's free memory not yet
# given back: measured here, +-10 to 17 MB between rounds on about 615 MB,
# up as often as down. 5% (about 30 MB) stays clear of that, and 3 x 48
# requests after the warm-up pass it if each leaks 200 KB or more (a
# reply's buffers, a sequence's sampler or token lists would).
RSS_GROWTH = 0.05
TIE = 1e-3            # log-probability gap under which a greedy pick may flip


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def sanitized(wick):
    """True for a build under a sanitizer, whose memory use is its own."""
    try:
        with open(wick, "rb") as f:
            data = f.read()
    except OSError:
        return False
    return any(s in data for s in (b"__asan_init", b"__tsan_init", b"__msan_init"))


def run_threads(fns, timeout=600):
    """Runs each fn on its own thread, started together; their results (an
    exception as ("error", repr))."""
    out = [None] * len(fns)
    barrier = threading.Barrier(len(fns))

    def one(i):
        try:
            barrier.wait(timeout=60)
            out[i] = fns[i]()
        except Exception as e:  # noqa: BLE001 (reported by the caller)
            out[i] = ("error", repr(e))
    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(fns))]
    for t in threads:
        t.start()
    deadline = time.time() + timeout
    for t in threads:
        t.join(timeout=max(1, deadline - time.time()))
    return out


# ---------------------------------------------------------------------------------------------
# the requests of the rounds: greedy, each with its own prompt

PROMPTS = ["The capital of France is", "Fact number 3 about cats:", "def fibonacci(n):",
           "The three primary colors are", "Once upon a time, in a small village,", "1, 2, 3, 4,"]
QUESTIONS = ["Name a color.", "What is 2 + 2?", "Say hello in French.", "Name a fruit.",
             "What is the opposite of hot?", "Give me a word that rhymes with cat."]
REQS = ([("/v1/completions", {"prompt": p, "max_tokens": 8, "temperature": 0}) for p in PROMPTS] +
        [("/v1/chat/completions", {"messages": [{"role": "user", "content": q}], "max_tokens": 8,
                                   "temperature": 0}) for q in QUESTIONS])


def reply_text(path, r):
    c = r["choices"][0]
    return c["text"] if path == "/v1/completions" else c["message"]["content"]


def solo_reference(port, path, body):
    """The reply served alone, and its tokens' texts with the gap between the
    two most likely at each (asking for log-probabilities does not change a
    greedy pick: it is the argmax of the same logits)."""
    lp_body = dict(body, logprobs=2) if path == "/v1/completions" else dict(body, logprobs=True, top_logprobs=2)
    status, r = post(port, path, lp_body)
    if status != 200:
        return None
    toks = []
    lp = r["choices"][0]["logprobs"]
    if path == "/v1/completions":
        for t, top in zip(lp["tokens"], lp["top_logprobs"]):
            v = sorted(top.values(), reverse=True) + [-1e9, -1e9]
            toks.append((t, v[0] - v[1]))
    else:
        for t in lp["content"]:
            v = [x["logprob"] for x in t["top_logprobs"]] + [-1e9, -1e9]
            toks.append((t["token"], v[0] - v[1]))
    return reply_text(path, r), toks


def settle(port, name, want, timeout=30):
    """The metric once it is want (a client may see its answer just before
    the server has counted it and given its blocks back), or its last value."""
    deadline = time.time() + timeout
    v = metric(port, name)
    while v != want and time.time() < deadline:
        time.sleep(0.1)
        v = metric(port, name)
    return v


def idle(port, timeout=60):
    return settle(port, "wick_generations_in_flight", 0, timeout) == 0


def same_or_tie(got, ref):
    """got equals the solo reply, or leaves it only after a near tie."""
    text, toks = ref
    if got == text:
        return True
    common = 0
    while common < min(len(got), len(text)) and got[common] == text[common]:
        common += 1
    at = 0
    for t, gap in toks:   # the token in which the texts part
        if at + len(t) > common:
            if gap < TIE:
                print(f"note: a greedy reply parts from its solo run at a near tie (gap {gap:.2e}): "
                      f"{got!r} / {text!r}", flush=True)
                return True
            return False
        at += len(t)
    return False


def stop(srv, name):
    """SIGTERM: the server must drain and exit 0 (under AddressSanitizer, a
    leak makes the exit status non-zero)."""
    srv.proc.send_signal(signal.SIGTERM)
    try:
        rc = srv.proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        rc = "still running after 120 s"
    check(f"{name}_exit_0", rc == 0, f"exit {rc}; log: {srv.text()[-3000:]}")


def concurrency_checks(srv, port):
    refs = [solo_reference(port, path, body) for path, body in REQS]
    if not check("load_solo", all(refs), refs):
        return
    idle(port)
    used0 = settle(port, "wick_kv_blocks_used", 0)
    pid = srv.proc.pid
    measure_rss = not sanitized(ts.WICK)
    rounds = ROUNDS if measure_rss else 2   # (sanitizers: slow, and no memory check)

    def client(i):
        path, body = REQS[i % len(REQS)]
        status, r = post(port, path, body, timeout=600)
        return status, reply_text(path, r) if status == 200 else r

    rss = []   # idle after each round
    for rnd in range(rounds):
        t0 = time.time()
        out = run_threads([lambda i=i: client(i) for i in range(CLIENTS)])
        bad = [(i, o) for i, o in enumerate(out)
               if not (o and o[0] == 200 and same_or_tie(o[1], refs[i % len(REQS)]))]
        check("load_round_replies", not bad, f"round {rnd}: {len(bad)} of {CLIENTS} wrong, e.g. {bad[:3]!r:.600}")
        idle(port)
        time.sleep(0.3)
        rss.append(rss_kb(pid) or 0)
        print(f"load: round {rnd}: {CLIENTS} clients in {time.time() - t0:.1f} s; VmRSS {rss[-1]} kB", flush=True)
    check("load_blocks_back", settle(port, "wick_kv_blocks_used", used0) == used0,
          f"KV blocks used {used0} -> {metric(port, 'wick_kv_blocks_used')}")
    check("load_nothing_left", idle(port) and settle(port, "wick_engine_sequences_waiting", 0) == 0 and
          settle(port, "wick_engine_sequences_running", 0) == 0, "generations or sequences left")
    if measure_rss and rss[0]:
        peak = max(rss[1:])
        print(f"load: VmRSS after the warm-up {rss[0]} kB, at most {peak} kB after the {rounds - 1} rounds after it "
              f"({100.0 * (peak - rss[0]) / rss[0]:+.2f}%)", flush=True)
        check("load_rss_flat", peak <= rss[0] * (1 + RSS_GROWTH),
              f"VmRSS {rss} kB: more than {100 * RSS_GROWTH:.0f}% over the first")
    elif not measure_rss:
        print("note: a sanitizer build: the memory check is left out (its allocator keeps freed memory)")


# ---------------------------------------------------------------------------------------------
def raw_exchange(port, data, timeout=30, delay=0.0):
    """Sends data (bytes; a byte at a time with delay between them when
    delay > 0) and reads until the server closes or timeout."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        if delay > 0:
            for i in range(len(data)):
                s.sendall(data[i:i + 1])
                time.sleep(delay)
        else:
            s.sendall(data)
        got = b""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                part = s.recv(65536)
            except socket.timeout:
                break
            if not part:
                break
            got += part
            if response_complete(got):
                break
        return got
    finally:
        s.close()


def response_complete(got):
    """A whole HTTP response with Content-Length (or a chunked one that ended)."""
    head, sep, body = got.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":")[1])
    return body.endswith(b"0\r\n\r\n")


def http_request_bytes(path, body, extra=b""):
    return (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
            extra + b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)


def body_of(resp):
    head, _, body = resp.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        out, rest = b"", body
        while rest:
            size, _, rest = rest.partition(b"\r\n")
            n = int(size.split(b";")[0] or b"0", 16)
            if n == 0:
                break
            out, rest = out + rest[:n], rest[n + 2:]
        return out
    return body


def misbehaving_checks(port):
    # invalid UTF-8 in the JSON's strings: 400 invalid_json, naming the byte
    for name, raw in (("utf8_message", b'{"messages":[{"role":"user","content":"bad \xff\xfe \xc3"}],"max_tokens":4}'),
                      ("utf8_prompt", b'{"prompt":"caf\xc3\x28 x","max_tokens":4}'),
                      ("utf8_stop", b'{"prompt":"hi","max_tokens":4,"stop":["\xed\xa0\x80"]}'),
                      ("utf8_surrogate", b'{"prompt":"x \\ud800 y","max_tokens":4}')):
        path = "/v1/chat/completions" if b"messages" in raw else "/v1/completions"
        status, data, _ = request(port, "POST", path, raw, headers={"Content-Type": "application/json"})
        try:
            r = json.loads(data)
        except ValueError:
            r = data
        if error_shape(name, status, r, 400):
            check(f"{name}_code", r["error"]["code"] == "invalid_json", r)
    # valid UTF-8 of every width goes through, and comes back as valid JSON
    status, r = post(port, "/v1/chat/completions", {"messages": [{"role": "user", "content": "héllo ✓ 𝄞 \u0000 end"}],
                                                   "max_tokens": 4, "temperature": 0})
    check("utf8_valid", status == 200 and isinstance(r["choices"][0]["message"]["content"], str), f"{r!r:.200}")

    # max_tokens out of range or of the wrong type: 400 naming it
    for v in (-1, 0, -2 ** 63, 2 ** 31, 2 ** 64, 1e300, 2.5, "10", [1], True):
        status, r = post(port, "/v1/completions", {"prompt": "hi", "max_tokens": v})
        error_shape(f"max_tokens_{v!r}", status, r, 400, "max_tokens")
    status, r = post(port, "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}],
                                                   "max_completion_tokens": -5})
    error_shape("max_completion_tokens_negative", status, r, 400, "max_completion_tokens")
    status, r = post(port, "/v1/completions", {"prompt": "hi", "max_tokens": 2 ** 31 - 1})
    if error_shape("max_tokens_huge", status, r, 400, "max_tokens"):
        check("max_tokens_huge_code", r["error"]["code"] == "context_length_exceeded", r)

    # a request sent a byte at a time (headers and body) while another is served
    path, body = REQS[0]
    want = post(port, path, body)[1]["choices"][0]["text"]
    slow = {}

    def slow_client():
        t0 = time.time()
        slow["resp"] = raw_exchange(port, http_request_bytes(path, json.dumps(body).encode()), timeout=120,
                                    delay=0.012)
        slow["t"] = time.time() - t0
    t = threading.Thread(target=slow_client, daemon=True)
    t.start()
    time.sleep(0.3)
    t0 = time.time()
    status, r = post(port, path, body)
    fast_t = time.time() - t0
    t.join(timeout=150)
    resp = slow.get("resp", b"")
    check("slow_sender_others_served", status == 200 and reply_text(path, r) == want and fast_t < slow.get("t", 0),
          f"{status}, {fast_t:.2f} s against the slow client's {slow.get('t', 0):.2f} s")
    ok = check("slow_sender_answered", resp.startswith(b"HTTP/1.1 200"), f"{resp[:200]!r}")
    if ok:
        check("slow_sender_reply", json.loads(body_of(resp))["choices"][0]["text"] == want, f"{resp[-300:]!r}")

    # half a body, then gone; malformed requests: the server answers or closes, and goes on
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(http_request_bytes("/v1/completions", b'{"prompt": "hello", "max_tokens": 4}')[:-10])
    s.close()
    for name, raw in (("garbage_line", b"GARBAGE\r\n\r\n"),
                      ("bad_version", b"GET /health HTTP/9.9\r\nHost: x\r\n\r\n"),
                      ("bad_length", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n"),
                      ("huge_header", b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n"),
                      ("nul_in_path", b"GET /he\x00alth HTTP/1.1\r\nHost: x\r\n\r\n")):
        try:
            got = raw_exchange(port, raw, timeout=10)
        except OSError as e:   # the server may close while the request is still being sent
            got = repr(e).encode()
        check(f"{name}_no_200", not got.startswith(b"HTTP/1.1 200"), f"{got[:200]!r}")
        check(f"{name}_server_alive", request(port, "GET", "/health")[0] == 200, "no /health after it")

    # a stream whose client reads late: the generation ends without it, the
    # whole stream is there afterwards, and others are served meanwhile
    long_body = {"prompt": "Once upon a time", "max_tokens": 32, "temperature": 0, "ignore_eos": True}
    want_long = post(port, "/v1/completions", long_body, timeout=300)[1]["choices"][0]["text"]
    idle(port)
    finished0 = metric(port, 'wick_generations_finished_total{reason="length"}') or 0
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(120)
    s.connect(("127.0.0.1", port))
    s.sendall(http_request_bytes("/v1/completions", json.dumps(dict(long_body, stream=True)).encode()))
    deadline = time.time() + 120
    while time.time() < deadline and (metric(port, 'wick_generations_finished_total{reason="length"}') or 0) == finished0:
        time.sleep(0.2)
    check("slow_reader_generation_ended", metric(port, "wick_generations_in_flight") == 0,
          "the generation waited for its reader")
    status, r = post(port, path, body)
    check("slow_reader_others_served", status == 200 and reply_text(path, r) == want, f"{r!r:.200}")
    got = b""
    while time.time() < deadline + 60:
        part = s.recv(1024)   # small reads
        if not part:
            break
        got += part
        if got.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n") or got.endswith(b"0\r\n\r\n"):
            break
    s.close()
    ev = events(body_of(got)) if got.startswith(b"HTTP/1.1 200") else []
    streamed = "".join(e["choices"][0]["text"] for e in ev if isinstance(e, dict) and e.get("choices"))
    check("slow_reader_whole_stream", ev and ev[-1] == "[DONE]" and streamed == want_long,
          f"streamed {streamed!r:.200}, alone {want_long!r:.200}")
    # a large whole answer read late
    big = {"prompt": "Once upon a time", "max_tokens": 100, "temperature": 0, "ignore_eos": True, "logprobs": 20}
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(120)
    s.connect(("127.0.0.1", port))
    s.sendall(http_request_bytes("/v1/completions", json.dumps(big).encode()))
    time.sleep(0.2)
    idle(port, 120)
    time.sleep(1)
    got = b""
    while time.time() < deadline:
        part = s.recv(2048)
        if not part or response_complete(got + part):
            got += part
            break
        got += part
    s.close()
    try:
        r = json.loads(body_of(got))
        ok = len(r["choices"][0]["logprobs"]["tokens"]) == 100 and len(got) > 40000
    except (ValueError, KeyError, IndexError):
        ok = False
    check("slow_reader_whole_answer", ok, f"{len(got)} bytes: {got[:200]!r}")


def vanishing_checks(port):
    """Streams whose clients go mid-way (one with n = 3) while others are served."""
    refs = [post(port, p, b)[1] for p, b in REQS[:4]]
    idle(port)
    cancelled0 = metric(port, 'wick_generations_finished_total{reason="cancelled"}') or 0
    used0 = settle(port, "wick_kv_blocks_used", 0)

    def vanish(i):
        body = {"messages": [{"role": "user", "content": f"Tell me a long story about the number {i}."}],
                "max_tokens": 300, "temperature": 0, "stream": True, "ignore_eos": True}
        if i == 0:
            body["n"] = 3
        s = socket.create_connection(("127.0.0.1", port), timeout=120)
        try:
            s.sendall(http_request_bytes("/v1/chat/completions", json.dumps(body).encode()))
            got = b""
            deadline = time.time() + 120
            while time.time() < deadline and got.count(b'"content"') < 6:
                part = s.recv(4096)
                if not part:
                    break
                got += part
            return got.startswith(b"HTTP/1.1 200") and got.count(b'"content"') >= 6
        finally:
            s.close()

    def normal(i):
        path, body = REQS[i]
        status, r = post(port, path, body, timeout=300)
        return status == 200 and reply_text(path, r) == reply_text(path, refs[i])
    out = run_threads([lambda i=i: vanish(i) for i in range(8)] + [lambda i=i: normal(i) for i in range(4)])
    check("vanish_streams_started", all(o is True for o in out[:8]), out[:8])
    check("vanish_others_right", all(o is True for o in out[8:]), out[8:])
    want = cancelled0 + 10   # 7 streams of one sequence and one of three
    cancelled = cancelled0
    deadline = time.time() + 60
    while time.time() < deadline and cancelled < want:
        time.sleep(0.2)
        cancelled = metric(port, 'wick_generations_finished_total{reason="cancelled"}') or 0
    check("vanish_cancelled", cancelled == want, f"cancelled {cancelled0} -> {cancelled}, want {want}")
    check("vanish_nothing_left", idle(port) and settle(port, "wick_kv_blocks_used", used0) == used0,
          "generations or KV blocks left")
    # a whole-answer client that goes at once: its answer is dropped when written
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(http_request_bytes("/v1/completions", json.dumps({"prompt": "Hi", "max_tokens": 4}).encode()))
    s.close()
    time.sleep(0.2)
    check("vanish_whole_answer", idle(port) and request(port, "GET", "/health")[0] == 200, "a generation is left")


def burst_checks(port):
    """1000 small requests from 16 keep-alive connections."""
    words = [f"Word {k}:" for k in range(7)]
    want = {w: post(port, "/v1/completions", {"prompt": w, "max_tokens": 1, "temperature": 0})[1]["choices"][0]["text"]
            for w in words}
    idle(port)
    used0 = settle(port, "wick_kv_blocks_used", 0)
    n_total, n_conns = 1000, 16
    errors = []

    def conn_worker(k):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        done = 0
        try:
            for i in range(k, n_total, n_conns):
                kind = i % 5
                if kind == 0:
                    w = words[i % len(words)]
                    status, r = post(port, "/v1/completions", {"prompt": w, "max_tokens": 1, "temperature": 0},
                                     conn=c)
                    ok = status == 200 and r["choices"][0]["text"] == want[w]
                elif kind == 1:
                    status, data, _ = request(port, "GET", "/health", conn=c)
                    ok = status == 200 and json.loads(data) == {"status": "ok"}
                elif kind == 2:
                    status, data, _ = request(port, "GET", "/v1/models", conn=c)
                    ok = status == 200 and json.loads(data)["object"] == "list"
                elif kind == 3:
                    status, data, _ = request(port, "POST", "/v1/completions", b"{bad json", conn=c,
                                              headers={"Content-Type": "application/json"})
                    ok = status == 400 and json.loads(data)["error"]["code"] == "invalid_json"
                else:
                    status, data, _ = request(port, "GET", f"/v1/nothing/{i}", conn=c)
                    ok = status == 404 and "error" in json.loads(data)
                if not ok:
                    errors.append((i, status))
                done += 1
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append((k, repr(e)))
        finally:
            c.close()
        return done
    t0 = time.time()
    out = run_threads([lambda k=k: conn_worker(k) for k in range(n_conns)], timeout=600)
    dt = time.time() - t0
    print(f"load: burst of {n_total} requests on {n_conns} connections in {dt:.1f} s", flush=True)
    check("burst_all_answered", sum(o for o in out if isinstance(o, int)) == n_total, out)
    check("burst_answers_right", not errors, f"{len(errors)} wrong, e.g. {errors[:5]!r}")
    check("burst_nothing_left", idle(port) and settle(port, "wick_kv_blocks_used", used0) == used0 and
          request(port, "GET", "/health")[0] == 200,
          "generations or blocks left, or no /health")


def queue_checks(model):
    """--max-seqs 1 --max-queue 2 and 12 requests at once: some 429."""
    srv = ts.Server(model, "--max-seqs", "1", "--max-queue", "2")
    try:
        port = srv.port
        body = {"prompt": "The history of the bicycle", "max_tokens": 16, "temperature": 0, "ignore_eos": True}
        want = post(port, "/v1/completions", body)[1]["choices"][0]["text"]

        def one():
            status, data, hdr = request(port, "POST", "/v1/completions", body, timeout=300)
            return status, json.loads(data), hdr
        out = run_threads([one] * 12, timeout=600)
        ok200 = [o for o in out if o and o[0] == 200]
        r429 = [o for o in out if o and o[0] == 429]
        check("queue_all_answered", len(ok200) + len(r429) == 12, f"{[o and o[0] for o in out]}")
        check("queue_some_429", len(r429) >= 1 and len(ok200) >= 1, f"{len(ok200)} 200, {len(r429)} 429")
        check("queue_200_right", all(o[1]["choices"][0]["text"] == want for o in ok200),
              f"{[o[1]['choices'][0]['text'] for o in ok200]!r:.300}, alone {want!r}")
        for o in r429[:1]:
            if error_shape("queue_429", o[0], o[1], 429):
                check("queue_429_code", o[1]["error"]["code"] == "rate_limit_exceeded" and
                      o[1]["error"]["type"] == "requests", o[1])
            check("queue_429_retry_after", o[2].get("retry-after") == "1", o[2])
        check("queue_429_counted", settle(port, 'wick_requests_total{endpoint="/v1/completions",status="429"}',
                                          len(r429)) == len(r429), "the metric")
        status, r = post(port, "/v1/completions", body)
        check("queue_after", status == 200 and r["choices"][0]["text"] == want and
              request(port, "GET", "/health")[0] == 200, f"{status} {r!r:.200}")
        check("queue_nothing_left", idle(port) and settle(port, "wick_engine_sequences_waiting", 0) == 0 and
              settle(port, "wick_kv_blocks_used", 0) == 0,
              "generations, waiting sequences or blocks left")
        stop(srv, "queue")
    finally:
        srv.kill()


def main():
    model = ts.model_path()
    if not os.path.isfile(model):
        if os.environ.get("WICK_REQUIRE_MODEL", "0") != "0":
            check("model", False, f"no {model} (WICK_REQUIRE_MODEL is set; tools/fetch-default-model.sh)")
        else:
            print(f"skip server load: no {model} (tools/fetch-default-model.sh fetches it)")
        print(f"{ts.passed} passed, {ts.failed} failed")
        return 1 if ts.failed else 0
    srv = None
    try:
        srv = ts.Server(model, "--max-seqs", "16", "--ctx", "512")
        t0 = time.time()
        concurrency_checks(srv, srv.port)
        t1 = time.time()
        misbehaving_checks(srv.port)
        t2 = time.time()
        vanishing_checks(srv.port)
        t3 = time.time()
        burst_checks(srv.port)
        t4 = time.time()
        print(f"load: rounds {t1 - t0:.0f} s, misbehaving clients {t2 - t1:.0f} s, vanishing {t3 - t2:.0f} s, "
              f"burst {t4 - t3:.0f} s", flush=True)
        stop(srv, "load")
        srv.kill()
        srv = None
        queue_checks(model)
    except Exception as e:  # noqa: BLE001 (a failure, with what happened)
        check("run", False, f"{e!r}")
    finally:
        if srv:
            srv.kill()
    print(f"{ts.passed} passed, {ts.failed} failed")
    return 1 if ts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
