/* _wick.c — the CPython extension behind `import wick`: the Tensor type (a
 * handle on a wick tensor), creation from Python data and from any buffer,
 * the buffer protocol and DLPack (both ways), every op of wick.h as a
 * function or a method, and wick's errors as Python exceptions.
 *
 * Written against CPython's C API and wick's public header only. The
 * Python half (wick/__init__.py) adds the numpy and ml_dtypes glue (bf16
 * and f8e4m3 arrays), repr, and the DLPack negotiation with a producer.
 *
 * Rules kept throughout:
 *   - Every wick call that may take time runs with the GIL released (the
 *     CALL macro); Tensor objects passed in stay referenced by the caller's
 *     arguments meanwhile, so their handles cannot go.
 *   - A NULL from wick becomes an exception carrying wk_last_error() (the
 *     calling thread's, which is the one that made the call).
 *   - Memory that Python owns (a buffer, a DLPack capsule) is wrapped with
 *     wk_from_external; its release callback takes the GIL, since wick may
 *     let go of the last view from any thread.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>
#include <stdlib.h>
#include <stdio.h>
#include "wick.h"
#include "wick_ext.h"
#include "dlpack.h"
#include "_wick.h"

/* Run a wick call with the GIL released; evaluates to its result. */
#define CALL(T, expr)                                                                                  \
    __extension__({                                                                                    \
        T r_;                                                                                          \
        Py_BEGIN_ALLOW_THREADS r_ = (expr);                                                            \
        Py_END_ALLOW_THREADS r_;                                                                       \
    })
#define CALLT(expr) CALL(wk_tensor *, expr)
#define CALLS(expr) CALL(wk_status, expr)

/* ------------------------------------------------------------------ */
/* errors                                                              */

PyObject *exc_for(wk_status s)
{
    switch (s) {
    case WK_ERR_ARGUMENT:
    case WK_ERR_SHAPE:
    case WK_ERR_DEVICE: return PyExc_ValueError;
    case WK_ERR_DTYPE: return PyExc_TypeError;
    case WK_ERR_INDEX: return PyExc_IndexError;
    case WK_ERR_MEMORY: return PyExc_MemoryError;
    case WK_ERR_UNSUPPORTED: return PyExc_NotImplementedError;   /* a RuntimeError */
    case WK_ERR_IO: return PyExc_OSError;
    default: return PyExc_RuntimeError;
    }
}

/* Raise wick's last error of this thread; returns NULL. */
PyObject *raise_wk(void)
{
    wk_status s = wk_last_status();
    const char *m = wk_last_error();
    if (PyErr_Occurred()) return NULL;
    PyErr_SetString(exc_for(s), m && *m ? m : "wick call failed");
    return NULL;
}

static PyObject *check_status(wk_status s)
{
    if (s != WK_OK) return raise_wk();
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ */
/* devices: opened once per name, kept open while the module lives      */

typedef struct {
    char name[48];
    wk_device *dev;
} dev_entry;
static dev_entry dev_cache[64];
static int dev_cache_n;
static wk_device *cpu_dev;

static wk_device *open_device(const char *name)
{
    for (int i = 0; i < dev_cache_n; i++)
        if (!strcmp(dev_cache[i].name, name)) return dev_cache[i].dev;
    wk_device *d = wk_device_open(name);
    if (!d) {
        raise_wk();
        return NULL;
    }
    if (dev_cache_n < (int)(sizeof dev_cache / sizeof *dev_cache) && strlen(name) < sizeof dev_cache[0].name) {
        strcpy(dev_cache[dev_cache_n].name, name);
        dev_cache[dev_cache_n++].dev = d;
    } else {
        wk_device_close(d);   /* the device stays open through its tensors */
        /* an opened device that is not cached: open again by name gives it */
        d = NULL;
        for (int i = 0; i < dev_cache_n; i++)
            if (!strcmp(wk_device_name(dev_cache[i].dev), name)) d = dev_cache[i].dev;
        if (!d) PyErr_Format(PyExc_ValueError, "too many device names in use (%s)", name);
    }
    return d;
}

/* ------------------------------------------------------------------ */
/* the Tensor type                                                     */

typedef struct {
    PyObject_HEAD
    wk_tensor *t;
    int raw;                 /* buffer export as raw bits (bf16: 'H', f8: 'B') */
    PyObject *weakrefs;
} TensorObject;

static PyTypeObject Tensor_Type;
static PyObject *hook_numpy, *hook_repr;   /* set by wick/__init__.py */

#define IS_TENSOR(o) PyObject_TypeCheck((o), &Tensor_Type)
#define TT(o) (((TensorObject *)(o))->t)

/* A new Tensor object owning t (NULL t: raise wick's error). */
PyObject *wrap(wk_tensor *t)
{
    if (!t) return raise_wk();
    TensorObject *o = PyObject_New(TensorObject, &Tensor_Type);
    if (!o) {
        wk_release(t);
        return NULL;
    }
    o->t = t;
    o->raw = 0;
    o->weakrefs = NULL;
    wkpy_graph_keep((PyObject *)o, t);   /* made while a Graph records: the Graph keeps it too */
    return (PyObject *)o;
}

static void Tensor_dealloc(TensorObject *self)
{
    if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
    wk_tensor *t = self->t;
    self->t = NULL;
    wk_release(t);
    PyObject_Del(self);
}

wk_tensor *wkpy_tensor_of(PyObject *o)
{
    if (IS_TENSOR(o)) return TT(o);
    PyErr_Format(PyExc_TypeError, "a wick.Tensor is needed, not %s", Py_TYPE(o)->tp_name);
    return NULL;
}

wk_device *device_of(PyObject *o)
{
    if (!o || o == Py_None) {
        if (!cpu_dev) cpu_dev = open_device("cpu");
        return cpu_dev;
    }
    if (IS_TENSOR(o)) return wk_tensor_device(TT(o));
    if (PyUnicode_Check(o)) {
        const char *s = PyUnicode_AsUTF8(o);
        if (!s) return NULL;
        return open_device(s);
    }
    PyObject *s = PyObject_Str(o);   /* torch.device('cuda', 0) -> 'cuda:0' */
    if (!s) return NULL;
    const char *c = PyUnicode_AsUTF8(s);
    wk_device *d = c ? open_device(c) : NULL;
    Py_DECREF(s);
    return d;
}

/* ------------------------------------------------------------------ */
/* dtypes: wick's names, numpy's and torch's, numpy dtypes and types     */

static const struct {
    const char *alias;
    wk_dtype dt;
} dtype_aliases[] = {
    { "uint8", WK_U8 },     { "bool", WK_U8 },         { "uint32", WK_U32 },  { "int16", WK_I16 },
    { "short", WK_I16 },    { "int32", WK_I32 },       { "int", WK_I32 },     { "int64", WK_I64 },
    { "long", WK_I64 },     { "bfloat16", WK_BF16 },   { "float16", WK_F16 }, { "half", WK_F16 },
    { "float32", WK_F32 },  { "float", WK_F32 },       { "float64", WK_F64 }, { "double", WK_F64 },
    { "float8_e4m3fn", WK_F8E4M3 }, { "float8_e4m3", WK_F8E4M3 }, { "e4m3", WK_F8E4M3 },
};

static bool dtype_from_str(const char *s, wk_dtype *out)
{
    if (!strncmp(s, "torch.", 6)) s += 6;
    if (wk_dtype_from_name(s, out)) return true;
    for (size_t i = 0; i < sizeof dtype_aliases / sizeof *dtype_aliases; i++)
        if (!strcmp(s, dtype_aliases[i].alias)) {
            *out = dtype_aliases[i].dt;
            return true;
        }
    return false;
}

/* o: a str, a numpy dtype (its .name), a numpy scalar type or ml_dtypes
 * type (its __name__), a torch dtype (str 'torch.float32'). */
int parse_dtype(PyObject *o, wk_dtype *out)
{
    PyObject *s = NULL;
    if (PyUnicode_Check(o)) {
        s = o;
        Py_INCREF(s);
    } else if (PyType_Check(o)) {
        if (o == (PyObject *)&PyFloat_Type) s = PyUnicode_FromString("f32");
        else if (o == (PyObject *)&PyLong_Type) s = PyUnicode_FromString("i64");
        else if (o == (PyObject *)&PyBool_Type) s = PyUnicode_FromString("u8");
        else s = PyObject_GetAttrString(o, "__name__");
    } else if (PyObject_HasAttrString(o, "name") && PyObject_HasAttrString(o, "itemsize")) {
        s = PyObject_GetAttrString(o, "name");
    } else {
        s = PyObject_Str(o);
    }
    if (!s) return -1;
    const char *c = PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : NULL;
    bool ok = c && dtype_from_str(c, out);
    if (!ok && !PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "unknown dtype %R", o);
    Py_DECREF(s);
    return ok ? 0 : -1;
}

static int dtype_conv(PyObject *o, void *out) { return parse_dtype(o, (wk_dtype *)out) == 0; }

/* ------------------------------------------------------------------ */
/* argument helpers                                                    */

static int as_tensor_arg(PyObject *o, void *out)
{
    if (!IS_TENSOR(o)) {
        PyErr_Format(PyExc_TypeError, "expected a wick.Tensor, got %s", Py_TYPE(o)->tp_name);
        return 0;
    }
    *(wk_tensor **)out = TT(o);
    return 1;
}

static int as_tensor_or_none(PyObject *o, void *out)
{
    if (o == Py_None) {
        *(wk_tensor **)out = NULL;
        return 1;
    }
    return as_tensor_arg(o, out);
}

/* A shape from an int or a sequence of ints. */
static int parse_shape(PyObject *o, wk_shape *s)
{
    memset(s, 0, sizeof *s);
    if (PyLong_Check(o)) {
        s->rank = 1;
        s->dims[0] = PyLong_AsLongLong(o);
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *seq = PySequence_Fast(o, "a shape is an int or a sequence of ints");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > WK_MAX_RANK) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "rank %zd is more than %d", n, WK_MAX_RANK);
        return -1;
    }
    s->rank = (int)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyIndex_Check(it)) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_TypeError, "shape entries are ints, got %s", Py_TYPE(it)->tp_name);
            return -1;
        }
        PyObject *ix = PyNumber_Index(it);
        s->dims[i] = ix ? PyLong_AsLongLong(ix) : -1;
        Py_XDECREF(ix);
        if (PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

static int shape_conv(PyObject *o, void *out) { return parse_shape(o, (wk_shape *)out) == 0; }

/* A shape given as f(2, 3) or f((2, 3)). */
static int shape_from_args(PyObject *args, wk_shape *s)
{
    if (PyTuple_GET_SIZE(args) == 1 && !PyLong_Check(PyTuple_GET_ITEM(args, 0)))
        return parse_shape(PyTuple_GET_ITEM(args, 0), s);
    return parse_shape(args, s);
}

/* dims for reductions: None (all), an int or a sequence; *n = -1 for all. */
static int parse_dims(PyObject *o, int *dims, int *n)
{
    if (!o || o == Py_None) {
        *n = -1;
        return 0;
    }
    wk_shape s;
    if (parse_shape(o, &s) < 0) return -1;
    for (int i = 0; i < s.rank; i++) dims[i] = (int)s.dims[i];
    *n = s.rank;
    return 0;
}

/* ------------------------------------------------------------------ */
/* memory of Python owners                                             */

static void release_pybuffer(void *ctx)
{
    Py_buffer *b = ctx;
    if (!Py_IsInitialized()) return;   /* interpreter gone: leak rather than crash */
    PyGILState_STATE g = PyGILState_Ensure();
    PyBuffer_Release(b);
    PyGILState_Release(g);
    PyMem_RawFree(b);
}

static void release_tensor_cb(void *ctx) { wk_release((wk_tensor *)ctx); }

/* A view of t's memory with another layout (a slice with a step): t is
 * kept alive by the view. dims/strides in elements from t's first element. */
static wk_tensor *strided_view(wk_tensor *t, int rank, const int64_t *dims, const int64_t *strides)
{
    wk_shape s = { rank, { 0 } };
    for (int i = 0; i < rank; i++) s.dims[i] = dims[i];
    wk_tensor *keep = wk_retain(t);
    wk_tensor *r = wk_from_external(wk_tensor_device(t), wk_tensor_dtype(t), s, strides, wk_tensor_data(t),
                                    release_tensor_cb, keep);
    if (!r) wk_release(keep);
    return r;
}

static const char *buffer_format(wk_dtype dt, int raw)
{
    switch (dt) {
    case WK_U8: return "B";
    case WK_U32: return "I";
    case WK_I16: return "h";
    case WK_I32: return "i";
    case WK_I64: return "q";
    case WK_F16: return "e";
    case WK_F32: return "f";
    case WK_F64: return "d";
    case WK_BF16: return raw ? "H" : NULL;
    case WK_F8E4M3: return raw ? "B" : NULL;
    default: return NULL;
    }
}

/* The wick dtype of a buffer format ('<f', '=q', 'l', ...). */
static bool dtype_of_format(const char *f, Py_ssize_t itemsize, wk_dtype *dt)
{
    if (!f) f = "B";
    if (*f == '@' || *f == '=' || *f == '<' || *f == '!' || *f == '>') {
        if (*f == '>' || *f == '!') return false;   /* big-endian */
        f++;
    }
    if (!f[0] || f[1]) return false;
    switch (f[0]) {
    case 'B': case '?': *dt = WK_U8; return itemsize == 1;
    case 'h': *dt = WK_I16; return itemsize == 2;
    case 'e': *dt = WK_F16; return itemsize == 2;
    case 'f': *dt = WK_F32; return itemsize == 4;
    case 'd': *dt = WK_F64; return itemsize == 8;
    case 'i': case 'l': case 'q': case 'n':
        if (itemsize == 4) *dt = WK_I32;
        else if (itemsize == 8) *dt = WK_I64;
        else if (itemsize == 2) *dt = WK_I16;
        else return false;
        return true;
    case 'I': case 'L': *dt = WK_U32; return itemsize == 4;
    default: return false;
    }
}

/* A tensor from any object with the buffer protocol. Zero-copy (on the cpu,
 * sharing the buffer's memory, which stays referenced) unless copy, a
 * device other than the cpu, or a layout wick cannot view (negative or
 * unaligned strides) asks for a copy; copy == 0 forbids one (-1: as
 * needed). dt_given: use dt for the buffer's bits (same item size). */
static PyObject *tensor_from_buffer(PyObject *obj, bool dt_given, wk_dtype dt, wk_device *dev, int copy)
{
    Py_buffer *b = PyMem_RawMalloc(sizeof *b);
    if (!b) return PyErr_NoMemory();
    bool readonly = false;
    if (PyObject_GetBuffer(obj, b, PyBUF_RECORDS) < 0) {
        PyErr_Clear();
        if (PyObject_GetBuffer(obj, b, PyBUF_RECORDS_RO) < 0) {
            PyMem_RawFree(b);
            return NULL;
        }
        readonly = true;
    }
    wk_dtype bdt;
    if (!dtype_of_format(b->format, b->itemsize, &bdt) && !dt_given) {
        PyErr_Format(PyExc_TypeError, "buffer format '%s' (%zd-byte items) has no wick dtype", b->format ? b->format : "B",
                     b->itemsize);
        goto fail;
    }
    if (dt_given) {
        if (wk_dtype_is_quantized(dt)) {
            PyErr_SetString(PyExc_TypeError, "a block-quantized tensor comes from bytes: wick.frombuffer(data, dtype, shape)");
            goto fail;
        }
        if ((size_t)b->itemsize != wk_dtype_size(dt)) {
            PyErr_Format(PyExc_TypeError, "buffer items are %zd bytes, %s takes %zu", b->itemsize, wk_dtype_name(dt),
                         wk_dtype_size(dt));
            goto fail;
        }
        bdt = dt;
    }
    if (b->ndim > WK_MAX_RANK) {
        PyErr_Format(PyExc_ValueError, "rank %d is more than %d", b->ndim, WK_MAX_RANK);
        goto fail;
    }
    wk_shape s = { b->ndim, { 0 } };
    int64_t strides[WK_MAX_RANK] = { 0 };
    bool viewable = ((uintptr_t)b->buf % (uintptr_t)b->itemsize) == 0;
    for (int i = 0; i < b->ndim; i++) {
        s.dims[i] = b->shape[i];
        Py_ssize_t st = b->strides ? b->strides[i] : 0;
        if (st < 0 || st % b->itemsize) viewable = false;
        strides[i] = st / b->itemsize;
    }
    if (!b->strides && b->ndim > 0) {   /* C-contiguous by the protocol */
        int64_t acc = 1;
        for (int i = b->ndim - 1; i >= 0; i--) {
            strides[i] = acc;
            acc *= s.dims[i];
        }
    }
    const bool need_copy = copy == 1 || readonly || !viewable || strcmp(wk_device_name(dev), "cpu") != 0;
    if (need_copy && copy == 0) {
        PyErr_SetString(PyExc_ValueError,
                        readonly ? "the buffer is read-only: copy=False cannot share it"
                                 : "this buffer cannot be shared without a copy (device, strides or alignment)");
        goto fail;
    }
    if (!viewable) {   /* copy through a contiguous host block */
        void *tmp = PyMem_RawMalloc(b->len ? (size_t)b->len : 1);
        if (!tmp) {
            PyErr_NoMemory();
            goto fail;
        }
        if (PyBuffer_ToContiguous(tmp, b, b->len, 'C') < 0) {
            PyMem_RawFree(tmp);
            goto fail;
        }
        wk_tensor *t = CALLT(wk_from_host(dev, bdt, s, tmp));
        PyMem_RawFree(tmp);
        PyBuffer_Release(b);
        PyMem_RawFree(b);
        return wrap(t);
    }
    wk_tensor *ext = wk_from_external(device_of(NULL), bdt, s, strides, b->buf, release_pybuffer, b);
    if (!ext) {
        raise_wk();
        goto fail;
    }
    /* from here the buffer belongs to ext */
    if (!need_copy) return wrap(ext);
    wk_tensor *t = strcmp(wk_device_name(dev), "cpu") ? CALLT(wk_to_device(ext, dev)) : CALLT(wk_copy(ext));
    if (!t) {
        PyObject *r = raise_wk();
        wk_release(ext);
        return r;
    }
    wk_release(ext);
    return wrap(t);
fail:
    PyBuffer_Release(b);
    PyMem_RawFree(b);
    return NULL;
}

/* ------------------------------------------------------------------ */
/* nested Python data (lists, tuples, numbers)                         */

typedef struct {
    int rank;
    int64_t dims[WK_MAX_RANK];
    int64_t n, cap;
    double *f;
    int64_t *i;
    bool all_int, all_bool;
} nest;

static int nest_shape(PyObject *o, nest *ns)
{
    ns->rank = 0;
    Py_INCREF(o);
    while (PyList_Check(o) || PyTuple_Check(o)) {
        if (ns->rank == WK_MAX_RANK) {
            Py_DECREF(o);
            PyErr_Format(PyExc_ValueError, "nesting deeper than %d", WK_MAX_RANK);
            return -1;
        }
        Py_ssize_t n = PySequence_Size(o);
        ns->dims[ns->rank++] = n;
        if (n == 0) break;
        PyObject *first = PySequence_GetItem(o, 0);
        Py_DECREF(o);
        if (!first) return -1;
        o = first;
    }
    Py_DECREF(o);
    return 0;
}

static int nest_fill(PyObject *o, nest *ns, int depth)
{
    if (depth < ns->rank) {
        if (!PyList_Check(o) && !PyTuple_Check(o)) {
            PyErr_SetString(PyExc_ValueError, "ragged nested sequence: a number where a list was expected");
            return -1;
        }
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        if (n != ns->dims[depth]) {
            PyErr_Format(PyExc_ValueError, "ragged nested sequence: length %zd at depth %d, expected %lld", n, depth,
                         (long long)ns->dims[depth]);
            return -1;
        }
        for (Py_ssize_t k = 0; k < n; k++)
            if (nest_fill(PySequence_Fast_GET_ITEM(o, k), ns, depth + 1) < 0) return -1;
        return 0;
    }
    if (PyList_Check(o) || PyTuple_Check(o)) {
        PyErr_SetString(PyExc_ValueError, "ragged nested sequence: a list where a number was expected");
        return -1;
    }
    if (ns->n >= ns->cap) {
        PyErr_SetString(PyExc_ValueError, "ragged nested sequence");
        return -1;
    }
    double v;
    int64_t iv = 0;
    if (PyBool_Check(o)) {
        iv = o == Py_True;
        v = (double)iv;
    } else if (PyLong_Check(o)) {
        int overflow;
        iv = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow) {
            PyErr_SetString(PyExc_OverflowError, "an integer does not fit in 64 bits");
            return -1;
        }
        v = (double)iv;
        ns->all_bool = false;
    } else {
        if (IS_TENSOR(o)) {
            if (wk_tensor_rank(TT(o)) != 0) {
                PyErr_SetString(PyExc_ValueError, "only rank-0 tensors can be elements of a nested list");
                return -1;
            }
        }
        PyObject *fo = PyNumber_Float(o);
        if (!fo) {
            PyErr_Format(PyExc_TypeError, "%s is not a number", Py_TYPE(o)->tp_name);
            return -1;
        }
        v = PyFloat_AS_DOUBLE(fo);
        Py_DECREF(fo);
        ns->all_int = ns->all_bool = false;
    }
    ns->f[ns->n] = v;
    ns->i[ns->n] = iv;
    ns->n++;
    return 0;
}

