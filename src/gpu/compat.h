/* compat.h — the one place in wick that knows HIP from CUDA.
 *
 * Every GPU source (the .hip files of src/gpu/) is written against the HIP names and
 * includes this header first. Under hipcc it includes <hip/hip_runtime.h>;
 * under nvcc it includes the CUDA runtime and maps the HIP names wick uses
 * onto their CUDA twins (only those; add a line here when you need one
 * more). Both compilers accept the <<<grid, block, shmem, stream>>> launch
 * syntax, which the kernels use.
 *
 * Warps. Wavefronts are 64 lanes on CDNA (gfx90a, gfx940) and 32 on RDNA
 * and NVIDIA. Code that depends on the width takes it as a template
 * parameter W (32 or 64); the host instantiates both and picks one from
 * the device's run-time warp size (wk_gpu_ctx.warp_size). The helpers
 * below take W too: wk_shfl_xor<W>, wk_shfl_down<W>, wk_shfl<W>,
 * wk_ballot<W> (always a 64-bit mask), wk_warp_sum<W>/max/min, wk_lane<W>.
 * No device-only macro may change a kernel's name, template arguments,
 * parameters or launch bounds (hipcc compiles the host once and the device
 * once per target: the host would launch a kernel a code object lacks).
 *
 * Virtual wave64 (WK_VIRTUAL_WAVE64, nvcc only; `make cuda-wave64`): the
 * host sees warp size 64, so the W = 64 instantiations run on NVIDIA. A
 * 64-lane warp is two 32-lane hardware warps; a warp op whose lanes cross
 * the halves goes through shared memory, the two halves meeting at a named
 * barrier (one per 64-thread group, ids 1..15, so blocks of at most 960
 * threads). As on a real wave64 GPU, all 64 lanes must take part in every
 * warp op (no warp op under lane-divergent control flow).
 *
 * Kernels compiled at run time (NVRTC, hiprtc; src/gpu/rtc.hip): this
 * header, as text, goes in front of every such source, so a user's kernel
 * gets the same helpers on both vendors. There (__CUDACC_RTC__ or
 * __HIPCC_RTC__) it includes nothing, defines the fixed-width integer
 * types and WK_GPU_RTC, and leaves out the host code.
 */
#ifndef WICK_GPU_COMPAT_H
#define WICK_GPU_COMPAT_H

#if defined(__CUDACC_RTC__) || defined(__HIPCC_RTC__)
/* ------------------------------------------------------------------ */
/* Kernels compiled at run time (NVRTC, hiprtc; src/gpu/rtc.hip puts this
 * header in front of every source): no host headers, no runtime API, the
 * device helpers below only.                                          */
#define WK_GPU_RTC 1
#if defined(__HIPCC_RTC__)
#define WK_GPU_HIP 1
#define WK_GPU_PLATFORM "rocm"
#else
#define WK_GPU_CUDA 1
#define WK_GPU_PLATFORM "cuda"
#endif
/* the types hiprtc's own headers declare (a typedef may be repeated
 * only with the same type): 64 bits are long long */
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef signed int int32_t;
typedef unsigned int uint32_t;
typedef signed long long int64_t;
typedef unsigned long long uint64_t;
#if defined(__HIPCC_RTC__)
#define memcpy __builtin_memcpy     /* NVRTC declares memcpy itself */
#endif

#elif defined(__HIP__)
/* ------------------------------------------------------------------ */
/* HIP (AMD, hipcc)                                                    */
#define WK_GPU_HIP 1
#define WK_GPU_PLATFORM "rocm"
#include <stdint.h>
#include <string.h>
#include <hip/hip_runtime.h>
#if defined(WK_VIRTUAL_WAVE64)
#error "WK_VIRTUAL_WAVE64 is an nvcc-only mode"
#endif

#elif defined(__CUDACC__)
/* ------------------------------------------------------------------ */
/* CUDA (NVIDIA, nvcc): the HIP names wick uses, mapped                */
#define WK_GPU_CUDA 1
#define WK_GPU_PLATFORM "cuda"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>

