/* test_qdot.c — the cpu's integer path of wk_qmatmul (src/cpu/cpu_qdot.c,
 * WICK_CPU_QDOT=1: x quantized to q8 blocks, integer dot products).
 *
 * The reference is written here from ggml's definitions, not from the
 * library: x is quantized as ggml's quantize_row_q8_0_ref / _q8_1_ref /
 * _q8_K_ref do (q8_0 for q4_0, q5_0, q8_0, iq4_nl; q8_1 for q4_1, q5_1;
 * q8_K for the K types and iq4_xs; q8_1's s, which ggml rounds to f16 and which overflows
 * there for blocks beyond about 2000, is d * sum in f32 in wick), each weight block is decoded here to its integer values,
 * integer sub-block scales and mins and f16 factors (element by element
 * from the layouts of docs/quantization.md; the decoders are checked
 * against wk_dequantize), the integer sums are taken in int64 and the
 * factors multiplied in double. Bounds:
 *   integer path   |y - ref| <= (blocks + 4) 2^-24 sum_b |d_w d_a|
 *                  sum |sc q_w q_a| (+ the min terms; + the result's
 *                  rounding for f16/bf16): only the float factors and
 *                  the f32 sums of integer partial sums may round (the
 *                  AVX2 kernel keeps 8 lanes of partial sums per block,
 *                  as ggml's); that bound is below 0.02 |d_w d_a|, so
 *                  one quantum off anywhere would be outside it.
 *   against f32    |y_int - y_f32| <= sum |w| |x - xq| (+ both paths'
 *                  float bounds), xq the quantized x the
 *                  reference made; and on normal data the relative RMS
 *                  difference is below QDOT_RMS_BOUND.
 * Every set of kernels is checked: WICK_CPU_QDOT=1 (the AVX-512 VNNI
 * kernels where the CPU has them and the type has one, else AVX2),
 * WICK_CPU_QDOT=avx2 (AVX2 where the CPU has it) and
 * WICK_CPU_QDOT=portable (the C kernels). Shapes: k one block, n = 1,
 * 7, 4097, m = 1 .. 37 (both task sizes); x transposed, narrowed, f16 and
 * bf16; weights of random bytes (every bit pattern of the quants and
 * scales, f16 factors from 1e-4 to 1e3, zero blocks) and quantized normal
 * data; x with blocks from 1e-6 to 1e4 and zero blocks.
 *
 * Case names: qdot/<dtype>/<what>.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "test.h"
#include "wick_ext.h"

#define QDOT_RMS_BOUND 2e-2

typedef struct qtype {
    wk_dtype dt;
    const char *name;
    int B, BB;
    int act;            /* 0: q8_0, 1: q8_1, 2: q8_K */
    int f16[2];         /* offsets of the f16 fields (-1: none) */
} qtype;

static const qtype QT[] = {
    { WK_Q4_0, "q4_0", 32, 18, 0, { 0, -1 } },     { WK_Q4_1, "q4_1", 32, 20, 1, { 0, 2 } },
    { WK_Q5_0, "q5_0", 32, 22, 0, { 0, -1 } },     { WK_Q5_1, "q5_1", 32, 24, 1, { 0, 2 } },
    { WK_Q8_0, "q8_0", 32, 34, 0, { 0, -1 } },     { WK_Q2_K, "q2_k", 256, 84, 2, { 80, 82 } },
    { WK_Q3_K, "q3_k", 256, 110, 2, { 108, -1 } }, { WK_Q4_K, "q4_k", 256, 144, 2, { 0, 2 } },
    { WK_Q5_K, "q5_k", 256, 176, 2, { 0, 2 } },    { WK_Q6_K, "q6_k", 256, 210, 2, { 208, -1 } },
    { WK_IQ4_NL, "iq4_nl", 32, 18, 0, { 0, -1 } }, { WK_IQ4_XS, "iq4_xs", 256, 136, 2, { 0, -1 } },
};

/* the values of the 16 codes of iq4_nl and iq4_xs (ggml's kvalues_iq4nl) */
static const int IQ4_VALUES[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };
#define NQT ((int)(sizeof QT / sizeof QT[0]))

/* ---- f16 ------------------------------------------------------------------- */

static double h2d(const uint8_t *p)
{
    const unsigned h = (unsigned)p[0] | (unsigned)p[1] << 8;
    const int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return h & 0x8000 ? -v : v;
}

