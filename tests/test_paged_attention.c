/* test_paged_attention.c — wk_paged_attention (docs/nn.md, "Paged
 * attention") on the cpu and on every GPU device of the build, against a
 * float64 reference written here: each sequence's keys and values are
 * copied out of the pools through its block table into a dense array, and
 * every query token's attention is computed with plain loops over it
 * (scores, soft-cap, a two-pass softmax).
 *
 * The cases mix decode rows (one query of a sequence, 1 to 3000 keys) and
 * prefill chunks (consecutive positions of one sequence, from position 0 or
 * continuing a cached prefix) in one call, the tokens in shuffled order;
 * block tables hold shuffled, non-contiguous block ids, junk ids (~0) in
 * the entries no query reads (past a sequence's end, before a window), and
 * full blocks shared between sequences; GQA ratios 1, 2, 3, 4, 8, 16;
 * windows (1, and shorter and longer than a sequence), soft-cap, a scale;
 * D 8, 64, 128, 256; BS 1, 4, 7, 16, 32; q as a transposed or narrowed
 * view, pools as narrowed views (16-byte aligned rows or not) and as views
 * whose last stride is not 1; f16, bf16, f32, and f64 where the device has
 * it. Each token's output rows must match the reference rounded to the
 * dtype (normalized error within t_bound_acc). The output is poisoned
 * first (a NaN tensor of its size released just before the call, whose
 * memory the allocator hands out again), so a kernel that writes nothing
 * fails. paged/<device>/<dtype>/dense_*: the same tokens through
 * wk_attention on each sequence's keys laid out densely agree with the
 * paged op; paged/<device>/<dtype>/solo_*: each token's rows are the bits
 * of the call made with that token alone (batch invariance).
 * paged/<device>/errors/...: NULL arguments, dtypes, ranks,
 * shapes, options, a device mismatch, and sequence, position and block ids
 * out of range (WK_ERR_INDEX naming the id), junk ids outside what is read
 * accepted.
 *
 * Case names: paged/<device>/<dtype>/<case>; seeds printed on failure
 * (--seed replays).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "test.h"

#define N_(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define PA_JUNK 0xFFFFFFFFu     /* a block id in entries no query reads */

/* input layouts */
enum {
    PL_CONTIG,
    PL_T01,        /* dims 0 and 1 swapped in memory (q: [Hq, T, D] seen as [T, Hq, D]) */
    PL_NARROW,     /* a window of a larger tensor, offset 1 in every dim: rows not 16-byte aligned */
    PL_NARROW16,   /* a window offset 1 in the leading dims and 8 in the last: rows 16-byte aligned */
    PL_LAST        /* the last two dims swapped in memory: last stride != 1 (the core copies) */
};

typedef struct pa_case {
    const char *name;
    int64_t Hq, Hkv, D, BS;
    int nseq;
    int64_t len[8];      /* keys of each sequence (its length after this step)           */
    int64_t nq[8];       /* its query tokens: its last nq positions (1: a decode row)     */
    int64_t window;
    double scale, softcap, qr;   /* q values in [-qr, qr] */
    int qlay, play;
    bool share;          /* sequences 1.. share sequence 0's first full blocks            */
    bool shuffle;        /* the tokens in a random order (else sequence by sequence)      */
    bool cheap_only;     /* big: f32 and bf16 only                                        */
} pa_case;

