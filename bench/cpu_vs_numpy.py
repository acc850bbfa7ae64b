#!/usr/bin/env python3
"""cpu_vs_numpy.py — wick's CPU backend against numpy, op by op, in one run.

For each case of `wick bench` (matmul, add, exp, sum over the last dim,
casts to f16/bf16, transposed copy) it runs `build/wick bench --device cpu
--json --op NAME`, then the same op in numpy with the same shapes, dtypes,
input distribution (uniform in [-1, 1)), warm-up and median-of-N timing
(monotonic clock, output allocation inside the timed call), on the same
machine, one case after the other. It prints a table of wick ms, numpy ms,
speed-up = numpy ms / wick ms and whether the case meets its target, and
prepends the table to bench/RESULTS-cpu.md (newest first).

It also checks that what was timed computed the right thing: `wick bench
--dump DIR` writes each case's inputs and one output, and this script
compares them with numpy (exact for add, casts and the copy; a normalized
error bound for matmul, exp and sum). That is a sanity check of the
benchmark, not a test of the library: the test suite does that.

It builds nothing: run `make` first. Usage:
    make && python3 bench/cpu_vs_numpy.py [--reps N] [--warmup N] [--op NAME,..]
                                          [--no-check] [--no-write] [--strict]
"""
import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import ml_dtypes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WICK = os.path.join(ROOT, "build", "wick")
RESULTS = os.path.join(ROOT, "bench", "RESULTS-cpu.md")
MARKER = "<!-- cpu_vs_numpy.py inserts each new run below this line -->"

F32, F16, BF16 = np.float32, np.float16, ml_dtypes.bfloat16
N16M = 1 << 24


def uniform(rng, shape, dtype=F32):
    """Uniform in [-1, 1), made in f32 and rounded to dtype (outside timing)."""
    return rng.uniform(-1.0, 1.0, size=shape).astype(F32).astype(dtype)


# name: (dtype label, shape label, make inputs, numpy op, target speed-up or None)
CASES = {
    "matmul_f32_1024": ("f32", "1024x1024x1024",
                        lambda r: (uniform(r, (1024, 1024)), uniform(r, (1024, 1024))),
                        lambda a, b: np.matmul(a, b), 0.8),
    "matmul_f32_2048": ("f32", "2048x2048x2048",
                        lambda r: (uniform(r, (2048, 2048)), uniform(r, (2048, 2048))),
                        lambda a, b: np.matmul(a, b), 0.8),
    # numpy's matmul of bfloat16 arrays returns f32; round it back so both
    # sides produce bf16, as wick does
    "matmul_bf16_1024": ("bf16", "1024x1024x1024",
                         lambda r: (uniform(r, (1024, 1024), BF16), uniform(r, (1024, 1024), BF16)),
                         lambda a, b: np.matmul(a, b).astype(BF16), None),
    "add_f32": ("f32", str(N16M), lambda r: (uniform(r, N16M), uniform(r, N16M)),
                lambda a, b: np.add(a, b), 1.0),
    "exp_f32": ("f32", str(N16M), lambda r: (uniform(r, N16M),), lambda a: np.exp(a), 1.0),
    "sum_last_f32": ("f32", "4096x4096", lambda r: (uniform(r, (4096, 4096)),),
                     lambda a: np.sum(a, axis=-1), 1.0),
    "cast_f32_f16": ("f32->f16", str(N16M), lambda r: (uniform(r, N16M),),
                     lambda a: a.astype(F16), 1.0),
    "cast_f32_bf16": ("f32->bf16", str(N16M), lambda r: (uniform(r, N16M),),
                      lambda a: a.astype(BF16), 1.0),
    "transpose_copy_f32": ("f32", "4096x4096", lambda r: (uniform(r, (4096, 4096)),),
                           lambda a: np.ascontiguousarray(a.T), None),
}

# ---- numpy side ------------------------------------------------------------


def time_numpy(name, warmup, reps):
    """Median/min/max ms of the numpy op, timed like `wick bench` times wick."""
    _, _, make, fn, _ = CASES[name]
    args = make(np.random.default_rng(42))
    times = []
    for i in range(warmup + reps):
        t0 = time.perf_counter_ns()
        out = fn(*args)
        t1 = time.perf_counter_ns()
        del out
        if i >= warmup:
            times.append((t1 - t0) / 1e6)
    times.sort()
    n = len(times)
    med = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
    return med, times[0], times[-1]


# ---- checking what wick computed ---------------------------------------------

def load(path, dtype, shape):
    a = np.fromfile(path, dtype=dtype)
    if a.size != int(np.prod(shape)):
        raise ValueError(f"{os.path.basename(path)} holds {a.size} elements, expected {int(np.prod(shape))}")
    return a.reshape(shape)


def nerr(got, ref):
    """sum (got - ref)^2 / sum ref^2, in double."""
    got = got.astype(np.float64)
    ref = ref.astype(np.float64)
    return float(np.sum((got - ref) ** 2) / max(np.sum(ref ** 2), 1e-300))


