/* dtype_traits.h — every dtype's traits in one list: name, class (integer,
 * float, block-quantized), block size in elements and in bytes, and the
 * one checked function that turns an element count into a byte count.
 * Usable from C (the core, the CPU backend), C++ and HIP/CUDA device code
 * (the GPU backend): the traits are switch statements generated from the
 * list, so no table has to live in device memory.
 *
 * Dense dtypes are blocks of one element. A block-quantized dtype (GGUF's
 * Q4_0 .. Q8_K, byte layouts as GGUF files store them) packs `block`
 * elements into `block_bytes` bytes; a tensor of such a dtype is
 * row-contiguous: its last dim is a multiple of the block and has stride
 * 1, and every other stride and the offset are multiples of the block
 * (views may narrow or select rows only; src/core/layout.c checks it).
 *
 * Every size computation in wick goes through wk_dt_bytes (or the core's
 * wk_numel_checked): elements x element size written by hand has no
 * meaning for a block dtype (Q4_K: 256 elements in 144 bytes) and
 * overflows silently.
 */
#ifndef WICK_DTYPE_TRAITS_H
#define WICK_DTYPE_TRAITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "wick.h"

#if defined(__CUDACC__) || defined(__HIPCC__)
#define WK_DT_FN __host__ __device__ static inline
#else
#define WK_DT_FN static inline
#endif

typedef enum wk_dtype_class {
    WK_CLASS_INT = 0,     /* two's complement or unsigned integers */
    WK_CLASS_FLOAT,       /* IEEE-style floats (bf16 .. f8e4m3)    */
    WK_CLASS_QUANT,       /* block-quantized (GGUF)                */
} wk_dtype_class;

/* X(ID, name, class, signed, block elements, block bytes)
 * In wk_dtype order (a static_assert in src/core/dtype.c checks it). */
#define WK_DTYPE_LIST(X)                          \
    X(WK_U8, "u8", WK_CLASS_INT, 0, 1, 1)         \
    X(WK_U32, "u32", WK_CLASS_INT, 0, 1, 4)       \
    X(WK_I16, "i16", WK_CLASS_INT, 1, 1, 2)       \
    X(WK_I32, "i32", WK_CLASS_INT, 1, 1, 4)       \
    X(WK_I64, "i64", WK_CLASS_INT, 1, 1, 8)       \
    X(WK_BF16, "bf16", WK_CLASS_FLOAT, 1, 1, 2)   \
    X(WK_F16, "f16", WK_CLASS_FLOAT, 1, 1, 2)     \
    X(WK_F32, "f32", WK_CLASS_FLOAT, 1, 1, 4)     \
    X(WK_F64, "f64", WK_CLASS_FLOAT, 1, 1, 8)     \
    X(WK_F8E4M3, "f8e4m3", WK_CLASS_FLOAT, 1, 1, 1) \
    X(WK_Q4_0, "q4_0", WK_CLASS_QUANT, 1, 32, 18)   \
    X(WK_Q4_1, "q4_1", WK_CLASS_QUANT, 1, 32, 20)   \
    X(WK_Q5_0, "q5_0", WK_CLASS_QUANT, 1, 32, 22)   \
    X(WK_Q5_1, "q5_1", WK_CLASS_QUANT, 1, 32, 24)   \
    X(WK_Q8_0, "q8_0", WK_CLASS_QUANT, 1, 32, 34)   \
    X(WK_Q8_1, "q8_1", WK_CLASS_QUANT, 1, 32, 36)   \
    X(WK_Q2_K, "q2_k", WK_CLASS_QUANT, 1, 256, 84)  \
    X(WK_Q3_K, "q3_k", WK_CLASS_QUANT, 1, 256, 110) \
    X(WK_Q4_K, "q4_k", WK_CLASS_QUANT, 1, 256, 144) \
    X(WK_Q5_K, "q5_k", WK_CLASS_QUANT, 1, 256, 176) \
    X(WK_Q6_K, "q6_k", WK_CLASS_QUANT, 1, 256, 210) \
    X(WK_Q8_K, "q8_k", WK_CLASS_QUANT, 1, 256, 292) \
    X(WK_IQ4_NL, "iq4_nl", WK_CLASS_QUANT, 1, 32, 18)   \
    X(WK_IQ4_XS, "iq4_xs", WK_CLASS_QUANT, 1, 256, 136) \
    X(WK_IQ3_XXS, "iq3_xxs", WK_CLASS_QUANT, 1, 256, 98) \
    X(WK_IQ3_S, "iq3_s", WK_CLASS_QUANT, 1, 256, 110)   \
    X(WK_IQ2_XXS, "iq2_xxs", WK_CLASS_QUANT, 1, 256, 66) \
    X(WK_IQ2_XS, "iq2_xs", WK_CLASS_QUANT, 1, 256, 74)  \
    X(WK_IQ2_S, "iq2_s", WK_CLASS_QUANT, 1, 256, 82)    \
    X(WK_IQ1_S, "iq1_s", WK_CLASS_QUANT, 1, 256, 50)    \
    X(WK_IQ1_M, "iq1_m", WK_CLASS_QUANT, 1, 256, 56)

