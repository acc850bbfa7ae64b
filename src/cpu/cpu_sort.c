/* cpu_sort.c — arg_sort on the CPU (the SORT family of backend.h): the
 * stable order of each row of a [rows, n] view of any dense dtype,
 * ascending or descending, as u32 indices.
 *
 * Every element becomes an unsigned key whose unsigned order is the
 * order wanted: integers with the sign bit flipped; floats by the usual
 * bit trick (negative: all bits flipped; positive: the sign bit set),
 * with -0 made +0 (they compare equal) and every NaN made the largest
 * key (NaN sorts above +inf, as in PyTorch); descending complements the
 * keys, so a stable ascending sort of the keys is the stable order asked
 * for (ties keep their order both ways).
 *
 * Rows of up to SHORT_ROW elements: insertion sort of (key, index)
 * pairs. Longer rows: LSD radix sort by bytes (one pass per byte of the
 * dtype; a pass whose byte is the same in every key is skipped), with
 * rows spread over the thread pool; when there are fewer rows than
 * threads and the rows are long, each pass of one row is itself split
 * over the threads (per-thread histograms, a prefix over (digit,
 * thread), stable scatters).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include "cpu_internal.h"

#define SHORT_ROW 48
#define PAR_ROW (1 << 17)      /* rows at least this long sort in parallel */

/* ---- keys --------------------------------------------------------------- */

/* the key of element i of the row (width: the dtype's bits) */
static inline uint64_t sort_key(const void *base, wk_dtype dt, int64_t idx)
{
    switch (dt) {
    case WK_U8: return ((const uint8_t *)base)[idx];
    case WK_U32: return ((const uint32_t *)base)[idx];
    case WK_I16: return (uint16_t)((const int16_t *)base)[idx] ^ 0x8000u;
    case WK_I32: return (uint32_t)((const int32_t *)base)[idx] ^ 0x80000000u;
    case WK_I64: return (uint64_t)((const int64_t *)base)[idx] ^ 0x8000000000000000ull;
    case WK_F8E4M3: {
        uint32_t u = ((const uint8_t *)base)[idx];
        if ((u & 0x7Fu) == 0x7Fu) return 0xFFu;
        if (u == 0x80u) u = 0;
        return u & 0x80u ? ~u & 0xFFu : u | 0x80u;
    }
    case WK_F16:
    case WK_BF16: {
        uint32_t u = ((const uint16_t *)base)[idx];
        if ((u & 0x7FFFu) > (dt == WK_F16 ? 0x7C00u : 0x7F80u)) return 0xFFFFu;
        if (u == 0x8000u) u = 0;
        return u & 0x8000u ? ~u & 0xFFFFu : u | 0x8000u;
    }
    case WK_F32: {
        uint32_t u;
        memcpy(&u, (const float *)base + idx, 4);
        if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0xFFFFFFFFu;
        if (u == 0x80000000u) u = 0;
        return u & 0x80000000u ? ~u : u | 0x80000000u;
    }
    case WK_F64: {
        uint64_t u;
        memcpy(&u, (const double *)base + idx, 8);
        if ((u & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull) return ~0ull;
        if (u == 0x8000000000000000ull) u = 0;
        return u & 0x8000000000000000ull ? ~u : u | 0x8000000000000000ull;
    }
    default: return 0;
    }
}

typedef struct sort_job {
    const wk_view *src, *dst;
    int bytes;                  /* key width */
    uint64_t flip;              /* all ones of the width when descending */
    atomic_int failed;          /* a task could not get its scratch      */
} sort_job;

/* keys of row r into k[0..n), indices 0..n-1 into ix */
static void load_row(const sort_job *J, int64_t r, int64_t b, int64_t e, uint64_t *k, uint32_t *ix)
{
    const wk_view *s = J->src;
    int64_t off = s->offset + r * s->strides[0], st = s->strides[1];
    for (int64_t i = b; i < e; i++) {
        k[i] = sort_key(s->base, s->dtype, off + i * st) ^ J->flip;
        ix[i] = (uint32_t)i;
    }
}

static void insertion(int64_t n, uint64_t *k, uint32_t *ix)
{
    for (int64_t i = 1; i < n; i++) {
        uint64_t kv = k[i];
        uint32_t iv = ix[i];
        int64_t j = i - 1;
        while (j >= 0 && k[j] > kv) {
            k[j + 1] = k[j];
            ix[j + 1] = ix[j];
            j--;
        }
        k[j + 1] = kv;
        ix[j + 1] = iv;
    }
}

/* LSD radix sort of n (key, index) pairs; k2/ix2 are scratch of n.
 * Returns the array holding the sorted indices (ix or ix2). */
static uint32_t *radix(int64_t n, int bytes, uint64_t *k, uint32_t *ix, uint64_t *k2, uint32_t *ix2)
{
    int64_t cnt[256];
    for (int b = 0; b < bytes; b++) {
        int sh = 8 * b;
        memset(cnt, 0, sizeof cnt);
        for (int64_t i = 0; i < n; i++) cnt[(k[i] >> sh) & 0xFF]++;
        if (cnt[(k[0] >> sh) & 0xFF] == n) continue;      /* one digit: nothing moves */
        int64_t sum = 0;
        for (int d = 0; d < 256; d++) {
            int64_t c = cnt[d];
            cnt[d] = sum;
            sum += c;
        }
        for (int64_t i = 0; i < n; i++) {
            int64_t p = cnt[(k[i] >> sh) & 0xFF]++;
            k2[p] = k[i];
            ix2[p] = ix[i];
        }
        uint64_t *tk = k; k = k2; k2 = tk;
        uint32_t *ti = ix; ix = ix2; ix2 = ti;
    }
    return ix;
}

/* ---- the first k of a long row (topk): select, then sort those ---------------
 * (key, index) pairs are distinct, so "a before b" is a total order and
 * the k first pairs of it are one set: a quickselect (median of three)
 * moves them to the front, and sorting them by the same order gives the
 * stable order's first k. */

static inline bool pair_lt(uint64_t ka, uint32_t ia, uint64_t kb, uint32_t ib)
{
    return ka < kb || (ka == kb && ia < ib);
}
static inline void pair_swap(uint64_t *k, uint32_t *ix, int64_t a, int64_t b)
{
    uint64_t tk = k[a]; k[a] = k[b]; k[b] = tk;
    uint32_t ti = ix[a]; ix[a] = ix[b]; ix[b] = ti;
}

static void select_first(int64_t n, int64_t kk, uint64_t *k, uint32_t *ix)
{
    int64_t lo = 0, hi = n - 1;
    while (hi > lo) {
        int64_t mid = lo + (hi - lo) / 2;
        if (pair_lt(k[mid], ix[mid], k[lo], ix[lo])) pair_swap(k, ix, mid, lo);
        if (pair_lt(k[hi], ix[hi], k[lo], ix[lo])) pair_swap(k, ix, hi, lo);
        if (pair_lt(k[hi], ix[hi], k[mid], ix[mid])) pair_swap(k, ix, hi, mid);
        uint64_t pk = k[mid];
        uint32_t pi = ix[mid];
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (pair_lt(k[i], ix[i], pk, pi)) i++;
            while (pair_lt(pk, pi, k[j], ix[j])) j--;
            if (i <= j) pair_swap(k, ix, i++, j--);
        }
        if (kk - 1 <= j) hi = j;
        else if (kk - 1 >= i) lo = i;
        else break;
    }
}

