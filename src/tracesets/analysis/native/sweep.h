/* The sweep over a rank's GPU records in start order, with the kernels' fold and the
 * operators' GPU counts: the compiled twin of gpu.sweep, KernelFold.add and
 * OperatorCounter.gpu (their docstrings say what each figure is). */
#ifndef TRACESETS_SWEEP_H
#define TRACESETS_SWEEP_H

#include "records.h"
#include "steps.h"
#include "tables.h"

#define KIND_MASKS 16

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

/* distribution.Distribution: values exact up to `limit`, then counted in bins (its
 * docstring says which). */
typedef struct {
    long long count;
    size_t limit;
    double *exact;
    size_t nexact, exact_room;
    int binned;
    Table bins; /* bin index: position in `bin_index` and `bin_count` */
    long *bin_index;
    long long *bin_count;
    size_t nbins, bins_room;
} Distribution;

typedef struct {
    Moments *moments;
    size_t nmoments;
    Moments unnamed;
    StreamIdle *streams;
    size_t nstreams, tracked_streams;
    Table stream_table;
    Distribution calls, runs, delays; /* of the launches */
    long long short_kernels, long_delays, long_runtimes;
    /* the operators' GPU counts, by the steps read (counting: 0 when none are kept) */
    int counting;
    Steps steps; /* viewed, not owned */
    OpCell *cells;
    size_t ncells;
    OpCell other_cell;
} Fold;

typedef struct {
    double by_mask[KIND_MASKS];
    double first, group_end, busy;
    long long count;
} Breakdown;

int fold_init(Fold *fold, size_t tracked_streams, size_t exact);
void fold_free(Fold *fold);
/* 0, or -1 with errno set. */
int sweep(Merge *records, double limit, int everything, Fold *fold, Breakdown *out);

#endif
