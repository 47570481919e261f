/* submit_sql: the text of the statements that store a submitted job, shared by a batch's
 * inserts (submit.c) and the single submissions' statements (submit_group.c). SQL text only. */
#ifndef RINGMASTER_API_SUBMIT_SQL_H
#define RINGMASTER_API_SUBMIT_SQL_H

#include "jobcols.h"

/* The parameters of a single submission's statement (SUBMIT_ONE_SQL): $1..$21. */
#define SUBMIT_NPARAMS 21
/* Which of them is the Idempotency-Key ($12; NULL: none). */
#define SUBMIT_KEY_PARAM 11

/* The cluster up: its nodes with GPUs and their GPUs, for the admission check, as the
 * database keeps them (sql/029_cluster_up.sql): counting them here cost 0.77 ms a statement at
 * 512 nodes of 8 GPUs. */
#define SUBMIT_CLUSTER_SQL "SELECT nodes, gpus FROM cluster_up WHERE id = 1"
#define SUBMIT_CLUSTER_CTE "cl AS (" SUBMIT_CLUSTER_SQL ")"

/* The insert of a job and its first event. $17: the job's id when chosen beforehand (an
 * array's first job), else NULL; $18, $19: its array's id and its index there, or NULL; $20:
 * the batch declaration or NULL. */
#define INSERT_TARGET                                                                              \
    "INSERT INTO jobs (user_id, name, command, env, model, gpus, min_gpus, max_gpus, elastic,"     \
    " priority, batch_per_gpu, idempotency_key, request_hash, plan_spec, total_steps, epochs,"     \
    " stop_at_convergence, stop_at_loss, id, array_id, array_index, batch_spec)"
#define INSERT_VALUES                                                                              \
    "$1::bigint, $2::text, $3::jsonb, $4::jsonb, $5::jsonb, $6::int, $7::int, $8::int, $9::bool,"  \
    " $10::int, $11::int, $12::text, sha256(convert_to($13::text, 'UTF8')), $15::jsonb,"           \
    " ($16::jsonb->>'total_steps')::bigint, ($16::jsonb->>'epochs')::float8,"                      \
    " COALESCE(($16::jsonb->>'stop_at_convergence')::bool, false),"                                \
    " ($16::jsonb->>'stop_at_loss')::float8,"                                                      \
    " COALESCE($17::bigint, nextval('jobs_id_seq'::regclass)), $18::bigint, $19::int, $20::jsonb"
#define INSERT_CONFLICT " ON CONFLICT (user_id, idempotency_key) DO NOTHING RETURNING *"
#define INSERT_REST                                                                                \
    INSERT_CONFLICT "),"                                                                           \
                    " ev AS (INSERT INTO job_events (job_id, from_state, to_state, event, actor)"  \
                    " SELECT id, NULL, 'PENDING', 'submit', $14::text FROM ins)"

/* A single submission in one statement: the insert only when the job fits the cluster up
 * ($21: it holds; no node up: not known, nothing refused), and the cluster's nodes up and
 * their GPUs after the job's columns (JOB_COLS_NEW: its user is the submitter, $14; the id
 * and the others null when nothing was stored: refused, or an earlier request with its
 * Idempotency-Key made it). Not the users table nor job_last_report: a job just stored has
 * reported nothing, and reading them was a tenth of a group's statement (pgbench). */
#define SUBMIT_ONE_SQL                                                                             \
    "WITH " SUBMIT_CLUSTER_CTE ", ins AS (" INSERT_TARGET " SELECT " INSERT_VALUES " FROM cl"      \
    " WHERE $21::bool OR cl.nodes = 0 OR $7::int <= cl.gpus" INSERT_REST                          \
    " SELECT " JOB_COLS_NEW("$14::text") ", cl.nodes, cl.gpus FROM cl LEFT JOIN ins j ON true"

/* SUBMIT_ONE_SQL for many jobs at once: $1 is a JSON array with one array per job, the 21
 * parameters of SUBMIT_ONE_SQL as JSON strings or null ($17..$19 null: no array's job). Each
 * job's id is drawn first (x), so that every job of $1 has its row in the answer, in $1's
 * order: JOB_COLS_NEW (its user the submitter, p->>13; the rest null when it was not
 * stored: refused for its size, or made before under its Idempotency-Key) and the cluster's
 * size, as SUBMIT_ONE_SQL answers. conflict: INSERT_CONFLICT, or for a group in which no job
 * has an Idempotency-Key (none can conflict: a null key equals no other) only the RETURNING
 * (the arbiter index's check was a tenth of the statement's time, pgbench). */
#define SUBMIT_MANY_SQL_WITH(conflict)                                                             \
    "WITH " SUBMIT_CLUSTER_CTE ", x AS MATERIALIZED (SELECT e.i, e.p, (e.p->>15)::jsonb AS len,"   \
    " nextval('jobs_id_seq'::regclass) AS id"                                                      \
    " FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS e(p, i)),"                           \
    " ins AS (" INSERT_TARGET " SELECT (p->>0)::bigint, p->>1, (p->>2)::jsonb, (p->>3)::jsonb,"    \
    " (p->>4)::jsonb, (p->>5)::int, (p->>6)::int, (p->>7)::int, (p->>8)::bool, (p->>9)::int,"      \
    " (p->>10)::int, p->>11, sha256(convert_to(p->>12, 'UTF8')), (p->>14)::jsonb,"                 \
    " (len->>'total_steps')::bigint, (len->>'epochs')::float8,"                                    \
    " COALESCE((len->>'stop_at_convergence')::bool, false), (len->>'stop_at_loss')::float8,"       \
    " x.id, NULL, NULL, (p->>19)::jsonb FROM x, cl"                                                \
    " WHERE (p->>20)::bool OR cl.nodes = 0 OR (p->>6)::int <= cl.gpus ORDER BY "                   \
    "x.i" conflict "),"                                                                            \
    " ev AS (INSERT INTO job_events (job_id, from_state, to_state, event, actor)"                  \
    " SELECT ins.id, NULL, 'PENDING', 'submit', x.p->>13 FROM ins JOIN x ON x.id = ins.id)"        \
    " SELECT " JOB_COLS_NEW("x.p->>13") ", cl.nodes, cl.gpus FROM x CROSS JOIN cl"               \
    " LEFT JOIN ins j ON j.id = x.id ORDER BY x.i"
#define SUBMIT_MANY_SQL SUBMIT_MANY_SQL_WITH(INSERT_CONFLICT)
#define SUBMIT_MANY_KEYLESS_SQL SUBMIT_MANY_SQL_WITH(" RETURNING *")

#endif
