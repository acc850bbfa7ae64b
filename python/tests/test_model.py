# test_model.py — wick.Model, wick.Tokenizer and generation on the cpu:
#   - a tiny llama written by tiny_llm.py (GGUF by hand, random weights from
#     a printed seed) against its float64 numpy forward pass: logits at
#     every position (f32 and bf16 activations), the cache (eval in steps,
#     rewind), greedy generation against the reference's argmax chain, the
#     text pieces (a character split over two tokens comes out whole, as the
#     C decoder gives it), stop strings, end tokens, closing early, sampling
#     by seed, tokenization and BOS, chat formatting, errors, a generation
#     on another thread, and a loop of generations dropped mid-way that does
#     not grow the process;
#   - the same file through `build/wick run` (the C command line), when it
#     is built: the same bytes from generate() greedy and sampled;
#   - SmolLM2-135M-Instruct (tools/fetch-default-model.sh's cache; skipped
#     when absent unless WICK_REQUIRE_MODEL=1) against tests/data/
#     smollm2_ref.json (Hugging Face transformers on the same file): prompt
#     ids, the chat text, top-8 logits at every prompt position within 5e-4,
#     32 greedy tokens identical; and against `build/wick run`.
import json
import os
import subprocess
import threading

import numpy as np
import pytest

import wick
import tiny_llm as T

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEED = int(os.environ.get("WICK_TEST_SEED", "1"))   # the tiny model's weights (seed 1 splits "é" in a greedy run)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("tiny") / "tiny.gguf")
    print("tiny model weights: seed %d (WICK_TEST_SEED)" % SEED)
    w = T.write_model(path, SEED)
    return path, w


@pytest.fixture
def model(tiny):
    m = wick.load_model(tiny[0])
    yield m
    m.close()


def rel_err(got, ref):
    return float(np.abs(np.asarray(got, np.float64) - ref).max() / np.abs(ref).max())


def cli():
    p = os.environ.get("WICK_CLI", os.path.join(ROOT, "build", "wick"))
    return p if os.access(p, os.X_OK) else None


# ---- the tiny model ---------------------------------------------------------------


def test_info(model):
    i = model.info
    assert (i["arch"], i["n_vocab"], i["n_layer"], i["n_head"], i["n_head_kv"], i["head_dim"]) == \
        ("llama", T.CFG["V"], T.CFG["L"], T.CFG["H"], T.CFG["Hkv"], T.CFG["D"])
    assert i["bos_id"] == T.BOS and i["add_bos"] and T.EOS in i["eog_ids"]
    assert i["chat_format"] == "chatml" and i["context"] == T.CFG["ctx"] and i["device"] == "cpu"
    assert i["weight_dtype"] == "f32" and i["act_dtype"] == "f32"
    assert model.is_eog(T.EOS) and not model.is_eog(T.token_id("a"))
    assert model.token_bytes(T.BYTE_C3) == b"\xc3" and model.token_bytes(T.EOS) == b""
    assert model.pos == 0 and not model.closed


@pytest.mark.parametrize("dtype,bound", [("f32", 2e-4), ("bf16", 5e-2)])
def test_logits_against_reference(tiny, dtype, bound):
    path, w = tiny
    m = wick.load_model(path, dtype=dtype)
    rng = np.random.default_rng(7)
    prompt = [T.BOS] + [int(x) for x in rng.integers(8, T.CFG["V"], size=20)]
    ref = T.ref_logits(w, prompt)
    lg = m.logits(prompt, all_logits=True)
    assert isinstance(lg, wick.Tensor) and lg.shape == (21, T.CFG["V"]) and lg.dtype == "f32"
    assert rel_err(lg.numpy(), ref) < bound
    assert m.pos == 21
    last = m.logits(prompt)
    assert last.shape == (T.CFG["V"],) and rel_err(last.numpy(), ref[-1]) < bound
    # the cache: the prompt in three steps, then a rewind and another ending
    m.rewind(0)
    parts = [m.eval(prompt[:7], all_logits=True), m.eval(prompt[7:8], all_logits=True), m.eval(prompt[8:], all_logits=True)]
    assert rel_err(np.concatenate([p.numpy() for p in parts]), ref) < bound
    m.rewind(10)
    assert m.pos == 10
    other = prompt[:10] + [T.token_id("z"), T.token_id("q")]
    assert rel_err(m.eval(other[10:]).numpy(), T.ref_logits(w, other)[-1]) < bound
    m.close()


