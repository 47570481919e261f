/* Lists of many jobs (issue 13 item 2): keyset paging over a list whose jobs change state
 * while it is read, with and without a state filter. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(paging, .init = hx_setup, .fini = hx_teardown, .timeout = 240);

enum { NJOBS = 600, PAGE = 37 };

/* The jobs, and the mover that changes their states in a fixed order while the test reads:
 * job order[k] is moved k-th (cancelled through the API, or completed as a worker's report
 * would, alternately); started counts the moves begun. */
struct mover {
    long long ids[NJOBS];
    int order[NJOBS];
    atomic_int started;
    atomic_bool stop;
};

static void *move(void *arg)
{
    struct mover *m = arg;
    for (int k = 0; k < NJOBS && !atomic_load(&m->stop); k++) {
        long long id = m->ids[m->order[k]];
        char path[96];
        atomic_fetch_add(&m->started, 1);
        if (k % 2) {
            snprintf(path, sizeof(path), "/api/v1/jobs/%lld/cancel", id);
            hx_free(hx_json("POST", path, hx.admin, NULL));
        } else {
            snprintf(path, sizeof(path),
                     "UPDATE jobs SET state = 'COMPLETED', updated_at = now(), finished_at = now()"
                     " WHERE id = %lld",
                     id);
            hx_sql_do(path);
        }
        usleep(2000);
    }
    return NULL;
}

/* Reads every page of the list (query: "" or "&state=S") into seen[] (ids, in order; *n of
 * them). Each page is limit=PAGE, the cursor its next. */
static void read_pages(const char *query, long long *seen, int cap, int *n)
{
    char path[256], cursor[32] = "";
    *n = 0;
    for (int page = 0; page < 10 * NJOBS / PAGE; page++) {
        snprintf(path, sizeof(path), "/api/v1/jobs?limit=%d%s%s%s", PAGE, query,
                 cursor[0] ? "&after=" : "", cursor);
        json_t *j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
        size_t i;
        json_t *it;
        json_array_foreach(json_object_get(j, "items"), i, it)
        {
            cr_assert_lt(*n, cap, "more jobs than stored: one came twice");
            seen[(*n)++] = json_integer_value(json_object_get(it, "id"));
        }
        const char *next = json_string_value(json_object_get(j, "next"));
        snprintf(cursor, sizeof(cursor), "%s", next ? next : "");
        json_decref(j);
        if (!cursor[0])
            return;
    }
    cr_assert_fail("the pages did not end");
}

static void submit_all(struct mover *m)
{
    size_t cap = NJOBS * 64 + 32, o = 0;
    char *body = malloc(cap);
    o += (size_t)snprintf(body + o, cap - o, "{\"jobs\":[");
    for (int i = 0; i < NJOBS; i++)
        o += (size_t)snprintf(body + o, cap - o,
                              "%s{\"name\":\"p%d\",\"command\":[\"t\"],\"gpus\":1}", i ? "," : "",
                              i);
    snprintf(body + o, cap - o, "]}");
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs:batch", hx.admin, body), 201);
    free(body);
    for (int i = 0; i < NJOBS; i++) {
        m->ids[i] = json_integer_value(json_object_get(json_array_get(json_object_get(j, "items"),
                                                                      (size_t)i),
                                                       "id"));
        m->order[i] = (i * 7) % NJOBS; /* 7 and 600 are coprime: a permutation */
    }
    json_decref(j);
}

static int index_of(const struct mover *m, long long id)
{
    for (int i = 0; i < NJOBS; i++)
        if (m->ids[i] == id)
            return i;
    return -1;
}

/* Without a filter, every pass sees every job exactly once, in id order, whatever moves. With
 * state=PENDING, no job comes twice, and every job still untouched when the pass ended is
 * there (those moved during it may or may not be: the filter reads each page as it is). */
