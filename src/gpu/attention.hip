/* attention.hip — the GPU's attention (family ATTENTION):
 *   out[b, h, i, :] = sum_j softmax_j(s_ij) v[b, h / G, j, :]
 *   s_ij = scale q[b, h, i] . k[b, h / G, j], soft-capped (cap tanh(s / cap))
 *   when softcap > 0, plus mask[b, h, i, j]; keys outside the causal
 *   (j <= i + Tk - Tq) or window (j > i + Tk - Tq - window) range of query i
 *   are left out; a query that sees no key, or only scores of -inf, gets
 *   zeros. G = Hq / Hkv (grouped-query heads: K and V are never repeated).
 * f16, bf16 and f32 (f64 stays on the cpu); scores, softmax and the
 * accumulator are f32; D is a multiple of 8 up to 256.
 *
 * Every path is a flash attention: online softmax (running max m and sum
 * l per query row, the accumulator rescaled by exp(m_old - m_new) when the
 * max grows), scores and probabilities never written to global memory,
 * only the key tiles that some row of the block can see visited (causal
 * and window ranges skip whole tiles; the per-element test runs on the
 * boundary tiles only). Scores are kept in log2 units (scale * log2 e
 * folded in) so that every exponential is one exp2.
 *
 * The paths, chosen per call by at_pick (the environment variable
 * WICK_GPU_ATTN=portable|mma|decode|decode_fma, read once: gpu_env.h,
 * forces one, for tests and tuning; mma takes 1 or 4, decode 1b or 4's decode where they are
 * built, else 3):
 *
 * 1. mma (NVIDIA sm_80+, f16/bf16, rows 16-byte aligned): FlashAttention-2
 *    style. A block is 4 warps and BM = 64 MT query rows (MT = 2 for
 *    D <= 128: each warp owns 32 rows, so each K/V fragment read from
 *    shared memory feeds two MMAs; MT = 1 for D = 256, where the 128-float
 *    accumulator per thread leaves no room for more); key tiles of BN = 64.
 *    Q, K and V tiles go to shared memory with cp.async (16-byte chunks,
 *    rows padded by 16 bytes so that ldmatrix is free of bank conflicts);
 *    V[j] is fetched while S = Q K[j]^T is computed and K[j+1] while P V[j]
 *    is, so each tile's copy hides behind the other product. S = Q K^T
 *    and O += P V are mma.sync.m16n8k16 (f32 accumulate) fed by ldmatrix
 *    (ldmatrix.trans for V); P stays in registers: the accumulator layout
 *    of two 16x8 score tiles is the A-operand layout of one 16x16 tile, so
 *    P is rounded to bf16/f16 pairs in place. Row max and sum are reduced
 *    over the 4 lanes of a quad with shuffles (NVIDIA-only code: 32-lane
 *    warps). The accumulator is rescaled only when a row's max moved (a
 *    per-lane branch; after the first tiles it rarely does). Blocks are
 *    ordered heaviest first (the last query blocks of a causal call see
 *    the most keys). Compiled only in the plain CUDA build (not under HIP,
 *    WK_VIRTUAL_WAVE64 or WK_ATTN_PORTABLE); the body is inside
 *    #if __CUDA_ARCH__ >= 800. What limits it on an H100 (about 240-290
 *    TFLOP/s, 0.4-0.5x cuDNN's wgmma kernels): mma.sync, Ampere's
 *    instruction, issues at well under Hopper's wgmma rate, each warp
 *    re-reads its K and V fragments from shared memory (ldmatrix), the
 *    2-tile kernel (MT = 2, D = 128) sits at the 255-register cap with a
 *    small spill, and 8 warps per SM leave the softmax little to overlap
 *    with. A Hopper path (wgmma from shared-memory descriptors, P from
 *    registers as the A operand, V MN-major through the transpose bit, TMA
 *    loads) is what closes the gap, and is not written.
 *
 * 1b. mma decode (same build and types, few rows per kv head): the rows
 *    that share a kv head (R = (Hq / Hkv) Tq, up to 16 a block: the MMA's
 *    M; rows past R are zeros) against one chunk of the keys. Each of the
 *    4 warps streams its own 16-key tiles (tiles w, w + 4, ..) through 3
 *    shared-memory stages (2 at D = 256) with cp.async, with no block
 *    barrier in the loop; S = Q K^T and O += P V are m16n8k16 MMAs as in
 *    the prefill kernel (Q's fragments held in registers up to D = 128).
 *    The warps merge their (m, l, o) through shared memory, the block
 *    writes one partial per row, and the last block of each kv head to
 *    finish (a counter per head in the context, zeroed once and left at
 *    zero by every call) combines the chunks and writes the output: one
 *    launch in all. Chunks: one full wave of blocks (2 per SM up to
 *    D = 128: 109 KB of stages each), at least 64 keys each. On an H100
 *    it streams K and V at about 2.4 TB/s (80% of the copy rate) at
 *    Tk = 65536; short calls are bound by the fixed cost (launch, the
 *    first tiles' latency, the combine in the last blocks: about 10 us).
 *
 * 2. portable (plain FMAs; f32 everywhere, every dtype on AMD GPUs without
 *    MFMA (gfx1030) or where 4 cannot take the call, and any GPU
 *    when built with -DWK_ATTN_PORTABLE, `make cuda ATTN_PORTABLE=1`):
 *    256 threads as a 16 x 16 grid, Q tile (BM rows) and one K-or-V tile
 *    (BN keys) in shared memory as f32 (rows padded to D + 4 floats, so the
 *    16-byte reads along D of 16 different rows hit distinct banks), the
 *    BM x BN scores in shared memory between the two products; each thread
 *    owns BM/16 x BN/16 scores and BM/16 x DMAX/16 outputs. BM x BN is
 *    64 x 64 (D <= 64), 64 x 32 (D <= 128), 32 x 16 (D <= 256): at most
 *    61 KB of shared memory, inside the 64 KB of AMD's LDS. No warp
 *    operation at all, so wave32 and wave64 run the same code.
 *
 * 3. decode (flash-decoding with FMAs; f32, and every dtype where neither
 *    1b nor 4's decode runs: gfx1030 and the portable builds; forced by
 *    WICK_GPU_ATTN=decode_fma) when the rows that share a kv head,
 *    R = (Hq / Hkv) Tq, are few (<= 8): one block takes
 *    all R rows of a (batch, kv head) — so K and V are read once for the G
 *    query heads — and one chunk of the keys; the chunks split the keys
 *    across enough blocks to fill the GPU. In a block of 128 threads, a
 *    group of GS lanes (D / 8 rounded up to a power of two, at most 32)
 *    covers one key row with one 16-byte load per lane and takes U = 4 keys
 *    per round (8 loads in flight per lane); dot products are reduced over
 *    the group with shuffles inside GS-lane segments (the same on 32- and
 *    64-lane waves; every lane runs every round, so no shuffle is
 *    divergent). Groups merge their (m, l, acc) through shared memory;
 *    each block writes one partial (m, l, acc[D]) per row to scratch, and a
 *    second small kernel combines the chunks. R > 8 (or a forced decode)
 *    takes the rows in groups of 8. On an H100 it reaches about 40% of the
 *    copy rate at Tk = 65536: per key the FMAs, conversions, shuffles and
 *    exponentials cost about as much issue time as the bytes take to
 *    arrive, and a round's loads are not overlapped with its arithmetic.
 *
 * 4. mfma (CDNA: gfx90a, gfx940/941/942; f16/bf16, any strides): the
 *    matrix-core path of AMD's wave64 GPUs, through compat.h's wrappers of
 *    __builtin_amdgcn_mfma_f32_16x16x16f16 and _16x16x16bf16_1k (f32
 *    accumulate; P rounded to f16/bf16 before P V as the mma path does;
 *    f32 inputs keep the portable and FMA decode paths, as on NVIDIA).
 *    Prefill: 4 waves of 64, each owning MT row tiles of 16 (MT = 2 up to
 *    D = 128: 128 query rows a block; MT = 1 at D = 256), key tiles of
 *    BN = 64 (32 at D = 256) in shared memory, K as rows and V transposed
 *    (fits the 64 KB of LDS: at most 37 KB); the next tile's global loads
 *    are issued into registers before the current tile's products. Both
 *    products are computed transposed (S^T = K Q^T, O^T += V^T P^T), so
 *    that with AMD's layout (compat.h) lane l holds row l % 16 of every
 *    fragment: the scores of S^T's accumulator are P^T's B operand as
 *    they lie (no exchange through shared memory), the rescale by
 *    exp2(m_old - m_new) is per lane, and a row's max is reduced over its
 *    4 lanes (xor 16, 32). Decode (R = (Hq / Hkv) Tq <= 8 rows, or
 *    forced): flash-decoding as in 3, one block per (16-row group, chunk
 *    of keys), its 4 waves (2 at D = 256) each taking 16 keys of every
 *    tile, merged in shared memory, chunks combined by the same combine
 *    kernel. The kernels are compiled for every ROCm target (bodies only
 *    where the instructions exist; the host picks them from the device's
 *    gcnArchName, wk_mfma_arch) and in the virtual-wave64 build, where
 *    compat.h's software MFMA (AMD's register layout, lanes exchanged
 *    through shared memory) runs the same fragment indexing on NVIDIA, so
 *    the parity suite checks it; gfx1030 (RDNA2, no matrix cores) runs
 *    the portable and FMA decode paths. Not measured: there is no CDNA
 *    GPU here. On gfx90a the D <= 128 prefill kernels take about 410
 *    VGPRs+AGPRs (one wave per SIMD) and none spill; whether MT = 1 (more
 *    waves) is faster is for a run on an MI200/MI300 to say.
 */
#include "gpu_internal.h"
#include "mma.h"
#include <stdlib.h>
#include <mutex>

#define AT_LOG2E 1.4426950408889634f

/* ------------------------------------------------------------------ */
/* What every kernel gets                                              */

struct at_args {
    const void *q, *k, *v;        /* element 0 of each view (offset folded) */
    void *o;                      /* dst [B, Hq, Tq, D] contiguous          */
    const float *mask;            /* element 0 of the mask view, or NULL    */
    int64_t qs[3], ks[3], vs[3];  /* strides of b, h, t (elements); d is 1  */
    int64_t ms[4];                /* mask strides (0 on broadcast dims)     */
    int B, Hq, Hkv, G, Tq, Tk, D;
    int causal;
    int64_t window;               /* <= 0: none                             */
    int64_t shift;                /* Tk - Tq: query i sits at key i + shift */
    float qmul;                   /* scale (softcap) or scale log2 e        */
    float cap_inv, cap_log2;      /* 1/cap, cap log2 e; cap_inv 0: no cap   */
    int vec;                      /* rows of q, k, v allow 16-byte loads    */
    const void *kvlen;            /* the count of keys in device memory (u32, or
                                     i64 with kvlen64), or NULL: Tk         */
    int kvlen64;
    int sp_fill, sp_least, sp_cap, sp_max;   /* a decode call's rule for its
                                     chunks (at_split_of), for at_chunks    */
};

/* With a count of keys in device memory (wk_attention_opts.kv_len): the
 * keys [0, min(L, Tk)) and the queries aligned to their end, in every
 * kernel's own copy of the arguments. The host sized the grid for Tk
 * keys: the prefill kernels' blocks past L find no key; the decode
 * kernels and the combine also take their chunks from L (at_chunks). */
WK_DEV void at_dyn(at_args &a)
{
    if (!a.kvlen) return;
    const int64_t L = a.kvlen64 ? *(const int64_t *)a.kvlen : (int64_t)*(const uint32_t *)a.kvlen;
    if (L < a.Tk) a.Tk = L > 0 ? (int)L : 0;
    a.shift = (int64_t)a.Tk - a.Tq;
}

/* The chunks of a decode call over `range` keys: enough blocks for one
 * wave of the device (`fill` per group of rows), of at least `least`
 * keys, at most `cap` of them (or one per 2048 keys, up to `max`, where
 * that is more): their count, and *chunk keys each. */
WK_HD int64_t at_split_of(int64_t range, int64_t fill, int64_t least, int64_t cap, int64_t max, int64_t *chunk)
{
    const int64_t most = range / 2048 > cap ? (range / 2048 < max ? range / 2048 : max) : cap;
    int64_t n = fill;
    const int64_t maxs = (range + least - 1) / least;
    if (n > maxs) n = maxs;
    if (n > most) n = most;
    if (n < 1) n = 1;
    *chunk = range > 0 ? (range + n - 1) / n : 0;
    return range > 0 ? (range + *chunk - 1) / *chunk : 1;
}

/* keys [*lo, *hi) that some query row in [i0, i1] can see */
WK_HD void at_key_range(const at_args &a, int64_t i0, int64_t i1, int64_t *lo, int64_t *hi)
{
    int64_t l = 0, h = a.Tk;
    if (a.causal && i1 + a.shift + 1 < h) h = i1 + a.shift + 1;
    if (a.window > 0 && i0 + a.shift - a.window + 1 > l) l = i0 + a.shift - a.window + 1;
    *lo = l;
    *hi = h;
}

/* The chunks a decode kernel takes (after at_dyn): the host's nsplit of
 * *chunk keys; or, with a count of keys in device memory, the host's rule
 * applied to the keys there, so that a graph recorded for a long stretch
 * of the cache (its grid has nsplit chunks for all of it) splits a short
 * count as a call for just those keys would, bit for bit. The blocks of
 * chunks past the count take no part (every block finds the same count). */
WK_DEV int at_chunks(const at_args &a, int nsplit, int64_t *chunk)
{
    if (!a.kvlen) return nsplit;
    int64_t lo, hi, c;
    at_key_range(a, 0, a.Tq - 1, &lo, &hi);
    const int64_t range = hi > lo ? hi - lo : 0;
    int64_t n = at_split_of(range, a.sp_fill, a.sp_least, a.sp_cap, a.sp_max, &c);
    if (n > nsplit) {   /* (a rounding the grid's count did not have) */
        n = nsplit;
        c = (range + n - 1) / n;
    }
    *chunk = c;
    return (int)n;
}

