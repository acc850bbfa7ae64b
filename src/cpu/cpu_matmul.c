/* cpu_matmul.c — batched, strided matmul on the CPU:
 * dst [B.., m, n] = a [B.., m, k] x b [B.., k, n] for f16, bf16, f32, f64.
 *
 * Two engines:
 *  - BLAS: OpenBLAS (or another CBLAS) loaded at run time with dlopen, so
 *    wick has no build or link dependency on it. Each batch is one
 *    cblas_sgemm / cblas_dgemm call; operands whose last two dims have a
 *    unit stride on one side are passed as they are (row- or column-major,
 *    through lda/ldb and CblasTrans), others are packed first. f16/bf16
 *    are widened to f32, multiplied by sgemm (f32 accumulation) and
 *    rounded once. A batch broadcast on b (stride 0) over a row-major a is
 *    folded into one taller GEMM. BLAS threads a big GEMM itself.
 *  - own kernel, used when no BLAS is found (or WICK_BLAS=none), for
 *    shapes BLAS cannot take, and for many small batched GEMMs (which run
 *    in parallel, one batch per task): GOTO-style cache blocking (a KC x NC
 *    panel of b and an MC x KC block of a are packed into contiguous
 *    strips, widening narrow floats on the way) around a register-tiled
 *    micro-kernel: 6 x 16 f32 / 6 x 8 f64 with AVX2 + FMA where the CPU
 *    has them (picked at run time), else a portable 6 x 8 / 6 x 4 one
 *    written with vector extensions. (MC block, group of strips) tasks of
 *    one GEMM run in parallel on the pool. Accumulation is in f32 (f64
 *    for f64).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <stdatomic.h>
#include "cpu_internal.h"
#include "cpu_ew.h"

/* ---- BLAS loaded at run time ------------------------------------------ */

enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };

typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha,
                         const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
typedef void (*dgemm_fn)(int order, int ta, int tb, int m, int n, int k, double alpha,
                         const double *a, int lda, const double *b, int ldb, double beta, double *c, int ldc);

static struct {
    pthread_once_t once;
    void *lib;
    sgemm_fn sgemm;
    dgemm_fn dgemm;
    void (*set_threads)(int);   /* OpenBLAS's openblas_set_num_threads, or NULL */
    atomic_int threads;         /* the count last given to it               */
    char name[64];
} blas = { .once = PTHREAD_ONCE_INIT, .name = "none" };

/* OpenBLAS (built for every x86 core, as distributions ship it) picks its
 * kernels by the CPU's model number; a model it does not know gets its
 * oldest kernels: Debian 12's 0.3.21 takes a Sapphire Rapids VM for a
 * Prescott (SSE3), a third of the f32 GEMM rate that its SkylakeX kernels
 * reach there (57 against 188 GFLOP/s measured, 2 threads). So unless
 * OPENBLAS_CORETYPE is set, it is named by the CPU's features before the
 * library loads: AVX-512 (F, BW, VL, DQ, CD) SkylakeX, else AVX2 + FMA
 * Haswell (what OpenBLAS would pick on a CPU it knows: their sgemm and
 * dgemm kernels are the best it has for those features). */
static void blas_core_type(void)
{
#if defined(__x86_64__)
    if (getenv("OPENBLAS_CORETYPE")) return;
    __builtin_cpu_init();
    const char *core = NULL;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd"))
        core = "SKYLAKEX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        core = "HASWELL";
    if (core) setenv("OPENBLAS_CORETYPE", core, 0);
#endif
}

static void blas_load(void)
{
    const char *env = getenv("WICK_BLAS");
    if (env && strcmp(env, "none") == 0) return;
    blas_core_type();
    static const char *const names[] = { "libopenblas.so.0", "libopenblas.so", "libblas.so.3" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib) continue;
        void *s = dlsym(lib, "cblas_sgemm"), *d = dlsym(lib, "cblas_dgemm");
        if (!s || !d) { dlclose(lib); continue; }
        /* an OpenBLAS built with 64-bit integers under the plain names
         * would misread our int arguments: skip it */
        void *cfg = dlsym(lib, "openblas_get_config");
        if (cfg) {
            const char *(*get_config)(void);
            memcpy(&get_config, &cfg, sizeof cfg);
            const char *c = get_config();
            if (c && strstr(c, "USE64BITINT")) { dlclose(lib); continue; }
        }
        blas.lib = lib;
        /* function pointers travel through void * by POSIX dlsym rules */
        memcpy(&blas.sgemm, &s, sizeof s);
        memcpy(&blas.dgemm, &d, sizeof d);
        /* OpenBLAS threads as many as wick's pool (WICK_NUM_THREADS,
         * --threads), not one per core on top of it */
        void *nt = dlsym(lib, "openblas_set_num_threads");
        if (nt) memcpy(&blas.set_threads, &nt, sizeof nt);
        if (cfg) snprintf(blas.name, sizeof blas.name, "openblas");
        else snprintf(blas.name, sizeof blas.name, "%s", names[i]);
        return;
    }
}

static bool blas_ready(void)
{
    pthread_once(&blas.once, blas_load);
    return blas.sgemm != NULL;
}

const char *wk_cpu_blas_name(void)
{
    blas_ready();
    return blas.name;
}

/* matmul tasks are worth spreading only above 4x the usual grain */
#define par_tasks(n, w, fn, arg) wk_parallel_tasks((n), (w) / 4.0, (fn), (arg))

/* ---- one GEMM's operands ----------------------------------------------- */

/* A matrix operand: element (i, j) at base[off + i*s0 + j*s1] of dtype dt. */
typedef struct mat {
    const char *base;
    wk_dtype dt;
    int64_t off, s0, s1;
} mat;

static float ld_f32(const mat *x, int64_t idx)
{
    switch (x->dt) {
    case WK_F32: return ((const float *)x->base)[idx];
    case WK_BF16: return wk_bf16_to_f32(((const uint16_t *)x->base)[idx]);
    case WK_F16: return wk_f16_to_f32(((const uint16_t *)x->base)[idx]);
    default: return (float)((const double *)x->base)[idx];
    }
}

/* ---- own kernel --------------------------------------------------------- */

#define MR 6
#define KC 256
#define MC 72
#define NC 1024

typedef float v4f __attribute__((vector_size(16)));
typedef double v2d __attribute__((vector_size(16)));

static inline v4f ldv4f(const float *p) { v4f v; memcpy(&v, p, sizeof v); return v; }
static inline void stv4f(float *p, v4f v) { memcpy(p, &v, sizeof v); }
static inline v2d ldv2d(const double *p) { v2d v; memcpy(&v, p, sizeof v); return v; }
static inline void stv2d(double *p, v2d v) { memcpy(p, &v, sizeof v); }

