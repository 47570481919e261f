/* claim_sql: the SQL that says whether a worker may report for a job (docs/worker-protocol.md
 * "Who may report"), shared by the report statements of reports.c and reports_metrics.c. */
#ifndef RINGMASTER_CLAIM_SQL_H
#define RINGMASTER_CLAIM_SQL_H

/* Which of the caller's nodes (user $2) may report for job $1, per docs/worker-protocol.md
 * "Who may report": actions from before the job last entered the queue (submission or
 * requeue) and superseded ones do not count; "recent" is a finish less than $3 s ago.
 * Columns: runs (state, metrics), hosts (log). No row: no such job. Whether a node is the
 * caller's is asked of the few nodes the job's actions and allocations name (the nodes'
 * primary key), not of a list of all the caller's nodes: one worker token for a whole
 * cluster owns them all, and hashing that list twice a post took 0.8-1.2 ms of the
 * statement's 1.3 at 512 nodes (make bench-scale), more than the reports' insert. A scalar
 * subquery, not EXISTS: the generic plan turned EXISTS (... n.id = X AND n.registered_by = $2)
 * back into a hashed scan of the caller's nodes (all 2,048 of them at 16,384 GPUs, for each
 * post); a scalar subquery can only be run as the one lookup by key. */
#define CLAIM_MINE(node)                                                                           \
    "COALESCE((SELECT n.registered_by = $2 FROM nodes n WHERE n.id = " node "), false)"
/* The claim's parts, for claim_stmt (reports.c) and node_metrics_stmt (reports_metrics.c):
 * the job (no row: no such job), its actions that count, the caller's live ones, its latest
 * launch (id: the launch its reports belong to, sql/053). */
#define CLAIM_CTES CLAIM_CTES_OF("$1")
/* The same for the job JOB (an expression: "$1", or a column of an outer row). */
#define CLAIM_CTES_OF(JOB)                                                                         \
    "j AS (SELECT id, COALESCE((SELECT max(e.at) FROM job_events e WHERE e.job_id = jobs.id"       \
    " AND e.to_state = 'PENDING'), '-infinity') AS queued FROM jobs WHERE id = " JOB "),"          \
    " acts AS (SELECT a.id, a.kind, a.state, a.spec, a.finished_at, " CLAIM_MINE("a.node_id")      \
    " AS mine FROM actions a, j WHERE a.job_id = j.id AND a.created_at > j.queued"                 \
    " AND a.state <> 'superseded'),"                                                               \
    " live AS (SELECT kind FROM acts WHERE mine AND (state = 'pending'"                            \
    " OR finished_at > now() - make_interval(secs => $3::float8))),"                               \
    " launch AS (SELECT id, mine, spec FROM acts"                                                  \
    " WHERE kind IN ('start', 'resize', 'migrate') ORDER BY id DESC LIMIT 1)"
#define CLAIM_RUNS                                                                                 \
    "(EXISTS (SELECT 1 FROM launch l WHERE l.mine"                                                 \
    " OR " CLAIM_MINE("(l.spec->'slots'->0->>'node_id')::bigint") ")"                              \
    " OR EXISTS (SELECT 1 FROM live WHERE kind <> 'exec'))"
#define CLAIM_HOSTS                                                                                \
    "(EXISTS (SELECT 1 FROM launch l, jsonb_array_elements(CASE WHEN jsonb_typeof("                \
    "l.spec->'slots') = 'array' THEN l.spec->'slots' ELSE '[]' END) s"                             \
    " WHERE " CLAIM_MINE("(s->>'node_id')::bigint") ")"                                            \
    " OR EXISTS (SELECT 1 FROM live)"                                                              \
    " OR EXISTS (SELECT 1 FROM allocations al WHERE al.job_id = $1"                                \
    " AND " CLAIM_MINE("al.node_id") "))"

#endif
