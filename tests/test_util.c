/* test_util.c — helpers every test file uses: host arrays, value
 * generators, the standard layouts (contiguous, transposed, narrowed,
 * broadcast, reversed, empty, size 1, odd sizes, rank 0, large), reading
 * a view's logical contents straight from its storage, and the
 * comparisons (normalized squared error with per-dtype bounds, exact bit
 * equality, error-message checks).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test.h"
#include "wick_formats.h"

/* ---- shapes and arrays ------------------------------------------------- */

int64_t t_numel(wk_shape s)
{
    int64_t n = 1;
    for (int i = 0; i < s.rank; i++) n *= s.dims[i];
    return n;
}

bool t_shape_eq(wk_shape a, wk_shape b)
{
    if (a.rank != b.rank) return false;
    for (int i = 0; i < a.rank; i++)
        if (a.dims[i] != b.dims[i]) return false;
    return true;
}

const char *t_shape_str(wk_shape s)
{
    static _Thread_local char buf[8][160];
    static _Thread_local int k;
    char *b = buf[k++ & 7];
    int o = snprintf(b, 160, "[");
    for (int i = 0; i < s.rank && i < WK_MAX_RANK; i++)
        o += snprintf(b + o, (size_t)(160 - o), i ? ", %lld" : "%lld", (long long)s.dims[i]);
    snprintf(b + o, (size_t)(160 - o), "]");
    return b;
}

bool t_bcast_shape(wk_shape a, wk_shape b, wk_shape *out)
{
    int r = a.rank > b.rank ? a.rank : b.rank;
    out->rank = r;
    for (int i = 0; i < r; i++) {
        int ia = a.rank - r + i, ib = b.rank - r + i;
        int64_t da = ia >= 0 ? a.dims[ia] : 1, db = ib >= 0 ? b.dims[ib] : 1;
        if (da != db && da != 1 && db != 1) return false;
        out->dims[i] = da == 1 ? db : da;
    }
    return true;
}

int64_t t_bcast_index(wk_shape out, wk_shape in, int64_t i)
{
    int64_t idx = 0, stride = 1;
    for (int d = out.rank - 1; d >= 0; d--) {
        int64_t c = i % out.dims[d];
        i /= out.dims[d];
        int di = in.rank - out.rank + d;
        if (di < 0) continue;
        if (in.dims[di] != 1) idx += c * stride;
        stride *= in.dims[di];
    }
    return idx;
}

t_arr t_arr_new(wk_dtype dt, wk_shape s)
{
    t_arr a;
    a.dt = dt;
    a.shape = s;
    a.n = t_numel(s);
    a.p = t_mem((size_t)a.n * t_size(dt) + 8);
    return a;
}

t_arr t_read(const wk_tensor *t, bool *ok)
{
    t_arr a = t_arr_new(wk_tensor_dtype(t), wk_tensor_shape(t));
    wk_status st = wk_to_host(t, a.p, (size_t)a.n * t_size(a.dt));
    if (ok) *ok = st == WK_OK;
    if (st != WK_OK) t_fail("wk_to_host failed: %s", wk_last_error());
    return a;
}

t_arr t_gather_view(const wk_tensor *view, const void *base, wk_dtype dt)
{
    wk_shape s = wk_tensor_shape(view);
    t_arr a = t_arr_new(dt, s);
    int64_t idx[WK_MAX_RANK] = { 0 };
    int64_t off0 = wk_tensor_offset(view);
    for (int64_t i = 0; i < a.n; i++) {
        int64_t off = off0;
        for (int d = 0; d < s.rank; d++) off += idx[d] * wk_tensor_stride(view, d);
        t_put_bits(dt, a.p, i, t_bits(dt, base, off));
        for (int d = s.rank - 1; d >= 0; d--) {
            if (++idx[d] < s.dims[d]) break;
            idx[d] = 0;
        }
    }
    return a;
}

/* ---- generators ----------------------------------------------------------- */

