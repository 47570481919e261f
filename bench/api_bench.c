/* api-bench: load on a running ringmasterd over loopback.
 *
 *   api-bench --url URL --token-file F [--threads N] [--seconds S] [--conninfo CI]
 *             [--batches B] [--stored J]
 *
 * Phase 1, submissions: N threads POST jobs for S seconds, each answer a 201
 * (the server has committed the job before answering). Phase 2, listing: N
 * threads GET /api/v1/jobs?limit=50 for S seconds. Baselines measured in the
 * same run: GET /api/v1/health (the HTTP path without the job tables), and,
 * with --conninfo, single-row INSERT commits straight into PostgreSQL through
 * libpq from N connections (the durable-commit ceiling of that database).
 * Then the sweeps (issue 13): --batches B POSTs of /api/v1/jobs:batch with 1,000 jobs each
 * from one client (jobs per second, p50 per batch); with --conninfo the jobs table is filled
 * up to --stored J jobs (COMPLETED rows written straight into it, as a cluster's history
 * holds them), and one client GETs /api/v1/jobs?limit=1000 at random places of the table for
 * S seconds (the latency of one big page, p50 and p99).
 * With --server-pid and --pg-pid (ringmasterd and its cluster's postmaster), each phase also
 * prints the CPU time the server and the cluster's backends spent per request, from /proc:
 * on a machine shared with other work the rates swing with the load, the CPU a request costs
 * much less; and how much of the machine's CPU stayed idle (/proc/stat): a phase bound by
 * waiting rather than by the CPU shows it (docs/benchmarks-history.md, "Submissions that wait
 * aside, and rounds that take a quarter").
 * Prints one line per figure and the ratios. */
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64
#define MAX_SAMPLES 2000000

struct opts {
    const char *url;
    char token[256];
    int threads;
    double seconds;
    const char *conninfo;
    int batches;      /* --batches: POSTs of 1,000 jobs */
    long stored;      /* --stored: jobs in the table for the big pages */
    long long lo, hi; /* the ids of the table, for the big pages' cursors */
    long server_pid;  /* --server-pid, 0: no CPU figures */
    long pg_pid;      /* --pg-pid: the postmaster; its children are the backends */
};

enum phase { PHASE_SUBMIT, PHASE_LIST, PHASE_HEALTH, PHASE_PG, PHASE_BATCH, PHASE_BIG_LIST };

#define BATCH_JOBS 1000
#define BIG_PAGE 1000

