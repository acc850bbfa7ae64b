#!/usr/bin/env python3
"""test_server.py — `wick serve` over HTTP on the real SmolLM2-135M-Instruct,
with Python's standard library only (run by `make test`).

Starts `build/wick serve` on 127.0.0.1 (a port the system picks, read from
its log) and checks: /health and /v1/models; a greedy completion and a
greedy chat reply equal `wick run`'s text for the same prompt and token
count; streaming (chunks that add up to the whole reply, the role first,
the finish reason, the usage chunk, [DONE] last); stop strings;
response_format (a JSON schema and JSON mode, sampled over seeds, whole
and streamed: every reply parses and validates; the 400s of bad ones);
max_tokens and finish_reason "length"; log-probabilities (<= 0, the top
ones in order); a seed repeats a sampled reply; 8 requests at once from
threads; a client that leaves mid-stream cancels its request and does not
hurt the next one; n choices (greedy ones equal the single reply, choice
i sampled with seed + i, streamed by index, the usage summed, the
prompt's blocks shared through the prefix cache); the errors (bad JSON, a
wrong type, n out of 1..16, an unknown path, a wrong method, a body over the limit, an API key missing or
wrong); /metrics; SIGTERM with a stream in flight (a keep-alive
connection then gets 503, new connections are refused, the stream ends,
the server exits 0).

The model comes from the cache of tools/fetch-default-model.sh (or
WICK_SMOLLM2); without it the suite is skipped with a note, unless
WICK_REQUIRE_MODEL=1.
Usage: test_server.py [path/to/wick]. Ends with "N passed, N failed";
exits 1 on any failure. Every wait is bounded, all traffic goes to
127.0.0.1, and every server started is killed at the end.
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

WICK = sys.argv[1] if len(sys.argv) > 1 else "build/wick"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
passed = 0
failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL server/{name}: {detail}", flush=True)
    return cond


def model_path():
    if os.environ.get("WICK_SMOLLM2"):
        return os.environ["WICK_SMOLLM2"]
    cache = os.environ.get("WICK_CACHE") or ""
    if not cache:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        cache = os.path.join(xdg, "wick")
    return os.path.join(cache, MODEL_FILE)


class Server:
    """A `wick serve` process; its log in a temporary file."""

    def __init__(self, model, *extra):
        self.log = tempfile.NamedTemporaryFile(prefix="wick-serve.", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [WICK, "serve", model, "--host", "127.0.0.1", "--port", "0", "--device", "cpu", "--ctx", "1024",
             "--max-seqs", "8", "-q", *extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log)
        self.port = None
        deadline = time.time() + 180   # loading the model
        while time.time() < deadline and self.proc.poll() is None and self.port is None:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.text())
            if m:
                self.port = int(m.group(1))
            else:
                time.sleep(0.1)
        if self.port is None:
            raise RuntimeError(f"wick serve did not start: {self.text()[-2000:]}")
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                if request(self.port, "GET", "/health", timeout=5)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"/health did not answer: {self.text()[-2000:]}")

    def text(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        try:
            os.unlink(self.log.name)
        except OSError:
            pass


def request(port, method, path, body=None, headers=None, timeout=120, conn=None):
    """(status, body bytes, headers dict); body: a dict (as JSON), bytes or str."""
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = dict(headers or {})
    if isinstance(body, (dict, list)):
        body = json.dumps(body)
        h.setdefault("Content-Type", "application/json")
    try:
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        return r.status, data, {k.lower(): v for k, v in r.getheaders()}
    finally:
        if conn is None:
            c.close()


def post(port, path, body, **kw):
    status, data, _ = request(port, "POST", path, body, **kw)
    try:
        return status, json.loads(data)
    except ValueError:
        return status, data


def events(data):
    """The data: lines of a server-sent event stream, parsed ([DONE] as is)."""
    out = []
    for block in data.decode().split("\n\n"):
        if not block.strip():
            continue
        line = block.strip()
        if not line.startswith("data: "):
            out.append(("bad", line))
            continue
        payload = line[6:]
        out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


def wick_run(model, prompt, n, raw):
    args = [WICK, "run", model, "-p", prompt, "--temp", "0", "-n", str(n), "-q", "--device", "cpu"]
    if raw:
        args.append("--raw")
    r = subprocess.run(args, capture_output=True, timeout=300)
    out = r.stdout.decode()
    return out[:-1] if out.endswith("\n") else out


def metric(port, name):
    status, data, _ = request(port, "GET", "/metrics", timeout=30)
    for line in data.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


def error_shape(name, status, body, want_status, want_param="-"):
    ok = check(f"{name}_status", status == want_status, f"status {status}, body {body!r:.300}")
    e = body.get("error") if isinstance(body, dict) else None
    ok = check(f"{name}_shape", isinstance(e, dict) and isinstance(e.get("message"), str) and
               set(e) >= {"message", "type", "param", "code"}, f"{body!r:.300}") and ok
    if want_param != "-" and e:
        check(f"{name}_param", e.get("param") == want_param, f"param {e.get('param')!r}, want {want_param!r}")
    return ok


# ---------------------------------------------------------------------------------------------
def main_checks(model, port):
    mid = os.path.basename(model)
    mid = mid[:-5] if mid.endswith(".gguf") else mid   # the id /v1/models lists
    # /health, /v1/models
    status, data, hdr = request(port, "GET", "/health")
    check("health", status == 200 and json.loads(data) == {"status": "ok"}, f"{status} {data!r}")
    check("health_json", hdr.get("content-type", "").startswith("application/json"), hdr.get("content-type"))
    status, data, _ = request(port, "GET", "/v1/models")
    models = json.loads(data) if status == 200 else {}
    check("models", status == 200 and models.get("object") == "list" and len(models.get("data", [])) == 1 and
          models["data"][0].get("id") == mid and models["data"][0].get("object") == "model",
          f"{status} {data!r:.300}")

    # a greedy completion: wick run's text
    prompt = "The capital of France is"
    status, r = post(port, "/v1/completions", {"prompt": prompt, "max_tokens": 12, "temperature": 0})
    ok = check("completion", status == 200 and r.get("object") == "text_completion", f"{status} {r!r:.300}")
    text = r["choices"][0]["text"] if ok else ""
    ref = wick_run(model, prompt, 12, raw=True)
    check("completion_is_wick_run", ok and text == ref and text, f"served {text!r}, wick run {ref!r}")
    if ok:
        u = r.get("usage", {})
        check("completion_length", r["choices"][0]["finish_reason"] == "length", r["choices"][0])
        check("completion_usage", u.get("completion_tokens") == 12 and u.get("prompt_tokens", 0) > 0 and
              u.get("total_tokens") == u["prompt_tokens"] + 12, u)
        check("completion_id", r.get("id", "").startswith("cmpl-") and isinstance(r.get("created"), int) and
              r.get("model") == mid, r)

    # a streamed completion adds up to the same text
    status, data, hdr = request(port, "POST", "/v1/completions",
                                {"prompt": prompt, "max_tokens": 12, "temperature": 0, "stream": True})
    ev = events(data) if status == 200 else []
    check("completion_stream_type", hdr.get("content-type", "").startswith("text/event-stream"), hdr)
    chunks = [e for e in ev if isinstance(e, dict)]
    check("completion_stream", status == 200 and ev and ev[-1] == "[DONE]" and
          "".join(c["choices"][0]["text"] for c in chunks) == text and
          chunks[-1]["choices"][0]["finish_reason"] == "length", f"{status} {ev!r:.500}")

    # a greedy chat reply: wick run's (the same chat format), whole and streamed
    question = "Name a color."
    chat = {"messages": [{"role": "user", "content": question}], "max_tokens": 12, "temperature": 0}
    status, r = post(port, "/v1/chat/completions", chat)
    ok = check("chat", status == 200 and r.get("object") == "chat.completion", f"{status} {r!r:.300}")
    reply = r["choices"][0]["message"]["content"] if ok else ""
    ref = wick_run(model, question, 12, raw=False)
    check("chat_is_wick_run", ok and reply == ref and reply, f"served {reply!r}, wick run {ref!r}")
    check("chat_role", ok and r["choices"][0]["message"]["role"] == "assistant", r)
    status, data, _ = request(port, "POST", "/v1/chat/completions",
                              dict(chat, stream=True, stream_options={"include_usage": True}))
    ev = events(data) if status == 200 else []
    chunks = [e for e in ev if isinstance(e, dict)]
    check("chat_stream_done_last", ev and ev[-1] == "[DONE]" and ev.count("[DONE]") == 1, f"{ev!r:.300}")
    check("chat_stream_objects", chunks and all(c.get("object") == "chat.completion.chunk" and
                                                c.get("id") == chunks[0]["id"] for c in chunks), f"{chunks!r:.300}")
    check("chat_stream_role_first", chunks and chunks[0]["choices"][0]["delta"].get("role") == "assistant",
          f"{chunks[:1]!r}")
    body_chunks = [c for c in chunks if c["choices"]]
    streamed = "".join(c["choices"][0]["delta"].get("content", "") for c in body_chunks)
    check("chat_stream_text", streamed == reply, f"streamed {streamed!r}, whole {reply!r}")
    check("chat_stream_finish", body_chunks and body_chunks[-1]["choices"][0]["finish_reason"] == "length" and
          all(c["choices"][0]["finish_reason"] is None for c in body_chunks[:-1]), f"{body_chunks[-2:]!r}")
    usage = chunks[-1] if chunks else {}
    check("chat_stream_usage", usage.get("choices") == [] and usage.get("usage") == r.get("usage"),
          f"{usage!r}, whole {r.get('usage')!r}")

    # stop strings: the text before the first occurrence, finish "stop"
    if len(text) > 6:
        stop = text[len(text) // 2:len(text) // 2 + 3]
        want = text[:text.index(stop)]
        for form in (stop, [stop, "never appears"]):
            status, r = post(port, "/v1/completions", {"prompt": prompt, "max_tokens": 12, "temperature": 0,
                                                      "stop": form})
            check("stop_text", status == 200 and r["choices"][0]["text"] == want and
                  r["choices"][0]["finish_reason"] == "stop", f"stop {form!r}: {r!r:.300}, want {want!r}")
    # max_completion_tokens (chat) and an end token before the limit
    status, r = post(port, "/v1/chat/completions", {"messages": [{"role": "user", "content": question}],
                                                   "max_completion_tokens": 3, "temperature": 0})
    check("max_completion_tokens", status == 200 and r["usage"]["completion_tokens"] == 3 and
          r["choices"][0]["finish_reason"] == "length", f"{r!r:.300}")
    status, r = post(port, "/v1/chat/completions", {"messages": [{"role": "system", "content": "Answer in one word."},
                                                                {"role": "user", "content": "Say yes."}],
                                                   "max_tokens": 60, "temperature": 0})
    check("system_message", status == 200 and r["choices"][0]["finish_reason"] in ("stop", "length"), f"{r!r:.300}")
    status, r = post(port, "/v1/chat/completions", {"messages": [{"role": "user", "content": "Say yes."}],
                                                   "max_tokens": 24, "temperature": 0, "ignore_eos": True})
    check("ignore_eos", status == 200 and r["usage"]["completion_tokens"] == 24 and
          r["choices"][0]["finish_reason"] == "length", f"{r!r:.300}")

    # log-probabilities: chat (top_logprobs) and completions (logprobs N)
    status, r = post(port, "/v1/chat/completions", dict(chat, max_tokens=6, logprobs=True, top_logprobs=3))
    content = (r.get("choices") or [{}])[0].get("logprobs", {}).get("content") if status == 200 else None
    ok = check("chat_logprobs", isinstance(content, list) and len(content) == r["usage"]["completion_tokens"],
               f"{r!r:.400}")
    if ok:
        check("chat_logprobs_le_0", all(t["logprob"] <= 0 for t in content), content)
        check("chat_top_logprobs", all(len(t["top_logprobs"]) == 3 and
                                       t["top_logprobs"][0]["logprob"] >= t["top_logprobs"][1]["logprob"] >=
                                       t["top_logprobs"][2]["logprob"] for t in content), content)
        check("chat_logprobs_greedy", all(abs(t["logprob"] - t["top_logprobs"][0]["logprob"]) < 1e-6
                                          for t in content), content)
        check("chat_logprobs_bytes", all(bytes(t["bytes"]).decode(errors="replace") == t["token"]
                                         for t in content), content)
    status, r = post(port, "/v1/completions", {"prompt": prompt, "max_tokens": 5, "temperature": 0, "logprobs": 2})
    lp = r["choices"][0].get("logprobs") if status == 200 else None
    check("completion_logprobs", isinstance(lp, dict) and len(lp.get("token_logprobs", [])) == 5 and
          all(v <= 0 for v in lp["token_logprobs"]) and len(lp.get("tokens", [])) == 5 and
          all(len(t) == 2 for t in lp.get("top_logprobs", [])) and lp.get("text_offset", [None])[0] == 0,
          f"{r!r:.400}")

    # response_format: JSON mode and schemas, sampled at temperature 1 over seeds, whole and streamed:
    # every reply parses and validates (by the jsonschema package when it is installed, and by the
    # explicit checks below, which need nothing but the standard library)
    person = {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 20}, "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
        "nick": {"type": ["string", "null"], "maxLength": 8}},
        "required": ["name", "age"], "additionalProperties": False}

    def person_ok(v):
        return (isinstance(v, dict) and set(v) <= {"name", "age", "tags", "nick"} and {"name", "age"} <= set(v) and
                isinstance(v["name"], str) and len(v["name"]) <= 20 and
                isinstance(v["age"], int) and not isinstance(v["age"], bool) and 0 <= v["age"] <= 120 and
                (isinstance(v.get("tags", []), list) and len(v.get("tags", [])) <= 3 and
                 all(t in ("a", "b", "c") for t in v.get("tags", []))) and
                (v.get("nick") is None or (isinstance(v["nick"], str) and len(v["nick"]) <= 8)))
    try:
        import jsonschema
    except ImportError:
        jsonschema = None

    def reply_of(body, path="/v1/chat/completions"):
        """(status, text, finish_reason) of a request, whole or streamed"""
        if not body.get("stream"):
            status, r = post(port, path, body, timeout=600)
            if status != 200:
                return status, r, None
            c = r["choices"][0]
            return status, c["message"]["content"] if "message" in c else c["text"], c["finish_reason"]
        status, data, _ = request(port, "POST", path, body, timeout=600)
        ev = [e for e in events(data) if isinstance(e, dict) and e.get("choices")] if status == 200 else []
        out = "".join(e["choices"][0]["delta"].get("content", "") if "delta" in e["choices"][0]
                       else e["choices"][0]["text"] for e in ev)
        return status, out, ev[-1]["choices"][0]["finish_reason"] if ev else None
    ask = {"messages": [{"role": "user", "content": "Describe a person as JSON."}], "temperature": 1.0,
           "max_tokens": 300}
    fmt = {"type": "json_schema", "json_schema": {"name": "person", "schema": person, "strict": True}}
    for seed in (1, 2, 3):
        for stream in (False, True):
            status, out, finish = reply_of(dict(ask, seed=seed, stream=stream, response_format=fmt))
            try:
                value = json.loads(out) if status == 200 else None
            except ValueError:
                value = None
            ok = check("json_schema_parses", status == 200 and value is not None and finish == "stop",
                       f"seed {seed} stream {stream}: {status} {finish} {out!r:.400}")
            check("json_schema_valid", ok and person_ok(value), f"seed {seed} stream {stream}: {out!r:.400}")
            if ok and jsonschema:
                try:
                    jsonschema.validate(value, person)
                    check("json_schema_jsonschema", True)
                except jsonschema.ValidationError as e:
                    check("json_schema_jsonschema", False, f"{out!r:.300}: {e.message}")
    for stream in (False, True):   # JSON mode: any object, on both endpoints
        status, out, finish = reply_of(dict(ask, seed=4, stream=stream, max_tokens=400,
                                             response_format={"type": "json_object"}))
        try:
            value = json.loads(out) if status == 200 and finish == "stop" else {}
        except ValueError:
            value = None
        check("json_object", status == 200 and isinstance(value, dict), f"{status} {finish} {out!r:.400}")
    status, out, finish = reply_of({"prompt": "A JSON object about the sea:", "max_tokens": 8, "temperature": 0,
                                     "response_format": {"type": "json_object"}}, "/v1/completions")
    check("json_object_completion", status == 200 and out.startswith("{") and finish in ("stop", "length"),
          f"{status} {out!r:.300}")
    status, out, finish = reply_of(dict(ask, seed=5, response_format={"type": "text"}, max_tokens=4))
    check("response_format_text", status == 200 and finish == "length", f"{status} {out!r:.200}")
    for name, rf, words in (
            ("not_an_object", "json", "must be an object"),
            ("unknown_type", {"type": "xml"}, "not one of"),
            ("no_schema", {"type": "json_schema", "json_schema": {"name": "x"}}, "json_schema.schema"),
            ("schema_not_object", {"type": "json_schema", "json_schema": {"name": "x", "schema": [1]}}, "schema"),
            ("strict_not_bool", {"type": "json_schema", "json_schema": {"schema": {}, "strict": "yes"}}, "strict"),
            ("unsupported_keyword", {"type": "json_schema", "json_schema": {"name": "x", "schema": {
                "type": "object", "properties": {"a": {"type": "string", "pattern": "^a+$"}}}}},
             "#/properties/a: 'pattern' is not supported"),
            ("bad_ref", {"type": "json_schema", "json_schema": {"schema": {"$ref": "#/$defs/none"}}}, "names nothing"),
            ("unsatisfiable", {"type": "json_schema", "json_schema": {"schema": {"type": "string", "minLength": 3,
                                                                                  "maxLength": 2}}}, "no JSON value")):
        status, r = post(port, "/v1/chat/completions", dict(ask, response_format=rf))
        if error_shape(f"response_format_{name}", status, r, 400, "response_format"):
            check(f"response_format_{name}_says", words in r["error"]["message"], r["error"]["message"])

    # sampling: a seed gives the same reply; the penalties and filters are taken
    sampled = {"prompt": "Once upon a time", "max_tokens": 10, "temperature": 0.9, "seed": 7, "top_p": 0.95,
               "top_k": 40, "min_p": 0.05, "presence_penalty": 0.5, "frequency_penalty": 0.5}
    s1 = post(port, "/v1/completions", sampled)
    s2 = post(port, "/v1/completions", sampled)
    check("seed_repeats", s1[0] == 200 and s2[0] == 200 and
          s1[1]["choices"][0]["text"] == s2[1]["choices"][0]["text"], f"{s1!r:.200} / {s2!r:.200}")
    status, r = post(port, "/v1/completions", {"prompt": prompt, "max_tokens": 2, "temperature": 0,
                                              "frobnicate": {"x": [1, 2]}, "user": "u1", "model": "anything"})
    check("unknown_fields_ignored", status == 200, f"{status} {r!r:.200}")

    # 8 requests at once from threads
    results = [None] * 8

    def one(i):
        try:
            results[i] = post(port, "/v1/completions", {"prompt": f"Fact number {i}:", "max_tokens": 8,
                                                        "temperature": 0}, timeout=300)
        except Exception as e:  # noqa: BLE001 (reported below)
            results[i] = (0, repr(e))
    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    check("concurrent_all", all(r and r[0] == 200 and r[1]["usage"]["completion_tokens"] > 0 and
                                r[1]["choices"][0]["finish_reason"] in ("stop", "length") for r in results),
          f"{results!r:.600}")
    alone = post(port, "/v1/completions", {"prompt": "Fact number 3:", "max_tokens": 8, "temperature": 0})
    check("concurrent_alone", results[3] and results[3][0] == 200 and alone[0] == 200 and
          alone[1]["usage"]["completion_tokens"] > 0, f"{alone!r:.200}")

    # a client that leaves mid-stream: its request is cancelled, the next one is fine
    cancelled0 = metric(port, 'wick_generations_finished_total{reason="cancelled"}') or 0
    body = json.dumps({"messages": [{"role": "user", "content": "Tell me a long story."}], "max_tokens": 400,
                       "temperature": 0, "stream": True, "ignore_eos": True}).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    got = b""
    deadline = time.time() + 60
    while time.time() < deadline and got.count(b"data: ") < 3:
        part = s.recv(4096)
        if not part:
            break
        got += part
    check("disconnect_got_chunks", got.startswith(b"HTTP/1.1 200") and got.count(b"data: ") >= 3, f"{got!r:.300}")
    s.close()
    cancelled = cancelled0
    deadline = time.time() + 60
    while time.time() < deadline and cancelled == cancelled0:
        time.sleep(0.2)
        cancelled = metric(port, 'wick_generations_finished_total{reason="cancelled"}') or 0
    check("disconnect_cancels", cancelled == cancelled0 + 1, f"cancelled {cancelled0} -> {cancelled}")
    check("disconnect_nothing_left", metric(port, "wick_generations_in_flight") == 0, "a generation is left")
    status, r = post(port, "/v1/completions", {"prompt": prompt, "max_tokens": 12, "temperature": 0})
    check("after_disconnect", status == 200 and r["choices"][0]["text"] == text, f"{r!r:.300}")

    # errors
    status, data, _ = request(port, "POST", "/v1/completions", "{not json")
    error_shape("bad_json", status, json.loads(data), 400)
    for field, value in (("temperature", "hot"), ("max_tokens", 1.5), ("stop", 3), ("stream", "yes"),
                         ("messages", "hi"), ("logprobs", 3), ("top_p", 1.5)):
        payload = {"messages": [{"role": "user", "content": "hi"}], field: value}
        status, r = post(port, "/v1/chat/completions", payload)
        error_shape(f"wrong_{field}", status, r, 400, field)
    status, r = post(port, "/v1/completions", {"prompt": 5})
    error_shape("wrong_prompt", status, r, 400, "prompt")
    status, r = post(port, "/v1/completions", {"max_tokens": 3})
    error_shape("missing_prompt", status, r, 400, "prompt")
    for n in (0, 17, "2"):
        status, r = post(port, "/v1/completions", {"prompt": "hi", "n": n})
        error_shape(f"n_{n}", status, r, 400, "n")
    status, r = post(port, "/v1/chat/completions", {"messages": [{"role": "tool", "content": "x"}]})
    error_shape("role_tool", status, r, 400, "messages")
    status, r = post(port, "/v1/completions", {"prompt": "hi " * 600, "max_tokens": 900})
    error_shape("too_long", status, r, 400)
    status, data, _ = request(port, "GET", "/v1/nothing")
    error_shape("unknown_path", status, json.loads(data), 404)
    status, data, hdr = request(port, "GET", "/v1/completions")
    error_shape("wrong_method_get", status, json.loads(data), 405)
    check("wrong_method_allow", hdr.get("allow") == "POST", hdr)
    status, data, _ = request(port, "POST", "/health", b"")
    error_shape("wrong_method_post", status, json.loads(data), 405)
    # a Content-Length over the limit: 413 before the body is sent
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000000\r\n\r\n")
    got = b""
    deadline = time.time() + 30
    while time.time() < deadline and b"\r\n\r\n" not in got:
        part = s.recv(4096)
        if not part:
            break
        got += part
    s.close()
    check("too_large_413", got.startswith(b"HTTP/1.1 413"), f"{got!r:.200}")

    n_checks(port, text, prompt, reply, chat)

    # the metrics
    status, data, hdr = request(port, "GET", "/metrics")
    m = data.decode()
    check("metrics", status == 200 and hdr.get("content-type", "").startswith("text/plain"), hdr)
    for want in ('wick_requests_total{endpoint="/v1/completions",status="200"}',
                 'wick_requests_total{endpoint="/v1/chat/completions",status="400"}',
                 'wick_requests_total{endpoint="other",status="404"}',
                 'wick_requests_total{endpoint="/v1/completions",status="413"}',
                 "wick_prompt_tokens_total", "wick_generation_tokens_total", "wick_engine_sequences_waiting",
                 "wick_engine_sequences_running", "wick_kv_blocks_used", "wick_kv_blocks_total"):
        check("metrics_has", want in m, f"no {want}")
    check("metrics_tokens", (metric(port, "wick_generation_tokens_total") or 0) >= 12 * 3, m[:300])
    check("metrics_blocks", (metric(port, "wick_kv_blocks_total") or 0) > 0, m[:300])


def n_checks(port, text, prompt, reply, chat):
    """n choices: greedy ones are the single reply; choice i samples with
    seed + i; streamed by index; the usage sums them; the later choices find
    the prompt's full blocks in the prefix cache."""
    status, r = post(port, "/v1/chat/completions", dict(chat, n=3))
    ok = check("n_chat", status == 200 and [c.get("index") for c in r.get("choices", [])] == [0, 1, 2],
               f"{status} {r!r:.400}")
    if ok:
        check("n_chat_greedy", all(c["message"]["content"] == reply and c["finish_reason"] == "length"
                                   for c in r["choices"]), f"{r['choices']!r:.400}, single {reply!r}")
        check("n_chat_usage", r["usage"]["completion_tokens"] == 3 * 12 and
              r["usage"]["total_tokens"] == r["usage"]["prompt_tokens"] + 36, r["usage"])
    # sampled: choice i is what n = 1 gives with seed + i
    sampled = {"prompt": "Once upon a time", "max_tokens": 10, "temperature": 1.0, "seed": 11}
    status, r = post(port, "/v1/completions", dict(sampled, n=3))
    texts = [c["text"] for c in r["choices"]] if status == 200 else []
    singles = [post(port, "/v1/completions", dict(sampled, seed=11 + i))[1]["choices"][0]["text"] for i in range(3)]
    check("n_seeds", status == 200 and texts == singles, f"n=3 {texts!r}, singles {singles!r}")
    check("n_seeds_differ", len(set(singles)) > 1, singles)
    status, r = post(port, "/v1/completions", dict(sampled, n=2, logprobs=1))
    check("n_logprobs", status == 200 and all(len(c["logprobs"]["tokens"]) == 10 for c in r["choices"]),
          f"{r!r:.300}")
    # streamed: each index's chunks add up to its text, its role first and one finish last
    body = {"messages": chat["messages"], "max_tokens": 8, "temperature": 1.0, "seed": 5, "n": 2}
    status, whole = post(port, "/v1/chat/completions", body)
    status2, data, _ = request(port, "POST", "/v1/chat/completions",
                               dict(body, stream=True, stream_options={"include_usage": True}))
    ev = events(data) if status2 == 200 else []
    chunks = [e for e in ev if isinstance(e, dict)]
    by = {0: [], 1: []}
    for c in chunks:
        for ch in c["choices"]:
            by.setdefault(ch["index"], []).append(ch)
    ok = check("n_stream", status == 200 and ev and ev[-1] == "[DONE]" and sorted(by) == [0, 1] and
               all(len(c["choices"]) <= 1 for c in chunks), f"{ev!r:.400}")
    if ok:
        for i in (0, 1):
            got = "".join(ch["delta"].get("content", "") for ch in by[i])
            check("n_stream_text", got == whole["choices"][i]["message"]["content"],
                  f"index {i}: streamed {got!r}, whole {whole['choices'][i]!r}")
            check("n_stream_role_first", by[i][0]["delta"].get("role") == "assistant", by[i][:1])
            check("n_stream_finish_last", by[i][-1]["finish_reason"] == whole["choices"][i]["finish_reason"] and
                  all(ch["finish_reason"] is None for ch in by[i][:-1]), by[i][-2:])
        check("n_stream_usage", chunks[-1].get("choices") == [] and chunks[-1].get("usage") == whole["usage"],
              f"{chunks[-1]!r}, whole {whole['usage']!r}")
    # the prompt's full blocks computed once: choices 1..3 take them from the prefix cache
    hits0 = metric(port, "wick_prefix_cache_hit_tokens_total") or 0
    block = metric(port, "wick_kv_block_size") or 16
    long_prompt = ("A list of the planets of the solar system, in order from the sun, with one fact about "
                   f"each of them, written on {time.time_ns()} by a careful student:")
    status, r = post(port, "/v1/completions", {"prompt": long_prompt, "max_tokens": 4, "temperature": 0, "n": 4})
    hits = metric(port, "wick_prefix_cache_hit_tokens_total") or 0
    p = r["usage"]["prompt_tokens"] if status == 200 else 0
    want = 3 * block * ((p - 1) // block)
    check("n_prefix_shared", status == 200 and p > 2 * block and hits - hits0 == want,
          f"{p} prompt tokens, cache hits {hits0} -> {hits}, want +{want}")
    deadline = time.time() + 30   # (a client may see its answer before the blocks are given back)
    while time.time() < deadline and not (metric(port, "wick_generations_in_flight") == 0 and
                                          metric(port, "wick_kv_blocks_used") == 0):
        time.sleep(0.1)
    check("n_nothing_left", metric(port, "wick_generations_in_flight") == 0 and
          metric(port, "wick_kv_blocks_used") == 0, "a generation or blocks are left")


def key_and_shutdown_checks(model):
    srv = Server(model, "--api-key", "s3cret", "--max-body", "4096", "--grace", "1")
    try:
        port = srv.port
        status, data, hdr = request(port, "GET", "/v1/models")
        error_shape("api_key_missing", status, json.loads(data), 401)
        check("api_key_www_authenticate", hdr.get("www-authenticate", "").startswith("Bearer"), hdr)
        status, data, _ = request(port, "GET", "/v1/models", headers={"Authorization": "Bearer wrong"})
        error_shape("api_key_wrong", status, json.loads(data), 401)
        status, data, _ = request(port, "GET", "/v1/models", headers={"Authorization": "Bearer s3cret"})
        check("api_key_right", status == 200, f"{status} {data!r:.200}")
        status, r = post(port, "/v1/completions", {"prompt": "Hi", "max_tokens": 2},
                         headers={"Authorization": "Bearer s3cret"})
        check("api_key_completion", status == 200, f"{status} {r!r:.200}")
        status, _, _ = request(port, "GET", "/health")
        check("api_key_health_open", status == 200, status)
        # a chunked body that grows past --max-body: read, dropped, 413
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            c.request("POST", "/v1/completions", body=iter([b"x" * 1000] * 10), encode_chunked=True,
                      headers={"Authorization": "Bearer s3cret", "Transfer-Encoding": "chunked"})
            r = c.getresponse()
            check("chunked_too_large", r.status == 413, r.status)
            r.read()
        finally:
            c.close()

        # SIGTERM with a stream in flight
        auth = {"Authorization": "Bearer s3cret"}
        keep = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        status, _, _ = request(port, "GET", "/health", conn=keep)
        check("keepalive_before", status == 200, status)
        first = threading.Event()
        stream = {"data": b"", "error": None}

        def reader():
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            try:
                c.request("POST", "/v1/chat/completions", headers=dict(auth, **{"Content-Type": "application/json"}),
                          body=json.dumps({"messages": [{"role": "user", "content": "Tell me a long story."}],
                                           "max_tokens": 600, "temperature": 0, "stream": True,
                                           "ignore_eos": True}))
                r = c.getresponse()
                for _ in range(100000):
                    part = r.read1(4096) if hasattr(r, "read1") else r.read(64)
                    if not part:
                        break
                    stream["data"] += part
                    if b'"delta":{"content"' in stream["data"]:   # a token, not the role alone
                        first.set()
            except Exception as e:  # noqa: BLE001 (reported below)
                stream["error"] = repr(e)
            finally:
                first.set()
                c.close()
        t = threading.Thread(target=reader)
        t.start()
        check("shutdown_stream_started", first.wait(120) and stream["error"] is None, stream)
        srv.proc.send_signal(signal.SIGTERM)
        status = 200
        deadline = time.time() + 10
        while time.time() < deadline and status == 200:
            try:
                status = request(port, "GET", "/health", conn=keep)[0]
            except OSError as e:
                status = repr(e)
                break
            time.sleep(0.05)
        check("shutdown_503", status == 503, status)
        keep.close()
        refused = False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        except OSError:
            refused = True
        check("shutdown_refuses", refused, "a new connection was taken")
        try:
            rc = srv.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            rc = "still running after 60 s"
        check("shutdown_exit_0", rc == 0, f"exit {rc}; log: {srv.text()[-1000:]}")
        t.join(timeout=60)
        check("shutdown_stream_ended", not t.is_alive() and stream["error"] is None and
              stream["data"].rstrip().endswith(b"data: [DONE]") and b'"error"' in stream["data"],
              f"{stream['error']} {stream['data'][-300:]!r}")
    finally:
        srv.kill()


def main():
    model = model_path()
    if not os.path.isfile(model):
        if os.environ.get("WICK_REQUIRE_MODEL", "0") != "0":
            check("model", False, f"no {model} (WICK_REQUIRE_MODEL is set; tools/fetch-default-model.sh)")
        else:
            print(f"skip server: no {model} (tools/fetch-default-model.sh fetches it)")
        print(f"{passed} passed, {failed} failed")
        return 1 if failed else 0
    srv = None
    try:
        srv = Server(model)
        main_checks(model, srv.port)
        srv.proc.send_signal(signal.SIGTERM)
        try:
            rc = srv.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            rc = "still running after 60 s"
        check("sigterm_exit_0", rc == 0, f"exit {rc}; log: {srv.text()[-1000:]}")
        srv.kill()
        srv = None
        key_and_shutdown_checks(model)
    except Exception as e:  # noqa: BLE001 (a failure, with what happened)
        check("run", False, f"{e!r}")
    finally:
        if srv:
            srv.kill()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
