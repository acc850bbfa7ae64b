/* cpu_attention.c — the cpu's attention (family ATTENTION):
 *   out[b, h, i, :] = sum_j softmax_j(s_ij) v[b, h / g, j, :],
 *   s_ij = scale q[b, h, i] . k[b, h / g, j], soft-capped (softcap *
 *   tanh(s / softcap)) when softcap > 0, plus mask[b, h, i, j] when there
 *   is a mask; keys outside the causal / window range of query i (its
 *   position among the keys is pos = i + Tk - Tq: causal j <= pos, window
 *   j > pos - window) are left out. A query that sees no key, or sees
 *   only scores of -inf, gets zeros. g = Hq / Hkv (grouped-query heads).
 * f16/bf16/f32 compute and accumulate in f32, f64 in double; any D.
 *
 * How it works: blocked, online softmax (flash attention), never holding
 * the Tq x Tk scores. One task is (batch, kv head, block of up to BQ query
 * rows), the rows taken from the g query heads that share the kv head, so
 * a decode step (Tq = 1) of a grouped model reads its keys and values once
 * for all g heads. The task walks the key blocks of BK keys that any of
 * its rows can see; each block of keys and values is converted to the
 * compute type once, then every row takes its scores against the block,
 * updates its running max m and sum l (rescaling its accumulator by
 * exp(m_old - m_new)) and adds p v. Tasks run on the thread pool; the
 * dot products and the p v updates are loops with independent lanes that
 * the compiler vectorizes.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "cpu_internal.h"
#include "cpu_ew.h"

#define BQ 32     /* query rows per task     */
#define BK WK_CPU_ATT_BK   /* keys per block (64) */
#define LANES 8

typedef struct att_job {
    const wk_view *q, *k, *v, *mask, *o;
    wk_dtype dt;
    int64_t B, Hq, Hkv, Tq, Tk, D, g, nqb;   /* nqb: query blocks per (b, kv head) */
    double scale, softcap;
    int64_t window;
    int causal;
    bool fast;   /* f32 compute on a cpu with AVX-512: att_row_f512 */
    atomic_int oom;
} att_job;

/* ---- AVX-512 rows (f32 compute, no mask, no softcap, D a multiple of 16) ----
 * The scores of one row against 16 keys at once from the block's keys
 * transposed (kT[d][c]), exp on 16 lanes (exp_f512: range reduction by
 * ln 2 in two parts, a degree-7 polynomial, 2^n by vscalefps; within 2
 * ulp of expf over the range softmax meets, 0 below -87.3), then p v as
 * the portable loop does. Taken for every row of a call or none, so a row
 * gets the same bits whatever the rows around it. cpu_paged_attention.c
 * calls the same two functions on the same blocks of 64 keys, so a
 * sequence's attention in the batched engine has the bits of the
 * single-stream call (without a window). */
#if WK_EW_X86
#include <immintrin.h>
#define KT_STRIDE WK_CPU_ATT_BK

WK_TARGET_AVX512 static inline __m512 exp_f512(__m512 x)
{
    const __m512 lo = _mm512_set1_ps(-87.3f);
    const __mmask16 tiny = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);   /* also -inf */
    x = _mm512_max_ps(x, lo);
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f), r);
    __m512 p = _mm512_set1_ps(1.9841269841e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3888888889e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3333333333e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1666666667e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666666667e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_maskz_mov_ps((__mmask16)~tiny, _mm512_scalef_ps(p, n));
}

/* kt [nk][D] -> kT [D][KT_STRIDE] */
void wk_cpu_att_keys_t(const float *kt, int64_t nk, int64_t D, float *kT)
{
    for (int64_t c = 0; c < nk; c++)
        for (int64_t d = 0; d < D; d++) kT[d * KT_STRIDE + c] = kt[c * D + d];
}

