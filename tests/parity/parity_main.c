/* parity_main.c — the driver of build/wick-parity: devices, filters,
 * building inputs on each device, running a case there and on the cpu,
 * comparing, the (op, dtype) coverage table and the support check.
 *
 *   wick-parity [--op NAME] [--dtype NAME] [--device NAME] [--seed N]
 *               [--quick] [--list] [-v]
 *
 * --op and --dtype match exactly (op names as in wk_op_names(), so
 * "to_dtype" cases are filed under "copy"); --device picks one device
 * ("cuda:0", "rocm:1", or "cpu" for cpu against itself, which is also what
 * runs when no GPU is present); --seed N gives every case seed N; --quick
 * keeps sizes up to 1023 (for compute-sanitizer runs). Every failure
 * prints `FAIL <case> on <device> seed <S>: ...`; the last line is
 * `N passed, N failed`, and the exit status is 1 on any failure,
 * including a GPU device that supports fewer (op, dtype) pairs than the
 * cpu (apart from the gap docs/nn.md documents: attention and paged
 * attention have no f64 on GPUs). A
 * case whose (op, dtype) the device does not support (wk_supports) is
 * skipped there and counted on a `note:` line.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "parity.h"

#define MAX_DEV 16

static wk_device *cpu, *devs[MAX_DEV];
static char dev_names[MAX_DEV][32];
static int ndev;
static const char *f_op, *f_dtype, *f_device;
static bool quick, list_only, verbose, seed_set;
static uint64_t seed_opt;
static int n_pass, n_fail, n_skip;

/* coverage: per device, per op index, per dtype: 0 untested, 1 passed, 2 failed */
#define MAX_OPS 128
static unsigned char cov[MAX_DEV][MAX_OPS][WK_DTYPE_COUNT];

bool p_quick(void) { return quick; }

static int op_index(const char *op)
{
    const char *const *names = wk_op_names();
    for (int i = 0; names[i] && i < MAX_OPS; i++)
        if (!strcmp(names[i], op)) return i;
    return -1;
}

/* ---- inputs on one device ------------------------------------------------ */

typedef struct built { wk_tensor *base, *view; } built;

static wk_shape base_shape(const p_input *in)
{
    wk_shape b = in->shape;
    int r = b.rank;
    if (in->kind == PK_TRANSPOSED && r >= 2) {
        b.dims[r - 2] = in->shape.dims[r - 1];
        b.dims[r - 1] = in->shape.dims[r - 2];
    } else if (in->kind == PK_TRANSPOSED && r == 1) {
        b.rank = 2;
        b.dims[1] = 3;
    } else if (in->kind == PK_NARROWED) {
        for (int d = 0; d < r; d++) b.dims[d] += 3;
    } else if (in->kind == PK_BROADCAST) {
        for (int d = 0; d < r; d += 2) b.dims[d] = 1;
    } else if (in->kind == PK_SWAP12 && r == 4) {
        b.dims[1] = in->shape.dims[2];
        b.dims[2] = in->shape.dims[1];
    } else if (in->kind == PK_T01 && r >= 2) {
        b.dims[0] = in->shape.dims[1];
        b.dims[1] = in->shape.dims[0];
    }
    return b;
}

static wk_tensor *make_view(wk_tensor *b, const p_input *in)
{
    int r = in->shape.rank;
    wk_tensor *v = b, *t;
    switch (in->kind) {
    case PK_TRANSPOSED:
        if (r >= 2) return wk_transpose(b, r - 2, r - 1);
        if (r == 1) {
            t = wk_transpose(b, 0, 1);
            v = t ? wk_narrow(t, 0, 1, 1) : NULL;
            wk_release(t);
            t = v;
            v = t ? wk_squeeze(t, 0) : NULL;
            wk_release(t);
            return v;
        }
        return wk_retain(b);
    case PK_NARROWED:
        v = wk_retain(b);
        for (int d = 0; d < r && v; d++) {
            t = wk_narrow(v, d, d % 2 ? 2 : 1, in->shape.dims[d]);
            wk_release(v);
            v = t;
        }
        return v;
    case PK_BROADCAST:
        return r ? wk_broadcast_as(b, in->shape) : wk_retain(b);
    case PK_SWAP12:
        return r == 4 ? wk_transpose(b, 1, 2) : wk_retain(b);
    case PK_T01:
        return r >= 2 ? wk_transpose(b, 0, 1) : wk_retain(b);
    default:
        return wk_retain(b);
    }
}

