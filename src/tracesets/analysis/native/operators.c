/* Operator counts by name and step (operators.h), method for method as
 * operators.OperatorCounter; rows() stays Python's (compiled.CompiledOperators). */
#include "memory.h"
#include "operators.h"

#include <math.h>

static int grow(void **items, size_t *room, size_t size, size_t needed) {
    if (needed <= *room) return 0;
    size_t wanted = *room ? *room : 64;
    while (wanted < needed) wanted *= 2;
    void *grown = PyMem_RawRealloc(*items, wanted * size);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *items = grown;
    *room = wanted;
    return 0;
}

static long new_cell(Operators *ops, PyObject *name) {
    size_t at = ops->ncells;
    if (grow((void **)&ops->cells, &ops->cells_room, sizeof(Cell), at + 1) < 0) return -1;
    PyObject *shown = PyObject_CallOneArg(ops->shown, name);
    if (shown == NULL) return -1;
    int appended = PyList_Append(ops->names, shown);
    Py_DECREF(shown);
    if (appended < 0) return -1;
    PyObject *index = PyLong_FromSize_t(at);
    if (index == NULL) return -1;
    int stored = PyDict_SetItem(ops->by_name, name, index);
    Py_DECREF(index);
    if (stored < 0) return -1;
    ops->cells[at] = (Cell){0, 0, 0, 0};
    ops->ncells++;
    return (long)at;
}

/* OperatorCounter._name: the cell of a name, past the bound the one of "(other)". */
static long cell_of(Operators *ops, PyObject *name) {
    PyObject *index = PyDict_GetItemWithError(ops->by_name, name);
    if (index != NULL) return PyLong_AsLong(index);
    if (PyErr_Occurred()) return -1;
    if (ops->ncells >= ops->max_names) {
        int is_other = PyUnicode_Compare(name, ops->other) == 0;
        if (PyErr_Occurred()) return -1;
        return is_other ? new_cell(ops, ops->other) : cell_of(ops, ops->other);
    }
    return new_cell(ops, name);
}

static void add(Operators *ops, long at, long long step, double dur) {
    Cell *cell = &ops->cells[at];
    cell->count += 1;
    cell->total += dur;
    if (ops->steps.has_first && step == ops->steps.first) {
        cell->first_count += 1;
        cell->first_total += dur;
    }
}

int operators_cpu(Operators *ops, PyObject *name, double ts, double dur) {
    long long step;
    if (ops->steps.low <= ts && ts < ops->steps.high) {
        step = ops->steps.current;
    } else {
        step = steps_find(&ops->steps, ts);
        if (step < 0) {
            if (ops->npending < ops->max_pending) {
                size_t n = ops->npending;
                if (n == ops->pending_room) {
                    size_t room = n ? 2 * n : 64;
                    double *ts_grown = PyMem_RawRealloc(ops->pending_ts, room * sizeof(double));
                    if (ts_grown != NULL) ops->pending_ts = ts_grown;
                    double *dur_grown = PyMem_RawRealloc(ops->pending_dur, room * sizeof(double));
                    if (dur_grown != NULL) ops->pending_dur = dur_grown;
                    long *name_grown = PyMem_RawRealloc(ops->pending_name, room * sizeof(long));
                    if (name_grown != NULL) ops->pending_name = name_grown;
                    if (ts_grown == NULL || dur_grown == NULL || name_grown == NULL) {
                        PyErr_NoMemory();
                        return -1;
                    }
                    ops->pending_room = room;
                }
                long at = cell_of(ops, name);
                if (at < 0) return -1;
                ops->pending_ts[n] = ts;
                ops->pending_dur[n] = dur;
                ops->pending_name[n] = at;
                ops->npending++;
            }
            return 0;
        }
    }
    long at = cell_of(ops, name);
    if (at < 0) return -1;
    add(ops, at, step, dur);
    return 0;
}

/* Count the events kept that a step read holds; keep the others, in order. */
static void place_pending(Operators *ops) {
    size_t kept = 0;
    for (size_t i = 0; i < ops->npending; i++) {
        long long step = steps_find(&ops->steps, ops->pending_ts[i]);
        if (step >= 0) {
            add(ops, ops->pending_name[i], step, ops->pending_dur[i]);
        } else {
            ops->pending_ts[kept] = ops->pending_ts[i];
            ops->pending_dur[kept] = ops->pending_dur[i];
            ops->pending_name[kept] = ops->pending_name[i];
            kept++;
        }
    }
    ops->npending = kept;
}

