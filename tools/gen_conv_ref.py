#!/usr/bin/env python3
"""gen_conv_ref.py — writes tests/data/conv_ref.h: small cases of wick's
convolutions, pools, upsampling and sorting computed by PyTorch (cpu,
float64), the external check of the naive references in tests/test_conv.c
and tests/test_sort.c (nothing here shares code with wick or with them).

Inputs are drawn here from a fixed seed and rounded to float32, so the
same values can be given to wick as f32 and as f64; the outputs are
PyTorch's in float64, written with every digit (repr). Cases: conv1d and
conv2d with groups, stride, padding and dilation per dim and a bias;
depthwise and 1x1; both transposed forms with output_padding; avg_pool2d
with ceil_mode and both count_include_pad; max_pool2d with its indices
over windows holding NaN and -inf; nearest 1-d and 2-d and bilinear
upsampling by sizes and by scale factors (align_corners both ways); sort
(stable, both directions) of rows with ties, +-inf, NaN and -0, and topk.

Usage: python3 tools/gen_conv_ref.py > tests/data/conv_ref.h
"""
import math

import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(20261125)
out = []
cases = []


def f32(a):
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def lit(v):
    v = float(v)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    if v == 0 and math.copysign(1, v) < 0:
        return "-0.0"
    return repr(v)


def emit(name, arr):
    a = np.asarray(arr, dtype=np.float64).ravel()
    out.append("static const double %s[%d] = {" % (name, max(len(a), 1)))
    for i in range(0, len(a), 6):
        out.append("    " + ", ".join(lit(x) for x in a[i:i + 6]) + ",")
    if len(a) == 0:
        out.append("    0,")
    out.append("};")


def dims(shape):
    s = list(shape) + [0] * (4 - len(shape))
    return "{ %s }" % ", ".join(str(int(d)) for d in s)


def pair(v, n=2):
    if isinstance(v, int):
        v = (v,) * n
    v = list(v) + [0] * (2 - len(v))
    return "{ %d, %d }" % tuple(v)


def rnd(shape, lo=-2.0, hi=2.0):
    return f32(rng.uniform(lo, hi, size=shape))


OPS = {"conv1d": 0, "conv_transpose1d": 1, "conv2d": 2, "conv_transpose2d": 3, "avg_pool2d": 4,
       "max_pool2d": 5, "upsample_nearest1d": 6, "upsample_nearest2d": 7, "upsample_bilinear2d": 8}


def add_case(name, op, x, y, w=None, b=None, idx=None, **kw):
    k = len(cases)
    emit("cref_x%d" % k, x)
    emit("cref_y%d" % k, y)
    if w is not None:
        emit("cref_w%d" % k, w)
    if b is not None:
        emit("cref_b%d" % k, b)
    if idx is not None:
        emit("cref_i%d" % k, idx)
    nsp = 1 if op in ("conv1d", "conv_transpose1d", "upsample_nearest1d") else 2
    fields = [
        '"%s"' % name, str(OPS[op]), str(x.ndim), dims(x.shape), str(y.ndim), dims(y.shape),
        str(w.ndim if w is not None else 0), dims(w.shape if w is not None else ()),
        pair(kw.get("stride", 0), nsp), pair(kw.get("padding", 0), nsp), pair(kw.get("dilation", 0), nsp),
        pair(kw.get("output_padding", 0), nsp), str(kw.get("groups", 1)),
        pair(kw.get("kernel", 0)), str(int(kw.get("ceil_mode", False))), str(int(kw.get("exclude_pad", False))),
        "{ %s, %s }" % tuple(lit(s) for s in kw.get("scale", (0.0, 0.0))), str(int(kw.get("align", False))),
        "cref_x%d" % k, "cref_w%d" % k if w is not None else "NULL", "cref_b%d" % k if b is not None else "NULL",
        "cref_y%d" % k, "cref_i%d" % k if idx is not None else "NULL",
    ]
    cases.append("    { " + ", ".join(fields) + " },")


T = lambda a: torch.tensor(a, dtype=torch.float64)  # noqa: E731

# ---- convolutions ----------------------------------------------------------------------
x, w, b = rnd((2, 4, 9)), rnd((6, 2, 3)), rnd((6,))
y = F.conv1d(T(x), T(w), T(b), stride=2, padding=1, dilation=2, groups=2)
add_case("conv1d groups 2 stride 2 pad 1 dil 2 bias", "conv1d", x, y.numpy(), w, b, stride=2, padding=1,
         dilation=2, groups=2)
