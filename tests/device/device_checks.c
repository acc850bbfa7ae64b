/* device_checks.c — what a device must do beyond matching the cpu op by
 * op (that is the parity runner's job):
 *  - run-time errors: an allocation larger than the device fails with
 *    WK_ERR_MEMORY and the allocator stays usable; an op mixing two devices
 *    fails naming both; an out-of-range id in index_select, gather or
 *    scatter_add is reported and leaves the destination unchanged;
 *  - events: elapsed time >= 0 and ordered, within the host clock's
 *    time for the same work, errors for events of two devices and events
 *    never recorded;
 *  - pinned host memory: round trips of a few MiB (more than one staging
 *    chunk, odd offsets and lengths) bit for bit, mixed with pageable
 *    transfers; a write from a pinned block returns only when the block
 *    may be reused (overwritten at once, behind queued work); a read into
 *    one waits for the work that makes the data;
 *  - the current device: chains of dependent ops (with allocations the
 *    cache cannot serve) on fresh threads, on one device and, where the
 *    kind has two, alternating between the two on one thread and split
 *    over two threads, so that every op finds another device current;
 *  - block-quantized tensors (q4_0 .. q8_k): bytes moved to the device and
 *    back, rows narrowed, made contiguous and concatenated on the device,
 *    bit for bit against the host's bytes; ops that do not take them fail
 *    with an error naming the dtype;
 *  - graphs: a recorded stretch of ops (temporaries freed inside it,
 *    an index read with an out-of-range id, a scatter at a position
 *    read from device memory) replayed after its inputs are rewritten
 *    with wk_write and after the cache has handed out many blocks, each
 *    replay checked against values computed here; what a recording
 *    refuses (host reads, synchronizations, a second begin); the cpu
 *    says it records none;
 *  - tensors of more than 2^31 elements (64-bit indexing in every kernel
 *    family): contiguous and strided elementwise ops, a transposed copy,
 *    reductions over either dim, argmax over everything, const_set through
 *    a view, index_select.
 *  - attention's kv_len (a count of keys in device memory) against the op
 *    on that many keys, called and in a recorded graph with the count
 *    rewritten between replays;
 *  - paged attention: ids out of range fail the call (sequence, position,
 *    block id) and the next call gives the first call's bits; a recorded
 *    call replayed with rewritten ids gives the bits of the call made with
 *    them; out-of-range ids in a replay fault nothing (zeros for a bad
 *    sequence, the other rows unchanged);
 *  - the fused products (linear_silu_mul, linear_rope_kv) bit for bit
 *    against their two calls on the device;
 *  - wk_env_refresh: a knob set at run time steers the ops after the
 *    refresh, not before, and unset and refreshed gives the first bits
 *    back.
 * Expected values are computed here by hand (small integer arithmetic).
 * Usage: wick-device-checks [--device NAME]   (needs about 8 GiB on it)
 * Ends with "N passed, N failed". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "wick.h"
#include "wick_ext.h"

static int passed, failed;

static void check(const char *what, bool ok, double got, double want)
{
    if (ok) passed++;
    else {
        failed++;
        printf("FAIL device/%s: got %.17g, expected %.17g (%s)\n", what, got, want, wk_last_error());
    }
}

static void expect_item(const char *what, const wk_tensor *t, const int64_t *idx, double want)
{
    double v = -1;
    wk_status st = t ? wk_item(t, idx, &v) : WK_ERR_ARGUMENT;
    check(what, st == WK_OK && v == want, v, want);
}

/* bytes of a xorshift stream (never all zeros) */
static void fill_bytes(unsigned char *p, size_t n, uint64_t seed)
{
    uint64_t s = seed | 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        p[i] = (unsigned char)(s >> 24);
    }
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void check_events(wk_device *dev, const char *name)
{
    wk_scope_begin();
    wk_event *a = wk_event_new(dev), *b = wk_event_new(dev), *c = wk_event_new(dev), *u = wk_event_new(dev);
    check("event_new", a && b && c && u, 0, 0);
    if (a && b && c && u) {
        /* 2^26 f32 (256 MiB) through exp, then twice more: b - a, c - a */
        wk_tensor *x = wk_rand_uniform(dev, WK_F32, WK_SHAPE((int64_t)1 << 26), -1, 1);
        wk_device_synchronize(dev);
        double h0 = now_ms();
        wk_event_record(a);
        wk_tensor *y = wk_exp(x);
        wk_event_record(b);
        wk_tensor *z = wk_exp(y);
        z = wk_exp(z);
        wk_status st = wk_event_record(c);
        st = st == WK_OK ? wk_event_synchronize(c) : st;
        double host_ms = now_ms() - h0;
        double ab = -1, ac = -1, ba = 1, aa = 1;
        if (st == WK_OK) st = wk_event_elapsed_ms(a, b, &ab);
        if (st == WK_OK) st = wk_event_elapsed_ms(a, c, &ac);
        if (st == WK_OK) st = wk_event_elapsed_ms(b, a, &ba);
        if (st == WK_OK) st = wk_event_elapsed_ms(a, a, &aa);
        check("event_record_elapsed", st == WK_OK && x && y && z, st, WK_OK);
        check("event_elapsed_positive", ab > 0, ab, 0);
        check("event_elapsed_ordered", ac > ab, ac, ab);
        check("event_elapsed_reverse_negative", ba < 0 && ba + ab < 1e-3 && ba + ab > -1e-3, ba, -ab);
        check("event_elapsed_self_zero", aa == 0, aa, 0);
        check("event_within_host_clock", ac <= host_ms + 0.05, ac, host_ms);
        printf("events on %s: exp of 2^26 f32 %.4f ms by events, three exps %.4f ms by events, %.4f ms by the host clock\n",
               name, ab, ac, host_ms);
        double ms = 0;
        wk_status nr = wk_event_elapsed_ms(a, u, &ms);
        check("event_never_recorded", nr == WK_ERR_ARGUMENT && strstr(wk_last_error(), "never recorded"), nr,
              WK_ERR_ARGUMENT);
        wk_device *cpu = wk_device_open("cpu");
        wk_event *e_cpu = cpu ? wk_event_new(cpu) : NULL;
        if (e_cpu && strcmp(name, "cpu") != 0) {
            wk_event_record(e_cpu);
            wk_status two = wk_event_elapsed_ms(a, e_cpu, &ms);
            const char *msg = wk_last_error();
            check("event_two_devices", two == WK_ERR_DEVICE && strstr(msg, name) && strstr(msg, "cpu"), two,
                  WK_ERR_DEVICE);
        }
        wk_event_free(e_cpu);
        wk_device_close(cpu);
    }
    wk_event_free(a);
    wk_event_free(b);
    wk_event_free(c);
    wk_event_free(u);
    wk_scope_end();
    wk_clear_error();
}

