/* nodes: the /api/v1/nodes handlers (registration, heartbeat, reading). */
#ifndef RINGMASTER_NODES_H
#define RINGMASTER_NODES_H

struct api_call;

/* POST /api/v1/nodes: 201 and the node when new; re-registering a name updates it (and its
 * GPUs) and answers 200 with the same id. A worker may re-register only a node it
 * registered itself or one that is DOWN (it becomes the worker's), else 403; an admin any. */
void nodes_register(struct api_call *call);
/* Most jobs a heartbeat may report as running. */
#define NODES_RUNNING_MAX 4096

/* POST /api/v1/nodes/{id}/heartbeat [{"running": [{"job_id", ...}]}]: records the time, marks
 * the node UP; 200 and the node. With "running", reconciles: a job the server believes
 * launched there (STARTING, RUNNING, SUSPENDED, RESIZING or MIGRATING, with its latest start,
 * resize or migrate there) that the worker has not reported for longer than the scheduler's
 * node_timeout_s, with no action pending, goes back to PENDING (event "lost: ..."), its GPUs
 * released. The answer then also holds "stop": the reported jobs the node must no longer run
 * (none of its launched jobs, no action of theirs pending there: a copy left behind by a
 * requeue), which the worker kills without a checkpoint. A worker may beat only for its own
 * node (403). */
void nodes_heartbeat(struct api_call *call);

/* 0 when the caller may act as node: an admin, or the worker user that registered it.
 * Else -1 after answering 404 (no such node) or 403 (another worker's node). */
int nodes_owned_or_respond(struct api_call *call, long long node);
/* GET /api/v1/nodes: {"items": [...]} by id. */
void nodes_list(struct api_call *call);
/* GET /api/v1/nodes/{id}: the node, with its latest GPU faults ("faults", NODE_FAULTS_JSON). */
void nodes_get(struct api_call *call);

/* Answers node id (text) as GET does, with status; 404 when there is none. */
void nodes_respond(struct api_call *call, const char *id, unsigned status);

/* After a conditional update of node id that changed no row: 404 when there is no such node,
 * else 400 naming field with what (the condition failed). */
void nodes_missing_or_field(struct api_call *call, const char *id, const char *field,
                            const char *what);

/* POST /api/v1/nodes/{id}/drain {"reason": TEXT, "gpus": [INDEX...], "evacuate": BOOL} (admin):
 * the node's GPUs (those of gpus, else all) get no new work from the next round; with
 * evacuate its jobs on them are migrated off. Draining a drained node replaces its drain.
 * 200 and the node (its "drain" object); 400 naming the field; 404 no such node. */
void nodes_drain(struct api_call *call);

/* POST /api/v1/nodes/{id}/health {"gpus": [{"index": N, "fault": TEXT}...]} (the node's
 * worker, or an admin): the node's GPUs with a fault, all of them ([]: every GPU healthy).
 * A GPU with a fault gets no work and its job is moved off at the next round; each fault is
 * kept in gpu_faults. 200 and the node (each GPU's "fault" and "fault_since"); 400 naming the
 * field (an index the node does not have: "gpus"); 403 another worker's node; 404. */
void nodes_health(struct api_call *call);

/* SQL of a node n's latest NODE_FAULTS_MAX GPU faults, newest first, as JSON text: each
 * {"id", "gpu", "reason", "at", "cleared_at", "jobs", "lost_gpu_s"} (lost_gpu_s: the GPU
 * time its jobs lost to it, their moves and the steps they redid, sql/048); GET
 * /api/v1/nodes/{id} answers them as "faults". */
#define NODE_FAULTS_MAX "20"
#define NODE_FAULTS_JSON                                                                           \
    "COALESCE((SELECT json_agg(json_build_object('id', f.id, 'gpu', f.gpu_idx, 'reason',"          \
    " f.reason, 'at', " DB_TS("f.at") ", 'cleared_at', " DB_TS("f.cleared_at") ", 'jobs',"        \
    " to_json(f.jobs), 'lost_gpu_s', round(f.lost_gpu_s::numeric, 3)) ORDER BY f.at DESC, f.id"  \
    " DESC) FROM (SELECT * FROM gpu_faults g WHERE g.node_id = n.id ORDER BY g.at DESC, g.id DESC" \
    " LIMIT " NODE_FAULTS_MAX ") f), '[]')::text"

/* PATCH /api/v1/nodes/{id} {"labels": {KEY: VALUE or null}} (admin): merges the labels
 * (null removes one; at most 32, keys 1..63 of [A-Za-z0-9._/-], values 1..63 characters), as
 * {"switch": "s1", "rack": "r1"}; registrations leave them. 200 and the node; 400 naming the
 * field; 404. */
void nodes_patch(struct api_call *call);

/* POST /api/v1/nodes/{id}/undrain (admin): 200 and the node, its drain cleared (also when it
 * had none); 404 no such node. */
void nodes_undrain(struct api_call *call);

#endif
