# test_engine.py — wick.Engine, the batched engine (include/wick_engine.h),
# on the cpu with the tiny llama of tiny_llm.py:
#   - greedy requests in a batch (chunked prefill, small budgets and
#     blocks) give the text and tokens Model.generate gives each alone, as
#     do requests from several Python threads at once and `async for` under
#     asyncio.run; stop strings, end tokens, the context's end;
#   - cancelling (running, waiting, by dropping the request, by closing the
#     engine), seeded sampling, the prefix cache, the statistics;
#   - bad arguments raise; the model refuses its own cache calls while an
#     engine runs on it and is usable again after close;
#   - json_schema: sampled replies constrained to a schema parse and fall
#     within it; schemas wick cannot enforce raise ValueError;
#   - SmolLM2-135M-Instruct (tools/fetch-default-model.sh's cache; skipped
#     when absent unless WICK_REQUIRE_MODEL=1): chat replies in a batch equal
#     each reply alone (tokens and text), with a stop string too; JSON
#     replies to a schema, sampled over seeds, validate;
#   - every wait has a time limit, so a hang fails instead of stalling.
import asyncio
import gc
import json
import os
import threading
import time

import pytest

import wick
import tiny_llm as T

LIMIT = 60.0   # seconds for any one wait


def ids(text):
    """The tiny vocabulary's ids of text (a space: its \u2581 token)."""
    return [T.SPACE if c == " " else T.token_id(c) for c in text]


PROMPTS = [
    [T.BOS, 19, 20],
    [T.BOS] + ids("hello world, how are you?"),
    [T.BOS, 9],
    [T.BOS] + ids("abcdefghij0123456789"),
    [T.BOS, 30, 31, 32, 33, 34],
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("tiny") / "tiny.gguf")
    T.write_model(path, 1)
    return path


@pytest.fixture
def model(tiny):
    m = wick.load_model(tiny)
    yield m
    m.close()


@pytest.fixture(scope="module")
def long_tiny(tmp_path_factory):
    """The tiny model with a context of 4096: a request to the context's end
    runs long enough (thousands of steps) to be cancelled while it runs."""
    path = str(tmp_path_factory.mktemp("tiny") / "tiny4096.gguf")
    saved = T.CFG["ctx"]
    T.CFG["ctx"] = 4096
    try:
        T.write_model(path, 1)
    finally:
        T.CFG["ctx"] = saved
    return path


@pytest.fixture
def long_model(long_tiny):
    m = wick.load_model(long_tiny)
    assert m.info["context"] == 4096
    yield m
    m.close()


def within(fn, *args, limit=LIMIT):
    """fn(*args) on a thread of its own, failing when it takes longer than
    limit seconds; its result, or its exception raised here."""
    out = {}

    def run():
        try:
            out["r"] = fn(*args)
        except BaseException as e:   # noqa: B902 - handed to the test
            out["e"] = e

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(limit)
    assert not th.is_alive(), "%s did not return within %g s" % (getattr(fn, "__name__", fn), limit)
    if "e" in out:
        raise out["e"]
    return out["r"]


def settled(e, finished):
    """The engine's statistics once `finished` requests have ended there (a
    request's last event comes just before the engine counts it and gives
    its blocks back)."""
    deadline = time.monotonic() + LIMIT
    while True:
        s = e.stats()
        if s["finished"] >= finished and s["running"] == 0 and s["waiting"] == 0:
            return s
        assert time.monotonic() < deadline, "the engine did not settle: %s" % s
        time.sleep(0.005)


def drain(req):
    """The pieces of a request, by iteration (with a time limit)."""
    return within(list, req)


def alone(m, prompt, n, **kw):
    """What Model.generate gives for prompt on its own: text, tokens, stop reason."""
    g = m.generate(prompt, n, temperature=0, **kw)
    text = "".join(within(list, g))
    return text, g.tokens, g.stop_reason


