/* gpu_internal.h — what the files of the GPU backend share: the device
 * context, error checking, the caching allocator's interface, typed
 * element load/store/convert for device code, strided index arithmetic
 * (64-bit), dtype dispatch, launch-size helpers and the entry points the
 * vtable (runtime.hip) points at.
 *
 * File map of src/gpu/ (one source for AMD and NVIDIA; see compat.h):
 *   compat.h          HIP <-> CUDA names, warp primitives, virtual wave64
 *   gpu_entry.h       the op entry points (C linkage)
 *   stubs.c           weak stand-ins for entry points not yet written
 *   runtime.hip       devices, contexts, vtable + entry point, alloc/free,
 *                     read/write/copy_peer, synchronize, supports()
 *   allocator.hip     caching stream-ordered allocator, host transfers
 *                     (pinned staging), pinned host memory
 *   event.hip         events (wk_event_*) on the context's stream
 *   elementwise.hip   unary (incl. affine/powf/elu), binary, cmp, where
 *   copy.hip          strided copy with dtype conversion, copy2d, const_set
 *   random.hip        rand_uniform / rand_normal (src/core/philox.h)
 *   reduce.hip        sum/min/max/argmin/argmax
 *   matmul.hip        batched strided matmul
 *   index.hip         index_select, gather, scatter, index_add
 *
 * Build note: the ROCm plugin is compiled as ONE translation unit that
 * includes every .hip file of src/gpu/ (so each gfx target gets one code object
 * holding every kernel, which tools/check-hip-kernels verifies); the CUDA
 * plugin compiles the files separately. Names local to a file (static
 * functions, kernels, types) must therefore be unique across src/gpu/:
 * give them the file's prefix (ew_, cp_, rnd_, red_, mm_, ix_, ...).
 *
 * Streams: each context owns one stream and every op of the context runs
 * on it, in call order. Device memory freed to the allocator is reused by
 * later work on that same stream only, so freeing a buffer (scratch
 * included) right after launching the kernels that use it is safe.
 */
#ifndef WICK_GPU_INTERNAL_H
#define WICK_GPU_INTERNAL_H

#include "compat.h"             /* first: defines __HIPCC__ / __CUDACC__ */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <type_traits>
#include "../backend.h"
#include "../core/scalar.h"
#include "gpu_entry.h"          /* the op entry points (C linkage) */

/* ------------------------------------------------------------------ */
/* Context                                                             */

/* Per-context state of other files (kept opaque here), freed at close. */
enum { WK_GPU_EXT_BLAS = 0, WK_GPU_EXT_INDEX = 1, WK_GPU_EXT_SLOTS = 4 };   /* matmul.hip, index.hip */

struct wk_gpu_pool;       /* allocator.hip */
struct wk_gpu_staging;    /* allocator.hip */

typedef struct wk_gpu_ctx {
    int device;                  /* runtime device index                  */
    hipStream_t stream;          /* every op of this context runs here    */
    int warp_size;               /* 32 or 64: picks the W instantiation
                                    (64 in the virtual-wave64 build)      */
    int hw_warp_size;            /* what the hardware reports             */
    int sm_count;                /* multiprocessors / compute units       */
    int max_threads_per_block;
    int max_threads_per_sm;
    int stream_block;            /* threads per streaming-kernel block    */
    size_t shared_per_block;     /* bytes of static+dynamic shared memory */
    size_t l2_bytes;
    int cc_major, cc_minor;      /* NVIDIA compute capability (0 on AMD)  */
    char arch[64];               /* "sm_90", "gfx90a", ...                */
    char model[128];
    int sync_launches;           /* WICK_GPU_SYNC=1: sync after launches  */
    int multi_device;            /* the process sees more than one device */
    const char *last_op;         /* op of the last launch, for errors that
                                    surface later: a string constant (the
                                    core's op name, else the kernel's);
                                    NULL before the first. Any thread may
                                    launch: read and written atomically  */
    struct wk_gpu_pool *pool;
    struct wk_gpu_staging *staging;
    void *ext[WK_GPU_EXT_SLOTS];
    void (*ext_free[WK_GPU_EXT_SLOTS])(struct wk_gpu_ctx *c, void *state);
} wk_gpu_ctx;

/* ------------------------------------------------------------------ */
/* Errors                                                              */

/* Report a failed runtime call: "<call> failed: <name>: <text> (file:line)"
 * plus the last launched op when the error may be a late kernel fault.
 * Returns WK_ERR_BACKEND (WK_ERR_MEMORY for out-of-memory). */