def exact(got, ref):
    """'ok' when bitwise equal, else how many elements differ."""
    bits = {2: np.uint16, 4: np.uint32}[got.dtype.itemsize]
    diff = int(np.count_nonzero(got.view(bits) != ref.view(bits)))
    return (diff == 0, "exact" if diff == 0 else f"{diff} elements differ")


def check(name, d):
    """Compares the dumped inputs/output of one case with numpy. (ok, text)"""
    p = lambda s: os.path.join(d, f"{name}.{s}.bin")
    if name.startswith("matmul"):
        n = int(name.rsplit("_", 1)[1])
        dt = BF16 if "bf16" in name else F32
        a, b, out = load(p("in0"), dt, (n, n)), load(p("in1"), dt, (n, n)), load(p("out"), dt, (n, n))
        ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
        bound = 1e-5 if dt is BF16 else 1e-9
        e = nerr(out, ref)
        return e <= bound, f"nerr {e:.1e} (<= {bound:.0e})"
    if name == "add_f32":
        a, b, out = load(p("in0"), F32, N16M), load(p("in1"), F32, N16M), load(p("out"), F32, N16M)
        return exact(out, a + b)
    if name == "exp_f32":
        a, out = load(p("in0"), F32, N16M), load(p("out"), F32, N16M)
        e = nerr(out, np.exp(a.astype(np.float64)))
        return e <= 1e-12, f"nerr {e:.1e} (<= 1e-12)"
    if name == "sum_last_f32":
        a, out = load(p("in0"), F32, (4096, 4096)), load(p("out"), F32, 4096)
        e = nerr(out, np.sum(a.astype(np.float64), axis=-1))
        return e <= 1e-8, f"nerr {e:.1e} (<= 1e-08)"
    if name.startswith("cast"):
        dt = F16 if name == "cast_f32_f16" else BF16
        a, out = load(p("in0"), F32, N16M), load(p("out"), dt, N16M)
        return exact(out, a.astype(dt))
    if name == "transpose_copy_f32":
        a, out = load(p("in0"), F32, (4096, 4096)), load(p("out"), F32, (4096, 4096))
        return exact(out, np.ascontiguousarray(a.T))
    return False, "no check for this case"


# ---- wick side ---------------------------------------------------------------

def run_wick(wick, name, warmup, reps, dump_dir):
    cmd = [wick, "bench", "--device", "cpu", "--json", "--op", name,
           "--reps", str(reps), "--warmup", str(warmup)]
    if dump_dir:
        cmd += ["--dump", dump_dir]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    rows = [r for r in rows if r.get("op") == name]
    if not rows:
        msg = (proc.stderr.strip() or proc.stdout.strip() or f"exit status {proc.returncode}")
        return {"op": name, "error": msg}
    return rows[0]


# ---- report --------------------------------------------------------------------

