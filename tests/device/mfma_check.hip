/* mfma_check.hip — the CDNA matrix-core builtins that wick's kernels use
 * (compat.h: wk_mfma_f32_16x16x16f16, wk_mfma_f32_16x16x16bf16_1k),
 * checked lane by lane against a plain matrix product computed on the
 * host in double precision.
 *
 * Each lane builds its A, B and C fragments from row-major 16x16
 * matrices by AMD's documented register layout (compat.h: A[i][k] in lane
 * 16 (k / 4) + i, element k % 4; B[k][j] in lane 16 (k / 4) + j; D[i][j]
 * in lane 16 (i / 4) + j, element i % 4) and writes its four outputs as
 * they come back; the host expects output e of lane l to be
 * C[i][j] + sum_k A[i][k] B[k][j] with i = 4 (l / 16) + e, j = l % 16.
 * Random f16/bf16 inputs (seed printed; WICK_SEED=<n> replays), several
 * waves per block and several blocks (every 64-lane group of the virtual
 * wave64 mode). A control also requires the results to disagree with the
 * same product under a wrong layout (B read transposed), so that the
 * check can fail.
 *
 * Built two ways: `make build/wick-mfma-check` (nvcc, virtual wave64:
 * the software MFMA of compat.h on NVIDIA; tests/run_gpu.sh runs it) and
 * `make build/wick-mfma-check-rocm` (hipcc for the MFMA targets of
 * ROCM_TARGETS: the hardware instructions, on an MI200/MI300, which
 * checks the layout the software twin assumes). Prints `N passed, N
 * failed`; exit 1 on a failure. */
#include "gpu/compat.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#if !defined(WK_MFMA_DEVICE) && !defined(WK_GPU_HIP)
#error "mfma_check: build with -DWK_VIRTUAL_WAVE64 under nvcc (make build/wick-mfma-check)"
#endif

#define NWAVE 4        /* waves per block */
#define NBLOCK 3

/* wave w of the grid: A, B (16-bit, row-major) and C, D (f32) at w * 256 */
__global__ void mfma_kernel(const uint16_t *A, const uint16_t *B, const float *C, float *D, int bf16)
{
#if defined(WK_MFMA_DEVICE)
    const int lane = (int)(threadIdx.x % 64), w = (int)(blockIdx.x * NWAVE + threadIdx.x / 64);
    const int r = lane % 16, g = lane / 16;
    A += w * 256;
    B += w * 256;
    C += w * 256;
    uint64_t a = 0, b = 0;
    wk_f32x4 c;
    for (int e = 0; e < 4; e++) {
        a |= (uint64_t)A[r * 16 + 4 * g + e] << (16 * e);      /* A[i = r][k = 4g + e] */
        b |= (uint64_t)B[(4 * g + e) * 16 + r] << (16 * e);    /* B[k = 4g + e][j = r] */
        c[e] = C[(4 * g + e) * 16 + r];                        /* C[i = 4g + e][j = r] */
    }
    const wk_f32x4 d = bf16 ? wk_mfma_f32_16x16x16bf16_1k(a, b, c) : wk_mfma_f32_16x16x16f16(a, b, c);
    for (int e = 0; e < 4; e++) D[w * 256 + lane * 4 + e] = d[e];
#else
    (void)A;
    (void)B;
    (void)C;
    (void)D;
    (void)bf16;
#if defined(__HIP_DEVICE_COMPILE__)
    __builtin_trap();
#endif
#endif
}

static uint64_t rng_state;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}
/* a random normal value as f16 or bf16 bits, |x| in [2^-4, 2^4) */
static uint16_t rnd_bits(int bf16)
{
    const uint32_t s = rnd() & 1u;
    if (bf16) return (uint16_t)((s << 15) | ((123u + rnd() % 8u) << 7) | (rnd() & 0x7Fu));
    return (uint16_t)((s << 15) | ((11u + rnd() % 8u) << 10) | (rnd() & 0x3FFu));
}
/* the value of those bits (normal numbers only, as drawn) */
static double val(uint16_t h, int bf16)
{
    const int s = h >> 15;
    double v;
    if (bf16) v = ldexp(1.0 + (h & 0x7F) / 128.0, ((h >> 7) & 0xFF) - 127);
    else v = ldexp(1.0 + (h & 0x3FF) / 1024.0, ((h >> 10) & 0x1F) - 15);
    return s ? -v : v;
}

