/* wick_ext.h — extending wick with your own kernels: custom ops (a C
 * struct of callbacks, one per device kind, run on wick's tensors) and
 * kernels compiled at run time (NVRTC on NVIDIA, hiprtc on AMD, from one
 * HIP-style source). docs/custom-ops.md has an example of each. Also the
 * refresh of the environment knobs (wk_env_refresh), for programs that
 * change one at run time.
 *
 * Conventions as in wick.h: functions that make something return it or
 * NULL, the others a wk_status; wk_last_error() says what went wrong.
 */
#ifndef WICK_EXT_H
#define WICK_EXT_H

#include "wick.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* ------------------------------------------------------------------ */
/* the device's stream, shared with other libraries                    */

/* dev's stream (a cudaStream_t / hipStream_t as void *): every wick op on
 * dev runs there in order. NULL on the cpu (its ops are done when they
 * return) or on error. Makes dev's device current on this thread. */
void *wk_device_stream(wk_device *dev);
/* Order dev's stream with another stream of the same GPU without blocking
 * the host (an event recorded on one, waited for by the other). stream is
 * a handle, or CUDA's legacy (1) and per-thread (2) default streams.
 * wk_device_wait_stream: dev's work queued from now on starts after the
 * work queued on stream so far (before reading what another library
 * wrote). wk_stream_wait_device: stream's work queued from now on starts
 * after dev's work queued so far (before another library reads what wick
 * wrote). Both do nothing on the cpu. (What DLPack's stream argument
 * asks for.) */
wk_status wk_device_wait_stream(wk_device *dev, void *stream);
wk_status wk_stream_wait_device(void *stream, wk_device *dev);

/* ------------------------------------------------------------------ */
/* custom ops                                                          */

/* A tensor as a callback sees it: the address of element [0, ..., 0]
 * (host memory on the cpu, a device address on a GPU), the dtype and a
 * strided layout in elements (stride 0 on broadcast dims). Element
 * (i0, .., ik) lies at data + sum(i_d * strides[d]) elements. */
typedef struct wk_raw_view {
    void *data;
    wk_dtype dtype;
    int rank;
    int64_t dims[WK_MAX_RANK];
    int64_t strides[WK_MAX_RANK];
} wk_raw_view;

/* Where a callback runs. On a GPU, dev's device is current on the
 * calling thread and stream is its stream (a cudaStream_t or hipStream_t
 * cast to void *): every wick op on dev runs there in order, so a kernel
 * the callback launches on it sees its inputs written and is seen by the
 * ops that follow, without a synchronisation. NULL on the cpu. */
typedef struct wk_custom_env {
    wk_device *dev;
    const char *kind;        /* "cpu", "cuda", "rocm"                      */
    void *stream;
} wk_custom_env;

/* Custom ops with 1, 2 or 3 inputs and a new output. wk_apply_op<n>
 * checks the inputs (non-NULL, one device), asks shape for the output's
 * dtype and shape (shape NULL: the first input's), allocates a fresh
 * contiguous output and calls the forward callback of the device's kind
 * with op (the struct you passed, untouched: reach your data through
 * op->user), env, the output and the inputs. Inputs come as they are
 * (any strides), or contiguous copies when op->contiguous is set. A
 * kind without a callback is WK_ERR_UNSUPPORTED ("<name> is not
 * implemented for rocm"). The callback is not called when the output
 * has no elements. A callback reports failure by returning a status
 * other than WK_OK, after wk_error_set if it wants its own message.
 * The callback may call wick's ops (on any device). */
typedef struct wk_custom_op1 wk_custom_op1;
typedef struct wk_custom_op2 wk_custom_op2;
typedef struct wk_custom_op3 wk_custom_op3;
typedef wk_status (*wk_custom_fwd1)(const wk_custom_op1 *op, const wk_custom_env *env, const wk_raw_view *out,
                                    const wk_raw_view *a);
typedef wk_status (*wk_custom_fwd2)(const wk_custom_op2 *op, const wk_custom_env *env, const wk_raw_view *out,
                                    const wk_raw_view *a, const wk_raw_view *b);
typedef wk_status (*wk_custom_fwd3)(const wk_custom_op3 *op, const wk_custom_env *env, const wk_raw_view *out,
                                    const wk_raw_view *a, const wk_raw_view *b, const wk_raw_view *c);