typedef cudaError_t hipError_t;
typedef cudaStream_t hipStream_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaDeviceProp hipDeviceProp_t;

#define hipSuccess                       cudaSuccess
#define hipErrorNotReady                 cudaErrorNotReady
#define hipErrorNoDevice                 cudaErrorNoDevice
#define hipErrorInsufficientDriver       cudaErrorInsufficientDriver
#define hipErrorOutOfMemory              cudaErrorMemoryAllocation
#define hipErrorPeerAccessAlreadyEnabled cudaErrorPeerAccessAlreadyEnabled
#define hipGetErrorString                cudaGetErrorString
#define hipGetErrorName                  cudaGetErrorName
#define hipGetLastError                  cudaGetLastError
#define hipPeekAtLastError               cudaPeekAtLastError

#define hipDriverGetVersion              cudaDriverGetVersion
#define hipRuntimeGetVersion             cudaRuntimeGetVersion
#define hipGetDeviceCount                cudaGetDeviceCount
#define hipSetDevice                     cudaSetDevice
#define hipGetDevice                     cudaGetDevice
#define hipDeviceSynchronize             cudaDeviceSynchronize
#define hipGetDeviceProperties           cudaGetDeviceProperties
#define hipDeviceGetAttribute            cudaDeviceGetAttribute
#define hipDeviceAttributeWarpSize                   cudaDevAttrWarpSize
#define hipDeviceAttributeMultiprocessorCount        cudaDevAttrMultiProcessorCount
#define hipDeviceAttributeMaxSharedMemoryPerBlock    cudaDevAttrMaxSharedMemoryPerBlock
#define hipDeviceAttributeMaxThreadsPerBlock         cudaDevAttrMaxThreadsPerBlock
#define hipDeviceAttributeMaxThreadsPerMultiProcessor cudaDevAttrMaxThreadsPerMultiProcessor
#define hipDeviceAttributeL2CacheSize                cudaDevAttrL2CacheSize
#define hipDeviceAttributeComputeCapabilityMajor     cudaDevAttrComputeCapabilityMajor
#define hipDeviceAttributeComputeCapabilityMinor     cudaDevAttrComputeCapabilityMinor
#define hipDeviceCanAccessPeer           cudaDeviceCanAccessPeer
#define hipDeviceEnablePeerAccess        cudaDeviceEnablePeerAccess
#define hipFuncSetAttribute(f, a, v)     cudaFuncSetAttribute((f), (a), (v))
#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define hipOccupancyMaxActiveBlocksPerMultiprocessor cudaOccupancyMaxActiveBlocksPerMultiprocessor

#define hipStreamNonBlocking             cudaStreamNonBlocking
#define hipStreamCreateWithFlags         cudaStreamCreateWithFlags
#define hipStreamCreateWithPriority      cudaStreamCreateWithPriority
#define hipDeviceGetStreamPriorityRange  cudaDeviceGetStreamPriorityRange
#define hipStreamDestroy                 cudaStreamDestroy
#define hipStreamSynchronize             cudaStreamSynchronize
#define hipStreamQuery                   cudaStreamQuery
#define hipStreamWaitEvent               cudaStreamWaitEvent
#define hipEventDefault                  cudaEventDefault
#define hipEventDisableTiming            cudaEventDisableTiming
#define hipEventCreate                   cudaEventCreate
#define hipEventCreateWithFlags          cudaEventCreateWithFlags
#define hipEventRecord                   cudaEventRecord
#define hipEventSynchronize              cudaEventSynchronize
#define hipEventQuery                    cudaEventQuery
#define hipEventElapsedTime              cudaEventElapsedTime
#define hipEventDestroy                  cudaEventDestroy
typedef cudaGraph_t hipGraph_t;
typedef cudaGraphExec_t hipGraphExec_t;
#define hipStreamBeginCapture            cudaStreamBeginCapture
#define hipStreamEndCapture              cudaStreamEndCapture
#define hipStreamCaptureModeRelaxed      cudaStreamCaptureModeRelaxed
#define hipGraphInstantiateWithFlags     cudaGraphInstantiateWithFlags
#define hipGraphLaunch                   cudaGraphLaunch
#define hipGraphDestroy                  cudaGraphDestroy
#define hipGraphExecDestroy              cudaGraphExecDestroy

