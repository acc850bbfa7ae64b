#!/usr/bin/env python3
"""run_model.py — the Hugging Face side of bench/run_model.sh (run on the
device machine, which has torch and transformers and no network).

  run_model.py make  --out DIR --models smol,8b [--steps S] [--reps R]
      For each model shape: builds a random-weight LlamaForCausalLM in bf16
      directly on the GPU (no checkpoint, nothing downloaded), times it in
      transformers (bf16, cuda, batch 1, its default attention):
        prefill of 2048 random tokens (one forward, last token's logits,
        the median of R after one warm-up);
        decode at context 512 and 4096: the context's tokens run once, then
        S greedy steps, each a forward of one token with transformers' KV
        cache (DynamicCache) and the argmax fed back, synchronized per step
        as generate() is (the median step time; 4 warm-up steps);
      then writes the model as a llama GGUF in bf16 (norms f32) the way
      llama.cpp's converter names and permutes it (Q and K rows permuted for
      the interleaved rope), for wick. Also times the device's copy
      bandwidth (torch: a 1 GiB device-to-device copy, bytes read + written).
      One JSON object per line to DIR/hf.jsonl; models to DIR/<name>.gguf.
  run_model.py report --out DIR --commit C > RESULTS
      The results table (markdown) from DIR/hf.jsonl and DIR/wick-*.jsonl.
"""
import argparse, json, os, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))   # hf_gguf

SHAPES = {
    # SmolLM2-135M: 30 layers of 576, 9 heads / 3 KV heads, tied embeddings
    "smol": dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                 num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192,
                 rms_norm_eps=1e-5, rope_theta=100000.0, tie_word_embeddings=True),
    # Llama-3 8B
    "8b": dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
               num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
               rms_norm_eps=1e-5, rope_theta=500000.0, tie_word_embeddings=False),
}
CONTEXTS = (512, 4096)
PREFILL = 2048


def emit(f, **kw):
    line = json.dumps(kw)
    print(line, flush=True)
    f.write(line + "\n")
    f.flush()