def test_greedy_generation(tiny, model):
    _, w = tiny
    prompt = [T.BOS, 19, 20]
    want, margins = T.ref_greedy(w, prompt, 16)
    g = model.generate(prompt, 16, temperature=0, ignore_eos=True)
    assert isinstance(g, wick.Generation) and g.stop_reason is None and g.stats is None
    pieces = list(g)
    for i, (a, b) in enumerate(zip(g.tokens, want)):
        assert a == b or margins[i] < 1e-4, (i, g.tokens, want)
    assert len(g.tokens) == 16 and g.stop_reason == "length"
    s = g.stats
    assert s["gen_tokens"] == 16 and s["prompt_tokens"] == 3 and s["stop"] == "length" and s["gen_ms"] >= 0
    # the text: what the tokenizer's decoder makes of the tokens, in pieces
    # of whole characters; with seed 1 the tokens hold b"\xc3" b"\xa9", which
    # come out as one "é"
    text = "".join(pieces)
    assert text == model.tokenizer.decode(g.tokens, skip_special=True, keep_space=True)
    assert all(p for p in pieces)
    if SEED == 1:
        i = g.tokens.index(T.BYTE_C3, g.tokens.index(T.BYTE_C3) + 1)
        assert g.tokens[i + 1] == T.BYTE_A9 and "é" in pieces
    # the cache holds the prompt and every generated token but the last
    assert model.pos == 3 + 16 - 1
    assert list(model.generate(prompt, 16, temperature=0, ignore_eos=True)) == pieces   # the same again


def test_end_token_stops(tiny, model):
    _, w = tiny
    prompt = [T.BOS, 19, 20]
    free = model.generate(prompt, 16, temperature=0, ignore_eos=True)
    list(free)
    # without ignore_eos the first end token ends generation, unpassed
    g = model.generate(prompt, 16, temperature=0)
    list(g)
    if T.EOS in free.tokens:
        assert g.tokens == free.tokens[:free.tokens.index(T.EOS)] and g.stop_reason == "eog"
    else:
        assert g.tokens == free.tokens and g.stop_reason == "length"


def test_stop_strings(model):
    prompt = [T.BOS, 19, 20]
    full = "".join(model.generate(prompt, 16, temperature=0, ignore_eos=True))
    stop = full[5:7]
    g = model.generate(prompt, 16, temperature=0, ignore_eos=True, stop=["zzzz", stop])
    text = "".join(g)
    assert text == full[:full.index(stop)] and g.stop_reason == "stop_string"
    g = model.generate(prompt, 16, temperature=0, ignore_eos=True, stop=stop)   # one str
    assert "".join(g) == full[:full.index(stop)]


def test_close_early_and_cache(model):
    prompt = [T.BOS, 19, 20]
    g = model.generate(prompt, 30, temperature=0, ignore_eos=True)
    first = [next(g) for _ in range(3)]
    g.close()
    assert list(g) == [] and g.stop_reason == "closed"
    assert 3 + 3 <= model.pos <= 3 + len(g.tokens)
    # the model is free again, and its cache is what it says
    again = model.generate(prompt, 30, temperature=0, ignore_eos=True)
    assert [next(again) for _ in range(3)] == first
    # another call on the model closes an unfinished generation
    model.eval([T.BOS])
    assert list(again) == [] and again.stop_reason == "closed"
    # dropping one closes it too
    h = model.generate(prompt, 30, temperature=0, ignore_eos=True)
    next(h)
    del h
    assert model.eval([T.BOS, 9]).shape == (T.CFG["V"],)
    # a generation never started leaves the model as it was
    model.rewind(0)
    k = model.generate(prompt, 5)
    k.close()
    assert model.pos == 0 and list(k) == []
    with model.generate(prompt, 30, temperature=0, ignore_eos=True) as c:
        next(c)
    assert c.stop_reason == "closed"


