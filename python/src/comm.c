/* comm.c — the extension's collectives (include/wick_comm.h): the Comm
 * type (a rank of a communicator: all_reduce, all_gather, broadcast) and
 * the functions that make communicators (comm_init_all, comm_unique_id,
 * Comm(device, rank, world, id), comm_from_env). Collectives run without
 * the GIL, so the ranks of one process are Python threads, one per rank.
 * A Model loaded with comm=... is that rank's share (model.c).
 */
#include <string.h>
#include "_wick.h"
#include "wick_comm.h"

typedef struct {
    PyObject_HEAD
    wk_comm *c;
} CommObject;

static PyTypeObject Comm_Type;

static PyObject *comm_wrap(wk_comm *c)
{
    if (!c) return raise_wk();
    CommObject *o = PyObject_New(CommObject, &Comm_Type);
    if (!o) {
        wk_comm_free(c);
        return NULL;
    }
    o->c = c;
    return (PyObject *)o;
}

wk_comm *wkpy_comm_of(PyObject *o)
{
    if (!PyObject_TypeCheck(o, &Comm_Type)) {
        PyErr_Format(PyExc_TypeError, "a wick.Comm is needed, not %s", Py_TYPE(o)->tp_name);
        return NULL;
    }
    wk_comm *c = ((CommObject *)o)->c;
    if (!c) PyErr_SetString(PyExc_ValueError, "the communicator is closed");
    return c;
}

static void Comm_dealloc(CommObject *self)
{
    wk_comm *c = self->c;
    self->c = NULL;
    Py_BEGIN_ALLOW_THREADS wk_comm_free(c);
    Py_END_ALLOW_THREADS Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Comm(device, rank, world, id): one rank per process (or thread), joined
 * through id (bytes from comm_unique_id, handed to every rank). */
static PyObject *Comm_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)type;
    static char *kwlist[] = { "device", "rank", "world", "id", NULL };
    PyObject *device;
    int rank, world;
    Py_buffer id;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oiiy*:Comm", kwlist, &device, &rank, &world, &id)) return NULL;
    wk_comm_id cid;
    if (id.len != WK_COMM_ID_BYTES) {
        PyErr_Format(PyExc_ValueError, "a communicator id is %d bytes, not %zd", WK_COMM_ID_BYTES, id.len);
        PyBuffer_Release(&id);
        return NULL;
    }
    memcpy(cid.bytes, id.buf, WK_COMM_ID_BYTES);
    PyBuffer_Release(&id);
    wk_device *dev = device_of(device);
    if (!dev) return NULL;
    wk_comm *c;
    Py_BEGIN_ALLOW_THREADS c = wk_comm_init_rank(dev, rank, world, &cid);
    Py_END_ALLOW_THREADS return comm_wrap(c);
}

static CommObject *open_comm(CommObject *self)
{
    if (self->c) return self;
    PyErr_SetString(PyExc_ValueError, "the communicator is closed");
    return NULL;
}

static wk_tensor *tensor_arg(PyObject *o)
{
    wk_tensor *t = wkpy_tensor_of(o);
    if (!t && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a wick.Tensor is needed");
    return t;
}

static PyObject *Comm_all_reduce(CommObject *self, PyObject *arg)
{
    wk_tensor *t = open_comm(self) ? tensor_arg(arg) : NULL;
    if (!t) return NULL;
    wk_status st;
    Py_BEGIN_ALLOW_THREADS st = wk_all_reduce(self->c, t);
    Py_END_ALLOW_THREADS if (st != WK_OK) return raise_wk();
    Py_INCREF(arg);
    return arg;
}

static PyObject *Comm_all_gather(CommObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "x", "dim", NULL };
    PyObject *xo;
    int dim = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i:all_gather", kwlist, &xo, &dim)) return NULL;
    wk_tensor *x = open_comm(self) ? tensor_arg(xo) : NULL;
    if (!x) return NULL;
    wk_tensor *r;
    Py_BEGIN_ALLOW_THREADS r = wk_all_gather(self->c, x, dim);
    Py_END_ALLOW_THREADS return wrap(r);
}

static PyObject *Comm_broadcast(CommObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "x", "root", NULL };
    PyObject *xo;
    int root = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i:broadcast", kwlist, &xo, &root)) return NULL;
    wk_tensor *x = open_comm(self) ? tensor_arg(xo) : NULL;
    if (!x) return NULL;
    wk_status st;
    Py_BEGIN_ALLOW_THREADS st = wk_broadcast(self->c, x, root);
    Py_END_ALLOW_THREADS if (st != WK_OK) return raise_wk();
    Py_INCREF(xo);
    return xo;
}

/* all_reduce_add_rms_norm(x, residual, weight=None, eps=1e-6, gemma=False)
 * -> (norm, sum) */