def test_greedy_batch_equals_generate_alone(model):
    want = [alone(model, p, 20, ignore_eos=True) for p in PROMPTS]
    # chunks of 3 prompt tokens, 8 tokens a step, blocks of 4: prompts run in
    # pieces beside other sequences' decode tokens
    with wick.Engine(model, max_batch_tokens=8, prefill_chunk=3, block_size=4) as e:
        assert isinstance(e, wick.Engine) and not e.closed and e.model is model
        reqs = [e.submit(p, max_tokens=20, ignore_eos=True) for p in PROMPTS]
        assert all(isinstance(r, wick.EngineRequest) for r in reqs)
        got = [drain(r) for r in reqs]
        for r, pieces, (text, toks, _), p in zip(reqs, got, want, PROMPTS):
            assert all(pieces)                       # no empty pieces
            assert "".join(pieces) == text and r.tokens == toks, p
            assert r.result(timeout=LIMIT) == text and r.text == text
            assert r.finish_reason == "length" and r.done and r.error is None
            assert r.prompt_tokens == len(p) and r.id > 0
            assert list(r) == []                     # ended: stays ended
        s = settled(e, len(PROMPTS))
        assert s["finished"] == len(PROMPTS) and s["gen_tokens"] == 20 * len(PROMPTS)
        assert s["prompt_tokens"] == sum(map(len, PROMPTS)) and s["blocks_used"] == 0
        assert s["running"] == 0 and s["waiting"] == 0 and s["block_size"] == 4 and s["steps"] > 0
    assert e.closed and e.model is None


def test_end_tokens_and_prompt_forms(model):
    # without ignore_eos an end token ends the request, unpassed, as it ends
    # Model.generate; text prompts (BOS as the model says), chat text and
    # messages are tokenized as generate does
    forms = [(p, {}) for p in PROMPTS] + [
        ("hello", {}),
        ("what is this?", {"chat": True}),
        ("hi", {"chat": True, "system": "be brief"}),
        ([{"role": "user", "content": "abc"}], {}),
        ([("user", "a"), ("assistant", "b"), ("user", "c")], {}),
    ]
    want = [alone(model, p, 16, **kw) for p, kw in forms]
    with wick.Engine(model, max_batch_tokens=16, block_size=8) as e:
        reqs = [e.submit(p, max_tokens=16, **kw) for p, kw in forms]
        for r, (text, toks, reason), (p, _) in zip(reqs, want, forms):
            assert "".join(drain(r)) == text and r.tokens == toks, p
            assert r.finish_reason == {"eog": "stop", "length": "length"}[reason]
            assert T.EOS not in r.tokens


def test_stop_strings(model):
    prompt = PROMPTS[0]
    full, _, _ = alone(model, prompt, 16, ignore_eos=True)
    stop = full[5:7]
    with wick.Engine(model) as e:
        r = e.submit(prompt, max_tokens=16, ignore_eos=True, stop=["zzzz", stop])
        text = "".join(drain(r))
        assert text == full[:full.index(stop)] and r.finish_reason == "stop"
        r = e.submit(prompt, max_tokens=16, ignore_eos=True, stop=stop)   # one str
        assert r.result(timeout=LIMIT) == full[:full.index(stop)]
        r = e.submit(prompt, max_tokens=16, ignore_eos=True, stop=[])     # none
        assert r.result(timeout=LIMIT) == full and r.finish_reason == "length"


def test_context_end(tiny):
    m = wick.load_model(tiny, context=16)
    g = m.generate([T.BOS, 9], None, temperature=0, ignore_eos=True)
    want = "".join(within(list, g))
    assert g.stop_reason == "context"
    with wick.Engine(m, block_size=4) as e:
        for mt in (0, None):
            r = e.submit([T.BOS, 9], max_tokens=mt, ignore_eos=True)
            text = r.result(timeout=LIMIT)
            assert r.finish_reason == "length" and r.tokens[:len(g.tokens)] == g.tokens
            assert text.startswith(want) and 2 + len(r.tokens) <= 16 + 1
    m.close()


