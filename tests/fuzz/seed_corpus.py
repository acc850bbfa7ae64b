#!/usr/bin/env python3
"""seed_corpus.py — (re)writes the seed inputs of tests/fuzz/corpus/ from
the repository's test data (tests/data/) and a few inputs written here:
small GGUF files and models, safetensors models with their config.json,
JSON texts, tokenizer.json files with texts, request bodies, external
layouts and op calls. Files the fuzzers found (crashes kept as regressions, named
crash-*, or inputs added by hand) are left alone; seed-* files are
rewritten. Standard library only.

    python3 tests/fuzz/seed_corpus.py [--tok-fixtures DIR]

--tok-fixtures DIR: a folder written by `tools/check_tokenizers.py
--fixtures DIR` (needs Hugging Face's tokenizers); its SentencePiece-style
spm.tokenizer.json and spm.gguf become seeds too.
"""
import argparse
import json
import os
import struct

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")
SEP = b"\n#WICK-FUZZ#\n"


def data(*parts):
    with open(os.path.join(ROOT, "tests", "data", *parts), "rb") as f:
        return f.read()


def put(harness, name, blob):
    d = os.path.join(OUT, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(blob)


def clear_seeds():
    if not os.path.isdir(OUT):
        return
    for h in os.listdir(OUT):
        for f in os.listdir(os.path.join(OUT, h)):
            if f.startswith("seed-"):
                os.remove(os.path.join(OUT, h, f))


def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def tiny_gguf():
    """A GGUF v3 file with every value type, an array of arrays and two tensors."""
    kv = []
    kv.append(gguf_str("general.architecture") + struct.pack("<I", 8) + gguf_str("llama"))
    kv.append(gguf_str("general.alignment") + struct.pack("<II", 4, 32))
    kv.append(gguf_str("a.u8") + struct.pack("<IB", 0, 7))
    kv.append(gguf_str("a.i8") + struct.pack("<Ib", 1, -7))
    kv.append(gguf_str("a.u16") + struct.pack("<IH", 2, 700))
    kv.append(gguf_str("a.i16") + struct.pack("<Ih", 3, -700))
    kv.append(gguf_str("a.i32") + struct.pack("<Ii", 5, -70000))
    kv.append(gguf_str("a.f32") + struct.pack("<If", 6, 1.5))
    kv.append(gguf_str("a.bool") + struct.pack("<IB", 7, 1))
    kv.append(gguf_str("a.u64") + struct.pack("<IQ", 10, 1 << 40))
    kv.append(gguf_str("a.i64") + struct.pack("<Iq", 11, -(1 << 40)))
    kv.append(gguf_str("a.f64") + struct.pack("<Id", 12, 2.25))
    kv.append(gguf_str("a.strs") + struct.pack("<IIQ", 9, 8, 2) + gguf_str("x") + gguf_str("yz"))
    inner = struct.pack("<IQ", 4, 2) + struct.pack("<II", 1, 2)
    kv.append(gguf_str("a.nested") + struct.pack("<IIQ", 9, 9, 2) + inner + inner)
    tensors = [("t.f32", [4, 2], 0, 0), ("t.q8", [32], 8, 32)]
    ti = b""
    for name, dims, typ, off in tensors:
        ti += gguf_str(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        ti += struct.pack("<IQ", typ, off)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv)) + b"".join(kv) + ti
    head += b"\0" * (-len(head) % 32)
    body = struct.pack("<8f", *range(8)) + b"\0" * 24 + struct.pack("<e", 0.5) + bytes(range(32))
    return head + body