wk_status wk_gpu_fail(wk_gpu_ctx *c, hipError_t err, const char *call, const char *file, int line);
/* Same for a library call (BLAS) whose status is not a hipError_t. */
wk_status wk_gpu_fail_lib(const char *call, const char *what, long code, const char *file, int line);

/* Check a HIP/CUDA call; on failure report it and return its status from
 * the calling function. WK_GPU_CHECK_C also names the context, so that
 * the message carries the last launched op (for syncs and copies, where
 * an earlier kernel's fault surfaces). */
#define WK_GPU_CHECK(call)                                                   \
    do {                                                                     \
        hipError_t wk_e_ = (call);                                           \
        if (wk_e_ != hipSuccess) return wk_gpu_fail(NULL, wk_e_, #call, __FILE__, __LINE__); \
    } while (0)
#define WK_GPU_CHECK_C(c, call)                                              \
    do {                                                                     \
        hipError_t wk_e_ = (call);                                           \
        if (wk_e_ != hipSuccess) return wk_gpu_fail((c), wk_e_, #call, __FILE__, __LINE__); \
    } while (0)
/* For cleanup paths: run call only while st is WK_OK; record a failure. */
#define WK_GPU_TRY(st, call)                                                 \
    do {                                                                     \
        if ((st) == WK_OK) {                                                 \
            hipError_t wk_e_ = (call);                                       \
            if (wk_e_ != hipSuccess) (st) = wk_gpu_fail(NULL, wk_e_, #call, __FILE__, __LINE__); \
        }                                                                    \
    } while (0)

/* After every kernel launch: catches bad launch configurations at once
 * (and, with WICK_GPU_SYNC=1, faults, by synchronizing); remembers the
 * op for errors that surface at a later sync. `what` names the kernel. */
wk_status wk_gpu_launched(wk_gpu_ctx *c, const char *what, const char *file, int line);
#define WK_GPU_LAUNCH_CHECK(c, what)                                         \
    do {                                                                     \
        wk_status wk_s_ = wk_gpu_launched((c), (what), __FILE__, __LINE__); \
        if (wk_s_ != WK_OK) return wk_s_;                                    \
    } while (0)

/* Make c's device current on this thread: every entry point that calls
 * the runtime, first. The current device belongs to the thread, and the
 * caller or another library may change it between wick's calls, so it is
 * checked at every entry, never remembered: in a process that sees one
 * device no other can be current (no call at all); with several,
 * hipGetDevice, and hipSetDevice only when another device is current.
 * wick works in each device's primary context (the runtime's): a thread
 * that made another context current through the driver API gets launch
 * errors until it makes the primary one current again. */
wk_status wk_gpu_enter(wk_gpu_ctx *c);
#define WK_GPU_ENTER(c)                                                      \
    do {                                                                     \
        if ((c)->multi_device) {                                             \
            wk_status wk_s_ = wk_gpu_enter(c);                               \
            if (wk_s_ != WK_OK) return wk_s_;                                \
        }                                                                    \
    } while (0)

/* ------------------------------------------------------------------ */
/* Memory (allocator.hip)                                              */

/* Device memory from the context's cache (size-classed; blocks freed
 * earlier on this stream are reused). On out-of-memory the cache is
 * emptied and the allocation retried once; then WK_ERR_MEMORY. bytes == 0
 * gives NULL. Alignment: 256 bytes. */
wk_status wk_gpu_mem_alloc(wk_gpu_ctx *c, size_t bytes, void **ptr);
/* Return a block to the cache (stream-ordered: later work may reuse it). */
void wk_gpu_mem_free(wk_gpu_ctx *c, void *ptr);
/* Give every cached free block back to the runtime. */
wk_status wk_gpu_mem_trim(wk_gpu_ctx *c);
/* Bytes held in the cache, free for reuse. */
uint64_t wk_gpu_mem_cached(wk_gpu_ctx *c);
wk_status wk_gpu_pool_create(wk_gpu_ctx *c);
void wk_gpu_pool_destroy(wk_gpu_ctx *c);

/* Scratch for an op: the same memory, named for intent. Free it right
 * after the launches that use it (see "Streams" above). */
static inline wk_status wk_gpu_scratch_alloc(wk_gpu_ctx *c, size_t bytes, void **ptr)
{
    return wk_gpu_mem_alloc(c, bytes, ptr);
}
static inline void wk_gpu_scratch_free(wk_gpu_ctx *c, void *ptr) { wk_gpu_mem_free(c, ptr); }

/* Host transfers through pinned staging buffers: write returns once the
 * host data is copied out; read waits for the data (allocator.hip). A
 * host range inside a block of wk_gpu_host_alloc is copied directly. */
wk_status wk_gpu_write(void *ctx, void *dst, const void *host, size_t bytes);
wk_status wk_gpu_read(void *ctx, void *host, const void *src, size_t bytes);
void wk_gpu_staging_destroy(wk_gpu_ctx *c);

/* ------------------------------------------------------------------ */
/* Element types for device code                                       */

/* Storage types: narrow floats are bit patterns in distinct structs so
 * that templates tell f16 from bf16. */
struct wk_bf16_t { uint16_t bits; };
struct wk_f16_t { uint16_t bits; };
struct wk_f8_t { uint8_t bits; };

/* Traits: C is the compute type (f32 for narrow floats, else itself). */
template <typename T> struct wk_type;
#define WK_GPU_TYPE_(T_, C_, ID_, FLOAT_, NARROW_, SIGNED_)                  \
    template <> struct wk_type<T_> {                                         \
        typedef C_ C;                                                        \
        static constexpr wk_dtype id = ID_;                                  \
        static constexpr bool is_float = FLOAT_;                             \
        static constexpr bool is_narrow = NARROW_;                           \
        static constexpr bool is_signed = SIGNED_;                           \
    };
WK_GPU_TYPE_(uint8_t, uint8_t, WK_U8, false, false, false)
WK_GPU_TYPE_(uint32_t, uint32_t, WK_U32, false, false, false)
WK_GPU_TYPE_(int16_t, int16_t, WK_I16, false, false, true)
WK_GPU_TYPE_(int32_t, int32_t, WK_I32, false, false, true)
WK_GPU_TYPE_(int64_t, int64_t, WK_I64, false, false, true)
WK_GPU_TYPE_(wk_bf16_t, float, WK_BF16, true, true, true)
WK_GPU_TYPE_(wk_f16_t, float, WK_F16, true, true, true)
WK_GPU_TYPE_(float, float, WK_F32, true, false, true)
WK_GPU_TYPE_(double, double, WK_F64, true, false, true)
WK_GPU_TYPE_(wk_f8_t, float, WK_F8E4M3, true, true, true)
#undef WK_GPU_TYPE_

/* ---- f32 <-> f16 / f8e4m3 on the device ---------------------------- */
/* Same results as scalar.h, in fewer instructions: f16 through the
 * hardware conversions (exact widening; IEEE round to nearest even, with
 * subnormals) except NaN, which takes scalar.h's path so its bits match;
 * f32 -> f8e4m3 by an f32-only routine (scalar.h goes through f64). The
 * host side of each is scalar.h itself. */

/* NaN as scalar.h converts it (payload kept f16 -> f32; f32 -> f16 gives
 * the quiet NaN 0x7E00 with the sign). */
WK_HD float wk_f16_nan_(uint16_t h)
{
    return wk_bits_f32(((uint32_t)(h & 0x8000u) << 16) | 0x7F800000u | ((uint32_t)(h & 0x3FFu) << 13));
}
WK_HD uint16_t wk_f32_nan_f16_(float f) { return (uint16_t)(((wk_f32_bits(f) >> 16) & 0x8000u) | 0x7E00u); }

WK_HD float wk_fast_f16_to_f32(uint16_t h)
{
#if defined(__CUDA_ARCH__)
    if ((h & 0x7FFFu) > 0x7C00u) return wk_f16_nan_(h);
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
#elif defined(__HIP_DEVICE_COMPILE__)
    if ((h & 0x7FFFu) > 0x7C00u) return wk_f16_nan_(h);
    _Float16 v;
    memcpy(&v, &h, 2);
    return (float)v;
#else
    return wk_f16_to_f32(h);
#endif
}

WK_HD uint16_t wk_fast_f32_to_f16(float f)
{
#if defined(__CUDA_ARCH__)
    if (f != f) return wk_f32_nan_f16_(f);
    uint16_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#elif defined(__HIP_DEVICE_COMPILE__)
    if (f != f) return wk_f32_nan_f16_(f);
    _Float16 v = (_Float16)f;
    uint16_t h;
    memcpy(&h, &v, 2);
    return h;
#else
    return wk_f32_to_f16(f);
#endif
}

/* f32 -> bf16, round to nearest even, NaN as scalar.h (quieted, payload
 * kept). WK_GPU_HW_BF16 picks how NVIDIA sm_80+ rounds (AMD always takes
 * the integer sequence; every choice gives the same bits, NaN always
 * takes the integer path):
 *   0  the integer sequence everywhere;
 *   1  one cvt.rn.bf16.f32 per element: 4-8% slower bf16 streaming
 *      kernels than 0 on an H200;
 *   2  (default) the integer sequence per element, and one
 *      cvt.rn.bf16x2.f32 per pair where a kernel rounds pairs
 *      (wk_fast_f32x2_to_bf16x2: the unary kernels): silu and gelu bf16
 *      10% faster than 0, the others unchanged (bench/TUNING-gpu.md). */
#ifndef WK_GPU_HW_BF16
#define WK_GPU_HW_BF16 2
#endif
WK_HD uint16_t wk_fast_f32_to_bf16(float f)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && WK_GPU_HW_BF16 == 1
    if (f != f) return wk_f32_to_bf16(f);
    uint16_t h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    return wk_f32_to_bf16(f);
#endif
}

/* Two f32 -> two bf16 (lo at the lower address), as wk_fast_f32_to_bf16
 * each; with WK_GPU_HW_BF16 == 2 NVIDIA sm_80+ rounds both with one
 * cvt.rn.bf16x2.f32. */
WK_HD void wk_fast_f32x2_to_bf16x2(float lo, float hi, wk_bf16_t *out)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && WK_GPU_HW_BF16 == 2
    if (lo == lo && hi == hi) {
        uint32_t r;
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
        out[0].bits = (uint16_t)(r & 0xFFFFu);
        out[1].bits = (uint16_t)(r >> 16);
        return;
    }
#endif
    out[0].bits = wk_f32_to_bf16(lo);
    out[1].bits = wk_f32_to_bf16(hi);
}

/* OCP E4M3FN from f32, round to nearest even, |x| >= 448 and Inf -> 448,
 * NaN -> 0x7F with the sign (as scalar.h). */
WK_HD uint8_t wk_fast_f32_to_f8e4m3(float f)
{
    uint32_t u = wk_f32_bits(f);
    uint32_t sign = (u >> 24) & 0x80u, a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (uint8_t)(sign | 0x7Fu);          /* NaN           */
    if (a >= 0x43E00000u) return (uint8_t)(sign | 0x7Eu);         /* >= 448: 448   */
    if (a >= 0x3C800000u) {                                        /* >= 2^-6: normal */
        a += 0x7FFFFu + ((a >> 20) & 1u);                          /* round at bit 20 */
        return (uint8_t)(sign | ((a >> 20) - (120u << 3)));
    }
    /* subnormal: m * 2^-9, m = 0..8 (8 is the smallest normal, 0x08) */
    float q = rintf(wk_bits_f32(a) * 512.0f);
    return (uint8_t)(sign | (uint32_t)q);
}

/* f8e4m3 -> f32: the 7 magnitude bits placed at f32 bit 20 read as an f32
 * (a subnormal one when the f8 exponent is 0) times 2^120 is the value
 * exactly; 0x7F is NaN. Needs f32 subnormals (wick never builds with
 * flush-to-zero). */
WK_HD float wk_fast_f8e4m3_to_f32(uint8_t b)
{
    uint32_t a = b & 0x7Fu;
    float f = wk_bits_f32(a << 20) * 1.329227995784915872903807060280344576e36f;   /* 2^120 */
    uint32_t r = a == 0x7Fu ? 0x7FC00000u : wk_f32_bits(f);
    return wk_bits_f32(r | ((uint32_t)(b & 0x80u) << 24));
}

/* Storage -> compute type (exact). */
WK_HD float wk_load_c(wk_bf16_t x) { return wk_bf16_to_f32(x.bits); }
WK_HD float wk_load_c(wk_f16_t x) { return wk_fast_f16_to_f32(x.bits); }
WK_HD float wk_load_c(wk_f8_t x) { return wk_fast_f8e4m3_to_f32(x.bits); }
template <typename T> WK_HD T wk_load_c(T x) { return x; }

/* ---- conversion to D from an exact value (integer or float) -------- */
/* wk_to<D>(v): the cast rules of docs: integer -> integer wraps; float ->
 * integer truncates, saturates, NaN -> 0; anything -> narrow float rounds
 * to nearest even in one rounding; -> f32/f64 one rounding. */

template <typename D> struct wk_to_;

template <> struct wk_to_<double> {
    template <typename V> static WK_HD double from(V v) { return (double)v; }
};
template <> struct wk_to_<float> {
    template <typename V> static WK_HD float from(V v) { return (float)v; }
};

#define WK_GPU_TO_INT_(D_, F64_)                                             \
    template <> struct wk_to_<D_> {                                          \
        static WK_HD D_ from(float v) { return F64_((double)v); }            \
        static WK_HD D_ from(double v) { return F64_(v); }                   \
        template <typename V> static WK_HD D_ from(V v)                      \
        {                                                                    \
            static_assert(std::is_integral<V>::value, "integer source");     \
            return (D_)(std::make_unsigned<D_>::type)v;                      \
        }                                                                    \
    };
WK_GPU_TO_INT_(uint8_t, wk_f64_to_u8)
WK_GPU_TO_INT_(uint32_t, wk_f64_to_u32)
WK_GPU_TO_INT_(int16_t, wk_f64_to_i16)
WK_GPU_TO_INT_(int32_t, wk_f64_to_i32)
WK_GPU_TO_INT_(int64_t, wk_f64_to_i64)
#undef WK_GPU_TO_INT_

/* narrow: FMT_ is the scalar.h format; F32_ the fast f32 path */
#define WK_GPU_TO_NARROW_(D_, FMT_, F32_)                                    \
    template <> struct wk_to_<D_> {                                          \
        static WK_HD D_ from(float v) { D_ r; r.bits = F32_(v); return r; }  \
        static WK_HD D_ from(double v)                                       \
        { D_ r; r.bits = (decltype(r.bits))wk_f64_to_narrow(FMT_, v); return r; } \
        template <typename V> static WK_HD D_ from(V v)                      \
        {                                                                    \
            static_assert(std::is_integral<V>::value, "integer source");     \
            D_ r;                                                            \
            if (sizeof(V) <= 2) r.bits = F32_((float)v); /* exact in f32 */  \
            else if (std::is_signed<V>::value)                               \
                r.bits = (decltype(r.bits))wk_i64_to_narrow(FMT_, (int64_t)v); \
            else r.bits = (decltype(r.bits))wk_u64_to_narrow(FMT_, (uint64_t)v); \
            return r;                                                        \
        }                                                                    \
    };
WK_GPU_TO_NARROW_(wk_bf16_t, WK_NARROW_BF16, wk_fast_f32_to_bf16)
WK_GPU_TO_NARROW_(wk_f16_t, WK_NARROW_F16, wk_fast_f32_to_f16)
WK_GPU_TO_NARROW_(wk_f8_t, WK_NARROW_F8E4M3, wk_fast_f32_to_f8e4m3)
#undef WK_GPU_TO_NARROW_

/* Compute value -> storage type D (wk_to<wk_bf16_t>(1.5f), ...). */
template <typename D, typename V> WK_HD D wk_to(V v) { return wk_to_<D>::from(v); }

/* Storage S -> storage D with the cast rules (copy/to_dtype). */
template <typename D, typename S> WK_HD D wk_cast(S s)
{
    if constexpr (std::is_same<D, S>::value) return s;
    else return wk_to<D>(wk_load_c(s));
}

/* N elements of T as one aligned unit, for wide (16-byte) loads and
 * stores on contiguous data: wk_vec<float, 4>, wk_vec<wk_bf16_t, 8>. */
template <typename T, int N> struct alignas(sizeof(T) * N) wk_vec {
    T v[N];
};

/* Elements per 16-byte unit of the widest of the types:
 * wk_vec_width<float, uint8_t> == 4. */
template <typename... T> struct wk_maxsize_;
template <typename T> struct wk_maxsize_<T> { static constexpr size_t v = sizeof(T); };
template <typename T, typename... R> struct wk_maxsize_<T, R...> {
    static constexpr size_t v = sizeof(T) > wk_maxsize_<R...>::v ? sizeof(T) : wk_maxsize_<R...>::v;
};
template <typename... T> constexpr int wk_vec_width = (int)(16 / wk_maxsize_<T...>::v);

/* true when p is a multiple of `bytes` (a power of two) */
static inline bool wk_gpu_aligned(const void *p, size_t bytes)
{
    return ((uintptr_t)p & (bytes - 1)) == 0;
}

/* ------------------------------------------------------------------ */
/* Strided index arithmetic                                            */

/* n / d for n, d < 2^32 by multiply-high: q = (mulhi(n, m) + n) >> s with
 * s = ceil(log2 d), m = floor(2^32 (2^s - d) / d) + 1 (exact for every
 * n < 2^32; the sum is taken in 64 bits). */
struct wk_divmod32 {
    uint32_t d, m, s;
};
static inline wk_divmod32 wk_divmod32_make(uint32_t d)
{
    wk_divmod32 r;
    uint32_t s = 0;
    while (s < 32 && ((uint64_t)1 << s) < d) s++;
    r.d = d;
    r.s = s;
    r.m = (uint32_t)((((uint64_t)1 << 32) * (((uint64_t)1 << s) - d)) / d + 1);
    return r;
}
WK_DEV uint32_t wk_divmod32_div(wk_divmod32 dm, uint32_t n)
{
    return (uint32_t)(((uint64_t)__umulhi(n, dm.m) + n) >> dm.s);
}

/* The dims of one elementwise launch (shared by its operands), innermost
 * last, with fast dividers for launches under 2^32 elements. */
struct wk_gpu_dims {
    int rank;
    int64_t n;                           /* elements                 */
    int64_t dims[WK_MAX_RANK];
    wk_divmod32 div[WK_MAX_RANK];
};

/* N operands' element offsets (storage base + offset + sum i_d st_d). */
template <int N> struct wk_gpu_layout {
    wk_gpu_dims d;
    int64_t off[N];
    int64_t st[N][WK_MAX_RANK];
};

/* 64-bit division out of line: its long instruction sequence once per
 * kernel, not once per dim and op (only launches over 2^32 elements). */
__device__ __noinline__ static int64_t wk_div64(int64_t a, int64_t b) { return a / b; }

/* Offsets of linear (row-major) element i in each operand. */
template <int N> WK_DEV void wk_gpu_offsets(const wk_gpu_layout<N> &L, int64_t i, int64_t (&o)[N])
{
    for (int k = 0; k < N; k++) o[k] = L.off[k];
    if (L.d.n <= (int64_t)UINT32_MAX) {
        uint32_t r = (uint32_t)i;
        for (int d = L.d.rank - 1; d >= 0; d--) {
            uint32_t q = wk_divmod32_div(L.d.div[d], r);
            int64_t idx = (int64_t)(r - q * L.d.div[d].d);
            for (int k = 0; k < N; k++) o[k] += idx * L.st[k][d];
            r = q;
        }
    } else {
        for (int d = L.d.rank - 1; d >= 0; d--) {
            int64_t q = wk_div64(i, L.d.dims[d]);
            int64_t idx = i - q * L.d.dims[d];
            for (int k = 0; k < N; k++) o[k] += idx * L.st[k][d];
            i = q;
        }
    }
}

/* Host: layout of N views sharing views[0]'s dims; size-1 dims dropped
 * and dims merged where every operand allows. Returns the element count. */
template <int N> static inline int64_t wk_gpu_layout_make(wk_gpu_layout<N> *L, const wk_view *const *v)
{
    int r = 0;
    int64_t n = 1;
    int64_t dims[WK_MAX_RANK], st[N][WK_MAX_RANK];
    for (int d = 0; d < v[0]->rank; d++) {
        int64_t e = v[0]->dims[d];
        n *= e;
        if (e == 1) continue;
        bool merge = r > 0;
        for (int k = 0; k < N && merge; k++)
            if (st[k][r - 1] != v[k]->strides[d] * e) merge = false;
        if (merge) {
            dims[r - 1] *= e;
            for (int k = 0; k < N; k++) st[k][r - 1] = v[k]->strides[d];
        } else {
            dims[r] = e;
            for (int k = 0; k < N; k++) st[k][r] = v[k]->strides[d];
            r++;
        }
    }
    memset(L, 0, sizeof *L);
    L->d.rank = r;
    L->d.n = n;
    for (int d = 0; d < r; d++) {
        L->d.dims[d] = dims[d];
        L->d.div[d] = wk_divmod32_make(dims[d] <= (int64_t)UINT32_MAX ? (uint32_t)dims[d] : 1u);
        for (int k = 0; k < N; k++) L->st[k][d] = st[k][d];
    }
    for (int k = 0; k < N; k++) L->off[k] = v[k]->offset;
    return n;
}

static inline int64_t wk_gpu_numel(const wk_view *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->rank; d++) n *= v->dims[d];
    return n;
}

