/* doneset: the ids of the actions carried out and their outcome, kept in an appended,
 * fsynced file of the state directory (see doneset.h). */
#include "doneset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct done {
    long long id;
    int ok;
};

struct doneset {
    FILE *f;
    struct done *v;
    size_t n, cap;
};

static int remember(struct doneset *d, long long id, int ok)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;
        struct done *v = realloc(d->v, cap * sizeof(*v));
        if (!v)
            return -1;
        d->v = v;
        d->cap = cap;
    }
    d->v[d->n++] = (struct done){id, ok};
    return 0;
}

struct doneset *doneset_open(const char *path)
{
    struct doneset *d = calloc(1, sizeof(*d));
    if (!d || !(d->f = fopen(path, "a+"))) {
        free(d);
        return NULL;
    }
    rewind(d->f);
    long long id;
    char outcome[16];
    while (fscanf(d->f, "%lld %15s", &id, outcome) == 2)
        remember(d, id, strcmp(outcome, "ok") == 0);
    fseek(d->f, 0, SEEK_END);
    return d;
}

void doneset_close(struct doneset *d)
{
    if (!d)
        return;
    fclose(d->f);
    free(d->v);
    free(d);
}

int doneset_has(const struct doneset *d, long long id, int *ok)
{
    for (size_t i = d->n; i-- > 0;)
        if (d->v[i].id == id) {
            *ok = d->v[i].ok;
            return 1;
        }
    return 0;
}

int doneset_add(struct doneset *d, long long id, int ok)
{
    if (remember(d, id, ok) < 0 || fprintf(d->f, "%lld %s\n", id, ok ? "ok" : "failed") < 0 ||
        fflush(d->f) != 0)
        return -1;
    return fsync(fileno(d->f));
}
