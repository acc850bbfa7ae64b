#!/usr/bin/env python3
"""comm_vs_torch.py — wick's all_reduce against torch.distributed's (NCCL)
across the GPUs of one host, in one run (issue 16's bandwidth row).

torch: one process per GPU (torch.multiprocessing), init_process_group
("nccl"), for each size a tensor of ones: 5 untimed all_reduces, then R,
each between two CUDA events; the median of rank 0's times. wick:
build/wick-comm-bench (one thread per GPU, the same sizes, dtype and
reps, its own device events), with WICK_NCCL_LIB pointing at the NCCL that
torch loads (its nvidia-nccl wheel) unless already set, so both sides run
the same library version. Bus bandwidth = bytes / time x 2 (N - 1) / N.
Target: wick's bus bandwidth for 256 MiB of bf16 within 10% of torch's
(ratio >= 0.9).

  python3 bench/comm_vs_torch.py --bench build/wick-comm-bench [--ranks N] [--reps R] [--dtype bf16]
Prints a markdown table; JSON lines to --json when given.
"""
import argparse
import json
import os
import socket
import subprocess
import sys

SIZES = ["8K", "64K", "1M", "16M", "256M"]
TARGET_SIZE = 256 << 20
TARGET = 0.9


def nbytes(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1]] if s[-1] in mult else int(s)


def torch_worker(rank, world, port, sizes, reps, dtype, q):
    import torch
    import torch.distributed as dist
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    dt = getattr(torch, {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}[dtype])
    es = torch.tensor([], dtype=dt).element_size()
    for s in sizes:
        x = torch.ones(nbytes(s) // es, dtype=dt, device="cuda")
        dist.all_reduce(x)
        torch.cuda.synchronize()
        ok = float(x[-1]) == float(world)
        for _ in range(4):
            dist.all_reduce(x)
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(reps + 1)]
        for i in range(reps):
            ev[i].record()
            dist.all_reduce(x)
        ev[reps].record()
        ev[reps].synchronize()
        ms = sorted(ev[i].elapsed_time(ev[i + 1]) for i in range(reps))
        if rank == 0:
            med = ms[len(ms) // 2] if reps % 2 else 0.5 * (ms[reps // 2 - 1] + ms[reps // 2])
            algbw = nbytes(s) / (med * 1e-3) / 1e9
            q.put({"what": "all_reduce", "impl": "torch", "ranks": world, "dtype": dtype, "bytes": nbytes(s),
                   "reps": reps, "median_ms": med, "min_ms": ms[0], "algbw_gbs": algbw,
                   "busbw_gbs": algbw * 2 * (world - 1) / world, "check": ok})
        del x
    if rank == 0:
        q.put({"what": "versions", "torch": torch.__version__,
               "nccl": ".".join(map(str, torch.cuda.nccl.version())), "gpu": torch.cuda.get_device_name(0)})
    dist.destroy_process_group()


def torch_side(world, sizes, reps, dtype):
    import torch.multiprocessing as mp
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        port = so.getsockname()[1]
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=torch_worker, args=(r, world, port, sizes, reps, dtype, q)) for r in range(world)]
    for p in procs:
        p.start()
    out = [q.get(timeout=300) for _ in range(len(sizes) + 1)]
    for p in procs:
        p.join(60)
    return out


def nccl_of_torch():
    try:
        import nvidia.nccl
        p = os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2")
        return p if os.path.exists(p) else None
    except ImportError:
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="build/wick-comm-bench")
    ap.add_argument("--ranks", type=int, default=0, help="GPUs (default: all)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f16", "f32"])
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    import torch
    world = a.ranks or torch.cuda.device_count()
    if world < 2:
        print(f"comm_vs_torch: {world} GPU(s); an all_reduce across GPUs needs 2 or more")
        return 2
    rows = torch_side(world, SIZES, a.reps, a.dtype)
    env = dict(os.environ)
    if "WICK_NCCL_LIB" not in env and nccl_of_torch():
        env["WICK_NCCL_LIB"] = nccl_of_torch()
    r = subprocess.run([a.bench, "--ranks", str(world), "--dtype", a.dtype, "--sizes", ",".join(SIZES),
                        "--reps", str(a.reps)], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        print(r.stdout + r.stderr)
        return 1
    rows += [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    if a.json:
        with open(a.json, "w") as f:
            f.write("".join(json.dumps(x) + "\n" for x in rows))
    ver = next(x for x in rows if x["what"] == "versions")
    t = {x["bytes"]: x for x in rows if x.get("impl") == "torch"}
    w = {x["bytes"]: x for x in rows if x.get("impl") == "wick"}
    print(f"{world} x {ver['gpu']}, torch {ver['torch']} (NCCL {ver['nccl']}), wick's NCCL: "
          f"{env.get('WICK_NCCL_LIB', 'the loader')}; all_reduce of {a.dtype}, median of {a.reps}\n")
    print("| bytes | torch ms | wick ms | torch bus GB/s | wick bus GB/s | wick / torch | target |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    status = 0
    for s in SIZES:
        b = nbytes(s)
        if b not in t or b not in w:
            print(f"| {s} | missing | | | | | |")
            status = 1
            continue
        ratio = w[b]["busbw_gbs"] / t[b]["busbw_gbs"]
        tgt = ""
        if b == TARGET_SIZE:
            tgt = f">= {TARGET} " + ("met" if ratio >= TARGET else "MISSED")
        print(f"| {s} | {t[b]['median_ms']:.4f} | {w[b]['median_ms']:.4f} | {t[b]['busbw_gbs']:.1f} | "
              f"{w[b]['busbw_gbs']:.1f} | {ratio:.2f} | {tgt} |")
        if not t[b]["check"]:
            print(f"torch's all_reduce of {s} did not give {world}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