def test_requests_from_threads(model):
    want = [alone(model, p, 12, ignore_eos=True)[0] for p in PROMPTS]
    with wick.Engine(model, max_seqs=6, max_batch_tokens=12, block_size=4) as e:
        out, errors = {}, []

        def client(k):
            try:
                for i in range(len(PROMPTS)):
                    j = (i + k) % len(PROMPTS)
                    r = e.submit(PROMPTS[j], max_tokens=12, ignore_eos=True)
                    out[(k, i)] = (j, "".join(r))      # iterated on this thread
            except BaseException as ex:   # noqa: B902
                errors.append(ex)

        threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(LIMIT)
            assert not th.is_alive(), "a client thread hangs"
        assert errors == []
        assert len(out) == 4 * len(PROMPTS)
        for j, text in out.values():
            assert text == want[j]
        assert settled(e, 4 * len(PROMPTS))["finished"] == 4 * len(PROMPTS)


def test_async_for(model):
    want = [alone(model, p, 16, ignore_eos=True)[0] for p in PROMPTS]

    async def one(e, p):
        pieces = []
        async for piece in e.submit(p, max_tokens=16, ignore_eos=True):
            assert piece
            pieces.append(piece)
        return "".join(pieces)

    async def main(e):
        return await asyncio.wait_for(asyncio.gather(*(one(e, p) for p in PROMPTS)), LIMIT)

    with wick.Engine(model, max_batch_tokens=8, block_size=4) as e:
        assert within(asyncio.run, main(e)) == want
        # a request that ended before anyone waited: the pipe made late still wakes
        r = e.submit(PROMPTS[0], max_tokens=16, ignore_eos=True)
        assert r.wait(timeout=LIMIT)

        async def late():
            return "".join([p async for p in r])

        assert within(asyncio.run, late()) == want[0]

        # a cancelled request ends an async for too
        async def cancelled():
            r = e.submit(PROMPTS[1], max_tokens=0, ignore_eos=True)
            n = 0
            async for _ in r:
                n += 1
                if n == 2:
                    r.cancel()
            return r.finish_reason

        assert within(asyncio.run, asyncio.wait_for(cancelled(), LIMIT)) in ("cancelled", "length")


def test_cancel(long_model):
    model = long_model
    with wick.Engine(model, max_seqs=1, n_blocks=2048, block_size=4) as e:
        a = e.submit(PROMPTS[0], max_tokens=0, ignore_eos=True)   # to the context's end
        b = e.submit(PROMPTS[1], max_tokens=0, ignore_eos=True)   # waits: one sequence at a time
        first = within(next, a)
        assert first
        b.cancel()
        a.cancel()
        rest = drain(a)
        assert a.finish_reason == "cancelled" and len(a.tokens) < 4000
        assert a.result(timeout=LIMIT) == first + "".join(rest)
        assert b.result(timeout=LIMIT) == "" and b.finish_reason == "cancelled" and b.tokens == []
        a.cancel()   # ended: nothing happens
        # dropping a request that is running cancels it
        c = e.submit(PROMPTS[2], max_tokens=0, ignore_eos=True)
        within(next, c)
        del c
        gc.collect()
        s = settled(e, 3)   # (without the cancel it would run to the context's end: thousands of steps)
        assert s["finished"] == 3 and s["blocks_used"] == 0


def test_close_cancels_what_is_left(long_model):
    model = long_model
    e = wick.Engine(model, max_seqs=2, n_blocks=4096, block_size=4)
    reqs = [e.submit(p, max_tokens=0, ignore_eos=True) for p in PROMPTS]
    within(next, reqs[0])
    got = {}

    def reader():          # blocked in the iterator while the engine closes
        got["n"] = len(list(reqs[1]))

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    e.close()
    th.join(LIMIT)
    assert not th.is_alive(), "an iterator did not end when the engine closed"
    assert all(r.done and r.finish_reason == "cancelled" for r in reqs)
    e.close()   # twice is fine
    with pytest.raises(ValueError):
        e.submit(PROMPTS[0])
    with pytest.raises(ValueError):
        e.stats()
    with pytest.raises(ValueError):
        with e:
            pass
    # the model is free again
    assert alone(model, PROMPTS[0], 4)[1]


