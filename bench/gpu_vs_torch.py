#!/usr/bin/env python3
"""gpu_vs_torch.py — wick's GPU backend against PyTorch on the same device,
op by op, in one run, with the device's own ceilings measured in that run.

For each group of cases it runs the C driver `build/wick-gpu-bench` (wick's
public C API; see bench/gpu_bench.c), which times the ops and writes every
input it drew (wk_rand_uniform, seeded; never zeros) and the output of its
last timed rep as raw files under a scratch folder. This script then loads
those inputs into PyTorch, runs PyTorch's op on them, checks wick's output
against PyTorch's (bitwise where both round the same exact result, else a
normalized error ||wick - torch|| / ||torch|| under a per-dtype bound, and
NaN never passes), and times PyTorch on the same data. A case whose check
fails scores nothing.

Timing
  PyTorch: CUDA events around each rep after warm-up; the median (also a
  host-clock median with a synchronization per rep, and a back-to-back
  batch mean, in the JSON).
  wick: the driver times the same way with wick's own events: the median
  of reps each bracketed by two wk_event records after warm-up (the
  headline), plus the mean of a back-to-back batch (the "batch" figures)
  and a host-clock median with a synchronization per rep (in the JSON).
  Host <-> device: both sides copy from and into pinned memory (wick's
  from wk_host_alloc) on the host clock around synchronized copies; the
  pageable figures of both are in the JSON.
  Ceilings: a device-to-device copy of 1 GiB (bytes read plus written) and
  an 8192^3 bf16 matmul, both through PyTorch with events, in this run.

Figures
  speed-up = PyTorch ms / wick ms (above 1: wick faster).
  fraction of ceiling = compulsory bytes (each input read once, the output
  written once; index_select: the rows read and written) / wick time / copy
  bandwidth; for matmul, FLOP/s over PyTorch's bf16 matmul rate.

It prints a table last, writes gpu_bench.json, results_section.md and the
driver's log under --out, and (unless --no-write) prepends the table to
bench/RESULTS-gpu.md. Run it through bench/run_gpu.sh on the GPU machine.
    python3 bench/gpu_vs_torch.py [--out DIR] [--case NAME,..] [--reps N]
"""
import argparse
import datetime
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DRIVER = os.path.join(ROOT, "build", "wick-gpu-bench")
RESULTS = os.path.join(ROOT, "bench", "RESULTS-gpu.md")
MARKER = "<!-- gpu_vs_torch.py inserts each new run below this line -->"
GiB = 1 << 30

# ---- targets ------------------------------------------------------------------
# (metric, least value): frac = fraction of the copy bandwidth (matmul: of
# the bf16 matmul rate), speed = speed-up over PyTorch, sgemm = the rate
# over PyTorch's f32 matmul at the same size, bare = bare chain time /
# wick time per add (>= 1/1.15 means wick <= 1.15x the bare chain).
T_EW = (("frac", 0.90), ("speed", 0.97))
T_BCAST = (("frac", 0.80),)
T_TRANS = (("frac", 0.60), ("speed", 1.0))
T_RED = (("frac", 0.85), ("speed", 0.97))
T_SUM0 = (("frac", 0.85),)
T_INDEX = (("frac", 0.80),)
T_MM = (("speed", 0.95),)
T_TILED = (("sgemm", 0.5),)
T_CHAIN = (("bare", 1 / 1.15), ("speed", 1.3))
T_XFER = (("speed", 0.9),)
T_NN = (("frac", 0.85),)              # softmax, norms, rope (issue 11)
T_ATT = (("speed", 0.6),)             # attention prefill: TFLOP/s vs PyTorch's SDPA
T_DEC = (("frac", 0.70),)             # attention decode: K+V bytes over the copy rate
T_DEC0 = (("frac", 0.70), ("speed", 2.0))
T_REPORT = ()                         # reported, not held to a bar (the portable attention path)
# quantized matmul (issue 12): weight bytes over the copy rate (m = 1),
# time of m = 8 over m = 1 (vs_m1 = m1 ms / m8 ms), prefill over PyTorch's
# dense bf16 matmul on the same shape
T_QMV = (("frac", 0.80),)
T_QMV8 = (("vs_m1", 1 / 1.5),)
T_QPF = (("speed", 0.7),)
T_DMV = (("frac", 0.92),)


def target_text(t):
    if not t:
        return "(reported)"
    names = {"frac": "ceiling", "speed": "speed-up", "sgemm": "x SGEMM"}
    out = []
    for metric, v in t:
        if metric == "bare":
            out.append("<= %.2fx bare" % (1 / v))
        elif metric == "vs_m1":
            out.append("<= %.2fx the m=1 time" % (1 / v))
        elif metric == "frac":
            out.append(">= %d%% %s" % (round(v * 100), names[metric]))
        else:
            out.append(">= %g %s" % (v, names[metric]))
    return ", ".join(out)


# ---- cases ----------------------------------------------------------------------
# name: (group, op label, dtype label, torch op, check, bound, targets)
# check: "exact" (bitwise equal), "close" (normalized error <= bound),
# "argmax" (wick's index points at the row maximum), or None.


def torch_ops():
    import torch
    F = torch.nn.functional

    quarter = torch.tensor(0.25)   # a 0-dim CPU tensor: passed to the kernel as a scalar

    def affine(x):   # 0.25 + 1.5*x in one kernel
        return torch.add(quarter, x, alpha=1.5)

    def rope(x, cos, sin):   # the halves (Llama/NeoX) form, written out; x [B, H, T, D], tables f32 [T, D/2]
        h = x.shape[-1] // 2
        x0, x1 = x[..., :h].float(), x[..., h:].float()
        return torch.cat([x0 * cos - x1 * sin, x0 * sin + x1 * cos], -1).to(x.dtype)
    return {
        "exp": torch.exp, "silu": F.silu, "gelu": lambda x: F.gelu(x, approximate="tanh"),
        "affine": affine, "add": torch.add, "mul": torch.mul,
        "to_bf16": lambda x: x.to(torch.bfloat16), "to_f32": lambda x: x.to(torch.float32),
        "to_f16": lambda x: x.to(torch.float16),
        "t_contig": lambda a: a.t().contiguous(), "exp_t": lambda a: torch.exp(a.t()),
        "sum_last": lambda a: a.sum(-1), "max_last": lambda a: a.amax(-1),
        "argmax_last": lambda a: a.argmax(-1), "sum_dim0": lambda a: a.sum(0),
        "index_select": lambda t, i: torch.index_select(t, 0, i), "matmul": torch.matmul,
        "softmax": lambda x: torch.softmax(x, -1), "log_softmax": lambda x: torch.log_softmax(x, -1),
        "rms_norm": lambda x, w: F.rms_norm(x, (x.shape[-1],), w, 1e-6),
        "layer_norm": lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, 1e-5),
        "rope": rope,
        "sdpa_causal": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        "sdpa": lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
        "sdpa_gqa": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
        "qmm_ref": lambda x, w: x @ w.t(),   # w: the quantized W dequantized to bf16 (or the dense W)
    }


