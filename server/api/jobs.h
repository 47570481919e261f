/* jobs: the /api/v1/jobs handlers. Every state change is written with its event in one
 * transaction and logged on one line. */
#ifndef RINGMASTER_JOBS_H
#define RINGMASTER_JOBS_H

struct api_call;

#define JOBS_LIST_DEFAULT 50
#define JOBS_LIST_MAX 1000

/* GET /api/v1/jobs?state=&user=&name_prefix=&array=&limit=&after= : {"items": [...], "next":
 * cursor|null}, oldest first; the cursor is the last item's id as a string. array= keeps the
 * jobs of one job array (its id). */
void jobs_list(struct api_call *call);
/* GET /api/v1/jobs/{id} */
void jobs_get(struct api_call *call);
/* POST /api/v1/jobs/{id}/cancel: a user its own jobs, an admin any; 409 when illegal. */
void jobs_cancel(struct api_call *call);
/* GET /api/v1/jobs/{id}/events: {"items": [{id, at, from, to, event, actor, detail}]} */
void jobs_events(struct api_call *call);

#endif
