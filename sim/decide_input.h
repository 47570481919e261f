/* decide_input: the snapshot of `ringmaster-sim decide` read from JSON (format:
 * docs/decide.md), its models fitted from the observations it gives. */
#ifndef RINGMASTER_SIM_DECIDE_INPUT_H
#define RINGMASTER_SIM_DECIDE_INPUT_H

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

/* The longest gpu_type name a node may give. */
#define DECIDE_GPU_TYPE_MAX 63

/* The gpu_type that the snapshot's nodes of GPU model gpu_model give (borrowed), or NULL when
 * none names it. */
const char *decide_input_gpu_type(const struct decide_input *in, int gpu_model);

/* Frees in; NULL is a no-op. */
void decide_input_destroy(struct decide_input *in);

#endif