x, w = rnd((1, 3, 7)), rnd((5, 3, 1))
add_case("conv1d 1x1", "conv1d", x, F.conv1d(T(x), T(w)).numpy(), w)
x, w, b = rnd((2, 4, 5)), rnd((4, 3, 3)), rnd((6,))
y = F.conv_transpose1d(T(x), T(w), T(b), stride=3, padding=1, output_padding=2, groups=2)
add_case("conv_transpose1d groups 2 stride 3 pad 1 outpad 2 bias", "conv_transpose1d", x, y.numpy(), w, b,
         stride=3, padding=1, output_padding=2, groups=2)
x, w, b = rnd((2, 6, 7, 8)), rnd((4, 3, 3, 2)), rnd((4,))
y = F.conv2d(T(x), T(w), T(b), stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)
add_case("conv2d groups 2 stride (2,1) pad (1,2) dil (1,2) bias", "conv2d", x, y.numpy(), w, b, stride=(2, 1),
         padding=(1, 2), dilation=(1, 2), groups=2)
x, w = rnd((1, 4, 6, 5)), rnd((4, 1, 3, 3))
y = F.conv2d(T(x), T(w), padding=1, groups=4)
add_case("conv2d depthwise 3x3 pad 1", "conv2d", x, y.numpy(), w, padding=1, groups=4)
x, w, b = rnd((2, 4, 4, 3)), rnd((4, 2, 3, 2)), rnd((4,))
y = F.conv_transpose2d(T(x), T(w), T(b), stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2,
                       dilation=(2, 1))
add_case("conv_transpose2d groups 2 stride (2,3) pad (1,0) outpad (1,2) dil (2,1) bias", "conv_transpose2d", x,
         y.numpy(), w, b, stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2, dilation=(2, 1))

# ---- pools -----------------------------------------------------------------------------
x = rnd((2, 3, 7, 6))
y = F.avg_pool2d(T(x), (3, 2), stride=2, padding=1, ceil_mode=True, count_include_pad=True)
add_case("avg_pool2d 3x2 stride 2 pad 1 ceil", "avg_pool2d", x, y.numpy(), kernel=(3, 2), stride=(2, 2),
         padding=(1, 1), ceil_mode=True)
y = F.avg_pool2d(T(x), (3, 3), stride=(2, 1), padding=1, ceil_mode=False, count_include_pad=False)
add_case("avg_pool2d 3x3 stride (2,1) pad 1 exclude pad", "avg_pool2d", x, y.numpy(), kernel=(3, 3),
         stride=(2, 1), padding=(1, 1), exclude_pad=True)
y = F.avg_pool2d(T(x), (2, 4), stride=(3, 3), padding=(1, 2), ceil_mode=True, count_include_pad=False)
add_case("avg_pool2d 2x4 stride 3 pad (1,2) ceil exclude pad", "avg_pool2d", x, y.numpy(), kernel=(2, 4),
         stride=(3, 3), padding=(1, 2), ceil_mode=True, exclude_pad=True)
x = rnd((1, 2, 6, 7))
x[0, 0, 1, 1] = np.nan
x[0, 0, 1, 2] = np.nan
x[0, 1, 0:3, 0:3] = -np.inf
x[0, 1, 4, 4] = x[0, 1, 4, 5] = 3.0
y, i = F.max_pool2d(T(x), 3, stride=2, padding=1, ceil_mode=True, return_indices=True)
add_case("max_pool2d 3x3 stride 2 pad 1 ceil, NaN, -inf, ties", "max_pool2d", x, y.numpy(), idx=i.numpy(),
         kernel=(3, 3), stride=(2, 2), padding=(1, 1), ceil_mode=True)
x = rnd((2, 2, 5, 8))
y, i = F.max_pool2d(T(x), (2, 3), stride=(1, 2), return_indices=True)
add_case("max_pool2d 2x3 stride (1,2)", "max_pool2d", x, y.numpy(), idx=i.numpy(), kernel=(2, 3), stride=(1, 2))

