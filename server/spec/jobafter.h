/* jobafter: the rules of a submission's "after" (the jobs it runs after, issue 33 item 4).
 * Pure (jansson only); whether the jobs it names exist is the store's question
 * (api/submission.h). */
#ifndef RINGMASTER_JOBAFTER_H
#define RINGMASTER_JOBAFTER_H

#include <jansson.h>

#include "fieldcheck.h"

#define JOBAFTER_MAX 64 /* dependencies of one job */

/* Checks v (borrowed; NULL: absent), "after": an array of 1..JOBAFTER_MAX objects, each
 * {"job": ID} or {"array": ID} (ID >= 1) with an optional "when" of "ok" (the default),
 * "any" or "notok" (scheduler/deps.h). Each broken rule is recorded in c under its field
 * ("after[2].when"). Returns a new array with "when" filled in, or NULL (absent, or broken). */
json_t *jobafter_check(struct fieldcheck *c, const json_t *v);

/* The id of dependency d (an element of what jobafter_check() returned; borrowed) and,
 * in *array, whether it names an array. */
long long jobafter_id(const json_t *d, int *array);

#endif