def test_requests_keep_the_engine(model):
    want = alone(model, PROMPTS[0], 12, ignore_eos=True)[0]
    r = wick.Engine(model).submit(PROMPTS[0], max_tokens=12, ignore_eos=True)   # the engine: only r holds it
    assert "".join(drain(r)) == want and not r.engine.closed
    with pytest.raises(RuntimeError):
        model.eval([T.BOS])
    del r
    gc.collect()
    assert model.eval([T.BOS]).shape == (T.CFG["V"],)   # the engine went with it


def test_model_refused_while_the_engine_is_open(model):
    want = alone(model, PROMPTS[0], 8, ignore_eos=True)
    g = model.generate(PROMPTS[0], 8)      # unfinished: the engine closes it
    with wick.Engine(model) as e:
        assert list(g) == []
        for call in (lambda: model.generate(PROMPTS[0], 4), lambda: model.eval([T.BOS]),
                     lambda: model.logits([T.BOS]), lambda: model.rewind(0), model.close):
            with pytest.raises(RuntimeError) as ex:
                call()
            assert "in use by an engine" in str(ex.value)
        with pytest.raises(RuntimeError) as ex:
            wick.Engine(model)             # one engine on a model at a time
        assert "in use by an engine" in str(ex.value)
        # what only reads the model goes on
        assert model.tokenize("ab") == [T.BOS, T.token_id("a"), T.token_id("b")]
        assert model.info["n_vocab"] == T.CFG["V"] and not model.closed
        r = e.submit(PROMPTS[0], max_tokens=8, ignore_eos=True)
        assert r.result(timeout=LIMIT) == want[0]
    assert alone(model, PROMPTS[0], 8, ignore_eos=True) == want
    model.close()
    with pytest.raises(ValueError):
        wick.Engine(model)                 # a closed model


def test_bad_arguments(model):
    with pytest.raises(TypeError):
        wick.Engine("not a model")
    with pytest.raises(ValueError):
        wick.Engine(model, max_seqs=-1)
    with pytest.raises(ValueError):
        wick.Engine(model, block_size=-4)
    with wick.Engine(model, n_blocks=4, block_size=4) as e:   # a cache of 16 positions
        V = T.CFG["V"]
        with pytest.raises(ValueError) as ex:
            e.submit([])
        assert "at least one token" in str(ex.value)
        with pytest.raises(IndexError) as ex:
            e.submit([T.BOS, V])
        assert "vocabulary" in str(ex.value)
        with pytest.raises(IndexError):
            e.submit([T.BOS, -1])
        with pytest.raises(ValueError) as ex:
            e.submit([T.BOS] * 20)             # longer than the cache
        assert "does not fit" in str(ex.value)
        with pytest.raises(ValueError):
            e.submit([T.BOS] * 10, max_tokens=10)
        for kw in (dict(temperature=-1), dict(top_p=0), dict(top_p=1.5), dict(min_p=2), dict(max_tokens=-1),
                   dict(top_k=-1), dict(repetition_penalty=0)):
            with pytest.raises(ValueError):
                e.submit([T.BOS], **kw)
        with pytest.raises(TypeError):
            e.submit([T.BOS], stop=[1])
        with pytest.raises(TypeError):
            e.submit([T.BOS], stop=5)
        with pytest.raises(ValueError):
            e.submit([T.BOS], chat=True)       # chat goes with text
        with pytest.raises(TypeError):
            e.submit([T.BOS], 4)               # options are keywords
        with pytest.raises(TypeError):
            e.submit(3.5)
        r = e.submit([T.BOS], max_tokens=2)
        with pytest.raises(ValueError):
            r.result(timeout=-1)
        assert r.wait(timeout=LIMIT)
        assert settled(e, 1)["finished"] == 1   # the refused ones never ran