static void check_pinned(wk_device *dev)
{
    const size_t n = ((size_t)48 << 20) + 3;      /* several staging chunks, an odd length */
    unsigned char *p = wk_host_alloc(dev, n), *q = wk_host_alloc(dev, n);
    unsigned char *ref = malloc(n), *pg = malloc(n);
    check("host_alloc", p && q && ref && pg, 0, 0);
    if (p && q && ref && pg) {
        wk_scope_begin();
        fill_bytes(ref, n, 42);
        /* pinned -> device -> pinned */
        memcpy(p, ref, n);
        memset(q, 0, n);
        wk_tensor *t = wk_from_host(dev, WK_U8, WK_SHAPE((int64_t)n), p);
        check("pinned_round_trip", t && wk_to_host(t, q, n) == WK_OK && memcmp(q, ref, n) == 0, 0, 0);
        /* pinned -> device -> pageable, and pageable -> device -> pinned */
        memset(pg, 0, n);
        check("pinned_to_pageable", t && wk_to_host(t, pg, n) == WK_OK && memcmp(pg, ref, n) == 0, 0, 0);
        memset(q, 0, n);
        wk_tensor *t2 = wk_from_host(dev, WK_U8, WK_SHAPE((int64_t)n), pg);
        check("pageable_to_pinned", t2 && wk_to_host(t2, q, n) == WK_OK && memcmp(q, ref, n) == 0, 0, 0);
        /* odd offsets inside the blocks, f32 of an odd count */
        size_t m = ((size_t)5 << 20) + 7;         /* floats */
        memset(q, 0x5A, n);
        wk_tensor *t3 = wk_from_host(dev, WK_F32, WK_SHAPE((int64_t)m), p + 4100);
        bool ok = t3 && wk_to_host(t3, q + 12, m * 4) == WK_OK && memcmp(q + 12, ref + 4100, m * 4) == 0;
        for (size_t i = 0; i < 12 && ok; i++) ok = q[i] == 0x5A;
        for (size_t i = 12 + m * 4; i < n && ok; i++) ok = q[i] == 0x5A;
        check("pinned_inner_ranges", ok, 0, 0);
        /* write behind queued work, then overwrite the block at once: the
         * device must hold what the block held when from_host returned */
        wk_tensor *big = wk_rand_uniform(dev, WK_F32, WK_SHAPE((int64_t)1 << 26), -1, 1);
        wk_tensor *busy = big ? wk_exp(wk_exp(big)) : NULL;
        memcpy(p, ref, n);
        wk_tensor *t4 = wk_from_host(dev, WK_U8, WK_SHAPE((int64_t)n), p);
        memset(p, 0, n);
        memset(q, 0, n);
        check("pinned_write_returns_when_reusable",
              busy && t4 && wk_to_host(t4, q, n) == WK_OK && memcmp(q, ref, n) == 0, 0, 0);
        /* a read into a block waits for the op that makes the data */
        wk_tensor *sum = t4 ? wk_add(t4, t4) : NULL;    /* u8 wraps: 2x mod 256 */
        memset(q, 0, n);
        ok = sum && wk_to_host(sum, q, n) == WK_OK;
        for (size_t i = 0; i < n && ok; i++) ok = q[i] == (unsigned char)(2 * ref[i]);
        check("pinned_read_waits", ok, 0, 0);
        /* a bf16 tensor made on the device, read into a block and into
         * pageable memory: the same bytes */
        wk_tensor *r = wk_rand_uniform(dev, WK_BF16, WK_SHAPE(3000, 1001), -3, 3);
        size_t rb = 3000 * 1001 * 2;
        ok = r && wk_to_host(r, q, rb) == WK_OK && wk_to_host(r, pg, rb) == WK_OK && memcmp(q, pg, rb) == 0;
        check("pinned_read_matches_pageable", ok, 0, 0);
        wk_scope_end();
    }
    wk_host_free(p);
    wk_host_free(q);
    check("host_free", wk_last_status() == WK_OK, wk_last_status(), WK_OK);
    wk_host_free(p);
    check("host_free_twice_fails", wk_last_status() == WK_ERR_ARGUMENT, wk_last_status(), WK_ERR_ARGUMENT);
    wk_clear_error();
    free(ref);
    free(pg);
}

/* ---- the current device ------------------------------------------------ */

/* n dependent adds x = x + one on dev, each with a fresh output of a
 * size the allocator has not seen on this pass (a cache miss every few
 * ops); 0 when the value is right, else -1. When dev2 is given the ops
 * alternate between the two devices, so each finds the other current. */
typedef struct chain_job {
    wk_device *dev, *dev2;
    int n;
    int result;
} chain_job;

static void *chain_run(void *arg)
{
    chain_job *j = arg;
    wk_device *devs[2] = { j->dev, j->dev2 ? j->dev2 : j->dev };
    wk_tensor *x[2] = { wk_full(devs[0], WK_F32, WK_SHAPE(1), 0.5), wk_full(devs[1], WK_F32, WK_SHAPE(1), 0.5) };
    wk_tensor *one[2] = { wk_ones(devs[0], WK_F32, WK_SHAPE(1)), wk_ones(devs[1], WK_F32, WK_SHAPE(1)) };
    j->result = x[0] && x[1] && one[0] && one[1] ? 0 : -1;
    for (int i = 0; i < j->n && j->result == 0; i++) {
        int k = i & 1;
        wk_tensor *y = wk_add(x[k], one[k]);
        /* a size no earlier op of this chain used: the allocator misses */
        wk_tensor *big = wk_full(devs[k], WK_F32, WK_SHAPE(1000 + 37 * (int64_t)i), (double)i);
        double v = -1;
        int64_t at = 36 * (int64_t)i;
        if (!y || !big || wk_item(big, &at, &v) != WK_OK || v != (double)i) j->result = -1;
        wk_release(big);
        wk_release(x[k]);
        x[k] = y;
    }
    for (int k = 0; k < 2; k++) {
        double v = -1;
        int64_t at = 0;
        int adds = j->n / 2 + (k == 0 ? j->n % 2 : 0);
        if (j->result == 0 && (!x[k] || wk_item(x[k], &at, &v) != WK_OK || v != 0.5 + adds)) j->result = -1;
        wk_release(x[k]);
        wk_release(one[k]);
    }
    return NULL;
}

static void check_current_device(wk_device *dev, const char *name)
{
    /* two fresh threads and this one, one device */
    chain_job jobs[3] = { { dev, NULL, 301, -1 }, { dev, NULL, 301, -1 }, { dev, NULL, 301, -1 } };
    pthread_t th[2];
    bool started[2];
    for (int i = 0; i < 2; i++) started[i] = pthread_create(&th[i], NULL, chain_run, &jobs[i]) == 0;
    chain_run(&jobs[2]);
    for (int i = 0; i < 2; i++)
        if (started[i]) pthread_join(th[i], NULL);
    check("chain_fresh_thread_a", started[0] && jobs[0].result == 0, jobs[0].result, 0);
    check("chain_fresh_thread_b", started[1] && jobs[1].result == 0, jobs[1].result, 0);
    check("chain_main_thread", jobs[2].result == 0, jobs[2].result, 0);

    /* a second device of the same kind, if any */
    const char *colon = strchr(name, ':');
    if (!colon) return;
    char kind[16], other[32];
    snprintf(kind, sizeof kind, "%.*s", (int)(colon - name), name);
    if (wk_device_count(kind) < 2) {
        printf("note: one %s device: the two-device checks of the current device are skipped\n", kind);
        return;
    }
    snprintf(other, sizeof other, "%s:%d", kind, atoi(colon + 1) == 0 ? 1 : 0);
    wk_device *dev2 = wk_device_open(other);
    check("open_second_device", dev2 != NULL, 0, 0);
    if (!dev2) return;
    chain_job alt = { dev, dev2, 301, -1 };
    chain_run(&alt);
    check("chain_alternating_devices", alt.result == 0, alt.result, 0);
    chain_job split[2] = { { dev, NULL, 301, -1 }, { dev2, NULL, 301, -1 } };
    bool ok = pthread_create(&th[0], NULL, chain_run, &split[1]) == 0;
    chain_run(&split[0]);
    if (ok) pthread_join(th[0], NULL);
    check("chain_two_devices_two_threads", ok && split[0].result == 0 && split[1].result == 0,
          split[0].result + split[1].result, 0);
    wk_device_close(dev2);
}