/* sort the first kk pairs by (key, index) */
typedef struct kpair { uint64_t key; uint32_t idx; } kpair;
static int cmp_pair(const void *a, const void *b)
{
    const kpair *x = a, *y = b;
    return x->key != y->key ? (x->key < y->key ? -1 : 1) : (x->idx < y->idx ? -1 : x->idx > y->idx);
}
static bool sort_first(int64_t kk, uint64_t *k, uint32_t *ix)
{
    kpair *p = malloc((size_t)kk * sizeof *p + 16);
    if (!p) return false;
    for (int64_t i = 0; i < kk; i++) p[i] = (kpair){ k[i], ix[i] };
    qsort(p, (size_t)kk, sizeof *p, cmp_pair);
    for (int64_t i = 0; i < kk; i++) ix[i] = p[i].idx;
    free(p);
    return true;
}

/* ---- many rows: one row per task ------------------------------------------ */

static void rows_task(void *arg, int64_t r0, int64_t r1)
{
    const sort_job *J = arg;
    int64_t n = J->src->dims[1], kk = J->dst->dims[1];
    size_t m = (size_t)n;
    uint64_t *k = malloc(m * 16);
    uint32_t *ix = malloc(m * 8);
    if (!k || !ix) {
        free(k);
        free(ix);
        atomic_store(&((sort_job *)arg)->failed, 1);
        return;
    }
    uint64_t *k2 = k + m;
    uint32_t *ix2 = ix + m;
    for (int64_t r = r0; r < r1; r++) {
        load_row(J, r, 0, n, k, ix);
        uint32_t *res = ix;
        if (n <= SHORT_ROW) insertion(n, k, ix);
        else if (kk * 8 <= n) {
            select_first(n, kk, k, ix);
            if (!sort_first(kk, k, ix)) atomic_store(&((sort_job *)arg)->failed, 1);
        } else res = radix(n, J->bytes, k, ix, k2, ix2);
        memcpy((uint32_t *)J->dst->base + J->dst->offset + r * kk, res, (size_t)kk * 4);
    }
    free(k);
    free(ix);
}

/* ---- one long row: each pass split over T tasks ---------------------------- */

