/* Sorted records in bounded memory (records.h): sorted runs in a temporary file, merged.
 *
 * The order is spill.SortedRecords': tuples of floats compared field by field, a field
 * that is NaN on either side deciding nothing (Python's tuple comparison). Records equal
 * up to a NaN field may come in either order; no figure depends on theirs. */
#include "memory.h"
#include "records.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_BLOCK 2048

/* the width qsort's comparison reads: one per thread, as sorts run without the GIL */
static _Thread_local int sort_width;

int records_compare(const double *a, const double *b, int width) {
    for (int i = 0; i < width; i++) {
        if (a[i] < b[i]) return -1;
        if (a[i] > b[i]) return 1;
    }
    return 0;
}

static int compare_for_sort(const void *a, const void *b) {
    return records_compare((const double *)a, (const double *)b, sort_width);
}

int records_init(Records *r, int width, size_t capacity, size_t fan_in, const char *directory) {
    memset(r, 0, sizeof(*r));
    r->fd = -1;
    if (width < 1 || width > RECORDS_MAX_WIDTH || capacity < 1 || fan_in < 2) {
        errno = EINVAL;
        return -1;
    }
    r->width = width;
    r->capacity = capacity;
    r->fan_in = fan_in;
    r->directory = directory;
    /* the buffer grows as records come: a small trace costs a small buffer */
    return 0;
}

int records_empty(const Records *r) { return r->n == 0 && r->nruns == 0; }

static void sort_buffer(Records *r) {
    sort_width = r->width;
    qsort(r->buffer, r->n, sizeof(double) * (size_t)r->width, compare_for_sort);
}

