/* cpu_paged_attention.c — the cpu's paged attention (family
 * PAGED_ATTENTION, backend.h): query token t of sequence s = seq[t] at
 * position p = pos[t] attends to s's keys at positions lo .. p (lo = 0,
 * or p - window + 1 with a window), key j at row j % BS of pool block
 * block_table[s, j / BS]:
 *   out[t, h, :] = sum_j softmax_j(s_j) v_j,  s_j = scale q[t, h] . k_j
 * (soft-capped when softcap > 0), h reading kv head h / g (g = Hq / Hkv).
 * f16/bf16/f32 compute and accumulate in f32, f64 in double.
 *
 * How it works: every id is checked first (nothing is written when one is
 * out of range). One task is (token, kv head): it loads the g query rows
 * that share the kv head, walks the token's keys block by block with an
 * online softmax (running max m and sum l per row, the accumulator
 * rescaled by exp(m_old - m_new)), reading each key and value row once
 * for all g rows. Tasks run on the thread pool. With AVX-512 (f32
 * compute, no softcap, D a multiple of 16) a task takes cpu_attention.c's
 * rows on blocks of 64 keys from lo instead: the single-stream call's
 * operations, so a sequence's attention in the batched engine has the
 * bits `wick run` gets (when the keys start at 0: no window). */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "cpu_internal.h"
#include "cpu_ew.h"

typedef struct pa_job {
    const wk_view *q, *k, *v, *o;
    const uint32_t *bt, *seq, *pos;
    wk_dtype dt;
    int64_t Hq, Hkv, D, g, BS, MB;
    double scale, softcap;
    int64_t window;
    bool fast;   /* cpu_attention.c's AVX-512 rows (f32 compute, no softcap, D % 16 == 0) */
    atomic_int oom;
} pa_job;

#if WK_EW_X86
/* A task through cpu_attention.c's AVX-512 rows: the token's keys in
 * blocks of WK_CPU_ATT_BK from lo, gathered from the pools, each block's
 * keys transposed once for the g rows: the operations (and bits) of the
 * single-stream attention for a row whose keys start at lo. */
static void pa_task_fast(const pa_job *j, int64_t t, int64_t kh, float *mem)
{
    const int64_t D = j->D, g = j->g, BK = WK_CPU_ATT_BK;
    const wk_view *q = j->q, *k = j->k, *v = j->v, *o = j->o;
    float *qt = mem, *acc = qt + g * D, *kt = acc + g * D, *vt = kt + BK * D, *kT = vt + BK * D, *sc = kT + BK * D;
    float *m = sc + BK, *l = m + g;
    const int64_t s = j->seq[t], p = j->pos[t];
    const int64_t lo = j->window > 0 && p - j->window + 1 > 0 ? p - j->window + 1 : 0;
    for (int64_t r = 0; r < g; r++) {
        wk_cpu_ld_row_f(q->base, j->dt, q->offset + t * q->strides[0] + (kh * g + r) * q->strides[1], 1, D, qt + r * D);
        memset(acc + r * D, 0, (size_t)D * sizeof(float));
        m[r] = -INFINITY;
        l[r] = 0;
    }
    for (int64_t k0 = lo; k0 <= p; k0 += BK) {
        const int64_t nk = BK < p + 1 - k0 ? BK : p + 1 - k0;
        for (int64_t c = 0; c < nk; c++) {
            const int64_t key = k0 + c, blk = j->bt[s * j->MB + key / j->BS], row = key % j->BS;
            wk_cpu_ld_row_f(k->base, j->dt, k->offset + blk * k->strides[0] + row * k->strides[1] + kh * k->strides[2], 1, D,
                            kt + c * D);
            wk_cpu_ld_row_f(v->base, j->dt, v->offset + blk * v->strides[0] + row * v->strides[1] + kh * v->strides[2], 1, D,
                            vt + c * D);
        }
        wk_cpu_att_keys_t(kt, nk, D, kT);
        for (int64_t r = 0; r < g; r++)
            wk_cpu_att_row_f512(qt + r * D, kT, vt, k0, k0, k0 + nk - 1, D, (float)j->scale, &m[r], &l[r], acc + r * D, sc);
    }
    for (int64_t r = 0; r < g; r++) {
        float *ar = acc + r * D;
        if (m[r] == -INFINITY) memset(ar, 0, (size_t)D * sizeof(float));
        else {
            const float inv = 1.0f / l[r];
            for (int64_t d = 0; d < D; d++) ar[d] *= inv;
        }
        wk_cpu_st_row_f(o->base, j->dt, o->offset + (t * j->Hq + kh * g + r) * D, 1, D, ar);
    }
}

