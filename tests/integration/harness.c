/* harness: the integration tests' real PostgreSQL (one cluster per binary, a template
 * database), a fresh ringmasterd per test on a free port, and HTTP helpers. */
#include "harness.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pgcluster.h"

#ifndef RINGMASTERD_PATH
#define RINGMASTERD_PATH "build/ringmasterd"
#endif
#define ENV_PGDIR "RINGMASTER_HX_PGDIR"
#define ENV_TEMPLATE "RINGMASTER_HX_TEMPLATE"
#define ENV_PGCACHE "RINGMASTER_HX_PGCACHE"
/* The database every test's own is copied from: migrated once per test binary. */
#define TEMPLATE_DB "rm_template"

struct hx_server hx;

/* --- the cluster, in Criterion's runner process ----------------------------------------- */

static char cluster_dir[128];
static struct pgcluster *cluster;

static void rm_rf(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "harness: could not remove %s\n", dir);
}

static void cluster_down(void)
{
    if (!cluster)
        return;
    pgcluster_stop(cluster);
    pgcluster_destroy(cluster);
    cluster = NULL;
    rm_rf(cluster_dir);
}

static void on_signal(int sig)
{
    cluster_down();
    signal(sig, SIG_DFL);
    raise(sig);
}

static const char *server_bin(void)
{
    return getenv("RINGMASTERD") ? getenv("RINGMASTERD") : RINGMASTERD_PATH;
}

/* The template database: made once, migrated once by the server under test
 * (ringmasterd --migrate-only), then left alone (CREATE DATABASE ... TEMPLATE needs it
 * without connections). A test's database is a copy of it, the schema of today already in
 * place, so that its server applies no migration at start (~0.4 s each under ASan); the
 * admin and everything else a server makes at its first start are still made per test. The
 * tests of migrations themselves (upgrade, sched's sql/015 replay) put an older schema back
 * and start today's server on it; the embedded-mode tests migrate an empty cluster.
 * c runs in dir. Returns 0, or -1 with text in err. */
static int make_template(struct pgcluster *c, const char *dir, char *err, size_t errlen)
{
    char ci[1024], log[300], state[300];
    if (pgcluster_conninfo_db(c, "postgres", ci, sizeof(ci)) < 0) {
        snprintf(err, errlen, "conninfo too long");
        return -1;
    }
    PGconn *conn = PQconnectdb(ci);
    PGresult *r = PQexec(conn, "CREATE DATABASE " TEMPLATE_DB);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    snprintf(err, errlen, "CREATE DATABASE " TEMPLATE_DB ": %s", PQerrorMessage(conn));
    PQclear(r);
    PQfinish(conn);
    if (!ok || pgcluster_conninfo_db(c, TEMPLATE_DB, ci, sizeof(ci)) < 0)
        return -1;
    snprintf(log, sizeof(log), "%s/template.log", dir);
    snprintf(state, sizeof(state), "%s/template-state", dir);
    const char *argv[] = {server_bin(), "--migrate-only", "--database-url", ci,
                          "--state-dir", state, NULL};
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(fd, STDERR_FILENO);
        dup2(fd, STDOUT_FILENO);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    pid_t done = 0;
    for (int i = 0; i < 1200 && (done = waitpid(pid, &status, WNOHANG)) == 0; i++)
        usleep(50000); /* 60 s at most */
    if (done == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char cmd[400];
        snprintf(cmd, sizeof(cmd), "tail -n 20 '%s' >&2", log);
        if (system(cmd) != 0)
            fprintf(stderr, "harness: no %s\n", log);
        snprintf(err, errlen, "ringmasterd --migrate-only on " TEMPLATE_DB " failed (status %d)",
                 status);
        return -1;
    }
    return 0;
}

