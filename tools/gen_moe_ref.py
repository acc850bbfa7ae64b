#!/usr/bin/env python3
"""gen_moe_ref.py — the references of tests/test_llm_moe.c (suite
llm_moe_ref): tiny random-weight models of the mixture-of-experts families
(Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE) and of Phi-3, built by transformers
from small configs, with transformers' logits (f32, eager attention) at
every position of a prompt and its greedy continuation.

Each model is written twice:
  <case>/            config.json + model.safetensors, as save_pretrained
                     writes them (experts one tensor each)
  <case>.gguf        the same weights in the layout llama.cpp's converter
                     writes (tensor names, metadata keys, experts stacked
                     into ffn_{gate,up,down}_exps, Mixtral as architecture
                     llama with Q/K rows permuted, Phi-3's attn_qkv and
                     ffn_up holding gate and up, its rope factor tensors),
                     written with the gguf package
and both are checked against transformers' logits.

Writes tests/data/moe_ref/ and its ref.json (per case: the file, the
prompt, transformers' greedy tokens, the logits of every position of
prompt + greedy tokens but the last).

Usage: tools/gen_moe_ref.py [--out tests/data/moe_ref]
Needs: torch transformers safetensors numpy gguf
"""
import argparse, json, math, os, shutil, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_gguf import permute   # noqa: E402  (the converter's Q/K row order for llama)
from llm_oracle import randomize   # noqa: E402

V = 32
PROMPT = [1, 7, 30, 2, 2, 9, 17, 4, 28, 11, 5, 23]
STEPS = 6
BASE = dict(vocab_size=V, max_position_embeddings=64, rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2)

# (name, config.json); expert counts, top-k, shared experts, GQA ratios, tied or not
CASES = [
    ("mixtral_8x2", dict(BASE, model_type="mixtral", hidden_size=16, intermediate_size=12, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=8, num_local_experts=8,
                         num_experts_per_tok=2, rope_theta=10000.0, tie_word_embeddings=False)),
    ("mixtral_4x3_window", dict(BASE, model_type="mixtral", hidden_size=16, intermediate_size=8, num_hidden_layers=3,
                                num_attention_heads=2, num_key_value_heads=1, num_local_experts=4,
                                num_experts_per_tok=3, sliding_window=5, tie_word_embeddings=True)),
    ("qwen2moe_shared", dict(BASE, model_type="qwen2_moe", hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=1, num_experts=6, num_experts_per_tok=2,
                             moe_intermediate_size=8, shared_expert_intermediate_size=12, norm_topk_prob=False,
                             rope_theta=1e6, tie_word_embeddings=True)),
    ("qwen2moe_norm", dict(BASE, model_type="qwen2_moe", hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                           num_attention_heads=2, num_key_value_heads=2, num_experts=4, num_experts_per_tok=3,
                           moe_intermediate_size=12, shared_expert_intermediate_size=8, norm_topk_prob=True,
                           tie_word_embeddings=False)),
    ("qwen3moe", dict(BASE, model_type="qwen3_moe", hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=8, num_experts=8, num_experts_per_tok=2,
                      moe_intermediate_size=8, norm_topk_prob=True, rope_theta=1e6, tie_word_embeddings=False)),
    ("qwen3moe_nonorm", dict(BASE, model_type="qwen3_moe", hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                             num_attention_heads=2, num_key_value_heads=1, head_dim=8, num_experts=5,
                             num_experts_per_tok=1, moe_intermediate_size=8, norm_topk_prob=False,
                             tie_word_embeddings=True)),
    ("olmoe", dict(BASE, model_type="olmoe", hidden_size=16, intermediate_size=8, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=4, num_experts=8, num_experts_per_tok=2,
                   norm_topk_prob=False, tie_word_embeddings=False)),
    ("olmoe_gqa_norm", dict(BASE, model_type="olmoe", hidden_size=16, intermediate_size=8, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
                            norm_topk_prob=True, tie_word_embeddings=False)),
    ("phi3", dict(BASE, model_type="phi3", pad_token_id=0, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                  num_attention_heads=2, num_key_value_heads=1, rope_theta=10000.0, tie_word_embeddings=False)),
    ("phi3_window", dict(BASE, model_type="phi3", pad_token_id=0, hidden_size=16, intermediate_size=24, num_hidden_layers=3,
                         num_attention_heads=2, num_key_value_heads=2, sliding_window=4, tie_word_embeddings=True)),
    # LongRoPE: the prompt is longer than the original context, so transformers runs the long factors (and wick,
    # whose context 64 is longer too); the attention factor is sqrt(1 + ln 8 / ln 8)
    ("phi3_longrope", dict(BASE, model_type="phi3", pad_token_id=0, hidden_size=32, intermediate_size=24, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, original_max_position_embeddings=8,
                           rope_scaling={"type": "longrope", "short_factor": [1.0, 1.5, 2.0, 3.0],
                                         "long_factor": [1.0, 2.5, 4.0, 9.0]}, tie_word_embeddings=False)),
    # a partial rotary (Phi-4-mini's 0.75: the first 12 of 16 dims of a head) with LongRoPE's long factors
    ("phi3_partial", dict(BASE, model_type="phi3", pad_token_id=0, hidden_size=64, intermediate_size=24,
                          num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                          original_max_position_embeddings=8, partial_rotary_factor=0.75,
                          rope_scaling={"type": "longrope", "short_factor": [1.0, 1.1, 1.3, 1.6, 2.0, 3.0],
                                        "long_factor": [1.0, 2.0, 3.0, 5.0, 8.0, 13.0]}, tie_word_embeddings=False)),
    # the short factors (the context equals the original one: factor 1, no attention factor)
    ("phi3_shortrope", dict(BASE, model_type="phi3", pad_token_id=0, hidden_size=32, intermediate_size=24, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2, original_max_position_embeddings=64,
                            rope_parameters={"rope_type": "longrope", "rope_theta": 500.0,
                                             "short_factor": [1.0, 1.25, 2.0, 4.0], "long_factor": [2.0, 3.0, 5.0, 8.0]},
                            tie_word_embeddings=False)),
]


