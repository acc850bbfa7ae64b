/* model.c — the model layer of `import wick`: language models
 * (include/wick_llm.h: loading, the KV cache, logits, chat formats, and
 * generation as an iterator that yields text as it comes) and tokenizers
 * (include/wick_tokenizer.h: encoding, decoding, streaming decoding).
 *
 * Types added to wick._wick: Model, Generation, Tokenizer, TokenStream;
 * functions: chat_apply, chat_format_detect.
 *
 * Generation runs wk_llm_generate (the C loop itself: sampling, end
 * tokens, stop strings and whole UTF-8 characters exactly as `wick run`)
 * on a thread of its own without the GIL, handing each piece of text to
 * the iterator: the thread waits while a piece is not taken, so it runs
 * at most one token ahead of the consumer; closing the iterator (or
 * dropping it, or starting another call on its model) makes the callback
 * say stop and joins the thread. Every other long call (load, eval,
 * tokenize, decode) runs with the GIL released; a model takes one call at
 * a time (another thread's call meanwhile is a RuntimeError). While a
 * wick.Engine (engine.c) runs on a model, the model's own calls on its
 * cache (generate, eval, logits, rewind) and close() refuse.
 *
 * Errors: the model layer's message (wk_model_last_error, read on the
 * thread that failed) as the exception of its status.
 */
#include "_wick.h"
#include "wick_comm.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "wick_llm.h"
#include <math.h>
#include "wick_tokenizer.h"

#define CALLX(T, expr)                                                                                 \
    __extension__({                                                                                    \
        T r_;                                                                                          \
        Py_BEGIN_ALLOW_THREADS r_ = (expr);                                                            \
        Py_END_ALLOW_THREADS r_;                                                                       \
    })

static PyObject *raise_model(void)
{
    if (PyErr_Occurred()) return NULL;
    const char *m = wk_last_error();
    PyErr_SetString(exc_for(wk_last_status()), m && *m ? m : "wick model call failed");
    return NULL;
}

static PyObject *raise_tok(void)
{
    if (PyErr_Occurred()) return NULL;
    const char *m = wk_last_error();
    PyErr_SetString(exc_for(wk_last_status()), m && *m ? m : "wick tokenizer call failed");
    return NULL;
}

/* text: str (as UTF-8) or bytes-like; *keep holds what owns the bytes */
static int text_arg(PyObject *o, const char **p, Py_ssize_t *n, PyObject **keep)
{
    *keep = NULL;
    if (PyUnicode_Check(o)) {
        *p = PyUnicode_AsUTF8AndSize(o, n);
        if (!*p) return -1;
        Py_INCREF(o);
        *keep = o;
        return 0;
    }
    if (PyBytes_Check(o)) {
        *p = PyBytes_AS_STRING(o);
        *n = PyBytes_GET_SIZE(o);
        Py_INCREF(o);
        *keep = o;
        return 0;
    }
    if (PyByteArray_Check(o)) {   /* a copy: a bytearray may change size */
        PyObject *b = PyBytes_FromObject(o);
        if (!b) return -1;
        *p = PyBytes_AS_STRING(b);
        *n = PyBytes_GET_SIZE(b);
        *keep = b;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "text must be str or bytes, not %.100s", Py_TYPE(o)->tp_name);
    return -1;
}

/* a sequence of token ids -> malloc'd int32 array */
static int ids_arg(PyObject *o, int32_t **ids, int64_t *n)
{
    *ids = NULL;
    *n = 0;
    if (PyUnicode_Check(o) || PyBytes_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "token ids must be a sequence of ints");
        return -1;
    }
    PyObject *seq = PySequence_Fast(o, "token ids must be a sequence of ints");
    if (!seq) return -1;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    int32_t *v = malloc((size_t)(k ? k : 1) * sizeof *v);
    if (!v) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
        long long x = PyLong_AsLongLong(it);
        if (x == -1 && PyErr_Occurred()) {
            free(v);
            Py_DECREF(seq);
            return -1;
        }
        if (x < 0 || x > INT32_MAX) {
            PyErr_Format(PyExc_IndexError, "token id %lld is out of range", x);
            free(v);
            Py_DECREF(seq);
            return -1;
        }
        v[i] = (int32_t)x;
    }
    Py_DECREF(seq);
    *ids = v;
    *n = k;
    return 0;
}

static PyObject *ids_list(const int32_t *ids, int64_t n)
{
    PyObject *l = PyList_New((Py_ssize_t)n);
    if (!l) return NULL;
    for (int64_t i = 0; i < n; i++) {
        PyObject *x = PyLong_FromLong(ids[i]);
        if (!x) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, x);
    }
    return l;
}

static PyObject *utf8_str(const char *p, size_t n) { return PyUnicode_DecodeUTF8(p ? p : "", (Py_ssize_t)n, "replace"); }

/* ------------------------------------------------------------------ */
/* chat messages                                                       */

/* messages: a sequence of {"role": ..., "content": ...} or (role, content);
 * the strings stay owned by the sequence's items (kept in *keep) */
static int chat_messages(PyObject *o, wk_chat_message **msgs, int *n, PyObject **keep)
{
    *msgs = NULL;
    *n = 0;
    *keep = PySequence_Fast(o, "messages must be a sequence of {'role': ..., 'content': ...}");
    if (!*keep) return -1;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(*keep);
    if (k > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many messages");
        return -1;
    }
    wk_chat_message *m = calloc((size_t)(k ? k : 1), sizeof *m);
    if (!m) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(*keep, i), *role, *content;
        if (PyDict_Check(it)) {
            role = PyDict_GetItemString(it, "role");
            content = PyDict_GetItemString(it, "content");
        } else if (PyTuple_Check(it) && PyTuple_GET_SIZE(it) == 2) {
            role = PyTuple_GET_ITEM(it, 0);
            content = PyTuple_GET_ITEM(it, 1);
        } else {
            role = content = NULL;
        }
        if (!role || !content || !PyUnicode_Check(role) || !PyUnicode_Check(content)) {
            PyErr_Format(PyExc_TypeError, "message %zd: a dict with str 'role' and 'content', or a (role, content) pair", i);
            free(m);
            return -1;
        }
        m[i].role = PyUnicode_AsUTF8(role);
        m[i].content = PyUnicode_AsUTF8(content);
        if (!m[i].role || !m[i].content) {
            free(m);
            return -1;
        }
    }
    *msgs = m;
    *n = (int)k;
    return 0;
}

static int chat_format_of(PyObject *o, wk_chat_format *f)
{
    const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    if (!s) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a chat format is a str ('chatml', 'llama3', 'gemma', 'none')");
        return -1;
    }
    for (int i = 0; i < WK_CHAT_FORMAT_COUNT; i++)
        if (!strcmp(s, wk_chat_format_name((wk_chat_format)i))) {
            *f = (wk_chat_format)i;
            return 0;
        }
    PyErr_Format(PyExc_ValueError, "unknown chat format '%s' (chatml, llama3, gemma, none)", s);
    return -1;
}

static PyObject *m_chat_apply(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "format", "messages", "default_system", "add_generation_prompt", NULL };
    PyObject *fmt, *msgs_o;
    const char *sys = NULL;
    int gen = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|zp:chat_apply", kwlist, &fmt, &msgs_o, &sys, &gen)) return NULL;
    wk_chat_format f;
    if (chat_format_of(fmt, &f) < 0) return NULL;
    wk_chat_message *msgs;
    int n;
    PyObject *keep;
    if (chat_messages(msgs_o, &msgs, &n, &keep) < 0) {
        Py_XDECREF(keep);
        return NULL;
    }
    char *text = wk_chat_apply(f, sys, msgs, n, gen != 0);
    free(msgs);
    Py_DECREF(keep);
    if (!text) return raise_model();
    PyObject *r = PyUnicode_FromString(text);
    free(text);
    return r;
}

