/* test_unary.c — the unary family: the wk_unary_op ops plus affine,
 * powf and elu, on every dtype that takes them, over every standard
 * layout (contiguous, transposed, narrowed, broadcast, reversed, rank 8,
 * empty, size 1, odd sizes, rank 0, large). References are naive double
 * loops; float results are compared with the normalized error against the
 * reference rounded to the dtype, integer results exactly (wrap-around,
 * saturating casts for affine).
 *
 * Case names: unary/<op>/<dtype>/<layout>, plus unary/<op>/<dtype>/wrapper
 * (the named wrapper, e.g. wk_exp, agrees with wk_unary).
 */
#include <stdlib.h>
#include "test.h"

enum { U_AFFINE = WK_UNARY_COUNT, U_POWF, U_ELU, U_COUNT };

typedef struct uspec {
    int op;            /* wk_unary_op or U_* */
    const char *name;  /* op name as in wk_op_names */
    bool ints;         /* integer dtypes take it */
    t_gen gen;         /* float inputs */
} uspec;

static const uspec specs[U_COUNT] = {
    { WK_EXP, "exp", false, { G_UNIFORM, -5, 5 } },
    { WK_LOG, "log", false, { G_UNIFORM, 0.05, 20 } },
    { WK_SIN, "sin", false, { G_UNIFORM, -6, 6 } },
    { WK_COS, "cos", false, { G_UNIFORM, -6, 6 } },
    { WK_TANH, "tanh", false, { G_UNIFORM, -4, 4 } },
    { WK_ABS, "abs", true, { G_UNIFORM, -10, 10 } },
    { WK_NEG, "neg", true, { G_UNIFORM, -10, 10 } },
    { WK_RECIP, "recip", false, { G_AWAY, 0.1, 10 } },
    { WK_SQR, "sqr", true, { G_UNIFORM, -10, 10 } },
    { WK_SQRT, "sqrt", false, { G_UNIFORM, 0, 20 } },
    { WK_GELU, "gelu", false, { G_UNIFORM, -5, 5 } },
    { WK_GELU_ERF, "gelu_erf", false, { G_UNIFORM, -5, 5 } },
    { WK_ERF, "erf", false, { G_UNIFORM, -3, 3 } },
    { WK_RELU, "relu", true, { G_UNIFORM, -5, 5 } },
    { WK_SILU, "silu", false, { G_UNIFORM, -6, 6 } },
    { WK_FLOOR, "floor", true, { G_HALVES, -10, 10 } },
    { WK_CEIL, "ceil", true, { G_HALVES, -10, 10 } },
    { WK_ROUND, "round", true, { G_HALVES, -10, 10 } },
    { WK_SIGN, "sign", true, { G_SMALLSET, 0, 0 } },
    { WK_SIGMOID, "sigmoid", false, { G_UNIFORM, -12, 12 } },
    { U_AFFINE, "affine", true, { G_UNIFORM, -8, 8 } },
    { U_POWF, "powf", false, { G_UNIFORM, 0.1, 4 } },
    { U_ELU, "elu", false, { G_UNIFORM, -4, 4 } },
};

/* parameters used by the parametrised ops */
#define AFF_MUL 1.5
#define AFF_ADD (-0.25)
#define IAFF_MUL 3.0
#define IAFF_ADD (-7.0)
#define POW_E 2.5
#define ELU_ALPHA 0.7

static double ref_float(int op, double x)
{
    switch (op) {
    case WK_EXP: return exp(x);
    case WK_LOG: return log(x);
    case WK_SIN: return sin(x);
    case WK_COS: return cos(x);
    case WK_TANH: return tanh(x);
    case WK_ABS: return fabs(x);
    case WK_NEG: return -x;
    case WK_RECIP: return 1.0 / x;
    case WK_SQR: return x * x;
    case WK_SQRT: return sqrt(x);
    case WK_GELU: return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case WK_GELU_ERF: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case WK_ERF: return erf(x);
    case WK_RELU: return isnan(x) ? x : x > 0 ? x : 0.0;
    case WK_SILU: return x / (1.0 + exp(-x));
    case WK_FLOOR: return floor(x);
    case WK_CEIL: return ceil(x);
    case WK_ROUND: return nearbyint(x);        /* default mode: half to even */
    case WK_SIGN: return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
    case WK_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case U_AFFINE: return x * AFF_MUL + AFF_ADD;
    case U_POWF: return pow(x, POW_E);
    case U_ELU: return x > 0 ? x : ELU_ALPHA * (exp(x) - 1.0);
    default: return NAN;
    }
}

/* integer reference: returns the stored bits' value (wrapped) */
static int64_t ref_int(int op, wk_dtype dt, int64_t x)
{
    uint64_t u = (uint64_t)x;
    switch (op) {
    case WK_ABS: return t_wrap(dt, x < 0 ? (uint64_t)0 - u : u);
    case WK_NEG: return t_wrap(dt, (uint64_t)0 - u);
    case WK_SQR: return t_wrap(dt, u * u);
    case WK_RELU: return x > 0 ? x : 0;
    case WK_SIGN: return x > 0 ? 1 : x < 0 ? -1 : 0;
    case WK_FLOOR: case WK_CEIL: case WK_ROUND: return x;
    case U_AFFINE: return t_f2i(dt, (long double)((double)x * IAFF_MUL + IAFF_ADD));
    default: return 0;
    }
}

