/* decide: `ringmaster-sim decide`, one scheduling round on a snapshot given as
 * JSON (format: docs/decide.md), the decision written as JSON. */
#ifndef RINGMASTER_SIM_DECIDE_H
#define RINGMASTER_SIM_DECIDE_H

#include <stddef.h>

#include "sched.h"

/* A snapshot read from JSON, with what it points into. */
struct decide_input;

/* Reads the snapshot in text (len bytes, format docs/decide.md) and fits its models.
 * Returns a new input (free with decide_input_destroy), or NULL with the reason in err
 * (errno EINVAL for bad input, ENOMEM). The snapshot may still fail sched_validate()
 * (duplicate ids, a GPU held twice): sched_decide() refuses it then. */
struct decide_input *decide_input_read(const char *text, size_t len, char *err, size_t errlen);

/* The snapshot of in (borrowed, valid until in is destroyed). */
const struct sched_snapshot *decide_input_snapshot(const struct decide_input *in);

/* The snapshot's "policy" member (borrowed), or NULL when absent. */
const char *decide_input_policy(const struct decide_input *in);

/* Frees in; NULL is a no-op. */
void decide_input_destroy(struct decide_input *in);

/* Decides on the snapshot in text (len bytes) with policy p, or with the
 * snapshot's "policy" member when p is NULL (precompute when absent). Returns
 * 0 and a new NUL-terminated JSON text in *out (free() it), or -1 with the
 * reason in err: the input is bad (errno EINVAL) or the core failed. */
int decide_json(const char *text, size_t len, const struct sched_policy_ops *p, char **out,
                char *err, size_t errlen);

/* The subcommand; argv[0] is "decide". Returns the exit code (2 on bad input). */
int decide_main(int argc, char **argv);

#endif
