/* gpu_internal.h — what the files of the GPU backend share: the device
 * context, error checking, the caching allocator's interface, typed
 * element load/store/convert for device code, strided index arithmetic
 * (64-bit), dtype dispatch, launch-size helpers and the entry points the
 * vtable (runtime.hip) points at, and the environment knobs.
 *
 * File map of src/gpu/ (one source for AMD and NVIDIA; see compat.h):
 *   compat.h          HIP <-> CUDA names, warp primitives, virtual wave64
 *   gpu_context.h     the context, error checks, the allocator's interface
 *   gpu_types.h       element types and conversions for device code
 *   gpu_launch.h      strided indexing, dtype dispatch, launch sizes, the
 *                     streaming tile loop
 *   gpu_entry.h       the op family entry points (C linkage)
 *   gpu_env.h         the environment knobs the ops consult, read once
 *   runtime.hip       devices, contexts, vtable + entry point, alloc/free,
 *                     read/write/copy_peer, synchronize
 *   op_table.hip      the op table: src/op_list.h -> family entry points
 *   allocator.hip     caching stream-ordered allocator, host transfers
 *                     (pinned staging), pinned host memory
 *   event.hip         events (wk_event_*) on the context's stream
 *   elementwise.hip   unary (incl. affine/powf/elu), binary, cmp, where
 *   copy.hip          strided copy with dtype conversion, copy2d, const_set
 *   random.hip        rand_uniform / rand_normal (src/core/philox.h)
 *   reduce.hip        sum/min/max/argmin/argmax
 *   matmul.hip        batched strided matmul
 *   index.hip         index_select, gather, scatter, index_add
 *   nn.hip            softmax, log_softmax, rms_norm, layer_norm, ropes
 *   attention.hip     attention (flash attention, flash decoding)
 *   paged_attention.hip  attention of a batch of tokens over a paged KV
 *                     cache (one block per token and kv head)
 *   conv.hip          conv1d/2d and the transposed forms (implicit GEMM on
 *                     NVIDIA tensor cores, im2col + matmul, or direct for
 *                     few output channels per group)
 *   mma.h             NVIDIA sm_80 matrix-core helpers (mma.sync,
 *                     ldmatrix, cp.async) for attention.hip and conv.hip
 *   pool.hip          avg/max pool2d, upsample nearest1d/2d, bilinear2d
 *   sort.hip          arg_sort (bitonic in shared memory; segmented radix)
 *   quant.hip         GGUF block types: dequantize, qgather, qmatmul
 *                     (qmatvec kernel for m <= 8)
 *   gemv.hip          the dense matvec (one-row kernel; 2-8 rows on
 *                     quant.hip's kernel) and the fused products (LINEAR
 *                     family: the gate/up and q/k/v products of one row)
 *
 * Build note: every plugin compiles the .hip files one by one (in
 * parallel under make -j) and links the objects; no relocatable device
 * code, so a kernel is launched only from the file that defines it. Each
 * ROCm object carries one code object per gfx target;
 * tools/check-hip-kernels checks that every kernel the host can launch is
 * in every target (src/gpu/gpu.mk). Prefixing a file's local names
 * (ew_, cp_, rnd_, red_, mm_, ix_, nn_, at_, ...) is kept for readable
 * symbol lists, no longer for correctness.
 *
 * Streams: each context owns one stream and every op of the context runs
 * on it, in call order. Device memory freed to the allocator is reused by
 * later work on that same stream only, so freeing a buffer (scratch
 * included) right after launching the kernels that use it is safe.
 */
#ifndef WICK_GPU_INTERNAL_H
#define WICK_GPU_INTERNAL_H

#include "compat.h"             /* first: defines __HIPCC__ / __CUDACC__ */
#include "gpu_context.h"
#include "gpu_types.h"
#include "gpu_launch.h"
#include "gpu_entry.h"          /* the op entry points (C linkage) */
#include "gpu_env.h"            /* the environment knobs, read once */

#endif /* WICK_GPU_INTERNAL_H */
