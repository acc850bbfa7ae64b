/* test_coverage.c — the (op, dtype) coverage rule and listing.
 *
 * tests/required_ops.txt lists every pair that must be supported. The rule:
 * the list holds at least REQUIRED_PAIRS_MIN pairs (so it cannot shrink
 * quietly), every name is an op of wk_op_names(), every pair is supported
 * on cpu (wk_supports) and some case that ran this time covered it
 * (t_cover). The listing shows, per device (cpu and every cuda/rocm device
 * found), one row per op and one column per dtype:
 *   T  implemented and tested (by a case of this run)
 *   I  implemented, untested here
 *   !  required but unsupported or untested (a failure)
 *   -  not required and not supported
 */
#include <stdlib.h>
#include <string.h>
#include "test.h"

#define REQUIRED_PAIRS_MIN 429

typedef struct pair { char op[32]; int dt; } pair;

static int load_required(const char *path, pair **out)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = 0, cap = 0;
    pair *ps = NULL;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char op[64], dts[64];
        if (line[0] == '#' || sscanf(line, "%63s %63s", op, dts) != 2) continue;
        wk_dtype dt;
        if (!wk_dtype_from_name(dts, &dt)) {
            printf("coverage: %s: unknown dtype \"%s\"\n", path, dts);
            dt = WK_DTYPE_COUNT;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 512;
            ps = realloc(ps, (size_t)cap * sizeof *ps);
        }
        snprintf(ps[n].op, sizeof ps[n].op, "%.31s", op);
        ps[n].dt = (int)dt;
        n++;
    }
    fclose(f);
    *out = ps;
    return n;
}

static bool tested(const char *op, int dt)
{
    for (int i = 0; i < t_cov_count(); i++) {
        const t_cov_entry *e = t_cov_get(i);
        if (e->dt == dt && !strcmp(e->op, op)) return true;
    }
    return false;
}

static bool required(const pair *ps, int n, const char *op, int dt)
{
    for (int i = 0; i < n; i++)
        if (ps[i].dt == dt && !strcmp(ps[i].op, op)) return true;
    return false;
}

static bool op_known(const char *op)
{
    for (const char *const *p = wk_op_names(); p && *p; p++)
        if (!strcmp(*p, op)) return true;
    return false;
}

static void listing(wk_device *dev, bool test_here, const pair *ps, int n)
{
    printf("\ncoverage on %s (T tested, I implemented/untested, ! required but missing, - neither)\n", wk_device_name(dev));
    printf("%-20s", "op");
    for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++) printf("%7s", wk_dtype_name((wk_dtype)d));
    printf("\n");
    int counts[4] = { 0 };
    for (const char *const *p = wk_op_names(); p && *p; p++) {
        char row[WK_DENSE_DTYPE_COUNT];
        bool any = false;
        for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++) {
            bool sup = wk_supports(dev, *p, (wk_dtype)d), req = required(ps, n, *p, d);
            bool tst = test_here && tested(*p, d);
            char c = sup ? (tst ? 'T' : 'I') : '-';
            if (req && (!sup || (test_here && !tst))) c = '!';
            row[d] = c;
            counts[c == 'T' ? 0 : c == 'I' ? 1 : c == '!' ? 2 : 3]++;
            if (c != '-') any = true;
        }
        if (!any) continue;
        printf("%-20s", *p);
        for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++) printf("%7c", row[d]);
        printf("\n");
    }
    printf("%s: %d tested, %d implemented untested, %d required missing\n", wk_device_name(dev), counts[0], counts[1],
           counts[2]);
}

/* listing() of one GPU device (t_each_gpu) */
struct gpu_listing {
    const pair *ps;
    int n;
};
static void list_gpu(wk_device *dev, const char *name, void *arg)
{
    (void)name;
    const struct gpu_listing *gl = arg;
    listing(dev, false, gl->ps, gl->n);
}

static const char *find_required(const char *given)
{
    static const char *candidates[] = { "tests/required_ops.txt", "../tests/required_ops.txt", "required_ops.txt" };
    if (given) return given;
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        FILE *f = fopen(candidates[i], "r");
        if (f) { fclose(f); return candidates[i]; }
    }
    return candidates[0];
}

bool t_coverage_check(bool print_listing, const char *required_path);
bool t_coverage_check(bool print_listing, const char *required_path)
{
    const char *path = find_required(required_path);
    pair *ps = NULL;
    int n = load_required(path, &ps);
    bool ok = true;
    if (n < 0) {
        printf("FAIL coverage: cannot read %s (run from the repository root or pass --required FILE)\n", path);
        return false;
    }
    if (n < REQUIRED_PAIRS_MIN) {
        printf("FAIL coverage: %s lists %d pairs, fewer than the %d required\n", path, n, REQUIRED_PAIRS_MIN);
        ok = false;
    }
    int missing = 0;
    for (int i = 0; i < n; i++) {
        const char *why = NULL;
        if (ps[i].dt >= WK_DTYPE_COUNT) why = "bad dtype";
        else if (!op_known(ps[i].op)) why = "not an op of wk_op_names()";
        else if (!wk_supports(t_dev(), ps[i].op, (wk_dtype)ps[i].dt)) why = "unsupported on cpu";
        else if (!tested(ps[i].op, ps[i].dt)) why = "no test case ran";
        if (why) {
            if (missing++ < 40)
                printf("FAIL coverage: %s %s: %s\n", ps[i].op, ps[i].dt < WK_DTYPE_COUNT ? wk_dtype_name((wk_dtype)ps[i].dt) : "?",
                       why);
            ok = false;
        }
    }
    if (missing > 40) printf("FAIL coverage: ... %d missing pairs in all\n", missing);
    if (print_listing) {
        listing(t_dev(), true, ps, n);
        struct gpu_listing gl = { ps, n };
        t_each_gpu(list_gpu, &gl);
        printf("\nrequired pairs: %d listed (minimum %d), %d missing\n", n, REQUIRED_PAIRS_MIN, missing);
    }
    free(ps);
    return ok;
}
