/* conv_sort_bench.c — wick's side of bench/conv_sort_vs_torch.py: times
 * the convolutions, pools, upsampling and sorts of issue 13's speed list
 * on one device. The script writes each case's inputs (raw little-endian
 * bytes) into DIR; this program loads them, runs the op WARMUP times,
 * then REPS times each between two events, prints
 *   RESULT <case> <median ms> <min ms>
 * and writes the op's last result to DIR/<case>.out (the script compares
 * it with PyTorch's).
 *
 *   conv_sort_bench DIR [--device cuda:0] [--reps N] [--warmup N] [--case NAME,NAME..]
 *
 * Build: cc -O2 -Iinclude bench/conv_sort_bench.c build/libwick.a -lm -ldl -pthread
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wick.h"

typedef enum { K_CONV2D, K_ARGSORT, K_TOPK, K_UPNEAR, K_AVGPOOL } kind;

typedef struct bcase {
    const char *name;
    kind k;
    wk_dtype dt;
    wk_shape x, w;              /* w: conv only                              */
    int64_t stride, pad, groups;/* conv: both dims; pools: kernel in groups  */
    int64_t topk;
} bcase;

static const bcase cases[] = {
    { "conv2d_3x3_c256_bf16", K_CONV2D, WK_BF16, { 4, { 32, 256, 56, 56 } }, { 4, { 256, 256, 3, 3 } }, 1, 1, 1, 0 },
    { "conv2d_7x7s2_resnet_bf16", K_CONV2D, WK_BF16, { 4, { 32, 3, 224, 224 } }, { 4, { 64, 3, 7, 7 } }, 2, 3, 1, 0 },
    { "dwconv_3x3_c512_bf16", K_CONV2D, WK_BF16, { 4, { 32, 512, 28, 28 } }, { 4, { 512, 1, 3, 3 } }, 1, 1, 512, 0 },
    { "conv2d_3x3_c64_f32", K_CONV2D, WK_F32, { 4, { 16, 64, 56, 56 } }, { 4, { 64, 64, 3, 3 } }, 1, 1, 1, 0 },
    { "argsort_f32_4096x32768", K_ARGSORT, WK_F32, { 2, { 4096, 32768 } }, { 0 }, 0, 0, 0, 0 },
    { "argsort_f32_2p24", K_ARGSORT, WK_F32, { 1, { 1 << 24 } }, { 0 }, 0, 0, 0, 0 },
    { "argsort_f32_1e5x32", K_ARGSORT, WK_F32, { 2, { 100000, 32 } }, { 0 }, 0, 0, 0, 0 },
    { "argsort_f32_1e4x1000", K_ARGSORT, WK_F32, { 2, { 10000, 1000 } }, { 0 }, 0, 0, 0, 0 },
    { "topk50_f32_64x128256", K_TOPK, WK_F32, { 2, { 64, 128256 } }, { 0 }, 0, 0, 0, 50 },
    { "topk50_f32_1x128256", K_TOPK, WK_F32, { 2, { 1, 128256 } }, { 0 }, 0, 0, 0, 50 },
    { "upsample_nearest2d_x2_bf16", K_UPNEAR, WK_BF16, { 4, { 32, 256, 56, 56 } }, { 0 }, 0, 0, 0, 0 },
    { "avg_pool2d_3x3s2_bf16", K_AVGPOOL, WK_BF16, { 4, { 32, 256, 112, 112 } }, { 0 }, 2, 1, 3, 0 },
};

static void *read_file(const char *path, size_t want)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    void *p = malloc(want ? want : 1);
    size_t got = p ? fread(p, 1, want, f) : 0;
    fclose(f);
    if (got != want) {
        free(p);
        return NULL;
    }
    return p;
}

static int64_t numel(wk_shape s)
{
    int64_t n = 1;
    for (int i = 0; i < s.rank; i++) n *= s.dims[i];
    return n;
}