WK_DEV bool at_visible(const at_args &a, int64_t i, int64_t j)
{
    const int64_t pos = i + a.shift;
    return (!a.causal || j <= pos) && (a.window <= 0 || j > pos - a.window);
}

/* x = (q qmul) . k -> the score in log2 units, capped and masked; mofs:
 * the mask offset of (b, h) */
WK_DEV float at_score(const at_args &a, float x, int64_t mofs, int64_t i, int64_t j)
{
    if (a.cap_inv != 0.0f) x = a.cap_log2 * tanhf(x * a.cap_inv);
    if (a.mask) x += a.mask[mofs + i * a.ms[2] + j * a.ms[3]] * AT_LOG2E;
    return x;
}

/* N consecutive elements as f32: one vector load when vec (the address is
 * then a multiple of N elements), else element by element */
template <typename T, int N> WK_DEV void at_ldv(const T *p, bool vec, float (&f)[N])
{
    if (vec) {
        const wk_vec<T, N> x = *(const wk_vec<T, N> *)p;
#pragma unroll
        for (int e = 0; e < N; e++) f[e] = wk_load_c(x.v[e]);
    } else {
#pragma unroll
        for (int e = 0; e < N; e++) f[e] = wk_load_c(p[e]);
    }
}

extern __shared__ uint4 at_dsmem[];      /* dynamic shared memory of every kernel here */

/* ------------------------------------------------------------------ */
/* 2. portable flash attention (plain FMAs, any wave width)            */

template <int DMAX> struct at_pcfg;
template <> struct at_pcfg<64> { enum { BM = 64, BN = 64 }; };
template <> struct at_pcfg<128> { enum { BM = 64, BN = 32 }; };
template <> struct at_pcfg<256> { enum { BM = 32, BN = 16 }; };
#define AT_PNT 256

static inline size_t at_portable_smem(int DMAX, int D)
{
    const int BM = DMAX == 64 ? 64 : DMAX == 128 ? 64 : 32, BN = DMAX == 64 ? 64 : DMAX == 128 ? 32 : 16;
    const int ld = D + 4, NP = AT_PNT / BM;
    return sizeof(float) * ((size_t)BM * ld + (size_t)BN * ld + (size_t)BM * (BN + 1) + BM + (size_t)BM * NP);
}