/* step(number, name, start, end): a ProfilerStep#number read. */
static PyObject *Operators_step(Operators *ops, PyObject *args) {
    long long number;
    PyObject *name;
    double start, end;
    if (!PyArg_ParseTuple(args, "LUdd", &number, &name, &start, &end)) return NULL;
    size_t n = ops->steps.n, at = steps_after(&ops->steps, start);
    size_t room = ops->steps_room;
    if (grow((void **)&ops->steps.starts, &room, sizeof(double), n + 1) < 0) return NULL;
    room = ops->steps_room;
    if (grow((void **)&ops->steps.ends, &room, sizeof(double), n + 1) < 0) return NULL;
    if (grow((void **)&ops->steps.numbers, &ops->steps_room, sizeof(long long), n + 1) < 0) return NULL;
    memmove(ops->steps.starts + at + 1, ops->steps.starts + at, (n - at) * sizeof(double));
    memmove(ops->steps.ends + at + 1, ops->steps.ends + at, (n - at) * sizeof(double));
    memmove(ops->steps.numbers + at + 1, ops->steps.numbers + at, (n - at) * sizeof(long long));
    ops->steps.starts[at] = start;
    ops->steps.ends[at] = end;
    ops->steps.numbers[at] = number;
    ops->steps.n++;
    if (!ops->steps.has_first || number < ops->steps.first) {
        ops->steps.has_first = 1;
        ops->steps.first = number;
        for (size_t i = 0; i < ops->ncells; i++) {
            ops->cells[i].first_count = 0;
            ops->cells[i].first_total = 0;
        }
        ops->steps.in_first = ops->steps.current == number;
    }
    if (ops->npending > 0 && ops->rescan) {
        place_pending(ops);
        ops->rescan = ops->npending <= ops->rescan_left;
    }
    long long held_by = steps_find(&ops->steps, start);
    if (held_by >= 0) {
        long steps = cell_of(ops, ops->steps_name);
        if (steps < 0) return NULL;
        ops->cells[steps].count += 1;
        ops->cells[steps].total += end - start;
        if (held_by == ops->steps.first) {
            long own = cell_of(ops, name);
            if (own < 0) return NULL;
            ops->cells[own].first_count += 1;
            ops->cells[own].first_total += end - start;
        }
    }
    Py_RETURN_NONE;
}

static PyObject *Operators_cpu(Operators *ops, PyObject *args) {
    PyObject *name;
    double ts, dur;
    if (!PyArg_ParseTuple(args, "Udd", &name, &ts, &dur)) return NULL;
    if (operators_cpu(ops, name, ts, dur) < 0) return NULL;
    Py_RETURN_NONE;
}

/* settle(): the events still waiting placed, as rows() does first. */
static PyObject *Operators_settle(Operators *ops, PyObject *Py_UNUSED(ignored)) {
    place_pending(ops);
    Py_RETURN_NONE;
}

/* cells(): each cell's (count, total, first step's count, its total), by index. */
static PyObject *Operators_cells(Operators *ops, PyObject *Py_UNUSED(ignored)) {
    PyObject *cells = PyList_New((Py_ssize_t)ops->ncells);
    if (cells == NULL) return NULL;
    for (size_t i = 0; i < ops->ncells; i++) {
        const Cell *c = &ops->cells[i];
        PyObject *item = Py_BuildValue("(LdLd)", (long long)c->count, c->total,
                                       (long long)c->first_count, c->first_total);
        if (item == NULL) {
            Py_DECREF(cells);
            return NULL;
        }
        PyList_SET_ITEM(cells, (Py_ssize_t)i, item);
    }
    return cells;
}

/* add_cell(name, count, total, first_count, first_total): counted elsewhere (the sweep). */
static PyObject *Operators_add_cell(Operators *ops, PyObject *args) {
    PyObject *name;
    Cell more;
    if (!PyArg_ParseTuple(args, "Udddd", &name, &more.count, &more.total, &more.first_count,
                          &more.first_total))
        return NULL;
    long at = cell_of(ops, name);
    if (at < 0) return NULL;
    Cell *cell = &ops->cells[at];
    cell->count += more.count;
    cell->total += more.total;
    cell->first_count += more.first_count;
    cell->first_total += more.first_total;
    Py_RETURN_NONE;
}

