/* cpu_ew.c — the CPU backend's strided elementwise driver (wk_ew_run,
 * declared in cpu_ew.h), which every elementwise and copy kernel runs on:
 * dims coalesced, the elements split over the thread pool, views
 * transposed in their last two dims walked in cache-sized tiles; and the
 * run-time CPU feature checks (AVX2, AVX-512) the kernels dispatch on. */
#include <stdlib.h>
#include "cpu_ew.h"
#include <stdatomic.h>
#if WK_EW_X86
#include <cpuid.h>
#include <immintrin.h>
#endif

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

/* ======================================================================
 * The row driver
 * ==================================================================== */

typedef struct ew_job {
    int nops, rank;
    int64_t dims[WK_MAX_RANK];
    int64_t st[4][WK_MAX_RANK];
    char *base[4];
    int64_t esz[4];
    wk_ew_row_fn fn;
    const void *params;
} ew_job;

static void ew_range(void *arg, int64_t begin, int64_t end)
{
    const ew_job *j = arg;
    const int r = j->rank, nops = j->nops;
    const int64_t L = j->dims[r - 1];
    int64_t inner[4];
    char *p[4];
    for (int k = 0; k < nops; k++) inner[k] = j->st[k][r - 1];

    if (r == 1) {
        for (int k = 0; k < nops; k++) p[k] = j->base[k] + begin * inner[k] * j->esz[k];
        j->fn(p, inner, end - begin, j->params);
        return;
    }
    /* outer dims walked by the shared iterator, one row at a time */
    wk_cpu_iter it;
    it.rank = r - 1;
    it.nops = nops;
    for (int d = 0; d < r - 1; d++) it.dims[d] = j->dims[d];
    for (int k = 0; k < nops; k++) {
        it.base[k] = 0;
        for (int d = 0; d < r - 1; d++) it.strides[k][d] = j->st[k][d];
    }
    int64_t col = begin % L;
    wk_cpu_iter_seek(&it, begin / L);
    while (begin < end) {
        int64_t len = L - col < end - begin ? L - col : end - begin;
        for (int k = 0; k < nops; k++) p[k] = j->base[k] + (it.off[k] + col * inner[k]) * j->esz[k];
        j->fn(p, inner, len, j->params);
        begin += len;
        col = 0;
        if (begin < end) wk_cpu_iter_next(&it);
    }
}

/* Tiled walk for views transposed in their last two dims (one operand
 * steps by 1 along dim r-2 and not along dim r-1): blocks of EW_TILE x
 * EW_TILE elements, so that the cache lines of every operand are reused
 * across the rows of a block instead of being fetched once per element. */
#define EW_TILE 64

typedef struct ew_tiled {
    const ew_job *j;
    int64_t ti, tj;   /* tiles along dims r-2 and r-1 */
} ew_tiled;

static void ew_tiles(void *arg, int64_t begin, int64_t end)
{
    const ew_tiled *t = arg;
    const ew_job *j = t->j;
    const int r = j->rank, nops = j->nops;
    const int64_t M = j->dims[r - 2], N = j->dims[r - 1];
    int64_t inner[4];
    char *p[4];
    for (int k = 0; k < nops; k++) inner[k] = j->st[k][r - 1];
    for (int64_t b = begin; b < end; b++) {
        int64_t rest = b / (t->ti * t->tj), in = b % (t->ti * t->tj);
        int64_t i0 = (in / t->tj) * EW_TILE, j0 = (in % t->tj) * EW_TILE;
        int64_t i1 = i0 + EW_TILE < M ? i0 + EW_TILE : M;
        int64_t len = j0 + EW_TILE < N ? EW_TILE : N - j0;
        int64_t off[4] = { 0, 0, 0, 0 };
        for (int d = r - 3; d >= 0; d--) {
            int64_t id = rest % j->dims[d];
            rest /= j->dims[d];
            for (int k = 0; k < nops; k++) off[k] += id * j->st[k][d];
        }
        for (int64_t i = i0; i < i1; i++) {
            for (int k = 0; k < nops; k++)
                p[k] = j->base[k] + (off[k] + i * j->st[k][r - 2] + j0 * inner[k]) * j->esz[k];
            j->fn(p, inner, len, j->params);
        }
    }
}