def _ew(group, op, dt, check, bound):
    return (group, op, dt, op, check, bound, T_EW)


CASES = {
    "exp_f32": _ew("f32", "exp", "f32", "close", 1e-5),
    "silu_f32": _ew("f32", "silu", "f32", "close", 1e-5),
    "gelu_f32": _ew("f32", "gelu", "f32", "close", 1e-5),
    "affine_f32": _ew("f32", "affine", "f32", "close", 1e-5),
    "add_f32": _ew("f32", "add", "f32", "exact", 0),
    "mul_f32": _ew("f32", "mul", "f32", "exact", 0),
    "cast_f32_bf16": ("f32", "cast", "f32->bf16", "to_bf16", "exact", 0, T_EW),
    "cast_f32_f16": ("f32", "cast", "f32->f16", "to_f16", "exact", 0, T_EW),
    "exp_bf16": _ew("bf16", "exp", "bf16", "close", 1e-2),
    "silu_bf16": _ew("bf16", "silu", "bf16", "close", 1e-2),
    "gelu_bf16": _ew("bf16", "gelu", "bf16", "close", 1e-2),
    "affine_bf16": _ew("bf16", "affine", "bf16", "close", 1e-2),
    "add_bf16": _ew("bf16", "add", "bf16", "exact", 0),
    "mul_bf16": _ew("bf16", "mul", "bf16", "exact", 0),
    "cast_bf16_f32": ("bf16", "cast", "bf16->f32", "to_f32", "exact", 0, T_EW),
    "add_row_f32": ("sq", "add, row broadcast", "f32", "add", "exact", 0, T_BCAST),
    "add_col_f32": ("sq", "add, column broadcast", "f32", "add", "exact", 0, T_BCAST),
    "transpose_copy_f32": ("sq", "transposed view -> contiguous", "f32", "t_contig", "exact", 0, T_TRANS),
    "exp_transposed_f32": ("sq", "exp of a transposed view", "f32", "exp_t", "close", 1e-5, T_TRANS),
    "sum_dim0_f32": ("sq", "sum over dim 0", "f32", "sum_dim0", "close", 1e-4, T_SUM0),
    "sum_last_f32": ("red", "sum, last dim", "f32", "sum_last", "close", 1e-4, T_RED),
    "max_last_f32": ("red", "max, last dim", "f32", "max_last", "exact", 0, T_RED),
    "argmax_last_f32": ("red", "argmax, last dim", "f32", "argmax_last", "argmax", 0, T_RED),
    "sum_last_bf16": ("red", "sum, last dim", "bf16", "sum_last", "close", 1e-2, T_RED),
    "max_last_bf16": ("red", "max, last dim", "bf16", "max_last", "exact", 0, T_RED),
    "argmax_last_bf16": ("red", "argmax, last dim", "bf16", "argmax_last", "argmax", 0, T_RED),
    "index_select_bf16": ("idx", "index_select rows", "bf16", "index_select", "exact", 0, T_INDEX),
    "matmul_bf16_s": ("mm", "matmul", "bf16", "matmul", "close", 1e-2, T_MM),
    "matmul_bf16_l": ("mm", "matmul", "bf16", "matmul", "close", 1e-2, T_MM),
    "matmul_bf16_b": ("mm", "matmul, batched", "bf16", "matmul", "close", 1e-2, T_MM),
    "matmul_f16_s": ("mm", "matmul", "f16", "matmul", "close", 1e-2, T_MM),
    "matmul_f16_l": ("mm", "matmul", "f16", "matmul", "close", 1e-2, T_MM),
    "matmul_f16_b": ("mm", "matmul, batched", "f16", "matmul", "close", 1e-2, T_MM),
    "matmul_f32_s": ("mm", "matmul (no tf32)", "f32", "matmul", "close", 5e-5, T_MM),
    "matmul_f32_l": ("mm", "matmul (no tf32)", "f32", "matmul", "close", 5e-5, T_MM),
    "matmul_f32_b": ("mm", "matmul, batched (no tf32)", "f32", "matmul", "close", 5e-5, T_MM),
    "matmul_tiled_f32_s": ("mm", "wick tiled GEMM (WICK_GEMM=tiled)", "f32", "matmul", "close", 5e-5, T_TILED),
    "launch_chain": ("misc", "dependent 1-element adds, eager", "f32", None, None, 0, T_CHAIN),
    "h2d_d2h": ("misc", "host -> device -> host", "u8", None, None, 0, T_XFER),
}
# the NN ops on [16384, 4096] (a) and [4096, 32000] (b); rope on
# [1, 32, T, 128] of as many elements, tables from wk_rope_tables
for _sfx, _shape in (("a", "[16384,4096]"), ("b", "[4096,32000]")):
    for _dt, _bound in (("bf16", 1e-2), ("f32", 1e-5)):
        for _op, _label in (("softmax", "softmax, last dim"), ("log_softmax", "log_softmax, last dim"),
                            ("rms_norm", "rms_norm (weight)"), ("layer_norm", "layer_norm (weight, bias)"),
                            ("rope", "rope (halves)")):
            CASES["%s_%s_%s" % (_op, _sfx, _dt)] = ("nn", _label, _dt, _op, "close", _bound, T_NN)