/* the scores s of keys j0 .. j0 + 15, those outside [lo, hi] -inf */
WK_TARGET_AVX512 static inline __m512 keys_in(__m512 s, int64_t j0, int64_t lo, int64_t hi)
{
    /* relative to lo: j0 - lo and hi - lo are within a block of keys */
    const __m512i idx = _mm512_add_epi32(_mm512_set1_epi32((int)(j0 - lo)),
                                         _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    const __mmask16 in = _mm512_cmp_epi32_mask(idx, _mm512_setzero_si512(), _MM_CMPINT_NLT) &
                         _mm512_cmp_epi32_mask(idx, _mm512_set1_epi32((int)(hi - lo)), _MM_CMPINT_LE);
    return _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), in, s);
}

/* one row against keys [lo, hi] of the block starting at k0 */
WK_TARGET_AVX512 void wk_cpu_att_row_f512(const float *qr, const float *kT, const float *vt, int64_t k0, int64_t lo,
                                          int64_t hi, int64_t D, float scale, float *m, float *l, float *ar, float *sc)
{
    const int64_t c0 = (lo - k0) & ~(int64_t)15, c1 = hi - k0 + 1;
    __m512 vmax = _mm512_set1_ps(-INFINITY);
    for (int64_t c = c0; c < c1; c += 16) {
        __m512 s = _mm512_setzero_ps();
        if (c + 16 < c1) {   /* two vectors of keys against one broadcast of q[d] */
            __m512 s2 = _mm512_setzero_ps();
            for (int64_t d = 0; d < D; d++) {
                const __m512 qd = _mm512_set1_ps(qr[d]);
                s = _mm512_fmadd_ps(qd, _mm512_loadu_ps(kT + d * KT_STRIDE + c), s);
                s2 = _mm512_fmadd_ps(qd, _mm512_loadu_ps(kT + d * KT_STRIDE + c + 16), s2);
            }
            s2 = _mm512_mul_ps(s2, _mm512_set1_ps(scale));
            s2 = keys_in(s2, k0 + c + 16, lo, hi);
            _mm512_storeu_ps(sc + c + 16, s2);
            vmax = _mm512_max_ps(vmax, s2);
        } else {
            for (int64_t d = 0; d < D; d++) s = _mm512_fmadd_ps(_mm512_set1_ps(qr[d]), _mm512_loadu_ps(kT + d * KT_STRIDE + c), s);
        }
        s = _mm512_mul_ps(s, _mm512_set1_ps(scale));
        s = keys_in(s, k0 + c, lo, hi);
        _mm512_storeu_ps(sc + c, s);
        vmax = _mm512_max_ps(vmax, s);
        if (c + 16 < c1) c += 16;   /* the pair's second vector is done */
    }
    const float mb = _mm512_reduce_max_ps(vmax), mnew = mb > *m ? mb : *m;
    if (mnew == -INFINITY) return;
    if (*m != mnew) {
        const float corr = expf(*m - mnew);
        *l *= corr;
        for (int64_t d = 0; d < D; d += 16) _mm512_storeu_ps(ar + d, _mm512_mul_ps(_mm512_loadu_ps(ar + d), _mm512_set1_ps(corr)));
        *m = mnew;
    }
    __m512 ls = _mm512_setzero_ps();
    for (int64_t c = c0; c < c1; c += 16) {
        const __m512 p = exp_f512(_mm512_sub_ps(_mm512_loadu_ps(sc + c), _mm512_set1_ps(mnew)));
        _mm512_storeu_ps(sc + c, p);
        ls = _mm512_add_ps(ls, p);
    }
    /* p v: 64 columns of the accumulator held in registers over the keys */
    for (int64_t d0 = 0; d0 < D; d0 += 64) {
        const int nv = D - d0 >= 64 ? 4 : (int)((D - d0) / 16);
        __m512 a[4];
        for (int u = 0; u < nv; u++) a[u] = _mm512_loadu_ps(ar + d0 + 16 * u);
        for (int64_t jj = lo; jj <= hi; jj++) {
            const __m512 p = _mm512_set1_ps(sc[jj - k0]);
            const float *vr = vt + (jj - k0) * D + d0;
            for (int u = 0; u < nv; u++) a[u] = _mm512_fmadd_ps(p, _mm512_loadu_ps(vr + 16 * u), a[u]);
        }
        for (int u = 0; u < nv; u++) _mm512_storeu_ps(ar + d0 + 16 * u, a[u]);
    }
    *l += _mm512_reduce_add_ps(ls);
}
#define ATT_FAST_F 1
#else
#define ATT_FAST_F 0
#endif

