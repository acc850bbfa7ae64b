/* cpu_elementwise.c — the CPU backend's elementwise ops: unary (exp ..
 * sign, affine, powf, elu), binary (add .. maximum, and silu_mul on the
 * NN float dtypes), comparisons (dst u8) and where_cond, for every dtype
 * each op takes.
 *
 * One templated body per op family: a macro builds a row function (see
 * cpu_ew.h) from a typed load, an op expression and a typed store, and
 * X-macro lists instantiate it for every (op, dtype), filling per-dtype
 * tables the entry points index. Narrow floats load as f32, compute in f32
 * and round once on store; integer ops wrap (unsigned arithmetic).
 *
 * How it is made fast: wk_ew_run hands each thread-pool chunk of a
 * contiguous op to the row function as one stride-1 run, whose loop the
 * compiler vectorizes (the narrow-float loads/stores of cpu_ew.h are
 * branch-free). f32 exp is a branch-free polynomial (below) rather than a
 * libm call so that it vectorizes too, and silu/gelu use it. On x86-64
 * the hot f32 loops (exp, silu, gelu, recip, sqr, affine; add, sub,
 * mul, div) are compiled a second time for AVX2 and picked at run time;
 * both variants do the same IEEE operations, so results do not depend on
 * the machine.
 */
#include <math.h>
#include "cpu_ew.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

/* ======================================================================
 * f32 exp without libm
 *
 * x = k ln2 + r with k = nearest integer to x/ln2 (found by adding
 * 1.5 * 2^23, which also leaves k in the low bits of the sum, so no
 * float -> int conversion is needed) and |r| <= ln2/2 (ln2 split in a
 * 9-bit head, so k * head is exact, and a tail). e^r = 1 + r + r^2 q(r)
 * with q a degree-4 minimax fit of relative error 3e-9. 2^k is applied as
 * two factors 2^(k/2) and 2^(k - k/2), each a normal float, so results in
 * the subnormal range are rounded once and large x overflows to Inf.
 * x is first clamped to [-104, 89] (e^-104 rounds to 0, e^89 to Inf) with
 * integer min/max on an order-preserving integer image of its bits: a
 * float compare-and-select here would let the compiler branch on the
 * clamped cases and give up vectorizing. NaN is clamped too, then
 * restored at the end by or-ing in a quiet NaN.
 * Checked against double exp on every f32: relative error < 1e-7.
 * ==================================================================== */
static inline int32_t ordered_bits(int32_t b) { return b ^ ((b >> 31) & 0x7FFFFFFF); }  /* an involution */

static inline float fast_expf(float x)
{
    const int32_t lo = ordered_bits((int32_t)0xC2D00000u), hi = 0x42B20000;  /* -104.0f, 89.0f */
    int32_t key = ordered_bits((int32_t)wk_f32_bits(x));
    key = key < hi ? key : hi;
    key = key > lo ? key : lo;
    float xc = wk_bits_f32((uint32_t)ordered_bits(key));

    const float shifter = 0x1.8p23f;
    float t = xc * 0x1.715476p+0f + shifter;  /* x / ln2 + 1.5 * 2^23 */
    float kf = t - shifter;
    int32_t k = (int32_t)(wk_f32_bits(t) - wk_f32_bits(shifter));
    float r = xc - kf * 0x1.63p-1f;          /* ln2 head, 9 bits */
    r = r - kf * -0x1.bd0106p-13f;           /* ln2 tail         */
    float q = 0x1.6a23cep-10f;
    q = q * r + 0x1.123a2p-7f;
    q = q * r + 0x1.5558f2p-5f;
    q = q * r + 0x1.555492p-3f;
    q = q * r + 0x1.fffffcp-2f;
    float er = 1.0f + (r + (r * r) * q);
    int32_t k1 = k / 2, k2 = k - k1;
    float s1 = wk_bits_f32((uint32_t)(k1 + 127) << 23);
    float s2 = wk_bits_f32((uint32_t)(k2 + 127) << 23);
    float res = (er * s1) * s2;
    /* all ones when x is NaN: |bits| > 0x7F800000 */
    uint32_t nan = (uint32_t)((int32_t)(0x7F800000u - (wk_f32_bits(x) & 0x7FFFFFFFu)) >> 31);
    return wk_bits_f32(wk_f32_bits(res) | (nan & 0x7FC00000u));
}
static inline double fast_exp(double x) { return exp(x); }

/* silu(x) = x / (1 + e^-x); gelu(x) = 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)),
 * u = sqrt(2/pi) (x + 0.044715 x^3): exact algebra without the
 * cancellation of 1 + tanh(u) for negative x. f32 uses fast_expf. */