#define hipMalloc                        cudaMalloc
#define hipFree                          cudaFree
#define hipHostMalloc(p, n, f)           cudaHostAlloc((p), (n), (f))
#define hipHostMallocDefault             cudaHostAllocDefault
#define hipHostMallocPortable            cudaHostAllocPortable
#define hipHostMallocMapped              cudaHostAllocMapped
#define hipHostGetDevicePointer          cudaHostGetDevicePointer
#define hipHostFree                      cudaFreeHost
#define hipMemGetInfo                    cudaMemGetInfo
#define hipMemcpyHostToDevice            cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost            cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice          cudaMemcpyDeviceToDevice
#define hipMemcpyDefault                 cudaMemcpyDefault
#define hipMemcpy                        cudaMemcpy
#define hipMemcpyAsync                   cudaMemcpyAsync
#define hipMemcpy2DAsync                 cudaMemcpy2DAsync
#define hipMemcpyPeerAsync               cudaMemcpyPeerAsync
#define hipMemsetAsync                   cudaMemsetAsync

#else
#error "compat.h is for hipcc or nvcc"
#endif

/* ------------------------------------------------------------------ */
/* Portable spellings                                                  */

#define WK_DEV __device__ __forceinline__
#define WK_LAUNCH_BOUNDS(n) __launch_bounds__(n)

