/* ringmasterd: the Ringmaster appliance's server. Creates its parts in order (state
 * directory, database, schema, admin, pool, the embedded PostgreSQL's supervisor, API,
 * HTTP, scheduler), waits for SIGTERM or SIGINT, and destroys them in reverse, stopping the
 * embedded PostgreSQL it started. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "api/auth.h"
#include "fsutil.h"
#include "http/http.h"
#include "http/router.h"
#include "live/live.h"
#include "log.h"
#include "pgcluster.h"
#include "pgsup.h"
#include "roundmem.h"
#include "store/db.h"
#include "store/dblisten.h"
#include "store/migrate.h"

#define MAX_BODY (1u << 20)

struct config {
    const char *listen;
    const char *name; /* this server's name (rounds' audit, leader); default HOST:PORT */
    const char *state_dir;
    const char *database_url;
    const char *www_dir;
    const char *vendor_dir; /* the system's JavaScript libraries, served under /vendor/ */
    unsigned threads;
    unsigned max_connections;
    unsigned header_timeout, body_timeout;
    int migrate_only; /* --migrate-only: apply the schema's migrations and exit */
};

struct daemon {
    struct pgcluster *cluster; /* the embedded PostgreSQL, when no URL is given */
    struct pgsup *sup;         /* its supervisor: restarts it when it dies */
    struct db_pool *db;
    struct api *api;
    struct http_server *http;
    struct dblisten *actions; /* LISTEN ringmaster_actions: wakes the workers' long-polls */
    struct live_thread *_Atomic sched; /* read by the supervisor's thread too */
};

static void usage(FILE *out)
{
    fprintf(out, "usage: ringmasterd [--listen HOST:PORT] [--state-dir DIR]"
                 " [--database-url URL] [--www-dir DIR] [--vendor-dir DIR] [--threads N]"
                 " [--max-connections N] [--header-timeout S] [--body-timeout S] [--name NAME]"
                 " [--routes] [--migrate-only]\n"
                 "  defaults: 127.0.0.1:8080, ./var, $RINGMASTER_DATABASE_URL or an embedded"
                 " PostgreSQL in DIR/pg, $RINGMASTER_WWW_DIR or ./www,"
                 " $RINGMASTER_VENDOR_DIR or /usr/share/javascript, twice the CPUs in threads (4..64),"
                 " 1024 connections (16..65536), 10 s for a request's header and 30 s for its"
                 " body (1..3600), the host's name and the port as the server's name\n");
}

/* Twice the CPUs online, 4..64: the handlers' work is mostly PostgreSQL's CPU on the same
 * host, and more of them than that only wait for a core (make bench-scale on 2 cores: 8
 * handlers took round p99 from 213-231 ms to 414-441 ms against 4; docs/benchmarks-history.md,
 * "One queue for every connection's requests"). A submission queued for its group's statement
 * holds no thread (submit_group.h); the database pool has a connection for each thread
 * (http_handler_threads()). */
static unsigned default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 2 ? 4 : n > 32 ? 64 : (unsigned)(2 * n);
}

static const char *env_or(const char *name, const char *def)
{
    const char *v = getenv(name);
    return v && *v ? v : def;
}

/* --routes: every route of the API, "METHOD PATTERN" a line (the OpenAPI test reads it). */
static void print_routes(void)
{
    for (size_t i = 0; i < api_route_count(); i++)
        printf("%s %s\n", api_route(i)->method, api_route(i)->pattern);
}