static inline float op_siluf(float x) { return x / (1.0f + fast_expf(-x)); }
static inline double op_silu(double x) { return x / (1.0 + exp(-x)); }
/* sigmoid(x) = 1 / (1 + e^-x): Inf at x -> -Inf gives 0, NaN stays NaN */
static inline float op_sigmoidf(float x) { return 1.0f / (1.0f + fast_expf(-x)); }
static inline double op_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static inline float op_geluf(float x)
{
    float u = 0x1.988454p-1f * (x + 0.044715f * (x * x * x));  /* sqrt(2/pi) */
    return x / (1.0f + fast_expf(-2.0f * u));
}
static inline double op_gelu(double x)
{
    double u = 0.79788456080286535588 * (x + 0.044715 * (x * x * x));
    return x / (1.0 + exp(-2.0 * u));
}
/* gelu_erf(x) = 0.5 x (1 + erf(x / sqrt2)) = 0.5 x erfc(-x / sqrt2): the
 * erfc form keeps its relative accuracy for negative x */
static inline float op_gelu_erff(float x) { return 0.5f * x * erfcf(x * -0x1.6a09e6p-1f); }
static inline double op_gelu_erf(double x) { return 0.5 * x * erfc(x * -0.70710678118654752440); }

/* ======================================================================
 * Typed loads and stores, per dtype
 * ==================================================================== */

#define LD_ID(v) (v)
#define ST_ID(v) (v)
#define LD_BF16(v) wk_bf16_to_f32(v)
#define ST_BF16(v) wk_ew_f32_to_bf16(v)
#define LD_F16(v) wk_ew_f16_to_f32(v)
#define ST_F16(v) wk_ew_f32_to_f16(v)
#define LD_F8(v) wk_ew_f8_to_f32(v)
#define ST_F8(v) wk_ew_f32_to_f8(v)

/* is x < 0, without a "always false" comparison on unsigned types */
#define ISNEG_S(x) ((x) < 0)
#define ISNEG_U(x) 0

/* Float dtypes: name, storage, compute type, libm suffix, load, store,
 * hotness (HOT: also an AVX2 variant of the contiguous loop) */
#define FLOAT_DTYPES(X, ...)                                                    \
    X(bf16, uint16_t, float, f, LD_BF16, ST_BF16, COLD, __VA_ARGS__)           \
    X(f16, uint16_t, float, f, LD_F16, ST_F16, COLD, __VA_ARGS__)              \
    X(f32, float, float, f, LD_ID, ST_ID, HOT, __VA_ARGS__)                    \
    X(f64, double, double, , LD_ID, ST_ID, COLD, __VA_ARGS__)                  \
    X(f8, uint8_t, float, f, LD_F8, ST_F8, COLD, __VA_ARGS__)

/* Integer dtypes: name, storage, wrap type (unsigned, at least int wide,
 * so that no arithmetic is done in a promoted signed int), sign test,
 * double -> T cast */
#define INT_DTYPES(X, ...)                                                      \
    X(u8, uint8_t, unsigned, ISNEG_U, wk_f64_to_u8, __VA_ARGS__)                \
    X(u32, uint32_t, uint32_t, ISNEG_U, wk_f64_to_u32, __VA_ARGS__)             \
    X(i16, int16_t, unsigned, ISNEG_S, wk_f64_to_i16, __VA_ARGS__)              \
    X(i32, int32_t, uint32_t, ISNEG_S, wk_f64_to_i32, __VA_ARGS__)              \
    X(i64, int64_t, uint64_t, ISNEG_S, wk_f64_to_i64, __VA_ARGS__)

#if WK_EW_X86
#define WK_HOTHOT 1
#else
#define WK_HOTHOT 0
#endif

/* ======================================================================
 * Unary family
 * ==================================================================== */

typedef struct uparams { double p0, p1; } uparams;

