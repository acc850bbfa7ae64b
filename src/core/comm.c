/* comm.c — communicators and collectives (include/wick_comm.h): argument
 * checks, contiguous staging for views, all_gather's join along any dim,
 * the torchrun-style environment, all_reduce fused with the residual add
 * and norm that follow it where the backend has that kernel (else the two
 * calls), and the calls into the backend's
 * comm_* members (backend.h; the cpu's in src/cpu/cpu_comm.c, NCCL/RCCL in
 * src/gpu/comm.hip).
 *
 * A collective that fails on one rank once its arguments are checked (its
 * staging, the backend) aborts the communicator, so that the other ranks'
 * collectives fail too instead of waiting for one that will not come; a
 * refused call (bad arguments) sends nothing and aborts nothing, and a
 * rank that fails between collectives calls wk_comm_abort itself. WICK_COMM_FAIL
 * (read when a communicator is made) injects such a failure for tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "wick_comm.h"

struct wk_comm {
    wk_device *dev;
    void *h;             /* the backend's communicator */
    int rank, size;
    long long calls;     /* collectives made by this rank          */
    long long fail_at;   /* WICK_COMM_FAIL: this call fails (0: none) */
};

/* WICK_COMM_FAIL=R:K (tests): rank R's K-th collective (from 1) fails as
 * a failing rank's would, aborting the communicator. 0 for other ranks. */
static long long comm_fail_at(int rank)
{
    const char *e = getenv("WICK_COMM_FAIL");
    int r = -1;
    long long k = 0;
    if (!e || sscanf(e, "%d:%lld", &r, &k) != 2 || r != rank || k < 1) return 0;
    return k;
}

static void abort_quiet(wk_comm *c)
{
    if (c && c->dev->be->comm_abort) c->dev->be->comm_abort(c->h);
}

void wk_comm_abort(wk_comm *c) { abort_quiet(c); }

bool wk_comm_aborted(const wk_comm *c)
{
    return c && c->dev->be->comm_aborted && c->dev->be->comm_aborted(c->h);
}

/* Every collective goes to the backend through here: the injected
 * failure, and the abort when it fails (the error stays the backend's). */
static wk_status comm_call(wk_comm *c, const wk_coll_args *a)
{
    if (c->fail_at && ++c->calls == c->fail_at) {
        wk_status st = wk_error(WK_ERR_BACKEND, "rank %d of %d: a failure injected at its collective %lld (WICK_COMM_FAIL)",
                                c->rank, c->size, c->calls);
        abort_quiet(c);
        return st;
    }
    wk_status st = c->dev->be->comm_run(c->h, a);
    if (st != WK_OK) abort_quiet(c);
    return st;
}

static bool comm_members(const wk_backend_iface *be)
{
    return be->comm_available && be->comm_dtype && be->comm_init_all && be->comm_free && be->comm_run;
}

/* Whether dev's kind has collectives; sets the error when it has not. */
static bool comm_ready(wk_device *dev)
{
    if (!comm_members(dev->be)) {
        wk_error(WK_ERR_UNSUPPORTED, "%s has no collectives", dev->name);
        return false;
    }
    return dev->be->comm_available() == WK_OK;
}

bool wk_comm_available(wk_device *dev)
{
    if (!dev || !comm_members(dev->be)) return false;
    wk_status saved = wk_last_status();
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", wk_last_error());
    bool ok = dev->be->comm_available() == WK_OK;
    if (saved == WK_OK) wk_clear_error();
    else wk_error(saved, "%s", msg);
    return ok;
}

bool wk_comm_supports(wk_device *dev, wk_dtype dt)
{
    return wk_comm_available(dev) && dev->be->comm_dtype(dt);
}

static wk_comm *comm_new(wk_device *dev, void *h, int rank, int size)
{
    wk_comm *c = malloc(sizeof *c);
    if (!c) {
        dev->be->comm_free(h);
        wk_error(WK_ERR_MEMORY, "out of host memory");
        return NULL;
    }
    c->dev = wk_device_retain(dev), c->h = h, c->rank = rank, c->size = size;
    c->calls = 0, c->fail_at = comm_fail_at(rank);
    return c;
}