static PyObject *m_chat_format_detect(PyObject *mod, PyObject *arg)
{
    (void)mod;
    const char *s = PyUnicode_AsUTF8(arg);
    if (!s) return NULL;
    return PyUnicode_FromString(wk_chat_format_name(wk_chat_format_detect(s)));
}

/* ------------------------------------------------------------------ */
/* Tokenizer and TokenStream                                           */

typedef struct {
    PyObject_HEAD
    wk_tokenizer *tok;
} TokenizerObject;

static PyTypeObject Tokenizer_Type;

typedef struct {
    PyObject_HEAD
    wk_tok_stream *s;
    PyObject *owner;     /* the Tokenizer, kept alive */
} TokenStreamObject;

static PyTypeObject TokenStream_Type;

/* A tokenizer for path: a GGUF file (its metadata), a tokenizer.json, or
 * a folder (or a file in one: a .safetensors model) with tokenizer.json. */
static wk_tokenizer *tokenizer_for_path(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) return wk_tokenizer_from_json_file(path);
    FILE *f = fopen(path, "rb");
    char magic[4] = { 0 };
    bool gguf = false;
    if (f) {
        gguf = fread(magic, 1, 4, f) == 4 && !memcmp(magic, "GGUF", 4);
        fclose(f);
    }
    if (gguf) return wk_tokenizer_from_gguf_file(path);
    size_t n = strlen(path);
    if (!f || (n >= 5 && !strcmp(path + n - 5, ".json") && strstr(path, "tokenizer")))
        return wk_tokenizer_from_json_file(path);   /* (a missing path: its error) */
    /* a model file: the tokenizer.json of its folder */
    char *dir = strdup(path);
    if (!dir) return NULL;
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else strcpy(dir, ".");
    wk_tokenizer *t = wk_tokenizer_from_json_file(dir);
    free(dir);
    return t;
}

static PyObject *Tokenizer_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "path", NULL };
    PyObject *po;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&:Tokenizer", kwlist, PyUnicode_FSConverter, &po)) return NULL;
    const char *path = PyBytes_AS_STRING(po);
    wk_tokenizer *t = CALLX(wk_tokenizer *, tokenizer_for_path(path));
    if (!t) {
        Py_DECREF(po);
        return raise_tok();
    }
    Py_DECREF(po);
    TokenizerObject *o = (TokenizerObject *)type->tp_alloc(type, 0);
    if (!o) {
        wk_tokenizer_free(t);
        return NULL;
    }
    o->tok = t;
    return (PyObject *)o;
}

static void Tokenizer_dealloc(TokenizerObject *self)
{
    wk_tokenizer_free(self->tok);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *tok_encode(const wk_tokenizer *t, PyObject *text, unsigned flags)
{
    const char *p;
    Py_ssize_t n;
    PyObject *keep;
    if (text_arg(text, &p, &n, &keep) < 0) return NULL;
    int32_t *ids = NULL;
    int64_t nid = 0;
    wk_status st = CALLX(wk_status, wk_tokenizer_encode(t, p, (size_t)n, flags, &ids, &nid));
    Py_DECREF(keep);
    if (st != WK_OK) return raise_tok();
    PyObject *r = ids_list(ids, nid);
    free(ids);
    return r;
}

static PyObject *Tokenizer_encode(TokenizerObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "text", "add_special", "parse_special", NULL };
    PyObject *text;
    int add = 1, parse = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|pp:encode", kwlist, &text, &add, &parse)) return NULL;
    return tok_encode(self->tok, text, (add ? WK_TOK_ADD_SPECIAL : 0u) | (parse ? WK_TOK_PARSE_SPECIAL : 0u));
}

static PyObject *tok_decode(const wk_tokenizer *t, PyObject *ids_o, unsigned flags, bool as_bytes)
{
    int32_t *ids;
    int64_t n;
    if (ids_arg(ids_o, &ids, &n) < 0) return NULL;
    char *text = NULL;
    size_t len = 0;
    wk_status st = CALLX(wk_status, wk_tokenizer_decode(t, ids, n, flags, &text, &len));
    free(ids);
    if (st != WK_OK) return raise_tok();
    PyObject *r = as_bytes ? PyBytes_FromStringAndSize(text, (Py_ssize_t)len) : utf8_str(text, len);
    free(text);
    return r;
}

static unsigned decode_flags(int skip, int keep_space) { return (skip ? WK_TOK_SKIP_SPECIAL : 0u) | (keep_space ? WK_TOK_KEEP_SPACE : 0u); }

static PyObject *Tokenizer_decode(TokenizerObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "ids", "skip_special", "keep_space", NULL };
    PyObject *ids;
    int skip = 0, ks = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|pp:decode", kwlist, &ids, &skip, &ks)) return NULL;
    return tok_decode(self->tok, ids, decode_flags(skip, ks), false);
}

static PyObject *Tokenizer_decode_bytes(TokenizerObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "ids", "skip_special", "keep_space", NULL };
    PyObject *ids;
    int skip = 0, ks = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|pp:decode_bytes", kwlist, &ids, &skip, &ks)) return NULL;
    return tok_decode(self->tok, ids, decode_flags(skip, ks) | WK_TOK_RAW, true);
}

static int check_id(const wk_tokenizer *t, long long id)
{
    if (id < 0 || id >= wk_tokenizer_n_tokens(t)) {
        PyErr_Format(PyExc_IndexError, "token id %lld is out of range (%d tokens)", id, (int)wk_tokenizer_n_tokens(t));
        return -1;
    }
    return 0;
}

static PyObject *Tokenizer_token(TokenizerObject *self, PyObject *arg)
{
    long long id = PyLong_AsLongLong(arg);
    if ((id == -1 && PyErr_Occurred()) || check_id(self->tok, id) < 0) return NULL;
    size_t len = 0;
    const char *s = wk_tokenizer_token(self->tok, (int32_t)id, &len);
    return PyBytes_FromStringAndSize(s, (Py_ssize_t)len);
}

static PyObject *Tokenizer_find(TokenizerObject *self, PyObject *arg)
{
    const char *p;
    Py_ssize_t n;
    PyObject *keep;
    if (text_arg(arg, &p, &n, &keep) < 0) return NULL;
    int32_t id = wk_tokenizer_find(self->tok, p, (size_t)n);
    Py_DECREF(keep);
    if (id < 0) Py_RETURN_NONE;
    return PyLong_FromLong(id);
}

static PyObject *Tokenizer_token_type(TokenizerObject *self, PyObject *arg)
{
    long long id = PyLong_AsLongLong(arg);
    if ((id == -1 && PyErr_Occurred()) || check_id(self->tok, id) < 0) return NULL;
    return PyLong_FromLong((long)wk_tokenizer_token_type(self->tok, (int32_t)id));
}

static PyObject *Tokenizer_is_special(TokenizerObject *self, PyObject *arg)
{
    long long id = PyLong_AsLongLong(arg);
    if ((id == -1 && PyErr_Occurred()) || check_id(self->tok, id) < 0) return NULL;
    return PyBool_FromLong(wk_tokenizer_is_special(self->tok, (int32_t)id));
}

static PyObject *Tokenizer_stream(TokenizerObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "skip_special", "keep_space", NULL };
    int skip = 0, ks = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|pp:stream", kwlist, &skip, &ks)) return NULL;
    wk_tok_stream *s = wk_tok_stream_new(self->tok, decode_flags(skip, ks));
    if (!s) return raise_tok();
    TokenStreamObject *o = PyObject_New(TokenStreamObject, &TokenStream_Type);
    if (!o) {
        wk_tok_stream_free(s);
        return NULL;
    }
    o->s = s;
    Py_INCREF(self);
    o->owner = (PyObject *)self;
    return (PyObject *)o;
}