static void fill_int(wk_dtype dt, void *p, int64_t n, t_gen g, t_rng *r)
{
    int64_t mn = t_int_min(dt), mx = t_int_max(dt);
    for (int64_t i = 0; i < n; i++) {
        int64_t v;
        switch (g.kind) {
        case G_FULL: {
            int64_t sp[] = { mn, mx, 0, 1, mn + 1, mx - 1, mn ? -1 : 2, 7 };
            if (t_rng_int(r, 0, 7) == 0) v = sp[t_rng_int(r, 0, 7)];
            else v = t_wrap(dt, t_rng_next(r));
            break;
        }
        case G_SMALLSET: {
            int64_t sp[] = { 0, 1, 2, 3, -1, -2 };
            v = sp[t_rng_int(r, 0, mn < 0 ? 5 : 3)];
            break;
        }
        case G_AWAY: {
            int64_t lo = (int64_t)g.lo, hi = (int64_t)g.hi;
            if (hi > mx) hi = mx;
            if (lo < 1) lo = 1;
            v = t_rng_int(r, lo, hi);
            if (mn < 0 && (t_rng_next(r) & 1)) v = -v;
            break;
        }
        default: {
            double lo = g.lo < (double)mn ? (double)mn : g.lo, hi = g.hi > (double)mx ? (double)mx : g.hi;
            v = t_rng_int(r, (int64_t)lo, (int64_t)hi);
            break;
        }
        }
        t_puti(dt, p, i, v);
    }
}

void t_fill(wk_dtype dt, void *p, int64_t n, t_gen g)
{
    t_rng *r = t_r();
    if (!t_is_float(dt)) { fill_int(dt, p, n, g, r); return; }
    for (int64_t i = 0; i < n; i++) {
        double v;
        switch (g.kind) {
        case G_AWAY: v = t_rng_range(r, g.lo, g.hi); if (t_rng_next(r) & 1) v = -v; break;
        case G_SMALLSET: { static const double sp[] = { -2, -1, -0.5, 0, 0.5, 1, 2 }; v = sp[t_rng_int(r, 0, 6)]; break; }
        case G_FULL: v = (t_rng_unit(r) + 0.5) * ldexp(1.0, (int)t_rng_int(r, -12, 12)); if (t_rng_next(r) & 1) v = -v; break;
        case G_HALVES: v = 0.5 * (double)t_rng_int(r, (int64_t)(2 * g.lo), (int64_t)(2 * g.hi)); break;
        default: v = t_rng_range(r, g.lo, g.hi); break;
        }
        t_put(dt, p, i, v);
    }
}

/* ---- layouts ----------------------------------------------------------------- */

const t_layout t_layouts[] = {
    { "contiguous", LK_CONTIG, { 2, { 4, 33 } } },
    { "transposed", LK_TRANSPOSED, { 2, { 4, 33 } } },
    { "narrowed", LK_NARROWED, { 2, { 5, 7 } } },
    { "broadcast", LK_BROADCAST, { 2, { 4, 33 } } },
    { "reversed3d", LK_REVERSED, { 3, { 3, 5, 7 } } },
    { "rank8", LK_NARROWED, { 8, { 2, 1, 2, 3, 1, 2, 2, 3 } } },
    { "empty", LK_CONTIG, { 2, { 0, 5 } } },
    { "empty_strided", LK_TRANSPOSED, { 2, { 3, 0 } } },
    { "size1", LK_CONTIG, { 1, { 1 } } },
    { "odd7", LK_CONTIG, { 1, { 7 } } },
    { "odd33", LK_NARROWED, { 1, { 33 } } },
    { "odd1023", LK_CONTIG, { 1, { 1023 } } },
    { "scalar", LK_CONTIG, { 0, { 0 } } },
    { "big65537", LK_CONTIG, { 1, { 65537 } } },
    { "big_strided", LK_TRANSPOSED, { 2, { 257, 263 } } },
};
const int t_nlayouts = (int)(sizeof t_layouts / sizeof t_layouts[0]);

/* base storage shape for a layout, and the view ops that make shape */
static wk_shape base_shape(t_layout_kind kind, wk_shape s)
{
    wk_shape b = s;
    switch (kind) {
    case LK_TRANSPOSED:
        if (s.rank >= 2) { b.dims[s.rank - 2] = s.dims[s.rank - 1]; b.dims[s.rank - 1] = s.dims[s.rank - 2]; }
        else if (s.rank == 1) { b.rank = 2; b.dims[0] = s.dims[0]; b.dims[1] = 3; }
        break;
    case LK_NARROWED:
        for (int d = 0; d < s.rank; d++) b.dims[d] = s.dims[d] + 3;
        break;
    case LK_BROADCAST:
        for (int d = 0; d < s.rank; d += 2) b.dims[d] = 1;
        break;
    case LK_REVERSED:
        for (int d = 0; d < s.rank; d++) b.dims[d] = s.dims[s.rank - 1 - d];
        break;
    default: break;
    }
    return b;
}