#define DEF_ATTENTION(S, CT, EXP, TANH, FAST)                                        \
    static CT dot_##S(const CT *a, const CT *b, int64_t n)                     \
    {                                                                          \
        CT acc[LANES] = { 0 };                                                 \
        int64_t i = 0;                                                         \
        for (; i + LANES <= n; i += LANES)                                     \
            for (int l = 0; l < LANES; l++) acc[l] += a[i + l] * b[i + l];     \
        CT s = 0;                                                              \
        for (; i < n; i++) s += a[i] * b[i];                                   \
        for (int l = 0; l < LANES; l++) s += acc[l];                           \
        return s;                                                              \
    }                                                                          \
    static void att_chunk_##S(void *arg, int64_t begin, int64_t end)          \
    {                                                                          \
        att_job *j = arg;                                                      \
        const int64_t D = j->D, Tq = j->Tq, Tk = j->Tk, g = j->g;              \
        const wk_view *q = j->q, *k = j->k, *v = j->v, *mk = j->mask, *o = j->o; \
        /* qt, acc [BQ, D]; kt, vt [BK, D]; s [BK]; m, l [BQ]; kT [D, BK] */ \
        CT *mem = malloc(((size_t)(2 * BQ + 3 * BK) * (size_t)D + BK + 2 * BQ) * sizeof(CT)); \
        if (!mem) {                                                            \
            atomic_store(&j->oom, 1);                                          \
            return;                                                            \
        }                                                                      \
        CT *qt = mem, *acc = qt + BQ * D, *kt = acc + BQ * D, *vt = kt + BK * D; \
        CT *sc = vt + BK * D, *m = sc + BK, *l = m + BQ, *kT = l + BQ; (void)kT; \
        const bool fast = FAST && !mk && j->softcap <= 0 && D % 16 == 0 && j->fast; \
        const float *mbase = mk ? (const float *)mk->base : NULL;              \
        const CT scale = (CT)j->scale, cap = (CT)j->softcap;                   \
        const int64_t shift = Tk - Tq;                                         \
        for (int64_t t = begin; t < end; t++) {                                \
            const int64_t b = t / (j->Hkv * j->nqb), kh = (t / j->nqb) % j->Hkv; \
            const int64_t r0 = (t % j->nqb) * BQ;                              \
            const int64_t nr = BQ < g * Tq - r0 ? BQ : g * Tq - r0;            \
            /* rows r0 .. r0 + nr - 1 of the (head in group, query) pairs */   \
            int64_t imin = INT64_MAX, imax = INT64_MIN;                        \
            for (int64_t r = 0; r < nr; r++) {                                 \
                const int64_t h = kh * g + (r0 + r) / Tq, i = (r0 + r) % Tq;   \
                imin = i < imin ? i : imin;                                    \
                imax = i > imax ? i : imax;                                    \
                wk_cpu_ld_row_##S(q->base, j->dt, q->offset + b * q->strides[0] + h * q->strides[1] + i * q->strides[2], \
                        D > 1 ? q->strides[3] : 1, D, qt + r * D);             \
                m[r] = -INFINITY;                                              \
                l[r] = 0;                                                      \
            }                                                                  \
            memset(acc, 0, (size_t)(nr * D) * sizeof(CT));                     \
            /* the keys some row of the block can see */                       \
            int64_t jlo = 0, jhi = Tk - 1;                                     \
            if (j->causal && imax + shift < jhi) jhi = imax + shift;           \
            if (j->window > 0 && imin + shift - j->window + 1 > jlo) jlo = imin + shift - j->window + 1; \
            for (int64_t k0 = jlo; k0 <= jhi; k0 += BK) {                      \
                const int64_t nk = BK < jhi + 1 - k0 ? BK : jhi + 1 - k0;      \
                const int64_t ko = k->offset + b * k->strides[0] + kh * k->strides[1]; \
                const int64_t vo = v->offset + b * v->strides[0] + kh * v->strides[1]; \
                for (int64_t c = 0; c < nk; c++) {                             \
                    wk_cpu_ld_row_##S(k->base, j->dt, ko + (k0 + c) * k->strides[2], D > 1 ? k->strides[3] : 1, D, kt + c * D); \
                    wk_cpu_ld_row_##S(v->base, j->dt, vo + (k0 + c) * v->strides[2], D > 1 ? v->strides[3] : 1, D, vt + c * D); \
                }                                                              \
                if (fast) ATT_KEYS_T(S, kt, nk, D, kT);                         \
                for (int64_t r = 0; r < nr; r++) {                             \
                    const int64_t h = kh * g + (r0 + r) / Tq, i = (r0 + r) % Tq; \
                    const int64_t pos = i + shift;                             \
                    int64_t lo = k0, hi = k0 + nk - 1;                         \
                    if (j->causal && pos < hi) hi = pos;                       \
                    if (j->window > 0 && pos - j->window + 1 > lo) lo = pos - j->window + 1; \
                    if (lo > hi) continue;                                     \
                    const CT *qr = qt + r * D;                                 \
                    if (fast) {                                                \
                        ATT_ROW(S, qr, kT, vt, k0, lo, hi, D, scale, &m[r], &l[r], acc + r * D, sc); \
                        continue;                                              \
                    }                                                          \
                    const float *mrow = mk ? mbase + mk->offset + b * mk->strides[0] + h * mk->strides[1] + \
                                                 i * mk->strides[2]        \
                                           : NULL;                             \
                    CT mb = -INFINITY;                                         \
                    for (int64_t jj = lo; jj <= hi; jj++) {                    \
                        CT s = dot_##S(qr, kt + (jj - k0) * D, D) * scale;     \
                        if (cap > 0) s = cap * TANH(s / cap);                  \
                        if (mrow) s += (CT)mrow[jj * mk->strides[3]];          \
                        sc[jj - k0] = s;                                       \
                        mb = s > mb ? s : mb;                                  \
                    }                                                          \
                    const CT mnew = mb > m[r] ? mb : m[r];                     \
                    if (mnew == -INFINITY) continue;  /* every score so far -inf */ \
                    CT *ar = acc + r * D;                                      \
                    if (m[r] != mnew) {                                        \
                        const CT corr = EXP(m[r] - mnew);                      \
                        l[r] *= corr;                                          \
                        for (int64_t d = 0; d < D; d++) ar[d] *= corr;         \
                        m[r] = mnew;                                           \
                    }                                                          \
                    CT ls = 0;                                                 \
                    for (int64_t jj = lo; jj <= hi; jj++) {                    \
                        const CT p = EXP(sc[jj - k0] - mnew);                  \
                        const CT *vr = vt + (jj - k0) * D;                     \
                        ls += p;                                               \
                        for (int64_t d = 0; d < D; d++) ar[d] += p * vr[d];    \
                    }                                                          \
                    l[r] += ls;                                                \
                }                                                              \
            }                                                                  \
            for (int64_t r = 0; r < nr; r++) {                                 \
                const int64_t h = kh * g + (r0 + r) / Tq, i = (r0 + r) % Tq;   \
                CT *ar = acc + r * D;                                          \
                if (m[r] == -INFINITY) {                                       \
                    for (int64_t d = 0; d < D; d++) ar[d] = 0;                 \
                } else {                                                       \
                    const CT inv = (CT)1 / l[r];                               \
                    for (int64_t d = 0; d < D; d++) ar[d] *= inv;              \
                }                                                              \
                wk_cpu_st_row_##S(o->base, j->dt, o->offset + b * o->strides[0] + h * o->strides[1] + i * o->strides[2], \
                        D > 1 ? o->strides[3] : 1, D, ar);                     \
            }                                                                  \
        }                                                                      \
        free(mem);                                                             \
    }