struct worker {
    pthread_t tid;
    const struct opts *o;
    enum phase phase;
    int index;
    long ok, failed;
    double *lat; /* seconds per request */
    size_t nlat, cap;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t discard(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return size * n;
}

static void record(struct worker *w, double dt)
{
    if (w->nlat == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 4096;
        if (cap > MAX_SAMPLES)
            return;
        double *p = realloc(w->lat, cap * sizeof(*p));
        if (!p)
            return;
        w->lat = p;
        w->cap = cap;
    }
    w->lat[w->nlat++] = dt;
}

static void http_loop(struct worker *w)
{
    const struct opts *o = w->o;
    CURL *c = curl_easy_init();
    char auth[300], url[512], body[256];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", o->token);
    struct curl_slist *h = curl_slist_append(NULL, auth);
    h = curl_slist_append(h, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    const char *path = w->phase == PHASE_LIST     ? "/api/v1/jobs?limit=50"
                       : w->phase == PHASE_HEALTH ? "/api/v1/health"
                                                  : "/api/v1/jobs";
    snprintf(url, sizeof(url), "%s%s", o->url, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    long want = w->phase == PHASE_SUBMIT ? 201 : 200;
    double end = now_s() + o->seconds;
    for (long i = 0; now_s() < end; i++) {
        if (w->phase == PHASE_SUBMIT) {
            snprintf(body, sizeof(body),
                     "{\"name\":\"bench-%d-%ld\",\"command\":[\"true\"],\"gpus\":1}", w->index, i);
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        }
        double t0 = now_s();
        long code = 0;
        CURLcode rc = curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        double dt = now_s() - t0;
        if (rc == CURLE_OK && code == want) {
            w->ok++;
            record(w, dt);
        } else {
            w->failed++;
        }
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

static void pg_loop(struct worker *w)
{
    PGconn *conn = PQconnectdb(w->o->conninfo);
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "api-bench: %s", PQerrorMessage(conn));
        w->failed++;
        PQfinish(conn);
        return;
    }
    double end = now_s() + w->o->seconds;
    char name[64];
    for (long i = 0; now_s() < end; i++) {
        snprintf(name, sizeof(name), "pg-%d-%ld", w->index, i);
        const char *params[] = {name, "[\"true\"]"};
        double t0 = now_s();
        PGresult *r = PQexecParams(conn,
                                   "INSERT INTO bench_baseline (name, command, gpus, state) "
                                   "VALUES ($1, $2::jsonb, 1, 'PENDING')",
                                   2, NULL, params, NULL, NULL, 0);
        double dt = now_s() - t0;
        if (PQresultStatus(r) == PGRES_COMMAND_OK) {
            w->ok++;
            record(w, dt);
        } else {
            w->failed++;
        }
        PQclear(r);
    }
    PQfinish(conn);
}

/* One timed request of c (its URL and body set); records it when it answered want. */
static void timed_perform(struct worker *w, CURL *c, long want)
{
    long code = 0;
    double t0 = now_s();
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    double dt = now_s() - t0;
    if (rc == CURLE_OK && code == want) {
        w->ok++;
        record(w, dt);
    } else {
        w->failed++;
    }
}

static CURL *json_client(const struct opts *o, struct curl_slist **h)
{
    char auth[300];
    CURL *c = curl_easy_init();
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", o->token);
    *h = curl_slist_append(NULL, auth);
    *h = curl_slist_append(*h, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, *h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    return c;
}

/* --batches POSTs of BATCH_JOBS jobs each (a sweep), one after the other. */
static void batch_loop(struct worker *w)
{
    struct curl_slist *h;
    CURL *c = json_client(w->o, &h);
    size_t cap = BATCH_JOBS * 96 + 32, n = 0;
    char url[512], *body = malloc(cap);
    n += (size_t)snprintf(body + n, cap - n, "{\"jobs\":[");
    for (int i = 0; i < BATCH_JOBS; i++)
        n += (size_t)snprintf(body + n, cap - n,
                              "%s{\"name\":\"sweep-%d\",\"command\":[\"true\",\"--lr\",\"%d\"],"
                              "\"gpus\":1}",
                              i ? "," : "", i, i);
    snprintf(body + n, cap - n, "]}");
    snprintf(url, sizeof(url), "%s/api/v1/jobs:batch", w->o->url);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    for (int i = 0; i < w->o->batches; i++)
        timed_perform(w, c, 201);
    free(body);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

/* GET /api/v1/jobs?limit=BIG_PAGE&after=X for o->seconds, X drawn at random from the table's
 * ids so that each page is full. */
static void big_list_loop(struct worker *w)
{
    struct curl_slist *h;
    CURL *c = json_client(w->o, &h);
    unsigned seed = 12345u + (unsigned)w->index;
    long long span = w->o->hi - w->o->lo - BIG_PAGE;
    double end = now_s() + w->o->seconds;
    while (now_s() < end) {
        char url[512];
        long long after = w->o->lo + (span > 0 ? (long long)rand_r(&seed) % span : 0);
        snprintf(url, sizeof(url), "%s/api/v1/jobs?limit=%d&after=%lld", w->o->url, BIG_PAGE,
                 after);
        curl_easy_setopt(c, CURLOPT_URL, url);
        timed_perform(w, c, 200);
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    if (w->phase == PHASE_PG)
        pg_loop(w);
    else if (w->phase == PHASE_BATCH)
        batch_loop(w);
    else if (w->phase == PHASE_BIG_LIST)
        big_list_loop(w);
    else
        http_loop(w);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct result {
    double rate, p50_ms, p99_ms;
    long ok, failed;
    double server_cpu_s, pg_cpu_s; /* spent during the phase (with --server-pid, --pg-pid) */
    double idle;                   /* the machine's CPUs idle during the phase, 0..1 (-1: unknown) */
};

/* utime + stime of process pid in seconds (all its threads), with its children that it
 * waited for (cutime + cstime) when reaped; 0 when it cannot be read. */
static double proc_cpu_s(long pid, int reaped)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command may hold spaces; the fields follow it */
    unsigned long long ut = 0, st = 0, cut = 0, cst = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu", &ut,
                     &st, &cut, &cst) != 4)
        return 0;
    return (double)(ut + st + (reaped ? cut + cst : 0)) / (double)sysconf(_SC_CLK_TCK);
}

/* The CPU seconds of every child of pid (a postmaster's backends and helpers), those that
 * ended included (their time is added to pid's children's when it reaps them). */
static double children_cpu_s(long pid)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    double sum = 0;
    while (d && (e = readdir(d))) {
        char path[300], buf[512];
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = '\0';
        char *p = strrchr(buf, ')');
        long ppid = 0;
        if (p && sscanf(p + 2, "%*c %ld", &ppid) == 1 && ppid == pid)
            sum += proc_cpu_s(atol(e->d_name), 0);
    }
    if (d)
        closedir(d);
    return sum + proc_cpu_s(pid, 1) - proc_cpu_s(pid, 0);
}

/* The machine's CPU time so far, all and idle (idle and iowait), in /proc/stat's ticks;
 * 0 and 0 when it cannot be read. */
static void machine_ticks(unsigned long long *all, unsigned long long *idle)
{
    unsigned long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");
    int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                       &v[3], &v[4], &v[5], &v[6], &v[7])
              : 0;
    if (f)
        fclose(f);
    *all = 0;
    *idle = 0;
    if (n != 8)
        return;
    for (int i = 0; i < 8; i++)
        *all += v[i];
    *idle = v[3] + v[4];
}

static struct result run_phase(const struct opts *o, enum phase phase, int threads)
{
    struct worker ws[MAX_THREADS];
    memset(ws, 0, sizeof(ws));
    double cpu0 = o->server_pid ? proc_cpu_s(o->server_pid, 0) : 0;
    double pg0 = o->pg_pid ? children_cpu_s(o->pg_pid) : 0;
    unsigned long long all0, idle0, all1, idle1;
    machine_ticks(&all0, &idle0);
    double t0 = now_s();
    for (int i = 0; i < threads; i++) {
        ws[i] = (struct worker){.o = o, .phase = phase, .index = i};
        pthread_create(&ws[i].tid, NULL, worker_main, &ws[i]);
    }
    size_t total = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(ws[i].tid, NULL);
        total += ws[i].nlat;
    }
    double elapsed = now_s() - t0;
    struct result r = {0};
    r.server_cpu_s = o->server_pid ? proc_cpu_s(o->server_pid, 0) - cpu0 : 0;
    r.pg_cpu_s = o->pg_pid ? children_cpu_s(o->pg_pid) - pg0 : 0;
    machine_ticks(&all1, &idle1);
    r.idle = all1 > all0 ? (double)(idle1 - idle0) / (double)(all1 - all0) : -1;
    double *all = malloc((total ? total : 1) * sizeof(double));
    size_t n = 0;
    for (int i = 0; i < threads; i++) {
        r.ok += ws[i].ok;
        r.failed += ws[i].failed;
        if (all)
            memcpy(all + n, ws[i].lat, ws[i].nlat * sizeof(double));
        n += ws[i].nlat;
        free(ws[i].lat);
    }
    r.rate = (double)r.ok / elapsed;
    if (all && n) {
        qsort(all, n, sizeof(double), cmp_double);
        r.p50_ms = all[n / 2] * 1e3;
        r.p99_ms = all[(size_t)((double)(n - 1) * 0.99)] * 1e3;
    }
    free(all);
    return r;
}

static int prepare_baseline_table(const char *conninfo)
{
    PGconn *conn = PQconnectdb(conninfo);
    int ok = PQstatus(conn) == CONNECTION_OK;
    if (ok)
        PQclear(PQexec(conn, "SET client_min_messages = warning"));
    if (ok) {
        PGresult *r = PQexec(conn, "DROP TABLE IF EXISTS bench_baseline; "
                                   "CREATE TABLE bench_baseline (id bigserial PRIMARY KEY, "
                                   "name text NOT NULL, command jsonb NOT NULL, gpus int NOT NULL, "
                                   "state text NOT NULL, submitted_at timestamptz NOT NULL "
                                   "DEFAULT now())");
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok)
            fprintf(stderr, "api-bench: %s", PQresultErrorMessage(r));
        PQclear(r);
    } else {
        fprintf(stderr, "api-bench: %s", PQerrorMessage(conn));
    }
    PQfinish(conn);
    return ok ? 0 : -1;
}