/* Flat thread index within the block (any block shape). */
WK_DEV unsigned wk_flat_tid(void)
{
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

/* Lane within a warp of W lanes, and the warp's index in the block. */
template <int W> WK_DEV int wk_lane(void) { return (int)(wk_flat_tid() % (unsigned)W); }
template <int W> WK_DEV int wk_warp_id(void) { return (int)(wk_flat_tid() / (unsigned)W); }

/* ------------------------------------------------------------------ */
/* Warp primitives on 32-bit words (the hardware level)                */

#if defined(WK_GPU_HIP)
/* AMD: shuffles are plain (no mask); ballot returns 64 bits on every
 * target (the upper 32 are zero on wave32 RDNA). */
WK_DEV uint32_t wk_hw_shfl_xor_(uint32_t v, int m, int w) { return (uint32_t)__shfl_xor((int)v, m, w); }
WK_DEV uint32_t wk_hw_shfl_down_(uint32_t v, unsigned d, int w) { return (uint32_t)__shfl_down((int)v, d, w); }
WK_DEV uint32_t wk_hw_shfl_idx_(uint32_t v, int src, int w) { return (uint32_t)__shfl((int)v, src, w); }
WK_DEV uint64_t wk_hw_ballot_(int p) { return (uint64_t)__ballot(p); }
WK_DEV void wk_hw_syncwarp_(void) { __builtin_amdgcn_wave_barrier(); }
#else
/* NVIDIA: hardware warps are 32 lanes; the _sync forms with a full-warp
 * mask (all 32 lanes take part). */
#define WK_CUDA_FULL_WARP_ (~0u)
WK_DEV uint32_t wk_hw_shfl_xor_(uint32_t v, int m, int w) { return __shfl_xor_sync(WK_CUDA_FULL_WARP_, v, m, w); }
WK_DEV uint32_t wk_hw_shfl_down_(uint32_t v, unsigned d, int w) { return __shfl_down_sync(WK_CUDA_FULL_WARP_, v, d, w); }
WK_DEV uint32_t wk_hw_shfl_idx_(uint32_t v, int src, int w) { return __shfl_sync(WK_CUDA_FULL_WARP_, v, src, w); }
WK_DEV uint64_t wk_hw_ballot_(int p) { return (uint64_t)__ballot_sync(WK_CUDA_FULL_WARP_, p); }
WK_DEV void wk_hw_syncwarp_(void) { __syncwarp(); }
#endif

/* Largest width the hardware shuffles natively in this build. */
#if defined(WK_GPU_CUDA)
#define WK_HW_WARP_MAX 32
#else
#define WK_HW_WARP_MAX 64
#endif

#if defined(WK_VIRTUAL_WAVE64)
/* ---- 64-lane warps made of two 32-lane NVIDIA warps --------------- */
#define WK_VW64_GROUPS 15   /* named barriers 1..15; 0 is __syncthreads */

/* Meet the other half of this 64-lane group. */
WK_DEV void wk_vw64_sync_(void)
{
    unsigned g = wk_flat_tid() / 64u;
    if (g >= WK_VW64_GROUPS) __trap();          /* block larger than 960 */
    asm volatile("bar.sync %0, 64;" : : "r"(g + 1u) : "memory");
}

/* Exchange buffer: one 64-bit slot per lane of each group. */
WK_DEV unsigned long long *wk_vw64_buf_(void)
{
    __shared__ unsigned long long buf[WK_VW64_GROUPS * 64];
    return buf + (wk_flat_tid() / 64u) * 64u;
}

/* Lane `src` (0..63) of this 64-lane group's value v. */
WK_DEV uint64_t wk_vw64_fetch_(uint64_t v, int src)
{
    unsigned long long *b = wk_vw64_buf_();
    unsigned lane = wk_flat_tid() % 64u;
    b[lane] = v;
    wk_vw64_sync_();
    uint64_t r = b[src];
    wk_vw64_sync_();
    return r;
}
#endif

/* ------------------------------------------------------------------ */
/* Typed warp operations (any T of 1, 2, 4 or 8 bytes)                 */

template <typename T> WK_DEV uint64_t wk_to_bits_(T v)
{
    static_assert(sizeof(T) <= 8, "warp ops take values of at most 8 bytes");
    uint64_t b = 0;
    memcpy(&b, &v, sizeof(T));
    return b;
}
template <typename T> WK_DEV T wk_from_bits_(uint64_t b)
{
    T v;
    memcpy(&v, &b, sizeof(T));
    return v;
}

/* Source lane of each shuffle kind for a lane in a warp of `width`
 * (a power of two <= W); lanes whose source leaves their width-segment
 * keep their own value, as on the hardware. */
WK_DEV int wk_src_xor_(int lane, int mask, int width)
{
    int s = lane ^ mask;
    return (s / width == lane / width) ? s : lane;
}
WK_DEV int wk_src_down_(int lane, unsigned d, int width)
{
    return (lane % width) + (int)d < width ? lane + (int)d : lane;
}
WK_DEV int wk_src_idx_(int lane, int src, int width)
{
    return (lane / width) * width + (src % width);
}

/* Generic 64-bit word shuffle by kind: 0 = xor, 1 = down, 2 = index. */
template <int W>
WK_DEV uint64_t wk_shfl_bits_(uint64_t b, int kind, int arg, int width, int nbytes)
{
    static_assert(W == 32 || W == 64, "warp width is 32 or 64");
#if defined(WK_VIRTUAL_WAVE64)
    /* A 64-wide op whose sources may sit in the other half: shared memory. */
    if (W == 64 && width > 32 && !(kind == 0 && arg < 32)) {
        int lane = wk_lane<64>();
        int src = kind == 0 ? wk_src_xor_(lane, arg, width)
                : kind == 1 ? wk_src_down_(lane, (unsigned)arg, width)
                            : wk_src_idx_(lane, arg, width);
        return wk_vw64_fetch_(b, src);
    }
    if (width > 32) width = 32;                 /* xor within a half */
#elif defined(WK_GPU_CUDA)
    /* Plain nvcc build: W == 64 kernels are instantiated but never
     * launched (the host only picks the device's warp size, 32). */
    if (W > WK_HW_WARP_MAX) __trap();
#endif
    uint32_t lo = (uint32_t)b, hi = (uint32_t)(b >> 32);
    if (kind == 0) {
        lo = wk_hw_shfl_xor_(lo, arg, width);
        if (nbytes > 4) hi = wk_hw_shfl_xor_(hi, arg, width);
    } else if (kind == 1) {
        lo = wk_hw_shfl_down_(lo, (unsigned)arg, width);
        if (nbytes > 4) hi = wk_hw_shfl_down_(hi, (unsigned)arg, width);
    } else {
        lo = wk_hw_shfl_idx_(lo, arg, width);
        if (nbytes > 4) hi = wk_hw_shfl_idx_(hi, arg, width);
    }
    return (uint64_t)lo | ((uint64_t)hi << 32);
}

/* v of lane (lane ^ mask); width: segment size (power of two <= W). */
template <int W, typename T> WK_DEV T wk_shfl_xor(T v, int mask, int width = W)
{
    return wk_from_bits_<T>(wk_shfl_bits_<W>(wk_to_bits_(v), 0, mask, width, (int)sizeof(T)));
}
/* v of lane (lane + delta), own value past the segment's end. */
template <int W, typename T> WK_DEV T wk_shfl_down(T v, unsigned delta, int width = W)
{
    return wk_from_bits_<T>(wk_shfl_bits_<W>(wk_to_bits_(v), 1, (int)delta, width, (int)sizeof(T)));
}
/* v of lane src (within the segment). */
template <int W, typename T> WK_DEV T wk_shfl(T v, int src, int width = W)
{
    return wk_from_bits_<T>(wk_shfl_bits_<W>(wk_to_bits_(v), 2, src, width, (int)sizeof(T)));
}

/* Bit i set when lane i's predicate is true; 64 bits for every W. */
template <int W> WK_DEV uint64_t wk_ballot(int pred)
{
    static_assert(W == 32 || W == 64, "warp width is 32 or 64");
#if defined(WK_VIRTUAL_WAVE64)
    if (W == 64) {
        /* each half's 32-bit ballot, read back from lanes 0 and 32 */
        uint64_t half = wk_hw_ballot_(pred);
        uint64_t lo = wk_vw64_fetch_(half, 0);
        uint64_t hi = wk_vw64_fetch_(half, 32);
        return lo | (hi << 32);
    }
#elif defined(WK_GPU_CUDA)
    if (W > WK_HW_WARP_MAX) __trap();
#endif
    uint64_t m = wk_hw_ballot_(pred);
    return m & (~(uint64_t)0 >> (64 - W));
}

/* Wait for the lanes of this warp (memory visible among them). */
template <int W> WK_DEV void wk_syncwarp(void)
{
#if defined(WK_VIRTUAL_WAVE64)
    if (W == 64) { wk_vw64_sync_(); return; }
#endif
    wk_hw_syncwarp_();
}

/* Butterfly reductions over the W lanes; every lane gets the result. */
template <int W, typename T> WK_DEV T wk_warp_sum(T v)
{
    for (int m = W / 2; m > 0; m /= 2) v += wk_shfl_xor<W>(v, m);
    return v;
}
template <int W, typename T> WK_DEV T wk_warp_max(T v)
{
    for (int m = W / 2; m > 0; m /= 2) { T o = wk_shfl_xor<W>(v, m); v = o > v ? o : v; }
    return v;
}
template <int W, typename T> WK_DEV T wk_warp_min(T v)
{
    for (int m = W / 2; m > 0; m /= 2) { T o = wk_shfl_xor<W>(v, m); v = o < v ? o : v; }
    return v;
}

/* ------------------------------------------------------------------ */
/* CDNA matrix cores (MFMA), and their software twin                   */
/*
 * wk_mfma_f32_16x16x16f16(a, b, c) and wk_mfma_f32_16x16x16bf16_1k(a, b,
 * c): D = A B + C for 16x16 A and B (f16 or bf16) and a 16x16 f32 C, one
 * 64-lane wave together; on gfx90a/gfx94x exactly the clang builtins
 * __builtin_amdgcn_mfma_f32_16x16x16f16 and
 * __builtin_amdgcn_mfma_f32_16x16x16bf16_1k (cbsz = abid = blgp = 0). A
 * and B: four 16-bit values per lane in one uint64_t (element e in bits
 * 16e..16e+15, i.e. the order of 8 bytes in memory); C and D: wk_f32x4.
 * Register layout, from AMD's Matrix Instruction Calculator
 * (github.com/ROCm/amd_matrix_instruction_calculator, `--architecture
 * cdna2|cdna3 --instruction v_mfma_f32_16x16x16f16 | _bf16_1k |
 * v_mfma_f32_16x16x16_f16 | _bf16 --detail-instruction`, the same for all
 * four), also the layout of AMD's lab-notes example
 * mfma_fp32_16x16x16fp16.cpp:
 *     A[i][k]: lane 16 (k / 4) + i, element k % 4
 *     B[k][j]: lane 16 (k / 4) + j, element k % 4
 *     D[i][j]: lane 16 (i / 4) + j, element i % 4
 * so lane l holds row l % 16 of A and column l % 16 of B, each at k =
 * 4 (l / 16) .. + 3, and D's column l % 16 at rows 4 (l / 16) .. + 3.
 *
 * WK_MFMA_DEVICE is defined where the wrappers exist: the device passes
 * of hipcc for gfx90a, gfx940, gfx941 and gfx942 (a device-only macro:
 * only inside kernel bodies, never around a kernel's name, template
 * arguments, parameters or launch bounds), and every pass of the
 * virtual-wave64 build, where they are the software twin: the 64 lanes
 * of a virtual wave swap their A and B through shared memory (as the
 * 64-lane shuffles do), and each lane sums its four outputs in f32,
 * C + sum over k = 0..15 in that order (the hardware's order inside the
 * instruction is not documented; products of f16 or bf16 pairs are exact
 * in f32, so only the f32 rounding of the sums may differ). All 64 lanes
 * must call it together. wk_mfma_arch(arch) says on the host whether a
 * device of that gcnArchName runs them (the same list). */
#if !defined(WK_GPU_RTC)
#if defined(WK_GPU_HIP)
static inline bool wk_mfma_arch(const char *arch)
{
    return strncmp(arch, "gfx90a", 6) == 0 || strncmp(arch, "gfx940", 6) == 0 || strncmp(arch, "gfx941", 6) == 0 ||
           strncmp(arch, "gfx942", 6) == 0;
}
#elif defined(WK_VIRTUAL_WAVE64)
static inline bool wk_mfma_arch(const char *arch) { return (void)arch, true; }
#else
static inline bool wk_mfma_arch(const char *arch) { return (void)arch, false; }
#endif

#if defined(WK_GPU_HIP) && (defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__))
#define WK_MFMA_DEVICE 1
typedef float wk_f32x4 __attribute__((ext_vector_type(4)));
WK_DEV wk_f32x4 wk_mfma_f32_16x16x16f16(uint64_t a, uint64_t b, wk_f32x4 c)
{
    typedef _Float16 h4 __attribute__((ext_vector_type(4)));
    return __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(h4, a), __builtin_bit_cast(h4, b), c, 0, 0, 0);
}
WK_DEV wk_f32x4 wk_mfma_f32_16x16x16bf16_1k(uint64_t a, uint64_t b, wk_f32x4 c)
{
    typedef short s4 __attribute__((ext_vector_type(4)));
    return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(s4, a), __builtin_bit_cast(s4, b), c, 0, 0, 0);
}
#elif defined(WK_VIRTUAL_WAVE64)
#define WK_MFMA_DEVICE 1
struct wk_f32x4 {
    float v[4];
    WK_DEV float &operator[](int i) { return v[i]; }
    WK_DEV const float &operator[](int i) const { return v[i]; }
};
WK_DEV float wk_mfma_f16_(uint32_t h)          /* f16 bits -> f32, exactly */
{
    const uint32_t s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0) {                                 /* zero or subnormal: m 2^-24 */
        const float f = (float)m * 5.9604644775390625e-8f;
        return s ? -f : f;
    }
    if (e == 31) return __uint_as_float(s | 0x7F800000u | (m << 13));
    return __uint_as_float(s | ((e + 112u) << 23) | (m << 13));
}
WK_DEV float wk_mfma_bf16_(uint32_t h) { return __uint_as_float(h << 16); }
template <bool BF16> WK_DEV wk_f32x4 wk_mfma_soft_(uint64_t a, uint64_t b, wk_f32x4 c)
{
    unsigned long long *x = wk_vw64_buf_();
    const int lane = (int)(wk_flat_tid() % 64u), col = lane % 16, g = lane / 16;
    uint64_t ar[4][4], br[4];    /* ar[r][kk]: row 4g + r of A, k = 4kk..4kk+3; br[kk]: column col of B */
    x[lane] = a;
    wk_vw64_sync_();
    for (int r = 0; r < 4; r++)
        for (int kk = 0; kk < 4; kk++) ar[r][kk] = x[16 * kk + 4 * g + r];
    wk_vw64_sync_();
    x[lane] = b;
    wk_vw64_sync_();
    for (int kk = 0; kk < 4; kk++) br[kk] = x[16 * kk + col];
    wk_vw64_sync_();
    wk_f32x4 d;
    for (int r = 0; r < 4; r++) {
        float s = c[r];
        for (int k = 0; k < 16; k++) {
            const uint32_t ab = (uint32_t)(ar[r][k / 4] >> (16 * (k % 4))) & 0xFFFFu;
            const uint32_t bb = (uint32_t)(br[k / 4] >> (16 * (k % 4))) & 0xFFFFu;
            s = fmaf(BF16 ? wk_mfma_bf16_(ab) : wk_mfma_f16_(ab), BF16 ? wk_mfma_bf16_(bb) : wk_mfma_f16_(bb), s);
        }
        d[r] = s;
    }
    return d;
}
WK_DEV wk_f32x4 wk_mfma_f32_16x16x16f16(uint64_t a, uint64_t b, wk_f32x4 c) { return wk_mfma_soft_<false>(a, b, c); }
WK_DEV wk_f32x4 wk_mfma_f32_16x16x16bf16_1k(uint64_t a, uint64_t b, wk_f32x4 c) { return wk_mfma_soft_<true>(a, b, c); }
#endif
#endif /* !WK_GPU_RTC */

