/* engine.c — the batched engine in `import wick` (include/wick_engine.h,
 * docs/engine.md): wick.Engine, many sequences of one wick.Model at once
 * over a paged KV cache, and wick.EngineRequest, what Engine.submit
 * returns: an iterator (and async iterator) of the request's text as it
 * comes, its tokens, and how it ended.
 *
 * The engine steps on a thread of its own (wk_engine_start) that never
 * takes the GIL. A request's callback runs on that thread: it appends the
 * token and text to the request's own buffer (ereq) under the buffer's
 * mutex, signals its condition variable, and writes a byte to its pipe
 * when `async for` made one. The buffer is reference counted: one
 * reference for the Python object, one for the engine until the
 * request's last event, so either may end first. The iterator waits
 * without the GIL (waking every 50 ms for signals) and hands out all the
 * text that came since it last looked; `async for` polls the buffer and
 * waits for the pipe in the event loop (wick.model._engine_anext).
 *
 * Lifetimes: a request keeps its Engine alive, the Engine its Model.
 * Engine.close() (or `with`, or dropping the engine and its requests)
 * frees the C engine, which cancels what is left, and gives the model
 * back; while an engine is open the model's own cache calls refuse.
 * Dropping a request that has not ended cancels it. Submitting, cancelling
 * and the statistics hold the GIL (they are short), so close() cannot
 * free the engine under them.
 */
#include "_wick.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "wick_engine.h"

/* ------------------------------------------------------------------ */
/* a request's buffer, shared with the engine's thread                 */

typedef struct ereq {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;                  /* the Python object's, the engine's      */
    char *text;                /* all the text so far                    */
    size_t len, cap, off;      /* off: handed out by the iterator        */
    int32_t *toks;
    double *lps;               /* [captoks]: each token's logprob (logprobs=True) */
    int64_t ntoks, captoks;
    bool done, oom, want_lp;
    wk_finish finish;
    char *error;               /* WK_FINISH_ERROR: the message           */
    int64_t cached_tokens;
    int pipe_r, pipe_w;        /* -1 until async iteration asks          */
} ereq;

static ereq *ereq_new(void)
{
    ereq *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, &ca);
    pthread_condattr_destroy(&ca);
    r->refs = 2;
    r->pipe_r = r->pipe_w = -1;
    return r;
}

static void ereq_unref(ereq *r)
{
    pthread_mutex_lock(&r->mu);
    const int left = --r->refs;
    pthread_mutex_unlock(&r->mu);
    if (left) return;
    if (r->pipe_r >= 0) close(r->pipe_r);
    if (r->pipe_w >= 0) close(r->pipe_w);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r->text);
    free(r->toks);
    free(r->lps);
    free(r->error);
    free(r);
}

static bool grow(void **p, size_t *cap, size_t need, size_t item)
{
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * item);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

static void wake_async(ereq *r)   /* under r->mu */
{
    if (r->pipe_w < 0) return;
    const char b = 1;
    ssize_t w = write(r->pipe_w, &b, 1);   /* full (EAGAIN): it is readable already */
    (void)w;
}

/* On the engine's thread (or the one freeing it): never the GIL. */
static void on_event(void *user, const wk_engine_event *ev)
{
    ereq *r = user;
    pthread_mutex_lock(&r->mu);
    if (ev->token >= 0 && !r->oom) {
        size_t cap = (size_t)r->captoks;
        size_t cap2 = (size_t)r->captoks;
        if (grow((void **)&r->toks, &cap, (size_t)r->ntoks + 1, sizeof *r->toks) &&
            (!r->want_lp || grow((void **)&r->lps, &cap2, (size_t)r->ntoks + 1, sizeof *r->lps))) {
            r->captoks = (int64_t)(r->want_lp && cap2 < cap ? cap2 : cap);
            if (r->want_lp) r->lps[r->ntoks] = ev->logprob;
            r->toks[r->ntoks++] = ev->token;
        } else r->oom = true;
    }
    if (ev->len && !r->oom) {
        if (grow((void **)&r->text, &r->cap, r->len + ev->len, 1)) {
            memcpy(r->text + r->len, ev->text, ev->len);
            r->len += ev->len;
        } else r->oom = true;
    }
    r->cached_tokens = ev->cached_tokens;
    if (ev->done) {
        r->done = true;
        r->finish = ev->finish;
        const char *msg = NULL;
        if (ev->finish == WK_FINISH_ERROR) msg = ev->error && *ev->error ? ev->error : "the engine's step failed";
        else if (r->oom) msg = "out of memory for the generated text";
        if (msg) {
            r->finish = WK_FINISH_ERROR;
            r->error = strdup(msg);
        }
    }
    if (ev->len || ev->done) {
        pthread_cond_broadcast(&r->cv);
        wake_async(r);
    }
    pthread_mutex_unlock(&r->mu);
    if (ev->done) ereq_unref(r);   /* the engine's reference: no event comes after this one */
}