static bool build(wk_device *dev, const p_input *in, const void *host, built *out)
{
    out->base = wk_from_host(dev, in->dt, base_shape(in), host);
    out->view = out->base ? make_view(out->base, in) : NULL;
    return out->view != NULL;
}

/* row: the base's last dim (PG_INF_ROWS, PG_MASK_INF) */
static void fill(const p_input *in, void *host, int64_t n, int64_t row, t_rng *r)
{
    wk_dtype dt = in->dt;
    if (row < 1) row = 1;
    for (int64_t i = 0; i < n; i++) {
        switch (in->gen) {
        case PG_INF_ROWS: {
            const int64_t rw = i / row;
            bool inf = rw % 4 == 1 || (rw % 4 == 2 && (i % row) % 3 == 0);
            double v = t_rng_range(r, in->lo, in->hi);
            t_put(dt, host, i, inf ? -INFINITY : v);
            break;
        }
        case PG_MASK_INF: {
            double v = t_rng_range(r, in->lo, in->hi);
            t_put(dt, host, i, i < row || t_rng_int(r, 0, 9) == 0 ? -INFINITY : v);
            break;
        }
        case PG_POISON: t_put_bits(dt, host, i, 0x5A5A5A5A5A5A5A5Aull); break;
        case PG_Q8: {
            const int64_t j = i % 32 == 0 || (i / row) % 32 == 0 ? (t_rng_next(r) & 1 ? 127 : -127) : t_rng_int(r, -127, 127);
            t_put(dt, host, i, (double)j / 64);
            break;
        }
        case PG_IDS: t_puti(dt, host, i, in->hi > 0 ? t_rng_int(r, 0, (int64_t)in->hi - 1) : 0); break;
        case PG_IDS_BAD: t_puti(dt, host, i, i == n / 2 ? (int64_t)in->lo : in->hi > 0 ? t_rng_int(r, 0, (int64_t)in->hi - 1) : 0); break;
        case PG_MASK: { static const int64_t m[] = { 0, 1, 0, 256, 0, 65536, (int64_t)1 << 32 };
                        int64_t v = m[t_rng_int(r, 0, dt == WK_U8 ? 1 : dt == WK_U32 ? 5 : 6)];
                        t_puti(dt, host, i, v); break; }
        case PG_FULL:
            if (t_is_float(dt)) t_put(dt, host, i, (t_rng_unit(r) - 0.5) * ldexp(1.0, (int)t_rng_int(r, -10, 12)));
            else t_puti(dt, host, i, t_wrap(dt, t_rng_next(r)));
            break;
        case PG_SMALLSET: { static const double s[] = { -2, -1, 0, 1, 2, 3, 0.5 };
                            double v = s[t_rng_int(r, 0, t_is_float(dt) ? 6 : 5)];
                            if (!t_is_float(dt) && t_int_min(dt) == 0 && v < 0) v = -v;
                            t_put(dt, host, i, v); break; }
        case PG_SORTKEYS:
            if (t_rng_int(r, 0, 3) == 0) {
                static const double fs[] = { NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0, 0.5 };
                if (t_is_float(dt)) t_put(dt, host, i, fs[t_rng_int(r, 0, 7)]);
                else {
                    int64_t v = t_rng_int(r, 0, 3);
                    t_puti(dt, host, i, v == 0 ? t_int_min(dt) : v == 1 ? t_int_max(dt) : v == 2 ? 0 : 1);
                }
            } else if (t_is_float(dt)) t_put(dt, host, i, (t_rng_unit(r) - 0.5) * ldexp(1.0, (int)t_rng_int(r, -10, 12)));
            else t_puti(dt, host, i, t_wrap(dt, t_rng_next(r)));
            break;
        case PG_AWAY: { double v = t_rng_range(r, in->lo, in->hi); t_put(dt, host, i, t_rng_next(r) & 1 ? -v : v); break; }
        case PG_POSITIVE: t_put(dt, host, i, t_rng_range(r, in->lo, in->hi)); break;
        default:
            if (t_is_float(dt)) t_put(dt, host, i, t_rng_range(r, in->lo, in->hi));
            else t_puti(dt, host, i, t_rng_int(r, (int64_t)fmax(in->lo, (double)t_int_min(dt)), (int64_t)fmin(in->hi, (double)t_int_max(dt))));
            break;
        }
    }
}

