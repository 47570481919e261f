/* When the database dies, ringmasterd brings it back (docs/operations.md, "When the database
 * dies"): kill -9 of the embedded postmaster under load, a fast stop and start of an outside
 * cluster, a network blip on the way to it (a TCP proxy that drops every connection and
 * refuses new ones for a while), and kill -9 of ringmasterd itself under load. Nothing answered 201 is lost, and a
 * retried Idempotency-Key makes no second job. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"
#include "pgcluster.h"

TestSuite(recovery, .timeout = 150);

#define EMBEDDED_BOUND_S 10.0 /* the embedded cluster is back and answering within this */
#define RETRY_INTERVAL_S 2.0  /* DB_RETRY_MAX_S of server/store/db.h */
#define MAX_IDS 20000

/* --- a client submitting jobs in a loop, on one keep-alive connection -------------------- */

struct loader {
    pthread_t tid;
    int no;              /* its number, in the jobs' names and keys */
    char token[128];     /* the admin's, copied: the harness rewrites hx.admin on a restart */
    int retry;           /* 1: retry a submission with its key until it is answered 201 */
    atomic_int stop;
    atomic_int acked;    /* submissions answered 201 (or 200: a retried key's job) */
    atomic_int replayed; /* of them, answered 200 */
    atomic_int refused;  /* 503 */
    atomic_int other;    /* any other status */
    _Atomic double mark; /* hx_now() from which answers are counted in acked_after */
    atomic_int acked_after;
    long long ids[MAX_IDS]; /* the ids answered, acked of them */
};

struct small_buf {
    char data[4096];
    size_t len;
};

static size_t keep_body(char *p, size_t size, size_t n, void *arg)
{
    struct small_buf *b = arg;
    size_t k = size * n;
    if (b->len + k < sizeof(b->data)) {
        memcpy(b->data + b->len, p, k);
        b->len += k;
        b->data[b->len] = '\0';
    }
    return k;
}

/* One POST /api/v1/jobs as job seq of loader l. Returns the status (0: no answer) and the
 * id when 201 or 200. */
static long submit_once(CURL *c, struct loader *l, int seq, long long *id)
{
    struct small_buf b = {.len = 0};
    char url[128], body[160], key[96], auth[200];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/v1/jobs", hx.port);
    snprintf(body, sizeof(body), "{\"name\":\"load-%d-%d\",\"command\":[\"true\"],\"gpus\":1}",
             l->no, seq);
    snprintf(key, sizeof(key), "Idempotency-Key: load-%d-%d", l->no, seq);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", l->token);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, key);
    h = curl_slist_append(h, auth);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    if (status == 201 || status == 200) {
        json_t *j = json_loads(b.data, 0, NULL);
        *id = json_integer_value(json_object_get(j, "id"));
        json_decref(j);
    }
    return status;
}

static void count(struct loader *l, long status, long long id, double sent)
{
    if ((status == 201 || status == 200) && id > 0 && atomic_load(&l->acked) < MAX_IDS) {
        l->ids[atomic_load(&l->acked)] = id;
        atomic_fetch_add(&l->acked, 1);
        if (status == 200)
            atomic_fetch_add(&l->replayed, 1);
        if (sent >= atomic_load(&l->mark))
            atomic_fetch_add(&l->acked_after, 1);
    } else if (status == 503) {
        atomic_fetch_add(&l->refused, 1);
    } else if (status != 0) {
        atomic_fetch_add(&l->other, 1);
    }
}

static void *load(void *arg)
{
    struct loader *l = arg;
    CURL *c = curl_easy_init();
    for (int seq = 0; !atomic_load(&l->stop);) {
        long long id = 0;
        double sent = hx_now();
        long status = submit_once(c, l, seq, &id);
        count(l, status, id, sent);
        int answered = status == 201 || status == 200;
        if (answered || !l->retry)
            seq++;
        if (!answered)
            usleep(20000);
    }
    curl_easy_cleanup(c);
    return NULL;
}

