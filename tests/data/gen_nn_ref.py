#!/usr/bin/env python3
"""gen_nn_ref.py — writes tests/data/nn_ref.h: a handful of small cases of
wick's fused NN ops computed by numpy in float64, the second, external
check of the naive references in tests/test_nn.c (nothing here shares
code with wick or with those references).

Inputs are drawn here from a fixed seed and rounded to float32, so the
same values can be given to wick as f32 and as f64; the expected outputs
are computed from them in float64 and written with every digit (repr).
Cases: softmax and log_softmax along the last dim and along dim 0 (a row
with some -inf, a row of only -inf: NaN), rms_norm (plain and Gemma),
layer_norm, rope / rope_i / rope_thd with a position offset (tables made
here, base 10000), rope tables with Llama-3 scaling, and attention: plain,
and causal + GQA + window + softcap + an additive mask with -inf entries
and one fully masked row.

Usage: python3 tests/data/gen_nn_ref.py > tests/data/nn_ref.h
"""
import math
import sys

import numpy as np

rng = np.random.default_rng(20261122)
out = []


def f32(a):
    """values rounded to float32, kept as float64"""
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def lit(v):
    v = float(v)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    return repr(v)


def emit(name, arr, comment=None):
    a = np.asarray(arr, dtype=np.float64).ravel()
    if comment:
        out.append("/* %s */" % comment)
    out.append("static const double %s[%d] = {" % (name, max(len(a), 1)))
    for i in range(0, len(a), 6):
        out.append("    " + ", ".join(lit(x) for x in a[i:i + 6]) + ",")
    out.append("};")


def emit_int(name, value):
    out.append("#define %s %d" % (name, value))


# ---- softmax / log_softmax ----------------------------------------------------
with np.errstate(invalid="ignore"):
    x = f32(rng.uniform(-6, 6, size=(4, 10)))
    x[2, 1] = -np.inf
    x[2, 7] = -np.inf
    x[3, :] = -np.inf

    def softmax(a, axis):
        m = a.max(axis=axis, keepdims=True)
        e = np.exp(a - m)
        return e / e.sum(axis=axis, keepdims=True)

    def log_softmax(a, axis):
        m = a.max(axis=axis, keepdims=True)
        return (a - m) - np.log(np.exp(a - m).sum(axis=axis, keepdims=True))

    emit("nnref_sm_x", x, "softmax input [4, 10]: row 2 has two -inf, row 3 is all -inf")
    emit("nnref_sm_last", softmax(x, 1), "softmax along dim 1")
    emit("nnref_lsm_last", log_softmax(x, 1), "log_softmax along dim 1")
    x0 = x[:3]  # dim 0 of the first three rows (columns 1 and 7 hold one -inf each)
    emit("nnref_sm_dim0", softmax(x0, 0), "softmax of rows 0..2 [3, 10] along dim 0")
    emit("nnref_lsm_dim0", log_softmax(x0, 0), "log_softmax of rows 0..2 [3, 10] along dim 0")

# ---- norms ---------------------------------------------------------------------
R, D = 3, 16
x = f32(rng.uniform(-2, 2, size=(R, D)))
w = f32(rng.uniform(-1, 1, size=D))
b = f32(rng.uniform(-1, 1, size=D))
eps = 1e-5
rms = np.sqrt((x * x).mean(axis=1, keepdims=True) + eps)
mean = x.mean(axis=1, keepdims=True)
var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
emit_int("NNREF_NORM_R", R)
emit_int("NNREF_NORM_D", D)
out.append("#define NNREF_NORM_EPS 1e-5")
emit("nnref_norm_x", x, "norm input [3, 16]")
emit("nnref_norm_w", w)
emit("nnref_norm_b", b)
emit("nnref_rms", x / rms * w, "rms_norm(x, w, 1e-5)")
emit("nnref_rms_gemma", x / rms * (1 + w), "rms_norm_gemma(x, w, 1e-5)")
emit("nnref_rms_now", x / rms, "rms_norm(x, NULL, 1e-5)")
emit("nnref_ln", (x - mean) / np.sqrt(var + eps) * w + b, "layer_norm(x, w, b, 1e-5), biased variance")

# ---- rope ----------------------------------------------------------------------
B, H, T, D, NPOS, OFF = 1, 2, 5, 8, 12, 3
half = D // 2
inv = 10000.0 ** (-np.arange(half) * 2.0 / D)
ang = np.arange(NPOS)[:, None] * inv[None, :]
cos_t = f32(np.cos(ang))
sin_t = f32(np.sin(ang))
x = f32(rng.uniform(-2, 2, size=(B, H, T, D)))


def rope_halves(x, t_axis):
    y = np.empty_like(x)
    for idx in np.ndindex(*x.shape[:-1]):
        t = idx[t_axis] + OFF
        c, s = cos_t[t], sin_t[t]
        a0, a1 = x[idx][:half], x[idx][half:]
        y[idx] = np.concatenate([a0 * c - a1 * s, a0 * s + a1 * c])
    return y


def rope_inter(x):
    y = np.empty_like(x)
    for idx in np.ndindex(*x.shape[:-1]):
        t = idx[2] + OFF
        c, s = cos_t[t], sin_t[t]
        a0, a1 = x[idx][0::2], x[idx][1::2]
        r = np.empty(D)
        r[0::2] = a0 * c - a1 * s
        r[1::2] = a0 * s + a1 * c
        y[idx] = r
    return y


