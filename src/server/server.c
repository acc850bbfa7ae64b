/* server.c — `wick serve`'s server (server.h): routing, the API key, the
 * generation requests between the HTTP side (http.c) and the engine, the
 * metrics, and the shutdown.
 *
 * A generation (struct gen) is made by the handler on an HTTP thread:
 * the body parsed (openai.c), the prompt formatted (wk_llm_chat_apply)
 * and tokenized, the request submitted to the engine, unless the engine
 * already has --max-queue sequences waiting (429). From then on the
 * engine's thread writes its answer: each event appends a stream chunk
 * (or, without streaming, text and log-probabilities), and the last one
 * gives the whole response or ends the stream. Nothing there waits on
 * the client (http.c buffers). A client that goes before the end cancels
 * its request (wk_engine_cancel). A gen is held by the engine (until its
 * last event) and by its HTTP request (until the request ends).
 *
 * A request for n > 1 choices is n engine sequences (struct choice). The
 * first is submitted by the handler; the others when the first reports
 * its first token, on the engine's thread: by then the prompt's full KV
 * blocks are in the engine's prefix cache, so they compute only the
 * prompt's last partial block. Choice i samples with seed + i. The
 * answer ends when every choice has; a choice that fails or is cancelled
 * cancels the others and the answer is the error.
 *
 * GET / is the chat page (src/server/web/index.html, compiled in as
 * wks_web_page by tools/embed.sh).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "wick.h"
#include "wick_ext.h"
#include "wick_llm.h"
#include "wick_engine.h"
#include "http.h"
#include "openai.h"
#include "server.h"

/* ---- routes ------------------------------------------------------------------------------ */

enum { R_PAGE, R_HEALTH, R_MODELS, R_METRICS, R_COMPLETIONS, R_CHAT, R_COUNT, R_OTHER = R_COUNT };
static const struct route {
    const char *path;
    bool post, auth;
} routes[R_COUNT] = {
    [R_PAGE] = { "/", false, false },   /* the page asks for the key itself */
    [R_HEALTH] = { "/health", false, false },
    [R_MODELS] = { "/v1/models", false, true },
    [R_METRICS] = { "/metrics", false, false },
    [R_COMPLETIONS] = { "/v1/completions", true, true },
    [R_CHAT] = { "/v1/chat/completions", true, true },
};

static int route_of(const char *path)
{
    for (int i = 0; i < R_COUNT; i++)
        if (!strcmp(path, routes[i].path)) return i;
    return R_OTHER;
}

/* ---- the server ------------------------------------------------------------------------ */

typedef struct gen gen;

/* the web page (generated from src/server/web/index.html) */
extern const unsigned char wks_web_page[];
extern const size_t wks_web_page_len;

#define MAX_COUNTS 128
struct wks_server {
    wk_llm *m;
    wk_engine *e;
    const wk_llm_info *info;
    wks_config cfg;
    char *api_key, *model_id;
    int64_t created;
    http_server *http;
    pthread_mutex_t mu;        /* the generations in flight; stopping */
    gen *active;
    bool stopping, shut;
    int64_t max_queue;         /* waiting sequences at most (429 then)  */
    atomic_int n_active;
    atomic_ullong next;        /* ids and seeds                        */
    /* metrics */
    pthread_mutex_t mmu;
    struct count {
        int route, status;
        int64_t n;
    } counts[MAX_COUNTS];
    int n_counts;
    atomic_llong prompt_tokens, gen_tokens, finished[WK_FINISH_ERROR + 1];
};

/* one of a request's n choices: an engine sequence */
typedef struct choice {
    gen *g;
    int index;
    uint64_t seed;
    atomic_llong eid;          /* the engine's id (0 until submitted)   */
    atomic_bool done;          /* its last event came                   */
    /* the engine's thread only */
    bool started;              /* its first event came                  */
    const char *finish;        /* "stop" or "length" when it ended well */
    char *text;                /* without streaming: the whole text     */
    size_t n_text, cap_text;
    oa_token *toks;            /* streaming: those not yet sent         */
    size_t n_toks, cap_toks;
    int64_t offset;            /* text bytes so far                     */
} choice;