/* ------------------------------------------------------------------ */
/* Engine                                                              */

typedef struct {
    PyObject_HEAD
    wk_engine *e;              /* NULL once closed                       */
    PyObject *model;           /* the Model, claimed; NULL once closed   */
} EngineObject;

static PyTypeObject Engine_Type;

typedef struct {
    PyObject_HEAD
    ereq *r;
    EngineObject *engine;      /* owned                                   */
    int64_t id;
    int64_t prompt_tokens;
    bool raised;               /* the iterator raised the error          */
} RequestObject;

static PyTypeObject Request_Type;

static void engine_close(EngineObject *self)
{
    wk_engine *e = self->e;
    PyObject *model = self->model;
    self->e = NULL;
    self->model = NULL;
    if (e) {
        /* joins the engine's thread (which never takes the GIL) and ends
           every request left with a cancelled event */
        Py_BEGIN_ALLOW_THREADS wk_engine_free(e);
        Py_END_ALLOW_THREADS
    }
    if (model) {
        wkpy_model_engine_release(model);
        Py_DECREF(model);
    }
}

static int engine_open(EngineObject *self)
{
    if (self->e) return 0;
    PyErr_SetString(PyExc_ValueError, "the engine is closed");
    return -1;
}

static PyObject *Engine_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "model", "max_seqs", "max_batch_tokens", "prefill_chunk", "block_size", "n_blocks",
                              "prefix_cache", "kv_bytes", NULL };
    PyObject *model;
    long long max_seqs = 0, max_batch = 0, chunk = 0, bs = 0, nb = 0;
    unsigned long long kv_bytes = 0;
    int prefix = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|LLLLLpK:Engine", kwlist, &model, &max_seqs, &max_batch, &chunk, &bs,
                                     &nb, &prefix, &kv_bytes))
        return NULL;
    if (max_seqs < 0 || max_batch < 0 || chunk < 0 || bs < 0 || nb < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "Engine: max_seqs, max_batch_tokens, prefill_chunk, block_size and n_blocks are >= 0 (0: the "
                        "default)");
        return NULL;
    }
    EngineObject *self = (EngineObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    struct wk_llm *m = wkpy_model_engine_claim(model);
    if (!m) {
        Py_DECREF(self);
        return NULL;
    }
    Py_INCREF(model);
    self->model = model;   /* claimed: engine_close gives it back */
    const wk_engine_options o = { .max_seqs = max_seqs, .max_batch_tokens = max_batch, .prefill_chunk = chunk,
                                  .block_size = bs, .n_blocks = nb, .kv_bytes = kv_bytes, .no_prefix_cache = !prefix };
    wk_engine *e;
    wk_status st = WK_OK;
    char err[1024] = "";
    Py_BEGIN_ALLOW_THREADS e = wk_engine_new(m, &o);
    if (e && (st = wk_engine_start(e)) != WK_OK) {
        snprintf(err, sizeof err, "%s", wk_last_error());
        wk_engine_free(e);
        e = NULL;
    } else if (!e) {
        st = wk_last_status();
        snprintf(err, sizeof err, "%s", wk_last_error());
    }
    Py_END_ALLOW_THREADS
    if (!e) {
        PyErr_SetString(exc_for(st != WK_OK ? st : WK_ERR_MEMORY), err[0] ? err : "wk_engine_new failed");
        Py_DECREF(self);   /* gives the model back */
        return NULL;
    }
    self->e = e;
    return (PyObject *)self;
}