wk_status wk_comm_init_all(wk_device *const *devs, int n, wk_comm **comms)
{
    if (!devs || !comms || n < 1) return wk_error(WK_ERR_ARGUMENT, "comm_init_all: %s", !devs ? "NULL devices" : !comms ? "NULL comms" : "n must be at least 1");
    for (int i = 0; i < n; i++) comms[i] = NULL;
    for (int i = 0; i < n; i++) {
        if (!devs[i]) return wk_error(WK_ERR_ARGUMENT, "comm_init_all: device %d is NULL", i);
        if (devs[i]->be != devs[0]->be)
            return wk_error(WK_ERR_DEVICE, "comm_init_all: the devices are of different kinds (%s, %s)", devs[0]->name,
                            devs[i]->name);
        /* GPUs: one rank per device (NCCL's rule); the cpu's ranks are threads */
        if (strcmp(devs[0]->be->kind, "cpu") != 0)
            for (int j = 0; j < i; j++)
                if (devs[j] == devs[i])
                    return wk_error(WK_ERR_ARGUMENT, "comm_init_all: %s is rank %d and rank %d (one rank per GPU)",
                                    devs[i]->name, j, i);
    }
    if (!comm_ready(devs[0])) return wk_last_status();
    void **ctxs = malloc((size_t)n * sizeof *ctxs), **hs = calloc((size_t)n, sizeof *hs);
    if (!ctxs || !hs) {
        free(ctxs), free(hs);
        return wk_error(WK_ERR_MEMORY, "out of host memory");
    }
    for (int i = 0; i < n; i++) ctxs[i] = devs[i]->ctx;
    wk_status st = devs[0]->be->comm_init_all(ctxs, n, hs);
    for (int i = 0; st == WK_OK && i < n; i++) {
        comms[i] = comm_new(devs[i], hs[i], i, n);
        hs[i] = NULL;
        if (!comms[i]) st = wk_last_status();
    }
    if (st != WK_OK) {
        for (int i = 0; i < n; i++) {
            if (hs[i]) devs[0]->be->comm_free(hs[i]);
            wk_comm_free(comms[i]);
            comms[i] = NULL;
        }
    }
    free(ctxs), free(hs);
    return st;
}

wk_status wk_comm_unique_id(wk_device *dev, wk_comm_id *id)
{
    if (!dev || !id) return wk_error(WK_ERR_ARGUMENT, "comm_unique_id: NULL %s", !dev ? "device" : "id");
    if (!comm_ready(dev)) return wk_last_status();
    if (!dev->be->comm_unique_id)
        return wk_error(WK_ERR_UNSUPPORTED,
                        "%s has no one-rank-per-process communicators (its ranks are threads: wk_comm_init_all)",
                        dev->name);
    memset(id, 0, sizeof *id);
    return dev->be->comm_unique_id(id->bytes);
}

wk_comm *wk_comm_init_rank(wk_device *dev, int rank, int world, const wk_comm_id *id)
{
    if (!dev || !id) {
        wk_error(WK_ERR_ARGUMENT, "comm_init_rank: NULL %s", !dev ? "device" : "id");
        return NULL;
    }
    if (world < 1 || rank < 0 || rank >= world) {
        wk_error(WK_ERR_ARGUMENT, "comm_init_rank: rank %d of a world of %d", rank, world);
        return NULL;
    }
    if (!comm_ready(dev)) return NULL;
    if (!dev->be->comm_init_rank) {
        wk_error(WK_ERR_UNSUPPORTED,
                 "%s has no one-rank-per-process communicators (its ranks are threads: wk_comm_init_all)", dev->name);
        return NULL;
    }
    void *h = NULL;
    if (dev->be->comm_init_rank(dev->ctx, id->bytes, rank, world, &h) != WK_OK) return NULL;
    return comm_new(dev, h, rank, world);
}