/* ------------------------------------------------------------------ */
/* Programmatic dependent launch (NVIDIA sm_90 and later)              */

/* A kernel launched by WK_LAUNCH_PDL may be started by the device before
 * the kernel ahead of it on the stream has finished (its blocks placed as
 * the other's leave, instead of after the whole grid has drained and the
 * next launch has been processed): it must call wk_pdl_wait() before its
 * first access to memory that earlier work writes or reads, which waits
 * until that work is complete and its writes visible, then lets the
 * next such launch be scheduled (its blocks wait in their own
 * wk_pdl_wait until this grid completes). A no-op where the
 * launch did not ask for it, before sm_90 and on AMD (where
 * WK_LAUNCH_PDL is a plain launch). In a recorded graph the dependency
 * is kept (a programmatic edge). A decode step is ~10 small kernels a
 * layer back to back, where this gap is a good part of each. */
WK_DEV void wk_pdl_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    /* and let the next PDL launch be scheduled now: its blocks wait in
       their own wk_pdl_wait until this grid is complete, so this is
       always safe; it lets the launch overlap this kernel's run */
    asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

/* ------------------------------------------------------------------ */
/* Launches where the host's time per launch counts                    */

/* WK_LAUNCH_LIGHT(kernel, grid, block, stream, args...): kernel<<<grid,
 * block, 0, stream>>>(args...), for the small kernels of chains of small
 * dependent ops, where the host's time per launch is what each op costs.
 * On CUDA it goes through the driver's cuLaunchKernel (found at run time
 * with cudaGetDriverEntryPointByVersion, so the plugin links no driver
 * library; each kernel's handle from cudaGetFuncBySymbol, looked up once),
 * which spends less host time per launch than the runtime's <<<>>>; if a
 * lookup or the launch fails it falls back to <<<>>>, which then reports
 * through the runtime's last error as every launch does. HIP: <<<>>>. */