static const pa_case pcases[] = {
    { "t1_len1", 2, 1, 64, 16, 1, { 1 }, { 1 }, 0, 0, 0, 1, PL_CONTIG, PL_CONTIG, false, false, false },
    { "t1_bs1_gqa2", 4, 2, 64, 1, 1, { 37 }, { 1 }, 0, 0, 0, 1, PL_CONTIG, PL_CONTIG, false, false, false },
    { "decode8_lens_1_to_3000", 8, 2, 128, 16, 8, { 1, 15, 16, 17, 200, 1023, 3000, 64 }, { 1, 1, 1, 1, 1, 1, 1, 1 },
      0, 0, 0, 1, PL_CONTIG, PL_CONTIG, false, true, true },
    { "decode_gqa1", 4, 4, 64, 16, 3, { 50, 700, 33 }, { 1, 1, 1 }, 0, 0, 0, 1, PL_CONTIG, PL_CONTIG, false, true, false },
    { "decode_gqa8", 8, 1, 128, 16, 3, { 300, 2, 1500 }, { 1, 1, 1 }, 0, 0, 0, 2, PL_CONTIG, PL_CONTIG, false, true, false },
    { "gqa3", 6, 2, 64, 16, 2, { 90, 41 }, { 1, 3 }, 0, 0, 0, 1, PL_CONTIG, PL_CONTIG, false, true, false },
    { "gqa16", 16, 1, 64, 16, 2, { 129, 20 }, { 1, 2 }, 0, 0, 0, 1, PL_CONTIG, PL_CONTIG, false, true, false },
    { "bs7_mixed", 4, 2, 64, 7, 4, { 100, 7, 8, 49 }, { 1, 3, 1, 5 }, 0, 0, 0, 1, PL_CONTIG, PL_CONTIG, false, true, false },
    { "prefill_and_decode", 4, 2, 64, 16, 4, { 300, 64, 1000, 5 }, { 1, 64, 1, 5 }, 0, 0, 0, 1, PL_CONTIG, PL_CONTIG,
      false, true, false },
    { "prefill_continued_bs32", 8, 8, 64, 32, 1, { 500 }, { 37 }, 0, 0, 0, 1, PL_CONTIG, PL_CONTIG, false, false, false },
    { "window256", 4, 1, 64, 16, 3, { 2000, 100, 40 }, { 1, 20, 1 }, 256, 0, 0, 1, PL_CONTIG, PL_CONTIG, false, true,
      false },
    { "window1", 2, 1, 64, 16, 2, { 50, 3 }, { 3, 3 }, 1, 0, 0, 1, PL_CONTIG, PL_CONTIG, false, true, false },
    { "window_bs5", 4, 2, 64, 5, 2, { 77, 12 }, { 4, 12 }, 9, 0, 0, 1, PL_CONTIG, PL_CONTIG, false, true, false },
    { "softcap_scale", 4, 2, 64, 16, 3, { 130, 17, 60 }, { 1, 17, 2 }, 0, 0.3, 5, 4, PL_CONTIG, PL_CONTIG, false, true,
      false },
    { "d8_bs4", 2, 1, 8, 4, 3, { 33, 1, 9 }, { 1, 1, 9 }, 0, 0, 0, 1, PL_CONTIG, PL_CONTIG, false, true, false },
    { "d256", 4, 2, 256, 16, 2, { 400, 20 }, { 1, 4 }, 0, 0, 0, 1, PL_CONTIG, PL_CONTIG, false, true, false },
    { "shared_blocks", 4, 2, 64, 16, 3, { 200, 180, 250 }, { 1, 1, 10 }, 0, 0, 0, 1, PL_CONTIG, PL_CONTIG, true, true,
      false },
    { "q_transposed", 4, 2, 128, 16, 3, { 70, 300, 16 }, { 1, 1, 16 }, 0, 0, 0, 1, PL_T01, PL_CONTIG, false, true, false },
    { "pools_narrowed", 4, 2, 64, 16, 3, { 70, 130, 8 }, { 1, 1, 4 }, 0, 0, 0, 1, PL_NARROW, PL_NARROW, false, true,
      false },
    { "narrowed_aligned", 8, 2, 128, 16, 3, { 90, 33, 12 }, { 1, 2, 12 }, 0, 0, 0, 1, PL_NARROW16, PL_NARROW16, false,
      true, false },
    { "pools_last_strided", 4, 2, 16, 8, 2, { 30, 9 }, { 1, 3 }, 0, 0, 0, 1, PL_LAST, PL_LAST, false, true, false },
    { "long_gqa4_d128", 32, 8, 128, 16, 3, { 3000, 2999, 1 }, { 1, 1, 1 }, 0, 0, 0, 1, PL_CONTIG, PL_CONTIG, false,
      true, true },
};

/* ---- inputs --------------------------------------------------------------------------------- */

static int64_t numel_of(wk_shape s)
{
    int64_t n = 1;
    for (int d = 0; d < s.rank; d++) n *= s.dims[d];
    return n;
}

/* A tensor of logical shape s on dev in layout lay, from values uniform in
 * [lo, hi) rounded to dt; *vals (owned by the case) receives its logical
 * values in row-major order. Owned by the case. */
static wk_tensor *pa_input(wk_device *dev, wk_dtype dt, wk_shape s, int lay, double lo, double hi, double **vals)
{
    const int r = s.rank;
    wk_shape b = s;
    int64_t off[WK_MAX_RANK] = { 0 };
    if (lay == PL_T01) {
        b.dims[0] = s.dims[1];
        b.dims[1] = s.dims[0];
    } else if (lay == PL_LAST) {
        b.dims[r - 2] = s.dims[r - 1];
        b.dims[r - 1] = s.dims[r - 2];
    } else if (lay == PL_NARROW) {
        for (int d = 0; d < r; d++) b.dims[d] += 3, off[d] = 1;
    } else if (lay == PL_NARROW16) {
        for (int d = 0; d < r - 1; d++) b.dims[d] += 2, off[d] = 1;
        b.dims[r - 1] += 16, off[r - 1] = 8;
    }
    const int64_t bn = numel_of(b), n = numel_of(s);
    unsigned char *h = t_mem((size_t)bn * t_size(dt) + 8);
    for (int64_t i = 0; i < bn; i++) t_put(dt, h, i, t_rng_range(t_r(), lo, hi));
    wk_tensor *base = T_NEED(wk_from_host(dev, dt, b, h)), *v = base;
    if (!base) return NULL;
    if (lay == PL_T01) v = T_NEED(wk_transpose(base, 0, 1));
    if (lay == PL_LAST) v = T_NEED(wk_transpose(base, r - 2, r - 1));
    if (lay == PL_NARROW || lay == PL_NARROW16)
        for (int d = 0; d < r && v; d++) v = T_NEED(wk_narrow(v, d, off[d], s.dims[d]));
    if (!v) return NULL;
    double *x = t_mem((size_t)n * sizeof(double) + 8);
    int64_t idx[WK_MAX_RANK] = { 0 };
    for (int64_t i = 0; i < n; i++) {
        int64_t bi[WK_MAX_RANK], lin = 0;
        for (int d = 0; d < r; d++) bi[d] = idx[d] + off[d];
        if (lay == PL_T01) bi[0] = idx[1], bi[1] = idx[0];
        if (lay == PL_LAST) bi[r - 2] = idx[r - 1], bi[r - 1] = idx[r - 2];
        for (int d = 0; d < r; d++) lin = lin * b.dims[d] + bi[d];
        x[i] = t_get(dt, h, lin);
        for (int d = r - 1; d >= 0; d--) {   /* next logical index */
            if (++idx[d] < s.dims[d]) break;
            idx[d] = 0;
        }
    }
    *vals = x;
    return v;
}