/* Starts n loaders numbered from first (a number names its jobs and keys). */
static void loaders_start(struct loader *ls, int n, int first, int retry)
{
    for (int i = 0; i < n; i++) {
        ls[i].no = first + i;
        ls[i].retry = retry;
        snprintf(ls[i].token, sizeof(ls[i].token), "%s", hx.admin);
        atomic_store(&ls[i].mark, 1e300);
        cr_assert_eq(pthread_create(&ls[i].tid, NULL, load, &ls[i]), 0);
    }
}

static void loaders_stop(struct loader *ls, int n)
{
    for (int i = 0; i < n; i++)
        atomic_store(&ls[i].stop, 1);
    for (int i = 0; i < n; i++)
        pthread_join(ls[i].tid, NULL);
}

/* Waits (bounded) until loader l has had a 201 for a request sent after its mark. Returns
 * the seconds from the mark, or -1 when none came within bound_s. */
static double wait_acked_after(struct loader *l, double bound_s)
{
    double mark = atomic_load(&l->mark);
    while (hx_now() < mark + bound_s) {
        if (atomic_load(&l->acked_after) > 0)
            return hx_now() - mark;
        usleep(20000);
    }
    return -1;
}

/* --- what the database holds ---------------------------------------------------------------- */

static char db_ci[1024]; /* the server's database, in every mode */

/* A connection to the server's database, tried for up to 10 s: after a kill -9 of the
 * postmaster its old backends may still answer the server's connections (a submission's 201)
 * while the postmaster is not yet back to take a new one (a fresh-clone run: "Connection
 * refused" right after "201 after 0.02 s"). */
static PGconn *db_connect(void)
{
    PGconn *c = PQconnectdb(db_ci);
    for (double end = hx_now() + 10; PQstatus(c) != CONNECTION_OK && hx_now() < end;) {
        PQfinish(c);
        usleep(100000);
        c = PQconnectdb(db_ci);
    }
    return c;
}

static PGresult *sql(const char *q)
{
    PGconn *c = db_connect();
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    PGresult *r = PQexec(c, q);
    cr_assert(PQresultStatus(r) == PGRES_TUPLES_OK, "%s: %s", q, PQresultErrorMessage(r));
    PQfinish(c);
    return r;
}

static long long sql_num(const char *q)
{
    PGresult *r = sql(q);
    long long v = PQntuples(r) ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : -1;
    PQclear(r);
    return v;
}

/* Every id a loader recorded is a job, and no name (one per logical submission) is two jobs. */
static void expect_acked_kept(struct loader *ls, int n)
{
    int total = 0;
    PGresult *r = sql("SELECT id FROM jobs");
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < atomic_load(&ls[i].acked); k++) {
            int found = 0;
            char want[32];
            snprintf(want, sizeof(want), "%lld", ls[i].ids[k]);
            for (int row = 0; row < PQntuples(r) && !found; row++)
                found = strcmp(PQgetvalue(r, row, 0), want) == 0;
            cr_assert(found, "job %s was answered 201 and is gone", want);
            total++;
        }
    }
    PQclear(r);
    cr_assert(total > 0, "no submission was answered 201");
    cr_assert_eq(sql_num("SELECT count(*) FROM (SELECT name FROM jobs GROUP BY name"
                         " HAVING count(*) > 1) d"),
                 0, "a retried Idempotency-Key made a second job");
}

/* No round is half-written: a round's row is made with duration 0 and completed in the
 * same transaction. */
static void expect_rounds_whole(void)
{
    cr_assert_eq(sql_num("SELECT count(*) FROM sched_rounds WHERE duration_us = 0"), 0,
                 "a round was half-applied");
}

/* The scheduler rounds again: a new round within bound_s. */
static void expect_new_round(double bound_s, const char *what)
{
    long long before = sql_num("SELECT coalesce(max(id), 0) FROM sched_rounds");
    if (what)
        PQclear(sql(what));
    double deadline = hx_now() + bound_s;
    while (sql_num("SELECT coalesce(max(id), 0) FROM sched_rounds") == before) {
        cr_assert(hx_now() < deadline, "no scheduler round within %.1f s after %s", bound_s,
                  what ? what : "recovery");
        usleep(50000);
    }
}