# attention, bf16: prefill B=1 H=32 (TFLOP/s against PyTorch's SDPA, whose
# backend the row names) and decode Tq=1 Hq=32 Hkv=8 D=128 (K+V bytes)
for _name, _label, _op, _t in (
        ("attn_causal_t4096_d128", "attention prefill, causal", "sdpa_causal", T_ATT),
        ("attn_causal_t16384_d128", "attention prefill, causal", "sdpa_causal", T_ATT),
        ("attn_causal_t4096_d64", "attention prefill, causal", "sdpa_causal", T_ATT),
        ("attn_causal_t4096_d256", "attention prefill, causal", "sdpa_causal", T_ATT),
        ("attn_t4096_d128", "attention prefill", "sdpa", T_ATT),
        ("attn_decode_tk4096", "attention decode (GQA 32/8)", "sdpa_gqa", T_DEC0),
        ("attn_decode_tk16384", "attention decode (GQA 32/8)", "sdpa_gqa", T_DEC),
        ("attn_decode_tk65536", "attention decode (GQA 32/8)", "sdpa_gqa", T_DEC),
        ("attn_portable_causal_t4096_d128", "attention prefill, causal, portable path", "sdpa_causal", T_REPORT),
        ("attn_portable_decode_tk4096", "attention decode (GQA 32/8), portable path (FMA flash-decoding)", "sdpa_gqa", T_REPORT)):
    CASES[_name] = ("attn", _label, "bf16", _op, "close", 1e-2, _t)


def att_shapes(name, small):
    """(q, k, v) shapes of an attention case (as gpu_bench.c makes them)"""
    h, hkv = (4, 2) if small else (32, 8)
    if "decode" in name:
        tk = int(name.split("tk")[1])
        tk = {4096: 64, 16384: 256, 65536: 1024}[tk] if small else tk
        return (1, h, 1, 128), (1, hkv, tk, 128), (1, hkv, tk, 128)
    t, d = int(name.split("_t")[1].split("_")[0]), int(name.split("_d")[-1])
    t = {4096: 64, 16384: 128}[t] if small else t
    return ((1, h, t, d),) * 3


def att_flops(name, q, k):
    """4 B H D per visible (query, key) pair (causal: bottom right); decode: 0 (scored by bytes)"""
    if "decode" in name:
        return 0
    tq, tk = q[2], k[2]
    pairs = tq * (tq + 1) / 2 + tq * (tk - tq) if "causal" in name else tq * tk
    return 4.0 * q[0] * q[1] * q[3] * pairs


# quantized matmul (issue 12): W [n, k] of an 8B model's MLP (up: 14336 x
# 4096, down: 4096 x 14336) times x [m, k] bf16; PyTorch runs x @ W^T with W
# dequantized to bf16 (its dense bf16 matvec/matmul); dense rows: wk_matmul
# on a bf16/f16 W. The driver rotates over copies of W (>= 256 MiB) so no
# rep reads W from the L2 cache.
for _t in ("q4_0", "q4_k", "q5_k", "q6_k", "q8_0"):
    for _s in ("up", "down"):
        CASES["qmv_%s_%s_m1" % (_t, _s)] = ("quant", "qmatmul m=1 (%s)" % _t, "bf16", "qmm_ref", "close", 1e-2, T_QMV)
        CASES["qmv_%s_%s_m8" % (_t, _s)] = ("quant", "qmatmul m=8 (%s)" % _t, "bf16", "qmm_ref", "close", 1e-2,
                                            T_QMV8)
for _t in ("q4_k", "q8_0"):
    for _s in ("up", "down"):
        CASES["qmm_%s_%s_m2048" % (_t, _s)] = ("quant", "qmatmul prefill (%s)" % _t, "bf16", "qmm_ref", "close",
                                               1e-2, T_QPF)
for _d in ("bf16", "f16"):
    for _s in ("up", "down"):
        CASES["dmv_%s_%s_m1" % (_d, _s)] = ("quant", "dense matvec m=1", _d, "qmm_ref", "close", 1e-2, T_DMV)
for _s in ("up", "down"):
    CASES["dmv_bf16_%s_m8" % _s] = ("quant", "dense matvec m=8", "bf16", "qmm_ref", "close", 1e-2, T_QMV8)


GROUPS = ["f32", "bf16", "sq", "red", "idx", "mm", "misc", "nn", "attn", "quant"]


def size_text(b):
    return "%g GiB" % (b / GiB) if b >= GiB else "%g MiB" % (b / (1 << 20))


def shape_label(rec):
    if rec["case"][:4] in ("qmv_", "qmm_", "dmv_"):
        return "W %dx%d %s, x %d rows" % (rec["n"], rec["k"], rec["qtype"], rec["m"])
    if rec["case"].startswith("matmul"):
        a, b = rec["inputs"][0]["shape"], rec["inputs"][1]["shape"]
        s = "%dx%dx%d" % (a[-2], a[-1], b[-1])
        return ("%d x " % a[0] + s) if len(a) == 3 else s
    if rec["case"] == "index_select_bf16":
        return "[%s] ids %d" % (",".join(map(str, rec["inputs"][0]["shape"])), rec["inputs"][1]["shape"][0])
    if rec["case"] == "launch_chain":
        return "n=%d" % rec["n"]
    if rec["case"] == "h2d_d2h":
        return size_text(rec["bytes"])
    if rec["case"].startswith("attn"):
        q, k = rec["inputs"][0]["shape"], rec["inputs"][1]["shape"]
        if "decode" in rec["case"]:
            return "Hq=%d Hkv=%d Tk=%d D=%d" % (q[1], k[1], k[2], q[3])
        return "B=%d H=%d T=%d D=%d" % (q[0], q[1], q[2], q[3])
    shapes = [i["shape"] for i in rec["inputs"]]
    n = shapes[0]
    if len(n) == 1 and n[0] & (n[0] - 1) == 0:
        s = "2^%d" % (n[0].bit_length() - 1)
    else:
        s = "[" + ",".join(map(str, n)) + "]"
    if len(shapes) > 1 and shapes[1] != n:
        s += " + [" + ",".join(map(str, shapes[1])) + "]"
    return s


