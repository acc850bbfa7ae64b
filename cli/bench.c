/* bench.c — `wick bench`: times a few core ops on one device through
 * the public API, the way a user calls them.
 *
 * Each case makes its inputs with wk_rand_uniform (never zeros), runs the
 * op `warmup` times untimed, then `reps` times timed, and reports the
 * median (and min/max) in milliseconds and the rate it implies (GFLOP/s
 * for matmul, GB/s of compulsory traffic for the others: every input
 * element read once, every output element written once; for the fused
 * gate/up product of one row, linear_silu_mul, that is its weight matrix,
 * which decode reads at the device's copy rate at best). One timed rep is
 *
 *     synchronize; t0 = monotonic clock; out = op(inputs);
 *     synchronize; t1 = monotonic clock; release(out)
 *
 * so the creation of the output (these are allocating ops) is timed and
 * its release is not; nothing else is allocated inside the timing.
 *
 * --json prints one JSON object per line per case (fields: op, call,
 * dtype, shape, device, warmup, reps, median_ms, min_ms, max_ms, work,
 * unit, rate; or error). --dump DIR also writes, after the timing, each
 * case's inputs and one output as raw little-endian row-major files
 * (NAME.in0.bin, NAME.in1.bin, NAME.out.bin) so a script can check what
 * was timed against another implementation.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#include "wick.h"
#include "cli.h"
#include "timing.h"

typedef enum bench_kind { K_MATMUL, K_ADD, K_EXP, K_SUM_LAST, K_CAST, K_TRANSPOSE, K_LINEAR_SILU_MUL } bench_kind;

typedef struct bench_case {
    const char *name;     /* what --op takes; unique                         */
    const char *call;     /* the public function timed                       */
    bench_kind kind;
    wk_dtype dtype;       /* inputs                                          */
    wk_dtype out_dtype;
    int64_t n;            /* matmul: m = k = n; sum, transpose: [n, n];
                             add, exp, cast: n elements; linear_silu_mul:
                             x [1, n], w [2n, n]                              */
} bench_case;

static const bench_case cases[] = {
    { "matmul_f32_1024",    "wk_matmul",     K_MATMUL,    WK_F32,  WK_F32,  1024 },
    { "matmul_f32_2048",    "wk_matmul",     K_MATMUL,    WK_F32,  WK_F32,  2048 },
    { "matmul_bf16_1024",   "wk_matmul",     K_MATMUL,    WK_BF16, WK_BF16, 1024 },
    { "add_f32",            "wk_add",        K_ADD,       WK_F32,  WK_F32,  (int64_t)1 << 24 },
    { "exp_f32",            "wk_exp",        K_EXP,       WK_F32,  WK_F32,  (int64_t)1 << 24 },
    { "sum_last_f32",       "wk_sum",        K_SUM_LAST,  WK_F32,  WK_F32,  4096 },
    { "cast_f32_f16",       "wk_to_dtype",   K_CAST,      WK_F32,  WK_F16,  (int64_t)1 << 24 },
    { "cast_f32_bf16",      "wk_to_dtype",   K_CAST,      WK_F32,  WK_BF16, (int64_t)1 << 24 },
    { "transpose_copy_f32", "wk_contiguous", K_TRANSPOSE, WK_F32,  WK_F32,  4096 },
    { "linear_silu_mul_bf16", "wk_linear_silu_mul", K_LINEAR_SILU_MUL, WK_BF16, WK_BF16, 4096 },
    { "linear_silu_mul_f32", "wk_linear_silu_mul", K_LINEAR_SILU_MUL, WK_F32, WK_F32, 4096 },
};
#define N_CASES (int)(sizeof cases / sizeof cases[0])

typedef struct bench_opts {
    const char *device;
    int reps, warmup;
    bool json;
    const char *dump_dir;
    bool selected[N_CASES];
} bench_opts;