/* A new tensor holding nested lists/tuples of numbers (or one number).
 * dt_given false: u8 for bools, i64 for ints, f32 otherwise. */
static wk_tensor *tensor_from_nested(PyObject *o, bool dt_given, wk_dtype dt, wk_device *dev)
{
    nest ns = { 0 };
    ns.all_int = ns.all_bool = true;
    if (nest_shape(o, &ns) < 0) return NULL;
    int64_t n = 1;
    for (int d = 0; d < ns.rank; d++) {
        if (ns.dims[d] && n > INT64_MAX / 16 / ns.dims[d]) {
            PyErr_NoMemory();
            return NULL;
        }
        n *= ns.dims[d];
    }
    ns.cap = n;
    ns.f = PyMem_RawMalloc((size_t)(n ? n : 1) * sizeof(double));
    ns.i = PyMem_RawMalloc((size_t)(n ? n : 1) * sizeof(int64_t));
    wk_tensor *t = NULL;
    if (!ns.f || !ns.i) {
        PyErr_NoMemory();
        goto out;
    }
    if (nest_fill(o, &ns, 0) < 0) goto out;
    if (ns.n != n) {
        PyErr_SetString(PyExc_ValueError, "ragged nested sequence");
        goto out;
    }
    if (!dt_given) dt = n == 0 ? WK_F32 : ns.all_bool ? WK_U8 : ns.all_int ? WK_I64 : WK_F32;
    wk_shape s = { ns.rank, { 0 } };
    for (int d = 0; d < ns.rank; d++) s.dims[d] = ns.dims[d];
    wk_dtype src = ns.all_int && !wk_dtype_is_float(dt) ? WK_I64 : WK_F64;
    const void *data = src == WK_I64 ? (const void *)ns.i : (const void *)ns.f;
    wk_tensor *h = CALLT(wk_from_host(dev, src, s, data));
    if (h && src != dt) {
        t = CALLT(wk_to_dtype(h, dt));
        wk_release(h);
    } else {
        t = h;
    }
    if (!t) raise_wk();
out:
    PyMem_RawFree(ns.f);
    PyMem_RawFree(ns.i);
    return t;
}

/* Any Python data as a tensor on dev: a Tensor (moved and cast as asked,
 * shared when nothing changes unless copy), a buffer, nested sequences or
 * a number. */
static PyObject *to_tensor(PyObject *o, bool dt_given, wk_dtype dt, wk_device *dev, int copy)
{
    if (IS_TENSOR(o)) {
        wk_tensor *t = TT(o);
        wk_tensor *r = wk_retain(t);
        if (wk_tensor_device(r) != dev) {
            wk_tensor *m = CALLT(wk_to_device(r, dev));
            wk_release(r);
            if (!m) return raise_wk();
            r = m;
        } else if (copy == 1 && !(dt_given && dt != wk_tensor_dtype(t))) {
            wk_tensor *m = CALLT(wk_copy(r));
            wk_release(r);
            if (!m) return raise_wk();
            r = m;
        }
        if (dt_given && dt != wk_tensor_dtype(r)) {
            wk_tensor *m = CALLT(wk_to_dtype(r, dt));
            wk_release(r);
            if (!m) return raise_wk();
            r = m;
        }
        return wrap(r);
    }
    if (PyObject_CheckBuffer(o) && !PyUnicode_Check(o)) {
        if (dt_given) {
            /* the buffer's own dtype first, then a cast (a buffer of f64 to f32) */
            Py_buffer b;
            if (PyObject_GetBuffer(o, &b, PyBUF_RECORDS_RO) < 0) return NULL;
            wk_dtype bdt;
            bool known = dtype_of_format(b.format, b.itemsize, &bdt);
            PyBuffer_Release(&b);
            if (known && bdt != dt) {
                PyObject *t = tensor_from_buffer(o, false, bdt, dev, copy == 0 ? 0 : -1);
                if (!t) return NULL;
                wk_tensor *c = CALLT(wk_to_dtype(TT(t), dt));
                Py_DECREF(t);
                return wrap(c);
            }
        }
        return tensor_from_buffer(o, dt_given, dt, dev, copy);
    }
    if (copy == 0) {
        PyErr_Format(PyExc_ValueError, "copy=False: a %s cannot be shared, only copied", Py_TYPE(o)->tp_name);
        return NULL;
    }
    wk_tensor *t = tensor_from_nested(o, dt_given, dt, dev);
    return t ? wrap(t) : NULL;
}

/* An operand of a binary op: a Tensor as is; a number as a rank-0 tensor
 * of like's dtype on its device; other data converted on like's device.
 * Returns a new reference to a Tensor, or NULL with an error, or
 * Py_NotImplemented (new reference) when o is no operand. */
static PyObject *operand(PyObject *o, const wk_tensor *like)
{
    if (IS_TENSOR(o)) {
        Py_INCREF(o);
        return o;
    }
    wk_dtype dt = wk_tensor_dtype(like);
    if (PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || (PyIndex_Check(o) && !PySequence_Check(o))) {
        double v;
        if (PyFloat_Check(o)) {
            v = PyFloat_AS_DOUBLE(o);
            if (!wk_dtype_is_float(dt) && v != (double)(int64_t)v) {
                PyErr_Format(PyExc_TypeError, "a float scalar (%R) with a %s tensor: cast the tensor first (.to('f32'))", o,
                             wk_dtype_name(dt));
                return NULL;
            }
        } else {
            v = PyLong_AsDouble(o);
            if (v == -1.0 && PyErr_Occurred()) return NULL;
        }
        return wrap(wk_full(wk_tensor_device(like), dt, WK_SCALAR, v));
    }
    if (PyFloat_Check(o) == 0 && PyNumber_Check(o) && !PyObject_CheckBuffer(o) && !PySequence_Check(o)) {
        PyObject *f = PyNumber_Float(o);   /* numpy scalars and the like */
        if (!f) return NULL;
        PyObject *r = operand(f, like);
        Py_DECREF(f);
        return r;
    }
    if (PyList_Check(o) || PyTuple_Check(o) || PyObject_CheckBuffer(o))
        return to_tensor(o, true, dt, wk_tensor_device(like), -1);
    Py_RETURN_NOTIMPLEMENTED;
}

/* ------------------------------------------------------------------ */
/* the buffer protocol (cpu tensors, zero-copy)                         */

static bool has_zero_stride(const wk_tensor *t)
{
    for (int d = 0; d < wk_tensor_rank(t); d++)
        if (wk_tensor_stride(t, d) == 0 && wk_tensor_dim(t, d) > 1) return true;
    return false;
}

static int Tensor_getbuffer(TensorObject *self, Py_buffer *view, int flags)
{
    wk_tensor *t = self->t;
    wk_dtype dt = wk_tensor_dtype(t);
    if (strcmp(wk_device_name(wk_tensor_device(t)), "cpu")) {
        PyErr_Format(PyExc_BufferError, "a tensor on %s has no host buffer: use .numpy() or .to('cpu')",
                     wk_device_name(wk_tensor_device(t)));
        return -1;
    }
    const char *fmt = buffer_format(dt, self->raw);
    if (!fmt) {
        PyErr_Format(PyExc_BufferError, "%s has no buffer format (np.asarray and .numpy() use ml_dtypes for it)",
                     wk_dtype_name(dt));
        return -1;
    }
    const bool ro = has_zero_stride(t);
    if ((flags & PyBUF_WRITABLE) && ro) {
        PyErr_SetString(PyExc_BufferError, "a broadcast view (stride 0) is read-only");
        return -1;
    }
    int rank = wk_tensor_rank(t);
    if (!(flags & PyBUF_STRIDES) && !wk_tensor_is_contiguous(t)) {
        PyErr_SetString(PyExc_BufferError, "the tensor is not contiguous and the consumer asked for no strides");
        return -1;
    }
    Py_ssize_t *arr = PyMem_Malloc(sizeof(Py_ssize_t) * 2 * (size_t)(rank ? rank : 1));
    if (!arr) {
        PyErr_NoMemory();
        return -1;
    }
    const Py_ssize_t isz = (Py_ssize_t)wk_dtype_size(dt);
    for (int d = 0; d < rank; d++) {
        arr[d] = (Py_ssize_t)wk_tensor_dim(t, d);
        arr[rank + d] = (Py_ssize_t)wk_tensor_stride(t, d) * isz;
    }
    view->buf = wk_tensor_data(t);
    view->obj = (PyObject *)self;
    Py_INCREF(self);
    view->len = (Py_ssize_t)wk_tensor_numel(t) * isz;
    view->readonly = ro;
    view->itemsize = isz;
    view->format = (flags & PyBUF_FORMAT) ? (char *)fmt : NULL;
    view->ndim = rank;
    view->shape = (flags & PyBUF_ND) ? arr : NULL;
    view->strides = (flags & PyBUF_STRIDES) ? arr + rank : NULL;
    view->suboffsets = NULL;
    view->internal = arr;
    return 0;
}

static void Tensor_releasebuffer(TensorObject *self, Py_buffer *view)
{
    (void)self;
    PyMem_Free(view->internal);
}

static PyBufferProcs Tensor_as_buffer = {
    (getbufferproc)Tensor_getbuffer,
    (releasebufferproc)Tensor_releasebuffer,
};

/* ------------------------------------------------------------------ */
/* DLPack                                                              */

static bool dl_dtype_of(wk_dtype dt, WKDLDataType *o)
{
    static const WKDLDataType m[WK_DENSE_DTYPE_COUNT] = {
        [WK_U8] = { WKDL_UINT, 8, 1 },    [WK_U32] = { WKDL_UINT, 32, 1 },  [WK_I16] = { WKDL_INT, 16, 1 },
        [WK_I32] = { WKDL_INT, 32, 1 },   [WK_I64] = { WKDL_INT, 64, 1 },   [WK_BF16] = { WKDL_BFLOAT, 16, 1 },
        [WK_F16] = { WKDL_FLOAT, 16, 1 }, [WK_F32] = { WKDL_FLOAT, 32, 1 }, [WK_F64] = { WKDL_FLOAT, 64, 1 },
        [WK_F8E4M3] = { WKDL_FLOAT8_E4M3FN, 8, 1 },
    };
    if ((unsigned)dt >= WK_DENSE_DTYPE_COUNT) return false;
    *o = m[dt];
    return true;
}

static bool wk_dtype_of_dl(WKDLDataType d, wk_dtype *out)
{
    if (d.lanes != 1) return false;
    for (int i = 0; i < WK_DENSE_DTYPE_COUNT; i++) {
        WKDLDataType m;
        dl_dtype_of((wk_dtype)i, &m);
        if (m.code == d.code && m.bits == d.bits) {
            *out = (wk_dtype)i;
            return true;
        }
    }
    if (d.code == WKDL_BOOL && d.bits == 8) {
        *out = WK_U8;
        return true;
    }
    return false;
}

/* (DLPack device type, id) of a wick device name */
static void dl_device_of(const wk_device *dev, int32_t *type, int32_t *id)
{
    const char *n = wk_device_name(dev);
    *id = 0;
    if (!strncmp(n, "cuda", 4)) *type = WKDL_CUDA;
    else if (!strncmp(n, "rocm", 4)) *type = WKDL_ROCM;
    else *type = WKDL_CPU;
    const char *c = strchr(n, ':');
    if (c) *id = atoi(c + 1);
}

typedef struct {
    WKDLManagedTensor m;
    int64_t dims[2 * WK_MAX_RANK];
} dl_legacy;
typedef struct {
    WKDLManagedTensorVersioned m;
    int64_t dims[2 * WK_MAX_RANK];
} dl_versioned;

static void dl_legacy_deleter(WKDLManagedTensor *self)
{
    wk_release((wk_tensor *)self->manager_ctx);
    free(self);
}
static void dl_versioned_deleter(WKDLManagedTensorVersioned *self)
{
    wk_release((wk_tensor *)self->manager_ctx);
    free(self);
}

static void dl_capsule_destructor(PyObject *cap)
{
    if (PyCapsule_IsValid(cap, "dltensor")) {
        WKDLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
        if (m && m->deleter) m->deleter(m);
    } else if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        WKDLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
        if (m && m->deleter) m->deleter(m);
    }
    PyErr_Clear();
}

static void fill_dl_tensor(WKDLTensor *d, wk_tensor *t, int64_t *dims)
{
    const int rank = wk_tensor_rank(t);
    d->data = wk_tensor_data(t);
    dl_device_of(wk_tensor_device(t), &d->device.device_type, &d->device.device_id);
    d->ndim = rank;
    dl_dtype_of(wk_tensor_dtype(t), &d->dtype);
    for (int i = 0; i < rank; i++) {
        dims[i] = wk_tensor_dim(t, i);
        dims[WK_MAX_RANK + i] = wk_tensor_stride(t, i);
    }
    d->shape = dims;
    d->strides = dims + WK_MAX_RANK;
    d->byte_offset = 0;
}

/* t.__dlpack__(stream=, max_version=, dl_device=, copy=): the capsule */
static PyObject *dlpack_capsule(wk_tensor *t, PyObject *stream, PyObject *max_version, PyObject *dl_device,
                                PyObject *copy)
{
    WKDLDataType dlt;
    if (!dl_dtype_of(wk_tensor_dtype(t), &dlt)) {
        PyErr_Format(PyExc_BufferError, "DLPack has no %s dtype", wk_dtype_name(wk_tensor_dtype(t)));
        return NULL;
    }
    long stream_v = 0;
    bool has_stream = stream != Py_None;
    if (has_stream) {
        stream_v = PyLong_AsLong(stream);
        if (stream_v == -1 && PyErr_Occurred()) return NULL;
    }
    int want_copy = copy == Py_None ? -1 : PyObject_IsTrue(copy);
    if (want_copy < -1) return NULL;
    bool versioned = false;
    if (max_version != Py_None) {
        long major = -1;
        if (PyTuple_Check(max_version) && PyTuple_GET_SIZE(max_version) >= 1)
            major = PyLong_AsLong(PyTuple_GET_ITEM(max_version, 0));
        if (major == -1 && PyErr_Occurred()) return NULL;
        versioned = major >= 1;
    }
    wk_tensor *src = wk_retain(t);
    bool copied = false;
    if (dl_device != Py_None) {
        int32_t mt, mi;
        long dt_ = -1, di = -1;
        dl_device_of(wk_tensor_device(t), &mt, &mi);
        if (PyTuple_Check(dl_device) && PyTuple_GET_SIZE(dl_device) == 2) {
            dt_ = PyLong_AsLong(PyTuple_GET_ITEM(dl_device, 0));
            di = PyLong_AsLong(PyTuple_GET_ITEM(dl_device, 1));
        }
        if (PyErr_Occurred()) goto fail;
        if (dt_ != mt || di != mi) {
            if (want_copy == 0) {
                PyErr_SetString(PyExc_BufferError, "dl_device differs from the tensor's device and copy=False");
                goto fail;
            }
            char name[48];
            if (dt_ == WKDL_CPU || dt_ == WKDL_CUDA_HOST || dt_ == WKDL_ROCM_HOST) snprintf(name, sizeof name, "cpu");
            else if (dt_ == WKDL_CUDA) snprintf(name, sizeof name, "cuda:%ld", di);
            else if (dt_ == WKDL_ROCM) snprintf(name, sizeof name, "rocm:%ld", di);
            else {
                PyErr_Format(PyExc_BufferError, "wick has no DLPack device type %ld", dt_);
                goto fail;
            }
            wk_device *dev = open_device(name);
            if (!dev) goto fail;
            wk_tensor *m = CALLT(wk_to_device(src, dev));
            if (!m) {
                raise_wk();
                goto fail;
            }
            wk_release(src);
            src = m;
            copied = true;
        }
    }
    if (want_copy == 1 && !copied) {
        wk_tensor *m = CALLT(wk_copy(src));
        if (!m) {
            raise_wk();
            goto fail;
        }
        wk_release(src);
        src = m;
        copied = true;
    }
    /* the consumer reads on its stream (DLPack: None means the legacy
     * default stream on CUDA, 1; the default stream on ROCm, 0): that
     * stream waits for wick's queued work on the tensor, on the device,
     * without blocking the host; -1: the consumer orders it itself */
    wk_device *sdev = wk_tensor_device(src);
    if (strcmp(wk_device_name(sdev), "cpu") && !(has_stream && stream_v == -1)) {
        const bool rocm = !strncmp(wk_device_name(sdev), "rocm", 4);
        void *consumer = (void *)(intptr_t)(has_stream ? stream_v : rocm ? 0 : 1);
        if (CALLS(wk_stream_wait_device(consumer, sdev)) != WK_OK) {
            raise_wk();
            goto fail;
        }
    }
    PyObject *cap;
    if (versioned) {
        dl_versioned *v = calloc(1, sizeof *v);
        if (!v) {
            PyErr_NoMemory();
            goto fail;
        }
        v->m.version.major = 1;
        v->m.version.minor = 0;
        v->m.manager_ctx = src;
        v->m.deleter = dl_versioned_deleter;
        v->m.flags = copied ? WKDL_FLAG_IS_COPIED : 0;
        if (has_zero_stride(src)) v->m.flags |= WKDL_FLAG_READ_ONLY;
        fill_dl_tensor(&v->m.dl_tensor, src, v->dims);
        cap = PyCapsule_New(&v->m, "dltensor_versioned", dl_capsule_destructor);
        if (!cap) free(v);
    } else {
        dl_legacy *l = calloc(1, sizeof *l);
        if (!l) {
            PyErr_NoMemory();
            goto fail;
        }
        l->m.manager_ctx = src;
        l->m.deleter = dl_legacy_deleter;
        fill_dl_tensor(&l->m.dl_tensor, src, l->dims);
        cap = PyCapsule_New(&l->m, "dltensor", dl_capsule_destructor);
        if (!cap) free(l);
    }
    if (!cap) goto fail;
    return cap;
fail:
    wk_release(src);
    return NULL;
}