static Py_ssize_t Tokenizer_len(TokenizerObject *self) { return (Py_ssize_t)wk_tokenizer_n_tokens(self->tok); }

static PyObject *id_or_none(int32_t id)
{
    if (id < 0) Py_RETURN_NONE;
    return PyLong_FromLong(id);
}
static PyObject *Tokenizer_get_bos(TokenizerObject *self, void *c)
{
    (void)c;
    return id_or_none(wk_tokenizer_bos(self->tok));
}
static PyObject *Tokenizer_get_eos(TokenizerObject *self, void *c)
{
    (void)c;
    return id_or_none(wk_tokenizer_eos(self->tok));
}
static PyObject *Tokenizer_get_eog(TokenizerObject *self, void *c)
{
    (void)c;
    int32_t ids[64];
    int32_t n = wk_tokenizer_eog(self->tok, ids, 64);
    if (n > 64) n = 64;
    PyObject *l = ids_list(ids, n);
    if (!l) return NULL;
    PyObject *t = PyList_AsTuple(l);
    Py_DECREF(l);
    return t;
}
static PyObject *Tokenizer_get_n_tokens(TokenizerObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(wk_tokenizer_n_tokens(self->tok));
}

static PyMethodDef Tokenizer_methods[] = {
    { "encode", (PyCFunction)(void (*)(void))Tokenizer_encode, METH_VARARGS | METH_KEYWORDS,
      "encode(text, add_special=True, parse_special=True) -> list[int]: add_special puts BOS/EOS around the ids as the "
      "tokenizer says (Hugging Face's add_special_tokens); parse_special turns special tokens written in the text into "
      "their ids (without it only added tokens that are not special are)" },
    { "decode", (PyCFunction)(void (*)(void))Tokenizer_decode, METH_VARARGS | METH_KEYWORDS,
      "decode(ids, skip_special=False, keep_space=False) -> str: Hugging Face's decode (invalid UTF-8 as U+FFFD); "
      "keep_space keeps the space a SentencePiece tokenizer's first token begins with" },
    { "decode_bytes", (PyCFunction)(void (*)(void))Tokenizer_decode_bytes, METH_VARARGS | METH_KEYWORDS,
      "decode_bytes(ids, skip_special=False, keep_space=False) -> bytes: the raw bytes, invalid UTF-8 left as it is" },
    { "token", (PyCFunction)Tokenizer_token, METH_O, "token(id) -> bytes: the token's string as the vocabulary stores it" },
    { "find", (PyCFunction)Tokenizer_find, METH_O, "find(s) -> int | None: the id of a stored token string" },
    { "token_type", (PyCFunction)Tokenizer_token_type, METH_O,
      "token_type(id) -> int: GGUF's token type (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte)" },
    { "is_special", (PyCFunction)Tokenizer_is_special, METH_O, "is_special(id) -> bool: a control or unknown token" },
    { "stream", (PyCFunction)(void (*)(void))Tokenizer_stream, METH_VARARGS | METH_KEYWORDS,
      "stream(skip_special=False, keep_space=False) -> TokenStream: decode ids one at a time, whole characters only" },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef Tokenizer_getset[] = {
    { "bos", (getter)Tokenizer_get_bos, NULL, "the BOS id, or None", NULL },
    { "eos", (getter)Tokenizer_get_eos, NULL, "the EOS id, or None", NULL },
    { "eog", (getter)Tokenizer_get_eog, NULL, "the end-of-generation ids (EOS, <|im_end|>, <|eot_id|>, ...)", NULL },
    { "n_tokens", (getter)Tokenizer_get_n_tokens, NULL, "the vocabulary's size", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PySequenceMethods Tokenizer_as_seq = { .sq_length = (lenfunc)Tokenizer_len };

static PyTypeObject Tokenizer_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.Tokenizer",
    .tp_basicsize = sizeof(TokenizerObject),
    .tp_dealloc = (destructor)Tokenizer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Tokenizer(path): a tokenizer from a GGUF file's metadata, a tokenizer.json, or a folder holding one "
              "(byte-level BPE and SentencePiece-style BPE; the same ids and text as Hugging Face's tokenizers)",
    .tp_methods = Tokenizer_methods,
    .tp_getset = Tokenizer_getset,
    .tp_as_sequence = &Tokenizer_as_seq,
    .tp_new = Tokenizer_new,
};

static void TokenStream_dealloc(TokenStreamObject *self)
{
    wk_tok_stream_free(self->s);
    Py_XDECREF(self->owner);
    PyObject_Del(self);
}

static PyObject *TokenStream_push(TokenStreamObject *self, PyObject *arg)
{
    long long id = PyLong_AsLongLong(arg);
    if (id == -1 && PyErr_Occurred()) return NULL;
    if (check_id(((TokenizerObject *)self->owner)->tok, id) < 0) return NULL;
    const char *t = NULL;
    size_t len = 0;
    if (wk_tok_stream_push(self->s, (int32_t)id, &t, &len) != WK_OK) return raise_tok();
    return utf8_str(t, len);
}

static PyObject *TokenStream_flush(TokenStreamObject *self, PyObject *unused)
{
    (void)unused;
    const char *t = NULL;
    size_t len = 0;
    if (wk_tok_stream_flush(self->s, &t, &len) != WK_OK) return raise_tok();
    return utf8_str(t, len);
}

static PyMethodDef TokenStream_methods[] = {
    { "push", (PyCFunction)TokenStream_push, METH_O,
      "push(id) -> str: the text completed by this token ('' while a character's bytes are incomplete)" },
    { "flush", (PyCFunction)TokenStream_flush, METH_NOARGS,
      "flush() -> str: what was held back (an incomplete character as U+FFFD); the stream starts over" },
    { NULL, NULL, 0, NULL },
};

static PyTypeObject TokenStream_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.TokenStream",
    .tp_basicsize = sizeof(TokenStreamObject),
    .tp_dealloc = (destructor)TokenStream_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A streaming decoder (Tokenizer.stream()): the text of all push() calls and the final flush() equals "
              "decode() of the same ids",
    .tp_methods = TokenStream_methods,
};

/* ------------------------------------------------------------------ */
/* Model                                                               */

typedef struct GenerationObject GenerationObject;

typedef struct {
    PyObject_HEAD
    wk_llm *m;
    PyObject *path;            /* str: the file or folder loaded        */
    PyObject *tokenizer;       /* a Tokenizer, made on first use        */
    GenerationObject *active;  /* borrowed: the generation using it     */
    int in_call;               /* a call runs without the GIL           */
    int readers;               /* tokenize calls running without it     */
    int engines;               /* an open wick.Engine runs on it (0/1)  */
    int32_t *hist;             /* the ids in the KV cache (wk_llm_pos)  */
    int64_t nhist, caphist;
    PyObject *comm;            /* the Comm of a tensor-parallel share   */
} ModelObject;

static PyTypeObject Model_Type;

struct GenerationObject {
    PyObject_HEAD
    ModelObject *model;        /* owned                                  */
    int32_t *prompt;
    int64_t n_prompt;
    wk_generate_opts opts;
    char **stop;
    int n_stop;
    pthread_t thr;
    bool started, joined, closed, consuming;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* shared with the thread, under mu */
    int state;                 /* GEN_RUNNING, GEN_READY, GEN_DONE      */
    bool stop_req;
    char *piece;
    size_t piece_len, piece_cap;
    int32_t *toks;
    int64_t ntoks, captoks;
    bool oom;
    /* set by the thread before GEN_DONE */
    wk_status status;
    char err[1024];
    wk_generate_stats stats;
};

enum { GEN_RUNNING = 0, GEN_READY, GEN_DONE };

static PyTypeObject Generation_Type;

static int hist_reserve(ModelObject *self, int64_t n)
{
    if (n <= self->caphist) return 0;
    int32_t *p = realloc(self->hist, (size_t)n * sizeof *p);
    if (!p) {
        self->nhist = 0;   /* unknown: nothing is reused */
        return -1;
    }
    self->hist = p;
    self->caphist = n;
    return 0;
}

/* the cache holds ids[0..n) */
static void hist_assign(ModelObject *self, const int32_t *ids, int64_t n)
{
    if (hist_reserve(self, n) == 0) {
        memcpy(self->hist, ids, (size_t)n * sizeof *ids);
        self->nhist = n;
    }
}

/* ids were run after the history, which the model's position limits */
static void hist_append(ModelObject *self, const int32_t *ids, int64_t n, int64_t pos)
{
    int64_t total = self->nhist + n < pos ? self->nhist + n : pos;
    if (total <= self->nhist) {
        self->nhist = total;
        return;
    }
    if (hist_reserve(self, total) == 0) {
        memcpy(self->hist + self->nhist, ids, (size_t)(total - self->nhist) * sizeof *ids);
        self->nhist = total;
    }
}

static void generation_finish(GenerationObject *g);

/* Ready for a call: loaded, no other thread inside, no generation running
 * (one still open is closed first). */
static int model_claim(ModelObject *self)
{
    if (!self->m) {
        PyErr_SetString(PyExc_ValueError, "the model is closed");
        return -1;
    }
    if (self->engines) {
        PyErr_SetString(PyExc_RuntimeError, "the model is in use by an engine (close the engine first)");
        return -1;
    }
    if (self->active) generation_finish(self->active);
    if (self->in_call || !self->m) {   /* a call of another thread (or one that got in meanwhile) */
        PyErr_SetString(PyExc_RuntimeError, "the model is in use by another thread");
        return -1;
    }
    return 0;
}

static PyObject *Model_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "path", "device", "dtype", "context", "prefill_chunk", "dequantize", "progress", "comm",
                              NULL };
    PyObject *po, *device = Py_None, *dtype_o = Py_None, *comm_o = Py_None;
    long long context = 0, chunk = 0;
    int deq = 0, progress = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|OOLLppO:Model", kwlist, PyUnicode_FSConverter, &po, &device, &dtype_o,
                                     &context, &chunk, &deq, &progress, &comm_o))
        return NULL;
    wk_llm_options o = { .act_dtype = WK_F32, .context = context, .prefill_chunk = chunk, .dequantize = deq != 0,
                         .progress = progress ? WK_PROGRESS_ON : WK_PROGRESS_OFF };
    if (comm_o != Py_None && !(o.comm = wkpy_comm_of(comm_o))) {
        Py_DECREF(po);
        return NULL;
    }
    /* a share of a tensor-parallel model: on its communicator's device */
    wk_device *dev = o.comm && device == Py_None ? wk_comm_device(o.comm) : device_of(device);
    if (!dev || (dtype_o != Py_None && parse_dtype(dtype_o, &o.act_dtype) < 0)) {
        Py_DECREF(po);
        return NULL;
    }
    if (o.act_dtype != WK_F32 && o.act_dtype != WK_BF16) {
        PyErr_Format(PyExc_TypeError, "a model's dtype (activations and KV cache) is f32 or bf16, not %s",
                     wk_dtype_name(o.act_dtype));
        Py_DECREF(po);
        return NULL;
    }
    if (context < 0 || chunk < 0) {
        PyErr_SetString(PyExc_ValueError, "context and prefill_chunk are >= 0 (0: the default)");
        Py_DECREF(po);
        return NULL;
    }
    ModelObject *self = (ModelObject *)type->tp_alloc(type, 0);
    if (!self) {
        Py_DECREF(po);
        return NULL;
    }
    const char *path = PyBytes_AS_STRING(po);
    self->m = CALLX(wk_llm *, wk_llm_load(path, dev, &o));
    if (!self->m) {
        Py_DECREF(po);
        Py_DECREF(self);
        return raise_model();
    }
    self->path = PyUnicode_DecodeFSDefault(path);
    if (o.comm) {   /* kept alive as long as the model */
        Py_INCREF(comm_o);
        self->comm = comm_o;
    }
    Py_DECREF(po);
    if (!self->path) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void model_free(ModelObject *self)
{
    if (self->active) generation_finish(self->active);
    wk_llm *m = self->m;
    self->m = NULL;
    if (m) {
        Py_BEGIN_ALLOW_THREADS wk_llm_free(m);
        Py_END_ALLOW_THREADS
    }
    free(self->hist);
    self->hist = NULL;
    self->nhist = self->caphist = 0;
}