static void pa_chunk_fast(void *arg, int64_t begin, int64_t end)
{
    pa_job *j = arg;
    const int64_t D = j->D, g = j->g, BK = WK_CPU_ATT_BK;
    float *mem = malloc(((size_t)(2 * g) * (size_t)D + 3 * (size_t)BK * (size_t)D + BK + 2 * (size_t)g) * sizeof(float));
    if (!mem) {
        atomic_store(&j->oom, 1);
        return;
    }
    for (int64_t task = begin; task < end; task++) pa_task_fast(j, task / j->Hkv, task % j->Hkv, mem);
    free(mem);
}
#endif

#define DEF_PAGED(S, CT, EXP, TANH)                                                                        \
    static void pa_chunk_##S(void *arg, int64_t begin, int64_t end)                                        \
    {                                                                                                      \
        pa_job *j = arg;                                                                                   \
        const int64_t D = j->D, g = j->g;                                                                  \
        const wk_view *q = j->q, *k = j->k, *v = j->v, *o = j->o;                                          \
        CT *mem = malloc(((size_t)(2 * g + 2) * (size_t)D + 2 * (size_t)g) * sizeof(CT));                  \
        if (!mem) {                                                                                        \
            atomic_store(&j->oom, 1);                                                                      \
            return;                                                                                        \
        }                                                                                                  \
        CT *qt = mem, *acc = qt + g * D, *kr = acc + g * D, *vr = kr + D, *m = vr + D, *l = m + g;        \
        const CT scale = (CT)j->scale, cap = (CT)j->softcap;                                               \
        for (int64_t task = begin; task < end; task++) {                                                   \
            const int64_t t = task / j->Hkv, kh = task % j->Hkv;                                           \
            const int64_t s = j->seq[t], p = j->pos[t];                                                    \
            const int64_t lo = j->window > 0 && p - j->window + 1 > 0 ? p - j->window + 1 : 0;             \
            for (int64_t r = 0; r < g; r++) {                                                              \
                wk_cpu_ld_row_##S(q->base, j->dt, q->offset + t * q->strides[0] + (kh * g + r) * q->strides[1], \
                                  1, D, qt + r * D);                                                       \
                for (int64_t d = 0; d < D; d++) acc[r * D + d] = 0;                                        \
                m[r] = -INFINITY;                                                                          \
                l[r] = 0;                                                                                  \
            }                                                                                              \
            for (int64_t key = lo; key <= p; key++) {                                                      \
                const int64_t blk = j->bt[s * j->MB + key / j->BS], row = key % j->BS;                    \
                wk_cpu_ld_row_##S(k->base, j->dt,                                                          \
                                  k->offset + blk * k->strides[0] + row * k->strides[1] + kh * k->strides[2], 1, \
                                  D, kr);                                                                  \
                wk_cpu_ld_row_##S(v->base, j->dt,                                                          \
                                  v->offset + blk * v->strides[0] + row * v->strides[1] + kh * v->strides[2], 1, \
                                  D, vr);                                                                  \
                for (int64_t r = 0; r < g; r++) {                                                          \
                    CT sc = 0;                                                                             \
                    for (int64_t d = 0; d < D; d++) sc += qt[r * D + d] * kr[d];                           \
                    sc *= scale;                                                                           \
                    if (cap > 0) sc = cap * TANH(sc / cap);                                                \
                    if (!(sc > -INFINITY)) continue; /* -inf (or NaN from inf - inf): no weight */         \
                    const CT mn = sc > m[r] ? sc : m[r];                                                   \
                    const CT a = EXP(m[r] - mn), w = EXP(sc - mn);                                         \
                    l[r] = l[r] * a + w;                                                                   \
                    for (int64_t d = 0; d < D; d++) acc[r * D + d] = acc[r * D + d] * a + w * vr[d];      \
                    m[r] = mn;                                                                             \
                }                                                                                          \
            }                                                                                              \
            for (int64_t r = 0; r < g; r++) {                                                              \
                const CT inv = l[r] > 0 ? (CT)1 / l[r] : 0;                                                \
                for (int64_t d = 0; d < D; d++) acc[r * D + d] *= inv;                                     \
                wk_cpu_st_row_##S(o->base, j->dt, o->offset + (t * j->Hq + kh * g + r) * D, 1, D, acc + r * D); \
            }                                                                                              \
        }                                                                                                  \
        free(mem);                                                                                         \
    }
