/* test_main.c — the runner of build/wick-tests: suite registration, case
 * bookkeeping (names, seeds, filters, failures), per-case ownership of
 * tensors and memory, and the command line:
 *
 *   wick-tests [--filter SUBSTR] [--seed N] [--list] [--coverage]
 *              [--required FILE] [-v]
 *
 * --filter runs only cases whose name contains SUBSTR; --seed N gives every
 * case the seed N (replay a failure with its printed seed); --list prints
 * the case names; --coverage runs every case quietly, then prints the
 * (op, dtype) coverage listing (test_coverage.c) and exits 0 unless a
 * required pair is missing. The last line is always `N passed, N failed`;
 * the exit status is 1 when a case failed.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "test.h"

/* Under AddressSanitizer a huge allocation aborts unless the allocator may
 * return NULL; the error tests ask for 2^62-element tensors on purpose and
 * expect a clean WK_ERR_MEMORY. (ASAN_OPTIONS from the environment still
 * apply on top of this default.) */
const char *__asan_default_options(void);
__attribute__((visibility("default"), used)) const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}

/* test_coverage.c */
bool t_coverage_check(bool print_listing, const char *required_path);

/* ---- registration --------------------------------------------------- */

#define T_MAX_SUITES 64
typedef struct t_suite { const char *name; t_suite_fn fn; } t_suite;
static t_suite suites[T_MAX_SUITES];
static int nsuites;

void t_register(const char *name, t_suite_fn fn)
{
    if (nsuites < T_MAX_SUITES) {
        suites[nsuites].name = name;
        suites[nsuites].fn = fn;
        nsuites++;
    } else {
        fprintf(stderr, "wick-tests: too many suites (raise T_MAX_SUITES)\n");
    }
}

/* ---- options and counters -------------------------------------------- */

static const char *opt_filter;
static bool opt_seed_set, opt_list, opt_coverage, opt_verbose;
static uint64_t opt_seed;
static int n_passed, n_failed;

static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static bool case_open, case_failed;
static int case_fail_lines;
static char case_name[256];
static uint64_t case_seed;
static t_rng case_rng;
static wk_device *cpu;

bool t_filter_active(void) { return opt_filter != NULL; }
wk_device *t_dev(void) { return cpu; }
const char *t_case_name(void) { return case_name; }
uint64_t t_seed(void) { return case_seed; }
t_rng *t_r(void) { return &case_rng; }

bool t_case_failed(void)
{
    pthread_mutex_lock(&fail_lock);
    bool f = case_failed;
    pthread_mutex_unlock(&fail_lock);
    return f;
}

/* ---- ownership -------------------------------------------------------- */

static wk_tensor **owned;
static size_t nowned, capowned;
static void **mems;
static size_t nmems, capmems;

wk_tensor *t_own(wk_tensor *t)
{
    if (!t) return NULL;
    if (nowned == capowned) {
        capowned = capowned ? 2 * capowned : 256;
        owned = realloc(owned, capowned * sizeof *owned);
    }
    owned[nowned++] = t;
    return t;
}

void *t_mem(size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) { fprintf(stderr, "wick-tests: out of host memory\n"); exit(2); }
    if (nmems == capmems) {
        capmems = capmems ? 2 * capmems : 256;
        mems = realloc(mems, capmems * sizeof *mems);
    }
    mems[nmems++] = p;
    return p;
}

wk_tensor *t_need_(wk_tensor *t, const char *expr)
{
    if (!t) t_fail("%s returned NULL: %s", expr, wk_last_error());
    return t_own(t);
}

static void release_owned(void)
{
    /* release in reverse order of creation */
    while (nowned) wk_release(owned[--nowned]);
    while (nmems) free(mems[--nmems]);
}

/* ---- cases ------------------------------------------------------------- */

static void case_end(void)
{
    if (!case_open) return;
    release_owned();
    wk_clear_error();
    if (case_failed) n_failed++;
    else {
        n_passed++;
        if (opt_verbose) printf("ok   %s\n", case_name);
    }
    case_open = false;
}