/* A micro-kernel: C[mr x nr] (=|+=) Ap (kc x MR strip) * Bp (kc x NR
 * strip), C row-major with leading dim ldc. */
typedef void (*ukr_fn)(int64_t kc, const void *Ap, const void *Bp, void *C, int64_t ldc, int mr, int nr, bool add);

/* write a full MR x nr tile t (row stride NR) to C, or its mr x nr corner */
#define TILE_OUT                                                      \
    for (int i = 0; i < mr; i++)                                             \
        for (int j = 0; j < nr; j++)                                         \
            C[i * ldc + j] = add ? C[i * ldc + j] + t[i][j] : t[i][j];

/* portable: 6 x 8 f32 with 16-byte vectors (12 accumulator registers) */
static void ukr_f32_v4(int64_t kc, const void *Apv, const void *Bpv, void *Cv, int64_t ldc, int mr, int nr, bool add)
{
    const float *Ap = (const float *)Apv, *Bp = (const float *)Bpv;
    float *C = (float *)Cv;
    v4f c[MR][2];
    for (int i = 0; i < MR; i++) c[i][0] = c[i][1] = (v4f){ 0, 0, 0, 0 };
    for (int64_t p = 0; p < kc; p++) {
        v4f b0 = ldv4f(Bp + p * 8), b1 = ldv4f(Bp + p * 8 + 4);
        const float *a = Ap + p * MR;
        for (int i = 0; i < MR; i++) {
            v4f ai = { a[i], a[i], a[i], a[i] };
            c[i][0] += ai * b0;
            c[i][1] += ai * b1;
        }
    }
    if (mr == MR && nr == 8) {
        for (int i = 0; i < MR; i++) {
            float *ci = C + i * ldc;
            if (add) { c[i][0] += ldv4f(ci); c[i][1] += ldv4f(ci + 4); }
            stv4f(ci, c[i][0]);
            stv4f(ci + 4, c[i][1]);
        }
        return;
    }
    float t[MR][8];
    memcpy(t, c, sizeof t);
    TILE_OUT
}

/* portable: 6 x 4 f64 */
static void ukr_f64_v2(int64_t kc, const void *Apv, const void *Bpv, void *Cv, int64_t ldc, int mr, int nr, bool add)
{
    const double *Ap = (const double *)Apv, *Bp = (const double *)Bpv;
    double *C = (double *)Cv;
    v2d c[MR][2];
    for (int i = 0; i < MR; i++) c[i][0] = c[i][1] = (v2d){ 0, 0 };
    for (int64_t p = 0; p < kc; p++) {
        v2d b0 = ldv2d(Bp + p * 4), b1 = ldv2d(Bp + p * 4 + 2);
        const double *a = Ap + p * MR;
        for (int i = 0; i < MR; i++) {
            v2d ai = { a[i], a[i] };
            c[i][0] += ai * b0;
            c[i][1] += ai * b1;
        }
    }
    if (mr == MR && nr == 4) {
        for (int i = 0; i < MR; i++) {
            double *ci = C + i * ldc;
            if (add) { c[i][0] += ldv2d(ci); c[i][1] += ldv2d(ci + 2); }
            stv2d(ci, c[i][0]);
            stv2d(ci + 2, c[i][1]);
        }
        return;
    }
    double t[MR][4];
    memcpy(t, c, sizeof t);
    TILE_OUT
}

/* (building with -DWK_NO_AVX2_KERNELS leaves only the portable kernels,
 * so they can be tested on a machine with AVX2) */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(WK_NO_AVX2_KERNELS)
#include <cpuid.h>
#include <immintrin.h>
#define WK_HAVE_AVX2_KERNELS 1

/* x86 with AVX2 + FMA (chosen at run time): 6 x 16 f32 and 6 x 8 f64,
 * two 256-bit accumulators per row, fused multiply-adds. The twelve
 * accumulators are named variables so that they stay in registers. */
#define AVX_DECL(Z) V c00 = Z, c01 = Z, c10 = Z, c11 = Z, c20 = Z, c21 = Z, \
                      c30 = Z, c31 = Z, c40 = Z, c41 = Z, c50 = Z, c51 = Z
