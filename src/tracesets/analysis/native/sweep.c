/* The sweep (sweep.h), loop for loop as gpu.sweep, KernelFold.add and OperatorCounter.gpu. */
#include "memory.h"
#include "sweep.h"

#include <errno.h>

#include <math.h>

#define COMMUNICATION 0
#define MEMORY 1
#define COMPUTATION 2
#define OTHER_KIND 3
#define IN_KERNEL_CATEGORY 4
#define LAUNCHED 8
#define KERNEL_WAIT_US 30.0
#define RUNTIME_CUTOFF_US 50.0
#define LAUNCH_DELAY_CUTOFF_US 100.0

#define LINEAR_US 4096.0
#define PER_US 4
#define PER_DOUBLING 1024
#define LINEAR_BINS ((long)(LINEAR_US * PER_US))

static int distribution_init(Distribution *d, size_t limit) {
    memset(d, 0, sizeof(*d));
    d->limit = limit;
    return table_init(&d->bins);
}

static void distribution_free(Distribution *d) {
    PyMem_RawFree(d->exact);
    PyMem_RawFree(d->bin_index);
    PyMem_RawFree(d->bin_count);
    table_free(&d->bins);
}

/* distribution._bin */
static long bin_of(double value) {
    if (value < LINEAR_US) return value > 0 ? (long)(value * PER_US) : 0;
    return LINEAR_BINS + (long)(PER_DOUBLING * log2(value / LINEAR_US));
}

static int count_in_bin(Distribution *d, double value) {
    long index = bin_of(value);
    uint64_t key = table_key((double)index);
    long at = table_find(&d->bins, key);
    if (at < 0) {
        if (d->nbins == d->bins_room) {
            size_t room = d->bins_room ? 2 * d->bins_room : 256;
            long *indices = PyMem_RawRealloc(d->bin_index, room * sizeof(long));
            if (indices != NULL) d->bin_index = indices;
            long long *counts = PyMem_RawRealloc(d->bin_count, room * sizeof(long long));
            if (counts != NULL) d->bin_count = counts;
            if (indices == NULL || counts == NULL) return -1;
            d->bins_room = room;
        }
        at = (long)d->nbins++;
        d->bin_index[at] = index;
        d->bin_count[at] = 0;
        if (table_put(&d->bins, key, at) < 0) return -1;
    }
    d->bin_count[at]++;
    return 0;
}

/* Distribution.add: exact while at most `limit` values, then every value in its bin. */
static int distribution_add(Distribution *d, double value) {
    d->count++;
    if (d->binned) return count_in_bin(d, value);
    if (d->nexact == d->exact_room) {
        size_t room = d->exact_room ? 2 * d->exact_room : 1024;
        if (room > d->limit + 1) room = d->limit + 1; /* one past the limit, then binned */
        double *exact = PyMem_RawRealloc(d->exact, room * sizeof(double));
        if (exact == NULL) return -1;
        d->exact = exact;
        d->exact_room = room;
    }
    d->exact[d->nexact++] = value;
    if (d->nexact <= d->limit) return 0;
    d->binned = 1;
    for (size_t i = 0; i < d->nexact; i++)
        if (count_in_bin(d, d->exact[i]) < 0) return -1;
    PyMem_RawFree(d->exact);
    d->exact = NULL;
    d->nexact = d->exact_room = 0;
    return 0;
}