/* true when the view's elements are dense in row-major order */
static inline bool wk_gpu_is_contiguous(const wk_view *v)
{
    int64_t s = 1;
    for (int d = v->rank - 1; d >= 0; d--) {
        if (v->dims[d] != 1 && v->strides[d] != s) return false;
        s *= v->dims[d];
    }
    return true;
}

static inline size_t wk_gpu_dtype_size(wk_dtype dt)
{
    static const unsigned char sz[WK_DTYPE_COUNT] = { 1, 4, 2, 4, 8, 2, 2, 4, 8, 1 };
    return (unsigned)dt < WK_DTYPE_COUNT ? sz[dt] : 0;
}

static inline const char *wk_gpu_dtype_name(wk_dtype dt)
{
    static const char *const nm[WK_DTYPE_COUNT] = { "u8", "u32", "i16", "i32", "i64",
                                                    "bf16", "f16", "f32", "f64", "f8e4m3" };
    return (unsigned)dt < WK_DTYPE_COUNT ? nm[dt] : "?";
}

/* Address of element 0 of a view (base + offset elements). */
static inline char *wk_gpu_view_ptr(const wk_view *v)
{
    return (char *)v->base + v->offset * (int64_t)wk_gpu_dtype_size(v->dtype);
}

/* ------------------------------------------------------------------ */
/* dtype dispatch (host): run BODY with T the storage type of dt.      */

