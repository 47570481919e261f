/* Upgrade (docs/operations.md, "Upgrades"): migrations go forward only, and a database of
 * each released schema is migrated by today's server with its data kept. The released
 * schemas are frozen in tests/integration/fixtures/ (schema-0.1.0.sql: the first packaged
 * release). The test's database is emptied, given that schema and a little of everything a
 * cluster of then held, and today's ringmasterd is started on it. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

TestSuite(upgrade, .init = hx_setup, .fini = hx_teardown, .timeout = 90);

#define ALICE "rm_" "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "no %s (the tests run from the repository's root)", path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    cr_assert_lt(n, sizeof(buf) - 1, "%s is larger than the test reads", path);
    buf[n] = '\0';
    return buf;
}

/* The database of a 0.1.0 cluster: alice, a node of two GPUs, a job that completed, one that
 * waits, their events, and a round of the scheduler of then (policy precompute). */
static void released_database(const char *fixture)
{
    cr_assert_eq(hx_stop_server(SIGTERM, 20), 0);
    hx_sql_do("DROP SCHEMA public CASCADE; CREATE SCHEMA public");
    hx_sql_do(read_text(fixture));
    hx_sql_do("INSERT INTO users (name, role, token_hash) VALUES ('alice', 'user',"
              " sha256(convert_to('" ALICE "', 'UTF8')))");
    hx_sql_do("INSERT INTO nodes (name, cpus, memory_bytes, state) VALUES ('old1', 8, 1, 'DOWN');"
              " INSERT INTO node_gpus (node_id, idx, model, memory_bytes) SELECT id, g, 'V100', 1"
              " FROM nodes, generate_series(0, 1) g");
    hx_sql_do("INSERT INTO jobs (user_id, name, command, gpus, min_gpus, max_gpus, state,"
              " submitted_at, finished_at) SELECT id, 'done', '[\"train\"]', 1, 1, 1,"
              " 'COMPLETED', now() - interval '1 hour', now() - interval '30 minutes'"
              " FROM users WHERE name = 'alice';"
              " INSERT INTO jobs (user_id, name, command, gpus, min_gpus, max_gpus, elastic)"
              " SELECT id, 'waits', '[\"train\", \"--big\"]', 2, 1, 4, true FROM users"
              " WHERE name = 'alice';"
              " INSERT INTO job_events (job_id, from_state, to_state, event, actor)"
              " SELECT id, NULL, 'PENDING', 'submit', 'alice' FROM jobs");
    hx_sql_do("INSERT INTO sched_rounds (policy, duration_us, jobs, decisions, actions)"
              " VALUES ('precompute', 120, 2, 0, 0)");
}

static json_t *alice_get(const char *path)
{
    return hx_expect_json(hx_json("GET", path, ALICE, NULL), 200);
}

Test(upgrade, a_database_of_release_0_1_0_migrates_forward_and_keeps_its_data)
{
    PGresult *r = hx_sql("SELECT count(*) FROM schema_migrations");
    char today[16];
    snprintf(today, sizeof(today), "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    released_database("tests/integration/fixtures/schema-0.1.0.sql");
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM schema_migrations"), 4, "0.1.0's four");

    hx_start_server(); /* today's: migrates forward, makes its first admin */
    r = hx_sql("SELECT count(*) FROM schema_migrations");
    cr_assert_str_eq(PQgetvalue(r, 0, 0), today, "every migration of today applied");
    PQclear(r);

    /* alice's token and jobs are kept, and answer with today's fields */
    json_t *j = alice_get("/api/v1/jobs?limit=10");
    json_t *items = json_object_get(j, "items");
    cr_assert_eq(json_array_size(items), 2);
    size_t i;
    json_t *job;
    int done = 0, waits = 0;
    json_array_foreach(items, i, job)
    {
        const char *name = json_string_value(json_object_get(job, "name"));
        const char *state = json_string_value(json_object_get(job, "state"));
        done += !strcmp(name, "done") && !strcmp(state, "COMPLETED") &&
                json_is_string(json_object_get(job, "finished_at"));
        waits += !strcmp(name, "waits") && !strcmp(state, "PENDING") &&
                 json_is_true(json_object_get(job, "elastic")) &&
                 json_integer_value(json_object_get(job, "max_gpus")) == 4;
        cr_assert(json_object_get(job, "progress") && json_is_null(json_object_get(job, "total_steps")),
                  "today's fields, null for a job of then");
    }
    cr_assert_eq(done, 1);
    cr_assert_eq(waits, 1);
    json_decref(j);

    /* the scheduler of then ran rounds under precompute: the upgrade keeps its policy
     * (sql/015), the old round is listed, today's settings have their defaults */
    j = alice_get("/api/v1/scheduler");
    cr_assert_str_eq(json_string_value(json_object_get(j, "policy")), "precompute");
    cr_assert_eq(json_number_value(json_object_get(j, "max_wait_s")), 3600);
    json_decref(j);
    j = alice_get("/api/v1/scheduler/rounds?limit=500");
    int old = 0;
    json_array_foreach(json_object_get(j, "items"), i, job)
        old += !strcmp(json_string_value(json_object_get(job, "policy")), "precompute") &&
               json_integer_value(json_object_get(job, "duration_us")) == 120;
    cr_assert_eq(old, 1, "the round of then is kept");
    json_decref(j);

    /* the node of then, its GPUs; the new tables work */
    j = alice_get("/api/v1/nodes");
    cr_assert_eq(json_array_size(json_object_get(j, "items")), 1);
    json_decref(j);
    j = alice_get("/api/v1/whatif");
    cr_assert_eq(json_array_size(json_object_get(j, "items")), 0);
    json_decref(j);
    hx_finish();
}
