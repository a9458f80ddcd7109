/* The event loop of a rank's pass: rank.RankAccumulator.add_all, branch for branch, on the
 * events msgspec decoded (decoding.TraceEvent), each read once. GPU events and launches go
 * to a Core, CPU events to Operators, steps and collectives (a few per step) back to
 * Python. Times are doubles: an integer timestamp past 2^53 µs (285 years) would lose its
 * last digits, as it does in the records the reference spills. */
#include "memory.h"

#include <math.h>
#include <structmember.h>

#include "core.h"
#include "operators.h"

static struct {
    int ready;
    PyTypeObject *event_type, *args_type;
    Py_ssize_t name, cat, ts, dur, args; /* TraceEvent's fields, as offsets */
    Py_ssize_t stream, correlation;      /* EventArgs' */
    PyObject *no_args, *step_match, *stream_of, *kernel_categories, *launches, *device_syncs,
        *named, *step_prefix, *collective, *empty;
} hooks;

static int offset_of(PyTypeObject *type, const char *field, Py_ssize_t *offset) {
    PyObject *descriptor = PyObject_GetAttrString((PyObject *)type, field);
    if (descriptor == NULL) return -1;
    int is_member = Py_IS_TYPE(descriptor, &PyMemberDescr_Type);
    if (is_member) {
        PyMemberDef *member = ((PyMemberDescrObject *)descriptor)->d_member;
        is_member = member->type == T_OBJECT_EX || member->type == T_OBJECT;
        *offset = member->offset;
    }
    Py_DECREF(descriptor);
    if (!is_member) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a slot of objects", type->tp_name, field);
        return -1;
    }
    return 0;
}

/* configure(TraceEvent, EventArgs, NO_ARGS, step_match, stream_of, kernel_categories,
 *           launches, device_syncs, named, collective_name) */
PyObject *fold_configure(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *event_type, *args_type;
    if (hooks.ready) Py_RETURN_NONE; /* once per process: the same objects every time */
    if (!PyArg_ParseTuple(args, "O!O!OOOO!O!O!O!U", &PyType_Type, &event_type, &PyType_Type,
                          &args_type, &hooks.no_args, &hooks.step_match, &hooks.stream_of,
                          &PyFrozenSet_Type, &hooks.kernel_categories, &PyFrozenSet_Type,
                          &hooks.launches, &PyFrozenSet_Type, &hooks.device_syncs,
                          &PyFrozenSet_Type, &hooks.named, &hooks.collective))
        return NULL;
    hooks.event_type = (PyTypeObject *)event_type;
    hooks.args_type = (PyTypeObject *)args_type;
    if (offset_of(hooks.event_type, "name", &hooks.name) < 0 ||
        offset_of(hooks.event_type, "cat", &hooks.cat) < 0 ||
        offset_of(hooks.event_type, "ts", &hooks.ts) < 0 ||
        offset_of(hooks.event_type, "dur", &hooks.dur) < 0 ||
        offset_of(hooks.event_type, "args", &hooks.args) < 0 ||
        offset_of(hooks.args_type, "stream", &hooks.stream) < 0 ||
        offset_of(hooks.args_type, "correlation", &hooks.correlation) < 0)
        return NULL;
    hooks.step_prefix = PyUnicode_InternFromString("ProfilerStep");
    hooks.empty = PyUnicode_InternFromString("");
    if (hooks.step_prefix == NULL || hooks.empty == NULL) return NULL;
    PyObject *kept[] = {event_type, args_type, hooks.no_args, hooks.step_match, hooks.stream_of,
                        hooks.kernel_categories, hooks.launches, hooks.device_syncs,
                        hooks.named, hooks.collective};
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) Py_INCREF(kept[i]);
    hooks.ready = 1;
    Py_RETURN_NONE;
}

static inline PyObject *field(PyObject *object, Py_ssize_t offset) {
    PyObject *value = *(PyObject **)((char *)object + offset);
    return value == NULL ? Py_None : value;
}

/* The infinity on the side of an integer too large for a double. */
static double beyond(PyObject *value) {
    PyErr_Clear();
    PyObject *zero = PyLong_FromLong(0);
    int negative = zero == NULL ? 0 : PyObject_RichCompareBool(value, zero, Py_LT);
    Py_XDECREF(zero);
    PyErr_Clear(); /* two ints compare, unless out of memory: then it is taken as positive */
    return negative > 0 ? -INFINITY : INFINITY;
}

/* A number as the reference takes one (an int or a float, never a bool): 1 and its value,
 * `*fractional` when a float; 0 when not a number. -1 on error. */
static int time_of(PyObject *value, double *out, int *fractional) {
    if (PyFloat_CheckExact(value)) {
        *out = PyFloat_AS_DOUBLE(value);
        *fractional = 1;
        return 1;
    }
    if (!PyLong_CheckExact(value)) return 0;
    *fractional = 0;
    *out = PyLong_AsDouble(value);
    if (*out == -1.0 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
        *out = beyond(value); /* past a double: as far as one goes */
    }
    return 1;
}

static int is_minus_one(PyObject *value) {
    if (PyLong_CheckExact(value)) {
        int overflow;
        return PyLong_AsLongLongAndOverflow(value, &overflow) == -1 && !overflow;
    }
    return PyFloat_CheckExact(value) && PyFloat_AS_DOUBLE(value) == -1.0;
}

