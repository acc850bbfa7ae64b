# test_gpu_oracle.py — PyTorch as a second oracle for wick's fused NN ops on
# cuda:0 (docs/nn.md's semantics): attention over the option matrix (D 64,
# 80, 128, 256; grouped-query 1, 4, 8; causal with Tq != Tk aligned to the
# bottom right; decode Tq = 1 against 4097 keys; sliding windows; soft-capping
# and masks written out as explicit maths; rows that see no key; q/k/v as
# transposed [B, T, H, D] views), softmax and log_softmax on long rows and
# other dims, rms_norm (plain and Gemma), layer_norm with and without
# weight/bias, the three ropes. References are computed in float64 by torch
# on the same GPU; inputs are shared through DLPack. Skipped without a CUDA
# device in wick or torch with CUDA.
import math
import zlib

import pytest

import wick

torch = pytest.importorskip("torch")
F = torch.nn.functional

DEV = "cuda:0"
pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available() or wick.device_count("cuda") == 0,
    reason="needs a CUDA GPU seen by both wick and torch",
)
TD = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
# bounds relative to the largest reference magnitude: the output's rounding
# plus f32 accumulation (bf16 has 8 bits, f16 11)
TOL = {"f32": 2e-5, "f16": 4e-3, "bf16": 2.5e-2}


def rnd(shape, dt, seed, lo=-2.0, hi=2.0):
    g = torch.Generator(device=DEV).manual_seed(seed)
    return (torch.rand(shape, generator=g, device=DEV, dtype=torch.float64) * (hi - lo) + lo).to(TD[dt])


def check(got, ref, dt, what, k=1.0):
    g = torch.from_dlpack(got).double()
    assert g.shape == ref.shape, (what, g.shape, ref.shape)
    scale = max(ref.abs().max().item(), 1e-30)
    err = (g - ref).abs().max().item() / scale
    assert not torch.isnan(g).any(), f"{what}: NaN in wick's result"
    assert err <= TOL[dt] * k, f"{what}: max error {err:.3g} of the largest value (bound {TOL[dt] * k:g})"


def ref_attention(q, k, v, scale=None, causal=False, window=0, softcap=0.0, mask=None):
    """docs/nn.md's attention in float64 with explicit maths"""
    q, k, v = q.double(), k.double(), v.double()
    B, Hq, Tq, D = q.shape
    Hk, Tk = k.shape[1], k.shape[2]
    g = Hq // Hk
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = (q @ k.transpose(-1, -2)) * (scale if scale else 1.0 / math.sqrt(D))
    if softcap > 0:
        s = softcap * torch.tanh(s / softcap)
    if mask is not None:
        s = s + mask.double()
    pos = torch.arange(Tq, device=DEV)[:, None] + (Tk - Tq)
    j = torch.arange(Tk, device=DEV)[None, :]
    vis = torch.ones(Tq, Tk, dtype=torch.bool, device=DEV)
    if causal:
        vis &= j <= pos
    if window > 0:
        vis &= j > pos - window
    s = s.masked_fill(~vis, float("-inf"))
    m = s.amax(-1, keepdim=True)
    dead = torch.isinf(m) & (m < 0)
    p = torch.exp(s - torch.where(dead, torch.zeros_like(m), m))
    den = p.sum(-1, keepdim=True)
    out = (p @ v) / torch.where(den == 0, torch.ones_like(den), den)
    return torch.where(dead, torch.zeros_like(out), out), vis


ATT_CASES = [
    # (B, Hq, Hk, Tq, Tk, D, causal, window, softcap, mask kind)
    (1, 4, 4, 64, 64, 64, True, 0, 0.0, None),
    (2, 8, 2, 33, 33, 80, False, 0, 0.0, None),
    (1, 8, 1, 17, 300, 128, True, 0, 0.0, None),       # Tq != Tk, bottom right
    (1, 32, 8, 1, 4097, 128, True, 0, 0.0, None),      # decode against many keys
    (2, 16, 2, 1, 1023, 256, False, 0, 0.0, None),
    (1, 8, 8, 100, 100, 256, True, 0, 0.0, None),
    (1, 8, 2, 129, 129, 64, True, 32, 0.0, None),      # sliding window
    (1, 4, 4, 5, 700, 128, True, 64, 0.0, None),
    (1, 8, 4, 40, 40, 128, True, 0, 50.0, None),       # gemma 2 soft cap
    (2, 4, 2, 31, 47, 64, False, 0, 0.0, "tq_tk"),     # [Tq, Tk] additive mask
    (2, 4, 2, 1, 300, 64, False, 0, 0.0, "padding"),   # [B, 1, 1, Tk], -inf padding
    (1, 4, 4, 9, 9, 64, False, 0, 0.0, "dead_rows"),   # rows that see no key
]


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("case", ATT_CASES, ids=lambda c: "B%dH%d/%dT%dx%dD%d%s%s%s%s" % (
    c[0], c[1], c[2], c[3], c[4], c[5], "c" if c[6] else "", "w%d" % c[7] if c[7] else "",
    "cap" if c[8] else "", c[9] or ""))