/* Block-quantized tensors on dev: [rows, 2 blocks] of random bytes. */
static void check_quant(wk_device *dev, wk_device *cpu)
{
    static const wk_dtype qs[] = { WK_Q4_0, WK_Q4_1, WK_Q5_0, WK_Q5_1, WK_Q8_0, WK_Q8_1,
                                   WK_Q2_K, WK_Q3_K, WK_Q4_K, WK_Q5_K, WK_Q6_K, WK_Q8_K };
    for (size_t q = 0; q < sizeof qs / sizeof qs[0]; q++) {
        const wk_dtype dt = qs[q];
        const int64_t rows = 37, cols = 2 * (int64_t)wk_dtype_block_size(dt);
        const size_t row_bytes = 2 * wk_dtype_block_bytes(dt), n = (size_t)rows * row_bytes;
        unsigned char *h = malloc(n), *back = malloc(2 * n);
        char what[64];
        fill_bytes(h, n, 1000 + q);
        wk_scope_begin();
        wk_tensor *src = wk_from_host(cpu, dt, WK_SHAPE(rows, cols), h);
        wk_tensor *t = wk_to_device(src, dev);                       /* cpu -> device */
        snprintf(what, sizeof what, "quant_%s_roundtrip", wk_dtype_name(dt));
        bool ok = t && wk_to_host(t, back, n) == WK_OK && memcmp(back, h, n) == 0;
        check(what, ok, 0, 0);
        /* rows 5..24 and 30..36 on the device, made contiguous there, then cat */
        wk_tensor *a = wk_contiguous(wk_narrow(t, 0, 5, 20)), *b = wk_narrow(t, 0, 30, 7);
        wk_tensor *parts[2] = { a, b };
        wk_tensor *c = wk_cat(parts, 2, 0);
        wk_tensor *home = c ? wk_to_device(c, cpu) : NULL;            /* device -> cpu */
        snprintf(what, sizeof what, "quant_%s_rows_cat", wk_dtype_name(dt));
        ok = home && wk_tensor_nbytes(home) == 27 * row_bytes && wk_to_host(home, back, 27 * row_bytes) == WK_OK &&
             memcmp(back, h + 5 * row_bytes, 20 * row_bytes) == 0 &&
             memcmp(back + 20 * row_bytes, h + 30 * row_bytes, 7 * row_bytes) == 0;
        check(what, ok, 0, 0);
        wk_tensor *e = t ? wk_exp(t) : NULL;
        snprintf(what, sizeof what, "quant_%s_exp_refused", wk_dtype_name(dt));
        check(what, !e && wk_last_status() == WK_ERR_UNSUPPORTED && strstr(wk_last_error(), wk_dtype_name(dt)), 0, 0);
        wk_scope_end();
        free(h);
        free(back);
    }
}

/* Graphs (wk_graph_*): record, rewrite the inputs, replay, check. */
static void check_graph(wk_device *dev)
{
    if (!wk_supports(dev, "graph", WK_F32)) {
        const wk_status st = wk_graph_begin(dev);
        check("graph_unsupported", st == WK_ERR_UNSUPPORTED, st, WK_ERR_UNSUPPORTED);
        check("graph_end_unsupported", !wk_graph_end(dev) && wk_last_status() == WK_ERR_UNSUPPORTED, 0, 0);
        wk_clear_error();
        return;
    }
    enum { N = 100003 };
    float *h = malloc(N * sizeof *h), *o = malloc(N * sizeof *o);
    if (!h || !o) {
        check("graph_host_memory", false, 0, 1);
        free(h), free(o);
        return;
    }
    wk_scope_begin();
    for (int i = 0; i < N; i++) h[i] = (float)(i % 97);
    float tabh[8 * 4];
    for (int i = 0; i < 32; i++) tabh[i] = (float)(i + 1);
    uint32_t idh[3] = { 2, 0, 7 }, posh[1] = { 3 };
    wk_tensor *x = wk_from_host(dev, WK_F32, WK_SHAPE(N), h);
    wk_tensor *tab = wk_from_host(dev, WK_F32, WK_SHAPE(8, 4), tabh);
    wk_tensor *ids = wk_from_host(dev, WK_U32, WK_SHAPE(3), idh);
    wk_tensor *pos = wk_from_host(dev, WK_U32, WK_SHAPE(1), posh);
    wk_tensor *cache = wk_zeros(dev, WK_F32, WK_SHAPE(1, 2, 6, 4));
    wk_tensor *row = wk_affine(wk_ones(dev, WK_F32, WK_SHAPE(1, 2, 1, 4)), 5.0, 0.0);
    check("graph_inputs", x && tab && ids && pos && cache && row, 0, 0);

    check("graph_begin", wk_graph_begin(dev) == WK_OK, 0, 0);
    check("graph_second_begin_refused", wk_graph_begin(dev) != WK_OK, 0, 0);
    wk_scope_begin();
    wk_tensor *y = wk_add(wk_affine(x, 2.0, 1.0), x);      /* 3x + 1; the affine's result is freed below */
    wk_tensor *sel = wk_index_select(tab, ids, 0);
    wk_tensor *at = wk_broadcast_as(wk_reshape(pos, WK_SHAPE(1, 1, 1, 1)), WK_SHAPE(1, 2, 1, 4));
    const wk_status sc = wk_scatter_set(cache, at, row, 2);
    float one = 0;
    const wk_status rd = wk_to_host(y ? wk_narrow(y, 0, 0, 1) : NULL, &one, sizeof one);
    check("graph_refuses_host_read", rd != WK_OK && strstr(wk_last_error(), "graph"), rd, 1);
    const wk_status sy = wk_device_synchronize(dev);
    check("graph_refuses_synchronize", sy != WK_OK && strstr(wk_last_error(), "graph"), sy, 1);
    if (y) wk_retain(y);
    if (sel) wk_retain(sel);
    wk_scope_end();
    wk_graph *g = wk_graph_end(dev);
    check("graph_recorded", g && y && sel && sc == WK_OK, 0, 0);
    check("graph_end_twice_refused", !wk_graph_end(dev), 0, 0);
    /* the cache hands out blocks: none of them may be the graph's */
    for (int k = 0; k < 16; k++) wk_full(dev, WK_F32, WK_SHAPE(N), -1.0);
    wk_tensor *fresh = wk_full(dev, WK_F32, WK_SHAPE(2 * N), -2.0);
    for (int rep = 0; g && rep < 3; rep++) {
        for (int i = 0; i < N; i++) h[i] = (float)(i % 97 + 10 * rep);
        uint32_t id2[3] = { (uint32_t)rep, (uint32_t)(7 - rep), 8 }, p2[1] = { (uint32_t)(3 + rep) };  /* 8: out of range */
        bool ok = wk_write(x, h, N * sizeof *h) == WK_OK && wk_write(ids, id2, sizeof id2) == WK_OK &&
                  wk_write(pos, p2, sizeof p2) == WK_OK && wk_graph_launch(g) == WK_OK &&
                  wk_to_host(y, o, N * sizeof *o) == WK_OK;
        int bad = -1;
        for (int i = 0; ok && i < N && bad < 0; i++)
            if (o[i] != 3 * h[i] + 1) bad = i;
        char what[64];
        snprintf(what, sizeof what, "graph_replay_%d_values", rep);
        check(what, ok && bad < 0, bad >= 0 ? o[bad] : -1, bad >= 0 ? 3 * h[bad] + 1 : 0);
        float s3[12];
        ok = wk_to_host(sel, s3, sizeof s3) == WK_OK;
        for (int j = 0; ok && j < 4; j++)
            ok = s3[j] == tabh[4 * rep + j] && s3[4 + j] == tabh[4 * (7 - rep) + j] && s3[8 + j] == 0.0f;
        snprintf(what, sizeof what, "graph_replay_%d_index_read", rep);
        check(what, ok, s3[0], tabh[4 * rep]);
        float ch[48];
        ok = wk_to_host(cache, ch, sizeof ch) == WK_OK;
        for (int hh = 0; ok && hh < 2; hh++)
            for (int p = 0; p < 6; p++)
                for (int j = 0; j < 4; j++) {
                    const float want = p >= 3 && p <= 3 + rep ? 5.0f : 0.0f;
                    if (ch[(hh * 6 + p) * 4 + j] != want) ok = false;
                }
        snprintf(what, sizeof what, "graph_replay_%d_scatter_at_device_pos", rep);
        check(what, ok, 0, 0);
    }
    /* a position past the cache: the write is skipped */
    uint32_t past[1] = { 6 };
    float ch[48];
    bool ok = g && wk_write(pos, past, sizeof past) == WK_OK && wk_graph_launch(g) == WK_OK &&
              wk_to_host(cache, ch, sizeof ch) == WK_OK;
    int fives = 0;
    for (int i = 0; ok && i < 48; i++) fives += ch[i] == 5.0f;
    check("graph_scatter_out_of_range_skipped", ok && fives == 2 * 3 * 4, fives, 24);
    float fr = 0;
    check("graph_left_other_blocks_alone", fresh && wk_to_host(wk_narrow(fresh, 0, 2 * N - 1, 1), &fr, sizeof fr) == WK_OK &&
                                             fr == -2.0f, fr, -2.0);
    wk_graph_free(g);
    wk_release(y);
    wk_release(sel);
    /* after a refused op the recording still ends, and the device works */
    check("graph_begin_again", wk_graph_begin(dev) == WK_OK, 0, 0);
    (void)wk_from_host(dev, WK_F32, WK_SHAPE(4), h);   /* refused: a host transfer */
    wk_graph *g2 = wk_graph_end(dev);
    wk_graph_free(g2);
    wk_tensor *z = wk_affine(x, 1.0, 1.0);
    check("graph_device_usable_after", z && wk_to_host(z, o, N * sizeof *o) == WK_OK && o[5] == h[5] + 1, o[5], h[5] + 1);
    wk_scope_end();
    free(h);
    free(o);
    wk_clear_error();
}