static wk_tensor *u32_tensor(wk_device *dev, wk_shape s, const uint32_t *v) { return T_NEED(wk_from_host(dev, WK_U32, s, v)); }

/* ---- one call: its ids, inputs and the float64 reference ------------------------------------ */

typedef struct pa_call {
    int64_t T, S, MB, NB;
    uint32_t *bt, *seq, *pos;
    double *q, *kp, *vp;           /* logical values: q [T, Hq, D], pools [NB, BS, Hkv, D] */
    wk_tensor *tq, *tk, *tv, *tbt, *tseq, *tpos;
} pa_call;

static int64_t lo_of(int64_t p, int64_t window) { return window > 0 && p - window + 1 > 0 ? p - window + 1 : 0; }

/* The ids of C (random block assignment, shuffled tokens) and its inputs on dev. */
static bool pa_make(wk_device *dev, wk_dtype dt, const pa_case *C, pa_call *k)
{
    t_rng *r = t_r();
    const int64_t BS = C->BS;
    int64_t T = 0, MB = 0, used = 0;
    for (int s = 0; s < C->nseq; s++) {
        T += C->nq[s];
        const int64_t nb = (C->len[s] + BS - 1) / BS;
        MB = nb > MB ? nb : MB;
        used += nb;
    }
    MB += 2;                                           /* slack columns: junk */
    const int64_t NB = used + 3 + C->nseq;             /* spare blocks never read */
    k->T = T, k->S = C->nseq + 1, k->MB = MB, k->NB = NB;   /* one more row than used: a junk row */
    /* physical block ids: a random permutation of the pool */
    uint32_t *perm = t_mem((size_t)NB * sizeof(uint32_t));
    for (int64_t i = 0; i < NB; i++) perm[i] = (uint32_t)i;
    for (int64_t i = NB - 1; i > 0; i--) {
        const int64_t j = t_rng_int(r, 0, i);
        const uint32_t x = perm[i];
        perm[i] = perm[j], perm[j] = x;
    }
    k->bt = t_mem((size_t)(k->S * MB) * sizeof(uint32_t));
    for (int64_t i = 0; i < k->S * MB; i++) k->bt[i] = PA_JUNK;
    int64_t next = 0;
    /* full blocks sequence 0 shares with the others */
    int64_t share = 0;
    if (C->share) {
        int64_t full = C->len[0] / BS;
        for (int s = 1; s < C->nseq; s++) full = C->len[s] / BS < full ? C->len[s] / BS : full;
        share = full > 1 ? full - 1 : full;
    }
    for (int s = 0; s < C->nseq; s++) {
        const int64_t nb = (C->len[s] + BS - 1) / BS;
        for (int64_t b = 0; b < nb; b++)
            k->bt[s * MB + b] = s > 0 && b < share ? k->bt[b] : perm[next++];
    }
    /* tokens: the last nq positions of each sequence */
    k->seq = t_mem((size_t)T * sizeof(uint32_t) + 4);
    k->pos = t_mem((size_t)T * sizeof(uint32_t) + 4);
    int64_t t = 0;
    for (int s = 0; s < C->nseq; s++)
        for (int64_t i = 0; i < C->nq[s]; i++, t++) {
            k->seq[t] = (uint32_t)s;
            k->pos[t] = (uint32_t)(C->len[s] - C->nq[s] + i);
        }
    if (C->shuffle)
        for (int64_t i = T - 1; i > 0; i--) {
            const int64_t j = t_rng_int(r, 0, i);
            uint32_t x = k->seq[i];
            k->seq[i] = k->seq[j], k->seq[j] = x;
            x = k->pos[i];
            k->pos[i] = k->pos[j], k->pos[j] = x;
        }
    /* with a window, the blocks before every query's window are junk too (not shared ones: sequence 0 reads them) */
    if (C->window > 0)
        for (int s = 0; s < C->nseq; s++) {
            int64_t lo = INT64_MAX;
            for (int64_t i = 0; i < T; i++)
                if (k->seq[i] == (uint32_t)s) lo = lo_of(k->pos[i], C->window) < lo ? lo_of(k->pos[i], C->window) : lo;
            for (int64_t b = 0; b < lo / BS; b++)
                if (!(s > 0 && b < share)) k->bt[s * MB + b] = PA_JUNK;
        }
    k->tq = pa_input(dev, dt, WK_SHAPE(T, C->Hq, C->D), C->qlay, -C->qr, C->qr, &k->q);
    k->tk = pa_input(dev, dt, WK_SHAPE(NB, BS, C->Hkv, C->D), C->play, -1.5, 1.5, &k->kp);
    k->tv = pa_input(dev, dt, WK_SHAPE(NB, BS, C->Hkv, C->D), C->play, -1, 1, &k->vp);
    k->tbt = u32_tensor(dev, WK_SHAPE(k->S, MB), k->bt);
    k->tseq = u32_tensor(dev, WK_SHAPE(T), k->seq);
    k->tpos = u32_tensor(dev, WK_SHAPE(T), k->pos);
    return k->tq && k->tk && k->tv && k->tbt && k->tseq && k->tpos;
}

/* dense copies of sequence s's keys and values [len, Hkv, D] through the
 * block table (keys before `from` are not read: NaN) */
static void pa_dense(const pa_case *C, const pa_call *k, int s, int64_t from, double *kd, double *vd)
{
    const int64_t row = C->Hkv * C->D;
    for (int64_t j = 0; j < C->len[s]; j++) {
        if (j < from) {
            for (int64_t i = 0; i < row; i++) kd[j * row + i] = vd[j * row + i] = NAN;
            continue;
        }
        const uint32_t b = k->bt[s * k->MB + j / C->BS];
        const int64_t src = ((int64_t)b * C->BS + j % C->BS) * row;
        memcpy(kd + j * row, k->kp + src, (size_t)row * sizeof(double));
        memcpy(vd + j * row, k->vp + src, (size_t)row * sizeof(double));
    }
}