/* With RINGMASTER_HX_PGCACHE (tests/run-tests.sh sets it to a folder of the run's own), the
 * first binary of the run makes a cluster there, the template database included, and stops
 * it, under a lock; every binary copies that data directory into its own folder and starts
 * the copy, instead of running initdb and the migrations itself (~5 s each on a loaded
 * 2-core machine; the run has 17 such binaries). Each still has a cluster of its own. Returns
 * 1 when dir/pg is such a copy, 0 when there is no cache or it failed (the caller then makes
 * its cluster itself, as without one). */
static int copy_cached_cluster(const char *dir)
{
    const char *cache = getenv(ENV_PGCACHE);
    char path[300], err[1024], cmd[800];
    if (!cache || !*cache || strlen(cache) > 200 || strchr(cache, '\''))
        return 0;
    snprintf(path, sizeof(path), "%s/lock", cache);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX) < 0) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    snprintf(path, sizeof(path), "%s/ready", cache);
    int ready = access(path, F_OK) == 0;
    if (!ready) {
        char made[300];
        snprintf(made, sizeof(made), "%s/cluster", cache);
        /* Reachable by PostgreSQL's user when root runs it (cache's parents too), so that
         * the data directory is made in place, not linked elsewhere, and can be copied. */
        chmod(cache, 0755);
        struct pgcluster *c = NULL;
        struct stat st;
        char pg[320];
        snprintf(pg, sizeof(pg), "%s/pg", made);
        if ((mkdir(made, 0755) == 0 || errno == EEXIST) &&
            (c = pgcluster_create(made, err, sizeof(err))) &&
            pgcluster_start(c, err, sizeof(err)) == 0 &&
            make_template(c, made, err, sizeof(err)) == 0 && pgcluster_stop(c) == 0 &&
            (lstat(pg, &st) == 0 && S_ISDIR(st.st_mode))) {
            FILE *f = fopen(path, "w");
            ready = f != NULL;
            if (f)
                fclose(f);
        } else {
            fprintf(stderr, "harness: no cached cluster in %s: %s\n", made,
                    c ? err : "not made");
            if (c)
                pgcluster_stop(c);
        }
        pgcluster_destroy(c);
    }
    flock(fd, LOCK_UN);
    close(fd);
    if (!ready)
        return 0;
    snprintf(cmd, sizeof(cmd), "cp -a '%s/cluster/pg' '%s/pg'", cache, dir);
    if (system(cmd) == 0)
        return 1;
    fprintf(stderr, "harness: %s failed; a cluster of our own\n", cmd);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s/pg'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "harness: %s failed\n", cmd);
    return 0;
}

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    char err[1024];
    (void)set;
    snprintf(cluster_dir, sizeof(cluster_dir), "/tmp/rm-it-XXXXXX");
    if (!mkdtemp(cluster_dir) || chmod(cluster_dir, 0755) < 0) {
        fprintf(stderr, "harness: mkdtemp: %s\n", strerror(errno));
        return;
    }
    int copied = copy_cached_cluster(cluster_dir);
    cluster = pgcluster_create(cluster_dir, err, sizeof(err));
    if (!cluster || pgcluster_start(cluster, err, sizeof(err)) < 0) {
        fprintf(stderr, "harness: PostgreSQL: %s\n", err);
        cluster_down();
        return;
    }
    atexit(cluster_down);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    setenv(ENV_PGDIR, cluster_dir, 1);
    if (copied)
        setenv(ENV_TEMPLATE, TEMPLATE_DB, 1);
    else if (make_template(cluster, cluster_dir, err, sizeof(err)) < 0)
        fprintf(stderr, "harness: template database: %s\n", err);
    else
        setenv(ENV_TEMPLATE, TEMPLATE_DB, 1);
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    (void)stats;
    cluster_down();
}

/* --- one database and one server per test ------------------------------------------------ */

