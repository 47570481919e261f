/* submit: POST /api/v1/jobs, one job: its request made a submission (submission.h) and its
 * row (submit_row.h), stored by its group (submit_group.h) and answered, from a handler's
 * thread or libmicrohttpd's (jobs_submit_inline()). The batch: submit_batch.c. */
#include "submit.h"

#include <stddef.h>
#include <stdlib.h>

#include "call.h"
#include "http/http.h"
#include "jobcols.h"
#include "jobview.h"
#include "live/live.h"
#include "log.h"
#include "store/db.h"
#include "submission.h"
#include "submit_deadline.h"
#include "submit_group.h"
#include "submit_row.h"

/* A single submission on its way: what its statement and its answer need, on the heap
 * from its handler to its answer, which its group's leader may give from another thread
 * (submit_group.h). */
struct pending {
    struct submit_group_job job;
    struct api_call call; /* the handler's; its db that of whoever answers */
    json_t *body;
    char *request; /* the body's text for its Idempotency-Key, or NULL */
    struct submission sub;
    struct submit_row row;
    struct submit_forecast forecast; /* with a deadline: its forecast (submit_deadline.h) */
};

static void pending_free(struct pending *p)
{
    submit_row_clear(&p->row);
    submission_clear(&p->sub);
    free(p->request);
    json_decref(p->body);
    free(p);
}

/* The stored job's answer (201), with the verdict on its deadline when it has one. */
static void respond_created(struct api_call *call, const struct submission *s, const PGresult *r,
                            int row, const struct submit_forecast *forecast)
{
    if (!(s->spec.deadline > 0)) {
        jobview_respond_row(call, r, row, 201);
        return;
    }
    /* the forecast answered is the job's until the next pass: GET says the same; on a
     * connection of its own (the answering one may be a group's, in pipeline mode) */
    PGconn *fc = forecast->outlook && call->shared ? db_acquire(call->shared->db) : NULL;
    if (fc && submit_deadline_store(fc, strtoll(PQgetvalue(r, row, C_ID), NULL, 10), forecast) < 0)
        log_warn("job %s: cannot store its forecast: %s", PQgetvalue(r, row, C_ID),
                 PQerrorMessage(fc));
    if (fc)
        db_release(call->shared->db, fc);
    json_t *job = jobview_json(r, row);
    json_t *check = submit_deadline_json(s->spec.deadline, forecast->finish);
    if (!job || !check) {
        json_decref(job);
        json_decref(check);
        http_problem(call->req, 500, "out of memory");
        return;
    }
    json_object_set_new(check, "source", json_string(forecast->outlook ? "forecast" : "queue"));
    json_object_set_new(job, "deadline_forecast", check);
    api_respond_json(call, 201, job);
}

/* Answers for the job, stored (201), refused for its size (422), or made before under its
 * key. */
static void respond_stored(struct api_call *call, const struct submission *s, const PGresult *r,
                           int row, const struct submit_forecast *forecast)
{
    if (!db_ok(r) || PQntuples(r) <= row) {
        api_db_error(call, r);
    } else if (PQgetisnull(r, row, C_ID)) { /* refused for its size, or made before */
        long nodes = strtol(PQgetvalue(r, row, C_NCOLS), NULL, 10);
        long gpus = strtol(PQgetvalue(r, row, C_NCOLS + 1), NULL, 10);
        if (s->spec.hold || submission_fits_or_respond(call, &s->spec, nodes, gpus, -1) == 0) {
            PGresult *e = submission_earlier_or_respond(call, s, s->key);
            if (e)
                jobview_respond_row(call, e, 0, 200);
            PQclear(e);
        }
    } else {
        log_info("job %s: -> PENDING (submit by %s, %d gpus)", PQgetvalue(r, row, C_ID),
                 call->who.name, s->spec.gpus);
        respond_created(call, s, r, row, forecast);
        live_wake_signal();
    }
}

/* submit_group's done(): answers the submission on c's data and frees it. */
static void pending_done(struct submit_group_job *job, PGconn *c, const PGresult *r, int row)
{
    struct pending *p = (struct pending *)((char *)job - offsetof(struct pending, job));
    p->call.db = c;
    if (!r)
        http_problem(p->call.req, 503, "the database is unavailable");
    else
        respond_stored(&p->call, &p->sub, r, row, &p->forecast);
    api_call_finish(&p->call);
    pending_free(p);
}

/* The submission of call's request, ready to store; NULL after answering it (a broken
 * request: 400, 415, or out of memory). */
static struct pending *pending_of(struct api_call *call)
{
    const char *key;
    json_t *body;
    if (submission_key_or_respond(call, &key) < 0 || api_body_or_respond(call, &body) < 0)
        return NULL;
    struct pending *p = calloc(1, sizeof(*p));
    if (!p) {
        http_problem(call->req, 500, "out of memory");
        json_decref(body);
        return NULL;
    }
    *p = (struct pending){.call = *call, .body = body};
    p->call.id = ""; /* the router's, gone with the handler */
    if (submission_parse_or_respond(&p->call, body, &p->sub) < 0) {
        json_decref(body);
        free(p);
        return NULL;
    }

    /* the request's text identifies it only for a retry with its Idempotency-Key */
    p->request = key ? json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    p->sub.key = key;
    p->sub.request = p->request;
    if ((key && !p->request) || submit_row_of(&p->sub, &p->row) < 0) {
        http_problem(call->req, 500, "out of memory");
        pending_free(p);
        return NULL;
    }
    p->job = (struct submit_group_job){.row = &p->row, .done = pending_done};
    return p;
}

/* Stores the job in one statement, alone or in a group with concurrent submissions
 * (submit_group.h), and answers: the request is detached, and answered by pending_done()
 * on this thread or on its group's leader's. */
void jobs_submit(struct api_call *call)
{
    struct pending *p = pending_of(call);
    if (!p)
        return;
    if (submission_after_or_respond(call, &p->sub.spec, -1) < 0) {
        pending_free(p);
        return;
    }
    /* read before it is stored: it joins the queue behind the jobs waiting now */
    if (p->sub.spec.deadline > 0)
        p->forecast = submit_deadline_forecast(call->db, &p->sub.spec, call->who.id);
    api_call_detach(call);
    submit_group_store(call->db, &p->job);
}

int jobs_submit_inline(struct api_call *call)
{
    if (!submit_group_leading())
        return 0; /* the usual way leads; parsing here first would be work thrown away */
    struct pending *p = pending_of(call);
    if (!p)
        return 1; /* answered */
    if (p->sub.spec.after || p->sub.spec.deadline > 0) { /* the jobs it names, its forecast:
                                                             * read the usual way, on a
                                                             * connection */
        pending_free(p);
        return 0;
    }
    api_call_detach(call); /* before the job is queued: its leader may answer it at once */
    if (submit_group_enqueue(&p->job) == 0)
        return 1;
    pending_free(p); /* the statement ended meanwhile: nothing done, the usual way */
    return 0;
}