template <typename T, int DMAX>
__global__ __launch_bounds__(AT_PNT) void at_portable_kernel(at_args a)
{
    at_dyn(a);
    enum { BM = at_pcfg<DMAX>::BM, BN = at_pcfg<DMAX>::BN, NT = AT_PNT };
    enum { RM = BM / 16, CN = BN / 16, CD = DMAX / 16, NP = NT / BM, SLD = BN + 1 };
    enum { VCH = (BN * DMAX / 4 + NT - 1) / NT };   /* V chunks of 4 per thread */
    const int D = a.D, ld = D + 4, D4 = D / 4;
    float *Qs = (float *)at_dsmem;           /* [BM][ld] q * qmul                 */
    float *KVs = Qs + BM * ld;               /* [BN][ld] the K tile, then the V tile */
    float *Ss = KVs + BN * ld;               /* [BM][SLD] scores, then p          */
    float *alpha_s = Ss + BM * SLD;          /* [BM] rescale of this tile         */
    float *red = alpha_s + BM;               /* [BM][NP] partial max / sum        */
    const T *Q = (const T *)a.q, *K = (const T *)a.k, *V = (const T *)a.v;
    const bool vec = a.vec != 0;

    const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;
    const int rs = tid / NP, ps = tid % NP;  /* softmax phase: row, part       */
    const int64_t nqb = (a.Tq + BM - 1) / BM, nbh = (int64_t)a.B * a.Hq;
    const int64_t qb = nqb - 1 - (int64_t)blockIdx.x / nbh, bh = (int64_t)blockIdx.x % nbh;
    const int b = (int)(bh / a.Hq), h = (int)(bh % a.Hq), hk = h / a.G;
    const int64_t i0 = qb * BM, i1 = (i0 + BM < a.Tq ? i0 + BM : a.Tq) - 1;
    const T *qp = Q + b * a.qs[0] + h * a.qs[1];
    const T *kp = K + b * a.ks[0] + hk * a.ks[1];
    const T *vp = V + b * a.vs[0] + hk * a.vs[1];
    const int64_t mofs = b * a.ms[0] + h * a.ms[1];
    int64_t kbeg, kend;
    at_key_range(a, i0, i1, &kbeg, &kend);

    for (int idx = tid; idx < BM * D4; idx += NT) {
        const int r = idx / D4, c = idx % D4;
        float f[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
        if (i0 + r < a.Tq) at_ldv<T, 4>(qp + (i0 + r) * a.qs[2] + c * 4, vec, f);
        *(float4 *)(Qs + r * ld + c * 4) = make_float4(f[0] * a.qmul, f[1] * a.qmul, f[2] * a.qmul, f[3] * a.qmul);
    }

    float acc[RM][CD];
#pragma unroll
    for (int r = 0; r < RM; r++)
#pragma unroll
        for (int c = 0; c < CD; c++) acc[r][c] = 0.0f;
    float m_run = -INFINITY, l_part = 0.0f;

    for (int64_t j0 = kbeg; j0 < kend; j0 += BN) {
        for (int idx = tid; idx < BN * D4; idx += NT) {
            const int r = idx / D4, c = idx % D4;
            float f[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
            if (j0 + r < kend) at_ldv<T, 4>(kp + (j0 + r) * a.ks[2] + c * 4, vec, f);
            *(float4 *)(KVs + r * ld + c * 4) = make_float4(f[0], f[1], f[2], f[3]);
        }
        __syncthreads();                     /* Q (first time) and K in place   */
        float s[RM][CN];
#pragma unroll
        for (int r = 0; r < RM; r++)
#pragma unroll
            for (int c = 0; c < CN; c++) s[r][c] = 0.0f;
        for (int d = 0; d < D; d += 4) {
            float4 qv[RM], kv[CN];
#pragma unroll
            for (int r = 0; r < RM; r++) qv[r] = *(const float4 *)(Qs + (ty + 16 * r) * ld + d);
#pragma unroll
            for (int c = 0; c < CN; c++) kv[c] = *(const float4 *)(KVs + (tx + 16 * c) * ld + d);
#pragma unroll
            for (int r = 0; r < RM; r++)
#pragma unroll
                for (int c = 0; c < CN; c++) {
                    s[r][c] = fmaf(qv[r].x, kv[c].x, s[r][c]);
                    s[r][c] = fmaf(qv[r].y, kv[c].y, s[r][c]);
                    s[r][c] = fmaf(qv[r].z, kv[c].z, s[r][c]);
                    s[r][c] = fmaf(qv[r].w, kv[c].w, s[r][c]);
                }
        }
#pragma unroll
        for (int r = 0; r < RM; r++)
#pragma unroll
            for (int c = 0; c < CN; c++) {
                const int64_t i = i0 + ty + 16 * r, j = j0 + tx + 16 * c;
                float t = -INFINITY;
                if (i < a.Tq && j < kend && at_visible(a, i, j)) t = at_score(a, s[r][c], mofs, i, j);
                Ss[(ty + 16 * r) * SLD + tx + 16 * c] = t;
            }
        __syncthreads();                     /* scores in place; K no longer read */
        float4 vreg[VCH];
#pragma unroll
        for (int u = 0; u < VCH; u++) {
            const int idx = tid + u * NT;
            float f[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
            if (idx < BN * D4) {
                const int r = idx / D4, c = idx % D4;
                if (j0 + r < kend) at_ldv<T, 4>(vp + (j0 + r) * a.vs[2] + c * 4, vec, f);
            }
            vreg[u] = make_float4(f[0], f[1], f[2], f[3]);
        }
        float mx = -INFINITY;
        for (int c = ps; c < BN; c += NP) mx = fmaxf(mx, Ss[rs * SLD + c]);
        red[rs * NP + ps] = mx;
#pragma unroll
        for (int u = 0; u < VCH; u++) {
            const int idx = tid + u * NT;
            if (idx < BN * D4) {
                const int r = idx / D4, c = idx % D4;
                *(float4 *)(KVs + r * ld + c * 4) = vreg[u];
            }
        }
        __syncthreads();                     /* partial maxima and V in place   */
        float m_new = m_run;
#pragma unroll
        for (int p = 0; p < NP; p++) m_new = fmaxf(m_new, red[rs * NP + p]);
        const float m_use = m_new == -INFINITY ? 0.0f : m_new;
        const float alpha = exp2f(m_run - m_use);
        float sum = 0.0f;
        for (int c = ps; c < BN; c += NP) {
            const float p = exp2f(Ss[rs * SLD + c] - m_use);
            Ss[rs * SLD + c] = p;
            sum += p;
        }
        l_part = l_part * alpha + sum;
        m_run = m_new;
        if (ps == 0) alpha_s[rs] = alpha;
        __syncthreads();                     /* p and alpha in place            */
#pragma unroll
        for (int r = 0; r < RM; r++) {
            const float al = alpha_s[ty + 16 * r];
#pragma unroll
            for (int c = 0; c < CD; c++) acc[r][c] *= al;
        }
        for (int n = 0; n < BN; n++) {
            float pv[RM];
#pragma unroll
            for (int r = 0; r < RM; r++) pv[r] = Ss[(ty + 16 * r) * SLD + n];
#pragma unroll
            for (int c = 0; c < CD; c++) {
                if (tx + 16 * c < D) {
                    const float vv = KVs[n * ld + tx + 16 * c];
#pragma unroll
                    for (int r = 0; r < RM; r++) acc[r][c] = fmaf(pv[r], vv, acc[r][c]);
                }
            }
        }
        __syncthreads();                     /* done with V and p before the next tile */
    }

    red[rs * NP + ps] = l_part;
    __syncthreads();
    T *op = (T *)a.o + (bh * a.Tq) * D;
#pragma unroll
    for (int r = 0; r < RM; r++) {
        const int64_t i = i0 + ty + 16 * r;
        if (i >= a.Tq) continue;
        float L = 0.0f;
#pragma unroll
        for (int p = 0; p < NP; p++) L += red[(ty + 16 * r) * NP + p];
        const float inv = L > 0.0f ? 1.0f / L : 0.0f;
#pragma unroll
        for (int c = 0; c < CD; c++)
            if (tx + 16 * c < D) op[i * D + tx + 16 * c] = wk_to<T>(acc[r][c] * inv);
    }
}

/* 16 bytes of T (raw), one load when vec, else element by element */
template <typename T> WK_DEV uint4 at_ld16(const T *p, bool vec)
{
    if (vec) return *(const uint4 *)p;
    T e[16 / sizeof(T)];
#pragma unroll
    for (int i = 0; i < (int)(16 / sizeof(T)); i++) e[i] = p[i];
    uint4 r;
    memcpy(&r, e, 16);
    return r;
}
/* element e of 16 raw bytes as f32 (e a constant after unrolling) */
template <typename T> WK_DEV float at_elem(const uint4 &x, int e)
{
    const uint32_t w = e * (int)sizeof(T) / 4 == 0 ? x.x : e * (int)sizeof(T) / 4 == 1 ? x.y
                     : e * (int)sizeof(T) / 4 == 2 ? x.z : x.w;
    if constexpr (sizeof(T) == 4) {
        return __uint_as_float(w);
    } else {
        T v;
        v.bits = (uint16_t)(e % 2 ? w >> 16 : w & 0xFFFFu);
        return wk_load_c(v);
    }
}

/* ------------------------------------------------------------------ */
/* 3. decode: keys split across blocks, partials combined              */

#define AT_DNT 128     /* threads of a decode block                      */
#define AT_DU 4        /* keys per group per round                       */
#define AT_MAXSPLIT 1024

/* per block and row: acc[D] at part + (pb * RMAX + r) * D, then (m, l)
 * at part + nb * RMAX * D + (pb * RMAX + r) * 2 */
template <typename T, int DV, int RMAX>
__global__ __launch_bounds__(AT_DNT, RMAX <= 4 ? 3 : 2) void at_decode_kernel(at_args a, float *part, int nsplit, int64_t chunk,
                                                           int nrg)
{
    at_dyn(a);
    const int nuse = at_chunks(a, nsplit, &chunk);
    enum { VEC = 16 / sizeof(T), GS = DV < 32 ? DV : 32, NVL = DV / GS, NG = AT_DNT / GS, DC = DV * VEC };
    __shared__ float sm_acc[NG][RMAX][DC];
    __shared__ float sm_m[NG][RMAX], sm_l[NG][RMAX];
    const T *Q = (const T *)a.q, *K = (const T *)a.k, *V = (const T *)a.v;
    const bool vec = a.vec != 0;
    const int D = a.D, tid = threadIdx.x, gl = tid % GS, grp = tid / GS;
    const int R = a.G * a.Tq;
    int64_t blk = blockIdx.x;
    const int split = (int)(blk % nsplit);
    if (split >= nuse) return;                    /* past the count of keys (uniform) */
    blk /= nsplit;
    const int rg = (int)(blk % nrg);
    blk /= nrg;
    const int hk = (int)(blk % a.Hkv), b = (int)(blk / a.Hkv);

    /* this block's rows: r = rg * RMAX + rr -> query head hk * G + r / Tq, query r % Tq */
    float qf[RMAX][NVL][VEC];
    int qi[RMAX];
    int64_t ilo = INT64_MAX, ihi = -1;
#pragma unroll
    for (int rr = 0; rr < RMAX; rr++) {
        const int r = rg * RMAX + rr;
        const bool ok = r < R;
        const int h = hk * a.G + (ok ? r / a.Tq : 0);
        qi[rr] = ok ? r % a.Tq : 0;
        if (ok) {
            ilo = qi[rr] < ilo ? qi[rr] : ilo;
            ihi = qi[rr] > ihi ? qi[rr] : ihi;
        }
#pragma unroll
        for (int n = 0; n < NVL; n++) {
            const int d = (gl + GS * n) * VEC;
            float f[VEC];
#pragma unroll
            for (int e = 0; e < VEC; e++) f[e] = 0.0f;
            if (ok && d < D) at_ldv<T, VEC>(Q + b * a.qs[0] + h * a.qs[1] + qi[rr] * a.qs[2] + d, vec, f);
#pragma unroll
            for (int e = 0; e < VEC; e++) qf[rr][n][e] = f[e] * a.qmul;
        }
    }
    int64_t kbeg, kend;
    at_key_range(a, ilo, ihi, &kbeg, &kend);
    {   /* this split's keys: chunk `split` of the range of all rows */
        int64_t alo, ahi;
        at_key_range(a, 0, a.Tq - 1, &alo, &ahi);
        const int64_t s0 = alo + split * chunk, s1 = s0 + chunk < ahi ? s0 + chunk : ahi;
        kbeg = kbeg > s0 ? kbeg : s0;
        kend = kend < s1 ? kend : s1;
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
    const T *kp = K + b * a.ks[0] + hk * a.ks[1];
    const T *vp = V + b * a.vs[0] + hk * a.vs[1];
    const int64_t nround = kend > kbeg ? (kend - kbeg + NG * AT_DU - 1) / (NG * AT_DU) : 0;
    for (int64_t rd = 0; rd < nround; rd++) {     /* uniform over the block: shuffles below */
        const int64_t jb = kbeg + rd * (NG * AT_DU) + grp * AT_DU;
        uint4 kr[AT_DU][NVL], vr[AT_DU][NVL];     /* raw 16-byte loads, converted at use */
#pragma unroll
        for (int u = 0; u < AT_DU; u++)
#pragma unroll
            for (int n = 0; n < NVL; n++) {
                const int d = (gl + GS * n) * VEC;
                kr[u][n] = vr[u][n] = make_uint4(0u, 0u, 0u, 0u);
                if (jb + u < kend && d < D) {
                    kr[u][n] = at_ld16<T>(kp + (jb + u) * a.ks[2] + d, vec);
                    vr[u][n] = at_ld16<T>(vp + (jb + u) * a.vs[2] + d, vec);
                }
            }
#pragma unroll
        for (int rr = 0; rr < RMAX; rr++) {
            if (rg * RMAX + rr >= R) break;       /* uniform */
            float s[AT_DU];
#pragma unroll
            for (int u = 0; u < AT_DU; u++) {
                float x = 0.0f;
#pragma unroll
                for (int n = 0; n < NVL; n++)
#pragma unroll
                    for (int e = 0; e < VEC; e++) x = fmaf(qf[rr][n][e], at_elem<T>(kr[u][n], e), x);
#pragma unroll
                for (int o = GS / 2; o > 0; o /= 2) x += wk_shfl_xor<32>(x, o, GS);
                const int64_t j = jb + u;
                const int64_t mofs = a.mask ? b * a.ms[0] + (hk * a.G + (rg * RMAX + rr) / a.Tq) * a.ms[1] : 0;
                s[u] = (j < kend && at_visible(a, qi[rr], j)) ? at_score(a, x, mofs, qi[rr], j) : -INFINITY;
            }
            float mx = m[rr];
#pragma unroll
            for (int u = 0; u < AT_DU; u++) mx = fmaxf(mx, s[u]);
            const float mu = mx == -INFINITY ? 0.0f : mx;
            const float al = exp2f(m[rr] - mu);
            m[rr] = mx;
            float p[AT_DU], ps = 0.0f;
#pragma unroll
            for (int u = 0; u < AT_DU; u++) {
                p[u] = exp2f(s[u] - mu);
                ps += p[u];
            }
            l[rr] = l[rr] * al + ps;
#pragma unroll
            for (int n = 0; n < NVL; n++)
#pragma unroll
                for (int e = 0; e < VEC; e++) {
                    float x = acc[rr][n][e] * al;
#pragma unroll
                    for (int u = 0; u < AT_DU; u++) x = fmaf(p[u], at_elem<T>(vr[u][n], e), x);
                    acc[rr][n][e] = x;
                }
        }
    }

    /* merge the groups, then one partial per row */
#pragma unroll
    for (int rr = 0; rr < RMAX; rr++) {
#pragma unroll
        for (int n = 0; n < NVL; n++)
#pragma unroll
            for (int e = 0; e < VEC; e++) sm_acc[grp][rr][(gl + GS * n) * VEC + e] = acc[rr][n][e];
        if (gl == 0) {
            sm_m[grp][rr] = m[rr];
            sm_l[grp][rr] = l[rr];
        }
    }
    __syncthreads();
    const int64_t nb = (int64_t)gridDim.x, pb = blockIdx.x;
    for (int idx = tid; idx < RMAX * D; idx += AT_DNT) {
        const int rr = idx / D, d = idx % D;
        if (rg * RMAX + rr >= R) break;
        float M = -INFINITY;
#pragma unroll
        for (int g = 0; g < NG; g++) M = fmaxf(M, sm_m[g][rr]);
        const float mu = M == -INFINITY ? 0.0f : M;
        float A = 0.0f, L = 0.0f;
#pragma unroll
        for (int g = 0; g < NG; g++) {
            const float w = exp2f(sm_m[g][rr] - mu);
            A = fmaf(sm_acc[g][rr][d], w, A);
            L = fmaf(sm_l[g][rr], w, L);
        }
        part[(pb * RMAX + rr) * D + d] = A;
        if (d == 0) {
            part[nb * RMAX * D + (pb * RMAX + rr) * 2] = M;
            part[nb * RMAX * D + (pb * RMAX + rr) * 2 + 1] = L;
        }
    }
}

/* One block per output row (b, h, i): the chunks' partials, weighted by
 * exp2(m_s - M), summed and divided by the weighted sum of l. */
template <typename T>
__global__ __launch_bounds__(AT_DNT) void at_combine_kernel(at_args a, const float *part, int nsplit, int nrg,
                                                            int rmax)
{
    __shared__ float w[AT_MAXSPLIT];
    __shared__ float red[AT_DNT];
    at_dyn(a);
    int64_t chunk = 0;
    const int nuse = at_chunks(a, nsplit, &chunk);   /* the chunks that wrote partials */
    const int tid = threadIdx.x, D = a.D;
    const int64_t row = blockIdx.x;                    /* (b, h, i) */
    const int i = (int)(row % a.Tq), h = (int)((row / a.Tq) % a.Hq), b = (int)(row / ((int64_t)a.Tq * a.Hq));
    const int hk = h / a.G, r = (h % a.G) * a.Tq + i, rg = r / rmax, rr = r % rmax;
    const int64_t nb = (int64_t)a.B * a.Hkv * nrg * nsplit;
    const int64_t pb0 = (((int64_t)b * a.Hkv + hk) * nrg + rg) * nsplit;
    const float *ml = part + nb * rmax * D;
    float M = -INFINITY;
    for (int s = tid; s < nuse; s += AT_DNT) M = fmaxf(M, ml[((pb0 + s) * rmax + rr) * 2]);
    red[tid] = M;
    __syncthreads();
    for (int o = AT_DNT / 2; o > 0; o /= 2) {
        if (tid < o) red[tid] = fmaxf(red[tid], red[tid + o]);
        __syncthreads();
    }
    M = red[0];
    const float mu = M == -INFINITY ? 0.0f : M;
    __syncthreads();
    float L = 0.0f;
    for (int s = tid; s < nuse; s += AT_DNT) {
        const float ws = exp2f(ml[((pb0 + s) * rmax + rr) * 2] - mu);
        w[s] = ws;
        L = fmaf(ml[((pb0 + s) * rmax + rr) * 2 + 1], ws, L);
    }
    red[tid] = L;
    __syncthreads();
    for (int o = AT_DNT / 2; o > 0; o /= 2) {
        if (tid < o) red[tid] += red[tid + o];
        __syncthreads();
    }
    L = red[0];
    const float inv = L > 0.0f ? 1.0f / L : 0.0f;
    T *op = (T *)a.o + row * D;
    for (int d = tid; d < D; d += AT_DNT) {
        const float *pp = part + (pb0 * rmax + rr) * D + d;
        const int64_t ps = (int64_t)rmax * D;        /* from one split to the next */
        float A0 = 0.0f, A1 = 0.0f, A2 = 0.0f, A3 = 0.0f;
        int s = 0;
        for (; s + 4 <= nuse; s += 4) {             /* four loads in flight */
            A0 = fmaf(pp[(s + 0) * ps], w[s + 0], A0);
            A1 = fmaf(pp[(s + 1) * ps], w[s + 1], A1);
            A2 = fmaf(pp[(s + 2) * ps], w[s + 2], A2);
            A3 = fmaf(pp[(s + 3) * ps], w[s + 3], A3);
        }
        for (; s < nuse; s++) A0 = fmaf(pp[s * ps], w[s], A0);
        op[d] = wk_to<T>(((A0 + A1) + (A2 + A3)) * inv);
    }
}

/* ------------------------------------------------------------------ */
/* 1. mma path (NVIDIA sm_80+)                                         */

#if defined(WK_MMA_SM80) && !defined(WK_ATTN_PORTABLE)
#define AT_HAVE_MMA 1
#define AT_MBN 64

WK_DEV float at_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* rows [row0, row0 + ROWS) of a [rows, D] operand (row stride st) into
 * shared memory [ROWS][DMAX + 8]; rows >= lim and columns >= D read as 0 */
template <int ROWS, int DMAX>
WK_DEV void at_load_tile(uint32_t sm, const uint16_t *g, int64_t st, int row0, int lim, int D, int tid)
{
    enum { CPR = DMAX / 8, RPP = 128 / CPR, NIT = ROWS / RPP, LDS = DMAX + 8 };
    const int c = tid % CPR, r0 = tid / CPR;
    const bool cok = c * 8 < D;
    const uint16_t *src = g + (int64_t)(row0 + r0) * st + c * 8;
    const int64_t step = RPP * st;
#pragma unroll
    for (int it = 0; it < NIT; it++) {
        const int r = r0 + it * RPP;
        const bool ok = cok && row0 + r < lim;
        wk_cp16(sm + (uint32_t)((r * LDS + c * 8) * 2), ok ? (const void *)src : (const void *)g, ok ? 16 : 0);
        src += step;
    }
}

template <int DMAX, int MT> struct at_mcfg {
    enum { BM = 64 * MT, BN = AT_MBN, LDS = DMAX + 8 };
    static constexpr size_t smem = (size_t)(BM + 2 * BN) * LDS * 2;
};

/* Defined in the plain CUDA build only (the macros that decide it are the
 * same in the host and device passes); the body needs sm_80. */
template <typename T, int DMAX, int MT>
__global__ __launch_bounds__(128, MT == 2 ? 2 : (DMAX >= 256 ? 2 : 3)) void at_mma_kernel(at_args a)
{
    at_dyn(a);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    enum { BM = 64 * MT, BN = AT_MBN, LDS = DMAX + 8, NKS = DMAX / 16, NDT = DMAX / 8 };
    uint16_t *Qs = (uint16_t *)at_dsmem, *Ks = Qs + BM * LDS, *Vs = Ks + BN * LDS;
    const uint32_t sQ = wk_smem_u32(Qs), sK = wk_smem_u32(Ks), sV = wk_smem_u32(Vs);
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int D = a.D;
    /* positions fit in 32 bits here (Tq, Tk < 2^30, checked by the host) */
    const int nqb = (a.Tq + BM - 1) / BM, nbh = a.B * a.Hq;
    const int qb = nqb - 1 - (int)(blockIdx.x / (unsigned)nbh), bh = (int)(blockIdx.x % (unsigned)nbh);
    const int b = bh / a.Hq, h = bh % a.Hq, hk = h / a.G;
    const int i0 = qb * BM, i1 = (i0 + BM < a.Tq ? i0 + BM : a.Tq) - 1;
    const uint16_t *qp = (const uint16_t *)a.q + b * a.qs[0] + h * a.qs[1];
    const uint16_t *kp = (const uint16_t *)a.k + b * a.ks[0] + hk * a.ks[1];
    const uint16_t *vp = (const uint16_t *)a.v + b * a.vs[0] + hk * a.vs[1];
    const int64_t mofs = b * a.ms[0] + h * a.ms[1];
    int kbeg, kend;
    {
        int64_t lo, hi;
        at_key_range(a, i0, i1, &lo, &hi);
        kbeg = (int)lo;
        kend = (int)hi;
    }
    const int jt0 = kbeg / BN, jt1 = kend > kbeg ? (kend + BN - 1) / BN : jt0;
    /* the tile needs the per-element test unless every row of the block
     * sees every key of it */
    const int shift = (int)a.shift, window = (int)a.window;
    const int pos_lo = i0 + shift, pos_hi = i0 + BM - 1 + shift;
    const bool general = a.cap_inv != 0.0f || a.mask != NULL;

    at_load_tile<BM, DMAX>(sQ, qp, a.qs[2], i0, a.Tq, D, tid);
    if (jt0 < jt1) at_load_tile<BN, DMAX>(sK, kp, a.ks[2], jt0 * BN, kend, D, tid);
    wk_cp_commit();

    float o[MT][NDT][4];
    float mrow[MT][2], lrow[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int n = 0; n < NDT; n++) o[mt][n][0] = o[mt][n][1] = o[mt][n][2] = o[mt][n][3] = 0.0f;
        mrow[mt][0] = mrow[mt][1] = -INFINITY;
        lrow[mt][0] = lrow[mt][1] = 0.0f;
    }
    const int wrow = warp * 16 * MT;             /* the warp's first row in the block */

    for (int jt = jt0; jt < jt1; jt++) {
        const int j0 = jt * BN;
        wk_cp_wait_all();
        __syncthreads();                         /* K[jt] (and Q) in place; V free */
        at_load_tile<BN, DMAX>(sV, vp, a.vs[2], j0, kend, D, tid);
        wk_cp_commit();

        float s[MT][BN / 8][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int n = 0; n < BN / 8; n++) s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.0f;
#pragma unroll
        for (int ks = 0; ks < NKS; ks++) {
            if (ks * 16 >= D) break;
            uint32_t qa[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
                wk_ldsm4(qa[mt], sQ + (uint32_t)(((wrow + mt * 16 + (lane % 16)) * LDS + ks * 16 + (lane / 16) * 8) * 2));
#pragma unroll
            for (int np = 0; np < BN / 16; np++) {
                uint32_t kb[4];
                wk_ldsm4(kb, sK + (uint32_t)(((np * 16 + (lane % 8) + (lane / 16) * 8) * LDS + ks * 16 +
                                              ((lane / 8) % 2) * 8) * 2));
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    wk_mma<T>(s[mt][2 * np], qa[mt], kb[0], kb[1]);
                    wk_mma<T>(s[mt][2 * np + 1], qa[mt], kb[2], kb[3]);
                }
            }
        }

        /* scores in log2 units; the per-element test on boundary tiles */
        const bool edge = j0 + BN > kend || j0 < kbeg || (a.causal && j0 + BN - 1 > pos_lo) ||
                          (window > 0 && j0 <= pos_hi - window);
        if (!edge && !general) {
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int n = 0; n < BN / 8; n++)
#pragma unroll
                    for (int e = 0; e < 4; e++) s[mt][n][e] *= a.qmul;
        } else {
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int hr = 0; hr < 2; hr++) {
                    /* the keys [lo, hi) row i sees */
                    const int i = i0 + wrow + mt * 16 + g + hr * 8;
                    int lo = kbeg, hi = kend;
                    if (a.causal && i + shift + 1 < hi) hi = i + shift + 1;
                    if (window > 0 && i + shift - window + 1 > lo) lo = i + shift - window + 1;
                    if (i >= a.Tq) hi = lo;
#pragma unroll
                    for (int n = 0; n < BN / 8; n++)
#pragma unroll
                        for (int e = 0; e < 2; e++) {
                            const int j = j0 + n * 8 + 2 * t + e;
                            float &x = s[mt][n][2 * hr + e];
                            x = j >= lo && j < hi ? (general ? at_score(a, x * a.qmul, mofs, i, j) : x * a.qmul)
                                                  : -INFINITY;
                        }
                }
        }

        /* online softmax; P packed into A fragments in place */
        uint32_t pa[MT][BN / 16][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int hr = 0; hr < 2; hr++) {
                float mx = mrow[mt][hr];
#pragma unroll
                for (int n = 0; n < BN / 8; n++) mx = fmaxf(mx, fmaxf(s[mt][n][2 * hr], s[mt][n][2 * hr + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                const float mu = mx == -INFINITY ? 0.0f : mx;
                const float al = at_exp2(mrow[mt][hr] - mu);
                mrow[mt][hr] = mx;
                float sum = 0.0f;
#pragma unroll
                for (int n = 0; n < BN / 8; n++) {
                    s[mt][n][2 * hr] = at_exp2(s[mt][n][2 * hr] - mu);
                    s[mt][n][2 * hr + 1] = at_exp2(s[mt][n][2 * hr + 1] - mu);
                    sum += s[mt][n][2 * hr] + s[mt][n][2 * hr + 1];
                }
                lrow[mt][hr] = lrow[mt][hr] * al + sum;
                if (al != 1.0f) {                /* the max moved (rare after the first tiles) */
#pragma unroll
                    for (int n = 0; n < NDT; n++) {
                        o[mt][n][2 * hr] *= al;
                        o[mt][n][2 * hr + 1] *= al;
                    }
                }
            }
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int kk = 0; kk < BN / 16; kk++) {
                pa[mt][kk][0] = wk_pack2<T>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
                pa[mt][kk][1] = wk_pack2<T>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
                pa[mt][kk][2] = wk_pack2<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
                pa[mt][kk][3] = wk_pack2<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
            }

        wk_cp_wait_all();
        __syncthreads();                         /* V[jt] in place; K free */
        if (jt + 1 < jt1) at_load_tile<BN, DMAX>(sK, kp, a.ks[2], j0 + BN, kend, D, tid);
        wk_cp_commit();

#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++)
#pragma unroll
            for (int dp = 0; dp < NDT / 2; dp++) {
                if (dp * 16 >= D) break;
                uint32_t vb[4];
                wk_ldsm4t(vb, sV + (uint32_t)(((kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * LDS + dp * 16 +
                                               (lane / 16) * 8) * 2));
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    wk_mma<T>(o[mt][2 * dp], pa[mt][kk], vb[0], vb[1]);
                    wk_mma<T>(o[mt][2 * dp + 1], pa[mt][kk], vb[2], vb[3]);
                }
            }
    }
    wk_cp_wait_all();

    /* out = o / l (0 where no key was seen) */
    uint16_t *op = (uint16_t *)a.o + (int64_t)bh * a.Tq * D;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            float L = lrow[mt][hr];
            L += __shfl_xor_sync(0xffffffffu, L, 1);
            L += __shfl_xor_sync(0xffffffffu, L, 2);
            const float inv = L > 0.0f ? 1.0f / L : 0.0f;
            const int i = i0 + wrow + mt * 16 + g + hr * 8;
            if (i >= a.Tq) continue;
#pragma unroll
            for (int n = 0; n < NDT; n++) {
                if (n * 8 >= D) break;
                *(uint32_t *)(op + (int64_t)i * D + n * 8 + 2 * t) =
                    wk_pack2<T>(o[mt][n][2 * hr] * inv, o[mt][n][2 * hr + 1] * inv);
            }
        }
#else
    (void)a;
#if defined(__CUDA_ARCH__)
    __trap();                                    /* the host launches it on sm_80+ only */
#endif
#endif
}

/* 1b. decode on the matrix cores: the rows of a kv head (up to 16, the
 * MMA's M; rows past R are zeros) against a chunk of the keys. Each warp
 * streams its own 16-key tiles (tiles w, w + 4, ...) through AT_DST
 * stages of shared memory with cp.async, so no block barrier sits in the
 * loop: S = Q K^T is two m16n8k16 per 16 dims, P stays in registers as
 * in the prefill kernel, O += P V is two per 16 dims. The warps merge
 * their (m, l, o) through shared memory at the end and the block writes
 * one partial per row, as the FMA decode kernel does. */
#define AT_DKT 16      /* keys of a warp's tile                          */
#define AT_DMAXSPLIT 256  /* chunks of one kv head at most                */
template <int DMAX> struct at_dcfg {
    enum { LDS = DMAX + 8, NS = DMAX <= 128 ? 3 : 2, TILE = AT_DKT * LDS * 2 /* bytes of K or V */ };
    static constexpr size_t stage = (size_t)2 * TILE;
    static constexpr size_t smem = (size_t)16 * LDS * 2 + (size_t)4 * NS * stage;
};

/* rows [row0, row0 + 16) of K or V (16 keys) into a warp's stage; lanes
 * of one warp only */
template <int DMAX>
WK_DEV void at_load_ktile(uint32_t sm, const uint16_t *g, int64_t st, int row0, int lim, int D, int lane)
{
    enum { CPR = DMAX / 8, LDS = DMAX + 8, RPP = 32 / CPR, NIT = AT_DKT / RPP };
    const int c = lane % CPR, r0 = lane / CPR;
    const bool cok = c * 8 < D;
    const uint16_t *src = g + (int64_t)(row0 + r0) * st + c * 8;
    sm += (uint32_t)((r0 * LDS + c * 8) * 2);
#pragma unroll
    for (int it = 0; it < NIT; it++) {
        const bool ok = cok && row0 + r0 + it * RPP < lim;
        wk_cp16(sm + (uint32_t)(it * RPP * LDS * 2), ok ? (const void *)src : (const void *)g, ok ? 16 : 0);
        src += RPP * st;
    }
}

template <typename T, int DMAX>
__global__ __launch_bounds__(128, DMAX <= 128 ? 2 : 1) void at_mma_decode_kernel(at_args a, float *part,
                                                                                unsigned *cnt, int nsplit,
                                                                                int64_t chunk, int nrg)
{
    wk_pdl_wait();
    at_dyn(a);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const int nuse = at_chunks(a, nsplit, &chunk);
    typedef at_dcfg<DMAX> CF;
    enum { LDS = CF::LDS, NS = CF::NS, NKS = DMAX / 16, NDT = DMAX / 8, RM = 16 };
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int D = a.D, R = a.G * a.Tq;
    int blk = (int)blockIdx.x;
    const int split = blk % nsplit;
    if (split >= nuse) return;                   /* past the count of keys (uniform; not counted) */
    blk /= nsplit;
    const int rg = blk % nrg;
    blk /= nrg;
    const int hk = blk % a.Hkv, b = blk / a.Hkv;
    uint16_t *Qs = (uint16_t *)at_dsmem;
    const uint32_t sQ = wk_smem_u32(Qs);
    const uint32_t sW = sQ + (uint32_t)(RM * LDS * 2) + (uint32_t)(warp * NS * CF::stage);

    /* Q rows (zeros past R), then this chunk's keys */
    int64_t ilo = INT64_MAX, ihi = -1;
    for (int idx = tid; idx < RM * (DMAX / 8); idx += 128) {
        const int rr = idx / (DMAX / 8), c = idx % (DMAX / 8), r = rg * RM + rr;
        const bool ok = r < R && c * 8 < D;
        const uint16_t *src = (const uint16_t *)a.q;
        if (ok) src += b * a.qs[0] + (int64_t)(hk * a.G + r / a.Tq) * a.qs[1] + (int64_t)(r % a.Tq) * a.qs[2] + c * 8;
        wk_cp16(sQ + (uint32_t)((rr * LDS + c * 8) * 2), src, ok ? 16 : 0);
    }
    wk_cp_commit();
    /* the rows' query positions: rows of one group are consecutive r */
    {
        const int r0 = rg * RM, r1 = (r0 + RM < R ? r0 + RM : R) - 1;
        if (r1 / a.Tq > r0 / a.Tq) {
            ilo = 0;
            ihi = a.Tq - 1;
        } else {
            ilo = r0 % a.Tq;
            ihi = r1 % a.Tq;
        }
    }
    int kbeg, kend;
    {
        int64_t lo, hi, alo, ahi;
        at_key_range(a, ilo, ihi, &lo, &hi);
        at_key_range(a, 0, a.Tq - 1, &alo, &ahi);
        const int64_t s0 = alo + split * chunk, s1 = s0 + chunk < ahi ? s0 + chunk : ahi;
        kbeg = (int)(lo > s0 ? lo : s0);
        kend = (int)(hi < s1 ? hi : s1);
    }
    const uint16_t *kp = (const uint16_t *)a.k + b * a.ks[0] + hk * a.ks[1];
    const uint16_t *vp = (const uint16_t *)a.v + b * a.vs[0] + hk * a.vs[1];
    const int ntile = kend > kbeg ? (kend - kbeg + AT_DKT - 1) / AT_DKT : 0;
    const int nmine = ntile > warp ? (ntile - warp + 3) / 4 : 0;     /* tiles warp, warp + 4, .. */

    /* the rows of this lane (g, g + 8): keys [lo, hi) each sees; rows past
     * R are left unmasked (zeros of Q; never written) */
    int rlo[2], rhi[2];
    int64_t rmofs[2];
    int rqi[2];
    bool rok[2];
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        const int r = rg * RM + g + 8 * hr;
        rok[hr] = r < R;
        rqi[hr] = rok[hr] ? r % a.Tq : 0;
        const int h = hk * a.G + (rok[hr] ? r / a.Tq : 0);
        rmofs[hr] = b * a.ms[0] + h * a.ms[1];
        int64_t lo, hi;
        at_key_range(a, rqi[hr], rqi[hr], &lo, &hi);
        rlo[hr] = rok[hr] ? (int)(lo > kbeg ? lo : kbeg) : kbeg;
        rhi[hr] = rok[hr] ? (int)(hi < kend ? hi : kend) : kend;
    }
    const bool general = a.cap_inv != 0.0f || a.mask != NULL;

    /* prologue: the first NS - 1 tiles of this warp */
#pragma unroll
    for (int st = 0; st < NS - 1; st++) {
        if (st < nmine) {
            const int j0 = kbeg + (warp + 4 * st) * AT_DKT;
            const uint32_t sK = sW + (uint32_t)(st * CF::stage), sV = sK + (uint32_t)CF::TILE;
            at_load_ktile<DMAX>(sK, kp, a.ks[2], j0, kend, D, lane);
            at_load_ktile<DMAX>(sV, vp, a.vs[2], j0, kend, D, lane);
        }
        wk_cp_commit();
    }
    asm volatile("cp.async.wait_group %0;" ::"n"(NS - 1) : "memory");   /* Q (the oldest group) */
    __syncthreads();
    /* Q's A fragments stay in registers up to D = 128; at 256 they are
     * read from shared memory per tile (room for the 128 accumulators) */
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
                const int j0 = kbeg + (warp + 4 * nx) * AT_DKT;
                const uint32_t sK = sW + (uint32_t)((nx % NS) * CF::stage), sV = sK + (uint32_t)CF::TILE;
                at_load_ktile<DMAX>(sK, kp, a.ks[2], j0, kend, D, lane);
                at_load_ktile<DMAX>(sV, vp, a.vs[2], j0, kend, D, lane);
            }
            wk_cp_commit();
        }
        asm volatile("cp.async.wait_group %0;" ::"n"(NS - 1) : "memory");
        __syncwarp();
        const int j0 = kbeg + (warp + 4 * it) * AT_DKT;
        const uint32_t sK = sW + (uint32_t)((it % NS) * CF::stage), sV = sK + (uint32_t)CF::TILE;

        float s[2][4];
