#!/usr/bin/env python3
# python_overhead.py — the cost of a small op called from Python: a + b on
# 1-element tensors with the result kept, through wick's bindings, against
# the same add called from C (build/wick-launch-overhead, when built),
# numpy and PyTorch eager on the same machine in one run; and the cost of a
# DLPack exchange with PyTorch both ways. `--device cuda:0` times the GPU
# path (torch on the same GPU). Prints one table (microseconds per call).
import argparse
import os
import re
import subprocess
import time
import timeit

import wick


def per_call_us(fn, n):
    fn()
    return min(timeit.repeat(fn, number=n, repeat=7)) / n * 1e6


def busy_us(start, fn, sync, k=50, rounds=20):
    """fn's cost while start()'s work (about a millisecond of it) keeps the
    producer's stream busy: k calls timed right after start(); the best of
    the rounds"""
    best = float("inf")
    for _ in range(rounds):
        y = start()
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        best = min(best, (time.perf_counter() - t0) / k)
        del y
        sync()
    return best * 1e6


def main():
    ap = argparse.ArgumentParser(description="cost of a small op from Python, and of DLPack exchanges")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--c-bench", help="the wick-launch-overhead binary (default: build/)")
    args = ap.parse_args()
    dev, n = args.device, args.n
    rows = []
    a, b = wick.ones(1, device=dev), wick.ones(1, device=dev)
    keep = []
    rows.append(("wick (Python) a + b", per_call_us(lambda: keep.append(a + b) or keep.clear(), n)))
    exe = args.c_bench or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "wick-launch-overhead")
    if os.path.exists(exe):
        out = subprocess.run([exe, "--device", dev], capture_output=True, text=True).stdout
        m = re.search(r"([0-9.]+) ns per add", out)
        if m:
            rows.append(("wick (C) wk_add", float(m.group(1)) / 1000))
    if dev == "cpu":
        try:
            import numpy as np
            x, y = np.ones(1, np.float32), np.ones(1, np.float32)
            rows.append(("numpy x + y", per_call_us(lambda: x + y, n)))
        except ImportError:
            pass
    try:
        import torch
        p, q = torch.ones(1, device=dev), torch.ones(1, device=dev)
        rows.append(("torch eager p + q", per_call_us(lambda: p + q, n)))
        big = torch.ones(1024, device=dev)
        t = wick.ones(1024, device=dev)
        rows.append(("DLPack torch -> wick", per_call_us(lambda: wick.from_dlpack(big), n // 10)))
        rows.append(("DLPack wick -> torch", per_call_us(lambda: torch.from_dlpack(t), n // 10)))
        # PyTorch's own exchange with itself: the floor that its consumer
        # side (torch.from_dlpack) sets for any producer
        rows.append(("DLPack wick -> torch, wick.to_torch(t)", per_call_us(lambda: wick.to_torch(t), n // 10)))
        rows.append(("DLPack torch -> torch", per_call_us(lambda: torch.from_dlpack(big), n // 10)))
        if dev != "cpu":
            # the protocol's way, for comparison: torch's __dlpack__ with wick's stream
            s = wick.device_stream(dev)
            rows.append(("DLPack torch -> wick, torch's __dlpack__(stream=wick's)",
                         per_call_us(lambda: wick.from_dlpack(big.__dlpack__(stream=s)), n // 10)))
            # the parts of wick -> torch: wick's producer side, torch's consumer side
            ts = torch.cuda.current_stream(dev).cuda_stream
            rows.append(("  wick's t.__dlpack__(stream=torch's)", per_call_us(lambda: t.__dlpack__(stream=ts), n // 10)))
            rows.append(("  torch consuming a capsule", per_call_us(lambda: torch.from_dlpack(t.__dlpack__(stream=ts)), n // 10)
                         - rows[-1][1]))
            # with the producer's stream busy (a long kernel queued first):
            # then the consumer's stream must be made to wait on the device
            hw, ht = wick.ones(1 << 28, device=dev), torch.ones(1 << 28, device=dev)
            rows.append(("DLPack wick -> torch, wick's stream busy",
                         busy_us(lambda: hw.exp(), lambda: torch.from_dlpack(t), lambda: wick.synchronize(dev))))
            rows.append(("DLPack torch -> wick, torch's stream busy",
                         busy_us(lambda: ht.exp(), lambda: wick.from_dlpack(big), torch.cuda.synchronize)))
    except ImportError:
        pass
    info = wick.device_info(dev)
    print("device %s (%s)" % (info["name"], info["model"]))
    for name, us in rows:
        print("%-56s %8.3f us" % (name, us))


if __name__ == "__main__":
    main()