/* --- the embedded cluster ------------------------------------------------------------------ */

static char own_dir[128];       /* the state dir (embedded) or the outside cluster's dir */
static struct pgcluster *outside; /* the outside cluster, when the test made one */

static void own_cleanup(void)
{
    if (hx.pid > 0)
        hx_stop_server(SIGKILL, 5);
    char err[256];
    struct pgcluster *c = outside ? outside : pgcluster_create(own_dir, err, sizeof(err));
    if (c)
        pgcluster_stop(c);
    pgcluster_destroy(c);
    outside = NULL;
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", own_dir, hx.dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", own_dir);
}

static long postmaster_pid(const char *dir)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/pg/postmaster.pid", dir);
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (f && fscanf(f, "%ld", &pid) != 1)
        pid = 0;
    if (f)
        fclose(f);
    return pid;
}

/* The health answer's status ("ok", "recovering", ...) into out. */
static void health_status(char *out, size_t len)
{
    struct hx_resp *r = hx_json("GET", "/api/v1/health", NULL, NULL);
    const char *s = json_string_value(json_object_get(r->json, "status"));
    snprintf(out, len, "%s", s ? s : "?");
    hx_free(r);
}

Test(recovery, embedded_postmaster_kill_9_under_load, .fini = own_cleanup)
{
    memset(&hx, 0, sizeof(hx));
    snprintf(own_dir, sizeof(own_dir), "/tmp/rm-rec-XXXXXX");
    cr_assert_not_null(mkdtemp(own_dir));
    snprintf(hx.dir, sizeof(hx.dir), "%s", own_dir);
    hx.port = hx_free_port();
    hx_start_server();
    char err[256];
    struct pgcluster *c = pgcluster_create(own_dir, err, sizeof(err));
    cr_assert_not_null(c, "%s", err);
    snprintf(db_ci, sizeof(db_ci), "%s", pgcluster_conninfo(c));
    pgcluster_destroy(c);

    static struct loader l;
    memset(&l, 0, sizeof(l));
    loaders_start(&l, 1, 0, 0);
    while (atomic_load(&l.acked) < 5)
        usleep(20000);
    long pm = postmaster_pid(own_dir);
    cr_assert(pm > 0);
    double t0 = hx_now();
    cr_assert_eq(kill((pid_t)pm, SIGKILL), 0);
    char st[32] = "";
    int saw_recovering = 0;
    for (int i = 0; i < 40 && !saw_recovering; i++) {
        health_status(st, sizeof(st));
        saw_recovering = strcmp(st, "recovering") == 0;
        if (!saw_recovering)
            usleep(25000);
    }
    char during[32];
    snprintf(during, sizeof(during), "%s", st); /* checked after the recovery itself */
    /* Count from here: a request sent before the server saw the death may have passed. */
    atomic_store(&l.mark, hx_now());
    double seen = atomic_load(&l.mark) - t0;
    double took = wait_acked_after(&l, EMBEDDED_BOUND_S - seen);
    took = took < 0 ? -1 : took + seen;
    cr_log_info("embedded postmaster kill -9: submissions answered 201 again after %.2f s", took);
    fprintf(stderr, "recovery: embedded kill -9 -> 201 after %.2f s\n", took);
    cr_assert(took >= 0, "no submission answered 201 within %.0f s of kill -9 of the postmaster",
              EMBEDDED_BOUND_S);
    cr_assert(saw_recovering, "health never said recovering (last: %s)", during);
    expect_new_round(5, NULL);
    usleep(300000);
    loaders_stop(&l, 1);
    health_status(st, sizeof(st));
    cr_assert_str_eq(st, "ok");
    cr_assert(postmaster_pid(own_dir) != pm, "a new postmaster runs");
    expect_acked_kept(&l, 1);
    expect_rounds_whole();
    long now_pm = postmaster_pid(own_dir);
    hx_finish();
    cr_assert_eq(postmaster_pid(own_dir), 0, "SIGTERM stops the restarted cluster too");
    for (int i = 0; i < 100 && kill((pid_t)now_pm, 0) == 0; i++)
        usleep(50000);
    cr_assert(kill((pid_t)now_pm, 0) != 0, "the restarted postmaster is gone");
}