static void drop_baseline_table(const char *conninfo)
{
    PGconn *conn = PQconnectdb(conninfo);
    if (PQstatus(conn) == CONNECTION_OK)
        PQclear(PQexec(conn, "DROP TABLE IF EXISTS bench_baseline"));
    PQfinish(conn);
}

/* One statement on conn; its first cell as a number (0 when none). Returns 0 or -1. */
static int pg_num(PGconn *conn, const char *sql, long long *v)
{
    PGresult *r = PQexec(conn, sql);
    int ok = PQresultStatus(r) == PGRES_TUPLES_OK || PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        fprintf(stderr, "api-bench: %s", PQresultErrorMessage(r));
    *v = ok && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0) ? strtoll(PQgetvalue(r, 0, 0), NULL, 10)
                                                          : 0;
    PQclear(r);
    return ok ? 0 : -1;
}

/* Fills the jobs table up to o->stored rows (COMPLETED jobs of the first admin, written
 * straight into the table), analyses it, and notes its ids in o->lo, o->hi. Returns 0 or -1. */
static int fill_jobs(struct opts *o)
{
    PGconn *conn = PQconnectdb(o->conninfo);
    long long have = 0, added = 0;
    char sql[1024];
    int rc = PQstatus(conn) == CONNECTION_OK ? pg_num(conn, "SELECT count(*) FROM jobs", &have)
                                             : -1;
    snprintf(sql, sizeof(sql),
             "WITH a AS (SELECT id FROM users WHERE role = 'admin' ORDER BY id LIMIT 1),"
             " ins AS (INSERT INTO jobs (user_id, name, command, gpus, min_gpus, max_gpus,"
             " state, finished_at) SELECT a.id, 'history-' || g, '[\"true\"]', 1 + g %% 8,"
             " 1 + g %% 8, 1 + g %% 8, 'COMPLETED', now() FROM a, generate_series(1, %lld) g"
             " RETURNING 1) SELECT count(*) FROM ins",
             o->stored > have ? o->stored - have : 0);
    if (rc == 0 && o->stored > have)
        rc = pg_num(conn, sql, &added);
    if (rc == 0)
        rc = pg_num(conn, "ANALYZE jobs", &added);
    if (rc == 0 && pg_num(conn, "SELECT min(id) FROM jobs", &o->lo) == 0)
        rc = pg_num(conn, "SELECT max(id) FROM jobs", &o->hi);
    if (PQstatus(conn) != CONNECTION_OK)
        fprintf(stderr, "api-bench: %s", PQerrorMessage(conn));
    PQfinish(conn);
    return rc;
}

