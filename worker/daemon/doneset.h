/* doneset: the ids of the actions this worker has carried out, with their outcome, kept in
 * a file of its state directory ("<id> ok|failed" lines, appended and fsynced), so that an
 * action fetched again after a restart of either side is carried out once. */
#ifndef RINGMASTER_DONESET_H
#define RINGMASTER_DONESET_H

struct doneset;

/* Loads (or creates) the file at path. NULL with errno on failure. */
struct doneset *doneset_open(const char *path);
void doneset_close(struct doneset *d);

/* 1 and *ok set when id was done, else 0. */
int doneset_has(const struct doneset *d, long long id, int *ok);

/* Records id with its outcome, durably. 0 or -1. */
int doneset_add(struct doneset *d, long long id, int ok);

#endif