/* f32 -> f16 bits, round to nearest even (normal and subnormal range) */
static uint16_t f2h(float f)
{
    if (f == 0) return signbit(f) ? 0x8000 : 0;
    const unsigned s = f < 0 ? 0x8000u : 0;
    double a = fabs((double)f);
    if (a >= 65520.0) return (uint16_t)(s | 0x7C00);
    int e;
    frexp(a, &e);                   /* a = f * 2^e, f in [0.5, 1) */
    int ex = e - 1;                 /* a in [2^ex, 2^(ex+1)) */
    if (ex < -14) ex = -14;         /* subnormal: quantum 2^-24 */
    double q = nearbyint(ldexp(a, 10 - ex));   /* ties to even */
    if (q >= 2048) {
        q /= 2;
        ex++;
    }
    if (q < 1024) return (uint16_t)(s | (unsigned)q);   /* subnormal */
    return (uint16_t)(s | (unsigned)(ex + 15) << 10 | ((unsigned)q - 1024));
}
static double h16(float f)
{
    const uint16_t h = f2h(f);
    const uint8_t b[2] = { (uint8_t)h, (uint8_t)(h >> 8) };
    return h2d(b);
}

/* ---- weight blocks, element by element --------------------------------------- */

/* one block: value e = d * sc[e/16] * q[e] - dm * mn[e/16] (256-blocks),
 * d * q[e] + dm (32-blocks) */
typedef struct wblk {
    int q[256], sc[16], mn[16];
    double d, dm;
} wblk;

static int s8(uint8_t b) { return b < 128 ? b : b - 256; }

/* q4_K / q5_K: the 6-bit scale and min of sub-block j, from ggml's
 * get_scale_min_k4 */