/* --- an outside cluster --------------------------------------------------------------------- */

/* A cluster of the test's own (the binary's shared one serves the other tests meanwhile),
 * and ringmasterd on it with --database-url. */
static void outside_setup(void)
{
    char err[512];
    memset(&hx, 0, sizeof(hx));
    snprintf(own_dir, sizeof(own_dir), "/tmp/rm-ext-XXXXXX");
    cr_assert_not_null(mkdtemp(own_dir));
    outside = pgcluster_create(own_dir, err, sizeof(err));
    cr_assert_not_null(outside, "%s", err);
    cr_assert_eq(pgcluster_start(outside, err, sizeof(err)), 0, "%s", err);
    snprintf(db_ci, sizeof(db_ci), "%s", pgcluster_conninfo(outside));
    snprintf(hx.conninfo, sizeof(hx.conninfo), "%s", db_ci);
    snprintf(hx.dir, sizeof(hx.dir), "/tmp/rm-srv-XXXXXX");
    cr_assert_not_null(mkdtemp(hx.dir));
    hx.port = hx_free_port();
    hx_start_server();
}

/* n threads, each submitting k jobs at once: every one must be answered 201. */
static void expect_all_submissions_pass(int n, int k)
{
    static struct loader ls[8];
    static int first = 100;
    memset(ls, 0, sizeof(ls));
    loaders_start(ls, n, first, 0);
    first += n;
    double deadline = hx_now() + 20;
    for (int i = 0; i < n; i++)
        while (atomic_load(&ls[i].acked) + atomic_load(&ls[i].refused) +
                       atomic_load(&ls[i].other) < k &&
               hx_now() < deadline)
            usleep(10000);
    loaders_stop(ls, n);
    for (int i = 0; i < n; i++)
        cr_assert(atomic_load(&ls[i].refused) == 0 && atomic_load(&ls[i].other) == 0,
                  "after recovery client %d had %d answers 503 and %d others", i,
                  atomic_load(&ls[i].refused), atomic_load(&ls[i].other));
}

Test(recovery, outside_cluster_fast_stop_and_start, .init = outside_setup, .fini = own_cleanup)
{
    char err[512];
    PQclear(sql("UPDATE scheduler_config SET interval_s = 3600, node_timeout_s = 86400"
                " RETURNING 1"));
    hx_submit(hx.admin, "before", 1);
    expect_all_submissions_pass(8, 3); /* every pooled connection in use once */
    cr_assert_eq(pgcluster_stop(outside), 0);
    hx_expect_problem(hx_json("GET", "/api/v1/jobs", hx.admin, NULL), 503, NULL);
    char during[32];
    health_status(during, sizeof(during)); /* checked after the recovery itself */
    sleep(3); /* long enough for the back-off to reach the retry interval */
    cr_assert_eq(pgcluster_start(outside, err, sizeof(err)), 0, "%s", err);
    double t0 = hx_now(), took = -1;
    while (took < 0 && hx_now() < t0 + 3 * RETRY_INTERVAL_S) {
        struct hx_resp *r = hx_json("GET", "/api/v1/health", NULL, NULL);
        if (r->status == 200)
            took = hx_now() - t0;
        hx_free(r);
        usleep(20000);
    }
    fprintf(stderr, "recovery: outside cluster start -> health 200 after %.2f s\n", took);
    cr_assert(took >= 0 && took <= RETRY_INTERVAL_S + 0.5,
              "not healthy within one retry interval (%.1f s) of the restart: %.2f s",
              RETRY_INTERVAL_S, took);
    usleep((useconds_t)(RETRY_INTERVAL_S * 1e6)); /* the LISTEN connection's own back-off */
    expect_new_round(2, "SELECT 1 FROM pg_notify('ringmaster_sched', 'test')");
    expect_all_submissions_pass(8, 3); /* no connection of before the restart is left */
    cr_assert_str_eq(during, "recovering", "health while the database was away");
    expect_rounds_whole();
    hx_finish();
}