static PyObject *Tensor_dlpack(TensorObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "stream", "max_version", "dl_device", "copy", NULL };
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OOOO:__dlpack__", kwlist, &stream, &max_version, &dl_device, &copy))
        return NULL;
    return dlpack_capsule(self->t, stream, max_version, dl_device, copy);
}

static PyObject *Tensor_dlpack_device(TensorObject *self, PyObject *unused)
{
    (void)unused;
    int32_t type, id;
    dl_device_of(wk_tensor_device(self->t), &type, &id);
    return Py_BuildValue("(ii)", (int)type, (int)id);
}

typedef struct {
    void *managed;
    int versioned;
} dl_import;

static void release_dl_import(void *ctx)
{
    dl_import *d = ctx;
    if (d->managed && Py_IsInitialized()) {
        PyGILState_STATE g = PyGILState_Ensure();
        if (d->versioned) {
            WKDLManagedTensorVersioned *m = d->managed;
            if (m->deleter) m->deleter(m);
        } else {
            WKDLManagedTensor *m = d->managed;
            if (m->deleter) m->deleter(m);
        }
        PyGILState_Release(g);
    }
    PyMem_RawFree(d);
}

/* _from_capsule(capsule, stream=None): a Tensor sharing the memory of a
 * DLPack capsule (the capsule is marked used; the producer's deleter runs
 * when the last view goes). stream: a GPU stream of the producer's (an
 * int) that wick's stream then waits for on the device, for a capsule
 * made without DLPack's stream argument. */
static PyObject *from_capsule(PyObject *cap, PyObject *stream)
{
    void *wait_on = NULL;
    if (stream != Py_None) {
        wait_on = PyLong_AsVoidPtr(stream);
        if (!wait_on && PyErr_Occurred()) return NULL;
    }
    int versioned;
    void *ptr;
    WKDLTensor *d;
    uint64_t flags = 0;
    if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        WKDLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
        if (m->version.major > 1) {
            PyErr_Format(PyExc_BufferError, "DLPack version %u.%u is newer than wick understands", m->version.major,
                         m->version.minor);
            return NULL;
        }
        versioned = 1;
        ptr = m;
        d = &m->dl_tensor;
        flags = m->flags;
    } else if (PyCapsule_IsValid(cap, "dltensor")) {
        WKDLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
        versioned = 0;
        ptr = m;
        d = &m->dl_tensor;
    } else {
        PyErr_SetString(PyExc_TypeError, "expected an unused DLPack capsule ('dltensor' or 'dltensor_versioned')");
        return NULL;
    }
    wk_dtype dt;
    if (!wk_dtype_of_dl(d->dtype, &dt)) {
        PyErr_Format(PyExc_TypeError, "wick has no dtype for DLPack code %u, %u bits, %u lanes", d->dtype.code,
                     d->dtype.bits, d->dtype.lanes);
        return NULL;
    }
    if (d->ndim < 0 || d->ndim > WK_MAX_RANK) {
        PyErr_Format(PyExc_ValueError, "rank %d is outside 0..%d", d->ndim, WK_MAX_RANK);
        return NULL;
    }
    char name[48];
    switch (d->device.device_type) {
    case WKDL_CPU:
    case WKDL_CUDA_HOST:
    case WKDL_ROCM_HOST: snprintf(name, sizeof name, "cpu"); break;
    case WKDL_CUDA: snprintf(name, sizeof name, "cuda:%d", d->device.device_id); break;
    case WKDL_ROCM: snprintf(name, sizeof name, "rocm:%d", d->device.device_id); break;
    default:
        PyErr_Format(PyExc_BufferError, "wick has no device for DLPack device type %d", d->device.device_type);
        return NULL;
    }
    wk_device *dev = open_device(name);
    if (!dev) return NULL;
    wk_shape s = { d->ndim, { 0 } };
    int64_t strides[WK_MAX_RANK];
    for (int i = 0; i < d->ndim; i++) {
        s.dims[i] = d->shape[i];
        if (d->strides) {
            strides[i] = d->strides[i];
            if (strides[i] < 0) {
                PyErr_SetString(PyExc_BufferError, "negative strides: make the array contiguous first");
                return NULL;
            }
        }
    }
    dl_import *ctx = PyMem_RawMalloc(sizeof *ctx);
    if (!ctx) return PyErr_NoMemory();
    ctx->managed = ptr;
    ctx->versioned = versioned;
    wk_tensor *t = wk_from_external(dev, dt, s, d->strides ? strides : NULL, (char *)d->data + d->byte_offset,
                                    release_dl_import, ctx);
    if (!t) {
        PyMem_RawFree(ctx);
        return raise_wk();   /* the capsule still owns the tensor */
    }
    if (PyCapsule_SetName(cap, versioned ? "used_dltensor_versioned" : "used_dltensor") < 0) {
        /* cannot happen for a valid capsule; keep ownership consistent */
        ctx->managed = NULL;
    }
    if (stream != Py_None && strcmp(name, "cpu") && CALLS(wk_device_wait_stream(dev, wait_on)) != WK_OK) {
        wk_release(t);
        return raise_wk();
    }
    if (flags & WKDL_FLAG_READ_ONLY) {   /* wick has no read-only tensors: a copy, never a write into it */
        wk_tensor *c = CALLT(wk_copy(t));
        wk_release(t);
        t = c;
    }
    return wrap(t);
}

static PyObject *m_from_capsule(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *cap, *stream = Py_None;
    if (!PyArg_ParseTuple(args, "O|O:_from_capsule", &cap, &stream)) return NULL;
    return from_capsule(cap, stream);
}

/* PyTorch's GPU tensors, both ways, without its Python-level DLPack
 * code: the capsule from torch's C exporter (torch._C._to_dlpack) or
 * taken by its C importer (torch._C._from_dlpack), and the order between
 * the two libraries' streams set by wick (torch's current stream on the
 * device, from torch._C._cuda_getCurrentRawStream). The functions are
 * looked up in the imported torch module (never imported here) and kept
 * while the same module object stays in sys.modules. */
static struct {
    PyObject *mod, *tensor_type, *to_dlpack, *from_dlpack, *current, *strided;
} torch_c;

static PyObject *s_torch, *s_is_cuda, *s_requires_grad, *s_is_conj, *s_is_neg, *s_layout, *s_get_device;

static int intern_one(PyObject **p, const char *name)
{
    if (!*p) *p = PyUnicode_InternFromString(name);
    return *p ? 0 : -1;
}

static int intern_names(void)
{
    return intern_one(&s_torch, "torch") | intern_one(&s_is_cuda, "is_cuda") |
           intern_one(&s_requires_grad, "requires_grad") | intern_one(&s_is_conj, "is_conj") |
           intern_one(&s_is_neg, "is_neg") | intern_one(&s_layout, "layout") | intern_one(&s_get_device, "get_device");
}

/* an attribute, or NULL with no error set */
static PyObject *attr_or_null(PyObject *o, const char *name)
{
    PyObject *r = o ? PyObject_GetAttrString(o, name) : NULL;
    if (!r) PyErr_Clear();
    return r;
}

/* 1: torch is imported (torch_c filled where torch has each function),
 * 0: it is not, -1: error */
static int torch_lookup(void)
{
    if (intern_names() < 0) return -1;
    PyObject *m = PyDict_GetItemWithError(PyImport_GetModuleDict(), s_torch);   /* borrowed */
    if (!m) return PyErr_Occurred() ? -1 : 0;
    if (m == torch_c.mod) return 1;
    Py_CLEAR(torch_c.mod);
    Py_CLEAR(torch_c.tensor_type);
    Py_CLEAR(torch_c.to_dlpack);
    Py_CLEAR(torch_c.from_dlpack);
    Py_CLEAR(torch_c.current);
    Py_CLEAR(torch_c.strided);
    Py_INCREF(m);
    torch_c.mod = m;
    torch_c.tensor_type = attr_or_null(m, "Tensor");
    torch_c.strided = attr_or_null(m, "strided");
    PyObject *c = attr_or_null(m, "_C");
    torch_c.to_dlpack = attr_or_null(c, "_to_dlpack");
    torch_c.from_dlpack = attr_or_null(c, "_from_dlpack");
    torch_c.current = attr_or_null(c, "_cuda_getCurrentRawStream");
    Py_XDECREF(c);
    return 1;
}

/* 1 when o.name (called when call) is true, 0 when false, -1 error */
static int attr_true(PyObject *o, PyObject *name, bool call)
{
    PyObject *v = call ? PyObject_CallMethodNoArgs(o, name) : PyObject_GetAttr(o, name);
    if (!v) return -1;
    const int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* _from_torch(x): wick.from_dlpack's way for a plain torch GPU tensor
 * (strided, no gradient, no conjugate or negative bit: what torch's own
 * __dlpack__ exports as it is); None for anything else, which then goes
 * the protocol's way. */
static PyObject *m_from_torch(PyObject *mod, PyObject *x)
{
    (void)mod;
    const int have = torch_lookup();
    if (have < 0) return NULL;
    if (!have || !torch_c.tensor_type || (PyObject *)Py_TYPE(x) != torch_c.tensor_type || !torch_c.to_dlpack ||
        !torch_c.current || !torch_c.strided)
        Py_RETURN_NONE;
    int ok = attr_true(x, s_is_cuda, false);
    if (ok == 1) ok = !attr_true(x, s_requires_grad, false);
    if (ok == 1) ok = !attr_true(x, s_is_conj, true);
    if (ok == 1) ok = !attr_true(x, s_is_neg, true);
    if (ok == 1) {
        PyObject *lay = PyObject_GetAttr(x, s_layout);
        ok = lay ? PyObject_RichCompareBool(lay, torch_c.strided, Py_EQ) : -1;
        Py_XDECREF(lay);
    }
    if (ok < 0 || PyErr_Occurred()) return NULL;
    if (!ok) Py_RETURN_NONE;
    PyObject *cap = PyObject_CallOneArg(torch_c.to_dlpack, x);
    if (!cap) return NULL;
    PyObject *dev = PyObject_CallMethodNoArgs(x, s_get_device);
    PyObject *stream = dev ? PyObject_CallOneArg(torch_c.current, dev) : NULL;
    Py_XDECREF(dev);
    PyObject *r = stream ? from_capsule(cap, stream) : NULL;
    Py_XDECREF(stream);
    Py_DECREF(cap);
    return r;
}

/* _to_torch(t): a torch tensor sharing a GPU tensor t, torch's current
 * stream on t's device made to wait for wick's work on it; None where
 * torch is not imported, lacks either function or t is on the cpu. */
static PyObject *m_to_torch(PyObject *mod, PyObject *t)
{
    (void)mod;
    if (!IS_TENSOR(t)) {
        PyErr_SetString(PyExc_TypeError, "_to_torch: expected a wick.Tensor");
        return NULL;
    }
    const int have = torch_lookup();
    if (have < 0) return NULL;
    const char *dn = wk_device_name(wk_tensor_device(((TensorObject *)t)->t));
    const char *colon = strchr(dn, ':');
    if (!have || !torch_c.from_dlpack || !torch_c.current || !strcmp(dn, "cpu")) Py_RETURN_NONE;
    PyObject *idx = PyLong_FromLong(colon ? atol(colon + 1) : 0);
    PyObject *stream = idx ? PyObject_CallOneArg(torch_c.current, idx) : NULL;
    Py_XDECREF(idx);
    if (!stream) return NULL;
    PyObject *cap = dlpack_capsule(((TensorObject *)t)->t, stream, Py_None, Py_None, Py_None);
    Py_DECREF(stream);
    if (!cap) return NULL;
    PyObject *r = PyObject_CallOneArg(torch_c.from_dlpack, cap);
    Py_DECREF(cap);
    return r;
}

/* ------------------------------------------------------------------ */
/* Tensor: properties                                                  */

static PyObject *T_shape(TensorObject *self, void *c)
{
    (void)c;
    int r = wk_tensor_rank(self->t);
    PyObject *tup = PyTuple_New(r);
    if (!tup) return NULL;
    for (int d = 0; d < r; d++) PyTuple_SET_ITEM(tup, d, PyLong_FromLongLong(wk_tensor_dim(self->t, d)));
    return tup;
}
static PyObject *T_strides(TensorObject *self, void *c)
{
    (void)c;
    int r = wk_tensor_rank(self->t);
    PyObject *tup = PyTuple_New(r);
    if (!tup) return NULL;
    for (int d = 0; d < r; d++) PyTuple_SET_ITEM(tup, d, PyLong_FromLongLong(wk_tensor_stride(self->t, d)));
    return tup;
}
static PyObject *T_dtype(TensorObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(wk_dtype_name(wk_tensor_dtype(self->t)));
}
static PyObject *T_device(TensorObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(wk_device_name(wk_tensor_device(self->t)));
}
static PyObject *T_ndim(TensorObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(wk_tensor_rank(self->t));
}
static PyObject *T_offset(TensorObject *self, void *c)
{
    (void)c;
    return PyLong_FromLongLong(wk_tensor_offset(self->t));
}
static PyObject *T_itemsize(TensorObject *self, void *c)
{
    (void)c;
    return PyLong_FromSize_t(wk_dtype_size(wk_tensor_dtype(self->t)));
}
static PyObject *T_nbytes(TensorObject *self, void *c)
{
    (void)c;
    return PyLong_FromSize_t(wk_tensor_nbytes(self->t));
}
static PyObject *T_is_quantized(TensorObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(wk_dtype_is_quantized(wk_tensor_dtype(self->t)));
}
static PyObject *T_size_prop(TensorObject *self, void *c)
{
    (void)c;
    return PyLong_FromLongLong(wk_tensor_numel(self->t));
}
/* .T reverses the dims (numpy); .mT swaps the last two */
static PyObject *T_T(TensorObject *self, void *c)
{
    (void)c;
    int r = wk_tensor_rank(self->t), perm[WK_MAX_RANK];
    for (int d = 0; d < r; d++) perm[d] = r - 1 - d;
    return wrap(wk_permute(self->t, perm));
}
static PyObject *T_mT(TensorObject *self, void *c)
{
    (void)c;
    return wrap(wk_transpose(self->t, -2, -1));
}

static PyGetSetDef Tensor_getset[] = {
    { "shape", (getter)T_shape, NULL, "the dims, a tuple of ints", NULL },
    { "strides", (getter)T_strides, NULL, "the strides in elements (not bytes, unlike numpy), a tuple", NULL },
    { "dtype", (getter)T_dtype, NULL, "wick's dtype name: 'f32', 'bf16', 'q4_k', ...", NULL },
    { "device", (getter)T_device, NULL, "the device name: 'cpu', 'cuda:0', 'rocm:1'", NULL },
    { "ndim", (getter)T_ndim, NULL, "the rank", NULL },
    { "offset", (getter)T_offset, NULL, "the view's start in its storage, in elements", NULL },
    { "itemsize", (getter)T_itemsize, NULL, "bytes per element (0 for block-quantized dtypes)", NULL },
    { "nbytes", (getter)T_nbytes, NULL, "bytes of the elements laid out contiguously", NULL },
    { "size", (getter)T_size_prop, NULL, "the number of elements (numpy's size)", NULL },
    { "is_quantized", (getter)T_is_quantized, NULL, "whether the dtype is block-quantized (GGUF)", NULL },
    { "T", (getter)T_T, NULL, "a view with the dims reversed", NULL },
    { "mT", (getter)T_mT, NULL, "a view with the last two dims swapped", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

/* ------------------------------------------------------------------ */
/* Tensor: conversion to Python                                        */

static PyObject *build_list(const void *data, bool is_int, const int64_t *dims, int rank, int64_t *pos)
{
    if (rank == 0) {
        int64_t k = (*pos)++;
        return is_int ? PyLong_FromLongLong(((const int64_t *)data)[k]) : PyFloat_FromDouble(((const double *)data)[k]);
    }
    PyObject *l = PyList_New(dims[0]);
    if (!l) return NULL;
    for (int64_t i = 0; i < dims[0]; i++) {
        PyObject *e = build_list(data, is_int, dims + 1, rank - 1, pos);
        if (!e) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, e);
    }
    return l;
}

static PyObject *T_tolist(TensorObject *self, PyObject *unused)
{
    (void)unused;
    wk_tensor *t = self->t;
    wk_dtype dt = wk_tensor_dtype(t);
    if (wk_dtype_is_quantized(dt)) {
        PyErr_SetString(PyExc_TypeError, "tolist of a block-quantized tensor: dequantize it first");
        return NULL;
    }
    const bool is_int = !wk_dtype_is_float(dt);
    wk_tensor *c = CALLT(wk_to_dtype(t, is_int ? WK_I64 : WK_F64));
    if (!c) return raise_wk();
    size_t bytes = wk_tensor_nbytes(c);
    void *buf = PyMem_RawMalloc(bytes ? bytes : 1);
    if (!buf) {
        wk_release(c);
        return PyErr_NoMemory();
    }
    wk_status st = CALLS(wk_to_host(c, buf, bytes));
    wk_shape s = wk_tensor_shape(c);
    wk_release(c);
    PyObject *r = NULL;
    if (st != WK_OK) raise_wk();
    else {
        int64_t pos = 0;
        r = build_list(buf, is_int, s.dims, s.rank, &pos);
    }
    PyMem_RawFree(buf);
    return r;
}

static PyObject *T_item(TensorObject *self, PyObject *unused)
{
    (void)unused;
    wk_tensor *t = self->t;
    if (wk_tensor_numel(t) != 1) {
        PyErr_Format(PyExc_ValueError, "item() needs exactly one element, the tensor has %lld",
                     (long long)wk_tensor_numel(t));
        return NULL;
    }
    int64_t idx[WK_MAX_RANK] = { 0 };
    double v;
    wk_dtype dt = wk_tensor_dtype(t);
    if (dt == WK_I64) {   /* exact beyond 2^53 */
        int64_t iv;
        wk_tensor *c = CALLT(wk_contiguous(t));
        if (!c) return raise_wk();
        wk_status st = CALLS(wk_to_host(c, &iv, sizeof iv));
        wk_release(c);
        if (st != WK_OK) return raise_wk();
        return PyLong_FromLongLong(iv);
    }
    if (CALLS(wk_item(t, idx, &v)) != WK_OK) return raise_wk();
    if (!wk_dtype_is_float(dt)) return PyLong_FromLongLong((long long)v);
    return PyFloat_FromDouble(v);
}

static PyObject *T_tobytes(TensorObject *self, PyObject *unused)
{
    (void)unused;
    size_t bytes = wk_tensor_nbytes(self->t);
    PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)bytes);
    if (!b) return NULL;
    if (CALLS(wk_to_host(self->t, PyBytes_AS_STRING(b), bytes)) != WK_OK) {
        Py_DECREF(b);
        return raise_wk();
    }
    return b;
}

/* write(data): data's bytes (row-major, exactly the tensor's) into the
 * tensor's memory, in place (any view), ordered with the device's ops:
 * new input for a recorded Graph between replays. */