emit_int("NNREF_ROPE_B", B)
emit_int("NNREF_ROPE_H", H)
emit_int("NNREF_ROPE_T", T)
emit_int("NNREF_ROPE_D", D)
emit_int("NNREF_ROPE_NPOS", NPOS)
emit_int("NNREF_ROPE_OFF", OFF)
emit("nnref_rope_cos", cos_t, "cos table [12, 4], base 10000, rounded to f32")
emit("nnref_rope_sin", sin_t, "sin table [12, 4]")
emit("nnref_rope_x", x, "x [1, 2, 5, 8] ([B, H, T, D]; the same values are x [1, 2, 5, 8] as [B, T, H, D] for rope_thd)")
emit("nnref_rope", rope_halves(x, 2), "rope(x, cos, sin, 3)")
emit("nnref_rope_i", rope_inter(x), "rope_i(x, cos, sin, 3)")
emit("nnref_rope_thd", rope_halves(x, 1), "rope_thd(x viewed as [B=1, T=2, H=5, D=8], cos, sin, 3)")

# ---- rope tables with Llama-3 scaling ------------------------------------------
TD, TBASE, TNPOS = 16, 500000.0, 40
FACTOR, LOWF, HIGHF, ORIG = 8.0, 1.0, 4.0, 64.0
th = TD // 2
freqs = TBASE ** (-np.arange(th) * 2.0 / TD)
wl = 2 * np.pi / freqs
lo_wl, hi_wl = ORIG / LOWF, ORIG / HIGHF
smooth = (ORIG / wl - LOWF) / (HIGHF - LOWF)
scaled = np.where(wl < hi_wl, freqs, np.where(wl > lo_wl, freqs / FACTOR, (1 - smooth) * freqs / FACTOR + smooth * freqs))
ang = np.arange(TNPOS)[:, None] * scaled[None, :]
emit_int("NNREF_L3_D", TD)
emit_int("NNREF_L3_NPOS", TNPOS)
out.append("#define NNREF_L3_BASE 500000.0")
out.append("#define NNREF_L3_FACTOR 8.0")
out.append("#define NNREF_L3_LOW 1.0")
out.append("#define NNREF_L3_HIGH 4.0")
out.append("#define NNREF_L3_ORIG 64.0")
emit("nnref_l3_cos", np.cos(ang), "llama3-scaled cos table [40, 8] (factor 8, low 1, high 4, original 64), float64")
emit("nnref_l3_sin", np.sin(ang), "llama3-scaled sin table [40, 8]")

# ---- attention -----------------------------------------------------------------
B, HQ, HKV, TQ, TK, D = 2, 4, 2, 5, 9, 8
q = f32(rng.uniform(-1.5, 1.5, size=(B, HQ, TQ, D)))
k = f32(rng.uniform(-1.5, 1.5, size=(B, HKV, TK, D)))
v = f32(rng.uniform(-1, 1, size=(B, HKV, TK, D)))
mask = f32(rng.uniform(-1, 1, size=(B, 1, TQ, TK)))
mask[0, 0, 2, 6] = -np.inf
mask[1, 0, 3, :] = -np.inf   # a fully masked row: zeros
mask[1, 0, 4, 8] = -np.inf


def attention(q, k, v, scale, causal=False, window=0, softcap=0.0, mask=None):
    o = np.zeros_like(q)
    g = q.shape[1] // k.shape[1]
    tq, tk = q.shape[2], k.shape[2]
    for bb in range(q.shape[0]):
        for h in range(q.shape[1]):
            for i in range(tq):
                pos = i + tk - tq
                js = [j for j in range(tk) if (not causal or j <= pos) and (window <= 0 or j > pos - window)]
                if not js:
                    continue
                s = np.array([scale * np.dot(q[bb, h, i], k[bb, h // g, j]) for j in js])
                if softcap > 0:
                    s = softcap * np.tanh(s / softcap)
                if mask is not None:
                    s = s + np.array([mask[bb, 0, i, j] for j in js])
                m = s.max()
                if m == -np.inf:
                    continue
                p = np.exp(s - m)
                p /= p.sum()
                o[bb, h, i] = (p[:, None] * v[bb, h // g, js]).sum(axis=0)
    return o


emit_int("NNREF_ATT_B", B)
emit_int("NNREF_ATT_HQ", HQ)
emit_int("NNREF_ATT_HKV", HKV)
emit_int("NNREF_ATT_TQ", TQ)
emit_int("NNREF_ATT_TK", TK)
emit_int("NNREF_ATT_D", D)
out.append("#define NNREF_ATT_WINDOW 4")
out.append("#define NNREF_ATT_SOFTCAP 2.0")
emit("nnref_att_q", q, "q [2, 4, 5, 8]")
emit("nnref_att_k", k, "k [2, 2, 9, 8]")
emit("nnref_att_v", v, "v [2, 2, 9, 8]")
emit("nnref_att_mask", mask, "mask [2, 1, 5, 9]: -inf at [0,0,2,6], all of [1,0,3,:], [1,0,4,8]")
emit("nnref_att_plain", attention(q, k, v, 1 / math.sqrt(D)), "attention(q, k, v), default scale 1/sqrt(8)")
emit("nnref_att_all", attention(q, k, v, 0.5, causal=True, window=4, softcap=2.0, mask=mask),
     "attention with scale 0.5, causal, window 4, softcap 2, mask")

sys.stdout.write("/* nn_ref.h — reference values for the nn suite (tests/test_nn.c), computed by\n"
                 " * numpy %s in float64 by tests/data/gen_nn_ref.py from inputs it draws\n"
                 " * with a fixed seed (rounded to float32). Do not edit by hand. */\n" % np.__version__)
sys.stdout.write("#ifndef WICK_TEST_NN_REF_H\n#define WICK_TEST_NN_REF_H\n#include <math.h>\n\n")
sys.stdout.write("\n".join(out) + "\n\n#endif /* WICK_TEST_NN_REF_H */\n")
