#!/usr/bin/env python3
"""gen_config_ref.py — the references of tests/test_llm_config.c (suite
llm_config_ref): tiny random models whose config.json or GGUF metadata
carry the switches of docs/model-config.md that wick now implements or
ignores as the reference does, with the reference's logits.

  safetensors + config.json: transformers (from_pretrained on the folder,
    f32, eager attention) — the config.json is written here key by key, so
    the fields under test are exactly as given;
  GGUF: llama.cpp (PyPI's llama-cpp-python, its low-level API; f32
    weights, f32 KV cache, no flash attention, one batch, logits of every
    position), the file written by the gguf package.

Writes tests/data/config_ref/<case>/{config.json,model.safetensors},
tests/data/config_ref/<case>.gguf and tests/data/config_ref/ref.json
(per case: the file, the token ids, the logits of every position).

Usage: tools/gen_config_ref.py [--out tests/data/config_ref] [--no-gguf]
Needs: pip install torch transformers safetensors numpy gguf llama-cpp-python
(the last compiles llama.cpp: 15-30 minutes on two cores).
"""
import argparse, json, os, shutil, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llm_oracle import randomize   # noqa: E402

V, E, H, HKV, D, F = 32, 16, 2, 1, 8, 24
TOKENS = [1, 7, 30, 2, 2, 9, 17, 4, 28, 11, 5, 23]

BASE = dict(vocab_size=V, hidden_size=E, intermediate_size=F, num_attention_heads=H, num_key_value_heads=HKV,
            head_dim=D, max_position_embeddings=64, rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2)

# (name, config.json); what each checks is in docs/model-config.md
HF_CASES = [
    ("llama_ignored", dict(BASE, model_type="llama", num_hidden_layers=3, rope_theta=500.0, sliding_window=3,
                           attn_logit_softcapping=0.3, final_logit_softcapping=0.3, partial_rotary_factor=0.5,
                           pretraining_tp=2, layer_norm_eps=0.5, hidden_act="swish", hidden_activation="gelu",
                           mlp_bias=False, attention_bias=False, attention_dropout=0.1, tie_word_embeddings=False)),
    ("llama_tied_head", dict(BASE, model_type="llama", num_hidden_layers=2, head_dim=12, tie_word_embeddings=True)),
    ("mistral_ignored", dict(BASE, model_type="mistral", num_hidden_layers=3, head_dim=None, sliding_window=3,
                             attention_bias=True, mlp_bias=True, tie_word_embeddings=False)),
    ("qwen2_ignored", dict(BASE, model_type="qwen2", num_hidden_layers=3, rope_theta=1e6, attention_bias=False,
                           mlp_bias=True, use_sliding_window=False, sliding_window=2, max_window_layers=0,
                           tie_word_embeddings=True)),
    ("qwen3_windows", dict(BASE, model_type="qwen3", num_hidden_layers=3, use_sliding_window=True, sliding_window=2,
                           max_window_layers=3, attention_bias=False, mlp_bias=True, tie_word_embeddings=False)),
    ("gemma3_ignored", dict(BASE, model_type="gemma3_text", num_hidden_layers=4, query_pre_attn_scalar=12,
                            sliding_window=3, sliding_window_pattern=2, _sliding_window_pattern=3,
                            attn_logit_softcapping=0.3, final_logit_softcapping=5.0, hidden_act="silu",
                            hidden_activation="gelu_pytorch_tanh", rope_theta=1e6, rope_local_base_freq=100.0,
                            mlp_bias=True, tie_word_embeddings=True)),
    # transformers 4's rope_scaling: the global layers' only
    ("gemma3_rope_scaling", dict(BASE, model_type="gemma3_text", num_hidden_layers=3, query_pre_attn_scalar=8,
                                 sliding_window=3, sliding_window_pattern=3, rope_theta=1e4, rope_local_base_freq=1e4,
                                 rope_scaling={"rope_type": "linear", "factor": 8.0}, tie_word_embeddings=True)),
    # transformers 5's rope_parameters, per layer type
    ("gemma3_rope_parameters", dict(BASE, model_type="gemma3_text", num_hidden_layers=3, query_pre_attn_scalar=8,
                                    sliding_window=3, layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                                    rope_parameters={"full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1e5},
                                                     "sliding_attention": {"rope_type": "default", "rope_theta": 50.0}},
                                    tie_word_embeddings=True)),
]

