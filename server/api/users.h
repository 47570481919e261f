/* users: the /api/v1/users handlers (admin only) and whoami. */
#ifndef RINGMASTER_USERS_H
#define RINGMASTER_USERS_H

struct api_call;

/* POST /api/v1/users {"name", "role"}: 201 {id, name, role, token}; the token is shown this
 * once. 409 when the name is taken. */
void users_create(struct api_call *call);
/* GET /api/v1/users: {"items": [{id, name, role, created_at}]} */
void users_list(struct api_call *call);
/* GET /api/v1/whoami: the caller {id, name, role}. */
void users_whoami(struct api_call *call);

#endif