def test_result_timeout(long_model):
    model = long_model
    with wick.Engine(model, max_seqs=1, n_blocks=2048, block_size=4) as e:
        a = e.submit(PROMPTS[0], max_tokens=0, ignore_eos=True)
        b = e.submit(PROMPTS[1], max_tokens=4, ignore_eos=True)   # waits behind a
        assert b.finish_reason is None and not b.done
        with pytest.raises(TimeoutError):
            b.result(timeout=0)
        assert b.wait(timeout=0) is False
        a.cancel()
        assert b.result(timeout=LIMIT) and b.finish_reason == "length"


def test_sampling(model):
    prompt = PROMPTS[0]
    kw = dict(temperature=0.9, top_k=20, top_p=0.95, min_p=0.0, ignore_eos=True, max_tokens=12)
    with wick.Engine(model, block_size=4) as e:
        runs = {}
        for seed in (1, 2, 3, 4, 5):
            a, b = e.submit(prompt, seed=seed, **kw), e.submit(prompt, seed=seed, **kw)   # side by side
            a.wait(LIMIT), b.wait(LIMIT)
            assert a.tokens == b.tokens and len(a.tokens) == 12, seed
            runs[seed] = tuple(a.tokens)
        assert len(set(runs.values())) > 1     # and the seed matters
        greedy = e.submit(prompt, max_tokens=12, ignore_eos=True)
        top1 = e.submit(prompt, max_tokens=12, ignore_eos=True, temperature=1.5, top_k=1, seed=9)
        pen = e.submit(prompt, max_tokens=12, ignore_eos=True, repetition_penalty=1.8, repeat_last_n=16)
        for r in (greedy, top1, pen):
            assert r.wait(LIMIT)
        assert top1.tokens == greedy.tokens and len(pen.tokens) == 12


def test_penalties_and_logprobs(model):
    prompt = PROMPTS[0]
    with wick.Engine(model, block_size=4) as e:
        greedy = e.submit(prompt, max_tokens=12, ignore_eos=True, logprobs=True)
        plain = e.submit(prompt, max_tokens=12, ignore_eos=True)
        freq = e.submit(prompt, max_tokens=12, ignore_eos=True, frequency_penalty=2.0, presence_penalty=2.0)
        for r in (greedy, plain, freq):
            assert r.wait(LIMIT)
        # logprobs do not change the tokens; each is a log-probability
        assert greedy.tokens == plain.tokens and plain.logprobs is None
        assert len(greedy.logprobs) == len(greedy.tokens) == 12
        assert all(lp <= 0.0 for lp in greedy.logprobs)
        # the strongest penalties make a repeated token less likely: no token
        # more often than the greedy run repeats its most common one
        assert len(freq.tokens) == 12
        assert max(freq.tokens.count(t) for t in freq.tokens) <= max(plain.tokens.count(t) for t in plain.tokens)
        with pytest.raises(ValueError):
            e.submit(prompt, presence_penalty=2.5)
        with pytest.raises(ValueError):
            e.submit(prompt, frequency_penalty=-3.0)


def test_prefix_cache(tiny):
    m = wick.load_model(tiny)
    prefix = [T.BOS] + ids("the same long beginning, ab")   # 28 tokens: 7 blocks of 4
    a, b = prefix + [T.token_id("x")], prefix + [T.token_id("y"), T.token_id("z")]
    want = [alone(m, p, 6, ignore_eos=True)[0] for p in (a, b)]
    for on in (True, False):
        with wick.Engine(m, block_size=4, prefix_cache=on) as e:
            r1 = e.submit(a, max_tokens=6, ignore_eos=True)
            assert r1.result(timeout=LIMIT) == want[0] and r1.cached_tokens == 0
            r2 = e.submit(b, max_tokens=6, ignore_eos=True)
            assert r2.result(timeout=LIMIT) == want[1]
            assert r2.cached_tokens == (28 if on else 0) and settled(e, 2)["cached_tokens"] == r2.cached_tokens
    m.close()


