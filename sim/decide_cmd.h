/* decide_cmd: `ringmaster-sim decide`, one scheduling round on a snapshot given as JSON
 * (format: docs/decide.md, read by decide_input.h), the decision written as JSON. */
#ifndef RINGMASTER_SIM_DECIDE_CMD_H
#define RINGMASTER_SIM_DECIDE_CMD_H

#include <stddef.h>

#include "sched.h"

/* Decides on the snapshot in text (len bytes) with policy p, or with the
 * snapshot's "policy" member when p is NULL (precompute when absent). Returns
 * 0 and a new NUL-terminated JSON text in *out (free() it), or -1 with the
 * reason in err: the input is bad (errno EINVAL) or the core failed. */
int decide_cmd_json(const char *text, size_t len, const struct sched_policy_ops *p, char **out,
                    char *err, size_t errlen);

/* The subcommand; argv[0] is "decide". Returns the exit code (2 on bad input). */
int decide_cmd_main(int argc, char **argv);

#endif
