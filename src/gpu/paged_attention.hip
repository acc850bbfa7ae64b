/* paged_attention.hip — the GPU's paged attention (family PAGED_ATTENTION,
 * backend.h; wk_paged_attention): the attention of a batched engine's step,
 * a flat list of query tokens from many sequences (decode rows and prefill
 * chunks together) over a KV cache kept as a pool of fixed-size blocks.
 * Query t of sequence s = seq[t] at position p = pos[t] sees the keys of s
 * at positions j in [lo, p] (lo = 0, or p - window + 1 with a window), key j
 * being row j % BS of pool block block_table[s, j / BS]:
 *   out[t, h, :] = sum_j softmax_j(x_j) v_j,  x_j = scale q[t, h] . k_j
 * soft-capped (cap tanh(x / cap)) when softcap > 0; query head h reads kv
 * head h / G (G = Hq / Hkv). Pools [NB, BS, Hkv, D] with any strides but
 * the last; q [T, Hq, D] likewise; out [T, Hq, D] contiguous. f16, bf16 and
 * f32 (f64 stays on the cpu); scores, softmax and the accumulator are f32;
 * D a multiple of 8 up to 256.
 *
 * How it works. One block per (query token, kv head, group of up to RMAX of
 * the G query heads that share the kv head): K and V rows are read once for
 * all the block's heads (G <= 8 is one group: read once for all G). The
 * token's keys [lo, p] are split among the block's lane groups: a group of
 * GS lanes (D / VEC 16-byte vectors, rounded up to a power of two, at most
 * 32) covers one key row with one 16-byte load per lane (two for f32 at
 * D > 128), and takes U = 4 consecutive keys per round, so each lane has 8
 * loads in flight; the groups of a block take consecutive stretches of
 * U keys, round after round. For each key a group looks up its pool block
 * in the block table (consecutive keys share it: cache hits), loads K and V
 * rows, reduces q . k over its lanes with shuffles inside its GS-lane
 * segment, and updates its own online softmax (running max m and sum l per
 * query row, the accumulator rescaled by exp2(m_old - m_new); scores in
 * log2 units, scale log2 e folded into q, so every exponential is one
 * exp2). At the end the groups' (m, l, acc) are merged through shared
 * memory, one query row at a time, and the block writes the rows.
 *   Warp width: the only warp operations are shuffles inside segments of
 * GS <= 32 lanes, which are the same segments on 32- and 64-lane waves,
 * and every lane of the block runs every round (the round count is the
 * block's, lanes past the keys or past D load zeros), so no shuffle is
 * divergent: one instantiation serves wave32 and wave64 (no W template).
 *   No split of a token's keys across blocks: a row's result depends only
 * on its own keys (batch invariance; the summation order is fixed by the
 * row's length and the block shape), and a batch of decode rows fills the
 * GPU with (token, kv head) blocks. A single long sequence alone (few
 * blocks) is latency-bound: a split-KV path whose factor is a function of
 * the sequence's length would serve it; not written. Prefill chunks run as
 * independent rows (each token's block reads its keys; neighbouring tokens
 * share them in L2): correct, not tuned.
 *
 * Ids are data, checked without stalling the stream, as index.hip checks
 * its reads' ids: the output is a fresh tensor that the core drops when
 * the op fails, so the check (pa_check_kernel: every token's sequence and
 * position, and every block id a token reads) runs beside the attention
 * kernel on a side stream of the device's greatest priority, after a fence
 * at the point of the main stream where the inputs are ready; its answer
 * (the first bad token, or ~0) is copied to pinned host memory there, and
 * the host waits for that copy only, not for the attention. A bad id gives
 * WK_ERR_INDEX naming the token and the id. The attention kernel never
 * reads through a bad id: a token whose sequence or position is out of
 * range gets zeros, a key in a block whose id is out of range is left out.
 * While a graph is recorded no check is made (its answer would need a host
 * wait at every replay): those rules are then what a bad id gives. Without
 * pinned memory the check runs first on the main stream and the host waits
 * for its answer.
 *
 * The matrix-core path (pa_mma_kernel; NVIDIA sm_80+, f16/bf16, 16-byte
 * aligned rows; the default there, WICK_GPU_PAGED=portable takes the FMA
 * kernel instead; measured in bench/RESULTS-engine.md): one block per
 * (token, kv head, 16 of its query heads, split of its keys); the G query heads are the rows of mma.sync tiles,
 * 4 warps take 16-key tiles in turn through cp.async rings, S = Q K^T and
 * O += P V run on the matrix cores. A token's keys are split into
 * pa_splits(len) parts (at least PA_SPLIT_MIN keys each, at most
 * PA_NSMAX parts): a function of the token's own key count, so batch
 * invariance holds and one sequence alone still fills the device; the
 * last split to finish combines the partials in split order.
 *
 * Launch shape: PA_NT threads a block (128), PA_U keys a group a round (4),
 * and blocks per SM asked of the compiler by the rows a block takes (4 for
 * RMAX <= 2, 3 for 4, 2 for 8: at most 128, 170 and 255 registers a
 * thread; the shape of attention.hip's FMA decode kernel, which was
 * measured; this kernel's own shape is not measured yet). -DPA_NT=... and
 * -DPA_U=... override them for a tuning run.
 */
#include "gpu_internal.h"
#include "mma.h"
#include <mutex>
#include <new>

#define PA_LOG2E 1.4426950408889634f
#ifndef PA_NT
#define PA_NT 128      /* threads of an attention block */
#endif
#ifndef PA_U
#define PA_U 4         /* consecutive keys a lane group takes per round */
#endif
#define PA_CK_NT 128   /* threads of a check block */
#define PA_NONE (~0ull)
#define PA_MAX_GRID_Y 65535

/* What both kernels get */
struct pa_args {
    const void *q, *k, *v;          /* element 0 of each view (offset folded) */
    void *o;                        /* out [T, Hq, D] contiguous              */
    const uint32_t *bt, *seq, *pos; /* block_table [S, MB], seq [T], pos [T]  */
    int64_t qs0, qs1;               /* q strides of t and h (d is 1)          */
    int64_t ks0, ks1, ks2;          /* k pool strides of block, row, head     */
    int64_t vs0, vs1, vs2;          /* v pool strides                         */
    int64_t T, S, MB, NB;
    uint32_t BS;
    wk_divmod32 dbs;                /* division by BS                         */
    int Hq, Hkv, G, D;
    int nrg;                        /* groups of query heads per kv head      */
    int64_t window;                 /* <= 0: none                             */
    float qmul;                     /* scale log2 e, or scale with a softcap  */
    float cap_inv, cap_log2;        /* 1 / cap, cap log2 e; cap_inv 0: none   */
    int vec;                        /* q and pool rows allow 16-byte loads    */
};

/* 4 bytes of T at p (one f32, or two 16-bit elements, the first in the
 * low half), element by element */
template <typename T> WK_DEV uint32_t pa_word(const T *p)
{
    if constexpr (sizeof(T) == 4) return __float_as_uint(*p);
    else return (uint32_t)p[0].bits | ((uint32_t)p[1].bits << 16);
}

/* 16 bytes of T as raw bits: one load when vec (the address is then
 * 16-byte aligned), else element by element (no local array: it would
 * live in scratch memory on AMD) */
template <typename T> WK_DEV uint4 pa_ld16(const T *p, bool vec)
{
    if (vec) return *(const uint4 *)p;
    constexpr int E = 4 / (int)sizeof(T);
    return make_uint4(pa_word(p), pa_word(p + E), pa_word(p + 2 * E), pa_word(p + 3 * E));
}

