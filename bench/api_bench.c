/* api-bench: load on a running ringmasterd over loopback.
 *
 *   api-bench --url URL --token-file F [--threads N] [--seconds S] [--conninfo CI]
 *
 * Phase 1, submissions: N threads POST jobs for S seconds, each answer a 201
 * (the server has committed the job before answering). Phase 2, listing: N
 * threads GET /api/v1/jobs?limit=50 for S seconds. Baselines measured in the
 * same run: GET /api/v1/health (the HTTP path without the job tables), and,
 * with --conninfo, single-row INSERT commits straight into PostgreSQL through
 * libpq from N connections (the durable-commit ceiling of that database).
 * Prints one line per figure and the ratios. */
#include <curl/curl.h>
#include <errno.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 64
#define MAX_SAMPLES 2000000

struct opts {
    const char *url;
    char token[256];
    int threads;
    double seconds;
    const char *conninfo;
};

enum phase { PHASE_SUBMIT, PHASE_LIST, PHASE_HEALTH, PHASE_PG };

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

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    if (w->phase == PHASE_PG)
        pg_loop(w);
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
};

static struct result run_phase(const struct opts *o, enum phase phase)
{
    struct worker ws[MAX_THREADS];
    memset(ws, 0, sizeof(ws));
    double t0 = now_s();
    for (int i = 0; i < o->threads; i++) {
        ws[i] = (struct worker){.o = o, .phase = phase, .index = i};
        pthread_create(&ws[i].tid, NULL, worker_main, &ws[i]);
    }
    size_t total = 0;
    for (int i = 0; i < o->threads; i++) {
        pthread_join(ws[i].tid, NULL);
        total += ws[i].nlat;
    }
    double elapsed = now_s() - t0;
    struct result r = {0};
    double *all = malloc((total ? total : 1) * sizeof(double));
    size_t n = 0;
    for (int i = 0; i < o->threads; i++) {
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

static void print_result(const char *what, const struct result *r)
{
    printf("%-34s %10.1f /s   p50 %7.2f ms   p99 %7.2f ms   (%ld ok, %ld failed)\n", what,
           r->rate, r->p50_ms, r->p99_ms, r->ok, r->failed);
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
        else
            return -1;
        i++;
    }
    if (!o->url || !token_file || o->threads < 1 || o->threads > MAX_THREADS || o->seconds <= 0)
        return -1;
    return read_token(token_file, o->token, sizeof(o->token));
}

int main(int argc, char **argv)
{
    struct opts o = {.threads = 8, .seconds = 5};
    if (parse_args(argc, argv, &o) < 0) {
        fprintf(stderr, "usage: api-bench --url URL --token-file F [--threads 1..64] "
                        "[--seconds S] [--conninfo LIBPQ_CONNINFO]\n");
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    printf("api-bench: %d client threads, %.0f s per phase, %s\n", o.threads, o.seconds, o.url);
    struct result health = run_phase(&o, PHASE_HEALTH);
    print_result("GET /api/v1/health (baseline)", &health);
    struct result submit = run_phase(&o, PHASE_SUBMIT);
    print_result("POST /api/v1/jobs (durable)", &submit);
    struct result list = run_phase(&o, PHASE_LIST);
    print_result("GET /api/v1/jobs?limit=50", &list);
    int rc = submit.failed || list.failed || health.failed ? 1 : 0;
    if (o.conninfo && prepare_baseline_table(o.conninfo) == 0) {
        struct result pg = run_phase(&o, PHASE_PG);
        print_result("libpq INSERT commit (baseline)", &pg);
        drop_baseline_table(o.conninfo);
        if (pg.rate > 0)
            printf("ratio submissions / raw commits: %.2f\n", submit.rate / pg.rate);
    }
    if (list.p50_ms > 0 && health.p50_ms > 0)
        printf("ratio list p50 / health p50: %.2f\n", list.p50_ms / health.p50_ms);
    curl_global_cleanup();
    return rc;
}