/* ---- running a case on one device ------------------------------------------- */

/* the quantized operand of a PF_DEQUANTIZE / PF_QMATMUL / PF_QGATHER case:
 * in[0]'s f32 values quantized to c->to on the cpu (the reference
 * quantizers), moved to dev, rows 1 .. rows - 2 when c->dims[0] */
static wk_tensor *quant_operand(wk_device *dev, const p_case *c, const void *host)
{
    wk_tensor *f = wk_from_host(cpu, WK_F32, c->in[0].shape, host);
    wk_tensor *q = f ? wk_quantize(f, c->to) : NULL;
    wk_tensor *d = q ? wk_to_device(q, dev) : NULL;
    wk_tensor *v = d && c->dims[0] ? wk_narrow(d, 0, 1, c->in[0].shape.dims[0] - 2) : wk_retain(d);
    wk_release(f);
    wk_release(q);
    wk_release(d);
    return v;
}

/* t's slice i along dim 0 as shape s (the narrowed view released) */
static wk_tensor *slice0(wk_tensor *t, int64_t i, wk_shape s)
{
    wk_tensor *n = t ? wk_narrow(t, 0, i, 1) : NULL, *r = n ? wk_reshape(n, s) : NULL;
    wk_release(n);
    return r;
}

/* Runs c on dev; returns the tensor to compare (the result, or for
 * in-place ops the destination's whole storage) or NULL with *st set. */