#define AVX_ROW(i) { V ai = BCAST(a + i); c##i##0 = FMA(ai, b0, c##i##0); c##i##1 = FMA(ai, b1, c##i##1); }
#define AVX_OUT(i)                                                           \
    {                                                                        \
        S *ci = C + i * ldc;                                                 \
        if (add) { c##i##0 = ADD(c##i##0, LOADU(ci)); c##i##1 = ADD(c##i##1, LOADU(ci + VW)); } \
        STOREU(ci, c##i##0);                                                 \
        STOREU(ci + VW, c##i##1);                                            \
    }
#define AVX_TMP(i) { STOREU(t[i], c##i##0); STOREU(t[i] + VW, c##i##1); }
#define AVX_KERNEL_BODY                                                      \
    const S *Ap = (const S *)Apv, *Bp = (const S *)Bpv;                      \
    S *C = (S *)Cv;                                                          \
    AVX_DECL(ZERO);                                                          \
    for (int64_t p = 0; p < kc; p++) {                                       \
        V b0 = LOADU(Bp + p * 2 * VW), b1 = LOADU(Bp + p * 2 * VW + VW);     \
        const S *a = Ap + p * MR;                                            \
        AVX_ROW(0) AVX_ROW(1) AVX_ROW(2) AVX_ROW(3) AVX_ROW(4) AVX_ROW(5)     \
    }                                                                        \
    if (mr == MR && nr == 2 * VW) {                                          \
        AVX_OUT(0) AVX_OUT(1) AVX_OUT(2) AVX_OUT(3) AVX_OUT(4) AVX_OUT(5)     \
        return;                                                              \
    }                                                                        \
    S t[MR][2 * VW];                                                         \
    AVX_TMP(0) AVX_TMP(1) AVX_TMP(2) AVX_TMP(3) AVX_TMP(4) AVX_TMP(5)        \
    TILE_OUT

#define S float
#define V __m256
#define VW 8
#define ZERO _mm256_setzero_ps()
#define BCAST(p) _mm256_broadcast_ss(p)
#define FMA(x, y, z) _mm256_fmadd_ps(x, y, z)
#define ADD(x, y) _mm256_add_ps(x, y)
#define LOADU(p) _mm256_loadu_ps(p)
#define STOREU(p, v) _mm256_storeu_ps(p, v)
__attribute__((target("avx2,fma")))
static void ukr_f32_avx2(int64_t kc, const void *Apv, const void *Bpv, void *Cv, int64_t ldc, int mr, int nr, bool add)
{
    AVX_KERNEL_BODY
}
#undef S
#undef V
#undef VW
#undef ZERO
#undef BCAST
#undef FMA
#undef ADD
#undef LOADU
#undef STOREU

#define S double
#define V __m256d
#define VW 4
#define ZERO _mm256_setzero_pd()
#define BCAST(p) _mm256_broadcast_sd(p)
#define FMA(x, y, z) _mm256_fmadd_pd(x, y, z)
#define ADD(x, y) _mm256_add_pd(x, y)
#define LOADU(p) _mm256_loadu_pd(p)
#define STOREU(p, v) _mm256_storeu_pd(p, v)
__attribute__((target("avx2,fma")))
static void ukr_f64_avx2(int64_t kc, const void *Apv, const void *Bpv, void *Cv, int64_t ldc, int mr, int nr, bool add)
{
    AVX_KERNEL_BODY
}
#undef S
#undef V
#undef VW
#undef ZERO
#undef BCAST
#undef FMA
#undef ADD
#undef LOADU
#undef STOREU
#endif

typedef struct ukr_desc { ukr_fn fn; int nr; } ukr_desc;

static struct {
    pthread_once_t once;
    ukr_desc f32, f64;
} ukrs = { PTHREAD_ONCE_INIT, { ukr_f32_v4, 8 }, { ukr_f64_v2, 4 } };

static void ukr_pick(void)
{
#ifdef WK_HAVE_AVX2_KERNELS
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        ukrs.f32 = (ukr_desc){ ukr_f32_avx2, 16 };
        ukrs.f64 = (ukr_desc){ ukr_f64_avx2, 8 };
    }
#endif
}

/* Pack rows [i0, i0+mc) x cols [p0, p0+kc) of a into MR-row strips
 * (p-major inside a strip), zero padded; f32 or (f64) f64. */
static void pack_a(const mat *a, bool f64, int64_t i0, int64_t mc, int64_t p0, int64_t kc, void *Apv)
{
    for (int64_t s = 0; s < mc; s += MR) {
        for (int i = 0; i < MR; i++) {
            int64_t base = a->off + (i0 + s + i) * a->s0 + p0 * a->s1;
            if (f64) {
                double *dst = (double *)Apv + s * kc;
                if (s + i >= mc) { for (int64_t p = 0; p < kc; p++) dst[p * MR + i] = 0; continue; }
                const double *src = (const double *)a->base + base;
                for (int64_t p = 0; p < kc; p++) dst[p * MR + i] = src[p * a->s1];
                continue;
            }
            float *dst = (float *)Apv + s * kc;
            if (s + i >= mc) { for (int64_t p = 0; p < kc; p++) dst[p * MR + i] = 0; continue; }
            if (a->dt == WK_F32) {
                const float *src = (const float *)a->base + base;
                for (int64_t p = 0; p < kc; p++) dst[p * MR + i] = src[p * a->s1];
            } else {
                for (int64_t p = 0; p < kc; p++) dst[p * MR + i] = ld_f32(a, base + p * a->s1);
            }
        }
    }
}

/* Pack rows [p0, p0+kc) x cols [j0, j0+nc) of b into nr-column strips
 * (row-major inside a strip), zero padded. */
static void pack_b(const mat *b, bool f64, int nr, int64_t p0, int64_t kc, int64_t j0, int64_t nc, void *Bpv)
{
    for (int64_t s = 0; s < nc; s += nr) {
        int64_t w = nc - s < nr ? nc - s : nr;
        for (int64_t p = 0; p < kc; p++) {
            int64_t base = b->off + (p0 + p) * b->s0 + (j0 + s) * b->s1;
            int64_t j = 0;
            if (f64) {
                double *d = (double *)Bpv + s * kc + p * nr;
                const double *src = (const double *)b->base + base;
                for (; j < w; j++) d[j] = src[j * b->s1];
                for (; j < nr; j++) d[j] = 0;
                continue;
            }
            float *d = (float *)Bpv + s * kc + p * nr;
            if (b->dt == WK_F32) {
                const float *src = (const float *)b->base + base;
                if (b->s1 == 1) { memcpy(d, src, (size_t)w * sizeof(float)); j = w; }
                for (; j < w; j++) d[j] = src[j * b->s1];
            } else {
                for (; j < w; j++) d[j] = ld_f32(b, base + j * b->s1);
            }
            for (; j < nr; j++) d[j] = 0;
        }
    }
}

/* One GEMM into an accumulator matrix C (f32, or f64 for f64 inputs),
 * row-major with leading dim ldc. */
typedef struct own_gemm {
    mat a, b;
    int64_t m, n, k;
    void *C;
    int64_t ldc;
    bool f64;
    ukr_desc u;
    /* current panel, for the parallel loop over (MC block, strip group) */
    const void *Bp;
    int64_t p0, kc, j0, nc;
    int64_t ngroups;           /* groups of NR strips per MC block        */
    atomic_bool failed;
} own_gemm;

/* tasks [begin, end) of the current (p0, j0) panel: task t is MC block
 * t / ngroups times group t % ngroups of the panel's NR strips */
static void own_mc_task(void *arg, int64_t begin, int64_t end)
{
    own_gemm *g = (own_gemm *)arg;
    size_t es = g->f64 ? sizeof(double) : sizeof(float);
    void *Ap = malloc((size_t)MC * (size_t)g->kc * es);
    if (!Ap) { atomic_store(&g->failed, true); return; }
    int nr_w = g->u.nr;
    int64_t nstrips = (g->nc + nr_w - 1) / nr_w;
    int64_t packed = -1;
    for (int64_t t = begin; t < end; t++) {
        int64_t blk = t / g->ngroups, grp = t % g->ngroups;
        int64_t i0 = blk * MC, mc = g->m - i0 < MC ? g->m - i0 : MC;
        if (packed != blk) { pack_a(&g->a, g->f64, i0, mc, g->p0, g->kc, Ap); packed = blk; }
        int64_t s0 = nstrips * grp / g->ngroups, s1 = nstrips * (grp + 1) / g->ngroups;
        for (int64_t js = s0 * nr_w; js < s1 * nr_w && js < g->nc; js += nr_w) {
            int nr = (int)(g->nc - js < nr_w ? g->nc - js : nr_w);
            for (int64_t is = 0; is < mc; is += MR) {
                int mr = (int)(mc - is < MR ? mc - is : MR);
                int64_t coff = (i0 + is) * g->ldc + g->j0 + js;
                g->u.fn(g->kc, (const char *)Ap + (size_t)(is * g->kc) * es,
                        (const char *)g->Bp + (size_t)(js * g->kc) * es,
                        (char *)g->C + (size_t)coff * es, g->ldc, mr, nr, g->p0 > 0);
            }
        }
    }
    free(Ap);
}

/* Runs the blocked GEMM; parallel over (MC block, strip group) tasks when
 * `parallel` (groups only when there are too few MC blocks). */
static bool own_gemm_run(own_gemm *g, bool parallel)
{
    pthread_once(&ukrs.once, ukr_pick);
    g->u = g->f64 ? ukrs.f64 : ukrs.f32;
    size_t es = g->f64 ? sizeof(double) : sizeof(float);
    int64_t kcmax = g->k < KC ? g->k : KC, ncmax = g->n < NC ? g->n : NC;
    int64_t ncpad = (ncmax + g->u.nr - 1) / g->u.nr * g->u.nr;
    void *Bp = malloc((size_t)kcmax * (size_t)ncpad * es);
    if (!Bp) return false;
    atomic_init(&g->failed, false);
    int64_t nblk = (g->m + MC - 1) / MC;
    int64_t want = parallel ? 4 * (int64_t)wk_cpu_num_threads() : 1;
    for (int64_t j0 = 0; j0 < g->n; j0 += NC) {
        g->j0 = j0;
        g->nc = g->n - j0 < NC ? g->n - j0 : NC;
        int64_t nstrips = (g->nc + g->u.nr - 1) / g->u.nr;
        g->ngroups = nblk >= want ? 1 : (want + nblk - 1) / nblk;
        if (g->ngroups > nstrips) g->ngroups = nstrips;
        for (int64_t p0 = 0; p0 < g->k; p0 += KC) {
            g->p0 = p0;
            g->kc = g->k - p0 < KC ? g->k - p0 : KC;
            pack_b(&g->b, g->f64, g->u.nr, p0, g->kc, j0, g->nc, Bp);
            g->Bp = Bp;
            int64_t ntasks = nblk * g->ngroups;
            double work = 2.0 * (double)(g->m < MC ? g->m : MC) * (double)g->nc * (double)g->kc / (double)g->ngroups;
            if (parallel) par_tasks(ntasks, work, own_mc_task, g);
            else own_mc_task(g, 0, ntasks);
        }
    }
    free(Bp);
    return !atomic_load(&g->failed);
}

/* ---- storing an accumulator matrix into dst ---------------------------- */

/* Row-parallel conversions between an operand view and a row-major f32
 * (f64) buffer: x is the view, buf the buffer with leading dim ld. */
typedef struct conv_job { const mat *x; void *buf; int64_t ld, cols; bool f64; } conv_job;

/* buffer rows [i0, i1) -> view */
static void store_rows(void *arg, int64_t i0, int64_t i1)
{
    const conv_job *J = (const conv_job *)arg;
    const mat *d = J->x;
    char *base = (char *)d->base;
    for (int64_t i = i0; i < i1; i++) {
        int64_t row = d->off + i * d->s0;
        if (J->f64) {
            const double *c = (const double *)J->buf + i * J->ld;
            for (int64_t j = 0; j < J->cols; j++) ((double *)base)[row + j * d->s1] = c[j];
            continue;
        }
        const float *c = (const float *)J->buf + i * J->ld;
        switch (d->dt) {
        case WK_F32: for (int64_t j = 0; j < J->cols; j++) ((float *)base)[row + j * d->s1] = c[j]; break;
        case WK_BF16: for (int64_t j = 0; j < J->cols; j++) ((uint16_t *)base)[row + j * d->s1] = wk_f32_to_bf16(c[j]); break;
        case WK_F16: for (int64_t j = 0; j < J->cols; j++) ((uint16_t *)base)[row + j * d->s1] = wk_f32_to_f16(c[j]); break;
        default: break;
        }
    }
}

/* view rows [i0, i1) -> buffer (widening f16/bf16 to f32) */
static void pack_rows(void *arg, int64_t i0, int64_t i1)
{
    const conv_job *J = (const conv_job *)arg;
    const mat *x = J->x;
    for (int64_t i = i0; i < i1; i++) {
        int64_t row = x->off + i * x->s0;
        if (J->f64) {
            const double *src = (const double *)x->base;
            double *o = (double *)J->buf + i * J->ld;
            for (int64_t j = 0; j < J->cols; j++) o[j] = src[row + j * x->s1];
            continue;
        }
        float *o = (float *)J->buf + i * J->ld;
        switch (x->dt) {
        case WK_F32: { const float *src = (const float *)x->base; for (int64_t j = 0; j < J->cols; j++) o[j] = src[row + j * x->s1]; break; }
        case WK_BF16: { const uint16_t *src = (const uint16_t *)x->base; for (int64_t j = 0; j < J->cols; j++) o[j] = wk_bf16_to_f32(src[row + j * x->s1]); break; }
        case WK_F16: { const uint16_t *src = (const uint16_t *)x->base; for (int64_t j = 0; j < J->cols; j++) o[j] = wk_f16_to_f32(src[row + j * x->s1]); break; }
        default: break;
        }
    }
}

/* accumulator C (m x n, leading dim ldc) -> dst view, rounding once */
static void store_acc(const mat *d, const void *C, int64_t ldc, bool f64, int64_t m, int64_t n)
{
    conv_job J = { d, (void *)C, ldc, n, f64 };
    par_tasks(m, (double)n, store_rows, &J);
}

/* d = a x b for one batch with the own kernel; `parallel` spreads the MC
 * blocks over the pool. */
static bool own_matmul(const mat *d, const mat *a, const mat *b, int64_t m, int64_t n, int64_t k, bool parallel)
{
    own_gemm g;
    memset(&g, 0, sizeof g);
    g.a = *a; g.b = *b; g.m = m; g.n = n; g.k = k;
    g.f64 = d->dt == WK_F64;
    bool direct = (d->dt == WK_F32 || d->dt == WK_F64) && (d->s1 == 1 || n == 1) && (d->s0 >= n || m == 1);
    void *tmp = NULL;
    if (direct) {
        size_t es = g.f64 ? sizeof(double) : sizeof(float);
        g.C = (char *)d->base + (size_t)d->off * es;
        g.ldc = m == 1 ? n : d->s0;
    } else {
        tmp = malloc((size_t)m * (size_t)n * (g.f64 ? sizeof(double) : sizeof(float)));
        if (!tmp) return false;
        g.C = tmp;
        g.ldc = n;
    }
    bool ok = own_gemm_run(&g, parallel);
    if (ok && tmp) store_acc(d, tmp, n, g.f64, m, n);
    free(tmp);
    return ok;
}

/* ---- BLAS path ---------------------------------------------------------- */

/* How BLAS can read a rows x cols operand with strides (s0, s1) in
 * row-major terms: transposed or not, and its leading dim. */
static bool blas_layout(int64_t rows, int64_t cols, int64_t s0, int64_t s1, int *trans, int64_t *ld)
{
    if ((cols == 1 || s1 == 1) && (rows == 1 || s0 >= (cols > 1 ? cols : 1))) {
        *trans = CBLAS_NO_TRANS;
        *ld = rows == 1 ? (cols > 1 ? cols : 1) : s0;
        return *ld <= INT_MAX;
    }
    if ((rows == 1 || s0 == 1) && (cols == 1 || s1 >= (rows > 1 ? rows : 1))) {
        *trans = CBLAS_TRANS;
        *ld = cols == 1 ? (rows > 1 ? rows : 1) : s1;
        return *ld <= INT_MAX;
    }
    return false;
}

/* Copy a rows x cols operand into a row-major buffer of f32 (or f64). */
static void pack_full(const mat *x, int64_t rows, int64_t cols, void *out, bool f64)
{
    conv_job J = { x, out, cols, cols, f64 };
    par_tasks(rows, (double)cols, pack_rows, &J);
}

/* Scratch kept across the batches of one call. */
typedef struct scratch { void *p[3]; size_t n[3]; } scratch;

static void *scratch_get(scratch *s, int i, size_t bytes)
{
    if (s->n[i] < bytes) {
        free(s->p[i]);
        s->p[i] = malloc(bytes ? bytes : 1);
        s->n[i] = s->p[i] ? bytes : 0;
    }
    return s->p[i];
}

/* d = a x b for one batch through BLAS. Returns false on a memory error. */
static bool blas_matmul(const mat *d, const mat *a, const mat *b, int64_t m, int64_t n, int64_t k, scratch *s)
{
    bool f64 = d->dt == WK_F64;
    size_t es = f64 ? sizeof(double) : sizeof(float);
    bool native = d->dt == WK_F32 || d->dt == WK_F64;
    int ta, tb;
    int64_t lda, ldb, ldc;
    const void *A, *B;
    if (native && blas_layout(m, k, a->s0, a->s1, &ta, &lda)) {
        A = a->base + (size_t)a->off * es;
    } else {
        void *buf = scratch_get(s, 0, (size_t)m * (size_t)k * es);
        if (!buf) return false;
        pack_full(a, m, k, buf, f64);
        A = buf; ta = CBLAS_NO_TRANS; lda = k;
    }
    if (native && blas_layout(k, n, b->s0, b->s1, &tb, &ldb)) {
        B = b->base + (size_t)b->off * es;
    } else {
        void *buf = scratch_get(s, 1, (size_t)k * (size_t)n * es);
        if (!buf) return false;
        pack_full(b, k, n, buf, f64);
        B = buf; tb = CBLAS_NO_TRANS; ldb = n;
    }
    void *C;
    bool direct = native && (d->s1 == 1 || n == 1) && (m == 1 || d->s0 >= n) && d->s0 <= INT_MAX;
    if (direct) {
        C = (char *)d->base + (size_t)d->off * es;
        ldc = m == 1 ? n : d->s0;
    } else {
        C = scratch_get(s, 2, (size_t)m * (size_t)n * es);
        if (!C) return false;
        ldc = n;
    }
    if (blas.set_threads) {
        const int want = wk_cpu_num_threads();
        if (atomic_exchange(&blas.threads, want) != want) blas.set_threads(want);
    }
    if (f64)
        blas.dgemm(CBLAS_ROW_MAJOR, ta, tb, (int)m, (int)n, (int)k, 1.0, (const double *)A, (int)lda,
                   (const double *)B, (int)ldb, 0.0, (double *)C, (int)ldc);
    else
        blas.sgemm(CBLAS_ROW_MAJOR, ta, tb, (int)m, (int)n, (int)k, 1.0f, (const float *)A, (int)lda,
                   (const float *)B, (int)ldb, 0.0f, (float *)C, (int)ldc);
    if (!direct) store_acc(d, C, n, f64, m, n);
    return true;
}

/* ---- gemv: a few rows of a ------------------------------------------------ */

/* With m <= GV_MAXM (a decode step: one token, or a few) the product costs
 * one read of b, and packing b (or widening it to f32 for BLAS) costs as
 * much again: instead b is read once where it lies, 8 elements at a time
 * (f16/bf16 widened in registers), against the few rows of a held as f32.
 * Two loops, by b's layout:
 *  - dot: b's columns are contiguous (s0 == 1, the transposed weight
 *    x @ W^T of a linear layer): each output is a dot product along k,
 *    two 8-lane partial sums per row of a;
 *  - axpy: b's rows are contiguous (s1 == 1): rows of b are scaled and
 *    added into a block of GV_AXPY_COLS outputs per row of a.
 * Tasks are (batch, block of output columns), spread over the pool.
 * Sums are f32 (rounded once to the output dtype), as the GEMM's. A
 * variant compiled for AVX2 (f16 widened by F16C) is picked at run time. */
#define GV_MAXM 4
#define GV_DOT_COLS 16
#define GV_AXPY_COLS 256

typedef float v8f __attribute__((vector_size(32)));
typedef uint16_t v8h __attribute__((vector_size(16)));
typedef uint32_t v8u __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

enum { GV_F32 = 0, GV_BF16 = 1, GV_F16 = 2 };

#define GV_INLINE static inline __attribute__((always_inline))
/* (32-byte vectors go through pointers: passed by value they would
 * depend on the AVX ABI) */

GV_INLINE void gv_ld8f(v8f *v, const float *p) { memcpy(v, p, sizeof *v); }

/* f16 bits -> f32, exact for every value: the exponent and mantissa
 * shifted into place and scaled by 2^112 (normals and subnormals), inf
 * and NaN given f32's top exponent, then the sign */
GV_INLINE void gv_f16x8(v8f *out, v8h h)
{
    v8u u = __builtin_convertvector(h, v8u);
    v8u em = u & 0x7fff, sign = (u & 0x8000) << 16;
    v8f f;
    v8u t = em << 13;
    memcpy(&f, &t, sizeof f);
    f *= 0x1p112f;
    v8u r;
    memcpy(&r, &f, sizeof r);
    v8u special = (v8u)(em >= 0x7c00);   /* all ones where inf or NaN */
    r = (r & ~special) | (((em << 13) | 0x7f800000u) & special);
    r |= sign;
    memcpy(out, &r, sizeof r);
}

#ifdef WK_HAVE_AVX2_KERNELS
/* f16 -> f32 by the F16C instruction (inlined into the AVX2 variant; the
 * other variants never call it) */
__attribute__((target("avx2,f16c")))
static void gv_f16x8_f16c(v8f *out, const uint16_t *p)
{
    __m256 v = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
    memcpy(out, &v, sizeof v);
}

/* bf16 -> f32: zero-extended to 32 bits and shifted into the top half */
__attribute__((target("avx2")))
static void gv_bf16x8_avx2(v8f *out, const uint16_t *p)
{
    __m256i v = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16);
    memcpy(out, &v, sizeof v);
}
#endif

/* 8 consecutive elements of b at element index idx, as f32; f16c: with
 * AVX2 and F16C instructions (a constant: only the AVX2 variant passes
 * true) */
GV_INLINE void gv_ld8(v8f *out, const char *b, int dt, int64_t idx, bool f16c)
{
#ifdef WK_HAVE_AVX2_KERNELS
    if (f16c && dt == GV_F16) {
        gv_f16x8_f16c(out, (const uint16_t *)b + idx);
        return;
    }
    if (f16c && dt == GV_BF16) {
        gv_bf16x8_avx2(out, (const uint16_t *)b + idx);
        return;
    }
#else
    (void)f16c;
#endif
    if (dt == GV_F32) {
        gv_ld8f(out, (const float *)b + idx);
        return;
    }
    v8h h;
    memcpy(&h, (const uint16_t *)b + idx, sizeof h);
    if (dt == GV_F16) {
        gv_f16x8(out, h);
        return;
    }
    v8u u = __builtin_convertvector(h, v8u) << 16;
    memcpy(out, &u, sizeof u);
}

GV_INLINE float gv_ld1(const char *b, int dt, int64_t idx)
{
    if (dt == GV_F32) return ((const float *)b)[idx];
    uint16_t h = ((const uint16_t *)b)[idx];
    return dt == GV_F16 ? wk_f16_to_f32(h) : wk_bf16_to_f32(h);
}

GV_INLINE float gv_hsum(const v8f *pv)
{
    const v8f v = *pv;
    return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

/* y[i * nc + j] = sum_p x[i * xs + p] * b[off + j * s1 + p], i < M, j < nc */
GV_INLINE void gv_dot(int M, int dt, bool f16c, const float *x, int64_t xs, int64_t k, const char *b, int64_t off,
                      int64_t s1, int64_t nc, float *y)
{
    for (int64_t j = 0; j < nc; j++) {
        const int64_t bj = off + j * s1;
        v8f acc0[GV_MAXM], acc1[GV_MAXM];
        for (int i = 0; i < M; i++) acc0[i] = acc1[i] = (v8f){ 0 };
        int64_t p = 0;
        for (; p + 16 <= k; p += 16) {
            v8f w0, w1, x0, x1;
            gv_ld8(&w0, b, dt, bj + p, f16c);
            gv_ld8(&w1, b, dt, bj + p + 8, f16c);
            for (int i = 0; i < M; i++) {
                gv_ld8f(&x0, x + i * xs + p);
                gv_ld8f(&x1, x + i * xs + p + 8);
                acc0[i] += x0 * w0;
                acc1[i] += x1 * w1;
            }
        }
        if (p + 8 <= k) {
            v8f w0, x0;
            gv_ld8(&w0, b, dt, bj + p, f16c);
            for (int i = 0; i < M; i++) {
                gv_ld8f(&x0, x + i * xs + p);
                acc0[i] += x0 * w0;
            }
            p += 8;
        }
        for (int i = 0; i < M; i++) {
            const v8f sum = acc0[i] + acc1[i];
            float s = gv_hsum(&sum);
            for (int64_t q = p; q < k; q++) s += x[i * xs + q] * gv_ld1(b, dt, bj + q);
            y[i * nc + j] = s;
        }
    }
}

/* y[i * nc + j] = sum_p x[i * xs + p] * b[off + p * s0 + j], i < M, j < nc */
GV_INLINE void gv_axpy(int M, int dt, bool f16c, const float *x, int64_t xs, int64_t k, const char *b, int64_t off,
                       int64_t s0, int64_t nc, float *y)
{
    for (int i = 0; i < M; i++)
        for (int64_t j = 0; j < nc; j++) y[i * nc + j] = 0;
    const int64_t nv = nc / 8 * 8;
    for (int64_t p = 0; p < k; p++) {
        const int64_t row = off + p * s0;
        float xi[GV_MAXM];
        for (int i = 0; i < M; i++) xi[i] = x[i * xs + p];
        for (int64_t j = 0; j < nv; j += 8) {
            v8f w, v;
            gv_ld8(&w, b, dt, row + j, f16c);
            for (int i = 0; i < M; i++) {
                float *yi = y + i * nc + j;
                gv_ld8f(&v, yi);
                v += xi[i] * w;
                memcpy(yi, &v, sizeof v);
            }
        }
        for (int64_t j = nv; j < nc; j++) {
            float w = gv_ld1(b, dt, row + j);
            for (int i = 0; i < M; i++) y[i * nc + j] += xi[i] * w;
        }
    }
}

/* one block of outputs, with M and the dtype as constants */
GV_INLINE void gv_block(bool f16c, bool dot, int M, int dt, const float *x, int64_t xs, int64_t k, const char *b,
                        int64_t off, int64_t s, int64_t nc, float *y)
{
#define GV_CASE(D, MM)                                                                                          \
    case D * 8 + MM:                                                                                            \
        if (dot) gv_dot(MM, D, f16c, x, xs, k, b, off, s, nc, y);                                               \
        else gv_axpy(MM, D, f16c, x, xs, k, b, off, s, nc, y);                                                  \
        break;
    switch (dt * 8 + M) {
        GV_CASE(GV_F32, 1) GV_CASE(GV_F32, 2) GV_CASE(GV_F32, 3) GV_CASE(GV_F32, 4)
        GV_CASE(GV_BF16, 1) GV_CASE(GV_BF16, 2) GV_CASE(GV_BF16, 3) GV_CASE(GV_BF16, 4)
        GV_CASE(GV_F16, 1) GV_CASE(GV_F16, 2) GV_CASE(GV_F16, 3) GV_CASE(GV_F16, 4)
    default: break;
    }
#undef GV_CASE
}

typedef void (*gv_block_fn)(bool dot, int M, int dt, const float *x, int64_t xs, int64_t k, const char *b,
                            int64_t off, int64_t s, int64_t nc, float *y);

static void gv_block_plain(bool dot, int M, int dt, const float *x, int64_t xs, int64_t k, const char *b, int64_t off,
                           int64_t s, int64_t nc, float *y)
{
    gv_block(false, dot, M, dt, x, xs, k, b, off, s, nc, y);
}

#ifdef WK_HAVE_AVX2_KERNELS
__attribute__((target("avx2,fma,f16c")))
static void gv_block_avx2(bool dot, int M, int dt, const float *x, int64_t xs, int64_t k, const char *b, int64_t off,
                          int64_t s, int64_t nc, float *y)
{
    gv_block(true, dot, M, dt, x, xs, k, b, off, s, nc, y);
}
#endif

#ifdef WK_HAVE_AVX2_KERNELS
/* AVX-512, the dot layout: 16 values of b a vector (f16 by vcvtph2ps, bf16
 * shifted into f32), two of b's rows against the M rows of x at once; the
 * axpy layout takes the AVX2 code */
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
static inline __m512 gv_ld16(const char *b, int dt, int64_t idx, __mmask16 k)
{
    if (dt == GV_F32) return _mm512_maskz_loadu_ps(k, (const float *)b + idx);
    const __m256i h = _mm256_maskz_loadu_epi16(k, (const uint16_t *)b + idx);
    if (dt == GV_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
static void gv_block_avx512(bool dot, int M, int dt, const float *x, int64_t xs, int64_t k, const char *b, int64_t off,
                            int64_t s, int64_t nc, float *y)
{
    if (!dot) {
        gv_block(true, dot, M, dt, x, xs, k, b, off, s, nc, y);
        return;
    }
    for (int64_t j = 0; j < nc; j += 2) {
        const int nj = nc - j >= 2 ? 2 : 1;
        __m512 acc[2][GV_MAXM];
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < M; i++) acc[r][i] = _mm512_setzero_ps();
        for (int64_t p = 0; p < k; p += 16) {
            const __mmask16 km = k - p >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (k - p)) - 1);
            const __m512 w0 = gv_ld16(b, dt, off + j * s + p, km);
            const __m512 w1 = nj > 1 ? gv_ld16(b, dt, off + (j + 1) * s + p, km) : _mm512_setzero_ps();
            for (int i = 0; i < M; i++) {
                const __m512 xv = _mm512_maskz_loadu_ps(km, x + i * xs + p);
                acc[0][i] = _mm512_fmadd_ps(xv, w0, acc[0][i]);
                acc[1][i] = _mm512_fmadd_ps(xv, w1, acc[1][i]);
            }
        }
        for (int r = 0; r < nj; r++)
            for (int i = 0; i < M; i++) y[i * nc + j + r] = _mm512_reduce_add_ps(acc[r][i]);
    }
}
#endif

static struct {
    pthread_once_t once;
    gv_block_fn fn;
} gv = { PTHREAD_ONCE_INIT, gv_block_plain };

static void gv_pick(void)
{
#ifdef WK_HAVE_AVX2_KERNELS
    __builtin_cpu_init();
    unsigned eax, ebx, ecx = 0, edx;
    bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29));   /* CPUID.1:ECX.F16C */
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c) gv.fn = gv_block_avx2;
    if (gv.fn == gv_block_avx2 && wk_ew_have_avx512()) gv.fn = gv_block_avx512;
