/* gpu_entry.h — the GPU backend's entry points, one per op family, each in
 * the file that holds the family's kernels; op_table.hip wires the ops of
 * src/op_list.h to them. C linkage. Included by gpu_internal.h. */
#ifndef WICK_GPU_ENTRY_H
#define WICK_GPU_ENTRY_H

#include "../backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The core's services (error reporting); set by the entry point. */
extern const wk_host_api *wk_gpu_host;

/* op_table.hip: the op table (filled at the first call), and whether an
 * op takes a dtype (its op_list.h mask) */
const wk_op_impl *wk_gpu_op_table(void);
bool wk_gpu_op_takes(wk_op op, wk_dtype dt);
/* elementwise.hip */
wk_status wk_gpu_unary(void *ctx, wk_op op, const wk_view *dst, const wk_view *src, double p0, double p1);
wk_status wk_gpu_binary(void *ctx, wk_op op, const wk_view *dst, const wk_view *a, const wk_view *b);
wk_status wk_gpu_where_cond(void *ctx, const wk_view *dst, const wk_view *cond, const wk_view *a, const wk_view *b);
/* copy.hip */
wk_status wk_gpu_copy(void *ctx, const wk_view *dst, const wk_view *src);
wk_status wk_gpu_copy2d(void *ctx, void *dst_base, const void *src_base, wk_dtype dtype,
                        int64_t rows, int64_t cols, int64_t dst_stride, int64_t src_stride,
                        int64_t dst_offset, int64_t src_offset);
wk_status wk_gpu_const_set(void *ctx, const wk_view *dst, const void *value);
/* random.hip */
wk_status wk_gpu_rand_uniform(void *ctx, const wk_view *dst, uint64_t seed, uint64_t offset, double lo, double hi);
wk_status wk_gpu_rand_normal(void *ctx, const wk_view *dst, uint64_t seed, uint64_t offset, double mean, double std);
/* allocator.hip: host transfers, pinned host memory */
wk_status wk_gpu_write(void *ctx, void *dst, const void *host, size_t bytes);
wk_status wk_gpu_read(void *ctx, void *host, const void *src, size_t bytes);
wk_status wk_gpu_read_async(void *ctx, void *host, const void *src, size_t bytes);
wk_status wk_gpu_host_alloc(void *ctx, size_t bytes, void **ptr);
void wk_gpu_host_free(void *ctx, void *ptr);
/* event.hip */
wk_status wk_gpu_event_new(void *ctx, void **ev);
void wk_gpu_event_free(void *ctx, void *ev);
wk_status wk_gpu_event_record(void *ctx, void *ev);
wk_status wk_gpu_event_synchronize(void *ctx, void *ev);
wk_status wk_gpu_event_elapsed_ms(void *ctx, void *start, void *end, double *ms);

/* reduce.hip, matmul.hip, index.hip */
wk_status wk_gpu_reduce(void *ctx, wk_op op, const wk_view *dst, const wk_view *src, uint32_t dim_mask);
wk_status wk_gpu_matmul(void *ctx, const wk_view *dst, const wk_view *a, const wk_view *b);
/* checked: the caller checked the ids (WK_OPF_IDS_CHECKED): no check here */
wk_status wk_gpu_index_select(void *ctx, const wk_view *dst, const wk_view *src, const wk_view *ids, int dim, bool checked);
wk_status wk_gpu_gather(void *ctx, const wk_view *dst, const wk_view *src, const wk_view *ids, int dim, bool checked);
wk_status wk_gpu_scatter(void *ctx, wk_op op, const wk_view *dst, const wk_view *ids, const wk_view *src, int dim,
                         bool checked);
wk_status wk_gpu_index_add(void *ctx, const wk_view *dst, const wk_view *ids, const wk_view *src, int dim, bool checked);
/* nn.hip: softmax/log_softmax, the norms, the ropes; attention.hip:
 * attention (wk_op_args as backend.h's families describe them) */
