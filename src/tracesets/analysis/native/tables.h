/* Open-addressing tables from a double's bits to an index: the compiled pass's dicts. */
#ifndef TRACESETS_TABLES_H
#define TRACESETS_TABLES_H

#include "memory.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TABLE_EMPTY (-1L)
#define TABLE_REMOVED (-2L)

typedef struct {
    uint64_t *keys;
    long *slots;
    size_t mask, used; /* slots used: keys, and keys removed */
} Table;

static inline uint64_t table_key(double value) {
    uint64_t bits;
    if (value == 0) value = 0; /* -0.0 and 0.0 are one key, as 0 and -0.0 are in a dict */
    memcpy(&bits, &value, sizeof(bits));
    return bits;
}

static inline size_t table_hash(uint64_t key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key;
}

static inline int table_alloc(Table *t, size_t size) {
    t->keys = PyMem_RawMalloc(size * sizeof(uint64_t));
    t->slots = PyMem_RawMalloc(size * sizeof(long));
    t->mask = size - 1;
    t->used = 0;
    if (t->keys == NULL || t->slots == NULL) return -1;
    for (size_t i = 0; i < size; i++) t->slots[i] = TABLE_EMPTY;
    return 0;
}

/* An empty table; it grows as keys come, so a small trace costs a small table. */
static inline int table_init(Table *t) { return table_alloc(t, 16); }

static inline void table_clear(Table *t) {
    for (size_t i = 0; i <= t->mask; i++) t->slots[i] = TABLE_EMPTY;
    t->used = 0;
}

static inline void table_free(Table *t) {
    PyMem_RawFree(t->keys);
    PyMem_RawFree(t->slots);
    t->keys = NULL;
    t->slots = NULL;
}

/* The index under `key`, or -1. */
static inline long table_find(const Table *t, uint64_t key) {
    for (size_t at = table_hash(key) & t->mask;; at = (at + 1) & t->mask) {
        long slot = t->slots[at];
        if (slot == TABLE_EMPTY) return -1;
        if (slot >= 0 && t->keys[at] == key) return slot;
    }
}

static inline void table_place(Table *t, uint64_t key, long index) {
    size_t at = table_hash(key) & t->mask;
    while (t->slots[at] != TABLE_EMPTY) at = (at + 1) & t->mask;
    t->keys[at] = key;
    t->slots[at] = index;
    t->used++;
}

/* `key` is not in the table. 0, or -1 when out of memory. Never more than half full,
 * keys removed included: the table is rebuilt, twice as large if its keys need it. */
static inline int table_put(Table *t, uint64_t key, long index) {
    if (2 * (t->used + 1) > t->mask + 1) {
        Table old = *t;
        size_t live = 0;
        for (size_t i = 0; i <= old.mask; i++) live += old.slots[i] >= 0;
        size_t size = old.mask + 1;
        while (4 * (live + 1) > size) size *= 2;
        if (table_alloc(t, size) < 0) {
            table_free(t);
            *t = old;
            return -1;
        }
        for (size_t i = 0; i <= old.mask; i++)
            if (old.slots[i] >= 0) table_place(t, old.keys[i], old.slots[i]);
        table_free(&old);
    }
    table_place(t, key, index);
    return 0;
}

static inline void table_remove(Table *t, uint64_t key) {
    for (size_t at = table_hash(key) & t->mask;; at = (at + 1) & t->mask) {
        long slot = t->slots[at];
        if (slot == TABLE_EMPTY) return;
        if (slot >= 0 && t->keys[at] == key) {
            t->slots[at] = TABLE_REMOVED;
            return;
        }
    }
}

#endif
