/* cpu_index.c — index_select, gather, scatter_set / scatter_add and
 * index_add on the CPU, for every value dtype, with u8 / u32 / i64 ids of
 * any strides.
 *
 * All four are one loop: the dims of the "loop" view (dst for select and
 * gather, src for scatter and index_add) split into pre dims, the indexed
 * dim and post dims; along the indexed dim one side moves by the loop
 * position j and the other by the id read for it. Every id is checked
 * before anything is written, so a bad id leaves dst unchanged.
 *
 * How it is made fast: pre and post dims are merged where the strides of
 * every view allow, so the post dims are usually one contiguous run that
 * is copied with memcpy (select) or added in a typed loop. Work is spread
 * over the pool: select and gather write each dst element once, so any
 * split works; scatter and index_add may hit one dst element from several
 * j, so they split only over pre and post positions and walk j in order
 * inside a task (no two tasks touch one element, and scatter_set's last
 * write wins deterministically).
 */
#include "cpu_internal.h"

enum { IX_SELECT, IX_GATHER, IX_SCATTER, IX_INDEX_ADD };
enum { W = 0, R = 1, I = 2 };   /* the write view, the read view, the ids */

/* elements of post dims handled by one task (at most) */
#define POST_CHUNK 4096

typedef struct ix_dim { int64_t n; int64_t s[3]; } ix_dim;

typedef struct ix_plan {
    int kind;
    bool add;                  /* += instead of =                         */
    wk_dtype dt, idt;
    size_t es;
    char *w;                   /* write view element 0 (offset applied)   */
    const char *r;             /* read view element 0                     */
    const char *ids;           /* ids element 0                           */
    int target;                /* W or R: the view the id indexes         */
    bool ids_full;             /* ids have the loop's dims (gather, scatter) */
    int npre, npost;
    ix_dim pre[WK_MAX_RANK], post[WK_MAX_RANK];
    int64_t J;                 /* extent of the indexed dim in the loop   */
    int64_t js[3];             /* strides along the indexed dim: W, R, I  */
    int64_t n_pre, n_post, nchunks, chunk;
    int64_t jb;                /* loop positions per unit (read kinds)    */
} ix_plan;

static inline int64_t load_id(const char *ids, wk_dtype idt, int64_t off)
{
    switch (idt) {
    case WK_U8: return ((const uint8_t *)ids)[off];
    case WK_U32: return ((const uint32_t *)ids)[off];
    default: return ((const int64_t *)ids)[off];
    }
}

/* ---- element operations ---------------------------------------------- */

static inline void elem_set(char *d, const char *s, size_t es)
{
    switch (es) {
    case 1: *(uint8_t *)d = *(const uint8_t *)s; break;
    case 2: { uint16_t v; memcpy(&v, s, 2); memcpy(d, &v, 2); break; }
    case 4: { uint32_t v; memcpy(&v, s, 4); memcpy(d, &v, 4); break; }
    default: { uint64_t v; memcpy(&v, s, 8); memcpy(d, &v, 8); break; }
    }
}

/* *d += *s in dt: integers wrap, narrow floats add in f32 and round once */
static inline void elem_add(char *d, const char *s, wk_dtype dt)
{
    switch (dt) {
    case WK_U8: *(uint8_t *)d = (uint8_t)(*(uint8_t *)d + *(const uint8_t *)s); break;
    case WK_U32: *(uint32_t *)d += *(const uint32_t *)s; break;
    case WK_I16: *(uint16_t *)d = (uint16_t)(*(uint16_t *)d + *(const uint16_t *)s); break;
    case WK_I32: *(uint32_t *)d += *(const uint32_t *)s; break;
    case WK_I64: *(uint64_t *)d += *(const uint64_t *)s; break;
    case WK_BF16: *(uint16_t *)d = wk_f32_to_bf16(wk_bf16_to_f32(*(uint16_t *)d) + wk_bf16_to_f32(*(const uint16_t *)s)); break;
    case WK_F16: *(uint16_t *)d = wk_f32_to_f16(wk_f16_to_f32(*(uint16_t *)d) + wk_f16_to_f32(*(const uint16_t *)s)); break;
    case WK_F32: *(float *)d += *(const float *)s; break;
    case WK_F64: *(double *)d += *(const double *)s; break;
    case WK_F8E4M3: *(uint8_t *)d = wk_f32_to_f8e4m3(wk_f8e4m3_to_f32(*(uint8_t *)d) + wk_f8e4m3_to_f32(*(const uint8_t *)s)); break;
    default: break;
    }
}

