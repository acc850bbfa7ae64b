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
 * Launch shape: PA_NT threads a block (128), PA_U keys a group a round (4),
 * and blocks per SM asked of the compiler by the rows a block takes (4 for
 * RMAX <= 2, 3 for 4, 2 for 8: at most 128, 170 and 255 registers a
 * thread; the shape of attention.hip's FMA decode kernel, which was
 * measured; this kernel's own shape is not measured yet). -DPA_NT=... and
 * -DPA_U=... override them for a tuning run.
 */
#include "gpu_internal.h"
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

static wk_status pa_attention(wk_gpu_ctx *c, wk_dtype dt, const pa_args &a)
{
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