static void admin_conninfo(char *buf, size_t len)
{
    const char *dir = getenv(ENV_PGDIR);
    char err[512];
    cr_assert_not_null(dir, "no test cluster (see the runner's first lines)");
    struct pgcluster *c = pgcluster_create(dir, err, sizeof(err));
    cr_assert_not_null(c, "%s", err);
    cr_assert_eq(pgcluster_conninfo_db(c, "postgres", buf, len), 0);
    cr_assert_eq(pgcluster_conninfo_db(c, hx.dbname, hx.conninfo, sizeof(hx.conninfo)), 0);
    pgcluster_destroy(c);
}

/* Runs sql, retrying a few times (CREATE DATABASE can meet a concurrent one). */
static int run_admin_sql(const char *sql, char *err, size_t errlen)
{
    char ci[1024];
    admin_conninfo(ci, sizeof(ci));
    PGconn *conn = PQconnectdb(ci);
    cr_assert_eq(PQstatus(conn), CONNECTION_OK, "%s", PQerrorMessage(conn));
    int ok = 0;
    for (int attempt = 0; attempt < 5 && !ok; attempt++) {
        PGresult *r = PQexec(conn, sql);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        snprintf(err, errlen, "%s", PQresultErrorMessage(r));
        PQclear(r);
        if (!ok)
            usleep(200000);
    }
    PQfinish(conn);
    return ok ? 0 : -1;
}

void hx_admin_sql(const char *sql)
{
    char err[512];
    cr_assert_eq(run_admin_sql(sql, err, sizeof(err)), 0, "%s: %s", sql, err);
}

int hx_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
                  getsockname(fd, (struct sockaddr *)&a, &len) == 0,
              "no free port");
    close(fd);
    return ntohs(a.sin_port);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

void hx_setup(void)
{
    char sql[128], www[300];
    memset(&hx, 0, sizeof(hx));
    snprintf(hx.dir, sizeof(hx.dir), "/tmp/rm-srv-XXXXXX");
    cr_assert_not_null(mkdtemp(hx.dir));
    snprintf(www, sizeof(www), "%s/www", hx.dir);
    cr_assert_eq(mkdir(www, 0755), 0);
    snprintf(www, sizeof(www), "%s/www/index.html", hx.dir);
    write_file(www, "<!doctype html><title>Ringmaster</title>\n");
    snprintf(hx.dbname, sizeof(hx.dbname), "rm_test_%d", (int)getpid());
    const char *tmpl = getenv(ENV_TEMPLATE);
    cr_assert_not_null(tmpl, "no template database (see the runner's first lines)");
    snprintf(sql, sizeof(sql), "CREATE DATABASE %s TEMPLATE %s", hx.dbname, tmpl);
    hx_admin_sql(sql);
    hx.port = hx_free_port();
    hx_start_server();
}

static void dump_server_log(void)
{
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "tail -n 30 '%s/server.log' >&2", hx.dir);
    if (system(cmd) != 0)
        fprintf(stderr, "harness: no server log\n");
}

void hx_finish(void)
{
    cr_assert(hx.pid > 0, "no server running");
    int rc = hx_stop_server(SIGTERM, 20);
    if (rc != 0)
        dump_server_log();
    cr_assert_eq(rc, 0, "ringmasterd exited with %d on SIGTERM", rc);
}

void hx_teardown(void)
{
    if (hx.pid > 0 && hx_stop_server(SIGTERM, 20) != 0)
        dump_server_log();
    rm_rf(hx.dir);
}

double hx_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

PGresult *hx_sql(const char *sql)
{
    PGconn *c = PQconnectdb(hx.conninfo);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    cr_assert(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s: %s", sql,
              PQresultErrorMessage(r));
    PQfinish(c);
    return r;
}

void hx_sql_do(const char *sql)
{
    PQclear(hx_sql(sql));
}

double hx_sql_num(const char *sql)
{
    PGresult *r = hx_sql(sql);
    double v = PQntuples(r) > 0 && !PQgetisnull(r, 0, 0) ? strtod(PQgetvalue(r, 0, 0), NULL) : -1;
    PQclear(r);
    return v;
}

const char *hx_server_args[8];

