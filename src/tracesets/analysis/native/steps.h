/* The steps read, sorted by start, and the one the last event fell in: what places an
 * event in its step (operators.OperatorCounter._step_of), for the counts and the sweep. */
#ifndef TRACESETS_STEPS_H
#define TRACESETS_STEPS_H

#include <stddef.h>

typedef struct {
    double *starts, *ends;
    long long *numbers;
    size_t n;
    int has_first, in_first;
    long long first, current;
    double low, high; /* the step the last event fell in */
} Steps;

/* bisect_right of `ts` in the starts */
static inline size_t steps_after(const Steps *steps, double ts) {
    size_t low = 0, high = steps->n;
    while (low < high) {
        size_t middle = (low + high) / 2;
        if (ts < steps->starts[middle])
            high = middle;
        else
            low = middle + 1;
    }
    return low;
}

/* The number of the step holding `ts`, which becomes the last one fallen in; -1 if none. */
static inline long long steps_find(Steps *steps, double ts) {
    size_t after = steps_after(steps, ts);
    if (after == 0) return -1;
    size_t at = after - 1;
    double end = steps->ends[at];
    if (ts >= end) return -1;
    long long number = steps->numbers[at];
    steps->low = steps->starts[at];
    steps->high = end;
    steps->current = number;
    steps->in_first = steps->has_first && number == steps->first;
    return number;
}

#endif