bool t_case(const char *fmt, ...)
{
    case_end();
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    if (opt_filter && !strstr(name, opt_filter)) return false;
    if (opt_list) { printf("%s\n", name); return false; }
    snprintf(case_name, sizeof case_name, "%s", name);
    case_seed = opt_seed_set ? opt_seed : (t_hash_str(name) & 0xFFFFFFFFu);
    case_rng.s = case_seed * 0x2545F4914F6CDD1Dull + 1;
    case_open = true;
    case_failed = false;
    case_fail_lines = 0;
    wk_clear_error();
    return true;
}

void t_fail(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&fail_lock);
    if (!case_failed && !opt_coverage) printf("case %s seed %llu\n", case_name, (unsigned long long)case_seed);
    case_failed = true;
    if (case_fail_lines < 8 && !opt_coverage)
        printf("FAIL %s seed %llu: %s\n", case_name, (unsigned long long)case_seed, msg);
    else if (case_fail_lines == 8 && !opt_coverage)
        printf("FAIL %s seed %llu: (further failures of this case not shown)\n", case_name, (unsigned long long)case_seed);
    case_fail_lines++;
    fflush(stdout);
    pthread_mutex_unlock(&fail_lock);
}

/* ---- coverage records ----------------------------------------------------- */

static t_cov_entry *covs;
static int ncovs, capcovs;

void t_cover(const char *op, wk_dtype dt)
{
    for (int i = ncovs - 1; i >= 0 && i >= ncovs - 8; i--)   /* cheap de-dup of repeats */
        if (covs[i].dt == (int)dt && strcmp(covs[i].op, op) == 0) return;
    if (ncovs == capcovs) {
        capcovs = capcovs ? 2 * capcovs : 1024;
        covs = realloc(covs, (size_t)capcovs * sizeof *covs);
    }
    snprintf(covs[ncovs].op, sizeof covs[ncovs].op, "%s", op);
    covs[ncovs].dt = (int)dt;
    ncovs++;
}
int t_cov_count(void) { return ncovs; }
const t_cov_entry *t_cov_get(int i) { return &covs[i]; }

/* ---- main ------------------------------------------------------------------- */

static int by_name(const void *a, const void *b)
{
    return strcmp(((const t_suite *)a)->name, ((const t_suite *)b)->name);
}

static void usage(void)
{
    printf("usage: wick-tests [--filter SUBSTR] [--seed N] [--list] [--coverage] [--required FILE] [-v]\n");
}

int main(int argc, char **argv)
{
    const char *required = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--filter") && i + 1 < argc) opt_filter = argv[++i];
        else if (!strcmp(a, "--seed") && i + 1 < argc) { opt_seed = strtoull(argv[++i], NULL, 0); opt_seed_set = true; }
        else if (!strcmp(a, "--list")) opt_list = true;
        else if (!strcmp(a, "--coverage")) opt_coverage = true;
        else if (!strcmp(a, "--required") && i + 1 < argc) required = argv[++i];
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) opt_verbose = true;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(); return 0; }
        else { usage(); return 2; }
    }
    if (opt_coverage) opt_filter = NULL;
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* The cpu's quantized products take the exact path here unless the
       caller says otherwise: the references are f32 or f64 sums of the
       decoded weights. The integer path (the library's default) has its
       own suites, which ask for it: qdot, llm_llamacpp. */
    setenv("WICK_CPU_QDOT", "0", 0);
    cpu = wk_device_open("cpu");
    if (!cpu) {
        printf("FAIL setup: wk_device_open(\"cpu\") failed: %s\n0 passed, 1 failed\n", wk_last_error());
        return 1;
    }
    qsort(suites, (size_t)nsuites, sizeof suites[0], by_name);
    for (int s = 0; s < nsuites; s++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        suites[s].fn();
        case_end();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (opt_verbose)
            printf("suite %s: %.2f s\n", suites[s].name,
                   (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    }
    int rc = 0;
    if (opt_coverage) {
        bool ok = t_coverage_check(true, required);
        printf("%d passed, %d failed\n", n_passed, n_failed);
        rc = ok ? 0 : 1;
    } else if (!opt_list) {
        /* the coverage rule is a case of its own when everything ran */
        if (t_case("coverage/required")) {
            if (!t_coverage_check(false, required)) t_fail("required (op, dtype) pairs are missing; run --coverage");
        }
        case_end();
        printf("%d passed, %d failed\n", n_passed, n_failed);
        rc = n_failed ? 1 : 0;
    }
    wk_device_close(cpu);
    free(owned);
    free(mems);
    free(covs);
    return rc;
}
