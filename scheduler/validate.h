/* validate: the checks of a snapshot before a round (sched.h's sched_validate), and the one
 * sched_decide() makes, which also says whether some job is packed. Pure. */
#ifndef RINGMASTER_VALIDATE_H
#define RINGMASTER_VALIDATE_H

#include <stddef.h>

#include "sched_types.h"

/* sched_validate(); *packed = 1 when it is valid and some job is packed (its pass over the
 * slots reads every job's packed flag), else 0. */
int sched_validate_packed(const struct sched_snapshot *snap, char *err, size_t errlen, int *packed);

#endif