static void Engine_dealloc(EngineObject *self)
{
    engine_close(self);   /* no request is left: each holds a reference */
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Engine_close(EngineObject *self, PyObject *unused)
{
    (void)unused;
    engine_close(self);
    Py_RETURN_NONE;
}

static PyObject *Engine_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (engine_open((EngineObject *)self) < 0) return NULL;
    Py_INCREF(self);
    return self;
}

static PyObject *Engine_exit(EngineObject *self, PyObject *args)
{
    (void)args;
    engine_close(self);
    Py_RETURN_NONE;
}

/* stop: None, a str, or a sequence of str -> a tuple of str (*out), the
 * UTF-8 pointers in *ptrs (malloc'd; owned by the tuple's items) */
static int stop_arg(PyObject *o, PyObject **out, const char ***ptrs, int *n)
{
    *out = NULL;
    *ptrs = NULL;
    *n = 0;
    if (o == Py_None) return 0;
    PyObject *t = PyUnicode_Check(o) ? PyTuple_Pack(1, o) : PySequence_Tuple(o);
    if (!t) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "stop: a str or a sequence of str");
        }
        return -1;
    }
    const Py_ssize_t k = PyTuple_GET_SIZE(t);
    if (k > 1 << 20) {
        Py_DECREF(t);
        PyErr_SetString(PyExc_ValueError, "stop: too many strings");
        return -1;
    }
    const char **p = malloc((size_t)(k ? k : 1) * sizeof *p);
    if (!p) {
        Py_DECREF(t);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *s = PyTuple_GET_ITEM(t, i);
        p[i] = PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : NULL;
        if (!p[i]) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "stop: a str or a sequence of str");
            free(p);
            Py_DECREF(t);
            return -1;
        }
    }
    *out = t;
    *ptrs = p;
    *n = (int)k;
    return 0;
}

static PyObject *Engine_submit(EngineObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "prompt", "max_tokens", "temperature", "top_k", "top_p", "min_p", "repetition_penalty",
                              "repeat_last_n", "seed", "stop", "ignore_eos", "chat", "system", "presence_penalty",
                              "frequency_penalty", "logprobs", "json_schema", NULL };
    PyObject *prompt, *stop_o = Py_None, *max_o = Py_None, *seed_o = NULL, *schema_o = Py_None;
    wk_sampling s = wk_sampling_greedy();
    long long top_k = 0, last_n = 0, max_tokens = 0;
    int ignore = 0, chat = 0, want_lp = 0;
    const char *system = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$OdLdddLOOppzddpO:submit", kwlist, &prompt, &max_o, &s.temperature,
                                     &top_k, &s.top_p, &s.min_p, &s.repeat_penalty, &last_n, &seed_o, &stop_o, &ignore,
                                     &chat, &system, &s.presence_penalty, &s.frequency_penalty, &want_lp, &schema_o))
        return NULL;
    if (engine_open(self) < 0) return NULL;
    if (max_o != Py_None) {   /* None or 0: to the end of the context */
        max_tokens = PyLong_AsLongLong(max_o);
        if (max_tokens == -1 && PyErr_Occurred()) return NULL;
    }
    if (wkpy_sampling_args("submit", &s, max_tokens, top_k, last_n, seed_o) < 0) return NULL;
    /* json_schema: the reply constrained to a JSON schema (str: its JSON
       text; another object: json.dumps of it) */
    wk_grammar *grammar = NULL;
    if (schema_o != Py_None) {
        PyObject *text = NULL;
        if (PyUnicode_Check(schema_o)) {
            text = schema_o;
            Py_INCREF(text);
        } else {
            PyObject *json = PyImport_ImportModule("json");
            text = json ? PyObject_CallMethod(json, "dumps", "O", schema_o) : NULL;
            Py_XDECREF(json);
        }
        Py_ssize_t len = 0;
        const char *t = text ? PyUnicode_AsUTF8AndSize(text, &len) : NULL;
        if (t && !(grammar = wk_grammar_from_json_schema(t, (size_t)len))) raise_wk();
        Py_XDECREF(text);
        if (!grammar) return NULL;
    }
    PyObject *stops;
    const char **stop_p;
    int n_stop;
    if (stop_arg(stop_o, &stops, &stop_p, &n_stop) < 0) {
        wk_grammar_release(grammar);
        return NULL;
    }
    /* the ids (tokenizing lets the GIL go: the engine may close meanwhile,
       the model stays alive through this reference) */
    PyObject *model = self->model;
    Py_INCREF(model);
    int32_t *ids = NULL;
    int64_t n = 0;
    const int got = wkpy_prompt_ids(model, prompt, chat, system, &ids, &n);
    Py_DECREF(model);
    if (got < 0 || engine_open(self) < 0) {
        free(ids);
        free(stop_p);
        Py_XDECREF(stops);
        wk_grammar_release(grammar);
        return NULL;
    }
    RequestObject *o = PyObject_New(RequestObject, &Request_Type);
    ereq *r = o ? ereq_new() : NULL;
    if (!r) {
        if (o) {
            o->r = NULL;
            o->engine = NULL;
            Py_DECREF(o);
            PyErr_NoMemory();
        }
        free(ids);
        free(stop_p);
        Py_XDECREF(stops);
        wk_grammar_release(grammar);
        return NULL;
    }
    o->r = r;
    r->want_lp = want_lp != 0;
    o->raised = false;
    o->prompt_tokens = n;
    Py_INCREF(self);
    o->engine = self;
    const wk_request req = { .prompt = ids, .n_prompt = n, .sampling = s, .max_tokens = max_tokens,
                             .stop = n_stop ? stop_p : NULL, .n_stop = n_stop, .ignore_eog = ignore != 0,
                             .logprobs = want_lp != 0, .grammar = grammar, .on_event = on_event, .user = r };
    /* with the GIL: close() cannot free the engine meanwhile; the event
       may come (even the last one) before submit returns */
    o->id = wk_engine_submit(self->e, &req);
    if (o->id < 0) raise_wk();
    wk_grammar_release(grammar);   /* the engine holds its own reference */
    free(ids);
    free(stop_p);
    Py_XDECREF(stops);
    if (o->id < 0) {
        pthread_mutex_lock(&r->mu);
        r->done = true;   /* nothing to cancel when it goes */
        pthread_mutex_unlock(&r->mu);
        ereq_unref(r);    /* the engine's: no event will come */
        Py_DECREF(o);
        return NULL;
    }
    return (PyObject *)o;
}

