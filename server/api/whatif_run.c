/* whatif_run: the background half of what-if: one ringmaster-sim run per policy, given the
 * live settings as its options by the core's table (whatif_run.h). */
#include "whatif_run.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "store/db.h"

#define SIM_NICE 10             /* below the server's threads and the live scheduler */
#define SIM_LIMIT_S 900         /* one policy's simulation at most */
#define SIM_OUT_MAX (4u << 20)  /* its JSON answer at most */
#define ERR_MAX 600             /* of its stderr kept in the row */
#define DIR_MAX 512             /* the run's temporary folder's path */

struct whatif_runner {
    struct db_pool *db;
    char sim[PATH_MAX];
    pthread_mutex_t mu;
    int busy, stopping, joinable;
    pid_t child; /* the simulator running now, 0 when none */
    pthread_t thread;
    /* the run in progress (owned) */
    long long id;
    char *trace, *cluster, **policies;
    int npolicies;
    struct settings settings;
};

/* $RINGMASTER_SIM; else ringmaster-sim beside the running executable (build/), or in the
 * bin folder beside its sbin (the .deb: /usr/sbin/ringmasterd, /usr/bin/ringmaster-sim). */
static void find_sim(char *out, size_t len)
{
    const char *env = getenv("RINGMASTER_SIM");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    snprintf(out, len, "/usr/bin/ringmaster-sim");
    if (n <= 0)
        return;
    self[n] = '\0';
    char *dir = dirname(self);
    char beside[PATH_MAX], bin[PATH_MAX];
    snprintf(beside, sizeof(beside), "%.4000s/ringmaster-sim", dir);
    snprintf(bin, sizeof(bin), "%.4000s/../bin/ringmaster-sim", dir);
    if (access(beside, X_OK) == 0)
        snprintf(out, len, "%s", beside);
    else if (access(bin, X_OK) == 0)
        snprintf(out, len, "%s", bin);
}

/* Runs sql with params on a pooled connection; logs a failure. */
static void db_do(struct db_pool *db, const char *sql, int n, const char *const *p)
{
    PGconn *c = db_acquire(db);
    if (!c || db_command_params(c, sql, n, p) < 0)
        log_warn("whatif: could not record a run's progress%s", c ? "" : " (no database)");
    db_release(db, c);
}

static void fail_row(struct db_pool *db, long long id, const char *why)
{
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *p[] = {ids, why};
    db_do(db,
          "UPDATE whatif_runs SET state = 'failed', error = left($2, 1000), finished_at = now()"
          " WHERE id = $1 AND state = 'running'",
          2, p);
}

struct whatif_runner *whatif_runner_create(struct db_pool *db)
{
    struct whatif_runner *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->db = db;
    pthread_mutex_init(&w->mu, NULL);
    find_sim(w->sim, sizeof(w->sim));
    PGconn *c = db_acquire(db);
    if (c && db_command(c, "UPDATE whatif_runs SET state = 'failed', finished_at = now(),"
                           " error = 'the server stopped during the run' WHERE state = 'running'") <
                 0)
        log_warn("whatif: could not fail the runs a previous server left");
    db_release(db, c);
    return w;
}

static void free_job(struct whatif_runner *w)
{
    free(w->trace);
    free(w->cluster);
    for (int i = 0; i < w->npolicies; i++)
        free(w->policies[i]);
    free(w->policies);
    w->trace = w->cluster = NULL;
    w->policies = NULL;
    w->npolicies = 0;
}