/* wk_linear_silu_mul on the device against its two calls there (the
 * product of the stacked matrix, then silu_mul of the halves), bit for
 * bit: one row (the LINEAR_SILU_MUL op: one launch where the device's
 * kernel takes it: aligned rows, k a multiple of 8; else the device's
 * two ops), a row stride wider than k, layouts the kernel does not take
 * (k 12, f32, f64), two rows (the two calls), x as a vector, and the
 * decode shapes of an 8B model split in two (F 7168, k 4096). (x of rank
 * 3 or more is left out: there the one launch gives the 2-d product's
 * bits, where the two calls make a batched one; docs/fused-ops.md.) */
static void check_linear_silu_mul(wk_device *dev)
{
    static const struct { int64_t rows, F, k, pad; int xrank; } cs[] = {
        { 1, 48, 64, 0, 2 }, { 1, 5, 8, 0, 2 },  { 1, 300, 4104, 8, 2 }, { 1, 7168, 4096, 0, 2 },
        { 1, 3, 12, 0, 2 },  { 2, 40, 64, 0, 2 }, { 1, 24, 64, 0, 1 },
    };
    const wk_dtype dts[4] = { WK_BF16, WK_F16, WK_F32, WK_F64 };
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++)
        for (int d = 0; d < 4; d++) {
            wk_scope_begin();
            const int64_t R = cs[c].rows, F = cs[c].F, k = cs[c].k;
            wk_tensor *x2 = wk_rand_uniform(dev, dts[d], WK_SHAPE(R, k), -1, 1);
            wk_tensor *x = x2 && cs[c].xrank == 1 ? wk_reshape(x2, WK_SHAPE(k)) : x2;
            wk_tensor *wf = wk_rand_uniform(dev, dts[d], WK_SHAPE(2 * F, k + cs[c].pad), -1, 1);
            wk_tensor *w = wf ? wk_narrow(wf, 1, 0, k) : NULL;
            wk_tensor *y = x && w ? wk_linear_silu_mul(x, w) : NULL;
            wk_tensor *gu = x && w ? wk_matmul(x2, wk_transpose(w, 0, 1)) : NULL;
            wk_tensor *ref = gu ? wk_silu_mul(wk_narrow(gu, 1, 0, F), wk_narrow(gu, 1, F, F)) : NULL;
            const size_t bytes = (size_t)(R * F) * (size_t)wk_dtype_size(dts[d]);
            unsigned char *a = malloc(bytes), *b = malloc(bytes);
            const bool ok = y && ref && a && b && wk_to_host(y, a, bytes) == WK_OK && wk_to_host(ref, b, bytes) == WK_OK &&
                            memcmp(a, b, bytes) == 0;
            char what[96];
            snprintf(what, sizeof what, "linear_silu_mul_%s_rows%lld_f%lld_k%lld%s_x%dd", wk_dtype_name(dts[d]),
                     (long long)R, (long long)F, (long long)k, cs[c].pad ? "_strided" : "", cs[c].xrank);
            check(what, ok, ok, 1);
            free(a);
            free(b);
            wk_scope_end();
        }
}

/* wk_linear_rope_kv on the device against its two calls there (the
 * product, then rope_kv), bit for bit: queries and both caches (random
 * values around the row written). One row of the 8B model's shapes, whole
 * (32 query heads, 8 KV heads) and split in two, adjacent pairs, device
 * positions (u32, i64; one past the caches: zero queries, no cache row),
 * a row stride wider than k, and what the fused launch does not take (f32,
 * f64, k 12: the device's two ops; two rows: the two calls): each the
 * same bits as the two calls. */
