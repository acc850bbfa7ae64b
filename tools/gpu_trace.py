#!/usr/bin/env python3
"""gpu_trace.py — where a device's time goes, from tools/gpu_trace.c's CSV.

Each device's activities in order of their end: an activity's exposed
time is its end minus the later of its start and the end of the ones
before it (what it adds to the device's timeline when kernels overlap,
as programmatic dependent launch makes them); the idle time before it is
the gap to the end of the ones before. Steps: a step starts at each
activity whose name holds a --mark part (PART=LABEL, repeatable) and
runs to the next one; steps are summed by label, and for each label the
per-step sums by name are printed (the idle before a marker counts in
the step it starts); --contains PART=LABEL relabels the steps that hold
an activity named with PART. Without --mark the whole trace is one step.

  python3 tools/gpu_trace.py t.csv --mark ix_rows=graph --mark copy8_8192=eager \
      --contains copy2_513024=graph+readback
"""
import argparse
import collections
import re
import statistics


def short(name):
    """a readable kernel name from a mangled one (the first identifier)"""
    m = re.match(r"_Z(?:N\d*)?(\d+)", name)
    if not m:
        return name[:60]
    n = int(m.group(1))
    return name[m.end():m.end() + n]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--mark", action="append", default=[], help="PART=LABEL: a step starts at a name holding PART")
    ap.add_argument("--contains", action="append", default=[],
                    help="PART=LABEL: a step holding a name with PART is labelled LABEL instead")
    ap.add_argument("--skip", type=int, default=2, help="steps of each label left out at its start (warm-up)")
    ap.add_argument("--top", type=int, default=14)
    ap.add_argument("--list", type=int, default=0, help="print the first N steps' times (us: all/idle) of each label")
    a = ap.parse_args()
    marks = [m.split("=", 1) if "=" in m else (m, m) for m in a.mark]
    dev = collections.defaultdict(list)
    for line in open(a.csv):
        f = line.rstrip("\n").split(",", 4)
        if len(f) < 5:
            continue
        dev[int(f[0])].append((int(f[1]), int(f[2]), short(f[4])))
    for d in sorted(dev):
        ev = sorted(dev[d], key=lambda e: e[1])
        steps = []   # (label, [(name, exposed, idle)])
        label, cur, prev = ("all" if not marks else None), [], ev[0][0]
        for s, e, n in ev:
            hit = next((lab for part, lab in marks if part in n), None)
            if hit is not None:
                if label is not None and cur:
                    steps.append((label, cur))
                label, cur = hit, []
            cur.append((n, e - max(s, prev), max(0, s - prev)))
            prev = max(prev, e)
        if label is not None and cur:
            steps.append((label, cur))
        cls = [m.split("=", 1) for m in a.contains]
        by = collections.defaultdict(list)
        for lab, st in steps:
            lab = next((l2 for part, l2 in cls if any(part in x[0] for x in st)), lab)
            by[lab].append(st)
        for lab, sts in by.items():
            sts = sts[a.skip:] if len(sts) > a.skip + 2 else sts
            times = [sum(x[1] + x[2] for x in st) / 1e3 for st in sts]
            # long steps are where the program did something else: leave out the slowest quarter
            keep = sorted(range(len(sts)), key=lambda i: times[i])[:max(1, (3 * len(sts)) // 4)]
            exp, idle, cnt = collections.Counter(), collections.Counter(), collections.Counter()
            for i in keep:
                for n, x, g in sts[i]:
                    exp[n] += x
                    idle[n] += g
                    cnt[n] += 1
            k = len(keep)
            print(f"device {d} {lab}: {len(sts)} steps, median {statistics.median(times):.1f} us, "
                  f"fastest 3/4 mean {sum(times[i] for i in keep) / k:.1f} us "
                  f"(busy {sum(exp.values()) / 1e3 / k:.1f}, idle {sum(idle.values()) / 1e3 / k:.1f})")
            if a.list:
                print("  steps (us, all/idle): " + " ".join(
                    f"{times[i]:.0f}/{sum(x[2] for x in sts[i]) / 1e3:.0f}" for i in range(min(a.list, len(sts)))))
            for n in sorted(cnt, key=lambda n: -(exp[n] + idle[n]))[:a.top]:
                print(f"  {n[:34]:34s} x{cnt[n] / k:5.1f} exposed {exp[n] / 1e3 / k:7.1f} us"
                      f" ({exp[n] / 1e3 / cnt[n]:5.2f} each)  idle before {idle[n] / 1e3 / k:6.1f}")


if __name__ == "__main__":
    main()