#endif
}

/* ---- batches -------------------------------------------------------- */

typedef struct batch_job {
    const wk_view *d, *a, *b;
    int nb;                    /* batch dims                              */
    int64_t m, n, k;
    atomic_bool failed;
} batch_job;

/* the three matrices of batch number t */
static void batch_mats(const batch_job *J, int64_t t, mat *d, mat *a, mat *b)
{
    const wk_view *v[3] = { J->d, J->a, J->b };
    mat *x[3] = { d, a, b };
    int r = J->d->rank;
    for (int q = 0; q < 3; q++) {
        x[q]->base = (const char *)v[q]->base;
        x[q]->dt = v[q]->dtype;
        x[q]->off = v[q]->offset;
        x[q]->s0 = v[q]->strides[r - 2];
        x[q]->s1 = v[q]->strides[r - 1];
    }
    for (int dd = J->nb - 1; dd >= 0; dd--) {
        int64_t i = t % J->d->dims[dd];
        t /= J->d->dims[dd];
        for (int q = 0; q < 3; q++) x[q]->off += i * v[q]->strides[dd];
    }
}

static void batch_task(void *arg, int64_t begin, int64_t end)
{
    batch_job *J = (batch_job *)arg;
    for (int64_t t = begin; t < end; t++) {
        mat d, a, b;
        batch_mats(J, t, &d, &a, &b);
        if (!own_matmul(&d, &a, &b, J->m, J->n, J->k, false)) atomic_store(&J->failed, true);
    }
}