void wk_comm_id_to_hex(const wk_comm_id *id, char out[2 * WK_COMM_ID_BYTES + 1])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < WK_COMM_ID_BYTES; i++) {
        out[2 * i] = digits[id->bytes[i] >> 4];
        out[2 * i + 1] = digits[id->bytes[i] & 15];
    }
    out[2 * WK_COMM_ID_BYTES] = 0;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

wk_status wk_comm_id_from_hex(const char *hex, wk_comm_id *id)
{
    if (!hex || !id) return wk_error(WK_ERR_ARGUMENT, "comm_id_from_hex: NULL %s", !hex ? "text" : "id");
    if (strlen(hex) != 2 * WK_COMM_ID_BYTES)
        return wk_error(WK_ERR_ARGUMENT, "a communicator id is %d hex digits, not %zu", 2 * WK_COMM_ID_BYTES,
                        strlen(hex));
    for (int i = 0; i < WK_COMM_ID_BYTES; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return wk_error(WK_ERR_ARGUMENT, "a communicator id has a non-hex character at %d", hi < 0 ? 2 * i : 2 * i + 1);
        id->bytes[i] = (unsigned char)(hi << 4 | lo);
    }
    return WK_OK;
}

/* An environment variable as an int in [lo, hi]; false (error set) when
 * missing or malformed. */
static bool env_int(const char *name, long lo, long hi, int *out)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        wk_error(WK_ERR_ARGUMENT, "comm_init_env: %s is not set", name);
        return false;
    }
    char *end = NULL;
    long x = strtol(v, &end, 10);
    if (*end || x < lo || x > hi) {
        wk_error(WK_ERR_ARGUMENT, "comm_init_env: %s='%s' is not a number in [%ld, %ld]", name, v, lo, hi);
        return false;
    }
    *out = (int)x;
    return true;
}

wk_comm *wk_comm_init_env(wk_device *dev)
{
    int rank, world;
    if (!dev) {
        wk_error(WK_ERR_ARGUMENT, "comm_init_env: NULL device");
        return NULL;
    }
    if (!env_int("WORLD_SIZE", 1, 1 << 20, &world) || !env_int("RANK", 0, world - 1, &rank)) return NULL;
    wk_comm_id id;
    const char *hex = getenv("WICK_COMM_ID");
    if (hex && *hex) {
        if (wk_comm_id_from_hex(hex, &id) != WK_OK) return NULL;
    } else {
        const char *addr = getenv("MASTER_ADDR");
        int port;
        if (!addr || !*addr) {
            wk_error(WK_ERR_ARGUMENT, "comm_init_env: neither WICK_COMM_ID nor MASTER_ADDR is set");
            return NULL;
        }
        if (!env_int("MASTER_PORT", 1, 65534, &port)) return NULL;
        /* NCCL's bootstrap meets where NCCL_COMM_ID says; the id made
         * then names that address on every rank alike */
        if (!getenv("NCCL_COMM_ID")) {
            char where[300];
            snprintf(where, sizeof where, "%s:%d", addr, port + 1);
            setenv("NCCL_COMM_ID", where, 0);
        }
        if (wk_comm_unique_id(dev, &id) != WK_OK) return NULL;
    }
    return wk_comm_init_rank(dev, rank, world, &id);
}

void wk_comm_free(wk_comm *c)
{
    if (!c) return;
    c->dev->be->comm_free(c->h);
    wk_device_release(c->dev);
    free(c);
}

int wk_comm_rank(const wk_comm *c) { return c ? c->rank : -1; }
int wk_comm_size(const wk_comm *c) { return c ? c->size : 0; }
wk_device *wk_comm_device(const wk_comm *c) { return c ? c->dev : NULL; }