void whatif_runner_destroy(struct whatif_runner *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    if (w->child > 0)
        kill(w->child, SIGTERM);
    int joinable = w->joinable;
    pthread_mutex_unlock(&w->mu);
    if (joinable)
        pthread_join(w->thread, NULL);
    free_job(w);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

int whatif_runner_busy(struct whatif_runner *w)
{
    pthread_mutex_lock(&w->mu);
    int busy = w->busy;
    pthread_mutex_unlock(&w->mu);
    return busy;
}

/* Reads the child's stdout (fd) into a new string until EOF, SIM_OUT_MAX or the deadline.
 * Returns it (NUL-terminated), or NULL with why filled. */
static char *read_all(int fd, double deadline, char *why, size_t len)
{
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return snprintf(why, len, "out of memory"), NULL;
    for (;;) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double left = deadline - ((double)ts.tv_sec + ts.tv_nsec / 1e9);
        if (left <= 0) {
            snprintf(why, len, "the simulation took longer than %d s", SIM_LIMIT_S);
            break;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, left > 1 ? 1000 : (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        if (n + 4097 > cap) {
            if (cap >= SIM_OUT_MAX) {
                snprintf(why, len, "the simulator's answer is larger than %u bytes", SIM_OUT_MAX);
                break;
            }
            char *more = realloc(buf, cap * 2);
            if (!more) {
                snprintf(why, len, "out of memory");
                break;
            }
            buf = more;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + n, cap - n - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            buf[n] = '\0';
            return buf;
        }
        n += (size_t)got;
    }
    free(buf);
    return NULL;
}

/* The first ERR_MAX bytes of the file, into out. */
static void read_err(const char *path, char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(out, 1, len - 1, f);
    out[n] = '\0';
    fclose(f);
    for (char *c = out; *c; c++)
        if (*c == '\n')
            *c = ' ';
}

/* The settings that have an option of ringmaster-sim run, as its options ("--interval",
 * "10", ...), from the core's table, into argv (at most 2 * SETTINGS_MAX entries) with their
 * text in buf; the simulator parses them by the same table. Returns the entries written. */
static int settings_argv(const struct settings *s, char **argv, char buf[][40])
{
    int n = 0;
    for (const struct settings_desc *d = settings_list(); d->name; d++) {
        if (!d->flag || d->type != SETTINGS_SECONDS)
            continue;
        snprintf(buf[n], sizeof(buf[n]), "--%s", d->flag);
        argv[n] = buf[n];
        n++;
        snprintf(buf[n], sizeof(buf[n]), "%.17g", settings_seconds_of(d, s));
        argv[n] = buf[n];
        n++;
    }
    return n;
}

/* One simulation: ringmaster-sim run ... --policies policy --format json and the settings'
 * options, at nice SIM_NICE. Returns its result row (new), or NULL with why filled. */
static json_t *simulate(struct whatif_runner *w, const char *dir, const char *policy, char *why,
                        size_t len)
{
    char trace[DIR_MAX + 16], errf[DIR_MAX + 16], opts[2 * SETTINGS_MAX][40];
    snprintf(trace, sizeof(trace), "%s/trace.csv", dir);
    snprintf(errf, sizeof(errf), "%s/stderr", dir);
    char *argv[16 + 2 * SETTINGS_MAX] = {w->sim, "run", "--cluster", w->cluster, "--trace", trace,
                                         "--policies", (char *)policy, "--format", "json",
                                         "--skip-bad-rows"};
    int n = 0;
    while (argv[n])
        n++;
    settings_argv(&w->settings, argv + n, opts);
    int out[2];
    if (pipe2(out, O_CLOEXEC) < 0)
        return snprintf(why, len, "pipe: %s", strerror(errno)), NULL;
    pid_t pid = fork();
    if (pid == 0) { /* only async-signal-safe calls until exec */
        int e = open(errf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (dup2(out[1], STDOUT_FILENO) < 0 || e < 0 || dup2(e, STDERR_FILENO) < 0)
            _exit(126);
        setpriority(PRIO_PROCESS, 0, SIM_NICE);
        execv(w->sim, argv);
        _exit(127);
    }
    close(out[1]);
    if (pid < 0) {
        close(out[0]);
        return snprintf(why, len, "fork: %s", strerror(errno)), NULL;
    }
    pthread_mutex_lock(&w->mu);
    w->child = pid;
    int stop = w->stopping;
    pthread_mutex_unlock(&w->mu);
    if (stop)
        kill(pid, SIGTERM);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    char *text = read_all(out[0], (double)ts.tv_sec + ts.tv_nsec / 1e9 + SIM_LIMIT_S, why, len);
    close(out[0]);
    if (!text)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    pthread_mutex_lock(&w->mu);
    w->child = 0;
    pthread_mutex_unlock(&w->mu);
    if (!text)
        return NULL;
    json_t *rows = json_loads(text, 0, NULL);
    free(text);
    json_t *r = json_array_get(rows, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !json_is_object(r)) {
        char err[ERR_MAX];
        read_err(errf, err, sizeof(err));
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
            snprintf(err, sizeof(err), "cannot run %.500s", w->sim);
        snprintf(why, len, "%s: %s", policy, err[0] ? err : "the simulator gave no result");
        json_decref(rows);
        return NULL;
    }
    json_t *row = json_pack("{s:s, s:O, s:O, s:O, s:O, s:O, s:O, s:O}", "policy", policy,
                            "mean_jct_s", json_object_get(r, "avg_jct_s"), "p99_jct_s",
                            json_object_get(r, "p99_jct_s"), "mean_queue_s",
                            json_object_get(r, "avg_queue_s"), "utilization",
                            json_object_get(r, "utilization"), "makespan_s",
                            json_object_get(r, "makespan_s"), "jobs", json_object_get(r, "jobs"),
                            "resizes", json_object_get(r, "resizes"));
    /* how many jobs ran at their own measured speed model (an older simulator says nothing) */
    json_t *own = json_object_get(r, "jobs_own_speed");
    if (row && json_is_integer(own))
        json_object_set(row, "jobs_own_speed", own);
    json_decref(rows);
    if (!row)
        snprintf(why, len, "%s: the simulator's answer lacks its figures", policy);
    return row;
}

/* Writes the trace into a new temporary folder (its path into dir). Returns 0 or -1. */
static int write_trace(const struct whatif_runner *w, char *dir, size_t len)
{
    (void)len; /* DIR_MAX */
    const char *tmp = getenv("TMPDIR");
    if (snprintf(dir, DIR_MAX, "%.400s/ringmaster-whatif-XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0 ||
        !mkdtemp(dir))
        return -1;
    char path[DIR_MAX + 16];
    snprintf(path, sizeof(path), "%s/trace.csv", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    size_t n = strlen(w->trace);
    int ok = fwrite(w->trace, 1, n, f) == n;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static void remove_dir(const char *dir)
{
    char path[DIR_MAX + 16];
    static const char *const files[] = {"trace.csv", "stderr"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

static void *run(void *arg)
{
    struct whatif_runner *w = arg;
    char dir[DIR_MAX] = "", why[ERR_MAX + 64] = "", ids[24];
    snprintf(ids, sizeof(ids), "%lld", w->id);
    int ok = write_trace(w, dir, sizeof(dir)) == 0;
    if (!ok)
        snprintf(why, sizeof(why), "cannot write the trace: %s", strerror(errno));
    for (int i = 0; ok && i < w->npolicies; i++) {
        pthread_mutex_lock(&w->mu);
        int stop = w->stopping;
        pthread_mutex_unlock(&w->mu);
        if (stop) {
            snprintf(why, sizeof(why), "the server stopped during the run");
            ok = 0;
            break;
        }
        json_t *row = simulate(w, dir, w->policies[i], why, sizeof(why));
        char *text = row ? json_dumps(row, JSON_COMPACT) : NULL;
        json_decref(row);
        if (!text) {
            ok = 0;
            break;
        }
        const char *p[] = {ids, text};
        db_do(w->db, "UPDATE whatif_runs SET results = results || jsonb_build_array($2::jsonb)"
                     " WHERE id = $1", 2, p);
        free(text);
    }
    if (ok) {
        const char *p[] = {ids};
        db_do(w->db,
              "UPDATE whatif_runs SET state = 'done', finished_at = now() WHERE id = $1", 1, p);
        log_info("whatif: run %lld done (%d policies)", w->id, w->npolicies);
    } else {
        fail_row(w->db, w->id, why[0] ? why : "failed");
        log_warn("whatif: run %lld failed: %s", w->id, why);
    }
    if (dir[0] && strstr(dir, "ringmaster-whatif-"))
        remove_dir(dir);
    pthread_mutex_lock(&w->mu);
    w->busy = 0;
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int whatif_runner_start(struct whatif_runner *w, const struct whatif_job *job)
{
    pthread_mutex_lock(&w->mu);
    if (w->busy || w->stopping) {
        pthread_mutex_unlock(&w->mu);
        errno = EBUSY;
        return -1;
    }
    if (w->joinable) { /* the last run's thread has ended (busy is 0) */
        pthread_join(w->thread, NULL);
        w->joinable = 0;
    }
    free_job(w);
    w->id = job->id;
    w->trace = strdup(job->trace);
    w->cluster = strdup(job->cluster);
    w->policies = calloc((size_t)job->npolicies + 1, sizeof(*w->policies));
    int ok = w->trace && w->cluster && w->policies;
    for (int i = 0; ok && i < job->npolicies; i++)
        ok = (w->policies[w->npolicies++] = strdup(job->policies[i])) != NULL;
    w->settings = job->settings;
    int err = ok ? pthread_create(&w->thread, NULL, run, w) : ENOMEM;
    if (err == 0)
        w->busy = w->joinable = 1;
    pthread_mutex_unlock(&w->mu);
    if (err) {
        errno = err;
        return -1;
    }
    return 0;
}
