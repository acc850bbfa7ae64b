/* test.h — the small framework behind build/wick-tests.
 *
 * A suite is a function registered with T_SUITE(name) { ... }. Inside it,
 * every case starts with `if (!t_case("family/op/dtype/layout")) ...`:
 * t_case ends the previous case, applies --filter, derives the case's seed
 * (a hash of its name, or --seed N for every case to replay one), and
 * returns false when the case must not run. A case passes unless a check
 * fails; each failure prints `FAIL <case> seed <S>: <what differed>`.
 *
 * Everything a case allocates through t_own()/t_mem() is released when the
 * case ends, so cases stay short and leak nothing under LeakSanitizer.
 * References are computed in the tests (t_dtype.h, naive double loops) or
 * come from tests/data; nothing here includes a src/ header.
 */
#ifndef WICK_TEST_H
#define WICK_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "wick.h"
#include "t_dtype.h"

/* ---- registration --------------------------------------------------- */

typedef void (*t_suite_fn)(void);
void t_register(const char *name, t_suite_fn fn);
#define T_SUITE(fn)                                                        \
    static void t_suite_##fn(void);                                        \
    __attribute__((constructor)) static void t_suite_##fn##_register(void) { t_register(#fn, t_suite_##fn); } \
    static void t_suite_##fn(void)

/* ---- cases ---------------------------------------------------------- */