/* float ops: x (compute type), FS (libm suffix), a = p0, b = p1 */
#define UF_EXP(x, FS, a, b) fast_exp##FS(x)
#define UF_LOG(x, FS, a, b) log##FS(x)
#define UF_SIN(x, FS, a, b) sin##FS(x)
#define UF_COS(x, FS, a, b) cos##FS(x)
#define UF_TANH(x, FS, a, b) tanh##FS(x)
#define UF_ABS(x, FS, a, b) fabs##FS(x)
#define UF_NEG(x, FS, a, b) (-(x))
#define UF_RECIP(x, FS, a, b) (1 / (x))
#define UF_SQR(x, FS, a, b) ((x) * (x))
#define UF_SQRT(x, FS, a, b) sqrt##FS(x)
#define UF_GELU(x, FS, a, b) op_gelu##FS(x)
#define UF_GELU_ERF(x, FS, a, b) op_gelu_erf##FS(x)
#define UF_ERF(x, FS, a, b) erf##FS(x)
#define UF_RELU(x, FS, a, b) ((x) < 0 ? 0 : (x))
#define UF_SILU(x, FS, a, b) op_silu##FS(x)
#define UF_FLOOR(x, FS, a, b) floor##FS(x)
#define UF_CEIL(x, FS, a, b) ceil##FS(x)
#define UF_ROUND(x, FS, a, b) rint##FS(x)  /* half to even (default mode) */
#define UF_SIGN(x, FS, a, b) ((x) > 0 ? 1 : (x) < 0 ? -1 : (x))
#define UF_AFFINE(x, FS, a, b) ((x) * (a) + (b))
#define UF_POWF(x, FS, a, b) pow##FS(x, a)
#define UF_ELU(x, FS, a, b) ((x) > 0 ? (x) : (a) * expm1##FS(x))
#define UF_SIGMOID(x, FS, a, b) op_sigmoid##FS(x)

/* Every unary op of src/op_list.h (kinds U and P) has a UF_ body above,
 * and here its hotness: HOT ops also get AVX2 and AVX-512 variants of
 * their contiguous f32 loop. */
#define UH_EXP HOT
#define UH_LOG COLD
#define UH_SIN COLD
#define UH_COS COLD
#define UH_TANH COLD
#define UH_ABS COLD
#define UH_NEG COLD
#define UH_RECIP HOT
#define UH_SQR HOT
#define UH_SQRT COLD
#define UH_GELU HOT
#define UH_GELU_ERF COLD
#define UH_ERF COLD
#define UH_RELU COLD
#define UH_SILU HOT
#define UH_FLOOR COLD
#define UH_CEIL COLD
#define UH_ROUND COLD
#define UH_SIGN COLD
#define UH_AFFINE HOT
#define UH_POWF COLD
#define UH_ELU COLD
#define UH_SIGMOID HOT

/* the unary ops of the op list, each as X(OP) */
#define UOP_OF_(K, N, S, P, D) UOP_OF_##K(N)
#define UOP_OF_U(N) UOP_X_(N)
#define UOP_OF_P(N) UOP_X_(N)
#define UOP_OF_B(N)
#define UOP_OF_C(N)
#define UOP_OF_R(N)
#define UOP_OF_O(N)

/* integer ops: x (T), T, UT (wrap type), ISNEG, F2T (double -> T) */
#define UI_ABS(x, T, UT, ISNEG, F2T, a, b) (ISNEG(x) ? (T)((UT)0 - (UT)(x)) : (x))
#define UI_NEG(x, T, UT, ISNEG, F2T, a, b) ((T)((UT)0 - (UT)(x)))
#define UI_SQR(x, T, UT, ISNEG, F2T, a, b) ((T)((UT)(x) * (UT)(x)))
#define UI_RELU(x, T, UT, ISNEG, F2T, a, b) (ISNEG(x) ? (T)0 : (x))
#define UI_SIGN(x, T, UT, ISNEG, F2T, a, b) ((x) > 0 ? (T)1 : ISNEG(x) ? (T)-1 : (T)0)
#define UI_FLOOR(x, T, UT, ISNEG, F2T, a, b) (x)
#define UI_CEIL(x, T, UT, ISNEG, F2T, a, b) (x)
#define UI_ROUND(x, T, UT, ISNEG, F2T, a, b) (x)
#define UI_AFFINE(x, T, UT, ISNEG, F2T, a, b) F2T((double)(x) * (a) + (b))

#define INT_UOPS(X, ...)                                                        \
    X(ABS, __VA_ARGS__) X(NEG, __VA_ARGS__) X(SQR, __VA_ARGS__) X(RELU, __VA_ARGS__) \
    X(SIGN, __VA_ARGS__) X(FLOOR, __VA_ARGS__) X(CEIL, __VA_ARGS__)            \
    X(ROUND, __VA_ARGS__) X(AFFINE, __VA_ARGS__)

/* The loop body: x = load(s[i]); d[i] = store(EXPR); a, b: parameters of
 * type PT. */
#define U_LOOP(T, CT, PT, LD, ST, EXPR)                                         \
    for (int64_t i = 0; i < n; i++) {                                           \
        CT x = LD(s[i]);                                                        \
        d[i] = ST(EXPR);                                                        \
    }