# (name, arch, layers, metadata beyond the shape); values typed for the gguf package
GGUF_CASES = [
    ("gemma3_nowindow", "gemma3", 4, {"rope.freq_base": ("f32", 1e6), "attn_logit_softcapping": ("f32", 0.3)}),
    ("gemma3_pattern", "gemma3", 4, {"rope.freq_base": ("f32", 1e6), "attention.sliding_window": ("u32", 3),
                                     "attention.sliding_window_pattern": ("u32", 2), "rope.freq_base_swa": ("f32", 100.0),
                                     "final_logit_softcapping": ("f32", 5.0)}),
    ("gemma3_pattern_array", "gemma3", 4, {"rope.freq_base": ("f32", 1e6), "attention.sliding_window": ("u32", 3),
                                           "attention.sliding_window_pattern": ("bools", [True, False, False, True])}),
    ("llama_ignored", "llama", 3, {"rope.freq_base": ("f32", 500.0), "rope.scaling.factor": ("f32", 4.0),
                                   "attn_logit_softcapping": ("f32", 0.3), "final_logit_softcapping": ("f32", 0.3),
                                   "embedding_scale": ("f32", 3.0), "residual_scale": ("f32", 0.5),
                                   "logit_scale": ("f32", 2.0), "attention.scale": ("f32", 0.1),
                                   "attention.layer_norm_epsilon": ("f32", 0.5), "use_parallel_residual": ("bool", True)}),
    ("llama_scale_linear", "llama", 2, {"rope.scale_linear": ("f32", 2.0)}),
    ("qwen2_ignored", "qwen2", 3, {"rope.freq_base": ("f32", 1e6), "attention.sliding_window": ("u32", 2),
                                   "final_logit_softcapping": ("f32", 0.3)}),
]


