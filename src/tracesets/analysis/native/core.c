/* tracesets.analysis._native: a rank's pass in C.
 *
 * Core holds a rank's GPU events and launches (pairing.c), sorted in bounded memory
 * (records.c), and sweeps them at the end (sweep.c); Operators counts operators by step
 * (operators.c); fold_events reads each event once (fold.c). compiled.py builds the
 * figures from what they hold, with the reference's own code. */
#include "memory.h"

#include <errno.h>
#include <math.h>

#include "core.h"
#include "operators.h"
#include "sweep.h"

static int number(PyObject *value, double *out) {
    if (PyFloat_CheckExact(value)) {
        *out = PyFloat_AS_DOUBLE(value);
        return 0;
    }
    double d = PyFloat_AsDouble(value);
    if (d == -1.0 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError) || !PyLong_Check(value)) return -1;
        PyErr_Clear(); /* an integer past a double: as far as a double goes */
        PyObject *zero = PyLong_FromLong(0);
        if (zero == NULL) return -1;
        int negative = PyObject_RichCompareBool(value, zero, Py_LT);
        Py_DECREF(zero);
        if (negative < 0) return -1;
        d = negative ? -INFINITY : INFINITY;
    }
    *out = d;
    return 0;
}

/* spill.SpillFailed: the temporary file failed, the machine's fault, not the trace's. */
static PyObject *spill_failed;

static int failed_errno(void) {
    if (PyErr_Occurred()) return -1;
    if (errno == ENOMEM)
        PyErr_NoMemory();
    else
        PyErr_SetFromErrno(spill_failed);
    return -1;
}

static int Core_init(Core *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"window", "buffer", "fan_in", "resolve", "directory", NULL};
    Py_ssize_t window, buffer, fan_in;
    PyObject *resolve, *directory;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "nnnOO&", keywords, &window, &buffer, &fan_in,
                                     &resolve, PyUnicode_FSConverter, &directory))
        return -1;
    if (self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "Core is initialised once");
        Py_DECREF(directory);
        return -1;
    }
    if (window < 1 || buffer < 1 || fan_in < 2) {
        PyErr_SetString(PyExc_ValueError,
                        "a window and a buffer of at least 1 and a fan-in of at least 2");
        Py_DECREF(directory);
        return -1;
    }
    self->names = PyDict_New();
    if (self->names == NULL) {
        Py_DECREF(directory);
        return -1;
    }
    Py_INCREF(resolve);
    self->resolve = resolve;
    self->directory = directory;
    if (pairing_init(&self->pairing, (size_t)window, (size_t)buffer, (size_t)fan_in,
                     PyBytes_AS_STRING(directory)) < 0) {
        pairing_free(&self->pairing);
        return failed_errno();
    }
    self->ready = 1;
    return 0;
}

static int check_ready(Core *self) {
    if (!self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "the GPU events were closed");
        return -1;
    }
    return 0;
}

static void Core_close_all(Core *self) {
    if (self->ready) pairing_free(&self->pairing);
    self->ready = 0;
}

static int Core_traverse(Core *self, visitproc visit, void *arg) {
    Py_VISIT(self->names);
    Py_VISIT(self->resolve);
    return 0;
}

static int Core_clear(Core *self) {
    Py_CLEAR(self->names);
    Py_CLEAR(self->resolve);
    return 0;
}

static void Core_dealloc(Core *self) {
    PyObject_GC_UnTrack(self);
    Core_close_all(self);
    Core_clear(self);
    Py_CLEAR(self->directory);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A kernel name's code: number << 2 | kind. */
static long name_code(Core *self, PyObject *name) {
    PyObject *code = PyDict_GetItemWithError(self->names, name);
    if (code == NULL) {
        if (PyErr_Occurred()) return LONG_MIN;
        code = PyObject_CallOneArg(self->resolve, name);
        if (code == NULL) return LONG_MIN;
        int stored = PyDict_SetItem(self->names, name, code);
        Py_DECREF(code); /* the dict holds it */
        if (stored < 0) return LONG_MIN;
    }
    long value = PyLong_AsLong(code);
    return value == -1 && PyErr_Occurred() ? LONG_MIN : value;
}

int core_add_gpu(Core *self, PyObject *name, double start, double end, double correlation,
                 double stream, int kernel_category) {
    if (check_ready(self) < 0) return -1;
    long code = name_code(self, name);
    if (code == LONG_MIN) return -1;
    long kind = code & 3, named = code >> 2;
    double flags = (double)(kernel_category ? kind | 4 : kind);
    if (pairing_gpu(&self->pairing, start, end, correlation, flags, (double)named, stream) < 0)
        return failed_errno();
    return 0;
}

/* add_gpu(name, start, end, correlation, stream=0, kernel_category=True) */
static PyObject *Core_add_gpu(Core *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 4 || nargs > 6) {
        PyErr_SetString(PyExc_TypeError, "add_gpu takes 4 to 6 positional arguments");
        return NULL;
    }
    double start, end, correlation, stream = 0;
    if (number(args[1], &start) < 0 || number(args[2], &end) < 0 ||
        number(args[3], &correlation) < 0 || (nargs > 4 && number(args[4], &stream) < 0))
        return NULL;
    int category = 1;
    if (nargs > 5 && (category = PyObject_IsTrue(args[5])) < 0) return NULL;
    if (core_add_gpu(self, args[0], start, end, correlation, stream, category) < 0) return NULL;
    Py_RETURN_NONE;
}