static void Model_dealloc(ModelObject *self)
{
    model_free(self);   /* no generation can be active: it holds a reference */
    Py_CLEAR(self->comm);
    Py_CLEAR(self->path);
    Py_CLEAR(self->tokenizer);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Model_close(ModelObject *self, PyObject *unused)
{
    (void)unused;
    if (self->engines) {
        PyErr_SetString(PyExc_RuntimeError, "the model is in use by an engine (close the engine first)");
        return NULL;
    }
    if (self->active) generation_finish(self->active);
    if (self->in_call || self->readers) {
        PyErr_SetString(PyExc_RuntimeError, "the model is in use by another thread");
        return NULL;
    }
    model_free(self);
    Py_RETURN_NONE;
}

static PyObject *Model_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    Py_INCREF(self);
    return self;
}

static PyObject *Model_exit(ModelObject *self, PyObject *args)
{
    (void)args;
    return Model_close(self, NULL);
}

static int model_open(ModelObject *self)
{
    if (self->m) return 0;
    PyErr_SetString(PyExc_ValueError, "the model is closed");
    return -1;
}

static PyObject *Model_get_info(ModelObject *self, void *c)
{
    (void)c;
    if (model_open(self) < 0) return NULL;
    const wk_llm_info *in = wk_llm_get_info(self->m);
    PyObject *eog = PyTuple_New(in->n_eog);
    if (!eog) return NULL;
    for (int i = 0; i < in->n_eog; i++) PyTuple_SET_ITEM(eog, i, PyLong_FromLong(in->eog_ids[i]));
    PyObject *d = Py_BuildValue(
        "{s:s,s:s,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:d,s:d,s:d,s:L,s:O,s:s,s:s,s:K,s:i,s:O,s:O,s:s,s:z,s:z,s:s,s:i,s:i}", "arch",
        wk_llm_arch_name(in->arch), "name", in->name, "n_vocab", (long long)in->n_vocab, "n_embd", (long long)in->n_embd,
        "n_layer", (long long)in->n_layer, "n_head", (long long)in->n_head, "n_head_kv", (long long)in->n_head_kv,
        "head_dim", (long long)in->head_dim, "n_ff", (long long)in->n_ff, "train_context", (long long)in->train_context,
        "context", (long long)in->context, "rope_base", in->rope_base, "rope_base_local", in->rope_base_local, "norm_eps",
        in->norm_eps, "sliding_window", (long long)in->sliding_window, "rope_interleaved",
        in->rope_interleaved ? Py_True : Py_False, "weight_dtype", wk_dtype_name(in->weight_dtype), "act_dtype",
        wk_dtype_name(in->act_dtype), "weight_bytes", (unsigned long long)in->weight_bytes, "bos_id", (int)in->bos_id,
        "add_bos", in->add_bos ? Py_True : Py_False, "eog_ids", eog, "chat_format", wk_chat_format_name(in->chat),
        "default_system", in->default_system, "chat_template_error", in->chat_template_error, "device",
        wk_device_name(wk_llm_device(self->m)), "tp_rank", in->tp_rank,
        "tp_size", in->tp_size);
    Py_DECREF(eog);
    return d;
}

static PyObject *Model_get_pos(ModelObject *self, void *c)
{
    (void)c;
    if (model_open(self) < 0) return NULL;
    return PyLong_FromLongLong(wk_llm_pos(self->m));
}