static PyObject *T_write(TensorObject *self, PyObject *data)
{
    Py_buffer b;
    if (PyObject_GetBuffer(data, &b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    const size_t need = wk_tensor_nbytes(self->t), es = wk_dtype_size(wk_tensor_dtype(self->t));
    const bool raw = !b.format || !strcmp(b.format, "B") || !strcmp(b.format, "b") || !strcmp(b.format, "c");
    PyObject *r = NULL;
    if ((size_t)b.len != need)
        PyErr_Format(PyExc_ValueError, "write: %zd bytes given, the %s tensor holds %zu", b.len,
                     wk_dtype_name(wk_tensor_dtype(self->t)), need);
    else if (!raw && es && (size_t)b.itemsize != es)
        PyErr_Format(PyExc_TypeError, "write: elements of %zd bytes given for a %s tensor (%zu bytes each)",
                     b.itemsize, wk_dtype_name(wk_tensor_dtype(self->t)), es);
    else if (CALLS(wk_write(self->t, b.buf, (size_t)b.len)) != WK_OK)
        raise_wk();
    else
        r = Py_None, Py_INCREF(Py_None);
    PyBuffer_Release(&b);
    return r;
}

/* a second handle on the same tensor whose buffer shows raw bits */
static PyObject *T_raw(TensorObject *self, PyObject *unused)
{
    (void)unused;
    PyObject *o = wrap(wk_retain(self->t));
    if (o) ((TensorObject *)o)->raw = 1;
    return o;
}

static PyObject *T_numpy(TensorObject *self, PyObject *args, PyObject *kw)
{
    (void)args;
    (void)kw;
    if (!hook_numpy) {
        PyErr_SetString(PyExc_RuntimeError, "wick's numpy glue is not loaded (import wick)");
        return NULL;
    }
    return PyObject_CallFunctionObjArgs(hook_numpy, (PyObject *)self, NULL);
}

static PyObject *T_array(TensorObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "dtype", "copy", NULL };
    PyObject *dtype = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:__array__", kwlist, &dtype, &copy)) return NULL;
    if (!hook_numpy) {
        PyErr_SetString(PyExc_RuntimeError, "wick's numpy glue is not loaded (import wick)");
        return NULL;
    }
    return PyObject_CallFunctionObjArgs(hook_numpy, (PyObject *)self, dtype, copy, NULL);
}

static PyObject *Tensor_repr(TensorObject *self)
{
    if (hook_repr) return PyObject_CallFunctionObjArgs(hook_repr, (PyObject *)self, NULL);
    return PyUnicode_FromFormat("<wick.Tensor %s on %s>", wk_dtype_name(wk_tensor_dtype(self->t)),
                                wk_device_name(wk_tensor_device(self->t)));
}

/* ------------------------------------------------------------------ */
/* Tensor: moves, casts, views                                         */

static PyObject *T_to(TensorObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "target", "dtype", "device", "copy", NULL };
    PyObject *target = Py_None, *dtype = Py_None, *device = Py_None;
    int copy = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO$Op:to", kwlist, &target, &dtype, &device, &copy)) return NULL;
    /* to('cuda:0'), to('bf16'), to('cuda:0', 'bf16'), to(dtype=..., device=...) */
    if (target != Py_None) {
        wk_dtype dt;
        if (PyUnicode_Check(target) && dtype_from_str(PyUnicode_AsUTF8(target), &dt)) {
            if (dtype != Py_None) {
                PyErr_SetString(PyExc_TypeError, "to(): two dtypes given");
                return NULL;
            }
            dtype = target;
        } else if (!PyUnicode_Check(target) && parse_dtype(target, &dt) == 0) {
            dtype = target;
        } else {
            PyErr_Clear();
            if (device != Py_None) {
                PyErr_SetString(PyExc_TypeError, "to(): two devices given");
                return NULL;
            }
            device = target;
        }
    }
    wk_tensor *t = wk_retain(self->t);
    if (device != Py_None) {
        wk_device *dev = device_of(device);
        if (!dev) {
            wk_release(t);
            return NULL;
        }
        if (dev != wk_tensor_device(t)) {
            wk_tensor *m = CALLT(wk_to_device(t, dev));
            wk_release(t);
            if (!m) return raise_wk();
            t = m;
            copy = 0;
        }
    }
    if (dtype != Py_None) {
        wk_dtype dt;
        if (parse_dtype(dtype, &dt) < 0) {
            wk_release(t);
            return NULL;
        }
        if (dt != wk_tensor_dtype(t)) {
            wk_tensor *m = CALLT(wk_to_dtype(t, dt));
            wk_release(t);
            if (!m) return raise_wk();
            t = m;
            copy = 0;
        }
    }
    if (copy) {
        wk_tensor *m = CALLT(wk_copy(t));
        wk_release(t);
        t = m;
    }
    return wrap(t);
}

static PyObject *T_astype(TensorObject *self, PyObject *arg)
{
    wk_dtype dt;
    if (parse_dtype(arg, &dt) < 0) return NULL;
    return wrap(CALLT(wk_to_dtype(self->t, dt)));
}

static PyObject *T_cpu(TensorObject *self, PyObject *unused)
{
    (void)unused;
    wk_device *cpu = device_of(NULL);
    if (!cpu) return NULL;
    if (wk_tensor_device(self->t) == cpu) {
        Py_INCREF(self);
        return (PyObject *)self;
    }
    return wrap(CALLT(wk_to_device(self->t, cpu)));
}

static PyObject *T_contiguous(TensorObject *self, PyObject *unused)
{
    (void)unused;
    return wrap(CALLT(wk_contiguous(self->t)));
}
static PyObject *T_copy(TensorObject *self, PyObject *unused)
{
    (void)unused;
    return wrap(CALLT(wk_copy(self->t)));
}
static PyObject *T_reshape(TensorObject *self, PyObject *args)
{
    wk_shape s;
    if (shape_from_args(args, &s) < 0) return NULL;
    return wrap(CALLT(wk_reshape(self->t, s)));
}
static PyObject *T_broadcast_to(TensorObject *self, PyObject *args)
{
    wk_shape s;
    if (shape_from_args(args, &s) < 0) return NULL;
    return wrap(wk_broadcast_as(self->t, s));
}
static PyObject *T_narrow(TensorObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "dim", "start", "length", NULL };
    int dim;
    long long start, len;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iLL:narrow", kwlist, &dim, &start, &len)) return NULL;
    return wrap(wk_narrow(self->t, dim, start, len));
}
static PyObject *T_transpose(TensorObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "dim0", "dim1", NULL };
    int a = -2, b = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|ii:transpose", kwlist, &a, &b)) return NULL;
    return wrap(wk_transpose(self->t, a, b));
}
static PyObject *T_permute(TensorObject *self, PyObject *args)
{
    wk_shape s;
    if (shape_from_args(args, &s) < 0) return NULL;
    if (s.rank != wk_tensor_rank(self->t)) {
        PyErr_Format(PyExc_ValueError, "permute: %d dims given for a rank-%d tensor", s.rank, wk_tensor_rank(self->t));
        return NULL;
    }
    int perm[WK_MAX_RANK];
    for (int d = 0; d < s.rank; d++) perm[d] = (int)s.dims[d];
    return wrap(wk_permute(self->t, perm));
}
static PyObject *T_squeeze(TensorObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "dim", NULL };
    PyObject *dim = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:squeeze", kwlist, &dim)) return NULL;
    if (dim != Py_None) {
        int d = PyLong_AsLong(dim);
        if (d == -1 && PyErr_Occurred()) return NULL;
        return wrap(wk_squeeze(self->t, d));
    }
    wk_tensor *t = wk_retain(self->t);
    for (int d = wk_tensor_rank(t) - 1; d >= 0; d--)
        if (wk_tensor_dim(t, d) == 1) {
            wk_tensor *m = wk_squeeze(t, d);
            wk_release(t);
            if (!m) return raise_wk();
            t = m;
        }
    return wrap(t);
}
static PyObject *T_unsqueeze(TensorObject *self, PyObject *arg)
{
    int d = PyLong_AsLong(arg);
    if (d == -1 && PyErr_Occurred()) return NULL;
    return wrap(wk_unsqueeze(self->t, d));
}
static PyObject *T_flatten(TensorObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "start_dim", "end_dim", NULL };
    int a = 0, b = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|ii:flatten", kwlist, &a, &b)) return NULL;
    if (wk_tensor_rank(self->t) == 0) return wrap(CALLT(wk_reshape(self->t, WK_SHAPE(1))));
    return wrap(CALLT(wk_flatten(self->t, a, b)));
}
static PyObject *T_chunk(TensorObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "chunks", "dim", NULL };
    int n, dim = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "i|i:chunk", kwlist, &n, &dim)) return NULL;
    if (n <= 0) {
        PyErr_SetString(PyExc_ValueError, "chunk: n must be positive");
        return NULL;
    }
    wk_tensor **out = PyMem_Calloc((size_t)n, sizeof *out);
    if (!out) return PyErr_NoMemory();
    int k = wk_chunk(self->t, n, dim, out);
    if (k < 0) {
        PyMem_Free(out);
        return raise_wk();
    }
    PyObject *tup = PyTuple_New(k);
    for (int i = 0; i < k; i++) {
        PyObject *o = tup ? wrap(out[i]) : NULL;
        if (!o) {
            for (int j = i + (tup ? 1 : 0); j < k; j++) wk_release(out[j]);
            Py_XDECREF(tup);
            PyMem_Free(out);
            return NULL;
        }
        PyTuple_SET_ITEM(tup, i, o);
    }
    PyMem_Free(out);
    return tup;
}
static PyObject *T_same_storage(TensorObject *self, PyObject *other)
{
    if (!IS_TENSOR(other)) Py_RETURN_FALSE;
    return PyBool_FromLong(wk_tensor_same_storage(self->t, TT(other)));
}
static PyObject *T_is_contiguous(TensorObject *self, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(wk_tensor_is_contiguous(self->t));
}
static PyObject *T_data_ptr(TensorObject *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromVoidPtr(wk_tensor_data(self->t));
}
static PyObject *T_numel(TensorObject *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromLongLong(wk_tensor_numel(self->t));
}
static PyObject *T_dim(TensorObject *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromLong(wk_tensor_rank(self->t));
}

/* ------------------------------------------------------------------ */
/* Tensor: elementwise ops                                             */

#define UNARY(name, op)                                                                                \
    static PyObject *T_##name(TensorObject *self, PyObject *unused)                                    \
    {                                                                                                  \
        (void)unused;                                                                                  \
        return wrap(CALLT(wk_unary(op, self->t)));                                                     \
    }
UNARY(exp, WK_EXP)
UNARY(log, WK_LOG)
UNARY(sin, WK_SIN)
UNARY(cos, WK_COS)
UNARY(tanh, WK_TANH)
UNARY(abs, WK_ABS)
UNARY(neg, WK_NEG)
UNARY(recip, WK_RECIP)
UNARY(sqr, WK_SQR)
UNARY(sqrt, WK_SQRT)
UNARY(gelu, WK_GELU)
UNARY(gelu_erf, WK_GELU_ERF)
UNARY(erf, WK_ERF)
UNARY(relu, WK_RELU)
UNARY(silu, WK_SILU)
UNARY(floor, WK_FLOOR)
UNARY(ceil, WK_CEIL)
UNARY(round, WK_ROUND)
UNARY(sign, WK_SIGN)
UNARY(sigmoid, WK_SIGMOID)

static PyObject *T_affine(TensorObject *self, PyObject *args)
{
    double mul, add;
    if (!PyArg_ParseTuple(args, "dd:affine", &mul, &add)) return NULL;
    return wrap(CALLT(wk_affine(self->t, mul, add)));
}
static PyObject *T_powf(TensorObject *self, PyObject *arg)
{
    double e = PyFloat_AsDouble(arg);
    if (e == -1.0 && PyErr_Occurred()) return NULL;
    return wrap(CALLT(wk_powf(self->t, e)));
}
static PyObject *T_elu(TensorObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "alpha", NULL };
    double alpha = 1.0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|d:elu", kwlist, &alpha)) return NULL;
    return wrap(CALLT(wk_elu(self->t, alpha)));
}

/* a op b where a or b is a Tensor and the other any operand */
static PyObject *binary_any(int kind, int op, PyObject *a, PyObject *b)
{
    const wk_tensor *like = IS_TENSOR(a) ? TT(a) : IS_TENSOR(b) ? TT(b) : NULL;
    if (!like) Py_RETURN_NOTIMPLEMENTED;
    PyObject *ta = operand(a, like);
    if (!ta || ta == Py_NotImplemented) return ta;
    PyObject *tb = operand(b, like);
    if (!tb || tb == Py_NotImplemented) {
        Py_DECREF(ta);
        return tb;
    }
    wk_tensor *x = TT(ta), *y = TT(tb), *r;
    switch (kind) {
    case 0: r = CALLT(wk_binary((wk_binary_op)op, x, y)); break;
    case 1: r = CALLT(wk_cmp((wk_cmp_op)op, x, y)); break;
    case 2: r = CALLT(wk_matmul(x, y)); break;
    default: r = CALLT(wk_silu_mul(x, y)); break;
    }
    Py_DECREF(ta);
    Py_DECREF(tb);
    return wrap(r);
}

static PyObject *nb_add(PyObject *a, PyObject *b) { return binary_any(0, WK_ADD, a, b); }
static PyObject *nb_sub(PyObject *a, PyObject *b) { return binary_any(0, WK_SUB, a, b); }
static PyObject *nb_mul(PyObject *a, PyObject *b) { return binary_any(0, WK_MUL, a, b); }
static PyObject *nb_div(PyObject *a, PyObject *b) { return binary_any(0, WK_DIV, a, b); }
static PyObject *nb_matmul(PyObject *a, PyObject *b) { return binary_any(2, 0, a, b); }

/* a += b and friends: the result written into a's storage (views see it) */
static PyObject *inplace(PyObject *a, PyObject *b, binaryfunc f)
{
    PyObject *r = f(a, b);
    if (!r || r == Py_NotImplemented) return r;
    wk_status st = CALLS(wk_copy_into(TT(a), TT(r)));
    Py_DECREF(r);
    if (st != WK_OK) return raise_wk();
    Py_INCREF(a);
    return a;
}
static PyObject *nb_iadd(PyObject *a, PyObject *b) { return inplace(a, b, nb_add); }
static PyObject *nb_isub(PyObject *a, PyObject *b) { return inplace(a, b, nb_sub); }
static PyObject *nb_imul(PyObject *a, PyObject *b) { return inplace(a, b, nb_mul); }
static PyObject *nb_idiv(PyObject *a, PyObject *b) { return inplace(a, b, nb_div); }

static PyObject *nb_neg(PyObject *a) { return wrap(CALLT(wk_neg(TT(a)))); }
static PyObject *nb_pos(PyObject *a)
{
    Py_INCREF(a);
    return a;
}
static PyObject *nb_abs(PyObject *a) { return wrap(CALLT(wk_abs(TT(a)))); }
static PyObject *nb_pow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod != Py_None || !IS_TENSOR(a)) Py_RETURN_NOTIMPLEMENTED;
    if (IS_TENSOR(b)) {
        PyErr_SetString(PyExc_TypeError, "tensor ** tensor is not an op of wick: use exp(b * log(a))");
        return NULL;
    }
    double e = PyFloat_AsDouble(b);
    if (e == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    return wrap(CALLT(wk_powf(TT(a), e)));
}

static PyObject *scalar_of(PyObject *a, int kind)
{
    PyObject *v = T_item((TensorObject *)a, NULL);
    if (!v) return NULL;
    PyObject *r = kind == 0 ? PyNumber_Float(v) : kind == 1 ? PyNumber_Long(v) : NULL;
    if (kind == 2) {
        int b = PyObject_IsTrue(v);
        Py_DECREF(v);
        return b < 0 ? NULL : PyBool_FromLong(b);
    }
    Py_DECREF(v);
    return r;
}
static PyObject *nb_float(PyObject *a) { return scalar_of(a, 0); }
static PyObject *nb_int(PyObject *a) { return scalar_of(a, 1); }
static int nb_bool(PyObject *a)
{
    if (wk_tensor_numel(TT(a)) != 1) {
        PyErr_SetString(PyExc_ValueError, "the truth value of a tensor of more than one element is ambiguous");
        return -1;
    }
    PyObject *r = scalar_of(a, 2);
    if (!r) return -1;
    int b = r == Py_True;
    Py_DECREF(r);
    return b;
}
static PyObject *nb_index(PyObject *a)
{
    if (wk_dtype_is_float(wk_tensor_dtype(TT(a))) || wk_tensor_numel(TT(a)) != 1) {
        PyErr_SetString(PyExc_TypeError, "only one-element integer tensors can be used as an index");
        return NULL;
    }
    return scalar_of(a, 1);
}

static PyNumberMethods Tensor_as_number = {
    .nb_add = nb_add,
    .nb_subtract = nb_sub,
    .nb_multiply = nb_mul,
    .nb_true_divide = nb_div,
    .nb_matrix_multiply = nb_matmul,
    .nb_inplace_add = nb_iadd,
    .nb_inplace_subtract = nb_isub,
    .nb_inplace_multiply = nb_imul,
    .nb_inplace_true_divide = nb_idiv,
    .nb_negative = nb_neg,
    .nb_positive = nb_pos,
    .nb_absolute = nb_abs,
    .nb_power = nb_pow,
    .nb_float = nb_float,
    .nb_int = nb_int,
    .nb_bool = nb_bool,
    .nb_index = nb_index,
};