/* The checks every collective makes on its tensor. */
static bool coll_check(const char *op, const wk_comm *c, const wk_tensor *t, bool reduce)
{
    if (!c || !t) {
        wk_error(WK_ERR_ARGUMENT, "%s: NULL %s", op, !c ? "communicator" : "tensor");
        return false;
    }
#ifdef WK_DEBUG_HANDLES
    char what[96];
    snprintf(what, sizeof what, "%s: the tensor", op);
    if (WK_DEAD(t, what)) return false;
#endif
    if (t->st->dev != c->dev) {
        wk_error(WK_ERR_DEVICE, "%s: the tensor is on %s but the communicator's rank %d is on %s", op,
                 t->st->dev->name, c->rank, c->dev->name);
        return false;
    }
    if (wk_dtype_is_quantized(t->dtype)) {
        wk_error(WK_ERR_DTYPE, "%s does not take block-quantized tensors (%s)", op, wk_dtype_name(t->dtype));
        return false;
    }
    if (reduce && !c->dev->be->comm_dtype(t->dtype)) {
        wk_error(WK_ERR_DTYPE, "%s: %s is not summed on %s (f32, f16, bf16, f64, i32, i64 are)", op,
                 wk_dtype_name(t->dtype), c->dev->name);
        return false;
    }
    return true;
}

/* A collective in place on t: directly when t is dense, else through a
 * contiguous copy written back. */
static wk_status coll_inplace(wk_comm *c, wk_tensor *t, wk_coll_kind kind, int root)
{
    wk_tensor *d = wk_tensor_is_contiguous(t) ? wk_retain(t) : wk_contiguous(t);
    if (!d) {
        abort_quiet(c);
        return wk_last_status();
    }
    const size_t n = (size_t)wk_tensor_numel(d);
    /* bytes for broadcast: any dtype moves as its bytes */
    wk_coll_args a = { .kind = kind, .dtype = kind == WK_COLL_BROADCAST ? WK_U8 : d->dtype,
                       .send = wk_tensor_data(d), .recv = wk_tensor_data(d),
                       .count = kind == WK_COLL_BROADCAST ? n * (size_t)wk_dt_elem_bytes(d->dtype) : n, .root = root };
    wk_status st = comm_call(c, &a);
    if (st == WK_OK && d != t && (st = wk_copy_into(t, d)) != WK_OK) abort_quiet(c);
    wk_release(d);
    return st;
}

wk_status wk_all_reduce(wk_comm *c, wk_tensor *t)
{
    if (!coll_check("all_reduce", c, t, true)) return wk_last_status();
    return coll_inplace(c, t, WK_COLL_ALL_REDUCE_SUM, 0);
}

wk_status wk_broadcast(wk_comm *c, wk_tensor *t, int root)
{
    if (!coll_check("broadcast", c, t, false)) return wk_last_status();
    if (root < 0 || root >= c->size)
        return wk_error(WK_ERR_ARGUMENT, "broadcast: root %d is not a rank of %d", root, c->size);
    return coll_inplace(c, t, WK_COLL_BROADCAST, root);
}

/* The fused kernel's arguments when the operands are ones it takes
 * (f32/f16/bf16, contiguous) and the backend fuses them. */
static bool fused_args(wk_comm *c, wk_tensor *x, const wk_tensor *residual, const wk_tensor *weight, double eps,
                       bool gemma, wk_coll_args *a)
{
    const wk_dtype dt = x->dtype;
    const int64_t n = wk_tensor_numel(x), D = x->dims[x->rank - 1];
    if (!c->dev->be->comm_fuses || (dt != WK_F32 && dt != WK_F16 && dt != WK_BF16) || n <= 0 ||
        !wk_tensor_is_contiguous(x) || !wk_tensor_is_contiguous(residual) || (weight && !wk_tensor_is_contiguous(weight)))
        return false;
    *a = (wk_coll_args){ .kind = WK_COLL_ALL_REDUCE_ADD_RMS_NORM, .dtype = dt, .send = wk_tensor_data(x),
                         .recv = wk_tensor_data(x), .count = (size_t)n, .residual = wk_tensor_data(residual),
                         .weight = weight ? wk_tensor_data(weight) : NULL, .rows = n / D, .D = D, .eps = eps,
                         .gemma = gemma ? 1 : 0 };
    return c->dev->be->comm_fuses(c->h, a);
}

/* The operands are add_rms_norm's and are checked as it checks them
 * before any rank sends anything: a refusal after the sum would leave x
 * summed. */
