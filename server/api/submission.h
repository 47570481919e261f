/* submission: one job to store, as a request asked for it (POST /api/v1/jobs, or one job of
 * a batch) once validated, with what its row adds (its submitter, its Idempotency-Key and the
 * request that key names, an array's ids): the one form between the request and the
 * statement that stores it (submit_row.h). And the rules every submission meets on its way:
 * the Idempotency-Key header, the admission check's answer, and the answer for a job an
 * earlier request with the same key made. */
#ifndef RINGMASTER_API_SUBMISSION_H
#define RINGMASTER_API_SUBMISSION_H

#include <jansson.h>
#include <libpq-fe.h>

#include "spec/jobspec.h"

struct api_call;

#define SUBMISSION_KEY_MAX 255 /* bytes of an Idempotency-Key */

/* A job to store. spec is owned (submission_clear()); the texts are borrowed and must live
 * as long as the submission. */
struct submission {
    struct jobspec spec; /* validated (jobspec_parse()) */
    long long user_id;   /* the submitter */
    const char *actor;   /* the submitter's name: its first event's actor */
    const char *key;     /* the Idempotency-Key it is stored under, or NULL */
    const char *request; /* with key: the text whose hash identifies its request, else NULL */
    long long id;        /* its id chosen beforehand (an array's first job), or 0: drawn */
    long long array_id;  /* its array's id (the array's first job's), or 0: no array */
    long array_index;    /* its index in its array, or -1 */
};

/* The caller's submission, before its spec: no key, no request, no array. The caller's name
 * is borrowed from call (call->who.name). */
void submission_init(struct submission *s, const struct api_call *call);

/* Validates body (borrowed) as the caller's submission into *s, a job of no array, without
 * key or request (the caller sets them). Returns 0, or -1 after a 400 naming every broken
 * field (*s then holds nothing to free). */
int submission_parse_or_respond(struct api_call *call, const json_t *body, struct submission *s);

/* Frees what s owns (its spec). */
void submission_clear(struct submission *s);

/* The request's Idempotency-Key header into *key: NULL when absent, else checked (1..255
 * printable ASCII). Returns 0, or -1 after a 400. */
int submission_key_or_respond(struct api_call *call, const char **key);

/* 0 when spec fits a cluster of gpus GPUs on nodes nodes up (or no node is up: not known),
 * else -1 after a 422 that says the cluster's size. i: the job's place in a batch (its field
 * then jobs[i].gpus), or -1. */
int submission_fits_or_respond(struct api_call *call, const struct jobspec *spec, long nodes,
                               long gpus, long i);

/* 0 when every job and array spec's "after" names exists (any user's: every user may read
 * every job, so may depend on it), else -1 after a 400 naming each missing one's field
 * ("after[1].job", "jobs[3].after[0].array" for job i of a batch, i >= 0). Asks call->db
 * only when spec has dependencies. Since a job may only depend on jobs that exist when it is
 * submitted, and "after" cannot be changed later, dependencies never form a cycle. */
int submission_after_or_respond(struct api_call *call, const struct jobspec *spec, long i);

/* The job an earlier request with s's key (set) made, read on call->db: a new result whose
 * row 0 holds it as JOB_COLS (jobcols.h), or NULL after answering (a database error, or 409
 * when that request came with another text than s->request). mention: the key as the caller
 * gave it (a batch's, whose jobs' keys are KEY#i), for the 409's text. */
PGresult *submission_earlier_or_respond(struct api_call *call, const struct submission *s,
                                        const char *mention);

#endif
