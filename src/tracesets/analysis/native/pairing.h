/* GPU events keyed by their launch's start, in bounded memory: the compiled twin of
 * kernels.GpuEvents (its docstring says why and how). A record is
 * (start, end, key, code, name, stream, call). */
#ifndef TRACESETS_PAIRING_H
#define TRACESETS_PAIRING_H

#include "records.h"
#include "tables.h"

#define LAUNCHED 8
#define RECORD_WIDTH 7

typedef struct {
    double correlation, start, call;
} Launch;

typedef struct {
    double start, end, code, name, stream;
    long next;
} Waiting;

typedef struct {
    double correlation;
    long head, tail, count;
    int alive;
} Group;

typedef struct {
    size_t window;
    Records records, old_launches, unmatched;
    /* launches in insertion order, the last `window` to twice as many */
    Launch *launches;
    size_t nlaunches, launch_room;
    Table launch_table;
    /* events waiting for their launch, by correlation in the order first seen */
    Group *groups, *spare_groups;
    Waiting *events, *spare_events;
    size_t ngroups, nevents, room, capacity, alive_groups, waiting_count;
    Table group_table;
} Pairing;

/* All return 0, or -1 with errno set. */
int pairing_init(Pairing *p, size_t window, size_t buffer, size_t fan_in, const char *directory);
int pairing_gpu(Pairing *p, double start, double end, double correlation, double code,
                double name, double stream);
int pairing_launch(Pairing *p, double start, double correlation, double call);
/* Keys the events left waiting (pairing.c: _join_unmatched); the records are then whole. */
int pairing_join(Pairing *p);
void pairing_free(Pairing *p);

#endif