static pid_t spawn_server(void)
{
    char listen[64], www[300], log[300];
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", hx.port);
    snprintf(www, sizeof(www), "%s/www", hx.dir);
    snprintf(log, sizeof(log), "%s/server.log", hx.dir);
    const char *bin = server_bin();
    const char *argv[16] = {bin, "--listen", listen, "--state-dir", hx.dir, "--www-dir", www};
    int argc = 7;
    if (hx.conninfo[0]) {
        argv[argc++] = "--database-url";
        argv[argc++] = hx.conninfo;
    }
    for (int i = 0; hx_server_args[i] && argc < 15; i++)
        argv[argc++] = hx_server_args[i];
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(fd, STDERR_FILENO);
        dup2(fd, STDOUT_FILENO);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static void read_admin_token(void)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/admin.token", hx.dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "no %s", path);
    cr_assert_not_null(fgets(hx.admin, sizeof(hx.admin), f));
    fclose(f);
    hx.admin[strcspn(hx.admin, "\n")] = '\0';
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "admin.token has mode %o", st.st_mode & 0777);
}

/* 1 when GET /api/v1/health answers 200. */
static int healthy(void)
{
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/v1/health", hx.port);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 1000L);
    curl_easy_setopt(c, CURLOPT_NOBODY, 0L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fwrite);
    FILE *null = fopen("/dev/null", "w");
    curl_easy_setopt(c, CURLOPT_WRITEDATA, null);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    fclose(null);
    return status == 200;
}

/* Waits for health. Returns 0, or -1 when the server exited (status in *status). */
static int wait_healthy(int *status)
{
    double deadline = hx_now() + 60;
    while (!healthy()) {
        if (waitpid(hx.pid, status, WNOHANG) != 0) {
            hx.pid = 0;
            return -1;
        }
        cr_assert(hx_now() < deadline, "ringmasterd not healthy within 60 s");
        usleep(50000);
    }
    return 0;
}

void hx_start_server(void)
{
    int status = 0;
    /* The free port may be taken between the probe and the server's bind: try others. */
    for (int attempt = 0; attempt < 3; attempt++) {
        hx.pid = spawn_server();
        if (wait_healthy(&status) == 0) {
            read_admin_token();
            return;
        }
        hx.port = hx_free_port();
    }
    dump_server_log();
    cr_assert_fail("ringmasterd exited at start with status %d (%s)", status, hx.dir);
}

int hx_stop_server(int sig, double timeout_s)
{
    int status = 0;
    kill(hx.pid, sig);
    double deadline = hx_now() + timeout_s;
    while (waitpid(hx.pid, &status, WNOHANG) == 0) {
        if (hx_now() > deadline) {
            kill(hx.pid, SIGKILL);
            waitpid(hx.pid, &status, 0);
            hx.pid = 0;
            return -1;
        }
        usleep(20000);
    }
    hx.pid = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* --- HTTP ------------------------------------------------------------------------------------ */

struct buf {
    char *data;
    size_t len;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct buf *b = arg;
    char *d = realloc(b->data, b->len + size * n + 1);
    if (!d)
        return 0;
    memcpy(d + b->len, p, size * n);
    b->len += size * n;
    d[b->len] = '\0';
    b->data = d;
    return size * n;
}

static void copy_header_value(char *dst, size_t dlen, const char *line, size_t n, size_t skip)
{
    size_t v = skip;
    while (v < n && line[v] == ' ')
        v++;
    size_t end = n;
    while (end > v && (line[end - 1] == '\r' || line[end - 1] == '\n'))
        end--;
    snprintf(dst, dlen, "%.*s", (int)(end - v), line + v);
}

const char *hx_source;

const char *hx_header(const struct hx_resp *r, const char *name, char *buf, size_t len)
{
    size_t n = strlen(name);
    for (const char *l = r->headers; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0)) {
        if (strncasecmp(l, name, n) == 0 && l[n] == ':') {
            copy_header_value(buf, len, l, strcspn(l, "\n"), n + 1);
            return buf;
        }
    }
    return NULL;
}

