/* nodespec: validation of a node registration, pure (jansson only). */
#ifndef RINGMASTER_NODESPEC_H
#define RINGMASTER_NODESPEC_H

#include <jansson.h>
#include <stddef.h>

#define NODESPEC_MAX_NAME 253
#define NODESPEC_MAX_CPUS 65536
#define NODESPEC_MAX_GPUS 1024
#define NODESPEC_MAX_MODEL 128

/* Checks {"name", "cpus", "memory_bytes", "gpus": [{"index", "model", "memory_bytes",
 * "island", "numa"}]} (borrowed; island and numa optional, null or 0..1023: the GPU's NVLink
 * island and NUMA/PCIe domain on the node). Returns 0, or -1 with *errors a new array of
 * {field, detail} and the first message in detail. GPU indexes must be distinct, 0..1023. */
int nodespec_check(const json_t *body, json_t **errors, char *detail, size_t len);

#endif