# ---- upsampling ----------------------------------------------------------------------------
x = rnd((2, 3, 5))
add_case("nearest1d 5 -> 12", "upsample_nearest1d", x, F.interpolate(T(x), size=12, mode="nearest").numpy())
add_case("nearest1d 5 -> 3", "upsample_nearest1d", x, F.interpolate(T(x), size=3, mode="nearest").numpy())
y = F.interpolate(T(x), scale_factor=1.5, mode="nearest")
add_case("nearest1d scale 1.5", "upsample_nearest1d", x, y.numpy(), scale=(0.0, 1.5))
x = rnd((1, 2, 4, 5))
add_case("nearest2d 4x5 -> 9x10", "upsample_nearest2d", x, F.interpolate(T(x), size=(9, 10), mode="nearest").numpy())
add_case("nearest2d 4x5 -> 8x10", "upsample_nearest2d", x, F.interpolate(T(x), size=(8, 10), mode="nearest").numpy())
y = F.interpolate(T(x), scale_factor=(1.7, 1.3), mode="nearest")
add_case("nearest2d scale (1.7, 1.3)", "upsample_nearest2d", x, y.numpy(), scale=(1.7, 1.3))
for align in (False, True):
    y = F.interpolate(T(x), size=(7, 9), mode="bilinear", align_corners=align)
    add_case("bilinear 4x5 -> 7x9 align %d" % align, "upsample_bilinear2d", x, y.numpy(), align=align)
    y = F.interpolate(T(x), size=(3, 2), mode="bilinear", align_corners=align)
    add_case("bilinear 4x5 -> 3x2 align %d" % align, "upsample_bilinear2d", x, y.numpy(), align=align)
    y = F.interpolate(T(x), size=(1, 1), mode="bilinear", align_corners=align)
    add_case("bilinear 4x5 -> 1x1 align %d" % align, "upsample_bilinear2d", x, y.numpy(), align=align)
y = F.interpolate(T(x), scale_factor=(2.5, 1.7), mode="bilinear", align_corners=False)
add_case("bilinear scale (2.5, 1.7)", "upsample_bilinear2d", x, y.numpy(), scale=(2.5, 1.7))

# ---- sorting -----------------------------------------------------------------------------------
srt = []
vals = np.array([[3, 1, np.nan, -np.inf, 1, 0.0, -0.0, 2, np.inf, -5, np.nan, 1, -0.0, 0.5, 2, -np.inf, 7],
                 [1, 1, 1, 1, 0, 0, 0, 0, -1, -1, 2, 2, np.inf, np.inf, np.nan, 0.25, -0.25]], dtype=np.float64)
emit("sref_x", vals)
for desc in (False, True):
    v, i = torch.sort(T(vals), dim=-1, descending=desc, stable=True)
    emit("sref_v%d" % desc, v.numpy())
    emit("sref_i%d" % desc, i.numpy())
for largest in (False, True):
    v, i = torch.topk(T(vals), 5, dim=-1, largest=largest, sorted=True)
    emit("sref_topk_v%d" % largest, v.numpy())
ivals = rng.integers(-4, 5, size=(3, 11))
emit("sref_ix", ivals)
for desc in (False, True):
    v, i = torch.sort(torch.tensor(ivals, dtype=torch.int32), dim=-1, descending=desc, stable=True)
    emit("sref_ii%d" % desc, i.numpy())

print("/* conv_ref.h — reference values for the conv and sort suites (tests/test_conv.c,")
print(" * tests/test_sort.c), computed by PyTorch %s (cpu, float64) by" % torch.__version__.split("+")[0])
print(" * tools/gen_conv_ref.py from inputs it draws with a fixed seed (rounded to")
print(" * float32). Do not edit by hand. */")
print("#ifndef WICK_TEST_CONV_REF_H")
print("#define WICK_TEST_CONV_REF_H")
print("#include <math.h>")
print("#include <stddef.h>")
print("#include <stdint.h>")
print("")
print("\n".join(out))
print("""
/* one case: op 0 conv1d, 1 conv_transpose1d, 2 conv2d, 3 conv_transpose2d,
 * 4 avg_pool2d, 5 max_pool2d, 6 upsample_nearest1d, 7 upsample_nearest2d,
 * 8 upsample_bilinear2d; per-dim options as wick's (index 0 is H or L) */
typedef struct cref_case {
    const char *name;
    int op;
    int xr; int64_t xs[4];
    int yr; int64_t ys[4];
    int wr; int64_t ws[4];
    int64_t stride[2], padding[2], dilation[2], output_padding[2], groups;
    int64_t kernel[2]; int ceil_mode, exclude_pad;
    double scale[2]; int align;
    const double *x, *w, *b, *y, *idx;
} cref_case;
static const cref_case cref_cases[] = {""")
print("\n".join(cases))
print("};")
print("#define CREF_NCASES %d" % len(cases))
print("#define SREF_ROWS %d" % vals.shape[0])
print("#define SREF_N %d" % vals.shape[1])
print("#define SREF_IROWS %d" % ivals.shape[0])
print("#define SREF_IN %d" % ivals.shape[1])
print("#endif")