static PyObject *Tensor_richcompare(PyObject *a, PyObject *b, int op)
{
    static const wk_cmp_op m[] = { [Py_LT] = WK_LT, [Py_LE] = WK_LE, [Py_EQ] = WK_EQ,
                                   [Py_NE] = WK_NE, [Py_GT] = WK_GT, [Py_GE] = WK_GE };
    PyObject *r = binary_any(1, m[op], a, b);
    if (!r && (op == Py_EQ || op == Py_NE) && PyErr_ExceptionMatches(PyExc_TypeError) && !IS_TENSOR(b)) {
        /* t == None, t == "x": not equal, as Python compares unrelated objects */
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    return r;
}

#define BIN_METHOD(name, kind, op)                                                                     \
    static PyObject *T_##name(PyObject *self, PyObject *other)                                         \
    {                                                                                                  \
        PyObject *r = binary_any(kind, op, self, other);                                               \
        if (r == Py_NotImplemented) {                                                                  \
            Py_DECREF(r);                                                                              \
            PyErr_Format(PyExc_TypeError, #name ": unsupported operand %s", Py_TYPE(other)->tp_name);   \
            return NULL;                                                                               \
        }                                                                                              \
        return r;                                                                                      \
    }
BIN_METHOD(add, 0, WK_ADD)
BIN_METHOD(sub, 0, WK_SUB)
BIN_METHOD(mul, 0, WK_MUL)
BIN_METHOD(div, 0, WK_DIV)
BIN_METHOD(minimum, 0, WK_MINIMUM)
BIN_METHOD(maximum, 0, WK_MAXIMUM)
BIN_METHOD(eq, 1, WK_EQ)
BIN_METHOD(ne, 1, WK_NE)
BIN_METHOD(lt, 1, WK_LT)
BIN_METHOD(le, 1, WK_LE)
BIN_METHOD(gt, 1, WK_GT)
BIN_METHOD(ge, 1, WK_GE)
BIN_METHOD(matmul, 2, 0)

/* ------------------------------------------------------------------ */
/* Tensor: reductions                                                  */

static PyObject *reduce_common(TensorObject *self, PyObject *args, PyObject *kw, int which)
{
    static char *kwlist[] = { "dim", "keepdim", NULL };
    PyObject *dimo = Py_None;
    int keepdim = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|Op", kwlist, &dimo, &keepdim)) return NULL;
    int dims[WK_MAX_RANK], n;
    if (parse_dims(dimo, dims, &n) < 0) return NULL;
    const int *dp = n < 0 ? NULL : dims;
    const int nd = n < 0 ? 0 : n;
    wk_tensor *t = self->t, *r;
    switch (which) {
    case 0: r = CALLT(wk_sum(t, dp, nd, keepdim)); break;
    case 1: r = CALLT(wk_mean(t, dp, nd, keepdim)); break;
    case 2: r = CALLT(wk_max(t, dp, nd, keepdim)); break;
    case 3: r = CALLT(wk_min(t, dp, nd, keepdim)); break;
    default: {   /* argmax / argmin: one dim, or every dim flattened */
        if (n > 1) {
            PyErr_SetString(PyExc_ValueError, "argmax/argmin take one dim or None");
            return NULL;
        }
        const bool mx = which == 4;
        if (n == 1) {
            r = mx ? CALLT(wk_argmax(t, dims[0], keepdim)) : CALLT(wk_argmin(t, dims[0], keepdim));
        } else {
            r = CALLT(wk_reduce(mx ? WK_ARGMAX : WK_ARGMIN, t, NULL, 0, keepdim));
        }
    }
    }
    return wrap(r);
}
static PyObject *T_sum(TensorObject *s, PyObject *a, PyObject *k) { return reduce_common(s, a, k, 0); }
static PyObject *T_mean(TensorObject *s, PyObject *a, PyObject *k) { return reduce_common(s, a, k, 1); }
static PyObject *T_max(TensorObject *s, PyObject *a, PyObject *k) { return reduce_common(s, a, k, 2); }
static PyObject *T_min(TensorObject *s, PyObject *a, PyObject *k) { return reduce_common(s, a, k, 3); }
static PyObject *T_argmax(TensorObject *s, PyObject *a, PyObject *k) { return reduce_common(s, a, k, 4); }
static PyObject *T_argmin(TensorObject *s, PyObject *a, PyObject *k) { return reduce_common(s, a, k, 5); }

/* ------------------------------------------------------------------ */
/* Tensor: index ops and in-place writes                               */

/* ids given as a Tensor or as Python data (i64 on t's device) */
static PyObject *ids_operand(PyObject *o, const wk_tensor *t)
{
    if (IS_TENSOR(o)) {
        Py_INCREF(o);
        return o;
    }
    return to_tensor(o, true, WK_I64, wk_tensor_device(t), -1);
}

static PyObject *T_index_select(TensorObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "dim", "index", NULL };
    int dim;
    PyObject *ido;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iO:index_select", kwlist, &dim, &ido)) return NULL;
    PyObject *ids = ids_operand(ido, self->t);
    if (!ids) return NULL;
    wk_tensor *r = CALLT(wk_index_select(self->t, TT(ids), dim));
    Py_DECREF(ids);
    return wrap(r);
}
static PyObject *T_gather(TensorObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "dim", "index", NULL };
    int dim;
    PyObject *ido;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iO:gather", kwlist, &dim, &ido)) return NULL;
    PyObject *ids = ids_operand(ido, self->t);
    if (!ids) return NULL;
    wk_tensor *r = CALLT(wk_gather(self->t, TT(ids), dim));
    Py_DECREF(ids);
    return wrap(r);
}

static PyObject *inplace_index(TensorObject *self, PyObject *args, PyObject *kw, int which, const char *fmt)
{
    static char *kwlist[] = { "dim", "index", "src", NULL };
    int dim;
    PyObject *ido, *srco;
    if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &dim, &ido, &srco)) return NULL;
    PyObject *ids = ids_operand(ido, self->t);
    if (!ids) return NULL;
    PyObject *src = operand(srco, self->t);
    if (!src || src == Py_NotImplemented) {
        if (src) {
            Py_DECREF(src);
            PyErr_SetString(PyExc_TypeError, "src must be a tensor or data");
        }
        Py_DECREF(ids);
        return NULL;
    }
    wk_status st;
    switch (which) {
    case 0: st = CALLS(wk_scatter_set(self->t, TT(ids), TT(src), dim)); break;
    case 1: st = CALLS(wk_scatter_add(self->t, TT(ids), TT(src), dim)); break;
    default: st = CALLS(wk_index_add(self->t, TT(ids), TT(src), dim)); break;
    }
    Py_DECREF(ids);
    Py_DECREF(src);
    if (st != WK_OK) return raise_wk();
    Py_INCREF(self);
    return (PyObject *)self;
}
static PyObject *T_scatter_(TensorObject *s, PyObject *a, PyObject *k) { return inplace_index(s, a, k, 0, "iOO:scatter_"); }
static PyObject *T_scatter_add_(TensorObject *s, PyObject *a, PyObject *k) { return inplace_index(s, a, k, 1, "iOO:scatter_add_"); }
static PyObject *T_index_add_(TensorObject *s, PyObject *a, PyObject *k) { return inplace_index(s, a, k, 2, "iOO:index_add_"); }

static PyObject *T_fill_(TensorObject *self, PyObject *arg)
{
    double v = PyFloat_AsDouble(arg);
    if (v == -1.0 && PyErr_Occurred()) return NULL;
    if (CALLS(wk_const_set(self->t, v)) != WK_OK) return raise_wk();
    Py_INCREF(self);
    return (PyObject *)self;
}
static PyObject *T_copy_(TensorObject *self, PyObject *arg)
{
    PyObject *src = IS_TENSOR(arg) ? (Py_INCREF(arg), arg) : to_tensor(arg, false, WK_F32, wk_tensor_device(self->t), -1);
    if (!src) return NULL;
    wk_tensor *d = self->t, *s = TT(src);
    wk_device *dd = wk_tensor_device(d);
    wk_status st;
    if (dd == wk_tensor_device(s)) {
        st = CALLS(wk_copy_into(d, s));
    } else {
        /* across devices, as torch's copy_: straight into a dense cpu
         * destination of the same dtype and shape (one transfer, a single
         * DMA into pinned memory), else through a copy on dst's device */
        wk_shape ds = wk_tensor_shape(d), ss = wk_tensor_shape(s);
        const bool direct = !strcmp(wk_device_name(dd), "cpu") && wk_tensor_is_contiguous(d) &&
                            wk_tensor_dtype(d) == wk_tensor_dtype(s) && ds.rank == ss.rank &&
                            !memcmp(ds.dims, ss.dims, sizeof(ds.dims[0]) * (size_t)ds.rank);
        if (direct) {
            st = CALLS(wk_to_host(s, wk_tensor_data(d), wk_tensor_nbytes(d)));
        } else {
            wk_tensor *m = CALLT(wk_to_device(s, dd));
            st = m ? CALLS(wk_copy_into(d, m)) : wk_last_status();
            wk_release(m);
        }
    }
    Py_DECREF(src);
    if (st != WK_OK) return raise_wk();
    Py_INCREF(self);
    return (PyObject *)self;
}

/* ------------------------------------------------------------------ */
/* Tensor: indexing (ints, slices, None, Ellipsis, one index list)      */

/* An index that is an int: a Python int, or anything whose __index__
 * works (numpy integer scalars, one-element integer tensors). */
static bool key_is_int(PyObject *k)
{
    if (PyLong_Check(k)) return true;
    if (PyList_Check(k) || PyTuple_Check(k) || !PyIndex_Check(k)) return false;
    if (IS_TENSOR(k) && wk_tensor_rank(TT(k)) != 0) return false;
    PyObject *ix = PyNumber_Index(k);
    if (!ix) {
        PyErr_Clear();
        return false;
    }
    Py_DECREF(ix);
    return true;
}
/* An index list: a list, a tensor or an array of ids */
static bool key_is_list(PyObject *k)
{
    return !key_is_int(k) && (IS_TENSOR(k) || PyList_Check(k) || (PyObject_CheckBuffer(k) && !PyBytes_Check(k)));
}

/* Apply key to t; *is_view tells whether the result shares t's memory
 * (false after a negative step or an index list, which copy). */
static wk_tensor *index_tensor(wk_tensor *t0, PyObject *key, bool *is_view)
{
    PyObject *tup = PyTuple_Check(key) ? (Py_INCREF(key), key) : PyTuple_Pack(1, key);
    if (!tup) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(tup);
    int consumed = 0, ellipses = 0, lists = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyTuple_GET_ITEM(tup, i);
        if (k == Py_Ellipsis) ellipses++;
        else if (k != Py_None) consumed++;
        if (key_is_list(k)) lists++;
    }
    const int rank0 = wk_tensor_rank(t0);
    if (ellipses > 1 || consumed > rank0 || lists > 1) {
        Py_DECREF(tup);
        if (lists > 1) PyErr_SetString(PyExc_IndexError, "one index list per indexing expression (use index_select twice)");
        else if (ellipses > 1) PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
        else PyErr_Format(PyExc_IndexError, "too many indices: %d for a rank-%d tensor", consumed, rank0);
        return NULL;
    }
    *is_view = true;
    wk_tensor *t = wk_retain(t0);
    int d = 0;
    for (Py_ssize_t i = 0; i < n && t; i++) {
        PyObject *k = PyTuple_GET_ITEM(tup, i);
        wk_tensor *r = NULL;
        if (k == Py_Ellipsis) {
            d += rank0 - consumed;
            continue;
        } else if (k == Py_None) {
            r = wk_unsqueeze(t, d);
            d++;
        } else if (PySlice_Check(k)) {
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(k, &start, &stop, &step) < 0) goto fail;
            const int64_t size = wk_tensor_dim(t, d);
            Py_ssize_t len = PySlice_AdjustIndices((Py_ssize_t)size, &start, &stop, step);
            if (step == 1) {
                r = wk_narrow(t, d, start, len);
            } else if (step > 1) {
                wk_tensor *nr = wk_narrow(t, d, start, len ? (len - 1) * step + 1 : 0);
                if (nr) {
                    int rk = wk_tensor_rank(nr);
                    int64_t dims[WK_MAX_RANK], strides[WK_MAX_RANK];
                    for (int j = 0; j < rk; j++) {
                        dims[j] = wk_tensor_dim(nr, j);
                        strides[j] = wk_tensor_stride(nr, j);
                    }
                    dims[d] = len;
                    strides[d] *= step;
                    r = wk_dtype_is_quantized(wk_tensor_dtype(nr)) && d == rk - 1 ? NULL : strided_view(nr, rk, dims, strides);
                    if (!r && !PyErr_Occurred() && wk_dtype_is_quantized(wk_tensor_dtype(nr)) && d == rk - 1)
                        PyErr_SetString(PyExc_IndexError, "a block-quantized tensor's last dim cannot take a step");
                    wk_release(nr);
                }
            } else {   /* a negative step: a copy through index_select */
                int64_t *ids = PyMem_Malloc(sizeof(int64_t) * (size_t)(len ? len : 1));
                if (!ids) {
                    PyErr_NoMemory();
                    goto fail;
                }
                for (Py_ssize_t j = 0; j < len; j++) ids[j] = start + j * step;
                wk_tensor *it = wk_from_host(wk_tensor_device(t), WK_I64, WK_SHAPE(len), ids);
                PyMem_Free(ids);
                r = it ? CALLT(wk_index_select(t, it, d)) : NULL;
                wk_release(it);
                *is_view = false;
            }
            d++;
        } else if (key_is_list(k)) {
            PyObject *ids = ids_operand(k, t);
            if (!ids) goto fail;
            wk_tensor *it = TT(ids);
            wk_tensor *flat = wk_tensor_rank(it) == 1 ? wk_retain(it) : NULL;
            if (!flat) {
                Py_DECREF(ids);
                PyErr_SetString(PyExc_IndexError, "an index list must be 1-d (integer ids)");
                goto fail;
            }
            r = CALLT(wk_index_select(t, flat, d));
            wk_release(flat);
            Py_DECREF(ids);
            *is_view = false;
            d++;
        } else if (PyIndex_Check(k)) {
            Py_ssize_t ix = PyNumber_AsSsize_t(k, PyExc_IndexError);
            if (ix == -1 && PyErr_Occurred()) goto fail;
            const int64_t size = wk_tensor_dim(t, d);
            if (ix < -size || ix >= size) {
                PyErr_Format(PyExc_IndexError, "index %zd is out of range for dim %d of size %lld", ix, d, (long long)size);
                goto fail;
            }
            if (ix < 0) ix += size;
            wk_tensor *nr = wk_narrow(t, d, ix, 1);
            r = nr ? wk_squeeze(nr, d) : NULL;
            wk_release(nr);
        } else {
            PyErr_Format(PyExc_IndexError, "wick indexes with ints, slices, None, ... and one index list, not %s",
                         Py_TYPE(k)->tp_name);
            goto fail;
        }
        wk_release(t);
        t = r;
        if (!t && !PyErr_Occurred()) raise_wk();
    }
    Py_DECREF(tup);
    return t;
fail:
    wk_release(t);
    Py_DECREF(tup);
    return NULL;
}

static PyObject *Tensor_getitem(TensorObject *self, PyObject *key)
{
    bool view;
    wk_tensor *t = index_tensor(self->t, key, &view);
    return t ? wrap(t) : NULL;
}

static int Tensor_setitem(TensorObject *self, PyObject *key, PyObject *value)
{
    if (!value) {
        PyErr_SetString(PyExc_TypeError, "tensor elements cannot be deleted");
        return -1;
    }
    bool view;
    wk_tensor *dst = index_tensor(self->t, key, &view);
    if (!dst) return -1;
    if (!view) {
        wk_release(dst);
        PyErr_SetString(PyExc_IndexError,
                        "assignment through an index list or a negative step is not supported: use scatter_ or index_add_");
        return -1;
    }
    wk_status st;
    if (!IS_TENSOR(value) && (PyFloat_Check(value) || PyLong_Check(value) || PyBool_Check(value))) {
        double v = PyFloat_AsDouble(value);
        if (v == -1.0 && PyErr_Occurred()) {
            wk_release(dst);
            return -1;
        }
        st = CALLS(wk_const_set(dst, v));
    } else {
        PyObject *src = IS_TENSOR(value) ? (Py_INCREF(value), value)
                                         : to_tensor(value, true, wk_tensor_dtype(dst), wk_tensor_device(dst), -1);
        if (!src) {
            wk_release(dst);
            return -1;
        }
        st = CALLS(wk_copy_into(dst, TT(src)));
        Py_DECREF(src);
    }
    wk_release(dst);
    if (st != WK_OK) {
        raise_wk();
        return -1;
    }
    return 0;
}

static Py_ssize_t Tensor_len(TensorObject *self)
{
    if (wk_tensor_rank(self->t) == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a rank-0 tensor");
        return -1;
    }
    return (Py_ssize_t)wk_tensor_dim(self->t, 0);
}

static PyObject *Tensor_sq_item(TensorObject *self, Py_ssize_t i)
{
    PyObject *k = PyLong_FromSsize_t(i);
    if (!k) return NULL;
    PyObject *r = Tensor_getitem(self, k);
    Py_DECREF(k);
    return r;
}

static PyMappingMethods Tensor_as_mapping = {
    (lenfunc)Tensor_len,
    (binaryfunc)Tensor_getitem,
    (objobjargproc)Tensor_setitem,
};
static PySequenceMethods Tensor_as_sequence = {
    .sq_length = (lenfunc)Tensor_len,
    .sq_item = (ssizeargfunc)Tensor_sq_item,
};

/* ------------------------------------------------------------------ */
/* Tensor: nn methods (the same ops as wick.nn)                         */

static PyObject *T_softmax(TensorObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "dim", NULL };
    int dim = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|i:softmax", kwlist, &dim)) return NULL;
    return wrap(CALLT(wk_softmax(self->t, dim)));
}
/* sort, argsort, topk: the module's functions (below) on self */
enum { SORT_VALUES, SORT_ARGS, SORT_TOPK };
static PyObject *sort_any(wk_tensor *x, int dim, int kind, bool flag, int64_t k, const char *op);
static PyObject *T_sort(TensorObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "dim", "descending", NULL };
    int dim = -1, desc = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|ip:sort", kwlist, &dim, &desc)) return NULL;
    return sort_any(self->t, dim, SORT_VALUES, desc != 0, 0, "sort");
}
static PyObject *T_argsort(TensorObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "dim", "descending", NULL };
    int dim = -1, desc = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|ip:argsort", kwlist, &dim, &desc)) return NULL;
    return sort_any(self->t, dim, SORT_ARGS, desc != 0, 0, "argsort");
}
static PyObject *T_topk(TensorObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "k", "dim", "largest", NULL };
    long long k;
    int dim = -1, largest = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "L|ip:topk", kwlist, &k, &dim, &largest)) return NULL;
    return sort_any(self->t, dim, SORT_TOPK, largest != 0, k, "topk");
}
static PyObject *T_log_softmax(TensorObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "dim", NULL };
    int dim = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|i:log_softmax", kwlist, &dim)) return NULL;
    return wrap(CALLT(wk_log_softmax(self->t, dim)));
}
static PyObject *T_dequantize(TensorObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "dtype", NULL };
    wk_dtype dt = WK_F32;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O&:dequantize", kwlist, dtype_conv, &dt)) return NULL;
    return wrap(CALLT(wk_dequantize(self->t, dt)));
}

#define M0(name, doc) { #name, (PyCFunction)T_##name, METH_NOARGS, doc }
#define M1(name, doc) { #name, (PyCFunction)T_##name, METH_O, doc }
#define MV(name, doc) { #name, (PyCFunction)T_##name, METH_VARARGS, doc }
#define MK(name, doc) { #name, (PyCFunction)(void (*)(void))T_##name, METH_VARARGS | METH_KEYWORDS, doc }