static void check_linear_rope_kv(wk_device *dev)
{
    static const struct { int64_t T, Hq, Hkv, D, k, pad, C, off; bool inter; int devpos; } cs[] = {
        { 1, 32, 8, 128, 4096, 0, 40, 17, false, 0 }, { 1, 16, 4, 128, 4096, 0, 40, 39, false, 1 },
        { 1, 4, 2, 64, 136, 8, 9, 3, true, 2 },       { 1, 2, 1, 64, 64, 0, 6, 6, false, 1 },
        { 1, 2, 1, 16, 12, 0, 6, 2, false, 0 },       { 2, 4, 2, 32, 64, 0, 9, 4, false, 0 },
    };
    const wk_dtype dts[4] = { WK_BF16, WK_F16, WK_F32, WK_F64 };
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++)
        for (int d = 0; d < 4; d++) {
            wk_scope_begin();
            const int64_t T = cs[c].T, H = cs[c].Hq + 2 * cs[c].Hkv, D = cs[c].D, k = cs[c].k, C = cs[c].C;
            wk_tensor *x = wk_rand_uniform(dev, dts[d], WK_SHAPE(T, k), -1, 1);
            wk_tensor *wf = wk_rand_uniform(dev, dts[d], WK_SHAPE(H * D, k + cs[c].pad), -1, 1);
            wk_tensor *w = wf ? wk_narrow(wf, 1, 0, k) : NULL;
            wk_tensor *tc = wk_rand_uniform(dev, WK_F32, WK_SHAPE(C + 2, D / 2), -1, 1);
            wk_tensor *ts = wk_rand_uniform(dev, WK_F32, WK_SHAPE(C + 2, D / 2), -1, 1);
            wk_tensor *kc = wk_rand_uniform(dev, dts[d], WK_SHAPE(1, cs[c].Hkv, C, D), -9, 9);
            wk_tensor *vc = wk_rand_uniform(dev, dts[d], WK_SHAPE(1, cs[c].Hkv, C, D), -9, 9);
            wk_tensor *kc2 = kc ? wk_copy(kc) : NULL, *vc2 = vc ? wk_copy(vc) : NULL;
            const int64_t off = cs[c].off;
            wk_tensor *pt = cs[c].devpos == 1 ? wk_from_host(dev, WK_U32, WK_SHAPE(1), &(uint32_t){ (uint32_t)off })
                          : cs[c].devpos == 2 ? wk_from_host(dev, WK_I64, WK_SHAPE(1), &off)
                                              : NULL;
            const int64_t p0 = cs[c].devpos ? 0 : off;
            wk_tensor *y = x && w && tc && ts && kc2 && vc2
                               ? wk_linear_rope_kv(x, w, cs[c].Hq, tc, ts, p0, pt, cs[c].inter, kc, vc)
                               : NULL;
            wk_tensor *qkv = y ? wk_matmul(x, wk_transpose(w, 0, 1)) : NULL;
            wk_tensor *y2 = qkv ? wk_rope_kv(wk_reshape(qkv, WK_SHAPE(1, T, H, D)), cs[c].Hq, tc, ts, p0, pt,
                                             cs[c].inter, kc2, vc2)
                                : NULL;
            bool ok = y && y2;
            const wk_tensor *pa[3] = { y, kc, vc }, *pb[3] = { y2, kc2, vc2 };
            for (int i = 0; i < 3 && ok; i++) {
                const size_t n = wk_tensor_nbytes(pa[i]);
                unsigned char *a = malloc(n), *b = malloc(n);
                ok = a && b && n == wk_tensor_nbytes(pb[i]) && wk_to_host(pa[i], a, n) == WK_OK &&
                     wk_to_host(pb[i], b, n) == WK_OK && memcmp(a, b, n) == 0;
                free(a);
                free(b);
            }
            char what[112];
            snprintf(what, sizeof what, "linear_rope_kv_%s_t%lld_hq%lld_hkv%lld_d%lld_k%lld%s%s_pos%lld_%s",
                     wk_dtype_name(dts[d]), (long long)T, (long long)cs[c].Hq, (long long)cs[c].Hkv, (long long)D,
                     (long long)k, cs[c].pad ? "_strided" : "", cs[c].inter ? "_pairs" : "", (long long)off,
                     cs[c].devpos == 1 ? "u32" : cs[c].devpos == 2 ? "i64" : "host");
            check(what, ok, ok, 1);
            wk_scope_end();
        }
    wk_clear_error();
}

/* wk_env_refresh: the backends read their knobs once, so a knob set at
 * run time changes nothing until the refresh; unset and refreshed, the
 * first path is back. The knob switches the path of an f32 qmatmul of one
 * row by q4_0 weights between x in f32 and x rounded to 8-bit blocks (cpu:
 * WICK_CPU_QDOT=0 turns the integer path off; a GPU: WICK_QMATVEC=f32
 * turns its 8-bit path off), which changes its f32 results well beyond
 * rounding, so their bits tell the paths apart. (A knob of the bf16
 * matvec would not: two summation orders rounded to bf16 often agree.) */
static void check_env_refresh(wk_device *dev, wk_device *cpu, bool on_cpu)
{
    const char *knob = on_cpu ? "WICK_CPU_QDOT" : "WICK_QMATVEC", *value = on_cpu ? "0" : "f32";
    if (getenv(knob)) return;   /* the caller's own setting: left alone */
    wk_scope_begin();
    wk_tensor *wf = wk_rand_uniform(cpu, WK_F32, WK_SHAPE(64, 256), -1, 1);
    wk_tensor *wq = wf ? wk_quantize(wf, WK_Q4_0) : NULL;
    wk_tensor *w = wq ? wk_to_device(wq, dev) : NULL;
    wk_tensor *x = wk_rand_uniform(dev, WK_F32, WK_SHAPE(1, 256), -1, 1);
    float h[4][64];
    bool ok = w && x;
    for (int i = 0; i < 4 && ok; i++) {
        if (i == 1) setenv(knob, value, 1);   /* not read yet */
        if (i == 2) wk_env_refresh();
        if (i == 3) {
            unsetenv(knob);
            wk_env_refresh();
        }
        wk_tensor *y = wk_qmatmul(x, w);
        ok = y && wk_to_host(y, h[i], sizeof h[i]) == WK_OK;
    }
    unsetenv(knob);
    wk_env_refresh();
    check("env_knob_not_read_per_op", ok && memcmp(h[0], h[1], sizeof h[0]) == 0, ok, 1);
    check("env_refresh_reads_the_knob", ok && memcmp(h[0], h[2], sizeof h[0]) != 0, ok, 1);
    check("env_refresh_after_unset_gives_the_first_bits", ok && memcmp(h[0], h[3], sizeof h[0]) == 0, ok, 1);
    wk_scope_end();
    wk_clear_error();
}

/* max |a - b| / max |b| of two tensors of one shape (as f32) */
static double rel_diff(const wk_tensor *a, const wk_tensor *b)
{
    const int64_t n = a && b ? wk_tensor_numel(b) : 0;
    wk_tensor *fa = n ? wk_to_dtype(a, WK_F32) : NULL, *fb = n ? wk_to_dtype(b, WK_F32) : NULL;
    float *x = malloc((size_t)(n ? n : 1) * 4), *y = malloc((size_t)(n ? n : 1) * 4);
    double e = n ? 0 : 1e30, s = 0;
    if (!fa || !fb || !x || !y || wk_to_host(fa, x, (size_t)n * 4) || wk_to_host(fb, y, (size_t)n * 4)) e = 1e30;
    for (int64_t i = 0; n && e < 1e30 && i < n; i++) {
        const double d = x[i] > y[i] ? x[i] - y[i] : y[i] - x[i], m = y[i] < 0 ? -y[i] : y[i];
        e = d > e || d != d ? d : e;
        s = m > s ? m : s;
    }
    wk_release(fa), wk_release(fb);
    free(x), free(y);
    return e / (s > 0 ? s : 1);
}

/* wk_attention's kv_len (a count of keys read on the device) against the
 * op on the first min(L, Tk) keys: the decode kernels (bf16, f16: the
 * matrix-core decode; f32: the FMA one), a prefill with a window, counts
 * 0, inside, Tk and past it; and in a recorded graph, the count rewritten
 * between replays (what a decode step's graph does). The kernels split
 * the keys they find as the narrowed call splits its own (at_chunks), so
 * the results are the same bits, though the grid was sized for Tk keys
 * (4352 keys over 4 kv heads: 32 chunks, where 530 take 9). */