static wk_tensor *run_on(wk_device *dev, const p_case *c, void *const *host, uint64_t seed, wk_status *st)
{
    built b[4] = { { 0 } };
    wk_tensor *r = NULL;
    *st = WK_OK;
    for (int i = 0; i < c->nin; i++)
        if (!build(dev, &c->in[i], host[i], &b[i])) { *st = wk_last_status(); goto done; }
    wk_tensor *x = c->nin > 0 ? b[0].view : NULL, *y = c->nin > 1 ? b[1].view : NULL, *z = c->nin > 2 ? b[2].view : NULL;
    const int *dims = c->dim < 0 ? NULL : c->dims;
    int nd = c->dim < 0 ? 0 : c->dim;
    switch (c->fam) {
    case PF_UNARY: r = wk_unary((wk_unary_op)c->sub, x); break;
    case PF_AFFINE: r = wk_affine(x, c->p0, c->p1); break;
    case PF_POWF: r = wk_powf(x, c->p0); break;
    case PF_ELU: r = wk_elu(x, c->p0); break;
    case PF_BINARY: r = wk_binary((wk_binary_op)c->sub, x, y); break;
    case PF_CMP: r = wk_cmp((wk_cmp_op)c->sub, x, y); break;
    case PF_WHERE: r = wk_where(x, y, z); break;
    case PF_CAST: r = wk_to_dtype(x, c->to); break;
    case PF_REDUCE: r = wk_reduce((wk_reduce_op)c->sub, x, dims, nd, c->keepdim); break;
    case PF_MATMUL: r = wk_matmul(x, y); break;
    case PF_INDEX_SELECT: r = wk_index_select(x, y, c->dims[0]); break;
    case PF_GATHER: r = wk_gather(x, y, c->dims[0]); break;
    case PF_CAT: r = wk_cat((wk_tensor *const[]){ x, y, z }, c->nin, c->dims[0]); break;
    case PF_SOFTMAX: r = c->sub ? wk_log_softmax(x, c->dims[0]) : wk_softmax(x, c->dims[0]); break;
    case PF_RMS_NORM: r = c->sub == 2 ? wk_rms_norm_gemma(x, y, c->p0) : wk_rms_norm(x, c->sub == 1 ? NULL : y, c->p0); break;
    case PF_LAYER_NORM: r = wk_layer_norm(x, c->sub == 1 ? NULL : y, c->sub == 0 ? z : NULL, c->p0); break;
    case PF_ADD_RMS_NORM: {
        wk_tensor *sum = NULL, *n = wk_add_rms_norm(x, y, z, c->p0, c->sub == 1, &sum);
        if (n && sum) r = wk_stack((wk_tensor *const[]){ n, sum }, 2, 0);
        wk_release(n);
        wk_release(sum);
        break;
    }
    case PF_SILU_MUL: r = wk_silu_mul(x, y); break;
    case PF_ROPE: {
        const int64_t off = (int64_t)c->p0;
        r = c->sub == 0 ? wk_rope(x, y, z, off) : c->sub == 1 ? wk_rope_i(x, y, z, off) : wk_rope_thd(x, y, z, off);
        break;
    }
    case PF_LINEAR_SILU_MUL: r = wk_linear_silu_mul(x, y); break;
    case PF_ROPE_KV:
    case PF_LINEAR_ROPE_KV: {
        const bool lin = c->fam == PF_LINEAR_ROPE_KV;
        wk_tensor *kv = b[3].view, *pos = NULL;
        const int64_t *sh = c->in[3].shape.dims, *th = c->in[2].shape.dims;
        const wk_shape cs = WK_SHAPE(sh[1], sh[2], sh[3], sh[4]), ts = WK_SHAPE(th[1], th[2]);
        wk_tensor *kc = slice0(kv, 0, cs), *vc = slice0(kv, 1, cs);
        /* linear_rope_kv: the tables are z's two halves */
        wk_tensor *tc = lin ? slice0(z, 0, ts) : wk_retain(y), *tsn = lin ? slice0(z, 1, ts) : wk_retain(z);
        if (c->sub & 2) pos = wk_from_host(dev, WK_U32, WK_SHAPE(1), &(uint32_t){ (uint32_t)c->p0 });
        const int64_t p0 = (c->sub & 2) ? 0 : (int64_t)c->p0;
        wk_tensor *q = !kc || !vc || !tc || !tsn || (!pos && (c->sub & 2)) ? NULL
                     : lin ? wk_linear_rope_kv(x, y, c->opt[0], tc, tsn, p0, pos, c->sub & 1, kc, vc)
                           : wk_rope_kv(x, c->opt[0], tc, tsn, p0, pos, c->sub & 1, kc, vc);
        wk_tensor *fq = q ? wk_reshape(q, WK_SHAPE(-1)) : NULL, *fk = q ? wk_reshape(kc, WK_SHAPE(-1)) : NULL,
                  *fv = q ? wk_reshape(vc, WK_SHAPE(-1)) : NULL;
        if (fq && fk && fv) r = wk_cat((wk_tensor *const[]){ fq, fk, fv }, 3, 0);
        wk_release(fq), wk_release(fk), wk_release(fv), wk_release(q), wk_release(kc), wk_release(vc), wk_release(pos);
        wk_release(tc), wk_release(tsn);
        break;
    }
    case PF_ATTENTION: {
        const wk_attention_opts o = { .scale = c->p0, .softcap = c->p1, .causal = c->causal, .window = c->window,
                                      .mask = c->nin > 3 ? b[3].view : NULL };
        r = wk_attention(x, y, z, &o);
        break;
    }
    case PF_PAGED_ATTENTION: {
        wk_tensor *ids[3] = { NULL, NULL, NULL };
        for (int i = 0; i < 3; i++) ids[i] = wk_from_host(dev, WK_U32, c->ids_shape[i], c->ids[i]);
        const wk_paged_attention_opts o = { .scale = c->p0, .softcap = c->p1, .window = c->window };
        if (ids[0] && ids[1] && ids[2]) r = wk_paged_attention(x, y, z, ids[0], ids[1], ids[2], &o);
        for (int i = 0; i < 3; i++) wk_release(ids[i]);
        break;
    }
    case PF_DEQUANTIZE:
    case PF_QMATMUL:
    case PF_QGATHER: {
        wk_tensor *q = quant_operand(dev, c, host[0]);
        if (q)
            r = c->fam == PF_DEQUANTIZE ? wk_dequantize(q, (wk_dtype)c->sub)
              : c->fam == PF_QMATMUL ? wk_qmatmul(y, q) : wk_qgather(q, y, (wk_dtype)c->sub);
        wk_release(q);
        break;
    }
    case PF_CONV: {
        const int64_t *o = c->opt;
        const wk_conv_opts co = { { o[0], o[1] }, { o[2], o[3] }, { o[4], o[5] }, { o[6], o[7] }, o[8] };
        r = c->sub == 0 ? wk_conv1d(x, y, z, &co) : c->sub == 1 ? wk_conv_transpose1d(x, y, z, &co)
          : c->sub == 2 ? wk_conv2d(x, y, z, &co) : wk_conv_transpose2d(x, y, z, &co);
        break;
    }
    case PF_POOL: {
        const int64_t *o = c->opt;
        const wk_pool_opts po = { { o[0], o[1] }, { o[2], o[3] }, { o[4], o[5] }, o[6] != 0, o[7] != 0 };
        wk_tensor *idx = NULL;
        r = c->sub == 0 ? wk_avg_pool2d(x, &po) : wk_max_pool2d(x, &po, c->sub == 2 ? &idx : NULL);
        if (c->sub == 2) {
            wk_release(r);
            r = idx;
        }
        break;
    }
    case PF_UPSAMPLE:
        r = c->sub == 0 ? wk_upsample_nearest1d(x, c->dims[1], c->p1)
          : c->sub == 1 ? wk_upsample_nearest2d(x, c->dims[0], c->dims[1], c->p0, c->p1)
                        : wk_upsample_bilinear2d(x, c->dims[0], c->dims[1], c->opt[0] != 0, c->p0, c->p1);
        break;
    case PF_SORT: {
        wk_tensor *idx = NULL;
        if (c->sub == 0) r = wk_arg_sort(x, c->opt[0] != 0);
        else if (c->sub == 1) r = wk_sort(x, c->opt[0] != 0, NULL);
        else r = wk_topk(x, c->opt[1], c->opt[0] != 0, c->sub == 3 ? &idx : NULL);
        if (c->sub == 3) {
            wk_release(r);
            r = idx;
        }
        break;
    }
    case PF_RAND_UNIFORM:
    case PF_RAND_NORMAL:
        *st = wk_device_set_seed(dev, seed);
        if (*st == WK_OK)
            r = c->fam == PF_RAND_UNIFORM ? wk_rand_uniform(dev, c->dt, c->in[0].shape, c->p0, c->p1)
                                          : wk_rand_normal(dev, c->dt, c->in[0].shape, c->p0, c->p1);
        break;
    default: {
        /* in place: dst = in[0] */
        switch (c->fam) {
        case PF_SCATTER_SET: *st = wk_scatter_set(x, y, z, c->dims[0]); break;
        case PF_SCATTER_ADD: *st = wk_scatter_add(x, y, z, c->dims[0]); break;
        case PF_INDEX_ADD: *st = wk_index_add(x, y, z, c->dims[0]); break;
        case PF_COPY_INTO: *st = wk_copy_into(x, y); break;
        case PF_CONST_SET: *st = wk_const_set(x, c->p0); break;
        case PF_COPY2D: *st = wk_copy2d(b[0].base, b[1].base, c->dims[0], c->dims[1], c->dims[2], c->dims[3], 1, 2); break;
        default: *st = WK_ERR_ARGUMENT; break;
        }
        if (*st == WK_OK || c->expect_err) r = wk_retain(b[0].base);   /* expect_err: to see it unchanged */
        goto done;
    }
    }
    if (!r && *st == WK_OK) *st = wk_last_status();
done:
    for (int i = 0; i < 4; i++) {
        wk_release(b[i].view);
        wk_release(b[i].base);
    }
    return r;
}

