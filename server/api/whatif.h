/* whatif: the cluster's own history under every policy (docs/whatif.md).
 *
 *   POST /api/v1/whatif            {"since_s": S, "policies": [...]} -> 202, the run
 *   GET  /api/v1/whatif            the latest runs, newest first
 *   GET  /api/v1/whatif/{id}       one run: its progress, the jobs' measured figures and a
 *                                  row per policy replayed so far
 *   GET  /api/v1/whatif/{id}/trace the trace it replays (text/csv, ringmaster-sim run --trace)
 *
 * The request exports the jobs that completed in the period as a simulator trace (arrival,
 * GPUs asked for, elastic bounds, measured run time, user) with the settings of the live
 * scheduler and the cluster's nodes up; whatif_run.h replays it in the background. */
#ifndef RINGMASTER_API_WHATIF_H
#define RINGMASTER_API_WHATIF_H

struct api_call;

void whatif_create(struct api_call *call);
void whatif_list(struct api_call *call);
void whatif_get(struct api_call *call);
void whatif_trace(struct api_call *call);

#endif