struct wk_custom_op1 {
    const char *name;                  /* for messages; NULL: "custom_op1" */
    /* output dtype and shape; return non-OK (after wk_error_set) to refuse the inputs */
    wk_status (*shape)(const wk_custom_op1 *op, const wk_raw_view *a, wk_dtype *dt, wk_shape *shape);
    wk_custom_fwd1 cpu, cuda, rocm;
    bool contiguous;                   /* give the callback contiguous inputs */
    void *user;                        /* yours; wick never reads it        */
};
struct wk_custom_op2 {
    const char *name;
    wk_status (*shape)(const wk_custom_op2 *op, const wk_raw_view *a, const wk_raw_view *b, wk_dtype *dt,
                       wk_shape *shape);
    wk_custom_fwd2 cpu, cuda, rocm;
    bool contiguous;
    void *user;
};
struct wk_custom_op3 {
    const char *name;
    wk_status (*shape)(const wk_custom_op3 *op, const wk_raw_view *a, const wk_raw_view *b, const wk_raw_view *c,
                       wk_dtype *dt, wk_shape *shape);
    wk_custom_fwd3 cpu, cuda, rocm;
    bool contiguous;
    void *user;
};

wk_tensor *wk_apply_op1(const wk_custom_op1 *op, const wk_tensor *a);
wk_tensor *wk_apply_op2(const wk_custom_op2 *op, const wk_tensor *a, const wk_tensor *b);
wk_tensor *wk_apply_op3(const wk_custom_op3 *op, const wk_tensor *a, const wk_tensor *b, const wk_tensor *c);

/* In-place custom ops: the callback writes dst (a view of any layout, as
 * it is: its writes land in dst's storage and every view of it sees them)
 * and reads up to two more inputs. dst must not have overlapping
 * elements (a broadcast view: WK_ERR_ARGUMENT). An input that shares
 * storage with dst reaches the callback as a copy made before the call,
 * so it reads the values from before the op, whatever the callback
 * writes first. Not called when dst has no elements. */
typedef struct wk_inplace_op1 wk_inplace_op1;
typedef struct wk_inplace_op2 wk_inplace_op2;
typedef struct wk_inplace_op3 wk_inplace_op3;
struct wk_inplace_op1 {
    const char *name;
    wk_status (*cpu)(const wk_inplace_op1 *op, const wk_custom_env *env, const wk_raw_view *dst);
    wk_status (*cuda)(const wk_inplace_op1 *op, const wk_custom_env *env, const wk_raw_view *dst);
    wk_status (*rocm)(const wk_inplace_op1 *op, const wk_custom_env *env, const wk_raw_view *dst);
    void *user;
};
struct wk_inplace_op2 {
    const char *name;
    wk_status (*cpu)(const wk_inplace_op2 *op, const wk_custom_env *env, const wk_raw_view *dst,
                     const wk_raw_view *a);
    wk_status (*cuda)(const wk_inplace_op2 *op, const wk_custom_env *env, const wk_raw_view *dst,
                      const wk_raw_view *a);
    wk_status (*rocm)(const wk_inplace_op2 *op, const wk_custom_env *env, const wk_raw_view *dst,
                      const wk_raw_view *a);
    bool contiguous;                   /* the input (not dst) contiguous    */
    void *user;
};
struct wk_inplace_op3 {
    const char *name;
    wk_status (*cpu)(const wk_inplace_op3 *op, const wk_custom_env *env, const wk_raw_view *dst,
                     const wk_raw_view *a, const wk_raw_view *b);
    wk_status (*cuda)(const wk_inplace_op3 *op, const wk_custom_env *env, const wk_raw_view *dst,
                      const wk_raw_view *a, const wk_raw_view *b);
    wk_status (*rocm)(const wk_inplace_op3 *op, const wk_custom_env *env, const wk_raw_view *dst,
                      const wk_raw_view *a, const wk_raw_view *b);
    bool contiguous;
    void *user;
};

wk_status wk_apply_inplace1(const wk_inplace_op1 *op, wk_tensor *dst);
wk_status wk_apply_inplace2(const wk_inplace_op2 *op, wk_tensor *dst, const wk_tensor *a);
wk_status wk_apply_inplace3(const wk_inplace_op3 *op, wk_tensor *dst, const wk_tensor *a, const wk_tensor *b);