static PyObject *Comm_all_reduce_add_rms_norm(CommObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "x", "residual", "weight", "eps", "gemma", NULL };
    PyObject *xo, *ro, *wo = Py_None;
    double eps = 1e-6;
    int gemma = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|Odp:all_reduce_add_rms_norm", kwlist, &xo, &ro, &wo, &eps, &gemma))
        return NULL;
    wk_tensor *x = open_comm(self) ? tensor_arg(xo) : NULL, *r = x ? tensor_arg(ro) : NULL;
    wk_tensor *w = r && wo != Py_None ? tensor_arg(wo) : NULL;
    if (!r || (wo != Py_None && !w)) return NULL;
    wk_tensor *h, *sum = NULL;
    Py_BEGIN_ALLOW_THREADS h = wk_all_reduce_add_rms_norm(self->c, x, r, w, eps, gemma != 0, &sum);
    Py_END_ALLOW_THREADS if (!h) return raise_wk();
    PyObject *ho = wrap(h), *so = ho ? wrap(sum) : NULL;
    if (!so) {
        if (!ho) wk_release(sum);
        Py_XDECREF(ho);
        return NULL;
    }
    return Py_BuildValue("(NN)", ho, so);
}

static PyObject *Comm_close(CommObject *self, PyObject *unused)
{
    (void)unused;
    wk_comm *c = self->c;
    self->c = NULL;
    Py_BEGIN_ALLOW_THREADS wk_comm_free(c);
    Py_END_ALLOW_THREADS Py_RETURN_NONE;
}

static PyObject *Comm_abort(CommObject *self, PyObject *unused)
{
    (void)unused;
    if (!open_comm(self)) return NULL;
    wk_comm_abort(self->c);
    Py_RETURN_NONE;
}

static PyObject *Comm_get_aborted(CommObject *self, void *c)
{
    (void)c;
    return open_comm(self) ? PyBool_FromLong(wk_comm_aborted(self->c)) : NULL;
}

static PyObject *Comm_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    Py_INCREF(self);
    return self;
}

static PyObject *Comm_exit(CommObject *self, PyObject *args)
{
    (void)args;
    return Comm_close(self, NULL);
}

static PyObject *Comm_get_rank(CommObject *self, void *c)
{
    (void)c;
    return open_comm(self) ? PyLong_FromLong(wk_comm_rank(self->c)) : NULL;
}

static PyObject *Comm_get_size(CommObject *self, void *c)
{
    (void)c;
    return open_comm(self) ? PyLong_FromLong(wk_comm_size(self->c)) : NULL;
}

static PyObject *Comm_get_device(CommObject *self, void *c)
{
    (void)c;
    return open_comm(self) ? PyUnicode_FromString(wk_device_name(wk_comm_device(self->c))) : NULL;
}

static PyObject *Comm_repr(CommObject *self)
{
    if (!self->c) return PyUnicode_FromString("Comm(closed)");
    return PyUnicode_FromFormat("Comm(rank %d of %d on %s)", wk_comm_rank(self->c), wk_comm_size(self->c),
                                wk_device_name(wk_comm_device(self->c)));
}