static void k4_scale(const uint8_t *s, int j, int *sc, int *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

static void decode(const qtype *t, const uint8_t *b, wblk *o)
{
    memset(o, 0, sizeof *o);
    for (int e = 0; e < t->B; e++) {
        const int lo = e < 16, l16 = e % 16;   /* 32-blocks: nibble of byte e % 16 */
        switch (t->dt) {
        case WK_Q4_0: o->q[e] = (lo ? b[2 + l16] & 15 : b[2 + l16] >> 4) - 8; break;
        case WK_Q4_1: o->q[e] = lo ? b[4 + l16] & 15 : b[4 + l16] >> 4; break;
        case WK_Q5_0:
        case WK_Q5_1: {
            const int off = t->dt == WK_Q5_0 ? 2 : 4;
            const uint32_t qh = (uint32_t)b[off] | (uint32_t)b[off + 1] << 8 | (uint32_t)b[off + 2] << 16 |
                                (uint32_t)b[off + 3] << 24;
            const int nib = lo ? b[off + 4 + l16] & 15 : b[off + 4 + l16] >> 4;
            o->q[e] = (nib | (int)((qh >> e) & 1) << 4) - (t->dt == WK_Q5_0 ? 16 : 0);
            break;
        }
        case WK_Q8_0: o->q[e] = s8(b[2 + e]); break;
        case WK_IQ4_NL: o->q[e] = IQ4_VALUES[lo ? b[2 + l16] & 15 : b[2 + l16] >> 4]; break;
        case WK_IQ4_XS: {   /* per 32 values 16 bytes: low nibbles the first 16 values, high the next */
            const int r = e % 32, byte = b[8 + 16 * (e / 32) + r % 16];
            o->q[e] = IQ4_VALUES[r < 16 ? byte & 15 : byte >> 4];
            break;
        }
        case WK_Q2_K:
        case WK_Q3_K: {
            const int h = e / 128, j = (e % 128) / 32, l = e % 32;
            const int qs0 = t->dt == WK_Q2_K ? 16 : 32;
            const int v = (b[qs0 + 32 * h + l] >> (2 * j)) & 3;
            o->q[e] = t->dt == WK_Q2_K ? v : v - (((b[l] >> (4 * h + j)) & 1) ? 0 : 4);
            break;
        }
        case WK_Q4_K:
        case WK_Q5_K: {
            const int j = e / 64, r = e % 64, l = r % 32;
            const int qs0 = t->dt == WK_Q4_K ? 16 : 48;
            const int nib = r < 32 ? b[qs0 + 32 * j + l] & 15 : b[qs0 + 32 * j + l] >> 4;
            o->q[e] = t->dt == WK_Q4_K ? nib : nib | ((b[16 + l] >> (2 * j + (r >= 32))) & 1) << 4;
            break;
        }
        case WK_Q6_K: {
            const int h = e / 128, q4 = (e % 128) / 32, l = e % 32;
            const uint8_t ql = b[64 * h + l + 32 * (q4 & 1)], qh = b[128 + 32 * h + l];
            o->q[e] = ((q4 >= 2 ? ql >> 4 : ql & 15) | ((qh >> (2 * q4)) & 3) << 4) - 32;
            break;
        }
        default: break;
        }
    }
    switch (t->dt) {
    case WK_Q4_1:
    case WK_Q5_1: o->dm = h2d(b + 2); /* fall through */
    case WK_Q4_0:
    case WK_Q5_0:
    case WK_IQ4_NL:
    case WK_Q8_0: o->d = h2d(b); break;
    case WK_IQ4_XS: {
        /* scale of 32 values i: 4 low bits in nibble i of bytes 4..7, 2 high
           bits at bits 2i of the u16 at byte 2; minus 32 */
        const unsigned sh = (unsigned)b[2] | (unsigned)b[3] << 8;
        for (int g = 0; g < 16; g++) {
            const int i = g / 2;
            const int low = (b[4 + i / 2] >> (4 * (i % 2))) & 15, high = (int)(sh >> (2 * i)) & 3;
            o->sc[g] = (low | high << 4) - 32;
        }
        o->d = h2d(b);
        break;
    }
    case WK_Q2_K:
        for (int g = 0; g < 16; g++) o->sc[g] = b[g] & 15, o->mn[g] = b[g] >> 4;
        o->d = h2d(b + 80), o->dm = h2d(b + 82);
        break;
    case WK_Q3_K: {
        /* ggml: the 12 bytes as 3 words; scales 0-3 low nibbles of bytes
         * 0-3, 4-7 of 4-7, 8-11 high nibbles of 0-3, 12-15 of 4-7; the
         * two high bits from bytes 8-11, two bits per group of four */
        uint32_t a[3];
        memcpy(a, b + 96, 12);
        for (int g = 0; g < 16; g++) {
            const uint32_t word = a[(g / 4) % 2], sh = 8 * (g % 4) + 4 * (g / 8);
            const int low = (int)((word >> sh) & 15), high = (int)((a[2] >> (8 * (g % 4) + 2 * (g / 4))) & 3);
            o->sc[g] = (low | high << 4) - 32;
        }
        o->d = h2d(b + 108);
        break;
    }
    case WK_Q4_K:
    case WK_Q5_K:
        for (int g = 0; g < 16; g++) k4_scale(b + 4, g / 2, &o->sc[g], &o->mn[g]);
        o->d = h2d(b), o->dm = h2d(b + 2);
        break;
    case WK_Q6_K:
        for (int g = 0; g < 16; g++) o->sc[g] = s8(b[192 + g]);
        o->d = h2d(b + 208);
        break;
    default: break;
    }
}

static double wvalue(const qtype *t, const wblk *o, int e)
{
    if (t->B == 32) return o->d * o->q[e] + o->dm;
    return o->d * o->sc[e / 16] * o->q[e] - o->dm * o->mn[e / 16];
}

/* ---- x quantized as ggml does ------------------------------------------------- */

typedef struct xq {
    int *q;             /* [k]                                    */
    double *d, *s;      /* [k / B]: the factor, q8_1's s          */
    int *bs;            /* [k / 16]: q8_K's sums of 16            */
} xq;

static void quant_x(const qtype *t, const float *x, int64_t k, xq *o)
{
    const int B = t->act == 2 ? 256 : 32;
    for (int64_t b = 0; b < k / B; b++) {
        const float *v = x + b * B;
        int *q = o->q + b * B;
        if (t->act < 2) {
            float amax = 0;
            for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(v[i]));
            const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
            int sum = 0;
            for (int i = 0; i < 32; i++) {
                const float p = v[i] * id;
                /* as cpu_quant.c: out of int32's range (inf, NaN: a scale
                   that underflowed) is INT32_MIN, whose low byte, 0, is kept */
                const float rp = roundf(p);
                q[i] = (int8_t)(rp > -2147483648.0f && rp < 2147483648.0f ? (int32_t)rp : INT32_MIN);
                sum += q[i];
            }
            o->d[b] = h16(d);
            o->s[b] = o->d[b] * sum;   /* wick: in f32 from d (exact), not ggml's f16 field */
        } else {
            float amax = 0, max = 0;
            for (int i = 0; i < 256; i++)
                if (fabsf(v[i]) > amax) amax = fabsf(v[i]), max = v[i];
            if (amax == 0) {
                for (int i = 0; i < 256; i++) q[i] = 0;
                o->d[b] = 0;
            } else {
                const float is = -127.0f / max;
                for (int i = 0; i < 256; i++) {
                    const float p = is * v[i];
                    /* ggml's nearest_int (ties to even through the float's
                       bits; defined for inf and NaN too: a scale that
                       overflowed), kept as its int8 */
                    const float fv = p + 12582912.0f;
                    int32_t bits;
                    memcpy(&bits, &fv, 4);
                    const int r = (bits & 0x007fffff) - 0x00400000;
                    q[i] = (int8_t)(r > 127 ? 127 : r);
                }
                o->d[b] = 1.0f / is;
            }
            for (int g = 0; g < 16; g++) {
                int s = 0;
                for (int i = 0; i < 16; i++) s += q[16 * g + i];
                o->bs[b * 16 + g] = s;
            }
        }
    }
}