/* Set the thread's error (printf-style): from a custom op's callback, and
 * in the layers above the core (model files, tokenizers, models), which
 * report through the same state as every op (wk_last_error). The
 * arguments may include wk_last_error() itself. Returns status. */
wk_status wk_error_set(wk_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Put context in front of the thread's error: "context: message". Keeps
 * its status (WK_ERR_BACKEND when none was set) and returns it. For a
 * caller whose wick call failed, to say what it was doing. */
wk_status wk_error_wrap(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* ------------------------------------------------------------------ */
/* kernels compiled at run time                                        */

/* The source is HIP-style (__global__, threadIdx, __shared__,
 * __syncthreads, ...). wick puts its compat header in front of it, so one
 * text compiles for cuda:N (NVRTC) and rocm:N (hiprtc): fixed-width
 * integer types, WK_GPU_CUDA / WK_GPU_HIP, WK_WARP_SIZE (the device's
 * warp size), and the warp helpers wk_shfl_xor<W>, wk_shfl_down<W>,
 * wk_ballot<W>, wk_warp_sum<W>, ... No host headers are available.
 *
 * name is the kernel's name expression: a plain name for an extern "C"
 * or C++ kernel, or a template instance ("scale<float>"). options go to
 * the compiler as they are ("-DBLOCK=256", "-O3").
 *
 * Compiled code is cached on disk: $WICK_RTC_CACHE if set ("off": no
 * cache), else $XDG_CACHE_HOME/wick/rtc, else ~/.cache/wick/rtc, one file
 * per key, the key a SHA-256 of the source, name, options, wick's prelude
 * and version, the compiler's name, the GPU architecture and the
 * driver's version. A second compile of the same kernel (in this process
 * or another) loads the file instead of compiling, without opening the
 * compiler (so it works where the compiler is missing); an entry that fails
 * its checksum is compiled again and rewritten. Entries are written to a
 * temporary file and renamed, so concurrent processes never see half a
 * file.
 *
 * A compile error is WK_ERR_ARGUMENT with the compiler's log (its
 * beginning) in the message; a device without the compiler library is
 * WK_ERR_UNSUPPORTED (the cpu always is). */
typedef struct wk_rtc_kernel wk_rtc_kernel;

/* Whether dev can compile kernels (the compiler library loads); the
 * same as wk_supports(dev, "rtc", any dtype). Sets no error. */
bool wk_rtc_available(wk_device *dev);
wk_rtc_kernel *wk_rtc_compile(wk_device *dev, const char *source, const char *name, const char *const *options,
                              int n_options);
/* Launch on stream (NULL: dev's stream, where wick's ops run), as
 * cuLaunchKernel: args holds one pointer to each kernel argument's
 * value, in order. Asynchronous, like wick's ops. */
wk_status wk_rtc_launch(const wk_rtc_kernel *k, const unsigned grid[3], const unsigned block[3],
                        size_t shared_bytes, void *stream, void **args);
/* NULL is fine. Waits for the kernel's queued launches on dev's stream. */
void wk_rtc_free(wk_rtc_kernel *k);
/* Whether k's code came from the disk cache (true) or the compiler. */
bool wk_rtc_from_cache(const wk_rtc_kernel *k);
/* The cache folder in use, "" when caching is off or no folder is known. */
const char *wk_rtc_cache_dir(void);

/* ------------------------------------------------------------------ */
/* environment knobs                                                   */

/* The WICK_* variables that steer ops (which kernel or path an op takes:
 * WICK_CPU_QDOT, WICK_MATVEC, WICK_GEMM, WICK_GPU_ATTN, ...) are read
 * once, when the backend that consults them is loaded, not on every op.
 * A program that changes one afterwards (setenv, Python's os.environ)
 * calls wk_env_refresh, with no op running on any thread, and the cpu
 * and every GPU plugin loaded read theirs again. Variables read when
 * something is opened (the plugin search, the caches, the libraries
 * loaded at run time, a device, a communicator, a model) keep the value
 * they had then. */
void wk_env_refresh(void);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* WICK_EXT_H */