static wk_tensor *make_view(wk_tensor *base, t_layout_kind kind, wk_shape s)
{
    wk_tensor *v = base;
    switch (kind) {
    case LK_TRANSPOSED:
        if (s.rank >= 2) return T_NEED(wk_transpose(base, s.rank - 2, s.rank - 1));
        if (s.rank == 1) {
            v = T_NEED(wk_transpose(base, 0, 1));       /* [3, n]            */
            if (v) v = T_NEED(wk_narrow(v, 0, 1, 1));   /* [1, n], offset 1  */
            if (v) v = T_NEED(wk_squeeze(v, 0));        /* [n], stride 3     */
        }
        return v;
    case LK_NARROWED:
        for (int d = 0; d < s.rank && v; d++) v = T_NEED(wk_narrow(v, d, d % 2 ? 2 : 1, s.dims[d]));
        return v;
    case LK_BROADCAST:
        return s.rank ? T_NEED(wk_broadcast_as(base, s)) : base;
    case LK_REVERSED: {
        int perm[WK_MAX_RANK];
        for (int d = 0; d < s.rank; d++) perm[d] = s.rank - 1 - d;
        return s.rank > 1 ? T_NEED(wk_permute(base, perm)) : base;
    }
    default:
        return base;
    }
}

static wk_tensor *finish_make(const t_arr *base, t_layout_kind kind, wk_shape s, t_arr *vals)
{
    wk_tensor *b = T_NEED(wk_from_host(t_dev(), base->dt, base->shape, base->p));
    if (!b) return NULL;
    wk_tensor *v = make_view(b, kind, s);
    if (!v) return NULL;
    if (!t_shape_eq(wk_tensor_shape(v), s)) {
        t_fail("layout helper: view has shape %s, wanted %s", t_shape_str(wk_tensor_shape(v)), t_shape_str(s));
        return NULL;
    }
    if (vals) *vals = t_gather_view(v, base->p, base->dt);
    return v;
}

wk_tensor *t_make(wk_dtype dt, t_layout_kind kind, wk_shape s, t_gen gen, t_arr *vals)
{
    t_arr base = t_arr_new(dt, base_shape(kind, s));
    t_fill(dt, base.p, base.n, gen);
    return finish_make(&base, kind, s, vals);
}

bool t_make_dst(const t_arr *vals, t_layout_kind kind, t_dst *d)
{
    memset(d, 0, sizeof *d);
    wk_shape s = vals->shape;
    t_arr base = t_arr_new(vals->dt, base_shape(kind, s));
    memset(base.p, T_POISON, (size_t)base.n * t_size(vals->dt));
    /* a probe view gives the geometry; the real base is uploaded after */
    wk_tensor *probe = T_NEED(wk_from_host(t_dev(), base.dt, base.shape, base.p));
    wk_tensor *pv = probe ? make_view(probe, kind, s) : NULL;
    if (!pv) return false;
    d->off = t_mem((size_t)vals->n * sizeof(int64_t) + 8);
    d->in_view = t_mem((size_t)base.n + 1);
    int64_t idx[WK_MAX_RANK] = { 0 };
    for (int64_t i = 0; i < vals->n; i++) {
        int64_t off = wk_tensor_offset(pv);
        for (int k = 0; k < s.rank; k++) off += idx[k] * wk_tensor_stride(pv, k);
        d->off[i] = off;
        d->in_view[off] = true;
        t_put_bits(vals->dt, base.p, off, t_bits(vals->dt, vals->p, i));
        for (int k = s.rank - 1; k >= 0; k--) {
            if (++idx[k] < s.dims[k]) break;
            idx[k] = 0;
        }
    }
    d->base = T_NEED(wk_from_host(t_dev(), base.dt, base.shape, base.p));
    d->view = d->base ? make_view(d->base, kind, s) : NULL;
    d->storage = base;
    return d->view != NULL;
}

wk_tensor *t_make_from(const t_arr *vals, t_layout_kind kind)
{
    /* broadcast layouts cannot hold arbitrary values: use a narrowed one */
    t_dst d;
    return t_make_dst(vals, kind == LK_BROADCAST ? LK_NARROWED : kind, &d) ? d.view : NULL;
}