static void *read_back(const wk_tensor *t, int64_t *n)
{
    *n = wk_tensor_numel(t);
    size_t bytes = (size_t)*n * t_size(wk_tensor_dtype(t));
    void *p = malloc(bytes + 8);
    if (p && wk_to_host(t, p, bytes) != WK_OK) { free(p); return NULL; }
    return p;
}

static double bound_for(const p_case *c, wk_dtype dt)
{
    static const double el[WK_DTYPE_COUNT] = { 0, 0, 0, 0, 0, 5e-6, 1e-7, 1e-11, 1e-26, 5e-3 };
    static const double acc[WK_DTYPE_COUNT] = { 0, 0, 0, 0, 0, 2e-5, 1e-6, 1e-9, 1e-24, 2e-2 };
    if (c->bound > 0) return c->bound;
    return c->accum ? acc[dt] : el[dt];
}

/* returns NULL when they agree, else a message (static buffer) */
static const char *compare(const p_case *c, const wk_tensor *a, const wk_tensor *b)
{
    static char msg[512];
    wk_dtype dt = wk_tensor_dtype(a);
    wk_shape sa = wk_tensor_shape(a), sb = wk_tensor_shape(b);
    if (dt != wk_tensor_dtype(b)) return "result dtypes differ";
    bool same_shape = sa.rank == sb.rank;
    for (int d = 0; same_shape && d < sa.rank; d++) same_shape = sa.dims[d] == sb.dims[d];
    if (!same_shape) return "result shapes differ";
    int64_t n;
    void *pa = read_back(a, &n), *pb = read_back(b, &n);
    const char *res = NULL;
    if (!pa || !pb) { snprintf(msg, sizeof msg, "reading results failed: %s", wk_last_error()); res = msg; goto out; }
    bool exact = c->exact || !t_is_float(dt);
    double num = 0, den = 0;
    for (int64_t i = 0; i < n && !res; i++) {
        double x = t_get(dt, pa, i), y = t_get(dt, pb, i);
        bool nx = isnan(x), ny = isnan(y);
        if (nx || ny) {
            if (nx != ny) { snprintf(msg, sizeof msg, "element %lld: cpu %.9g, device %.9g (NaN)", (long long)i, x, y); res = msg; }
            continue;
        }
        if (exact || isinf(x) || isinf(y)) {
            if (exact ? t_bits(dt, pa, i) != t_bits(dt, pb, i) : x != y) {
                snprintf(msg, sizeof msg, "element %lld: cpu %.17g (0x%llx), device %.17g (0x%llx)", (long long)i, x,
                         (unsigned long long)t_bits(dt, pa, i), y, (unsigned long long)t_bits(dt, pb, i));
                res = msg;
            }
            continue;
        }
        num += (x - y) * (x - y);
        den += x * x;
    }
    if (!res) {
        /* gelu, gelu_erf, elu lose relative accuracy where the result is
         * tiny (1+tanh, 1+erf, exp-1 in f32): errors count against the
         * input scale there */
        if ((c->fam == PF_UNARY && (c->sub == WK_GELU || c->sub == WK_GELU_ERF)) || c->fam == PF_ELU) den += (double)n;
        double err = num / (den > 0 ? den : 1), bound = bound_for(c, dt);
        if (!(err <= bound)) { snprintf(msg, sizeof msg, "normalized error %.3g > bound %.3g", err, bound); res = msg; }
    }
out:
    free(pa);
    free(pb);
    return res;
}