/* out [T, Hq, D]: every token against its sequence's dense keys */
static void pa_reference(const pa_case *C, const pa_call *k, double *out)
{
    const int64_t Hq = C->Hq, Hkv = C->Hkv, D = C->D, g = Hq / Hkv;
    const double scale = C->scale != 0 ? C->scale : 1 / sqrt((double)D);
    for (int s = 0; s < C->nseq; s++) {
        const int64_t L = C->len[s];
        double *kd = malloc((size_t)(L * Hkv * D) * sizeof(double) + 8), *vd = malloc((size_t)(L * Hkv * D) * sizeof(double) + 8);
        double *sc = malloc((size_t)L * sizeof(double) + 8);
        int64_t from = INT64_MAX;
        for (int64_t t = 0; t < k->T; t++)
            if (k->seq[t] == (uint32_t)s) from = lo_of(k->pos[t], C->window) < from ? lo_of(k->pos[t], C->window) : from;
        pa_dense(C, k, s, from, kd, vd);
        for (int64_t t = 0; t < k->T; t++) {
            if (k->seq[t] != (uint32_t)s) continue;
            const int64_t p = k->pos[t], lo = lo_of(p, C->window);
            for (int64_t h = 0; h < Hq; h++) {
                const double *qr = k->q + (t * Hq + h) * D;
                double *o = out + (t * Hq + h) * D, m = -INFINITY, l = 0;
                for (int64_t j = lo; j <= p; j++) {
                    const double *kr = kd + (j * Hkv + h / g) * D;
                    double x = 0;
                    for (int64_t d = 0; d < D; d++) x += qr[d] * kr[d];
                    x *= scale;
                    if (C->softcap > 0) x = C->softcap * tanh(x / C->softcap);
                    sc[j] = x;
                    m = x > m ? x : m;
                }
                for (int64_t j = lo; j <= p; j++) l += exp(sc[j] - m);
                for (int64_t d = 0; d < D; d++) o[d] = 0;
                for (int64_t j = lo; j <= p; j++) {
                    const double w = exp(sc[j] - m) / l;
                    const double *vr = vd + (j * Hkv + h / g) * D;
                    for (int64_t d = 0; d < D; d++) o[d] += w * vr[d];
                }
            }
        }
        free(kd);
        free(vd);
        free(sc);
    }
}

/* The op with the case's options; its output's memory poisoned first. */
static wk_tensor *pa_call_op(wk_device *dev, wk_dtype dt, const pa_case *C, const pa_call *k)
{
    wk_release(wk_full(dev, dt, WK_SHAPE(k->T, C->Hq, C->D), NAN));
    const wk_paged_attention_opts o = { .scale = C->scale, .window = C->window, .softcap = C->softcap };
    return wk_paged_attention(k->tq, k->tk, k->tv, k->tbt, k->tseq, k->tpos, &o);
}

/* got (read back) row by row against ref rounded to dt: each token's [Hq, D] within bound */
static void pa_compare(const char *what, wk_dtype dt, const t_arr *got, const double *ref, int64_t T, int64_t row,
                       double bound)
{
    double *gv = t_mem((size_t)row * sizeof(double) + 8), *rv = t_mem((size_t)row * sizeof(double) + 8);
    for (int64_t t = 0; t < T && !t_case_failed(); t++) {
        for (int64_t i = 0; i < row; i++) {
            gv[i] = t_get(dt, got->p, t * row + i);
            rv[i] = t_round_to(dt, ref[t * row + i]);
        }
        char w[128];
        snprintf(w, sizeof w, "%s token %lld", what, (long long)t);
        t_cmp_values(w, dt, gv, rv, row, bound);
    }
}

static void pa_value_case(wk_device *dev, wk_dtype dt, const pa_case *C)
{
    pa_call k;
    memset(&k, 0, sizeof k);
    if (!pa_make(dev, dt, C, &k)) return;
    if (!strcmp(wk_device_name(dev), "cpu")) t_cover("paged_attention", dt);
    wk_tensor *y = t_own(pa_call_op(dev, dt, C, &k));
    if (!y) {
        t_fail("paged_attention failed: %s: %s", wk_status_name(wk_last_status()), wk_last_error());
        return;
    }
    const wk_shape so = WK_SHAPE(k.T, C->Hq, C->D);
    if (wk_tensor_dtype(y) != dt || !t_shape_eq(wk_tensor_shape(y), so) || wk_tensor_device(y) != dev) {
        t_fail("result %s %s, expected %s %s on the inputs' device", t_dt_name(wk_tensor_dtype(y)),
               t_shape_str(wk_tensor_shape(y)), t_dt_name(dt), t_shape_str(so));
        return;
    }
    double *ref = t_mem((size_t)numel_of(so) * sizeof(double) + 8);
    pa_reference(C, &k, ref);
    bool ok;
    t_arr g = t_read(y, &ok);
    if (ok) pa_compare("paged_attention", dt, &g, ref, k.T, C->Hq * C->D, t_bound_acc(dt));
}

/* The same tokens through wk_attention, sequence by sequence, on the keys
 * laid out densely ([1, Hkv, len, D]; keys no query sees are zeros) with
 * the queries in position order ([1, Hq, nq, D]), causal: the rows agree
 * with the paged op's within the sum of both ops' bounds. */
