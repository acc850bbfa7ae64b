#!/usr/bin/env python3
"""test_openai_client.py — `wick serve` through OpenAI's own Python client (the
`openai` package from PyPI), on the real SmolLM2-135M-Instruct (run by `make
test` with TEST_PYTHON, the Python that has the package; CI gives it a virtual
environment).

Checks, against a server with an API key: /v1/models; greedy chat and
completions equal the replies the same server gives to plain HTTP; streamed
chat and completions add up to them (the usage chunk too); stop strings; a
seed repeats a sampled reply; log-probabilities of both endpoints; n choices
(choice i is the reply with seed + i; streamed by index; the usage summed);
and that the client raises its exception classes for the server's errors:
BadRequestError (400, naming the field), AuthenticationError (401),
NotFoundError (404), RateLimitError (429 from a second server whose queue is
full: --max-seqs 1 --max-queue 1, one sequence running and one waiting).

Skipped with a note without the model (unless WICK_REQUIRE_MODEL=1) or
without the openai package (unless WICK_REQUIRE_TEST_DEPS=1, as CI sets).
Usage: test_openai_client.py [path/to/wick]. Ends with "N passed, N failed";
exits 1 on any failure. All traffic goes to 127.0.0.1, every wait is
bounded, and every server started is killed at the end.
"""
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_server as ts  # noqa: E402 (the harness: Server, request, post, metric, check)
from test_server import check, metric, post  # noqa: E402

try:
    import openai
    from openai import OpenAI
except ImportError:   # reported in main
    openai = None

KEY = "client-test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


def raised(fn, cls):
    """The exception fn raised if it is a cls, else None (and what it was)."""
    try:
        fn()
    except cls as e:
        return e, None
    except Exception as e:  # noqa: BLE001 (the wrong class: reported)
        return None, repr(e)
    return None, "no exception"


def client_checks(client, port, mid):
    models = client.models.list()
    ids = [m.id for m in models.data]
    check("client_models", ids == [mid], ids)

    # greedy chat and completions: what plain HTTP gets
    msgs = [{"role": "user", "content": "Name a color."}]
    r = client.chat.completions.create(model=mid, messages=msgs, max_tokens=12, temperature=0)
    raw = post(port, "/v1/chat/completions", {"messages": msgs, "max_tokens": 12, "temperature": 0},
               headers=AUTH)[1]
    reply = r.choices[0].message.content
    check("client_chat", reply == raw["choices"][0]["message"]["content"] and reply and
          r.choices[0].message.role == "assistant" and r.object == "chat.completion", f"{r!r:.300}")
    check("client_chat_usage", r.usage.completion_tokens == 12 and
          r.usage.total_tokens == r.usage.prompt_tokens + 12 and r.choices[0].finish_reason == "length", r.usage)
    prompt = "The capital of France is"
    c = client.completions.create(model=mid, prompt=prompt, max_tokens=12, temperature=0)
    raw = post(port, "/v1/completions", {"prompt": prompt, "max_tokens": 12, "temperature": 0}, headers=AUTH)[1]
    text = c.choices[0].text
    check("client_completion", text == raw["choices"][0]["text"] and text and c.object == "text_completion",
          f"{c!r:.300}")

    # streams add up to the same
    chunks = list(client.chat.completions.create(model=mid, messages=msgs, max_tokens=12, temperature=0,
                                                 stream=True, stream_options={"include_usage": True}))
    streamed = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    check("client_chat_stream", streamed == reply, f"streamed {streamed!r}, whole {reply!r}")
    check("client_chat_stream_usage", chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 12 and
          not chunks[-1].choices, f"{chunks[-1]!r:.300}")
    check("client_chat_stream_finish", [ch.choices[0].finish_reason for ch in chunks if ch.choices][-1] == "length",
          "no finish reason")
    streamed = "".join(ch.choices[0].text for ch in client.completions.create(
        model=mid, prompt=prompt, max_tokens=12, temperature=0, stream=True) if ch.choices)
    check("client_completion_stream", streamed == text, f"streamed {streamed!r}, whole {text!r}")

    # stop strings
    if len(text) > 6:
        stop = text[len(text) // 2:len(text) // 2 + 3]
        s = client.completions.create(model=mid, prompt=prompt, max_tokens=12, temperature=0, stop=[stop, "zzz"])
        check("client_stop", s.choices[0].text == text[:text.index(stop)] and s.choices[0].finish_reason == "stop",
              f"{s.choices[0]!r:.300}, stop {stop!r}")

    # a seed repeats a sampled reply
    def sampled(seed):
        return client.chat.completions.create(model=mid, messages=msgs, max_tokens=16, temperature=1.0,
                                              seed=seed).choices[0].message.content
    a, b = sampled(1234), sampled(1234)
    check("client_seed_repeats", a == b and a, f"{a!r} / {b!r}")

    # log-probabilities
    r = client.chat.completions.create(model=mid, messages=msgs, max_tokens=6, temperature=0, logprobs=True,
                                       top_logprobs=3)
    lp = r.choices[0].logprobs.content if r.choices[0].logprobs else None
    check("client_chat_logprobs", lp and len(lp) == r.usage.completion_tokens and
          all(t.logprob <= 0 and len(t.top_logprobs) == 3 and abs(t.top_logprobs[0].logprob - t.logprob) < 1e-6
              for t in lp),
          f"{r!r:.400}")
    check("client_chat_logprobs_text", lp and "".join(t.token for t in lp) == r.choices[0].message.content,
          f"{r!r:.400}")
    c = client.completions.create(model=mid, prompt=prompt, max_tokens=5, temperature=0, logprobs=2)
    lp = c.choices[0].logprobs
    check("client_completion_logprobs", lp and len(lp.token_logprobs) == 5 and len(lp.tokens) == 5 and
          all(len(t) == 2 for t in lp.top_logprobs) and lp.text_offset[0] == 0, f"{c!r:.400}")

    # n choices: choice i is the reply with seed + i; streamed by index; usage summed
    r = client.chat.completions.create(model=mid, messages=msgs, max_tokens=8, temperature=0.8, seed=7, n=3,
                                       extra_body={"ignore_eos": True})
    check("client_n", [ch.index for ch in r.choices] == [0, 1, 2] and r.usage.completion_tokens == 24,
          f"{r!r:.400}")
    singles = [client.chat.completions.create(model=mid, messages=msgs, max_tokens=8, temperature=0.8, seed=7 + i,
                                              extra_body={"ignore_eos": True}).choices[0].message.content
               for i in range(3)]
    check("client_n_seeds", [ch.message.content for ch in r.choices] == singles,
          f"{[ch.message.content for ch in r.choices]!r} / {singles!r}")
    by = {}
    for ch in client.chat.completions.create(model=mid, messages=msgs, max_tokens=8, temperature=0.8, seed=7, n=2,
                                             extra_body={"ignore_eos": True}, stream=True):
        for x in ch.choices:
            by[x.index] = by.get(x.index, "") + (x.delta.content or "")
    check("client_n_stream", by == {0: singles[0], 1: singles[1]}, f"{by!r} / {singles[:2]!r}")

    json_schema_checks(client, port, mid)

    # errors: the client's own exception classes
    e, other = raised(lambda: client.chat.completions.create(model=mid, messages=msgs, temperature=5), openai.BadRequestError)
    check("client_400", e is not None and e.status_code == 400 and getattr(e, "param", None) == "temperature",
          other or f"{e!r}")
    e, other = raised(lambda: client.completions.create(model=mid, prompt="hi", n=17), openai.BadRequestError)
    check("client_400_n", e is not None and getattr(e, "param", None) == "n", other or f"{e!r}")
    wrong = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="wrong", max_retries=0, timeout=60)
    e, other = raised(lambda: wrong.models.list(), openai.AuthenticationError)
    check("client_401", e is not None and e.status_code == 401, other or f"{e!r}")
    e, other = raised(lambda: client.models.retrieve("no-such-model"), openai.NotFoundError)
    check("client_404", e is not None and e.status_code == 404, other or f"{e!r}")


