/* submission: a job to store, validated from its request, and the rules every submission
 * meets on its way: its Idempotency-Key, the admission check's 422, an earlier request's job. */
#include "submission.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http/http.h"
#include "jobcols.h"
#include "spec/jobafter.h"
#include "store/db.h"

void submission_init(struct submission *s, const struct api_call *call)
{
    *s = (struct submission){.user_id = call->who.id, .actor = call->who.name, .array_index = -1};
}

int submission_parse_or_respond(struct api_call *call, const json_t *body, struct submission *s)
{
    json_t *errors;
    char detail[512];
    submission_init(s, call);
    if (jobspec_parse(body, &s->spec, &errors, detail, sizeof(detail)) == 0)
        return 0;
    http_send_problem(call->req, 400, errors, NULL, "%s", detail);
    return -1;
}

void submission_clear(struct submission *s)
{
    jobspec_clear(&s->spec);
}

int submission_key_or_respond(struct api_call *call, const char **key)
{
    const char *k = http_req_header(call->req, "Idempotency-Key");
    *key = k;
    if (!k)
        return 0;
    size_t n = strlen(k), i = 0;
    while (i < n && k[i] >= 0x21 && k[i] <= 0x7e)
        i++;
    if (n >= 1 && n <= SUBMISSION_KEY_MAX && i == n)
        return 0;
    json_t *errs = json_pack("[{s:s, s:s}]", "field", "Idempotency-Key", "detail",
                             "expected 1..255 printable ASCII characters");
    http_send_problem(call->req, 400, errs, NULL,
                      "Idempotency-Key: expected 1..255 printable ASCII characters");
    return -1;
}

int submission_fits_or_respond(struct api_call *call, const struct jobspec *spec, long nodes,
                               long gpus, long i)
{
    if (nodes <= 0 || spec->min_gpus <= gpus)
        return 0;
    char field[48], where[32] = "";
    if (i >= 0)
        snprintf(where, sizeof(where), "jobs[%ld].", i);
    snprintf(field, sizeof(field), "%s%s", where, spec->elastic ? "min_gpus" : "gpus");
    json_t *errs =
        json_pack("[{s:s, s:s}]", "field", field, "detail", "more GPUs than the cluster has");
    http_send_problem(call->req, 422, errs, NULL,
                      "%s%sthe job needs %d GPUs; the cluster has %ld on %ld node%s up"
                      " (submit with \"hold\": true to wait for nodes still to come)",
                      i >= 0 ? field : "", i >= 0 ? ": " : "", spec->min_gpus, gpus, nodes,
                      nodes == 1 ? "" : "s");
    return -1;
}

static const char *const earlier_sql =
    "SELECT " JOB_COLS ", j.request_hash = sha256(convert_to($3, 'UTF8'))" JOB_FROM
    " WHERE j.user_id = $1 AND j.idempotency_key = $2";

PGresult *submission_earlier_or_respond(struct api_call *call, const struct submission *s,
                                        const char *mention)
{
    char uid[24];
    snprintf(uid, sizeof(uid), "%lld", s->user_id);
    const char *p[] = {uid, s->key, s->request};
    PGresult *r = db_exec(call->db, earlier_sql, 3, p);
    if (!db_ok(r) || PQntuples(r) != 1)
        api_db_error(call, r);
    else if (strcmp(PQgetvalue(r, 0, C_NCOLS), "t") != 0)
        http_problem(call->req, 409, "Idempotency-Key '%s' was used with another request", mention);
    else
        return r;
    PQclear(r);
    return NULL;
}

/* The dependencies (ids, and whether each is an array's) whose jobs do not exist, by their
 * place in the list (from 0). */
static const char *const missing_sql =
    "SELECT t.n - 1 FROM unnest($1::bigint[], $2::bool[]) WITH ORDINALITY AS t(id, arr, n)"
    " WHERE NOT CASE WHEN t.arr THEN EXISTS (SELECT 1 FROM jobs j WHERE j.array_id = t.id)"
    " ELSE EXISTS (SELECT 1 FROM jobs j WHERE j.id = t.id) END ORDER BY t.n";

/* The ids of after's dependencies and their kinds as PostgreSQL arrays ("{1,2}", "{f,t}"). */
static void after_arrays(const json_t *after, char *ids, char *arrs, size_t len)
{
    size_t a = 0, b = 0;
    for (size_t k = 0; k < json_array_size(after); k++) {
        int arr;
        long long id = jobafter_id(json_array_get(after, k), &arr);
        a += (size_t)snprintf(ids + a, len - a, "%s%lld", k ? "," : "{", id);
        b += (size_t)snprintf(arrs + b, len - b, "%s%s", k ? "," : "{", arr ? "t" : "f");
    }
    snprintf(ids + a, len - a, "}");
    snprintf(arrs + b, len - b, "}");
}

/* The 400 for the missing dependencies of r's rows. */
static void missing_respond(struct api_call *call, const json_t *after, const PGresult *r,
                            long i)
{
    json_t *errs = json_array();
    char where[32] = "", first[160] = "";
    if (i >= 0)
        snprintf(where, sizeof(where), "jobs[%ld].", i);
    for (int row = 0; row < PQntuples(r); row++) {
        size_t k = (size_t)strtoul(PQgetvalue(r, row, 0), NULL, 10);
        int arr;
        long long id = jobafter_id(json_array_get(after, k), &arr);
        char field[64], detail[64];
        snprintf(field, sizeof(field), "%safter[%zu].%s", where, k, arr ? "array" : "job");
        snprintf(detail, sizeof(detail), "no %s %lld", arr ? "job array" : "job", id);
        json_array_append_new(errs, json_pack("{s:s, s:s}", "field", field, "detail", detail));
        if (!row)
            snprintf(first, sizeof(first), "%s: %s", field, detail);
    }
    http_send_problem(call->req, 400, errs, NULL, "%s", first);
}

int submission_after_or_respond(struct api_call *call, const struct jobspec *spec, long i)
{
    char ids[JOBAFTER_MAX * 24 + 4], arrs[JOBAFTER_MAX * 2 + 4];
    if (!spec->after)
        return 0;
    after_arrays(spec->after, ids, arrs, sizeof(ids));
    const char *p[] = {ids, arrs};
    PGresult *r = db_exec(call->db, missing_sql, 2, p);
    int rc = db_ok(r) && PQntuples(r) == 0 ? 0 : -1;
    if (!db_ok(r))
        api_db_error(call, r);
    else if (rc < 0)
        missing_respond(call, spec->after, r, i);
    PQclear(r);
    return rc;
}