static void pa_dense_case(wk_device *dev, wk_dtype dt, const pa_case *C)
{
    pa_call k;
    memset(&k, 0, sizeof k);
    if (!pa_make(dev, dt, C, &k)) return;
    wk_tensor *y = t_own(pa_call_op(dev, dt, C, &k));
    bool ok = y != NULL;
    if (!y) t_fail("paged_attention failed: %s", wk_last_error());
    t_arr g = ok ? t_read(y, &ok) : (t_arr){ 0 };
    const int64_t Hq = C->Hq, Hkv = C->Hkv, D = C->D;
    for (int s = 0; s < C->nseq && ok; s++) {
        const int64_t L = C->len[s], nq = C->nq[s];
        double *kd = t_mem((size_t)(L * Hkv * D) * sizeof(double) + 8), *vd = t_mem((size_t)(L * Hkv * D) * sizeof(double) + 8);
        int64_t from = INT64_MAX;
        for (int64_t t = 0; t < k.T; t++)
            if (k.seq[t] == (uint32_t)s) from = lo_of(k.pos[t], C->window) < from ? lo_of(k.pos[t], C->window) : from;
        pa_dense(C, &k, s, from, kd, vd);
        /* [1, Hkv, L, D] keys and values, [1, Hq, nq, D] queries; tok[i]: the token at position L - nq + i */
        t_arr ka = t_arr_new(dt, WK_SHAPE(1, Hkv, L, D)), va = t_arr_new(dt, WK_SHAPE(1, Hkv, L, D));
        t_arr qa = t_arr_new(dt, WK_SHAPE(1, Hq, nq, D));
        int64_t *tok = t_mem((size_t)nq * sizeof(int64_t) + 8);
        for (int64_t t = 0; t < k.T; t++)
            if (k.seq[t] == (uint32_t)s) tok[k.pos[t] - (L - nq)] = t;
        for (int64_t h = 0; h < Hkv; h++)
            for (int64_t j = 0; j < L; j++)
                for (int64_t d = 0; d < D; d++) {
                    const double kv = kd[(j * Hkv + h) * D + d], vv = vd[(j * Hkv + h) * D + d];
                    t_put(dt, ka.p, (h * L + j) * D + d, isnan(kv) ? 0 : kv);
                    t_put(dt, va.p, (h * L + j) * D + d, isnan(vv) ? 0 : vv);
                }
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < nq; i++)
                for (int64_t d = 0; d < D; d++) t_put(dt, qa.p, (h * nq + i) * D + d, k.q[(tok[i] * Hq + h) * D + d]);
        wk_tensor *tq = T_NEED(wk_from_host(dev, dt, qa.shape, qa.p)), *tk = T_NEED(wk_from_host(dev, dt, ka.shape, ka.p));
        wk_tensor *tv = T_NEED(wk_from_host(dev, dt, va.shape, va.p));
        if (!tq || !tk || !tv) return;
        const wk_attention_opts o = { .scale = C->scale, .causal = true, .window = C->window, .softcap = C->softcap };
        wk_tensor *a = T_NEED(wk_attention(tq, tk, tv, &o));
        if (!a) return;
        t_arr ga = t_read(a, &ok);
        if (!ok) return;
        double *dv = t_mem((size_t)(Hq * D) * sizeof(double) + 8), *pv = t_mem((size_t)(Hq * D) * sizeof(double) + 8);
        for (int64_t i = 0; i < nq && !t_case_failed(); i++) {
            for (int64_t h = 0; h < Hq; h++)
                for (int64_t d = 0; d < D; d++) {
                    dv[h * D + d] = t_get(dt, ga.p, (h * nq + i) * D + d);
                    pv[h * D + d] = t_get(dt, g.p, (tok[i] * Hq + h) * D + d);
                }
            char w[128];
            snprintf(w, sizeof w, "paged vs dense attention, sequence %d position %lld", s, (long long)(L - nq + i));
            t_cmp_values(w, dt, pv, dv, Hq * D, 4 * t_bound_acc(dt));
        }
    }
}

/* Batch invariance (a design rule of the engine, docs/nn.md): each
 * token's rows are the bits of the call made with that token alone. */
static void pa_solo_case(wk_device *dev, wk_dtype dt, const pa_case *C)
{
    pa_call k;
    memset(&k, 0, sizeof k);
    if (!pa_make(dev, dt, C, &k)) return;
    wk_tensor *y = t_own(pa_call_op(dev, dt, C, &k));
    bool ok = y != NULL;
    if (!y) t_fail("paged_attention failed: %s", wk_last_error());
    t_arr g = ok ? t_read(y, &ok) : (t_arr){ 0 };
    const int64_t row = C->Hq * C->D, step = k.T > 12 ? k.T / 12 : 1;
    const wk_paged_attention_opts o = { .scale = C->scale, .window = C->window, .softcap = C->softcap };
    for (int64_t t = 0; ok && t < k.T && !t_case_failed(); t += step) {
        wk_tensor *qt = T_NEED(wk_narrow(k.tq, 0, t, 1)), *st = T_NEED(wk_narrow(k.tseq, 0, t, 1));
        wk_tensor *pt = T_NEED(wk_narrow(k.tpos, 0, t, 1));
        if (!qt || !st || !pt) return;
        wk_tensor *yt = t_own(wk_paged_attention(qt, k.tk, k.tv, k.tbt, st, pt, &o));
        char w[96];
        snprintf(w, sizeof w, "token %lld alone against the batch", (long long)t);
        t_check_exact(w, yt, WK_SHAPE(1, C->Hq, C->D), dt, g.p + (size_t)(t * row) * t_size(dt));
    }
}