/* ---- the reference -------------------------------------------------------------- */

typedef struct refrow {
    double y;       /* ggml's value in exact arithmetic              */
    double terms;   /* sum of |factor| |integer product| over every  */
                    /* product (what float rounding is relative to)  */
    double qerr;    /* sum |w| |x - xq| (+ q8_1's s rounding)        */
    double f32sum;  /* sum |w x|                                     */
} refrow;

static refrow ref_dot(const qtype *t, const wblk *w, const xq *a, const float *x, int64_t k)
{
    refrow r = { 0, 0, 0, 0 };
    const int64_t nb = k / t->B;
    for (int64_t b = 0; b < nb; b++) {
        const wblk *o = &w[b];
        const int *q = a->q + b * t->B;
        double term, mterm = 0;
        if (t->B == 32) {
            int64_t s = 0, sq = 0, sa = 0;
            for (int e = 0; e < 32; e++) s += (int64_t)o->q[e] * q[e], sq += q[e], sa += llabs((int64_t)o->q[e] * q[e]);
            term = o->d * a->d[b] * (double)s;
            r.terms += fabs(o->d * a->d[b]) * (double)sa;
            if (t->act == 1) {
                mterm = o->dm * a->s[b];
                r.qerr += fabs(o->dm) * fabs(a->s[b] - a->d[b] * (double)sq);
            }
        } else {
            int64_t is = 0, ms = 0, isa = 0, msa = 0;
            for (int g = 0; g < 16; g++) {
                int64_t s = 0, sa = 0;
                for (int e = 16 * g; e < 16 * g + 16; e++) s += (int64_t)o->q[e] * q[e], sa += llabs((int64_t)o->q[e] * q[e]);
                is += o->sc[g] * s;
                isa += llabs((int64_t)o->sc[g]) * sa;
                ms += (int64_t)o->mn[g] * a->bs[b * 16 + g];
                msa += llabs((int64_t)o->mn[g] * a->bs[b * 16 + g]);
            }
            term = o->d * a->d[b] * (double)is;
            mterm = -o->dm * a->d[b] * (double)ms;
            r.terms += fabs(o->d * a->d[b]) * (double)isa + fabs(o->dm * a->d[b]) * (double)msa;
        }
        if (t->act == 1) r.terms += fabs(mterm);
        r.y += term + mterm;
        for (int e = 0; e < t->B; e++) {
            const double wv = wvalue(t, o, e), xv = x[b * t->B + e];
            r.qerr += fabs(wv) * fabs(xv - q[e] * a->d[b]);
            r.f32sum += fabs(wv * xv);
        }
    }
    return r;
}

/* ---- running the op in a mode --------------------------------------------------- */

static wk_tensor *qmm_mode(const wk_tensor *x, const wk_tensor *w, const char *mode)
{
    const char *old = getenv("WICK_CPU_QDOT");
    char *keep = old ? strdup(old) : NULL;
    if (mode) setenv("WICK_CPU_QDOT", mode, 1);
    else unsetenv("WICK_CPU_QDOT");
    wk_env_refresh();   /* the knob is read once, then on a refresh */
    wk_tensor *y = T_NEED(wk_qmatmul(x, w));
    if (keep) setenv("WICK_CPU_QDOT", keep, 1);
    else unsetenv("WICK_CPU_QDOT");
    wk_env_refresh();
    free(keep);
    return y;
}

static double *values(const wk_tensor *t)
{
    bool ok;
    t_arr a = t_read(t, &ok);
    if (!ok) return NULL;
    double *v = t_mem((size_t)a.n * sizeof(double) + 8);
    for (int64_t i = 0; i < a.n; i++) v[i] = t_get(a.dt, a.p, i);
    return v;
}

/* checks y = x . w^T on both kernels against the reference, and against
 * the f32 path; x the logical [m, k] values (as x holds them), wb the
 * weight's bytes [n, k / B blocks] */
