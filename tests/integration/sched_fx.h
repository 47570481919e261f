/* sched_fx: what the suites of the live scheduler through the real server share (test_sched.c,
 * test_sched_write.c): nodes registered through the API (no worker), jobs submitted as the
 * admin, the test database read by SQL, and bounded waits for what the scheduler thread
 * writes. */
#ifndef RINGMASTER_TESTS_SCHED_FX_H
#define RINGMASTER_TESTS_SCHED_FX_H

#include <jansson.h>

/* How long a test waits for what must happen (each wait ends as soon as it has): a round
 * after a restart may come later than 8 s on a loaded machine (ASan, three programs at once). */
#define WAIT_S 20.0

#define ALLOC_SQL "SELECT count(*) FROM allocations WHERE job_id = %lld"

/* The first cell of query fmt (one %lld, arg) on the test's database, as a number (-1 for
 * NULL). */
double sx_sql_num(const char *fmt, long long arg);

/* The first cell as JSON (new), or NULL. */
json_t *sx_sql_json(const char *fmt, long long arg);

/* Waits (bounded by WAIT_S) until the query's number equals want, or is at least least;
 * returns the last value. */
double sx_wait_num(const char *fmt, long long arg, double want);
double sx_wait_min(const char *fmt, long long arg, double least);

/* A node of ngpus simulated GPUs registered through the API; its id. */
long long sx_register_node(const char *name, int ngpus);

/* A job submitted by the admin (body: its JSON); its id. */
long long sx_submit(const char *body);

/* GET /api/v1/jobs/{id} (new). */
json_t *sx_get_job(long long id);

/* PUT /api/v1/scheduler with body. */
void sx_put_scheduler(const char *body);

/* What a worker would report: the job's ranks run (its state set by SQL, no event). */
void sx_mark_running(long long id);

#endif
