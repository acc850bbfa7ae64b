# tiny_llm.py — a tiny llama for the model tests, made here without wick:
# a GGUF v3 file written byte by byte (f32 tensors; a SentencePiece-style
# vocabulary of single characters, two control tokens and the two bytes of
# "é" as tokens of their own; a ChatML template), and its forward pass in
# float64 numpy from the architecture's definition (RMS norm, rope on
# interleaved pairs as GGUF llama files store q and k, grouped-query causal
# attention, SwiGLU MLP): the independent reference of test_model.py.
import struct

import numpy as np

U32, I32, F32, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9

# token ids of the vocabulary
UNK, BOS, EOS, IM_START, BYTE_C3, BYTE_A9, SPACE, NEWLINE = range(8)
LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789.,!?"
TOKENS = [b"<unk>", b"<s>", b"<|im_end|>", b"<|im_start|>", b"\xc3", b"\xa9", "\u2581".encode(), b"\n"] + \
    [c.encode() for c in LETTERS]
TYPES = [2, 3, 3, 3, 1, 1, 1, 1] + [1] * len(LETTERS)
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")

CFG = dict(V=len(TOKENS), E=32, L=2, H=4, Hkv=2, D=8, F=48, eps=1e-5, base=10000.0, ctx=64)


def token_id(ch):
    """The id of a one-character token."""
    return 8 + LETTERS.index(ch)


def _s(x):
    b = x if isinstance(x, bytes) else x.encode()
    return struct.pack("<Q", len(b)) + b


def _v(t, v):
    return {U32: lambda: struct.pack("<I", v), I32: lambda: struct.pack("<i", v), F32: lambda: struct.pack("<f", v),
            BOOL: lambda: struct.pack("<?", v), STRING: lambda: _s(v)}[t]()


def _kv(key, t, v):
    out = _s(key) + struct.pack("<I", t)
    if t == ARRAY:
        et, items = v
        return out + struct.pack("<IQ", et, len(items)) + b"".join(_v(et, i) for i in items)
    return out + _v(t, v)