def test_attention_against_torch(case, dt):
    B, Hq, Hk, Tq, Tk, D, causal, window, softcap, mk = case
    seed = zlib.crc32(repr(case).encode()) % 10000
    # q, k, v as transposed views of [B, T, H, D] tensors (no copy into wick)
    q = rnd((B, Tq, Hq, D), dt, seed).transpose(1, 2)
    k = rnd((B, Tk, Hk, D), dt, seed + 1).transpose(1, 2)
    v = rnd((B, Tk, Hk, D), dt, seed + 2).transpose(1, 2)
    mask = None
    if mk == "tq_tk":
        mask = rnd((Tq, Tk), "f32", seed + 3, -3, 3)
    elif mk == "padding":
        mask = torch.zeros(B, 1, 1, Tk, device=DEV)
        mask[0, ..., 200:] = float("-inf")
        mask[1, ..., :17] = float("-inf")
    elif mk == "dead_rows":
        mask = torch.zeros(Tq, Tk, device=DEV)
        mask[3, :] = float("-inf")
        mask[7, :] = float("-inf")
    kw = dict(causal=causal, window=window, softcap=softcap)
    got = wick.nn.attention(wick.from_dlpack(q), wick.from_dlpack(k), wick.from_dlpack(v),
                            mask=wick.from_dlpack(mask) if mask is not None else None, **kw)
    ref, vis = ref_attention(q, k, v, mask=mask, **kw)
    check(got, ref, dt, f"attention {case} {dt} (seed {seed})", k=2)
    if softcap == 0 and mk != "dead_rows":
        # the explicit maths agree with torch's own SDPA (float64, the
        # visibility and the mask as one additive mask; SDPA gives NaN for
        # rows that see no key, so those are left to the maths above)
        am = torch.zeros(Tq, Tk, dtype=torch.float64, device=DEV).masked_fill(~vis, float("-inf"))
        if mask is not None:
            am = am + mask.double()
        g = Hq // Hk
        sd = F.scaled_dot_product_attention(q.double(), k.repeat_interleave(g, 1).double(),
                                            v.repeat_interleave(g, 1).double(), attn_mask=am)
        assert (sd - ref).abs().max().item() <= 1e-9 * max(ref.abs().max().item(), 1), "reference != SDPA"


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("shape,dim", [((64, 4097), -1), ((16, 32000), -1), ((33, 7, 129), 1), ((5, 1023, 3), 1)])
def test_softmax_against_torch(shape, dim, dt):
    x = rnd(shape, dt, 7, -20, 20)
    check(wick.nn.softmax(wick.from_dlpack(x), dim), torch.softmax(x.double(), dim), dt, "softmax", k=2)
    lsm = torch.log_softmax(x.double(), dim)
    g = torch.from_dlpack(wick.nn.log_softmax(wick.from_dlpack(x), dim)).double()
    err = (g - lsm).abs().max().item() / lsm.abs().max().item()
    assert err <= TOL[dt] * 2, f"log_softmax {shape} dim {dim} {dt}: {err:.3g}"


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("n", [7, 128, 4096, 5000])
def test_norms_against_torch(n, dt):
    x = rnd((37, n), dt, 21, -3, 3)
    w, b = rnd((n,), dt, 22), rnd((n,), dt, 23)
    xd = x.double()
    rms = xd * torch.rsqrt((xd * xd).mean(-1, keepdim=True) + 1e-6)
    check(wick.nn.rms_norm(wick.from_dlpack(x), wick.from_dlpack(w), 1e-6), rms * w.double(), dt, "rms_norm", k=2)
    check(wick.nn.rms_norm(wick.from_dlpack(x), wick.from_dlpack(w), 1e-6, gemma=True), rms * (1 + w.double()), dt,
          "rms_norm gemma", k=2)
    check(wick.nn.rms_norm(wick.from_dlpack(x), None, 1e-6), rms, dt, "rms_norm without weight", k=2)
    ln = F.layer_norm(xd, (n,), w.double(), b.double(), 1e-5)
    check(wick.nn.layer_norm(wick.from_dlpack(x), wick.from_dlpack(w), wick.from_dlpack(b), 1e-5), ln, dt,
          "layer_norm", k=2)
    check(wick.nn.layer_norm(wick.from_dlpack(x), None, None, 1e-5), F.layer_norm(xd, (n,), eps=1e-5), dt,
          "layer_norm without weight and bias", k=2)


@pytest.mark.parametrize("dt", ["f32", "bf16"])
@pytest.mark.parametrize("kind", ["rope", "rope_i", "rope_thd"])
def test_ropes_against_torch(kind, dt):
    B, H, T_, D = 2, 8, 33, 128
    cos, sin = wick.nn.rope_tables(D, 500000.0, 64, "llama3", factor=8.0, device=DEV)
    c, s = torch.from_dlpack(cos).double()[5:5 + T_], torch.from_dlpack(sin).double()[5:5 + T_]
    x = rnd((B, T_, H, D), dt, 31)
    xin = x if kind == "rope_thd" else x.transpose(1, 2)      # [B, H, T, D] as a view
    xd = x.double().transpose(1, 2)
    if kind == "rope_i":
        x0, x1 = xd[..., 0::2], xd[..., 1::2]
        ref = torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], -1).flatten(-2)
    else:
        x0, x1 = xd[..., : D // 2], xd[..., D // 2:]
        ref = torch.cat([x0 * c - x1 * s, x0 * s + x1 * c], -1)
    if kind == "rope_thd":
        ref = ref.transpose(1, 2)
    got = getattr(wick.nn, kind)(wick.from_dlpack(xin), cos, sin, pos_offset=5)
    check(got, ref, dt, f"{kind} {dt}", k=2)