/* element e of 16 raw bytes as f32 (e a constant after unrolling) */
template <typename T> WK_DEV float pa_elem(const uint4 &x, int e)
{
    const int w = e * (int)sizeof(T) / 4;
    const uint32_t u = w == 0 ? x.x : w == 1 ? x.y : w == 2 ? x.z : x.w;
    if constexpr (sizeof(T) == 4) {
        return __uint_as_float(u);
    } else {
        T v;
        v.bits = (uint16_t)(e % 2 ? u >> 16 : u & 0xFFFFu);
        return wk_load_c(v);
    }
}

/* keys [*lo, *hi) of a token at position p */
WK_DEV void pa_range(const pa_args &a, uint32_t p, int64_t *lo, int64_t *hi)
{
    *hi = (int64_t)p + 1;
    *lo = a.window > 0 && *hi - a.window > 0 ? *hi - a.window : 0;
}

/* true when the token's sequence s and position p are in range */
WK_DEV bool pa_token_ok(const pa_args &a, uint32_t s, uint32_t p)
{
    return (int64_t)s < a.S && (int64_t)wk_divmod32_div(a.dbs, p) < a.MB;
}

/* ------------------------------------------------------------------ */
/* The attention                                                       */

/* DV: 16-byte vectors a row may have (D / VEC rounded up to 8, 16, 32 or
 * 64); RMAX: query heads a block takes (of the G that share its kv head). */
template <typename T, int DV, int RMAX>
__global__ __launch_bounds__(PA_NT, RMAX <= 2 ? 4 : RMAX <= 4 ? 3 : 2) void pa_kernel(pa_args a)
{
    enum { VEC = 16 / sizeof(T), GS = DV < 32 ? DV : 32, NVL = DV / GS, NG = PA_NT / GS, DC = DV * VEC };
    static_assert(PA_NT % GS == 0 && GS <= 32, "lane groups are whole segments of at most 32 lanes");
    __shared__ float sm_acc[NG][DC];      /* one query row's accumulators of every group */
    __shared__ float sm_m[NG], sm_l[NG];
    const T *Q = (const T *)a.q, *K = (const T *)a.k, *V = (const T *)a.v;
    const bool vec = a.vec != 0;
    const int D = a.D, tid = threadIdx.x, gl = tid % GS, grp = tid / GS;
    const int rg = (int)(blockIdx.x % (unsigned)a.nrg), kh = (int)(blockIdx.x / (unsigned)a.nrg);
    const int r0 = rg * RMAX;                                   /* first of this block's heads in the group of G */
    const int nr = a.G - r0 < RMAX ? a.G - r0 : RMAX;           /* rows of this block (uniform) */

    _Pragma("unroll 1")
    for (int64_t t = blockIdx.y; t < a.T; t += gridDim.y) {    /* uniform over the block */
        T *out = (T *)a.o + ((int64_t)t * a.Hq + (int64_t)kh * a.G + r0) * D;
        const uint32_t s = a.seq[t], p = a.pos[t];
        if (!pa_token_ok(a, s, p)) {                            /* (unchecked in a graph) zeros */
            for (int i = tid; i < nr * D; i += PA_NT) out[i] = wk_to<T>(0.0f);
            continue;
        }
        int64_t lo, hi;
        pa_range(a, p, &lo, &hi);

        /* this block's query rows, scaled: lane gl holds elements (gl + GS n) VEC + e */
        float qf[RMAX][NVL][VEC];
#pragma unroll
        for (int rr = 0; rr < RMAX; rr++)
#pragma unroll
            for (int n = 0; n < NVL; n++) {
                const int d = (gl + GS * n) * VEC;
                uint4 x = make_uint4(0u, 0u, 0u, 0u);
                if (rr < nr && d < D)
                    x = pa_ld16<T>(Q + t * a.qs0 + (int64_t)(kh * a.G + r0 + rr) * a.qs1 + d, vec);
#pragma unroll
                for (int e = 0; e < VEC; e++) qf[rr][n][e] = pa_elem<T>(x, e) * a.qmul;
            }

        float m[RMAX], l[RMAX], acc[RMAX][NVL][VEC];
#pragma unroll
        for (int rr = 0; rr < RMAX; rr++) {
            m[rr] = -INFINITY;
            l[rr] = 0.0f;
#pragma unroll
            for (int n = 0; n < NVL; n++)
#pragma unroll
                for (int e = 0; e < VEC; e++) acc[rr][n][e] = 0.0f;
        }

        const uint32_t *btrow = a.bt + (int64_t)s * a.MB;
        const T *kbase = K + (int64_t)kh * a.ks2, *vbase = V + (int64_t)kh * a.vs2;
        const int64_t nround = (hi - lo + NG * PA_U - 1) / (NG * PA_U);
        _Pragma("unroll 1")
        for (int64_t rd = 0; rd < nround; rd++) {               /* uniform over the block: shuffles below */
            const int64_t jb = lo + rd * (NG * PA_U) + grp * PA_U;
            /* each key's pool row (a key past p, or in a block whose id is
               out of range, is left out) */
            bool kin[PA_U];
            int64_t ko[PA_U], vo[PA_U];
#pragma unroll
            for (int u = 0; u < PA_U; u++) {
                kin[u] = false;
                ko[u] = vo[u] = 0;
                if (jb + u < hi) {
                    const uint32_t j = (uint32_t)(jb + u);
                    const uint32_t bi = wk_divmod32_div(a.dbs, j), row = j - bi * a.BS;
                    const uint32_t b = btrow[bi];
                    if ((int64_t)b < a.NB) {
                        kin[u] = true;
                        ko[u] = (int64_t)b * a.ks0 + (int64_t)row * a.ks1;
                        vo[u] = (int64_t)b * a.vs0 + (int64_t)row * a.vs1;
                    }
                }
            }
            uint4 kr[PA_U][NVL], vr[PA_U][NVL];                 /* raw 16-byte loads, converted at use */
#pragma unroll
            for (int u = 0; u < PA_U; u++)
#pragma unroll
                for (int n = 0; n < NVL; n++) {
                    const int d = (gl + GS * n) * VEC;
                    kr[u][n] = vr[u][n] = make_uint4(0u, 0u, 0u, 0u);
                    if (kin[u] && d < D) {
                        kr[u][n] = pa_ld16<T>(kbase + ko[u] + d, vec);
                        vr[u][n] = pa_ld16<T>(vbase + vo[u] + d, vec);
                    }
                }
            /* scores: one key at a time (its row converted once for all
               query rows), reduced over the group's lanes */
            float sc[RMAX][PA_U];
#pragma unroll
            for (int u = 0; u < PA_U; u++) {
                float kf[NVL][VEC];
#pragma unroll
                for (int n = 0; n < NVL; n++)
#pragma unroll
                    for (int e = 0; e < VEC; e++) kf[n][e] = pa_elem<T>(kr[u][n], e);
#pragma unroll
                for (int rr = 0; rr < RMAX; rr++) {
                    sc[rr][u] = -INFINITY;
                    if (rr < nr) {                              /* uniform */
                        float x = 0.0f;
#pragma unroll
                        for (int n = 0; n < NVL; n++)
#pragma unroll
                            for (int e = 0; e < VEC; e++) x = fmaf(qf[rr][n][e], kf[n][e], x);
#pragma unroll
                        for (int o = GS / 2; o > 0; o /= 2) x += wk_shfl_xor<32>(x, o, GS);
                        if (a.cap_inv != 0.0f) x = a.cap_log2 * tanhf(x * a.cap_inv);
                        /* a key left out, and a score of -inf or NaN, has no weight (as on the cpu) */
                        sc[rr][u] = kin[u] && x > -INFINITY ? x : -INFINITY;
                    }
                }
            }
            /* the online softmax: new max, rescale, the keys' weights (in sc) */
            float al[RMAX];
#pragma unroll
            for (int rr = 0; rr < RMAX; rr++) {
                al[rr] = 1.0f;
                if (rr >= nr) continue;                         /* uniform */
                float mx = m[rr];
#pragma unroll
                for (int u = 0; u < PA_U; u++) mx = fmaxf(mx, sc[rr][u]);
                const float mu = mx == -INFINITY ? 0.0f : mx;
                al[rr] = exp2f(m[rr] - mu);
                m[rr] = mx;
                float ps = 0.0f;
#pragma unroll
                for (int u = 0; u < PA_U; u++) {
                    sc[rr][u] = exp2f(sc[rr][u] - mu);
                    ps += sc[rr][u];
                }
                l[rr] = l[rr] * al[rr] + ps;
#pragma unroll
                for (int n = 0; n < NVL; n++)
#pragma unroll
                    for (int e = 0; e < VEC; e++) acc[rr][n][e] *= al[rr];
            }
            /* acc += p v: one value row at a time, converted once */
#pragma unroll
            for (int u = 0; u < PA_U; u++) {
                float vf[NVL][VEC];
#pragma unroll
                for (int n = 0; n < NVL; n++)
#pragma unroll
                    for (int e = 0; e < VEC; e++) vf[n][e] = pa_elem<T>(vr[u][n], e);
#pragma unroll
                for (int rr = 0; rr < RMAX; rr++)
                    if (rr < nr)                                /* uniform */
#pragma unroll
                        for (int n = 0; n < NVL; n++)
#pragma unroll
                            for (int e = 0; e < VEC; e++) acc[rr][n][e] = fmaf(sc[rr][u], vf[n][e], acc[rr][n][e]);
            }
        }

        /* merge the groups, one query row at a time, and write it */
#pragma unroll
        for (int rr = 0; rr < RMAX; rr++) {
            if (rr >= nr) continue;                             /* uniform (a predicate, not a break: the loop
                                                                   must unroll for acc[rr] to stay in registers) */
#pragma unroll
            for (int n = 0; n < NVL; n++)
#pragma unroll
                for (int e = 0; e < VEC; e++) sm_acc[grp][(gl + GS * n) * VEC + e] = acc[rr][n][e];
            if (gl == 0) {
                sm_m[grp] = m[rr];
                sm_l[grp] = l[rr];
            }
            __syncthreads();
            for (int d = tid; d < D; d += PA_NT) {
                float M = -INFINITY;
                for (int g = 0; g < NG; g++) M = fmaxf(M, sm_m[g]);
                const float mu = M == -INFINITY ? 0.0f : M;
                float A = 0.0f, L = 0.0f;
                for (int g = 0; g < NG; g++) {
                    const float w = exp2f(sm_m[g] - mu);
                    A = fmaf(sm_acc[g][d], w, A);
                    L = fmaf(sm_l[g], w, L);
                }
                out[(int64_t)rr * D + d] = wk_to<T>(L > 0.0f ? A / L : 0.0f);
            }
            __syncthreads();                                    /* before the next row overwrites sm_* */
        }
    }
}

