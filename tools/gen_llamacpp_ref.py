#!/usr/bin/env python3
"""gen_llamacpp_ref.py — reference logits and greedy tokens of a real model,
made by llama.cpp (PyPI's llama-cpp-python) on the CPU from a GGUF file.

llama.cpp's CPU kernels multiply quantized weights by activations quantized
to 8-bit blocks (q8_0 / q8_1 / q8_K) with integer dot products: the path
that wick takes on the cpu with WICK_CPU_QDOT=1 (src/cpu/cpu_qdot.c). The
prompts are the token ids of another reference file (tests/data/
smollm2_ref.json, made by tools/gen_model_ref.py), so both references see
the same tokens whatever the tokenizers do. For each prompt this writes
the prompt's ids, llama.cpp's greedy continuation (STEPS tokens, the end
token not treated specially; each step is one token through the KV cache)
and, at every position of prompt + continuation, the top-k logits (ids and
values) and the margin between the first and second logit.
tests/test_llm_llamacpp.c (build/wick-tests, suite llm_llamacpp) reads
the JSON when the model file is present.

The KV cache is f32 (llama.cpp's default is f16) and flash attention off,
so that the differences left are those of the matrix products.

Usage: tools/gen_llamacpp_ref.py MODEL.gguf PROMPTS.json OUT.json [--k 8] [--steps 32]
  e.g. tools/gen_llamacpp_ref.py ~/.cache/wick/SmolLM2-135M-Instruct.Q4_1.gguf \
           tests/data/smollm2_ref.json tests/data/smollm2_llamacpp_ref.json
       tools/gen_llamacpp_ref.py ~/.cache/wick/gemma-3-270m-q4_k_m.gguf \
           tests/data/gemma3_ref.json tests/data/gemma3_llamacpp_ref.json
Needs: pip install llama-cpp-python numpy (it compiles llama.cpp: 15-30
minutes on two cores).
"""
import argparse, json, os, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("prompts", help="a reference JSON whose prompts' prompt_ids are used")
    ap.add_argument("out")
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--threads", type=int, default=max(1, os.cpu_count() or 1))
    a = ap.parse_args()

    import numpy as np
    import llama_cpp
    from llama_cpp import Llama

    src = json.load(open(a.prompts))
    GGML_TYPE_F32 = 0
    llm = Llama(model_path=a.model, n_ctx=256, n_batch=256, n_ubatch=256, logits_all=True, n_threads=a.threads,
                n_threads_batch=a.threads, type_k=GGML_TYPE_F32, type_v=GGML_TYPE_F32, flash_attn=False,
                n_gpu_layers=0, verbose=False)

    out = {"model": os.path.basename(a.model), "generator": "tools/gen_llamacpp_ref.py",
           "llama_cpp_python": llama_cpp.__version__, "kv_cache": "f32", "k": a.k, "steps": a.steps,
           "prompts": []}

    def top(row):
        ids = np.argsort(-row, kind="stable")[:a.k]
        return {"ids": [int(i) for i in ids], "logits": [round(float(row[i]), 6) for i in ids],
                "margin": round(float(row[ids[0]] - row[ids[1]]), 6)}

    for p in src["prompts"]:
        ids = list(p["prompt_ids"])
        llm.reset()
        llm.eval(ids)
        rows = [np.array(llm.scores[t], dtype=np.float32) for t in range(len(ids))]
        greedy = []
        for _ in range(a.steps):
            tok = int(np.argmax(rows[-1]))
            greedy.append(tok)
            llm.eval([tok])
            rows.append(np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32))
        # rows: every prompt position, then one per greedy token (the last
        # one's logits are those after the final token, as the transformers
        # reference keeps len(prompt) + steps positions)
        positions = [top(r) for r in rows[:len(ids) + a.steps]]
        out["prompts"].append({"name": p["name"], "prompt_ids": ids, "greedy_ids": greedy,
                               "greedy_text": llm.detokenize(greedy).decode("utf-8", "replace"),
                               "positions": positions})
        print(f"{p['name']}: {len(ids)} prompt tokens, greedy {llm.detokenize(greedy)!r}, smallest margin "
              f"{min(q['margin'] for q in positions):.4f}", file=sys.stderr)
    with open(a.out, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
