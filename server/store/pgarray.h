/* pgarray: PostgreSQL array literals ('{...}', the text form of an array parameter) written
 * into room the caller sized: each element double-quoted with its " and \ escaped by a
 * backslash, an SQL NULL as NULL unquoted. Any text is an element as it is: quotes, braces,
 * commas, spaces, the word NULL and UTF-8 come back from the array as they went in. */
#ifndef RINGMASTER_STORE_PGARRAY_H
#define RINGMASTER_STORE_PGARRAY_H

#include <stddef.h>

/* The room of an empty literal: "{}" and its NUL. */
#define PGARRAY_ROOM 3

/* The room element s (NULL: SQL NULL) adds to a literal: written and its comma. */
size_t pgarray_room(const char *s);

/* A literal being written at at; n: its elements so far. */
struct pgarray {
    char *at;
    int n;
};

/* Starts a literal at out, which has room for PGARRAY_ROOM and pgarray_room() of each
 * element to come. */
void pgarray_start(struct pgarray *a, char *out);

/* Appends s (NULL: SQL NULL) as a's next element. */
void pgarray_add(struct pgarray *a, const char *s);

/* Ends a's literal with "}" and its NUL; returns the byte after the NUL. */
char *pgarray_end(struct pgarray *a);

#endif
