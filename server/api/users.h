/* users: the /api/v1/users handlers (admin only) and whoami. */
#ifndef RINGMASTER_USERS_H
#define RINGMASTER_USERS_H

struct api_call;

/* POST /api/v1/users {"name", "role"}: 201 {id, name, role, token}; the token is shown this
 * once. 409 when the name is taken. */
void users_create(struct api_call *call);
/* GET /api/v1/users: {"items": [{id, name, role, created_at, share, max_gpus, gpus_held,
 * jobs_pending}]} */
void users_list(struct api_call *call);
/* PATCH /api/v1/users/{id or name} {"share": W, "max_gpus": Q or null}: the user's weight in
 * fair sharing and its quota (docs/scheduler.md, "Fair shares"); answers the user as listed.
 * 404 for no such user. */
void users_patch(struct api_call *call);
/* GET /api/v1/whoami: the caller {id, name, role}. */
void users_whoami(struct api_call *call);

#endif