#define WK_GPU_CASE_(ID_, TY_, T, ...) case ID_: { typedef TY_ T; __VA_ARGS__; } break;
#define WK_GPU_DISPATCH_ALL(dt, T, ...)                                      \
    switch (dt) {                                                            \
    WK_GPU_CASE_(WK_U8, uint8_t, T, __VA_ARGS__)                             \
    WK_GPU_CASE_(WK_U32, uint32_t, T, __VA_ARGS__)                           \
    WK_GPU_CASE_(WK_I16, int16_t, T, __VA_ARGS__)                            \
    WK_GPU_CASE_(WK_I32, int32_t, T, __VA_ARGS__)                            \
    WK_GPU_CASE_(WK_I64, int64_t, T, __VA_ARGS__)                            \
    WK_GPU_CASE_(WK_BF16, wk_bf16_t, T, __VA_ARGS__)                         \
    WK_GPU_CASE_(WK_F16, wk_f16_t, T, __VA_ARGS__)                           \
    WK_GPU_CASE_(WK_F32, float, T, __VA_ARGS__)                              \
    WK_GPU_CASE_(WK_F64, double, T, __VA_ARGS__)                             \
    WK_GPU_CASE_(WK_F8E4M3, wk_f8_t, T, __VA_ARGS__)                         \
    default: break;                                                          \
    }