# ---- torch helpers ------------------------------------------------------------------


class Torch:
    def __init__(self, device):
        import torch
        self.torch = torch
        self.dev = torch.device(device)
        self.cuda = self.dev.type == "cuda"

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def time(self, fn, args, reps, warmup):
        """(event median ms, host-clock median ms, batch mean ms)"""
        out = None
        for _ in range(warmup):
            out = fn(*args)
        del out
        self.sync()
        host = []
        for _ in range(reps):
            self.sync()
            t0 = time.perf_counter()
            out = fn(*args)
            self.sync()
            host.append((time.perf_counter() - t0) * 1e3)
            del out
        t0 = time.perf_counter()
        for _ in range(reps):
            out = fn(*args)
        self.sync()
        batch = (time.perf_counter() - t0) * 1e3 / reps
        del out
        if not self.cuda:
            return statistics.median(host), statistics.median(host), batch
        ev = [(self.torch.cuda.Event(enable_timing=True), self.torch.cuda.Event(enable_timing=True))
              for _ in range(reps)]
        for s, e in ev:
            s.record()
            out = fn(*args)
            e.record()
        self.sync()
        del out
        return statistics.median(s.elapsed_time(e) for s, e in ev), statistics.median(host), batch

    def load(self, path, dtype, shape):
        import numpy as np
        torch = self.torch
        np_dt = {"f32": np.float32, "f16": np.float16, "bf16": np.int16, "i64": np.int64,
                 "u32": np.uint32, "u8": np.uint8}[dtype]
        a = np.fromfile(path, dtype=np_dt)
        if dtype == "u32":
            a = a.astype(np.int64)
        t = torch.from_numpy(a)
        if dtype == "bf16":
            t = t.view(torch.bfloat16)
        return t.reshape(shape).to(self.dev)

    def check(self, kind, bound, w, ref, args):
        """(ok, error figure, detail)"""
        torch = self.torch
        if w.shape != ref.shape:
            return False, None, "shape %s, PyTorch %s" % (tuple(w.shape), tuple(ref.shape))
        if kind == "exact":
            if w.dtype != ref.dtype:
                return False, None, "dtype %s, PyTorch %s" % (w.dtype, ref.dtype)
            same = torch.eq(w, ref) | (torch.isnan(w) & torch.isnan(ref)) if w.is_floating_point() else torch.eq(w, ref)
            bad = int((~same).sum())
            return bad == 0, bad, "%d of %d elements differ" % (bad, w.numel())
        if kind == "argmax":
            x = args[0]
            if int(w.min()) < 0 or int(w.max()) >= x.shape[-1]:
                return False, None, "index out of range"
            got = torch.gather(x, -1, w.unsqueeze(-1)).squeeze(-1)
            bad = int((got != x.amax(-1)).sum())
            differ = int((w != ref).sum())
            return bad == 0, bad, "%d rows not at the maximum; %d indices differ from PyTorch's" % (bad, differ)
        # close: normalized error in f64, in chunks
        wf, rf = w.reshape(-1), ref.reshape(-1)
        num = den = 0.0
        nan = 0
        step = 1 << 24
        for i in range(0, wf.numel(), step):
            a = wf[i:i + step].double()
            b = rf[i:i + step].double()
            nan += int((torch.isnan(a) & ~torch.isnan(b)).sum())
            num += float(((a - b) ** 2).nansum())
            den += float((b ** 2).nansum())
        err = (num / den) ** 0.5 if den > 0 else (0.0 if num == 0 else float("inf"))
        ok = nan == 0 and err <= bound
        return ok, err, "normalized error %.3g (bound %g)%s" % (err, bound, ", %d NaN" % nan if nan else "")


# ---- the run ---------------------------------------------------------------------------


def run_driver(args, names, scratch, log):
    cmd = [args.driver, "--device", args.device, "--case", ",".join(names), "--reps", str(args.reps),
           "--warmup", str(args.warmup), "--dump", scratch, "--seed", str(args.seed)]
    if args.small:
        cmd.append("--small")
    log.write("$ %s\n" % " ".join(shlex.quote(c) for c in cmd))
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=args.timeout)
        stdout, stderr, why = p.stdout, p.stderr, "exit %d" % p.returncode
    except subprocess.TimeoutExpired as e:
        def text(b):
            return (b.decode(errors="replace") if isinstance(b, bytes) else b) or ""
        stdout, stderr, why = text(e.stdout), text(e.stderr), "killed after %d s" % args.timeout
    log.write(stdout + stderr)
    log.flush()
    header, recs = {}, {}
    for line in stdout.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if "case" in obj:
            recs[obj["case"]] = obj
        elif "device" in obj:
            header = obj
    for n in names:
        if n not in recs:
            recs[n] = {"case": n, "error": "the driver gave no result (%s): %s" %
                       (why, stderr.strip().splitlines()[-1] if stderr.strip() else "")}
    return header, recs


def ceilings(T, small):
    torch = T.torch
    n = 1 << (16 if small else 28)
    src = torch.rand(n, device=T.dev) * 4 - 2
    dst = torch.empty_like(src)
    t_copy = T.time(lambda: dst.copy_(src), (), 25, 3)[0]
    del src, dst
    m = 192 if small else 8192
    a = torch.rand(m, m, device=T.dev).to(torch.bfloat16)
    b = torch.rand(m, m, device=T.dev).to(torch.bfloat16)
    t_mm = T.time(torch.matmul, (a, b), 20, 3)[0]
    del a, b
    return {"copy_bytes": 2 * n * 4, "copy_ms": t_copy, "copy_GBps": 2 * n * 4 / t_copy / 1e6,
            "gemm_bf16_shape": "%dx%dx%d" % (m, m, m), "gemm_bf16_ms": t_mm,
            "gemm_bf16_TFLOPs": 2 * m ** 3 / t_mm / 1e9}