static void zero_task(void *arg, int64_t begin, int64_t end)
{
    const batch_job *J = (const batch_job *)arg;
    size_t es = wk_cpu_dtype_size(J->d->dtype);
    for (int64_t t = begin; t < end; t++) {
        mat d, a, b;
        batch_mats(J, t, &d, &a, &b);
        for (int64_t i = 0; i < J->m; i++)
            for (int64_t j = 0; j < J->n; j++)
                memset((char *)d.base + (size_t)(d.off + i * d.s0 + j * d.s1) * es, 0, es);
    }
}

/* The gemv path's tasks: (batch, block of output columns). */
typedef struct gemv_job {
    const batch_job *J;
    bool dot;                  /* b's columns contiguous, else its rows    */
    int dt;                    /* GV_F32, GV_BF16, GV_F16                 */
    int64_t cols, nblk;        /* output columns per task, tasks per batch */
    atomic_bool failed;
} gemv_job;

static void gemv_task(void *arg, int64_t begin, int64_t end)
{
    gemv_job *G = (gemv_job *)arg;
    const batch_job *J = G->J;
    const int64_t m = J->m, n = J->n, k = J->k;
    float *xbuf = NULL, y[GV_MAXM * GV_AXPY_COLS];
    int64_t have = -1;         /* the batch whose a is in xbuf */
    for (int64_t t = begin; t < end; t++) {
        const int64_t bt = t / G->nblk, j0 = (t % G->nblk) * G->cols;
        const int64_t nc = n - j0 < G->cols ? n - j0 : G->cols;
        mat d, a, b;
        batch_mats(J, bt, &d, &a, &b);
        const float *x;
        int64_t xs;
        if (a.dt == WK_F32 && (a.s1 == 1 || k == 1)) {
            x = (const float *)a.base + a.off;
            xs = a.s0;
        } else {
            if (!xbuf && !(xbuf = malloc((size_t)(m * k) * sizeof(float)))) {
                atomic_store(&G->failed, true);
                return;
            }
            if (have != bt) {
                conv_job cj = { &a, xbuf, k, k, false };
                pack_rows(&cj, 0, m);
                have = bt;
            }
            x = xbuf;
            xs = k;
        }
        gv.fn(G->dot, (int)m, G->dt, x, xs, k, b.base, b.off + (G->dot ? j0 * b.s1 : j0), G->dot ? b.s1 : b.s0, nc, y);
        mat dj = d;
        dj.off += j0 * d.s1;
        conv_job sj = { &dj, y, nc, nc, false };
        store_rows(&sj, 0, m);
    }
    free(xbuf);
}