static void check(const qtype *t, const char *what, const wk_tensor *x, const float *xh, int64_t m, const uint8_t *wb,
                  const wk_tensor *w, int64_t n, int64_t k, double *rms_out)
{
    const int64_t nb = k / t->B;
    wblk *wd = t_mem((size_t)(n * nb) * sizeof *wd);
    for (int64_t i = 0; i < n * nb; i++) decode(t, wb + i * t->BB, &wd[i]);
    /* the decoders against wk_dequantize (bit-exact to ggml's f32 values) */
    wk_tensor *wf = T_NEED((wk_dequantize(w, WK_F32)));
    double *wfv = wf ? values(wf) : NULL;
    if (!wfv) return;
    int bad = 0;
    for (int64_t r = 0; r < n; r++)
        for (int64_t c = 0; c < k; c++) {
            const wblk *o = &wd[r * nb + c / t->B];
            const int e = (int)(c % t->B);
            const double mine = wvalue(t, o, e), got = wfv[r * k + c];
            const double tol = 4 * 0x1p-24 * (t->B == 32 ? fabs(o->d * o->q[e]) + fabs(o->dm)
                                                          : fabs(o->d * o->sc[e / 16] * o->q[e]) + fabs(o->dm * o->mn[e / 16])) +
                               1e-45;
            if (!(fabs(mine - got) <= tol) && bad++ < 3)
                t_fail("%s: the test's decoder: w[%lld][%lld] = %.9g, wk_dequantize %.9g", what, (long long)r, (long long)c,
                       mine, got);
        }
    if (bad) return;

    const wk_dtype ydt = wk_tensor_dtype(x);
    const double out_u = ydt == WK_F32 ? 0 : ydt == WK_F16 ? 0x1p-11 : 0x1p-8;
    xq a = { t_mem((size_t)k * sizeof(int)), t_mem((size_t)(k / 32 + 1) * sizeof(double)),
             t_mem((size_t)(k / 32 + 1) * sizeof(double)), t_mem((size_t)(k / 16 + 1) * sizeof(int)) };
    refrow *ref = t_mem((size_t)(m * n) * sizeof *ref);
    for (int64_t i = 0; i < m; i++) {
        quant_x(t, xh + i * k, k, &a);
        for (int64_t j = 0; j < n; j++) ref[i * n + j] = ref_dot(t, wd + j * nb, &a, xh + i * k, k);
    }
    wk_tensor *yf = (qmm_mode(x, w, "0"));   /* the f32 path (the default is the integer one) */
    double *yfv = yf ? values(yf) : NULL;
    static const char *const modes[3] = { "1", "avx2", "portable" };
    for (int md = 0; md < 3; md++) {
        wk_tensor *y = (qmm_mode(x, w, modes[md]));
        double *yv = y ? values(y) : NULL;
        if (!yv || !yfv) return;
        bad = 0;
        int badf = 0;
        double e2 = 0, r2 = 0;
        for (int64_t i = 0; i < m * n; i++) {
            const refrow *r = &ref[i];
            const double tol = (double)(nb + 4) * 0x1p-24 * r->terms + out_u * fabs(r->y) + 1e-37;
            if (!(fabs(yv[i] - r->y) <= tol) && bad++ < 3)
                t_fail("%s (WICK_CPU_QDOT=%s): y[%lld][%lld] = %.9g, reference %.9g (bound %.3g)", what, modes[md],
                       (long long)(i / n), (long long)(i % n), yv[i], r->y, tol);
            const double tolf = r->qerr + tol + ((double)k / 8 + 4) * 0x1p-24 * r->f32sum + out_u * fabs(yfv[i]) + 1e-37;
            if (!(fabs(yv[i] - yfv[i]) <= tolf) && badf++ < 3)
                t_fail("%s (WICK_CPU_QDOT=%s): y[%lld][%lld] = %.9g, the f32 path %.9g (bound %.3g)", what, modes[md],
                       (long long)(i / n), (long long)(i % n), yv[i], yfv[i], tolf);
            e2 += (yv[i] - yfv[i]) * (yv[i] - yfv[i]);
            r2 += yfv[i] * yfv[i];
        }
        if (bad > 3) t_fail("%s (WICK_CPU_QDOT=%s): %d values out of the reference's bound", what, modes[md], bad);
        if (badf > 3) t_fail("%s (WICK_CPU_QDOT=%s): %d values out of the f32 path's bound", what, modes[md], badf);
        if (rms_out && md == 0) *rms_out = r2 > 0 ? sqrt(e2 / r2) : 0;
    }
}