def test_reuse_cache(tiny, model):
    _, w = tiny
    a = [T.BOS] + [T.token_id(ch) for ch in "hello"]
    list(model.generate(a, 4, temperature=0, ignore_eos=True))
    b = a + [T.token_id(ch) for ch in "xyz"]
    g = model.generate(b, 6, temperature=0, ignore_eos=True, reuse_cache=True)
    list(g)
    assert len(g.prompt_ids) == 3    # the first 6 tokens were in the cache
    want, margins = T.ref_greedy(w, b, 6)
    assert all(x == y or m < 1e-4 for x, y, m in zip(g.tokens, want, margins))
    fresh = model.generate(b, 6, temperature=0, ignore_eos=True)
    list(fresh)
    assert fresh.prompt_ids == b


def test_reuse_cache_with_window_caches(tmp_path):
    # every layer a window of 4, prefill chunks of 2: caches of 6 positions
    # (window caches, docs/models.md). After 6 + 8 tokens a second prompt
    # that shares the first one's 6 cannot keep them (the window's
    # positions have moved on): the cache empties, generate runs the whole
    # prompt, and the tokens are those of a fresh model (the window and
    # the 2 layers see 7 tokens back: running only the new 3 would differ)
    path = str(tmp_path / "window.gguf")
    T.write_model(path, seed=3, window=4)
    m = wick.load_model(path, prefill_chunk=2)
    a = [T.BOS] + [T.token_id(ch) for ch in "hello"]
    list(m.generate(a, 8, temperature=0, ignore_eos=True))
    b = a + [T.token_id(ch) for ch in "xyz"]
    g = m.generate(b, 6, temperature=0, ignore_eos=True, reuse_cache=True)
    list(g)
    fresh = wick.load_model(path, prefill_chunk=2).generate(b, 6, temperature=0, ignore_eos=True)
    list(fresh)
    assert g.prompt_ids == b and g.tokens == fresh.tokens
    p = m.pos
    m.rewind(p - 1)                 # one back: the window's positions are still held
    assert m.pos == p - 1
    m.rewind(2)                     # far back: they are not, and the cache empties
    assert m.pos == 0


def test_sampling(model):
    prompt = [T.BOS, 12, 13]
    kw = dict(temperature=0.9, top_k=20, top_p=0.95, min_p=0.0, ignore_eos=True)
    runs = {}
    for seed in (1, 2, 3, 4, 5):
        g = model.generate(prompt, 12, seed=seed, **kw)
        list(g)
        g2 = model.generate(prompt, 12, seed=seed, **kw)
        list(g2)
        assert g.tokens == g2.tokens, seed      # the same seed, the same choices
        runs[seed] = tuple(g.tokens)
    assert len(set(runs.values())) > 1      # and the seed matters
    greedy = model.generate(prompt, 12, temperature=0, ignore_eos=True)
    list(greedy)
    top1 = model.generate(prompt, 12, temperature=1.5, top_k=1, seed=9, ignore_eos=True)
    list(top1)
    assert top1.tokens == greedy.tokens
    pen = model.generate(prompt, 12, temperature=0, repetition_penalty=1.8, ignore_eos=True)
    list(pen)
    assert len(pen.tokens) == 12