DEF_PAGED(f, float, expf, tanhf)
DEF_PAGED(d, double, exp, tanh)

static const uint32_t *ids_of(const wk_view *v) { return (const uint32_t *)v->base + v->offset; }

wk_status wk_cpu_paged_attention(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    const wk_view *q = a->src[0], *k = a->src[1], *v = a->src[2], *o = a->dst;
    const wk_paged_attention_params *p = a->params;
    if (!p || !k || !v || !p->block_table || !p->seq || !p->pos)
        return WK_CPU_ERROR(WK_ERR_ARGUMENT, "paged_attention needs q, the pools, the ids and its parameters");
    const wk_dtype dt = q->dtype;
    if (!(WK_DT_NN & WK_DT_BIT(dt)) || k->dtype != dt || v->dtype != dt || o->dtype != dt)
        return WK_CPU_ERROR(WK_ERR_DTYPE, "paged_attention takes q and the pools of one dtype of f16, bf16, f32, f64");
    if (q->rank != 3 || k->rank != 4 || v->rank != 4 || o->rank != 3)
        return WK_CPU_ERROR(WK_ERR_SHAPE, "paged_attention expects q [T, Hq, D] and pools [NB, BS, Hkv, D]");
    const int64_t T = q->dims[0], Hq = q->dims[1], D = q->dims[2];
    const int64_t NB = k->dims[0], BS = k->dims[1], Hkv = k->dims[2];
    const int64_t S = p->block_table->dims[0], MB = p->block_table->dims[1];
    if (T == 0 || Hq == 0 || D == 0) return WK_OK;
    if (Hkv <= 0 || Hq % Hkv != 0 || BS <= 0)
        return WK_CPU_ERROR(WK_ERR_SHAPE, "paged_attention: query heads (%lld) must be a multiple of kv heads (%lld)",
                            (long long)Hq, (long long)Hkv);
    const uint32_t *bt = ids_of(p->block_table), *seq = ids_of(p->seq), *pos = ids_of(p->pos);
    /* every id a query reads, before anything is written */
    for (int64_t t = 0; t < T; t++) {
        if (seq[t] >= (uint64_t)S)
            return WK_CPU_ERROR(WK_ERR_INDEX, "paged_attention: token %lld's sequence %u is outside the block table's %lld",
                                (long long)t, seq[t], (long long)S);
        if (pos[t] / (uint64_t)BS >= (uint64_t)MB)
            return WK_CPU_ERROR(WK_ERR_INDEX,
                                "paged_attention: token %lld's position %u is past the block table's %lld blocks of %lld",
                                (long long)t, pos[t], (long long)MB, (long long)BS);
        const int64_t lo = p->window > 0 && (int64_t)pos[t] - p->window + 1 > 0 ? (int64_t)pos[t] - p->window + 1 : 0;
        for (int64_t b = lo / BS; b <= (int64_t)pos[t] / BS; b++)
            if (bt[seq[t] * MB + b] >= (uint64_t)NB)
                return WK_CPU_ERROR(WK_ERR_INDEX,
                                    "paged_attention: block %lld of sequence %u is %u, outside the pools' %lld blocks",
                                    (long long)b, seq[t], bt[seq[t] * MB + b], (long long)NB);
    }
    pa_job j = { .q = q, .k = k, .v = v, .o = o, .bt = bt, .seq = seq, .pos = pos, .dt = dt, .Hq = Hq, .Hkv = Hkv,
                 .D = D, .g = Hq / Hkv, .BS = BS, .MB = MB, .scale = p->scale, .softcap = p->softcap,
                 .window = p->window };
    atomic_init(&j.oom, 0);
#if WK_EW_X86
    j.fast = dt != WK_F64 && !(p->softcap > 0) && D % 16 == 0 && wk_ew_have_avx512();
#endif
    double keys = 0;
    for (int64_t t = 0; t < T; t++) keys += (double)pos[t] + 1;
    wk_range_fn fn = dt == WK_F64 ? pa_chunk_d : pa_chunk_f;
#if WK_EW_X86
    if (j.fast) fn = pa_chunk_fast;
#endif
    wk_parallel_tasks(T * Hkv, keys / (double)T * (double)(Hq / Hkv) * (double)D * 4, fn, &j);
    if (atomic_load(&j.oom))
        return WK_CPU_ERROR(WK_ERR_MEMORY, "paged_attention: out of memory for a task's rows (D = %lld)", (long long)D);
    return WK_OK;
}