/* CPU microseconds a request of r: the server's and the cluster's. */
static double cpu_us(const struct result *r)
{
    return r->ok ? (r->server_cpu_s + r->pg_cpu_s) * 1e6 / (double)r->ok : 0;
}

static void print_result(const char *what, const struct result *r)
{
    printf("%-34s %10.1f /s   p50 %7.2f ms   p99 %7.2f ms   (%ld ok, %ld failed)\n", what,
           r->rate, r->p50_ms, r->p99_ms, r->ok, r->failed);
    if (r->ok && (r->server_cpu_s > 0 || r->pg_cpu_s > 0))
        printf("%-34s CPU per request: ringmasterd %.0f us, PostgreSQL %.0f us; machine idle"
               " %.0f %%\n",
               "", r->server_cpu_s * 1e6 / (double)r->ok, r->pg_cpu_s * 1e6 / (double)r->ok,
               r->idle >= 0 ? r->idle * 100 : -1.0);
}

static int read_token(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f || !fgets(buf, (int)len, f)) {
        fprintf(stderr, "api-bench: cannot read token from %s: %s\n", path, strerror(errno));
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
    const char *token_file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return -1;
        if (!strcmp(argv[i], "--url"))
            o->url = v;
        else if (!strcmp(argv[i], "--token-file"))
            token_file = v;
        else if (!strcmp(argv[i], "--threads"))
            o->threads = atoi(v);
        else if (!strcmp(argv[i], "--seconds"))
            o->seconds = atof(v);
        else if (!strcmp(argv[i], "--conninfo"))
            o->conninfo = v;
        else if (!strcmp(argv[i], "--batches"))
            o->batches = atoi(v);
        else if (!strcmp(argv[i], "--stored"))
            o->stored = atol(v);
        else if (!strcmp(argv[i], "--server-pid"))
            o->server_pid = atol(v);
        else if (!strcmp(argv[i], "--pg-pid"))
            o->pg_pid = atol(v);
        else
            return -1;
        i++;
    }
    if (!o->url || !token_file || o->threads < 1 || o->threads > MAX_THREADS || o->seconds <= 0 ||
        o->batches < 0 || o->stored < 0)
        return -1;
    return read_token(token_file, o->token, sizeof(o->token));
}