# GGUF has no key for norm_topk_prob: llama.cpp renormalizes for llama's Mixtral and qwen3moe, never for qwen2moe
# and olmoe, so models that differ have no GGUF form that runs as transformers runs them
NO_GGUF = {"qwen2moe_norm", "qwen3moe_nonorm", "olmoe_gqa_norm"}


# Block-quantized experts: a Qwen2-MoE whose matrices are Q8_0 in its GGUF (the experts' stacks too: each
# expert's matrix a view of whole rows of blocks) and, dequantized, f32 in its safetensors folder, which is
# what transformers runs; wick runs the GGUF on the cpu's exact path (WICK_CPU_QDOT=0: the blocks decoded to f32)
QUANT = {"qwen2moe_q8_0": dict(BASE, model_type="qwen2_moe", hidden_size=32, intermediate_size=32, num_hidden_layers=2,
                               num_attention_heads=2, num_key_value_heads=1, num_experts=4, num_experts_per_tok=2,
                               moe_intermediate_size=32, shared_expert_intermediate_size=32, norm_topk_prob=False,
                               tie_word_embeddings=False)}


def q8_names(sd):
    """the matrices a Q8_0 file holds as blocks (rows of whole blocks of 32; not the routers, norms, biases)"""
    return {k for k, v in sd.items() if v.ndim == 2 and v.shape[1] % 32 == 0 and not k.endswith("mlp.gate.weight")
            and "shared_expert_gate" not in k}


def q8_roundtrip(sd):
    import numpy as np
    import gguf
    out = dict(sd)
    for k in q8_names(sd):
        q = gguf.quants.quantize(np.ascontiguousarray(sd[k], dtype=np.float32), gguf.GGMLQuantizationType.Q8_0)
        out[k] = gguf.quants.dequantize(q, gguf.GGMLQuantizationType.Q8_0).reshape(sd[k].shape).astype(np.float32)
    return out