def write_gguf(path, kvs, tensors, align=32):
    """GGUF v3: kvs [(key, type, value)], tensors [(name, array)] stored f32
    (dims written innermost first, as GGUF does)."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(_kv(*kv) for kv in kvs)
    blobs, off = [], 0
    for name, a in tensors:
        a = np.ascontiguousarray(a, dtype=np.float32)
        head += _s(name) + struct.pack("<I", a.ndim) + b"".join(struct.pack("<Q", d) for d in a.shape[::-1])
        head += struct.pack("<IQ", 0, off)
        blobs.append(a.tobytes())
        off += -(-a.nbytes // align) * align
    with open(path, "wb") as f:
        f.write(head + b"\0" * (-len(head) % align))
        for b in blobs:
            f.write(b + b"\0" * (-len(b) % align))


def make_weights(seed):
    c = CFG
    rng = np.random.default_rng(seed)
    E, QD, KD, F, V = c["E"], c["H"] * c["D"], c["Hkv"] * c["D"], c["F"], c["V"]

    def r(*shape, scale=0.3):
        return rng.uniform(-scale, scale, size=shape).astype(np.float32)

    def norm(n):
        return rng.uniform(0.5, 1.5, size=n).astype(np.float32)

    w = {"token_embd.weight": r(V, E, scale=1.0), "output_norm.weight": norm(E), "output.weight": r(V, E)}
    for layer in range(c["L"]):
        p = "blk.%d." % layer
        w.update({p + "attn_norm.weight": norm(E), p + "attn_q.weight": r(QD, E), p + "attn_k.weight": r(KD, E),
                  p + "attn_v.weight": r(KD, E), p + "attn_output.weight": r(E, QD), p + "ffn_norm.weight": norm(E),
                  p + "ffn_gate.weight": r(F, E), p + "ffn_up.weight": r(F, E), p + "ffn_down.weight": r(E, F)})
    return w


def write_model(path, seed=1, window=0):
    """The tiny model at path (window > 0: every layer a sliding window of
    that many positions, as Mistral's); returns its weights."""
    c = CFG
    w = make_weights(seed)
    kvs = [("general.architecture", STRING, "llama"), ("general.name", STRING, "tiny"),
           ("llama.context_length", U32, c["ctx"]), ("llama.embedding_length", U32, c["E"]),
           ("llama.block_count", U32, c["L"]), ("llama.feed_forward_length", U32, c["F"]),
           ("llama.attention.head_count", U32, c["H"]), ("llama.attention.head_count_kv", U32, c["Hkv"]),
           ("llama.attention.key_length", U32, c["D"]),
           ("llama.attention.layer_norm_rms_epsilon", F32, c["eps"]), ("llama.rope.freq_base", F32, c["base"]),
           ("tokenizer.ggml.model", STRING, "llama"), ("tokenizer.ggml.tokens", ARRAY, (STRING, TOKENS)),
           ("tokenizer.ggml.token_type", ARRAY, (I32, TYPES)),
           ("tokenizer.ggml.scores", ARRAY, (F32, [-float(i) for i in range(len(TOKENS))])), ("tokenizer.ggml.unknown_token_id", U32, UNK),
           ("tokenizer.ggml.bos_token_id", U32, BOS), ("tokenizer.ggml.eos_token_id", U32, EOS),
           ("tokenizer.ggml.add_bos_token", BOOL, True), ("tokenizer.ggml.add_space_prefix", BOOL, False),
           ("tokenizer.chat_template", STRING, CHATML)]
    if window:
        kvs.append(("llama.attention.sliding_window", U32, window))
    write_gguf(path, kvs, list(w.items()))
    return w


def ref_logits(w, toks):
    """float64 logits [T, V] of token ids toks from position 0."""
    c = CFG
    E, D, H, Hkv, eps = c["E"], c["D"], c["H"], c["Hkv"], c["eps"]
    g = {k: v.astype(np.float64) for k, v in w.items()}
    toks = np.asarray(toks)
    T = len(toks)
    x = g["token_embd.weight"][toks]

    def rms(v, weight):
        return v / np.sqrt((v * v).mean(-1, keepdims=True) + eps) * weight

    ang = np.arange(T)[:, None] * c["base"] ** (-2.0 * np.arange(D // 2) / D)[None, :]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]

    def rope(v):   # pairs (2i, 2i+1)
        a, b = v[..., 0::2], v[..., 1::2]
        out = np.empty_like(v)
        out[..., 0::2] = a * cos - b * sin
        out[..., 1::2] = a * sin + b * cos
        return out

    causal = np.triu(np.ones((T, T), bool), 1)
    for layer in range(c["L"]):
        p = "blk.%d." % layer
        h = rms(x, g[p + "attn_norm.weight"])
        q = rope((h @ g[p + "attn_q.weight"].T).reshape(T, H, D))
        k = rope((h @ g[p + "attn_k.weight"].T).reshape(T, Hkv, D))
        v = (h @ g[p + "attn_v.weight"].T).reshape(T, Hkv, D)
        k, v = np.repeat(k, H // Hkv, axis=1), np.repeat(v, H // Hkv, axis=1)
        sc = np.einsum("thd,shd->hts", q, k) / np.sqrt(D)
        sc[:, causal] = -np.inf
        pr = np.exp(sc - sc.max(-1, keepdims=True))
        pr /= pr.sum(-1, keepdims=True)
        x = x + np.einsum("hts,shd->thd", pr, v).reshape(T, H * D) @ g[p + "attn_output.weight"].T
        h = rms(x, g[p + "ffn_norm.weight"])
        gt, up = h @ g[p + "ffn_gate.weight"].T, h @ g[p + "ffn_up.weight"].T
        x = x + (gt / (1 + np.exp(-gt)) * up) @ g[p + "ffn_down.weight"].T
    return rms(x, g["output_norm.weight"]) @ g["output.weight"].T


def ref_greedy(w, prompt, n):
    """n greedy tokens after prompt (EOS not special), and the margin of each
    choice over the runner-up."""
    seq, out, margins = list(prompt), [], []
    for _ in range(n):
        row = ref_logits(w, seq)[-1]
        best = int(np.argmax(row))
        margins.append(row[best] - np.partition(row, -2)[-2])
        out.append(best)
        seq.append(best)
    return out, margins