int core_add_launch(Core *self, double start, double correlation, double call) {
    if (check_ready(self) < 0) return -1;
    if (pairing_launch(&self->pairing, start, correlation, call) < 0) return failed_errno();
    return 0;
}

/* add_launch(start, correlation, call=nan) */
static PyObject *Core_add_launch(Core *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 2 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "add_launch takes 2 or 3 positional arguments");
        return NULL;
    }
    double start, correlation, call = NAN;
    if (number(args[0], &start) < 0 || number(args[1], &correlation) < 0 ||
        (nargs > 2 && number(args[2], &call) < 0))
        return NULL;
    if (core_add_launch(self, start, correlation, call) < 0) return NULL;
    Py_RETURN_NONE;
}

/* (count, exact values as bytes of doubles or None once binned, [(bin, count)]) */
static PyObject *distribution_tuple(const Distribution *d) {
    PyObject *bins = PyList_New((Py_ssize_t)d->nbins);
    if (bins == NULL) return NULL;
    for (size_t i = 0; i < d->nbins; i++) {
        PyObject *bin = Py_BuildValue("(lL)", d->bin_index[i], d->bin_count[i]);
        if (bin == NULL) {
            Py_DECREF(bins);
            return NULL;
        }
        PyList_SET_ITEM(bins, (Py_ssize_t)i, bin);
    }
    if (d->binned) return Py_BuildValue("(LON)", d->count, Py_None, bins);
    static const char none[1] = "";
    return Py_BuildValue("(Ly#N)", d->count, d->nexact ? (const char *)d->exact : none,
                         (Py_ssize_t)(d->nexact * sizeof(double)), bins);
}

static PyObject *moments_tuple(const Moments *m) {
    return Py_BuildValue("(Ldddddd)", m->count, m->total, m->shifted, m->squares, m->low,
                         m->high, m->shift);
}

static PyObject *folded(Fold *fold, const Breakdown *b) {
    PyObject *by_mask = PyList_New(KIND_MASKS), *moments = PyList_New(0),
             *streams = PyList_New(0), *cells = PyList_New(0), *item;
    if (by_mask == NULL || moments == NULL || streams == NULL || cells == NULL) goto failed;
    for (int i = 0; i < KIND_MASKS; i++) {
        if ((item = PyFloat_FromDouble(b->by_mask[i])) == NULL) goto failed;
        PyList_SET_ITEM(by_mask, i, item);
    }
    for (size_t i = 0; i < fold->nmoments; i++) {
        if ((item = moments_tuple(&fold->moments[i])) == NULL) goto failed;
        int appended = PyList_Append(moments, item);
        Py_DECREF(item);
        if (appended < 0) goto failed;
    }
    for (size_t i = 0; i < fold->nstreams; i++) {
        const StreamIdle *s = &fold->streams[i];
        item = Py_BuildValue("(Nddd)", PyLong_FromDouble(s->stream), s->host, s->kernel,
                             s->other);
        if (item == NULL) goto failed;
        int appended = PyList_Append(streams, item);
        Py_DECREF(item);
        if (appended < 0) goto failed;
    }
    for (size_t i = 0; i < fold->ncells; i++) {
        const OpCell *c = &fold->cells[i];
        if ((item = Py_BuildValue("(dddd)", c->count, c->total, c->first_count,
                                  c->first_total)) == NULL)
            goto failed;
        int appended = PyList_Append(cells, item);
        Py_DECREF(item);
        if (appended < 0) goto failed;
    }
    const OpCell *o = &fold->other_cell;
    return Py_BuildValue("(LNdddNNNLLLN(dddd)NNN)", b->count, by_mask, b->first, b->group_end,
                         b->busy, moments, moments_tuple(&fold->unnamed), streams,
                         fold->short_kernels, fold->long_delays, fold->long_runtimes, cells,
                         o->count, o->total, o->first_count, o->first_total,
                         distribution_tuple(&fold->calls), distribution_tuple(&fold->runs),
                         distribution_tuple(&fold->delays));
failed:
    Py_XDECREF(by_mask);
    Py_XDECREF(moments);
    Py_XDECREF(streams);
    Py_XDECREF(cells);
    return NULL;
}

/* The steps of the operator counts: (starts, ends, numbers, first, low, high, in_first), the
 * arrays as buffers of doubles and of 64-bit integers (array.array, or bytes). */
