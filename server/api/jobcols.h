/* jobcols: the columns a job is read with, shared by the job object's two writers (jobview's
 * jansson objects, jobtext's JSON text): the job's row (JOB_COLS of jobs j JOIN users u) and
 * their indexes, and the scheduler's view of it (JOBVIEW_SCHED_COLS, the allocation rows).
 * SQL text only. */
#ifndef RINGMASTER_API_JOBCOLS_H
#define RINGMASTER_API_JOBCOLS_H

/* A timestamp of the job's columns, in UTC as PostgreSQL writes a timestamp in the ISO
 * DateStyle (db_connect() asks for it): "2026-11-27 16:22:37.5". jobtext writes it as DB_TS()
 * does ("2026-11-27T16:22:37.500000Z"): to_char() took 30 % of the CPU of a page's statement. */
#define TS_UTC(col) col " AT TIME ZONE 'UTC'"
/* The columns with the user's name and the job's last reported step as given: JOB_COLS reads
 * them from users u and job_last_report; a statement that has just inserted the job knows
 * both (JOB_COLS_NEW). */
#define JOB_COLS_WITH(user, step)                                                                  \
    "j.id, " user ", j.state, j.name, j.command, j.env, j.model, j.gpus, j.min_gpus,"             \
    " j.max_gpus, j.elastic, j.priority, j.batch_per_gpu, " TS_UTC("j.submitted_at") ", "         \
    TS_UTC("j.updated_at") ", " TS_UTC("j.finished_at") ", j.plan_spec, j.current_plan,"           \
    " j.total_steps, j.epochs, j.stop_at_convergence, j.stop_at_loss, j.reported_total_steps,"     \
    " j.estimate_error, j.estimate_samples, j.estimate_source, " step ", j.array_id,"              \
    " j.array_index, j.batch_spec, j.current_batch, j.grad_sqr, j.grad_var, j.deps, j.topology, " \
    TS_UTC("j.deadline") ", j.checkpoint_step, " TS_UTC("j.checkpoint_at")
#define JOB_COLS                                                                                   \
    JOB_COLS_WITH("u.name", "(SELECT l.step FROM job_last_report l WHERE l.job_id = j.id)")
/* Where JOB_COLS read a stored job: its row and its user's. */
#define JOB_FROM " FROM jobs j JOIN users u ON u.id = j.user_id"
/* JOB_COLS of a job the statement inserts (jobs j): its user's name is user (an expression),
 * and it has reported nothing yet. */
#define JOB_COLS_NEW(user) JOB_COLS_WITH(user, "NULL::bigint")
enum {
    C_ID,
    C_USER,
    C_STATE,
    C_NAME,
    C_CMD,
    C_ENV,
    C_MODEL,
    C_GPUS,
    C_MIN,
    C_MAX,
    C_ELASTIC,
    C_PRIO,
    C_BATCH,
    C_SUBMITTED,
    C_UPDATED,
    C_FINISHED,
    C_PLAN_SPEC,
    C_CUR_PLAN,
    C_TOTAL_STEPS,
    C_EPOCHS,
    C_STOP_CONV,
    C_STOP_LOSS,
    C_REPORTED_TOTAL,
    C_EST_ERROR,
    C_EST_SAMPLES,
    C_EST_SOURCE,
    C_STEP,
    C_ARRAY_ID,
    C_ARRAY_INDEX,
    C_BATCH_SPEC,
    C_CUR_BATCH,
    C_GRAD_SQR,
    C_GRAD_VAR,
    C_DEPS,
    C_TOPOLOGY,
    C_DEADLINE,
    C_CKPT_STEP,
    C_CKPT_AT,
    C_NCOLS
};

/* The columns of the scheduler's view of a job (job_sched LEFT JOIN job_forecasts f), and of
 * its allocation (JOBVIEW_ALLOCS_SQL: one row per node, the GPUs' indexes as text "0 1 2").
 * One truth for when a job starts and ends: its predicted start and finish are the forecast's
 * P50 (null: unknown to it) once the forecast thread has made one for the job, the last
 * round's prediction only until then (docs/forecast.md). */
#define JOBVIEW_PREDICTED(fc, round)                                                               \
    TS_UTC("(CASE WHEN f.job_id IS NULL THEN job_sched." round " ELSE f." fc " END)")
#define JOBVIEW_SCHED_COLS                                                                         \
    "job_sched.job_id, pending_reason, queue_position, "                                           \
    JOBVIEW_PREDICTED("start_p50", "predicted_start") ", model::text, "                            \
    JOBVIEW_PREDICTED("finish_p50", "predicted_finish") ", remaining_source, "                     \
    "(model->'remaining')::text, " JOBVIEW_FORECAST_COL
#define JOBVIEW_SCHED_FROM                                                                         \
    " FROM job_sched LEFT JOIN job_forecasts f ON f.job_id = job_sched.job_id"
/* The job's forecast (job_forecasts, docs/forecast.md) as a JSON object text, RFC 3339 times
 * (null: unknown); SQL NULL when the forecast thread has made none. Its start only while the
 * job waits: a job that started since the last pass is not shown a start still to come. */
#define FC_TS(col) "to_char(f." col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
#define FC_START_TS(col)                                                                           \
    "CASE WHEN w.state = 'PENDING' THEN " FC_TS(col) " END"
#define JOBVIEW_FORECAST_COL                                                                       \
    "(SELECT json_build_object('start_p50', " FC_START_TS("start_p50") ", 'start_p90', "           \
    FC_START_TS("start_p90") ", 'finish_p50', " FC_TS("finish_p50") ", 'finish_p90', "             \
    FC_TS("finish_p90") ", 'as_of', " FC_TS("as_of") ")::text FROM jobs w"                         \
    " WHERE f.job_id IS NOT NULL AND w.id = f.job_id)"
enum {
    JS_JOB_ID,
    JS_REASON,
    JS_POSITION,
    JS_START,
    JS_MODEL,
    JS_FINISH,
    JS_SOURCE,
    JS_REMAINING,
    JS_FORECAST
};
enum { JA_JOB, JA_NODE, JA_GPUS, JA_COUNT };

#endif