static int open_file(Records *r) {
    char path[4096];
    int written = snprintf(path, sizeof(path), "%s/tracesets-analysis-XXXXXX", r->directory);
    if (written < 0 || (size_t)written >= sizeof(path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    unlink(path); /* nothing is left behind, even by a crash */
    r->fd = fd;
    return 0;
}

static int write_all(Records *r, const double *data, size_t count) {
    const char *bytes = (const char *)data;
    size_t left = count * sizeof(double) * (size_t)r->width;
    while (left > 0) {
        ssize_t wrote = pwrite(r->fd, bytes, left, r->end);
        if (wrote < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        bytes += wrote;
        left -= (size_t)wrote;
        r->end += wrote;
    }
    return 0;
}

static int add_run(Records *r, long long offset, long long count) {
    if (r->nruns == r->runs_cap) {
        size_t cap = r->runs_cap ? 2 * r->runs_cap : 16;
        Run *runs = PyMem_RawRealloc(r->runs, cap * sizeof(Run));
        if (runs == NULL) return -1;
        r->runs = runs;
        r->runs_cap = cap;
    }
    r->runs[r->nruns].offset = offset;
    r->runs[r->nruns].count = count;
    r->nruns++;
    return 0;
}

static int write_buffer(Records *r) {
    if (r->fd < 0 && open_file(r) < 0) return -1;
    sort_buffer(r);
    long long start = r->end;
    if (write_all(r, r->buffer, r->n) < 0) return -1;
    if (add_run(r, start, (long long)r->n) < 0) return -1;
    r->n = 0;
    return 0;
}

int records_add(Records *r, const double *record) {
    if (r->n == r->allocated) {
        if (r->n == r->capacity) {
            if (write_buffer(r) < 0) return -1;
        } else { /* grows to the capacity: a small trace costs a small buffer */
            size_t room = r->allocated ? 2 * r->allocated : 256;
            if (room > r->capacity) room = r->capacity;
            double *buffer = PyMem_RawRealloc(r->buffer, room * sizeof(double) * (size_t)r->width);
            if (buffer == NULL) return -1;
            r->buffer = buffer;
            r->allocated = room;
        }
    }
    memcpy(r->buffer + r->n * (size_t)r->width, record, sizeof(double) * (size_t)r->width);
    r->n++;
    return 0;
}

static int read_exactly(int fd, char *into, size_t size, long long offset) {
    while (size > 0) {
        ssize_t got = pread(fd, into, size, offset);
        if (got < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (got == 0) {
            errno = EIO; /* the spill file ended early */
            return -1;
        }
        into += got;
        size -= (size_t)got;
        offset += got;
    }
    return 0;
}

/* 1 when the reader has a current record, 0 when its run is done, -1 on error. */
static int reader_fill(RunReader *rd) {
    if (rd->at < rd->have) return 1;
    if (rd->left == 0) return 0;
    size_t take = rd->left < READ_BLOCK ? (size_t)rd->left : READ_BLOCK;
    size_t size = take * sizeof(double) * (size_t)rd->width;
    if (read_exactly(rd->fd, (char *)rd->block, size, rd->offset) < 0) return -1;
    rd->offset += (long long)size;
    rd->left -= (long long)take;
    rd->at = 0;
    rd->have = take;
    return 1;
}

static const double *reader_current(const RunReader *rd) {
    return rd->block + rd->at * (size_t)rd->width;
}

static int heap_less(const Merge *m, size_t a, size_t b) {
    int c = records_compare(reader_current(&m->readers[a]), reader_current(&m->readers[b]),
                            m->records->width);
    return c < 0 || (c == 0 && a < b); /* ties: the earlier run first, as heapq.merge */
}

static void sift_down(Merge *m, size_t at) {
    for (;;) {
        size_t smallest = at, left = 2 * at + 1, right = left + 1;
        if (left < m->nheap && heap_less(m, m->heap[left], m->heap[smallest])) smallest = left;
        if (right < m->nheap && heap_less(m, m->heap[right], m->heap[smallest])) smallest = right;
        if (smallest == at) return;
        size_t swap = m->heap[at];
        m->heap[at] = m->heap[smallest];
        m->heap[smallest] = swap;
        at = smallest;
    }
}

static int merge_runs(Records *r, Merge *m, const Run *runs, size_t count) {
    memset(m, 0, sizeof(*m));
    m->records = r;
    m->readers = PyMem_RawCalloc(count, sizeof(RunReader));
    m->heap = PyMem_RawCalloc(count, sizeof(size_t));
    if (m->readers == NULL || m->heap == NULL) goto failed;
    m->nreaders = count;
    for (size_t i = 0; i < count; i++) {
        RunReader *rd = &m->readers[i];
        rd->fd = r->fd;
        rd->width = r->width;
        rd->offset = runs[i].offset;
        rd->left = runs[i].count;
        rd->block = PyMem_RawMalloc(READ_BLOCK * sizeof(double) * (size_t)r->width);
        if (rd->block == NULL) goto failed;
        int filled = reader_fill(rd);
        if (filled < 0) goto failed;
        if (filled) m->heap[m->nheap++] = i;
    }
    for (size_t i = m->nheap; i-- > 0;) sift_down(m, i);
    return 0;
failed:
    merge_free(m);
    return -1;
}

/* The current smallest record of a merge (1), 0 at its end, -1 on error; the record is
 * taken, valid until the next call. */
static int merge_take(Merge *m, const double **record) {
    if (m->nheap == 0) return 0;
    RunReader *rd = &m->readers[m->heap[0]];
    *record = reader_current(rd);
    rd->at++;
    return 1;
}

/* Moves the reader taken from on: called before the next take. */
static int merge_advance(Merge *m) {
    if (m->nheap == 0) return 0;
    RunReader *rd = &m->readers[m->heap[0]];
    int filled = reader_fill(rd);
    if (filled < 0) return -1;
    if (!filled) m->heap[0] = m->heap[--m->nheap];
    sift_down(m, 0);
    return 0;
}

int records_begin(Records *r, Merge *m) {
    memset(m, 0, sizeof(*m));
    m->records = r;
    if (r->nruns == 0) {
        sort_buffer(r);
        m->memory = r->buffer;
        m->memory_n = r->n;
        r->buffer = NULL;
        r->n = r->allocated = 0;
        return 0;
    }
    if (r->n > 0 && write_buffer(r) < 0) return -1;
    while (r->nruns > r->fan_in) { /* merge the oldest runs into one */
        Merge inner;
        Run *merging = PyMem_RawMalloc(r->fan_in * sizeof(Run));
        if (merging == NULL) return -1;
        memcpy(merging, r->runs, r->fan_in * sizeof(Run));
        memmove(r->runs, r->runs + r->fan_in, (r->nruns - r->fan_in) * sizeof(Run));
        r->nruns -= r->fan_in;
        int failed = merge_runs(r, &inner, merging, r->fan_in) < 0;
        PyMem_RawFree(merging);
        if (failed) return -1;
        long long start = r->end, written = 0;
        double *block = PyMem_RawMalloc(READ_BLOCK * sizeof(double) * (size_t)r->width);
        size_t held = 0;
        const double *record;
        int got = block == NULL ? -1 : 0;
        while (got == 0 && (got = merge_take(&inner, &record)) == 1) {
            memcpy(block + held * (size_t)r->width, record, sizeof(double) * (size_t)r->width);
            got = merge_advance(&inner);
            if (++held == READ_BLOCK || got < 0) {
                if (got == 0 && write_all(r, block, held) < 0) got = -1;
                written += (long long)held;
                held = 0;
            }
        }
        if (got == 0 && held > 0) {
            if (write_all(r, block, held) < 0) got = -1;
            written += (long long)held;
        }
        PyMem_RawFree(block);
        merge_free(&inner);
        if (got < 0 || add_run(r, start, written) < 0) return -1;
    }
    int failed = merge_runs(r, m, r->runs, r->nruns);
    r->nruns = 0;
    return failed ? -1 : 0;
}

int records_next(Merge *m, const double **record) {
    if (m->readers == NULL) {
        if (m->memory_at == m->memory_n) return 0;
        *record = m->memory + m->memory_at * (size_t)m->records->width;
        m->memory_at++;
        return 1;
    }
    if (m->taken && merge_advance(m) < 0) return -1;
    m->taken = merge_take(m, record);
    return m->taken;
}

void merge_free(Merge *m) {
    PyMem_RawFree(m->memory);
    m->memory = NULL;
    if (m->readers != NULL) {
        for (size_t i = 0; i < m->nreaders; i++) PyMem_RawFree(m->readers[i].block);
    }
    PyMem_RawFree(m->readers);
    PyMem_RawFree(m->heap);
    m->readers = NULL;
    m->heap = NULL;
    m->nheap = m->nreaders = 0;
}

void records_free(Records *r) {
    PyMem_RawFree(r->buffer);
    PyMem_RawFree(r->runs);
    r->buffer = NULL;
    r->runs = NULL;
    r->n = r->allocated = r->nruns = r->runs_cap = 0;
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
}