static int read_steps(PyObject *steps, Fold *fold, Py_buffer views[3]) {
    PyObject *arrays[3], *first;
    int in_first;
    if (!PyArg_ParseTuple(steps, "OOOOddp", &arrays[0], &arrays[1], &arrays[2], &first,
                          &fold->steps.low, &fold->steps.high, &in_first))
        return -1;
    int got = 0;
    for (; got < 3; got++)
        if (PyObject_GetBuffer(arrays[got], &views[got], PyBUF_C_CONTIGUOUS) < 0) break;
    Py_ssize_t size = got == 3 ? views[0].len : -1;
    if (got == 3 && (size % 8 || views[1].len != size || views[2].len != size)) {
        PyErr_SetString(PyExc_ValueError, "steps: as many starts, ends and numbers");
        size = -1;
    }
    if (size < 0 || (first != Py_None && (fold->steps.first = PyLong_AsLongLong(first)) == -1 &&
                     PyErr_Occurred())) {
        for (int i = 0; i < got; i++) PyBuffer_Release(&views[i]);
        return -1;
    }
    fold->counting = 1;
    fold->steps.starts = views[0].buf;
    fold->steps.ends = views[1].buf;
    fold->steps.numbers = views[2].buf;
    fold->steps.n = (size_t)size / 8;
    fold->steps.in_first = in_first;
    fold->steps.has_first = first != Py_None;
    return 0;
}

/* finish(last_step, steps, tracked_streams, exact): pairs what waits and sweeps every
 * record once; the GPU events are given up, then. */
static PyObject *Core_finish(Core *self, PyObject *args) {
    PyObject *last_step, *steps;
    Py_ssize_t tracked, exact;
    if (!PyArg_ParseTuple(args, "OOnn", &last_step, &steps, &tracked, &exact) ||
        check_ready(self) < 0)
        return NULL;
    double limit = INFINITY;
    int everything = last_step == Py_None;
    if (!everything && number(last_step, &limit) < 0) return NULL;
    Fold fold;
    Py_buffer views[3];
    if (fold_init(&fold, tracked < 0 ? 0 : (size_t)tracked, exact < 0 ? 0 : (size_t)exact) < 0) {
        fold_free(&fold);
        return failed_errno(), NULL;
    }
    if (steps != Py_None && read_steps(steps, &fold, views) < 0) {
        fold_free(&fold);
        return NULL;
    }
    /* The work from here reads and writes this core's C data only, its memory through the
     * raw allocator: it runs without the GIL (a rank of gigabytes takes a second), and no
     * other call may touch the events meanwhile: they are closed from now on. */
    self->ready = 0;
    Merge merge;
    Breakdown breakdown;
    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = pairing_join(&self->pairing) < 0;
    if (!failed) {
        failed = records_begin(&self->pairing.records, &merge) < 0;
        if (!failed) {
            failed = sweep(&merge, limit, everything, &fold, &breakdown) < 0;
            merge_free(&merge);
        }
    }
    pairing_free(&self->pairing);
    Py_END_ALLOW_THREADS
    PyObject *result = failed ? (failed_errno(), NULL) : folded(&fold, &breakdown);
    if (fold.counting)
        for (int i = 0; i < 3; i++) PyBuffer_Release(&views[i]);
    fold_free(&fold);
    return result;
}

static PyObject *Core_close(Core *self, PyObject *Py_UNUSED(ignored)) {
    Core_close_all(self);
    Py_RETURN_NONE;
}

static PyMethodDef Core_methods[] = {
    {"add_gpu", (PyCFunction)(void (*)(void))Core_add_gpu, METH_FASTCALL,
     "A GPU event: (name, start, end, correlation, stream=0, kernel_category=True)."},
    {"add_launch", (PyCFunction)(void (*)(void))Core_add_launch, METH_FASTCALL,
     "A CPU-side event with a correlation: (start, correlation, call=nan)."},
    {"finish", (PyCFunction)Core_finish, METH_VARARGS,
     "Pair what waits, sweep every record: (last_step, steps, tracked_streams, exact)."},
    {"close", (PyCFunction)Core_close, METH_NOARGS, "Give the events and the spill file up."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tracesets.analysis._native.Core",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A rank's GPU events and launches, swept once at the end.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Core_init,
    .tp_dealloc = (destructor)Core_dealloc,
    .tp_traverse = (traverseproc)Core_traverse,
    .tp_clear = (inquiry)Core_clear,
    .tp_methods = Core_methods,
};

static PyMethodDef module_methods[] = {
    {"configure", fold_configure, METH_VARARGS,
     "What the event loop needs of the Python side (compiled.py, once)."},
    {"fold_events", fold_events, METH_VARARGS,
     "A batch of events folded in: (events, core, operators, on_step, on_collective)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native", "A rank's pass in C.", -1, module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&CoreType) < 0 || PyType_Ready(&OperatorsType) < 0) return NULL;
    PyObject *spill = PyImport_ImportModule("tracesets.analysis.spill");
    if (spill == NULL) return NULL;
    spill_failed = PyObject_GetAttrString(spill, "SpillFailed");
    Py_DECREF(spill);
    if (spill_failed == NULL) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddType(m, &CoreType) < 0 || PyModule_AddType(m, &OperatorsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
