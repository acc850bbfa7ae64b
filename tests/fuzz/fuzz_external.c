/* fuzz_external.c — libFuzzer harness for wk_from_external, the import of
 * memory wick did not allocate (DLPack capsules and Python buffers go
 * through it): the input gives a dtype, a rank, dims and strides (small,
 * powers of two near the int64 limits, or any 64-bit value) and bytes for
 * the data. The harness computes in 128-bit arithmetic the bytes the
 * layout reaches; a layout reaching past 2^63 bytes must be refused, and
 * every refusal must set an error. An accepted layout of at most 1 MiB is
 * backed by a buffer of exactly that size (so ASan sees any read past it)
 * and read through contiguous, wk_to_host, narrow, transpose, a sum or a
 * dequantize; the owner's release callback must run exactly once, after
 * the last view is gone. Corpus: tests/fuzz/corpus/external/.
 */
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fz_dev();
    return 0;
}

typedef struct rd {
    const uint8_t *p;
    size_t n, at;
} rd;

static uint8_t u8(rd *r) { return r->at < r->n ? r->p[r->at++] : 0; }

/* small values most of the time, the edges of int64 sometimes */
static int64_t i64(rd *r)
{
    uint8_t t = u8(r);
    if (t < 200) return t % 17;
    if (t < 240) {
        int e = (t - 200) % 20 + 44;   /* 2^44 .. 2^63 */
        uint64_t v = e >= 63 ? (uint64_t)INT64_MAX : (uint64_t)1 << e;
        return (int64_t)(v - (t & 1));
    }
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)u8(r) << (8 * i);
    return (int64_t)v;
}

static int released;
static void on_release(void *ctx)
{
    (void)ctx;
    released++;
}

/* reads every element of t's layout, through several ops */
static void exercise(wk_tensor *t, wk_dtype dt)
{
    wk_tensor *c = wk_contiguous(t);
    FZ_CHECK(c != NULL, "contiguous of an accepted external tensor: %s", wk_last_error());
    const size_t nb = wk_tensor_nbytes(c);
    void *host = malloc(nb ? nb : 1);
    FZ_CHECK(wk_to_host(t, host, nb) == WK_OK, "to_host: %s", wk_last_error());
    free(host);
    wk_release(c);
    const int rank = wk_tensor_rank(t);
    /* the last row (a quantized tensor's last dim holds whole blocks: narrowed only above it) */
    if (rank >= (wk_dtype_is_quantized(dt) ? 2 : 1) && wk_tensor_dim(t, 0) > 0) {
        wk_tensor *v = wk_narrow(t, 0, wk_tensor_dim(t, 0) - 1, 1);
        FZ_CHECK(v != NULL, "narrow: %s", wk_last_error());
        wk_tensor *vc = wk_copy(v);
        FZ_CHECK(vc != NULL, "copy of a narrowed view: %s", wk_last_error());
        wk_release(vc);
        wk_release(v);
    }
    if (wk_dtype_is_quantized(dt)) {
        wk_tensor *d = wk_dequantize(t, WK_F32);
        FZ_CHECK(d != NULL, "dequantize: %s", wk_last_error());
        wk_release(d);
        return;
    }
    if (rank >= 2) {
        wk_tensor *tr = wk_transpose(t, 0, rank - 1);
        FZ_CHECK(tr != NULL, "transpose: %s", wk_last_error());
        wk_tensor *s = wk_sum(tr, NULL, 0, false);
        if (s) wk_release(s);
        else fz_check_error("sum");
        wk_release(tr);
    } else {
        wk_tensor *s = wk_sum(t, NULL, 0, false);
        if (s) wk_release(s);
        else fz_check_error("sum");
    }
}

/* products and sums of non-negative values saturating at 2^100, far past
 * any reach the library accepts and far from __int128's own overflow */