def safetensors(tensors, meta=None):
    """tensors: [(name, dtype, shape, bytes)]"""
    h, blob = {}, b""
    if meta:
        h["__metadata__"] = meta
    for name, dt, shape, b in tensors:
        h[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(blob), len(blob) + len(b)]}
        blob += b
    hj = json.dumps(h).encode()
    return struct.pack("<Q", len(hj)) + hj + blob


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tok-fixtures")
    a = ap.parse_args()
    clear_seeds()

    # GGUF: the model_files fixtures, tiny models of each architecture, a tokenizer's file
    for f in ["small.gguf", "small_v2.gguf", "types.gguf", "mix.gguf"]:
        put("gguf", f, data("model_files", f))
    for f in ["llama_scale_linear.gguf", "qwen2_ignored.gguf", "gemma3_pattern.gguf"]:
        put("gguf", f, data("config_ref", f))
    put("gguf", "bytes.gguf", data("tok", "bytes.gguf"))
    put("gguf", "tiny.gguf", tiny_gguf())

    # safetensors: config.json + model.safetensors [+ tokenizer_config.json]
    for d in ["llama_ignored", "qwen3_windows", "gemma3_rope_scaling", "llama_tied_head"]:
        put("safetensors", d, data("config_ref", d, "config.json") + SEP + data("config_ref", d, "model.safetensors"))
    put("safetensors", "types", data("model_files", "types.safetensors"))
    put("safetensors", "folder", data("model_files", "folder", "model.safetensors"))
    put("safetensors", "sharded_config",
        data("model_files", "sharded", "config.json") + SEP +
        safetensors([("a", "F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4)), ("b", "BF16", [3], b"\0\x3f" * 3),
                     ("c", "U8", [0, 5], b"")], {"format": "pt"}) +
        SEP + b'{"add_bos_token": true, "chat_template": "{{ messages }}"}')

    # JSON
    put("json", "config.json", data("config_ref", "llama_ignored", "config.json"))
    put("json", "sharded_config.json", data("model_files", "sharded", "config.json"))
    put("json", "index.json", data("model_files", "sharded", "model.safetensors.index.json"))
    put("json", "ref.json", data("config_ref", "ref.json")[:8000].rsplit(b"\n", 1)[0])
    for i, t in enumerate([
            b'{"a": {"b": [1, -2.5e-3, 1e308, -0, 9223372036854775807, -9223372036854775808, 9223372036854775808]}}',
            b'["\\u0000\\ud83d\\ude00\\n\\t\\"\\\\\\/\\b\\f\\r", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 7.0, 7e0, true, false, null]',
            b'{"rope_scaling": {"factor": NaN, "x": Infinity, "y": -Infinity}, "": {}, "a.b": []}',
            b'[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]',
            b'  {"k": "v", "n": 12345678901234567890123, "e": 1E+2, "f": 0.1e-1}  ']):
        put("json", "hand%d.json" % i, t)

    # tokenizer: tokenizer.json + SEP + text, and texts for the built-in tokenizers (first byte: which, flags)
    texts = [b"Hello world! 12345 <|endoftext|> <tool> the an in er",
             "caf\u00e9 \u2581 na\u00efve \U0001F600 \u4e2d\u6587 \t\n  spaces".encode(),
             b"\xff\xfe\xc3 invalid \xe2\x82 utf8 \xf0\x9f",
             b"<s>[INST] hi [/INST]</s>"]
    tj = data("tok", "bytes.tokenizer.json")
    put("tokenizer", "bytes_json", tj + SEP + bytes([0x3]) + texts[0])
    put("tokenizer", "bytes_json_utf8", tj + SEP + bytes([0x11]) + texts[1])
    if a.tok_fixtures:
        with open(os.path.join(a.tok_fixtures, "spm.tokenizer.json"), "rb") as f:
            sj = f.read()
        put("tokenizer", "spm_json", sj + SEP + bytes([0x3]) + texts[3])
        put("tokenizer", "spm_json_bytes", sj + SEP + bytes([0x5]) + texts[2])
        with open(os.path.join(a.tok_fixtures, "spm.gguf"), "rb") as f:
            put("gguf", "spm.gguf", f.read())
    for sel in range(5):
        for j, t in enumerate(texts):
            put("tokenizer", "builtin%d_%d" % (sel, j), bytes([sel + 5 * ((j * 7) % 32)]) + t)

    # server requests: first byte odd for chat
    reqs = [
        (1, {"model": "m", "messages": [{"role": "system", "content": "be brief"},
                                        {"role": "user", "content": [{"type": "text", "text": "hi "},
                                                                     {"type": "text", "text": "there"}]}],
             "temperature": 0.7, "top_p": 0.9, "max_completion_tokens": 5, "stream": True,
             "stream_options": {"include_usage": True}, "logprobs": True, "top_logprobs": 3,
             "stop": ["\n", "END"], "seed": -5, "n": 1, "response_format": {"type": "text"}, "tools": []}),
        (0, {"model": "m", "prompt": "Once upon a time \u00e9\U0001F600", "max_tokens": 16, "logprobs": 2,
             "top_k": -1, "min_p": 0.1, "presence_penalty": -2, "frequency_penalty": 2,
             "repetition_penalty": 1.1, "stop": "x", "echo": False, "best_of": 1, "ignore_eos": True}),
        (0, {"prompt": ["one prompt in a list"], "stream": False, "n": 3}),
        (1, {"messages": [{"role": "developer", "content": None}, {"role": "assistant", "content": "a\u0000b"}]}),
        (1, {"messages": [{"role": "tool", "content": "x"}], "logit_bias": {"1": 2}}),
    ]
    for i, (chat, body) in enumerate(reqs):
        put("openai", "req%d" % i, bytes([chat]) + json.dumps(body).encode())
    put("openai", "bad_json", b"\x01{\"messages\": [")

    # external: dtype, rank + 1, has_strides, then dims and strides (tags: < 200 small, 200..239 2^k, else 8 bytes)
    ext = [bytes([7, 3, 1, 4, 5, 5, 1]),                 # f32 [4, 5], strides [5, 1]
           bytes([7, 3, 1, 4, 5, 1, 4]),                 # transposed
           bytes([0, 4, 0, 2, 3, 4]),                    # u8 [2, 3, 4] row-major
           bytes([9, 2, 1, 3, 0]),                       # broadcast (stride 0)
           bytes([10, 3, 1, 2, 32, 32, 1]),              # q4_0 [2, 32]
           bytes([7, 3, 1, 239, 239, 1, 1]),             # huge dims
           bytes([8, 2, 1, 255] + [0xff] * 7 + [0x7f] + [1])]
    for i, e in enumerate(ext):
        put("external", "layout%d" % i, e + bytes(range(64)))
    # ops: calls (first byte % 4: conv, pool, upsample, others) and their options
    calls = [[0, 0, 4, 4, 2, 2, 1, 0, 1], [0, 1, 3, 3, 2, 2, 0, 2, 1, 0], [0, 3, 5, 5, 3, 3, 0, 2, 1, 1, 1, 2, 1, 1, 1, 0],
             [1, 0, 2, 2, 0, 2, 2, 0], [1, 9, 3, 3, 1, 1, 0, 0], [2, 1, 6, 6, 7, 7, 3, 3], [2, 4, 8, 8, 23, 23, 5, 5],
             [2, 36, 5, 5, 0, 0], [3, 0, 7, 8, 2, 2, 2, 2], [3, 1, 5, 0, 2, 3], [3, 2, 7, 3, 2, 2, 14], [3, 3, 2, 4, 12],
             [3, 5, 7, 10, 2, 3, 1, 2, 2], [3, 7, 7, 2, 3, 1], [3, 8, 5, 3, 1], [3, 10, 7, 1, 2, 3, 1, 1],
             [3, 11, 7, 2, 1, 1, 1], [3, 13, 7, 0, 1, 2, 1]]
    for i, c in enumerate(calls):
        put("ops", "call%d" % i, bytes(c))
    # chat templates: each real template with a conversation, and hostile ones
    conv = (b"system\tYou are kind.\nuser\tHi\nassistant\tHello! How can I help?\n"
            b"user\tName a color.\\nOne word.")
    tdir = os.path.join(ROOT, "tests", "data", "chat_templates")
    for f in sorted(os.listdir(tdir)):
        if f.endswith(".jinja"):
            put("chat", f[:-len(".jinja")], data("chat_templates", f) + SEP + conv)
    hostile = [b"{% for i in range(100000000) %}{{ i }}{% endfor %}",
               b"{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
               b"{{ raise_exception('refused: ' ~ messages[0].role) }}",
               b"{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
               b"{{ messages | tojson(indent=2) }}{{ (messages[0].content * 3) | upper }}{{ tools }}",
               b"{% if x is defined %}{{ x.y[1:3] }}{% else %}{{ '%d' % 3 }}{% endif %}"]
    for i, h in enumerate(hostile):
        put("chat", "hostile%d" % i, h + SEP + conv + SEP + b'{"x": {"y": [1, 2, 3, 4]}, "enable_thinking": false}')
    print("seed corpus written to", os.path.relpath(OUT, ROOT))


if __name__ == "__main__":
    main()