/* Start a case (printf-style name). False: skip it (filtered or --list). */
bool t_case(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Record a failure of the current case (thread-safe). */
void t_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool t_case_failed(void);
const char *t_case_name(void);
uint64_t t_seed(void);
/* The case's generator (seeded from t_seed()). */
t_rng *t_r(void);
/* This case tests (op, dtype) on the cpu device (coverage listing). */
void t_cover(const char *op, wk_dtype dt);
/* The cpu device, opened once by the runner. */
wk_device *t_dev(void);
/* fn(dev, "cuda:0", arg) for every GPU device of this machine (none in
 * CI), each opened for the call and closed after; a device that is
 * counted but cannot be opened is reported and skipped. */
void t_each_gpu(void (*fn)(wk_device *dev, const char *name, void *arg), void *arg);

#define T_CHECK(cond, ...) do { if (!(cond)) t_fail(__VA_ARGS__); } while (0)
/* A call that must succeed: prints the library's message otherwise. */
#define T_OK(expr) do { wk_status st_ = (expr); if (st_ != WK_OK) t_fail("%s returned %s: %s", #expr, wk_status_name(st_), wk_last_error()); } while (0)

/* ---- per-case ownership --------------------------------------------- */

/* Release t when the case ends; returns t (NULL is fine). */
wk_tensor *t_own(wk_tensor *t);
/* malloc'd memory freed when the case ends (zeroed). */
void *t_mem(size_t bytes);
/* Tensor that must not be NULL: on NULL, fails the case with the error
 * and the expression. Owned by the case. */
wk_tensor *t_need_(wk_tensor *t, const char *expr);
#define T_NEED(expr) t_need_((expr), #expr)

/* ---- host arrays ------------------------------------------------------ */

typedef struct t_arr {
    wk_dtype dt;
    wk_shape shape;
    int64_t n;
    unsigned char *p;      /* n elements, row-major (owned by the case) */
} t_arr;

int64_t t_numel(wk_shape s);
t_arr t_arr_new(wk_dtype dt, wk_shape s);
/* A tensor's contents (through wk_to_host). ok=false on error (reported). */
t_arr t_read(const wk_tensor *t, bool *ok);
/* Logical contents of a view read straight from the host copy of its
 * storage: base holds the storage's elements from index 0. */
t_arr t_gather_view(const wk_tensor *view, const void *base, wk_dtype dt);
const char *t_shape_str(wk_shape s);   /* static buffer, per thread */
/* numpy broadcast of two shapes; false when they do not broadcast */
bool t_bcast_shape(wk_shape a, wk_shape b, wk_shape *out);
/* Row-major index into `in` of the element that broadcasts to element i
 * of `out` (in's dims are right-aligned with out's). */
int64_t t_bcast_index(wk_shape out, wk_shape in, int64_t i);
bool t_shape_eq(wk_shape a, wk_shape b);

/* ---- value generators ------------------------------------------------- */

typedef enum t_gen_kind {
    G_UNIFORM,   /* floats in [lo, hi); ints in [lo, hi]                  */
    G_AWAY,      /* |x| in [lo, hi), random sign (recip, div denominators) */
    G_SMALLSET,  /* a few values with many repeats: ties, equality        */
    G_FULL,      /* ints: whole range with the extremes; floats: wide     */
    G_HALVES     /* multiples of 0.5 in [lo, hi] (round/floor/ceil ties)  */
} t_gen_kind;
typedef struct t_gen { t_gen_kind kind; double lo, hi; } t_gen;
#define T_GEN(k, l, h) ((t_gen){ (k), (l), (h) })
/* Fill n elements of dt at p from gen (values exactly representable). */
void t_fill(wk_dtype dt, void *p, int64_t n, t_gen gen);

/* ---- layouts ----------------------------------------------------------- */

typedef enum t_layout_kind {
    LK_CONTIG,       /* wk_from_host                                   */
    LK_TRANSPOSED,   /* last two dims swapped in storage; rank 1: a column */
    LK_NARROWED,     /* a window of a larger tensor (non-zero offset)  */
    LK_BROADCAST,    /* even dims broadcast from size 1 (stride 0)     */
    LK_REVERSED      /* every dim permuted in reverse order            */
} t_layout_kind;

typedef struct t_layout { const char *name; t_layout_kind kind; wk_shape shape; } t_layout;
/* The standard list for elementwise families (contiguous, transposed,
 * narrowed, broadcast, reversed3d, empty, empty_strided, size1, odd7,
 * odd33, odd1023, scalar, big65537). */
extern const t_layout t_layouts[];
extern const int t_nlayouts;

/* A tensor of shape lay->shape (dtype dt) built with layout lay->kind from
 * values drawn by gen; *vals receives its logical row-major contents.
 * NULL (case failed) on error. Owned by the case. */
wk_tensor *t_make(wk_dtype dt, t_layout_kind kind, wk_shape shape, t_gen gen, t_arr *vals);
/* Same, from given row-major values (vals->shape/dt describe them). */
wk_tensor *t_make_from(const t_arr *vals, t_layout_kind kind);

/* A destination view for in-place ops: a storage (base, contiguous, every
 * element set to T_POISON bits) in which the view of shape vals->shape and
 * layout kind holds vals. d->off[i] is the storage index of the view's
 * element i. Check afterwards with t_check_dst. */
#define T_POISON 0x5A
typedef struct t_dst {
    wk_tensor *view, *base;
    t_arr storage;       /* host copy of the base as written: poison + vals */
    int64_t *off;        /* storage index of each view element           */
    bool *in_view;       /* per storage element                          */
} t_dst;
bool t_make_dst(const t_arr *vals, t_layout_kind kind, t_dst *d);
/* The base storage must equal expect (a full storage image): elements
 * outside the view bit for bit (still poison), elements inside within
 * bound (exactly when bound is 0 or the dtype is an integer). */
bool t_check_dst(const char *what, const t_dst *d, const t_arr *expect, double bound);

/* ---- comparisons ------------------------------------------------------- */

/* Normalized-error bound for dt: elementwise ops (one rounding of the
 * result) and accumulating ops (sums, matmul). */
double t_bound(wk_dtype dt);
double t_bound_acc(wk_dtype dt);
/* got (a library tensor of dtype dt and the expected shape) against ref
 * (exact values in double): ref is rounded to dt; NaN must match NaN,
 * Inf must match Inf of the same sign; the finite rest must have
 * sum (g-r)^2 / sum r^2 <= bound. Reports and returns false otherwise. */
bool t_check_close(const char *what, const wk_tensor *got, wk_shape shape, wk_dtype dt, const double *ref, double bound);
/* Same, for ops whose float formula loses digits near zero (gelu's
 * 1+tanh(..), elu's exp(x)-1): errors count relative to max(|ref|, floor)
 * (the denominator gets n * floor^2). */
bool t_check_close_floor(const char *what, const wk_tensor *got, wk_shape shape, wk_dtype dt, const double *ref,
                         double bound, double floor_);
/* Exact: got's elements equal ref's bit patterns (any NaN equals any NaN
 * for float dtypes). ref holds n elements of dt. */
bool t_check_exact(const char *what, const wk_tensor *got, wk_shape shape, wk_dtype dt, const void *ref);
/* Normalized error of two host arrays (NaN/Inf aware), the same rules. */
bool t_cmp_values(const char *what, wk_dtype dt, const double *got, const double *ref, int64_t n, double bound);
bool t_cmp_values_floor(const char *what, wk_dtype dt, const double *got, const double *ref, int64_t n, double bound,
                        double floor_);
/* wk_last_error() must mention each of the NULL-terminated words. */
bool t_check_error(const char *what, wk_status want, wk_status got, ...);
/* A call that must fail: r (its result) is NULL, the status is want
 * (T_ANY_STATUS: any failure) and the message mentions w1, w2 and w3
 * (NULL ends the words early). A tensor returned by mistake is released. */
#define T_ANY_STATUS WK_STATUS_COUNT
void t_check_null(const char *expr, wk_tensor *r, wk_status want, const char *w1, const char *w2, const char *w3);

/* ---- language-model references (test_llm_ref.c, test_llm_llamacpp.c) -- */

/* A model file: $env when set, else file in wick's model cache
 * ($WICK_CACHE, $XDG_CACHE_HOME/wick, ~/.cache/wick). Whether it is
 * readable. */
bool t_model_path(const char *env, const char *file, char *path, size_t n);
/* The integers of a JSON array into out (at most cap); -1 when one is not
 * an integer. */
struct wk_json;
int64_t t_json_ints(const struct wk_json *a, int32_t *out, int64_t cap);
/* The index of the largest of n values (the first of equals). */
int32_t t_argmax(const float *row, int64_t n);

/* ---- runner state used by test_coverage.c ------------------------------ */

typedef struct t_cov_entry { char op[32]; int dt; } t_cov_entry;
int t_cov_count(void);
const t_cov_entry *t_cov_get(int i);
bool t_filter_active(void);

#endif /* WICK_TEST_H */
