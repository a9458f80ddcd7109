/* The sweep over a rank's GPU records in start order, with the kernels' fold and the
 * operators' GPU counts: the compiled twin of gpu.sweep, KernelFold.add and
 * OperatorCounter.gpu (their docstrings say what each figure is). */
#ifndef TRACESETS_SWEEP_H
#define TRACESETS_SWEEP_H

#include "records.h"
#include "tables.h"

#define KIND_MASKS 16
#define LAUNCH_BATCH 2048

typedef struct {
    long long count;
    double total, shifted, squares, low, high, shift;
} Moments;

typedef struct {
    double stream, end, host, kernel, other;
} StreamIdle;

typedef struct {
    double count, total, first_count, first_total;
} OpCell;

typedef struct Fold Fold;
/* Hands a batch of launches' (call, run, delay) figures over; 0, or -1 on error. */
typedef int (*FlushLaunches)(Fold *fold);

struct Fold {
    Moments *moments;
    size_t nmoments;
    Moments unnamed;
    StreamIdle *streams;
    size_t nstreams, tracked_streams;
    Table stream_table;
    double calls[LAUNCH_BATCH], runs[LAUNCH_BATCH], delays[LAUNCH_BATCH];
    size_t nlaunches;
    long long short_kernels, long_delays, long_runtimes;
    FlushLaunches flush;
    void *context;
    /* the operators' GPU counts, by the steps read (counting: 0 when none are kept) */
    int counting;
    const double *step_starts, *step_ends;
    const long long *step_numbers;
    size_t nsteps;
    int has_first, in_first;
    long long first;
    double low, high;
    OpCell *cells;
    size_t ncells;
    OpCell other_cell;
};

typedef struct {
    double by_mask[KIND_MASKS];
    double first, group_end, busy;
    long long count;
} Breakdown;

int fold_init(Fold *fold, size_t tracked_streams);
void fold_free(Fold *fold);
/* 0, or -1 with errno set (or a Python error, from flush). */
int sweep(Merge *records, double limit, int everything, Fold *fold, Breakdown *out);

#endif