/* The inputs of one case: in[0], in[1] own their storage; arg[] is what
 * the op is called with (for the transposed copy, a view of in[0]). */
typedef struct bench_inputs {
    wk_tensor *in[2];
    wk_tensor *arg[2];
    int n_in;
} bench_inputs;

void wick_bench_usage(void)
{
    printf("usage: wick bench [--device NAME] [--op NAME[,NAME..]] [--reps N] [--warmup N]\n"
           "                  [--json] [--dump DIR] [--list]\n"
           "\n"
           "Times core ops on one device through the public API: warm-up, then the\n"
           "median of N timed reps (monotonic clock, device synchronized before each\n"
           "clock read). Inputs come from wk_rand_uniform; the output's creation is\n"
           "part of each timed op.\n"
           "\n"
           "  --device NAME   cpu (default), cuda:N or rocm:N\n"
           "  --op LIST       comma-separated case names, or a prefix ending at '_'\n"
           "                  (matmul = every matmul case); default: every case\n"
           "  --reps N        timed reps per case (default 20)\n"
           "  --warmup N      untimed reps before them (default 3)\n"
           "  --json          one JSON object per line instead of a table\n"
           "  --dump DIR      after timing, write each case's inputs and one output\n"
           "                  to DIR as raw row-major files (NAME.in0.bin, NAME.out.bin)\n"
           "  --list          print the case names and exit\n"
           "\n"
           "cases:\n");
    for (int i = 0; i < N_CASES; i++) printf("  %s\n", cases[i].name);
}

/* ---- helpers ------------------------------------------------------------ */

static void shape_text(const bench_case *c, char *out, size_t size)
{
    switch (c->kind) {
    case K_MATMUL:
        snprintf(out, size, "%lldx%lldx%lld", (long long)c->n, (long long)c->n, (long long)c->n);
        break;
    case K_SUM_LAST: case K_TRANSPOSE:
        snprintf(out, size, "%lldx%lld", (long long)c->n, (long long)c->n);
        break;
    case K_LINEAR_SILU_MUL:
        snprintf(out, size, "1x%lld.%lldx%lld", (long long)c->n, (long long)(2 * c->n), (long long)c->n);
        break;
    default:
        snprintf(out, size, "%lld", (long long)c->n);
    }
}

static void dtype_text(const bench_case *c, char *out, size_t size)
{
    if (c->kind == K_CAST)
        snprintf(out, size, "%s->%s", wk_dtype_name(c->dtype), wk_dtype_name(c->out_dtype));
    else
        snprintf(out, size, "%s", wk_dtype_name(c->dtype));
}

/* FLOPs (matmul) or bytes of compulsory memory traffic (the others). */
static double case_work(const bench_case *c)
{
    double n = (double)c->n, in = (double)wk_dtype_size(c->dtype), out = (double)wk_dtype_size(c->out_dtype);
    switch (c->kind) {
    case K_MATMUL: return 2.0 * n * n * n;
    case K_ADD: return n * (2.0 * in + out);
    case K_EXP: case K_CAST: return n * (in + out);
    case K_SUM_LAST: return n * n * in + n * out;
    case K_TRANSPOSE: return n * n * (in + out);
    case K_LINEAR_SILU_MUL: return 2.0 * n * n * in + n * (in + out);
    }
    return 0;
}

static const char *case_unit(const bench_case *c) { return c->kind == K_MATMUL ? "GFLOP/s" : "GB/s"; }

static int64_t case_out_numel(const bench_case *c)
{
    switch (c->kind) {
    case K_MATMUL: case K_TRANSPOSE: return c->n * c->n;
    case K_SUM_LAST: case K_LINEAR_SILU_MUL: return c->n;
    default: return c->n;
    }
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch == '\n') fputs("\\n", f);
        else if (ch == '\t') fputs("\\t", f);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

/* ---- one case ----------------------------------------------------------- */

