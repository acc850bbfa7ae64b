#!/usr/bin/env python3
"""gen_model_ref.py — reference logits and greedy tokens of a real model,
made by Hugging Face transformers from the same GGUF file wick reads.

transformers loads the GGUF by dequantizing every tensor to f32 (through
the gguf package, whose dequantize wk_dequantize matches bit for bit) and
runs its own PyTorch implementation on the CPU in f32. For each prompt this
writes the prompt's text and token ids (plain prompts with the BOS the file
asks for; a chat as the template writes it, its BOS included), the greedy continuation (32 tokens, the end
token not treated specially) and, at every position of prompt +
continuation, the top-k logits (ids and values) and the margin between the
first and second logit. tests/test_llm_ref.c (build/wick-tests, suite
llm_ref) reads the JSON when the model file is present.

Usage: tools/gen_model_ref.py MODEL.gguf OUT.json [--k 8] [--steps 32]
Needs: pip install torch transformers gguf (CPU wheels are enough).
"""
import argparse, json, os, sys

PROMPTS = [
    {"name": "plain", "text": "The capital of France is"},
    {"name": "code", "text": "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"},
    {"name": "chat", "chat": [{"role": "user", "content": "What is the boiling point of water in Celsius?"}]},
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--steps", type=int, default=32)
    a = ap.parse_args()

    import torch, transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer
    torch.manual_seed(0)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    d, f = os.path.split(os.path.abspath(a.model))
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, torch_dtype=torch.float32)
    model.eval()

    out = {"model": f, "generator": "tools/gen_model_ref.py",
           "transformers": transformers.__version__, "torch": torch.__version__,
           "k": a.k, "steps": a.steps, "prompts": []}
    for p in PROMPTS:
        if "chat" in p and not tok.chat_template:
            print(f"{p['name']}: the file has no chat template: left out", file=sys.stderr)
            continue
        if "chat" in p:   # the template writes the BOS where the model has one
            text = tok.apply_chat_template(p["chat"], tokenize=False, add_generation_prompt=True)
            ids = tok(text, add_special_tokens=False)["input_ids"]
        else:
            text = p["text"]
            ids = tok(text, add_special_tokens=True)["input_ids"]
        seq = list(ids)
        with torch.no_grad():
            for _ in range(a.steps):   # greedy, recomputed from scratch each step
                lg = model(torch.tensor([seq])).logits[0, -1]
                seq.append(int(torch.argmax(lg)))
            logits = model(torch.tensor([seq])).logits[0]      # [T, vocab], every position
        rows = []
        for t in range(len(seq)):
            v, i = torch.topk(logits[t], a.k)
            rows.append({"ids": [int(x) for x in i], "logits": [round(float(x), 6) for x in v],
                         "margin": round(float(v[0] - v[1]), 6)})
        gen = seq[len(ids):]
        out["prompts"].append({"name": p["name"], "text": text, "prompt_ids": ids, "greedy_ids": gen,
                               "greedy_text": tok.decode(gen), "positions": rows})
        print(f"{p['name']}: {len(ids)} prompt tokens, greedy: {tok.decode(gen)!r}", file=sys.stderr)
    with open(a.out, "w") as fh:
        json.dump(out, fh, separators=(",", ":"))
        fh.write("\n")


if __name__ == "__main__":
    main()