#if defined(WK_GPU_RTC)
/* (host code: not in kernels compiled at run time) */
#elif defined(WK_GPU_CUDA)
#include <tuple>
#include <utility>
typedef int (*wk_cu_launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shmem, void *stream, void **params, void **extra);
static inline wk_cu_launch_fn wk_cu_launch(void)
{
    static const wk_cu_launch_fn fn = [] {
        void *p = NULL;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuLaunchKernel", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess)
            p = NULL;
        (void)cudaGetLastError();
        return (wk_cu_launch_fn)p;
    }();
    return fn;
}
template <auto K> static inline void *wk_cu_function(void)
{
    static void *const f = [] {
        cudaFunction_t h = NULL;
        if (cudaGetFuncBySymbol(&h, (const void *)K) != cudaSuccess) h = NULL;
        (void)cudaGetLastError();
        return (void *)h;
    }();
    return f;
}
template <auto K, typename... P, typename... A, size_t... I>
static inline void wk_launch_light_(void (*)(P...), std::index_sequence<I...>, dim3 g, dim3 b, cudaStream_t s,
                                    A... args)
{
    std::tuple<P...> t(args...);                 /* each argument as its parameter's type */
    void *params[sizeof...(P) > 0 ? sizeof...(P) : 1] = { (void *)&std::get<I>(t)... };
    const wk_cu_launch_fn launch = wk_cu_launch();
    void *f = wk_cu_function<K>();
    if (launch && f && launch(f, g.x, g.y, g.z, b.x, b.y, b.z, 0, (void *)s, params, NULL) == 0) return;
    K<<<g, b, 0, s>>>(args...);
}
#define WK_LAUNCH_LIGHT(kernel, grid, block, stream, ...)                    \
    wk_launch_light_<kernel>(kernel, std::make_index_sequence<wk_nparams_(kernel)>(), dim3(grid), dim3(block), \
                             stream, __VA_ARGS__)