static void inputs_release(bench_inputs *b)
{
    for (int i = 0; i < 2; i++) {
        if (b->arg[i] && b->arg[i] != b->in[i]) wk_release(b->arg[i]);
        wk_release(b->in[i]);
        b->arg[i] = b->in[i] = NULL;
    }
    b->n_in = 0;
}

static bool inputs_make(wk_device *dev, const bench_case *c, bench_inputs *b)
{
    memset(b, 0, sizeof *b);
    switch (c->kind) {
    case K_MATMUL:
        b->in[0] = wk_rand_uniform(dev, c->dtype, WK_SHAPE(c->n, c->n), -1.0, 1.0);
        b->in[1] = wk_rand_uniform(dev, c->dtype, WK_SHAPE(c->n, c->n), -1.0, 1.0);
        b->n_in = 2;
        break;
    case K_ADD:
        b->in[0] = wk_rand_uniform(dev, c->dtype, WK_SHAPE(c->n), -1.0, 1.0);
        b->in[1] = wk_rand_uniform(dev, c->dtype, WK_SHAPE(c->n), -1.0, 1.0);
        b->n_in = 2;
        break;
    case K_EXP: case K_CAST:
        b->in[0] = wk_rand_uniform(dev, c->dtype, WK_SHAPE(c->n), -1.0, 1.0);
        b->n_in = 1;
        break;
    case K_SUM_LAST: case K_TRANSPOSE:
        b->in[0] = wk_rand_uniform(dev, c->dtype, WK_SHAPE(c->n, c->n), -1.0, 1.0);
        b->n_in = 1;
        break;
    case K_LINEAR_SILU_MUL:
        b->in[0] = wk_rand_uniform(dev, c->dtype, WK_SHAPE(1, c->n), -1.0, 1.0);
        b->in[1] = wk_rand_uniform(dev, c->dtype, WK_SHAPE(2 * c->n, c->n), -1.0, 1.0);
        b->n_in = 2;
        break;
    }
    for (int i = 0; i < b->n_in; i++)
        if (!b->in[i]) return false;
    b->arg[0] = b->in[0];
    b->arg[1] = b->in[1];
    if (c->kind == K_TRANSPOSE) {
        b->arg[0] = wk_transpose(b->in[0], 0, 1);
        if (!b->arg[0]) return false;
    }
    return true;
}

static wk_tensor *case_run(const bench_case *c, const bench_inputs *b)
{
    static const int last_dim = -1;
    switch (c->kind) {
    case K_MATMUL: return wk_matmul(b->arg[0], b->arg[1]);
    case K_ADD: return wk_add(b->arg[0], b->arg[1]);
    case K_EXP: return wk_exp(b->arg[0]);
    case K_SUM_LAST: return wk_sum(b->arg[0], &last_dim, 1, false);
    case K_CAST: return wk_to_dtype(b->arg[0], c->out_dtype);
    case K_TRANSPOSE: return wk_contiguous(b->arg[0]);
    case K_LINEAR_SILU_MUL: return wk_linear_silu_mul(b->arg[0], b->arg[1]);
    }
    return NULL;
}

/* Writes one tensor to DIR/NAME.SUFFIX.bin; false with a message in err. */
static bool dump_tensor(const char *dir, const char *name, const char *suffix, const wk_tensor *t,
                        char *err, size_t err_size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s.bin", dir, name, suffix);
    size_t bytes = (size_t)wk_tensor_numel(t) * wk_dtype_size(wk_tensor_dtype(t));
    void *host = malloc(bytes ? bytes : 1);
    if (!host) {
        snprintf(err, err_size, "out of host memory for %zu bytes", bytes);
        return false;
    }
    bool ok = false;
    if (wk_to_host(t, host, bytes) != WK_OK) {
        snprintf(err, err_size, "%s", wk_last_error());
    } else {
        FILE *f = fopen(path, "wb");
        if (!f) {
            snprintf(err, err_size, "cannot write %.400s: %s", path, strerror(errno));
        } else {
            ok = fwrite(host, 1, bytes, f) == bytes;
            if (fclose(f) != 0) ok = false;
            if (!ok) snprintf(err, err_size, "cannot write %.400s: %s", path, strerror(errno));
        }
    }
    free(host);
    return ok;
}

