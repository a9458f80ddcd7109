/* The compiled pass allocates through Python's raw allocator: thread-safe, usable without
 * the GIL, and seen by tracemalloc, so tests/analysis/test_memory.py weighs it too.
 * Included first: Python.h comes before the standard headers. */
#ifndef TRACESETS_MEMORY_H
#define TRACESETS_MEMORY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#endif