#define WK_GPU_DISPATCH_FLOAT(dt, T, ...)                                    \
    switch (dt) {                                                            \
    WK_GPU_CASE_(WK_BF16, wk_bf16_t, T, __VA_ARGS__)                         \
    WK_GPU_CASE_(WK_F16, wk_f16_t, T, __VA_ARGS__)                           \
    WK_GPU_CASE_(WK_F32, float, T, __VA_ARGS__)                              \
    WK_GPU_CASE_(WK_F64, double, T, __VA_ARGS__)                             \
    WK_GPU_CASE_(WK_F8E4M3, wk_f8_t, T, __VA_ARGS__)                         \
    default: break;                                                          \
    }
/* By element size only (pure data movement): T is uintN_t. */
#define WK_GPU_DISPATCH_SIZE(bytes, T, ...)                                  \
    switch (bytes) {                                                         \
    WK_GPU_CASE_(1, uint8_t, T, __VA_ARGS__)                                 \
    WK_GPU_CASE_(2, uint16_t, T, __VA_ARGS__)                                \
    WK_GPU_CASE_(4, uint32_t, T, __VA_ARGS__)                                \
    WK_GPU_CASE_(8, uint64_t, T, __VA_ARGS__)                                \
    default: break;                                                          \
    }

/* ------------------------------------------------------------------ */
/* Launch sizes                                                        */