#pragma unroll
        for (int n = 0; n < 2; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
        for (int ks = 0; ks < NKS; ks++) {
            if (ks * 16 >= D) break;
            uint32_t kb[4];
            wk_ldsm4(kb, sK + (uint32_t)((((lane % 8) + (lane / 16) * 8) * LDS + ks * 16 + ((lane / 8) % 2) * 8) * 2));
            const uint32_t(&q4)[4] = qa[QREG ? ks : 0];
            if (!QREG) wk_ldsm4(qa[0], sQl + (uint32_t)(ks * 32));
            wk_mma<T>(s[0], q4, kb[0], kb[1]);
            wk_mma<T>(s[1], q4, kb[2], kb[3]);
        }
        /* scale folded into the exponent (sc) unless the scores were
         * made in log2 units here (masked tiles, soft-cap, mask) */
        float sc = a.qmul;
        const bool edge = j0 < rlo[0] || j0 + AT_DKT > rhi[0] || j0 < rlo[1] || j0 + AT_DKT > rhi[1];
        if (edge || general) {
            sc = 1.0f;
#pragma unroll
            for (int hr = 0; hr < 2; hr++)
#pragma unroll
                for (int n = 0; n < 2; n++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const int j = j0 + n * 8 + 2 * t + e;
                        float &x = s[n][2 * hr + e];
                        x = j >= rlo[hr] && j < rhi[hr]
                                ? (general && rok[hr] ? at_score(a, x * a.qmul, rmofs[hr], rqi[hr], j) : x * a.qmul)
                                : -INFINITY;
                    }
        }
        uint32_t pa[4];
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            float mx = fmaxf(fmaxf(s[0][2 * hr], s[0][2 * hr + 1]), fmaxf(s[1][2 * hr], s[1][2 * hr + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float mn = fmaxf(mrow[hr], mx * sc);
            const float mu = mn == -INFINITY ? 0.0f : mn;
            const float al = at_exp2(mrow[hr] - mu);
            mrow[hr] = mn;
            float sum = 0.0f;
#pragma unroll
            for (int n = 0; n < 2; n++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    float &x = s[n][2 * hr + e];
                    x = at_exp2(fmaf(x, sc, -mu));
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
        pa[0] = wk_pack2<T>(s[0][0], s[0][1]);
        pa[1] = wk_pack2<T>(s[0][2], s[0][3]);
        pa[2] = wk_pack2<T>(s[1][0], s[1][1]);
        pa[3] = wk_pack2<T>(s[1][2], s[1][3]);
#pragma unroll
        for (int dp = 0; dp < NDT / 2; dp++) {
            if (dp * 16 >= D) break;
            uint32_t vb[4];
            wk_ldsm4t(vb, sV + (uint32_t)((((lane % 8) + ((lane / 8) % 2) * 8) * LDS + dp * 16 + (lane / 16) * 8) * 2));
            wk_mma<T>(o[2 * dp], pa, vb[0], vb[1]);
            wk_mma<T>(o[2 * dp + 1], pa, vb[2], vb[3]);
        }
        __syncwarp();                            /* this stage is refilled next */
    }
    wk_cp_wait_all();
    __syncthreads();                             /* every warp done with its stages */

    /* merge the warps: per warp m[16], l[16], o[16][D] (f32) over the stages */
    float *mo = (float *)(at_dsmem + (RM * LDS * 2) / 16);
    float *ml = mo + 4 * RM * DMAX;
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        float L = lrow[hr];
        L += __shfl_xor_sync(0xffffffffu, L, 1);
        L += __shfl_xor_sync(0xffffffffu, L, 2);
        const int rr = g + 8 * hr;
        if (t == 0) {
            ml[(warp * RM + rr) * 2] = mrow[hr];
            ml[(warp * RM + rr) * 2 + 1] = L;
        }
#pragma unroll
        for (int n = 0; n < NDT; n++) {
            if (n * 8 >= D) break;
            *(float2 *)(mo + (warp * RM + rr) * DMAX + n * 8 + 2 * t) = make_float2(o[n][2 * hr], o[n][2 * hr + 1]);
        }
    }
    __syncthreads();
    /* one partial per row: part + (pb * 16 + rr) * D, (m, l) after all of them */
    const int64_t nb = (int64_t)gridDim.x, pb = blockIdx.x;
    const int nrow = R - rg * RM < RM ? R - rg * RM : RM;
    float *pml = part + nb * RM * D;
    for (int idx = tid; idx < nrow * D; idx += 128) {
        const int rr = idx / D, d = idx % D;
        float M = -INFINITY;
#pragma unroll
        for (int w = 0; w < 4; w++) M = fmaxf(M, ml[(w * RM + rr) * 2]);
        const float mu = M == -INFINITY ? 0.0f : M;
        float A = 0.0f, L = 0.0f;
#pragma unroll
        for (int w = 0; w < 4; w++) {
            const float wt = at_exp2(ml[(w * RM + rr) * 2] - mu);
            A = fmaf(mo[(w * RM + rr) * DMAX + d], wt, A);
            L = fmaf(ml[(w * RM + rr) * 2 + 1], wt, L);
        }
        part[(pb * RM + rr) * D + d] = A;
        if (d == 0) {
            pml[(pb * RM + rr) * 2] = M;
            pml[(pb * RM + rr) * 2 + 1] = L;
        }
    }

    /* the last block of the group to finish combines the group's
     * partials (cnt: one counter per group, zero between calls: the last
     * block puts it back) */
    __shared__ int s_last;
    __threadfence();
    __syncthreads();
    if (tid == 0) {
        const int grp = (int)(pb / nsplit);
        const unsigned prev = nuse > 1 ? atomicAdd(cnt + grp, 1u) : 0u;
        s_last = prev == (unsigned)nuse - 1u;
        if (s_last && nuse > 1) cnt[grp] = 0u;
    }
    __syncthreads();
    if (!s_last) return;
    __threadfence();
    const int64_t pb0 = pb - split;                 /* the group's first block */
    float *wsm = ml + 4 * RM * 2;                   /* [nrow][nuse] weights (nuse <= AT_DMAXSPLIT), then 1 / L per row */
    float *inv = wsm + RM * nuse;
    for (int rr = warp; rr < nrow; rr += 4) {
        float M = -INFINITY;
        for (int sp = lane; sp < nuse; sp += 32) M = fmaxf(M, __ldcg(pml + ((pb0 + sp) * RM + rr) * 2));
#pragma unroll
        for (int o2 = 16; o2 > 0; o2 /= 2) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o2));
        const float mu = M == -INFINITY ? 0.0f : M;
        float L = 0.0f;
        for (int sp = lane; sp < nuse; sp += 32) {
            const float wt = at_exp2(__ldcg(pml + ((pb0 + sp) * RM + rr) * 2) - mu);
            wsm[rr * nuse + sp] = wt;
            L = fmaf(__ldcg(pml + ((pb0 + sp) * RM + rr) * 2 + 1), wt, L);
        }
#pragma unroll
        for (int o2 = 16; o2 > 0; o2 /= 2) L += __shfl_xor_sync(0xffffffffu, L, o2);
        if (lane == 0) inv[rr] = L > 0.0f ? 1.0f / L : 0.0f;
    }
    __syncthreads();
    const int D4 = D / 4;
    for (int idx = tid; idx < nrow * D4; idx += 128) {
        const int rr = idx / D4, d = (idx % D4) * 4;
        const float *pp = part + (pb0 * RM + rr) * D + d;
        const int64_t ps = (int64_t)RM * D;
        const float *wr = wsm + rr * nuse;
        float4 A = make_float4(0.0f, 0.0f, 0.0f, 0.0f), B = A;
        int sp = 0;
        for (; sp + 4 <= nuse; sp += 4) {           /* independent loads in flight */
            const float4 x0 = __ldcg((const float4 *)(pp + (sp + 0) * ps));
            const float4 x1 = __ldcg((const float4 *)(pp + (sp + 1) * ps));
            const float4 x2 = __ldcg((const float4 *)(pp + (sp + 2) * ps));
            const float4 x3 = __ldcg((const float4 *)(pp + (sp + 3) * ps));
            const float w0 = wr[sp], w1 = wr[sp + 1], w2 = wr[sp + 2], w3 = wr[sp + 3];
            A.x = fmaf(x0.x, w0, A.x); A.y = fmaf(x0.y, w0, A.y); A.z = fmaf(x0.z, w0, A.z); A.w = fmaf(x0.w, w0, A.w);
            B.x = fmaf(x1.x, w1, B.x); B.y = fmaf(x1.y, w1, B.y); B.z = fmaf(x1.z, w1, B.z); B.w = fmaf(x1.w, w1, B.w);
            A.x = fmaf(x2.x, w2, A.x); A.y = fmaf(x2.y, w2, A.y); A.z = fmaf(x2.z, w2, A.z); A.w = fmaf(x2.w, w2, A.w);
            B.x = fmaf(x3.x, w3, B.x); B.y = fmaf(x3.y, w3, B.y); B.z = fmaf(x3.z, w3, B.z); B.w = fmaf(x3.w, w3, B.w);
        }
        for (; sp < nuse; sp++) {
            const float4 x = __ldcg((const float4 *)(pp + sp * ps));
            const float w0 = wr[sp];
            A.x = fmaf(x.x, w0, A.x); A.y = fmaf(x.y, w0, A.y); A.z = fmaf(x.z, w0, A.z); A.w = fmaf(x.w, w0, A.w);
        }
        const float iv = inv[rr];
        const int r = rg * RM + rr, h = hk * a.G + r / a.Tq, i = r % a.Tq;
        uint16_t *op = (uint16_t *)a.o + (((int64_t)b * a.Hq + h) * a.Tq + i) * D + d;
        uint2 pk;
        pk.x = wk_pack2<T>((A.x + B.x) * iv, (A.y + B.y) * iv);
        pk.y = wk_pack2<T>((A.z + B.z) * iv, (A.w + B.w) * iv);
        *(uint2 *)op = pk;
    }
#else
    (void)a;
    (void)part;
    (void)cnt;
    (void)nsplit;
    (void)chunk;
    (void)nrg;
#if defined(__CUDA_ARCH__)
    __trap();
#endif
#endif
}
#endif /* AT_HAVE_MMA */

