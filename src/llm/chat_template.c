/* chat_template.c — wk_chat_template_*: a model's own Jinja chat template,
 * parsed once (jinja_parse.c) and rendered per conversation
 * (jinja_eval.c) with the variables transformers' apply_chat_template
 * passes: messages, add_generation_prompt, the special tokens (bos_token,
 * eos_token, unk_token, pad_token), tools=None and documents=None, plus
 * any the caller gives as JSON. The limits that keep a hostile template
 * in bounds are set here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llm_internal.h"
#include "jinja.h"

enum {
    PARSE_MEM = 64 << 20,      /* the tree of a template */
    PARSE_DEPTH = 100,         /* nesting of expressions and blocks */
    RENDER_MEM = 256 << 20,    /* values made while rendering */
    RENDER_DEPTH = 1000,       /* expressions, statements and macro calls */
    DEFAULT_OUTPUT = 16 << 20,
    DEFAULT_STEPS = 10 * 1000 * 1000,
};

struct wk_chat_template {
    jctx c;                    /* the tree's arena */
    jnode *root;
};

wk_chat_template *wk_chat_template_parse(const char *text, size_t len)
{
    if (!text) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_chat_template_parse: the text is NULL");
        return NULL;
    }
    wk_chat_template *t = calloc(1, sizeof *t);
    if (!t) {
        wk_error_set(WK_ERR_MEMORY, "out of memory");
        return NULL;
    }
    t->c.mem_max = PARSE_MEM;
    t->c.depth_max = PARSE_DEPTH;
    t->c.steps_max = INT64_MAX;
    if (setjmp(t->c.jb)) {
        wk_error_set(WK_ERR_UNSUPPORTED, "chat template: %s", t->c.err);
        jarena_free(&t->c);
        free(t);
        return NULL;
    }
    t->root = jparse(&t->c, text, len);
    return t;
}

void wk_chat_template_free(wk_chat_template *t)
{
    if (!t) return;
    jarena_free(&t->c);
    free(t);
}

/* a JSON value as a template value (strings point into the document) */
static jv from_json(jctx *c, const wk_json *j, int depth)
{
    if (depth > WK_JSON_MAX_DEPTH) jfail(c, JERR_LIMIT, 0, "JSON nests too deep");
    switch (wk_json_kind(j)) {
    case WK_JSON_NULL: return jv_none();
    case WK_JSON_BOOL: {
        bool b = false;
        wk_json_bool(j, &b);
        return jv_bool(b);
    }
    case WK_JSON_NUMBER: {
        int64_t i;
        double f = 0;
        if (wk_json_int(j, &i)) return jv_int(i);
        wk_json_number(j, &f);
        return jv_float(f);
    }
    case WK_JSON_STRING: {
        size_t n = 0;
        const char *s = wk_json_string(j, &n);
        return jv_str(s, n);
    }
    case WK_JSON_ARRAY: {
        size_t n = wk_json_count(j);
        jv l = jv_list(c, n, false);
        for (size_t i = 0; i < n; i++) l.u.l->v[i] = from_json(c, wk_json_item(j, i), depth + 1);
        return l;
    }
    case WK_JSON_OBJECT: {
        size_t n = wk_json_count(j);
        jv d = jv_dict(c, n);
        for (size_t i = 0; i < n; i++) {
            size_t kn = 0;
            const char *k = wk_json_key(j, i, &kn);
            jdict_set(c, d.u.d, jv_str(k, kn), from_json(c, wk_json_item(j, i), depth + 1));
        }
        return d;
    }
    }
    return jv_none();
}

/* the renderer's state, on the heap: setjmp leaves locals uncertain */
typedef struct render {
    jrun r;
    jbuf out;
    const wk_chat_template *t;
    const wk_chat_message *msgs;
    int n;
    const wk_chat_template_opts *o;
} render;

/* everything but the error path, which longjmps out of here */
static void run(render *x)
{
    jrun *r = &x->r;
    jctx *c = &r->c;
    const wk_chat_template_opts *o = x->o;
    jscope *g = r->globals = jscope_new(c, NULL);
    jglobals_add(r, g);
    jv list = jv_list(c, (size_t)x->n, false);
    for (int i = 0; i < x->n; i++) {
        jv m = jv_dict(c, 2);
        jdict_set(c, m.u.d, jv_cstr("role"), jv_cstr(x->msgs[i].role));
        jdict_set(c, m.u.d, jv_cstr("content"), jv_cstr(x->msgs[i].content));
        list.u.l->v[i] = m;
    }
    jscope_set(c, g, "messages", list);
    jscope_set(c, g, "tools", jv_none());
    jscope_set(c, g, "documents", jv_none());
    jscope_set(c, g, "add_generation_prompt", jv_bool(o->add_generation_prompt));
    const char *names[] = { "bos_token", "eos_token", "unk_token", "pad_token" };
    const char *vals[] = { o->bos_token, o->eos_token, o->unk_token, o->pad_token };
    for (int i = 0; i < 4; i++)
        if (vals[i]) jscope_set(c, g, names[i], jv_cstr(vals[i]));
    for (size_t i = 0; o->vars && i < wk_json_count(o->vars); i++) {
        size_t kn = 0;
        const char *k = wk_json_key(o->vars, i, &kn);
        jscope_set(c, g, jstrdup(c, k, kn), from_json(c, wk_json_item(o->vars, i), 0));
    }
    jrender(r, x->t->root, &x->out);
}

char *wk_chat_template_render(const wk_chat_template *t, const wk_chat_message *msgs, int n,
                              const wk_chat_template_opts *opts)
{
    if (!t || n < 0 || (n > 0 && !msgs)) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_chat_template_render: %s", !t ? "the template is NULL" : "bad messages");
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content) {
            wk_error_set(WK_ERR_ARGUMENT, "wk_chat_template_render: message %d has no %s", i,
                         msgs[i].role ? "content" : "role");
            return NULL;
        }
    static const wk_chat_template_opts none = { 0 };
    const wk_chat_template_opts *o = opts ? opts : &none;
    if (o->vars && wk_json_kind(o->vars) != WK_JSON_OBJECT) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_chat_template_render: vars must be a JSON object");
        return NULL;
    }
    render *x = calloc(1, sizeof *x);
    if (!x) {
        wk_error_set(WK_ERR_MEMORY, "out of memory");
        return NULL;
    }
    x->t = t;
    x->msgs = msgs;
    x->n = n;
    x->o = o;
    x->r.c.mem_max = o->max_memory ? o->max_memory : RENDER_MEM;
    x->r.c.depth_max = RENDER_DEPTH;
    x->r.c.steps_max = o->max_steps > 0 ? o->max_steps : DEFAULT_STEPS;
    x->r.now = o->now ? (time_t)o->now : time(NULL);
    x->out.max = o->max_output ? o->max_output : DEFAULT_OUTPUT;
    if (setjmp(x->r.c.jb)) {
        if (x->r.c.err_kind == JERR_RAISED)
            wk_error_set(WK_ERR_ARGUMENT, "the chat template refused the conversation: %s", x->r.c.err);
        else
            wk_error_set(WK_ERR_UNSUPPORTED, "chat template: %s", x->r.c.err);
        jarena_free(&x->r.c);
        free(x);
        return NULL;
    }
    run(x);
    char *s = malloc(x->out.n + 1);
    if (s) {
        if (x->out.n) memcpy(s, x->out.p, x->out.n);
        s[x->out.n] = 0;
    } else {
        wk_error_set(WK_ERR_MEMORY, "out of memory");
    }
    jarena_free(&x->r.c);
    free(x);
    return s;
}
