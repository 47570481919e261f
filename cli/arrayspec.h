/* arrayspec: the indexes of ringctl submit --array, as Slurm's --array writes them: a list of
 * items separated by commas, each N, FIRST-LAST or FIRST-LAST:STEP ("0-99", "1,3,5-7",
 * "0-15:4"). Pure. */
#ifndef RINGMASTER_ARRAYSPEC_H
#define RINGMASTER_ARRAYSPEC_H

#include <stddef.h>

#define ARRAYSPEC_MAX_COUNT 1000    /* indexes of one array: one batch request */
#define ARRAYSPEC_MAX_INDEX 1000000 /* the server's bound on array_index */

/* Parses s into idx[0..*n) (at most cap, in the order written). Returns 0, or -1 with why
 * in err: an empty or malformed item, LAST < FIRST, a step < 1, an index over
 * ARRAYSPEC_MAX_INDEX, an index given twice, more than cap indexes, or Slurm's %N throttle
 * (not supported: every element is queued at once). */
int arrayspec_parse(const char *s, long *idx, size_t cap, size_t *n, char *err, size_t len);

#endif