/* Threads per block of the elementwise kernels: 8 warps (256 on wave32,
 * 512 on wave64), so the wave64 paths run with wave64 shapes. */
static inline int wk_gpu_ew_block(const wk_gpu_ctx *c) { return 8 * c->warp_size; }

/* Threads per block of the streaming kernels (wk_gpu_stream), which use
 * no warp-level operations: 128 (the best of 128, 256 and 512 for every
 * case of bench/tune_stream.sh on an H200); the environment variable
 * WICK_GPU_STREAM_BLOCK (a multiple of the warp size, at most
 * WK_GPU_EW_MAX_BLOCK) overrides it for tuning runs. Kernels launched
 * with either size declare __launch_bounds__(WK_GPU_EW_MAX_BLOCK), so
 * that no build (wave64 included) compiles them for more registers per
 * thread than a launch of that size can hold. */
#define WK_GPU_EW_MAX_BLOCK 512
static inline int wk_gpu_stream_block(const wk_gpu_ctx *c) { return c->stream_block; }

/* Blocks for `items` work items of `block` threads each, grid-striding
 * beyond `waves` full waves of the device. */
static inline unsigned wk_gpu_grid(const wk_gpu_ctx *c, int64_t items, int block, int waves)
{
    int64_t per_sm = c->max_threads_per_sm > 0 ? c->max_threads_per_sm / block : 1;
    if (per_sm < 1) per_sm = 1;
    int64_t cap = (int64_t)c->sm_count * per_sm * waves;
    int64_t b = (items + block - 1) / block;
    if (b > cap) b = cap;
    if (b < 1) b = 1;
    return (unsigned)b;
}