static void check_attention_kv_len(wk_device *dev)
{
    static const struct { int64_t Hq, Hkv, Tq, Tk, D, window; } cs[] = {
        { 32, 8, 1, 768, 128, 0 }, { 16, 4, 1, 4352, 128, 0 }, { 8, 2, 7, 200, 64, 64 },
    };
    static const int64_t Ls[] = { 0, 1, 530, 4100, 200, 768, 5000 };
    const wk_dtype dts[3] = { WK_BF16, WK_F16, WK_F32 };
    for (int d = 0; d < 3; d++)
        for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
            wk_scope_begin();
            const int64_t Tk = cs[c].Tk;
            wk_tensor *q = wk_rand_uniform(dev, dts[d], WK_SHAPE(1, cs[c].Hq, cs[c].Tq, cs[c].D), -1, 1);
            wk_tensor *k = wk_rand_uniform(dev, dts[d], WK_SHAPE(1, cs[c].Hkv, Tk, cs[c].D), -1.5, 1.5);
            wk_tensor *v = wk_rand_uniform(dev, dts[d], WK_SHAPE(1, cs[c].Hkv, Tk, cs[c].D), -1, 1);
            wk_tensor *lt = wk_zeros(dev, WK_U32, WK_SHAPE(1));
            const double bound = 0;
            for (size_t l = 0; l < sizeof Ls / sizeof Ls[0]; l++) {
                const uint32_t L = (uint32_t)Ls[l];
                const int64_t n = L < Tk ? L : Tk;
                wk_attention_opts o = { .causal = true, .window = cs[c].window, .kv_len = lt };
                wk_tensor *y = lt && wk_write(lt, &L, 4) == WK_OK ? wk_attention(q, k, v, &o) : NULL;
                o.kv_len = NULL;
                wk_tensor *ref = wk_attention(q, wk_narrow(k, 2, 0, n), wk_narrow(v, 2, 0, n), &o);
                const double e = y && ref ? rel_diff(y, ref) : 1e30;
                char what[96];
                snprintf(what, sizeof what, "attention_kv_len_%s_tq%lld_tk%lld_L%u", wk_dtype_name(dts[d]),
                         (long long)cs[c].Tq, (long long)Tk, L);
                check(what, e <= bound, e, bound);
            }
            /* recorded once, replayed with the count rewritten */
            wk_attention_opts o = { .causal = true, .window = cs[c].window, .kv_len = lt };
            wk_tensor *y = NULL;
            wk_graph *g = NULL;
            if (lt && wk_graph_begin(dev) == WK_OK) {
                y = wk_attention(q, k, v, &o);
                g = wk_graph_end(dev);
            }
            for (size_t l = 0; l < sizeof Ls / sizeof Ls[0]; l++) {
                const uint32_t L = (uint32_t)Ls[l];
                const int64_t n = L < Tk ? L : Tk;
                o.kv_len = NULL;
                wk_tensor *ref = wk_attention(q, wk_narrow(k, 2, 0, n), wk_narrow(v, 2, 0, n), &o);
                const bool ran = g && y && wk_write(lt, &L, 4) == WK_OK && wk_graph_launch(g) == WK_OK;
                const double e = ran && ref ? rel_diff(y, ref) : 1e30;
                char what[96];
                snprintf(what, sizeof what, "attention_kv_len_graph_%s_tq%lld_tk%lld_L%u", wk_dtype_name(dts[d]),
                         (long long)cs[c].Tq, (long long)Tk, L);
                check(what, e <= bound, e, bound);
            }
            wk_graph_free(g);
            wk_scope_end();
        }
    wk_clear_error();
}

/* wk_paged_attention on the device: ids out of range (a sequence, a
 * position, a block id a token reads) fail the call with WK_ERR_INDEX
 * naming the id, and the next call gives the first call's bits; a
 * recorded call (a decode step's attention) replayed with its ids
 * rewritten (positions advanced, tokens moved between sequences, a block
 * id changed) gives the bits of the call made with those ids; a replay
 * with a sequence id out of range faults nothing (no check runs in a
 * graph): that token's rows are zeros, the others keep their bits; a
 * block id out of range in a replay leaves its keys out, the device
 * stays usable. */
static void pa_ids(uint32_t *bt, int64_t n, uint64_t seed)
{
    for (int64_t i = 0; i < n; i++) bt[i] = (uint32_t)i;
    uint64_t x = seed;
    for (int64_t i = n - 1; i > 0; i--) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const int64_t j = (int64_t)((x >> 33) % (uint64_t)(i + 1));
        const uint32_t t = bt[i];
        bt[i] = bt[j], bt[j] = t;
    }
}

static bool same_bits(const wk_tensor *a, const wk_tensor *b, int64_t from, int64_t n)
{
    const size_t es = a ? wk_dtype_size(wk_tensor_dtype(a)) : 1, bytes = (size_t)wk_tensor_numel(a) * es;
    char *x = a && b ? malloc(bytes + 1) : NULL, *y = x ? malloc(bytes + 1) : NULL;
    const bool ok = x && y && wk_to_host(a, x, bytes) == WK_OK && wk_to_host(b, y, bytes) == WK_OK &&
                    memcmp(x + from * (int64_t)es, y + from * (int64_t)es, (size_t)n * es) == 0;
    free(x), free(y);
    return ok;
}