static PyMethodDef Tensor_methods[] = {
    M0(tolist, "tolist() -> nested lists of Python ints or floats"),
    M0(item, "item() -> the one element as a Python int or float"),
    M0(tobytes, "tobytes() -> the elements row-major as bytes (GGUF blocks for a quantized dtype)"),
    M1(write, "write(data) -> None: data's bytes (a buffer of exactly the tensor's bytes, row-major) into the tensor "
              "in place, e.g. a recorded Graph's input between replays"),
    { "numpy", (PyCFunction)(void (*)(void))T_numpy, METH_VARARGS | METH_KEYWORDS,
      "numpy() -> numpy.ndarray: shares memory on the cpu (a copy from a GPU); bf16/f8e4m3 need ml_dtypes" },
    { "__array__", (PyCFunction)(void (*)(void))T_array, METH_VARARGS | METH_KEYWORDS, "numpy's array protocol" },
    { "__dlpack__", (PyCFunction)(void (*)(void))Tensor_dlpack, METH_VARARGS | METH_KEYWORDS,
      "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) -> a DLPack capsule sharing the memory" },
    { "__dlpack_device__", (PyCFunction)Tensor_dlpack_device, METH_NOARGS, "(DLPack device type, device id)" },
    { "_raw", (PyCFunction)T_raw, METH_NOARGS, "a handle whose buffer shows bf16/f8e4m3 as raw bits (u16/u8); used by numpy()" },
    MK(to, "to(target=None, dtype=None, *, device=None, copy=False) -> Tensor moved and/or cast (target: a device or a dtype)"),
    M1(astype, "astype(dtype) -> Tensor cast to dtype"),
    M0(cpu, "cpu() -> Tensor on the cpu (self when it is there)"),
    M0(contiguous, "contiguous() -> a row-major tensor (self's storage when already so)"),
    M0(copy, "copy() -> a fresh contiguous copy"),
    { "clone", (PyCFunction)T_copy, METH_NOARGS, "clone() -> a fresh contiguous copy" },
    MV(reshape, "reshape(*shape) -> a view when strides allow, else a copy; one dim may be -1"),
    { "view", (PyCFunction)T_reshape, METH_VARARGS, "view(*shape): as reshape" },
    MV(broadcast_to, "broadcast_to(*shape) -> a broadcast view (stride 0 on new dims)"),
    { "expand", (PyCFunction)T_broadcast_to, METH_VARARGS, "expand(*shape): as broadcast_to" },
    MK(narrow, "narrow(dim, start, length) -> a view"),
    MK(transpose, "transpose(dim0=-2, dim1=-1) -> a view with two dims swapped"),
    MV(permute, "permute(*dims) -> a view with the dims reordered"),
    MK(squeeze, "squeeze(dim=None) -> a view without the size-1 dim (every size-1 dim when None)"),
    M1(unsqueeze, "unsqueeze(dim) -> a view with a new size-1 dim"),
    MK(flatten, "flatten(start_dim=0, end_dim=-1) -> dims start..end merged"),
    MK(chunk, "chunk(chunks, dim=0) -> tuple of views"),
    M1(same_storage, "same_storage(other) -> whether both views share one storage"),
    M0(is_contiguous, "is_contiguous() -> bool"),
    M0(data_ptr, "data_ptr() -> the address of the first element (a device address on a GPU)"),
    M0(numel, "numel() -> the number of elements"),
    M0(dim, "dim() -> the rank"),
    M0(exp, "exp()"), M0(log, "log()"), M0(sin, "sin()"), M0(cos, "cos()"), M0(tanh, "tanh()"),
    M0(abs, "abs()"), M0(neg, "neg()"), M0(recip, "recip() -> 1/x"), M0(sqr, "sqr() -> x*x"), M0(sqrt, "sqrt()"),
    M0(gelu, "gelu() (tanh approximation)"), M0(gelu_erf, "gelu_erf() (exact)"), M0(erf, "erf()"),
    M0(relu, "relu()"), M0(silu, "silu() -> x*sigmoid(x)"), M0(floor, "floor()"), M0(ceil, "ceil()"),
    M0(round, "round() (half to even)"), M0(sign, "sign()"), M0(sigmoid, "sigmoid()"),
    { "reciprocal", (PyCFunction)T_recip, METH_NOARGS, "reciprocal() -> 1/x" },
    { "square", (PyCFunction)T_sqr, METH_NOARGS, "square() -> x*x" },
    MV(affine, "affine(mul, add) -> x*mul + add"),
    { "pow", (PyCFunction)T_powf, METH_O, "pow(e) -> x**e (e a number)" },
    MK(elu, "elu(alpha=1.0)"),
    M1(add, "add(other)"), M1(sub, "sub(other)"), M1(mul, "mul(other)"), M1(div, "div(other)"),
    M1(minimum, "minimum(other) (NaN propagates)"), M1(maximum, "maximum(other) (NaN propagates)"),
    M1(eq, "eq(other) -> u8"), M1(ne, "ne(other) -> u8"), M1(lt, "lt(other) -> u8"), M1(le, "le(other) -> u8"),
    M1(gt, "gt(other) -> u8"), M1(ge, "ge(other) -> u8"), M1(matmul, "matmul(other)"),
    MK(sum, "sum(dim=None, keepdim=False) (float sums accumulate in f32)"),
    MK(mean, "mean(dim=None, keepdim=False) (float dtypes)"),
    MK(max, "max(dim=None, keepdim=False) -> the values"),
    MK(min, "min(dim=None, keepdim=False) -> the values"),
    MK(argmax, "argmax(dim=None, keepdim=False) -> u32 indices (into the flattened tensor when dim is None)"),
    MK(argmin, "argmin(dim=None, keepdim=False) -> u32 indices (into the flattened tensor when dim is None)"),
    MK(index_select, "index_select(dim, index) -> the rows index along dim"),
    MK(gather, "gather(dim, index) -> out[i][j] = self[i][index[i][j]] for dim 1"),
    MK(scatter_, "scatter_(dim, index, src) -> self, with self[..index[i,j]..] = src[i,j] (in place)"),
    MK(scatter_add_, "scatter_add_(dim, index, src) -> self, adding src at index (in place)"),
    MK(index_add_, "index_add_(dim, index, src) -> self, self.narrow(dim, index[i], 1) += src.narrow(dim, i, 1)"),
    M1(fill_, "fill_(value) -> self, every element set (in place)"),
    M1(copy_, "copy_(src) -> self, src broadcast and cast into self (in place); src may be on another device"),
    MK(softmax, "softmax(dim=-1)"),
    MK(log_softmax, "log_softmax(dim=-1)"),
    MK(sort, "sort(dim=-1, descending=False) -> (values, u32 indices): stable; NaN above +inf"),
    MK(argsort, "argsort(dim=-1, descending=False) -> u32 indices: stable; NaN above +inf"),
    MK(topk, "topk(k, dim=-1, largest=True) -> (values, u32 indices), largest (smallest) first"),
    MK(dequantize, "dequantize(dtype='f32') -> a float tensor of a block-quantized one"),
    { NULL, NULL, 0, NULL },
};

static PyTypeObject Tensor_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "wick.Tensor",
    .tp_basicsize = sizeof(TensorObject),
    .tp_dealloc = (destructor)Tensor_dealloc,
    .tp_repr = (reprfunc)Tensor_repr,
    .tp_as_number = &Tensor_as_number,
    .tp_as_sequence = &Tensor_as_sequence,
    .tp_as_mapping = &Tensor_as_mapping,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_as_buffer = &Tensor_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Tensor: a view (shape, strides, offset) of refcounted storage on one device.\n\n"
              "Made by wick.tensor, wick.asarray, wick.zeros, ... or by ops; never directly.",
    .tp_richcompare = Tensor_richcompare,
    .tp_weaklistoffset = offsetof(TensorObject, weakrefs),
    .tp_methods = Tensor_methods,
    .tp_getset = Tensor_getset,
};

/* ------------------------------------------------------------------ */
/* module: creation                                                    */

static PyObject *create_common(PyObject *args, PyObject *kw, int which)
{
    static char *kwlist_v[] = { "shape", "fill_value", "dtype", "device", NULL };
    static char *kwlist[] = { "shape", "dtype", "device", NULL };
    wk_shape s;
    wk_dtype dt = WK_F32;
    PyObject *device = Py_None;
    double v = 0;
    if (which == 3) {
        if (!PyArg_ParseTupleAndKeywords(args, kw, "O&d|O&O:full", kwlist_v, shape_conv, &s, &v, dtype_conv, &dt, &device))
            return NULL;
    } else if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O&O", kwlist, shape_conv, &s, dtype_conv, &dt, &device)) {
        return NULL;
    }
    wk_device *dev = device_of(device);
    if (!dev) return NULL;
    switch (which) {
    case 0: return wrap(CALLT(wk_zeros(dev, dt, s)));
    case 1: return wrap(CALLT(wk_ones(dev, dt, s)));
    case 2: return wrap(CALLT(wk_empty(dev, dt, s)));
    default: return wrap(CALLT(wk_full(dev, dt, s, v)));
    }
}
static PyObject *m_zeros(PyObject *m, PyObject *a, PyObject *k) { (void)m; return create_common(a, k, 0); }
static PyObject *m_ones(PyObject *m, PyObject *a, PyObject *k) { (void)m; return create_common(a, k, 1); }
static PyObject *m_empty(PyObject *m, PyObject *a, PyObject *k) { (void)m; return create_common(a, k, 2); }
static PyObject *m_full(PyObject *m, PyObject *a, PyObject *k) { (void)m; return create_common(a, k, 3); }

static PyObject *m_arange(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "start", "end", "step", "dtype", "device", NULL };
    PyObject *starto, *endo = Py_None, *stepo = Py_None, *dtype = Py_None, *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOOO:arange", kwlist, &starto, &endo, &stepo, &dtype, &device))
        return NULL;
    if (endo == Py_None) {
        endo = starto;
        starto = NULL;
    }
    double start = starto ? PyFloat_AsDouble(starto) : 0.0;
    double end = PyFloat_AsDouble(endo);
    double step = stepo == Py_None ? 1.0 : PyFloat_AsDouble(stepo);
    if (PyErr_Occurred()) return NULL;
    wk_dtype dt;
    if (dtype != Py_None) {
        if (parse_dtype(dtype, &dt) < 0) return NULL;
    } else {   /* i64 when every bound is an int, as numpy and torch */
        bool ints = (!starto || PyLong_Check(starto)) && PyLong_Check(endo) && (stepo == Py_None || PyLong_Check(stepo));
        dt = ints ? WK_I64 : WK_F32;
    }
    wk_device *dev = device_of(device);
    if (!dev) return NULL;
    return wrap(CALLT(wk_arange(dev, dt, start, end, step)));
}

static PyObject *rand_common(PyObject *args, PyObject *kw, int normal)
{
    static char *kwlist_u[] = { "shape", "dtype", "device", "seed", "low", "high", NULL };
    static char *kwlist_n[] = { "shape", "dtype", "device", "seed", "mean", "std", NULL };
    wk_shape s;
    wk_dtype dt = WK_F32;
    PyObject *device = Py_None, *seed = Py_None;
    double a = normal ? 0.0 : 0.0, b = 1.0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O&O$Odd", normal ? kwlist_n : kwlist_u, shape_conv, &s, dtype_conv,
                                     &dt, &device, &seed, &a, &b))
        return NULL;
    wk_device *dev = device_of(device);
    if (!dev) return NULL;
    if (seed != Py_None) {
        unsigned long long sv = PyLong_AsUnsignedLongLongMask(seed);
        if (PyErr_Occurred()) return NULL;
        if (wk_device_set_seed(dev, sv) != WK_OK) return raise_wk();
    }
    return wrap(normal ? CALLT(wk_rand_normal(dev, dt, s, a, b)) : CALLT(wk_rand_uniform(dev, dt, s, a, b)));
}
static PyObject *m_rand(PyObject *m, PyObject *a, PyObject *k) { (void)m; return rand_common(a, k, 0); }
static PyObject *m_randn(PyObject *m, PyObject *a, PyObject *k) { (void)m; return rand_common(a, k, 1); }

static PyObject *m_manual_seed(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "seed", "device", NULL };
    unsigned long long seed;
    PyObject *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "K|O:manual_seed", kwlist, &seed, &device)) return NULL;
    wk_device *dev = device_of(device);
    if (!dev) return NULL;
    return check_status(wk_device_set_seed(dev, seed));
}

/* tensor(data, dtype=None, device=None): always a copy; _asarray(data,
 * dtype=None, device=None, copy=None): shares when it can */
static PyObject *m_tensor_impl(PyObject *args, PyObject *kw, int default_copy, const char *fname)
{
    static char *kwlist[] = { "data", "dtype", "device", "copy", "_bits", NULL };
    PyObject *data, *dtype = Py_None, *device = Py_None, *copy = Py_None;
    int bits = 0;   /* a buffer's bits taken as dtype (numpy arrays of ml_dtypes types, viewed as ints) */
    char fmt[32];
    snprintf(fmt, sizeof fmt, "O|OO$Op:%s", fname);
    if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &data, &dtype, &device, &copy, &bits)) return NULL;
    wk_dtype dt = WK_F32;
    bool given = dtype != Py_None;
    if (given && parse_dtype(dtype, &dt) < 0) return NULL;
    int c = default_copy;
    if (copy != Py_None) {
        c = PyObject_IsTrue(copy);
        if (c < 0) return NULL;
    }
    wk_device *dev = device == Py_None && IS_TENSOR(data) ? wk_tensor_device(TT(data)) : device_of(device);
    if (!dev) return NULL;
    if (bits && given && PyObject_CheckBuffer(data)) return tensor_from_buffer(data, true, dt, dev, c);
    return to_tensor(data, given, dt, dev, c);
}
static PyObject *m_tensor(PyObject *m, PyObject *a, PyObject *k) { (void)m; return m_tensor_impl(a, k, 1, "tensor"); }
static PyObject *m_asarray(PyObject *m, PyObject *a, PyObject *k) { (void)m; return m_tensor_impl(a, k, -1, "asarray"); }

/* frombuffer(data, dtype, shape, device=None): a copy of raw bytes (GGUF
 * blocks for a block-quantized dtype) */
static PyObject *m_frombuffer(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "data", "dtype", "shape", "device", NULL };
    Py_buffer b;
    wk_dtype dt;
    wk_shape s;
    PyObject *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*O&O&|O:frombuffer", kwlist, &b, dtype_conv, &dt, shape_conv, &s, &device))
        return NULL;
    wk_device *dev = device_of(device);
    PyObject *r = NULL;
    if (dev) {
        int64_t n = 1;
        bool ok = true;
        for (int d = 0; d < s.rank; d++) {
            if (s.dims[d] < 0 || (s.dims[d] && n > INT64_MAX / s.dims[d])) ok = false;
            else n *= s.dims[d];
        }
        size_t bs = wk_dtype_block_size(dt), bb = wk_dtype_block_bytes(dt);
        if (!ok || !bs || n % (int64_t)bs) {
            PyErr_Format(PyExc_ValueError, "frombuffer: a bad shape for %s", wk_dtype_name(dt));
        } else if ((uint64_t)(n / (int64_t)bs) > (uint64_t)b.len / bb || (Py_ssize_t)((size_t)(n / (int64_t)bs) * bb) != b.len) {
            PyErr_Format(PyExc_ValueError, "frombuffer: %zd bytes given, shape and %s need %llu", b.len,
                         wk_dtype_name(dt), (unsigned long long)((uint64_t)(n / (int64_t)bs) * bb));
        } else {
            r = wrap(CALLT(wk_from_host(dev, dt, s, b.buf)));
        }
    }
    PyBuffer_Release(&b);
    return r;
}

/* ------------------------------------------------------------------ */
/* module: ops on several tensors                                      */

static int tensor_list(PyObject *seq, wk_tensor ***out, Py_ssize_t *n)
{
    PyObject *f = PySequence_Fast(seq, "expected a sequence of tensors");
    if (!f) return -1;
    *n = PySequence_Fast_GET_SIZE(f);
    *out = PyMem_Malloc(sizeof(wk_tensor *) * (size_t)(*n ? *n : 1));
    if (!*out) {
        Py_DECREF(f);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(f, i);
        if (!IS_TENSOR(o)) {
            PyErr_Format(PyExc_TypeError, "item %zd is a %s, not a wick.Tensor", i, Py_TYPE(o)->tp_name);
            PyMem_Free(*out);
            Py_DECREF(f);
            return -1;
        }
        (*out)[i] = TT(o);
    }
    Py_DECREF(f);   /* the caller's sequence keeps the tensors */
    return 0;
}

static PyObject *cat_stack(PyObject *args, PyObject *kw, int stack)
{
    static char *kwlist[] = { "tensors", "dim", NULL };
    PyObject *seq;
    int dim = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i", kwlist, &seq, &dim)) return NULL;
    PyObject *keep = PySequence_Fast(seq, "expected a sequence of tensors");   /* holds the items */
    if (!keep) return NULL;
    wk_tensor **ts;
    Py_ssize_t n;
    if (tensor_list(keep, &ts, &n) < 0) {
        Py_DECREF(keep);
        return NULL;
    }
    wk_tensor *r = stack ? CALLT(wk_stack(ts, (int)n, dim)) : CALLT(wk_cat(ts, (int)n, dim));
    PyMem_Free(ts);
    Py_DECREF(keep);
    return wrap(r);
}
static PyObject *m_cat(PyObject *m, PyObject *a, PyObject *k) { (void)m; return cat_stack(a, k, 0); }
static PyObject *m_stack(PyObject *m, PyObject *a, PyObject *k) { (void)m; return cat_stack(a, k, 1); }

static PyObject *m_where(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *co, *ao, *bo;
    if (!PyArg_ParseTuple(args, "O!OO:where", &Tensor_Type, &co, &ao, &bo)) return NULL;
    const wk_tensor *like = IS_TENSOR(ao) ? TT(ao) : IS_TENSOR(bo) ? TT(bo) : NULL;
    if (!like) {
        PyErr_SetString(PyExc_TypeError, "where: a or b must be a tensor");
        return NULL;
    }
    PyObject *a = operand(ao, like), *b = a && a != Py_NotImplemented ? operand(bo, like) : NULL;
    PyObject *r = NULL;
    if (a == Py_NotImplemented || b == Py_NotImplemented) PyErr_SetString(PyExc_TypeError, "where: bad operand");
    else if (a && b) r = wrap(CALLT(wk_where(TT(co), TT(a), TT(b))));
    Py_XDECREF(a);
    Py_XDECREF(b);
    return r;
}

static PyObject *m_copy2d(PyObject *mod, PyObject *args)
{
    (void)mod;
    wk_tensor *dst, *src;
    long long rows, cols, ss, ds, so, dof;
    if (!PyArg_ParseTuple(args, "O&O&LLLLLL:copy2d", as_tensor_arg, &dst, as_tensor_arg, &src, &rows, &cols, &ss, &ds, &so,
                          &dof))
        return NULL;
    return check_status(CALLS(wk_copy2d(dst, src, rows, cols, ss, ds, so, dof)));
}

/* ------------------------------------------------------------------ */
/* module: nn functional ops                                           */

static PyObject *m_softmax(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "x", "dim", NULL };
    wk_tensor *x;
    int dim = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|i:softmax", kwlist, as_tensor_arg, &x, &dim)) return NULL;
    return wrap(CALLT(wk_softmax(x, dim)));
}
static PyObject *m_log_softmax(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "x", "dim", NULL };
    wk_tensor *x;
    int dim = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|i:log_softmax", kwlist, as_tensor_arg, &x, &dim)) return NULL;
    return wrap(CALLT(wk_log_softmax(x, dim)));
}
static PyObject *m_rms_norm(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "x", "weight", "eps", "gemma", NULL };
    wk_tensor *x, *w = NULL;
    double eps = 1e-6;
    int gemma = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O&d$p:rms_norm", kwlist, as_tensor_arg, &x, as_tensor_or_none, &w, &eps,
                                     &gemma))
        return NULL;
    return wrap(gemma ? CALLT(wk_rms_norm_gemma(x, w, eps)) : CALLT(wk_rms_norm(x, w, eps)));
}
static PyObject *m_add_rms_norm(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "x", "residual", "weight", "eps", "gemma", NULL };
    wk_tensor *x, *res, *w = NULL, *sum = NULL;
    double eps = 1e-6;
    int gemma = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O&|O&d$p:add_rms_norm", kwlist, as_tensor_arg, &x, as_tensor_arg, &res,
                                     as_tensor_or_none, &w, &eps, &gemma))
        return NULL;
    wk_tensor *r = CALLT(wk_add_rms_norm(x, res, w, eps, gemma, &sum));
    if (!r) return raise_wk();
    PyObject *a = wrap(r), *b = a ? wrap(sum) : (wk_release(sum), NULL);
    if (!b) {
        Py_XDECREF(a);
        return NULL;
    }
    return Py_BuildValue("(NN)", a, b);
}
static PyObject *m_layer_norm(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "x", "weight", "bias", "eps", NULL };
    wk_tensor *x, *w = NULL, *b = NULL;
    double eps = 1e-5;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O&O&d:layer_norm", kwlist, as_tensor_arg, &x, as_tensor_or_none, &w,
                                     as_tensor_or_none, &b, &eps))
        return NULL;
    return wrap(CALLT(wk_layer_norm(x, w, b, eps)));
}
static PyObject *m_silu_mul(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "OO:silu_mul", &a, &b)) return NULL;
    PyObject *r = binary_any(3, 0, a, b);
    if (r == Py_NotImplemented) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_TypeError, "silu_mul takes tensors");
        return NULL;
    }
    return r;
}
static PyObject *m_linear_silu_mul(PyObject *mod, PyObject *args)
{
    (void)mod;
    wk_tensor *x, *w;
    if (!PyArg_ParseTuple(args, "O&O&:linear_silu_mul", as_tensor_arg, &x, as_tensor_arg, &w)) return NULL;
    return wrap(CALLT(wk_linear_silu_mul(x, w)));
}
static PyObject *rope_common(PyObject *args, PyObject *kw, int which)
{
    static char *kwlist[] = { "x", "cos", "sin", "pos_offset", NULL };
    wk_tensor *x, *c, *s;
    long long off = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O&O&|L", kwlist, as_tensor_arg, &x, as_tensor_arg, &c, as_tensor_arg, &s,
                                     &off))
        return NULL;
    switch (which) {
    case 0: return wrap(CALLT(wk_rope(x, c, s, off)));
    case 1: return wrap(CALLT(wk_rope_i(x, c, s, off)));
    default: return wrap(CALLT(wk_rope_thd(x, c, s, off)));
    }
}
static PyObject *m_rope(PyObject *m, PyObject *a, PyObject *k) { (void)m; return rope_common(a, k, 0); }
static PyObject *m_rope_i(PyObject *m, PyObject *a, PyObject *k) { (void)m; return rope_common(a, k, 1); }
static PyObject *m_rope_thd(PyObject *m, PyObject *a, PyObject *k) { (void)m; return rope_common(a, k, 2); }