static PyObject *Model_get_path(ModelObject *self, void *c)
{
    (void)c;
    Py_INCREF(self->path);
    return self->path;
}

static PyObject *Model_get_closed(ModelObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->m == NULL);
}

static PyObject *Model_get_tokenizer(ModelObject *self, void *c)
{
    (void)c;
    if (!self->tokenizer) {
        PyObject *t = PyObject_CallFunctionObjArgs((PyObject *)&Tokenizer_Type, self->path, NULL);
        if (!t) return NULL;
        self->tokenizer = t;
    }
    Py_INCREF(self->tokenizer);
    return self->tokenizer;
}

static PyObject *Model_rewind(ModelObject *self, PyObject *args)
{
    long long pos = 0;
    if (!PyArg_ParseTuple(args, "|L:rewind", &pos)) return NULL;
    if (model_claim(self) < 0) return NULL;
    if (wk_llm_rewind(self->m, pos) != WK_OK) return raise_model();
    if (self->nhist > wk_llm_pos(self->m)) self->nhist = wk_llm_pos(self->m);
    Py_RETURN_NONE;
}

static PyObject *Model_tokenize(ModelObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "text", "add_bos", NULL };
    PyObject *text;
    int add_bos = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p:tokenize", kwlist, &text, &add_bos)) return NULL;
    if (model_open(self) < 0) return NULL;
    const char *p;
    Py_ssize_t n;
    PyObject *keep;
    if (text_arg(text, &p, &n, &keep) < 0) return NULL;
    int32_t *ids = NULL;
    int64_t nid = 0;
    self->readers++;   /* close() waits for no one: it refuses meanwhile */
    wk_status st = CALLX(wk_status, wk_llm_tokenize(self->m, p, (size_t)n, add_bos != 0, &ids, &nid));
    self->readers--;
    Py_DECREF(keep);
    if (st != WK_OK) return raise_model();
    PyObject *r = ids_list(ids, nid);
    free(ids);
    return r;
}

static PyObject *Model_decode(ModelObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "ids", "skip_special", NULL };
    PyObject *ids;
    int skip = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p:decode", kwlist, &ids, &skip)) return NULL;
    PyObject *t = Model_get_tokenizer(self, NULL);
    if (!t) return NULL;
    PyObject *r = tok_decode(((TokenizerObject *)t)->tok, ids, decode_flags(skip, 0), false);
    Py_DECREF(t);
    return r;
}

static PyObject *Model_token_bytes(ModelObject *self, PyObject *arg)
{
    long long id = PyLong_AsLongLong(arg);
    if ((id == -1 && PyErr_Occurred()) || model_open(self) < 0) return NULL;
    if (id < 0 || id >= wk_llm_get_info(self->m)->n_vocab) {
        PyErr_Format(PyExc_IndexError, "token id %lld is out of range", id);
        return NULL;
    }
    size_t len = 0;
    const char *s = wk_llm_token_text(self->m, (int32_t)id, &len);
    return PyBytes_FromStringAndSize(s, (Py_ssize_t)len);
}

static PyObject *Model_is_eog(ModelObject *self, PyObject *arg)
{
    long long id = PyLong_AsLongLong(arg);
    if ((id == -1 && PyErr_Occurred()) || model_open(self) < 0) return NULL;
    return PyBool_FromLong(id >= 0 && id <= INT32_MAX && wk_llm_is_eog(self->m, (int32_t)id));
}

static PyObject *Model_format_chat(ModelObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "messages", "add_generation_prompt", NULL };
    PyObject *msgs_o;
    int gen = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p:format_chat", kwlist, &msgs_o, &gen)) return NULL;
    if (model_open(self) < 0) return NULL;
    wk_chat_message *msgs;
    int n;
    PyObject *keep;
    if (chat_messages(msgs_o, &msgs, &n, &keep) < 0) {
        Py_XDECREF(keep);
        return NULL;
    }
    char *text = wk_llm_chat_apply(self->m, msgs, n, gen != 0);
    free(msgs);
    Py_DECREF(keep);
    if (!text) return raise_model();
    PyObject *r = PyUnicode_FromString(text);
    free(text);
    return r;
}

/* The prompt's ids: a str (raw text, BOS as the model says, unless chat:
 * then one user message, with system, through the chat format), a list of
 * messages (the chat format), or token ids. */
static int prompt_ids(ModelObject *self, PyObject *prompt, int chat, const char *system, int32_t **ids, int64_t *n)
{
    *ids = NULL;
    *n = 0;
    bool is_text = PyUnicode_Check(prompt) || PyBytes_Check(prompt);
    bool is_msgs = false;
    if (!is_text && PySequence_Check(prompt) && PySequence_Size(prompt) > 0) {
        PyObject *first = PySequence_GetItem(prompt, 0);
        if (!first) return -1;
        is_msgs = PyDict_Check(first) || PyTuple_Check(first);
        Py_DECREF(first);
    }
    if (!is_text && !is_msgs) {
        if (chat || system) {
            PyErr_SetString(PyExc_ValueError, "chat and system go with a text prompt, not with token ids");
            return -1;
        }
        return ids_arg(prompt, ids, n);
    }
    char *formatted = NULL;
    PyObject *keep = NULL;
    const char *p;
    Py_ssize_t len;
    bool add_bos = true;
    if (is_msgs || chat) {
        wk_chat_message *msgs = NULL;
        int nm = 0;
        PyObject *mkeep = NULL;
        if (is_msgs) {
            if (system) {
                PyErr_SetString(PyExc_ValueError, "system goes with a str prompt (a list of messages holds its own)");
                return -1;
            }
            if (chat_messages(prompt, &msgs, &nm, &mkeep) < 0) {
                Py_XDECREF(mkeep);
                return -1;
            }
        } else {
            const char *user = PyUnicode_Check(prompt) ? PyUnicode_AsUTF8(prompt) : PyBytes_AsString(prompt);
            if (!user) return -1;
            msgs = calloc(2, sizeof *msgs);
            if (!msgs) {
                PyErr_NoMemory();
                return -1;
            }
            if (system) msgs[nm++] = (wk_chat_message){ "system", system };
            msgs[nm++] = (wk_chat_message){ "user", user };
        }
        if (!wk_llm_chat_formatted(self->m)) {
            free(msgs);
            Py_XDECREF(mkeep);
            PyErr_SetString(PyExc_ValueError, "the model has no chat format it knows: give the prompt as text");
            return -1;
        }
        formatted = wk_llm_chat_apply(self->m, msgs, nm, true);
        free(msgs);
        Py_XDECREF(mkeep);
        if (!formatted) {
            raise_model();
            return -1;
        }
        p = formatted;
        len = (Py_ssize_t)strlen(formatted);
        add_bos = false;   /* a chat text carries its own BOS where the template has one */
    } else if (text_arg(prompt, &p, &len, &keep) < 0) {
        return -1;
    }
    self->readers++;
    wk_status st = CALLX(wk_status, wk_llm_tokenize(self->m, p, (size_t)len, add_bos, ids, n));
    self->readers--;
    free(formatted);
    Py_XDECREF(keep);
    if (st != WK_OK) {
        raise_model();
        return -1;
    }
    return 0;
}