/* ------------------------------------------------------------------ */
/* The matrix-core path (NVIDIA sm_80+, f16/bf16, 16-byte aligned rows) */

#if defined(WK_MMA_SM80)
#define PA_HAVE_MMA 1

#define PA_TK 16        /* keys of a warp's tile                                  */
#define PA_NSMAX 16     /* splits of one token's keys at most                     */
#ifndef PA_SPLIT_MIN
/* keys of a split at least (a multiple of 4 tiles); swept on an H200, 8B
   bf16 (bench/RESULTS-engine.md): 128 / 256 / 384 / 512 gave B=64 decode
   7,068 / 7,449 / 7,727 / 7,623 tok/s, B=1 207 / 202 / 198 / 193 */
#define PA_SPLIT_MIN 384
#endif
#define PA_SCRATCH_MAX ((size_t)64 << 20)  /* partials of one launch at most      */

/* The splits of a token's len keys (a function of len alone: a row's
 * summation order never depends on the rest of the batch): splits of
 * *chunk keys, at least PA_SPLIT_MIN, at most PA_NSMAX of them. */
__host__ __device__ inline int pa_splits(int64_t len, int64_t *chunk)
{
    int64_t c = (len + PA_NSMAX - 1) / PA_NSMAX;
    c = (c + 4 * PA_TK - 1) / (4 * PA_TK) * (4 * PA_TK);
    if (c < PA_SPLIT_MIN) c = PA_SPLIT_MIN;
    *chunk = c;
    return (int)((len + c - 1) / c);
}

#ifndef PA_NS128
/* stages of a warp's ring for heads of 128 or less (2: 74 KiB a block,
   3 blocks an SM; 3 measured no faster) */
#define PA_NS128 2
#endif
template <int DMAX> struct pa_mcfg {
    enum { LDS = DMAX + 8, NS = DMAX <= 128 ? PA_NS128 : 2, TILE = PA_TK * LDS * 2 /* bytes of K or V */ };
    static constexpr size_t stage = (size_t)2 * TILE;
    static constexpr size_t smem = (size_t)16 * LDS * 2 + (size_t)4 * NS * stage;
};

/* keys [j0, j0 + 16) of one sequence and kv head (K and V) into a warp's
 * stage through the block table; keys at or past lim, and keys in a block
 * whose id is out of range, are zeros; lanes of one warp only */
template <int DMAX>
WK_DEV void pa_load_tile(uint32_t sK, uint32_t sV, const pa_args &a, const uint16_t *kb, const uint16_t *vb,
                         const uint32_t *btrow, int64_t j0, int64_t lim, int lane)
{
    enum { CPR = DMAX / 8, LDS = DMAX + 8, RPP = 32 / CPR, NIT = PA_TK / RPP };
    const int c = lane % CPR, r0 = lane / CPR;
    const bool cok = c * 8 < a.D;
    const uint32_t so = (uint32_t)((r0 * LDS + c * 8) * 2);
#pragma unroll
    for (int it = 0; it < NIT; it++) {
        const int64_t j = j0 + r0 + it * RPP;
        bool ok = cok && j < lim;
        const uint16_t *ks = kb, *vs = vb;
        if (ok) {
            const uint32_t bi = wk_divmod32_div(a.dbs, (uint32_t)j), row = (uint32_t)j - bi * a.BS;
            const uint32_t b = btrow[bi];
            ok = (int64_t)b < a.NB;
            if (ok) {
                ks = kb + (int64_t)b * a.ks0 + (int64_t)row * a.ks1 + c * 8;
                vs = vb + (int64_t)b * a.vs0 + (int64_t)row * a.vs1 + c * 8;
            }
        }
        const uint32_t o = so + (uint32_t)(it * RPP * LDS * 2);
        wk_cp16(sK + o, ks, ok ? 16 : 0);
        wk_cp16(sV + o, vs, ok ? 16 : 0);
    }
}

/* One block per (token t0 + i, kv head, group of up to 16 of its G query
 * heads, split of the token's keys): the query heads are the 16 rows of
 * mma.sync's A (zeros past G), 4 warps take the split's tiles of 16 keys
 * in turn (tile w, w + 4, ..), each through an NS-stage cp.async ring,
 * S = Q K^T and O += P V on the matrix cores, the online softmax in
 * registers, P rounded to T before P V (as attention.hip's mma paths). The
 * warps merge through shared memory; a token of one split writes its rows,
 * else each split writes a partial (f32 rows, then m and l) and the last
 * split to finish (a counter per group, left at zero) combines them in
 * split order. */