/* Grid-stride loop over [0, n) with 64-bit indices (not unrolled: one
 * copy of the body per kernel). */
#define WK_GPU_FOR(i, n)                                                     \
    _Pragma("unroll 1")                                                      \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (int64_t)gridDim.x * blockDim.x)

/* Streaming kernels (elementwise, casts): each block owns tiles of
 * U x blockDim consecutive units (16-byte vectors on the
 * fast paths); a thread issues all U loads of its tile (units blockDim
 * apart, so every load instruction of a warp is coalesced) before it
 * computes and stores any, which keeps U x 16 bytes per thread in flight.
 * The grid covers the whole range in one pass when it can
 * (wk_gpu_stream_grid) and strides over tiles beyond that.
 *   load(i)      -> the unit's input (any copyable type)
 *   store(i, x)  computes and writes unit i
 * The body of store is unrolled U times: keep U small for heavy math. */
/* Units per thread (measured with bench/tune_stream.sh on an H200, where
 * both rules beat the other choices by 1-10%): kernels whose operands
 * are all 4 bytes or wider stream best one 16-byte unit per thread
 * (WK_GPU_STREAM_WIDE_U); narrower ones (bf16, f16, u8, casts to them)
 * want WK_GPU_STREAM_NARROW_BYTES (32; 64 was best before bf16 results
 * were rounded in pairs) of the narrow operand in flight per thread,
 * within WK_GPU_STREAM_ELEMS elements (the body is unrolled
 * U x v times). v: elements per unit; min_size: bytes of the narrowest
 * operand. Host and kernel use the same value, so the grid covers the
 * range once. The -D overrides are for tuning builds. */