def sdpa_backend(T, fn, args):
    """which SDPA backend PyTorch ran: the aten op its dispatcher chose and its first CUDA kernel"""
    try:
        from torch.profiler import profile, ProfilerActivity
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if T.cuda else [])
        with profile(activities=acts) as prof:
            out = fn(*args)
            T.sync()
        del out
        names = [e.key for e in prof.key_averages()]
        kinds = (("cudnn", "cuDNN"), ("flash", "flash"), ("efficient", "memory-efficient"), ("math", "math"))
        aten = [n for n in names if n.startswith("aten::_scaled_dot_product_")]
        label = "?"
        for key, nm in kinds:
            if any(key in a for a in aten):
                label = nm
                break
        kern = [n for n in names if not n.startswith("aten::") and any(
            w in n.lower() for w in ("fmha", "flash", "attention", "sdpa", "cudnn"))]
        return label + (" (kernel %s)" % kern[0][:80] if kern else "")
    except Exception as e:   # noqa: BLE001 - reference figure only
        return "unknown (%s)" % str(e)[:80]


def torch_only_row(T, args, name, ops):
    """PyTorch's side of an attention case whose wick side failed, on its own random inputs"""
    torch = T.torch
    shapes = att_shapes(name, args.small)
    gen = torch.Generator(device=T.dev).manual_seed(args.seed)
    tin = [(torch.rand(s, device=T.dev, generator=gen) * 4 - 2).to(torch.bfloat16) for s in shapes]
    fn = ops[CASES[name][3]]
    ev, host, batch = T.time(fn, tin, args.reps, args.warmup)
    row = {"torch": {"event_ms": ev, "host_ms": host, "batch_ms": batch}, "torch_ms": ev,
           "torch_backend": sdpa_backend(T, fn, tin)}
    fl = att_flops(name, shapes[0], shapes[1])
    if fl:
        row["torch_tflops"] = fl / ev / 1e9
    else:
        row["torch_GBps"] = 2 * 2 * shapes[1][0] * shapes[1][1] * shapes[1][2] * shapes[1][3] / ev / 1e6
    q, k = shapes[0], shapes[1]
    row["shape"] = ("Hq=%d Hkv=%d Tk=%d D=%d" % (q[1], k[1], k[2], q[3]) if "decode" in name
                    else "B=%d H=%d T=%d D=%d" % (q[0], q[1], q[2], q[3]))
    del tin
    return row


def op_row(T, args, name, rec, inputs, scratch, ceil, ops):
    group, label, dt, op, check, bound, targets = CASES[name]
    row = {"case": name, "op": label, "dtype": dt, "targets": targets, "wick": rec}
    torch = T.torch
    tin = []
    for spec in rec["inputs"]:
        if spec["key"] not in inputs:
            inputs[spec["key"]] = T.load(os.path.join(scratch, spec["key"] + ".bin"), spec["dtype"], spec["shape"])
        tin.append(inputs[spec["key"]])
    row["shape"] = shape_label(rec)
    fn = ops[op]
    ref = fn(*tin)
    if args.no_check:
        row["check"] = {"ok": True, "detail": "not checked (--no-check)"}
    else:
        out_path = os.path.join(scratch, name + ".out.bin")
        w = T.load(out_path, rec["output"]["dtype"], rec["output"]["shape"])
        ok, err, detail = T.check(check, bound, w, ref, tin)
        row["check"] = {"ok": ok, "kind": check, "error": err, "detail": detail}
        del w
        os.remove(out_path)
    del ref
    ev, host, batch = T.time(fn, tin, args.reps, args.warmup)
    row["torch"] = {"event_ms": ev, "host_ms": host, "batch_ms": batch}
    if group == "attn":
        row["torch_backend"] = sdpa_backend(T, fn, tin)
        if rec["flops"]:
            row["torch_tflops"] = rec["flops"] / ev / 1e9
    wick_ms, wick_batch = rec["median_ms"], rec["batch_ms"]
    row["wick_ms"], row["torch_ms"] = wick_ms, ev
    row["speed"], row["speed_batch"] = ev / wick_ms, ev / wick_batch
    # the same clock on both sides: PyTorch's and wick's host-clock medians
    row["speed_same_clock"] = host / rec.get("host_median_ms", wick_ms)
    if rec["flops"]:
        rate = ceil["gemm_bf16_TFLOPs"] * 1e12
        row["frac"], row["frac_batch"] = rec["flops"] / (wick_ms * 1e-3) / rate, rec["flops"] / (wick_batch * 1e-3) / rate
        row["tflops"] = rec["flops"] / wick_ms / 1e9
    else:
        bw = ceil["copy_GBps"] * 1e9
        row["frac"], row["frac_batch"] = rec["bytes"] / (wick_ms * 1e-3) / bw, rec["bytes"] / (wick_batch * 1e-3) / bw
        row["GBps"] = rec["bytes"] / wick_ms / 1e6
    return row


def chain_row(T, rec, n):
    torch = T.torch
    one = torch.ones(1, device=T.dev)
    per = []
    ok = True
    for c in range(-1, 9):   # as many chains as the driver runs
        x = torch.full((1,), 0.5, device=T.dev)
        length = 100 if c < 0 else n
        T.sync()
        t0 = time.perf_counter()
        for _ in range(length):
            x = x + one
        T.sync()
        if c >= 0:
            per.append((time.perf_counter() - t0) * 1e6 / length)
        ok = ok and float(x.item()) == 0.5 + length
    torch_us = statistics.median(per)
    row = {"torch_us_per_op": torch_us, "torch_check": ok}
    try:   # another bare chain for reference: a CuPy raw kernel launched from Python
        import cupy
        k = cupy.RawKernel(r'extern "C" __global__ void bump(float *p) { p[0] += 1.0f; }', "bump")
        p = cupy.full((1,), 0.5, dtype=cupy.float32)
        k((1,), (1,), (p,))
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            k((1,), (1,), (p,))
        cupy.cuda.Device().synchronize()
        row["cupy_us_per_launch"] = (time.perf_counter() - t0) * 1e6 / n
    except Exception as e:   # noqa: BLE001 - reference figure only
        row["cupy_error"] = str(e)[:200]
    return row


