/* gpuhealth: the faults of the host's GPUs, reported to the server (POST .../health) when they
 * change. Faults come from a fault file (--fault-file PATH, for simulated GPUs and tests):
 * one line a change, the last one of a GPU wins:
 *     gpu 2 xid 79          an Xid error (79: fallen off the bus)
 *     gpu 2 ecc             uncorrectable ECC errors (any words after it are the detail)
 *     gpu 2 lost            the GPU is gone
 *     gpu 2 ok              healthy again
 * with # comments and blank lines. Real GPUs' Xid and ECC counters through NVML are not read
 * yet: without a fault file every GPU is taken as healthy. */
#ifndef RINGMASTER_GPUHEALTH_H
#define RINGMASTER_GPUHEALTH_H

#include <jansson.h>

#include "inventory.h"

#define HEALTH_FAULT_MAX 128

struct health {
    const char *fault_file;                          /* NULL: none */
    char sent[INVENTORY_MAX_GPUS][HEALTH_FAULT_MAX]; /* what the server has, by position */
    int synced;       /* 0: sent must be sent (a new registration replaces the GPUs' rows) */
    char warned[256]; /* the last line warned about, not to repeat it each heartbeat */
};

/* Reads path into faults (by position in inv, "" healthy). Returns 0, or -1 when it cannot be
 * read (faults then all ""; a missing file is no fault). Bad lines are skipped, the first
 * one copied into bad (may be NULL) of len bytes. */
int health_read(const char *path, const struct inventory *inv, char faults[][HEALTH_FAULT_MAX],
                char *bad, size_t len);

/* The report's body for faults ({"gpus": [{"index", "fault"}...]}, new). */
json_t *health_json(const struct inventory *inv, char faults[][HEALTH_FAULT_MAX]);

#endif
