/* tracesets.analysis._native: the GPU half of a rank's pass in C.
 *
 * Core holds a rank's GPU events and launches (pairing.c), sorted in bounded memory
 * (records.c), and sweeps them at the end (sweep.c); compiled.py builds the figures from
 * what finish() returns, with the same code as the reference (kernels.GpuEvents). */
#include "memory.h"

#include <math.h>

#include "pairing.h"
#include "sweep.h"

typedef struct {
    PyObject_HEAD
    Pairing pairing;
    int ready;
    PyObject *names;   /* kernel name: code (number << 2 | kind), as resolve gave it */
    PyObject *resolve; /* name -> code, for a name not seen yet */
    PyObject *flush;   /* (calls, runs, delays) as bytes of doubles */
    PyObject *directory;
} Core;

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

static int failed_errno(void) {
    if (!PyErr_Occurred()) PyErr_SetFromErrno(PyExc_OSError);
    return -1;
}

static int Core_init(Core *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"window", "buffer", "fan_in", "resolve", "flush", "directory",
                               NULL};
    Py_ssize_t window, buffer, fan_in;
    PyObject *resolve, *flush, *directory;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "nnnOOO&", keywords, &window, &buffer,
                                     &fan_in, &resolve, &flush, PyUnicode_FSConverter,
                                     &directory))
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
    Py_INCREF(flush);
    self->resolve = resolve;
    self->flush = flush;
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
    Py_VISIT(self->flush);
    return 0;
}

static int Core_clear(Core *self) {
    Py_CLEAR(self->names);
    Py_CLEAR(self->resolve);
    Py_CLEAR(self->flush);
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

/* add_gpu(name, start, end, correlation, stream=0, kernel_category=True) */
static PyObject *Core_add_gpu(Core *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 4 || nargs > 6) {
        PyErr_SetString(PyExc_TypeError, "add_gpu takes 4 to 6 positional arguments");
        return NULL;
    }
    double start, end, correlation, stream = 0;
    if (check_ready(self) < 0 || number(args[1], &start) < 0 || number(args[2], &end) < 0 ||
        number(args[3], &correlation) < 0 || (nargs > 4 && number(args[4], &stream) < 0))
        return NULL;
    int category = 1;
    if (nargs > 5 && (category = PyObject_IsTrue(args[5])) < 0) return NULL;
    long code = name_code(self, args[0]);
    if (code == LONG_MIN) return NULL;
    long kind = code & 3, named = code >> 2;
    double flags = (double)(category ? kind | 4 : kind);
    if (pairing_gpu(&self->pairing, start, end, correlation, flags, (double)named, stream) < 0)
        return failed_errno(), NULL;
    Py_RETURN_NONE;
}

/* add_launch(start, correlation, call=nan) */
static PyObject *Core_add_launch(Core *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 2 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "add_launch takes 2 or 3 positional arguments");
        return NULL;
    }
    double start, correlation, call = NAN;
    if (check_ready(self) < 0 || number(args[0], &start) < 0 ||
        number(args[1], &correlation) < 0 || (nargs > 2 && number(args[2], &call) < 0))
        return NULL;
    if (pairing_launch(&self->pairing, start, correlation, call) < 0) return failed_errno(), NULL;
    Py_RETURN_NONE;
}

static int flush_launches(Fold *fold) {
    Core *self = fold->context;
    size_t size = fold->nlaunches * sizeof(double);
    PyObject *result = PyObject_CallFunction(
        self->flush, "y#y#y#", (const char *)fold->calls, (Py_ssize_t)size,
        (const char *)fold->runs, (Py_ssize_t)size, (const char *)fold->delays,
        (Py_ssize_t)size);
    fold->nlaunches = 0;
    if (result == NULL) return -1;
    Py_DECREF(result);
    return 0;
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
    return Py_BuildValue("(LNdddNNNLLLN(dddd))", b->count, by_mask, b->first, b->group_end,
                         b->busy, moments, moments_tuple(&fold->unnamed), streams,
                         fold->short_kernels, fold->long_delays, fold->long_runtimes, cells,
                         o->count, o->total, o->first_count, o->first_total);
failed:
    Py_XDECREF(by_mask);
    Py_XDECREF(moments);
    Py_XDECREF(streams);
    Py_XDECREF(cells);
    return NULL;
}