/* ---- inputs ------------------------------------------------------------------------ */

static double normal(void)
{
    const double u1 = t_rng_unit(t_r()), u2 = t_rng_unit(t_r());
    return sqrt(-2 * log(u1 + 1e-300)) * cos(6.283185307179586 * u2);
}

/* n x k/B blocks of random bytes with finite f16 factors of magnitude
 * 10^-4 .. 10^3 (random sign), every eleventh block all zero */
static uint8_t *random_blocks(const qtype *t, int64_t n, int64_t k)
{
    const int64_t nb = n * (k / t->B);
    uint8_t *b = t_mem((size_t)(nb * t->BB));
    for (int64_t i = 0; i < nb; i++) {
        uint8_t *p = b + i * t->BB;
        if (i % 11 == 10) {
            memset(p, 0, (size_t)t->BB);
            continue;
        }
        for (int j = 0; j < t->BB; j++) p[j] = (uint8_t)(t_rng_next(t_r()) >> 56);
        for (int f = 0; f < 2; f++) {
            if (t->f16[f] < 0) continue;
            const float v = (float)(pow(10.0, t_rng_range(t_r(), -4, 3)) * (t_rng_unit(t_r()) < 0.5 ? -1 : 1));
            const uint16_t h = f2h(v);
            p[t->f16[f]] = (uint8_t)h, p[t->f16[f] + 1] = (uint8_t)(h >> 8);
        }
    }
    return b;
}

/* [rows, k] normal values; extreme: block b of each row scaled by
 * 10^(b % 11 - 6) (1e-6 .. 1e4), every seventh block zero */
static float *x_values(int64_t rows, int64_t k, int B, bool extreme)
{
    float *x = t_mem((size_t)(rows * k) * sizeof(float) + 4);
    for (int64_t i = 0; i < rows * k; i++) {
        double s = 1;
        if (extreme) {
            const int64_t b = (i % k) / B + i / k;
            s = b % 7 == 3 ? 0 : pow(10.0, (double)(b % 11) - 6);
        }
        x[i] = (float)(s * normal());
    }
    return x;
}

static wk_tensor *tensor_of(wk_dtype dt, int64_t rows, int64_t cols, const void *p)
{
    return T_NEED((wk_from_host(t_dev(), dt, WK_SHAPE(rows, cols), p)));
}

/* ---- cases ---------------------------------------------------------------------------- */

static void shape_cases(const qtype *t)
{
    if (!t_case("qdot/%s/shapes", t->name)) return;
    t_cover("qmatmul", t->dt);
    static const int64_t shapes[][3] = { { 1, 1, 1 }, { 1, 7, 1 }, { 2, 4097, 1 }, { 3, 7, 2 }, { 9, 33, 3 }, { 37, 19, 2 } };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2] * t->B;
        for (int extreme = 0; extreme < 2; extreme++) {
            uint8_t *wb = random_blocks(t, n, k);
            float *xh = x_values(m, k, t->B, extreme);
            wk_tensor *w = tensor_of(t->dt, n, k, wb), *x = tensor_of(WK_F32, m, k, xh);
            char what[128];
            snprintf(what, sizeof what, "m %lld n %lld k %lld%s", (long long)m, (long long)n, (long long)k,
                     extreme ? ", x from 1e-6 to 1e4 with zero blocks" : "");
            if (w && x) check(t, what, x, xh, m, wb, w, n, k, NULL);
        }
    }
}

static wk_tensor *quantized_normal(const qtype *t, int64_t n, int64_t k, double scale, uint8_t **wb);