int fold_init(Fold *fold, size_t tracked_streams, size_t exact) {
    memset(fold, 0, sizeof(*fold));
    if (distribution_init(&fold->calls, exact) < 0 || distribution_init(&fold->runs, exact) < 0 ||
        distribution_init(&fold->delays, exact) < 0) {
        errno = ENOMEM;
        return -1;
    }
    fold->tracked_streams = tracked_streams;
    fold->unnamed.low = INFINITY;
    fold->unnamed.high = -INFINITY;
    fold->unnamed.shift = NAN;
    fold->other_cell = (OpCell){0, 0, 0, 0};
    fold->streams = PyMem_RawMalloc((tracked_streams ? tracked_streams : 1) * sizeof(StreamIdle));
    if (fold->streams == NULL || table_init(&fold->stream_table) < 0) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

void fold_free(Fold *fold) {
    distribution_free(&fold->calls);
    distribution_free(&fold->runs);
    distribution_free(&fold->delays);
    PyMem_RawFree(fold->moments);
    PyMem_RawFree(fold->streams);
    PyMem_RawFree(fold->cells);
    table_free(&fold->stream_table);
    fold->moments = NULL;
    fold->streams = NULL;
    fold->cells = NULL;
}

/* Grows `*items` (of `size` bytes each, `*count` of them) to hold index `at`. */
static int hold(void **items, size_t *count, size_t size, size_t at, const void *fresh) {
    if (at < *count) return 0;
    size_t wanted = *count ? *count : 64;
    while (wanted <= at) wanted *= 2;
    char *grown = PyMem_RawRealloc(*items, wanted * size);
    if (grown == NULL) {
        errno = ENOMEM;
        return -1;
    }
    for (size_t i = *count; i < wanted; i++) memcpy(grown + i * size, fresh, size);
    *items = grown;
    *count = wanted;
    return 0;
}

static void add_moment(Moments *m, double value) {
    if (m->count == 0) m->shift = value;
    m->count++;
    m->total += value;
    double shifted = value - m->shift;
    m->shifted += shifted;
    m->squares += shifted * shifted;
    if (value < m->low) m->low = value;
    if (value > m->high) m->high = value;
}

static int idle(Fold *fold, double start, double end, double launched, double stream) {
    uint64_t key = table_key(stream);
    long at = table_find(&fold->stream_table, key);
    if (at < 0) {
        if (fold->nstreams >= fold->tracked_streams) return 0;
        at = (long)fold->nstreams++;
        fold->streams[at] = (StreamIdle){stream, NAN, 0, 0, 0};
        if (table_put(&fold->stream_table, key, at) < 0) return -1;
    }
    StreamIdle *s = &fold->streams[at];
    double gap = start - s->end; /* NaN for a stream's first kernel: counted nowhere */
    if (launched > s->end)
        s->host += gap;
    else if (gap < KERNEL_WAIT_US)
        s->kernel += gap;
    else if (!isnan(gap))
        s->other += gap;
    s->end = end;
    return 0;
}

static int fold_add(Fold *fold, const double *r) {
    double start = r[0], end = r[1], key = r[2], cpu = r[6];
    long code = (long)r[3], name = (long)r[4];
    double duration = end - start;
    if ((code & 3) != OTHER_KIND) {
        if (name < 0) {
            add_moment(&fold->unnamed, duration);
        } else {
            static const Moments fresh = {0, 0, 0, 0, INFINITY, -INFINITY, NAN};
            if (hold((void **)&fold->moments, &fold->nmoments, sizeof(Moments), (size_t)name,
                     &fresh) < 0)
                return -1;
            add_moment(&fold->moments[name], duration);
        }
    }
    if ((code & IN_KERNEL_CATEGORY) &&
        idle(fold, start, end, code & LAUNCHED ? key : NAN, r[5]) < 0) {
        errno = ENOMEM;
        return -1;
    }
    if (!isnan(cpu)) { /* launched by one of HTA's launch calls */
        double delay = start - key - cpu;
        if (distribution_add(&fold->calls, cpu) < 0 ||
            distribution_add(&fold->runs, duration) < 0 ||
            distribution_add(&fold->delays, delay > 0 ? delay : 0.0) < 0) {
            errno = ENOMEM;
            return -1;
        }
        if (cpu <= RUNTIME_CUTOFF_US && duration < cpu)
            fold->short_kernels++;
        else if (cpu > RUNTIME_CUTOFF_US)
            fold->long_runtimes++;
        if (delay > LAUNCH_DELAY_CUTOFF_US) fold->long_delays++;
    }
    return 0;
}

static int count_operator(Fold *fold, double launched_at, long code, long name, double dur) {
    if (!(code & LAUNCHED)) return 0;
    Steps *steps = &fold->steps;
    if (!(steps->low <= launched_at && launched_at < steps->high) &&
        steps_find(steps, launched_at) < 0)
        return 0;
    OpCell *cell = &fold->other_cell;
    if (name >= 0) {
        static const OpCell fresh = {0, 0, 0, 0};
        if (hold((void **)&fold->cells, &fold->ncells, sizeof(OpCell), (size_t)name, &fresh) < 0)
            return -1;
        cell = &fold->cells[name];
    }
    cell->count += 1;
    cell->total += dur;
    if (steps->in_first) {
        cell->first_count += 1;
        cell->first_total += dur;
    }
    return 0;
}

/* gpu._run_kinds: the time from `now` until every kind has ended, to the kinds running. */
static void run_kinds(const double reach[4], double *by_mask, double now) {
    for (;;) {
        int mask = 0;
        double upto = INFINITY;
        for (int kind = 0; kind < 4; kind++) {
            if (reach[kind] > now) {
                mask |= 1 << kind;
                if (reach[kind] < upto) upto = reach[kind];
            }
        }
        if (!mask) return;
        by_mask[mask] += upto - now;
        now = upto;
    }
}

int sweep(Merge *records, double limit, int everything, Fold *fold, Breakdown *out) {
    memset(out, 0, sizeof(*out));
    double *by_mask = out->by_mask;
    double reach[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY}; /* by kind */
    double first = 0, now = 0, group_start = 0, group_end = 0, reach_all = 0, busy = 0;
    long long count = 0;
    const double *r;
    int got;
    while ((got = records_next(records, &r)) == 1) {
        double start = r[0], end = r[1], key = r[2];
        long code = (long)r[3];
        if (fold->counting && r[5] > 0 &&
            count_operator(fold, key, code, (long)r[4], end - start) < 0)
            return -1;
        if (!(key < limit || everything)) continue;
        if (fold_add(fold, r) < 0) return -1;
        if (count == 0) {
            first = now = group_start = start;
            group_end = reach_all = end;
        } else {
            if (start > reach_all) { /* a new group of HTA's merge */
                busy += group_end - group_start;
                group_start = start;
                group_end = end;
            } else if (end > group_end) {
                group_end = end;
            }
            while (now < start) { /* the kinds running from now to start, as they end */
                if (reach_all <= now) { /* none: idle until start */
                    now = start;
                    break;
                }
                int mask = 0;
                double upto = start;
                for (int kind = 0; kind < 4; kind++) {
                    if (reach[kind] > now) {
                        mask |= 1 << kind;
                        if (reach[kind] < upto) upto = reach[kind];
                    }
                }
                by_mask[mask] += upto - now;
                now = upto;
            }
            if (end > reach_all) reach_all = end;
        }
        count++;
        int kind = (int)(code & 3);
        if (end > reach[kind]) reach[kind] = end;
    }
    if (got < 0) return -1;
    out->count = count;
    if (count == 0) return 0;
    run_kinds(reach, by_mask, now);
    busy += group_end - group_start;
    out->first = first;
    out->group_end = group_end;
    out->busy = busy;
    return 0;
}