static PyMethodDef Comm_methods[] = {
    { "all_reduce", (PyCFunction)Comm_all_reduce, METH_O,
      "all_reduce(x) -> x: x = the sum of every rank's x, in place (f32, f16, bf16, f64, i32, i64)" },
    { "all_gather", (PyCFunction)(void (*)(void))Comm_all_gather, METH_VARARGS | METH_KEYWORDS,
      "all_gather(x, dim=0) -> Tensor: every rank's x joined along dim in rank order" },
    { "broadcast", (PyCFunction)(void (*)(void))Comm_broadcast, METH_VARARGS | METH_KEYWORDS,
      "broadcast(x, root=0) -> x: root's x on every rank, in place" },
    { "all_reduce_add_rms_norm", (PyCFunction)(void (*)(void))Comm_all_reduce_add_rms_norm, METH_VARARGS | METH_KEYWORDS,
      "all_reduce_add_rms_norm(x, residual, weight=None, eps=1e-6, gemma=False) -> (norm, sum): all_reduce(x) in "
      "place, then sum = x + residual and norm = rms_norm(sum) * weight (* (1 + weight) with gemma); one kernel per "
      "rank where the GPUs' peer-memory path takes it" },
    { "close", (PyCFunction)Comm_close, METH_NOARGS, "close(): wait for the queued collectives and free the rank" },
    { "abort", (PyCFunction)Comm_abort, METH_NOARGS,
      "abort(): this rank failed: every rank's collective waiting for it raises, and every later one too (any "
      "thread may call it; the communicator stays unusable: close every rank)" },
    { "__enter__", (PyCFunction)Comm_enter, METH_NOARGS, NULL },
    { "__exit__", (PyCFunction)Comm_exit, METH_VARARGS, NULL },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef Comm_getset[] = {
    { "rank", (getter)Comm_get_rank, NULL, "this rank", NULL },
    { "size", (getter)Comm_get_size, NULL, "the number of ranks", NULL },
    { "device", (getter)Comm_get_device, NULL, "this rank's device", NULL },
    { "aborted", (getter)Comm_get_aborted, NULL, "whether the communicator (any rank) was aborted or broke", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject Comm_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.Comm",
    .tp_basicsize = sizeof(CommObject),
    .tp_dealloc = (destructor)Comm_dealloc,
    .tp_repr = (reprfunc)Comm_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Comm(device, rank, world, id): one rank of a communicator (wick_comm.h); collectives run without "
              "the GIL, each rank from its own thread. Made by wick.comm_init_all, wick.comm_from_env or this "
              "constructor with an id from wick.comm_unique_id.",
    .tp_methods = Comm_methods,
    .tp_getset = Comm_getset,
    .tp_new = Comm_new,
};

/* comm_init_all(devices) -> [Comm]: rank i on devices[i], for threads of
 * this process ("cpu" may repeat: the cpu's ranks are threads). */
static PyObject *m_comm_init_all(PyObject *mod, PyObject *arg)
{
    (void)mod;
    PyObject *seq = PySequence_Fast(arg, "comm_init_all takes a list of devices");
    if (!seq) return NULL;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > 1024) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "comm_init_all takes 1 to 1024 devices");
        return NULL;
    }
    wk_device **devs = PyMem_Calloc((size_t)n, sizeof *devs);
    wk_comm **cs = PyMem_Calloc((size_t)n, sizeof *cs);
    PyObject *out = NULL;
    if (!devs || !cs) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (!(devs[i] = device_of(PySequence_Fast_GET_ITEM(seq, i)))) goto done;
    wk_status st;
    Py_BEGIN_ALLOW_THREADS st = wk_comm_init_all(devs, (int)n, cs);
    Py_END_ALLOW_THREADS if (st != WK_OK) {
        raise_wk();
        goto done;
    }
    out = PyList_New(n);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *c = out ? comm_wrap(cs[i]) : NULL;
        if (!c) {
            if (!out || !PyErr_Occurred()) wk_comm_free(cs[i]);
            for (Py_ssize_t j = i + 1; j < n; j++) wk_comm_free(cs[j]);
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, c);
    }
done:
    PyMem_Free(devs);
    PyMem_Free(cs);
    Py_DECREF(seq);
    return out;
}

static PyObject *m_comm_unique_id(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *device = Py_None;
    if (!PyArg_ParseTuple(args, "|O:comm_unique_id", &device)) return NULL;
    wk_device *dev = device_of(device);
    if (!dev) return NULL;
    wk_comm_id id;
    wk_status st;
    Py_BEGIN_ALLOW_THREADS st = wk_comm_unique_id(dev, &id);
    Py_END_ALLOW_THREADS if (st != WK_OK) return raise_wk();
    return PyBytes_FromStringAndSize((const char *)id.bytes, WK_COMM_ID_BYTES);
}

static PyObject *m_comm_from_env(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *device = Py_None;
    if (!PyArg_ParseTuple(args, "|O:comm_from_env", &device)) return NULL;
    wk_device *dev = device_of(device);
    if (!dev) return NULL;
    wk_comm *c;
    Py_BEGIN_ALLOW_THREADS c = wk_comm_init_env(dev);
    Py_END_ALLOW_THREADS return comm_wrap(c);
}

static PyObject *m_comm_available(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *device = Py_None;
    if (!PyArg_ParseTuple(args, "|O:comm_available", &device)) return NULL;
    wk_device *dev = device_of(device);
    if (!dev) return NULL;
    return PyBool_FromLong(wk_comm_available(dev));
}

static PyMethodDef comm_functions[] = {
    { "comm_init_all", m_comm_init_all, METH_O,
      "comm_init_all(devices) -> [Comm]: rank i on devices[i], for one thread per rank ('cpu' may repeat)" },
    { "comm_unique_id", m_comm_unique_id, METH_VARARGS,
      "comm_unique_id(device) -> bytes: the rendezvous for Comm(device, rank, world, id) (GPUs: NCCL/RCCL)" },
    { "comm_from_env", m_comm_from_env, METH_VARARGS,
      "comm_from_env(device) -> Comm: from torchrun's RANK, WORLD_SIZE and WICK_COMM_ID or MASTER_ADDR/MASTER_PORT" },
    { "comm_available", m_comm_available, METH_VARARGS,
      "comm_available(device='cpu') -> bool: whether the device has collectives (GPUs: NCCL/RCCL found)" },
    { NULL, NULL, 0, NULL },
};

int wkpy_comm_init(PyObject *module)
{
    if (wkpy_add_type(module, "Comm", &Comm_Type) < 0) return -1;
    return PyModule_AddFunctions(module, comm_functions);
}