template <typename T, int DMAX>
__global__ __launch_bounds__(128, DMAX <= 128 ? 2 : 1) void pa_mma_kernel(pa_args a, int64_t t0, int nsmax, float *part,
                                                                         unsigned *cnt)
{
    wk_pdl_wait();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    extern __shared__ uint4 pa_dsmem[];
    typedef pa_mcfg<DMAX> CF;
    enum { LDS = CF::LDS, NS = CF::NS, NKS = DMAX / 16, NDT = DMAX / 8, RM = 16 };
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, tq = lane % 4;
    const int D = a.D;
    int64_t blk = (int64_t)blockIdx.x;
    const int split = (int)(blk % nsmax);
    blk /= nsmax;
    const int rg = (int)(blk % a.nrg);
    blk /= a.nrg;
    const int hk = (int)(blk % a.Hkv);
    const int64_t grp = blk * a.nrg + rg;             /* this launch's group (token, kv head, rows) */
    const int64_t tl = blk / a.Hkv, t = t0 + tl;
    const int r0 = rg * RM, nrow = a.G - r0 < RM ? a.G - r0 : RM;
    T *out = (T *)a.o + (t * a.Hq + (int64_t)hk * a.G + r0) * D;
    const uint32_t s = a.seq[t], p = a.pos[t];
    if (!pa_token_ok(a, s, p)) {                     /* (unchecked in a graph) zeros */
        if (split == 0)
            for (int i = tid; i < nrow * D; i += 128) out[i] = wk_to<T>(0.0f);
        return;
    }
    int64_t lo, hi, chunk;
    pa_range(a, p, &lo, &hi);
    const int nuse = pa_splits(hi - lo, &chunk);
    if (split >= nuse) return;                       /* (uniform) */
    const int64_t kbeg = lo + split * chunk, kend = kbeg + chunk < hi ? kbeg + chunk : hi;

    uint16_t *Qs = (uint16_t *)pa_dsmem;
    const uint32_t sQ = wk_smem_u32(Qs);
    const uint32_t sW = sQ + (uint32_t)(RM * LDS * 2) + (uint32_t)(warp * NS * CF::stage);
    for (int idx = tid; idx < RM * (DMAX / 8); idx += 128) {
        const int rr = idx / (DMAX / 8), c = idx % (DMAX / 8);
        const bool ok = rr < nrow && c * 8 < D;
        const uint16_t *src = (const uint16_t *)a.q;
        if (ok) src += t * a.qs0 + (int64_t)(hk * a.G + r0 + rr) * a.qs1 + c * 8;
        wk_cp16(sQ + (uint32_t)((rr * LDS + c * 8) * 2), src, ok ? 16 : 0);
    }
    wk_cp_commit();
    const uint32_t *btrow = a.bt + (int64_t)s * a.MB;
    const uint16_t *kp = (const uint16_t *)a.k + (int64_t)hk * a.ks2, *vp = (const uint16_t *)a.v + (int64_t)hk * a.vs2;
    const int ntile = (int)((kend - kbeg + PA_TK - 1) / PA_TK);
    const int nmine = ntile > warp ? (ntile - warp + 3) / 4 : 0;     /* tiles warp, warp + 4, .. */
    const bool cap = a.cap_inv != 0.0f;

#pragma unroll
    for (int st = 0; st < NS - 1; st++) {
        if (st < nmine) {
            const uint32_t sK = sW + (uint32_t)(st * CF::stage);
            pa_load_tile<DMAX>(sK, sK + (uint32_t)CF::TILE, a, kp, vp, btrow, kbeg + (warp + 4 * st) * PA_TK, kend, lane);
        }
        wk_cp_commit();
    }
    asm volatile("cp.async.wait_group %0;" ::"n"(NS - 1) : "memory");   /* Q (the oldest group) */
    __syncthreads();
    enum { QREG = DMAX <= 128 };
    uint32_t qa[QREG ? NKS : 1][4];
    const uint32_t sQl = sQ + (uint32_t)(((lane % 16) * LDS + (lane / 16) * 8) * 2);
    if (QREG) {
#pragma unroll
        for (int ks = 0; ks < (QREG ? NKS : 1); ks++) wk_ldsm4(qa[ks], sQl + (uint32_t)(ks * 32));
    }

    float o[NDT][4];
#pragma unroll
    for (int n = 0; n < NDT; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    float mrow[2] = { -INFINITY, -INFINITY }, lrow[2] = { 0.0f, 0.0f };

    for (int it = 0; it < nmine; it++) {
        {   /* tile it + NS - 1 into the stage that tile it - 1 used */
            const int nx = it + NS - 1;
            if (nx < nmine) {
                const uint32_t sK = sW + (uint32_t)((nx % NS) * CF::stage);
                pa_load_tile<DMAX>(sK, sK + (uint32_t)CF::TILE, a, kp, vp, btrow, kbeg + (warp + 4 * nx) * PA_TK, kend,
                                   lane);
            }
            wk_cp_commit();
        }
        const int64_t j0 = kbeg + (warp + 4 * it) * PA_TK;
        /* which of the tile's keys count: before kend, in a block in range
           (lane i < 16 asks for key j0 + i) */
        bool kin = false;
        if (lane < PA_TK && j0 + lane < kend) {
            const uint32_t bi = wk_divmod32_div(a.dbs, (uint32_t)(j0 + lane));
            kin = (int64_t)btrow[bi] < a.NB;
        }
        const unsigned kmask = __ballot_sync(0xffffffffu, kin) & 0xFFFFu;
        asm volatile("cp.async.wait_group %0;" ::"n"(NS - 1) : "memory");
        __syncwarp();
        const uint32_t sK = sW + (uint32_t)((it % NS) * CF::stage), sV = sK + (uint32_t)CF::TILE;

        float sc4[2][4];
#pragma unroll
        for (int n = 0; n < 2; n++) sc4[n][0] = sc4[n][1] = sc4[n][2] = sc4[n][3] = 0.0f;
#pragma unroll
        for (int ks = 0; ks < NKS; ks++) {
            if (ks * 16 >= D) break;
            uint32_t kb[4];
            wk_ldsm4(kb, sK + (uint32_t)((((lane % 8) + (lane / 16) * 8) * LDS + ks * 16 + ((lane / 8) % 2) * 8) * 2));
            const uint32_t(&q4)[4] = qa[QREG ? ks : 0];
            if (!QREG) wk_ldsm4(qa[0], sQl + (uint32_t)(ks * 32));
            wk_mma<T>(sc4[0], q4, kb[0], kb[1]);
            wk_mma<T>(sc4[1], q4, kb[2], kb[3]);
        }
        /* the scale folded into the exponent (sc) unless the scores are
           made in log2 units here (keys left out, soft-cap) */
        float sc = a.qmul;
        if (kmask != 0xFFFFu || cap) {
            sc = 1.0f;
#pragma unroll
            for (int hr = 0; hr < 2; hr++)
#pragma unroll
                for (int n = 0; n < 2; n++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        float &x = sc4[n][2 * hr + e];
                        const float y = cap ? a.cap_log2 * tanhf(x * a.qmul * a.cap_inv) : x * a.qmul;
                        x = (kmask >> (n * 8 + 2 * tq + e)) & 1u ? y : -INFINITY;
                    }
        }
        uint32_t pa[4];
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            float mx = fmaxf(fmaxf(sc4[0][2 * hr], sc4[0][2 * hr + 1]), fmaxf(sc4[1][2 * hr], sc4[1][2 * hr + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float mn = fmaxf(mrow[hr], mx * sc);
            const float mu = mn == -INFINITY ? 0.0f : mn;
            const float al = exp2f(mrow[hr] - mu);
            mrow[hr] = mn;
            float sum = 0.0f;
#pragma unroll
            for (int n = 0; n < 2; n++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    float &x = sc4[n][2 * hr + e];
                    x = exp2f(fmaf(x, sc, -mu));
                    sum += x;
                }
            lrow[hr] = lrow[hr] * al + sum;
            if (al != 1.0f) {
#pragma unroll
                for (int n = 0; n < NDT; n++) {
                    o[n][2 * hr] *= al;
                    o[n][2 * hr + 1] *= al;
                }
            }
        }
        pa[0] = wk_pack2<T>(sc4[0][0], sc4[0][1]);
        pa[1] = wk_pack2<T>(sc4[0][2], sc4[0][3]);
        pa[2] = wk_pack2<T>(sc4[1][0], sc4[1][1]);
        pa[3] = wk_pack2<T>(sc4[1][2], sc4[1][3]);
#pragma unroll
        for (int dp = 0; dp < NDT / 2; dp++) {
            if (dp * 16 >= D) break;
            uint32_t vb[4];
            wk_ldsm4t(vb, sV + (uint32_t)((((lane % 8) + ((lane / 8) % 2) * 8) * LDS + dp * 16 + (lane / 16) * 8) * 2));
            wk_mma<T>(o[2 * dp], pa, vb[0], vb[1]);
            wk_mma<T>(o[2 * dp + 1], pa, vb[2], vb[3]);
        }
        __syncwarp();                                /* this stage is refilled next */
    }
    wk_cp_wait_all();
    __syncthreads();                                 /* every warp done with its stages */

    /* the warps' (m, l, o) of every row into shared memory */
    float *mo = (float *)(pa_dsmem + (RM * LDS * 2) / 16);
    float *ml = mo + 4 * RM * DMAX;
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        float L = lrow[hr];
        L += __shfl_xor_sync(0xffffffffu, L, 1);
        L += __shfl_xor_sync(0xffffffffu, L, 2);
        const int rr = g + 8 * hr;
        if (tq == 0) {
            ml[(warp * RM + rr) * 2] = mrow[hr];
            ml[(warp * RM + rr) * 2 + 1] = L;
        }
#pragma unroll
        for (int n = 0; n < NDT; n++) {
            if (n * 8 >= D) break;
            *(float2 *)(mo + (warp * RM + rr) * DMAX + n * 8 + 2 * tq) = make_float2(o[n][2 * hr], o[n][2 * hr + 1]);
        }
    }
    __syncthreads();
    /* this split's rows: merged over the warps in warp order; written
       (one split) or kept as a partial: part[(row * nsmax + split) * D],
       its (m, l) at pml[(row * nsmax + split) * 2], row = tl Hq + head */
    const int D4 = D / 4;
    const int64_t hrow0 = tl * a.Hq + (int64_t)hk * a.G + r0;
    float *pml = part + (int64_t)gridDim.x / nsmax / a.nrg / a.Hkv * a.Hq * nsmax * D;
    for (int idx = tid; idx < nrow * D4; idx += 128) {
        const int rr = idx / D4, d = (idx % D4) * 4;
        float M = -INFINITY;
#pragma unroll
        for (int w = 0; w < 4; w++) M = fmaxf(M, ml[(w * RM + rr) * 2]);
        const float mu = M == -INFINITY ? 0.0f : M;
        float4 A = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        float L = 0.0f;
#pragma unroll
        for (int w = 0; w < 4; w++) {
            const float wt = exp2f(ml[(w * RM + rr) * 2] - mu);
            const float4 x = *(const float4 *)(mo + (w * RM + rr) * DMAX + d);
            A.x = fmaf(x.x, wt, A.x);
            A.y = fmaf(x.y, wt, A.y);
            A.z = fmaf(x.z, wt, A.z);
            A.w = fmaf(x.w, wt, A.w);
            L = fmaf(ml[(w * RM + rr) * 2 + 1], wt, L);
        }
        if (nuse == 1) {
            const float iv = L > 0.0f ? 1.0f / L : 0.0f;
            uint2 pk;
            pk.x = wk_pack2<T>(A.x * iv, A.y * iv);
            pk.y = wk_pack2<T>(A.z * iv, A.w * iv);
            *(uint2 *)(out + (int64_t)rr * D + d) = pk;
        } else {
            const int64_t pr = (hrow0 + rr) * nsmax + split;
            *(float4 *)(part + pr * D + d) = A;
            if (d == 0) {
                pml[pr * 2] = M;
                pml[pr * 2 + 1] = L;
            }
        }
    }
    if (nuse == 1) return;

    /* the last split of the group to finish combines the partials (the
       counter goes back to zero) */
    __shared__ int s_last;
    __threadfence();
    __syncthreads();
    if (tid == 0) {
        const unsigned prev = atomicAdd(cnt + grp, 1u);
        s_last = prev == (unsigned)nuse - 1u;
        if (s_last) cnt[grp] = 0u;
    }
    __syncthreads();
    if (!s_last) return;
    __threadfence();
    float *wsm = ml + 4 * RM * 2;                    /* [RM][PA_NSMAX] weights, then 1 / L per row */
    float *inv = wsm + RM * PA_NSMAX;
    for (int rr = warp; rr < nrow; rr += 4) {
        const int64_t pr0 = (hrow0 + rr) * nsmax;
        const float mine = lane < nuse ? __ldcg(pml + (pr0 + lane) * 2) : -INFINITY;
        float M = mine;
#pragma unroll
        for (int o2 = 16; o2 > 0; o2 /= 2) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o2));
        const float mu = M == -INFINITY ? 0.0f : M;
        if (lane < nuse) wsm[rr * PA_NSMAX + lane] = exp2f(mine - mu);
        __syncwarp();
        if (lane == 0) {                             /* in split order */
            float L = 0.0f;
            for (int sp = 0; sp < nuse; sp++) L = fmaf(__ldcg(pml + (pr0 + sp) * 2 + 1), wsm[rr * PA_NSMAX + sp], L);
            inv[rr] = L > 0.0f ? 1.0f / L : 0.0f;
        }
    }
    __syncthreads();
    for (int idx = tid; idx < nrow * D4; idx += 128) {
        const int rr = idx / D4, d = (idx % D4) * 4;
        const float *pp = part + (hrow0 + rr) * nsmax * D + d;
        float4 A = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        for (int sp = 0; sp < nuse; sp++) {
            const float4 x = __ldcg((const float4 *)(pp + (int64_t)sp * D));
            const float w0 = wsm[rr * PA_NSMAX + sp];
            A.x = fmaf(x.x, w0, A.x);
            A.y = fmaf(x.y, w0, A.y);
            A.z = fmaf(x.z, w0, A.z);
            A.w = fmaf(x.w, w0, A.w);
        }
        const float iv = inv[rr];
        uint2 pk;
        pk.x = wk_pack2<T>(A.x * iv, A.y * iv);
        pk.y = wk_pack2<T>(A.z * iv, A.w * iv);
        *(uint2 *)(out + (int64_t)rr * D + d) = pk;
    }
#else
    (void)a;
    (void)t0;
    (void)nsmax;
    (void)part;
    (void)cnt;
#if defined(__CUDA_ARCH__)
    __trap();
#endif
#endif
}
#endif /* WK_MMA_SM80 */