static PyObject *Engine_stats(EngineObject *self, PyObject *unused)
{
    (void)unused;
    if (engine_open(self) < 0) return NULL;
    wk_engine_stats s;
    wk_engine_get_stats(self->e, &s);
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L}", "waiting", (long long)s.waiting, "running",
                         (long long)s.running, "blocks_total", (long long)s.blocks_total, "blocks_used",
                         (long long)s.blocks_used, "blocks_cached", (long long)s.blocks_cached, "block_size",
                         (long long)s.block_size, "steps", (long long)s.steps, "preemptions", (long long)s.preemptions,
                         "prompt_tokens", (long long)s.prompt_tokens, "gen_tokens", (long long)s.gen_tokens,
                         "cached_tokens", (long long)s.cached_tokens, "finished", (long long)s.finished);
}

static PyObject *Engine_get_model(EngineObject *self, void *c)
{
    (void)c;
    if (!self->model) Py_RETURN_NONE;
    Py_INCREF(self->model);
    return self->model;
}

static PyObject *Engine_get_closed(EngineObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->e == NULL);
}

static PyMethodDef Engine_methods[] = {
    { "submit", (PyCFunction)(void (*)(void))Engine_submit, METH_VARARGS | METH_KEYWORDS,
      "submit(prompt, *, max_tokens=0, temperature=0.0, top_k=0, top_p=1.0, min_p=0.0, repetition_penalty=1.0, "
      "repeat_last_n=64, seed=0, stop=None, ignore_eos=False, chat=False, system=None, presence_penalty=0.0, "
      "frequency_penalty=0.0, logprobs=False, json_schema=None) -> EngineRequest: queue a request (from any thread). "
      "prompt as Model.generate takes it: text, a list of chat messages, or token ids. Greedy unless temperature > 0; "
      "max_tokens 0 or None: to the end of the context. json_schema (a dict, or its JSON text): the reply is JSON "
      "valid under it (constrained sampling; {'type': 'object'} is JSON mode); a schema wick cannot enforce raises "
      "ValueError" },
    { "stats", (PyCFunction)Engine_stats, METH_NOARGS,
      "stats() -> dict: waiting, running, blocks_total, blocks_used, blocks_cached, block_size, steps, preemptions, "
      "prompt_tokens, gen_tokens, cached_tokens, finished" },
    { "close", (PyCFunction)Engine_close, METH_NOARGS,
      "close(): cancel what is left (those requests end 'cancelled'), free the KV cache and give the model back" },
    { "__enter__", (PyCFunction)Engine_enter, METH_NOARGS, NULL },
    { "__exit__", (PyCFunction)Engine_exit, METH_VARARGS, NULL },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef Engine_getset[] = {
    { "model", (getter)Engine_get_model, NULL, "the Model it runs on (None once closed)", NULL },
    { "closed", (getter)Engine_get_closed, NULL, "whether close() was called", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject Engine_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.Engine",
    .tp_basicsize = sizeof(EngineObject),
    .tp_dealloc = (destructor)Engine_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Engine(model, max_seqs=0, max_batch_tokens=0, prefill_chunk=0, block_size=0, n_blocks=0, "
              "prefix_cache=True, kv_bytes=0): the batched engine over a Model: requests from any thread run together "
              "(continuous batching over a paged KV cache, prefix caching) on a thread of the engine's own. 0: the "
              "defaults (64 sequences, 512 tokens a step, blocks of 16, room for max_seqs sequences of the context). "
              "While it is open the model's own generate/eval/logits/rewind/close refuse",
    .tp_methods = Engine_methods,
    .tp_getset = Engine_getset,
    .tp_new = Engine_new,
};

/* ------------------------------------------------------------------ */
/* EngineRequest                                                       */

static void Request_dealloc(RequestObject *self)
{
    ereq *r = self->r;
    if (r) {
        pthread_mutex_lock(&r->mu);
        const bool done = r->done;
        pthread_mutex_unlock(&r->mu);
        if (!done && self->engine && self->engine->e)
            (void)wk_engine_cancel(self->engine->e, self->id);   /* dropped: nobody reads it */
        ereq_unref(r);
    }
    Py_XDECREF(self->engine);   /* (may close the engine: the last reference) */
    PyObject_Del(self);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Wait without the GIL until the request has text not handed out
 * (pieces) or has ended (else only until it has ended), at most timeout
 * seconds (< 0: no limit), waking every 50 ms for signals. 1: ready, 0:
 * the time ran out, -1: an exception (a signal's). */
static int wait_for(ereq *r, bool pieces, double timeout)
{
    const double end = timeout >= 0 ? now_s() + timeout : 0;
    for (;;) {
        double slice = 0.05;
        if (timeout >= 0) {
            const double left = end - now_s();
            slice = left < slice ? left : slice;
        }
        bool ready;
        Py_BEGIN_ALLOW_THREADS struct timespec dl;
        clock_gettime(CLOCK_MONOTONIC, &dl);
        if (slice > 0) {
            const long long ns = (long long)dl.tv_nsec + (long long)(slice * 1e9);
            dl.tv_sec += (time_t)(ns / 1000000000);
            dl.tv_nsec = (long)(ns % 1000000000);
        }
        pthread_mutex_lock(&r->mu);
        while (!r->done && !(pieces && r->off < r->len) && slice > 0)
            if (pthread_cond_timedwait(&r->cv, &r->mu, &dl) == ETIMEDOUT) break;
        ready = r->done || (pieces && r->off < r->len);
        pthread_mutex_unlock(&r->mu);
        Py_END_ALLOW_THREADS
        if (ready) return 1;
        if (PyErr_CheckSignals() < 0) return -1;
        if (timeout >= 0 && now_s() >= end) return 0;
    }
}

/* An ended request's error as a RuntimeError: 1 when it failed (an
 * exception is set), 0 when it did not. */
static int raise_failed(RequestObject *self)
{
    ereq *r = self->r;
    pthread_mutex_lock(&r->mu);
    const bool err = r->done && r->finish == WK_FINISH_ERROR;
    PyObject *msg = err ? PyUnicode_FromString(r->error ? r->error : "the request failed") : NULL;
    pthread_mutex_unlock(&r->mu);
    if (!err) return 0;
    if (msg) {
        PyErr_SetObject(PyExc_RuntimeError, msg);
        Py_DECREF(msg);
    }
    return 1;
}

/* The text that came since the last look, or NULL: *ended says whether
 * the request has ended with everything handed out. */
static PyObject *take_piece(RequestObject *self, bool *ended)
{
    ereq *r = self->r;
    PyObject *piece = NULL;
    pthread_mutex_lock(&r->mu);
    *ended = false;
    if (r->off < r->len) {
        piece = PyUnicode_DecodeUTF8(r->text + r->off, (Py_ssize_t)(r->len - r->off), "replace");
        if (piece) r->off = r->len;
    } else *ended = r->done;
    pthread_mutex_unlock(&r->mu);
    return piece;
}

/* The end of iteration: the error once (-1), else (0) StopIteration. */
static int iteration_end(RequestObject *self)
{
    if (self->raised) return 0;
    self->raised = true;
    return raise_failed(self) ? -1 : 0;
}

static PyObject *Request_iter(PyObject *self)
{
    Py_INCREF(self);
    return self;
}

static PyObject *Request_next(RequestObject *self)
{
    for (;;) {
        bool ended;
        PyObject *piece = take_piece(self, &ended);
        if (piece || PyErr_Occurred()) return piece;
        if (ended) {
            (void)iteration_end(self);
            return NULL;   /* the error, or StopIteration */
        }
        if (wait_for(self->r, true, -1) < 0) return NULL;
    }
}

static void drain_pipe(ereq *r)
{
    pthread_mutex_lock(&r->mu);
    const int fd = r->pipe_r;
    pthread_mutex_unlock(&r->mu);
    if (fd < 0) return;
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0) {
    }
}

static PyObject *Request_poll(RequestObject *self, PyObject *unused)
{
    (void)unused;
    drain_pipe(self->r);   /* before looking: a later event writes again */
    bool ended;
    PyObject *piece = take_piece(self, &ended);
    if (piece || PyErr_Occurred()) return piece;
    if (ended) {
        if (iteration_end(self) < 0) return NULL;
        Py_RETURN_NONE;
    }
    return PyUnicode_FromStringAndSize("", 0);
}

static int set_flags(int fd)
{
    const int fl = fcntl(fd, F_GETFL);
    return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0 ? -1 : 0;
}

static PyObject *Request_fileno(RequestObject *self, PyObject *unused)
{
    (void)unused;
    ereq *r = self->r;
    pthread_mutex_lock(&r->mu);
    if (r->pipe_r < 0) {
        int fds[2];
        if (pipe(fds) < 0) {
            const int err = errno;
            pthread_mutex_unlock(&r->mu);
            errno = err;
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        if (set_flags(fds[0]) < 0 || set_flags(fds[1]) < 0) {
            const int err = errno;
            close(fds[0]);
            close(fds[1]);
            pthread_mutex_unlock(&r->mu);
            errno = err;
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        r->pipe_r = fds[0];
        r->pipe_w = fds[1];
        if (r->off < r->len || r->done) wake_async(r);   /* what came before the pipe */
    }
    const int fd = r->pipe_r;
    pthread_mutex_unlock(&r->mu);
    return PyLong_FromLong(fd);
}

static PyObject *Request_anext(PyObject *self)
{
    PyObject *mod = PyImport_ImportModule("wick.model");
    if (!mod) return NULL;
    PyObject *f = PyObject_GetAttrString(mod, "_engine_anext");
    Py_DECREF(mod);
    if (!f) return NULL;
    PyObject *co = PyObject_CallFunctionObjArgs(f, self, NULL);
    Py_DECREF(f);
    return co;
}

static int timeout_arg(PyObject *o, double *t)
{
    *t = -1;
    if (!o || o == Py_None) return 0;
    *t = PyFloat_AsDouble(o);
    if (*t == -1 && PyErr_Occurred()) return -1;
    if (!(*t >= 0)) {
        PyErr_SetString(PyExc_ValueError, "timeout must be >= 0 or None");
        return -1;
    }
    return 0;
}

static PyObject *Request_wait(RequestObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "timeout", NULL };
    PyObject *to = Py_None;
    double t;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:wait", kwlist, &to) || timeout_arg(to, &t) < 0) return NULL;
    const int got = wait_for(self->r, false, t);
    if (got < 0) return NULL;
    return PyBool_FromLong(got);
}

static PyObject *whole_text(ereq *r)
{
    pthread_mutex_lock(&r->mu);
    PyObject *s = PyUnicode_DecodeUTF8(r->text ? r->text : "", (Py_ssize_t)r->len, "replace");
    pthread_mutex_unlock(&r->mu);
    return s;
}

static PyObject *Request_result(RequestObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "timeout", NULL };
    PyObject *to = Py_None;
    double t;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:result", kwlist, &to) || timeout_arg(to, &t) < 0) return NULL;
    const int got = wait_for(self->r, false, t);
    if (got < 0) return NULL;
    if (got == 0) {
        PyErr_Format(PyExc_TimeoutError, "the request did not end within %g s", t);
        return NULL;
    }
    if (raise_failed(self)) return NULL;
    return whole_text(self->r);
}

static PyObject *Request_cancel(RequestObject *self, PyObject *unused)
{
    (void)unused;
    ereq *r = self->r;
    pthread_mutex_lock(&r->mu);
    const bool done = r->done;
    pthread_mutex_unlock(&r->mu);
    /* (a closed engine cancelled it already; one that ended meanwhile is
       an unknown id to the engine, which is fine) */
    if (!done && self->engine->e) (void)wk_engine_cancel(self->engine->e, self->id);
    Py_RETURN_NONE;
}

static PyObject *Request_get_logprobs(RequestObject *self, void *c)
{
    (void)c;
    ereq *r = self->r;
    if (!r->want_lp) Py_RETURN_NONE;
    pthread_mutex_lock(&r->mu);
    PyObject *l = PyList_New((Py_ssize_t)r->ntoks);
    for (int64_t i = 0; l && i < r->ntoks; i++) {
        PyObject *x = PyFloat_FromDouble(r->lps[i]);
        if (!x) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, x);
    }
    pthread_mutex_unlock(&r->mu);
    return l;
}

static PyObject *Request_get_tokens(RequestObject *self, void *c)
{
    (void)c;
    ereq *r = self->r;
    pthread_mutex_lock(&r->mu);
    PyObject *l = PyList_New((Py_ssize_t)r->ntoks);
    for (int64_t i = 0; l && i < r->ntoks; i++) {
        PyObject *x = PyLong_FromLong(r->toks[i]);
        if (!x) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, x);
    }
    pthread_mutex_unlock(&r->mu);
    return l;
}

static PyObject *Request_get_text(RequestObject *self, void *c)
{
    (void)c;
    return whole_text(self->r);
}

static PyObject *Request_get_finish_reason(RequestObject *self, void *c)
{
    (void)c;
    ereq *r = self->r;
    pthread_mutex_lock(&r->mu);
    const bool done = r->done;
    const wk_finish f = r->finish;
    pthread_mutex_unlock(&r->mu);
    if (!done) Py_RETURN_NONE;
    return PyUnicode_FromString(wk_finish_name(f));
}

static PyObject *Request_get_error(RequestObject *self, void *c)
{
    (void)c;
    ereq *r = self->r;
    pthread_mutex_lock(&r->mu);
    PyObject *s = r->done && r->error ? PyUnicode_FromString(r->error) : NULL;
    pthread_mutex_unlock(&r->mu);
    if (s || PyErr_Occurred()) return s;
    Py_RETURN_NONE;
}

static PyObject *Request_get_done(RequestObject *self, void *c)
{
    (void)c;
    pthread_mutex_lock(&self->r->mu);
    const bool done = self->r->done;
    pthread_mutex_unlock(&self->r->mu);
    return PyBool_FromLong(done);
}

static PyObject *Request_get_cached_tokens(RequestObject *self, void *c)
{
    (void)c;
    pthread_mutex_lock(&self->r->mu);
    const int64_t n = self->r->cached_tokens;
    pthread_mutex_unlock(&self->r->mu);
    return PyLong_FromLongLong(n);
}

static PyObject *Request_get_prompt_tokens(RequestObject *self, void *c)
{
    (void)c;
    return PyLong_FromLongLong(self->prompt_tokens);
}

static PyObject *Request_get_id(RequestObject *self, void *c)
{
    (void)c;
    return PyLong_FromLongLong(self->id);
}

static PyObject *Request_get_engine(RequestObject *self, void *c)
{
    (void)c;
    Py_INCREF(self->engine);
    return (PyObject *)self->engine;
}

static PyObject *Request_repr(RequestObject *self)
{
    pthread_mutex_lock(&self->r->mu);
    const bool done = self->r->done;
    const wk_finish f = self->r->finish;
    const int64_t n = self->r->ntoks;
    pthread_mutex_unlock(&self->r->mu);
    return PyUnicode_FromFormat("<wick.EngineRequest id=%lld %s, %lld tokens>", (long long)self->id,
                                done ? wk_finish_name(f) : "running", (long long)n);
}

static PyMethodDef Request_methods[] = {
    { "result", (PyCFunction)(void (*)(void))Request_result, METH_VARARGS | METH_KEYWORDS,
      "result(timeout=None) -> str: wait for the end and return the whole text (what the iterator handed out too); "
      "RuntimeError with the engine's message when the request failed, TimeoutError when timeout seconds pass" },
    { "wait", (PyCFunction)(void (*)(void))Request_wait, METH_VARARGS | METH_KEYWORDS,
      "wait(timeout=None) -> bool: wait for the end, at most timeout seconds; whether it ended" },
    { "cancel", (PyCFunction)Request_cancel, METH_NOARGS,
      "cancel(): end the request at the engine's next step (finish_reason 'cancelled'); nothing once it has ended" },
    { "_poll", (PyCFunction)Request_poll, METH_NOARGS,
      "_poll() -> str | None: the text that came since the last look ('' when none yet), None at the end (the "
      "request's error raised instead, once); never waits" },
    { "_fileno", (PyCFunction)Request_fileno, METH_NOARGS,
      "_fileno() -> int: a file descriptor that becomes readable when text comes or the request ends (async for)" },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef Request_getset[] = {
    { "id", (getter)Request_get_id, NULL, "the engine's id of the request", NULL },
    { "engine", (getter)Request_get_engine, NULL, "the Engine it was submitted to", NULL },
    { "tokens", (getter)Request_get_tokens, NULL,
      "the ids generated so far (end-of-generation tokens not included)", NULL },
    { "logprobs", (getter)Request_get_logprobs, NULL,
      "with logprobs=True, each generated token's log-probability under the model's distribution (before penalties "
      "and temperature); else None", NULL },
    { "text", (getter)Request_get_text, NULL, "the text generated so far (without what is held back)", NULL },
    { "done", (getter)Request_get_done, NULL, "whether the request has ended", NULL },
    { "finish_reason", (getter)Request_get_finish_reason, NULL,
      "None while running, then 'stop' (an end token or a stop string), 'length' (max_tokens or the context's "
      "end), 'cancelled' or 'error'", NULL },
    { "error", (getter)Request_get_error, NULL, "the message when finish_reason is 'error', else None", NULL },
    { "prompt_tokens", (getter)Request_get_prompt_tokens, NULL, "the prompt's tokens", NULL },
    { "cached_tokens", (getter)Request_get_cached_tokens, NULL,
      "the prompt's tokens whose KV came from the prefix cache (known once it has started)", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyAsyncMethods Request_as_async = {
    .am_aiter = Request_iter,
    .am_anext = Request_anext,
};

static PyTypeObject Request_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.EngineRequest",
    .tp_basicsize = sizeof(RequestObject),
    .tp_dealloc = (destructor)Request_dealloc,
    .tp_repr = (reprfunc)Request_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A request of an Engine (Engine.submit): an iterator, and an async iterator, of str pieces of the text "
              "as the engine generates it (whole UTF-8 characters; text that may begin a stop string held back); "
              "an error of the engine is raised at the end. Dropping it before it ends cancels it",
    .tp_iter = Request_iter,
    .tp_iternext = (iternextfunc)Request_next,
    .tp_as_async = &Request_as_async,
    .tp_methods = Request_methods,
    .tp_getset = Request_getset,
};

int wkpy_engine_init(PyObject *module)
{
    if (wkpy_add_type(module, "Engine", &Engine_Type) < 0) return -1;
    return wkpy_add_type(module, "EngineRequest", &Request_Type);
}
