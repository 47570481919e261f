/* policy_pack: packing two 1-GPU jobs on one GPU, the pieces that gandiva
 * (policies/gandiva.c) and ringmaster (policy_ringmaster_pack.c) share
 * (internal to scheduler/; docs/gandiva.md).
 *
 * A packed pair is two jobs whose snapshot entries name each other
 * (packed, packed_with) and hold the same GPU. Of the two, the one earlier in
 * the snapshot holds the GPU for placement (sched.c books it once); the other
 * is the pair's "second". A pair is judged by introspection: once both rates
 * are measured it is kept while rate_packed / rate_alone summed over the two
 * reaches 1 + SCHED_PACK_MIN_GAIN, else reverted and never tried again. */
#ifndef RINGMASTER_POLICY_PACK_H
#define RINGMASTER_POLICY_PACK_H

#include <stddef.h>

#include "sched_types.h"

/* The index of job i's packed partner in snap, or -1. */
long policy_pack_partner(const struct sched_snapshot *snap, size_t i);

/* 1 if job i is the second of a packed pair (its partner comes first). */
int policy_pack_is_second(const struct sched_snapshot *snap, size_t i);

/* 1 if the pair's measured rates say packing lost (or gained too little):
 * both rates known and rate_packed / rate_alone summed < 1 + MIN_GAIN. */
int policy_pack_lost(const struct sched_job *a, const struct sched_job *b);

/* 1 if job j may share a GPU at all: its utilisation is known and at most
 * SCHED_PACK_MAX_UTIL, and no packing of it was reverted. */
int policy_pack_light(const struct sched_job *j);

/* 1 if jobs a and b fit one GPU's memory together (no bound when the
 * snapshot's gpu_mem_bytes is 0). */
int policy_pack_fits(const struct sched_snapshot *snap, const struct sched_job *a,
                     const struct sched_job *b);

/* 1 if assignment h of decision d may take a partner: it runs alone (pack
 * NONE) on exactly 1 GPU, its job is light, and job i fits beside it. */
int policy_pack_host_ok(const struct sched_snapshot *snap, const struct sched_decision *d, size_t i,
                        size_t h);

/* Job i shares the GPU of assignment h (already final) with action act
 * (PACK or KEEP): i takes h's slots, both name each other, the decision's
 * changed and packed counts follow. */
void policy_pack_share(const struct sched_snapshot *snap, struct sched_decision *d, size_t i,
                       size_t h, enum sched_pack_action act);

/* Marks the pair i, k reverted (pack REVERT on both, naming each other); the
 * assignments' GPUs are left as they are (they must not share). */
void policy_pack_revert(const struct sched_snapshot *snap, struct sched_decision *d, size_t i,
                        size_t k);

/* The snapshot with the second job of each packed pair holding nothing (the
 * pair's GPU counted once), as placement sees it: *view is *snap with jobs
 * replaced by *copy (new, the caller frees it) when something is packed;
 * else *copy is NULL and view->jobs is snap's. Returns 0, or -1 (ENOMEM). */
int policy_pack_view(const struct sched_snapshot *snap, struct sched_snapshot *view,
                     struct sched_job **copy);

#endif