/* n elements, strides in elements: d[i*ds] (+)= s[i*ss] */
#define DEF_ADD_RUN(T, SFX, EXPR)                                            \
    static void add_run_##SFX(T *d, int64_t ds, const T *s, int64_t ss, int64_t n) \
    {                                                                        \
        if (ds == 1 && ss == 1) {                                            \
            for (int64_t i = 0; i < n; i++) { T a = d[i], b = s[i]; d[i] = EXPR; } \
        } else {                                                             \
            for (int64_t i = 0; i < n; i++) { T a = d[i * ds], b = s[i * ss]; d[i * ds] = EXPR; } \
        }                                                                    \
    }
DEF_ADD_RUN(uint8_t, u8, (uint8_t)(a + b))
DEF_ADD_RUN(uint16_t, u16, (uint16_t)(a + b))
DEF_ADD_RUN(uint32_t, u32, a + b)
DEF_ADD_RUN(uint64_t, u64, a + b)
DEF_ADD_RUN(float, f32, a + b)
DEF_ADD_RUN(double, f64, a + b)

static void run_op(const ix_plan *P, char *d, int64_t ds, const char *s, int64_t ss, int64_t n)
{
    size_t es = P->es;
    if (!P->add) {
        if (ds == 1 && ss == 1) { memcpy(d, s, (size_t)n * es); return; }
        for (int64_t i = 0; i < n; i++) elem_set(d + (size_t)(i * ds) * es, s + (size_t)(i * ss) * es, es);
        return;
    }
    switch (P->dt) {
    case WK_U8: add_run_u8((uint8_t *)d, ds, (const uint8_t *)s, ss, n); break;
    case WK_I16: add_run_u16((uint16_t *)d, ds, (const uint16_t *)s, ss, n); break;
    case WK_U32: case WK_I32: add_run_u32((uint32_t *)d, ds, (const uint32_t *)s, ss, n); break;
    case WK_I64: add_run_u64((uint64_t *)d, ds, (const uint64_t *)s, ss, n); break;
    case WK_F32: add_run_f32((float *)d, ds, (const float *)s, ss, n); break;
    case WK_F64: add_run_f64((double *)d, ds, (const double *)s, ss, n); break;
    default:
        for (int64_t i = 0; i < n; i++) elem_add(d + (size_t)(i * ds) * es, s + (size_t)(i * ss) * es, P->dt);
        break;
    }
}

/* ---- the loop ----------------------------------------------------------- */

/* offsets (elements) of a pre position, per view */
static void pre_offsets(const ix_plan *P, int64_t p, int64_t off[3])
{
    off[0] = off[1] = off[2] = 0;
    for (int k = P->npre - 1; k >= 0; k--) {
        int64_t i = p % P->pre[k].n;
        p /= P->pre[k].n;
        for (int v = 0; v < 3; v++) off[v] += i * P->pre[k].s[v];
    }
}

/* Post positions [q0, q1) at base offsets b[3] with the indexed-dim
 * offsets already in b (for the per-element id case, j's ids offset). */
static void post_range(const ix_plan *P, const int64_t b[3], int64_t q0, int64_t q1, int64_t jid_stride)
{
    size_t es = P->es;
    int64_t idx[WK_MAX_RANK], off[3] = { b[0], b[1], b[2] };
    int np = P->npost;
    /* seek */
    int64_t q = q0;
    for (int k = np - 1; k >= 0; k--) {
        idx[k] = q % P->post[k].n;
        q /= P->post[k].n;
        for (int v = 0; v < 3; v++) off[v] += idx[k] * P->post[k].s[v];
    }
    const ix_dim *in = np > 0 ? &P->post[np - 1] : NULL;
    int64_t L = in ? in->n : 1;
    int64_t sw = in ? in->s[W] : 0, sr = in ? in->s[R] : 0, si = in ? in->s[I] : 0;
    for (q = q0; q < q1;) {
        int64_t j0 = np > 0 ? idx[np - 1] : 0;
        int64_t c = L - j0 < q1 - q ? L - j0 : q1 - q;
        if (!P->ids_full) {
            run_op(P, P->w + (size_t)off[W] * es, sw, P->r + (size_t)off[R] * es, sr, c);
        } else {
            /* an id per element; the target view moves by it along dim */
            int tv = P->target;
            int64_t ts = jid_stride;
            for (int64_t e = 0; e < c; e++) {
                int64_t id = load_id(P->ids, P->idt, off[I] + e * si);
                int64_t ow = off[W] + e * sw + (tv == W ? id * ts : 0);
                int64_t orr = off[R] + e * sr + (tv == R ? id * ts : 0);
                if (P->add) elem_add(P->w + (size_t)ow * es, P->r + (size_t)orr * es, P->dt);
                else elem_set(P->w + (size_t)ow * es, P->r + (size_t)orr * es, es);
            }
        }
        q += c;
        /* advance past the run: innermost wraps, carry outward */
        if (np == 0) break;
        off[W] += c * sw; off[R] += c * sr; off[I] += c * si;
        idx[np - 1] += c;
        for (int k = np - 1; k > 0 && idx[k] >= P->post[k].n; k--) {
            for (int v = 0; v < 3; v++) off[v] -= P->post[k].n * P->post[k].s[v];
            idx[k] = 0;
            idx[k - 1]++;
            for (int v = 0; v < 3; v++) off[v] += P->post[k - 1].s[v];
        }
    }
}