static wk_tensor *load(wk_device *dev, const char *dir, const char *name, const char *what, wk_dtype dt, wk_shape s)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, what);
    size_t bytes = (size_t)numel(s) * wk_dtype_size(dt);
    void *h = read_file(path, bytes);
    if (!h) {
        fprintf(stderr, "cannot read %zu bytes from %s\n", bytes, path);
        return NULL;
    }
    wk_tensor *t = wk_from_host(dev, dt, s, h);
    free(h);
    return t;
}

static wk_tensor *run_op(const bcase *c, wk_tensor *x, wk_tensor *w)
{
    switch (c->k) {
    case K_CONV2D: {
        wk_conv_opts o = { { c->stride, c->stride }, { c->pad, c->pad }, { 1, 1 }, { 0, 0 }, c->groups };
        return wk_conv2d(x, w, NULL, &o);
    }
    case K_ARGSORT: return wk_arg_sort(x, false);
    case K_TOPK: {
        wk_tensor *idx = NULL, *v = wk_topk(x, c->topk, true, &idx);
        wk_release(idx);
        return v;
    }
    case K_UPNEAR: return wk_upsample_nearest2d(x, c->x.dims[2] * 2, c->x.dims[3] * 2, 0, 0);
    case K_AVGPOOL: {
        wk_pool_opts o = { { c->groups, c->groups }, { c->stride, c->stride }, { c->pad, c->pad }, false, false };
        return wk_avg_pool2d(x, &o);
    }
    }
    return NULL;
}

/* name is one of the comma-separated names of list */
static bool in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: conv_sort_bench DIR [--device D] [--reps N] [--warmup N] [--case NAME]\n");
        return 2;
    }
    const char *dir = argv[1], *devname = "cuda:0", *only = NULL;
    int reps = 20, warmup = 3;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) devname = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--case") && i + 1 < argc) only = argv[++i];
    }
    if (reps < 1) reps = 1;
    wk_device *dev = wk_device_open(devname);
    if (!dev) {
        fprintf(stderr, "cannot open %s: %s\n", devname, wk_last_error());
        return 1;
    }
    int bad = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const bcase *c = &cases[ci];
        if (only && !in_list(only, c->name)) continue;
        wk_tensor *x = load(dev, dir, c->name, "x", c->dt, c->x), *w = NULL;
        if (x && c->k == K_CONV2D) w = load(dev, dir, c->name, "w", c->dt, c->w);
        if (!x || (c->k == K_CONV2D && !w)) {
            printf("SKIP %s (no inputs)\n", c->name);
            wk_release(x);
            continue;
        }
        wk_tensor *y = NULL;
        for (int i = 0; i < warmup; i++) {
            wk_release(y);
            y = run_op(c, x, w);
        }
        double *ms = malloc(sizeof(double) * (size_t)reps);
        wk_event *e0 = wk_event_new(dev), *e1 = wk_event_new(dev);
        bool ok = y != NULL || warmup == 0;
        for (int i = 0; i < reps && ok; i++) {
            wk_release(y);
            wk_event_record(e0);
            y = run_op(c, x, w);
            wk_event_record(e1);
            ok = y && wk_event_elapsed_ms(e0, e1, &ms[i]) == WK_OK;
        }
        if (!ok) {
            printf("FAIL %s: %s\n", c->name, wk_last_error());
            bad = 1;
        } else {
            qsort(ms, (size_t)reps, sizeof *ms, cmp_d);
            printf("RESULT %s %.5f %.5f\n", c->name, ms[reps / 2], ms[0]);
            char path[1024];
            snprintf(path, sizeof path, "%s/%s.out", dir, c->name);
            size_t bytes = (size_t)wk_tensor_numel(y) * wk_dtype_size(wk_tensor_dtype(y));
            void *h = malloc(bytes);
            FILE *f = fopen(path, "wb");
            if (h && f && wk_to_host(y, h, bytes) == WK_OK) fwrite(h, 1, bytes, f);
            if (f) fclose(f);
            free(h);
        }
        fflush(stdout);
        free(ms);
        wk_event_free(e0);
        wk_event_free(e1);
        wk_release(y);
        wk_release(x);
        wk_release(w);
    }
    wk_device_close(dev);
    return bad;
}