/* ------------------------------------------------------------------ */
/* The id check                                                        */

/* The first token (lowest t) whose sequence, position or one of the block
 * ids it reads is out of range, into *first by atomicMin (*first holds
 * PA_NONE before); block 0 also sets *reset, the next call's word, to
 * PA_NONE. A block per token (grid-striding), its threads over the
 * token's blocks. */
__global__ __launch_bounds__(PA_CK_NT) void pa_check_kernel(pa_args a, unsigned long long *first,
                                                            unsigned long long *reset)
{
    if (blockIdx.x == 0 && threadIdx.x == 0 && reset) *reset = PA_NONE;
    _Pragma("unroll 1")
    for (int64_t t = blockIdx.x; t < a.T; t += gridDim.x) {
        const uint32_t s = a.seq[t], p = a.pos[t];
        if (!pa_token_ok(a, s, p)) {
            if (threadIdx.x == 0) atomicMin(first, (unsigned long long)t);
            continue;
        }
        int64_t lo, hi;
        pa_range(a, p, &lo, &hi);
        const uint32_t *btrow = a.bt + (int64_t)s * a.MB;
        const int64_t b1 = wk_divmod32_div(a.dbs, p);
        bool bad = false;
        for (int64_t b = wk_divmod32_div(a.dbs, (uint32_t)lo) + threadIdx.x; b <= b1; b += PA_CK_NT)
            bad |= (int64_t)btrow[b] >= a.NB;
        if (bad) atomicMin(first, (unsigned long long)t);
    }
}