/* loop positions j in [j0, j1) of pre position p, post chunk ch */
static void do_units(const ix_plan *P, int64_t p, int64_t j0, int64_t j1, int64_t ch)
{
    int64_t b[3];
    pre_offsets(P, p, b);
    int tv = P->target;
    int64_t ts = P->js[tv];                /* target's stride along dim  */
    int64_t ls = P->js[tv == W ? R : W];   /* the loop side's stride     */
    int lv = tv == W ? R : W;
    if (P->npost == 0) {
        /* one element per j: a tight loop */
        size_t es = P->es;
        for (int64_t j = j0; j < j1; j++) {
            int64_t id = load_id(P->ids, P->idt, b[I] + j * P->js[I]);
            int64_t o[3];
            o[tv] = b[tv] + id * ts;
            o[lv] = b[lv] + j * ls;
            if (P->add) elem_add(P->w + (size_t)o[W] * es, P->r + (size_t)o[R] * es, P->dt);
            else elem_set(P->w + (size_t)o[W] * es, P->r + (size_t)o[R] * es, es);
        }
        return;
    }
    int64_t q0 = ch * P->chunk, q1 = q0 + P->chunk < P->n_post ? q0 + P->chunk : P->n_post;
    for (int64_t j = j0; j < j1; j++) {
        int64_t bb[3] = { b[0], b[1], b[2] };
        bb[lv] += j * ls;
        bb[I] += j * P->js[I];
        if (!P->ids_full) bb[tv] += load_id(P->ids, P->idt, j * P->js[I]) * ts;
        post_range(P, bb, q0, q1, ts);
    }
}

/* select / gather: units (pre, block of jb positions, post chunk), any order */
static void read_task(void *arg, int64_t begin, int64_t end)
{
    const ix_plan *P = (const ix_plan *)arg;
    int64_t njb = (P->J + P->jb - 1) / P->jb;
    for (int64_t t = begin; t < end; t++) {
        int64_t ch = t % P->nchunks, u = t / P->nchunks;
        int64_t p = u / njb, j0 = (u % njb) * P->jb;
        do_units(P, p, j0, j0 + P->jb < P->J ? j0 + P->jb : P->J, ch);
    }
}

/* scatter / index_add: units (pre, post chunk), every j in order inside */
static void write_task(void *arg, int64_t begin, int64_t end)
{
    const ix_plan *P = (const ix_plan *)arg;
    for (int64_t t = begin; t < end; t++) do_units(P, t / P->nchunks, 0, P->J, t % P->nchunks);
}

#define par_tasks(n, w, fn, arg) wk_parallel_tasks((n), (double)(w), (fn), (arg))

/* ---- checks and planning ---------------------------------------------- */

/* Every id in [0, lim); the first bad one is reported. */
static wk_status check_ids(const wk_view *ids, int dim, int64_t lim)
{
    if (ids->dtype != WK_U8 && ids->dtype != WK_U32 && ids->dtype != WK_I64)
        return WK_CPU_ERROR(WK_ERR_DTYPE, "ids must be u8, u32 or i64, not %s", wk_dtype_name(ids->dtype));
    int64_t n = wk_view_numel(ids);
    if (n == 0) return WK_OK;
    wk_cpu_iter it;
    const wk_view *vs[1] = { ids };
    wk_cpu_iter_init(&it, 1, vs);
    wk_cpu_iter_seek(&it, 0);
    for (int64_t i = 0; i < n; i++, wk_cpu_iter_next(&it)) {
        int64_t id = load_id((const char *)ids->base, ids->dtype, it.off[0]);
        if (id < 0 || id >= lim)
            return WK_CPU_ERROR(WK_ERR_INDEX, "id %lld out of range for dim %d of size %lld",
                                (long long)id, dim, (long long)lim);
    }
    return WK_OK;
}

/* dims list from the loop view's dims (skipping dim), merged where every
 * view's strides chain; size-1 dims dropped. */
static int build_dims(ix_dim *out, const int64_t *dims, const int64_t *const st[3], int from, int to)
{
    int n = 0;
    for (int d = from; d < to; d++) {
        if (dims[d] == 1) continue;
        ix_dim x = { dims[d], { st[0][d], st[1][d], st[2] ? st[2][d] : 0 } };
        if (n > 0) {
            ix_dim *a = &out[n - 1];
            bool chain = true;
            for (int v = 0; v < 3; v++) chain &= a->s[v] == x.s[v] * x.n;
            if (chain) { a->n *= x.n; for (int v = 0; v < 3; v++) a->s[v] = x.s[v]; continue; }
        }
        out[n++] = x;
    }
    return n;
}

