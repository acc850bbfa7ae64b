/* graph.c — the extension's recorded graphs (wk_graph_* of include/wick.h):
 * the Graph type, a context manager that records the ops run inside it
 * on one GPU and replays them with launch(), and Tensor.write's use with
 * it (new data into a graph's input tensors between replays).
 *
 *     g = wick.Graph("cuda:0")
 *     with g:
 *         y = f(x)            # recorded, not run
 *     for data in batches:
 *         x.write(data)       # the input's memory, in place
 *         g.launch()
 *         use(y.numpy())
 *     g.free()                # or let g go
 *
 * What the C API leaves to its caller, the binding does: every Tensor made
 * while recording (y above, and anything else wrapped then) is kept alive
 * by the Graph until it is freed, since a replay writes into their memory;
 * without that, dropping y while g lives would give y's memory to other
 * tensors that the next replay overwrites. The inputs (x above, made
 * before recording) are the caller's to keep while the graph lives, as in
 * C. One recording at a time in the process.
 */
#include "_wick.h"

typedef struct {
    PyObject_HEAD
    PyObject *device;   /* what the Graph was made with            */
    wk_device *dev;
    wk_graph *g;        /* NULL: not recorded yet, or freed         */
    PyObject *keep;     /* list: the Tensors made while recording   */
    int recording;
} GraphObject;

static PyTypeObject Graph_Type;

/* The Graph recording now (borrowed), or NULL. */
static GraphObject *recording_now;

void wkpy_graph_keep(PyObject *tensor, const wk_tensor *t)
{
    GraphObject *r = recording_now;
    if (!r || !r->keep || wk_tensor_device(t) != r->dev) return;
    if (PyList_Append(r->keep, tensor) < 0) PyErr_Clear();   /* out of memory: the block stays the caller's */
}

static PyObject *Graph_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "device", NULL };
    PyObject *device = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:Graph", kwlist, &device)) return NULL;
    wk_device *dev = device_of(device);
    if (!dev) return NULL;
    if (!wk_supports(dev, "graph", WK_F32)) {
        PyErr_Format(PyExc_NotImplementedError, "Graph: %s does not record graphs (the GPUs do)", wk_device_name(dev));
        return NULL;
    }
    GraphObject *o = (GraphObject *)type->tp_alloc(type, 0);
    if (!o) return NULL;
    Py_INCREF(device);
    o->device = device;
    o->dev = dev;
    return (PyObject *)o;
}

static void graph_release(GraphObject *self)
{
    if (self->g) {
        wk_graph *g = self->g;
        self->g = NULL;
        Py_BEGIN_ALLOW_THREADS wk_graph_free(g);   /* waits for the replays queued */
        Py_END_ALLOW_THREADS
    }
    Py_CLEAR(self->keep);   /* then the outputs' memory may go */
}

static void Graph_dealloc(GraphObject *self)
{
    if (recording_now == self) {   /* dropped mid-recording (cannot happen inside `with`): end it */
        wk_graph_free(wk_graph_end(self->dev));
        recording_now = NULL;
    }
    graph_release(self);
    Py_CLEAR(self->device);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Graph_enter(GraphObject *self, PyObject *unused)
{
    (void)unused;
    if (recording_now) {
        PyErr_SetString(PyExc_RuntimeError, "Graph: another graph is being recorded");
        return NULL;
    }
    if (self->g) {
        PyErr_SetString(PyExc_RuntimeError, "Graph: already recorded (make a new Graph to record again)");
        return NULL;
    }
    PyObject *keep = PyList_New(0);
    if (!keep) return NULL;
    wk_status st;
    Py_BEGIN_ALLOW_THREADS st = wk_graph_begin(self->dev);
    Py_END_ALLOW_THREADS if (st != WK_OK)
    {
        Py_DECREF(keep);
        return raise_wk();
    }
    Py_XSETREF(self->keep, keep);
    self->recording = 1;
    recording_now = self;
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *Graph_exit(GraphObject *self, PyObject *args)
{
    PyObject *et = Py_None, *ev = Py_None, *tb = Py_None;
    if (!PyArg_ParseTuple(args, "|OOO:__exit__", &et, &ev, &tb)) return NULL;
    if (!self->recording) {
        PyErr_SetString(PyExc_RuntimeError, "Graph: __exit__ without a recording");
        return NULL;
    }
    wk_graph *g;
    Py_BEGIN_ALLOW_THREADS g = wk_graph_end(self->dev);   /* ends the recording whatever happened */
    Py_END_ALLOW_THREADS
    self->recording = 0;
    recording_now = NULL;
    if (et != Py_None) {   /* the block raised: drop what was recorded, let its exception through */
        Py_BEGIN_ALLOW_THREADS wk_graph_free(g);
        Py_END_ALLOW_THREADS
        Py_CLEAR(self->keep);
        Py_RETURN_FALSE;
    }
    if (!g) {
        Py_CLEAR(self->keep);
        return raise_wk();
    }
    self->g = g;
    Py_RETURN_FALSE;
}

static PyObject *Graph_launch(GraphObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->g) {
        PyErr_SetString(PyExc_RuntimeError,
                        self->recording ? "Graph.launch: still recording (launch after the with block)"
                                        : "Graph.launch: nothing recorded (or freed)");
        return NULL;
    }
    wk_status st;
    Py_BEGIN_ALLOW_THREADS st = wk_graph_launch(self->g);
    Py_END_ALLOW_THREADS if (st != WK_OK) return raise_wk();
    Py_RETURN_NONE;
}

static PyObject *Graph_free(GraphObject *self, PyObject *unused)
{
    (void)unused;
    if (self->recording) {
        PyErr_SetString(PyExc_RuntimeError, "Graph.free: still recording");
        return NULL;
    }
    graph_release(self);
    Py_RETURN_NONE;
}

static PyObject *Graph_get_recorded(GraphObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->g != NULL);
}

static PyObject *Graph_get_device(GraphObject *self, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(wk_device_name(self->dev));
}

static PyMethodDef Graph_methods[] = {
    { "__enter__", (PyCFunction)Graph_enter, METH_NOARGS, "start recording the device's ops" },
    { "__exit__", (PyCFunction)Graph_exit, METH_VARARGS, "stop recording (an exception in the block drops the recording)" },
    { "launch", (PyCFunction)Graph_launch, METH_NOARGS,
      "launch(): replay the recorded ops on the device's stream (returns before they finish)" },
    { "free", (PyCFunction)Graph_free, METH_NOARGS,
      "free(): wait for the replays queued, free the graph and let go of the tensors made while recording" },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef Graph_getset[] = {
    { "recorded", (getter)Graph_get_recorded, NULL, "whether a recording is held (launch() may be called)", NULL },
    { "device", (getter)Graph_get_device, NULL, "the device's name", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject Graph_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "wick.Graph",
    .tp_basicsize = sizeof(GraphObject),
    .tp_dealloc = (destructor)Graph_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Graph(device): `with g:` records the ops run on the device (a GPU) inside the block; g.launch() "
              "replays them. Tensors made while recording stay alive with the graph.",
    .tp_methods = Graph_methods,
    .tp_getset = Graph_getset,
    .tp_new = Graph_new,
};

int wkpy_graph_init(PyObject *module)
{
    return wkpy_add_type(module, "Graph", &Graph_Type);
}