def test_tokenize_and_decode(tiny, model):
    ids = [T.token_id(c) for c in "ab"]
    assert model.tokenize("ab") == [T.BOS] + ids
    assert model.tokenize("ab", add_bos=False) == ids
    assert model.tokenize("a b") == [T.BOS, T.token_id("a"), T.SPACE, T.token_id("b")]
    assert model.tokenize("a<|im_end|>b") == [T.BOS, T.token_id("a"), T.EOS, T.token_id("b")]
    assert model.tokenize(b"ab") == [T.BOS] + ids
    assert model.tokenize("é", add_bos=False) == [T.UNK]       # not a token; "\xc3" is no byte-fallback token
    assert model.decode([T.BOS] + ids, skip_special=True) == "ab"
    assert model.decode([T.BOS] + ids) == "<s>ab"
    tok = wick.Tokenizer(tiny[0])
    assert model.tokenizer.n_tokens == len(tok) == T.CFG["V"]
    assert tok.encode("a b c") == model.tokenize("a b c")
    assert tok.encode("a<|im_end|>", parse_special=False) != tok.encode("a<|im_end|>")
    assert tok.encode("ab", add_special=False) == ids
    assert (tok.bos, tok.eos) == (T.BOS, T.EOS) and T.EOS in tok.eog
    assert tok.token(T.SPACE) == "\u2581".encode() and tok.find("\u2581") == T.SPACE and tok.find("nope") is None
    assert tok.is_special(T.BOS) and not tok.is_special(T.SPACE)
    assert tok.token_type(T.EOS) == 3 and tok.token_type(T.UNK) == 2
    assert tok.decode_bytes([T.BYTE_C3]) == b"\xc3" and tok.decode([T.BYTE_C3]) == "\ufffd"
    # streaming: a character split over two tokens comes out whole
    s = tok.stream()
    assert s.push(T.token_id("a")) == "a" and s.push(T.BYTE_C3) == "" and s.push(T.BYTE_A9) == "é"
    assert s.push(T.BYTE_C3) == "" and s.flush() == "\ufffd"
    rng = np.random.default_rng(3)
    for _ in range(20):
        ids = [int(x) for x in rng.integers(3, T.CFG["V"], size=12)]
        s = tok.stream(skip_special=True)
        assert "".join(s.push(i) for i in ids) + s.flush() == tok.decode(ids, skip_special=True)
    with pytest.raises(IndexError):
        tok.decode([T.CFG["V"]])
    with pytest.raises(IndexError):
        tok.token(-1)


def _unescape(s):
    """tools/gen_tok_corpus.py's escaping undone (backslash, n, r, xNN)"""
    out, i = bytearray(), 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s) and s[i + 1] in "\\nrx":
            d = s[i + 1]
            if d == "x":
                out.append(int(s[i + 2:i + 4], 16))
                i += 4
                continue
            out += {"\\": b"\\", "n": b"\n", "r": b"\r"}[d]
            i += 2
            continue
        out += s[i].encode()
        i += 1
    return bytes(out)


@pytest.mark.parametrize("file", ["bytes.gguf", "bytes.tokenizer.json"])
def test_tokenizer_against_hugging_face(file):
    """tests/data/tok/expect.txt: Hugging Face tokenizers' ids and decoding
    of each text, for a byte-level BPE fixture as GGUF and as tokenizer.json."""
    d = os.path.join(ROOT, "tests", "data", "tok")
    try:
        tok = wick.Tokenizer(os.path.join(d, file))
    except NotImplementedError as e:   # byte-level BPE needs PCRE2 at run time
        pytest.skip(str(e))
    cases, name, text = 0, None, None
    with open(os.path.join(d, "expect.txt"), encoding="utf-8") as f:
        for line in f.read().split("\n"):
            if len(line) < 2 or line[0] == "#":
                continue
            k, v = line[0], line[2:]
            if k == "T":
                name = v
            elif k == "I":
                text = _unescape(v)
            elif k == "E" and name == "bytes":
                ids = [int(x) for x in v.split()]
                assert tok.encode(text) == ids, text
                cases += 1
            elif k == "D" and name == "bytes":
                want = _unescape(v).decode("utf-8")
                assert tok.decode(ids) == want, text
                s = tok.stream()
                assert "".join(s.push(i) for i in ids) + s.flush() == want
    assert cases >= 20


def test_tokenizer_paths(tmp_path):
    """A folder holding tokenizer.json, and a model file in it, find it."""
    import shutil
    src = os.path.join(ROOT, "tests", "data", "tok", "bytes.tokenizer.json")
    try:
        want = wick.Tokenizer(src).encode("Hello world")
    except NotImplementedError as e:
        pytest.skip(str(e))
    shutil.copy(src, tmp_path / "tokenizer.json")
    (tmp_path / "model.safetensors").write_bytes(b"")
    assert wick.Tokenizer(str(tmp_path)).encode("Hello world") == want
    assert wick.Tokenizer(tmp_path / "model.safetensors").encode("Hello world") == want
    with pytest.raises(OSError):
        wick.Tokenizer(str(tmp_path / "nowhere"))