/* ---- bad input -------------------------------------------------------------------------------- */

#define BAD(expr, st, w1, w2) t_check_null(#expr, (expr), (st), (w1), (w2), NULL)

/* one sequence of 10 keys in blocks of 4 (3 blocks), one decode token at position 9 */
typedef struct pa_small {
    wk_tensor *q, *k, *v, *bt, *seq, *pos;
} pa_small;

static bool pa_small_make(wk_device *dev, wk_dtype dt, int64_t D, pa_small *s)
{
    static const uint32_t bt[2 * 4] = { 2, 0, 3, PA_JUNK, 1, 1, 1, 1 };
    s->q = T_NEED(wk_zeros(dev, dt, WK_SHAPE(1, 4, D)));
    s->k = T_NEED(wk_zeros(dev, dt, WK_SHAPE(5, 4, 2, D)));
    s->v = T_NEED(wk_zeros(dev, dt, WK_SHAPE(5, 4, 2, D)));
    s->bt = u32_tensor(dev, WK_SHAPE(2, 4), bt);
    s->seq = u32_tensor(dev, WK_SHAPE(1), (const uint32_t[]){ 0 });
    s->pos = u32_tensor(dev, WK_SHAPE(1), (const uint32_t[]){ 9 });
    return s->q && s->k && s->v && s->bt && s->seq && s->pos;
}