static wk_status ix_run(int kind, bool add, const wk_view *dst, const wk_view *src, const wk_view *ids, int dim)
{
    ix_plan P;
    memset(&P, 0, sizeof P);
    P.kind = kind;
    P.add = add;
    P.dt = dst->dtype;
    P.es = wk_cpu_dtype_size(P.dt);
    P.idt = ids->dtype;
    bool read_kind = kind == IX_SELECT || kind == IX_GATHER;
    const wk_view *loop = read_kind ? dst : src;     /* the view whose dims are looped over */
    const wk_view *target = read_kind ? src : dst;   /* the view the ids index */
    if (dim < 0 || dim >= loop->rank)
        return WK_CPU_ERROR(WK_ERR_INDEX, "dim %d out of range for rank %d", dim, loop->rank);
    wk_status st = check_ids(ids, dim, target->dims[dim]);
    if (st != WK_OK) return st;
    if (wk_view_numel(loop) == 0) return WK_OK;

    P.target = read_kind ? R : W;
    P.ids_full = kind == IX_GATHER || kind == IX_SCATTER;
    P.w = (char *)dst->base + (size_t)dst->offset * P.es;
    P.r = (const char *)src->base + (size_t)src->offset * P.es;
    P.ids = (const char *)ids->base + (size_t)ids->offset * wk_cpu_dtype_size(ids->dtype);
    const int64_t *strides[3] = { dst->strides, src->strides, P.ids_full ? ids->strides : NULL };
    P.npre = build_dims(P.pre, loop->dims, strides, 0, dim);
    P.npost = build_dims(P.post, loop->dims, strides, dim + 1, loop->rank);
    P.J = loop->dims[dim];
    P.js[W] = dst->strides[dim];
    P.js[R] = src->strides[dim];
    P.js[I] = P.ids_full ? ids->strides[dim] : ids->strides[0];
    P.n_pre = 1;
    for (int k = 0; k < P.npre; k++) P.n_pre *= P.pre[k].n;
    P.n_post = 1;
    for (int k = 0; k < P.npost; k++) P.n_post *= P.post[k].n;
    P.chunk = P.n_post < POST_CHUNK ? P.n_post : POST_CHUNK;
    if (!read_kind && P.npost > 0) {
        /* write kinds split over pre and post only: cut post finer when
         * that is too few units for the threads */
        int64_t want = 4 * (int64_t)wk_cpu_num_threads();
        if (P.n_pre * ((P.n_post + P.chunk - 1) / P.chunk) < want) {
            int64_t per_pre = (want + P.n_pre - 1) / P.n_pre;
            int64_t c = (P.n_post + per_pre - 1) / per_pre;
            P.chunk = c < 64 ? (P.n_post < 64 ? P.n_post : 64) : c;
        }
    }
    P.nchunks = (P.n_post + P.chunk - 1) / P.chunk;
    /* read kinds: enough j per unit for about POST_CHUNK elements */
    P.jb = P.n_post >= POST_CHUNK ? 1 : POST_CHUNK / P.n_post;

    if (read_kind) par_tasks(P.n_pre * ((P.J + P.jb - 1) / P.jb) * P.nchunks, P.chunk * P.jb, read_task, &P);
    else par_tasks(P.n_pre * P.nchunks, P.chunk * P.J, write_task, &P);
    return WK_OK;
}

wk_status wk_cpu_index_select(void *ctx, const wk_view *dst, const wk_view *src, const wk_view *ids, int dim)
{
    (void)ctx;
    return ix_run(IX_SELECT, false, dst, src, ids, dim);
}

wk_status wk_cpu_gather(void *ctx, const wk_view *dst, const wk_view *src, const wk_view *ids, int dim)
{
    (void)ctx;
    return ix_run(IX_GATHER, false, dst, src, ids, dim);
}

wk_status wk_cpu_scatter(void *ctx, wk_op op, const wk_view *dst, const wk_view *ids, const wk_view *src, int dim)
{
    (void)ctx;
    if (op != WK_OP_SCATTER_SET && op != WK_OP_SCATTER_ADD)
        return WK_CPU_ERROR(WK_ERR_UNSUPPORTED, "scatter: op %d is not scatter_set or scatter_add", (int)op);
    return ix_run(IX_SCATTER, op == WK_OP_SCATTER_ADD, dst, src, ids, dim);
}

wk_status wk_cpu_index_add(void *ctx, const wk_view *dst, const wk_view *ids, const wk_view *src, int dim)
{
    (void)ctx;
    return ix_run(IX_INDEX_ADD, true, dst, src, ids, dim);
}