/* Per-context state of the check (the context's extension slot
 * WK_GPU_EXT_PAGED), as index.hip's: the pinned host word the answer is
 * copied into, the event after that copy, the fence on the main stream,
 * the side stream, and two device words that alternate between calls
 * (a call's check writes one and resets the other for the next call, so
 * no call needs a memset). `lock` is held from the check's launch to the
 * read of its answer. host == NULL: no pinned memory or side stream (the
 * check then runs on the main stream and is waited for). */
struct pa_sync {
    std::mutex lock;
    unsigned long long *host;
    hipEvent_t ev, fence;
    hipStream_t side;
    unsigned long long *words;
    int cur;
    bool dirty;                    /* the words' state is unknown: set both first */
    std::mutex cnt_lock;           /* (the check's lock is held around the attention's launch) */
    unsigned *cnt;                 /* the matrix-core path's counters (one a group), kept at zero */
    int64_t cnt_cap;
};
static std::mutex pa_sync_make_lock;

static void pa_sync_free(wk_gpu_ctx *c, void *state)
{
    (void)c;
    pa_sync *y = (pa_sync *)state;
    if (!y) return;
    if (y->ev) {
        (void)hipEventSynchronize(y->ev);
        (void)hipEventDestroy(y->ev);
    }
    if (y->fence) (void)hipEventDestroy(y->fence);
    if (y->side) (void)hipStreamDestroy(y->side);
    if (y->words) (void)hipFree(y->words);
    if (y->cnt) (void)hipFree(y->cnt);
    if (y->host) (void)hipHostFree(y->host);
    (void)hipGetLastError();
    delete y;
}

static pa_sync *pa_sync_get(wk_gpu_ctx *c)
{
    std::lock_guard<std::mutex> g(pa_sync_make_lock);
    if (c->ext[WK_GPU_EXT_PAGED])
        return c->ext_free[WK_GPU_EXT_PAGED] == pa_sync_free ? (pa_sync *)c->ext[WK_GPU_EXT_PAGED] : NULL;
    pa_sync *y = new (std::nothrow) pa_sync;
    if (!y) return NULL;
    y->host = NULL;
    y->ev = y->fence = NULL;
    y->side = NULL;
    y->words = NULL;
    y->cur = 0;
    y->dirty = true;
    y->cnt = NULL;
    y->cnt_cap = 0;
    void *h = NULL;
    int least = 0, greatest = 0;
    if (hipDeviceGetStreamPriorityRange(&least, &greatest) != hipSuccess) greatest = 0;
    if (hipHostMalloc(&h, sizeof(unsigned long long), hipHostMallocDefault) == hipSuccess) y->host = (unsigned long long *)h;
    if (y->host && (hipEventCreateWithFlags(&y->ev, hipEventDisableTiming) != hipSuccess ||
                    hipEventCreateWithFlags(&y->fence, hipEventDisableTiming) != hipSuccess ||
                    hipStreamCreateWithPriority(&y->side, hipStreamNonBlocking, greatest) != hipSuccess ||
                    hipMalloc((void **)&y->words, 2 * sizeof(unsigned long long)) != hipSuccess)) {
        if (y->ev) (void)hipEventDestroy(y->ev);
        if (y->fence) (void)hipEventDestroy(y->fence);
        if (y->side) (void)hipStreamDestroy(y->side);
        y->ev = y->fence = NULL;
        y->side = NULL;
        y->words = NULL;
        (void)hipHostFree(y->host);
        y->host = NULL;
    }
    (void)hipGetLastError();       /* a failure above only costs speed */
    c->ext[WK_GPU_EXT_PAGED] = y;
    c->ext_free[WK_GPU_EXT_PAGED] = pa_sync_free;
    return y;
}

static unsigned pa_check_grid(const pa_args &a) { return (unsigned)(a.T < 1024 ? a.T : 1024); }

/* The message of a failed check: token t's sequence, position or first
 * bad block id, read back (the error path may wait) */
static wk_status pa_report(wk_gpu_ctx *c, const pa_args &a, int64_t t)
{
    uint32_t s = 0, p = 0;
    wk_status st = wk_gpu_read(c, &s, a.seq + t, sizeof s);
    if (st == WK_OK) st = wk_gpu_read(c, &p, a.pos + t, sizeof p);
    if (st != WK_OK) return st;
    if ((int64_t)s >= a.S)
        return wk_gpu_host->set_error(WK_ERR_INDEX,
                                      "paged_attention: token %lld's sequence %u is outside the block table's %lld",
                                      (long long)t, s, (long long)a.S);
    if ((int64_t)(p / a.BS) >= a.MB)
        return wk_gpu_host->set_error(WK_ERR_INDEX,
                                      "paged_attention: token %lld's position %u is past the block table's %lld blocks of %u",
                                      (long long)t, p, (long long)a.MB, a.BS);
    const int64_t hi = (int64_t)p + 1, lo = a.window > 0 && hi - a.window > 0 ? hi - a.window : 0;
    const int64_t b0 = lo / a.BS, n = (int64_t)(p / a.BS) - b0 + 1;
    uint32_t *ids = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)n);
    if (!ids) return wk_gpu_host->set_error(WK_ERR_MEMORY, "paged_attention: out of host memory for an error message");
    st = wk_gpu_read(c, ids, a.bt + (int64_t)s * a.MB + b0, sizeof(uint32_t) * (size_t)n);
    int64_t bad = -1;
    for (int64_t i = 0; st == WK_OK && i < n && bad < 0; i++)
        if ((int64_t)ids[i] >= a.NB) bad = i;
    const uint32_t id = bad >= 0 ? ids[bad] : 0;
    free(ids);
    if (st != WK_OK) return st;
    if (bad < 0)   /* (the ids changed since the check) */
        return wk_gpu_host->set_error(WK_ERR_INDEX, "paged_attention: token %lld reads a block id out of range",
                                      (long long)t);
    return wk_gpu_host->set_error(WK_ERR_INDEX,
                                  "paged_attention: block %lld of sequence %u is %u, outside the pools' %lld blocks",
                                  (long long)(b0 + bad), s, id, (long long)a.NB);
}