/* d = a x b by the gemv path when m is small, the dtype f32, bf16 or f16
 * and b has a unit stride on one side; false when it does not apply. */
static bool gemv_try(batch_job *J, int64_t nbatch, wk_status *st)
{
    const wk_dtype dt = J->d->dtype;
    const int r = J->b->rank;
    const int64_t bs0 = J->b->strides[r - 2], bs1 = J->b->strides[r - 1];
    if (J->m > GV_MAXM || (dt != WK_F32 && dt != WK_BF16 && dt != WK_F16)) return false;
    if (wk_cpu_env.gemv_off) return false;   /* WICK_MATMUL_GEMV=0 */
    pthread_once(&gv.once, gv_pick);
    gemv_job G;
    memset(&G, 0, sizeof G);
    G.J = J;
    if (bs0 == 1 || J->k == 1) G.dot = true;
    else if (bs1 == 1 || J->n == 1) G.dot = false;
    else return false;
    G.dt = dt == WK_F32 ? GV_F32 : dt == WK_BF16 ? GV_BF16 : GV_F16;
    G.cols = G.dot ? GV_DOT_COLS : GV_AXPY_COLS;
    G.nblk = (J->n + G.cols - 1) / G.cols;
    atomic_init(&G.failed, false);
    /* work per task: the elements of b it reads */
    wk_parallel_tasks(nbatch * G.nblk, (double)G.cols * (double)J->k, gemv_task, &G);
    *st = atomic_load(&G.failed) ? WK_CPU_ERROR(WK_ERR_MEMORY, "matmul: out of memory for a as f32") : WK_OK;
    return true;
}