PERSON = {"type": "object",
          "properties": {"name": {"type": "string", "maxLength": 24},
                         "age": {"type": "integer", "minimum": 0, "maximum": 150},
                         "pets": {"type": "array", "items": {"type": "string", "enum": ["cat", "dog", "fish"]},
                                  "maxItems": 3},
                         "city": {"type": ["string", "null"], "maxLength": 24}},
          "required": ["name", "age", "pets"], "additionalProperties": False}


def valid_person(v):
    """PERSON checked by hand (independent of wick's schema compiler)."""
    if not isinstance(v, dict) or not {"name", "age", "pets"} <= set(v) or set(v) - {"name", "age", "pets", "city"}:
        return False
    if not isinstance(v["name"], str) or len(v["name"]) > 24:
        return False
    if not isinstance(v["age"], int) or isinstance(v["age"], bool) or not 0 <= v["age"] <= 150:
        return False
    if not isinstance(v["pets"], list) or len(v["pets"]) > 3 or any(p not in ("cat", "dog", "fish") for p in v["pets"]):
        return False
    return "city" not in v or v["city"] is None or (isinstance(v["city"], str) and len(v["city"]) <= 24)


def json_schema_checks(client, port, mid):
    """response_format through the client: json_schema replies (sampled at
    temperature 1 with several seeds, whole and streamed) parse and
    validate; JSON mode gives an object; a schema with a keyword wick does
    not enforce is a 400 naming response_format."""
    fmt = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}}
    msgs = [{"role": "user", "content": "Describe a person as JSON."}]
    for seed in (1, 2, 3):
        try:
            r = client.chat.completions.create(model=mid, messages=msgs, response_format=fmt, temperature=1.0,
                                               seed=seed, max_tokens=160)
            text, why = r.choices[0].message.content, r.choices[0].finish_reason
        except Exception as e:  # noqa: BLE001
            text, why = None, repr(e)
        try:
            v = json.loads(text) if why == "stop" else None
        except (TypeError, ValueError):
            v = None
        check(f"client_json_schema_seed{seed}", why == "stop" and valid_person(v), f"{why}: {text!r}")
    try:
        parts, why = [], None
        for ch in client.chat.completions.create(model=mid, messages=msgs, response_format=fmt, temperature=1.0,
                                                 seed=7, max_tokens=160, stream=True):
            if ch.choices:
                parts.append(ch.choices[0].delta.content or "")
                why = ch.choices[0].finish_reason or why
        text = "".join(parts)
        v = json.loads(text) if why == "stop" else None
    except Exception as e:  # noqa: BLE001
        text, v, why = repr(e), None, None
    check("client_json_schema_stream", why == "stop" and valid_person(v), f"{why}: {text!r}")
    # JSON mode: any object, so a sampled one may nest past max_tokens
    # ("length"); every reply that stops is an object, and one of three does
    stopped, bad_text = 0, None
    for seed in (4, 5, 6):
        try:
            r = client.chat.completions.create(model=mid, messages=msgs, response_format={"type": "json_object"},
                                               temperature=0.7, seed=seed, max_tokens=200)
            text, why = r.choices[0].message.content, r.choices[0].finish_reason
            if why == "stop":
                stopped += 1
                if not isinstance(json.loads(text), dict):
                    bad_text = text
        except Exception as e:  # noqa: BLE001
            bad_text = repr(e)
    check("client_json_object", stopped >= 1 and bad_text is None, f"{stopped} of 3 stopped; {bad_text!r}")
    bad = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "string", "pattern": "^a+$"}}}
    e, other = raised(lambda: client.chat.completions.create(model=mid, messages=msgs, response_format=bad),
                      openai.BadRequestError)
    check("client_json_schema_400", e is not None and getattr(e, "param", None) == "response_format", other or f"{e!r}")


