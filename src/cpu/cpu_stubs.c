/* cpu_stubs.c — weak placeholders for CPU entry points under construction;
 * each real definition overrides its stub. */
#include "cpu_internal.h"
#define STUB(name, ...) __attribute__((weak)) wk_status name(__VA_ARGS__) { return WK_CPU_ERROR(WK_ERR_UNSUPPORTED, #name " is not implemented"); }
STUB(wk_cpu_unary, void *c, wk_op o, const wk_view *d, const wk_view *s, double p0, double p1)
STUB(wk_cpu_binary, void *c, wk_op o, const wk_view *d, const wk_view *a, const wk_view *b)
STUB(wk_cpu_where_cond, void *c, const wk_view *d, const wk_view *k, const wk_view *a, const wk_view *b)
STUB(wk_cpu_copy, void *c, const wk_view *d, const wk_view *s)
STUB(wk_cpu_copy2d, void *c, void *d, const void *s, wk_dtype t, int64_t r, int64_t n, int64_t ds, int64_t ss, int64_t doff, int64_t soff)
STUB(wk_cpu_const_set, void *c, const wk_view *d, const void *v)
STUB(wk_cpu_reduce, void *c, wk_op o, const wk_view *d, const wk_view *s, uint32_t m)
STUB(wk_cpu_matmul, void *c, const wk_view *d, const wk_view *a, const wk_view *b)
STUB(wk_cpu_index_select, void *c, const wk_view *d, const wk_view *s, const wk_view *i, int dim)
STUB(wk_cpu_gather, void *c, const wk_view *d, const wk_view *s, const wk_view *i, int dim)
STUB(wk_cpu_scatter, void *c, wk_op o, const wk_view *d, const wk_view *i, const wk_view *s, int dim)
STUB(wk_cpu_index_add, void *c, const wk_view *d, const wk_view *i, const wk_view *s, int dim)
STUB(wk_cpu_rand_uniform, void *c, const wk_view *d, uint64_t seed, uint64_t off, double lo, double hi)
STUB(wk_cpu_rand_normal, void *c, const wk_view *d, uint64_t seed, uint64_t off, double m, double s)
__attribute__((weak)) const char *wk_cpu_blas_name(void) { return "none"; }