def xfer_row(T, rec, reps):
    torch = T.torch
    n = int(rec["bytes"])
    h = torch.randint(0, 256, (n,), dtype=torch.uint8, device=T.dev).cpu()
    h2 = torch.empty(n, dtype=torch.uint8)
    if T.cuda:
        h, h2 = h.pin_memory(), h2.pin_memory()
    rt, h2d, d2h = [], [], []
    for i in range(-1, reps):
        T.sync()
        t0 = time.perf_counter()
        d = h.to(T.dev, non_blocking=True)
        T.sync()
        t1 = time.perf_counter()
        h2.copy_(d, non_blocking=True)
        T.sync()
        t2 = time.perf_counter()
        del d
        if i >= 0:
            rt.append((t2 - t0) * 1e3), h2d.append((t1 - t0) * 1e3), d2h.append((t2 - t1) * 1e3)
    ok = bool(torch.equal(h, h2))
    row = {"torch_ms": statistics.median(rt), "torch_h2d_ms": statistics.median(h2d),
           "torch_d2h_ms": statistics.median(d2h), "torch_check": ok,
           "host_memory": "pinned" if T.cuda else "pageable"}
    if T.cuda:   # for reference: PyTorch from and to pageable memory (wick's pageable figures are in its record)
        del h2
        h = torch.empty(n, dtype=torch.uint8).copy_(h)   # a pageable copy
        row["torch_pageable_is_pinned"] = bool(h.is_pinned())
        pt = []
        for i in range(-1, 10):
            T.sync()
            t0 = time.perf_counter()
            d = h.to(T.dev)
            T.sync()
            t1 = time.perf_counter()
            back = d.cpu()
            t2 = time.perf_counter()
            del d, back
            if i >= 0:
                pt.append((t1 - t0, t2 - t1))
        row["torch_pageable_h2d_ms"] = statistics.median(a for a, _ in pt) * 1e3
        row["torch_pageable_d2h_ms"] = statistics.median(b for _, b in pt) * 1e3
    return row


def case_row(T, args, n, rec, row, inputs, scratch, ceil, ops):
    """the row of one case the driver timed"""
    if n == "launch_chain":
        row.update(chain_row(T, rec, rec["n"]), wick=rec, shape=shape_label(rec))
        row["wick_us"], row["torch_us"] = rec["wick_us_per_op"], row["torch_us_per_op"]
        row["bare_us"] = rec.get("bare_us_per_launch")
        row["speed"] = row["torch_us"] / row["wick_us"]
        row["bare_ratio"] = row["bare_us"] / row["wick_us"] if row["bare_us"] else None
        ok = rec["wick_check"] and row["torch_check"] and rec.get("bare_check", True)
        row["check"] = {"ok": ok, "detail": "final values %s" % ("right" if ok else "WRONG")}
    elif n == "h2d_d2h":
        row.update(xfer_row(T, rec, args.reps), wick=rec, shape=shape_label(rec), bytes=rec["bytes"])
        row["wick_ms"] = rec["median_ms"]
        row["speed"] = row["torch_ms"] / row["wick_ms"]
        ok = rec["check"] and rec.get("pageable_check", True) and row["torch_check"]
        row["check"] = {"ok": ok, "detail": "round trips %s" % ("exact" if ok else "WRONG")}
    else:
        row = op_row(T, args, n, rec, inputs, scratch, ceil, ops)
    return row


def evaluate(row, sgemm_ms):
    """met / missed for the headline figures, and whether the batch ones meet"""
    def ok(metric, least, batch):
        if metric == "frac":
            v = row.get("frac_batch" if batch else "frac")
        elif metric == "speed":
            v = row.get("speed_batch" if batch else "speed")
        elif metric == "sgemm":
            v = (sgemm_ms / (row["wick"]["batch_ms"] if batch else row["wick_ms"])) if sgemm_ms else None
            row["sgemm_ratio"] = sgemm_ms / row["wick_ms"] if sgemm_ms else None
        elif metric == "bare":
            v = row.get("bare_ratio")
        elif metric == "vs_m1":
            v = row.get("vs_m1_batch" if batch else "vs_m1")
        return v is not None and v >= least
    if row.get("error") or not row.get("check", {}).get("ok"):
        return "failed" if row.get("error") else "check failed"
    if not row["targets"]:
        return "reported"
    if all(ok(m, v, False) for m, v in row["targets"]):
        return "met"
    if all(ok(m, v, True) for m, v in row["targets"]):
        return "missed (met on batch timing)"
    return "missed"


def fmt_ms(v):
    if v is None:
        return "-"
    return "%.3f ms" % v if v >= 0.1 else "%.1f us" % (v * 1e3)