/* ------------------------------------------------------------------ */
/* 4. MFMA path (CDNA: gfx90a, gfx94x; the virtual-wave64 build)       */

/* Built under hipcc (every target: the kernels exist in each code object,
 * their bodies only where WK_MFMA_DEVICE says the instructions do; the
 * host launches them where wk_mfma_arch says so) and in the
 * virtual-wave64 build, where compat.h's software MFMA runs the same
 * fragment indexing on NVIDIA; not in the plain CUDA build (the kernel
 * lists of the plugins differ by these, tools/compare-kernel-lists), nor
 * under WK_ATTN_PORTABLE. */
#if (defined(WK_GPU_HIP) || defined(WK_VIRTUAL_WAVE64)) && !defined(WK_ATTN_PORTABLE)
#define AT_HAVE_MFMA 1

/* Prefill: 4 waves, each MT row tiles of 16 (BM = 64 MT rows a block),
 * key tiles of BN. Decode: NW waves, each its own 16 keys of each tile
 * of BN = 16 NW (one row tile: the 16 rows of a kv head's group). Shared
 * memory: K [BN][DMAX + 8] and V transposed [DMAX][BN + 8] (16-bit). */
template <int DMAX> struct at_fcfg {
    enum {
        MT = DMAX <= 128 ? 2 : 1, BN = DMAX <= 128 ? 64 : 32, NW_DEC = DMAX <= 128 ? 4 : 2,
        KLD = DMAX + 8, VLD = BN + 8
    };
    static constexpr size_t tile = (size_t)BN * KLD * 2 + (size_t)DMAX * VLD * 2;
    static constexpr size_t merge = (size_t)NW_DEC * 16 * (DMAX + 2) * 4;    /* decode's merge of its waves */
    static constexpr size_t smem_dec = tile > merge ? tile : merge;
};

/* four f32 -> four T in one uint64_t (element e in bits 16e..), rounded
 * to nearest even as the mma path's cvt.rn does */
template <typename T> WK_DEV uint64_t at_pack4(float x0, float x1, float x2, float x3)
{
    return (uint64_t)wk_to<T>(x0).bits | ((uint64_t)wk_to<T>(x1).bits << 16) | ((uint64_t)wk_to<T>(x2).bits << 32) |
           ((uint64_t)wk_to<T>(x3).bits << 48);
}

/* 4 consecutive elements of a row (raw 16-bit), 8-byte load when vec */
WK_DEV uint64_t at_ld8(const uint16_t *p, bool vec)
{
    if (vec) return *(const uint64_t *)p;
    return (uint64_t)p[0] | ((uint64_t)p[1] << 16) | ((uint64_t)p[2] << 32) | ((uint64_t)p[3] << 48);
}

#if defined(WK_MFMA_DEVICE)
/* one row of a lane: query i, mask offset, the keys [lo, hi) it sees */
struct at_frow {
    int64_t i, mofs;
    int lo, hi;
};

/* The tile's keys j0 + BN rows of K and V (zeros past kend and past D)
 * into registers, NCH 16-byte chunks per thread; then into shared memory
 * (K as rows, V transposed). */
