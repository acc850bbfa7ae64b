#!/usr/bin/env python3
"""hf_gguf.py — a Hugging Face llama model's weights written as a llama GGUF
the way llama.cpp's convert_hf_to_gguf.py writes one: its tensor names, its
metadata keys, and the Q and K rows permuted for the interleaved rope. For
the scripts that make random-weight models with transformers on the device
machine (bench/run_model.py, tools/llm_oracle.py); plain Python and numpy,
so the caller turns its tensors into numpy arrays.

  llama_tensors(items, n_head, n_head_kv, tied) -> [(gguf_name, shape, get)]
      items: (hf_name, shape, get) for every weight of a LlamaForCausalLM's
      state dict, get() returning it as a numpy array (called once, when
      the tensor is written, so a large model is never whole on the host):
      float32, or uint16 holding bf16 bits as they are; lm_head left out
      when tied.
  hf_meta(cfg) -> meta: the metadata of a transformers LlamaConfig
  write_llama_gguf(path, meta, tensors, matrix_type="f32", name=None)
      meta: context_length, embedding_length, block_count,
      feed_forward_length, head_count, head_count_kv, rms_eps, rope_theta.
      matrix_type "bf16": 2-d tensors as BF16 (type 30: uint16 arrays
      written as they are, float32 ones rounded to nearest even), norms
      stay F32.

  python3 tools/hf_gguf.py --self-test DIR   writes a tiny random llama to
      DIR/tiny.gguf and reads it back (the gguf package, when installed)
"""
import struct
import sys

import numpy as np

NAMES = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
         "lm_head.weight": "output.weight"}
PER_LAYER = {"input_layernorm.weight": "attn_norm.weight", "self_attn.q_proj.weight": "attn_q.weight",
             "self_attn.k_proj.weight": "attn_k.weight", "self_attn.v_proj.weight": "attn_v.weight",
             "self_attn.o_proj.weight": "attn_output.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
             "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
             "mlp.down_proj.weight": "ffn_down.weight"}
ALIGN = 32
F32, BF16 = 0, 30     # GGML types


def permute(w, n_head):
    """convert_hf_to_gguf.py's LlamaModel.permute: each head's rows from
    (halves) order to interleaved pairs"""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def hf_meta(cfg):
    """write_llama_gguf's meta from a transformers LlamaConfig (rope_theta
    where the config keeps it: its own field, or rope_parameters)"""
    theta = getattr(cfg, "rope_theta", None) or (getattr(cfg, "rope_parameters", None) or {}).get("rope_theta")
    return dict(context_length=cfg.max_position_embeddings, embedding_length=cfg.hidden_size,
                block_count=cfg.num_hidden_layers, feed_forward_length=cfg.intermediate_size,
                head_count=cfg.num_attention_heads, head_count_kv=cfg.num_key_value_heads, rms_eps=cfg.rms_norm_eps,
                rope_theta=theta or 10000.0)


def llama_tensors(items, n_head, n_head_kv, tied):
    out = []
    for name, shape, get in items:
        if name == "lm_head.weight" and tied:
            continue
        if name in NAMES:
            out.append((NAMES[name], tuple(shape), get))
            continue
        layer, rest = name[len("model.layers."):].split(".", 1)
        heads = n_head if rest == "self_attn.q_proj.weight" else n_head_kv if rest == "self_attn.k_proj.weight" else 0
        fetch = (lambda g=get, h=heads: permute(g(), h)) if heads else get
        out.append((f"blk.{layer}.{PER_LAYER[rest]}", tuple(shape), fetch))
    return out


def _s(x):
    b = x.encode()
    return struct.pack("<Q", len(b)) + b


