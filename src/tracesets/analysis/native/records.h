/* Records of a few doubles, given in any order, handed back sorted, once: the compiled
 * twin of spill.SortedRecords. Up to `capacity` records are held; past that they are
 * sorted and written to an unlinked temporary file as a run, and read back merged, a
 * block of each run at a time, at most `fan_in` runs at once. */
#ifndef TRACESETS_RECORDS_H
#define TRACESETS_RECORDS_H

#include <stddef.h>

#define RECORDS_MAX_WIDTH 8

typedef struct {
    long long offset;
    long long count;
} Run;

typedef struct {
    int fd;
    int width;
    long long offset, left;   /* where the run's unread records are, and how many */
    double *block;            /* records read ahead */
    size_t at, have;
} RunReader;

typedef struct Records Records;

typedef struct {
    Records *records;
    /* in memory: the sorted buffer; else a merge of readers */
    double *memory;
    size_t memory_at, memory_n;
    RunReader *readers;
    size_t *heap;             /* reader indices, a binary heap by current record */
    size_t nheap, nreaders;
    int taken;                /* a record was taken: its reader moves on first */
} Merge;

struct Records {
    int width;
    size_t capacity;
    size_t fan_in;
    double *buffer;
    size_t n, allocated;      /* records held, and room for */
    int fd;                   /* -1 until the first run is written */
    long long end;            /* bytes written to the file */
    Run *runs;
    size_t nruns, runs_cap;
    const char *directory;    /* where the temporary file goes */
};

/* All return 0 on success, -1 with errno set (ENOMEM included). */
int records_init(Records *r, int width, size_t capacity, size_t fan_in, const char *directory);
int records_add(Records *r, const double *record);
int records_empty(const Records *r);
/* Every record added, sorted: records_next gives a pointer valid until the next call,
 * 1 while there is one, 0 at the end, -1 on error. The records are given up. */
int records_begin(Records *r, Merge *m);
int records_next(Merge *m, const double **record);
void merge_free(Merge *m);
void records_free(Records *r);
int records_compare(const double *a, const double *b, int width);

#endif