#define SAT ((__int128)1 << 100)
static __int128 sat_mul(__int128 a, __int128 b)
{
    return b != 0 && a > SAT / b ? SAT : a * b;
}
static __int128 sat_add(__int128 a, __int128 b)
{
    return a + b > SAT ? SAT : a + b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rd r = { data, size, 0 };
    const wk_dtype dt = (wk_dtype)(u8(&r) % (WK_DTYPE_COUNT + 1));   /* one invalid */
    const int rank = u8(&r) % (WK_MAX_RANK + 3) - 1;   /* -1 .. 9 */
    const bool has_strides = u8(&r) & 1;
    wk_shape s = { rank, { 0 } };
    int64_t strides[WK_MAX_RANK] = { 0 };
    for (int d = 0; d < rank && d < WK_MAX_RANK; d++) s.dims[d] = i64(&r);
    for (int d = 0; d < rank && d < WK_MAX_RANK; d++) strides[d] = i64(&r);

    /* the reach of the layout, independently: bytes from the first element
     * to the end of the last one (0 when empty); over: past 2^63 bytes */
    bool ok_args = dt < WK_DTYPE_COUNT && rank >= 0 && rank <= WK_MAX_RANK, over = false, empty = false;
    __int128 numel = 1, last = 0;
    if (!has_strides && ok_args) {   /* row-major */
        __int128 st = 1;
        for (int d = rank - 1; d >= 0; d--) {
            strides[d] = st > INT64_MAX ? INT64_MAX : (int64_t)st;
            st = sat_mul(st, s.dims[d] > 0 ? s.dims[d] : 1);
        }
    }
    for (int d = 0; ok_args && d < rank; d++) {
        if (s.dims[d] < 0 || (has_strides && strides[d] < 0)) ok_args = false;
        else if (s.dims[d] == 0) empty = true;
    }
    __int128 bytes = 0;
    if (ok_args && !empty) {
        for (int d = 0; d < rank; d++) {
            numel = sat_mul(numel, s.dims[d]);
            last = sat_add(last, sat_mul(s.dims[d] - 1, strides[d]));
        }
        const __int128 block = (__int128)wk_dtype_block_size(dt), bb = (__int128)wk_dtype_block_bytes(dt);
        bytes = (last + 1 + block - 1) / block * bb;
        over = numel >= ((__int128)1 << 63) || last + 1 >= ((__int128)1 << 63) || bytes >= ((__int128)1 << 63);
    }

    const size_t cap = 1 << 20;
    const size_t want = !ok_args || empty || over || bytes > (__int128)cap ? 0 : (size_t)bytes;
    /* the buffer: exactly the reach, filled from the input */
    uint8_t *buf = malloc(want ? want : 16);
    FZ_CHECK(buf != NULL, "out of memory");
    for (size_t i = 0; i < want; i++) buf[i] = r.at < r.n ? r.p[r.at++] : (uint8_t)i;
    if (dt == WK_F16 || dt == WK_BF16 || dt == WK_F32 || dt == WK_F64)   /* finite values: no NaN noise in sums */
        for (size_t i = 0; i < want; i++) buf[i] &= 0x3F;

    released = 0;
    wk_clear_error();
    wk_tensor *t = wk_from_external(fz_dev(), dt, s, has_strides ? strides : NULL, buf, on_release, buf);
    if (!t) {
        fz_check_error("wk_from_external");
        FZ_CHECK(released == 0, "a refused import called release");
        free(buf);
        return 0;
    }
    FZ_CHECK(ok_args, "an import with dtype %d, rank %d or a negative dim or stride was accepted", (int)dt, rank);
    FZ_CHECK(!over, "a layout reaching 2^63 bytes or more was accepted (rank %d)", rank);
    FZ_CHECK(wk_tensor_rank(t) == rank, "rank");
    for (int d = 0; d < rank; d++) FZ_CHECK(wk_tensor_dim(t, d) == s.dims[d], "dim %d", d);
    FZ_CHECK(empty || (__int128)wk_tensor_numel(t) == numel, "numel %lld", (long long)wk_tensor_numel(t));
    /* a contiguous copy of it must fit too (stride-0 dims make many elements of few bytes) */
    const __int128 copy = numel / (__int128)wk_dtype_block_size(dt) * (__int128)wk_dtype_block_bytes(dt);
    if (!empty && want && copy <= ((__int128)16 << 20)) exercise(t, dt);
    FZ_CHECK(released == 0, "release ran while the tensor lives");
    wk_release(t);
    FZ_CHECK(released == 1, "release ran %d times", released);
    free(buf);
    return 0;
}
