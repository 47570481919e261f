/* nodes: the /api/v1/nodes handlers (registration, heartbeat, reading). */
#ifndef RINGMASTER_NODES_H
#define RINGMASTER_NODES_H

struct api_call;

/* POST /api/v1/nodes: 201 and the node when new; re-registering a name updates it (and its
 * GPUs) and answers 200 with the same id. */
void nodes_register(struct api_call *call);
/* POST /api/v1/nodes/{id}/heartbeat: records the time, marks the node UP; 200 and the node. */
void nodes_heartbeat(struct api_call *call);
/* GET /api/v1/nodes: {"items": [...]} by id. */
void nodes_list(struct api_call *call);
/* GET /api/v1/nodes/{id} */
void nodes_get(struct api_call *call);

#endif