/* The steps of OperatorCounter: (starts, ends, numbers, first, low, high, in_first). */
static int read_steps(PyObject *steps, Fold *fold, Py_buffer views[3]) {
    PyObject *starts, *ends, *numbers, *first;
    int in_first;
    if (!PyArg_ParseTuple(steps, "OOOOddp", &starts, &ends, &numbers, &first, &fold->low,
                          &fold->high, &in_first))
        return -1;
    if (PyObject_GetBuffer(starts, &views[0], PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (PyObject_GetBuffer(ends, &views[1], PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&views[0]);
        return -1;
    }
    if (PyObject_GetBuffer(numbers, &views[2], PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&views[0]);
        PyBuffer_Release(&views[1]);
        return -1;
    }
    Py_ssize_t n = views[0].len / (Py_ssize_t)sizeof(double);
    if (views[0].itemsize != sizeof(double) || views[1].itemsize != sizeof(double) ||
        views[2].itemsize != sizeof(long long) || views[1].len != views[0].len ||
        views[2].len / (Py_ssize_t)sizeof(long long) != n) {
        PyErr_SetString(PyExc_ValueError, "steps: arrays of doubles and of 64-bit integers");
        for (int i = 0; i < 3; i++) PyBuffer_Release(&views[i]);
        return -1;
    }
    fold->counting = 1;
    fold->step_starts = views[0].buf;
    fold->step_ends = views[1].buf;
    fold->step_numbers = views[2].buf;
    fold->nsteps = (size_t)n;
    fold->in_first = in_first;
    fold->has_first = first != Py_None;
    if (fold->has_first && (fold->first = PyLong_AsLongLong(first)) == -1 && PyErr_Occurred()) {
        for (int i = 0; i < 3; i++) PyBuffer_Release(&views[i]);
        return -1;
    }
    return 0;
}

/* finish(last_step, steps, tracked_streams): pairs what waits and sweeps every record once;
 * the GPU events are given up, then. */
static PyObject *Core_finish(Core *self, PyObject *args) {
    PyObject *last_step, *steps;
    Py_ssize_t tracked;
    if (!PyArg_ParseTuple(args, "OOn", &last_step, &steps, &tracked) || check_ready(self) < 0)
        return NULL;
    double limit = INFINITY;
    int everything = last_step == Py_None;
    if (!everything && number(last_step, &limit) < 0) return NULL;
    Fold fold;
    Py_buffer views[3];
    if (fold_init(&fold, tracked < 0 ? 0 : (size_t)tracked) < 0) {
        fold_free(&fold);
        return failed_errno(), NULL;
    }
    fold.flush = flush_launches;
    fold.context = self;
    if (steps != Py_None && read_steps(steps, &fold, views) < 0) {
        fold_free(&fold);
        return NULL;
    }
    PyObject *result = NULL;
    Merge merge;
    Breakdown breakdown;
    if (pairing_join(&self->pairing) < 0 || records_begin(&self->pairing.records, &merge) < 0) {
        failed_errno();
    } else {
        if (sweep(&merge, limit, everything, &fold, &breakdown) < 0)
            failed_errno();
        else
            result = folded(&fold, &breakdown);
        merge_free(&merge);
    }
    if (fold.counting)
        for (int i = 0; i < 3; i++) PyBuffer_Release(&views[i]);
    fold_free(&fold);
    Core_close_all(self);
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
     "Pair what waits, sweep every record: (last_step, steps, tracked_streams)."},
    {"close", (PyCFunction)Core_close, METH_NOARGS, "Give the events and the spill file up."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject CoreType = {
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

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native", "The GPU half of a rank's pass in C.", -1, NULL,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&CoreType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&CoreType);
    if (PyModule_AddObject(m, "Core", (PyObject *)&CoreType) < 0) {
        Py_DECREF(&CoreType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
