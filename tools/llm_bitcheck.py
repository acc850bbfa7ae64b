#!/usr/bin/env python3
"""llm_bitcheck.py — a refactor of the model layer must keep every logit
bit for bit: this runs two builds of wick-llm-oracle (a reference commit's
and the tree's) on the same models, prompts and forced tokens, and compares
their output files byte for byte.

Models: transformers' random-weight models of every architecture that
tools/llm_oracle.py builds (llama with Llama 3.1 rope scaling, mistral with
a window, qwen2, qwen3, gemma3), as safetensors and, for llama, as the GGUF
llama.cpp's converter writes, that GGUF quantized (q8_0, q4_k_m) by the
reference build's `wick quantize`; plus any GGUF files named with --gguf
(real models). Each runs in f32 and bf16, with the default prefill chunk
and with chunks of 4 (window caches on the sliding models), and greedy
decode steps of its own (no forcing: the tokens must match too).

  tools/llm_bitcheck.py --ref REFBUILD --new build [--device cpu] [--gguf a.gguf ...] [--out DIR]
                        [--ref-env VAR=value] [--new-env VAR=value]   (e.g. each tree's WICK_CUDA_PLUGIN)

Exit 1 when any pair differs. Needs torch, transformers, numpy, gguf
(tools/hf_gguf.py); without torch only the --gguf files are compared.
"""
import argparse, filecmp, os, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def run(exe, path, device, dtype, prompt, out, chunk=0, extra_env=()):
    cmd = [exe, path, "--device", device, "--dtype", dtype, "--prompt", ",".join(map(str, prompt)), "--out", out]
    if chunk:
        cmd += ["--chunk", str(chunk)]
    env = dict(os.environ, WICK_PROGRESS="0")
    env.update(kv.split("=", 1) for kv in extra_env)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", required=True, help="the reference build folder (holds wick-llm-oracle and wick)")
    ap.add_argument("--new", default="build", help="the build under test")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--gguf", nargs="*", default=[], help="more GGUF files (real models)")
    ap.add_argument("--out", default=None, help="keep the models and outputs here")
    ap.add_argument("--no-random", action="store_true", help="only the --gguf files")
    ap.add_argument("--ref-env", action="append", default=[], help="VAR=value for the reference's runs (repeatable)")
    ap.add_argument("--new-env", action="append", default=[], help="VAR=value for the new build's runs")
    a = ap.parse_args()
    tmp = a.out or tempfile.mkdtemp(prefix="wick-bitcheck-")
    os.makedirs(tmp, exist_ok=True)
    models = [(os.path.basename(p), p, False, 40) for p in a.gguf]
    if not a.no_random:
        try:
            import numpy as np, torch
            import llm_oracle as lo
        except ImportError as e:
            print(f"random models skipped: {e}", file=sys.stderr)
        else:
            torch.manual_seed(0)
            for name, cls, cfg in lo.configs():
                cfg._attn_implementation = "eager"
                model = cls(cfg)
                model.eval()
                lo.randomize(model, name == "gemma3")
                path = os.path.join(tmp, name)
                model.save_pretrained(path, safe_serialization=True)
                models.append((name, path, bool(getattr(cfg, "sliding_window", None)), 40))
                if name == "llama":
                    g = os.path.join(tmp, "llama.gguf")
                    lo.write_llama_gguf(model, g)
                    models.append(("llama.gguf", g, False, 40))
                    for q in ("q8_0", "q4_k_m"):
                        qp = os.path.join(tmp, f"llama-{q}.gguf")
                        subprocess.run([os.path.join(a.ref, "wick"), "quantize", g, qp, q], check=True,
                                       capture_output=True)
                        models.append((f"llama-{q}.gguf", qp, False, 40))
    rng_prompt = [(7 * i + 3) % 500 + 3 for i in range(40)]
    bad = 0
    rows = []
    for name, path, sliding, np_ in models:
        for dtype in ("f32", "bf16"):
            for chunk in ([0, 4] if sliding else [0]):
                outs = []
                errs = []
                for side, b, env in (("ref", a.ref, a.ref_env), ("new", a.new, a.new_env)):
                    o = os.path.join(tmp, f"{name}-{dtype}-{chunk}-{side}.bin")
                    errs.append(run(os.path.join(b, "wick-llm-oracle"), path, a.device, dtype, rng_prompt[:np_], o,
                                    chunk, env))
                    outs.append(o)
                if errs[0] or errs[1]:
                    same = errs[0] == errs[1] and errs[0] is not None and errs[1] is not None
                    verdict = f"error: ref {errs[0]!r} new {errs[1]!r}"
                else:
                    same = filecmp.cmp(outs[0], outs[1], shallow=False)
                    verdict = "identical" if same else "DIFFERENT"
                if not same:
                    bad += 1
                rows.append((name, dtype, chunk or "default", verdict))
    print(f"| model | activations | prefill chunk | logits and tokens (ref vs new, {a.device}) |")
    print("|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(map(str, r)) + " |")
    print(f"{len(rows) - bad} identical, {bad} different")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