static void layout_cases(const qtype *t)
{
    if (!t_case("qdot/%s/layouts", t->name)) return;
    t_cover("qmatmul", t->dt);
    const int64_t m = 5, n = 13, k = 2 * t->B;
    uint8_t *wb = random_blocks(t, n + 4, k);
    wk_tensor *wall = tensor_of(t->dt, n + 4, k, wb);
    wk_tensor *w = wall ? T_NEED((wk_narrow(wall, 0, 2, n))) : NULL;   /* the weight a row view */
    const uint8_t *wbv = wb + 2 * (k / t->B) * t->BB;
    if (!w) return;
    /* x transposed: storage [k, m] */
    float *xs = x_values(k, m, 1, false), *xh = t_mem((size_t)(m * k) * sizeof(float));
    for (int64_t i = 0; i < m; i++)
        for (int64_t c = 0; c < k; c++) xh[i * k + c] = xs[c * m + i];
    wk_tensor *xst = tensor_of(WK_F32, k, m, xs), *xt = xst ? T_NEED((wk_transpose(xst, 0, 1))) : NULL;
    if (xt) check(t, "x transposed", xt, xh, m, wbv, w, n, k, NULL);
    /* x narrowed columns of a wider [m, 3k] */
    float *xw = x_values(m, 3 * k, 1, false), *xn = t_mem((size_t)(m * k) * sizeof(float));
    for (int64_t i = 0; i < m; i++) memcpy(xn + i * k, xw + i * 3 * k + k, (size_t)k * sizeof(float));
    wk_tensor *xwt = tensor_of(WK_F32, m, 3 * k, xw), *xnt = xwt ? T_NEED((wk_narrow(xwt, 1, k, k))) : NULL;
    if (xnt) check(t, "x narrowed", xnt, xn, m, wbv, w, n, k, NULL);
    /* x f16 and bf16 (values as the narrow type holds them), transposed;
       weights of normal values, so that y fits in f16 */
    static const wk_dtype nd[2] = { WK_F16, WK_BF16 };
    uint8_t *wbn = NULL;
    wk_tensor *wn = quantized_normal(t, n, k, 0.1, &wbn);
    for (int o = 0; o < 2 && xst && wn; o++) {
        wk_tensor *xf = T_NEED((wk_to_dtype(xst, nd[o])));
        wk_tensor *xft = xf ? T_NEED((wk_transpose(xf, 0, 1))) : NULL;
        double *v = xf ? values(xf) : NULL;
        if (!xft || !v) continue;
        float *xv = t_mem((size_t)(m * k) * sizeof(float));
        for (int64_t i = 0; i < m; i++)
            for (int64_t c = 0; c < k; c++) xv[i * k + c] = (float)v[c * m + i];
        char what[64];
        snprintf(what, sizeof what, "x %s transposed", wk_dtype_name(nd[o]));
        check(t, what, xft, xv, m, wbn, wn, n, k, NULL);
    }
}

/* n x k weights quantized from normal values times scale; their bytes to *wb */
static wk_tensor *quantized_normal(const qtype *t, int64_t n, int64_t k, double scale, uint8_t **wb)
{
    float *wh = x_values(n, k, t->B, false);
    for (int64_t i = 0; i < n * k; i++) wh[i] *= (float)scale;
    wk_tensor *wf = tensor_of(WK_F32, n, k, wh), *w = wf ? T_NEED(wk_quantize(wf, t->dt)) : NULL;
    if (!w) return NULL;
    *wb = t_mem(wk_tensor_nbytes(w));
    T_OK(wk_to_host(w, *wb, wk_tensor_nbytes(w)));
    return w;
}

/* realistic data: weights quantized from normal values, x normal; the
 * relative RMS difference from the f32 path under QDOT_RMS_BOUND */
static void normal_cases(const qtype *t)
{
    if (!t_case("qdot/%s/normal", t->name)) return;
    t_cover("qmatmul", t->dt);
    const int64_t m = 4, n = 64, k = 1024;
    uint8_t *wb = NULL;
    wk_tensor *w = quantized_normal(t, n, k, 1.0, &wb);
    if (!w) return;
    float *xh = x_values(m, k, t->B, false);
    wk_tensor *x = tensor_of(WK_F32, m, k, xh);
    double rms = 0;
    if (x) check(t, "normal data", x, xh, m, wb, w, n, k, &rms);
    T_CHECK(rms <= QDOT_RMS_BOUND, "normal data: relative RMS difference from the f32 path %.3g (bound %g)", rms,
            QDOT_RMS_BOUND);
    if (getenv("WICK_QDOT_VERBOSE")) printf("  qdot/%s: relative RMS difference from the f32 path %.3g\n", t->name, rms);
}

/* x whose quantization meets ties: blocks whose largest magnitude is 127
 * (q8_0 / q8_1: d = 1; q8_K: max = -127, iscale = 1) and the rest
 * half-integers, where roundf (away from zero) and q8_K's nearest-even
 * rounding differ; plus a non-finite value and a tiny block, which the
 * vector quantizers hand to the reference. A quantum off in one place is
 * outside check()'s bound. */