#ifndef WK_GPU_STREAM_WIDE_U
#define WK_GPU_STREAM_WIDE_U 1
#endif
#ifndef WK_GPU_STREAM_NARROW_BYTES
#define WK_GPU_STREAM_NARROW_BYTES 32
#endif
#ifndef WK_GPU_STREAM_ELEMS
#define WK_GPU_STREAM_ELEMS 32
#endif
__host__ __device__ constexpr int wk_gpu_stream_units(int v, int min_size, int max_elems = WK_GPU_STREAM_ELEMS)
{
    if (min_size >= 4) return WK_GPU_STREAM_WIDE_U;
    int u = WK_GPU_STREAM_NARROW_BYTES / (v * min_size);
    if (u > max_elems / v) u = max_elems / v;
    return u < 1 ? 1 : u;
}
/* the choices bench/TUNING-gpu.md measured (checked in default builds;
 * tuning builds override the knobs) */
#if WK_GPU_STREAM_WIDE_U == 1 && WK_GPU_STREAM_NARROW_BYTES == 32 && WK_GPU_STREAM_ELEMS == 32
static_assert(wk_gpu_stream_units(4, 4) == 1 && wk_gpu_stream_units(8, 2) == 2 && wk_gpu_stream_units(16, 1) == 2 &&
                  wk_gpu_stream_units(4, 2, 16) == 4 && wk_gpu_stream_units(2, 8) == 1,
              "units per thread: f32 1, bf16 2, u8 2, casts f32->bf16 4, f64 1");
#endif

template <int U, typename Load, typename Store>
WK_DEV void wk_gpu_stream(int64_t nv, Load load, Store store)
{
    typedef decltype(load((int64_t)0)) In;
    const int64_t tile = (int64_t)U * blockDim.x;
    _Pragma("unroll 1")
    for (int64_t t0 = (int64_t)blockIdx.x * tile; t0 < nv; t0 += (int64_t)gridDim.x * tile) {
        In x[U];
        if (t0 + tile <= nv) {                       /* a whole tile: no guards */
#pragma unroll
            for (int k = 0; k < U; k++) x[k] = load(t0 + k * (int64_t)blockDim.x + threadIdx.x);
#pragma unroll
            for (int k = 0; k < U; k++) store(t0 + k * (int64_t)blockDim.x + threadIdx.x, x[k]);
        } else {
#pragma unroll
            for (int k = 0; k < U; k++) {
                const int64_t i = t0 + k * (int64_t)blockDim.x + threadIdx.x;
                if (i < nv) x[k] = load(i);
            }
#pragma unroll
            for (int k = 0; k < U; k++) {
                const int64_t i = t0 + k * (int64_t)blockDim.x + threadIdx.x;
                if (i < nv) store(i, x[k]);
            }
        }
    }
}

/* Blocks for wk_gpu_stream over nv units: one tile per block, at most
 * 2^20 blocks (within every runtime's grid limits; beyond that the
 * blocks stride over the tiles). */
static inline unsigned wk_gpu_stream_grid(int64_t nv, int block, int u)
{
    int64_t b = (nv + (int64_t)block * u - 1) / ((int64_t)block * u);
    if (b > ((int64_t)1 << 20)) b = (int64_t)1 << 20;
    if (b < 1) b = 1;
    return (unsigned)b;
}

#endif /* WICK_GPU_INTERNAL_H */