static PyObject *m_rope_kv(PyObject *m, PyObject *args, PyObject *kw)
{
    (void)m;
    static char *kwlist[] = { "qkv", "n_q", "cos", "sin", "k_cache", "v_cache", "pos_offset", "pos", "interleaved", NULL };
    wk_tensor *x, *c, *s, *kc, *vc, *pos = NULL;
    long long nq = 0, off = 0;
    int inter = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&LO&O&O&O&|LO&p", kwlist, as_tensor_arg, &x, &nq, as_tensor_arg, &c,
                                     as_tensor_arg, &s, as_tensor_arg, &kc, as_tensor_arg, &vc, &off, as_tensor_or_none,
                                     &pos, &inter))
        return NULL;
    return wrap(CALLT(wk_rope_kv(x, nq, c, s, off, pos, inter != 0, kc, vc)));
}

static PyObject *m_linear_rope_kv(PyObject *m, PyObject *args, PyObject *kw)
{
    (void)m;
    static char *kwlist[] = { "x", "w", "n_q", "cos", "sin", "k_cache", "v_cache", "pos_offset", "pos", "interleaved",
                              NULL };
    wk_tensor *x, *w, *c, *s, *kc, *vc, *pos = NULL;
    long long nq = 0, off = 0;
    int inter = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O&LO&O&O&O&|LO&p", kwlist, as_tensor_arg, &x, as_tensor_arg, &w, &nq,
                                     as_tensor_arg, &c, as_tensor_arg, &s, as_tensor_arg, &kc, as_tensor_arg, &vc, &off,
                                     as_tensor_or_none, &pos, &inter))
        return NULL;
    return wrap(CALLT(wk_linear_rope_kv(x, w, nq, c, s, off, pos, inter != 0, kc, vc)));
}

static PyObject *m_rope_tables(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "head_dim", "base", "n_pos", "scaling", "factor", "low_freq_factor", "high_freq_factor",
                              "original_max_position", "device", NULL };
    long long head_dim, n_pos;
    double base;
    const char *scaling = NULL;
    wk_rope_scaling sc = { WK_ROPE_SCALING_NONE, 1.0, 1.0, 4.0, 8192.0 };
    PyObject *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "LdL|z$ddddO:rope_tables", kwlist, &head_dim, &base, &n_pos, &scaling,
                                     &sc.factor, &sc.low_freq_factor, &sc.high_freq_factor, &sc.original_max_position,
                                     &device))
        return NULL;
    if (!scaling || !strcmp(scaling, "none")) sc.type = WK_ROPE_SCALING_NONE;
    else if (!strcmp(scaling, "linear")) sc.type = WK_ROPE_SCALING_LINEAR;
    else if (!strcmp(scaling, "llama3")) sc.type = WK_ROPE_SCALING_LLAMA3;
    else {
        PyErr_Format(PyExc_ValueError, "rope_tables: scaling is None, 'linear' or 'llama3', not '%s'", scaling);
        return NULL;
    }
    wk_device *dev = device_of(device);
    if (!dev) return NULL;
    wk_tensor *c = NULL, *s = NULL;
    if (CALLS(wk_rope_tables(dev, head_dim, base, n_pos, &sc, &c, &s)) != WK_OK) return raise_wk();
    PyObject *a = wrap(c), *b = a ? wrap(s) : (wk_release(s), NULL);
    if (!b) {
        Py_XDECREF(a);
        return NULL;
    }
    return Py_BuildValue("(NN)", a, b);
}

static PyObject *m_attention(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "q", "k", "v", "scale", "causal", "window", "softcap", "mask", "kv_len", NULL };
    wk_tensor *q, *k, *v, *mask = NULL, *kv_len = NULL;
    wk_attention_opts o = { 0 };
    PyObject *scale = Py_None;
    int causal = 0;
    long long window = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O&O&|$OpLdO&O&:attention", kwlist, as_tensor_arg, &q, as_tensor_arg, &k,
                                     as_tensor_arg, &v, &scale, &causal, &window, &o.softcap, as_tensor_or_none, &mask,
                                     as_tensor_or_none, &kv_len))
        return NULL;
    if (scale != Py_None) {
        o.scale = PyFloat_AsDouble(scale);
        if (PyErr_Occurred()) return NULL;
        if (o.scale == 0) {
            PyErr_SetString(PyExc_ValueError, "attention: scale 0 (leave it None for 1/sqrt(D))");
            return NULL;
        }
    }
    o.causal = causal;
    o.window = window;
    o.mask = mask;
    o.kv_len = kv_len;
    return wrap(CALLT(wk_attention(q, k, v, &o)));
}

/* ------------------------------------------------------------------ */
/* module: convolutions, pooling, upsampling, sorting (docs/conv.md)   */

/* An int, or a sequence of n ints (n: 1 for the 1-d forms, 2 for the
 * 2-d ones), into out[0..n-1]; min: the least value allowed. 0 with an
 * exception naming the op and the argument. o NULL leaves out as it is. */
static int int_tuple(PyObject *o, int n, long long min, const char *op, const char *what, int64_t out[2])
{
    if (!o) return 1;
    long long v[2];
    if (PyLong_Check(o)) {
        v[0] = v[1] = PyLong_AsLongLong(o);
        if (v[0] == -1 && PyErr_Occurred()) return 0;
    } else {
        PyObject *seq = PySequence_Check(o) ? PySequence_Fast(o, "") : NULL;
        if (!seq || PySequence_Fast_GET_SIZE(seq) != n) {
            Py_XDECREF(seq);
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s: %s takes an int or a tuple of %d ints", op, what, n);
            return 0;
        }
        for (int i = 0; i < n; i++) {
            PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
            v[i] = PyLong_Check(it) ? PyLong_AsLongLong(it) : -1;
            if (!PyLong_Check(it) || (v[i] == -1 && PyErr_Occurred())) {
                Py_DECREF(seq);
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "%s: %s takes an int or a tuple of %d ints", op, what, n);
                return 0;
            }
        }
        if (n == 1) v[1] = v[0];
        Py_DECREF(seq);
    }
    for (int i = 0; i < n; i++)
        if (v[i] < min) {
            PyErr_Format(PyExc_ValueError, "%s: %s %lld (at least %lld)", op, what, v[i], min);
            return 0;
        }
    out[0] = v[0];
    out[1] = v[1];
    return 1;
}

/* conv1d / conv2d / conv_transpose1d / conv_transpose2d: PyTorch's
 * functional signatures (ints or tuples for the per-dim options). */
static PyObject *conv_any(PyObject *args, PyObject *kw, int nd, bool transposed)
{
    static char *kw_fwd[] = { "x", "weight", "bias", "stride", "padding", "dilation", "groups", NULL };
    static char *kw_tr[] = { "x", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation", NULL };
    const char *op = transposed ? (nd == 1 ? "conv_transpose1d" : "conv_transpose2d") : (nd == 1 ? "conv1d" : "conv2d");
    wk_tensor *x, *w, *b = NULL;
    PyObject *stride = NULL, *padding = NULL, *dilation = NULL, *opad = NULL;
    long long groups = 1;
    int ok = transposed ? PyArg_ParseTupleAndKeywords(args, kw, "O&O&|O&OOOLO", kw_tr, as_tensor_arg, &x, as_tensor_arg, &w,
                                                      as_tensor_or_none, &b, &stride, &padding, &opad, &groups, &dilation)
                        : PyArg_ParseTupleAndKeywords(args, kw, "O&O&|O&OOOL", kw_fwd, as_tensor_arg, &x, as_tensor_arg, &w,
                                                      as_tensor_or_none, &b, &stride, &padding, &dilation, &groups);
    if (!ok) return NULL;
    wk_conv_opts o = { .stride = { 1, 1 }, .dilation = { 1, 1 }, .groups = groups };
    if (!int_tuple(stride, nd, 1, op, "stride", o.stride) || !int_tuple(padding, nd, 0, op, "padding", o.padding) ||
        !int_tuple(dilation, nd, 1, op, "dilation", o.dilation) ||
        !int_tuple(opad, nd, 0, op, "output_padding", o.output_padding))
        return NULL;
    if (groups < 1) {
        PyErr_Format(PyExc_ValueError, "%s: groups %lld (at least 1)", op, groups);
        return NULL;
    }
    if (transposed) return wrap(nd == 1 ? CALLT(wk_conv_transpose1d(x, w, b, &o)) : CALLT(wk_conv_transpose2d(x, w, b, &o)));
    return wrap(nd == 1 ? CALLT(wk_conv1d(x, w, b, &o)) : CALLT(wk_conv2d(x, w, b, &o)));
}
static PyObject *m_conv1d(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    return conv_any(args, kw, 1, false);
}
static PyObject *m_conv2d(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    return conv_any(args, kw, 2, false);
}
static PyObject *m_conv_transpose1d(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    return conv_any(args, kw, 1, true);
}
static PyObject *m_conv_transpose2d(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    return conv_any(args, kw, 2, true);
}

/* Two new tensors as a tuple (either NULL: wick's error, the other released). */
static PyObject *wrap_two(wk_tensor *a, wk_tensor *b)
{
    if (!a || !b) {
        wk_release(a);
        wk_release(b);
        return raise_wk();
    }
    PyObject *pa = wrap(a), *pb = pa ? wrap(b) : (wk_release(b), NULL);
    if (!pb) {
        Py_XDECREF(pa);
        return NULL;
    }
    return Py_BuildValue("(NN)", pa, pb);
}

/* avg_pool2d / max_pool2d: PyTorch's functional signatures (no dilation,
 * no divisor_override). */
static PyObject *pool_any(PyObject *args, PyObject *kw, bool max)
{
    static char *kw_avg[] = { "x", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", NULL };
    static char *kw_max[] = { "x", "kernel_size", "stride", "padding", "ceil_mode", "return_indices", NULL };
    const char *op = max ? "max_pool2d" : "avg_pool2d";
    wk_tensor *x;
    PyObject *kernel, *stride = Py_None, *padding = NULL;
    int ceil_mode = 0, flag = max ? 0 : 1;   /* return_indices / count_include_pad */
    if (!PyArg_ParseTupleAndKeywords(args, kw, max ? "O&O|OOpp:max_pool2d" : "O&O|OOpp:avg_pool2d", max ? kw_max : kw_avg,
                                     as_tensor_arg, &x, &kernel, &stride, &padding, &ceil_mode, &flag))
        return NULL;
    wk_pool_opts o = { .ceil_mode = ceil_mode != 0, .exclude_pad = !max && !flag };
    if (!int_tuple(kernel, 2, 1, op, "kernel_size", o.kernel) ||
        !int_tuple(stride == Py_None ? NULL : stride, 2, 1, op, "stride", o.stride) ||
        !int_tuple(padding, 2, 0, op, "padding", o.padding))
        return NULL;
    if (!max) return wrap(CALLT(wk_avg_pool2d(x, &o)));
    if (!flag) return wrap(CALLT(wk_max_pool2d(x, &o, NULL)));
    wk_tensor *ids = NULL;
    wk_tensor *r = CALLT(wk_max_pool2d(x, &o, &ids));
    return wrap_two(r, r ? ids : NULL);
}
static PyObject *m_avg_pool2d(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    return pool_any(args, kw, false);
}
static PyObject *m_max_pool2d(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    return pool_any(args, kw, true);
}

/* upsample_*: size (an int or a tuple) or scale_factor (a number or a
 * tuple), one of the two, as F.interpolate takes them: with scale_factor
 * the output is floor(in * s) and the source positions use 1 / s. */
static PyObject *upsample_any(PyObject *args, PyObject *kw, int nd, bool bilinear)
{
    static char *kw_near[] = { "x", "size", "scale_factor", NULL };
    static char *kw_bil[] = { "x", "size", "scale_factor", "align_corners", NULL };
    const char *op = bilinear ? "upsample_bilinear2d" : nd == 1 ? "upsample_nearest1d" : "upsample_nearest2d";
    wk_tensor *x;
    PyObject *size = Py_None, *scale = Py_None;
    int align = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, bilinear ? "O&|OOp" : "O&|OO", bilinear ? kw_bil : kw_near, as_tensor_arg,
                                     &x, &size, &scale, &align))
        return NULL;
    if ((size == Py_None) == (scale == Py_None)) {
        PyErr_Format(PyExc_ValueError, "%s: give size or scale_factor (one of the two)", op);
        return NULL;
    }
    if (wk_tensor_rank(x) != nd + 2) {
        PyErr_Format(PyExc_ValueError, "%s: x has %d dims, expected %d ([N, C, %s])", op, wk_tensor_rank(x), nd + 2,
                     nd == 1 ? "L" : "H, W");
        return NULL;
    }
    int64_t out[2] = { 0, 0 };
    double s[2] = { 0, 0 };
    if (size != Py_None) {
        if (!int_tuple(size, nd, 1, op, "size", out)) return NULL;
    } else {
        PyObject *seq = PyNumber_Check(scale) ? NULL : PySequence_Check(scale) ? PySequence_Fast(scale, "") : NULL;
        for (int i = 0; i < nd; i++) {
            PyObject *it = seq ? (PySequence_Fast_GET_SIZE(seq) == nd ? PySequence_Fast_GET_ITEM(seq, i) : NULL) : scale;
            s[i] = it ? PyFloat_AsDouble(it) : -1.0;
            if (s[i] == -1.0 && PyErr_Occurred()) PyErr_Clear();
            if (!(s[i] > 0)) {
                Py_XDECREF(seq);
                PyErr_Format(PyExc_ValueError, "%s: scale_factor takes a number > 0 or a tuple of %d", op, nd);
                return NULL;
            }
            out[i] = (int64_t)floor((double)wk_tensor_dim(x, 2 + i) * s[i]);
        }
        Py_XDECREF(seq);
    }
    if (bilinear) return wrap(CALLT(wk_upsample_bilinear2d(x, out[0], out[1], align != 0, s[0], s[1])));
    if (nd == 1) return wrap(CALLT(wk_upsample_nearest1d(x, out[0], s[0])));
    return wrap(CALLT(wk_upsample_nearest2d(x, out[0], out[1], s[0], s[1])));
}
static PyObject *m_upsample_nearest1d(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    return upsample_any(args, kw, 1, false);
}
static PyObject *m_upsample_nearest2d(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    return upsample_any(args, kw, 2, false);
}
static PyObject *m_upsample_bilinear2d(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    return upsample_any(args, kw, 2, true);
}

/* sort / argsort / topk along any dim: the C ops work on the last one, so
 * another dim is swapped with it there and back (results contiguous). */
static wk_tensor *sort_last(const wk_tensor *x, int kind, bool flag, int64_t k, wk_tensor **ids)
{
    return kind == SORT_ARGS ? wk_arg_sort(x, flag) : kind == SORT_VALUES ? wk_sort(x, flag, ids) : wk_topk(x, k, flag, ids);
}
static wk_tensor *swap_back(wk_tensor *t, int dim, int last)
{
    if (!t || dim == last) return t;
    wk_tensor *v = wk_transpose(t, dim, last);
    wk_release(t);
    wk_tensor *c = v ? wk_contiguous(v) : NULL;
    wk_release(v);
    return c;
}
static PyObject *sort_any(wk_tensor *x, int dim, int kind, bool flag, int64_t k, const char *op)
{
    if (kind == SORT_TOPK && k < 0) {
        PyErr_Format(PyExc_ValueError, "%s: k %lld (at least 0)", op, (long long)k);
        return NULL;
    }
    const int rank = wk_tensor_rank(x), r = rank ? rank : 1;
    if (dim < -r || dim >= r) {
        PyErr_Format(PyExc_IndexError, "%s: dim %d out of range for %d dims", op, dim, rank);
        return NULL;
    }
    if (dim < 0) dim += r;
    const int last = r - 1;
    const int64_t n = rank ? wk_tensor_dim(x, dim) : 1;
    if (kind == SORT_TOPK && k > n) {
        PyErr_Format(PyExc_ValueError, "%s: k %lld is more than dim %d's size %lld", op, (long long)k, dim, (long long)n);
        return NULL;
    }
    wk_tensor *ids = NULL, *res;
    if (rank == 0 || dim == last) {
        res = CALLT(sort_last(x, kind, flag, k, kind == SORT_ARGS ? NULL : &ids));
    } else {
        wk_tensor *v = wk_transpose(x, dim, last);
        if (!v) return raise_wk();
        res = CALLT(sort_last(v, kind, flag, k, kind == SORT_ARGS ? NULL : &ids));
        wk_release(v);
        res = swap_back(res, dim, last);
        ids = swap_back(ids, dim, last);
    }
    if (kind == SORT_ARGS) return wrap(res);
    return wrap_two(res, res ? ids : (wk_release(ids), NULL));
}
static PyObject *m_sort(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "x", "dim", "descending", NULL };
    wk_tensor *x;
    int dim = -1, desc = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|ip:sort", kwlist, as_tensor_arg, &x, &dim, &desc)) return NULL;
    return sort_any(x, dim, SORT_VALUES, desc != 0, 0, "sort");
}
static PyObject *m_argsort(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "x", "dim", "descending", NULL };
    wk_tensor *x;
    int dim = -1, desc = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|ip:argsort", kwlist, as_tensor_arg, &x, &dim, &desc)) return NULL;
    return sort_any(x, dim, SORT_ARGS, desc != 0, 0, "argsort");
}
static PyObject *m_topk(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "x", "k", "dim", "largest", NULL };
    wk_tensor *x;
    long long k;
    int dim = -1, largest = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&L|ip:topk", kwlist, as_tensor_arg, &x, &k, &dim, &largest)) return NULL;
    return sort_any(x, dim, SORT_TOPK, largest != 0, k, "topk");
}

/* ------------------------------------------------------------------ */
/* module: quantized tensors                                           */