struct gen {
    wks_server *s;
    http_req *hr;
    oa_params p;
    oa_head head;
    char id[48];
    atomic_int refs;
    atomic_bool gone;          /* the client went before the answer     */
    atomic_bool done;          /* every choice ended                    */
    int n;                     /* choices                               */
    choice *ch;
    int32_t *ids;              /* the prompt (for the choices after 0)  */
    int64_t n_ids;
    /* the engine's thread only (left: set before the first submit) */
    int left;                  /* choices not ended                     */
    wk_finish fail;            /* a choice cancelled or failed: the answer is an error */
    char error[256];
    int64_t prompt_tokens, gen_tokens, n_prompt, finished[WK_FINISH_ERROR + 1];
    gen *prev, *next;          /* the server's active list              */
};

static uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t fresh(wks_server *s)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return splitmix(atomic_fetch_add(&s->next, 1) ^ ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec));
}

static void puts_(jw *w, const char *s) { jw_raw(w, s, strlen(s)); }

/* ---- answers ------------------------------------------------------------------------------ */

static void reply_oa_error(http_req *r, const oa_error *e)
{
    size_t n;
    char *body = oa_error_json(e, &n);
    http_respond(r, e->status, "application/json", body ? body : "{}", body ? n : 2);
    free(body);
}