/* ------------------------------------------------------------------ */
/* Host                                                                */

template <typename T, int DV, int RMAX> static wk_status pa_launch(wk_gpu_ctx *c, const pa_args &a)
{
    const dim3 grid((unsigned)(a.Hkv * a.nrg), (unsigned)(a.T < PA_MAX_GRID_Y ? a.T : PA_MAX_GRID_Y));
    pa_kernel<T, DV, RMAX><<<grid, PA_NT, 0, c->stream>>>(a);
    return wk_gpu_launched(c, "paged_attention", __FILE__, __LINE__);
}

template <typename T, int RMAX> static wk_status pa_launch_r(wk_gpu_ctx *c, const pa_args &a)
{
    constexpr int VEC = 16 / sizeof(T);
    const int nv = a.D / VEC;                      /* 16-byte vectors per row (D a multiple of 8) */
    if (nv <= 8) return pa_launch<T, 8, RMAX>(c, a);
    if (nv <= 16) return pa_launch<T, 16, RMAX>(c, a);
    if (nv <= 32 || sizeof(T) < 4) return pa_launch<T, 32, RMAX>(c, a);
    return pa_launch<T, sizeof(T) < 4 ? 32 : 64, RMAX>(c, a);
}

template <typename T> static wk_status pa_launch_t(wk_gpu_ctx *c, pa_args a)
{
    const int rmax = a.G <= 1 ? 1 : a.G <= 2 ? 2 : a.G <= 4 ? 4 : 8;
    a.nrg = (a.G + rmax - 1) / rmax;
    switch (rmax) {
    case 1: return pa_launch_r<T, 1>(c, a);
    case 2: return pa_launch_r<T, 2>(c, a);
    case 4: return pa_launch_r<T, 4>(c, a);
    default: return pa_launch_r<T, 8>(c, a);
    }
}

#if defined(PA_HAVE_MMA)
/* At least n of the matrix-core path's counters (zero between calls):
 * grown after the stream drains; NULL while a graph is recorded and they
 * would have to grow (the caller then takes the portable kernel). */
static wk_status pa_counters(wk_gpu_ctx *c, int64_t n, unsigned **out)
{
    *out = NULL;
    pa_sync *y = pa_sync_get(c);
    if (!y) return wk_gpu_host->set_error(WK_ERR_MEMORY, "paged_attention: out of host memory");
    std::lock_guard<std::mutex> g(y->cnt_lock);
    if (y->cnt_cap < n) {
        if (c->recording) return WK_OK;
        if (y->cnt) {
            WK_GPU_CHECK(hipStreamSynchronize(c->stream));
            WK_GPU_CHECK(hipFree(y->cnt));
            y->cnt = NULL;
            y->cnt_cap = 0;
        }
        const int64_t cap = n > 4096 ? n : 4096;
        WK_GPU_CHECK(hipMalloc((void **)&y->cnt, sizeof(unsigned) * (size_t)cap));
        WK_GPU_CHECK(hipMemsetAsync(y->cnt, 0, sizeof(unsigned) * (size_t)cap, c->stream));
        y->cnt_cap = cap;
    }
    *out = y->cnt;
    return WK_OK;
}

/* The matrix-core path, in launches of at most PA_SCRATCH_MAX bytes of
 * partials (a token's work is the same in any launch). *took: false when
 * it could not run (counters while recording): nothing was launched. */
template <typename T, int DMAX> static wk_status pa_run_mma(wk_gpu_ctx *c, pa_args a, bool *took)
{
    static unsigned done;
    *took = false;
    const size_t smem = pa_mcfg<DMAX>::smem;
    wk_status st = wk_gpu_smem_limit(c, pa_mma_kernel<T, DMAX>, smem, &done);
    if (st != WK_OK) return st;
    a.nrg = (a.G + 15) / 16;
    /* splits at most: of the longest key range the table (or window) allows */
    int64_t keys = a.MB * (int64_t)a.BS;
    if (a.window > 0 && a.window < keys) keys = a.window;
    const int64_t ns = (keys + PA_SPLIT_MIN - 1) / PA_SPLIT_MIN;
    const int nsmax = ns < PA_NSMAX ? (int)ns : PA_NSMAX;
    const size_t per_tok = nsmax > 1 ? sizeof(float) * (size_t)a.Hq * (size_t)nsmax * (size_t)(a.D + 2) : 0;
    int64_t tp = per_tok ? (int64_t)(PA_SCRATCH_MAX / per_tok) : a.T;
    const int64_t per_blk = (int64_t)a.Hkv * a.nrg * nsmax;
    if (tp > INT32_MAX / per_blk) tp = INT32_MAX / per_blk;
    if (tp < 1) tp = 1;
    if (tp > a.T) tp = a.T;
    unsigned *cnt = NULL;
    if (nsmax > 1) {
        st = pa_counters(c, tp * a.Hkv * a.nrg, &cnt);
        if (st != WK_OK || !cnt) return st;
    }
    float *part = NULL;
    if (per_tok) {
        st = wk_gpu_scratch_alloc(c, per_tok * (size_t)tp, (void **)&part);
        if (st != WK_OK) return st;
    }
    *took = true;
    for (int64_t t0 = 0; t0 < a.T && st == WK_OK; t0 += tp) {
        const int64_t n = a.T - t0 < tp ? a.T - t0 : tp;
        WK_LAUNCH_PDL(c->cc_major >= 9, (pa_mma_kernel<T, DMAX>), (unsigned)(n * per_blk), 128, smem, c->stream, a, t0,
                      nsmax, part, cnt);
        st = wk_gpu_launched(c, "paged_attention", __FILE__, __LINE__);
    }
    if (part) wk_gpu_scratch_free(c, part);
    return st;
}

template <typename T> static wk_status pa_mma(wk_gpu_ctx *c, const pa_args &a, bool *took)
{
    if (a.D <= 64) return pa_run_mma<T, 64>(c, a, took);
    if (a.D <= 128) return pa_run_mma<T, 128>(c, a, took);
    return pa_run_mma<T, 256>(c, a, took);
}
#endif

static wk_status pa_attention(wk_gpu_ctx *c, wk_dtype dt, const pa_args &a)
{
#if defined(PA_HAVE_MMA)
    /* the matrix cores where the build, device, dtype and alignment allow
       (unless WICK_GPU_PAGED=portable) */
    if ((dt == WK_BF16 || dt == WK_F16) && c->cc_major >= 8 && a.vec && wk_gpu_env.paged_mma) {
        bool took = false;
        const wk_status st = dt == WK_BF16 ? pa_mma<wk_bf16_t>(c, a, &took) : pa_mma<wk_f16_t>(c, a, &took);
        if (st != WK_OK || took) return st;
    }
#endif
    switch (dt) {
    case WK_F32: return pa_launch_t<float>(c, a);
    case WK_BF16: return pa_launch_t<wk_bf16_t>(c, a);
    default: return pa_launch_t<wk_f16_t>(c, a);
    }
}

/* true when every row start of the rank-`rank` view v (its last dim
 * contiguous) is 16-byte aligned */
static bool pa_rows_aligned(const wk_view *v, int rank)
{
    const int n = (int)(16 / wk_gpu_dtype_size(v->dtype));
    if (!wk_gpu_aligned(wk_gpu_view_ptr(v), 16)) return false;
    for (int d = 0; d < rank - 1; d++)
        if (v->dims[d] > 1 && v->strides[d] % n != 0) return false;
    return true;
}