wk_status wk_cpu_matmul(void *ctx, const wk_view *dst, const wk_view *a, const wk_view *b)
{
    (void)ctx;
    wk_dtype dt = dst->dtype;
    if (dt != WK_F32 && dt != WK_F64 && dt != WK_F16 && dt != WK_BF16)
        return WK_CPU_ERROR(WK_ERR_DTYPE, "matmul takes f16, bf16, f32 or f64");
    int r = dst->rank;
    if (r < 2) return WK_CPU_ERROR(WK_ERR_SHAPE, "matmul needs rank >= 2, got %d", r);
    batch_job J;
    memset(&J, 0, sizeof J);
    atomic_init(&J.failed, false);
    J.d = dst; J.a = a; J.b = b;
    J.nb = r - 2;
    J.m = dst->dims[r - 2];
    J.n = dst->dims[r - 1];
    J.k = a->dims[r - 1];
    int64_t nbatch = 1;
    for (int d = 0; d < J.nb; d++) nbatch *= dst->dims[d];
    if (nbatch == 0 || J.m == 0 || J.n == 0) return WK_OK;
    if (J.k == 0) {
        par_tasks(nbatch, (double)J.m * (double)J.n, zero_task, &J);
        return WK_OK;
    }

    /* b shared by every batch and a, dst row-major across the batches:
     * one GEMM of nbatch * m rows */
    wk_view fd, fa, fb;
    if (nbatch > 1) {
        bool fold = true;
        int64_t sa = a->strides[r - 2], sd = dst->strides[r - 2], rows = J.m;
        for (int d = J.nb - 1; d >= 0 && fold; d--) {
            if (dst->dims[d] == 1) continue;
            fold = b->strides[d] == 0 && a->strides[d] == sa * rows && dst->strides[d] == sd * rows;
            rows *= dst->dims[d];
        }
        if (fold) {
            fd = *dst; fa = *a; fb = *b;
            fd.rank = fa.rank = fb.rank = 2;
            fd.dims[0] = fa.dims[0] = nbatch * J.m;
            fd.dims[1] = J.n; fa.dims[1] = J.k; fb.dims[0] = J.k; fb.dims[1] = J.n;
            fd.strides[0] = dst->strides[r - 2]; fd.strides[1] = dst->strides[r - 1];
            fa.strides[0] = a->strides[r - 2]; fa.strides[1] = a->strides[r - 1];
            fb.strides[0] = b->strides[r - 2]; fb.strides[1] = b->strides[r - 1];
            J.d = &fd; J.a = &fa; J.b = &fb;
            J.nb = 0;
            J.m *= nbatch;
            nbatch = 1;
        }
    }

    wk_status gst;
    if (gemv_try(&J, nbatch, &gst)) return gst;

    double flops = 2.0 * (double)J.m * (double)J.n * (double)J.k;
    bool fits_int = J.m <= INT_MAX && J.n <= INT_MAX && J.k <= INT_MAX;
    bool use_blas = blas_ready() && fits_int && (nbatch == 1 || flops >= 2.0 * 128 * 128 * 128);
    if (!use_blas && nbatch > 1) {
        /* many small GEMMs: one batch per task */
        par_tasks(nbatch, flops / 8, batch_task, &J);
        if (atomic_load(&J.failed)) return WK_CPU_ERROR(WK_ERR_MEMORY, "matmul: out of memory for scratch");
        return WK_OK;
    }
    scratch s;
    memset(&s, 0, sizeof s);
    bool ok = true;
    for (int64_t t = 0; t < nbatch && ok; t++) {
        mat md, ma, mb;
        batch_mats(&J, t, &md, &ma, &mb);
        if (use_blas) ok = blas_matmul(&md, &ma, &mb, J.m, J.n, J.k, &s);
        else ok = own_matmul(&md, &ma, &mb, J.m, J.n, J.k, true);
    }
    for (int i = 0; i < 3; i++) free(s.p[i]);
    if (!ok) return WK_CPU_ERROR(WK_ERR_MEMORY, "matmul: out of memory for scratch");
    return WK_OK;
}
