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

Convolutions and pooling come here as the C library gains them.
"""
from ._wick import (  # noqa: F401
    add_rms_norm,
    attention,
    layer_norm,
    linear_rope_kv,
    linear_silu_mul,
    log_softmax,
    rms_norm,
    rope,
    rope_i,
    rope_kv,
    rope_tables,
    rope_thd,
    silu_mul,
    softmax,
)

__all__ = [
    "softmax", "log_softmax", "rms_norm", "add_rms_norm", "layer_norm", "silu_mul", "linear_silu_mul",
    "rope", "rope_i", "rope_thd", "rope_kv", "linear_rope_kv", "rope_tables", "attention",
]