/* ---- one case on every device ---------------------------------------------------- */

/* An expect_err case on one device: NULL when it failed as it must
 * (WK_ERR_INDEX; an in-place destination's storage still host[0]), else
 * a message (static buffer). */
static const char *run_err(wk_device *dev, const p_case *c, void *const *host, uint64_t seed)
{
    static char msg[600];
    wk_status st;
    wk_tensor *r = run_on(dev, c, host, seed, &st);
    const bool in_place = c->fam != PF_INDEX_SELECT && c->fam != PF_GATHER && c->fam != PF_QGATHER &&
                          c->fam != PF_PAGED_ATTENTION;
    const char *why = NULL;
    if (st != WK_ERR_INDEX || (!in_place && r)) {
        snprintf(msg, sizeof msg, "expected WK_ERR_INDEX, got %s (%s)", wk_status_name(st), r && !in_place ? "a result" : wk_last_error());
        why = msg;
    } else if (in_place) {
        int64_t n;
        void *p = r ? read_back(r, &n) : NULL;
        size_t bytes = p ? (size_t)n * t_size(c->in[0].dt) : 0;
        if (!p) snprintf(msg, sizeof msg, "reading the destination back failed: %s", wk_last_error()), why = msg;
        else if (memcmp(p, host[0], bytes)) snprintf(msg, sizeof msg, "a failed op changed its destination"), why = msg;
        free(p);
    }
    wk_release(r);
    wk_clear_error();
    return why;
}