#define U_CONTIG(NAME, ATTR, T, CT, PT, LD, ST, EXPR)                           \
    ATTR static void NAME(T *d, const T *s, int64_t n, PT a, PT b)              \
    {                                                                           \
        (void)a; (void)b;                                                       \
        U_LOOP(T, CT, PT, LD, ST, EXPR)                                         \
    }

/* A row function. HOT: the contiguous loop also exists for AVX2. */
#define DEF_UROW(NAME, HOT, T, CT, PT, LD, ST, EXPR)                            \
    U_CONTIG(NAME##_c, , T, CT, PT, LD, ST, EXPR)                               \
    UROW_AVX2_##HOT(NAME, T, CT, PT, LD, ST, EXPR)                              \
    static void NAME(char *const *p, const int64_t *st, int64_t n, const void *prm) \
    {                                                                           \
        const uparams *P = prm;                                                 \
        const PT a = (PT)P->p0, b = (PT)P->p1;                                  \
        T *d = (T *)p[0];                                                       \
        const T *s = (const T *)p[1];                                           \
        const int64_t ds = st[0], ss = st[1];                                   \
        if (ds == 1 && ss == 1) {                                               \
            UROW_CALL_##HOT(NAME, d, s, n, a, b);                               \
        } else {                                                                \
            for (int64_t i = 0; i < n; i++) {                                   \
                CT x = LD(s[i * ss]);                                           \
                d[i * ds] = ST(EXPR);                                           \
            }                                                                   \
        }                                                                       \
    }
#define UROW_AVX2_0(NAME, T, CT, PT, LD, ST, EXPR)
#define UROW_AVX2_1(NAME, T, CT, PT, LD, ST, EXPR) U_CONTIG(NAME##_c2, WK_TARGET_AVX2, T, CT, PT, LD, ST, EXPR) \
    U_CONTIG(NAME##_c5, WK_TARGET_AVX512, T, CT, PT, LD, ST, EXPR)
#define UROW_CALL_0(NAME, d, s, n, a, b) NAME##_c(d, s, n, a, b)
#define UROW_CALL_1(NAME, d, s, n, a, b) \
    (wk_ew_have_avx512() ? NAME##_c5 : wk_ew_have_avx2() ? NAME##_c2 : NAME##_c)(d, s, n, a, b)

/* hotness of an (op, dtype): HOT only when both are */
#define HOTNESS_HOT_HOT WK_HOTHOT
#define HOTNESS_HOT_COLD 0
#define HOTNESS_COLD_HOT 0
#define HOTNESS_COLD_COLD 0
/* one more expansion step, so that H (a HOTNESS_ name) becomes 0 or 1 */
#define DEF_UROW_H(NAME, H, ...) DEF_UROW_X(NAME, H, __VA_ARGS__)
#define DEF_UROW_X(NAME, H, T, CT, PT, LD, ST, EXPR) DEF_UROW(NAME, H, T, CT, PT, LD, ST, EXPR)

#define INST_FU(DN, T, CT, FS, LD, ST, DH, OP)                                  \
    DEF_UROW_H(u_##OP##_##DN, HOTNESS_X(UH_##OP, DH), T, CT, CT, LD, ST, UF_##OP(x, FS, a, b))
#define HOTNESS_X(OPH, DH) HOTNESS_Y(OPH, DH)
#define HOTNESS_Y(OPH, DH) HOTNESS_##OPH##_##DH
#define UOP_X_(N) FLOAT_DTYPES(INST_FU, N)
WK_OP_LIST(UOP_OF_)
#undef UOP_X_

#define INST_IU(OP, DN, T, UT, ISNEG, F2T)                                      \
    DEF_UROW_H(u_##OP##_##DN, 0, T, T, double, LD_ID, ST_ID, UI_##OP(x, T, UT, ISNEG, F2T, a, b))
#define INST_IU_DT(DN, T, UT, ISNEG, F2T, unused) INT_UOPS(INST_IU, DN, T, UT, ISNEG, F2T)
INT_DTYPES(INST_IU_DT, 0)

/* Row functions by [op][dtype]: float ones from the op list, integer ones
 * from INT_UOPS; NULL: not for this dtype. */
#define DTID_bf16 WK_BF16
#define DTID_f16 WK_F16
#define DTID_f32 WK_F32
#define DTID_f64 WK_F64
#define DTID_f8 WK_F8E4M3
#define DTID_u8 WK_U8
#define DTID_u32 WK_U32
#define DTID_i16 WK_I16
#define DTID_i32 WK_I32
#define DTID_i64 WK_I64
#define FU_CELL(DN, T, CT, FS, LD, ST, DH, OP) [DTID_##DN] = u_##OP##_##DN,
#define UOP_X_(N) [WK_OP_##N] = { FLOAT_DTYPES(FU_CELL, N) },
static const wk_ew_row_fn unary_float_fns[WK_OP_COUNT][WK_DTYPE_COUNT] = { WK_OP_LIST(UOP_OF_) };
#undef UOP_X_
#define IU_CELL(OP, DN, T, UT, ISNEG, F2T) [WK_OP_##OP][DTID_##DN] = u_##OP##_##DN,
#define IU_CELLS_DT(DN, T, UT, ISNEG, F2T, unused) INT_UOPS(IU_CELL, DN, T, UT, ISNEG, F2T)
static const wk_ew_row_fn unary_int_fns[WK_OP_COUNT][WK_DTYPE_COUNT] = { INT_DTYPES(IU_CELLS_DT, 0) };

static wk_ew_row_fn unary_fn(wk_op op, wk_dtype dt)
{
    if ((unsigned)op >= WK_OP_COUNT || (unsigned)dt >= WK_DTYPE_COUNT) return NULL;
    return wk_dt_is_float(dt) ? unary_float_fns[op][dt] : unary_int_fns[op][dt];
}

static bool dtype_ok(wk_dtype dt) { return (unsigned)dt < WK_DENSE_DTYPE_COUNT; }

wk_status wk_cpu_unary(void *ctx, wk_op op, const wk_view *dst, const wk_view *src, double p0, double p1)
{
    (void)ctx;
    if (dst->dtype != src->dtype)
        return WK_CPU_ERROR(WK_ERR_DTYPE, "%s: dst dtype %s differs from src dtype %s", wk_op_name(op),
                            wk_dtype_name(dst->dtype), wk_dtype_name(src->dtype));
    wk_ew_row_fn fn = unary_fn(op, dst->dtype);
    if (!fn)
        return WK_CPU_ERROR(WK_ERR_DTYPE, "%s is not supported for dtype %s", wk_op_name(op),
                            wk_dtype_name(dst->dtype));
    const uparams prm = { p0, p1 };
    const wk_view *views[2] = { dst, src };
    wk_ew_run(2, views, fn, &prm);
#ifdef WK_FAULT_INJECT
    /* test builds only: perturb one op so the test runner must notice */
    if (op == (WK_FAULT_INJECT)) {
        const uparams bad = { 1.01, 0.01 };
        const wk_view *self[2] = { dst, dst };
        wk_ew_run(2, self, unary_fn(WK_OP_AFFINE, dst->dtype), &bad);
    }
#endif
    return WK_OK;
}

/* ======================================================================
 * Binary and comparison family
 * ==================================================================== */

#define N_BINARY (WK_OP_GE - WK_OP_ADD + 1)
_Static_assert(N_BINARY == 12, "binary tables list 12 ops (add .. ge)");
_Static_assert(WK_OP_EQ == WK_OP_MAXIMUM + 1, "cmp ops follow the binary ops");

/* float ops on x, y (compute type); minimum/maximum propagate NaN */
#define BF_ADD(x, y) ((x) + (y))
#define BF_SUB(x, y) ((x) - (y))
#define BF_MUL(x, y) ((x) * (y))
#define BF_DIV(x, y) ((x) / (y))
#define BF_MINIMUM(x, y) ((x) != (x) ? (x) : (x) < (y) ? (x) : (y))
#define BF_MAXIMUM(x, y) ((x) != (x) ? (x) : (x) > (y) ? (x) : (y))

/* integer ops: wrap; division truncates, x / 0 = 0, MIN / -1 wraps */
#define BI_ADD(x, y, T, UT, SG) ((T)((UT)(x) + (UT)(y)))
#define BI_SUB(x, y, T, UT, SG) ((T)((UT)(x) - (UT)(y)))
#define BI_MUL(x, y, T, UT, SG) ((T)((UT)(x) * (UT)(y)))
#define BI_DIV(x, y, T, UT, SG) DIV_##SG(x, y, T, UT)
#define BI_MINIMUM(x, y, T, UT, SG) ((x) < (y) ? (x) : (y))
#define BI_MAXIMUM(x, y, T, UT, SG) ((x) > (y) ? (x) : (y))
#define DIV_ISNEG_S(x, y, T, UT) ((y) == 0 ? (T)0 : (y) == -1 ? (T)((UT)0 - (UT)(x)) : (T)((x) / (y)))
#define DIV_ISNEG_U(x, y, T, UT) ((y) == 0 ? (T)0 : (T)((x) / (y)))

/* comparisons, any type */
#define CMP_EQ(x, y) ((x) == (y))
#define CMP_NE(x, y) ((x) != (y))
#define CMP_LT(x, y) ((x) < (y))
#define CMP_LE(x, y) ((x) <= (y))
#define CMP_GT(x, y) ((x) > (y))
#define CMP_GE(x, y) ((x) >= (y))

#define B_CONTIG(NAME, ATTR, T, TD, CT, LD, ST, EXPR)                           \
    ATTR static void NAME(TD *d, const T *pa, const T *pb, int64_t n)           \
    {                                                                           \
        for (int64_t i = 0; i < n; i++) {                                       \
            CT x = LD(pa[i]), y = LD(pb[i]);                                    \
            d[i] = ST(EXPR);                                                    \
        }                                                                       \
    }
#define BROW_AVX2_0(NAME, T, TD, CT, LD, ST, EXPR)
#define BROW_AVX2_1(NAME, T, TD, CT, LD, ST, EXPR) B_CONTIG(NAME##_c2, WK_TARGET_AVX2, T, TD, CT, LD, ST, EXPR)
#define BROW_CALL_0(NAME, d, pa, pb, n) NAME##_c(d, pa, pb, n)
#define BROW_CALL_1(NAME, d, pa, pb, n) (wk_ew_have_avx2() ? NAME##_c2 : NAME##_c)(d, pa, pb, n)

/* A row function: dst (TD) = ST(EXPR of x = LD(a), y = LD(b)), with loops
 * for all-contiguous, b broadcast, a broadcast, and any strides. */
#define DEF_BROW(NAME, HOT, T, TD, CT, LD, ST, EXPR)                            \
    B_CONTIG(NAME##_c, , T, TD, CT, LD, ST, EXPR)                               \
    BROW_AVX2_##HOT(NAME, T, TD, CT, LD, ST, EXPR)                              \
    static void NAME(char *const *p, const int64_t *st, int64_t n, const void *prm) \
    {                                                                           \
        (void)prm;                                                              \
        TD *d = (TD *)p[0];                                                     \
        const T *pa = (const T *)p[1], *pb = (const T *)p[2];                   \
        const int64_t ds = st[0], as = st[1], bs = st[2];                       \
        if (ds == 1 && as == 1 && bs == 1) {                                    \
            BROW_CALL_##HOT(NAME, d, pa, pb, n);                                \
        } else if (ds == 1 && as == 1 && bs == 0) {                             \
            const CT y = LD(pb[0]);                                             \
            for (int64_t i = 0; i < n; i++) {                                   \
                CT x = LD(pa[i]);                                               \
                d[i] = ST(EXPR);                                                \
            }                                                                   \
        } else if (ds == 1 && as == 0 && bs == 1) {                             \
            const CT x = LD(pa[0]);                                             \
            for (int64_t i = 0; i < n; i++) {                                   \
                CT y = LD(pb[i]);                                               \
                d[i] = ST(EXPR);                                                \
            }                                                                   \
        } else {                                                                \
            for (int64_t i = 0; i < n; i++) {                                   \
                CT x = LD(pa[i * as]), y = LD(pb[i * bs]);                      \
                d[i * ds] = ST(EXPR);                                           \
            }                                                                   \
        }                                                                       \
    }
#define DEF_BROW_H(NAME, H, ...) DEF_BROW_X(NAME, H, __VA_ARGS__)
#define DEF_BROW_X(NAME, H, T, TD, CT, LD, ST, EXPR) DEF_BROW(NAME, H, T, TD, CT, LD, ST, EXPR)

#define FLOAT_BOPS(X, ...)                                                      \
    X(ADD, HOT, __VA_ARGS__) X(SUB, HOT, __VA_ARGS__) X(MUL, HOT, __VA_ARGS__)  \
    X(DIV, HOT, __VA_ARGS__) X(MINIMUM, COLD, __VA_ARGS__) X(MAXIMUM, COLD, __VA_ARGS__)
#define INT_BOPS(X, ...)                                                        \
    X(ADD, __VA_ARGS__) X(SUB, __VA_ARGS__) X(MUL, __VA_ARGS__)                 \
    X(DIV, __VA_ARGS__) X(MINIMUM, __VA_ARGS__) X(MAXIMUM, __VA_ARGS__)
#define CMP_OPS(X, ...)                                                         \
    X(EQ, __VA_ARGS__) X(NE, __VA_ARGS__) X(LT, __VA_ARGS__)                    \
    X(LE, __VA_ARGS__) X(GT, __VA_ARGS__) X(GE, __VA_ARGS__)

#define CMP_ST(v) ((uint8_t)(v))

#define INST_FB(OP, OPH, DN, T, CT, LD, ST, DH)                                 \
    DEF_BROW_H(b_##OP##_##DN, HOTNESS_##OPH##_##DH, T, T, CT, LD, ST, BF_##OP(x, y))
#define INST_FC(OP, DN, T, CT, LD)                                              \
    DEF_BROW_H(b_##OP##_##DN, 0, T, uint8_t, CT, LD, CMP_ST, CMP_##OP(x, y))
#define INST_FB_DT(DN, T, CT, FS, LD, ST, DH, unused)                           \
    FLOAT_BOPS(INST_FB, DN, T, CT, LD, ST, DH)                                  \
    CMP_OPS(INST_FC, DN, T, CT, LD)
FLOAT_DTYPES(INST_FB_DT, 0)

#define INST_IB(OP, DN, T, UT, SG)                                              \
    DEF_BROW_H(b_##OP##_##DN, 0, T, T, T, LD_ID, ST_ID, BI_##OP(x, y, T, UT, SG))
#define INST_IC(OP, DN, T)                                                      \
    DEF_BROW_H(b_##OP##_##DN, 0, T, uint8_t, T, LD_ID, CMP_ST, CMP_##OP(x, y))
#define INST_IB_DT(DN, T, UT, ISNEG, F2T, unused)                               \
    INT_BOPS(INST_IB, DN, T, UT, ISNEG)                                         \
    CMP_OPS(INST_IC, DN, T)
INT_DTYPES(INST_IB_DT, 0)

#define TBL_B(OP, DN) [WK_OP_##OP - WK_OP_ADD] = b_##OP##_##DN,
#define TBL_FB(OP, OPH, DN) TBL_B(OP, DN)
#define DEF_FB_TABLE(DN, T, CT, FS, LD, ST, DH, unused) \
    static const wk_ew_row_fn binary_##DN[N_BINARY] = { FLOAT_BOPS(TBL_FB, DN) CMP_OPS(TBL_B, DN) };
#define DEF_IB_TABLE(DN, T, UT, ISNEG, F2T, unused) \
    static const wk_ew_row_fn binary_##DN[N_BINARY] = { INT_BOPS(TBL_B, DN) CMP_OPS(TBL_B, DN) };
FLOAT_DTYPES(DEF_FB_TABLE, 0)
INT_DTYPES(DEF_IB_TABLE, 0)

/* silu_mul (the SwiGLU gate): silu(a) * b on the NN float dtypes, with
 * the binary ops' broadcast and strided loops; f16/bf16 in f32 */
#define NN_FLOAT_DTYPES(X, ...)                                                 \
    X(bf16, uint16_t, float, f, LD_BF16, ST_BF16, COLD, __VA_ARGS__)           \
    X(f16, uint16_t, float, f, LD_F16, ST_F16, COLD, __VA_ARGS__)              \
    X(f32, float, float, f, LD_ID, ST_ID, HOT, __VA_ARGS__)                    \
    X(f64, double, double, , LD_ID, ST_ID, COLD, __VA_ARGS__)
#define INST_SILU_MUL(DN, T, CT, FS, LD, ST, DH, unused)                       \
    DEF_BROW_H(b_SILU_MUL_##DN, HOTNESS_HOT_##DH, T, T, CT, LD, ST, op_silu##FS(x) * (y))
NN_FLOAT_DTYPES(INST_SILU_MUL, 0)
#define SILU_MUL_CELL(DN, T, CT, FS, LD, ST, DH, unused) [DTID_##DN] = b_SILU_MUL_##DN,
static const wk_ew_row_fn silu_mul_table[WK_DTYPE_COUNT] = { NN_FLOAT_DTYPES(SILU_MUL_CELL, 0) };

static const wk_ew_row_fn *const binary_table[WK_DTYPE_COUNT] = {
    [WK_U8] = binary_u8, [WK_U32] = binary_u32, [WK_I16] = binary_i16, [WK_I32] = binary_i32,
    [WK_I64] = binary_i64, [WK_BF16] = binary_bf16, [WK_F16] = binary_f16, [WK_F32] = binary_f32,
    [WK_F64] = binary_f64, [WK_F8E4M3] = binary_f8,
};

wk_status wk_cpu_binary(void *ctx, wk_op op, const wk_view *dst, const wk_view *a, const wk_view *b)
{
    (void)ctx;
    if (op == WK_OP_SILU_MUL) {
        const wk_dtype dt = a->dtype;
        if ((unsigned)dt >= WK_DTYPE_COUNT || !silu_mul_table[dt] || b->dtype != dt || dst->dtype != dt)
            return WK_CPU_ERROR(WK_ERR_DTYPE, "silu_mul on %s and %s into %s (one dtype of f16, bf16, f32, f64)",
                                wk_dtype_name(dt), wk_dtype_name(b->dtype), wk_dtype_name(dst->dtype));
        const wk_view *views[3] = { dst, a, b };
        wk_ew_run(3, views, silu_mul_table[dt], NULL);
        return WK_OK;
    }
    if (op < WK_OP_ADD || op > WK_OP_GE)
        return WK_CPU_ERROR(WK_ERR_UNSUPPORTED, "op %s is not a binary or comparison op", wk_op_name(op));
    const wk_dtype dt = a->dtype;
    const wk_dtype want = op >= WK_OP_EQ ? WK_U8 : dt;
    if (!dtype_ok(dt) || b->dtype != dt || dst->dtype != want)
        return WK_CPU_ERROR(WK_ERR_DTYPE, "%s on %s and %s into %s (operands must share a dtype; the result is %s)",
                            wk_op_name(op), wk_dtype_name(dt), wk_dtype_name(b->dtype),
                            wk_dtype_name(dst->dtype), op >= WK_OP_EQ ? "u8" : "theirs");
    const wk_view *views[3] = { dst, a, b };
    wk_ew_run(3, views, binary_table[dt][op - WK_OP_ADD], NULL);
    return WK_OK;
}

/* ======================================================================
 * where_cond: by condition type and element size (bits copied)
 * ==================================================================== */

#define DEF_WHERE(NAME, TC, T)                                                  \
    static void NAME(char *const *p, const int64_t *st, int64_t n, const void *prm) \
    {                                                                           \
        (void)prm;                                                              \
        T *d = (T *)p[0];                                                       \
        const TC *c = (const TC *)p[1];                                         \
        const T *pa = (const T *)p[2], *pb = (const T *)p[3];                   \
        if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 1) {             \
            for (int64_t i = 0; i < n; i++) d[i] = c[i] != 0 ? pa[i] : pb[i];   \
        } else {                                                                \
            const int64_t ds = st[0], cs = st[1], as = st[2], bs = st[3];       \
            for (int64_t i = 0; i < n; i++)                                     \
                d[i * ds] = c[i * cs] != 0 ? pa[i * as] : pb[i * bs];           \
        }                                                                       \
    }
#define WHERE_SIZES(X, CN, TC) X(CN, TC, 1, uint8_t) X(CN, TC, 2, uint16_t) X(CN, TC, 4, uint32_t) X(CN, TC, 8, uint64_t)
#define INST_WHERE(CN, TC, SZ, T) DEF_WHERE(where_##CN##_##SZ, TC, T)
WHERE_SIZES(INST_WHERE, u8, uint8_t)
WHERE_SIZES(INST_WHERE, u32, uint32_t)
WHERE_SIZES(INST_WHERE, i64, int64_t)

static wk_ew_row_fn where_fn(wk_dtype cond, size_t esz)
{
    static const wk_ew_row_fn tbl[3][4] = {
        { where_u8_1, where_u8_2, where_u8_4, where_u8_8 },
        { where_u32_1, where_u32_2, where_u32_4, where_u32_8 },
        { where_i64_1, where_i64_2, where_i64_4, where_i64_8 },
    };
    int c = cond == WK_U8 ? 0 : cond == WK_U32 ? 1 : 2;
    int s = esz == 1 ? 0 : esz == 2 ? 1 : esz == 4 ? 2 : 3;
    return tbl[c][s];
}

wk_status wk_cpu_where_cond(void *ctx, const wk_view *dst, const wk_view *cond, const wk_view *a, const wk_view *b)
{
    (void)ctx;
    if (!dtype_ok(cond->dtype) || (cond->dtype != WK_U8 && cond->dtype != WK_U32 && cond->dtype != WK_I64))
        return WK_CPU_ERROR(WK_ERR_DTYPE, "where_cond: the condition must be u8, u32 or i64, not %s",
                            wk_dtype_name(cond->dtype));
    if (!dtype_ok(dst->dtype) || a->dtype != dst->dtype || b->dtype != dst->dtype)
        return WK_CPU_ERROR(WK_ERR_DTYPE, "where_cond: a (%s), b (%s) and dst (%s) must share a dtype",
                            wk_dtype_name(a->dtype), wk_dtype_name(b->dtype), wk_dtype_name(dst->dtype));
    const wk_view *views[4] = { dst, cond, a, b };
    wk_ew_run(4, views, where_fn(cond->dtype, wk_cpu_dtype_size(dst->dtype)), NULL);
    return WK_OK;
}