template <typename... P> constexpr size_t wk_nparams_(void (*)(P...)) { return sizeof...(P); }
/* WK_LAUNCH_PDL(on, kernel, grid, block, smem, stream, args...): kernel
 * launched for programmatic dependent launch (above) when `on` (the
 * device is sm_90 or later) and WICK_GPU_PDL is not 0 (wk_gpu_env_pdl:
 * the knob as the plugin last read it, gpu_env.h); else, or if that
 * launch fails, <<<>>>. The kernel calls wk_pdl_wait() first. */
bool wk_gpu_env_pdl(void);
template <typename... P, typename... A>
static inline void wk_launch_pdl_(bool on, void (*k)(P...), dim3 g, dim3 b, size_t smem, cudaStream_t s, A... args)
{
    if (on && wk_gpu_env_pdl()) {
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at[0].val.programmaticStreamSerializationAllowed = 1;
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = g, cfg.blockDim = b, cfg.dynamicSmemBytes = smem, cfg.stream = s, cfg.attrs = at, cfg.numAttrs = 1;
        if (cudaLaunchKernelEx(&cfg, k, ((P)args)...) == cudaSuccess) return;
        (void)cudaGetLastError();
    }
    k<<<g, b, smem, s>>>(args...);
}
#define WK_LAUNCH_PDL(on, kernel, grid, block, smem, stream, ...)            \
    wk_launch_pdl_((on), kernel, dim3(grid), dim3(block), (size_t)(smem), (stream), __VA_ARGS__)
#else
#define WK_LAUNCH_LIGHT(kernel, grid, block, stream, ...) kernel<<<(grid), (block), 0, (stream)>>>(__VA_ARGS__)
#define WK_LAUNCH_PDL(on, kernel, grid, block, smem, stream, ...)            \
    ((void)(on), kernel<<<(grid), (block), (smem), (stream)>>>(__VA_ARGS__))
#endif

#endif /* WICK_GPU_COMPAT_H */