/* Returns 0, 1 after --help or --routes, or -1 on a bad option. */
static int parse_args(int argc, char **argv, struct config *cfg)
{
    static const struct option opts[] = {{"listen", required_argument, NULL, 'l'},
                                         {"state-dir", required_argument, NULL, 's'},
                                         {"database-url", required_argument, NULL, 'd'},
                                         {"www-dir", required_argument, NULL, 'w'},
                                         {"vendor-dir", required_argument, NULL, 'v'},
                                         {"threads", required_argument, NULL, 't'},
                                         {"max-connections", required_argument, NULL, 'm'},
                                         {"header-timeout", required_argument, NULL, 'H'},
                                         {"body-timeout", required_argument, NULL, 'B'},
                                         {"name", required_argument, NULL, 'n'},
                                         {"routes", no_argument, NULL, 'r'},
                                         {"migrate-only", no_argument, NULL, 'M'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    *cfg = (struct config){.listen = "127.0.0.1:8080",
                           .state_dir = "./var",
                           .database_url = env_or("RINGMASTER_DATABASE_URL", NULL),
                           .www_dir = env_or("RINGMASTER_WWW_DIR", "./www"),
                           .vendor_dir = env_or("RINGMASTER_VENDOR_DIR", "/usr/share/javascript"),
                           .threads = default_threads(),
                           .max_connections = 1024,
                           .header_timeout = 10,
                           .body_timeout = 30};
    int c;
    while ((c = getopt_long(argc, argv, "l:s:d:w:v:t:m:H:B:n:rMh", opts, NULL)) != -1) {
        switch (c) {
        case 'l':
            cfg->listen = optarg;
            break;
        case 'n':
            cfg->name = optarg;
            break;
        case 's':
            cfg->state_dir = optarg;
            break;
        case 'd':
            cfg->database_url = optarg;
            break;
        case 'w':
            cfg->www_dir = optarg;
            break;
        case 'v':
            cfg->vendor_dir = optarg;
            break;
        case 't':
            cfg->threads = (unsigned)atoi(optarg);
            break;
        case 'm':
            cfg->max_connections = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'H':
            cfg->header_timeout = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'B':
            cfg->body_timeout = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'M':
            cfg->migrate_only = 1;
            break;
        case 'r':
            print_routes();
            return 1;
        case 'h':
            usage(stdout);
            return 1;
        default:
            usage(stderr);
            return -1;
        }
    }
    if (optind != argc || cfg->threads < 1 || cfg->threads > 64 || cfg->max_connections < 16 ||
        cfg->max_connections > 65536 || cfg->header_timeout < 1 || cfg->header_timeout > 3600 ||
        cfg->body_timeout < 1 || cfg->body_timeout > 3600) {
        usage(stderr);
        return -1;
    }
    return 0;
}

/* The conninfo to use: the URL, or the embedded cluster started under the state dir. */
static const char *open_database(const struct config *cfg, struct daemon *d, char *err,
                                 size_t errlen)
{
    if (cfg->database_url)
        return cfg->database_url;
    if (pgsup_adopt() < 0)
        log_warn("cannot become the postmaster's parent (%s); relying on its pid", strerror(errno));
    d->cluster = pgcluster_create(cfg->state_dir, err, errlen);
    if (!d->cluster || pgcluster_start(d->cluster, err, errlen) < 0)
        return NULL;
    log_info("embedded PostgreSQL running in %s", pgcluster_datadir(d->cluster));
    return pgcluster_conninfo(d->cluster);
}

/* Schema and first admin, on one connection of their own. */
static int prepare_database(const char *conninfo, const char *state_dir, char *err, size_t errlen)
{
    struct db_pool *one = db_create(conninfo, 1, err, errlen);
    if (!one)
        return -1;
    PGconn *c = db_acquire(one);
    int rc = -1;
    if (!c)
        snprintf(err, errlen, "database unreachable");
    else if (migrate_run(c, migrate_files, migrate_nfiles, err, errlen) >= 0)
        rc = auth_bootstrap(c, state_dir, err, errlen);
    db_release(one, c);
    db_destroy(one);
    return rc;
}

/* The supervisor's news (from its thread): the pools stop trying while the cluster
 * restarts and remake every connection once it runs; the scheduler rounds at once. The
 * scheduler thread is made after the supervisor: until then its pool is not told. */
static void on_cluster(void *arg, enum pgsup_event ev)
{
    struct daemon *d = arg;
    db_set_restarting(d->db, ev == PGSUP_DOWN);
    struct live_thread *t = atomic_load(&d->sched);
    if (t)
        live_thread_db_restarting(t, ev == PGSUP_DOWN);
}

/* Every connection is a descriptor: raises the soft limit on them towards the hard one so
 * that the connection limit, and not EMFILE, is what refuses clients. */
static void raise_fd_limit(unsigned connections)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)connections + connections / 16 + 512;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
        return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < want)
        log_info("descriptors limited to %llu: fewer than %u connections may be served",
                 (unsigned long long)rl.rlim_cur, connections);
}

/* --name, else "HOST:PORT" (this machine's host name, the port it listens on). */
static void server_name(const struct config *cfg, char *out, size_t len)
{
    if (cfg->name && *cfg->name) {
        snprintf(out, len, "%s", cfg->name);
        return;
    }
    char host[256] = "localhost";
    gethostname(host, sizeof(host) - 1);
    const char *port = strrchr(cfg->listen, ':');
    snprintf(out, len, "%s%s", host, port ? port : "");
}

/* A new action for node payload was committed (sql/021): that node's long-poll looks now;
 * every long-poll after the listener (re)connected (payload NULL). */
static void on_actions(void *arg, const char *payload)
{
    long long node = payload ? strtoll(payload, NULL, 10) : 0;
    http_wake(arg, node > 0 ? node : 0);
}