wk_status wk_gpu_paged_attention(void *ctx, const wk_op_args *args)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    const wk_view *dst = args->dst, *q = args->src[0], *k = args->src[1], *v = args->src[2];
    const wk_paged_attention_params *p = (const wk_paged_attention_params *)args->params;
    if (!p || !q || !k || !v || !dst || !p->block_table || !p->seq || !p->pos)
        return wk_gpu_host->set_error(WK_ERR_ARGUMENT, "paged_attention needs q, the pools, the ids and its parameters");
    const wk_dtype dt = q->dtype;
    if (dt != WK_F16 && dt != WK_BF16 && dt != WK_F32)
        return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "paged_attention on the GPU takes f16, bf16 or f32, not %s",
                                      wk_gpu_dtype_name(dt));
    if (k->dtype != dt || v->dtype != dt || dst->dtype != dt || q->rank != 3 || k->rank != 4 || v->rank != 4 ||
        dst->rank != 3)
        return wk_gpu_host->set_error(WK_ERR_SHAPE, "paged_attention expects q [T, Hq, D] and pools [NB, BS, Hkv, D] "
                                                    "of one dtype");
    const wk_view *bt = p->block_table, *seq = p->seq, *pos = p->pos;
    if (bt->dtype != WK_U32 || seq->dtype != WK_U32 || pos->dtype != WK_U32 || bt->rank != 2)
        return wk_gpu_host->set_error(WK_ERR_DTYPE, "paged_attention: the ids must be u32");
    const int64_t T = q->dims[0], Hq = q->dims[1], D = q->dims[2];
    const int64_t NB = k->dims[0], BS = k->dims[1], Hkv = k->dims[2];
    const int64_t S = bt->dims[0], MB = bt->dims[1];
    if (T == 0 || Hq == 0 || D == 0) return WK_OK;
    if (D % 8 != 0 || D > 256)
        return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED,
                                      "paged_attention on the GPU takes a head dim D that is a multiple of 8 up to 256, "
                                      "not D = %lld",
                                      (long long)D);
    if (Hkv <= 0 || Hq % Hkv != 0 || BS <= 0)
        return wk_gpu_host->set_error(WK_ERR_SHAPE,
                                      "paged_attention: query heads (%lld) must be a multiple of kv heads (%lld)",
                                      (long long)Hq, (long long)Hkv);
    if (Hq > ((int64_t)1 << 24) || BS > INT32_MAX || T > ((int64_t)1 << 40))
        return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED,
                                      "paged_attention on the GPU: Hq = %lld, BS = %lld, T = %lld is too large",
                                      (long long)Hq, (long long)BS, (long long)T);
    if (S == 0 || MB == 0)
        return wk_gpu_host->set_error(WK_ERR_INDEX, "paged_attention: the block table [%lld, %lld] is empty",
                                      (long long)S, (long long)MB);
    WK_GPU_ENTER(c);

    pa_args a;
    memset(&a, 0, sizeof a);
    a.q = wk_gpu_view_ptr(q);
    a.k = wk_gpu_view_ptr(k);
    a.v = wk_gpu_view_ptr(v);
    a.o = wk_gpu_view_ptr(dst);
    a.bt = (const uint32_t *)wk_gpu_view_ptr(bt);
    a.seq = (const uint32_t *)wk_gpu_view_ptr(seq);
    a.pos = (const uint32_t *)wk_gpu_view_ptr(pos);
    a.qs0 = q->strides[0];
    a.qs1 = q->strides[1];
    a.ks0 = k->strides[0];
    a.ks1 = k->strides[1];
    a.ks2 = k->strides[2];
    a.vs0 = v->strides[0];
    a.vs1 = v->strides[1];
    a.vs2 = v->strides[2];
    a.T = T;
    a.S = S;
    a.MB = MB;
    a.NB = NB;
    a.BS = (uint32_t)BS;
    a.dbs = wk_divmod32_make((uint32_t)BS);
    a.Hq = (int)Hq;
    a.Hkv = (int)Hkv;
    a.G = (int)(Hq / Hkv);
    a.D = (int)D;
    a.window = p->window > 0 ? p->window : 0;
    if (p->softcap > 0) {
        a.qmul = (float)p->scale;
        a.cap_inv = (float)(1.0 / p->softcap);
        a.cap_log2 = (float)(p->softcap * 1.4426950408889634);
    } else {
        a.qmul = (float)(p->scale * 1.4426950408889634);
    }
    a.vec = pa_rows_aligned(q, 3) && pa_rows_aligned(k, 4) && pa_rows_aligned(v, 4);

    /* recording a graph, or ids the caller checked (WK_OPF_IDS_CHECKED): no
       check (the kernel reads through no bad id) */
    if (c->recording || (args->flags & WK_OPF_IDS_CHECKED)) return pa_attention(c, dt, a);

    pa_sync *y = pa_sync_get(c);
    if (!y || !y->host) {                          /* no pinned memory: check, wait, then run */
        unsigned long long *word = NULL, first = PA_NONE;
        wk_status st = wk_gpu_scratch_alloc(c, sizeof *word, (void **)&word);
        if (st != WK_OK) return st;
        hipError_t e = hipMemsetAsync(word, 0xFF, sizeof *word, c->stream);
        if (e != hipSuccess) st = wk_gpu_fail(c, e, "hipMemsetAsync(paged_attention id check)", __FILE__, __LINE__);
        if (st == WK_OK) {
            pa_check_kernel<<<pa_check_grid(a), PA_CK_NT, 0, c->stream>>>(a, word, NULL);
            st = wk_gpu_launched(c, "paged_attention id check", __FILE__, __LINE__);
        }
        if (st == WK_OK) st = wk_gpu_read(c, &first, word, sizeof first);
        wk_gpu_scratch_free(c, word);
        if (st != WK_OK) return st;
        if (first != PA_NONE) return pa_report(c, a, (int64_t)first);
        return pa_attention(c, dt, a);
    }

    std::unique_lock<std::mutex> held(y->lock);
    if (y->dirty) {
        WK_GPU_CHECK_C(c, hipMemsetAsync(y->words, 0xFF, 2 * sizeof *y->words, c->stream));
        y->dirty = false;
    }
    unsigned long long *word = y->words + y->cur, *reset = y->words + (y->cur ^ 1);
    y->cur ^= 1;
    y->dirty = true;                               /* until the check has run and been read */
    /* the side stream starts where the main stream stands (the inputs are
       ready) and runs the check while the attention runs */
    WK_GPU_CHECK_C(c, hipEventRecord(y->fence, c->stream));
    WK_GPU_CHECK_C(c, hipStreamWaitEvent(y->side, y->fence, 0));
    pa_check_kernel<<<pa_check_grid(a), PA_CK_NT, 0, y->side>>>(a, word, reset);
    wk_status st = wk_gpu_launched(c, "paged_attention id check", __FILE__, __LINE__);
    if (st != WK_OK) return st;
    const wk_status run = pa_attention(c, dt, a);
    WK_GPU_CHECK_C(c, hipMemcpyAsync(y->host, word, sizeof *word, hipMemcpyDeviceToHost, y->side));
    WK_GPU_CHECK_C(c, hipEventRecord(y->ev, y->side));
    const hipError_t e = hipEventSynchronize(y->ev);
    if (e != hipSuccess) return wk_gpu_fail(c, e, "hipEventSynchronize(paged_attention id check)", __FILE__, __LINE__);
    const unsigned long long first = *(volatile unsigned long long *)y->host;
    y->dirty = false;
    held.unlock();
    if (first != PA_NONE) return pa_report(c, a, (int64_t)first);
    return run;
}
