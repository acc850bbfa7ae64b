/* serve.c — `wick serve`: an OpenAI-compatible HTTP server on one model
 * (src/server, docs/server.md).
 *
 *   wick serve [MODEL] [--host H] [--port P] [--device D] [--api-key KEY]
 *              [--max-seqs N] [--max-queue N] [--ctx N] [--kv-gib G] [--dtype f32|bf16]
 *              [--grace S] [--max-body BYTES] [--threads N] [--cpu-threads N] [-q]
 *
 * Loads the model once, starts the batched engine on its own thread and
 * serves until SIGINT or SIGTERM; then it takes no new connections,
 * gives the requests in flight a grace period, cancels what is left and
 * exits 0. MODEL as `wick run` takes it (left out: the default SmolLM2
 * from the cache), and the same default device. Built only where
 * libmicrohttpd was found (the Makefile defines WICK_HAVE_SERVER);
 * elsewhere the command says how to get it.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wick.h"
#include "wick_ext.h"
#include "wick_llm.h"
#include "wick_engine.h"
#include "cli.h"
#ifdef WICK_HAVE_SERVER
#include <pthread.h>
#include "server/server.h"
#endif

void wick_serve_usage(void)
{
    printf("usage: wick serve [MODEL] [options]\n"
           "\n"
           "Serve a language model over HTTP with OpenAI's API (/v1/completions,\n"
           "/v1/chat/completions, /v1/models; /health, /metrics) and a chat page at /\n"
           "until SIGINT or SIGTERM.\n"
           "MODEL as for wick run (left out: SmolLM2-135M-Instruct from the cache).\n"
           "\n"
           "  --host H               the address to listen on (default 127.0.0.1; 0.0.0.0: all)\n"
           "  --port P               (default 8080; 0: one the system picks, printed)\n"
           "  --device D             cpu, cuda:N, rocm:N (default: a GPU if present, else cpu)\n"
           "  --api-key KEY          requests to /v1/ need \"Authorization: Bearer KEY\"\n"
           "                         (default: $WICK_API_KEY when set, else none)\n"
           "  --max-seqs N           sequences the engine runs at once (default 64)\n"
           "  --max-queue N          a request that finds N sequences waiting in the engine\n"
           "                         is answered 429 (default: 4 x max-seqs)\n"
           "  --ctx N                context length (default: the model's, at most 4096)\n"
           "  --kv-gib G             the KV cache's size at most, GiB (default: room for max-seqs\n"
           "                         sequences of the context, within 90%% of a GPU's free memory\n"
           "                         less 2 GiB, or a quarter of the cpu's memory)\n"
           "  --dtype T              f32 or bf16: activations and KV cache (default f32)\n"
           "  --grace S              seconds requests in flight get at a shutdown (default 5)\n"
           "  --max-body BYTES       a request body's size at most (default 8 MiB; 413 above)\n"
           "  --threads N            HTTP threads (default 4)\n"
           "  --cpu-threads N        the cpu's compute threads (default: every online CPU;\n"
           "                         WICK_NUM_THREADS; `wick run --threads`)\n"
           "  -q, --quiet            no progress bar, no line per request\n");
}

#ifndef WICK_HAVE_SERVER

int wick_cmd_serve(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            wick_serve_usage();
            return WICK_EXIT_OK;
        }
    fprintf(stderr, "wick serve: this wick was built without libmicrohttpd, which the server needs; install it\n"
                    "(Debian, Ubuntu: apt-get install libmicrohttpd-dev) and build again (make)\n");
    return WICK_EXIT_FAIL;
}

#else

/* the model's name in /v1/models: its file's or folder's name, less .gguf */
static void model_id(const char *path, char *out, size_t n)
{
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/') len--;
    size_t start = len;
    while (start > 0 && path[start - 1] != '/') start--;
    size_t end = len;
    if (end - start > 5 && !strncmp(path + end - 5, ".gguf", 5)) end -= 5;
    snprintf(out, n, "%.*s", (int)(end - start), path + start);
}

static bool num_arg(int argc, char **argv, int *i, double lo, double hi, double *out)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "wick serve: %s needs a value\n", argv[*i]);
        return false;
    }
    char *end;
    const char *a = argv[*i], *v = argv[++*i];
    *out = strtod(v, &end);
    /* counts and sizes are whole; --kv-gib and --grace may be fractions */
    const bool whole = strcmp(a, "--kv-gib") && strcmp(a, "--grace");
    if (end == v || *end || !(*out >= lo && *out <= hi) || (whole && *out != (double)(int64_t)*out)) {
        fprintf(stderr, "wick serve: %s '%s' is not a%s number in [%g, %g]\n", a, v, whole ? " whole" : "", lo, hi);
        return false;
    }
    return true;
}

