/* custom_op.c — a custom op with a cpu callback and a GPU callback that
 * launches a kernel compiled at run time (one HIP-style source for NVIDIA
 * and AMD), run on every device present: y = x * x + bias, checked
 * against the cpu.
 *
 *   make build/example-custom-op && build/example-custom-op
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "wick.h"
#include "wick_ext.h"

static const char kernel_src[] =
    "extern \"C\" __global__ void sqr_bias(float *y, const float *x, float bias, int64_t n)\n"
    "{\n"
    "    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] = x[i] * x[i] + bias;\n"
    "}\n";

typedef struct sqr_bias_data {
    float bias;
    wk_rtc_kernel *kernel;       /* compiled for the GPU device in use */
} sqr_bias_data;

static int64_t numel(const wk_raw_view *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->rank; d++) n *= v->dims[d];
    return n;
}

static wk_status sqr_bias_cpu(const wk_custom_op1 *op, const wk_custom_env *env, const wk_raw_view *y,
                              const wk_raw_view *x)
{
    (void)env;
    const sqr_bias_data *d = op->user;
    const float *px = x->data;    /* contiguous (op.contiguous) */
    float *py = y->data;
    for (int64_t i = 0; i < numel(x); i++) py[i] = px[i] * px[i] + d->bias;
    return WK_OK;
}

/* the same for cuda and rocm: launch on the device's stream */
static wk_status sqr_bias_gpu(const wk_custom_op1 *op, const wk_custom_env *env, const wk_raw_view *y,
                              const wk_raw_view *x)
{
    const sqr_bias_data *d = op->user;
    if (!d->kernel) return wk_error_set(WK_ERR_UNSUPPORTED, "sqr_bias: no kernel compiled for %s", env->kind);
    void *py = y->data, *px = x->data;
    float bias = d->bias;
    int64_t n = numel(x);
    void *args[] = { &py, &px, &bias, &n };
    const unsigned grid[3] = { (unsigned)((n + 255) / 256), 1, 1 }, block[3] = { 256, 1, 1 };
    return wk_rtc_launch(d->kernel, grid, block, 0, env->stream, args);
}

static int run_on(const char *name)
{
    wk_device *dev = wk_device_open(name);
    if (!dev) return 0;
    sqr_bias_data data = { .bias = 0.5f };
    if (strcmp(name, "cpu") != 0) {
        if (!wk_rtc_available(dev)) {
            printf("%-8s no run-time compiler: skipped\n", name);
            wk_device_close(dev);
            return 0;
        }
        data.kernel = wk_rtc_compile(dev, kernel_src, "sqr_bias", NULL, 0);
        if (!data.kernel) {
            printf("%-8s compile failed: %s\n", name, wk_last_error());
            wk_device_close(dev);
            return 1;
        }
    }
    wk_custom_op1 op = { .name = "sqr_bias", .cpu = sqr_bias_cpu, .cuda = sqr_bias_gpu, .rocm = sqr_bias_gpu,
                         .contiguous = true, .user = &data };
    enum { N = 10000 };
    static float host[N], got[N];
    for (int i = 0; i < N; i++) host[i] = (float)i / N - 0.5f;
    int bad = 0;
    wk_scope_begin();
    wk_tensor *x = wk_from_host(dev, WK_F32, WK_SHAPE(100, 100), host);
    wk_tensor *y = x ? wk_apply_op1(&op, wk_transpose(x, 0, 1)) : NULL;    /* any view goes in */
    if (!y || wk_to_host(y, got, sizeof got) != WK_OK) {
        printf("%-8s failed: %s\n", name, wk_last_error());
        bad = 1;
    } else {
        double err = 0;
        for (int i = 0; i < 100; i++)
            for (int j = 0; j < 100; j++) {
                const float v = host[j * 100 + i];
                err = fmax(err, fabs(got[i * 100 + j] - (v * v + 0.5f)));
            }
        printf("%-8s y = x^T * x^T + 0.5: max error %g%s\n", name, err,
               data.kernel ? (wk_rtc_from_cache(data.kernel) ? " (kernel from the cache)" : " (kernel compiled)") : "");
        bad = err > 1e-6;
    }
    wk_scope_end();
    wk_rtc_free(data.kernel);
    wk_device_close(dev);
    return bad;
}

int main(void)
{
    int bad = run_on("cpu");
    const char *kinds[2] = { "cuda", "rocm" };
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < wk_device_count(kinds[k]); i++) {
            char name[32];
            snprintf(name, sizeof name, "%s:%d", kinds[k], i);
            bad |= run_on(name);
        }
    return bad;
}
