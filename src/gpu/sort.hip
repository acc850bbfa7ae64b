/* sort.hip — arg_sort on the GPU (the SORT family of backend.h): the
 * first k of the stable order of each row of a [rows, n] view of any
 * dense dtype (any strides), ascending or descending, as u32 indices in
 * a contiguous [rows, k] dst. sort and topk are this plus a gather (the
 * core's front-end, src/core/ops_sort.c).
 *
 * Keys: every element becomes an unsigned key whose unsigned order is the
 * order wanted, as on the cpu (src/cpu/cpu_sort.c): integers with the sign
 * bit flipped; floats by the sign trick, -0 made +0, every NaN the largest
 * key (NaN above +inf); descending complements the keys within the
 * dtype's width, so a stable ascending sort of the keys is the stable
 * order asked for. Keys are u32 for dtypes of up to 4 bytes, u64 for i64
 * and f64.
 *
 * Short rows (n <= ST_TILE: 4096 for u32 keys, 2048 for u64): one block
 * sorts TILE / P rows at once in shared memory (P = n rounded up to a
 * power of two) with a bitonic network on (key, index) pairs: the index
 * breaks ties, so the result is the stable order; padding sorts last.
 * 10^5 rows of 32 are 782 blocks of 128 rows.
 *
 * Long rows: LSD radix sort, one pass per byte of the dtype, segmented by
 * row (a row's elements only move within the row). Each row is cut into
 * tiles of RX_TILE elements; a pass is three kernels:
 *   hist     per-tile counts of the 256 digits -> counts[row][digit][tile]
 *   scan     per row, exclusive prefix over (digit, tile) in that order
 *   scatter  each element to its row's offset for (digit, tile) plus its
 *            rank among the tile's elements of that digit before it: the
 *            tile's warps own consecutive runs of it, count their digits,
 *            take consecutive offsets per digit, and rank a chunk of W
 *            elements with 8 ballots (the lanes of equal digit) and a
 *            population count below the lane. Warp width W is a template
 *            parameter (32 or 64, picked at run time; compat.h).
 * Stable at every step, so the whole is stable. The last pass writes only
 * the indices of the first k positions of each row, straight into dst.
 *
 * Long rows with k <= 1024 (topk), where the rows fill the GPU or are at
 * most 2^18 long: a radix select instead (st_select, one block per row):
 * the k-th key found byte by byte until its bucket is small, the keys up
 * to it collected and sorted in shared memory; 3 reads of an f32 row of
 * random values (at most bytes + 1) instead of a sort's 2 x bytes + 1.
 */
#include "gpu_internal.h"

#define ST_THREADS 512          /* short rows: threads per block            */
#define RX_THREADS 256          /* radix: threads per block (one per digit)  */
#define RX_SCAN_THREADS 1024
#define RX_SCAN_ITEMS 16       /* counts per scan thread per step            */

template <typename K> struct st_tile;
template <> struct st_tile<uint32_t> { static constexpr int n = 4096; };
template <> struct st_tile<uint64_t> { static constexpr int n = 2048; };

/* ---- keys ------------------------------------------------------------------ */

