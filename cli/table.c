/* table: ringctl's aligned plain-text tables: rows kept as copied cells, printed with each
 * column padded to its widest cell. */
#include "table.h"

#include <stdlib.h>
#include <string.h>

struct table {
    int ncols;
    size_t nrows, cap; /* rows including the header row */
    char **cells;      /* nrows * ncols */
};

static int append_row(struct table *t, const char *const *cells)
{
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char **p = realloc(t->cells, cap * (size_t)t->ncols * sizeof(*p));
        if (!p)
            return -1;
        t->cells = p;
        t->cap = cap;
    }
    char **row = t->cells + t->nrows * (size_t)t->ncols;
    for (int i = 0; i < t->ncols; i++)
        row[i] = strdup(cells[i] ? cells[i] : "");
    t->nrows++;
    return 0;
}

struct table *table_create(int ncols, const char *const *headers)
{
    struct table *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->ncols = ncols;
    if (append_row(t, headers) < 0) {
        table_destroy(t);
        return NULL;
    }
    return t;
}

void table_destroy(struct table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

int table_add(struct table *t, const char *const *cells)
{
    return append_row(t, cells);
}

void table_print(const struct table *t, FILE *f)
{
    size_t width[64] = {0};
    int ncols = t->ncols < 64 ? t->ncols : 64;
    for (size_t r = 0; r < t->nrows; r++)
        for (int c = 0; c < ncols; c++) {
            const char *s = t->cells[r * (size_t)t->ncols + (size_t)c];
            size_t n = s ? strlen(s) : 0;
            if (n > width[c])
                width[c] = n;
        }
    for (size_t r = 0; r < t->nrows; r++) {
        for (int c = 0; c < ncols; c++) {
            const char *s = t->cells[r * (size_t)t->ncols + (size_t)c];
            if (c == ncols - 1)
                fputs(s ? s : "", f);
            else
                fprintf(f, "%-*s  ", (int)width[c], s ? s : "");
        }
        fputc('\n', f);
    }
}