def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def git(*args):
    try:
        return subprocess.run(["git", "--no-optional-locks", *args], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def wick_build_line(wick):
    try:
        out = subprocess.run([wick, "info"], capture_output=True, text=True).stdout
    except OSError:
        return "?"
    for line in out.splitlines():
        if line.startswith("build:"):
            return line.split(":", 1)[1].strip()
    return "?"


def blas_text():
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # older numpy: no mode="dicts"
        return "?"


def fmt_ms(v):
    return f"{v:.3f}" if v is not None else "—"


def table(rows):
    """Markdown table of the run; rows are dicts built in main()."""
    out = ["| op | dtype | shape | wick ms | numpy ms | speed-up | target | result | output check |",
           "|---|---|---|---:|---:|---:|---:|---|---|"]
    for r in rows:
        sp = f"{r['speedup']:.2f}" if r["speedup"] is not None else "—"
        tgt = f">= {r['target']:.1f}" if r["target"] is not None else "report only"
        out.append(f"| {r['op']} | {r['dtype']} | {r['shape']} | {fmt_ms(r['wick_ms'])} | "
                   f"{fmt_ms(r['numpy_ms'])} | {sp} | {tgt} | {r['result']} | {r['check']} |")
    return "\n".join(out)


def write_results(path, section):
    header = (
        "# wick CPU backend vs numpy: results\n\n"
        "Written by `bench/cpu_vs_numpy.py` (how to run it and what each figure\n"
        "means: `bench/README.md`). speed-up = numpy ms / wick ms: above 1 wick is\n"
        "faster. Each table is one run on one machine; newest run first.\n\n"
        f"{MARKER}\n")
    old = ""
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
    if MARKER in old:
        head, tail = old.split(MARKER, 1)
        text = head + MARKER + "\n\n" + section + "\n" + tail.lstrip("\n")
    else:
        text = header + "\n" + section + ("\n" + old if old.strip() else "")
    with open(path, "w") as f:
        f.write(text.rstrip("\n") + "\n")


def main():
    ap = argparse.ArgumentParser(description="wick CPU backend vs numpy, same machine, same run")
    ap.add_argument("--reps", type=int, default=20, help="timed reps per case (default 20)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed reps first (default 3)")
    ap.add_argument("--op", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--no-check", action="store_true", help="skip comparing wick's outputs with numpy")
    ap.add_argument("--no-write", action="store_true", help="do not update bench/RESULTS-cpu.md")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--wick", default=WICK, help="the wick binary (default build/wick)")
    ap.add_argument("--results", default=RESULTS, help="the results file (default bench/RESULTS-cpu.md)")
    args = ap.parse_args()
    if args.reps < 1 or args.warmup < 0:
        ap.error("--reps must be >= 1 and --warmup >= 0")
    names = [n for n in args.op.split(",") if n] or list(CASES)
    for n in names:
        if n not in CASES:
            ap.error(f"no case '{n}'; the cases are: {', '.join(CASES)}")
    if not os.access(args.wick, os.X_OK):
        sys.exit(f"cpu_vs_numpy: {os.path.relpath(args.wick, ROOT)} not found; run `make` first")

    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    dump_dir = None if args.no_check else tempfile.mkdtemp(prefix="wick-bench-")
    rows, failed, missed = [], False, False
    try:
        for name in names:
            dtype, shape, _, _, target = CASES[name]
            w = run_wick(args.wick, name, args.warmup, args.reps, dump_dir)
            wick_ms = w.get("median_ms")
            np_ms = time_numpy(name, args.warmup, args.reps)[0]
            speedup = np_ms / wick_ms if wick_ms else None
            if "error" in w:
                failed = True
                result, chk = "wick failed", w["error"].replace("|", "/")
            else:
                if target is None:
                    result = "—"
                elif speedup >= target:
                    result = "met"
                else:
                    result, missed = "**missed**", True
                if dump_dir:
                    try:
                        ok, chk = check(name, dump_dir)
                    except (OSError, ValueError) as e:
                        ok, chk = False, str(e)
                    if not ok:
                        failed = True
                        chk = "**FAILED** " + chk
                else:
                    chk = "not checked"
            rows.append(dict(op=name, dtype=dtype, shape=shape, wick_ms=wick_ms, numpy_ms=np_ms,
                             speedup=speedup, target=target, result=result, check=chk))
            if dump_dir:  # free the disk as we go
                for f in os.listdir(dump_dir):
                    os.remove(os.path.join(dump_dir, f))
            print(f"{name:20s} wick {fmt_ms(wick_ms):>9s} ms  numpy {np_ms:9.3f} ms  "
                  f"speed-up {speedup:.2f}  {result}  [{chk}]" if speedup is not None else
                  f"{name:20s} wick failed: {chk}", flush=True)
    finally:
        if dump_dir:
            shutil.rmtree(dump_dir, ignore_errors=True)

    commit = git("rev-parse", "--short", "HEAD") or "?"
    # what the build is made of: a changed or new file there means the
    # binary is not exactly the commit
    if git("status", "--porcelain", "--", "Makefile", "include", "src", "tools"):
        commit += " (with uncommitted changes)"
    cores = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    env = " ".join(f"{k}={os.environ[k]}" for k in ("WICK_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                  "OMP_NUM_THREADS") if k in os.environ)
    command = "python3 bench/cpu_vs_numpy.py" + "".join(f" {shlex.quote(a)}" for a in sys.argv[1:])
    if env:
        command = env + " " + command
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = "\n".join([
        f"## {now}, commit {commit}",
        "",
        f"- machine: {cpu_model()}, {cores} logical CPUs ({usable} usable), "
        f"{platform.system()} {platform.machine()}"
        + (f"; 1-minute load average {load_before:.2f} before the run" if load_before is not None else ""),
        f"- wick build: {wick_build_line(args.wick)}",
        f"- numpy {np.__version__} (BLAS: {blas_text()}), ml_dtypes {ml_dtypes.__version__}, "
        f"Python {platform.python_version()}",
        f"- command: `{command}` (runs `{os.path.relpath(args.wick, ROOT)} bench --device cpu --json --op NAME "
        f"--reps {args.reps} --warmup {args.warmup}"
        f"{' --dump DIR' if dump_dir else ''}` for each case)",
        f"- timing: {args.warmup} warm-up reps, then the median of {args.reps}; "
        "the output's allocation is inside each timed call on both sides",
        "",
        table(rows),
        "",
    ])
    print()
    print(section)
    complete = set(names) == set(CASES) and not failed
    if args.no_write:
        pass
    elif complete:
        write_results(args.results, section)
        print(f"written to {os.path.relpath(args.results, ROOT)}")
    else:
        print(f"not written to {os.path.relpath(args.results, ROOT)}: the run was partial or something failed")
    if failed or (args.strict and missed):
        sys.exit(1)


if __name__ == "__main__":
    main()