static wk_tensor *all_reduce_add_rms_norm_impl(wk_comm *c, wk_tensor *x, const wk_tensor *residual,
                                               const wk_tensor *weight, double eps, bool gemma, wk_tensor **sum)
{
    if (sum) *sum = NULL;
    if (!coll_check("all_reduce_add_rms_norm", c, x, true) || !wk_add_rms_norm_check(x, residual, weight, eps, sum))
        return NULL;
    wk_coll_args a;
    if (!fused_args(c, x, residual, weight, eps, gemma, &a)) {
        if (wk_all_reduce(c, x) != WK_OK) return NULL;
        return wk_add_rms_norm(x, residual, weight, eps, gemma, sum);
    }
    wk_tensor *out = wk_tensor_alloc(c->dev, x->dtype, x->rank, x->dims);
    wk_tensor *s = out ? wk_tensor_alloc(c->dev, x->dtype, x->rank, x->dims) : NULL;
    if (s) {
        a.norm = wk_tensor_data(out);
        a.sum = wk_tensor_data(s);
        if (comm_call(c, &a) == WK_OK) {
            *sum = s;
            return out;
        }
    } else {
        abort_quiet(c);
    }
    wk_release(s);
    wk_release(out);
    return NULL;
}

wk_tensor *wk_all_reduce_add_rms_norm(wk_comm *c, wk_tensor *x, const wk_tensor *residual,
                                      const wk_tensor *weight, double eps, bool gemma, wk_tensor **sum)
    WK_API(wk_tensor *, "all_reduce_add_rms_norm", all_reduce_add_rms_norm_impl(c, x, residual, weight, eps, gemma, sum))

wk_tensor *wk_all_gather(wk_comm *c, const wk_tensor *x, int dim)
{
    if (!coll_check("all_gather", c, x, false)) return NULL;
    const int rank = x->rank;
    const int d = dim < 0 ? dim + rank : dim;
    if (rank == 0 || d < 0 || d >= rank) {
        wk_error(WK_ERR_ARGUMENT, "all_gather: dim %d is out of range for rank %d", dim, rank);
        return NULL;
    }
    wk_tensor *src = wk_contiguous(x);
    if (!src) {
        abort_quiet(c);
        return NULL;
    }
    /* the ranks' tensors one after another: [size, x's dims] */
    wk_tensor *out = NULL, *g = NULL;
    if (rank + 1 > WK_MAX_RANK) {
        wk_error(WK_ERR_ARGUMENT, "all_gather: a rank-%d tensor has no room for the ranks' dim (at most %d)", rank,
                 WK_MAX_RANK - 1);
        goto done;
    }
    wk_shape gs = { .rank = rank + 1 };
    gs.dims[0] = c->size;
    for (int i = 0; i < rank; i++) gs.dims[i + 1] = x->dims[i];
    g = wk_empty(c->dev, x->dtype, gs);
    if (!g) {
        abort_quiet(c);
        goto done;
    }
    const size_t es = (size_t)wk_dt_elem_bytes(x->dtype);
    wk_coll_args a = { .kind = WK_COLL_ALL_GATHER, .dtype = WK_U8, .send = wk_tensor_data(src),
                       .recv = wk_tensor_data(g), .count = (size_t)wk_tensor_numel(src) * es, .root = 0 };
    if (comm_call(c, &a) != WK_OK) goto done;
    wk_shape shape = { .rank = rank };
    for (int i = 0; i < rank; i++) shape.dims[i] = x->dims[i];
    shape.dims[d] *= c->size;
    if (d == 0) {
        out = wk_reshape(g, shape);
    } else {
        /* [size, d0 .. dk] -> [d0 .. d(d-1), size, dd .. dk] -> joined */
        int perm[WK_MAX_RANK];
        for (int i = 0; i < d; i++) perm[i] = i + 1;
        perm[d] = 0;
        for (int i = d + 1; i <= rank; i++) perm[i] = i;
        wk_tensor *p = wk_permute(g, perm);
        out = p ? wk_reshape(p, shape) : NULL;   /* copies: the permuted view is not dense */
        wk_release(p);
    }
done:
    wk_release(g);
    wk_release(src);
    return out;
}