Test(paging, no_job_lost_or_repeated_while_states_change)
{
    static struct mover m;
    static long long seen[NJOBS];
    submit_all(&m);
    pthread_t t;
    pthread_create(&t, NULL, move, &m);
    int passes = 0, moved_during = 0;
    while (atomic_load(&m.started) < NJOBS / 2 || passes < 2) {
        int before = atomic_load(&m.started), n;
        read_pages("", seen, NJOBS, &n);
        cr_assert_eq(n, NJOBS, "pass %d saw %d of %d jobs", passes, n, NJOBS);
        for (int i = 1; i < n; i++)
            cr_assert_gt(seen[i], seen[i - 1], "ids in order, none twice");
        for (int i = 0; i < NJOBS; i++)
            cr_assert_eq(seen[i], m.ids[i], "every job once");
        moved_during += atomic_load(&m.started) - before;
        read_pages("&state=PENDING", seen, NJOBS, &n);
        int after = atomic_load(&m.started);
        for (int i = 1; i < n; i++)
            cr_assert_gt(seen[i], seen[i - 1], "ids in order, none twice");
        char *hit = calloc(NJOBS, 1);
        for (int i = 0; i < n; i++) {
            int at = index_of(&m, seen[i]);
            cr_assert_geq(at, 0, "a job of the test");
            hit[at] = 1;
        }
        for (int k = after; k < NJOBS; k++)
            cr_assert(hit[m.order[k]], "untouched job %lld missing from the PENDING pages",
                      m.ids[m.order[k]]);
        free(hit);
        passes++;
    }
    atomic_store(&m.stop, true);
    pthread_join(t, NULL);
    cr_assert_gt(moved_during, 0, "states changed while the pages were read");
    printf("paging: %d passes of %d jobs by %d, %d moves during the unfiltered passes\n", passes,
           NJOBS, PAGE, moved_during);
    hx_finish();
}

/* One answer, one snapshot: a job's row and its allocation are read apart, and a round that
 * commits a resize between them showed the job RUNNING (before) on the GPUs it had just been
 * given (after); ringctl resize --wait then stopped before the worker's RUNNING. A writer
 * flips the job between (RUNNING, 1 GPU) and (RESIZING, 2 GPUs) in single transactions while
 * the job and the list are read: every answer must show one of the two. */
struct flipper {
    long long id, node;
    atomic_bool stop;
    atomic_int flips;
};

static void *flip(void *arg)
{
    struct flipper *f = arg;
    char sql[512];
    PGconn *c = PQconnectdb(hx.conninfo); /* one connection: a flip every few ms */
    for (int k = 0; PQstatus(c) == CONNECTION_OK && !atomic_load(&f->stop); k++) {
        int two = k % 2 == 0;
        snprintf(sql, sizeof(sql),
                 "BEGIN; UPDATE jobs SET state = '%s' WHERE id = %lld;"
                 " DELETE FROM allocations WHERE job_id = %lld;"
                 " INSERT INTO allocations (job_id, node_id, gpu_idx)"
                 " SELECT %lld, %lld, g FROM generate_series(0, %d) g; COMMIT",
                 two ? "RESIZING" : "RUNNING", f->id, f->id, f->id, f->node, two ? 1 : 0);
        PGresult *r = PQexec(c, sql);
        if (PQresultStatus(r) == PGRES_COMMAND_OK)
            atomic_fetch_add(&f->flips, 1);
        PQclear(r);
    }
    PQfinish(c);
    return NULL;
}

static void expect_consistent(json_t *job, int *seen_two)
{
    const char *state = json_string_value(json_object_get(job, "state"));
    json_int_t world = json_integer_value(json_object_get(job, "world_size"));
    cr_assert(state && ((!strcmp(state, "RUNNING") && world == 1) ||
                        (!strcmp(state, "RESIZING") && world == 2)),
              "state %s with %lld GPUs", state ? state : "?", (long long)world);
    *seen_two += world == 2;
}

Test(paging, a_job_and_its_allocation_come_from_one_snapshot)
{
    long long id = hx_submit(hx.admin, "torn", 1);
    hx_sql_do("INSERT INTO nodes (name, cpus, memory_bytes) VALUES ('snap-node', 4, 0)");
    long long node = (long long)hx_sql_num("SELECT id FROM nodes WHERE name = 'snap-node'");
    char sql[256];
    snprintf(sql, sizeof(sql),
             "INSERT INTO node_gpus (node_id, idx, model, memory_bytes)"
             " SELECT %lld, g, 'sim', 0 FROM generate_series(0, 1) g",
             node);
    hx_sql_do(sql);
    struct flipper f = {.id = id, .node = node};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, flip, &f), 0);
    while (atomic_load(&f.flips) < 2)
        usleep(1000);
    char path[96];
    int two = 0, reads = 0;
    for (; reads < 300; reads++) {
        if (reads % 2) {
            snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
            json_t *j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
            expect_consistent(j, &two);
            json_decref(j);
        } else {
            snprintf(path, sizeof(path), "/api/v1/jobs?name_prefix=torn");
            json_t *j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
            expect_consistent(json_array_get(json_object_get(j, "items"), 0), &two);
            json_decref(j);
        }
    }
    atomic_store(&f.stop, true);
    pthread_join(t, NULL);
    fprintf(stderr, "paging: %d reads over %d flips, %d at 2 GPUs\n", reads,
            atomic_load(&f.flips), two);
    cr_assert_gt(atomic_load(&f.flips), 10, "the writer flipped while the reads went on");
    cr_assert(two > 0 && two < reads, "both states were seen (%d of %d at 2 GPUs)", two, reads);
    hx_finish();
}