static void tie_cases(const qtype *t)
{
    if (!t_case("qdot/%s/quantization_ties", t->name)) return;
    const int64_t m = 3, n = 24, k = 512;
    uint8_t *wb = NULL;
    wk_tensor *w = quantized_normal(t, n, k, 1.0, &wb);
    float *xh = t_mem((size_t)(m * k) * sizeof(float));
    if (!w || !xh) return;
    const int B = t->B == 32 ? 32 : 256;
    for (int64_t i = 0; i < m * k; i++) {
        const int64_t j = i % B;
        xh[i] = j == 0 ? (t->B == 32 ? 127.0f : -127.0f) : (float)((int64_t)(i * 7919 % 251) - 125) + 0.5f;
    }
    for (int64_t j = 0; j < B; j++) xh[2 * k + B + j] = 1e-41f * (float)(j % 3);   /* a block of subnormals */
    wk_tensor *x = tensor_of(WK_F32, m, k, xh);
    if (x) check(t, "ties", x, xh, m, wb, w, n, k, NULL);
}

/* Batch invariance: a row of x gets the same bits of y whatever other
 * rows share the call and wherever it stands among them (AVX2: m = 1
 * takes the in-place decode kernels, 4-row groups the prefill kernel, the
 * rest the one-row kernel; VNNI: passes of up to 8 rows, 16 weight rows
 * a vector, n = 40 leaving a part-filled one), in each mode: the VNNI
 * kernels, the AVX2 kernels, the C kernels and the f32 path. An odd count of 32-blocks exercises the kernels' tails. */
static void invariance_cases(const qtype *t)
{
    if (!t_case("qdot/%s/batch_invariance", t->name)) return;
    enum { M = 13 };
    const int64_t n = 40, k = t->B == 32 ? 17 * 32 : 3 * 256;
    uint8_t *wb = NULL;
    wk_tensor *w = quantized_normal(t, n, k, 1.0, &wb);
    float *xh = x_values(M, k, t->B, false);
    if (!w || !xh) return;
    static const char *const modes[] = { "1", "avx2", "portable", "0" };
    for (int mi = 0; mi < 4 && !t_case_failed(); mi++) {
        wk_tensor *xa = tensor_of(WK_F32, M, k, xh), *ya = xa ? qmm_mode(xa, w, modes[mi]) : NULL;
        double *all = ya ? values(ya) : NULL;
        if (!all) return;
        for (int64_t m = 1; m <= M && !t_case_failed(); m++) {
            /* rows [M - m, M) of x in a call of m rows (the last row first
               at m = M - 1: a row at another place in its batch) */
            float *xs = t_mem((size_t)(m * k) * sizeof(float) + 8);
            for (int64_t i = 0; i < m; i++) {
                const int64_t src = m == M - 1 && i == 0 ? M - 1 : M - m + i;
                memcpy(xs + i * k, xh + src * k, (size_t)k * sizeof(float));
            }
            wk_tensor *xm = tensor_of(WK_F32, m, k, xs), *ym = xm ? qmm_mode(xm, w, modes[mi]) : NULL;
            double *v = ym ? values(ym) : NULL;
            if (!v) return;
            for (int64_t i = 0; i < m; i++) {
                const int64_t src = m == M - 1 && i == 0 ? M - 1 : M - m + i;
                T_CHECK(!memcmp(v + i * n, all + src * n, (size_t)n * sizeof(double)),
                        "WICK_CPU_QDOT=%s: row %lld of a %lld-row product differs from the same row among %d rows",
                        modes[mi], (long long)src, (long long)m, M);
            }
        }
    }
}

T_SUITE(qdot)
{
    for (int i = 0; i < NQT; i++) {
        shape_cases(&QT[i]);
        layout_cases(&QT[i]);
        normal_cases(&QT[i]);
        tie_cases(&QT[i]);
        invariance_cases(&QT[i]);
    }
    /* the default is the integer path; =0 the f32 sums of the decoded
       weights, which the integer path's are not */
    if (t_case("qdot/default_is_integer")) {
        const qtype *t = &QT[0];
        uint8_t *wb = random_blocks(t, 3, 64);
        float *xh = x_values(2, 64, 32, false);
        wk_tensor *w = tensor_of(t->dt, 3, 64, wb), *x = tensor_of(WK_F32, 2, 64, xh);
        if (w && x) {
            wk_tensor *y0 = (qmm_mode(x, w, "0")), *yu = (qmm_mode(x, w, NULL)), *y1 = (qmm_mode(x, w, "1"));
            double *v0 = y0 ? values(y0) : NULL, *vu = yu ? values(yu) : NULL, *v1 = y1 ? values(y1) : NULL;
            if (v0 && vu && v1) {
                T_CHECK(!memcmp(v1, vu, 6 * sizeof(double)), "WICK_CPU_QDOT unset and =1 differ");
                T_CHECK(memcmp(v0, v1, 6 * sizeof(double)), "WICK_CPU_QDOT=1 gave the f32 path's values");
            }
        }
    }
}