def test_many_requests_dropped_midway(model):
    # requests dropped while running, iterated part way, or never looked
    # at: every one ends, every block comes back, nothing crashes
    with wick.Engine(model, max_seqs=8, block_size=4) as e:
        for i in range(120):
            r = e.submit([T.BOS, 9 + i % 30], max_tokens=8, temperature=0.5, seed=i, ignore_eos=True, stop=["zz"])
            if i % 3 == 0:
                within(next, r, None)          # a piece (None: it ended without text)
            elif i % 3 == 1:
                r.result(timeout=LIMIT)
            del r
        s = settled(e, 120)
        assert s["finished"] == 120 and s["blocks_used"] == 0


# ---- SmolLM2-135M-Instruct -------------------------------------------------------------


def smollm2():
    p = os.environ.get("WICK_SMOLLM2") or wick.model.default_model_path()
    if os.path.exists(p):
        return p
    if os.environ.get("WICK_REQUIRE_MODEL", "0") != "0":
        pytest.fail("the default model is not at %s (tools/fetch-default-model.sh)" % p)
    pytest.skip("no SmolLM2 at %s (tools/fetch-default-model.sh)" % p)


def test_smollm2_batch_equals_alone():
    m = wick.load_model(smollm2(), context=256)
    questions = ["What is the capital of France?", "Name three colours.", "Why is the sky blue?",
                 "Write a haiku about the sea.", "What is 12 times 12?"]
    want = [alone(m, q, 24, chat=True) for q in questions]
    stop = want[2][0][10:13]
    cut = alone(m, questions[2], 24, chat=True, stop=stop)
    assert stop and cut[0] == want[2][0][:want[2][0].index(stop)]
    with wick.Engine(m, max_batch_tokens=64, prefill_chunk=16) as e:
        reqs = [e.submit(q, max_tokens=24, chat=True) for q in questions]
        reqs.append(e.submit(questions[2], max_tokens=24, chat=True, stop=stop))
        for r, (text, toks, reason) in zip(reqs, want + [cut]):
            assert r.result(timeout=300) == text and r.tokens == toks, (r.text, text)
            assert r.finish_reason == ("length" if reason == "length" else "stop")
        # the same system prompt and chat header: later requests share its blocks
        again = e.submit(questions[0], max_tokens=24, chat=True)
        assert again.result(timeout=300) == want[0][0] and again.cached_tokens > 0
    m.close()


def test_json_schema(model):
    # the tiny vocabulary has digits but no braces or quotes: an integer
    schema = {"type": "integer", "minimum": 5, "maximum": 250}
    with wick.Engine(model) as e:
        reqs = [e.submit([T.BOS, 9], max_tokens=10, temperature=1.0, seed=s, json_schema=schema) for s in range(8)]
        reqs.append(e.submit([T.BOS, 9], max_tokens=10, json_schema=json.dumps(schema)))   # greedy, as text
        for r in reqs:
            text = r.result(timeout=LIMIT)
            assert r.finish_reason == "stop", (text, r.finish_reason)
            v = json.loads(text)
            assert isinstance(v, int) and 5 <= v <= 250, text
        with pytest.raises(ValueError, match="'pattern' is not supported"):
            e.submit([T.BOS, 9], json_schema={"type": "string", "pattern": "^a+$"})
        with pytest.raises(ValueError, match="not valid JSON"):
            e.submit([T.BOS, 9], json_schema="{not json")
        with pytest.raises(TypeError):
            e.submit([T.BOS, 9], json_schema={"x": object()})


def test_smollm2_json_schema():
    m = wick.load_model(smollm2(), context=512)
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
                                               "age": {"type": "integer", "minimum": 0, "maximum": 120}},
              "required": ["name", "age"], "additionalProperties": False}
    with wick.Engine(m) as e:
        reqs = [e.submit("Describe a person as JSON.", chat=True, max_tokens=200, temperature=1.0, seed=s,
                         json_schema=schema) for s in range(3)]
        for r in reqs:
            v = json.loads(r.result(timeout=600))
            assert r.finish_reason == "stop" and set(v) == {"name", "age"}, r.text
            assert isinstance(v["name"], str) and len(v["name"]) <= 20 and 0 <= v["age"] <= 120, r.text
    m.close()
