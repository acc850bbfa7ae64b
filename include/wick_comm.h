/* wick_comm.h — collectives across devices: a communicator of N ranks, one
 * device each, and all_reduce (sum), all_gather and broadcast on tensors of
 * those devices. What tensor parallelism (docs/tensor-parallel.md) runs on.
 *
 * Two implementations behind one API:
 *  - GPUs: NCCL on NVIDIA, RCCL on AMD (the same API), opened at run time
 *    like the BLAS libraries (libnccl.so.2 / librccl.so.1, or the file
 *    WICK_NCCL_LIB names). Without the library, wk_comm_available is false,
 *    wk_supports(dev, "all_reduce", dt) is false, and creating a
 *    communicator fails with WK_ERR_UNSUPPORTED; nothing else changes.
 *    Collectives run on each device's stream, in order with wick's ops
 *    there, and return before they finish (like the ops).
 *  - the cpu: ranks are threads of this process sharing memory (the same
 *    "cpu" device for every rank); a collective returns when it is done.
 *    It gives bit-identical results on every rank (each element is summed
 *    by one rank, in rank order), so sharded code can be tested without
 *    GPUs.
 *
 * Rules, as NCCL's: every rank calls the same collectives in the same order
 * with the same element count and dtype, each rank from its own thread
 * (one thread per device); a rank that skips a call leaves the others
 * waiting. On the cpu a count, dtype or root that differs between ranks is
 * found and every rank gets WK_ERR_ARGUMENT.
 *
 * Conventions as in wick.h: functions that make something return it or
 * NULL, the others a wk_status; wk_last_error() says what went wrong.
 */
#ifndef WICK_COMM_H
#define WICK_COMM_H

#include "wick.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

typedef struct wk_comm wk_comm;

/* The rendezvous of one-rank-per-process communicators (NCCL's unique id). */
#define WK_COMM_ID_BYTES 128
typedef struct wk_comm_id {
    unsigned char bytes[WK_COMM_ID_BYTES];
} wk_comm_id;

/* Whether dev's kind has collectives (the library opens); the same as
 * wk_supports(dev, "all_reduce", a dtype it takes). Sets no error. */
bool wk_comm_available(wk_device *dev);

/* n communicators, rank i on devs[i], for n threads of this process
 * (comms[i] is then used only by rank i's thread). GPUs: n distinct
 * devices of one kind; the cpu: "cpu" n times. On failure no comms[i] is
 * left to free. */
wk_status wk_comm_init_all(wk_device *const *devs, int n, wk_comm **comms);

/* One rank per process (or per thread): rank 0 makes the id with
 * wk_comm_unique_id, the launcher hands it to every rank, and each rank
 * joins with its rank and the world size. GPUs only. */
wk_status wk_comm_unique_id(wk_device *dev, wk_comm_id *id);
wk_comm *wk_comm_init_rank(wk_device *dev, int rank, int world, const wk_comm_id *id);
/* The same from torchrun-style environment variables: RANK and WORLD_SIZE,
 * and the rendezvous from WICK_COMM_ID (the id in hex, 256 digits, as
 * wk_comm_id_to_hex writes it) or else MASTER_ADDR and MASTER_PORT (NCCL
 * then meets at MASTER_ADDR:MASTER_PORT+1 unless NCCL_COMM_ID says
 * where). */
wk_comm *wk_comm_init_env(wk_device *dev);
/* id as 256 lowercase hex digits and a NUL (out: 257 bytes), and back. */
void wk_comm_id_to_hex(const wk_comm_id *id, char out[2 * WK_COMM_ID_BYTES + 1]);
wk_status wk_comm_id_from_hex(const char *hex, wk_comm_id *id);

/* A rank that fails (an error in its forward pass, anything that keeps
 * it from its next collective) calls wk_comm_abort on its communicator,
 * from its own thread or any other: every rank's collective waiting for
 * it then returns an error (WK_ERR_BACKEND, "aborted") within a bounded
 * time instead of hanging, and every later collective of any rank of
 * the communicator fails at once. A collective that fails on a rank once
 * under way (out of memory, the library; not a refusal of bad arguments,
 * which sends nothing) aborts the communicator itself.
 * On the cpu the waits return at once; on GPUs the library's
 * communicators are aborted (ncclCommAbort) and the peer-memory kernels
 * stop waiting: what collectives in flight at that moment computed is
 * garbage, so a step that a rank sees end after an abort is a failed
 * one (wk_comm_aborted). A rank that neither comes nor aborts (a thread
 * stuck elsewhere, a process killed) breaks the communicator after
 * WICK_COMM_TIMEOUT seconds (the cpu; GPUs: the watchdog's,
 * docs/tensor-parallel.md). An aborted communicator stays unusable: free
 * it (every rank) and make another. NULL is fine (nothing happens). */
void wk_comm_abort(wk_comm *c);
/* Whether c (any rank of it) was aborted or broke. */
bool wk_comm_aborted(const wk_comm *c);

/* NULL is fine. Waits for the communicator's queued collectives. */
void wk_comm_free(wk_comm *c);
int wk_comm_rank(const wk_comm *c);
int wk_comm_size(const wk_comm *c);
wk_device *wk_comm_device(const wk_comm *c);

/* t = the sum of every rank's t, in place (same shape and dtype on every
 * rank; f32, f16, bf16, f64, i32, i64; f16/bf16 summed in f32 on the
 * cpu, as NCCL does in its own order on GPUs). Any view: a view that is
 * not contiguous goes through a contiguous copy. */
wk_status wk_all_reduce(wk_comm *c, wk_tensor *t);
/* Every rank's x joined along dim in rank order (wk_cat of the ranks'
 * tensors): a new tensor on the rank's device. x has the same shape and
 * dtype on every rank (any dtype that is not block-quantized). */
wk_tensor *wk_all_gather(wk_comm *c, const wk_tensor *x, int dim);
/* t = root's t on every rank, in place (any dtype that is not
 * block-quantized). */
wk_status wk_broadcast(wk_comm *c, wk_tensor *t, int root);
/* wk_all_reduce(c, x), then wk_add_rms_norm(x, residual, weight, eps,
 * gemma, sum): x is summed over the ranks in place; the result is the
 * norm of x + residual and *sum receives x + residual (tensor parallel's
 * row-parallel output, the residual add and the next norm). Where the
 * backend can (the GPUs' peer-memory path: f32/f16/bf16 rows of at most
 * 256 KiB, contiguous operands) it is one kernel per rank, with the same
 * rounding: the sum rounded to the dtype before the residual is added.
 * The norm's sum of squares may add in another order than add_rms_norm's
 * (a last-bit difference); every rank computes the same bits.
 * WICK_COMM_FUSE=0 runs the two calls instead. */
wk_tensor *wk_all_reduce_add_rms_norm(wk_comm *c, wk_tensor *x, const wk_tensor *residual,
                                      const wk_tensor *weight, double eps, bool gemma, wk_tensor **sum);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