/* --- kill -9 of ringmasterd itself ---------------------------------------------------------- */

static int total_acked(struct loader *ls, int n)
{
    int t = 0;
    for (int i = 0; i < n; i++)
        t += atomic_load(&ls[i].acked);
    return t;
}

/* Waits (bounded) until the loaders have had k more answers than at. */
static void wait_acked(struct loader *ls, int n, int at, int k)
{
    double deadline = hx_now() + 15;
    while (total_acked(ls, n) < at + k) {
        cr_assert(hx_now() < deadline, "no %d submissions answered within 15 s", k);
        usleep(10000);
    }
}

Test(recovery, kill_9_of_ringmasterd_under_load_loses_nothing, .init = hx_setup,
     .fini = hx_teardown)
{
    static struct loader ls[8];
    memset(ls, 0, sizeof(ls));
    snprintf(db_ci, sizeof(db_ci), "%s", hx.conninfo);
    loaders_start(ls, 8, 0, 1);
    for (int round = 0; round < 5; round++) {
        wait_acked(ls, 8, total_acked(ls, 8), 16);
        cr_assert_eq(hx_stop_server(SIGKILL, 10), 128 + SIGKILL);
        hx_start_server();
    }
    wait_acked(ls, 8, total_acked(ls, 8), 16);
    loaders_stop(ls, 8);
    int replayed = 0;
    for (int i = 0; i < 8; i++)
        replayed += atomic_load(&ls[i].replayed);
    fprintf(stderr, "recovery: 5 kills of ringmasterd, %d submissions answered, %d replayed\n",
            total_acked(ls, 8), replayed);
    expect_acked_kept(ls, 8);
    expect_rounds_whole();
    hx_finish();
}

/* --- a network blip, through a TCP proxy ---------------------------------------------------- */

#define MAX_PAIRS 64

/* Forwards loopback TCP connections to the outside cluster's unix socket; cut() drops every
 * connection and refuses new ones until mend(). */
struct proxy {
    int port;
    char upstream[100]; /* fits sun_path */
    pthread_t tid;
    atomic_int stop, cut;
    int lfd;
    int pair[MAX_PAIRS][2]; /* client side, server side; -1 when free */
};

static int proxy_listen(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 64) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void proxy_accept(struct proxy *p)
{
    int c = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC), s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", p->upstream);
    int i = 0;
    while (i < MAX_PAIRS && p->pair[i][0] >= 0)
        i++;
    if (c < 0 || i == MAX_PAIRS || connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(c);
        close(s);
        return;
    }
    p->pair[i][0] = c;
    p->pair[i][1] = s;
}

static void proxy_close(struct proxy *p, int i)
{
    close(p->pair[i][0]);
    close(p->pair[i][1]);
    p->pair[i][0] = p->pair[i][1] = -1;
}

/* Moves what fd of pair i has to the other side; closes the pair at the end of either. */
static void proxy_pump(struct proxy *p, int i, int side)
{
    char buf[16384];
    ssize_t n = read(p->pair[i][side], buf, sizeof(buf));
    for (ssize_t off = 0; n > 0 && off < n;) {
        ssize_t w = write(p->pair[i][!side], buf + off, (size_t)(n - off));
        if (w <= 0)
            n = 0;
        off += w > 0 ? w : 0;
    }
    if (n <= 0)
        proxy_close(p, i);
}