typedef struct par_row {
    const sort_job *J;
    int64_t r, n, T, chunk;
    int sh;
    uint64_t *k, *k2;
    uint32_t *ix, *ix2;
    int64_t (*cnt)[256];        /* T histograms, then T start offsets */
} par_row;

static void par_load(void *arg, int64_t t0, int64_t t1)
{
    par_row *P = arg;
    for (int64_t t = t0; t < t1; t++) {
        int64_t b = t * P->chunk, e = b + P->chunk < P->n ? b + P->chunk : P->n;
        load_row(P->J, P->r, b, e, P->k, P->ix);
    }
}

static void par_hist(void *arg, int64_t t0, int64_t t1)
{
    par_row *P = arg;
    for (int64_t t = t0; t < t1; t++) {
        int64_t b = t * P->chunk, e = b + P->chunk < P->n ? b + P->chunk : P->n;
        int64_t *c = P->cnt[t];
        memset(c, 0, sizeof P->cnt[t]);
        for (int64_t i = b; i < e; i++) c[(P->k[i] >> P->sh) & 0xFF]++;
    }
}

static void par_scatter(void *arg, int64_t t0, int64_t t1)
{
    par_row *P = arg;
    for (int64_t t = t0; t < t1; t++) {
        int64_t b = t * P->chunk, e = b + P->chunk < P->n ? b + P->chunk : P->n;
        int64_t *c = P->cnt[t];
        for (int64_t i = b; i < e; i++) {
            int64_t p = c[(P->k[i] >> P->sh) & 0xFF]++;
            P->k2[p] = P->k[i];
            P->ix2[p] = P->ix[i];
        }
    }
}

static wk_status sort_long_row(const sort_job *J, int64_t r, int T)
{
    int64_t n = J->src->dims[1];
    size_t m = (size_t)n;
    par_row P = { .J = J, .r = r, .n = n, .T = T, .chunk = (n + T - 1) / T };
    P.k = malloc(m * 16);
    P.ix = malloc(m * 8);
    P.cnt = malloc((size_t)T * sizeof *P.cnt);
    if (!P.k || !P.ix || !P.cnt) {
        free(P.k); free(P.ix); free(P.cnt);
        return WK_CPU_ERROR(WK_ERR_MEMORY, "out of memory sorting a row of %lld elements", (long long)n);
    }
    P.k2 = P.k + m;
    P.ix2 = P.ix + m;
    wk_parallel_for(T, 1, par_load, &P);
    for (int b = 0; b < J->bytes; b++) {
        P.sh = 8 * b;
        wk_parallel_for(T, 1, par_hist, &P);
        int64_t sum = 0;
        bool one = false;
        for (int d = 0; d < 256 && !one; d++) {
            int64_t tot = 0;
            for (int t = 0; t < T; t++) tot += P.cnt[t][d];
            one = tot == n;
        }
        if (one) continue;
        for (int d = 0; d < 256; d++)
            for (int t = 0; t < T; t++) {
                int64_t c = P.cnt[t][d];
                P.cnt[t][d] = sum;
                sum += c;
            }
        wk_parallel_for(T, 1, par_scatter, &P);
        uint64_t *tk = P.k; P.k = P.k2; P.k2 = tk;
        uint32_t *ti = P.ix; P.ix = P.ix2; P.ix2 = ti;
    }
    int64_t kk = J->dst->dims[1];
    memcpy((uint32_t *)J->dst->base + J->dst->offset + r * kk, P.ix, (size_t)kk * 4);
    free(P.k < P.k2 ? P.k : P.k2);
    free(P.ix < P.ix2 ? P.ix : P.ix2);
    free(P.cnt);
    return WK_OK;
}

wk_status wk_cpu_arg_sort(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    const wk_view *s = a->src[0], *d = a->dst;
    int64_t rows = s->dims[0], n = s->dims[1];
    if (rows == 0 || n == 0) return WK_OK;
    int bytes = (int)wk_cpu_dtype_size(s->dtype);
    sort_job J = { s, d, bytes, a->p[0] != 0 ? (bytes == 8 ? ~0ull : (1ull << (8 * bytes)) - 1) : 0, 0 };
    int nt = wk_cpu_num_threads();
    if (n >= PAR_ROW && rows < nt && nt > 1 && d->dims[1] * 8 > n) {
        int T = nt;
        for (int64_t r = 0; r < rows; r++) {
            wk_status st = sort_long_row(&J, r, T);
            if (st != WK_OK) return st;
        }
        return WK_OK;
    }
    wk_parallel_tasks(rows, (double)n * (n <= SHORT_ROW ? (double)n / 4 + 1 : bytes + 2), rows_task, &J);
    if (atomic_load(&J.failed))
        return WK_CPU_ERROR(WK_ERR_MEMORY, "out of memory sorting rows of %lld elements", (long long)n);
    return WK_OK;
}