typedef struct bench_result {
    double median_ms, min_ms, max_ms;
    bool timed;           /* the timing finished                          */
    bool dumped;
    char error[512];
} bench_result;

static bool run_case(wk_device *dev, const bench_case *c, const bench_opts *o, bench_result *r)
{
    memset(r, 0, sizeof *r);
    bench_inputs b;
    if (!inputs_make(dev, c, &b)) {
        snprintf(r->error, sizeof r->error, "making the inputs failed: %s", wk_last_error());
        inputs_release(&b);
        return false;
    }
    double *times = malloc((size_t)o->reps * sizeof *times);
    if (!times) {
        snprintf(r->error, sizeof r->error, "out of host memory");
        inputs_release(&b);
        return false;
    }
    bool ok = wk_device_synchronize(dev) == WK_OK;
    for (int i = 0; ok && i < o->warmup + o->reps; i++) {
        if (wk_device_synchronize(dev) != WK_OK) { ok = false; break; }
        double t0 = wk_now_ms();
        wk_tensor *out = case_run(c, &b);
        if (!out || wk_device_synchronize(dev) != WK_OK) {
            wk_release(out);
            ok = false;
            break;
        }
        double t1 = wk_now_ms();
        if (i == 0 && (wk_tensor_numel(out) != case_out_numel(c) || wk_tensor_dtype(out) != c->out_dtype ||
                       wk_tensor_same_storage(out, b.in[0]))) {
            snprintf(r->error, sizeof r->error, "%s returned a %s tensor of %lld elements%s; expected a new %s tensor of %lld",
                     c->call, wk_dtype_name(wk_tensor_dtype(out)), (long long)wk_tensor_numel(out),
                     wk_tensor_same_storage(out, b.in[0]) ? " sharing its input's storage" : "",
                     wk_dtype_name(c->out_dtype), (long long)case_out_numel(c));
            wk_release(out);
            free(times);
            inputs_release(&b);
            return false;
        }
        wk_release(out);
        if (i >= o->warmup) times[i - o->warmup] = t1 - t0;
    }
    if (!ok) {
        snprintf(r->error, sizeof r->error, "%s", wk_last_error());
        free(times);
        inputs_release(&b);
        return false;
    }
    r->min_ms = r->max_ms = times[0];
    for (int i = 1; i < o->reps; i++) {
        if (times[i] < r->min_ms) r->min_ms = times[i];
        if (times[i] > r->max_ms) r->max_ms = times[i];
    }
    r->median_ms = wk_median(times, o->reps);
    r->timed = true;
    free(times);

    if (o->dump_dir) {
        wk_tensor *out = case_run(c, &b);
        ok = out != NULL;
        if (!ok) snprintf(r->error, sizeof r->error, "%s", wk_last_error());
        for (int i = 0; ok && i < b.n_in; i++) {
            char suffix[16];
            snprintf(suffix, sizeof suffix, "in%d", i);
            ok = dump_tensor(o->dump_dir, c->name, suffix, b.in[i], r->error, sizeof r->error);
        }
        if (ok) ok = dump_tensor(o->dump_dir, c->name, "out", out, r->error, sizeof r->error);
        wk_release(out);
        r->dumped = ok;
    }
    inputs_release(&b);
    return ok;
}

/* ---- output ------------------------------------------------------------- */