int wick_cmd_serve(int argc, char **argv)
{
    const char *model = NULL, *host = "127.0.0.1", *device = NULL, *api_key = NULL;
    double port = 8080, max_seqs = 0, max_queue = 0, ctx = 0, kv_gib = 0, grace = 5, max_body = 8 << 20, threads = 4;
    bool quiet = false;
    wk_dtype dtype = WK_F32;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            wick_serve_usage();
            return WICK_EXIT_OK;
        }
        const bool takes = !strcmp(a, "--host") || !strcmp(a, "--device") || !strcmp(a, "--api-key") ||
                           !strcmp(a, "--dtype");
        if (takes && i + 1 >= argc) {
            fprintf(stderr, "wick serve: %s needs a value\n", a);
            return WICK_EXIT_USAGE;
        }
        bool ok = true;
        if (!strcmp(a, "--host")) host = argv[++i];
        else if (!strcmp(a, "--device")) device = argv[++i];
        else if (!strcmp(a, "--api-key")) api_key = argv[++i];
        else if (!strcmp(a, "--dtype")) {
            const char *t = argv[++i];
            if (!strcmp(t, "f32")) dtype = WK_F32;
            else if (!strcmp(t, "bf16")) dtype = WK_BF16;
            else {
                fprintf(stderr, "wick serve: --dtype takes f32 or bf16, not '%s'\n", t);
                return WICK_EXIT_USAGE;
            }
        } else if (!strcmp(a, "--port")) ok = num_arg(argc, argv, &i, 0, 65535, &port);
        else if (!strcmp(a, "--max-seqs")) ok = num_arg(argc, argv, &i, 1, 1 << 20, &max_seqs);
        else if (!strcmp(a, "--max-queue")) ok = num_arg(argc, argv, &i, 1, 1 << 24, &max_queue);
        else if (!strcmp(a, "--ctx")) ok = num_arg(argc, argv, &i, 1, 1 << 30, &ctx);
        else if (!strcmp(a, "--kv-gib")) ok = num_arg(argc, argv, &i, 1.0 / 1024, 1 << 20, &kv_gib);
        else if (!strcmp(a, "--grace")) ok = num_arg(argc, argv, &i, 0, 3600, &grace);
        else if (!strcmp(a, "--max-body")) ok = num_arg(argc, argv, &i, 1, 1ull << 40, &max_body);
        else if (!strcmp(a, "--threads")) ok = num_arg(argc, argv, &i, 1, 1024, &threads);
        else if (!strcmp(a, "--cpu-threads")) {   /* read when the cpu's pool is made (at the load) */
            double ct = 0;
            if ((ok = num_arg(argc, argv, &i, 1, 1024, &ct))) setenv("WICK_NUM_THREADS", argv[i], 1);
        }
        else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) quiet = true;
        else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "wick serve: unknown option '%s' (wick serve --help)\n", a);
            return WICK_EXIT_USAGE;
        } else if (!model) model = a;
        else {
            fprintf(stderr, "wick serve: unexpected argument '%s' (one MODEL)\n", a);
            return WICK_EXIT_USAGE;
        }
        if (!ok) return WICK_EXIT_USAGE;
    }
    if (!api_key) api_key = getenv("WICK_API_KEY");

    /* SIGINT and SIGTERM go to sigwait below: blocked before any thread
     * starts, so that every thread inherits the mask */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    char path[PATH_MAX];
    if (!model || !strcmp(model, "smollm2")) {
        if (wick_default_model(path, sizeof path, "wick serve")) return WICK_EXIT_FAIL;
        model = path;
    }
    char id[256];
    model_id(model, id, sizeof id);
    wk_device *dev = wk_device_open(device ? device : wick_best_device());
    if (!dev) {
        fprintf(stderr, "wick serve: %s\n", wk_last_error());
        return WICK_EXIT_FAIL;
    }
    const wk_llm_options lo = { .act_dtype = dtype, .context = (int64_t)ctx,
                                .progress = quiet ? WK_PROGRESS_OFF : WK_PROGRESS_AUTO };
    wk_llm *m = wk_llm_load(model, dev, &lo);
    wk_engine *e = NULL;
    wks_server *s = NULL;
    int rc = WICK_EXIT_FAIL;
    if (!m) goto out;
    const wk_engine_options eo = { .max_seqs = (int64_t)max_seqs, .kv_bytes = (uint64_t)(kv_gib * 1073741824.0) };
    if (!(e = wk_engine_new(m, &eo)) || wk_engine_start(e) != WK_OK) goto out;
    const wks_config cfg = { .host = host, .port = (int)port, .api_key = api_key, .model_id = id,
                             .max_body = (size_t)max_body, .threads = (int)threads, .log = !quiet,
                             .max_queue = max_queue > 0 ? (int)max_queue : 4 * (max_seqs > 0 ? (int)max_seqs : 64) };
    if (!(s = wks_server_new(m, e, &cfg))) goto out;
    const wk_llm_info *in = wk_llm_get_info(m);
    wk_engine_stats st;
    wk_engine_get_stats(e, &st);
    fprintf(stderr, "wick serve: %s (%s, %s activations, context %lld) on %s; KV cache %lld blocks of %lld (%.2f GiB)\n",
            id, wk_llm_arch_name(in->arch), wk_dtype_name(in->act_dtype), (long long)in->context, wk_device_name(dev),
            (long long)st.blocks_total, (long long)st.block_size,
            (double)st.blocks_total * (double)wk_llm_kv_block_bytes(m, st.block_size) / 1073741824.0);
    fprintf(stderr, "wick serve: listening on http://%s%s%s:%d%s\n", strchr(host, ':') ? "[" : "", host,
            strchr(host, ':') ? "]" : "", wks_server_port(s), api_key && *api_key ? " (API key required)" : "");
    int sig = 0;
    while (sigwait(&stop, &sig) != 0) {
    }
    fprintf(stderr, "wick serve: %s: shutting down (%g s for the requests in flight)\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM", grace);
    wks_server_shutdown(s, grace);
    rc = WICK_EXIT_OK;
out:
    if (rc) fprintf(stderr, "wick serve: %s\n", wk_last_error());
    wk_engine_free(e);   /* before the server: the engine's last events reach it */
    wks_server_free(s);
    wk_llm_free(m);
    wk_device_close(dev);
    if (!rc) fprintf(stderr, "wick serve: stopped\n");
    return rc;
}

#endif