void wk_ew_run(int nops, const wk_view *const *views, wk_ew_row_fn fn, const void *params)
{
    const wk_view *v0 = views[0];
    int64_t n = 1;
    for (int d = 0; d < v0->rank; d++) n *= v0->dims[d];
    if (n == 0) return;

    ew_job j;
    j.nops = nops;
    j.fn = fn;
    j.params = params;
    for (int k = 0; k < nops; k++) {
        j.esz[k] = (int64_t)wk_cpu_dtype_size(views[k]->dtype);
        j.base[k] = (char *)views[k]->base + views[k]->offset * j.esz[k];
    }
    /* drop size-1 dims; merge a dim into the previous one when every
     * operand steps through both as through one */
    int r = 0;
    for (int d = 0; d < v0->rank; d++) {
        int64_t n_d = v0->dims[d];
        if (n_d == 1) continue;
        bool merge = r > 0;
        for (int k = 0; k < nops && merge; k++)
            merge = j.st[k][r - 1] == views[k]->strides[d] * n_d;
        if (merge) {
            j.dims[r - 1] *= n_d;
            for (int k = 0; k < nops; k++) j.st[k][r - 1] = views[k]->strides[d];
        } else {
            j.dims[r] = n_d;
            for (int k = 0; k < nops; k++) j.st[k][r] = views[k]->strides[d];
            r++;
        }
    }
    if (r == 0) {
        r = 1;
        j.dims[0] = 1;
        for (int k = 0; k < nops; k++) j.st[k][0] = 0;
    }
    if (r >= 2 && j.dims[r - 1] >= 16 && j.dims[r - 2] >= 16) {
        bool transposed = false;
        for (int k = 0; k < nops; k++)
            transposed |= j.st[k][r - 2] == 1 && j.st[k][r - 1] != 1;
        if (transposed) {
            j.rank = r;
            ew_tiled t = { &j, (j.dims[r - 2] + EW_TILE - 1) / EW_TILE, (j.dims[r - 1] + EW_TILE - 1) / EW_TILE };
            int64_t tiles = n / (j.dims[r - 2] * j.dims[r - 1]) * t.ti * t.tj;
            int64_t grain = WK_CPU_GRAIN / (EW_TILE * EW_TILE);
            wk_parallel_for(tiles, grain > 0 ? grain : 1, ew_tiles, &t);
            return;
        }
    }
    /* a short innermost dim makes many tiny rows: walk the longest dim
     * innermost instead (any order visits every element once), when every
     * operand steps through it in small strides (so locality holds) */
    if (r > 1 && j.dims[r - 1] < 64) {
        int best = r - 1;
        for (int d = 0; d < r - 1; d++)
            if (j.dims[d] > j.dims[best]) best = d;
        for (int k = 0; k < nops && best != r - 1; k++)
            if (j.st[k][best] > 16) best = r - 1;
        if (best != r - 1) {
            int64_t bd = j.dims[best], bs[4];
            for (int k = 0; k < nops; k++) bs[k] = j.st[k][best];
            for (int d = best; d < r - 1; d++) {
                j.dims[d] = j.dims[d + 1];
                for (int k = 0; k < nops; k++) j.st[k][d] = j.st[k][d + 1];
            }
            j.dims[r - 1] = bd;
            for (int k = 0; k < nops; k++) j.st[k][r - 1] = bs[k];
        }
    }
    j.rank = r;
    wk_parallel_for(n, WK_CPU_GRAIN, ew_range, &j);
}

#if WK_EW_X86
/* CPUID: AVX2 (leaf 7 EBX 5), FMA (leaf 1 ECX 12), F16C (ECX 29), and the
 * OS saving the YMM state (OSXSAVE, ECX 27, and XCR0 bits 1-2). */
static int detect_avx2(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    if (!(c & (1u << 12)) || !(c & (1u << 27)) || !(c & (1u << 28)) || !(c & (1u << 29))) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    if ((lo & 6u) != 6u) return 0;
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    return (b & (1u << 5)) != 0;
}

static int detect_avx512(void)
{
    unsigned a, b, c, d;
    if (!detect_avx2()) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    if ((lo & 0xE6u) != 0xE6u) return 0;           /* opmask, ZMM state saved */
    __cpuid_count(7, 0, a, b, c, d);
    const unsigned need = (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31);  /* F DQ BW VL */
    return (b & need) == need;
}

bool wk_ew_have_avx512(void)
{
    static atomic_int have = -1;
    int h = atomic_load_explicit(&have, memory_order_relaxed);
    if (h < 0) {
        h = detect_avx512();
        atomic_store_explicit(&have, h, memory_order_relaxed);
    }
    return h;
}

static int detect_avx512vnni(void)
{
    unsigned a, b, c, d;
    if (!detect_avx512()) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    return (c & (1u << 11)) && (c & (1u << 12));   /* AVX512_VNNI, AVX512_BITALG */
}

bool wk_ew_have_avx512vnni(void)
{
    static atomic_int have = -1;
    int h = atomic_load_explicit(&have, memory_order_relaxed);
    if (h < 0) {
        h = detect_avx512vnni();
        atomic_store_explicit(&have, h, memory_order_relaxed);
    }
    return h;
}

bool wk_ew_have_avx2(void)
{
    static atomic_int have = -1;  /* every thread computes the same */
    int h = atomic_load_explicit(&have, memory_order_relaxed);
    if (h < 0) {
        h = detect_avx2();
        atomic_store_explicit(&have, h, memory_order_relaxed);
    }
    return h;
}
#endif