static void proxy_step(struct proxy *p)
{
    struct pollfd fds[1 + 2 * MAX_PAIRS];
    fds[0] = (struct pollfd){.fd = p->lfd, .events = POLLIN};
    for (int i = 0; i < MAX_PAIRS; i++)
        for (int side = 0; side < 2; side++)
            fds[1 + 2 * i + side] = (struct pollfd){.fd = p->pair[i][side], .events = POLLIN};
    if (poll(fds, 1 + 2 * MAX_PAIRS, 20) <= 0)
        return;
    if (fds[0].revents)
        proxy_accept(p);
    for (int i = 0; i < MAX_PAIRS; i++)
        for (int side = 0; side < 2; side++)
            if (p->pair[i][0] >= 0 && fds[1 + 2 * i + side].revents)
                proxy_pump(p, i, side);
}

static void *proxy_run(void *arg)
{
    struct proxy *p = arg;
    while (!atomic_load(&p->stop)) {
        if (atomic_load(&p->cut) && p->lfd >= 0) {
            for (int i = 0; i < MAX_PAIRS; i++)
                if (p->pair[i][0] >= 0)
                    proxy_close(p, i);
            close(p->lfd);
            p->lfd = -1;
        } else if (!atomic_load(&p->cut) && p->lfd < 0) {
            p->lfd = proxy_listen(p->port);
        }
        proxy_step(p);
    }
    for (int i = 0; i < MAX_PAIRS; i++)
        if (p->pair[i][0] >= 0)
            proxy_close(p, i);
    if (p->lfd >= 0)
        close(p->lfd);
    return NULL;
}

static struct proxy blip;

static void blip_cleanup(void)
{
    atomic_store(&blip.stop, 1);
    if (blip.tid)
        pthread_join(blip.tid, NULL);
    own_cleanup();
}

Test(recovery, outside_cluster_behind_a_network_blip, .fini = blip_cleanup)
{
    outside_setup(); /* ringmasterd on the socket; restarted below on the proxy */
    cr_assert_eq(hx_stop_server(SIGTERM, 20), 0);
    memset(&blip, 0, sizeof(blip));
    memset(blip.pair, -1, sizeof(blip.pair));
    snprintf(blip.upstream, sizeof(blip.upstream), "%s/.s.PGSQL.5432",
             pgcluster_datadir(outside));
    blip.port = hx_free_port();
    blip.lfd = proxy_listen(blip.port);
    cr_assert(blip.lfd >= 0);
    cr_assert_eq(pthread_create(&blip.tid, NULL, proxy_run, &blip), 0);
    snprintf(hx.conninfo, sizeof(hx.conninfo),
             "host=127.0.0.1 port=%d user=ringmaster dbname=ringmaster", blip.port);
    hx_start_server();
    expect_all_submissions_pass(8, 3);

    atomic_store(&blip.cut, 1); /* every connection dropped, new ones refused */
    usleep(100000);
    hx_expect_problem(hx_json("GET", "/api/v1/jobs", hx.admin, NULL), 503, NULL);
    char during[32];
    health_status(during, sizeof(during));
    sleep(3);
    atomic_store(&blip.cut, 0);
    double t0 = hx_now(), took = -1;
    while (took < 0 && hx_now() < t0 + 3 * RETRY_INTERVAL_S) {
        struct hx_resp *r = hx_json("GET", "/api/v1/health", NULL, NULL);
        if (r->status == 200)
            took = hx_now() - t0;
        hx_free(r);
        usleep(20000);
    }
    fprintf(stderr, "recovery: network blip mended -> health 200 after %.2f s\n", took);
    cr_assert(took >= 0 && took <= RETRY_INTERVAL_S + 0.5,
              "not healthy within one retry interval (%.1f s) of the network's return: %.2f s",
              RETRY_INTERVAL_S, took);
    usleep((useconds_t)(RETRY_INTERVAL_S * 1e6));
    expect_new_round(2, "SELECT 1 FROM pg_notify('ringmaster_sched', 'test')");
    expect_all_submissions_pass(8, 3);
    cr_assert_str_eq(during, "recovering", "health while the network was down");
    hx_finish();
}