template <typename T, int DMAX, int BN, int NT>
WK_DEV void at_fload(uint4 (&kr)[(BN * DMAX / 8 + NT - 1) / NT], uint4 (&vr)[(BN * DMAX / 8 + NT - 1) / NT],
                     const T *kp, const T *vp, const at_args &a, int j0, int kend, int tid)
{
    enum { CPR = DMAX / 8, NCH = (BN * CPR + NT - 1) / NT };
#pragma unroll
    for (int u = 0; u < NCH; u++) {
        const int idx = tid + u * NT, r = idx / CPR, c = idx % CPR;
        kr[u] = vr[u] = make_uint4(0u, 0u, 0u, 0u);
        if (idx < BN * CPR && j0 + r < kend && c * 8 < a.D) {
            kr[u] = at_ld16<T>(kp + (int64_t)(j0 + r) * a.ks[2] + c * 8, a.vec != 0);
            vr[u] = at_ld16<T>(vp + (int64_t)(j0 + r) * a.vs[2] + c * 8, a.vec != 0);
        }
    }
}
template <int DMAX, int BN, int NT>
WK_DEV void at_fstore(uint16_t *Ks, uint16_t *Vt, const uint4 (&kr)[(BN * DMAX / 8 + NT - 1) / NT],
                      const uint4 (&vr)[(BN * DMAX / 8 + NT - 1) / NT], int tid)
{
    enum { CPR = DMAX / 8, NCH = (BN * CPR + NT - 1) / NT, KLD = DMAX + 8, VLD = BN + 8 };
#pragma unroll
    for (int u = 0; u < NCH; u++) {
        const int idx = tid + u * NT, r = idx / CPR, c = idx % CPR;
        if (idx >= BN * CPR) break;
        *(uint4 *)(Ks + r * KLD + c * 8) = kr[u];
        const uint32_t w[4] = { vr[u].x, vr[u].y, vr[u].z, vr[u].w };
#pragma unroll
        for (int e = 0; e < 8; e++) Vt[(c * 8 + e) * VLD + r] = (uint16_t)(w[e / 2] >> (16 * (e % 2)));
    }
}

/* One wave: its MT row tiles against NKB 16-key blocks of the tile in
 * shared memory (blocks kb0 .., keys j0 + 16 kb0 ..). Lane l (c16 = l %
 * 16, g = l / 16) owns row c16 of each row tile. Both products are
 * computed transposed so that every per-row quantity stays in the lane:
 *   S^T = K Q^T: A = K (lane: key c16, dims 4g..4g+3 of each 16), B = Q^T
 *     (lane: row c16, the same dims; qf, in registers), D = S^T (lane:
 *     row c16, keys 4g..4g+3 of the block);
 *   O^T += V^T P^T: A = V^T (lane: dim c16 of the 16-dim block, keys
 *     4g..4g+3; from V transposed in shared memory), B = P^T (lane: row
 *     c16, keys 4g..4g+3: S^T's own registers, P rounded to T as the mma
 *     path does), D = O^T (lane: row c16, dims 4g..4g+3 of the block).
 * A row's max is reduced over its 4 lanes (xor 16, 32); its sum stays
 * per lane until the end. */
template <typename T, int DMAX, int MT, int NKB>
WK_DEV void at_fstep(const at_args &a, const uint16_t *Ks, const uint16_t *Vt, int kb0, int j0,
                     const uint64_t (&qf)[MT][DMAX / 16], const at_frow (&rw)[MT], float (&m)[MT], float (&l)[MT],
                     wk_f32x4 (&o)[MT][DMAX / 16], bool general)
{
    enum { KLD = at_fcfg<DMAX>::KLD, VLD = at_fcfg<DMAX>::VLD, NKS = DMAX / 16 };
    const int lane = wk_lane<64>(), c16 = lane % 16, g = lane / 16, D = a.D;
    wk_f32x4 s[MT][NKB];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int kb = 0; kb < NKB; kb++) s[mt][kb] = wk_f32x4{ 0.0f, 0.0f, 0.0f, 0.0f };
#pragma unroll
    for (int ks = 0; ks < NKS; ks++) {
        if (ks * 16 >= D) break;                 /* uniform; past D: zeros of K and Q */
#pragma unroll
        for (int kb = 0; kb < NKB; kb++) {
            const uint64_t kf = *(const uint64_t *)(Ks + ((kb0 + kb) * 16 + c16) * KLD + ks * 16 + 4 * g);
#pragma unroll
            for (int mt = 0; mt < MT; mt++) s[mt][kb] = wk_mfma16<T>(kf, qf[mt][ks], s[mt][kb]);
        }
    }
    uint64_t pf[MT][NKB];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        float mx = -INFINITY;
#pragma unroll
        for (int kb = 0; kb < NKB; kb++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int j = j0 + (kb0 + kb) * 16 + 4 * g + e;
                float x = s[mt][kb][e];
                x = j >= rw[mt].lo && j < rw[mt].hi
                        ? (general ? at_score(a, x * a.qmul, rw[mt].mofs, rw[mt].i, j) : x * a.qmul)
                        : -INFINITY;
                s[mt][kb][e] = x;
                mx = fmaxf(mx, x);
            }
        mx = fmaxf(mx, wk_shfl_xor<64>(mx, 16));
        mx = fmaxf(mx, wk_shfl_xor<64>(mx, 32));
        const float mn = fmaxf(m[mt], mx);
        const float mu = mn == -INFINITY ? 0.0f : mn;
        const float al = exp2f(m[mt] - mu);
        m[mt] = mn;
        float sum = 0.0f;
#pragma unroll
        for (int kb = 0; kb < NKB; kb++) {
            float p[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                p[e] = exp2f(s[mt][kb][e] - mu);
                sum += p[e];
            }
            pf[mt][kb] = at_pack4<T>(p[0], p[1], p[2], p[3]);
        }
        l[mt] = l[mt] * al + sum;
        if (al != 1.0f) {                        /* the row's max moved */
#pragma unroll
            for (int dn = 0; dn < NKS; dn++)
#pragma unroll
                for (int e = 0; e < 4; e++) o[mt][dn][e] *= al;
        }
    }
#pragma unroll
    for (int dn = 0; dn < NKS; dn++) {
        if (dn * 16 >= D) break;                 /* uniform */
#pragma unroll
        for (int kb = 0; kb < NKB; kb++) {
            const uint64_t vf = *(const uint64_t *)(Vt + (dn * 16 + c16) * VLD + (kb0 + kb) * 16 + 4 * g);
#pragma unroll
            for (int mt = 0; mt < MT; mt++) o[mt][dn] = wk_mfma16<T>(vf, pf[mt][kb], o[mt][dn]);
        }
    }
}

/* Q's B fragments of one row (zeros for a row that does not exist) */
template <int DMAX>
WK_DEV void at_fq(uint64_t (&qf)[DMAX / 16], const uint16_t *row, bool ok, const at_args &a, int g)
{
#pragma unroll
    for (int ks = 0; ks < DMAX / 16; ks++) {
        const int d = ks * 16 + 4 * g;
        qf[ks] = ok && d < a.D ? at_ld8(row + d, a.vec != 0) : 0;
    }
}
#endif /* WK_MFMA_DEVICE */

template <typename T, int DMAX>
__global__ __launch_bounds__(256) void at_mfma_kernel(at_args a)
{
    at_dyn(a);
#if defined(WK_MFMA_DEVICE)
    typedef at_fcfg<DMAX> CF;
    enum { MT = CF::MT, BN = CF::BN, BM = 64 * MT, NT = 256, NKS = DMAX / 16, NCH = (BN * DMAX / 8 + NT - 1) / NT };
    uint16_t *Ks = (uint16_t *)at_dsmem, *Vt = Ks + BN * CF::KLD;
    const int tid = threadIdx.x, wave = tid / 64, lane = tid % 64, c16 = lane % 16, g = lane / 16;
    const int nqb = (a.Tq + BM - 1) / BM, nbh = a.B * a.Hq;
    const int qb = nqb - 1 - (int)(blockIdx.x / (unsigned)nbh), bh = (int)(blockIdx.x % (unsigned)nbh);
    const int b = bh / a.Hq, h = bh % a.Hq, hk = h / a.G;
    const int i0 = qb * BM, i1 = (i0 + BM < a.Tq ? i0 + BM : a.Tq) - 1;
    const T *kp = (const T *)a.k + b * a.ks[0] + hk * a.ks[1];
    const T *vp = (const T *)a.v + b * a.vs[0] + hk * a.vs[1];
    const uint16_t *qp = (const uint16_t *)a.q + b * a.qs[0] + h * a.qs[1];
    int kbeg, kend;
    {
        int64_t lo, hi;
        at_key_range(a, i0, i1, &lo, &hi);
        kbeg = (int)lo;
        kend = (int)hi;
    }
    const bool general = a.cap_inv != 0.0f || a.mask != NULL;

    uint64_t qf[MT][NKS];
    at_frow rw[MT];
    float m[MT], l[MT];
    wk_f32x4 o[MT][NKS];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        const int i = i0 + wave * 16 * MT + mt * 16 + c16;
        const bool ok = i < a.Tq;
        at_fq<DMAX>(qf[mt], qp + (int64_t)(ok ? i : 0) * a.qs[2], ok, a, g);
        int64_t lo, hi;
        at_key_range(a, i, i, &lo, &hi);
        rw[mt].i = i;
        rw[mt].mofs = b * a.ms[0] + h * a.ms[1];
        rw[mt].lo = ok ? (int)(lo > kbeg ? lo : kbeg) : kbeg;
        rw[mt].hi = ok ? (int)(hi < kend ? hi : kend) : kbeg;
        m[mt] = -INFINITY;
        l[mt] = 0.0f;
#pragma unroll
        for (int dn = 0; dn < NKS; dn++) o[mt][dn] = wk_f32x4{ 0.0f, 0.0f, 0.0f, 0.0f };
    }

    uint4 kr[NCH], vr[NCH];
    if (kbeg < kend) at_fload<T, DMAX, BN, NT>(kr, vr, kp, vp, a, kbeg, kend, tid);
    for (int j0 = kbeg; j0 < kend; j0 += BN) {
        __syncthreads();                         /* the last tile's readers are done */
        at_fstore<DMAX, BN, NT>(Ks, Vt, kr, vr, tid);
        __syncthreads();
        if (j0 + BN < kend) at_fload<T, DMAX, BN, NT>(kr, vr, kp, vp, a, j0 + BN, kend, tid);   /* in flight meanwhile */
        at_fstep<T, DMAX, MT, BN / 16>(a, Ks, Vt, 0, j0, qf, rw, m, l, o, general);
    }

    /* out = o / l (0 where no key was seen): lane writes row c16, dims 4g..4g+3 of each 16 */
    uint16_t *op = (uint16_t *)a.o + (int64_t)bh * a.Tq * a.D;
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        float L = l[mt];
        L += wk_shfl_xor<64>(L, 16);
        L += wk_shfl_xor<64>(L, 32);
        const float inv = L > 0.0f ? 1.0f / L : 0.0f;
        const int i = i0 + wave * 16 * MT + mt * 16 + c16;
        if (i >= a.Tq) continue;
#pragma unroll
        for (int dn = 0; dn < NKS; dn++) {
            const int d = dn * 16 + 4 * g;
            if (d < a.D)
                *(uint64_t *)(op + (int64_t)i * a.D + d) =
                    at_pack4<T>(o[mt][dn][0] * inv, o[mt][dn][1] * inv, o[mt][dn][2] * inv, o[mt][dn][3] * inv);
        }
    }
#else
    (void)a;
#if defined(__HIP_DEVICE_COMPILE__)
    __builtin_trap();                            /* the host launches it where wk_mfma_arch says only */
#endif
#endif
}

/* Decode (flash-decoding on the matrix cores): one block takes the 16
 * rows of a group of a kv head's rows (R = G Tq; rows past R are zeros)
 * and one chunk of the keys; each of its NW waves takes its own 16 keys
 * of every tile of BN = 16 NW, with its own (m, l, o); the waves merge
 * through shared memory and the block writes one partial per row, which
 * at_combine_kernel (rmax 16) combines as for the FMA decode kernel. */