static size_t on_header(char *line, size_t size, size_t n, void *arg)
{
    struct hx_resp *r = arg;
    size_t len = size * n;
    size_t have = strlen(r->headers);
    if (have + len < sizeof(r->headers)) {
        memcpy(r->headers + have, line, len);
        r->headers[have + len] = '\0';
    }
    if (len > 13 && strncasecmp(line, "Content-Type:", 13) == 0)
        copy_header_value(r->content_type, sizeof(r->content_type), line, len, 13);
    if (len > 6 && strncasecmp(line, "Allow:", 6) == 0)
        copy_header_value(r->allow, sizeof(r->allow), line, len, 6);
    return len;
}

struct upload {
    const char *data;
    size_t len, off;
};

static size_t on_read(char *p, size_t size, size_t n, void *arg)
{
    struct upload *u = arg;
    size_t k = u->len - u->off < size * n ? u->len - u->off : size * n;
    memcpy(p, u->data + u->off, k);
    u->off += k;
    return k;
}

static struct curl_slist *headers_for(const char *token, const char *content_type,
                                      const char *extra_header, int chunked)
{
    char line[512];
    struct curl_slist *h = NULL;
    if (token) {
        snprintf(line, sizeof(line), "Authorization: Bearer %s", token);
        h = curl_slist_append(h, line);
    }
    snprintf(line, sizeof(line), "Content-Type:%s%s", content_type ? " " : "",
             content_type ? content_type : "");
    h = curl_slist_append(h, line);
    if (chunked)
        h = curl_slist_append(h, "Transfer-Encoding: chunked");
    if (extra_header)
        h = curl_slist_append(h, extra_header);
    return h;
}

struct hx_resp *hx_call(const char *method, const char *path, const char *token,
                        const char *content_type, const char *body, size_t len,
                        const char *extra_header)
{
    struct hx_resp *r = calloc(1, sizeof(*r));
    struct buf b = {NULL, 0};
    struct upload up = {body, len == (size_t)-1 && body ? strlen(body) : len, 0};
    size_t ulen = strlen(path) + 64;
    char *url = malloc(ulen);
    snprintf(url, ulen, "http://127.0.0.1:%d%s", hx.port, path);
    CURL *c = curl_easy_init();
    struct curl_slist *h = headers_for(token, content_type, extra_header, len == (size_t)-1);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    if (hx_source)
        curl_easy_setopt(c, CURLOPT_INTERFACE, hx_source);
    if (body) {
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(c, CURLOPT_READDATA, &up);
        if (len != (size_t)-1)
            curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
    }
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    free(url);
    cr_assert(rc == CURLE_OK || r->status != 0, "%s %s: %s", method, path, curl_easy_strerror(rc));
    r->body = b.data ? b.data : strdup("");
    r->json = json_loads(r->body, 0, NULL);
    return r;
}

struct hx_resp *hx_json(const char *method, const char *path, const char *token, const char *body)
{
    return hx_call(method, path, token, body ? "application/json" : NULL, body,
                   body ? strlen(body) : 0, NULL);
}

void hx_free(struct hx_resp *r)
{
    if (!r)
        return;
    json_decref(r->json);
    free(r->body);
    free(r);
}

json_t *hx_expect_json(struct hx_resp *r, long status)
{
    cr_assert_eq(r->status, status, "want %ld, got %ld: %s", status, r->status, r->body);
    cr_assert_not_null(r->json, "not JSON: %s", r->body);
    cr_assert_str_eq(r->content_type, "application/json", "%s", r->body);
    json_t *j = json_incref(r->json);
    hx_free(r);
    return j;
}

static int names_field(const json_t *p, const char *field)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(p, "errors"), i, e)
    {
        const char *f = json_string_value(json_object_get(e, "field"));
        if (f && strcmp(f, field) == 0)
            return 1;
    }
    const char *detail = json_string_value(json_object_get(p, "detail"));
    return detail && strstr(detail, field) != NULL;
}