/* Run op through the generic entry point (wrapper=false) or the named one. */
wk_tensor *t_unary_call(int op, const wk_tensor *x, bool wrapper, bool is_int);
wk_tensor *t_unary_call(int op, const wk_tensor *x, bool wrapper, bool is_int)
{
    if (op == U_AFFINE) return is_int ? wk_affine(x, IAFF_MUL, IAFF_ADD) : wk_affine(x, AFF_MUL, AFF_ADD);
    if (op == U_POWF) return wk_powf(x, POW_E);
    if (op == U_ELU) return wk_elu(x, ELU_ALPHA);
    if (!wrapper) return wk_unary((wk_unary_op)op, x);
    switch (op) {
    case WK_EXP: return wk_exp(x);
    case WK_LOG: return wk_log(x);
    case WK_SIN: return wk_sin(x);
    case WK_COS: return wk_cos(x);
    case WK_TANH: return wk_tanh(x);
    case WK_ABS: return wk_abs(x);
    case WK_NEG: return wk_neg(x);
    case WK_RECIP: return wk_recip(x);
    case WK_SQR: return wk_sqr(x);
    case WK_SQRT: return wk_sqrt(x);
    case WK_GELU: return wk_gelu(x);
    case WK_GELU_ERF: return wk_gelu_erf(x);
    case WK_ERF: return wk_erf(x);
    case WK_RELU: return wk_relu(x);
    case WK_SILU: return wk_silu(x);
    case WK_FLOOR: return wk_floor(x);
    case WK_CEIL: return wk_ceil(x);
    case WK_ROUND: return wk_round(x);
    case WK_SIGN: return wk_sign(x);
    case WK_SIGMOID: return wk_sigmoid(x);
    default: return NULL;
    }
}

static void run_case(const uspec *sp, wk_dtype dt, const t_layout *lay, bool wrapper)
{
    bool is_int = !t_is_float(dt);
    t_gen gen = sp->gen;
    if (is_int) {
        gen = T_GEN(G_FULL, 0, 0);
        if (sp->op == U_AFFINE && dt == WK_I64) gen = T_GEN(G_UNIFORM, -1099511627776.0, 1099511627776.0);
    }
    t_arr x;
    wk_tensor *in = t_make(dt, lay->kind, lay->shape, gen, &x);
    if (!in) return;
    t_cover(sp->name, dt);
    wk_tensor *out = t_own(t_unary_call(sp->op, in, wrapper, is_int));
    if (!out) { t_fail("%s returned NULL: %s", sp->name, wk_last_error()); return; }
    if (is_int) {
        t_arr ref = t_arr_new(dt, x.shape);
        for (int64_t i = 0; i < x.n; i++) t_puti(dt, ref.p, i, ref_int(sp->op, dt, t_geti(dt, x.p, i)));
        t_check_exact(sp->name, out, x.shape, dt, ref.p);
    } else {
        double *ref = t_mem((size_t)x.n * sizeof(double) + 8);
        for (int64_t i = 0; i < x.n; i++) ref[i] = ref_float(sp->op, t_get(dt, x.p, i));
        /* gelu, gelu_erf, elu: 1+tanh(..), 1+erf(..) and exp(x)-1 computed in
         * f32 lose relative accuracy where the result is tiny; judge those
         * errors against the input scale */
        bool cancels = sp->op == WK_GELU || sp->op == WK_GELU_ERF || sp->op == U_ELU;
        t_check_close_floor(sp->name, out, x.shape, dt, ref, t_bound(dt), cancels ? 1.0 : 0.0);
    }
    /* the input is untouched */
    if (x.n && x.n < 100000) {
        bool ok;
        t_arr again = t_read(in, &ok);
        if (ok && memcmp(again.p, x.p, (size_t)x.n * t_size(dt)) != 0) t_fail("%s modified its input", sp->name);
    }
}

T_SUITE(unary)
{
    for (int o = 0; o < U_COUNT; o++) {
        const uspec *sp = &specs[o];
        for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++) {
            wk_dtype dt = (wk_dtype)d;
            if (!t_is_float(dt) && !sp->ints) continue;
            for (int l = 0; l < t_nlayouts; l++)
                if (t_case("unary/%s/%s/%s", sp->name, t_dt_name(dt), t_layouts[l].name))
                    run_case(sp, dt, &t_layouts[l], false);
            if (o < WK_UNARY_COUNT && t_case("unary/%s/%s/wrapper", sp->name, t_dt_name(dt)))
                run_case(sp, dt, &t_layouts[1], true);
        }
    }
    /* the op names the library reports */
    if (t_case("unary/names")) {
        for (int o = 0; o < WK_UNARY_COUNT; o++)
            T_CHECK(!strcmp(wk_unary_name((wk_unary_op)o), specs[o].name), "wk_unary_name(%d) is \"%s\", expected \"%s\"",
                    o, wk_unary_name((wk_unary_op)o), specs[o].name);
    }
    /* float-only ops refuse integer dtypes */
    for (int o = 0; o < U_COUNT; o++) {
        if (specs[o].ints) continue;
        if (!t_case("unary/%s/i32/refused", specs[o].name)) continue;
        wk_tensor *x = T_NEED(wk_zeros(t_dev(), WK_I32, WK_SHAPE(3)));
        if (!x) continue;
        wk_tensor *y = t_own(t_unary_call(specs[o].op, x, false, true));
        T_CHECK(y == NULL, "%s on i32 returned a tensor", specs[o].name);
        T_CHECK(strstr(wk_last_error(), specs[o].name) != NULL, "%s on i32: message \"%s\" does not name the op",
                specs[o].name, wk_last_error());
    }
}