static void check_paged_attention(wk_device *dev)
{
    enum { T = 4, HQ = 8, HKV = 2, D = 128, BS = 16, NB = 64, S = 4, MB = 16, ROW = HQ * D };
    const wk_dtype dts[2] = { WK_BF16, WK_F32 };
    for (int d = 0; d < 2; d++) {
        wk_scope_begin();
        const wk_dtype dt = dts[d];
        uint32_t bt[S * MB], seq[T] = { 0, 1, 2, 3 }, pos[T] = { 100, 37, 250, 0 };
        pa_ids(bt, S * MB, 7 + (uint64_t)d);
        wk_tensor *q = wk_rand_uniform(dev, dt, WK_SHAPE(T, HQ, D), -1, 1);
        wk_tensor *kp = wk_rand_uniform(dev, dt, WK_SHAPE(NB, BS, HKV, D), -1.5, 1.5);
        wk_tensor *vp = wk_rand_uniform(dev, dt, WK_SHAPE(NB, BS, HKV, D), -1, 1);
        wk_tensor *tb = wk_from_host(dev, WK_U32, WK_SHAPE(S, MB), bt);
        wk_tensor *ts = wk_from_host(dev, WK_U32, WK_SHAPE(T), seq), *tp = wk_from_host(dev, WK_U32, WK_SHAPE(T), pos);
        wk_tensor *y0 = q && kp && vp && tb && ts && tp ? wk_paged_attention(q, kp, vp, tb, ts, tp, NULL) : NULL;
        char what[96];
        snprintf(what, sizeof what, "paged_attention_%s_runs", wk_dtype_name(dt));
        check(what, y0 != NULL, 0, 1);
        if (!y0) {
            wk_scope_end();
            continue;
        }
        /* ids out of range, eagerly: each fails, naming the id */
        const uint32_t s4[T] = { 0, 1, 4, 3 }, p256[T] = { 100, 256, 250, 0 };
        uint32_t btb[S * MB];
        memcpy(btb, bt, sizeof bt);
        btb[2 * MB + 250 / BS] = NB;
        wk_tensor *bs = wk_from_host(dev, WK_U32, WK_SHAPE(T), s4), *bp = wk_from_host(dev, WK_U32, WK_SHAPE(T), p256);
        wk_tensor *bb = wk_from_host(dev, WK_U32, WK_SHAPE(S, MB), btb);
        wk_tensor *e1 = wk_paged_attention(q, kp, vp, tb, bs, tp, NULL);
        snprintf(what, sizeof what, "paged_attention_%s_bad_sequence", wk_dtype_name(dt));
        check(what, !e1 && wk_last_status() == WK_ERR_INDEX && strstr(wk_last_error(), "sequence 4"), e1 != NULL, 0);
        wk_tensor *e2 = wk_paged_attention(q, kp, vp, tb, ts, bp, NULL);
        snprintf(what, sizeof what, "paged_attention_%s_bad_position", wk_dtype_name(dt));
        check(what, !e2 && wk_last_status() == WK_ERR_INDEX && strstr(wk_last_error(), "position 256"), e2 != NULL, 0);
        wk_tensor *e3 = wk_paged_attention(q, kp, vp, bb, ts, tp, NULL);
        snprintf(what, sizeof what, "paged_attention_%s_bad_block", wk_dtype_name(dt));
        check(what, !e3 && wk_last_status() == WK_ERR_INDEX && strstr(wk_last_error(), "is 64"), e3 != NULL, 0);
        wk_tensor *y1 = wk_paged_attention(q, kp, vp, tb, ts, tp, NULL);
        snprintf(what, sizeof what, "paged_attention_%s_same_bits_after_errors", wk_dtype_name(dt));
        check(what, same_bits(y0, y1, 0, T * ROW), 0, 0);
        wk_clear_error();
        if (!wk_supports(dev, "graph", dt)) {
            wk_scope_end();
            continue;
        }
        /* recorded once, replayed with rewritten ids */
        wk_tensor *yg = NULL;
        wk_graph *g = NULL;
        if (wk_graph_begin(dev) == WK_OK) {
            yg = wk_paged_attention(q, kp, vp, tb, ts, tp, NULL);
            g = wk_graph_end(dev);
        }
        snprintf(what, sizeof what, "paged_attention_%s_graph_recorded", wk_dtype_name(dt));
        check(what, g && yg, 0, 0);
        for (int rep = 0; g && yg && rep < 3; rep++) {
            uint32_t s2[T], p2[T];
            for (int t = 0; t < T; t++) s2[t] = seq[(t + rep) % T], p2[t] = (pos[(t + rep) % T] + 17u * (uint32_t)rep) % (MB * BS);   /* inside the table */
            bt[rep] = bt[S * MB - 1 - rep];              /* a block id changed */
            const bool ok = wk_write(ts, s2, sizeof s2) == WK_OK && wk_write(tp, p2, sizeof p2) == WK_OK &&
                            wk_write(tb, bt, sizeof bt) == WK_OK && wk_graph_launch(g) == WK_OK;
            wk_tensor *ye = ok ? wk_paged_attention(q, kp, vp, tb, ts, tp, NULL) : NULL;
            snprintf(what, sizeof what, "paged_attention_%s_graph_replay_%d", wk_dtype_name(dt), rep);
            check(what, ye && same_bits(yg, ye, 0, T * ROW), 0, 0);
        }
        if (g && yg) {
            /* a sequence id out of range inside the graph: that token's rows are zeros */
            wk_tensor *before = wk_empty(dev, dt, WK_SHAPE(T, HQ, D));   /* a copy of the last replay's rows */
            uint32_t s9[T];
            bool ok = before && wk_copy_into(before, yg) == WK_OK && wk_to_host(ts, s9, sizeof s9) == WK_OK;
            s9[1] = 9;
            ok = ok && wk_write(ts, s9, sizeof s9) == WK_OK && wk_graph_launch(g) == WK_OK;
            wk_tensor *zero = wk_zeros(dev, dt, WK_SHAPE(T, HQ, D));
            snprintf(what, sizeof what, "paged_attention_%s_graph_bad_sequence_zeros", wk_dtype_name(dt));
            check(what, ok && zero && same_bits(yg, zero, ROW, ROW), 0, 0);
            snprintf(what, sizeof what, "paged_attention_%s_graph_bad_sequence_others_kept", wk_dtype_name(dt));
            check(what, ok && same_bits(yg, before, 0, ROW) && same_bits(yg, before, 2 * ROW, 2 * ROW), 0, 0);
            /* a block id out of range inside the graph: no fault */
            uint32_t p0[T];
            ok = wk_to_host(tp, p0, sizeof p0) == WK_OK;
            bt[s9[0] * MB + p0[0] / BS] = 1000;
            ok = ok && wk_write(tb, bt, sizeof bt) == WK_OK && wk_graph_launch(g) == WK_OK && wk_device_synchronize(dev) == WK_OK;
            snprintf(what, sizeof what, "paged_attention_%s_graph_bad_block_no_fault", wk_dtype_name(dt));
            check(what, ok, 0, 0);
        }
        wk_graph_free(g);
        wk_scope_end();
    }
    wk_clear_error();
}