def stream_socket(port, body):
    """A streamed chat request sent on a raw socket, which is returned unread
    (closing it cancels the request)."""
    data = json.dumps(body).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=120)
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
    return s


def settle(port, name, want, timeout=60):
    deadline = time.time() + timeout
    v = metric(port, name)
    while v != want and time.time() < deadline:
        time.sleep(0.05)
        v = metric(port, name)
    return v


def rate_limit_checks(model):
    """--max-seqs 1 --max-queue 1: one sequence running, one waiting, the
    next request is refused and the client raises RateLimitError."""
    srv = ts.Server(model, "--max-seqs", "1", "--max-queue", "1")
    socks = []
    try:
        port = srv.port
        client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0, timeout=120)
        long_chat = {"messages": [{"role": "user", "content": "Tell me a long story."}], "max_tokens": 400,
                     "temperature": 0, "stream": True, "ignore_eos": True}
        socks.append(stream_socket(port, long_chat))
        running = settle(port, "wick_engine_sequences_running", 1)
        socks.append(stream_socket(port, long_chat))
        waiting = settle(port, "wick_engine_sequences_waiting", 1)
        check("client_429_setup", running == 1 and waiting == 1, f"running {running}, waiting {waiting}")
        e, other = raised(lambda: client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=2), openai.RateLimitError)
        check("client_429", e is not None and e.status_code == 429 and getattr(e, "code", None) ==
              "rate_limit_exceeded" and e.response.headers.get("retry-after") == "1", other or f"{e!r}")
        for s in socks:
            s.close()
        socks = []
        check("client_429_drained", settle(port, "wick_generations_in_flight", 0) == 0, "requests left")
        r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=2)
        check("client_429_after", r.choices[0].finish_reason in ("stop", "length"), f"{r!r:.200}")
    finally:
        for s in socks:
            s.close()
        srv.kill()


def main():
    model = ts.model_path()
    if not os.path.isfile(model) or openai is None:
        if not os.path.isfile(model) and os.environ.get("WICK_REQUIRE_MODEL", "0") != "0":
            check("model", False, f"no {model} (WICK_REQUIRE_MODEL is set; tools/fetch-default-model.sh)")
        elif openai is None and os.environ.get("WICK_REQUIRE_TEST_DEPS", "0") != "0":
            check("openai", False, f"no openai package for {sys.executable} (WICK_REQUIRE_TEST_DEPS is set; "
                                   "pip install openai)")
        else:
            why = f"no {model}" if not os.path.isfile(model) else f"no openai package for {sys.executable}"
            print(f"skip server openai client: {why} (tools/fetch-default-model.sh; pip install openai, "
                  "then make test TEST_PYTHON=that python)")
        print(f"{ts.passed} passed, {ts.failed} failed")
        return 1 if ts.failed else 0
    srv = None
    try:
        srv = ts.Server(model, "--api-key", KEY)
        mid = os.path.basename(model)
        mid = mid[:-5] if mid.endswith(".gguf") else mid
        client = OpenAI(base_url=f"http://127.0.0.1:{srv.port}/v1", api_key=KEY, max_retries=0, timeout=300)
        client_checks(client, srv.port, mid)
        srv.kill()
        srv = None
        rate_limit_checks(model)
    except Exception as e:  # noqa: BLE001 (a failure, with what happened)
        check("run", False, f"{e!r}")
    finally:
        if srv:
            srv.kill()
    print(f"{ts.passed} passed, {ts.failed} failed")
    return 1 if ts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