void hx_expect_problem(struct hx_resp *r, long status, const char *field)
{
    cr_assert_eq(r->status, status, "want %ld, got %ld: %s", status, r->status, r->body);
    cr_assert_str_eq(r->content_type, "application/problem+json", "%s", r->body);
    cr_assert_not_null(r->json, "problem not JSON: %s", r->body);
    cr_assert_eq(json_integer_value(json_object_get(r->json, "status")), status);
    cr_assert(json_is_string(json_object_get(r->json, "title")));
    cr_assert(json_is_string(json_object_get(r->json, "type")));
    cr_assert(json_is_string(json_object_get(r->json, "detail")));
    if (field)
        cr_assert(names_field(r->json, field), "problem does not name %s: %s", field, r->body);
    hx_free(r);
}

long long hx_submit(const char *token, const char *name, int gpus)
{
    json_t *b = json_pack("{s:s, s:[s], s:i}", "name", name, "command", "true", "gpus", gpus);
    char *text = json_dumps(b, JSON_COMPACT);
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs", token, text), 201);
    long long id = json_integer_value(json_object_get(j, "id"));
    cr_assert(id > 0);
    cr_assert_str_eq(json_string_value(json_object_get(j, "state")), "PENDING");
    json_decref(j);
    json_decref(b);
    free(text);
    return id;
}

void hx_user(const char *name, const char *role, char *token)
{
    char body[256];
    snprintf(body, sizeof(body), "{\"name\":\"%s\",\"role\":\"%s\"}", name, role);
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/users", hx.admin, body), 201);
    const char *t = json_string_value(json_object_get(j, "token"));
    cr_assert_not_null(t);
    snprintf(token, 128, "%s", t);
    json_decref(j);
}

char *hx_all_jobs(const char *token)
{
    json_t *all = json_array();
    static const char *const derived[] = {"forecast",         "deadline_forecast",
                                           "predicted_start",  "predicted_finish",
                                           "queue_position",   "pending_reason"};
    char path[256] = "/api/v1/jobs?limit=500";
    for (int page = 0; page < 100; page++) {
        json_t *j = hx_expect_json(hx_json("GET", path, token, NULL), 200);
        size_t i;
        json_t *item;
        json_array_foreach(json_object_get(j, "items"), i, item)
        {
            for (size_t k = 0; k < sizeof(derived) / sizeof(derived[0]); k++)
                json_object_del(item, derived[k]);
        }
        json_array_extend(all, json_object_get(j, "items"));
        const char *next = json_string_value(json_object_get(j, "next"));
        if (next)
            snprintf(path, sizeof(path), "/api/v1/jobs?limit=500&after=%s", next);
        json_decref(j);
        if (!next)
            break;
    }
    char *text = json_dumps(all, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(all);
    return text;
}

const char *hx_job_state(long long id)
{
    static char out[32];
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
    json_t *j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    snprintf(out, sizeof(out), "%s", json_string_value(json_object_get(j, "state")));
    json_decref(j);
    return out;
}

void hx_second_server(const char *name, struct hx_server *first)
{
    *first = hx;
    const char *saved[2] = {hx_server_args[0], hx_server_args[1]};
    hx_server_args[0] = "--name";
    hx_server_args[1] = name;
    hx.port = hx_free_port();
    hx_start_server();
    hx_server_args[0] = saved[0];
    hx_server_args[1] = saved[1];
}

double hx_metric(const char *name)
{
    struct hx_resp *r = hx_call("GET", "/metrics", NULL, NULL, NULL, 0, NULL);
    double v = -1;
    size_t n = strlen(name);
    for (const char *l = r->body; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0))
        if (strncmp(l, name, n) == 0 && l[n] == ' ')
            v = atof(l + n + 1);
    hx_free(r);
    return v;
}