int main(int argc, char **argv)
{
    struct opts o = {.threads = 8, .seconds = 5, .batches = 10, .stored = 100000};
    if (parse_args(argc, argv, &o) < 0) {
        fprintf(stderr, "usage: api-bench --url URL --token-file F [--threads 1..64] "
                        "[--seconds S] [--conninfo LIBPQ_CONNINFO] [--batches B (10)]"
                        " [--stored J (100000)] [--server-pid PID --pg-pid POSTMASTER]\n");
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    printf("api-bench: %d client threads, %.0f s per phase, %s\n", o.threads, o.seconds, o.url);
    struct result health = run_phase(&o, PHASE_HEALTH, o.threads);
    print_result("GET /api/v1/health (baseline)", &health);
    struct result submit = run_phase(&o, PHASE_SUBMIT, o.threads);
    print_result("POST /api/v1/jobs (durable)", &submit);
    struct result list = run_phase(&o, PHASE_LIST, o.threads);
    print_result("GET /api/v1/jobs?limit=50", &list);
    int rc = submit.failed || list.failed || health.failed ? 1 : 0;
    if (o.conninfo && prepare_baseline_table(o.conninfo) == 0) {
        struct result pg = run_phase(&o, PHASE_PG, o.threads);
        print_result("libpq INSERT commit (baseline)", &pg);
        drop_baseline_table(o.conninfo);
        if (pg.rate > 0)
            printf("ratio submissions / raw commits: %.2f\n", submit.rate / pg.rate);
        if (cpu_us(&submit) > 0 && cpu_us(&pg) > 0)
            printf("ratio CPU per raw commit / CPU per submission: %.2f\n",
                   cpu_us(&pg) / cpu_us(&submit));
    }
    if (list.p50_ms > 0 && health.p50_ms > 0)
        printf("ratio list p50 / health p50: %.2f\n", list.p50_ms / health.p50_ms);
    if (o.batches > 0) {
        struct result batch = run_phase(&o, PHASE_BATCH, 1);
        printf("POST /api/v1/jobs:batch, 1,000 jobs  %8.0f jobs/s   p50 %7.2f ms   p99 %7.2f ms"
               "   (%ld ok, %ld failed; 1 client)\n",
               batch.rate * BATCH_JOBS, batch.p50_ms, batch.p99_ms, batch.ok, batch.failed);
        rc |= batch.failed ? 1 : 0;
    }
    if (o.conninfo && o.stored > 0 && fill_jobs(&o) == 0) {
        struct result big = run_phase(&o, PHASE_BIG_LIST, 1);
        char what[64];
        snprintf(what, sizeof(what), "GET ?limit=1000 of %lld jobs", o.hi - o.lo + 1);
        print_result(what, &big);
        printf("(one client; big page p50 / health p50: %.1f)\n",
               health.p50_ms > 0 ? big.p50_ms / health.p50_ms : 0);
        rc |= big.failed ? 1 : 0;
    }
    curl_global_cleanup();
    return rc;
}