static void reply_error(http_req *r, int status, const char *type, const char *param, const char *code,
                        const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void reply_error(http_req *r, int status, const char *type, const char *param, const char *code,
                        const char *fmt, ...)
{
    oa_error e = { .status = status, .type = type, .param = param, .code = code };
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    reply_oa_error(r, &e);
}

static void reply_json(http_req *r, int status, jw *w)
{
    size_t n;
    char *body = jw_take(w, &n);
    if (body) http_respond(r, status, "application/json", body, n);
    else reply_error(r, 500, "server_error", NULL, NULL, "out of memory");
    free(body);
}

/* ---- generations ----------------------------------------------------------------------- */

static void gen_unref(gen *g)
{
    if (atomic_fetch_sub(&g->refs, 1) != 1) return;
    if (g->hr) http_req_unref(g->hr);
    oa_params_free(&g->p);
    for (int i = 0; g->ch && i < g->n; i++) {
        free(g->ch[i].text);
        free(g->ch[i].toks);
    }
    free(g->ch);
    free(g->ids);
    free(g);
}

static void unregister(gen *g)
{
    wks_server *s = g->s;
    pthread_mutex_lock(&s->mu);
    if (g->prev) g->prev->next = g->next;
    else if (s->active == g) s->active = g->next;
    if (g->next) g->next->prev = g->prev;
    g->prev = g->next = NULL;
    pthread_mutex_unlock(&s->mu);
    atomic_fetch_sub(&s->n_active, 1);
}

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

static void send_chunk(gen *g, jw *w)
{
    size_t n;
    char *t = jw_take(w, &n);
    if (t) http_stream_write(g->hr, t, n);
    free(t);
}

static bool append(choice *c, const char *text, size_t len)
{
    if (!len) return true;
    if (!grow((void **)&c->text, &c->cap_text, c->n_text + len, 1)) return false;
    memcpy(c->text + c->n_text, text, len);
    c->n_text += len;
    return true;
}

/* cancel the choices submitted and not ended (any thread) */
static void cancel_choices(gen *g)
{
    for (int i = 0; i < g->n; i++) {
        const int64_t id = atomic_load(&g->ch[i].eid);
        if (id > 0 && !atomic_load(&g->ch[i].done)) wk_engine_cancel(g->s->e, id);
    }
}

/* the end of a request, when its last choice has ended: its whole
 * answer, or the end of its stream */
static void gen_end(gen *g)
{
    wks_server *s = g->s;
    jw w = { 0 };
    if (g->fail) {
        oa_error e;
        if (g->fail == WK_FINISH_CANCELLED)
            oa_error_set(&e, 503, "server_error", NULL, "cancelled", "the request was cancelled: the server is shutting down");
        else oa_error_set(&e, 500, "server_error", NULL, NULL, "the generation failed: %s", g->error);
        if (g->p.stream) {
            size_t n;
            char *body = oa_error_json(&e, &n);
            if (body) {
                puts_(&w, "data: ");
                jw_raw(&w, body, n);
                puts_(&w, "\n\ndata: [DONE]\n\n");
                send_chunk(g, &w);
            }
            free(body);
            http_stream_end(g->hr);
        } else reply_oa_error(g->hr, &e);
    } else if (g->p.stream) {
        if (g->p.include_usage) oa_write_usage_chunk(&w, &g->head, g->n_prompt, g->gen_tokens);
        puts_(&w, "data: [DONE]\n\n");
        send_chunk(g, &w);
        http_stream_end(g->hr);
    } else {
        oa_choice cs[OA_MAX_N];
        for (int i = 0; i < g->n; i++) {
            const choice *c = &g->ch[i];
            cs[i] = (oa_choice){ .text = c->text ? c->text : "", .len = c->n_text, .toks = c->toks,
                                 .n_toks = c->n_toks, .finish = c->finish };
        }
        oa_write_response(&w, &g->head, cs, g->n, g->n_prompt, g->gen_tokens);
        reply_json(g->hr, 200, &w);
    }
    unregister(g);
    /* counted once it is no longer in flight: a reader of the metrics
     * that sees it finished sees it gone */
    atomic_fetch_add(&s->prompt_tokens, g->prompt_tokens);
    atomic_fetch_add(&s->gen_tokens, g->gen_tokens);
    for (int i = 1; i <= WK_FINISH_ERROR; i++)
        if (g->finished[i]) atomic_fetch_add(&s->finished[i], g->finished[i]);
    atomic_store(&g->done, true);
    gen_unref(g);   /* the engine's */
}

/* a choice's last event */
static void choice_end(choice *c, const wk_engine_event *ev)
{
    gen *g = c->g;
    g->prompt_tokens += ev->prompt_tokens;
    g->gen_tokens += ev->gen_tokens;
    if (ev->prompt_tokens > g->n_prompt) g->n_prompt = ev->prompt_tokens;
    if ((unsigned)ev->finish <= WK_FINISH_ERROR) g->finished[ev->finish]++;
    atomic_store(&c->done, true);
    if (ev->finish == WK_FINISH_CANCELLED || ev->finish == WK_FINISH_ERROR) {
        if (!g->fail || (g->fail == WK_FINISH_CANCELLED && ev->finish == WK_FINISH_ERROR)) {
            g->fail = ev->finish;
            snprintf(g->error, sizeof g->error, "%s", ev->error ? ev->error : "?");
        }
        cancel_choices(g);   /* the answer is an error: the others stop too */
    } else {
        c->finish = ev->finish == WK_FINISH_STOP ? "stop" : "length";
        if (!g->p.stream) append(c, ev->text, ev->len);
        else if (!g->fail) {
            jw w = { 0 };
            if (ev->len || c->n_toks) oa_write_chunk(&w, &g->head, c->index, false, ev->text, ev->len, c->toks, c->n_toks, NULL);
            oa_write_chunk(&w, &g->head, c->index, false, "", 0, NULL, 0, c->finish);
            send_chunk(g, &w);
            c->n_toks = 0;
        }
    }
    if (--g->left == 0) gen_end(g);
}

static void on_event(void *user, const wk_engine_event *ev);

/* choice i into the engine (its id; -1 + error) */
static int64_t submit_choice(gen *g, int i)
{
    choice *c = &g->ch[i];
    wk_sampling sp = g->p.sampling;
    sp.seed = c->seed;
    const wk_request req = { .prompt = g->ids, .n_prompt = g->n_ids, .sampling = sp, .max_tokens = g->p.max_tokens,
                             .stop = g->p.stop, .n_stop = g->p.n_stop, .ignore_eog = g->p.ignore_eos,
                             .logprobs = g->p.logprobs, .top_logprobs = g->p.top_logprobs, .grammar = g->p.grammar,
                             .on_event = on_event, .user = c };
    const int64_t id = wk_engine_submit(g->s->e, &req);
    if (id > 0) atomic_store(&c->eid, id);
    return id;
}

/* On the first choice's first event (the engine's thread): the other
 * choices, whose prompts now find the first's blocks in the prefix cache. */
static void start_others(gen *g, const wk_engine_event *ev)
{
    if (ev->done && (ev->finish == WK_FINISH_CANCELLED || ev->finish == WK_FINISH_ERROR)) {
        for (int i = 1; i < g->n; i++) atomic_store(&g->ch[i].done, true);   /* they never start */
        g->left -= g->n - 1;
        return;
    }
    for (int i = 1; i < g->n; i++) {
        if (submit_choice(g, i) < 0) {   /* (out of memory: the prompt fitted for choice 0) */
            atomic_store(&g->ch[i].done, true);
            if (g->fail != WK_FINISH_ERROR) {
                g->fail = WK_FINISH_ERROR;
                snprintf(g->error, sizeof g->error, "%s", wk_last_error());
            }
            g->finished[WK_FINISH_ERROR]++;
            g->left--;
        } else if (atomic_load(&g->gone)) wk_engine_cancel(g->s->e, atomic_load(&g->ch[i].eid));
    }
    if (g->fail) cancel_choices(g);
}

/* The engine's callback, on its thread: never waits. */
static void on_event(void *user, const wk_engine_event *ev)
{
    choice *c = user;
    gen *g = c->g;
    atomic_store(&c->eid, ev->id);
    if (!c->started) {
        c->started = true;
        if (c->index == 0 && g->n > 1) start_others(g, ev);
    }
    if (ev->done) {
        choice_end(c, ev);
        return;
    }
    if (g->p.logprobs && grow((void **)&c->toks, &c->cap_toks, c->n_toks + 1, sizeof *c->toks)) {
        oa_token *t = &c->toks[c->n_toks++];
        t->id = ev->token;
        t->logprob = (float)ev->logprob;
        t->n_top = ev->n_top < 0 ? 0 : ev->n_top > 20 ? 20 : ev->n_top;
        for (int k = 0; k < t->n_top; k++) {
            t->top_ids[k] = ev->top_ids[k];
            t->top_lps[k] = ev->top_logprobs[k];
        }
        t->offset = c->offset;
    }
    if (g->p.stream) {
        if (ev->len && !g->fail) {   /* held-back text (len 0) waits for a later chunk, with its tokens */
            jw w = { 0 };
            oa_write_chunk(&w, &g->head, c->index, false, ev->text, ev->len, c->toks, c->n_toks, NULL);
            send_chunk(g, &w);
            c->n_toks = 0;
        }
    } else append(c, ev->text, ev->len);
    c->offset += (int64_t)ev->len;
}

/* The HTTP request's end: a client gone before the answer cancels it. */
static void on_close(void *ctx, bool complete)
{
    gen *g = ctx;
    if (!complete && !atomic_load(&g->done)) {
        atomic_store(&g->gone, true);   /* choices submitted after this see it */
        cancel_choices(g);
    }
    gen_unref(g);
}

static void handle_generate(wks_server *s, http_req *r, bool chat)
{
    size_t n;
    const char *body = http_req_body(r, &n);
    gen *g = calloc(1, sizeof *g);
    if (!g) {
        reply_error(r, 500, "server_error", NULL, NULL, "out of memory");
        return;
    }
    g->s = s;
    oa_error err;
    if (oa_parse(body, n, chat, &g->p, &err)) {
        reply_oa_error(r, &err);
        oa_params_free(&g->p);
        free(g);
        return;
    }
    /* the prompt's tokens: a chat in the model's format (its text carries
     * BOS where the template has one), a completion's prompt as it is */
    char *text = chat ? wk_llm_chat_apply(s->m, g->p.msgs, g->p.n_msgs, true) : NULL;
    const char *prompt = chat ? text : g->p.prompt;
    if (!prompt || wk_llm_tokenize(s->m, prompt, strlen(prompt), !chat || !wk_llm_chat_formatted(s->m), &g->ids,
                                   &g->n_ids)) {
        reply_error(r, 400, "invalid_request_error", chat ? "messages" : "prompt", NULL, "%s", wk_last_error());
        goto fail;
    }
    free(text);
    text = NULL;
    if (g->n_ids == 0) {
        reply_error(r, 400, "invalid_request_error", chat ? "messages" : "prompt", NULL, "the prompt is empty");
        goto fail;
    }
    g->n = g->p.n;
    if (!(g->ch = calloc((size_t)g->n, sizeof *g->ch))) {
        reply_error(r, 500, "server_error", NULL, NULL, "out of memory");
        goto fail;
    }
    for (int i = 0; i < g->n; i++) {
        g->ch[i].g = g;
        g->ch[i].index = i;
        g->ch[i].seed = g->p.seeded ? g->p.sampling.seed + (uint64_t)i : fresh(s);
    }
    g->left = g->n;
    snprintf(g->id, sizeof g->id, "%s-%016llx", chat ? "chatcmpl" : "cmpl", (unsigned long long)fresh(s));
    g->head = (oa_head){ .id = g->id, .created = (int64_t)time(NULL), .model = s->model_id, .m = s->m, .p = &g->p };
    g->hr = r;
    http_req_ref(r);
    atomic_init(&g->refs, 2);   /* the engine's and the HTTP request's */
    if (g->p.stream && chat) {   /* the first chunk of each choice: the role (dropped if refused below) */
        jw w = { 0 };
        for (int i = 0; i < g->n; i++) oa_write_chunk(&w, &g->head, i, true, "", 0, NULL, 0, NULL);
        send_chunk(g, &w);
    }
    /* under the lock, so that the requests of the HTTP threads see each
     * other's in the engine's queue */
    pthread_mutex_lock(&s->mu);
    int status = 0;
    wk_engine_stats st = { 0 };
    if (s->stopping) status = 503;
    else {
        wk_engine_get_stats(s->e, &st);
        if (st.waiting >= s->max_queue) status = 429;
        else if (submit_choice(g, 0) < 0) status = 400;   /* a prompt too long for the context, say */
        else {
            g->next = s->active;
            if (s->active) s->active->prev = g;
            s->active = g;
            atomic_fetch_add(&s->n_active, 1);
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (status == 503) {
        reply_error(r, 503, "server_error", NULL, "shutting_down", "the server is shutting down");
        goto fail;
    }
    if (status == 429) {
        http_set_header(r, "Retry-After", "1");
        reply_error(r, 429, "requests", NULL, "rate_limit_exceeded",
                    "the server is busy: %lld sequences are waiting (wick serve --max-queue %lld); try again later",
                    (long long)st.waiting, (long long)s->max_queue);
        goto fail;
    }
    if (status == 400) {
        const char *param = g->n_ids < s->info->context ? "max_tokens" : chat ? "messages" : "prompt";
        reply_error(r, 400, "invalid_request_error", param, "context_length_exceeded", "%s", wk_last_error());
        goto fail;
    }
    http_req_on_close(r, on_close, g);
    if (g->p.stream) http_stream_begin(r, 200, "text/event-stream");
    else http_defer(r);
    return;
fail:
    free(text);
    if (g->hr) http_req_unref(g->hr);
    oa_params_free(&g->p);
    free(g->ch);
    free(g->ids);
    free(g);
}

/* ---- the other endpoints ---------------------------------------------------------------- */

static void handle_models(wks_server *s, http_req *r)
{
    jw w = { 0 };
    jw_obj(&w);
    jw_key(&w, "object");
    jw_str(&w, "list");
    jw_key(&w, "data");
    jw_arr(&w);
    jw_obj(&w);
    jw_key(&w, "id");
    jw_str(&w, s->model_id);
    jw_key(&w, "object");
    jw_str(&w, "model");
    jw_key(&w, "created");
    jw_int(&w, s->created);
    jw_key(&w, "owned_by");
    jw_str(&w, "wick");
    jw_key(&w, "max_model_len");
    jw_int(&w, s->info->context);
    jw_end_obj(&w);
    jw_end_arr(&w);
    jw_end_obj(&w);
    reply_json(r, 200, &w);
}

static void metric(jw *w, const char *name, const char *type, const char *help, int64_t v)
{
    char b[512];
    snprintf(b, sizeof b, "# HELP %s %s\n# TYPE %s %s\n%s %lld\n", name, help, name, type, name, (long long)v);
    puts_(w, b);
}

static void handle_metrics(wks_server *s, http_req *r)
{
    static const char *const reasons[] = { "none", "stop", "length", "cancelled", "error" };
    jw w = { 0 };
    char b[512];
    puts_(&w, "# HELP wick_requests_total HTTP requests answered, by endpoint and status (none: the client went "
              "first).\n# TYPE wick_requests_total counter\n");
    pthread_mutex_lock(&s->mmu);
    for (int i = 0; i < s->n_counts; i++) {
        const struct count *c = &s->counts[i];
        char st[16];
        if (c->status) snprintf(st, sizeof st, "%d", c->status);
        else snprintf(st, sizeof st, "none");
        snprintf(b, sizeof b, "wick_requests_total{endpoint=\"%s\",status=\"%s\"} %lld\n",
                 c->route < R_COUNT ? routes[c->route].path : "other", st, (long long)c->n);
        puts_(&w, b);
    }
    pthread_mutex_unlock(&s->mmu);
    metric(&w, "wick_prompt_tokens_total", "counter", "Prompt tokens of finished generations.",
           atomic_load(&s->prompt_tokens));
    metric(&w, "wick_generation_tokens_total", "counter", "Tokens generated by finished generations.",
           atomic_load(&s->gen_tokens));
    puts_(&w, "# HELP wick_generations_finished_total Generations ended, by reason.\n"
              "# TYPE wick_generations_finished_total counter\n");
    for (int i = 1; i <= WK_FINISH_ERROR; i++) {
        snprintf(b, sizeof b, "wick_generations_finished_total{reason=\"%s\"} %lld\n", reasons[i],
                 (long long)atomic_load(&s->finished[i]));
        puts_(&w, b);
    }
    metric(&w, "wick_generations_in_flight", "gauge", "Generation requests submitted and not yet ended.",
           atomic_load(&s->n_active));
    wk_engine_stats st;
    wk_engine_get_stats(s->e, &st);
    metric(&w, "wick_engine_sequences_waiting", "gauge", "Sequences waiting for room in the engine.", st.waiting);
    metric(&w, "wick_engine_sequences_running", "gauge", "Sequences the engine is running.", st.running);
    metric(&w, "wick_kv_blocks_total", "gauge", "KV cache blocks.", st.blocks_total);
    metric(&w, "wick_kv_blocks_used", "gauge", "KV cache blocks held by sequences.", st.blocks_used);
    metric(&w, "wick_kv_blocks_cached", "gauge", "Free KV cache blocks that keep a prompt prefix.", st.blocks_cached);
    metric(&w, "wick_kv_block_size", "gauge", "Positions per KV cache block.", st.block_size);
    metric(&w, "wick_engine_steps_total", "counter", "Engine steps (forward passes).", st.steps);
    metric(&w, "wick_engine_preemptions_total", "counter", "Sequences preempted for KV blocks.", st.preemptions);
    metric(&w, "wick_prefix_cache_hit_tokens_total", "counter", "Prompt tokens whose KV came from the prefix cache.",
           st.cached_tokens);
    const wk_live_stats live = wk_live_stats_get();
    metric(&w, "wick_tensors_live", "gauge", "Tensor handles alive in the process (wk_live_stats_get).", live.tensors);
    metric(&w, "wick_storages_live", "gauge", "Tensor storages (buffers) alive in the process.", live.storages);
    metric(&w, "wick_storage_bytes_live", "gauge", "Bytes of the tensor storages alive.", live.storage_bytes);
    size_t n;
    char *body = jw_take(&w, &n);
    if (body) http_respond(r, 200, "text/plain; version=0.0.4; charset=utf-8", body, n);
    else reply_error(r, 500, "server_error", NULL, NULL, "out of memory");
    free(body);
}

/* constant time in the key's content */
static bool auth_ok(wks_server *s, http_req *r)
{
    const char *h = http_req_header(r, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7)) return false;
    h += 7;
    while (*h == ' ') h++;
    const size_t a = strlen(h), b = strlen(s->api_key);
    unsigned diff = a != b;
    for (size_t i = 0; i < b; i++) diff |= (unsigned char)s->api_key[i] ^ (unsigned char)(i < a ? h[i] : 0);
    return diff == 0;
}

static void handle(void *user, http_req *r)
{
    wks_server *s = user;
    const char *path = http_req_path(r), *method = http_req_method(r);
    const int ro = route_of(path);
    pthread_mutex_lock(&s->mu);
    const bool stopping = s->stopping;
    pthread_mutex_unlock(&s->mu);
    if (stopping) {
        reply_error(r, 503, "server_error", NULL, "shutting_down", "the server is shutting down");
        return;
    }
    if (ro == R_OTHER) {
        reply_error(r, 404, "invalid_request_error", NULL, "not_found", "no such endpoint: %.200s %.200s", method, path);
        return;
    }
    const struct route *rt = &routes[ro];
    const bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    if (rt->post ? strcmp(method, "POST") != 0 : !get) {
        http_set_header(r, "Allow", rt->post ? "POST" : "GET, HEAD");
        reply_error(r, 405, "invalid_request_error", NULL, "method_not_allowed", "%s takes %s, not %.32s", rt->path,
                    rt->post ? "POST" : "GET", method);
        return;
    }
    if (rt->auth && s->api_key && !auth_ok(s, r)) {
        http_set_header(r, "WWW-Authenticate", "Bearer");
        reply_error(r, 401, "invalid_request_error", NULL, "invalid_api_key",
                    "a missing or wrong API key (send the header Authorization: Bearer KEY)");
        return;
    }
    switch (ro) {
    case R_PAGE:
        http_set_header(r, "Content-Security-Policy",
                        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                        "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
        http_set_header(r, "X-Content-Type-Options", "nosniff");
        http_set_header(r, "Cache-Control", "no-cache");
        http_respond(r, 200, "text/html; charset=utf-8", (const char *)wks_web_page, wks_web_page_len);
        break;
    case R_HEALTH: http_respond(r, 200, "application/json", "{\"status\":\"ok\"}", 15); break;
    case R_MODELS: handle_models(s, r); break;
    case R_METRICS: handle_metrics(s, r); break;
    case R_COMPLETIONS: handle_generate(s, r, false); break;
    case R_CHAT: handle_generate(s, r, true); break;
    default: break;
    }
}

static void on_done(void *user, const char *method, const char *path, int status, bool complete, double seconds)
{
    wks_server *s = user;
    const int ro = route_of(path);
    pthread_mutex_lock(&s->mmu);
    int i = 0;
    while (i < s->n_counts && !(s->counts[i].route == ro && s->counts[i].status == status)) i++;
    if (i == s->n_counts && i < MAX_COUNTS) s->counts[s->n_counts++] = (struct count){ .route = ro, .status = status };
    if (i < MAX_COUNTS) s->counts[i].n++;
    pthread_mutex_unlock(&s->mmu);
    if (s->cfg.log)
        fprintf(stderr, "wick serve: %s %.200s %d%s %.3f s\n", method, path, status, complete ? "" : " (not complete)",
                seconds);
}

/* ---- life ---------------------------------------------------------------------------------- */

wks_server *wks_server_new(wk_llm *m, wk_engine *e, const wks_config *cfg)
{
    if (!m || !e || !cfg) {
        wk_error_set(WK_ERR_ARGUMENT, "wks_server_new: a model, an engine and a configuration are needed");
        return NULL;
    }
    wks_server *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    s->m = m;
    s->e = e;
    s->info = wk_llm_get_info(m);
    s->cfg = *cfg;
    s->created = (int64_t)time(NULL);
    s->max_queue = cfg->max_queue > 0 ? cfg->max_queue : 256;
    s->model_id = strdup(cfg->model_id && *cfg->model_id ? cfg->model_id : s->info->name);
    s->api_key = cfg->api_key && *cfg->api_key ? strdup(cfg->api_key) : NULL;
    if (!s->model_id || (cfg->api_key && *cfg->api_key && !s->api_key)) goto oom;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->mmu, NULL);
    atomic_init(&s->next, (unsigned long long)time(NULL));
    const http_config hc = { .host = cfg->host, .port = cfg->port, .threads = cfg->threads,
                             .max_body = cfg->max_body ? cfg->max_body : (size_t)8 << 20, .timeout_s = cfg->timeout_s,
                             .handler = handle, .on_done = on_done, .user = s };
    if (!(s->http = http_start(&hc))) {
        pthread_mutex_destroy(&s->mu);
        pthread_mutex_destroy(&s->mmu);
        free(s->model_id);
        free(s->api_key);
        free(s);
        return NULL;
    }
    return s;
oom:
    if (s) {
        free(s->model_id);
        free(s->api_key);
        free(s);
    }
    wk_error_set(WK_ERR_MEMORY, "out of memory");
    return NULL;
}

int wks_server_port(const wks_server *s) { return http_port(s->http); }

static void sleep_ms(int ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* cancel every generation in flight (ids taken under the lock, cancelled
 * outside it: the engine's callback takes it) */
static void cancel_all(wks_server *s)
{
    int64_t ids[256];
    int n = 0;
    pthread_mutex_lock(&s->mu);
    for (gen *g = s->active; g && n < 256; g = g->next)
        for (int i = 0; i < g->n && n < 256; i++) {
            const int64_t id = atomic_load(&g->ch[i].eid);
            if (id > 0 && !atomic_load(&g->ch[i].done)) ids[n++] = id;
        }
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < n; i++) wk_engine_cancel(s->e, ids[i]);
}

void wks_server_shutdown(wks_server *s, double grace_s)
{
    if (!s || s->shut) return;
    http_quiesce(s->http);   /* first: whoever sees a 503 finds the door shut too */
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_mutex_unlock(&s->mu);
    const double t0 = mono();
    while (atomic_load(&s->n_active) > 0 && mono() - t0 < grace_s) sleep_ms(20);
    /* what is left is cancelled; its answers end (503, or an error event) */
    const double t1 = mono();
    while (atomic_load(&s->n_active) > 0 && mono() - t1 < 30) {
        cancel_all(s);
        sleep_ms(50);
    }
    /* the answers go out, to clients that read them */
    const double t2 = mono();
    while (http_open_requests(s->http) > 0 && mono() - t2 < 2) sleep_ms(20);
    http_stop(s->http);
    s->http = NULL;
    s->shut = true;
}

void wks_server_free(wks_server *s)
{
    if (!s) return;
    wks_server_shutdown(s, 0);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->mmu);
    free(s->model_id);
    free(s->api_key);
    free(s);
}