def _bf16_bits(a):
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def write_llama_gguf(path, meta, tensors, matrix_type="f32", name=None):
    u32 = lambda v: struct.pack("<I", int(v))
    f32 = lambda v: struct.pack("<f", float(v))
    kv = [("general.architecture", 8, _s("llama"))]
    if name:
        kv.append(("general.name", 8, _s(name)))
    kv += [("general.alignment", 4, u32(ALIGN)),
           ("llama.context_length", 4, u32(meta["context_length"])),
           ("llama.embedding_length", 4, u32(meta["embedding_length"])),
           ("llama.block_count", 4, u32(meta["block_count"])),
           ("llama.feed_forward_length", 4, u32(meta["feed_forward_length"])),
           ("llama.attention.head_count", 4, u32(meta["head_count"])),
           ("llama.attention.head_count_kv", 4, u32(meta["head_count_kv"])),
           ("llama.attention.layer_norm_rms_epsilon", 6, f32(meta["rms_eps"])),
           ("llama.rope.freq_base", 6, f32(meta["rope_theta"])),
           ("llama.rope.dimension_count", 4, u32(meta["embedding_length"] // meta["head_count"]))]
    types = [BF16 if matrix_type == "bf16" and len(shape) == 2 else F32 for _, shape, _ in tensors]
    hdr = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv)))
    for k, ty, v in kv:
        hdr += _s(k) + struct.pack("<I", ty) + v
    off = 0
    for (gname, shape, _), ty in zip(tensors, types):
        nbytes = int(np.prod(shape)) * (2 if ty == BF16 else 4)
        hdr += _s(gname) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<Q", d) for d in shape[::-1])
        hdr += struct.pack("<IQ", ty, off)
        off += (nbytes + ALIGN - 1) // ALIGN * ALIGN
    hdr += b"\0" * (-len(hdr) % ALIGN)
    with open(path, "wb") as f:
        f.write(hdr)
        for (gname, shape, get), ty in zip(tensors, types):
            a = get()
            if tuple(a.shape) != tuple(shape):
                raise ValueError(f"{gname}: shape {a.shape}, declared {shape}")
            if ty == BF16:
                a = np.ascontiguousarray(a) if a.dtype == np.uint16 else _bf16_bits(a)
            else:
                a = np.ascontiguousarray(a, dtype=np.float32)
            f.write(memoryview(a).cast("B"))
            f.write(b"\0" * (-a.nbytes % ALIGN))


def self_test(folder):
    import os
    rng = np.random.default_rng(1)
    E, F, L, H, Hkv, V = 64, 96, 2, 4, 2, 50
    D = E // H
    shapes = {"model.embed_tokens.weight": (V, E), "model.norm.weight": (E,), "lm_head.weight": (V, E)}
    for l in range(L):
        p = f"model.layers.{l}."
        shapes.update({p + "input_layernorm.weight": (E,), p + "self_attn.q_proj.weight": (H * D, E),
                       p + "self_attn.k_proj.weight": (Hkv * D, E), p + "self_attn.v_proj.weight": (Hkv * D, E),
                       p + "self_attn.o_proj.weight": (E, H * D), p + "post_attention_layernorm.weight": (E,),
                       p + "mlp.gate_proj.weight": (F, E), p + "mlp.up_proj.weight": (F, E),
                       p + "mlp.down_proj.weight": (E, F)})
    data = {k: rng.standard_normal(s).astype(np.float32) * 0.1 for k, s in shapes.items()}
    items = [(k, s, (lambda k=k: data[k])) for k, s in shapes.items()]
    meta = dict(context_length=128, embedding_length=E, block_count=L, feed_forward_length=F, head_count=H,
                head_count_kv=Hkv, rms_eps=1e-5, rope_theta=10000.0)
    ok = True
    for mt in ("f32", "bf16"):
        path = os.path.join(folder, f"tiny-{mt}.gguf")
        write_llama_gguf(path, meta, llama_tensors(items, H, Hkv, tied=False), matrix_type=mt, name="tiny")
        try:
            import gguf
        except ImportError:
            print(f"{path}: written (no gguf package to read it back)")
            continue
        r = gguf.GGUFReader(path)
        got = {t.name: t for t in r.tensors}
        q = got["blk.0.attn_q.weight"]
        want = permute(data["model.layers.0.self_attn.q_proj.weight"], H)
        if mt == "bf16":
            want = (_bf16_bits(want).astype(np.uint32) << 16).view(np.float32)
            back = (np.asarray(q.data).view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(want.shape)
        else:
            back = np.asarray(q.data).reshape(want.shape)
        same = len(got) == 3 + 9 * L and np.array_equal(back, want)
        same &= np.array_equal(np.asarray(got["output_norm.weight"].data), data["model.norm.weight"])
        print(f"{path}: {len(got)} tensors read back by the gguf package, attn_q permuted, "
              f"{'same values' if same else 'DIFFERENT'}")
        ok &= bool(same)
    return ok


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--self-test":
        sys.exit(0 if self_test(sys.argv[2]) else 1)
    print(__doc__)
    sys.exit(2)