/* A dtype mask: bit dt set for each dtype in the set (op support rules). */
typedef uint64_t wk_dtype_mask;
#define WK_DT_BIT(dt) ((wk_dtype_mask)1 << (dt))
#define WK_DT_ENUM_BIT_(ID, NM, CL, SG, B, BB) | (CL == WK_CLASS_INT ? WK_DT_BIT(ID) : 0)
#define WK_DT_ENUM_FBIT_(ID, NM, CL, SG, B, BB) | (CL == WK_CLASS_FLOAT ? WK_DT_BIT(ID) : 0)
#define WK_DT_ENUM_QBIT_(ID, NM, CL, SG, B, BB) | (CL == WK_CLASS_QUANT ? WK_DT_BIT(ID) : 0)
#define WK_DT_INTS ((wk_dtype_mask)0 WK_DTYPE_LIST(WK_DT_ENUM_BIT_))
#define WK_DT_FLOATS ((wk_dtype_mask)0 WK_DTYPE_LIST(WK_DT_ENUM_FBIT_))
#define WK_DT_QUANTS ((wk_dtype_mask)0 WK_DTYPE_LIST(WK_DT_ENUM_QBIT_))
/* the IQ types (lattice and nonlinear codes; src/iq_tables.h) */
#define WK_DT_IQ (WK_DT_BIT(WK_IQ4_NL) | WK_DT_BIT(WK_IQ4_XS) | WK_DT_BIT(WK_IQ3_XXS) | WK_DT_BIT(WK_IQ3_S) | \
                  WK_DT_BIT(WK_IQ2_XXS) | WK_DT_BIT(WK_IQ2_XS) | WK_DT_BIT(WK_IQ2_S) | WK_DT_BIT(WK_IQ1_S) |    \
                  WK_DT_BIT(WK_IQ1_M))
/* the block dtypes wk_quantize writes: every one but the lattice IQ types,
 * whose quantizers need an importance matrix and search tables */
#define WK_DT_QUANTIZABLE ((WK_DT_QUANTS & ~WK_DT_IQ) | WK_DT_BIT(WK_IQ4_NL) | WK_DT_BIT(WK_IQ4_XS))
#define WK_DT_DENSE (WK_DT_INTS | WK_DT_FLOATS)
/* f16, bf16, f32, f64: matmul and the NN ops */
#define WK_DT_MATMUL (WK_DT_BIT(WK_F16) | WK_DT_BIT(WK_BF16) | WK_DT_BIT(WK_F32) | WK_DT_BIT(WK_F64))
#define WK_DT_NONE ((wk_dtype_mask)0)
#define WK_DT_HALVES (WK_DT_BIT(WK_F16) | WK_DT_BIT(WK_BF16))
/* the fused NN ops (softmax, norms, rope, attention): f16, bf16, f32, f64 */
#define WK_DT_NN WK_DT_MATMUL

