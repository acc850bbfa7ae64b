/* mma.h — matrix-core building blocks shared by the kernels that use
 * them (attention.hip, conv.hip):
 *
 *  - wk_gpu_smem_limit: raise a kernel's dynamic shared-memory limit past
 *    48 KiB once per device (every build);
 *  - wk_mfma16<T>: AMD's 16x16x16 matrix-core step for f16/bf16 (where
 *    compat.h's WK_MFMA_DEVICE is defined: gfx90a/gfx94x device passes and
 *    the virtual-wave64 build's software twin);
 *  - on the plain CUDA build (WK_MMA_SM80 defined; not the virtual-wave64
 *    build, whose kernels must run the AMD path): NVIDIA's sm_80+
 *    instructions as small device functions: mma.sync m16n8k16 with f32
 *    accumulators for bf16 and f16, ldmatrix (x4, plain and transposed),
 *    cp.async of 16 bytes with zero fill, and cvt to two 16-bit floats.
 *    Kernels that use them put their bodies under
 *    #if __CUDA_ARCH__ >= 800 (the plugin is also built for older arches).
 */
#ifndef WICK_GPU_MMA_H
#define WICK_GPU_MMA_H

#include "gpu_internal.h"

/* once per device (a bit per device below 32; beyond, every call) */
template <typename K> static wk_status wk_gpu_smem_limit(wk_gpu_ctx *c, K kern, size_t bytes, unsigned *done_mask)
{
    if (bytes <= 48 * 1024) return WK_OK;
    const unsigned bit = c->device < 32 ? 1u << c->device : 0u;
    if (bit && (__atomic_load_n(done_mask, __ATOMIC_RELAXED) & bit)) return WK_OK;
    WK_GPU_CHECK(hipFuncSetAttribute((const void *)kern, hipFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    if (bit) __atomic_fetch_or(done_mask, bit, __ATOMIC_RELAXED);
    return WK_OK;
}

#if defined(WK_GPU_CUDA) && !defined(WK_VIRTUAL_WAVE64)
#define WK_MMA_SM80 1

/* c += a b for one m16n8k16 tile: a row-major [16][16] in four registers,
 * b column-major [16][8] in two, c [16][8] in f32 */
template <typename T> WK_DEV void wk_mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
template <> WK_DEV void wk_mma<wk_bf16_t>(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> WK_DEV void wk_mma<wk_f16_t>(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
/* two f32 -> one register of two 16-bit values (lo in the low half),
 * rounded to nearest even */
template <typename T> WK_DEV uint32_t wk_pack2(float lo, float hi);
template <> WK_DEV uint32_t wk_pack2<wk_bf16_t>(float lo, float hi)
{
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
template <> WK_DEV uint32_t wk_pack2<wk_f16_t>(float lo, float hi)
{
    uint32_t r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
/* four 8x8 matrices of 16-bit values from shared memory: lane l gives
 * the address of row l % 8 of matrix l / 8 */
WK_DEV void wk_ldsm4(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
WK_DEV void wk_ldsm4t(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
/* 16 bytes global -> shared, zero-filled past src_bytes (0 or 16) */
WK_DEV void wk_cp16(uint32_t saddr, const void *g, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(saddr), "l"(g), "r"(src_bytes) : "memory");
}
WK_DEV void wk_cp_commit(void) { asm volatile("cp.async.commit_group;" ::: "memory"); }
WK_DEV void wk_cp_wait_all(void) { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
/* wait until at most N groups are in flight */
template <int N> WK_DEV void wk_cp_wait(void) { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }
WK_DEV uint32_t wk_smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

#endif /* WK_GPU_CUDA && !WK_VIRTUAL_WAVE64 */

/* AMD's matrix cores (and their software twin in the virtual-wave64
 * build: compat.h): D = A B + C for a 16x16x16 tile of T (f16 or bf16),
 * one 64-lane wave together; inside kernel bodies only */
#if defined(WK_MFMA_DEVICE)
template <typename T> WK_DEV wk_f32x4 wk_mfma16(uint64_t a, uint64_t b, wk_f32x4 c);
template <> WK_DEV wk_f32x4 wk_mfma16<wk_f16_t>(uint64_t a, uint64_t b, wk_f32x4 c)
{
    return wk_mfma_f32_16x16x16f16(a, b, c);
}
template <> WK_DEV wk_f32x4 wk_mfma16<wk_bf16_t>(uint64_t a, uint64_t b, wk_f32x4 c)
{
    return wk_mfma_f32_16x16x16bf16_1k(a, b, c);
}
#endif
#endif /* WICK_GPU_MMA_H */