bool t_check_dst(const char *what, const t_dst *d, const t_arr *expect, double bound)
{
    bool ok;
    t_arr got = t_read(d->base, &ok);
    if (!ok) return false;
    wk_dtype dt = got.dt;
    int bad = 0;
    int64_t nv = 0;
    for (int64_t i = 0; i < got.n; i++) nv += d->in_view[i];
    double *gv = t_mem((size_t)nv * sizeof(double) + 8), *ev = t_mem((size_t)nv * sizeof(double) + 8);
    int64_t k = 0;
    for (int64_t i = 0; i < got.n; i++) {
        uint64_t g = t_bits(dt, got.p, i), e = t_bits(dt, expect->p, i);
        if (d->in_view[i] && t_is_float(dt) && bound > 0) {
            gv[k] = t_get(dt, got.p, i);
            ev[k++] = t_get(dt, expect->p, i);
            continue;
        }
        if (g == e || (t_is_float(dt) && isnan(t_get(dt, got.p, i)) && isnan(t_get(dt, expect->p, i)))) continue;
        if (bad++ < 3)
            t_fail("%s %s: storage element %lld (%s the view) is %.17g (bits 0x%llx), expected %.17g (bits 0x%llx)", what,
                   t_dt_name(dt), (long long)i, d->in_view[i] ? "inside" : "outside", t_get(dt, got.p, i),
                   (unsigned long long)g, t_get(dt, expect->p, i), (unsigned long long)e);
    }
    if (bad > 3) t_fail("%s %s: %d storage elements differ in all", what, t_dt_name(dt), bad);
    if (k && !t_cmp_values(what, dt, gv, ev, k, bound)) bad++;
    return bad == 0;
}

/* ---- comparisons --------------------------------------------------------------- */

double t_bound(wk_dtype dt)
{
    switch (dt) {
    case WK_F64: return 1e-26;
    case WK_F32: return 1e-11;
    case WK_F16: return 1e-7;
    case WK_BF16: return 5e-6;
    case WK_F8E4M3: return 5e-3;
    default: return 0;
    }
}

double t_bound_acc(wk_dtype dt)
{
    switch (dt) {
    case WK_F64: return 1e-24;
    case WK_F32: return 1e-9;
    case WK_F16: return 1e-6;
    case WK_BF16: return 2e-5;
    case WK_F8E4M3: return 2e-2;
    default: return 0;
    }
}

bool t_cmp_values(const char *what, wk_dtype dt, const double *got, const double *ref, int64_t n, double bound)
{
    return t_cmp_values_floor(what, dt, got, ref, n, bound, 0);
}

bool t_cmp_values_floor(const char *what, wk_dtype dt, const double *got, const double *ref, int64_t n, double bound,
                        double floor_)
{
    double num = 0, den = 0, worst = -1;
    int64_t wi = -1;
    for (int64_t i = 0; i < n; i++) {
        double g = got[i], r = ref[i];
        if (isnan(r) || isnan(g)) {
            if (isnan(r) != isnan(g)) {
                t_fail("%s %s: element %lld is %.9g, expected %.9g", what, t_dt_name(dt), (long long)i, g, r);
                return false;
            }
            continue;
        }
        if (isinf(r) || isinf(g)) {
            if (g != r) {
                t_fail("%s %s: element %lld is %.9g, expected %.9g", what, t_dt_name(dt), (long long)i, g, r);
                return false;
            }
            continue;
        }
        double d = (g - r) * (g - r);
        num += d;
        den += r * r + floor_ * floor_;
        if (d > worst) { worst = d; wi = i; }
    }
    double err = num / (den > 0 ? den : 1);
    if (!(err <= bound)) {
        t_fail("%s %s: normalized error %.3g > bound %.3g over %lld elements (worst at %lld: got %.9g, expected %.9g)",
               what, t_dt_name(dt), err, bound, (long long)n, (long long)wi, got[wi], ref[wi]);
        return false;
    }
    return true;
}

static bool check_meta(const char *what, const wk_tensor *got, wk_shape shape, wk_dtype dt)
{
    if (!got) { t_fail("%s: no result: %s", what, wk_last_error()); return false; }
    if (wk_tensor_dtype(got) != dt) {
        t_fail("%s: result dtype %s, expected %s", what, t_dt_name(wk_tensor_dtype(got)), t_dt_name(dt));
        return false;
    }
    if (!t_shape_eq(wk_tensor_shape(got), shape)) {
        t_fail("%s: result shape %s, expected %s", what, t_shape_str(wk_tensor_shape(got)), t_shape_str(shape));
        return false;
    }
    return true;
}

bool t_check_close(const char *what, const wk_tensor *got, wk_shape shape, wk_dtype dt, const double *ref, double bound)
{
    return t_check_close_floor(what, got, shape, dt, ref, bound, 0);
}

bool t_check_close_floor(const char *what, const wk_tensor *got, wk_shape shape, wk_dtype dt, const double *ref,
                         double bound, double floor_)
{
    if (!check_meta(what, got, shape, dt)) return false;
    bool ok;
    t_arr g = t_read(got, &ok);
    if (!ok) return false;
    double *gv = t_mem((size_t)g.n * sizeof(double)), *rv = t_mem((size_t)g.n * sizeof(double));
    for (int64_t i = 0; i < g.n; i++) {
        gv[i] = t_get(dt, g.p, i);
        rv[i] = t_is_float(dt) ? t_round_to(dt, ref[i]) : ref[i];
    }
    return t_cmp_values_floor(what, dt, gv, rv, g.n, bound, floor_);
}