#define CHECK(x)                                                                      \
    do {                                                                              \
        hipError_t e_ = (x);                                                          \
        if (e_ != hipSuccess) {                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, hipGetErrorString(e_)); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

int main(void)
{
#if defined(WK_GPU_HIP)
    hipDeviceProp_t prop;
    CHECK(hipGetDeviceProperties(&prop, 0));
    if (!wk_mfma_arch(prop.gcnArchName)) {
        printf("mfma_check: %s has no MFMA instructions wick uses: skipped\n0 passed, 0 failed\n", prop.gcnArchName);
        return 0;
    }
#endif
    const char *se = getenv("WICK_SEED");
    const uint64_t seed = se && *se ? strtoull(se, NULL, 10) : 20261125ull;
    rng_state = seed;
    printf("mfma_check: seed %llu (WICK_SEED replays), %d blocks of %d waves\n", (unsigned long long)seed, NBLOCK,
           NWAVE);
    const int nw = NBLOCK * NWAVE, n = nw * 256;
    uint16_t *dA, *dB;
    float *dC, *dD;
    CHECK(hipMalloc((void **)&dA, n * 2));
    CHECK(hipMalloc((void **)&dB, n * 2));
    CHECK(hipMalloc((void **)&dC, n * 4));
    CHECK(hipMalloc((void **)&dD, n * 4));
    int passed = 0, failed = 0;
    for (int bf16 = 0; bf16 < 2; bf16++) {
        const char *name = bf16 ? "wk_mfma_f32_16x16x16bf16_1k" : "wk_mfma_f32_16x16x16f16";
        std::vector<uint16_t> A(n), B(n);
        std::vector<float> C(n), D(n, NAN);
        for (int i = 0; i < n; i++) {
            A[i] = rnd_bits(bf16);
            B[i] = rnd_bits(bf16);
            C[i] = (float)((int)(rnd() % 2001u) - 1000) / 64.0f;
        }
        CHECK(hipMemcpy(dA, A.data(), n * 2, hipMemcpyHostToDevice));
        CHECK(hipMemcpy(dB, B.data(), n * 2, hipMemcpyHostToDevice));
        CHECK(hipMemcpy(dC, C.data(), n * 4, hipMemcpyHostToDevice));
        CHECK(hipMemcpy(dD, D.data(), n * 4, hipMemcpyHostToDevice));
        mfma_kernel<<<NBLOCK, NWAVE * 64>>>(dA, dB, dC, dD, bf16);
        CHECK(hipGetLastError());
        CHECK(hipDeviceSynchronize());
        CHECK(hipMemcpy(D.data(), dD, n * 4, hipMemcpyDeviceToHost));
        long bad = 0, wrong_layout_ok = 0;
        for (int w = 0; w < nw; w++)
            for (int lane = 0; lane < 64; lane++)
                for (int e = 0; e < 4; e++) {
                    const int i = 4 * (lane / 16) + e, j = lane % 16;
                    const uint16_t *a = &A[w * 256], *b = &B[w * 256];
                    double want = C[w * 256 + i * 16 + j], mag = fabs(want), alt = want;
                    for (int k = 0; k < 16; k++) {
                        const double p = val(a[i * 16 + k], bf16) * val(b[k * 16 + j], bf16);
                        want += p;
                        mag += fabs(p);
                        alt += val(a[i * 16 + k], bf16) * val(b[j * 16 + k], bf16);   /* B transposed: wrong */
                    }
                    const double got = D[w * 256 + lane * 4 + e], tol = 1e-6 * mag + 1e-30;
                    if (!(fabs(got - want) <= tol)) {
                        if (bad < 8)
                            printf("  %s: wave %d lane %d element %d (D[%d][%d]): got %.9g, want %.9g\n", name, w,
                                   lane, e, i, j, got, want);
                        bad++;
                    }
                    if (fabs(got - alt) <= tol) wrong_layout_ok++;
                }
        const int ok = bad == 0;
        printf("%s %s: %d lanes x 4 outputs, %ld wrong\n", ok ? "ok  " : "FAIL", name, nw * 64, bad);
        ok ? passed++ : failed++;
        /* control: a transposed B must not pass (the check can fail) */
        const int ctl = wrong_layout_ok < (long)n / 4;
        printf("%s %s control: %ld of %d outputs also match B transposed (want few)\n", ctl ? "ok  " : "FAIL", name,
               wrong_layout_ok, n);
        ctl ? passed++ : failed++;
    }
    CHECK(hipFree(dA));
    CHECK(hipFree(dB));
    CHECK(hipFree(dC));
    CHECK(hipFree(dD));
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