def hf_case(out, name, cfg, quant=False):
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
    randomize(model, False)
    with torch.no_grad():   # routers a little sharper than 1/sqrt(E), so top-k is decided clearly
        for n, p in model.named_parameters():
            if n.endswith("gate.weight") and p.shape[0] > 1 and "experts" not in n:
                p.mul_(3.0)
    model.save_pretrained(d, safe_serialization=True)   # the hub's layout: one tensor per expert
    for extra in ("generation_config.json",):
        if os.path.exists(os.path.join(d, extra)):
            os.remove(os.path.join(d, extra))
    with open(os.path.join(d, "config.json"), "w") as f:   # the keys under test exactly as given
        json.dump(cfg, f, indent=1)
        f.write("\n")
    orig = None
    if quant:   # the folder holds the dequantized weights; the GGUF quantizes the originals
        from safetensors import safe_open
        from safetensors.numpy import save_file as save_np
        with safe_open(os.path.join(d, "model.safetensors"), "np") as f:
            orig = {k: f.get_tensor(k) for k in f.keys()}
        save_np(q8_roundtrip(orig), os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    m = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager").eval()
    seq = list(PROMPT)
    with torch.no_grad():
        for _ in range(STEPS):
            seq.append(int(torch.argmax(m(torch.tensor([seq])).logits[0, -1])))
        lg = m(torch.tensor([seq])).logits[0, :-1].float()
    from safetensors import safe_open
    with safe_open(os.path.join(d, "model.safetensors"), "np") as f:
        sd = {k: f.get_tensor(k) for k in f.keys()}
    return m.config, orig or sd, seq[len(PROMPT):], [[float(f"{float(x):.8g}") for x in row] for row in lg]


def gguf_case(out, name, cfg, hc, sd, quant=False):
    import numpy as np
    import gguf
    qset = q8_names(sd) if quant else set()
    mt = cfg["model_type"]
    arch = {"mixtral": "llama", "qwen2_moe": "qwen2moe", "qwen3_moe": "qwen3moe", "olmoe": "olmoe", "phi3": "phi3"}[mt]
    E, H, HKV, L = hc.hidden_size, hc.num_attention_heads, hc.num_key_value_heads, hc.num_hidden_layers
    D = getattr(hc, "head_dim", None) or E // H
    path = os.path.join(out, name + ".gguf")
    w = gguf.GGUFWriter(path, arch)
    w.add_context_length(hc.max_position_embeddings)
    w.add_embedding_length(E)
    w.add_block_count(L)
    w.add_feed_forward_length(hc.intermediate_size)
    w.add_head_count(H)
    w.add_head_count_kv(HKV)
    w.add_layer_norm_rms_eps(hc.rms_norm_eps)
    rp = hc.rope_parameters
    w.add_rope_freq_base(rp["rope_theta"])
    w.add_vocab_size(V)
    w.add_tokenizer_model("none")
    if mt == "phi3":
        w.add_rope_dimension_count(int(rp.get("partial_rotary_factor", 1.0) * E) // H)   # as the converter
        w.add_sliding_window(hc.sliding_window or 0)
        orig = hc.original_max_position_embeddings
        w.add_rope_scaling_orig_ctx_len(orig)
        if rp.get("rope_type", "default") != "default":
            s = hc.max_position_embeddings / orig
            w.add_rope_scaling_attn_factors(math.sqrt(1 + math.log(s) / math.log(orig)) if s > 1 else 1.0)
            w.add_tensor("rope_factors_long.weight", np.array(rp["long_factor"], dtype=np.float32))
            w.add_tensor("rope_factors_short.weight", np.array(rp["short_factor"], dtype=np.float32))
    else:
        w.add_key_length(D)
        w.add_value_length(D)
        X = hc.num_local_experts if mt == "mixtral" else hc.num_experts
        w.add_expert_count(X)
        w.add_expert_used_count(hc.num_experts_per_tok)
        if mt in ("qwen2_moe", "qwen3_moe"):
            w.add_expert_feed_forward_length(hc.moe_intermediate_size)
        if mt == "qwen2_moe":
            w.add_expert_shared_feed_forward_length(hc.shared_expert_intermediate_size)
        if mt == "mixtral" and hc.sliding_window:
            w.add_sliding_window(hc.sliding_window)
    t = lambda k: np.ascontiguousarray(sd[k], dtype=np.float32)
    Q8 = gguf.GGMLQuantizationType.Q8_0
    add = w.add_tensor

    def put(gname, a, hf_names):   # Q8_0 where the HF tensors are in qset (rows quantized one by one)
        if hf_names and all(n in qset for n in hf_names):
            add(gname, gguf.quants.quantize(np.ascontiguousarray(a), Q8), raw_dtype=Q8)
        else:
            add(gname, a)
    put("token_embd.weight", t("model.embed_tokens.weight"), ["model.embed_tokens.weight"])
    w.add_tensor("output_norm.weight", t("model.norm.weight"))
    if "lm_head.weight" in sd:
        put("output.weight", t("lm_head.weight"), ["lm_head.weight"])
    for l in range(L):
        p, g = f"model.layers.{l}.", f"blk.{l}."
        w.add_tensor(g + "attn_norm.weight", t(p + "input_layernorm.weight"))
        w.add_tensor(g + "ffn_norm.weight", t(p + "post_attention_layernorm.weight"))
        put(g + "attn_output.weight", t(p + "self_attn.o_proj.weight"), [p + "self_attn.o_proj.weight"])
        if mt == "phi3":
            w.add_tensor(g + "attn_qkv.weight", t(p + "self_attn.qkv_proj.weight"))
            w.add_tensor(g + "ffn_up.weight", t(p + "mlp.gate_up_proj.weight"))
            w.add_tensor(g + "ffn_down.weight", t(p + "mlp.down_proj.weight"))
            continue
        q, k = t(p + "self_attn.q_proj.weight"), t(p + "self_attn.k_proj.weight")
        if arch == "llama":   # the converter's permutation for the interleaved rope
            q, k = permute(q, H), permute(k, HKV)
        put(g + "attn_q.weight", q, [p + "self_attn.q_proj.weight"])
        put(g + "attn_k.weight", k, [p + "self_attn.k_proj.weight"])
        put(g + "attn_v.weight", t(p + "self_attn.v_proj.weight"), [p + "self_attn.v_proj.weight"])
        if mt == "qwen2_moe":
            for b in "qkv":
                w.add_tensor(g + f"attn_{b}.bias", t(p + f"self_attn.{b}_proj.bias"))
        if mt in ("qwen3_moe", "olmoe"):
            w.add_tensor(g + "attn_q_norm.weight", t(p + "self_attn.q_norm.weight"))
            w.add_tensor(g + "attn_k_norm.weight", t(p + "self_attn.k_norm.weight"))
        if mt == "mixtral":
            pre, names = p + "block_sparse_moe.", {"gate": "w1", "up": "w3", "down": "w2"}
        else:
            pre, names = p + "mlp.", {"gate": "gate_proj", "up": "up_proj", "down": "down_proj"}
        X = hc.num_local_experts if mt == "mixtral" else hc.num_experts
        w.add_tensor(g + "ffn_gate_inp.weight", t(pre + "gate.weight"))
        for part, hf in names.items():   # stacked [X, rows, cols]: ne = (cols, rows, X)
            put(g + f"ffn_{part}_exps.weight", np.stack([t(pre + f"experts.{e}.{hf}.weight") for e in range(X)]),
                [pre + f"experts.{e}.{hf}.weight" for e in range(X)])
        if mt == "qwen2_moe":
            for part in ("gate", "up", "down"):
                put(g + f"ffn_{part}_shexp.weight", t(pre + f"shared_expert.{part}_proj.weight"),
                    [pre + f"shared_expert.{part}_proj.weight"])
            w.add_tensor(g + "ffn_gate_inp_shexp.weight", t(pre + "shared_expert_gate.weight"))   # [1, E]
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data",
                                                  "moe_ref"))
    a = ap.parse_args()
    import torch, transformers, gguf  # noqa: F401
    torch.manual_seed(0)
    os.makedirs(a.out, exist_ok=True)
    ref = {"generator": "tools/gen_moe_ref.py", "transformers": transformers.__version__, "torch": torch.__version__,
           "cases": []}
    for name, cfg in CASES:
        hc, sd, greedy, lg = hf_case(a.out, name, cfg)
        files = [name]
        if name not in NO_GGUF:
            gguf_case(a.out, name, cfg, hc, sd)
            files.append(name + ".gguf")
        for f in files:
            ref["cases"].append({"name": f, "file": f, "reference": "transformers", "bound": 1e-4, "prompt": PROMPT,
                                 "greedy": greedy, "logits": lg})
        print(f"{name}: greedy {greedy}", file=sys.stderr)
    for name, cfg in QUANT.items():
        hc, sd, greedy, lg = hf_case(a.out, name, cfg, quant=True)
        gguf_case(a.out, name, cfg, hc, sd, quant=True)
        for f in (name, name + ".gguf"):
            ref["cases"].append({"name": f, "file": f, "reference": "transformers", "bound": 1e-4, "prompt": PROMPT,
                                 "greedy": greedy, "logits": lg, "cpu_qdot": "0"})
        print(f"{name}: greedy {greedy}", file=sys.stderr)
    with open(os.path.join(a.out, "ref.json"), "w") as f:
        json.dump(ref, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