/* An int as a double (past a double: infinite), for a stream or a correlation. */
static double whole(PyObject *value) {
    double d = PyLong_AsDouble(value);
    if (d == -1.0 && PyErr_Occurred()) return beyond(value);
    return d;
}

/* rank._stream: an int, or what HTA reads a float or a numeric string as, else -1. */
static int stream_of(PyObject *value, double *out) {
    if (PyLong_CheckExact(value)) {
        *out = whole(value);
        return 0;
    }
    PyObject *read = PyObject_CallOneArg(hooks.stream_of, value);
    if (read == NULL) return -1;
    *out = PyLong_CheckExact(read) ? whole(read) : -1;
    Py_DECREF(read);
    return 0;
}

static int contains(PyObject *set, PyObject *key) { return PySet_Contains(set, key); }

static int fold_one(PyObject *event, Core *core, Operators *ops, PyObject *on_step,
                    PyObject *on_collective) {
    PyObject *args = field(event, hooks.args);
    if (!Py_IS_TYPE(args, hooks.args_type)) args = hooks.no_args;
    PyObject *stream = field(args, hooks.stream), *correlation = field(args, hooks.correlation);
    PyObject *name = field(event, hooks.name), *cat = field(event, hooks.cat);
    if (!PyUnicode_CheckExact(name)) name = hooks.empty;
    if (cat == Py_None ||
        (PyUnicode_CheckExact(cat) && PyUnicode_CompareWithASCIIString(cat, "Trace") == 0))
        return 0;
    double ts, dur;
    int fractional, dur_fractional, got;
    if ((got = time_of(field(event, hooks.ts), &ts, &fractional)) != 1) return got;
    if ((got = time_of(field(event, hooks.dur), &dur, &dur_fractional)) != 1) return got;
    Py_ssize_t stepped = PyUnicode_Tailmatch(name, hooks.step_prefix, 0, PY_SSIZE_T_MAX, -1);
    if (stepped < 0) return -1;
    if (is_minus_one(stream) && is_minus_one(correlation) && !stepped) {
        int named = contains(hooks.named, name);
        if (named < 0) return -1;
        if (!named) { /* a CPU operator: only its name and times count */
            double start = ts, length = dur;
            if (fractional) {
                start = ceil(ts);
                length = floor(ts + dur) - start;
            }
            return operators_cpu(ops, name, start, length);
        }
    }
    double stream_id, correlation_id = -1;
    if (stream_of(stream, &stream_id) < 0) return -1;
    if (PyLong_CheckExact(correlation)) correlation_id = whole(correlation);
    int device_sync = contains(hooks.device_syncs, name);
    if (device_sync < 0) return -1;
    int on_gpu = (stream_id >= 0 && correlation_id >= 0) || device_sync;
    double start = ts, end = ts + dur;
    if (fractional) { /* HTA rounds nanosecond timestamps inwards */
        start = ceil(ts);
        end = floor(ts + dur);
    }
    if (stream_id != -1) {
        int category = contains(hooks.kernel_categories, cat);
        if (category < 0 ||
            core_add_gpu(core, name, start, end, on_gpu ? correlation_id : -1, stream_id,
                         category) < 0)
            return -1;
    }
    PyObject *step = NULL;
    if (stepped && (step = PyObject_CallOneArg(hooks.step_match, name)) == NULL) return -1;
    int result = 0;
    if (stream_id < 0 && (step == NULL || step == Py_None))
        result = operators_cpu(ops, name, start, end - start);
    if (result == 0 && !on_gpu) {
        if (correlation_id >= 0) {
            int launch = contains(hooks.launches, name);
            result = launch < 0 ? -1
                                : core_add_launch(core, start, correlation_id,
                                                  launch ? end - start : NAN);
        }
        if (result == 0 && step != NULL && step != Py_None) {
            PyObject *done = PyObject_CallFunction(on_step, "Oddd", step, start, dur, end);
            result = done == NULL ? -1 : 0;
            Py_XDECREF(done);
        } else if (result == 0 && PyUnicode_Compare(name, hooks.collective) == 0) {
            PyObject *done = PyObject_CallOneArg(on_collective, args);
            result = done == NULL ? -1 : 0;
            Py_XDECREF(done);
        }
    }
    Py_XDECREF(step);
    return result;
}

/* fold_events(events, core, operators, on_step, on_collective) */
PyObject *fold_events(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *events, *on_step, *on_collective;
    Core *core;
    Operators *ops;
    if (!hooks.ready) {
        PyErr_SetString(PyExc_RuntimeError, "configure() first");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!O!O!OO", &PyList_Type, &events, &CoreType, &core,
                          &OperatorsType, &ops, &on_step, &on_collective))
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events); i++) {
        PyObject *event = PyList_GET_ITEM(events, i);
        if (!Py_IS_TYPE(event, hooks.event_type)) continue;
        Py_INCREF(event); /* a callback could change the list */
        int failed = fold_one(event, core, ops, on_step, on_collective) < 0;
        Py_DECREF(event);
        if (failed) return NULL;
    }
    Py_RETURN_NONE;
}