def copy_bandwidth():
    import torch
    n = 1 << 30
    x = torch.empty(n, dtype=torch.uint8, device="cuda")
    x.fill_(1)
    y = torch.empty_like(x)
    for _ in range(3):
        y.copy_(x)
    ts = []
    for _ in range(20):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        y.copy_(x)
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) / 1e3)
    ts.sort()
    t = ts[len(ts) // 2]
    del x, y
    torch.cuda.empty_cache()
    return 2 * n / t


def hf_times(model, vocab, steps, reps):
    import torch
    g = torch.Generator(device="cpu").manual_seed(1)
    out = {}

    def sync():
        torch.cuda.synchronize()

    with torch.inference_mode():
        ids = torch.randint(0, vocab, (1, PREFILL), generator=g).cuda()
        ts = []
        for r in range(reps + 1):
            sync()
            t0 = time.perf_counter()
            model(ids, use_cache=True, logits_to_keep=1)
            sync()
            if r:
                ts.append(time.perf_counter() - t0)
        ts.sort()
        out["prefill"] = dict(tokens=PREFILL, median_ms=1e3 * ts[len(ts) // 2], tokens_per_s=PREFILL / ts[len(ts) // 2])
        for c in CONTEXTS:
            ids = torch.randint(0, vocab, (1, c), generator=g).cuda()
            o = model(ids, use_cache=True, logits_to_keep=1)
            cache = o.past_key_values
            nxt = o.logits[:, -1].argmax(-1, keepdim=True)
            ts = []
            for s in range(steps):
                sync()
                t0 = time.perf_counter()
                o = model(nxt, past_key_values=cache, use_cache=True)
                cache = o.past_key_values
                nxt = o.logits[:, -1].argmax(-1, keepdim=True)
                sync()
                if s >= 4:
                    ts.append(time.perf_counter() - t0)
            mean = sum(ts) / len(ts)
            ts.sort()
            med = ts[len(ts) // 2]
            out[f"decode{c}"] = dict(context=c, steps=len(ts), median_ms=1e3 * med, tokens_per_s=1 / med,
                                      tokens_per_s_mean=1 / mean)
            del cache, o
            torch.cuda.empty_cache()
    return out


def write_gguf(model, cfg, path):
    """llama GGUF, bf16 matrices (type 30) and f32 norms (type 0), names and
    Q/K permutation as llama.cpp's convert_hf_to_gguf.py writes them
    (tools/hf_gguf.py); the bf16 bits copied as they are."""
    import numpy as np
    import torch
    import hf_gguf

    def getter(t):
        if t.dim() == 1:
            return lambda: t.float().contiguous().cpu().numpy()
        return lambda: t.contiguous().view(torch.int16).cpu().numpy().view(np.uint16)

    items = [(name, tuple(t.shape), getter(t)) for name, t in model.state_dict().items()]
    tensors = hf_gguf.llama_tensors(items, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.tie_word_embeddings)
    hf_gguf.write_llama_gguf(path, hf_gguf.hf_meta(cfg), tensors, matrix_type="bf16", name=os.path.basename(path))


def make(a):
    import torch, transformers as T
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "hf.jsonl"), "a") as f:
        emit(f, what="env", gpu=torch.cuda.get_device_name(0), torch=torch.__version__, transformers=T.__version__,
             date=time.strftime("%Y-%m-%d"))
        emit(f, what="copy_bandwidth", bytes_per_s=copy_bandwidth())
        for name in a.models.split(","):
            cfg = T.LlamaConfig(**SHAPES[name])
            t0 = time.time()
            torch.set_default_dtype(torch.bfloat16)
            with torch.device("cuda"):
                model = T.LlamaForCausalLM(cfg)
            torch.set_default_dtype(torch.float32)
            model.eval()
            with torch.no_grad():   # norms around 1, not exactly 1 (no layer trivial)
                for n, p in model.named_parameters():
                    if "norm" in n:
                        p.copy_(1.0 + 0.1 * torch.randn_like(p))
            torch.cuda.synchronize()
            made = time.time() - t0
            attn = getattr(model.config, "_attn_implementation", "?")
            nparams = sum(p.numel() for p in model.parameters())
            r = hf_times(model, cfg.vocab_size, a.steps, a.reps) if a.hf else {}
            for k, v in r.items():
                emit(f, what=k, model=name, impl="transformers", attn=attn, params=nparams, **v)
            t0 = time.time()
            path = os.path.join(a.out, f"{name}.gguf")
            write_gguf(model, cfg, path)
            emit(f, what="gguf", model=name, path=path, bytes=os.path.getsize(path), make_s=made,
                 write_s=time.time() - t0)
            del model
            torch.cuda.empty_cache()


def report(a):
    rows = []
    for fn in sorted(os.listdir(a.out)):
        if fn.endswith(".jsonl"):
            with open(os.path.join(a.out, fn)) as f:
                rows += [json.loads(l) for l in f if l.strip().startswith("{")]
    env = next((r for r in rows if r.get("what") == "env"), {})
    bw = next((r["bytes_per_s"] for r in rows if r.get("what") == "copy_bandwidth"), None)
    hf = {(r["model"], r["what"]): r for r in rows if r.get("impl") == "transformers"}
    wk = {}
    loads = {}
    counts = {}
    for r in rows:
        lab = r.get("label")
        if not lab:
            continue
        if r["what"] == "load":
            loads[lab] = r
        elif r["what"] == "launches":
            counts[lab] = r
        elif r["what"] == "prefill":
            wk[(lab, "prefill")] = r
        elif r["what"] == "decode":
            wk[(lab, f"decode{r['context']}")] = r
        elif r["what"] == "generate":
            wk[(lab, f"generate{r['context']}")] = r
    print(f"Device: {env.get('gpu', '?')}; date {env.get('date', '?')}; commit {a.commit}; "
          f"torch {env.get('torch', '?')}, transformers {env.get('transformers', '?')}.")
    if bw:
        print(f"Copy bandwidth (torch, 1 GiB device-to-device copy, bytes read + written, median of 20): "
              f"{bw / 1e12:.2f} TB/s.")
    print()
    print("| model | run | wick tok/s | transformers tok/s | wick / HF | roofline tok/s | wick % of roofline |")
    print("|---|---|---|---|---|---|---|")
    for lab, ld in loads.items():
        model = lab.split("-")[0]
        # bytes read per decode token: the weights minus the embedding table
        # (one row of it is read), plus the KV cache up to the context
        E, V, L = ld["n_embd"], ld["n_vocab"], ld["n_layer"]
        cfg = SHAPES.get(model, {})
        kvd = cfg.get("num_key_value_heads", 0) * (E // max(cfg.get("num_attention_heads", 1), 1))
        # (token_embd: bf16, or q4_k in the Q4_K_M mix; tied: it is the
        # output matrix too, read whole)
        emb = 0 if cfg.get("tie_word_embeddings") else V * E * (2 if ld["weight_dtype"] == "bf16" else 144 / 256)
        for what in ["prefill"] + sorted((k[1] for k in wk if k[0] == lab and k[1] != "prefill"), key=lambda x: (x.rstrip("0123456789"), int(x[len(x.rstrip("0123456789")):]))):
            w = wk.get((lab, what))
            # transformers ran on one GPU, unquantized: no column for the
            # q4 rows and the tensor-parallel ones (their table is below)
            h = hf.get((model, what.replace("generate", "decode"))) if "q4" not in lab and ld.get("tp", 1) == 1 else None
            if not w:
                continue
            roof = pct = ""
            if what.startswith(("decode", "generate")) and bw and ld.get("tp", 1) == 1:
                ctx = w["context"]
                wbytes = ld["weight_bytes"] - emb
                kv = 2 * L * kvd * ctx * 2
                rt = bw / (wbytes + kv)
                roof = f"{rt:.0f}"
                pct = f"{100 * w['tokens_per_s'] / rt:.0f}%"
            hv = f"{h['tokens_per_s']:.1f}" if h else ""
            ratio = f"{w['tokens_per_s'] / h['tokens_per_s']:.2f}x" if h else ""
            print(f"| {lab} | {what} | {w['tokens_per_s']:.1f} | {hv} | {ratio} | {roof} | {pct} |")
    tps = [lab for lab, ld in loads.items() if ld.get("tp", 1) > 1]
    if tps:   # tensor parallel against the same model on one GPU (target: 1.6x for N = 2)
        print()
        print("| tensor parallel | run | tok/s | one GPU tok/s | speed-up | target |")
        print("|---|---|---|---|---|---|")
        for lab in tps:
            n = loads[lab]["tp"]
            base = lab[: lab.rindex("-tp")] if "-tp" in lab else None
            for (l, what), w in sorted(wk.items()):
                one = wk.get((base, what))
                if l != lab or not one:
                    continue
                r = w["tokens_per_s"] / one["tokens_per_s"]
                tgt = ""
                if n == 2 and what.startswith("decode"):
                    tgt = ">= 1.6 " + ("met" if r >= 1.6 else "MISSED")
                print(f"| {lab} ({n} GPUs) | {what} | {w['tokens_per_s']:.1f} | {one['tokens_per_s']:.1f} | "
                      f"{r:.2f}x | {tgt} |")
    q = next((r for r in rows if r.get("what") == "quantize"), None)
    if q:
        print()
        print(f"`wick quantize` of the 8B bf16 GGUF to q4_k_m: {q['seconds']} s on {q['threads']} threads "
              f"({q['bytes'] / 1e9:.2f} GB).")
    lo = os.path.join(a.out, "launch_overhead.log")
    if os.path.exists(lo):
        with open(lo) as f:
            print()
            print("`wick-launch-overhead --device cuda:0` (a chain of 1-element adds): " + f.read().strip())
    splits = {r["label"]: r["text"] for r in rows if r.get("what") == "host_split"}
    parts = {r["label"]: r["text"] for r in rows if r.get("what") == "device_parts"}
    if counts or splits or parts:
        print()
        for lab in sorted(set(counts) | set(splits) | set(parts)):
            bits = []
            if lab in counts:
                bits.append(f"{counts[lab]['launches']} launches (kernels and BLAS calls) per decode token")
            if lab in splits:
                bits.append(f"{splits[lab]} (WICK_LLM_TIMING=1, mean over the one-token passes of the run)")
            if lab in parts:
                bits.append(f"{parts[lab]} (WICK_LLM_TIMING=2)")
            print(f"- {lab}: " + "; ".join(bits))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=("make", "report"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="smol,8b")
    ap.add_argument("--steps", type=int, default=36)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--commit", default="?")
    ap.add_argument("--no-hf", dest="hf", action="store_false", help="make the files without timing transformers")
    a = ap.parse_args()
    make(a) if a.cmd == "make" else report(a)


if __name__ == "__main__":
    main()