static PyObject *Model_eval(ModelObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "ids", "all_logits", NULL };
    PyObject *ids_o;
    int all = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p:eval", kwlist, &ids_o, &all)) return NULL;
    if (model_claim(self) < 0) return NULL;
    int32_t *ids;
    int64_t n;
    if (ids_arg(ids_o, &ids, &n) < 0) return NULL;
    if (n == 0) {
        free(ids);
        PyErr_SetString(PyExc_ValueError, "eval: no token ids");
        return NULL;
    }
    const int64_t V = wk_llm_get_info(self->m)->n_vocab, rows = all ? n : 1;
    float *lg = malloc((size_t)(rows * V) * sizeof *lg);
    if (!lg) {
        free(ids);
        return PyErr_NoMemory();
    }
    const int64_t pos0 = wk_llm_pos(self->m);
    self->in_call = 1;
    wk_llm *m = self->m;
    wk_status st = CALLX(wk_status, wk_llm_eval(m, ids, n, all != 0, lg));
    self->in_call = 0;
    if (st != WK_OK) {
        free(ids);
        free(lg);
        return raise_model();
    }
    if (self->nhist == pos0) hist_append(self, ids, n, wk_llm_pos(self->m));
    else self->nhist = 0;   /* not known: nothing is reused */
    free(ids);
    wk_tensor *t = all ? wk_from_host(device_of(NULL), WK_F32, WK_SHAPE(n, V), lg)
                       : wk_from_host(device_of(NULL), WK_F32, WK_SHAPE(V), lg);
    free(lg);
    return wrap(t);
}

static PyObject *Model_logits(ModelObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "prompt", "all_logits", NULL };
    PyObject *prompt;
    int all = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p:logits", kwlist, &prompt, &all)) return NULL;
    if (model_claim(self) < 0) return NULL;
    int32_t *ids;
    int64_t n;
    if (prompt_ids(self, prompt, 0, NULL, &ids, &n) < 0) return NULL;
    if (model_claim(self) < 0) {   /* again: the GIL was let go while tokenizing */
        free(ids);
        return NULL;
    }
    PyObject *l = ids_list(ids, n);
    free(ids);
    if (!l) return NULL;
    if (wk_llm_rewind(self->m, 0) != WK_OK) {
        Py_DECREF(l);
        return raise_model();
    }
    self->nhist = 0;
    PyObject *a = Py_BuildValue("(O)", l), *k = Py_BuildValue("{s:O}", "all_logits", all ? Py_True : Py_False);
    Py_DECREF(l);
    PyObject *r = a && k ? Model_eval(self, a, k) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(k);
    return r;
}

/* ------------------------------------------------------------------ */
/* Generation                                                          */

static bool gen_cb(void *user, int32_t token, const char *text, size_t len)
{
    GenerationObject *g = user;
    pthread_mutex_lock(&g->mu);
    if (token >= 0) {
        if (g->ntoks == g->captoks) {
            int64_t cap = g->captoks ? 2 * g->captoks : 64;
            int32_t *p = realloc(g->toks, (size_t)cap * sizeof *p);
            if (!p) {
                g->oom = true;
                pthread_mutex_unlock(&g->mu);
                return false;
            }
            g->toks = p;
            g->captoks = cap;
        }
        g->toks[g->ntoks++] = token;
    }
    if (g->stop_req) {
        pthread_mutex_unlock(&g->mu);
        return false;
    }
    if (len) {
        if (len + 1 > g->piece_cap) {
            char *p = realloc(g->piece, len + 1);
            if (!p) {
                g->oom = true;
                pthread_mutex_unlock(&g->mu);
                return false;
            }
            g->piece = p;
            g->piece_cap = len + 1;
        }
        memcpy(g->piece, text, len);
        g->piece_len = len;
        g->state = GEN_READY;
        pthread_cond_broadcast(&g->cv);
        while (g->state == GEN_READY && !g->stop_req) pthread_cond_wait(&g->cv, &g->mu);
    }
    bool go = !g->stop_req;
    pthread_mutex_unlock(&g->mu);
    return go;
}

static void *gen_thread(void *arg)
{
    GenerationObject *g = arg;
    wk_generate_stats st;
    memset(&st, 0, sizeof st);
    wk_status s = wk_llm_generate(g->model->m, g->prompt, g->n_prompt, &g->opts, gen_cb, g, &st);
    pthread_mutex_lock(&g->mu);
    g->status = s;
    if (s != WK_OK) snprintf(g->err, sizeof g->err, "%s", wk_last_error());
    else if (g->oom) {
        g->status = WK_ERR_MEMORY;
        snprintf(g->err, sizeof g->err, "out of memory for the generated text");
    }
    g->stats = st;
    g->state = GEN_DONE;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* Wait (without the GIL) until the thread is done, join it once, and give
 * the model back with what its cache holds. */
static void gen_join(GenerationObject *g)
{
    bool join = false;
    Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&g->mu);
    while (g->state != GEN_DONE) pthread_cond_wait(&g->cv, &g->mu);
    if (!g->joined) join = g->joined = true;
    pthread_mutex_unlock(&g->mu);
    if (join) pthread_join(g->thr, NULL);
    Py_END_ALLOW_THREADS
    if (!join) return;
    ModelObject *m = g->model;
    m->in_call = 0;
    if (m->active == g) m->active = NULL;
    /* the cache: the prompt (set when the generation was made) and the
       generated tokens that were run, as far as the model's position says */
    hist_append(m, g->toks, g->ntoks, wk_llm_pos(m->m));
}

/* Stop the generation (when it runs) and give the model back. */
static void generation_finish(GenerationObject *g)
{
    if (g->closed) return;
    g->closed = true;
    if (g->started) {
        pthread_mutex_lock(&g->mu);
        g->stop_req = true;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
        gen_join(g);
    } else if (g->model->active == g) {
        ModelObject *m = g->model;
        m->active = NULL;
        if (m->m && m->nhist > wk_llm_pos(m->m)) m->nhist = wk_llm_pos(m->m);   /* the prompt was not run */
    }
}

static void Generation_dealloc(GenerationObject *self)
{
    generation_finish(self);
    pthread_mutex_destroy(&self->mu);
    pthread_cond_destroy(&self->cv);
    for (int i = 0; i < self->n_stop; i++) free(self->stop[i]);
    free(self->stop);
    free(self->prompt);
    free(self->piece);
    free(self->toks);
    Py_XDECREF(self->model);
    PyObject_Del(self);
}

static PyObject *Generation_iter(PyObject *self)
{
    Py_INCREF(self);
    return self;
}

static PyObject *Generation_next(GenerationObject *g)
{
    if (g->consuming) {
        PyErr_SetString(PyExc_ValueError, "generation already executing (in another thread)");
        return NULL;
    }
    if (g->closed && !g->started) return NULL;   /* closed before it began */
    if (!g->started) {
        ModelObject *m = g->model;
        if (!m->m || m->in_call) {
            PyErr_SetString(PyExc_RuntimeError, !m->m ? "the model is closed" : "the model is in use by another thread");
            return NULL;
        }
        m->in_call = 1;
        g->started = true;
        int e = pthread_create(&g->thr, NULL, gen_thread, g);
        if (e) {
            m->in_call = 0;
            g->started = false;
            g->closed = true;
            if (m->active == g) m->active = NULL;
            PyErr_Format(PyExc_RuntimeError, "cannot start the generation's thread (error %d)", e);
            return NULL;
        }
    }
    if (g->joined) return NULL;
    g->consuming = true;
    PyObject *piece = NULL;
    bool done = false;
    Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&g->mu);
    while (g->state == GEN_RUNNING) pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    Py_END_ALLOW_THREADS
    /* with the GIL again: the thread never takes it, so holding the lock
       while making the str is safe */
    pthread_mutex_lock(&g->mu);
    if (g->state == GEN_READY && !g->stop_req) {
        /* the thread waits for this piece to be taken */
        piece = utf8_str(g->piece, g->piece_len);
        g->state = GEN_RUNNING;
        pthread_cond_broadcast(&g->cv);
    }
    done = g->state == GEN_DONE || g->stop_req;
    pthread_mutex_unlock(&g->mu);
    if (piece || !done) {
        g->consuming = false;
        if (!piece) generation_finish(g);
        return piece;
    }
    gen_join(g);
    g->closed = true;
    g->consuming = false;
    if (g->status != WK_OK) {
        PyErr_SetString(exc_for(g->status), g->err[0] ? g->err : "generation failed");
        return NULL;
    }
    return NULL;   /* StopIteration */
}

