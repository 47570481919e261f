/* table: aligned plain-text tables for ringctl's human output. */
#ifndef RINGMASTER_TABLE_H
#define RINGMASTER_TABLE_H

#include <stdio.h>

struct table;

/* ncols columns named by headers (copied). Returns NULL on allocation failure. */
struct table *table_create(int ncols, const char *const *headers);
void table_destroy(struct table *t);

/* Adds one row of ncols cells (copied; NULL prints as empty). Returns 0 or -1. */
int table_add(struct table *t, const char *const *cells);

/* Writes the header and every row, columns padded to their widest cell. */
void table_print(const struct table *t, FILE *f);

#endif