static void pa_errors(wk_device *dev, const char *dn)
{
    const bool gpu = strcmp(dn, "cpu") != 0;
    pa_small s;
    if (t_case("paged/%s/errors/arguments", dn) && pa_small_make(dev, WK_F32, 8, &s)) {
        BAD(wk_paged_attention(NULL, s.k, s.v, s.bt, s.seq, s.pos, NULL), WK_ERR_ARGUMENT, "q", "NULL");
        BAD(wk_paged_attention(s.q, NULL, s.v, s.bt, s.seq, s.pos, NULL), WK_ERR_ARGUMENT, "k_pool", "NULL");
        BAD(wk_paged_attention(s.q, s.k, NULL, s.bt, s.seq, s.pos, NULL), WK_ERR_ARGUMENT, "v_pool", "NULL");
        BAD(wk_paged_attention(s.q, s.k, s.v, NULL, s.seq, s.pos, NULL), WK_ERR_ARGUMENT, "block_table", "NULL");
        BAD(wk_paged_attention(s.q, s.k, s.v, s.bt, NULL, s.pos, NULL), WK_ERR_ARGUMENT, "seq", "NULL");
        BAD(wk_paged_attention(s.q, s.k, s.v, s.bt, s.seq, NULL, NULL), WK_ERR_ARGUMENT, "pos", "NULL");
        wk_paged_attention_opts o = { .window = -1 };
        BAD(wk_paged_attention(s.q, s.k, s.v, s.bt, s.seq, s.pos, &o), WK_ERR_ARGUMENT, "window", "-1");
        o = (wk_paged_attention_opts){ .softcap = -2 };
        BAD(wk_paged_attention(s.q, s.k, s.v, s.bt, s.seq, s.pos, &o), WK_ERR_ARGUMENT, "softcap", NULL);
        o = (wk_paged_attention_opts){ .scale = INFINITY };
        BAD(wk_paged_attention(s.q, s.k, s.v, s.bt, s.seq, s.pos, &o), WK_ERR_ARGUMENT, "scale", NULL);
        /* the defaults, and every junk entry outside what the token reads: accepted */
        wk_tensor *y = t_own(wk_paged_attention(s.q, s.k, s.v, s.bt, s.seq, s.pos, NULL));
        T_CHECK(y != NULL, "the valid call failed: %s", wk_last_error());
    }
    if (t_case("paged/%s/errors/dtypes", dn) && pa_small_make(dev, WK_F32, 8, &s)) {
        wk_tensor *k16 = T_NEED(wk_zeros(dev, WK_F16, WK_SHAPE(5, 4, 2, 8)));
        wk_tensor *qi = T_NEED(wk_zeros(dev, WK_I32, WK_SHAPE(1, 4, 8))), *ki = T_NEED(wk_zeros(dev, WK_I32, WK_SHAPE(5, 4, 2, 8)));
        wk_tensor *bt64 = T_NEED(wk_zeros(dev, WK_I64, WK_SHAPE(2, 4))), *s64 = T_NEED(wk_zeros(dev, WK_I64, WK_SHAPE(1)));
        wk_tensor *p8 = T_NEED(wk_zeros(dev, WK_U8, WK_SHAPE(1)));
        if (k16 && qi && ki && bt64 && s64 && p8) {
            BAD(wk_paged_attention(s.q, k16, k16, s.bt, s.seq, s.pos, NULL), WK_ERR_DTYPE, "f32", "f16");
            BAD(wk_paged_attention(s.q, s.k, k16, s.bt, s.seq, s.pos, NULL), WK_ERR_DTYPE, "v_pool", "f16");
            BAD(wk_paged_attention(qi, ki, ki, s.bt, s.seq, s.pos, NULL), WK_ERR_UNSUPPORTED, "paged_attention", "i32");
            BAD(wk_paged_attention(s.q, s.k, s.v, bt64, s.seq, s.pos, NULL), WK_ERR_DTYPE, "block_table", "u32");
            BAD(wk_paged_attention(s.q, s.k, s.v, s.bt, s64, s.pos, NULL), WK_ERR_DTYPE, "seq", "i64");
            BAD(wk_paged_attention(s.q, s.k, s.v, s.bt, s.seq, p8, NULL), WK_ERR_DTYPE, "pos", "u8");
        }
        if (gpu && !wk_supports(dev, "paged_attention", WK_F64)) {
            wk_tensor *q64 = T_NEED(wk_zeros(dev, WK_F64, WK_SHAPE(1, 4, 8))), *k64 = T_NEED(wk_zeros(dev, WK_F64, WK_SHAPE(5, 4, 2, 8)));
            if (q64 && k64) BAD(wk_paged_attention(q64, k64, k64, s.bt, s.seq, s.pos, NULL), WK_ERR_UNSUPPORTED, "paged_attention", "f64");
        }
    }
    if (t_case("paged/%s/errors/shapes", dn) && pa_small_make(dev, WK_F32, 8, &s)) {
        wk_tensor *q2 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(4, 8))), *k3 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(5, 4, 16)));
        wk_tensor *kh3 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(5, 4, 3, 8))), *kd = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(5, 4, 2, 16)));
        wk_tensor *v6 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(6, 4, 2, 8))), *k0 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(5, 0, 2, 8)));
        wk_tensor *bt1 = T_NEED(wk_zeros(dev, WK_U32, WK_SHAPE(8))), *s2 = T_NEED(wk_zeros(dev, WK_U32, WK_SHAPE(1, 1)));
        wk_tensor *p2 = T_NEED(wk_zeros(dev, WK_U32, WK_SHAPE(2))), *bte = T_NEED(wk_zeros(dev, WK_U32, WK_SHAPE(0, 4)));
        if (q2 && k3 && kh3 && kd && v6 && k0 && bt1 && s2 && p2 && bte) {
            BAD(wk_paged_attention(q2, s.k, s.v, s.bt, s.seq, s.pos, NULL), WK_ERR_SHAPE, "[T, Hq, D]", NULL);
            BAD(wk_paged_attention(s.q, k3, k3, s.bt, s.seq, s.pos, NULL), WK_ERR_SHAPE, "[NB, BS, Hkv, D]", NULL);
            BAD(wk_paged_attention(s.q, kh3, kh3, s.bt, s.seq, s.pos, NULL), WK_ERR_SHAPE, "multiple", "(3)");
            BAD(wk_paged_attention(s.q, kd, kd, s.bt, s.seq, s.pos, NULL), WK_ERR_SHAPE, "head dims", "16");
            BAD(wk_paged_attention(s.q, s.k, v6, s.bt, s.seq, s.pos, NULL), WK_ERR_SHAPE, "one shape", NULL);
            BAD(wk_paged_attention(s.q, k0, k0, s.bt, s.seq, s.pos, NULL), WK_ERR_SHAPE, "BS = 0", NULL);
            BAD(wk_paged_attention(s.q, s.k, s.v, bt1, s.seq, s.pos, NULL), WK_ERR_SHAPE, "block_table", "rank 2");
            BAD(wk_paged_attention(s.q, s.k, s.v, s.bt, s2, s.pos, NULL), WK_ERR_SHAPE, "seq", "rank 1");
            BAD(wk_paged_attention(s.q, s.k, s.v, s.bt, s.seq, p2, NULL), WK_ERR_SHAPE, "pos [2]", "(1)");
            BAD(wk_paged_attention(s.q, s.k, s.v, bte, s.seq, s.pos, NULL), WK_ERR_INDEX, "block table", "empty");
        }
    }
    if (t_case("paged/%s/errors/ids_out_of_range", dn) && pa_small_make(dev, WK_F32, 8, &s)) {
        /* 2 sequences, 4 blocks of 4 positions each, 5 pool blocks; sequence 0's block 3 is junk */
        wk_tensor *s2 = u32_tensor(dev, WK_SHAPE(1), (const uint32_t[]){ 2 });
        wk_tensor *sbig = u32_tensor(dev, WK_SHAPE(1), (const uint32_t[]){ 0xFFFFFFFFu });
        wk_tensor *p16 = u32_tensor(dev, WK_SHAPE(1), (const uint32_t[]){ 16 });
        wk_tensor *pbig = u32_tensor(dev, WK_SHAPE(1), (const uint32_t[]){ 0xFFFFFFFFu });
        wk_tensor *p12 = u32_tensor(dev, WK_SHAPE(1), (const uint32_t[]){ 12 });    /* reads block 3: junk */
        static const uint32_t btb[2 * 4] = { 2, 5, 3, 0, 1, 1, 1, 1 };           /* block 1 of sequence 0 is 5 >= NB */
        wk_tensor *bt5 = u32_tensor(dev, WK_SHAPE(2, 4), btb);
        /* three tokens, the third bad: the op fails (not just the one token) */
        wk_tensor *s3 = u32_tensor(dev, WK_SHAPE(3), (const uint32_t[]){ 0, 1, 7 });
        wk_tensor *q3 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(3, 4, 8)));
        wk_tensor *p3 = u32_tensor(dev, WK_SHAPE(3), (const uint32_t[]){ 9, 15, 0 });
        if (s2 && sbig && p16 && pbig && p12 && bt5 && s3 && q3 && p3) {
            BAD(wk_paged_attention(s.q, s.k, s.v, s.bt, s2, s.pos, NULL), WK_ERR_INDEX, "sequence 2", "2");
            BAD(wk_paged_attention(s.q, s.k, s.v, s.bt, sbig, s.pos, NULL), WK_ERR_INDEX, "sequence 4294967295", NULL);
            BAD(wk_paged_attention(s.q, s.k, s.v, s.bt, s.seq, p16, NULL), WK_ERR_INDEX, "position 16", "4 blocks of 4");
            BAD(wk_paged_attention(s.q, s.k, s.v, s.bt, s.seq, pbig, NULL), WK_ERR_INDEX, "position 4294967295", NULL);
            BAD(wk_paged_attention(s.q, s.k, s.v, s.bt, s.seq, p12, NULL), WK_ERR_INDEX, "block 3", "4294967295");
            BAD(wk_paged_attention(s.q, s.k, s.v, bt5, s.seq, s.pos, NULL), WK_ERR_INDEX, "block 1 of sequence 0 is 5",
                "5 blocks");
            BAD(wk_paged_attention(q3, s.k, s.v, s.bt, s3, p3, NULL), WK_ERR_INDEX, "token 2", "sequence 7");
            /* a window that skips the bad block: accepted (only the blocks read are checked) */
            const wk_paged_attention_opts o = { .window = 2 };
            wk_tensor *y = t_own(wk_paged_attention(s.q, s.k, s.v, bt5, s.seq, s.pos, &o));
            T_CHECK(y != NULL, "a window past the bad block: %s", wk_last_error());
            /* after a failed call the next good call works (the device's check state is sound) */
            y = t_own(wk_paged_attention(s.q, s.k, s.v, s.bt, s.seq, s.pos, NULL));
            T_CHECK(y != NULL, "a good call after the failures: %s", wk_last_error());
        }
    }
    if (t_case("paged/%s/errors/head_dim", dn) && pa_small_make(dev, WK_F32, 12, &s)) {
        /* D = 12: the cpu takes it, GPUs take multiples of 8 only */
        wk_tensor *y = wk_paged_attention(s.q, s.k, s.v, s.bt, s.seq, s.pos, NULL);
        if (gpu) {
            t_check_null("D = 12 on a GPU", y, WK_ERR_UNSUPPORTED, "D = 12", "multiple of 8", NULL);
        } else {
            t_own(y);
            T_CHECK(y != NULL, "D = 12 on the cpu: %s", wk_last_error());
        }
    }
    if (gpu && t_case("paged/%s/errors/devices", dn) && pa_small_make(dev, WK_F32, 8, &s)) {
        wk_tensor *kc = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(5, 4, 2, 8)));
        wk_tensor *btc = T_NEED(wk_to_device(s.bt, t_dev())), *pc = T_NEED(wk_to_device(s.pos, t_dev()));
        if (kc && btc && pc) {
            BAD(wk_paged_attention(s.q, kc, kc, s.bt, s.seq, s.pos, NULL), WK_ERR_DEVICE, "k_pool", "cpu");
            BAD(wk_paged_attention(s.q, s.k, s.v, btc, s.seq, s.pos, NULL), WK_ERR_DEVICE, "block_table", "cpu");
            BAD(wk_paged_attention(s.q, s.k, s.v, s.bt, s.seq, pc, NULL), WK_ERR_DEVICE, "pos", "cpu");
        }
    }
    if (t_case("paged/%s/errors/empty", dn)) {
        /* T = 0: an empty result, whatever the table; Hq = 0 likewise */
        wk_tensor *q0 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(0, 4, 8))), *k = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(5, 4, 2, 8)));
        wk_tensor *bt0 = T_NEED(wk_zeros(dev, WK_U32, WK_SHAPE(0, 0))), *e = T_NEED(wk_zeros(dev, WK_U32, WK_SHAPE(0)));
        if (q0 && k && bt0 && e) {
            wk_tensor *y = t_own(wk_paged_attention(q0, k, k, bt0, e, e, NULL));
            T_CHECK(y && t_shape_eq(wk_tensor_shape(y), WK_SHAPE(0, 4, 8)), "T = 0 gave %s", y ? t_shape_str(wk_tensor_shape(y)) : wk_last_error());
        }
    }
}