static PyObject *m_quantize(PyObject *mod, PyObject *args)
{
    (void)mod;
    wk_tensor *t;
    wk_dtype q;
    if (!PyArg_ParseTuple(args, "O&O&:quantize", as_tensor_arg, &t, dtype_conv, &q)) return NULL;
    return wrap(CALLT(wk_quantize(t, q)));
}
static PyObject *m_dequantize(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "t", "dtype", NULL };
    wk_tensor *t;
    wk_dtype dt = WK_F32;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O&:dequantize", kwlist, as_tensor_arg, &t, dtype_conv, &dt)) return NULL;
    return wrap(CALLT(wk_dequantize(t, dt)));
}
static PyObject *m_qmatmul(PyObject *mod, PyObject *args)
{
    (void)mod;
    wk_tensor *x, *w;
    if (!PyArg_ParseTuple(args, "O&O&:qmatmul", as_tensor_arg, &x, as_tensor_arg, &w)) return NULL;
    return wrap(CALLT(wk_qmatmul(x, w)));
}
static PyObject *m_qgather(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "table", "ids", "dtype", NULL };
    wk_tensor *table;
    PyObject *ido;
    wk_dtype dt = WK_F32;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O|O&:qgather", kwlist, as_tensor_arg, &table, &ido, dtype_conv, &dt))
        return NULL;
    PyObject *ids = ids_operand(ido, table);
    if (!ids) return NULL;
    wk_tensor *r = CALLT(wk_qgather(table, TT(ids), dt));
    Py_DECREF(ids);
    return wrap(r);
}

/* ------------------------------------------------------------------ */
/* module: pinned host memory and events                               */

static void release_host_block(void *ctx) { wk_host_free(ctx); }

/* pinned_empty(shape, dtype='f32', device='cuda:0'): a cpu tensor in
 * page-locked memory, so copies to and from device move in one DMA */
static PyObject *m_pinned_empty(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "shape", "dtype", "device", NULL };
    wk_shape s;
    wk_dtype dt = WK_F32;
    PyObject *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O&O:pinned_empty", kwlist, shape_conv, &s, dtype_conv, &dt, &device))
        return NULL;
    wk_device *dev = device_of(device), *cpu = device_of(NULL);
    if (!dev || !cpu) return NULL;
    wk_tensor *probe = wk_empty(cpu, dt, WK_SCALAR);   /* the checks of a new tensor: dtype */
    if (!probe) return raise_wk();
    wk_release(probe);
    int64_t n = 1;
    for (int d = 0; d < s.rank; d++) {
        if (s.dims[d] < 0 || (s.dims[d] && n > INT64_MAX / 16 / s.dims[d])) {
            PyErr_SetString(PyExc_ValueError, "pinned_empty: a bad shape");
            return NULL;
        }
        n *= s.dims[d];
    }
    size_t bs = wk_dtype_block_size(dt);
    size_t bytes = (size_t)(n / (int64_t)bs) * wk_dtype_block_bytes(dt);
    void *p = CALL(void *, wk_host_alloc(dev, bytes));
    if (!p) return raise_wk();
    wk_tensor *t = wk_from_external(cpu, dt, s, NULL, p, release_host_block, p);
    if (!t) {
        wk_host_free(p);
        return raise_wk();
    }
    return wrap(t);
}

typedef struct {
    PyObject_HEAD
    wk_event *ev;
} EventObject;

static PyTypeObject Event_Type;

static PyObject *Event_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "device", NULL };
    PyObject *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:Event", kwlist, &device)) return NULL;
    wk_device *dev = device_of(device);
    if (!dev) return NULL;
    wk_event *ev = wk_event_new(dev);
    if (!ev) return raise_wk();
    EventObject *o = (EventObject *)type->tp_alloc(type, 0);
    if (!o) {
        wk_event_free(ev);
        return NULL;
    }
    o->ev = ev;
    return (PyObject *)o;
}
static void Event_dealloc(EventObject *self)
{
    wk_event_free(self->ev);
    Py_TYPE(self)->tp_free((PyObject *)self);
}
static PyObject *Event_record(EventObject *self, PyObject *unused)
{
    (void)unused;
    return check_status(wk_event_record(self->ev));
}
static PyObject *Event_synchronize(EventObject *self, PyObject *unused)
{
    (void)unused;
    return check_status(CALLS(wk_event_synchronize(self->ev)));
}
static PyObject *Event_elapsed_ms(EventObject *self, PyObject *end)
{
    if (!PyObject_TypeCheck(end, &Event_Type)) {
        PyErr_SetString(PyExc_TypeError, "elapsed_ms(end): end is a wick.Event");
        return NULL;
    }
    double ms;
    if (CALLS(wk_event_elapsed_ms(self->ev, ((EventObject *)end)->ev, &ms)) != WK_OK) return raise_wk();
    return PyFloat_FromDouble(ms);
}
static PyMethodDef Event_methods[] = {
    { "record", (PyCFunction)Event_record, METH_NOARGS, "record(): mark the point the device's queued work has reached" },
    { "synchronize", (PyCFunction)Event_synchronize, METH_NOARGS, "synchronize(): wait until the device passes the mark" },
    { "elapsed_ms", (PyCFunction)Event_elapsed_ms, METH_O,
      "elapsed_ms(end) -> milliseconds from this mark to end's (device time on a GPU; waits for both)" },
    { NULL, NULL, 0, NULL },
};
static PyTypeObject Event_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "wick.Event",
    .tp_basicsize = sizeof(EventObject),
    .tp_dealloc = (destructor)Event_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Event(device='cpu'): a marker in a device's stream of work, for timing (wk_event_*)",
    .tp_methods = Event_methods,
    .tp_new = Event_new,
};

/* ------------------------------------------------------------------ */
/* module: devices and introspection                                   */

static PyObject *m_device_count(PyObject *mod, PyObject *arg)
{
    (void)mod;
    const char *k = PyUnicode_AsUTF8(arg);
    if (!k) return NULL;
    return PyLong_FromLong(wk_device_count(k));
}
static PyObject *m_plugin_status(PyObject *mod, PyObject *arg)
{
    (void)mod;
    const char *k = PyUnicode_AsUTF8(arg);
    if (!k) return NULL;
    return PyUnicode_FromString(wk_plugin_status(k));
}
static PyObject *m_synchronize(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *device = Py_None;
    if (!PyArg_ParseTuple(args, "|O:synchronize", &device)) return NULL;
    wk_device *dev = device_of(device);
    if (!dev) return NULL;
    return check_status(CALLS(wk_device_synchronize(dev)));
}
static PyObject *m_device_stream(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *device = Py_None;
    if (!PyArg_ParseTuple(args, "|O:device_stream", &device)) return NULL;
    wk_device *dev = device_of(device);
    if (!dev) return NULL;
    if (!strcmp(wk_device_name(dev), "cpu")) return PyLong_FromLong(0);
    void *st = CALL(void *, wk_device_stream(dev));
    if (!st) return raise_wk();
    return PyLong_FromVoidPtr(st);
}
static PyObject *m_device_info(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *device = Py_None;
    if (!PyArg_ParseTuple(args, "|O:device_info", &device)) return NULL;
    wk_device *dev = device_of(device);
    if (!dev) return NULL;
    wk_device_info i;
    if (wk_device_info_get(dev, &i) != WK_OK) return raise_wk();
    return Py_BuildValue("{s:s,s:s,s:K,s:K,s:i,s:i}", "name", i.name, "model", i.model, "total_memory",
                         (unsigned long long)i.total_memory, "free_memory", (unsigned long long)i.free_memory,
                         "compute_units", i.compute_units, "warp_size", i.warp_size);
}
static PyObject *m_supports(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "op", "dtype", "device", NULL };
    const char *op;
    wk_dtype dt;
    PyObject *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sO&|O:supports", kwlist, &op, dtype_conv, &dt, &device)) return NULL;
    wk_device *dev = device_of(device);
    if (!dev) return NULL;
    return PyBool_FromLong(wk_supports(dev, op, dt));
}
static PyObject *m_env_refresh(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    wk_env_refresh();
    Py_RETURN_NONE;
}
static PyObject *m_op_names(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    PyObject *l = PyList_New(0);
    if (!l) return NULL;
    for (const char *const *n = wk_op_names(); n && *n; n++) {
        PyObject *s = PyUnicode_FromString(*n);
        if (!s || PyList_Append(l, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(l);
            return NULL;
        }
        Py_DECREF(s);
    }
    return l;
}
static PyObject *m_build_info(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    return PyUnicode_FromString(wk_build_info());
}
static PyObject *m_dtypes(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    PyObject *l = PyList_New(WK_DTYPE_COUNT);
    if (!l) return NULL;
    for (int i = 0; i < WK_DTYPE_COUNT; i++) PyList_SET_ITEM(l, i, PyUnicode_FromString(wk_dtype_name((wk_dtype)i)));
    return l;
}
static PyObject *m_dtype_info(PyObject *mod, PyObject *arg)
{
    (void)mod;
    wk_dtype dt;
    if (parse_dtype(arg, &dt) < 0) return NULL;
    return Py_BuildValue("{s:s,s:n,s:n,s:n,s:O,s:O}", "name", wk_dtype_name(dt), "itemsize", (Py_ssize_t)wk_dtype_size(dt),
                         "block_size", (Py_ssize_t)wk_dtype_block_size(dt), "block_bytes",
                         (Py_ssize_t)wk_dtype_block_bytes(dt), "is_float", wk_dtype_is_float(dt) ? Py_True : Py_False,
                         "is_quantized", wk_dtype_is_quantized(dt) ? Py_True : Py_False);
}
static PyObject *m_set_hooks(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *np_, *rp;
    if (!PyArg_ParseTuple(args, "OO:_set_hooks", &np_, &rp)) return NULL;
    Py_XSETREF(hook_numpy, np_ == Py_None ? NULL : (Py_INCREF(np_), np_));
    Py_XSETREF(hook_repr, rp == Py_None ? NULL : (Py_INCREF(rp), rp));
    Py_RETURN_NONE;
}

#define F_KW(name, doc) { #name, (PyCFunction)(void (*)(void))m_##name, METH_VARARGS | METH_KEYWORDS, doc }
#define F_V(name, doc) { #name, (PyCFunction)m_##name, METH_VARARGS, doc }
#define F_O(name, doc) { #name, (PyCFunction)m_##name, METH_O, doc }

static PyMethodDef module_methods[] = {
    F_KW(zeros, "zeros(shape, dtype='f32', device='cpu')"),
    F_KW(ones, "ones(shape, dtype='f32', device='cpu')"),
    F_KW(empty, "empty(shape, dtype='f32', device='cpu') (uninitialised)"),
    F_KW(full, "full(shape, fill_value, dtype='f32', device='cpu')"),
    F_KW(arange, "arange([start,] end[, step], dtype=None, device='cpu'): i64 for int bounds, else f32"),
    F_KW(rand, "rand(shape, dtype='f32', device='cpu', *, seed=None, low=0.0, high=1.0): uniform in [low, high)"),
    F_KW(randn, "randn(shape, dtype='f32', device='cpu', *, seed=None, mean=0.0, std=1.0): normal"),
    F_KW(manual_seed, "manual_seed(seed, device='cpu'): seed a device's generator (offset back to 0)"),
    F_KW(tensor, "tensor(data, dtype=None, device=None): a copy of nested lists, a number, a buffer or a Tensor"),
    F_KW(asarray, "asarray(data, dtype=None, device=None, *, copy=None): shares a buffer's memory on the cpu when it can"),
    F_KW(frombuffer, "frombuffer(data, dtype, shape, device='cpu'): a copy of raw bytes (GGUF blocks for q4_0 .. q8_k)"),
    { "_from_torch", (PyCFunction)m_from_torch, METH_O,
      "_from_torch(x): wick.from_dlpack of a plain torch GPU tensor through torch's C exporter; None for anything else" },
    { "_to_torch", (PyCFunction)m_to_torch, METH_O,
      "_to_torch(t): wick.to_torch of a GPU tensor through torch's C importer; None where that way is closed" },
    { "_from_capsule", (PyCFunction)m_from_capsule, METH_VARARGS,
      "_from_capsule(capsule, stream=None): a Tensor sharing a DLPack capsule's memory (wick's stream waits for stream)" },
    F_KW(cat, "cat(tensors, dim=0)"),
    F_KW(stack, "stack(tensors, dim=0)"),
    F_V(where, "where(cond, a, b): cond (u8/u32/i64, nonzero true) ? a : b, broadcast"),
    F_V(copy2d, "copy2d(dst, src, rows, cols, src_stride, dst_stride, src_offset, dst_offset): row copy in storage units"),
    F_KW(softmax, "softmax(x, dim=-1)"),
    F_KW(log_softmax, "log_softmax(x, dim=-1)"),
    F_KW(rms_norm, "rms_norm(x, weight=None, eps=1e-6, *, gemma=False)"),
    F_KW(add_rms_norm, "add_rms_norm(x, residual, weight=None, eps=1e-6, *, gemma=False) -> (normed, x + residual)"),
    F_KW(layer_norm, "layer_norm(x, weight=None, bias=None, eps=1e-5)"),
    F_V(silu_mul, "silu_mul(a, b) -> silu(a) * b"),
    F_V(linear_silu_mul, "linear_silu_mul(x, w) -> silu(x . w[:F]^T) * (x . w[F:]^T), w [2F, K]"),
    F_KW(rope, "rope(x [B,H,T,D], cos, sin, pos_offset=0): halves (Llama/NeoX)"),
    F_KW(rope_i, "rope_i(x [B,H,T,D], cos, sin, pos_offset=0): interleaved pairs (GPT-J)"),
    F_KW(rope_thd, "rope_thd(x [B,T,H,D], cos, sin, pos_offset=0): halves"),
    F_KW(rope_kv, "rope_kv(qkv [B,T,n_q+2Hkv,D], n_q, cos, sin, k_cache, v_cache, pos_offset=0, pos=None, "
                  "interleaved=False) -> rotated q [B,T,n_q,D]; rotated k and v written to the caches at the position"),
    F_KW(linear_rope_kv, "linear_rope_kv(x [T,K], w [(n_q+2Hkv) D, K], n_q, cos, sin, k_cache, v_cache, "
                         "pos_offset=0, pos=None, interleaved=False) -> rope_kv(x . w^T as [1,T,n_q+2Hkv,D], ...)"),
    F_KW(rope_tables, "rope_tables(head_dim, base, n_pos, scaling=None, *, factor, low_freq_factor, high_freq_factor, "
                      "original_max_position, device) -> (cos, sin)"),
    F_KW(attention, "attention(q, k, v, *, scale=None, causal=False, window=0, softcap=0.0, mask=None, kv_len=None)"),
    F_KW(conv1d, "conv1d(x [N,Cin,L], weight [Cout,Cin/groups,k], bias=None, stride=1, padding=0, dilation=1, groups=1)"),
    F_KW(conv2d, "conv2d(x [N,Cin,H,W], weight [Cout,Cin/groups,kh,kw], bias=None, stride=1, padding=0, dilation=1, "
                 "groups=1): per-dim options an int or a pair"),
    F_KW(conv_transpose1d, "conv_transpose1d(x [N,Cin,L], weight [Cin,Cout/groups,k], bias=None, stride=1, padding=0, "
                           "output_padding=0, groups=1, dilation=1)"),
    F_KW(conv_transpose2d, "conv_transpose2d(x [N,Cin,H,W], weight [Cin,Cout/groups,kh,kw], bias=None, stride=1, "
                           "padding=0, output_padding=0, groups=1, dilation=1): per-dim options an int or a pair"),
    F_KW(avg_pool2d, "avg_pool2d(x [N,C,H,W], kernel_size, stride=None (the kernel), padding=0, ceil_mode=False, "
                     "count_include_pad=True)"),
    F_KW(max_pool2d, "max_pool2d(x [N,C,H,W], kernel_size, stride=None (the kernel), padding=0, ceil_mode=False, "
                     "return_indices=False) -> values, or (values, u32 indices h*W+w in x's plane)"),
    F_KW(upsample_nearest1d, "upsample_nearest1d(x [N,C,L], size=None, scale_factor=None): one of the two, as F.interpolate"),
    F_KW(upsample_nearest2d, "upsample_nearest2d(x [N,C,H,W], size=None, scale_factor=None): one of the two (an int or a pair)"),
    F_KW(upsample_bilinear2d, "upsample_bilinear2d(x [N,C,H,W], size=None, scale_factor=None, align_corners=False)"),
    F_KW(sort, "sort(x, dim=-1, descending=False) -> (values, u32 indices): stable; NaN above +inf"),
    F_KW(argsort, "argsort(x, dim=-1, descending=False) -> u32 indices: stable; NaN above +inf"),
    F_KW(topk, "topk(x, k, dim=-1, largest=True) -> (values, u32 indices), largest (smallest) first"),
    F_V(quantize, "quantize(t, qtype) -> block-quantized tensor (llama.cpp's reference quantizer)"),
    F_KW(dequantize, "dequantize(t, dtype='f32')"),
    F_V(qmatmul, "qmatmul(x [..., k], w [n, k] quantized) -> x . w^T"),
    F_KW(qgather, "qgather(table, ids, dtype='f32') -> rows of a quantized table"),
    F_KW(pinned_empty, "pinned_empty(shape, dtype='f32', device='cuda:0') -> a cpu tensor in page-locked memory "
                       "(fast copies to and from device; uninitialised)"),
    F_O(device_count, "device_count(kind) -> the number of devices of 'cpu', 'cuda' or 'rocm'"),
    F_O(plugin_status, "plugin_status(kind) -> why a GPU plugin did not load ('' when it did)"),
    F_V(synchronize, "synchronize(device='cpu'): wait for the device's queued work"),
    F_V(device_stream, "device_stream(device='cpu') -> int: the device's stream (a cudaStream_t / hipStream_t as an int; 0 on the cpu), for DLPack's stream argument or torch.cuda.ExternalStream"),
    F_V(device_info, "device_info(device='cpu') -> dict"),
    F_KW(supports, "supports(op, dtype, device='cpu') -> whether the device implements op for dtype"),
    { "op_names", (PyCFunction)m_op_names, METH_NOARGS, "op_names() -> every op name" },
    { "env_refresh", (PyCFunction)m_env_refresh, METH_NOARGS,
      "env_refresh(): read the WICK_* knobs that steer ops again (they are read once; call after changing os.environ)" },
    { "build_info", (PyCFunction)m_build_info, METH_NOARGS, "build_info() -> version, compiler, BLAS, plugins" },
    { "dtypes", (PyCFunction)m_dtypes, METH_NOARGS, "dtypes() -> every dtype name" },
    F_O(dtype_info, "dtype_info(dtype) -> dict(name, itemsize, block_size, block_bytes, is_float, is_quantized)"),
    { "_set_hooks", (PyCFunction)m_set_hooks, METH_VARARGS, "internal: numpy and repr glue" },
    { NULL, NULL, 0, NULL },
};

static void module_free(void *m)
{
    (void)m;
    Py_CLEAR(hook_numpy);
    Py_CLEAR(hook_repr);
    /* devices stay open: tensors may outlive the module at exit */
}

static struct PyModuleDef wick_module = {
    PyModuleDef_HEAD_INIT, "_wick", "wick's C extension (use the wick package).", -1, module_methods,
    NULL, NULL, NULL, module_free,
};

int wkpy_add_type(PyObject *module, const char *name, PyTypeObject *type)
{
    if (PyType_Ready(type) < 0) return -1;
    Py_INCREF(type);
    if (PyModule_AddObject(module, name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC PyInit__wick(void)
{
    PyObject *m = PyModule_Create(&wick_module);
    if (!m) return NULL;
    if (wkpy_add_type(m, "Tensor", &Tensor_Type) < 0 || wkpy_add_type(m, "Event", &Event_Type) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyModule_AddIntConstant(m, "VERSION_MAJOR", WK_VERSION_MAJOR);
    PyModule_AddIntConstant(m, "VERSION_MINOR", WK_VERSION_MINOR);
    PyModule_AddIntConstant(m, "VERSION_PATCH", WK_VERSION_PATCH);
    PyModule_AddIntConstant(m, "MAX_RANK", WK_MAX_RANK);
    if (wkpy_model_init(m) < 0 || wkpy_engine_init(m) < 0 || wkpy_comm_init(m) < 0 || wkpy_graph_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