static PyObject *Generation_close(GenerationObject *self, PyObject *unused)
{
    (void)unused;
    if (self->consuming) {
        PyErr_SetString(PyExc_ValueError, "generation already executing (in another thread)");
        return NULL;
    }
    generation_finish(self);
    Py_RETURN_NONE;
}

static PyObject *Generation_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    Py_INCREF(self);
    return self;
}

static PyObject *Generation_exit(GenerationObject *self, PyObject *args)
{
    (void)args;
    return Generation_close(self, NULL);
}

static PyObject *Generation_get_tokens(GenerationObject *g, void *c)
{
    (void)c;
    pthread_mutex_lock(&g->mu);
    PyObject *l = ids_list(g->toks, g->ntoks);
    pthread_mutex_unlock(&g->mu);
    return l;
}

static PyObject *Generation_get_prompt_ids(GenerationObject *g, void *c)
{
    (void)c;
    return ids_list(g->prompt, g->n_prompt);
}

static const char *stop_name(wk_stop_reason r)
{
    switch (r) {
    case WK_STOP_EOG: return "eog";
    case WK_STOP_STRING: return "stop_string";
    case WK_STOP_LENGTH: return "length";
    case WK_STOP_CONTEXT: return "context";
    case WK_STOP_CALLBACK: return "closed";
    default: return "none";
    }
}

static PyObject *Generation_get_stop_reason(GenerationObject *g, void *c)
{
    (void)c;
    if (!g->joined) Py_RETURN_NONE;
    if (g->status != WK_OK) return PyUnicode_FromString("error");
    return PyUnicode_FromString(stop_name(g->stats.stop));
}

static PyObject *Generation_get_stats(GenerationObject *g, void *c)
{
    (void)c;
    if (!g->joined) Py_RETURN_NONE;
    const wk_generate_stats *s = &g->stats;
    return Py_BuildValue("{s:L,s:L,s:d,s:d,s:d,s:d,s:s}", "prompt_tokens", (long long)s->prompt_tokens, "gen_tokens",
                         (long long)s->gen_tokens, "prompt_ms", s->prompt_ms, "gen_ms", s->gen_ms, "prompt_tokens_per_s",
                         s->prompt_ms > 0 ? 1e3 * (double)s->prompt_tokens / s->prompt_ms : 0.0, "gen_tokens_per_s",
                         s->gen_ms > 0 ? 1e3 * (double)s->gen_tokens / s->gen_ms : 0.0, "stop",
                         g->status != WK_OK ? "error" : stop_name(s->stop));
}

static PyMethodDef Generation_methods[] = {
    { "close", (PyCFunction)Generation_close, METH_NOARGS,
      "close(): stop generating (the model is free for other calls); the iterator ends" },
    { "__enter__", (PyCFunction)Generation_enter, METH_NOARGS, NULL },
    { "__exit__", (PyCFunction)Generation_exit, METH_VARARGS, NULL },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef Generation_getset[] = {
    { "tokens", (getter)Generation_get_tokens, NULL, "the ids generated so far (end-of-generation tokens not included)",
      NULL },
    { "prompt_ids", (getter)Generation_get_prompt_ids, NULL, "the ids of the prompt as it was run", NULL },
    { "stop_reason", (getter)Generation_get_stop_reason, NULL,
      "None while running, then 'eog', 'stop_string', 'length', 'context', 'closed' or 'error'", NULL },
    { "stats", (getter)Generation_get_stats, NULL,
      "None while running, then a dict: prompt_tokens, gen_tokens, prompt_ms, gen_ms, their rates, stop", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject Generation_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.Generation",
    .tp_basicsize = sizeof(GenerationObject),
    .tp_dealloc = (destructor)Generation_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An iterator over the text a model generates (Model.generate): pieces of whole UTF-8 characters as they "
              "come; the model's own loop runs on a thread of its own without the GIL",
    .tp_iter = Generation_iter,
    .tp_iternext = (iternextfunc)Generation_next,
    .tp_methods = Generation_methods,
    .tp_getset = Generation_getset,
};

int wkpy_sampling_args(const char *who, wk_sampling *s, long long max_tokens, long long top_k, long long last_n,
                       PyObject *seed_o)
{
    if (seed_o) {
        s->seed = PyLong_AsUnsignedLongLong(seed_o);
        if (PyErr_Occurred()) return -1;
    }
    if (max_tokens < 0 || top_k < 0 || last_n < 0 || s->temperature < 0 || !(s->top_p > 0 && s->top_p <= 1) ||
        !(s->min_p >= 0 && s->min_p <= 1) || !(s->repeat_penalty > 0)) {
        PyErr_Format(PyExc_ValueError,
                     "%s: max_tokens, top_k, repeat_last_n, temperature >= 0; 0 < top_p <= 1; 0 <= min_p <= 1; "
                     "repetition_penalty > 0", who);
        return -1;
    }
    if (!(fabs(s->presence_penalty) <= 2) || !(fabs(s->frequency_penalty) <= 2)) {
        PyErr_Format(PyExc_ValueError, "%s: presence_penalty and frequency_penalty are in [-2, 2]", who);
        return -1;
    }
    s->top_k = top_k;
    s->repeat_last_n = last_n;
    return 0;
}

static PyObject *Model_generate(ModelObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "prompt", "max_tokens", "temperature", "top_k", "top_p", "min_p", "repetition_penalty",
                              "repeat_last_n", "seed", "stop", "ignore_eos", "chat", "system", "reuse_cache", NULL };
    PyObject *prompt, *stop_o = Py_None, *max_o = NULL, *seed_o = NULL;
    wk_sampling s = wk_sampling_default();
    long long top_k = s.top_k, last_n = 0;
    int ignore = 0, chat = 0, reuse = 0;
    const char *system = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$dLdddLOOppzp:generate", kwlist, &prompt, &max_o, &s.temperature,
                                     &top_k, &s.top_p, &s.min_p, &s.repeat_penalty, &last_n, &seed_o, &stop_o, &ignore,
                                     &chat, &system, &reuse))
        return NULL;
    long long max_tokens = 256;          /* left out: 256, as `wick run` */
    if (max_o == Py_None) max_tokens = 0;   /* None: to the end of the context */
    else if (max_o) {
        max_tokens = PyLong_AsLongLong(max_o);
        if (max_tokens == -1 && PyErr_Occurred()) return NULL;
    }
    if (wkpy_sampling_args("generate", &s, max_tokens, top_k, last_n, seed_o) < 0) return NULL;
    if (model_claim(self) < 0) return NULL;
    GenerationObject *g = PyObject_New(GenerationObject, &Generation_Type);
    if (!g) return NULL;
    /* everything the dealloc looks at, before anything can fail */
    memset((char *)g + sizeof(PyObject), 0, sizeof *g - sizeof(PyObject));
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->closed = true;   /* until it is set up */
    Py_INCREF(self);
    g->model = self;
    g->opts.sampling = s;
    g->opts.max_tokens = max_tokens;
    g->opts.ignore_eog = ignore != 0;
    if (stop_o != Py_None) {
        PyObject *seq = PyUnicode_Check(stop_o) ? PyTuple_Pack(1, stop_o) : PySequence_Tuple(stop_o);
        if (!seq) goto fail;
        Py_ssize_t k = PyTuple_GET_SIZE(seq);
        g->stop = calloc((size_t)(k ? k : 1), sizeof *g->stop);
        if (!g->stop) {
            Py_DECREF(seq);
            PyErr_NoMemory();
            goto fail;
        }
        for (Py_ssize_t i = 0; i < k; i++) {
            const char *c = PyUnicode_Check(PyTuple_GET_ITEM(seq, i)) ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(seq, i)) : NULL;
            if (!c) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "stop: a str or a sequence of str");
                Py_DECREF(seq);
                goto fail;
            }
            if (!(g->stop[g->n_stop] = strdup(c))) {
                Py_DECREF(seq);
                PyErr_NoMemory();
                goto fail;
            }
            g->n_stop++;
        }
        Py_DECREF(seq);
        g->opts.stop = (const char *const *)g->stop;
        g->opts.n_stop = g->n_stop;
    }
    int32_t *ids;
    int64_t n;
    if (prompt_ids(self, prompt, chat, system, &ids, &n) < 0) goto fail;
    if (model_claim(self) < 0) {   /* again: the GIL was let go while tokenizing */
        free(ids);
        goto fail;
    }
    if (n == 0) {
        free(ids);
        PyErr_SetString(PyExc_ValueError, "generate: an empty prompt");
        goto fail;
    }
    /* the cache: kept as far as it matches the new prompt (reuse_cache),
       at least one token is run for the logits; else emptied */
    int64_t keep = 0;
    if (reuse)
        while (keep < self->nhist && keep + 1 < n && self->hist[keep] == ids[keep]) keep++;
    if (wk_llm_rewind(self->m, keep) != WK_OK) {
        free(ids);
        raise_model();
        goto fail;
    }
    keep = wk_llm_pos(self->m);   /* less where a window cache no longer holds what keep needs */
    /* the history: the whole prompt, cut back to the model's position when
       the generation ends; the generation runs the part after keep */
    hist_assign(self, ids, n);
    memmove(ids, ids + keep, (size_t)(n - keep) * sizeof *ids);
    g->prompt = ids;
    g->n_prompt = n - keep;
    g->closed = false;
    self->active = g;
    return (PyObject *)g;