static int start(const struct config *cfg, struct daemon *d, char *err, size_t errlen)
{
    if (fsutil_mkdir_p(cfg->state_dir, 0700) < 0) {
        snprintf(err, errlen, "state dir %s: %s", cfg->state_dir, strerror(errno));
        return -1;
    }
    const char *conninfo = open_database(cfg, d, err, errlen);
    if (!conninfo || prepare_database(conninfo, cfg->state_dir, err, errlen) < 0)
        return -1;
    d->db = db_create(conninfo, http_handler_threads(cfg->threads), err, errlen);
    if (!d->db)
        return -1;
    if (d->cluster && !(d->sup = pgsup_create(d->cluster, on_cluster, d, err, errlen)))
        return -1;
    d->api = api_create(d->db, cfg->www_dir, cfg->vendor_dir);
    if (!d->api) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct http_config hc = {.listen = cfg->listen,
                             .threads = cfg->threads,
                             .conn_limit = cfg->max_connections,
                             .per_ip_limit =
                                 cfg->max_connections / 4 > 64 ? cfg->max_connections / 4 : 64,
                             .timeout_s = 30,
                             .header_s = cfg->header_timeout,
                             .body_s = cfg->body_timeout,
                             .max_target = 8192,
                             .max_header = 16384,
                             .max_body = MAX_BODY,
                             .classify = api_classify,
                             .run_inline = api_run_inline};
    raise_fd_limit(cfg->max_connections);
    d->http = http_create(&hc, api_handle, d->api, err, errlen);
    if (!d->http)
        return -1;
    d->actions = dblisten_create(conninfo, "ringmaster_actions", on_actions, d->http, err, errlen);
    if (!d->actions)
        return -1;
    char name[300];
    server_name(cfg, name, sizeof(name));
    struct live_thread *t = live_thread_create(conninfo, name, err, errlen);
    atomic_store(&d->sched, t);
    return t ? 0 : -1;
}

static void stop(struct daemon *d)
{
    pgsup_destroy(d->sup); /* first: stopping the cluster is no death to repair */
    api_stop_waiting();
    dblisten_destroy(d->actions); /* before the server it wakes */
    http_destroy(d->http);
    live_thread_destroy(d->sched);
    api_destroy(d->api);
    db_destroy(d->db);
    if (d->cluster && pgcluster_stop(d->cluster) < 0)
        log_error("embedded PostgreSQL did not stop cleanly");
    pgcluster_destroy(d->cluster);
}

/* --migrate-only: the schema brought up to date, nothing else (no admin, no server). For an
 * operator who migrates before starting, and for the integration tests' template database,
 * which every test's database is then copied from. Returns the exit status. */
static int migrate_only(const struct config *cfg, struct daemon *d)
{
    char err[1024] = "";
    int rc = -1;
    if (fsutil_mkdir_p(cfg->state_dir, 0700) < 0)
        snprintf(err, sizeof(err), "state dir %s: %s", cfg->state_dir, strerror(errno));
    else {
        const char *conninfo = open_database(cfg, d, err, sizeof(err));
        struct db_pool *one = conninfo ? db_create(conninfo, 1, err, sizeof(err)) : NULL;
        PGconn *c = one ? db_acquire(one) : NULL;
        if (one && !c)
            snprintf(err, sizeof(err), "database unreachable");
        if (c && (rc = migrate_run(c, migrate_files, migrate_nfiles, err, sizeof(err))) >= 0)
            log_info("schema up to date (%d migrations applied)", rc);
        db_release(one, c);
        db_destroy(one);
    }
    if (rc < 0)
        log_error("%s", err);
    stop(d);
    return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    struct config cfg;
    struct daemon d = {0};
    char err[1024] = "";
    log_set_ident("ringmasterd");
    roundmem_keep();
    int rc = parse_args(argc, argv, &cfg);
    if (rc != 0)
        return rc < 0 ? 2 : 0;
    json_object_seed(0);
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    if (cfg.migrate_only)
        return migrate_only(&cfg, &d);
    if (start(&cfg, &d, err, sizeof(err)) < 0) {
        log_error("%s", err);
        stop(&d);
        return 1;
    }
    log_info("listening on http://%s/ (version %s)", cfg.listen, RINGMASTER_VERSION);
    /* Without a shared folder each worker keeps a job's checkpoints on its own disk
     * (plan_write.c): a job the scheduler moves to another node, or requeues after its node
     * is lost, then starts again from step 0 there, and its progress is lost to the move. */
    const char *ckroot = getenv("RINGMASTER_CHECKPOINT_ROOT");
    if (!ckroot || !*ckroot)
        log_warn("RINGMASTER_CHECKPOINT_ROOT is not set: jobs checkpoint on their node's own "
                 "disk, and a job moved to another node restarts from step 0 there");
    int sig = 0;
    sigdelset(&sigs, SIGPIPE);
    while (sigwait(&sigs, &sig) != 0 || (sig != SIGTERM && sig != SIGINT))
        ;
    log_info("signal %d: shutting down", sig);
    stop(&d);
    log_info("stopped");
    return 0;
}
