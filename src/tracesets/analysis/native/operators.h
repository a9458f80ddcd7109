/* Operator counts by name and step: the compiled twin of operators.OperatorCounter (its
 * docstring says what is counted, and how events before their step wait for it). */
#ifndef TRACESETS_OPERATORS_H
#define TRACESETS_OPERATORS_H

#include "memory.h"
#include "steps.h"

typedef struct {
    double count, total, first_count, first_total;
} Cell;

typedef struct {
    PyObject_HEAD
    PyObject *by_name; /* name as in the trace: its cell's index */
    PyObject *names;   /* each cell's name as shown */
    PyObject *shown;   /* name -> name as shown (cut past the bound) */
    PyObject *other, *steps_name;
    Cell *cells;
    size_t ncells, cells_room;
    int rescan;
    Steps steps;
    size_t steps_room;
    double *pending_ts, *pending_dur;
    long *pending_name;
    size_t npending, pending_room;
    size_t max_names, max_pending, rescan_left;
} Operators;

extern PyTypeObject OperatorsType;

/* A CPU event (stream below 0): 0, or -1 with a Python error. */
int operators_cpu(Operators *ops, PyObject *name, double ts, double dur);

#endif
