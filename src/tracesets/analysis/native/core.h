/* A rank's GPU events and launches (core.c): what fold.c hands each one to. */
#ifndef TRACESETS_CORE_H
#define TRACESETS_CORE_H

#include "memory.h"
#include "pairing.h"

typedef struct {
    PyObject_HEAD
    Pairing pairing;
    int ready;
    PyObject *names;   /* kernel name: code (number << 2 | kind), as resolve gave it */
    PyObject *resolve; /* name -> code, for a name not seen yet */
    PyObject *directory;
} Core;

extern PyTypeObject CoreType;

/* Both return 0, or -1 with a Python error. */
int core_add_gpu(Core *self, PyObject *name, double start, double end, double correlation,
                 double stream, int kernel_category);
int core_add_launch(Core *self, double start, double correlation, double call);

/* fold.c: the event loop, and what it needs to know of the Python side. */
PyObject *fold_configure(PyObject *module, PyObject *args);
PyObject *fold_events(PyObject *module, PyObject *args);

#endif
