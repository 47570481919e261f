/* slice_int: the inside of the live time-slicing state (slice.h), shared by slice.c (read,
 * fill), slice_record.c and slice_answers.c. Private to live/. */
#ifndef RINGMASTER_LIVE_SLICE_INT_H
#define RINGMASTER_LIVE_SLICE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "sched.h"
#include "snap.h"
#include "speed.h"

struct slice_row {
    int64_t id;
    int sliced;
    double changed_at, run_s;
    int64_t home_node;
    int home_gpus[SCHED_MAX_GPUS_PER_NODE];
    int nhome;
    int64_t packed_with;
    int measuring;    /* the pair's measurement has begun */
    int pack_started; /* pack_at is set (the measurement begins at it) */
    double alone_s;
    int reverted;
    double gpu_util, gpu_mem;
    double recent_s; /* mean seconds per minibatch of its latest reports */
    long recent_n;
    double packed_s; /* mean since the pair's measurement began */
    long packed_n;
    int suspend_pending;
    struct speed_model speed; /* the job's speed model as the core sees it (live_slice_fill) */
    int has_speed;
};

struct live_slice {
    const struct live_snap *s;
    struct slice_row *rows; /* live_slice_fill adds each job's speed model */
    size_t n;
};

/* The row of job id, or NULL. */
const struct slice_row *slice_row_of(const struct live_slice *sl, int64_t id);

/* Seconds per minibatch that r's speed model predicts for it alone on 1 GPU of node (an index
 * into the snapshot's nodes; < 0: the reference GPU); 0 without a model. */
double slice_predicted_s(const struct live_slice *sl, const struct slice_row *r, int node);

#endif