def table(rows):
    head = ["op", "dtype", "shape", "wick", "PyTorch", "speed-up", "fraction of ceiling", "target", "result",
            "wick batch", "speed-up (batch)"]
    lines = []
    for r in rows:
        if r.get("error"):
            torch_, frac = "-", "-"
            if r.get("torch_ms"):   # attention: PyTorch timed alone
                torch_ = fmt_ms(r["torch_ms"])
                frac = ("PyTorch %.0f TFLOP/s" % r["torch_tflops"] if r.get("torch_tflops") else
                        "PyTorch %.0f GB/s of K+V" % r.get("torch_GBps", 0)) + ", %s" % r.get("torch_backend", "?")
            lines.append([r["op"], r["dtype"], r.get("shape", "-"), "error", torch_, "-", frac,
                          target_text(r["targets"]), "failed: " + r["error"][:120], "-", "-"])
            continue
        if r["case"] == "launch_chain":
            wick, torch_ = "%.2f us/add" % r["wick_us"], "%.2f us/add" % r["torch_us"]
            frac = ("bare %.2f us: wick %.2fx" % (r["bare_us"], r["wick_us"] / r["bare_us"])) if r.get("bare_us") else "no bare chain"
            w = r["wick"]
            if w.get("bare_wide_us") and w.get("wick_issue_us") and w.get("bare_issue_us"):
                # where the time goes: host time to issue each launch, and the
                # bare chain of a kernel with wick's signature
                frac += "; host issue per op: wick %.2f, bare %.2f us; bare with wick's kernel signature %.2f us" % (
                    w["wick_issue_us"], w["bare_issue_us"], w["bare_wide_us"])
            lines.append([r["op"], r["dtype"], r["shape"], wick, torch_, "%.2f" % r["speed"], frac,
                          target_text(r["targets"]), r["result"], "-", "-"])
            continue
        if r["case"] == "h2d_d2h":
            frac = "wick %.1f / %.1f GB/s, PyTorch %.1f / %.1f GB/s (to / from device)" % (
                r["bytes"] / r["wick"]["h2d_ms"] / 1e6, r["bytes"] / r["wick"]["d2h_ms"] / 1e6,
                r["bytes"] / r["torch_h2d_ms"] / 1e6, r["bytes"] / r["torch_d2h_ms"] / 1e6)
            if r["wick"].get("pageable_h2d_ms"):
                frac += "; wick pageable %.1f / %.1f GB/s" % (
                    r["bytes"] / r["wick"]["pageable_h2d_ms"] / 1e6, r["bytes"] / r["wick"]["pageable_d2h_ms"] / 1e6)
            lines.append([r["op"], r["dtype"], r["shape"], fmt_ms(r["wick_ms"]), fmt_ms(r["torch_ms"]),
                          "%.2f" % r["speed"], frac, target_text(r["targets"]), r["result"], "-", "-"])
            continue
        if r["case"].startswith("attn") and r.get("tflops"):
            frac = "wick %.0f TFLOP/s, PyTorch %.0f TFLOP/s (%s)" % (r["tflops"], r.get("torch_tflops", 0),
                                                                      r.get("torch_backend", "?"))
        elif r["case"].startswith("attn"):
            frac = "%.0f%% (%.0f GB/s of K+V); PyTorch %s" % (100 * r["frac"], r["GBps"], r.get("torch_backend", "?"))
        elif r["case"].startswith("matmul") or (r["case"].startswith("qmm_") and r.get("tflops")):
            frac = "%.0f%% (%.0f TFLOP/s)" % (100 * r["frac"], r["tflops"])
            if r["case"].startswith("matmul_tiled") and r.get("sgemm_ratio"):
                frac += "; %.2fx SGEMM" % r["sgemm_ratio"]
        else:
            frac = "%.0f%% (%.0f GB/s)" % (100 * r["frac"], r["GBps"])
        if r.get("vs_m1"):
            frac += "; %.2fx the m=1 time" % (1 / r["vs_m1"])
        result = r["result"] if r["check"]["ok"] else "check failed: " + r["check"]["detail"]
        lines.append([r["op"], r["dtype"], r["shape"], fmt_ms(r["wick_ms"]), fmt_ms(r["torch_ms"]),
                      "%.2f" % r["speed"], frac, target_text(r["targets"]), result,
                      fmt_ms(r["wick"]["batch_ms"]), "%.2f" % r["speed_batch"]])
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(l) + " |" for l in lines]
    return "\n".join(out)


def progress(r):
    """one line as each case finishes"""
    if r.get("error"):
        return "%-20s error: %s" % (r["case"], r["error"])
    if r["case"] == "launch_chain":
        return "%-20s wick %.2f us/add, bare %s us, PyTorch %.2f us/add; %s" % (
            r["case"], r["wick_us"], "%.2f" % r["bare_us"] if r.get("bare_us") else "-", r["torch_us"],
            r["check"]["detail"])
    if r["case"] == "h2d_d2h":
        return "%-20s wick %.2f ms, PyTorch %.2f ms; %s" % (r["case"], r["wick_ms"], r["torch_ms"], r["check"]["detail"])
    return "%-20s wick %s (batch %s), PyTorch %s, speed-up %.2f, %.0f%% of ceiling; %s" % (
        r["case"], fmt_ms(r["wick_ms"]), fmt_ms(r["wick"]["batch_ms"]), fmt_ms(r["torch_ms"]), r["speed"],
        100 * r["frac"], r["check"]["detail"])


def git_commit():
    try:
        c = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        if c.returncode != 0:
            return "unknown"
        d = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True)
        return c.stdout.strip() + (" (uncommitted changes)" if d.stdout.strip() else "")
    except OSError:
        return "unknown"


def pick_scratch(want):
    if want:
        os.makedirs(want, exist_ok=True)
        return tempfile.mkdtemp(prefix="wick-gpu-bench-", dir=want)
    if os.path.isdir("/dev/shm") and shutil.disk_usage("/dev/shm").free > 12 * GiB:
        return tempfile.mkdtemp(prefix="wick-gpu-bench-", dir="/dev/shm")
    return tempfile.mkdtemp(prefix="wick-gpu-bench-")


def parse_args(argv):
    p = argparse.ArgumentParser(description="wick's GPU backend against PyTorch on the same device "
                                "(see the top of this file)")
    p.add_argument("--out", default=os.environ.get("OUT") or os.path.join(ROOT, "build", "bench-gpu"),
                   help="folder for gpu_bench.json, results_section.md and driver.log "
                   "(default $OUT, else build/bench-gpu)")
    p.add_argument("--case", help="comma-separated case names (default: all); --list shows them")
    p.add_argument("--list", action="store_true", help="print the case names and exit")
    p.add_argument("--reps", type=int, default=25, help="timed reps per case, both sides (default 25)")
    p.add_argument("--warmup", type=int, default=3, help="untimed reps first (default 3)")
    p.add_argument("--seed", type=int, default=42, help="seed of wick's generator (default 42)")
    p.add_argument("--device", default="cuda:0", help="wick's device (default cuda:0)")
    p.add_argument("--torch-device", help="PyTorch's device (default: cuda:N of --device)")
    p.add_argument("--driver", default=DRIVER, help="the C driver (default build/wick-gpu-bench)")
    p.add_argument("--scratch", help="folder for the exchanged data (default /dev/shm when large enough)")
    p.add_argument("--small", action="store_true", help="small sizes (a test of the script, not a benchmark)")
    p.add_argument("--no-check", action="store_true", help="skip the output checks")
    p.add_argument("--no-write", action="store_true", help="leave bench/RESULTS-gpu.md alone")
    p.add_argument("--results", default=RESULTS, help="the results file (default bench/RESULTS-gpu.md)")
    p.add_argument("--commit", help="the commit to record (default: git rev-parse)")
    p.add_argument("--timeout", type=int, default=240, help="seconds one driver run may take (default 240)")
    a = p.parse_args(argv)
    if a.reps < 20 and not a.small:
        p.error("--reps must be at least 20 (the median of at least 20 reps)")
    names = list(CASES) if not a.case else a.case.split(",")
    bad = [n for n in names if n not in CASES]
    if bad:
        p.error("no case %s (see --list)" % ", ".join(bad))
    a.names = names
    if not a.torch_device:
        a.torch_device = "cpu" if a.device == "cpu" else "cuda:" + (a.device.split(":")[1] if ":" in a.device else "0")
    return a


