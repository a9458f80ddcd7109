/* Pairing GPU events with their launches (pairing.h), step for step as kernels.GpuEvents:
 * the same windows, the same spills, the same records in the same order. */
#include "memory.h"
#include "pairing.h"

#include <errno.h>

#include <math.h>

static int add_record(Pairing *p, double start, double end, double key, double code,
                      double name, double stream, double call) {
    double record[RECORD_WIDTH] = {start, end, key, code, name, stream, call};
    return records_add(&p->records, record);
}

int pairing_init(Pairing *p, size_t window, size_t buffer, size_t fan_in, const char *directory) {
    memset(p, 0, sizeof(*p));
    p->window = window < 1 ? 1 : window;
    if (records_init(&p->records, RECORD_WIDTH, buffer, fan_in, directory) < 0 ||
        records_init(&p->old_launches, 3, buffer, fan_in, directory) < 0 ||
        records_init(&p->unmatched, 6, buffer, fan_in, directory) < 0)
        return -1;
    p->capacity = 4 * p->window + 16;
    if (table_init(&p->launch_table) < 0 || table_init(&p->group_table) < 0) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

/* Grows `*items` to `room` items of `size` bytes. */
static int grow(void **items, size_t room, size_t size) {
    void *grown = PyMem_RawRealloc(*items, room * size);
    if (grown == NULL) {
        errno = ENOMEM;
        return -1;
    }
    *items = grown;
    return 0;
}

void pairing_free(Pairing *p) {
    records_free(&p->records);
    records_free(&p->old_launches);
    records_free(&p->unmatched);
    PyMem_RawFree(p->launches);
    PyMem_RawFree(p->groups);
    PyMem_RawFree(p->spare_groups);
    PyMem_RawFree(p->events);
    PyMem_RawFree(p->spare_events);
    table_free(&p->launch_table);
    table_free(&p->group_table);
    memset(p, 0, sizeof(*p));
}

static Launch *launched(Pairing *p, double correlation) {
    long at = table_find(&p->launch_table, table_key(correlation));
    return at < 0 ? NULL : &p->launches[at];
}

/* The events waiting go into new arrays in the order of their correlations' groups. */
static int compact(Pairing *p) {
    size_t groups = 0, events = 0;
    table_clear(&p->group_table);
    for (size_t g = 0; g < p->ngroups; g++) {
        Group *old = &p->groups[g];
        if (!old->alive) continue;
        Group *group = &p->spare_groups[groups];
        *group = *old;
        group->head = (long)events;
        for (long e = old->head; e >= 0; e = p->events[e].next) {
            p->spare_events[events] = p->events[e];
            p->spare_events[events].next = (long)events + 1;
            events++;
        }
        p->spare_events[events - 1].next = -1;
        group->tail = (long)events - 1;
        if (table_put(&p->group_table, table_key(group->correlation), (long)groups) < 0) {
            errno = ENOMEM;
            return -1;
        }
        groups++;
    }
    Group *swap_groups = p->groups;
    p->groups = p->spare_groups;
    p->spare_groups = swap_groups;
    Waiting *swap_events = p->events;
    p->events = p->spare_events;
    p->spare_events = swap_events;
    p->ngroups = groups;
    p->nevents = events;
    return 0;
}

static int spill_group(Pairing *p, Group *group) {
    for (long e = group->head; e >= 0; e = p->events[e].next) {
        Waiting *w = &p->events[e];
        double record[6] = {group->correlation, w->start, w->end, w->code, w->name, w->stream};
        if (records_add(&p->unmatched, record) < 0) return -1;
    }
    p->waiting_count -= (size_t)group->count;
    group->alive = 0;
    p->alive_groups--;
    table_remove(&p->group_table, table_key(group->correlation));
    return 0;
}

static int wait_for_launch(Pairing *p, double start, double end, double correlation,
                           double code, double name, double stream) {
    if (p->ngroups == p->room || p->nevents == p->room) {
        /* full: compacted when it is mostly events gone, else grown, up to its capacity */
        if (p->room < p->capacity && 2 * p->waiting_count >= p->room) {
            size_t room = p->room ? 2 * p->room : 64;
            if (room > p->capacity) room = p->capacity;
            if (grow((void **)&p->groups, room, sizeof(Group)) < 0 ||
                grow((void **)&p->spare_groups, room, sizeof(Group)) < 0 ||
                grow((void **)&p->events, room, sizeof(Waiting)) < 0 ||
                grow((void **)&p->spare_events, room, sizeof(Waiting)) < 0)
                return -1;
            p->room = room;
        } else if (compact(p) < 0) {
            return -1;
        }
    }
    uint64_t key = table_key(correlation);
    long g = table_find(&p->group_table, key);
    Waiting *w = &p->events[p->nevents];
    *w = (Waiting){start, end, code, name, stream, -1};
    if (g < 0) {
        g = (long)p->ngroups++;
        p->groups[g] = (Group){correlation, (long)p->nevents, (long)p->nevents, 0, 1};
        if (table_put(&p->group_table, key, g) < 0) {
            errno = ENOMEM;
            return -1;
        }
        p->alive_groups++;
    } else {
        p->events[p->groups[g].tail].next = (long)p->nevents;
        p->groups[g].tail = (long)p->nevents;
    }
    p->groups[g].count++;
    p->nevents++;
    p->waiting_count++;
    if (p->waiting_count > 2 * p->window) {
        for (size_t i = 0; i < p->ngroups && p->waiting_count > p->window; i++) {
            if (p->groups[i].alive && spill_group(p, &p->groups[i]) < 0) return -1;
        }
        return compact(p);
    }
    return 0;
}

int pairing_gpu(Pairing *p, double start, double end, double correlation, double code,
                double name, double stream) {
    if (correlation < 0) return add_record(p, start, end, start, code, name, stream, NAN);
    Launch *launch = launched(p, correlation);
    if (launch != NULL) {
        return add_record(p, start, end, launch->start, (double)((long)code | LAUNCHED), name,
                          stream, launch->call);
    }
    return wait_for_launch(p, start, end, correlation, code, name, stream);
}

static int forget_old_launches(Pairing *p) {
    size_t leaving = p->nlaunches - p->window;
    for (size_t i = 0; i < leaving; i++) {
        Launch *l = &p->launches[i];
        double record[3] = {l->correlation, l->start, l->call};
        if (records_add(&p->old_launches, record) < 0) return -1;
    }
    memmove(p->launches, p->launches + leaving, p->window * sizeof(Launch));
    p->nlaunches = p->window;
    table_clear(&p->launch_table);
    for (size_t i = 0; i < p->nlaunches; i++) {
        if (table_put(&p->launch_table, table_key(p->launches[i].correlation), (long)i) < 0) {
            errno = ENOMEM;
            return -1;
        }
    }
    return 0;
}

int pairing_launch(Pairing *p, double start, double correlation, double call) {
    Launch *launch = launched(p, correlation);
    if (launch == NULL) {
        if (p->nlaunches == p->launch_room) {
            size_t room = p->launch_room ? 2 * p->launch_room : 64;
            if (room > 2 * p->window + 1) room = 2 * p->window + 1;
            if (grow((void **)&p->launches, room, sizeof(Launch)) < 0) return -1;
            p->launch_room = room;
        }
        p->launches[p->nlaunches] = (Launch){correlation, start, call};
        if (table_put(&p->launch_table, table_key(correlation), (long)p->nlaunches) < 0) {
            errno = ENOMEM;
            return -1;
        }
        p->nlaunches++;
        if (p->nlaunches > 2 * p->window && forget_old_launches(p) < 0) return -1;
    } else if (start < launch->start || (!isnan(call) && isnan(launch->call))) {
        launch->start = start < launch->start ? start : launch->start;
        launch->call = isnan(call) ? launch->call : call;
    }
    if (p->alive_groups == 0) return 0;
    uint64_t key = table_key(correlation);
    long g = table_find(&p->group_table, key);
    if (g < 0) return 0;
    Group *group = &p->groups[g];
    launch = launched(p, correlation);
    double code_flag = LAUNCHED;
    for (long e = group->head; e >= 0; e = p->events[e].next) {
        Waiting *w = &p->events[e];
        if (add_record(p, w->start, w->end, launch->start,
                       (double)((long)w->code | (long)code_flag), w->name, w->stream,
                       launch->call) < 0)
            return -1;
    }
    p->waiting_count -= (size_t)group->count;
    group->alive = 0;
    p->alive_groups--;
    table_remove(&p->group_table, key);
    return 0;
}

static int compare_waiting(const void *a, const void *b) {
    const Waiting *x = a, *y = b;
    double xs[5] = {x->start, x->end, x->code, x->name, x->stream};
    double ys[5] = {y->start, y->end, y->code, y->name, y->stream};
    return records_compare(xs, ys, 5);
}

static int compare_groups(const void *a, const void *b) {
    double x = ((const Group *)a)->correlation, y = ((const Group *)b)->correlation;
    return (x > y) - (x < y);
}

/* Nothing left the windows: each waiting event's key is one lookup, added in the order the
 * merge join would add them (correlations sorted, each one's events sorted). */
static int join_in_memory(Pairing *p) {
    if (compact(p) < 0) return -1;
    qsort(p->groups, p->ngroups, sizeof(Group), compare_groups);
    for (size_t g = 0; g < p->ngroups; g++) {
        Group *group = &p->groups[g];
        Waiting *events = &p->events[group->head]; /* contiguous after compact */
        qsort(events, (size_t)group->count, sizeof(Waiting), compare_waiting);
        Launch *launch = launched(p, group->correlation);
        double key = launch == NULL ? INFINITY : launch->start;
        double call = launch == NULL ? NAN : launch->call;
        long flag = launch == NULL ? 0 : LAUNCHED;
        for (long e = 0; e < group->count; e++) {
            Waiting *w = &events[e];
            if (add_record(p, w->start, w->end, key, (double)((long)w->code | flag), w->name,
                           w->stream, call) < 0)
                return -1;
        }
    }
    p->ngroups = p->nevents = p->alive_groups = p->waiting_count = 0;
    return 0;
}

/* The events still waiting and those spilled, joined by correlation with every launch,
 * both in correlation order. */
static int merge_join(Pairing *p) {
    for (size_t g = 0; g < p->ngroups; g++) {
        if (p->groups[g].alive && spill_group(p, &p->groups[g]) < 0) return -1;
    }
    p->ngroups = p->nevents = 0;
    if (records_empty(&p->unmatched)) return 0;
    for (size_t i = 0; i < p->nlaunches; i++) {
        Launch *l = &p->launches[i];
        double record[3] = {l->correlation, l->start, l->call};
        if (records_add(&p->old_launches, record) < 0) return -1;
    }
    p->nlaunches = 0;
    Merge launches, unmatched;
    if (records_begin(&p->old_launches, &launches) < 0) return -1;
    if (records_begin(&p->unmatched, &unmatched) < 0) {
        merge_free(&launches);
        return -1;
    }
    const double *launch = NULL, *event;
    int got = records_next(&launches, &launch), more = 0;
    while (got >= 0 && (more = records_next(&unmatched, &event)) == 1) {
        double correlation = event[0];
        while (got == 1 && launch[0] < correlation) got = records_next(&launches, &launch);
        if (got < 0) break;
        int found = got == 1 && launch[0] == correlation;
        if (add_record(p, event[1], event[2], found ? launch[1] : INFINITY,
                       found ? (double)((long)event[3] | LAUNCHED) : event[3], event[4],
                       event[5], found ? launch[2] : NAN) < 0)
            got = -1;
    }
    if (more < 0) got = -1;
    merge_free(&launches);
    merge_free(&unmatched);
    return got < 0 ? -1 : 0;
}

int pairing_join(Pairing *p) {
    if (records_empty(&p->unmatched) && records_empty(&p->old_launches))
        return join_in_memory(p);
    return merge_join(p);
}