wk_status wk_gpu_softmax(void *ctx, const wk_op_args *a);
wk_status wk_gpu_norm(void *ctx, const wk_op_args *a);
wk_status wk_gpu_rope(void *ctx, const wk_op_args *a);
wk_status wk_gpu_rope_kv(void *ctx, const wk_op_args *a);
wk_status wk_gpu_attention(void *ctx, const wk_op_args *a);
/* conv.hip: the convolutions; pool.hip: pools and upsampling; sort.hip:
 * arg_sort (wk_op_args as backend.h's CONV, POOL, UPSAMPLE and SORT
 * families describe them) */
wk_status wk_gpu_conv(void *ctx, const wk_op_args *a);
wk_status wk_gpu_pool2d(void *ctx, const wk_op_args *a);
wk_status wk_gpu_upsample(void *ctx, const wk_op_args *a);
wk_status wk_gpu_arg_sort(void *ctx, const wk_op_args *a);
/* quant.hip: dequantize (QCONVERT; quantize stays on the cpu), qmatmul,
 * qgather */
wk_status wk_gpu_qconvert(void *ctx, const wk_op_args *a);
wk_status wk_gpu_qmatmul(void *ctx, const wk_op_args *a);
wk_status wk_gpu_qgather(void *ctx, const wk_op_args *a);
/* gemv.hip: the dense f16/bf16 matvec (m <= 8, b a transposed row-major
 * matrix) that matmul.hip tries first; *done false when it does not apply */
wk_status wk_gpu_dense_matvec(void *ctx, const wk_view *dst, const wk_view *a, const wk_view *b, bool *done);
/* quant.hip: its qmvq_kernel on plain f16/bf16 rows (dt) of W, rows w_rs
 * bytes apart: the dense matvec's kernel for 2 to 8 rows of x */
wk_status wk_gpu_qmvq_dense(void *ctx, wk_dtype dt, const uint8_t *w, int64_t w_rs, int64_t n, int64_t k,
                            const wk_view *d, const wk_view *x);
/* comm.hip: collectives through NCCL / RCCL (backend.h's comm_* members) */
wk_status wk_gpu_comm_available(void);
bool wk_gpu_comm_dtype(wk_dtype dt);
wk_status wk_gpu_comm_unique_id(void *id);
wk_status wk_gpu_comm_init_all(void *const *ctxs, int n, void **comms);
wk_status wk_gpu_comm_init_rank(void *ctx, const void *id, int rank, int world, void **comm);
void wk_gpu_comm_free(void *comm);
wk_status wk_gpu_comm_run(void *comm, const wk_coll_args *a);
bool wk_gpu_comm_fuses(void *comm, const wk_coll_args *a);
void wk_gpu_comm_abort(void *comm);
bool wk_gpu_comm_aborted(void *comm);
/* rtc.hip: kernels compiled at run time (backend.h's rtc_* members) */
wk_status wk_gpu_rtc_target(void *ctx, wk_rtc_target *out);
wk_status wk_gpu_rtc_compiler(void);
wk_status wk_gpu_rtc_compile(const wk_rtc_target *t, const char *source, const char *name,
                             const char *const *opts, int n_opts, wk_rtc_code *out);
wk_status wk_gpu_rtc_load(void *ctx, const void *code, size_t size, const char *symbol, void **fn);
void wk_gpu_rtc_unload(void *ctx, void *fn);
wk_status wk_gpu_rtc_launch(void *ctx, void *fn, const unsigned grid[3], const unsigned block[3],
                            unsigned shared_bytes, void *stream, void **args);
/* graph.hip: recorded work (backend.h's graph_* members) */
wk_status wk_gpu_graph_begin(void *ctx);
wk_status wk_gpu_graph_end(void *ctx, void **graph);
wk_status wk_gpu_graph_launch(void *ctx, void *graph);
void wk_gpu_graph_free(void *ctx, void *graph);
/* gemv.hip: the fused products (backend.h's LINEAR family): one row's
 * gate/up product with its gate, its q/k/v product with its rope_kv */
wk_status wk_gpu_linear(void *ctx, const wk_op_args *a);
/* paged_attention.hip: attention over a paged KV cache (backend.h's
 * PAGED_ATTENTION family) */
wk_status wk_gpu_paged_attention(void *ctx, const wk_op_args *a);

#ifdef __cplusplus
}
#endif
#endif /* WICK_GPU_ENTRY_H */