/* the key of the raw bits u of one element of dtype dt */
template <typename K> WK_DEV K st_bits(wk_dtype dt, uint64_t u)
{
    switch (dt) {
    case WK_U8:
    case WK_U32: return (K)u;
    case WK_I16: return (K)((uint32_t)u ^ 0x8000u);
    case WK_I32: return (K)((uint32_t)u ^ 0x80000000u);
    case WK_I64: return (K)(u ^ 0x8000000000000000ull);
    case WK_F8E4M3:
        if ((u & 0x7Fu) == 0x7Fu) return 0xFFu;
        if (u == 0x80u) u = 0;
        return (K)(u & 0x80u ? ~u & 0xFFu : u | 0x80u);
    case WK_F16:
    case WK_BF16:
        if ((u & 0x7FFFu) > (dt == WK_F16 ? 0x7C00u : 0x7F80u)) return 0xFFFFu;
        if (u == 0x8000u) u = 0;
        return (K)(u & 0x8000u ? ~u & 0xFFFFu : u | 0x8000u);
    case WK_F32:
        if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0xFFFFFFFFu;
        if (u == 0x80000000u) u = 0;
        return (K)(u & 0x80000000u ? ~u & 0xFFFFFFFFu : u | 0x80000000u);
    case WK_F64:
        if ((u & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull) return (K)~0ull;
        if (u == 0x8000000000000000ull) u = 0;
        return (K)(u & 0x8000000000000000ull ? ~u : u | 0x8000000000000000ull);
    default: return 0;
    }
}

/* the key of element idx of base (of dtype dt) */
template <typename K> WK_DEV K st_key(const void *base, wk_dtype dt, int64_t idx)
{
    switch (wk_dt_elem_bytes(dt)) {
    case 1: return st_bits<K>(dt, ((const uint8_t *)base)[idx]);
    case 2: return st_bits<K>(dt, ((const uint16_t *)base)[idx]);
    case 4: return st_bits<K>(dt, ((const uint32_t *)base)[idx]);
    default: return st_bits<K>(dt, ((const uint64_t *)base)[idx]);
    }
}

/* the layout of the rows being sorted */
struct st_src {
    const void *base;
    wk_dtype dt;
    int64_t off, s0, s1;        /* element (r, i) at off + r * s0 + i * s1 */
};

/* ---- short rows: bitonic sort in shared memory -------------------------------- */

/* Sorts pairs (key, index) in shared memory ascending by (key, index):
 * `active` pairs as independent segments of P (a power of two) each,
 * every thread of the block taking part; ends with a barrier. st_short
 * sorts a row per segment, st_select its candidates as one. */
template <typename K> WK_DEV void st_bitonic(K *key, uint32_t *ix, int P, int active)
{
    for (int kk = 2; kk <= P; kk <<= 1)
        for (int j = kk >> 1; j > 0; j >>= 1) {
            for (int p = threadIdx.x; p < active / 2; p += blockDim.x) {
                const int i = ((p & ~(j - 1)) << 1) | (p & (j - 1)), l = i + j;
                const bool asc = kk == P || (i & kk) == 0;   /* the last merge of a segment: ascending */
                const K ka = key[i], kb = key[l];
                const uint32_t ia = ix[i], ib = ix[l];
                const bool gt = ka > kb || (ka == kb && ia > ib);
                if (gt == asc) {
                    key[i] = kb;
                    key[l] = ka;
                    ix[i] = ib;
                    ix[l] = ia;
                }
            }
            __syncthreads();
        }
}

template <typename K>
__global__ WK_LAUNCH_BOUNDS(ST_THREADS) void st_short(st_src S, int64_t rows, int64_t n, int logP, int64_t k, K flip,
                                                       uint32_t *__restrict__ dst)
{
    constexpr int TILE = st_tile<K>::n;
    __shared__ K key[TILE];
    __shared__ uint32_t ix[TILE];
    const int P = 1 << logP, R = TILE >> logP;
    const int64_t row0 = (int64_t)blockIdx.x * R;
    const int rr = rows - row0 < R ? (int)(rows - row0) : R;
    const int active = rr << logP;
    for (int t = threadIdx.x; t < active; t += blockDim.x) {
        const int r = t >> logP, i = t & (P - 1);
        if (i < n) {
            key[t] = st_key<K>(S.base, S.dt, S.off + (row0 + r) * S.s0 + (int64_t)i * S.s1) ^ flip;
            ix[t] = (uint32_t)i;
        } else {
            key[t] = (K)~(K)0;
            ix[t] = 0xFFFFFFFFu;
        }
    }
    __syncthreads();
    st_bitonic<K>(key, ix, P, active);
    const int64_t outs = (int64_t)rr * k;
    for (int64_t t = threadIdx.x; t < outs; t += blockDim.x) {
        const int64_t r = t / k, j = t - r * k;
        dst[(row0 + r) * k + j] = ix[(r << logP) + j];
    }
}

/* ---- long rows: segmented LSD radix sort ------------------------------------------ */

/* keys and indices of every row, contiguous [rows, n] */
template <typename K>
__global__ WK_LAUNCH_BOUNDS(RX_THREADS) void rx_init(st_src S, int64_t n, int64_t total, K flip, K *__restrict__ keys,
                                                      uint32_t *__restrict__ ix)
{
    WK_GPU_FOR(e, total) {
        const int64_t r = e / n, i = e - r * n;
        keys[e] = st_key<K>(S.base, S.dt, S.off + r * S.s0 + i * S.s1) ^ flip;
        ix[e] = (uint32_t)i;
    }
}

/* elements per thread per radix tile: 16 for u32 keys (tiles of 4096), 8
 * for u64 (2048), so a tile's pairs fit the scatter's shared memory */
template <typename K> struct rx_items { static constexpr int n = sizeof(K) == 4 ? 16 : 8; };

/* counts[(row * 256 + digit) * T + tile]; one block per tile */
template <typename K>
__global__ WK_LAUNCH_BOUNDS(RX_THREADS) void rx_hist(const K *__restrict__ keys, int64_t n, int64_t T, int shift,
                                                      uint32_t *__restrict__ counts)
{
    constexpr int TILE = RX_THREADS * rx_items<K>::n;
    __shared__ uint32_t h[256];
    const int64_t row = blockIdx.x / T, t = blockIdx.x - row * T;
    for (int d = threadIdx.x; d < 256; d += blockDim.x) h[d] = 0;
    __syncthreads();
    const int64_t b = t * TILE, e = b + TILE < n ? b + TILE : n;
    const K *kr = keys + row * n;
    for (int64_t i = b + threadIdx.x; i < e; i += blockDim.x) atomicAdd(&h[(uint32_t)(kr[i] >> shift) & 255u], 1u);
    __syncthreads();
    for (int d = threadIdx.x; d < 256; d += blockDim.x) counts[(row * 256 + d) * T + t] = h[d];
}

/* The exclusive prefix of each row's m = 256 * T counts, in place, in
 * chunks of RX_SCAN_CHUNK: rx_scan_sum totals each chunk (one block per
 * chunk), rx_scan_chunk scans its chunk from the total of the row's
 * earlier chunks. */
#define RX_SCAN_CHUNK (RX_SCAN_THREADS * RX_SCAN_ITEMS)
__global__ WK_LAUNCH_BOUNDS(RX_SCAN_THREADS) void rx_scan_sum(const uint32_t *__restrict__ counts, int64_t m,
                                                               int64_t chunks, uint32_t *__restrict__ sums)
{
    __shared__ uint32_t part[RX_SCAN_THREADS];
    const int64_t row = blockIdx.x / chunks, ch = blockIdx.x - row * chunks;
    const uint32_t *c = counts + row * m + ch * RX_SCAN_CHUNK;
    const int64_t len = m - ch * RX_SCAN_CHUNK < RX_SCAN_CHUNK ? m - ch * RX_SCAN_CHUNK : RX_SCAN_CHUNK;
    uint32_t s = 0;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) s += c[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int o = RX_SCAN_THREADS / 2; o > 0; o >>= 1) {
        if (threadIdx.x < (unsigned)o) part[threadIdx.x] += part[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) sums[blockIdx.x] = part[0];
}

__global__ WK_LAUNCH_BOUNDS(RX_SCAN_THREADS) void rx_scan_chunk(uint32_t *__restrict__ counts, int64_t m,
                                                                 int64_t chunks, const uint32_t *__restrict__ sums)
{
    __shared__ uint32_t part[RX_SCAN_THREADS];
    __shared__ uint32_t carry;
    const int64_t row = blockIdx.x / chunks, ch = blockIdx.x - row * chunks;
    uint32_t *c = counts + row * m + ch * RX_SCAN_CHUNK;
    const int64_t len = m - ch * RX_SCAN_CHUNK < RX_SCAN_CHUNK ? m - ch * RX_SCAN_CHUNK : RX_SCAN_CHUNK;
    /* the row's earlier chunks */
    uint32_t e = 0;
    for (int64_t q = threadIdx.x; q < ch; q += blockDim.x) e += sums[row * chunks + q];
    part[threadIdx.x] = e;
    __syncthreads();
    for (int o = RX_SCAN_THREADS / 2; o > 0; o >>= 1) {
        if (threadIdx.x < (unsigned)o) part[threadIdx.x] += part[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) carry = part[0];
    __syncthreads();
    uint32_t v[RX_SCAN_ITEMS], s = 0;
    for (int q = 0; q < RX_SCAN_ITEMS; q++) {
        const int64_t i = (int64_t)threadIdx.x * RX_SCAN_ITEMS + q;
        v[q] = i < len ? c[i] : 0;
        s += v[q];
    }
    part[threadIdx.x] = s;
    __syncthreads();
    /* inclusive scan of the per-thread sums (Hillis-Steele) */
    for (int o = 1; o < RX_SCAN_THREADS; o <<= 1) {
        const uint32_t add = threadIdx.x >= (unsigned)o ? part[threadIdx.x - o] : 0;
        __syncthreads();
        part[threadIdx.x] += add;
        __syncthreads();
    }
    uint32_t run = carry + part[threadIdx.x] - s;
    for (int q = 0; q < RX_SCAN_ITEMS; q++) {
        const int64_t i = (int64_t)threadIdx.x * RX_SCAN_ITEMS + q;
        if (i < len) c[i] = run;
        run += v[q];
    }
}

/* One block per tile. Warp w owns elements [w * S, (w + 1) * S) of the
 * tile (S = items * W), taken W at a time; each element gets its place in
 * the tile ordered by digit (stable), goes there in shared memory, and the
 * block then writes the tile out in that order, so that each digit's run
 * is one contiguous stretch of the row (coalesced writes). last: write
 * the indices of row positions < k to dst instead of the next keys. */
template <int W, typename K>
__global__ WK_LAUNCH_BOUNDS(RX_THREADS) void rx_scatter(const K *__restrict__ kin, const uint32_t *__restrict__ iin,
                                                         K *__restrict__ kout, uint32_t *__restrict__ iout,
                                                         const uint32_t *__restrict__ counts, int64_t n, int64_t T,
                                                         int shift, int last, int64_t k, uint32_t *__restrict__ dst)
{
    constexpr int ITEMS = rx_items<K>::n, TILE = RX_THREADS * ITEMS;
    constexpr int NW = RX_THREADS / W, S = ITEMS * W;
    __shared__ uint32_t cnt[NW][256];      /* per warp and digit: place in the digit's run */
    __shared__ uint32_t lstart[256];       /* the digit's run in the tile                  */
    __shared__ uint32_t goff[256];         /* the digit's run in the row                   */
    __shared__ K ks[TILE];
    __shared__ uint32_t is[TILE];
    const int64_t row = blockIdx.x / T, t = blockIdx.x - row * T;
    const int lane = wk_lane<W>(), w = wk_warp_id<W>();
    const int tid = (int)threadIdx.x;
    for (int i = tid; i < NW * 256; i += RX_THREADS) (&cnt[0][0])[i] = 0;
    __syncthreads();
    const int64_t rb = row * n, t0 = t * TILE;
    const int tn = n - t0 < TILE ? (int)(n - t0) : TILE;      /* elements in this tile */
    const int b = w * S;
    K kv[ITEMS];
    uint32_t iv[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {
        const int i = b + j * W + lane;
        kv[j] = 0;
        iv[j] = 0;
        if (i < tn) {
            kv[j] = kin[rb + t0 + i];
            iv[j] = iin[rb + t0 + i];
            atomicAdd(&cnt[w][(uint32_t)(kv[j] >> shift) & 255u], 1u);
        }
    }
    __syncthreads();
    /* per digit (RX_THREADS == 256: one thread each): each warp's place in
     * the digit's run, the run's length, its start in the row */
    {
        const int d = tid;
        uint32_t run = 0;
        for (int q = 0; q < NW; q++) {
            const uint32_t c = cnt[q][d];
            cnt[q][d] = run;
            run += c;
        }
        lstart[d] = run;
        goff[d] = counts[(row * 256 + d) * T + t];
    }
    __syncthreads();
    /* exclusive prefix of the run lengths (Hillis-Steele over 256) */
    {
        const uint32_t own = lstart[tid];
        for (int o = 1; o < 256; o <<= 1) {
            const uint32_t add = tid >= o ? lstart[tid - o] : 0;
            __syncthreads();
            lstart[tid] += add;
            __syncthreads();
        }
        lstart[tid] -= own;
    }
    __syncthreads();
    const uint64_t below = ((uint64_t)1 << lane) - 1;
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {
        const int i = b + j * W + lane;
        const bool valid = i < tn;
        const uint32_t dg = valid ? (uint32_t)(kv[j] >> shift) & 255u : 0u;
        uint64_t peers = wk_ballot<W>(valid);
#pragma unroll
        for (int bit = 0; bit < 8; bit++) {
            const int on = (dg >> bit) & 1u;
            const uint64_t m = wk_ballot<W>(on);
            peers &= on ? m : ~m;
        }
        uint32_t pos = 0;
        if (valid) pos = lstart[dg] + cnt[w][dg] + (uint32_t)__popcll(peers & below);
        wk_syncwarp<W>();
        if (valid && (peers & below) == 0) cnt[w][dg] += (uint32_t)__popcll(peers);   /* the group's first lane */
        wk_syncwarp<W>();
        if (valid) {
            ks[pos] = kv[j];
            is[pos] = iv[j];
        }
    }
    __syncthreads();
    for (int i = tid; i < tn; i += RX_THREADS) {
        const K key = ks[i];
        const uint32_t d = (uint32_t)(key >> shift) & 255u;
        const int64_t gp = (int64_t)goff[d] + (i - (int)lstart[d]);
        if (last) {
            if (gp < k) dst[row * k + gp] = is[i];
        } else {
            kout[rb + gp] = key;
            iout[rb + gp] = is[i];
        }
    }
}

/* ---- first k of long rows: radix select ------------------------------------------ */

/* One block per row finds the k-th smallest key T of the row by a radix
 * select (one pass over the row per key byte, most significant first: a
 * histogram of the byte among the keys that match the bytes chosen so
 * far, then the byte whose bucket holds the k-th), stopping early once
 * the keys below the bucket and the bucket itself fit SEL_MAXK; collects
 * those (or, where T's ties are too many, the keys below T and T's first
 * ties: the lowest indices, the stable order's choice) and sorts the
 * (key, index) pairs in shared memory, the first k out. Only
 * shared-memory atomics and block barriers: the same on 32- and 64-lane
 * waves. */
#define SEL_THREADS 1024
#define SEL_MAXK 1024          /* the largest k this path takes             */
#define SEL_J 8                /* elements per thread per round             */
#define SEL_COPIES 16          /* histogram copies (thread % 16), so that
                                  keys crowding into a few buckets (most
                                  floats share a top byte) do not queue on
                                  one counter; no change measured on random
                                  f32 rows, where the loads set the pace    */

/* inclusive prefix sum of v over the first n (<= SEL_THREADS) threads, in
 * buf; every thread of the block must call it */
WK_DEV uint32_t sel_scan(uint32_t *buf, uint32_t v, int n)
{
    const int t = threadIdx.x;
    if (t < n) buf[t] = v;
    __syncthreads();
    for (int off = 1; off < n; off <<= 1) {
        const uint32_t add = t < n && t >= off ? buf[t - off] : 0u;
        __syncthreads();
        if (t < n) buf[t] += add;
        __syncthreads();
    }
    const uint32_t r = t < n ? buf[t] : 0u;
    __syncthreads();
    return r;
}

template <typename K, typename R>
__global__ WK_LAUNCH_BOUNDS(SEL_THREADS) void st_select(st_src S, int64_t n, int64_t k, int bytes, K flip,
                                                         uint32_t *__restrict__ dst)
{
    __shared__ uint32_t hist[SEL_COPIES * 256];
    __shared__ uint32_t buf[SEL_THREADS];
    __shared__ K ck[SEL_MAXK];
    __shared__ uint32_t ci[SEL_MAXK];
    __shared__ uint32_t s_digit, s_krem, s_bucket, s_cnt, s_ties, s_any;
    const int tid = threadIdx.x;
    const int64_t row = blockIdx.x;
    const R *src = (const R *)S.base + S.off + row * S.s0;   /* the row's raw elements */
    K prefix = 0, mask = 0;
    uint32_t krem = (uint32_t)k;   /* how many of the keys matching prefix under mask are taken */
    uint32_t ncand = (uint32_t)k;  /* the pairs collected and sorted */
    bool ranked = false;           /* more ties than wanted: take the lowest indices */
    for (int p = bytes - 1; p >= 0; p--) {
        const int shift = 8 * p;
        for (int d = tid; d < SEL_COPIES * 256; d += blockDim.x) hist[d] = 0;
        __syncthreads();
        uint32_t *h = hist + (tid % SEL_COPIES) * 256;
        for (int64_t i0 = 0; i0 < n; i0 += (int64_t)SEL_J * blockDim.x) {
            R raw[SEL_J];   /* every load issued before the first is used */
#pragma unroll
            for (int j = 0; j < SEL_J; j++) {
                const int64_t i = i0 + (int64_t)j * blockDim.x + tid;
                raw[j] = i < n ? src[i * S.s1] : (R)0;
            }
#pragma unroll
            for (int j = 0; j < SEL_J; j++) {
                const int64_t i = i0 + (int64_t)j * blockDim.x + tid;
                const K key = st_bits<K>(S.dt, raw[j]) ^ flip;
                if (i < n && (key & mask) == prefix) atomicAdd(&h[(uint32_t)(key >> shift) & 255u], 1u);
            }
        }
        __syncthreads();
        uint32_t v = 0;
        if (tid < 256)
            for (int q = 0; q < SEL_COPIES; q++) v += hist[q * 256 + tid];
        const uint32_t incl = sel_scan(buf, v, 256);
        if (tid < 256 && incl - v < krem && krem <= incl) {   /* exactly one bucket holds the krem-th */
            s_digit = (uint32_t)tid;
            s_krem = krem - (incl - v);
            s_bucket = v;
        }
        __syncthreads();
        prefix |= (K)s_digit << shift;
        mask |= (K)255u << shift;
        krem = s_krem;
        const uint32_t bucket = s_bucket;
        __syncthreads();
        /* the keys below the bucket and the whole bucket fit: collect them
         * all and let the sort find the first k (random keys: after two
         * bytes, for small k) */
        const uint32_t all = (uint32_t)k - krem + bucket;
        if (all <= SEL_MAXK) {
            ncand = all;
            krem = bucket;
            break;
        }
        ranked = p == 0;                        /* equal keys, too many of them to collect */
    }
    /* collect: keys below prefix (under mask) and the first krem ties;
     * each thread takes SEL_J consecutive elements of a chunk so that the
     * ties' ranks follow the index order */
    if (tid == 0) s_cnt = s_ties = 0;
    __syncthreads();
    const int64_t chunk = (int64_t)SEL_J * blockDim.x;
    for (int64_t c0 = 0; c0 < n; c0 += chunk) {
        const int64_t i0 = c0 + (int64_t)tid * SEL_J;
        R raw[SEL_J];
        K key[SEL_J];
        uint32_t nt = 0;
#pragma unroll
        for (int j = 0; j < SEL_J; j++) raw[j] = i0 + j < n ? src[(i0 + j) * S.s1] : (R)0;
#pragma unroll
        for (int j = 0; j < SEL_J; j++) {
            const int64_t i = i0 + j;
            key[j] = st_bits<K>(S.dt, raw[j]) ^ flip;
            if (i < n) {
                const K km = key[j] & mask;
                if (km < prefix) {
                    const uint32_t slot = atomicAdd(&s_cnt, 1u);
                    ck[slot] = key[j];
                    ci[slot] = (uint32_t)i;
                }
                nt += km == prefix;
            }
        }
        uint32_t before = 0;   /* ties taken before this thread's elements */
        if (ranked) {
            if (tid == 0) s_any = 0;
            __syncthreads();
            if (nt) s_any = 1;
            __syncthreads();
            const bool any = s_any != 0;
            const uint32_t taken = s_ties;
            __syncthreads();   /* both read by all before they change */
            if (!any || taken >= krem) continue;   /* uniform: no ties here, or all taken */
            const uint32_t incl = sel_scan(buf, nt, blockDim.x);
            before = taken + incl - nt;
            if (tid == (int)blockDim.x - 1) s_ties = taken + incl;
        }
        if (nt) {
            uint32_t r = before;
#pragma unroll
            for (int j = 0; j < SEL_J; j++) {
                const int64_t i = i0 + j;
                if (i < n && (key[j] & mask) == prefix && r < krem) {
                    const uint32_t slot = atomicAdd(&s_cnt, 1u);
                    ck[slot] = key[j];
                    ci[slot] = (uint32_t)i;
                    r++;
                }
            }
        }
    }
    __syncthreads();
    /* sort the ncand pairs by (key, index): a bitonic network over P =
     * ncand rounded up to a power of two, padding last; the first k out */
    int P = 1;
    while (P < (int)ncand) P <<= 1;
    for (int t = tid; t < P; t += blockDim.x)
        if (t >= (int)ncand) {
            ck[t] = (K)~(K)0;
            ci[t] = 0xFFFFFFFFu;
        }
    __syncthreads();
    st_bitonic<K>(ck, ci, P, P);
    for (int64_t t = tid; t < k; t += blockDim.x) dst[row * k + t] = ci[t];
}

template <typename K>
static wk_status st_run(wk_gpu_ctx *c, const st_src &S, int64_t rows, int64_t n, int64_t k, int bytes, K flip,
                        uint32_t *dst, const char *name)
{
    constexpr int TILE = st_tile<K>::n, RTILE = RX_THREADS * rx_items<K>::n;
    if (n <= TILE) {
        int logP = 0;
        while (((int64_t)1 << logP) < n) logP++;
        const int64_t R = TILE >> logP, blocks = (rows + R - 1) / R;
        if (blocks > 0x7FFFFFFF) return wk_gpu_host->set_error(WK_ERR_SHAPE, "%s: too many rows (%lld)", name, (long long)rows);
        st_short<K><<<(unsigned)blocks, ST_THREADS, 0, c->stream>>>(S, rows, n, logP, k, flip, dst);
        WK_GPU_LAUNCH_CHECK(c, name);
        return WK_OK;
    }
    /* the first k of long rows, k small: a radix select per row, one
     * block each, where the rows fill the GPU or are short enough for
     * one block to read a few times (a sampling step's [1, vocabulary]) */
    if (k <= SEL_MAXK && k < n && rows <= 0x7FFFFFFF && (n <= ((int64_t)1 << 18) || rows >= 2 * (int64_t)c->sm_count)) {
        const unsigned g = (unsigned)rows;
        if constexpr (sizeof(K) == 8) st_select<K, uint64_t><<<g, SEL_THREADS, 0, c->stream>>>(S, n, k, 8, flip, dst);
        else if (bytes == 1) st_select<K, uint8_t><<<g, SEL_THREADS, 0, c->stream>>>(S, n, k, 1, flip, dst);
        else if (bytes == 2) st_select<K, uint16_t><<<g, SEL_THREADS, 0, c->stream>>>(S, n, k, 2, flip, dst);
        else st_select<K, uint32_t><<<g, SEL_THREADS, 0, c->stream>>>(S, n, k, 4, flip, dst);
        WK_GPU_LAUNCH_CHECK(c, name);
        return WK_OK;
    }
    const int64_t total = rows * n, T = (n + RTILE - 1) / RTILE, tiles = rows * T;
    const int64_t m = 256 * T, chunks = (m + RX_SCAN_CHUNK - 1) / RX_SCAN_CHUNK;
    if (tiles > 0x7FFFFFFF || rows * chunks > 0x7FFFFFFF || n > (int64_t)UINT32_MAX)
        return wk_gpu_host->set_error(WK_ERR_SHAPE, "%s: too many elements (%lld rows of %lld)", name, (long long)rows,
                                      (long long)n);
    void *kb = NULL, *ib = NULL, *cb = NULL;
    const size_t ks = (size_t)total * sizeof(K), is = (size_t)total * 4;
    wk_status st = wk_gpu_scratch_alloc(c, 2 * ks, &kb);
    if (st == WK_OK) st = wk_gpu_scratch_alloc(c, 2 * is, &ib);
    if (st == WK_OK) st = wk_gpu_scratch_alloc(c, ((size_t)tiles * 256 + (size_t)(rows * chunks)) * 4, &cb);
    K *k0 = (K *)kb, *k1 = k0 + total;
    uint32_t *i0 = (uint32_t *)ib, *i1 = i0 + total, *cnt = (uint32_t *)cb, *sums = cnt + tiles * 256;
    if (st == WK_OK) {
        rx_init<K><<<wk_gpu_grid(c, total, RX_THREADS, 4), RX_THREADS, 0, c->stream>>>(S, n, total, flip, k0, i0);
        st = wk_gpu_launched(c, name, __FILE__, __LINE__);
    }
    for (int p = 0; p < bytes && st == WK_OK; p++) {
        const int last = p == bytes - 1;
        rx_hist<K><<<(unsigned)tiles, RX_THREADS, 0, c->stream>>>(k0, n, T, 8 * p, cnt);
        st = wk_gpu_launched(c, name, __FILE__, __LINE__);
        if (st != WK_OK) break;
        if (chunks > 1) {
            rx_scan_sum<<<(unsigned)(rows * chunks), RX_SCAN_THREADS, 0, c->stream>>>(cnt, m, chunks, sums);
            st = wk_gpu_launched(c, name, __FILE__, __LINE__);
            if (st != WK_OK) break;
        }
        rx_scan_chunk<<<(unsigned)(rows * chunks), RX_SCAN_THREADS, 0, c->stream>>>(cnt, m, chunks, sums);
        st = wk_gpu_launched(c, name, __FILE__, __LINE__);
        if (st != WK_OK) break;
        if (c->warp_size == 64)
            rx_scatter<64, K><<<(unsigned)tiles, RX_THREADS, 0, c->stream>>>(k0, i0, k1, i1, cnt, n, T, 8 * p, last, k, dst);
        else
            rx_scatter<32, K><<<(unsigned)tiles, RX_THREADS, 0, c->stream>>>(k0, i0, k1, i1, cnt, n, T, 8 * p, last, k, dst);
        st = wk_gpu_launched(c, name, __FILE__, __LINE__);
        K *tk = k0; k0 = k1; k1 = tk;
        uint32_t *ti = i0; i0 = i1; i1 = ti;
    }
    if (cb) wk_gpu_scratch_free(c, cb);
    if (ib) wk_gpu_scratch_free(c, ib);
    if (kb) wk_gpu_scratch_free(c, kb);
    return st;
}

wk_status wk_gpu_arg_sort(void *ctx, const wk_op_args *a)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    const wk_view *s = a->src[0], *d = a->dst;
    if (!s || s->rank != 2 || d->rank != 2 || d->dtype != WK_U32 || d->dims[0] != s->dims[0] || d->dims[1] > s->dims[1])
        return wk_gpu_host->set_error(WK_ERR_ARGUMENT, "arg_sort: bad arguments");
    const int64_t rows = s->dims[0], n = s->dims[1], k = d->dims[1];
    if (rows == 0 || n == 0 || k == 0) return WK_OK;
    const int bytes = (int)wk_gpu_dtype_size(s->dtype);
    if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8)
        return wk_gpu_host->set_error(WK_ERR_DTYPE, "arg_sort: dtype %s", wk_gpu_dtype_name(s->dtype));
    WK_GPU_ENTER(c);
    const bool desc = a->p[0] != 0;
    const st_src S = { s->base, s->dtype, s->offset, s->strides[0], s->strides[1] };
    uint32_t *pd = (uint32_t *)d->base + d->offset;
    const char *name = wk_gpu_op_name(a->op);
    if (bytes == 8) return st_run<uint64_t>(c, S, rows, n, k, 8, desc ? ~(uint64_t)0 : 0, pd, name);
    const uint32_t mask = bytes == 4 ? 0xFFFFFFFFu : (1u << (8 * bytes)) - 1u;
    return st_run<uint32_t>(c, S, rows, n, k, bytes, desc ? mask : 0u, pd, name);
}