def test_chat(model):
    msgs = [{"role": "user", "content": "hi"}]
    want = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert model.format_chat(msgs) == want
    assert model.info["chat_template_error"] is None        # the file's template, run by wick
    assert model.format_chat([("user", "hi")], add_generation_prompt=False) == want[:-len("<|im_start|>assistant\n")]
    assert wick.chat_apply("chatml", msgs) == want
    assert wick.chat_apply("chatml", msgs, default_system="be brief").startswith("<|im_start|>system\nbe brief<|im_end|>\n")
    assert wick.chat_format_detect(T.CHATML) == "chatml" and wick.chat_format_detect("{{ x }}") == "none"
    g = model.generate(msgs, 3, temperature=0)
    list(g)
    assert g.prompt_ids == model.tokenize(want, add_bos=False)
    g = model.generate("hi", 3, temperature=0, chat=True)
    list(g)
    assert g.prompt_ids == model.tokenize(want, add_bos=False)
    g = model.generate("hi", 3, temperature=0, chat=True, system="sys")
    list(g)
    assert g.prompt_ids == model.tokenize("<|im_start|>system\nsys<|im_end|>\n" + want, add_bos=False)
    g = model.generate("hi", 3, temperature=0)      # raw text: BOS as the model says
    list(g)
    assert g.prompt_ids == [T.BOS, T.token_id("h"), T.token_id("i")]
    with pytest.raises(ValueError):
        wick.chat_apply("nope", msgs)
    with pytest.raises(TypeError):
        model.format_chat([{"role": "user"}])


def test_errors(tiny, tmp_path):
    with pytest.raises(OSError):
        wick.load_model(str(tmp_path / "missing.gguf"))
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 20)
    with pytest.raises(Exception) as e:
        wick.load_model(str(bad))
    assert "bad.gguf" in str(e.value)
    with pytest.raises(TypeError):
        wick.load_model(tiny[0], dtype="f16")
    m = wick.load_model(tiny[0], context=16)
    assert m.info["context"] == 16
    with pytest.raises(IndexError):
        m.eval([T.CFG["V"]])
    with pytest.raises(IndexError):
        m.eval([-1])
    with pytest.raises(ValueError) as e:
        list(m.generate([T.BOS] * 20, 4))         # longer than the context
    assert "does not fit" in str(e.value)
    with pytest.raises(ValueError):
        m.generate([T.BOS], 4, temperature=-1)
    with pytest.raises(ValueError):
        m.generate([T.BOS], 4, top_p=0)
    with pytest.raises(ValueError):
        m.generate([], 4)
    with pytest.raises(TypeError):
        m.generate([T.BOS], 4, stop=[1])
    # the context fills up: generation ends there
    g = m.generate([T.BOS, 9], None, temperature=0, ignore_eos=True)
    list(g)
    assert g.stop_reason == "context" and m.pos == 16
    m.close()
    assert m.closed
    with pytest.raises(ValueError):
        m.generate([T.BOS], 4)
    with pytest.raises(ValueError):
        m.tokenize("a")


