#!/usr/bin/env python3
"""mem_rates.py — the GPU's own memory rates as PyTorch reaches them, the
ceilings that bench/RESULTS-conv-sort.md measures the pools and the
upsampling against: read (x.sum()), write (y.fill_(1)) and copy
(x.clone(), read + write) of 1 GiB of bf16, each between two CUDA events,
the median of 20 after 3 warm-ups.

    python3 bench/mem_rates.py [--device cuda:0] [--mib 1024]
"""
import argparse

import torch

from conv_sort_vs_torch import time_torch   # beside this file


def median_s(fn, reps=20, warmup=3):
    return time_torch(fn, reps, warmup) / 1e3   # the same event timing as the conv/pool rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--mib", type=int, default=1024, help="buffer size in MiB (default 1024)")
    a = ap.parse_args()
    n = a.mib * (1 << 20) // 2
    x = torch.ones(n, dtype=torch.bfloat16, device=a.device)
    y = torch.empty_like(x)
    gb = 2 * n / 1e9
    print("device: %s" % torch.cuda.get_device_name(torch.device(a.device)))
    print("read (sum)    %.0f GB/s" % (gb / median_s(lambda: x.sum())))
    print("write (fill_) %.0f GB/s" % (gb / median_s(lambda: y.fill_(1))))
    print("copy (clone)  %.0f GB/s (read + write)" % (2 * gb / median_s(lambda: x.clone())))


if __name__ == "__main__":
    main()