template <typename T, int DMAX>
__global__ __launch_bounds__(at_fcfg<DMAX>::NW_DEC * 64) void at_mfma_decode_kernel(at_args a, float *part, int nsplit,
                                                                                     int64_t chunk, int nrg)
{
    at_dyn(a);
#if defined(WK_MFMA_DEVICE)
    const int nuse = at_chunks(a, nsplit, &chunk);
    typedef at_fcfg<DMAX> CF;
    enum { NW = CF::NW_DEC, BN = 16 * NW, NT = 64 * NW, NKS = DMAX / 16, NCH = (BN * DMAX / 8 + NT - 1) / NT };
    static_assert(BN == CF::BN, "a decode tile is one 16-key block per wave");
    uint16_t *Ks = (uint16_t *)at_dsmem, *Vt = Ks + BN * CF::KLD;
    const int tid = threadIdx.x, wave = tid / 64, lane = tid % 64, c16 = lane % 16, g = lane / 16;
    const int D = a.D, R = a.G * a.Tq;
    int64_t blk = blockIdx.x;
    const int split = (int)(blk % nsplit);
    if (split >= nuse) return;                    /* past the count of keys (uniform) */
    blk /= nsplit;
    const int rg = (int)(blk % nrg);
    blk /= nrg;
    const int hk = (int)(blk % a.Hkv), b = (int)(blk / a.Hkv);
    int kbeg, kend;
    {   /* the group's rows' keys, within this split's chunk */
        const int r0 = rg * 16, r1 = (r0 + 16 < R ? r0 + 16 : R) - 1;
        const int64_t ilo = r1 / a.Tq > r0 / a.Tq ? 0 : r0 % a.Tq, ihi = r1 / a.Tq > r0 / a.Tq ? a.Tq - 1 : r1 % a.Tq;
        int64_t lo, hi, alo, ahi;
        at_key_range(a, ilo, ihi, &lo, &hi);
        at_key_range(a, 0, a.Tq - 1, &alo, &ahi);
        const int64_t s0 = alo + split * chunk, s1 = s0 + chunk < ahi ? s0 + chunk : ahi;
        kbeg = (int)(lo > s0 ? lo : s0);
        kend = (int)(hi < s1 ? hi : s1);
    }
    const T *kp = (const T *)a.k + b * a.ks[0] + hk * a.ks[1];
    const T *vp = (const T *)a.v + b * a.vs[0] + hk * a.vs[1];
    const bool general = a.cap_inv != 0.0f || a.mask != NULL;

    uint64_t qf[1][NKS];
    at_frow rw[1];
    float m[1] = { -INFINITY }, l[1] = { 0.0f };
    wk_f32x4 o[1][NKS];
    {
        const int r = rg * 16 + c16;
        const bool ok = r < R;
        const int h = hk * a.G + (ok ? r / a.Tq : 0), i = ok ? r % a.Tq : 0;
        at_fq<DMAX>(qf[0], (const uint16_t *)a.q + b * a.qs[0] + h * a.qs[1] + (int64_t)i * a.qs[2], ok, a, g);
        int64_t lo, hi;
        at_key_range(a, i, i, &lo, &hi);
        rw[0].i = i;
        rw[0].mofs = b * a.ms[0] + h * a.ms[1];
        rw[0].lo = ok ? (int)(lo > kbeg ? lo : kbeg) : kbeg;
        rw[0].hi = ok ? (int)(hi < kend ? hi : kend) : kbeg;
#pragma unroll
        for (int dn = 0; dn < NKS; dn++) o[0][dn] = wk_f32x4{ 0.0f, 0.0f, 0.0f, 0.0f };
    }

    uint4 kr[NCH], vr[NCH];
    if (kbeg < kend) at_fload<T, DMAX, BN, NT>(kr, vr, kp, vp, a, kbeg, kend, tid);
    for (int j0 = kbeg; j0 < kend; j0 += BN) {
        __syncthreads();
        at_fstore<DMAX, BN, NT>(Ks, Vt, kr, vr, tid);
        __syncthreads();
        if (j0 + BN < kend) at_fload<T, DMAX, BN, NT>(kr, vr, kp, vp, a, j0 + BN, kend, tid);
        at_fstep<T, DMAX, 1, 1>(a, Ks, Vt, wave, j0, qf, rw, m, l, o, general);
    }

    /* merge the waves: per wave o[16][DMAX], then (m, l) per row (f32) */
    __syncthreads();                             /* the tiles are no longer read */
    float *mo = (float *)at_dsmem, *ml = mo + NW * 16 * DMAX;
    {
        float L = l[0];
        L += wk_shfl_xor<64>(L, 16);
        L += wk_shfl_xor<64>(L, 32);
        if (g == 0) {
            ml[(wave * 16 + c16) * 2] = m[0];
            ml[(wave * 16 + c16) * 2 + 1] = L;
        }
#pragma unroll
        for (int dn = 0; dn < NKS; dn++)
#pragma unroll
            for (int e = 0; e < 4; e++) mo[(wave * 16 + c16) * DMAX + dn * 16 + 4 * g + e] = o[0][dn][e];
    }
    __syncthreads();
    const int64_t nb = (int64_t)gridDim.x, pb = blockIdx.x;
    for (int idx = tid; idx < 16 * D; idx += NT) {
        const int rr = idx / D, d = idx % D;
        if (rg * 16 + rr >= R) break;
        float M = -INFINITY;
#pragma unroll
        for (int w = 0; w < NW; w++) M = fmaxf(M, ml[(w * 16 + rr) * 2]);
        const float mu = M == -INFINITY ? 0.0f : M;
        float A = 0.0f, L = 0.0f;
#pragma unroll
        for (int w = 0; w < NW; w++) {
            const float wt = exp2f(ml[(w * 16 + rr) * 2] - mu);
            A = fmaf(mo[(w * 16 + rr) * DMAX + d], wt, A);
            L = fmaf(ml[(w * 16 + rr) * 2 + 1], wt, L);
        }
        part[(pb * 16 + rr) * D + d] = A;
        if (d == 0) {
            part[nb * 16 * D + (pb * 16 + rr) * 2] = M;
            part[nb * 16 * D + (pb * 16 + rr) * 2 + 1] = L;
        }
    }
#else
    (void)a;
    (void)part;
    (void)nsplit;
    (void)chunk;
    (void)nrg;
#if defined(__HIP_DEVICE_COMPILE__)
    __builtin_trap();
#endif
#endif
}
#endif /* AT_HAVE_MFMA */

/* ------------------------------------------------------------------ */
/* Host                                                                */

/* Raise a kernel's dynamic shared-memory limit once per device. */
template <typename T, int DMAX> static wk_status at_run_portable(wk_gpu_ctx *c, const at_args &a)
{
    static unsigned done;
    const size_t smem = at_portable_smem(DMAX, a.D);
    wk_status st = wk_gpu_smem_limit(c, at_portable_kernel<T, DMAX>, smem, &done);
    if (st != WK_OK) return st;
    const int64_t BM = at_pcfg<DMAX>::BM;
    const int64_t nblk = (a.Tq + BM - 1) / BM * a.B * a.Hq;
    at_portable_kernel<T, DMAX><<<(unsigned)nblk, AT_PNT, smem, c->stream>>>(a);
    WK_GPU_LAUNCH_CHECK(c, "attention");
    return WK_OK;
}

template <typename T> static wk_status at_portable(wk_gpu_ctx *c, const at_args &a)
{
    if (a.D <= 64) return at_run_portable<T, 64>(c, a);
    if (a.D <= 128) return at_run_portable<T, 128>(c, a);
    return at_run_portable<T, 256>(c, a);
}

template <typename T, int DMAX, int MT> static wk_status at_run_mma(wk_gpu_ctx *c, const at_args &a)
{
#if defined(AT_HAVE_MMA)
    static unsigned done;
    const size_t smem = at_mcfg<DMAX, MT>::smem;
    wk_status st = wk_gpu_smem_limit(c, at_mma_kernel<T, DMAX, MT>, smem, &done);
    if (st != WK_OK) return st;
    const int64_t BM = at_mcfg<DMAX, MT>::BM;
    const int64_t nblk = (a.Tq + BM - 1) / BM * a.B * a.Hq;
    at_mma_kernel<T, DMAX, MT><<<(unsigned)nblk, 128, smem, c->stream>>>(a);
    WK_GPU_LAUNCH_CHECK(c, "attention");
    return WK_OK;
#else
    (void)c;
    (void)a;
    return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "attention: no matrix-core path in this build");
#endif
}

/* WICK_GPU_ATTN_MT=1|2 overrides the rows per warp (tuning runs) */
template <typename T> static wk_status wk_mma(wk_gpu_ctx *c, const at_args &a)
{
    const int mt = wk_gpu_env.attn_mt;
    if (a.D <= 64) return mt == 1 ? at_run_mma<T, 64, 1>(c, a) : at_run_mma<T, 64, 2>(c, a);
    if (a.D <= 128) return mt == 1 ? at_run_mma<T, 128, 1>(c, a) : at_run_mma<T, 128, 2>(c, a);
    return at_run_mma<T, 256, 1>(c, a);
}

/* the chunks of a decode call (at_split_of) on c's device, per_sm
 * blocks resident on each multiprocessor; the rule is kept in *a for the
 * kernels' at_chunks */
static int64_t at_nsplit(const wk_gpu_ctx *c, at_args *a, int per_sm, int64_t groups, int64_t range, int64_t least,
                         int64_t cap, int64_t max, int64_t *chunk)
{
    const int64_t fill = (int64_t)c->sm_count * per_sm / groups;
    a->sp_fill = (int)(fill < INT32_MAX ? fill : INT32_MAX);
    a->sp_least = (int)least;
    a->sp_cap = (int)cap;
    a->sp_max = (int)max;
    return at_split_of(range, a->sp_fill, least, cap, max, chunk);
}

/* launch the combine kernel over partials of rmax rows per block */
template <typename T>
static wk_status at_combine(wk_gpu_ctx *c, const at_args &a, const float *part, int64_t nsplit, int nrg, int rmax)
{
    const int64_t rows = (int64_t)a.B * a.Hq * a.Tq;
    at_combine_kernel<T><<<(unsigned)rows, AT_DNT, 0, c->stream>>>(a, part, (int)nsplit, nrg, rmax);
    return wk_gpu_launched(c, "attention", __FILE__, __LINE__);
}

#if defined(AT_HAVE_MMA)
/* The mma decode kernel's counters (one per group of rows), kept in the
 * context's extension slot: zeroed once, and left at zero by every
 * call's last blocks. Grown (after the stream drains) when a call has
 * more groups. */
struct at_ext {
    unsigned *cnt;
    int64_t cap;
};
static std::mutex at_ext_lock;
static void at_ext_free(wk_gpu_ctx *c, void *state)
{
    (void)c;
    at_ext *e = (at_ext *)state;
    if (!e) return;
    if (e->cnt) (void)hipFree(e->cnt);
    (void)hipGetLastError();
    free(e);
}
static wk_status at_counters(wk_gpu_ctx *c, int64_t n, unsigned **out)
{
    std::lock_guard<std::mutex> g(at_ext_lock);
    at_ext *e = (at_ext *)c->ext[WK_GPU_EXT_ATTN];
    if (!e) {
        e = (at_ext *)calloc(1, sizeof *e);
        if (!e) return wk_gpu_host->set_error(WK_ERR_MEMORY, "attention: out of host memory");
        c->ext[WK_GPU_EXT_ATTN] = e;
        c->ext_free[WK_GPU_EXT_ATTN] = at_ext_free;
    }
    if (e->cap < n) {
        if (e->cnt) {
            WK_GPU_CHECK(hipStreamSynchronize(c->stream));
            WK_GPU_CHECK(hipFree(e->cnt));
            e->cnt = NULL;
            e->cap = 0;
        }
        const int64_t cap = n > 4096 ? n : 4096;
        WK_GPU_CHECK(hipMalloc((void **)&e->cnt, sizeof(unsigned) * (size_t)cap));
        WK_GPU_CHECK(hipMemsetAsync(e->cnt, 0, sizeof(unsigned) * (size_t)cap, c->stream));
        e->cap = cap;
    }
    *out = e->cnt;
    return WK_OK;
}

template <typename T, int DMAX> static wk_status at_run_mma_decode(wk_gpu_ctx *c, const at_args &a0, int64_t range)
{
    static unsigned done;
    static int per_sm;
    const size_t smem = at_dcfg<DMAX>::smem;
    wk_status st = wk_gpu_smem_limit(c, at_mma_decode_kernel<T, DMAX>, smem, &done);
    if (st != WK_OK) return st;
    if (per_sm <= 0) {
        int n = 0;
        if (hipOccupancyMaxActiveBlocksPerMultiprocessor(&n, at_mma_decode_kernel<T, DMAX>, 128, smem) != hipSuccess ||
            n < 1)
            n = 1;
        (void)hipGetLastError();
        per_sm = n;
    }
    at_args a = a0;
    const int R = a.G * a.Tq, nrg = (R + 15) / 16;
    const int64_t groups = (int64_t)a.B * a.Hkv * nrg;
    int64_t chunk;
    /* keys a split takes at least (4 tiles; WICK_ATTN_DECODE_KEYS, a multiple of 64, for tuning runs) */
    const long long vk = wk_gpu_env.attn_decode_keys;
    const int64_t least = vk >= 4 * AT_DKT && vk % (4 * AT_DKT) == 0 ? (int64_t)vk : (int64_t)(4 * AT_DKT);
    /* splits at most: 32 up to 64K keys, then one per 2048 keys. The
     * last block combines every split's partial, so a rank of a split
     * model (half the kv heads: twice the splits to fill the device)
     * paid for 66 partials at 4096 keys. */
    /* WICK_ATTN_DECODE_SPLITS (tuning runs): the cap below 64K keys */
    const long long vs = wk_gpu_env.attn_decode_splits;
    const int64_t cap = vs >= 1 && vs <= AT_DMAXSPLIT ? (int64_t)vs : (int64_t)32;
    const int64_t nsplit = at_nsplit(c, &a, per_sm, groups, range, least, cap, AT_DMAXSPLIT, &chunk);
    const int64_t nb = groups * nsplit;
    if (nb > INT32_MAX) return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "attention: too many heads and batches");
    unsigned *cnt = NULL;
    st = at_counters(c, groups, &cnt);
    if (st != WK_OK) return st;
    float *part = NULL;
    st = wk_gpu_scratch_alloc(c, sizeof(float) * (size_t)nb * 16 * (size_t)(a.D + 2), (void **)&part);
    if (st != WK_OK) return st;
    WK_LAUNCH_PDL(c->cc_major >= 9, (at_mma_decode_kernel<T, DMAX>), (unsigned)nb, 128, smem, c->stream, a, part, cnt,
                  (int)nsplit, chunk, nrg);
    st = wk_gpu_launched(c, "attention", __FILE__, __LINE__);
    wk_gpu_scratch_free(c, part);
    return st;
}
#endif

#if defined(AT_HAVE_MFMA)
template <typename T, int DMAX> static wk_status at_run_mfma(wk_gpu_ctx *c, const at_args &a)
{
    const size_t smem = at_fcfg<DMAX>::tile;
    const int64_t BM = 64 * at_fcfg<DMAX>::MT;
    const int64_t nblk = (a.Tq + BM - 1) / BM * a.B * a.Hq;
    at_mfma_kernel<T, DMAX><<<(unsigned)nblk, 256, smem, c->stream>>>(a);
    WK_GPU_LAUNCH_CHECK(c, "attention");
    return WK_OK;
}

