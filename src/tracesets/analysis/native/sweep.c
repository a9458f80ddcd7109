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

int fold_init(Fold *fold, size_t tracked_streams) {
    memset(fold, 0, sizeof(*fold));
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
        size_t n = fold->nlaunches;
        fold->calls[n] = cpu;
        fold->runs[n] = duration;
        fold->delays[n] = delay > 0 ? delay : 0.0;
        if (cpu <= RUNTIME_CUTOFF_US && duration < cpu)
            fold->short_kernels++;
        else if (cpu > RUNTIME_CUTOFF_US)
            fold->long_runtimes++;
        if (delay > LAUNCH_DELAY_CUTOFF_US) fold->long_delays++;
        if (++fold->nlaunches == LAUNCH_BATCH && fold->flush(fold) < 0) return -1;
    }
    return 0;
}

/* OperatorCounter._step_of: the number of the step holding `ts`, -1 if none. */
static long long step_of(Fold *fold, double ts) {
    size_t low = 0, high = fold->nsteps; /* bisect_right */
    while (low < high) {
        size_t middle = (low + high) / 2;
        if (ts < fold->step_starts[middle])
            high = middle;
        else
            low = middle + 1;
    }
    if (low == 0) return -1;
    size_t at = low - 1;
    double end = fold->step_ends[at];
    if (ts >= end) return -1;
    long long number = fold->step_numbers[at];
    fold->low = fold->step_starts[at];
    fold->high = end;
    fold->in_first = fold->has_first && number == fold->first;
    return number;
}

static int count_operator(Fold *fold, double launched_at, long code, long name, double dur) {
    if (!(code & LAUNCHED)) return 0;
    if (!(fold->low <= launched_at && launched_at < fold->high) && step_of(fold, launched_at) < 0)
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
    if (fold->in_first) {
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
    if (fold->nlaunches > 0 && fold->flush(fold) < 0) return -1;
    out->count = count;
    if (count == 0) return 0;
    run_kinds(reach, by_mask, now);
    busy += group_end - group_start;
    out->first = first;
    out->group_end = group_end;
    out->busy = busy;
    return 0;
}