def test_default_model_path(monkeypatch, tmp_path):
    monkeypatch.setenv("WICK_CACHE", str(tmp_path))
    assert wick.model.default_model_path() == str(tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf")
    with pytest.raises(FileNotFoundError) as e:
        wick.load_model()
    assert "fetch-default-model.sh" in str(e.value)
    monkeypatch.delenv("WICK_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert wick.model.cache_dir() == str(tmp_path / "wick")


def test_generation_on_another_thread(tiny):
    prompt = [T.BOS, 19, 20]
    m1, m2 = wick.load_model(tiny[0]), wick.load_model(tiny[0])
    want = "".join(m1.generate(prompt, 20, temperature=0, ignore_eos=True))
    out = {}

    def work():
        out["t"] = "".join(m2.generate(prompt, 20, temperature=0, ignore_eos=True))

    th = threading.Thread(target=work)
    th.start()
    mine = "".join(m1.generate(prompt, 20, temperature=0, ignore_eos=True))
    th.join()
    assert mine == want == out["t"]
    m1.close()
    m2.close()


# ---- the C command line on the same file ---------------------------------------------


@pytest.mark.skipif(cli() is None, reason="build/wick is not built (make)")
@pytest.mark.parametrize("args,kw", [
    (["--temp", "0"], dict(temperature=0)),
    (["--temp", "0.8", "--seed", "11", "--top-k", "20", "--top-p", "0.9", "--min-p", "0.02"],
     dict(temperature=0.8, seed=11, top_k=20, top_p=0.9, min_p=0.02)),
    (["--temp", "0", "--repeat-penalty", "1.5"], dict(temperature=0, repetition_penalty=1.5)),
])
def test_same_as_wick_run(tiny, model, args, kw):
    prompt = [T.BOS, 19, 20]
    cmd = [cli(), "run", tiny[0], "--device", "cpu", "--ids", ",".join(map(str, prompt)), "-n", "20", "--ignore-eos",
           "-q"] + args
    r = subprocess.run(cmd, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.endswith(b"\n")
    mine = "".join(model.generate(prompt, 20, ignore_eos=True, **kw))
    assert mine.encode() == r.stdout[:-1]


# ---- SmolLM2-135M-Instruct -------------------------------------------------------------


def smollm2():
    p = os.environ.get("WICK_SMOLLM2") or wick.model.default_model_path()
    if os.path.exists(p):
        return p
    if os.environ.get("WICK_REQUIRE_MODEL", "0") != "0":
        pytest.fail("the default model is not at %s (tools/fetch-default-model.sh)" % p)
    pytest.skip("no SmolLM2 at %s (tools/fetch-default-model.sh)" % p)


@pytest.fixture(scope="module")
def smol():
    m = wick.load_model(smollm2(), context=256)
    yield m
    m.close()


def test_smollm2_against_transformers(smol):
    with open(os.path.join(ROOT, "tests", "data", "smollm2_ref.json")) as f:
        ref = json.load(f)
    for p in ref["prompts"]:
        chat = p["name"] == "chat"
        if chat:
            msgs = [{"role": "user", "content": "What is the boiling point of water in Celsius?"}]
            assert smol.format_chat(msgs) == p["text"]
        # as tools/gen_model_ref.py tokenizes: BOS as the file says, except a chat's
        assert smol.tokenize(p["text"], add_bos=not chat) == p["prompt_ids"], p["name"]
        lg = smol.logits(p["prompt_ids"], all_logits=True).numpy()
        worst = 0.0
        for t, pos in enumerate(p["positions"][:len(p["prompt_ids"])]):
            worst = max(worst, float(np.abs(lg[t, pos["ids"]] - np.asarray(pos["logits"])).max()))
        assert worst < 5e-4, (p["name"], worst)
        g = smol.generate(p["prompt_ids"], len(p["greedy_ids"]), temperature=0, ignore_eos=True)
        text = "".join(g)
        assert g.tokens == p["greedy_ids"], p["name"]
        assert text == smol.tokenizer.decode(g.tokens, skip_special=True, keep_space=True)


def test_smollm2_same_as_wick_run(smol):
    if cli() is None:
        pytest.skip("build/wick is not built (make)")
    prompt = "What is the capital of France?"
    r = subprocess.run([cli(), "run", smol.path, "--device", "cpu", "-p", prompt, "-n", "24", "--temp", "0", "-q",
                        "--ctx", "256"], capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr
    mine = "".join(smol.generate(prompt, 24, temperature=0, chat=True))
    assert mine.encode() == r.stdout[:-1]


def _rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_generations_do_not_leak(tiny, model):
    import gc
    import sys

    def churn(n):
        for i in range(n):
            g = model.generate([T.BOS, 9 + i % 20], 8, temperature=0.5, seed=i, ignore_eos=True, stop=["zz"])
            for j, _ in enumerate(g):
                if j == i % 5:
                    break          # dropped mid-way every time but when it ends first
            del g
            m = wick.load_model(tiny[0]) if i % 50 == 0 else None
            if m is not None:
                m.generate([T.BOS], 4)   # never started, dropped with its model
                del m
            _ = model.logits([T.BOS, 9]).numpy()
    churn(50)
    gc.collect()
    before = _rss_kib()
    churn(600)
    gc.collect()
    assert _rss_kib() - before < 16 * 1024
    assert sys.getrefcount(model) < 10