static void print_json(const bench_case *c, const bench_opts *o, const bench_result *r, bool ok)
{
    char shape[64], dt[32];
    shape_text(c, shape, sizeof shape);
    dtype_text(c, dt, sizeof dt);
    printf("{\"op\": ");
    json_string(stdout, c->name);
    printf(", \"call\": \"%s\", \"dtype\": \"%s\", \"shape\": \"%s\", \"device\": ", c->call, dt, shape);
    json_string(stdout, o->device);
    printf(", \"warmup\": %d, \"reps\": %d", o->warmup, o->reps);
    if (r->timed) {
        double work = case_work(c);
        printf(", \"median_ms\": %.6f, \"min_ms\": %.6f, \"max_ms\": %.6f, \"work\": %.0f, \"unit\": \"%s\", \"rate\": %.3f",
               r->median_ms, r->min_ms, r->max_ms, work, case_unit(c), work / (r->median_ms * 1e6));
    }
    if (r->dumped) {
        printf(", \"dump\": [");
        int n_in = c->kind == K_MATMUL || c->kind == K_ADD || c->kind == K_LINEAR_SILU_MUL ? 2 : 1;
        for (int i = 0; i < n_in; i++) printf("\"%s.in%d.bin\", ", c->name, i);
        printf("\"%s.out.bin\"]", c->name);
    }
    if (!ok) {
        printf(", \"error\": ");
        json_string(stdout, r->error);
    }
    printf("}\n");
    fflush(stdout);
}

static void print_row(const bench_case *c, const bench_result *r, bool ok)
{
    char shape[64], dt[32];
    shape_text(c, shape, sizeof shape);
    dtype_text(c, dt, sizeof dt);
    if (r->timed)
        printf("%-20s %-10s %-16s %10.3f %10.3f %10.1f %s\n", c->name, dt, shape, r->median_ms, r->min_ms,
               case_work(c) / (r->median_ms * 1e6), case_unit(c));
    if (!ok) {
        if (!r->timed) printf("%-20s %-10s %-16s %10s\n", c->name, dt, shape, "failed");
        printf("    error: %s\n", r->error);
    }
    fflush(stdout);
}

/* ---- command line ------------------------------------------------------- */

static bool parse_int(const char *flag, const char *s, int min, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > 1000000) {
        fprintf(stderr, "wick bench: %s wants an integer >= %d, not '%s'\n", flag, min, s);
        return false;
    }
    *out = (int)v;
    return true;
}

/* Marks the cases named in a comma-separated list: an exact name, or a
 * prefix that ends where a name has '_' ("matmul", "cast", "matmul_f32"). */
static bool select_ops(const char *list, bool *selected)
{
    const char *p = list;
    while (*p) {
        size_t len = strcspn(p, ",");
        bool any = false;
        for (int i = 0; i < N_CASES; i++) {
            const char *name = cases[i].name;
            if (len > 0 && strncmp(name, p, len) == 0 && (name[len] == 0 || name[len] == '_')) {
                selected[i] = true;
                any = true;
            }
        }
        if (!any) {
            fprintf(stderr, "wick bench: no case named '%.*s'; the cases are:", (int)len, p);
            for (int i = 0; i < N_CASES; i++) fprintf(stderr, " %s", cases[i].name);
            fprintf(stderr, "\n");
            return false;
        }
        p += len;
        if (*p == ',') p++;
    }
    return true;
}

/* "--flag value" or "--flag=value"; advances *i past what it used. */
static const char *flag_value(int argc, char **argv, int *i, const char *flag, bool *missing)
{
    size_t n = strlen(flag);
    const char *a = argv[*i];
    *missing = false;
    if (strncmp(a, flag, n) != 0) return NULL;
    if (a[n] == '=') return a + n + 1;
    if (a[n] != 0) return NULL;
    if (*i + 1 >= argc) {
        fprintf(stderr, "wick bench: %s needs a value\n", flag);
        *missing = true;
        return NULL;
    }
    return argv[++*i];
}