int main(int argc, char **argv)
{
    const char *name = "cpu";
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) name = argv[++i];
    wk_device *dev = wk_device_open(name);
    if (!dev) {
        printf("cannot open %s: %s\n0 passed, 1 failed\n", name, wk_last_error());
        return 1;
    }
    /* ---- run-time errors ---- */
    wk_scope_begin();
    wk_tensor *huge = wk_empty(dev, WK_U8, WK_SHAPE((int64_t)1 << 50));
    check("oom_fails", !huge && wk_last_status() == WK_ERR_MEMORY, huge != NULL, 0);
    wk_tensor *after = wk_full(dev, WK_F32, WK_SHAPE(1000), 2.0);
    int64_t i999[1] = { 999 };
    expect_item("allocator_usable_after_oom", after, i999, 2);

    wk_device *cpu = wk_device_open("cpu");
    if (strcmp(name, "cpu") != 0) {
        wk_tensor *on_cpu = wk_full(cpu, WK_F32, WK_SHAPE(1000), 1.0);
        wk_tensor *mixed = wk_add(after, on_cpu);
        const char *msg = wk_last_error();
        check("mixed_devices_fail", !mixed && wk_last_status() == WK_ERR_DEVICE && strstr(msg, name) && strstr(msg, "cpu"),
              mixed != NULL, 0);
    }
    check_quant(dev, cpu);
    check_linear_silu_mul(dev);
    check_linear_rope_kv(dev);
    if (wk_supports(dev, "graph", WK_F32)) check_attention_kv_len(dev);
    check_paged_attention(dev);
    check_env_refresh(dev, cpu, strcmp(name, "cpu") == 0);
    float tab[6] = { 1, 2, 3, 4, 5, 6 };
    wk_tensor *table = wk_from_host(dev, WK_F32, WK_SHAPE(3, 2), tab);
    int64_t bad_h[2] = { 1, 3 }, bad_g[4] = { 0, 1, 5, 0 };
    wk_tensor *bad = wk_from_host(dev, WK_I64, WK_SHAPE(2), bad_h);
    wk_tensor *sel_bad = wk_index_select(table, bad, 0);
    check("index_select_bad_id", !sel_bad && wk_last_status() == WK_ERR_INDEX && strstr(wk_last_error(), "3"), 0, 0);
    wk_tensor *gids = wk_from_host(dev, WK_I64, WK_SHAPE(2, 2), bad_g);
    wk_tensor *g_bad = wk_gather(table, gids, 0);
    check("gather_bad_id", !g_bad && wk_last_status() == WK_ERR_INDEX && strstr(wk_last_error(), "5"), 0, 0);
    wk_tensor *ones = wk_ones(dev, WK_F32, WK_SHAPE(2, 2));
    wk_status sst = wk_scatter_add(table, gids, ones, 0);
    check("scatter_add_bad_id", sst == WK_ERR_INDEX, sst, WK_ERR_INDEX);
    float back[6] = { 0 };
    wk_to_host(table, back, sizeof back);
    check("scatter_add_left_dst_unchanged", memcmp(back, tab, sizeof tab) == 0, back[0], tab[0]);
    wk_scope_end();
    wk_device_close(cpu);

    /* ---- transposed views made contiguous, against the cpu, bit for bit
     * (the GPU's tiled transpose path; odd edges and a batch dim) ---- */
    {
        static const struct { wk_dtype dt; int64_t b, r, c; } cases[] = {
            { WK_F32, 1, 1000, 777 }, { WK_F32, 3, 65, 1023 }, { WK_U8, 2, 33, 97 },
            { WK_BF16, 1, 4096, 40 }, { WK_F64, 5, 31, 300 }, { WK_I16, 1, 32, 32 },
        };
        wk_device *cpu0 = wk_device_open("cpu");
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            wk_scope_begin();
            wk_tensor *h = wk_to_dtype(wk_rand_uniform(cpu0, WK_F32, WK_SHAPE(cases[k].b, cases[k].c, cases[k].r), -100, 100),
                                       cases[k].dt);
            wk_tensor *g = wk_to_device(h, dev);
            wk_tensor *ht = wk_contiguous(wk_transpose(h, 1, 2));
            wk_tensor *gt = wk_to_device(wk_contiguous(wk_transpose(g, 1, 2)), cpu0);
            size_t bytes = (size_t)wk_tensor_numel(ht) * wk_dtype_size(cases[k].dt);
            char *a = malloc(bytes), *b2 = malloc(bytes);
            bool ok = a && b2 && gt && wk_to_host(ht, a, bytes) == WK_OK && wk_to_host(gt, b2, bytes) == WK_OK &&
                      memcmp(a, b2, bytes) == 0;
            char what[64];
            snprintf(what, sizeof what, "transpose_%s_%lldx%lldx%lld", wk_dtype_name(cases[k].dt), (long long)cases[k].b,
                     (long long)cases[k].r, (long long)cases[k].c);
            check(what, ok, 0, 0);
            free(a);
            free(b2);
            wk_scope_end();
        }
        wk_device_close(cpu0);
    }

    /* ---- row and column broadcasts, against the cpu, bit for bit ---- */
    {
        wk_device *cpu0 = wk_device_open("cpu");
        static const wk_binary_op ops[] = { WK_ADD, WK_DIV, WK_MAXIMUM };
        for (int k = 0; k < 6; k++) {
            wk_scope_begin();
            wk_tensor *x = wk_rand_uniform(cpu0, WK_F32, WK_SHAPE(300, 1023), -5, 5);
            wk_tensor *y = k < 3 ? wk_rand_uniform(cpu0, WK_F32, WK_SHAPE(1023), 1, 5)
                                 : wk_rand_uniform(cpu0, WK_F32, WK_SHAPE(300, 1), 1, 5);
            wk_tensor *ref = wk_binary(ops[k % 3], x, y);
            wk_tensor *got = wk_to_device(wk_binary(ops[k % 3], wk_to_device(x, dev), wk_to_device(y, dev)), cpu0);
            size_t bytes = 300 * 1023 * sizeof(float);
            float *a = malloc(bytes), *b2 = malloc(bytes);
            bool ok = a && b2 && ref && got && wk_to_host(ref, a, bytes) == WK_OK && wk_to_host(got, b2, bytes) == WK_OK &&
                      memcmp(a, b2, bytes) == 0;
            char what[64];
            snprintf(what, sizeof what, "%s_%s_broadcast", wk_binary_name(ops[k % 3]), k < 3 ? "row" : "column");
            check(what, ok, 0, 0);
            free(a);
            free(b2);
            wk_scope_end();
        }
        wk_device_close(cpu0);
    }

    /* ---- events, graphs and pinned host memory ---- */
    check_events(dev, name);
    check_graph(dev);
    check_pinned(dev);

    /* ---- the current device ---- */
    check_current_device(dev, name);

    /* ---- more than 2^31 elements ---- */
    const int64_t R = 65537, C = 32769;           /* R*C = 2147581953 > 2^31 */
    wk_scope_begin();
    wk_tensor *x = wk_full(dev, WK_U8, WK_SHAPE(R, C), 3.0);
    /* mark the last element and one past 2^31 */
    wk_tensor *last = wk_narrow(wk_narrow(x, 0, R - 1, 1), 1, C - 1, 1);
    check("const_set_view", last && wk_const_set(last, 7.0) == WK_OK, 0, 0);
    int64_t far = ((int64_t)1 << 31) + 5;          /* flat index */
    wk_tensor *flat = wk_reshape(x, WK_SHAPE(R * C));
    check("const_set_far", wk_const_set(wk_narrow(flat, 0, far, 1), 9.0) == WK_OK, 0, 0);

    int64_t i_last[2] = { R - 1, C - 1 }, i_far[2] = { far / C, far % C }, i_mid[2] = { R / 2, 11 };
    wk_tensor *y = wk_add(x, x);                     /* contiguous, 2^31+ elements */
    expect_item("add_last", y, i_last, 14);
    expect_item("add_far", y, i_far, 18);
    expect_item("add_mid", y, i_mid, 6);
    wk_release(y);

    wk_tensor *row = wk_narrow(x, 0, 0, 1);          /* broadcast a row */
    wk_tensor *z = wk_add(x, row);
    expect_item("add_broadcast_last", z, i_last, 10);
    wk_release(z);

    wk_tensor *t = wk_contiguous(wk_transpose(x, 0, 1));  /* [C, R] strided copy */
    int64_t t_last[2] = { C - 1, R - 1 }, t_far[2] = { far % C, far / C };
    expect_item("transpose_last", t, t_last, 7);
    expect_item("transpose_far", t, t_far, 9);
    wk_release(t);

    wk_tensor *xf = wk_to_dtype(wk_narrow(x, 0, R - 2, 2), WK_F32);   /* tail rows */
    int64_t f_last[2] = { 1, C - 1 };
    expect_item("to_dtype_tail", xf, f_last, 7);

    int d1 = 1, d0 = 0;
    /* u8 sums wrap: rows hold 3*C (+4 on the last row, +6 on far's row)
     * and columns 3*R (+4 on the last column), all mod 256 */
    wk_tensor *s1 = wk_sum(x, &d1, 1, false);
    int64_t r_last[1] = { R - 1 }, r_far[1] = { far / C }, r_0[1] = { 0 };
    expect_item("sum_dim1_first", s1, r_0, (3 * C) % 256);
    expect_item("sum_dim1_last", s1, r_last, (3 * C + 4) % 256);
    expect_item("sum_dim1_far", s1, r_far, (3 * C + 6) % 256);
    wk_tensor *s0 = wk_sum(x, &d0, 1, false);
    int64_t c_last[1] = { C - 1 }, c_far[1] = { far % C };
    expect_item("sum_dim0_last", s0, c_last, (3 * R + 4) % 256);
    expect_item("sum_dim0_far", s0, c_far, (3 * R + 6) % 256);

    wk_tensor *am = wk_reduce(WK_ARGMAX, x, NULL, 0, false);          /* first max is at far */
    expect_item("argmax_all", am, NULL, (double)far);

    int64_t ids_h[3] = { R - 1, 0, far / C };
    wk_tensor *ids = wk_from_host(dev, WK_I64, WK_SHAPE(3), ids_h);
    wk_tensor *sel = wk_index_select(x, ids, 0);
    int64_t s_idx[2] = { 0, C - 1 }, s_idx2[2] = { 2, far % C };
    expect_item("index_select_last", sel, s_idx, 7);
    expect_item("index_select_far", sel, s_idx2, 9);
    wk_scope_end();
    wk_device_close(dev);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