def hf_case(out, name, cfg, seed):
    import torch
    from safetensors.torch import save_file
    from transformers import AutoConfig, AutoModelForCausalLM
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
        f.write("\n")
    c = AutoConfig.from_pretrained(d)
    model = AutoModelForCausalLM.from_config(c, attn_implementation="eager").eval()
    randomize(model, cfg["model_type"] == "gemma3_text")   # the model oracle's weights: norms near identity
    sd = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    if cfg.get("tie_word_embeddings"):
        sd.pop("lm_head.weight", None)
        if name == "llama_tied_head":   # tied in the config, yet the file holds a head of its own
            sd["lm_head.weight"] = torch.randn(V, E, generator=torch.Generator().manual_seed(seed + 1)) / E ** 0.5
    save_file(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    m = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager").eval()
    with torch.no_grad():
        lg = m(torch.tensor([TOKENS])).logits[0].float()
    return {"name": name, "file": name, "reference": "transformers", "bound": 1e-4, "tokens": TOKENS,
            "logits": [[float(f"{float(x):.8g}") for x in row] for row in lg]}


def gguf_case(out, name, arch, L, extra, seed):
    import numpy as np
    import gguf
    path = os.path.join(out, name + ".gguf")
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(path, arch)
    w.add_context_length(64)
    w.add_embedding_length(E)
    w.add_block_count(L)
    w.add_feed_forward_length(F)
    w.add_head_count(H)
    w.add_head_count_kv(HKV)
    w.add_key_length(D)
    w.add_value_length(D)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(V)
    w.add_tokenizer_model("none")   # llama.cpp: ids only, vocab_size dummy tokens
    for k, tv in extra.items():
        t, v = tv
        key = f"{arch}.{k}"
        if t == "f32":
            w.add_float32(key, v)
        elif t == "u32":
            w.add_uint32(key, v)
        elif t == "bool":
            w.add_bool(key, v)
        elif t == "bools":
            w.add_array(key, v)
    gemma = arch == "gemma3"

    def mat(o, i):
        return (rng.standard_normal((o, i)) / i ** 0.5).astype(np.float32)

    def norm(n):
        return (1.0 + 0.2 * rng.standard_normal(n)).astype(np.float32)

    w.add_tensor("token_embd.weight", rng.standard_normal((V, E)).astype(np.float32))
    w.add_tensor("output_norm.weight", norm(E))
    if not gemma:
        w.add_tensor("output.weight", mat(V, E))
    for l in range(L):
        p = f"blk.{l}."
        w.add_tensor(p + "attn_norm.weight", norm(E))
        w.add_tensor(p + "attn_q.weight", mat(H * D, E))
        w.add_tensor(p + "attn_k.weight", mat(HKV * D, E))
        w.add_tensor(p + "attn_v.weight", mat(HKV * D, E))
        if arch == "qwen2":
            for b, n in (("q", H * D), ("k", HKV * D), ("v", HKV * D)):
                w.add_tensor(p + f"attn_{b}.bias", (0.2 * rng.standard_normal(n)).astype(np.float32))
        if arch in ("qwen3", "gemma3"):
            w.add_tensor(p + "attn_q_norm.weight", norm(D))
            w.add_tensor(p + "attn_k_norm.weight", norm(D))
        w.add_tensor(p + "attn_output.weight", mat(E, H * D))
        if gemma:
            w.add_tensor(p + "post_attention_norm.weight", norm(E))
            w.add_tensor(p + "post_ffw_norm.weight", norm(E))
        w.add_tensor(p + "ffn_norm.weight", norm(E))
        w.add_tensor(p + "ffn_gate.weight", mat(F, E))
        w.add_tensor(p + "ffn_up.weight", mat(F, E))
        w.add_tensor(p + "ffn_down.weight", mat(E, F))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    # llama.cpp's cpu GELU reads a table of f16 values (ggml-cpu/vec.h, GGML_GELU_FP16): gemma3's MLP
    # carries f16 rounding there, some 4e-4 of the logits; a key read wrongly moves them by 0.09 or more
    return {"name": name + ".gguf", "file": name + ".gguf", "reference": "llama.cpp", "bound": 2e-3 if gemma else 1e-4,
            "tokens": TOKENS, "logits": llamacpp_logits(path)}


def llamacpp_logits(path):
    """every position's logits, one batch, through llama.cpp's C API"""
    import ctypes
    import llama_cpp as L
    global _quiet
    _quiet = L.llama_log_callback(lambda level, text, data: None)   # kept alive: llama.cpp holds the pointer
    L.llama_log_set(_quiet, ctypes.c_void_p())
    L.llama_backend_init()
    mp = L.llama_model_default_params()
    mp.n_gpu_layers = 0
    model = L.llama_model_load_from_file(path.encode(), mp)
    if not model:
        raise RuntimeError(f"llama.cpp cannot load {path}")
    cp = L.llama_context_default_params()
    cp.n_ctx = 64
    cp.n_batch = 64
    cp.n_ubatch = 64
    cp.n_threads = cp.n_threads_batch = 1
    cp.type_k = cp.type_v = 0            # GGML_TYPE_F32
    cp.flash_attn_type = 0               # disabled
    ctx = L.llama_init_from_model(model, cp)
    n = len(TOKENS)
    batch = L.llama_batch_init(n, 0, 1)
    for i, t in enumerate(TOKENS):
        batch.token[i] = t
        batch.pos[i] = i
        batch.n_seq_id[i] = 1
        batch.seq_id[i][0] = 0
        batch.logits[i] = 1
    batch.n_tokens = n
    if L.llama_decode(ctx, batch) != 0:
        raise RuntimeError("llama_decode failed")
    rows = []
    for i in range(n):
        p = L.llama_get_logits_ith(ctx, i)
        rows.append([float(f"{p[j]:.8g}") for j in range(V)])
    L.llama_batch_free(batch)
    L.llama_free(ctx)
    L.llama_model_free(model)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data",
                                                  "config_ref"))
    ap.add_argument("--no-gguf", action="store_true")
    a = ap.parse_args()
    import torch, transformers
    torch.manual_seed(0)
    os.makedirs(a.out, exist_ok=True)
    ref = {"generator": "tools/gen_config_ref.py", "transformers": transformers.__version__, "torch": torch.__version__,
           "cases": []}
    for i, (name, cfg) in enumerate(HF_CASES):
        ref["cases"].append(hf_case(a.out, name, cfg, 100 + i))
        print(f"{name}: transformers", file=sys.stderr)
    if not a.no_gguf:
        import llama_cpp
        ref["llama_cpp_python"] = llama_cpp.__version__
        for i, (name, arch, L, extra) in enumerate(GGUF_CASES):
            ref["cases"].append(gguf_case(a.out, name, arch, L, extra, 200 + i))
            print(f"{name}.gguf: llama.cpp", file=sys.stderr)
    with open(os.path.join(a.out, "ref.json"), "w") as f:
        json.dump(ref, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