/* count and print one case's outcome on device k (why NULL: passed) */
static void report(const p_case *c, int k, uint64_t seed, const char *why)
{
    if (why) {
        n_fail++;
        printf("FAIL %s on %s seed %llu: %s\n", c->name, dev_names[k], (unsigned long long)seed, why);
    } else {
        n_pass++;
        if (verbose) printf("ok   %s on %s\n", c->name, dev_names[k]);
    }
}

void p_run(p_case *c)
{
    if (f_op && strcmp(f_op, c->op)) return;
    if (f_dtype && strcmp(f_dtype, wk_dtype_name(c->dt))) return;
    if (list_only) { printf("%s\n", c->name); return; }
    uint64_t seed = seed_set ? seed_opt : (t_hash_str(c->name) & 0xFFFFFFFFu);
    t_rng r = { seed * 0x2545F4914F6CDD1Dull + 1 };
    void *host[4] = { 0 };
    for (int i = 0; i < c->nin; i++) {
        wk_shape b = base_shape(&c->in[i]);
        int64_t n = 1;
        for (int d = 0; d < b.rank; d++) n *= b.dims[d];
        host[i] = calloc(1, (size_t)n * t_size(c->in[i].dt) + 8);
        fill(&c->in[i], host[i], n, b.rank ? b.dims[b.rank - 1] : 1, &r);
    }
    wk_status st;
    int oi = op_index(c->op);
    if (c->expect_err) {
        const char *cw = run_err(cpu, c, host, seed);
        char cbuf[700];
        if (cw) snprintf(cbuf, sizeof cbuf, "on the cpu: %s", cw);
        for (int k = 0; k < ndev; k++) {
            if (!wk_supports(devs[k], c->op, c->dt)) { n_skip++; continue; }
            const char *why = cw ? cbuf : run_err(devs[k], c, host, seed);
            report(c, k, seed, why);
            if (oi >= 0 && why) cov[k][oi][c->dt] = 2;
        }
        for (int i = 0; i < c->nin; i++) free(host[i]);
        return;
    }
    wk_tensor *want = run_on(cpu, c, host, seed, &st);
    for (int k = 0; k < ndev; k++) {
        const char *why = NULL;
        char buf[600];
        wk_tensor *got = NULL;
        if (!wk_supports(devs[k], c->op, c->dt)) {   /* a documented gap (support check below) */
            n_skip++;
            continue;
        }
        if (!want) {
            snprintf(buf, sizeof buf, "the cpu reference failed: %s: %s", wk_status_name(st), wk_last_error());
            why = buf;
        } else {
            got = run_on(devs[k], c, host, seed, &st);
            if (!got) { snprintf(buf, sizeof buf, "%s: %s", wk_status_name(st), wk_last_error()); why = buf; }
            else why = compare(c, want, got);
        }
        report(c, k, seed, why);
        if (oi >= 0) {
            unsigned char *cell = &cov[k][oi][c->dt];
            if (why) *cell = 2;
            else if (*cell == 0) *cell = 1;
        }
        wk_release(got);
        wk_clear_error();
    }
    wk_release(want);
    for (int i = 0; i < c->nin; i++) free(host[i]);
}

/* ---- support check and coverage table ------------------------------------------------- */

/* (op, dtype) pairs a GPU may lack though the cpu has them: by design
 * (docs/nn.md), attention and paged attention have no f64 kernel on GPUs. */
static bool allowed_gap(const char *op, wk_dtype dt)
{
    return (!strcmp(op, "attention") || !strcmp(op, "paged_attention")) && dt == WK_F64;
}

