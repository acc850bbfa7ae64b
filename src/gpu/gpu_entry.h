/* gpu_entry.h — the GPU backend's op entry points, with the signatures of
 * the matching wk_backend_iface members (src/backend.h). C linkage, and
 * C-includable, so that stubs.c (plain C) can stand in for the ones
 * another file has not defined yet. Included by gpu_internal.h. */
#ifndef WICK_GPU_ENTRY_H
#define WICK_GPU_ENTRY_H

#include "../backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The core's services (error reporting); set by the entry point. */
extern const wk_host_api *wk_gpu_host;

bool wk_gpu_supports(void *ctx, wk_op op, wk_dtype dt);
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
wk_status wk_gpu_host_alloc(void *ctx, size_t bytes, void **ptr);
void wk_gpu_host_free(void *ctx, void *ptr);
/* event.hip */
wk_status wk_gpu_event_new(void *ctx, void **ev);
void wk_gpu_event_free(void *ctx, void *ev);
wk_status wk_gpu_event_record(void *ctx, void *ev);
wk_status wk_gpu_event_synchronize(void *ctx, void *ev);
wk_status wk_gpu_event_elapsed_ms(void *ctx, void *start, void *end, double *ms);

/* reduce.hip, matmul.hip, index.hip (stubs.c has weak stand-ins that
 * answer WK_ERR_UNSUPPORTED / false until those files define them) */
wk_status wk_gpu_reduce(void *ctx, wk_op op, const wk_view *dst, const wk_view *src, uint32_t dim_mask);
wk_status wk_gpu_matmul(void *ctx, const wk_view *dst, const wk_view *a, const wk_view *b);
wk_status wk_gpu_index_select(void *ctx, const wk_view *dst, const wk_view *src, const wk_view *ids, int dim);
wk_status wk_gpu_gather(void *ctx, const wk_view *dst, const wk_view *src, const wk_view *ids, int dim);
wk_status wk_gpu_scatter(void *ctx, wk_op op, const wk_view *dst, const wk_view *ids, const wk_view *src, int dim);
wk_status wk_gpu_index_add(void *ctx, const wk_view *dst, const wk_view *ids, const wk_view *src, int dim);
/* supports() asks these for their op families (reduce: SUM..ARGMAX;
 * matmul: MATMUL; index: INDEX_SELECT..INDEX_ADD). */
bool wk_gpu_reduce_supports(void *ctx, wk_op op, wk_dtype dt);
bool wk_gpu_matmul_supports(void *ctx, wk_op op, wk_dtype dt);
bool wk_gpu_index_supports(void *ctx, wk_op op, wk_dtype dt);

#ifdef __cplusplus
}
#endif
#endif /* WICK_GPU_ENTRY_H */