WK_DT_FN bool wk_dt_valid(wk_dtype dt) { return (unsigned)dt < (unsigned)WK_DTYPE_COUNT; }

WK_DT_FN const char *wk_dt_name(wk_dtype dt)
{
#define WK_DT_CASE_(ID, NM, CL, SG, B, BB) case ID: return NM;
    switch (dt) { WK_DTYPE_LIST(WK_DT_CASE_) default: return "?"; }
#undef WK_DT_CASE_
}

WK_DT_FN int wk_dt_class(wk_dtype dt)
{
#define WK_DT_CASE_(ID, NM, CL, SG, B, BB) case ID: return CL;
    switch (dt) { WK_DTYPE_LIST(WK_DT_CASE_) default: return -1; }
#undef WK_DT_CASE_
}

/* Elements per block (1 for dense dtypes, 0 when invalid). */
WK_DT_FN int64_t wk_dt_block(wk_dtype dt)
{
#define WK_DT_CASE_(ID, NM, CL, SG, B, BB) case ID: return B;
    switch (dt) { WK_DTYPE_LIST(WK_DT_CASE_) default: return 0; }
#undef WK_DT_CASE_
}

/* Bytes per block (the element size of a dense dtype, 0 when invalid). */
WK_DT_FN int64_t wk_dt_block_bytes(wk_dtype dt)
{
#define WK_DT_CASE_(ID, NM, CL, SG, B, BB) case ID: return BB;
    switch (dt) { WK_DTYPE_LIST(WK_DT_CASE_) default: return 0; }
#undef WK_DT_CASE_
}

WK_DT_FN bool wk_dt_is_float(wk_dtype dt) { return wk_dt_class(dt) == WK_CLASS_FLOAT; }
WK_DT_FN bool wk_dt_is_int(wk_dtype dt) { return wk_dt_class(dt) == WK_CLASS_INT; }
WK_DT_FN bool wk_dt_is_quant(wk_dtype dt) { return wk_dt_class(dt) == WK_CLASS_QUANT; }

/* Bytes of one element of a dense dtype: the element size every kernel
 * indexes with. 0 for block dtypes (they have no per-element size) and
 * invalid ones. */
WK_DT_FN int64_t wk_dt_elem_bytes(wk_dtype dt)
{
#define WK_DT_CASE_(ID, NM, CL, SG, B, BB) case ID: return B == 1 ? BB : 0;
    switch (dt) { WK_DTYPE_LIST(WK_DT_CASE_) default: return 0; }
#undef WK_DT_CASE_
}

/* Bytes that n elements of dt take (n >= 0, a whole number of blocks).
 * false (and *out untouched) for an invalid dtype, a negative n, n not a
 * multiple of the block, or a result above INT64_MAX. The one place where
 * wick turns an element count into bytes. */
WK_DT_FN bool wk_dt_bytes(wk_dtype dt, int64_t n, int64_t *out)
{
    int64_t b = wk_dt_block(dt), bb = wk_dt_block_bytes(dt), r;
    if (b == 1 && n >= 0) {                          /* dense: no division */
        if (__builtin_mul_overflow(n, bb, &r)) return false;
        *out = r;
        return true;
    }
    if (b <= 0 || n < 0 || n % b != 0) return false;
    if (__builtin_mul_overflow(n / b, bb, &r)) return false;
    *out = r;
    return true;
}

/* Bytes of n elements when the caller knows the count is valid (a view of
 * an existing tensor: its extent was checked when it was made). */
WK_DT_FN int64_t wk_dt_bytes_of(wk_dtype dt, int64_t n) { return n / wk_dt_block(dt) * wk_dt_block_bytes(dt); }

#endif /* WICK_DTYPE_TRAITS_H */