def main(argv):
    args = parse_args(argv)
    if args.list:
        for n, c in CASES.items():
            print("%-22s %-5s %s %s" % (n, c[0], c[1], c[2]))
        return 0
    if not os.path.exists(args.driver):
        print("gpu_vs_torch.py: %s is missing: make build/wick-gpu-bench" % args.driver, file=sys.stderr)
        return 1
    import torch
    T = Torch(args.torch_device)
    for attr, val in (("allow_tf32", False), ("allow_fp16_reduced_precision_reduction", False),
                      ("allow_bf16_reduced_precision_reduction", False)):
        try:   # wick accumulates in f32 with no reduced-precision reductions
            setattr(torch.backends.cuda.matmul, attr, val)
        except Exception:   # noqa: BLE001 - older PyTorch
            pass
    os.makedirs(args.out, exist_ok=True)
    log = open(os.path.join(args.out, "driver.log"), "w")
    scratch = pick_scratch(args.scratch)
    ops = torch_ops()
    started = datetime.datetime.now(datetime.timezone.utc)
    ceil = ceilings(T, args.small)
    print("ceilings: copy %.0f GB/s (read + written), bf16 matmul %s %.0f TFLOP/s" %
          (ceil["copy_GBps"], ceil["gemm_bf16_shape"], ceil["gemm_bf16_TFLOPs"]), flush=True)
    header, rows = {}, []
    try:
        for g in GROUPS:
            names = [n for n in args.names if CASES[n][0] == g]
            if not names:
                continue
            h, recs = run_driver(args, names, scratch, log)
            header = header or h
            inputs = {}
            for n in names:
                rec = recs[n]
                c = CASES[n]
                row = {"case": n, "op": c[1], "dtype": c[2], "targets": c[6]}
                try:
                    if "error" in rec:
                        row["error"] = rec["error"]
                        if g == "attn":   # still time PyTorch (wick's kernel may not exist yet)
                            row.update(torch_only_row(T, args, n, ops))
                    else:
                        row = case_row(T, args, n, rec, row, inputs, scratch, ceil, ops)
                except Exception as e:   # noqa: BLE001 - a PyTorch or load failure is reported, not fatal
                    row["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
                rows.append(row)
                print(progress(row), flush=True)
            del inputs
            if T.cuda:
                torch.cuda.empty_cache()
            for f in os.listdir(scratch):
                os.remove(os.path.join(scratch, f))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        log.close()
    sgemm = next((r["torch_ms"] for r in rows if r["case"] == "matmul_f32_s" and "torch_ms" in r), None)
    for r in rows:   # m = 8 rows against their m = 1 twins (quantized matmul)
        twin = next((t for t in rows if r["case"].endswith("_m8") and t["case"] == r["case"][:-3] + "_m1"), None)
        if twin and twin.get("wick_ms") and r.get("wick_ms"):
            r["vs_m1"] = twin["wick_ms"] / r["wick_ms"]
            r["vs_m1_batch"] = twin["wick"]["batch_ms"] / r["wick"]["batch_ms"]
    for r in rows:
        r["result"] = evaluate(r, sgemm)
    tbl = table(rows)
    model = header.get("model") or (torch.cuda.get_device_name(T.dev) if T.cuda else "cpu")
    cmd = "python3 bench/gpu_vs_torch.py " + " ".join(shlex.quote(a) for a in argv)
    commit = args.commit or git_commit()
    met = sum(r["result"] == "met" for r in rows)
    section = ["## %s — %s" % (started.strftime("%Y-%m-%d %H:%M UTC"), model), "",
               "- commit: %s" % commit,
               "- command: `bench/run_gpu.sh` (runs `%s`)" % cmd,
               "- wick: %s; device %s" % (header.get("build", "?"), header.get("device", args.device)),
               "- PyTorch %s, CUDA %s; matmul with tf32 and reduced-precision reductions off" %
               (torch.__version__, torch.version.cuda),
               "- ceilings in this run: device-to-device copy of %s, %.0f GB/s (bytes read + written), "
               "bf16 matmul %s %.0f TFLOP/s" % (size_text(ceil["copy_bytes"] // 2), ceil["copy_GBps"],
                                                ceil["gemm_bf16_shape"], ceil["gemm_bf16_TFLOPs"]),
               "- timing: PyTorch with CUDA events (median of %d after %d warm-up); wick with its own events "
               "(wk_event_record before and after each rep; median of %d after %d warm-up), and a back-to-back "
               "batch mean (the batch columns); host <-> device: both on the host clock around synchronized "
               "copies, pinned memory on both sides" % (args.reps, args.warmup, args.reps, args.warmup),
               "- %d of %d rows met their target" % (met, len(rows)), "", tbl, ""]
    section = "\n".join(section)
    with open(os.path.join(args.out, "results_section.md"), "w") as f:
        f.write(section)
    with open(os.path.join(args.out, "gpu_bench.json"), "w") as f:
        json.dump({"date": started.isoformat(), "commit": commit, "command": cmd, "model": model,
                   "wick": header, "torch": torch.__version__, "ceilings": ceil,
                   "rows": [{k: v for k, v in r.items()} for r in rows]}, f, indent=1, default=str)
    if not args.no_write and not args.small and args.case is None:
        text = open(args.results).read() if os.path.exists(args.results) else ""
        if MARKER in text:
            text = text.replace(MARKER, MARKER + "\n\n" + section, 1)
        else:
            text = "# GPU benchmark results\n\n" + MARKER + "\n\n" + section + "\n" + text
        with open(args.results, "w") as f:
            f.write(text)
    print()
    print(section)
    return 0 if all(r.get("check", {}).get("ok") and not r.get("error") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
