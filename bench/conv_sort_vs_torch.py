#!/usr/bin/env python3
"""conv_sort_vs_torch.py — issue 13's speed rows: wick's convolutions,
pools, upsampling and sorts against PyTorch on the same GPU, in one run.

Makes each case's inputs with torch (seed printed), writes them as raw
bytes to a scratch folder, runs bench/conv_sort_bench.c (wick's side,
events around each call, median of --reps), times the same op in
PyTorch the same way (cuDNN with benchmark mode on, so it picks its
fastest algorithm; TF32 off), checks wick's result against PyTorch's
(convs, pools, upsampling: error relative to the largest reference value,
PyTorch computing in f32; arg_sort: the same indices as the stable
torch.argsort; topk: the same values), and prints a markdown table.
speed = torch ms / wick ms (>= 1: wick is faster). The copy bandwidth
(a device-to-device clone of 1 GiB) is the ceiling of the streaming ops.

  python3 bench/conv_sort_vs_torch.py --bench build/conv-sort-bench [--scratch DIR] [--reps N] [--case A,B]

The environment reaches wick's side: WICK_CONV_COL_MB=256 (say) times the
convolutions with another column budget.
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np
import torch

SEED = 1234

# name, kind, dtype, x shape, w shape, stride, pad, groups (pool: kernel), k (topk), target (speed >=)
CASES = [
    ("conv2d_3x3_c256_bf16", "conv", torch.bfloat16, (32, 256, 56, 56), (256, 256, 3, 3), 1, 1, 1, 0, 0.5),
    ("conv2d_7x7s2_resnet_bf16", "conv", torch.bfloat16, (32, 3, 224, 224), (64, 3, 7, 7), 2, 3, 1, 0, 0.5),
    ("dwconv_3x3_c512_bf16", "conv", torch.bfloat16, (32, 512, 28, 28), (512, 1, 3, 3), 1, 1, 512, 0, 0.8),
    ("conv2d_3x3_c64_f32", "conv", torch.float32, (16, 64, 56, 56), (64, 64, 3, 3), 1, 1, 1, 0, None),
    ("argsort_f32_4096x32768", "argsort", torch.float32, (4096, 32768), None, 0, 0, 0, 0, 0.5),
    ("argsort_f32_2p24", "argsort", torch.float32, (1 << 24,), None, 0, 0, 0, 0, 0.5),
    ("argsort_f32_1e5x32", "argsort", torch.float32, (100000, 32), None, 0, 0, 0, 0, None),
    ("argsort_f32_1e4x1000", "argsort", torch.float32, (10000, 1000), None, 0, 0, 0, 0, None),
    ("topk50_f32_64x128256", "topk", torch.float32, (64, 128256), None, 0, 0, 0, 50, 1.0),
    ("topk50_f32_1x128256", "topk", torch.float32, (1, 128256), None, 0, 0, 0, 50, None),   # a sampling step (reported)
    ("upsample_nearest2d_x2_bf16", "upnear", torch.bfloat16, (32, 256, 56, 56), None, 0, 0, 0, 0, None),
    ("avg_pool2d_3x3s2_bf16", "avgpool", torch.bfloat16, (32, 256, 112, 112), None, 2, 1, 3, 0, None),
]


def torch_fn(kind, x, w, stride, pad, groups, k):
    F = torch.nn.functional
    if kind == "conv":
        return lambda: F.conv2d(x, w, None, stride, pad, 1, groups)
    if kind == "argsort":
        return lambda: torch.argsort(x, dim=-1, stable=True)
    if kind == "topk":
        return lambda: torch.topk(x, k, dim=-1, largest=True, sorted=True).values
    if kind == "upnear":
        return lambda: F.interpolate(x, size=(x.shape[2] * 2, x.shape[3] * 2), mode="nearest")
    if kind == "avgpool":
        return lambda: F.avg_pool2d(x, groups, stride, pad)
    raise ValueError(kind)


def time_torch(fn, reps, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ms.append(a.elapsed_time(b))
    ms.sort()
    return ms[len(ms) // 2]


def raw(t):
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def from_raw(path, dtype, shape):
    b = np.fromfile(path, dtype=np.uint8)
    if dtype == torch.bfloat16:
        return torch.from_numpy(b.view(np.int16).copy()).view(torch.bfloat16).reshape(shape)
    if dtype == "u32":
        return torch.from_numpy(b.view(np.uint32).astype(np.int64)).reshape(shape)
    return torch.from_numpy(b.view(np.float32).copy()).reshape(shape)


def copy_gbps():
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    ms = time_torch(lambda: x.clone(), 20, 3)
    return 2 * (1 << 30) / (ms * 1e-3) / 1e9


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True, help="the conv_sort_bench binary")
    ap.add_argument("--scratch", default="/tmp/wick-conv-sort")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--case", default=None, help="comma-separated case names")
    ap.add_argument("--md", default=None, help="write the table here too")
    a = ap.parse_args(argv)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    os.makedirs(a.scratch, exist_ok=True)
    dev = torch.device("cuda")
    print(f"device {torch.cuda.get_device_name(0)}, torch {torch.__version__}, seed {SEED}", flush=True)
    cases = [c for c in CASES if a.case is None or c[0] in a.case.split(",")]
    g = torch.Generator(device="cuda").manual_seed(SEED)
    inputs = {}
    for name, kind, dt, xs, ws, stride, pad, groups, k, _ in cases:
        x = torch.randn(xs, generator=g, device=dev, dtype=torch.float32).to(dt)
        w = torch.randn(ws, generator=g, device=dev, dtype=torch.float32).to(dt) * 0.05 if ws else None
        with open(os.path.join(a.scratch, name + ".x"), "wb") as f:
            f.write(raw(x))
        if w is not None:
            with open(os.path.join(a.scratch, name + ".w"), "wb") as f:
                f.write(raw(w))
        inputs[name] = (x, w)
    t0 = time.time()
    cmd = [a.bench, a.scratch, "--reps", str(a.reps), "--warmup", str(a.warmup)] + (["--case", a.case] if a.case else [])
    p = subprocess.run(cmd, capture_output=True, text=True)
    print(p.stdout + p.stderr, flush=True)
    wick = {}
    for line in p.stdout.splitlines():
        f = line.split()
        if f and f[0] == "RESULT":
            wick[f[1]] = float(f[2])
    print(f"wick side took {time.time() - t0:.1f} s", flush=True)
    bw = copy_gbps()
    rows = []
    for name, kind, dt, xs, ws, stride, pad, groups, k, target in cases:
        x, w = inputs[name]
        fn = torch_fn(kind, x, w, stride, pad, groups, k)
        tms = time_torch(fn, a.reps, a.warmup)
        ref = fn()
        check = "-"
        outp = os.path.join(a.scratch, name + ".out")
        if name in wick and os.path.exists(outp):
            if kind == "argsort":
                got = from_raw(outp, "u32", ref.shape).to(dev)
                check = "same" if torch.equal(got, ref) else f"{(got != ref).sum().item()} differ"
            elif kind == "topk":
                got = from_raw(outp, dt, ref.shape).to(dev)
                check = "same" if torch.equal(got, ref) else "values differ"
            else:
                if kind == "conv":
                    ref32 = torch.nn.functional.conv2d(x.float(), w.float(), None, stride, pad, 1, groups)
                else:
                    ref32 = torch_fn(kind, x.float(), None, stride, pad, groups, k)()
                got = from_raw(outp, dt, ref32.shape).to(dev).float()
                err = ((got - ref32).abs().max() / ref32.abs().max().clamp_min(1e-30)).item()
                terr = ((ref.float() - ref32).abs().max() / ref32.abs().max().clamp_min(1e-30)).item()
                check = f"{err:.1e} (torch {terr:.1e})"
        wms = wick.get(name)
        extra = ""
        if kind in ("upnear", "avgpool") and wms:
            es = x.element_size()
            byt = (x.numel() + ref.numel()) * es
            extra = f"{byt / (wms * 1e-3) / 1e9:.0f} GB/s = {byt / (wms * 1e-3) / 1e9 / bw:.2f} of copy"
        speed = tms / wms if wms else None
        rows.append((name, wms, tms, speed, target, check, extra))
    out = [f"copy bandwidth (torch clone of 1 GiB): {bw:.0f} GB/s", "",
           "| case | wick ms | torch ms | speed (torch/wick) | target | check vs torch | note |",
           "|---|---:|---:|---:|---:|---|---|"]
    for name, wms, tms, speed, target, check, extra in rows:
        ws = f"{wms:.3f}" if wms else "fail"
        ss = f"{speed:.2f}" if speed else "-"
        tg = f">= {target}" + (" met" if speed and speed >= target else " MISSED") if target else ""
        out.append(f"| {name} | {ws} | {tms:.3f} | {ss} | {tg} | {check} | {extra} |")
    text = "\n".join(out)
    print(text)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text + "\n")
    return 0 if len(wick) == len(cases) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