static void support_check_and_table(void)
{
    const char *const *names = wk_op_names();
    for (int k = 0; k < ndev; k++) {
        int fewer = 0, sup_cpu = 0, sup_dev = 0;
        for (int o = 0; names[o] && o < MAX_OPS; o++)
            for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++) {
                bool c = wk_supports(cpu, names[o], (wk_dtype)d), g = wk_supports(devs[k], names[o], (wk_dtype)d);
                sup_cpu += c;
                sup_dev += g;
                if (c && !g && allowed_gap(names[o], (wk_dtype)d)) {
                    printf("note: %s does not support %s %s (documented; its cases are skipped there)\n", dev_names[k],
                           names[o], wk_dtype_name((wk_dtype)d));
                } else if (c && !g) {
                    if (fewer++ < 20) printf("FAIL supports: %s does not support %s %s, the cpu does\n", dev_names[k], names[o], wk_dtype_name((wk_dtype)d));
                }
            }
        if (fewer) {
            printf("FAIL supports: %s supports %d pairs the cpu supports and it lacks %d\n", dev_names[k], sup_dev, fewer);
            n_fail++;
        } else {
            n_pass++;
        }
        printf("\ncoverage on %s (T passed, F failed, I supported untested, ! cpu-only, - neither)\n%-20s", dev_names[k], "op");
        for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++) printf("%7s", wk_dtype_name((wk_dtype)d));
        printf("\n");
        for (int o = 0; names[o] && o < MAX_OPS; o++) {
            char row[WK_DENSE_DTYPE_COUNT];
            bool any = false;
            for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++) {
                bool c = wk_supports(cpu, names[o], (wk_dtype)d), g = wk_supports(devs[k], names[o], (wk_dtype)d);
                row[d] = cov[k][o][d] == 2 ? 'F' : cov[k][o][d] == 1 ? 'T' : g ? 'I' : c ? '!' : '-';
                any |= row[d] != '-';
            }
            if (!any) continue;
            printf("%-20s", names[o]);
            for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++) printf("%7c", row[d]);
            printf("\n");
        }
        printf("%s: %d (op, dtype) pairs supported, cpu %d\n", dev_names[k], sup_dev, sup_cpu);
    }
}

static void usage(void)
{
    printf("usage: wick-parity [--op NAME] [--dtype NAME] [--device NAME] [--seed N] [--quick] [--list] [-v]\n");
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--op") && i + 1 < argc) f_op = argv[++i];
        else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) f_dtype = argv[++i];
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) f_device = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) { seed_opt = strtoull(argv[++i], NULL, 0); seed_set = true; }
        else if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--list")) list_only = true;
        else if (!strcmp(argv[i], "-v")) verbose = true;
        else { usage(); return !strcmp(argv[i], "-h") || !strcmp(argv[i], "--help") ? 0 : 2; }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* the cpu is the reference here: its qmatmul in exact f32 sums (its
       default rounds x to 8 bits; docs/cpu-qdot.md), unless asked */
    setenv("WICK_CPU_QDOT", "0", 0);
    cpu = wk_device_open("cpu");
    if (!cpu) { printf("FAIL setup: cannot open cpu: %s\n0 passed, 1 failed\n", wk_last_error()); return 1; }
    static const char *kinds[] = { "cuda", "rocm" };
    for (int k = 0; k < 2; k++) {
        int n = wk_device_count(kinds[k]);
        const char *why = wk_plugin_status(kinds[k]);
        if (!n && why && *why && verbose) printf("note: no %s devices: %s\n", kinds[k], why);
        for (int i = 0; i < n && ndev < MAX_DEV; i++) {
            snprintf(dev_names[ndev], sizeof dev_names[ndev], "%s:%d", kinds[k], i);
            if (f_device && strcmp(f_device, dev_names[ndev])) continue;
            devs[ndev] = wk_device_open(dev_names[ndev]);
            if (!devs[ndev]) { printf("FAIL setup: cannot open %s: %s\n", dev_names[ndev], wk_last_error()); n_fail++; continue; }
            ndev++;
        }
    }
    if (ndev == 0 && (!f_device || !strcmp(f_device, "cpu"))) {
        snprintf(dev_names[0], sizeof dev_names[0], "cpu");
        devs[ndev++] = wk_device_open("cpu");
        if (!list_only) printf("note: no GPU device; running cpu against cpu\n");
    }
    if (ndev == 0 && !list_only) printf("FAIL setup: no device named %s\n", f_device), n_fail++;
    for (int k = 0; k < ndev && !list_only; k++) {
        wk_device_info info;
        if (wk_device_info_get(devs[k], &info) == WK_OK) printf("device %s: %s\n", dev_names[k], info.model);
    }
    p_all_cases();
    if (!list_only) {
        support_check_and_table();
        if (n_skip) printf("note: %d case runs skipped: their (op, dtype) is not supported on the device\n", n_skip);
        printf("%d passed, %d failed\n", n_pass, n_fail);
    }
    for (int k = 0; k < ndev; k++) wk_device_close(devs[k]);
    wk_device_close(cpu);
    return n_fail ? 1 : 0;
}