/* steps(): (starts, ends, numbers as bytes, first, low, high, in_first), for the sweep. */
static PyObject *Operators_steps(Operators *ops, PyObject *Py_UNUSED(ignored)) {
    Py_ssize_t n = (Py_ssize_t)ops->steps.n;
    PyObject *first = ops->steps.has_first ? PyLong_FromLongLong(ops->steps.first) : Py_NewRef(Py_None);
    if (first == NULL) return NULL;
    static const char none[1] = ""; /* no step read: empty buffers, not None */
    const char *starts = n ? (const char *)ops->steps.starts : none;
    const char *ends = n ? (const char *)ops->steps.ends : none;
    const char *numbers = n ? (const char *)ops->steps.numbers : none;
    return Py_BuildValue("(y#y#y#NddN)", starts, n * 8, ends, n * 8, numbers, n * 8, first,
                         ops->steps.low, ops->steps.high, PyBool_FromLong(ops->steps.in_first));
}

static int Operators_init(Operators *ops, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"shown", "other", "steps", "max_names", "max_pending",
                               "rescan_left", NULL};
    PyObject *shown, *other, *steps_name;
    Py_ssize_t max_names, max_pending, rescan_left;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OUUnnn", keywords, &shown, &other,
                                     &steps_name, &max_names, &max_pending, &rescan_left))
        return -1;
    if (ops->by_name != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Operators is initialised once");
        return -1;
    }
    if ((ops->by_name = PyDict_New()) == NULL || (ops->names = PyList_New(0)) == NULL)
        return -1;
    ops->shown = Py_NewRef(shown);
    ops->other = Py_NewRef(other);
    ops->steps_name = Py_NewRef(steps_name);
    ops->max_names = max_names < 1 ? 1 : (size_t)max_names;
    ops->max_pending = max_pending < 0 ? 0 : (size_t)max_pending;
    ops->rescan_left = rescan_left < 0 ? 0 : (size_t)rescan_left;
    ops->steps.low = ops->steps.high = NAN;
    ops->steps.current = -1;
    ops->rescan = 1;
    return 0;
}

static int Operators_traverse(Operators *ops, visitproc visit, void *arg) {
    Py_VISIT(ops->by_name);
    Py_VISIT(ops->names);
    Py_VISIT(ops->shown);
    return 0;
}

static int Operators_clear(Operators *ops) {
    Py_CLEAR(ops->by_name);
    Py_CLEAR(ops->names);
    Py_CLEAR(ops->shown);
    Py_CLEAR(ops->other);
    Py_CLEAR(ops->steps_name);
    return 0;
}

static void Operators_dealloc(Operators *ops) {
    PyObject_GC_UnTrack(ops);
    Operators_clear(ops);
    PyMem_RawFree(ops->cells);
    PyMem_RawFree(ops->steps.starts);
    PyMem_RawFree(ops->steps.ends);
    PyMem_RawFree(ops->steps.numbers);
    PyMem_RawFree(ops->pending_ts);
    PyMem_RawFree(ops->pending_dur);
    PyMem_RawFree(ops->pending_name);
    Py_TYPE(ops)->tp_free((PyObject *)ops);
}

static PyObject *Operators_get_names(Operators *ops, void *Py_UNUSED(closure)) {
    return Py_NewRef(ops->names ? ops->names : Py_None);
}

static PyObject *Operators_get_by_name(Operators *ops, void *Py_UNUSED(closure)) {
    return Py_NewRef(ops->by_name ? ops->by_name : Py_None);
}

static PyGetSetDef Operators_getset[] = {
    {"names", (getter)Operators_get_names, NULL, "Each cell's name as shown.", NULL},
    {"by_name", (getter)Operators_get_by_name, NULL, "Name: its cell's index.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef Operators_methods[] = {
    {"step", (PyCFunction)Operators_step, METH_VARARGS, "A step read: (number, name, start, end)."},
    {"cpu", (PyCFunction)Operators_cpu, METH_VARARGS, "A CPU event: (name, ts, dur)."},
    {"settle", (PyCFunction)Operators_settle, METH_NOARGS, "Place the events still waiting."},
    {"cells", (PyCFunction)Operators_cells, METH_NOARGS, "The cells' counts, by index."},
    {"add_cell", (PyCFunction)Operators_add_cell, METH_VARARGS, "Counts made elsewhere."},
    {"steps", (PyCFunction)Operators_steps, METH_NOARGS, "The steps read, for the sweep."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject OperatorsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tracesets.analysis._native.Operators",
    .tp_basicsize = sizeof(Operators),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Operator counts by name and step.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Operators_init,
    .tp_dealloc = (destructor)Operators_dealloc,
    .tp_traverse = (traverseproc)Operators_traverse,
    .tp_clear = (inquiry)Operators_clear,
    .tp_methods = Operators_methods,
    .tp_getset = Operators_getset,
};