/* the fast path's calls, for the f32 instance only */
#if ATT_FAST_F
#define ATT_KEYS_T_f(kt, nk, D, kT) wk_cpu_att_keys_t(kt, nk, D, kT)
#define ATT_ROW_f(...) wk_cpu_att_row_f512(__VA_ARGS__)
#else
#define ATT_KEYS_T_f(kt, nk, D, kT) ((void)0)
#define ATT_ROW_f(...) ((void)0)
#endif
#define ATT_KEYS_T_d(kt, nk, D, kT) ((void)0)
#define ATT_ROW_d(...) ((void)0)
#define ATT_KEYS_T(S, ...) ATT_KEYS_T_##S(__VA_ARGS__)
#define ATT_ROW(S, ...) ATT_ROW_##S(__VA_ARGS__)
DEF_ATTENTION(f, float, expf, tanhf, ATT_FAST_F)
DEF_ATTENTION(d, double, exp, tanh, 0)

wk_status wk_cpu_attention(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    const wk_view *q = a->src[0], *k = a->src[1], *v = a->src[2], *mk = a->src[3], *o = a->dst;
    const wk_attention_params *p = a->params;
    if (!p || !k || !v) return WK_CPU_ERROR(WK_ERR_ARGUMENT, "attention needs q, k, v and its parameters");
    const wk_dtype dt = q->dtype;
    if (!(WK_DT_NN & WK_DT_BIT(dt)) || k->dtype != dt || v->dtype != dt || o->dtype != dt ||
        (mk && mk->dtype != WK_F32))
        return WK_CPU_ERROR(WK_ERR_DTYPE, "attention takes q, k, v of one dtype of f16, bf16, f32, f64 (q %s, k %s, "
                            "v %s, out %s) and an f32 mask", wk_dtype_name(dt), wk_dtype_name(k->dtype),
                            wk_dtype_name(v->dtype), wk_dtype_name(o->dtype));
    if (q->rank != 4 || k->rank != 4 || v->rank != 4 || o->rank != 4 || (mk && mk->rank != 4))
        return WK_CPU_ERROR(WK_ERR_SHAPE, "attention expects rank-4 views");
    const int64_t B = q->dims[0], Hq = q->dims[1], Tq = q->dims[2], D = q->dims[3];
    const int64_t Hkv = k->dims[1];
    int64_t Tk = k->dims[2];
    if (p->kv_len) {   /* the keys that exist: the count in (host) memory */
        const wk_view *L = p->kv_len;
        const int64_t n = L->dtype == WK_I64 ? ((const int64_t *)L->base)[L->offset]
                                             : (int64_t)((const uint32_t *)L->base)[L->offset];
        Tk = n < 0 ? 0 : n < Tk ? n : Tk;
    }
    if (B == 0 || Hq == 0 || Tq == 0 || D == 0) return WK_OK;
    if (Hkv <= 0 || Hq % Hkv != 0)
        return WK_CPU_ERROR(WK_ERR_SHAPE, "attention: query heads (%lld) must be a multiple of kv heads (%lld)",
                            (long long)Hq, (long long)Hkv);
    att_job j = { .q = q, .k = k, .v = v, .mask = mk, .o = o, .dt = dt, .B = B, .Hq = Hq, .Hkv = Hkv, .Tq = Tq,
                  .Tk = Tk, .D = D, .g = Hq / Hkv, .scale = p->scale, .softcap = p->softcap, .window = p->window,
                  .causal = p->causal };
    j.nqb = (j.g * Tq + BQ - 1) / BQ;
#if WK_EW_X86
    j.fast = dt != WK_F64 && wk_ew_have_avx512();
#endif
    atomic_init(&j.oom, 0);
    const int64_t rows = j.g * Tq < BQ ? j.g * Tq : BQ;
    wk_parallel_tasks(B * Hkv * j.nqb, (double)rows * (double)(Tk + 1) * (double)D * 4,
                      dt == WK_F64 ? att_chunk_d : att_chunk_f, &j);
    if (atomic_load(&j.oom))
        return WK_CPU_ERROR(WK_ERR_MEMORY, "attention: out of memory for the blocks of a task (D = %lld)",
                            (long long)D);
    return WK_OK;
}
