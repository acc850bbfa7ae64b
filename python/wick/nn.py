"""wick.nn — functional NN ops (docs/nn.md): every input in one float dtype
(f16, bf16, f32, f64), f16/bf16 computed in f32, results new contiguous
tensors on the inputs' device.

    softmax(x, dim=-1), log_softmax(x, dim=-1)
    rms_norm(x, weight=None, eps=1e-6, *, gemma=False)
    add_rms_norm(x, residual, weight=None, eps=1e-6, *, gemma=False) -> (normed, x + residual)
    layer_norm(x, weight=None, bias=None, eps=1e-5)
    silu_mul(a, b) -> silu(a) * b
    linear_silu_mul(x, w) -> silu(x . w[:F]^T) * (x . w[F:]^T)   w [2F, K]: gate rows, then up rows
    rope(x, cos, sin, pos_offset=0)       x [B, H, T, D], halves (Llama/NeoX)
    rope_i(x, cos, sin, pos_offset=0)     x [B, H, T, D], interleaved (GPT-J)
    rope_thd(x, cos, sin, pos_offset=0)   x [B, T, H, D], halves
    rope_kv(qkv, n_q, cos, sin, k_cache, v_cache, pos_offset=0, pos=None, interleaved=False)
                                          rope of q and k and the KV-cache append in one launch
    linear_rope_kv(x, w, n_q, cos, sin, k_cache, v_cache, pos_offset=0, pos=None, interleaved=False)
                                          rope_kv of x . w^T (the q/k/v projection): one launch for a row on a GPU
    rope_tables(head_dim, base, n_pos, scaling=None, ...) -> (cos, sin)
    attention(q, k, v, *, scale=None, causal=False, window=0, softcap=0.0, mask=None, kv_len=None)

Convolutions, pooling and upsampling (docs/conv.md), PyTorch's functional
signatures; per-dim options an int or a tuple (index 0: H or L, 1: W):

    conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)
    conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)
    conv_transpose1d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1)
    conv_transpose2d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1)
    avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True)
    max_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, return_indices=False)
                                          indices: u32, h * W + w in x's plane
    upsample_nearest1d(x, size=None, scale_factor=None)
    upsample_nearest2d(x, size=None, scale_factor=None)
    upsample_bilinear2d(x, size=None, scale_factor=None, align_corners=False)
    interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None)
                                          F.interpolate's nearest (1-d, 2-d) and bilinear

Sorting is in wick itself (wick.sort, wick.argsort, wick.topk, and the
Tensor methods of those names).
"""
from ._wick import (  # noqa: F401
    add_rms_norm,
    attention,
    avg_pool2d,
    conv1d,
    conv2d,
    conv_transpose1d,
    conv_transpose2d,
    layer_norm,
    linear_rope_kv,
    linear_silu_mul,
    log_softmax,
    max_pool2d,
    rms_norm,
    rope,
    rope_i,
    rope_kv,
    rope_tables,
    rope_thd,
    silu_mul,
    softmax,
    upsample_bilinear2d,
    upsample_nearest1d,
    upsample_nearest2d,
)

__all__ = [
    "softmax", "log_softmax", "rms_norm", "add_rms_norm", "layer_norm", "silu_mul", "linear_silu_mul",
    "rope", "rope_i", "rope_thd", "rope_kv", "linear_rope_kv", "rope_tables", "attention",
    "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "avg_pool2d", "max_pool2d",
    "upsample_nearest1d", "upsample_nearest2d", "upsample_bilinear2d", "interpolate",
]


def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """interpolate(x, size=None, scale_factor=None, mode='nearest', align_corners=None): as
    torch.nn.functional.interpolate for mode 'nearest' (x [N, C, L] or [N, C, H, W]) and
    'bilinear' (x [N, C, H, W]); size or scale_factor, one of the two."""
    if mode == "nearest":
        if align_corners is not None:
            raise ValueError("interpolate: align_corners goes with mode='bilinear' only")
        if x.ndim == 3:
            return upsample_nearest1d(x, size, scale_factor)
        if x.ndim == 4:
            return upsample_nearest2d(x, size, scale_factor)
        raise ValueError("interpolate: mode 'nearest' takes x [N, C, L] or [N, C, H, W], not %d dims" % x.ndim)
    if mode == "bilinear":
        if x.ndim != 4:
            raise ValueError("interpolate: mode 'bilinear' takes x [N, C, H, W], not %d dims" % x.ndim)
        return upsample_bilinear2d(x, size, scale_factor, bool(align_corners))
    raise ValueError("interpolate: mode %r (wick has 'nearest' and 'bilinear')" % (mode,))