static int parse_args(int argc, char **argv, bench_opts *o, bool *list_only, bool *help)
{
    memset(o, 0, sizeof *o);
    o->device = "cpu";
    o->reps = 20;
    o->warmup = 3;
    bool any_selected = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        bool missing;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { *help = true; return WICK_EXIT_OK; }
        if (!strcmp(a, "--json")) { o->json = true; continue; }
        if (!strcmp(a, "--list")) { *list_only = true; continue; }
        if ((v = flag_value(argc, argv, &i, "--device", &missing))) { o->device = v; continue; }
        if (missing) return WICK_EXIT_USAGE;
        if ((v = flag_value(argc, argv, &i, "--dump", &missing))) { o->dump_dir = v; continue; }
        if (missing) return WICK_EXIT_USAGE;
        if ((v = flag_value(argc, argv, &i, "--reps", &missing))) {
            if (!parse_int("--reps", v, 1, &o->reps)) return WICK_EXIT_USAGE;
            continue;
        }
        if (missing) return WICK_EXIT_USAGE;
        if ((v = flag_value(argc, argv, &i, "--warmup", &missing))) {
            if (!parse_int("--warmup", v, 0, &o->warmup)) return WICK_EXIT_USAGE;
            continue;
        }
        if (missing) return WICK_EXIT_USAGE;
        if ((v = flag_value(argc, argv, &i, "--op", &missing))) {
            if (!select_ops(v, o->selected)) return WICK_EXIT_USAGE;
            any_selected = true;
            continue;
        }
        if (missing) return WICK_EXIT_USAGE;
        fprintf(stderr, "wick bench: unknown option '%s' (see wick bench --help)\n", a);
        return WICK_EXIT_USAGE;
    }
    if (!any_selected)
        for (int i = 0; i < N_CASES; i++) o->selected[i] = true;
    return WICK_EXIT_OK;
}

int wick_cmd_bench(int argc, char **argv)
{
    bench_opts o;
    bool list_only = false, help = false;
    int rc = parse_args(argc, argv, &o, &list_only, &help);
    if (rc != WICK_EXIT_OK) return rc;
    if (help) {
        wick_bench_usage();
        return WICK_EXIT_OK;
    }
    if (list_only) {
        for (int i = 0; i < N_CASES; i++)
            if (o.selected[i]) printf("%s\n", cases[i].name);
        return WICK_EXIT_OK;
    }

    if (o.dump_dir) {
        struct stat st;
        if (stat(o.dump_dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(o.dump_dir, W_OK) != 0) {
            fprintf(stderr, "wick bench: --dump wants a writable directory; '%s' is not one\n", o.dump_dir);
            return WICK_EXIT_USAGE;
        }
    }
    wk_device *dev = wk_device_open(o.device);
    if (!dev) {
        fprintf(stderr, "wick bench: cannot open device '%s': %s\n", o.device, wk_last_error());
        return WICK_EXIT_FAIL;
    }
    if (wk_device_set_seed(dev, 42) != WK_OK) {
        fprintf(stderr, "wick bench: %s\n", wk_last_error());
        wk_device_close(dev);
        return WICK_EXIT_FAIL;
    }
    if (!o.json) {
        wk_device_info info;
        if (wk_device_info_get(dev, &info) == WK_OK)
            printf("device %s: %s, %d compute unit%s\n", o.device, info.model, info.compute_units,
                   info.compute_units == 1 ? "" : "s");
        printf("warm-up %d, median of %d reps (ms); rate = work / median\n\n", o.warmup, o.reps);
        printf("%-20s %-10s %-16s %10s %10s %10s\n", "op", "dtype", "shape", "median ms", "min ms", "rate");
    }
    int failures = 0;
    for (int i = 0; i < N_CASES; i++) {
        if (!o.selected[i]) continue;
        bench_result r;
        bool ok = run_case(dev, &cases[i], &o, &r);
        if (!ok) failures++;
        if (o.json) print_json(&cases[i], &o, &r, ok);
        else print_row(&cases[i], &r, ok);
    }
    wk_device_close(dev);
    return failures ? WICK_EXIT_FAIL : WICK_EXIT_OK;
}