bool t_check_exact(const char *what, const wk_tensor *got, wk_shape shape, wk_dtype dt, const void *ref)
{
    if (!check_meta(what, got, shape, dt)) return false;
    bool ok;
    t_arr g = t_read(got, &ok);
    if (!ok) return false;
    int bad = 0;
    for (int64_t i = 0; i < g.n; i++) {
        uint64_t a = t_bits(dt, g.p, i), b = t_bits(dt, ref, i);
        if (a == b) continue;
        if (t_is_float(dt) && isnan(t_get(dt, g.p, i)) && isnan(t_get(dt, ref, i))) continue;
        if (bad++ < 3)
            t_fail("%s %s: element %lld is %.17g (bits 0x%llx), expected %.17g (bits 0x%llx)", what, t_dt_name(dt),
                   (long long)i, t_get(dt, g.p, i), (unsigned long long)a, t_get(dt, ref, i), (unsigned long long)b);
    }
    if (bad > 3) t_fail("%s %s: %d elements differ in all", what, t_dt_name(dt), bad);
    return bad == 0;
}

bool t_check_error(const char *what, wk_status want, wk_status got, ...)
{
    const char *msg = wk_last_error();
    bool ok = true;
    if (got != want) {
        t_fail("%s: status %s, expected %s (message: \"%s\")", what, wk_status_name(got), wk_status_name(want), msg);
        ok = false;
    }
    if (want != WK_OK && (!msg || !*msg)) {
        t_fail("%s: no error message", what);
        return false;
    }
    va_list ap;
    va_start(ap, got);
    for (const char *w = va_arg(ap, const char *); w; w = va_arg(ap, const char *)) {
        if (!strstr(msg, w)) {
            t_fail("%s: message \"%s\" does not mention \"%s\"", what, msg, w);
            ok = false;
        }
    }
    va_end(ap);
    wk_clear_error();
    return ok;
}

void t_each_gpu(void (*fn)(wk_device *dev, const char *name, void *arg), void *arg)
{
    static const char *const kinds[] = { "cuda", "rocm" };
    for (int k = 0; k < 2; k++) {
        const int n = wk_device_count(kinds[k]);
        for (int i = 0; i < n; i++) {
            char name[32];
            snprintf(name, sizeof name, "%s:%d", kinds[k], i);
            wk_device *d = wk_device_open(name);
            if (!d) {
                printf("cannot open %s: %s\n", name, wk_last_error());
                continue;
            }
            fn(d, name, arg);
            wk_device_close(d);
        }
    }
}

void t_check_null(const char *expr, wk_tensor *r, wk_status want, const char *w1, const char *w2, const char *w3)
{
    if (r) {
        t_own(r);
        t_fail("%s returned a tensor", expr);
        return;
    }
    wk_status got = wk_last_status();
    if (want == T_ANY_STATUS) want = got == WK_OK ? WK_ERR_ARGUMENT : got;
    t_check_error(expr, want, got, w1, w2, w3, (const char *)NULL);
}

bool t_model_path(const char *env, const char *file, char *path, size_t n)
{
    const char *e = getenv(env);
    if (e && *e) {
        snprintf(path, n, "%s", e);
        return access(path, R_OK) == 0;
    }
    if ((e = getenv("WICK_CACHE")) && *e) snprintf(path, n, "%s/%s", e, file);
    else if ((e = getenv("XDG_CACHE_HOME")) && *e) snprintf(path, n, "%s/wick/%s", e, file);
    else if ((e = getenv("HOME")) && *e) snprintf(path, n, "%s/.cache/wick/%s", e, file);
    else return false;
    return access(path, R_OK) == 0;
}

int64_t t_json_ints(const wk_json *a, int32_t *out, int64_t cap)
{
    int64_t n = 0;
    for (size_t i = 0; i < wk_json_count(a) && n < cap; i++) {
        int64_t v;
        if (!wk_json_int(wk_json_item(a, i), &v)) return -1;
        out[n++] = (int32_t)v;
    }
    return n;
}

int32_t t_argmax(const float *row, int64_t n)
{
    int64_t b = 0;
    for (int64_t i = 1; i < n; i++)
        if (row[i] > row[b]) b = i;
    return (int32_t)b;
}