fail:
    Py_DECREF(g);
    return NULL;
}

static PyMethodDef Model_methods[] = {
    { "generate", (PyCFunction)(void (*)(void))Model_generate, METH_VARARGS | METH_KEYWORDS,
      "generate(prompt, max_tokens=256, *, temperature=0.7, top_k=40, top_p=0.95, min_p=0.05, repetition_penalty=1.0, "
      "repeat_last_n=64, seed=0, stop=None, ignore_eos=False, chat=False, system=None, reuse_cache=False) -> "
      "Generation: an iterator of str pieces as they are generated. prompt: text (BOS as the model says), a list of "
      "chat messages, or token ids; chat=True wraps a text as one user message. temperature 0: greedy. "
      "max_tokens None: to the end of the context" },
    { "tokenize", (PyCFunction)(void (*)(void))Model_tokenize, METH_VARARGS | METH_KEYWORDS,
      "tokenize(text, add_bos=True) -> list[int]: special tokens in the text are recognised; BOS as the model says "
      "when add_bos" },
    { "decode", (PyCFunction)(void (*)(void))Model_decode, METH_VARARGS | METH_KEYWORDS,
      "decode(ids, skip_special=False) -> str: the text of ids (the model's tokenizer)" },
    { "token_bytes", (PyCFunction)Model_token_bytes, METH_O,
      "token_bytes(id) -> bytes: a GGUF vocabulary's bytes of one token (b'' for control tokens)" },
    { "is_eog", (PyCFunction)Model_is_eog, METH_O, "is_eog(id) -> bool: an end-of-generation token" },
    { "format_chat", (PyCFunction)(void (*)(void))Model_format_chat, METH_VARARGS | METH_KEYWORDS,
      "format_chat(messages, add_generation_prompt=True) -> str: the conversation as the model's chat template writes "
      "it; messages: [{'role': ..., 'content': ...}] or [(role, content)]" },
    { "eval", (PyCFunction)(void (*)(void))Model_eval, METH_VARARGS | METH_KEYWORDS,
      "eval(ids, all_logits=False) -> Tensor: run ids after what the cache holds; f32 logits [n_vocab] of the last "
      "one, or [len(ids), n_vocab]" },
    { "logits", (PyCFunction)(void (*)(void))Model_logits, METH_VARARGS | METH_KEYWORDS,
      "logits(prompt, all_logits=False) -> Tensor: eval of a text (BOS as the model says) or ids on an emptied cache" },
    { "rewind", (PyCFunction)Model_rewind, METH_VARARGS, "rewind(pos=0): forget the cache from position pos on" },
    { "close", (PyCFunction)Model_close, METH_NOARGS, "close(): free the model's memory now" },
    { "__enter__", (PyCFunction)Model_enter, METH_NOARGS, NULL },
    { "__exit__", (PyCFunction)Model_exit, METH_VARARGS, NULL },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef Model_getset[] = {
    { "info", (getter)Model_get_info, NULL, "a dict: architecture, sizes, dtypes, context, BOS, end tokens, chat format",
      NULL },
    { "pos", (getter)Model_get_pos, NULL, "positions filled in the KV cache", NULL },
    { "path", (getter)Model_get_path, NULL, "the file or folder loaded", NULL },
    { "closed", (getter)Model_get_closed, NULL, "whether close() was called", NULL },
    { "tokenizer", (getter)Model_get_tokenizer, NULL, "the model's Tokenizer (built on first use)", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject Model_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.Model",
    .tp_basicsize = sizeof(ModelObject),
    .tp_dealloc = (destructor)Model_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Model(path, device='cpu', dtype='f32', context=0, prefill_chunk=0, dequantize=False, progress=False): "
              "a language model from a GGUF file or a safetensors model (file or folder, config.json beside it); dtype: "
              "the activations and KV cache (f32 or bf16); context: the cache's positions (0: the model's, at most 4096)",
    .tp_methods = Model_methods,
    .tp_getset = Model_getset,
    .tp_new = Model_new,
};

/* ------------------------------------------------------------------ */

static PyMethodDef model_functions[] = {
    { "chat_apply", (PyCFunction)(void (*)(void))m_chat_apply, METH_VARARGS | METH_KEYWORDS,
      "chat_apply(format, messages, default_system=None, add_generation_prompt=True) -> str: a conversation in a chat "
      "format ('chatml', 'llama3', 'gemma')" },
    { "chat_format_detect", (PyCFunction)m_chat_format_detect, METH_O,
      "chat_format_detect(template) -> str: the format a Jinja chat template is ('none' when none wick knows)" },
    { NULL, NULL, 0, NULL },
};

/* ------------------------------------------------------------------ */
/* for engine.c                                                        */

wk_llm *wkpy_model_engine_claim(PyObject *o)
{
    if (!PyObject_TypeCheck(o, &Model_Type)) {
        PyErr_Format(PyExc_TypeError, "an engine runs on a wick.Model, not %.100s", Py_TYPE(o)->tp_name);
        return NULL;
    }
    ModelObject *self = (ModelObject *)o;
    if (model_claim(self) < 0) return NULL;   /* open, no engine, no call; a generation is closed */
    self->engines = 1;
    return self->m;
}

void wkpy_model_engine_release(PyObject *o) { ((ModelObject *)o)->engines = 0; }

int wkpy_prompt_ids(PyObject *o, PyObject *prompt, int chat, const char *system, int32_t **ids, int64_t *n)
{
    ModelObject *self = (ModelObject *)o;
    if (model_open(self) < 0) return -1;
    return prompt_ids(self, prompt, chat, system, ids, n);
}

int wkpy_model_init(PyObject *module)
{
    PyTypeObject *types[] = { &Tokenizer_Type, &TokenStream_Type, &Model_Type, &Generation_Type };
    const char *names[] = { "Tokenizer", "TokenStream", "Model", "Generation" };
    for (int i = 0; i < 4; i++)
        if (wkpy_add_type(module, names[i], types[i]) < 0) return -1;
    return PyModule_AddFunctions(module, model_functions);
}