template <typename T, int DMAX> static wk_status at_run_mfma_decode(wk_gpu_ctx *c, const at_args &a0, int64_t range)
{
    enum { NT = 64 * at_fcfg<DMAX>::NW_DEC };
    const size_t smem = at_fcfg<DMAX>::smem_dec;
    static int per_sm;                                 /* per instantiation */
    if (per_sm <= 0) {
        int n = 0;
        if (hipOccupancyMaxActiveBlocksPerMultiprocessor(&n, at_mfma_decode_kernel<T, DMAX>, NT, smem) != hipSuccess ||
            n < 1)
            n = 1;
        (void)hipGetLastError();
        per_sm = n;
    }
    at_args a = a0;
    const int R = a.G * a.Tq, nrg = (R + 15) / 16;
    const int64_t groups = (int64_t)a.B * a.Hkv * nrg;
    int64_t chunk;
    const int64_t nsplit =
        at_nsplit(c, &a, per_sm, groups, range, 4 * at_fcfg<DMAX>::BN, AT_MAXSPLIT, AT_MAXSPLIT, &chunk);
    const int64_t nb = groups * nsplit;
    if (nb > INT32_MAX) return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "attention: too many heads and batches");
    float *part = NULL;
    wk_status st = wk_gpu_scratch_alloc(c, sizeof(float) * (size_t)nb * 16 * (size_t)(a.D + 2), (void **)&part);
    if (st != WK_OK) return st;
    at_mfma_decode_kernel<T, DMAX><<<(unsigned)nb, NT, smem, c->stream>>>(a, part, (int)nsplit, chunk, nrg);
    st = wk_gpu_launched(c, "attention", __FILE__, __LINE__);
    if (st == WK_OK) st = at_combine<T>(c, a, part, nsplit, nrg, 16);
    wk_gpu_scratch_free(c, part);
    return st;
}
#endif

template <typename T> static wk_status at_mfma(wk_gpu_ctx *c, const at_args &a)
{
#if defined(AT_HAVE_MFMA)
    if (a.D <= 64) return at_run_mfma<T, 64>(c, a);
    if (a.D <= 128) return at_run_mfma<T, 128>(c, a);
    return at_run_mfma<T, 256>(c, a);
#else
    (void)c;
    (void)a;
    return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "attention: no MFMA path in this build");
#endif
}

template <typename T> static wk_status at_mfma_decode(wk_gpu_ctx *c, const at_args &a, int64_t range)
{
#if defined(AT_HAVE_MFMA)
    if (a.D <= 64) return at_run_mfma_decode<T, 64>(c, a, range);
    if (a.D <= 128) return at_run_mfma_decode<T, 128>(c, a, range);
    return at_run_mfma_decode<T, 256>(c, a, range);
#else
    (void)c;
    (void)a;
    (void)range;
    return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "attention: no MFMA path in this build");
#endif
}

template <typename T, int DV, int RMAX>
static wk_status at_run_decode(wk_gpu_ctx *c, const at_args &a0, int64_t range)
{
    at_args a = a0;
    const int R = a.G * a.Tq, nrg = (R + RMAX - 1) / RMAX;
    const int64_t groups = (int64_t)a.B * a.Hkv * nrg;
    /* blocks: one full wave of the device (as many as can be resident),
     * chunks of at least 128 keys */
    static int per_sm;                                 /* per instantiation */
    if (per_sm <= 0) {
        int n = 0;
        if (hipOccupancyMaxActiveBlocksPerMultiprocessor(&n, at_decode_kernel<T, DV, RMAX>, AT_DNT, 0) != hipSuccess ||
            n < 1)
            n = 2;
        (void)hipGetLastError();
        per_sm = n;
    }
    int64_t chunk;
    const int64_t nsplit = at_nsplit(c, &a, per_sm, groups, range, 128, AT_MAXSPLIT, AT_MAXSPLIT, &chunk);
    const int64_t nb = groups * nsplit;
    if (nb > INT32_MAX) return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "attention: too many heads and batches");
    float *part = NULL;
    const size_t bytes = sizeof(float) * (size_t)nb * RMAX * (size_t)(a.D + 2);
    wk_status st = wk_gpu_scratch_alloc(c, bytes, (void **)&part);
    if (st != WK_OK) return st;
    at_decode_kernel<T, DV, RMAX><<<(unsigned)nb, AT_DNT, 0, c->stream>>>(a, part, (int)nsplit, chunk, nrg);
    st = wk_gpu_launched(c, "attention", __FILE__, __LINE__);
    if (st == WK_OK) st = at_combine<T>(c, a, part, nsplit, nrg, RMAX);
    wk_gpu_scratch_free(c, part);
    return st;
}

template <typename T, int RMAX> static wk_status at_decode_r(wk_gpu_ctx *c, const at_args &a, int64_t range)
{
    constexpr int VEC = 16 / sizeof(T);
    const int nv = (a.D + VEC - 1) / VEC;              /* 16-byte vectors per row */
    if (nv <= 8) return at_run_decode<T, 8, RMAX>(c, a, range);
    if (nv <= 16) return at_run_decode<T, 16, RMAX>(c, a, range);
    if (nv <= 32 || sizeof(T) < 4) return at_run_decode<T, 32, RMAX>(c, a, range);
    return at_run_decode<T, sizeof(T) < 4 ? 32 : 64, RMAX>(c, a, range);
}

template <typename T> static wk_status at_decode(wk_gpu_ctx *c, const at_args &a, int64_t range)
{
    return a.G * a.Tq <= 4 ? at_decode_r<T, 4>(c, a, range) : at_decode_r<T, 8>(c, a, range);
}

template <typename T> static wk_status at_mma_decode(wk_gpu_ctx *c, const at_args &a, int64_t range)
{
#if defined(AT_HAVE_MMA)
    if (a.D <= 64) return at_run_mma_decode<T, 64>(c, a, range);
    if (a.D <= 128) return at_run_mma_decode<T, 128>(c, a, range);
    return at_run_mma_decode<T, 256>(c, a, range);
#else
    (void)c;
    (void)a;
    (void)range;
    return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "attention: no matrix-core path in this build");
#endif
}

enum { AT_PORTABLE = 0, AT_MMA = 1, AT_DECODE = 2, AT_MMA_DECODE = 3, AT_MFMA = 4, AT_MFMA_DECODE = 5 };
static const char *const at_path_names[] = { "portable", "mma", "decode_fma", "decode", "mfma", "mfma_decode" };

/* the path for this call (WICK_GPU_ATTN forces one where it can run:
 * mma and decode name the build's matrix-core paths, mma.sync or MFMA) */
static int at_pick(const wk_gpu_ctx *c, const at_args &a, wk_dtype dt)
{
    bool mma_ok = false, mfma_ok = false;
#if defined(AT_HAVE_MMA)
    mma_ok = (dt == WK_BF16 || dt == WK_F16) && c->cc_major >= 8 && a.vec && wk_gpu_aligned(a.o, 4);
#endif
#if defined(AT_HAVE_MFMA)
    /* f16/bf16 on a wave64 device with MFMA (the virtual-wave64 build:
     * always); any strides (element loads where rows are not 16-byte
     * aligned); the output is stored 4 elements (8 bytes) at a time */
    mfma_ok = (dt == WK_BF16 || dt == WK_F16) && c->warp_size == 64 && wk_mfma_arch(c->arch) &&
              wk_gpu_aligned(a.o, 8);
#endif
    (void)c;
    (void)dt;
    const int e = wk_gpu_env.attn;
    if (e == WK_ATTN_ENV_PORTABLE) return AT_PORTABLE;
    if (e == WK_ATTN_ENV_DECODE_FMA) return AT_DECODE;
    /* the mma decode kernel stores 4 outputs (8 bytes) at a time */
    const bool mdec_ok = mma_ok && wk_gpu_aligned(a.o, 8);
    const int mat_dec = mdec_ok ? AT_MMA_DECODE : mfma_ok ? AT_MFMA_DECODE : AT_DECODE;
    if (e == WK_ATTN_ENV_DECODE) return mat_dec;
    if (e == WK_ATTN_ENV_MMA && (mma_ok || mfma_ok)) return mma_ok ? AT_MMA : AT_MFMA;
    if ((int64_t)a.G * a.Tq <= 8) return mat_dec;
    return mma_ok ? AT_MMA : mfma_ok ? AT_MFMA : AT_PORTABLE;
}

/* true when every row start of v is a multiple of n elements */
static bool at_rows_aligned(const wk_view *v, int n)
{
    const size_t bytes = (size_t)n * wk_gpu_dtype_size(v->dtype);
    if (!wk_gpu_aligned(wk_gpu_view_ptr(v), bytes)) return false;
    for (int d = 0; d < 3; d++)
        if (v->dims[d] > 1 && v->strides[d] % n != 0) return false;
    return true;
}

wk_status wk_gpu_attention(void *ctx, const wk_op_args *args)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    const wk_view *dst = args->dst, *q = args->src[0], *k = args->src[1], *v = args->src[2], *mk = args->src[3];
    const wk_attention_params *p = (const wk_attention_params *)args->params;
    const wk_dtype dt = q->dtype;
    if (dt != WK_F16 && dt != WK_BF16 && dt != WK_F32)
        return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "attention on the GPU takes f16, bf16 or f32, not %s",
                                      wk_gpu_dtype_name(dt));
    const int64_t B = q->dims[0], Hq = q->dims[1], Tq = q->dims[2], D = q->dims[3];
    const int64_t Hkv = k->dims[1], Tk = k->dims[2];
    if (D % 8 != 0 || D < 8 || D > 256)
        return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED,
                                      "attention on the GPU takes a head dim D that is a multiple of 8 up to 256, "
                                      "not D = %lld",
                                      (long long)D);
    if (B > INT32_MAX || Hq > INT32_MAX || Tq >= ((int64_t)1 << 30) || Tk >= ((int64_t)1 << 30) ||
        B * Hq * ((Tq + 31) / 32) > INT32_MAX)
        return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED,
                                      "attention on the GPU: B = %lld, Hq = %lld, Tq = %lld, Tk = %lld is too large",
                                      (long long)B, (long long)Hq, (long long)Tq, (long long)Tk);
    WK_GPU_ENTER(c);
    if (wk_gpu_numel(dst) == 0) return WK_OK;
    const uint64_t zero = 0;
    if (Tk == 0 || Hkv == 0) return wk_gpu_const_set(ctx, dst, &zero);

    at_args a;
    memset(&a, 0, sizeof a);
    a.q = wk_gpu_view_ptr(q);
    a.k = wk_gpu_view_ptr(k);
    a.v = wk_gpu_view_ptr(v);
    a.o = wk_gpu_view_ptr(dst);
    a.mask = mk ? (const float *)wk_gpu_view_ptr(mk) : NULL;
    for (int d = 0; d < 3; d++) {
        a.qs[d] = q->strides[d];
        a.ks[d] = k->strides[d];
        a.vs[d] = v->strides[d];
    }
    for (int d = 0; d < 4; d++) a.ms[d] = mk ? mk->strides[d] : 0;
    a.B = (int)B;
    a.Hq = (int)Hq;
    a.Hkv = (int)Hkv;
    a.G = (int)(Hq / Hkv);
    a.Tq = (int)Tq;
    a.Tk = (int)Tk;
    a.D = (int)D;
    a.causal = p->causal != 0;
    a.window = p->window > 0 && p->window < Tk + Tq + 1 ? p->window : 0;
    a.shift = Tk - Tq;
    if (p->kv_len) {
        a.kvlen = wk_gpu_view_ptr(p->kv_len);
        a.kvlen64 = p->kv_len->dtype == WK_I64;
    }
    if (p->softcap > 0) {
        a.qmul = (float)p->scale;
        a.cap_inv = (float)(1.0 / p->softcap);
        a.cap_log2 = (float)(p->softcap * 1.4426950408889634);
    } else {
        a.qmul = (float)(p->scale * 1.4426950408889634);
    }
    /* 16-byte rows: what the vector loads (and cp.async) need */
    const int vn = (int)(16 / wk_gpu_dtype_size(dt));
    a.vec = at_rows_aligned(q, vn) && at_rows_aligned(k, vn) && at_rows_aligned(v, vn);

    int64_t lo, hi;
    at_key_range(a, 0, Tq - 1, &lo, &hi);
    if (hi <= lo) return wk_gpu_const_set(ctx, dst, &zero);   /* no query sees a key */

    const int path = at_pick(c, a, dt);
    (void)at_path_names;
    wk_status st = WK_ERR_UNSUPPORTED;
    switch (dt) {
    case WK_F32:
        st = path == AT_DECODE ? at_decode<float>(c, a, hi - lo) : at_portable<float>(c, a);
        break;
    case WK_BF16:
        st = path == AT_DECODE        ? at_decode<wk_bf16_t>(c, a, hi - lo)
           : path == AT_MMA_DECODE  ? at_mma_decode<wk_bf16_t>(c, a, hi - lo)
           : path == AT_MFMA_DECODE ? at_mfma_decode<wk_bf16_t>(c, a, hi - lo)
           : path == AT_MMA         ? wk_mma<wk_bf16_t>(c, a)
           : path == AT_MFMA        ? at_mfma<wk_bf16_t>(c, a)
                                    : at_portable<wk_bf16_t>(c, a);
        break;
    case WK_F16:
        st = path == AT_DECODE        ? at_decode<wk_f16_t>(c, a, hi - lo)
           : path == AT_MMA_DECODE  ? at_mma_decode<wk_f16_t>(c, a, hi - lo)
           : path == AT_MFMA_DECODE ? at_mfma_decode<wk_f16_t>(c, a, hi - lo)
           : path == AT_MMA         ? wk_mma<wk_f16_t>(c, a)
           : path == AT_MFMA        ? at_mfma<wk_f16_t>(c, a)
                                    : at_portable<wk_f16_t>(c, a);
        break;
    default: break;
    }
    return st;
}