/* ---- every device ------------------------------------------------------------------------------ */

static const wk_dtype pa_dts[4] = { WK_F16, WK_BF16, WK_F32, WK_F64 };

static void pa_device(wk_device *dev, const char *dn, void *arg)
{
    (void)arg;
    for (int i = 0; i < 4; i++) {
        const wk_dtype dt = pa_dts[i];
        if (!wk_supports(dev, "paged_attention", dt)) continue;   /* GPUs: no f64 (docs/nn.md) */
        for (int c = 0; c < N_(pcases); c++) {
            if (pcases[c].cheap_only && dt != WK_F32 && dt != WK_BF16) continue;
            if (t_case("paged/%s/%s/%s", dn, t_dt_name(dt), pcases[c].name)) pa_value_case(dev, dt, &pcases[c]);
        }
        static const char *const solo[] = { "prefill_and_decode", "decode_gqa8", "q_transposed" };
        for (int d = 0; d < N_(solo); d++)
            for (int c = 0; c < N_(pcases); c++)
                if (!strcmp(pcases[c].name, solo[d]) && t_case("paged/%s/%s/solo_%s", dn, t_dt_name(dt), solo[d]))
                    pa_solo_case(dev, dt, &pcases[c]);
        static const char *const dense[] = { "prefill_and_decode", "window256", "softcap_scale", "shared_blocks" };
        for (int d = 0; d < N_(dense); d++)
            for (int c = 0; c < N_(pcases); c++)
                if (!strcmp(pcases[c].name, dense[d]) && t_case("paged/%s/%s/dense_%s", dn, t_dt_name(dt), dense[d]))
                    pa_dense_case(dev, dt, &pcases[c]);
    }
    pa_errors(dev, dn);
}

T_SUITE(paged_attention)
{
    pa_device(t_dev(), "cpu", NULL);
    t_each_gpu(pa_device, NULL);
}
