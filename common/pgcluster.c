/* pgcluster: the private PostgreSQL cluster under a state directory: finding the binaries
 * and the unprivileged user, initdb, pg_ctl start, the database and its conninfo. */
#include "pgcluster.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errtext.h"
#include "fnv.h"
#include "fsutil.h"
#include "log.h"

#define PG_PORT "5432"
#define PG_SUPERUSER "ringmaster"
#define PG_DATABASE "ringmaster"
#define START_TIMEOUT_S "120"

struct pgcluster {
    char state_dir[PATH_MAX];
    char datadir[PATH_MAX];
    char logfile[PATH_MAX];
    char bindir[PATH_MAX];
    char conninfo[PATH_MAX + 128];
    int as_other_user; /* 1 when root: run as uid/gid below */
    uid_t uid;
    gid_t gid;
    char user[64];
};

/* The newest /usr/lib/postgresql/N/bin that holds pg_ctl. */
static int find_bindir(char *out, size_t len)
{
    const char *env = getenv("RINGMASTER_PG_BINDIR");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return 0;
    }
    DIR *d = opendir("/usr/lib/postgresql");
    if (!d)
        return -1;
    long best = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long v = strtol(e->d_name, &end, 10);
        char probe[PATH_MAX];
        if (end == e->d_name || *end || v <= best)
            continue;
        snprintf(probe, sizeof(probe), "/usr/lib/postgresql/%ld/bin/pg_ctl", v);
        if (access(probe, X_OK) == 0)
            best = v;
    }
    closedir(d);
    if (best < 0)
        return -1;
    snprintf(out, len, "/usr/lib/postgresql/%ld/bin", best);
    return 0;
}

static int resolve_user(struct pgcluster *c, char *err, size_t errlen)
{
    if (geteuid() != 0)
        return 0;
    const char *name = getenv("RINGMASTER_PG_USER");
    if (!name || !*name)
        name = "postgres";
    struct passwd *pw = getpwnam(name);
    if (!pw) {
        errtext_set(err, errlen,
                "running as root, PostgreSQL must run as an unprivileged user, and user '%s' "
                "does not exist (install postgresql or set RINGMASTER_PG_USER)", name);
        return -1;
    }
    c->as_other_user = 1;
    c->uid = pw->pw_uid;
    c->gid = pw->pw_gid;
    snprintf(c->user, sizeof(c->user), "%s", name);
    return 0;
}

/* Appends value to buf as a single-quoted conninfo value. */
static int conninfo_quote(char *buf, size_t len, const char *value)
{
    size_t n = strlen(buf);
    if (n + 1 >= len)
        return -1;
    buf[n++] = '\'';
    for (const char *p = value; *p; p++) {
        if (n + 3 >= len)
            return -1;
        if (*p == '\'' || *p == '\\')
            buf[n++] = '\\';
        buf[n++] = *p;
    }
    buf[n++] = '\'';
    buf[n] = '\0';
    return 0;
}

int pgcluster_conninfo_db(const struct pgcluster *c, const char *dbname, char *buf, size_t len)
{
    if (len == 0)
        return -1;
    buf[0] = '\0';
    if (snprintf(buf, len, "host=") >= (int)len || conninfo_quote(buf, len, c->datadir) < 0)
        return -1;
    size_t n = strlen(buf);
    if (snprintf(buf + n, len - n, " port=" PG_PORT " user=" PG_SUPERUSER " dbname=") >=
        (int)(len - n))
        return -1;
    return conninfo_quote(buf, len, dbname);
}

/* A unix socket path must fit in sockaddr_un.sun_path (108 bytes). */
static int check_socket_path(const struct pgcluster *c, char *err, size_t errlen)
{
    size_t need = strlen(c->datadir) + strlen("/.s.PGSQL." PG_PORT);
    if (need < 108)
        return 0;
    errtext_set(err, errlen, "state directory path too long for a unix socket (%zu bytes, max 107): %s",
            need, c->datadir);
    return -1;
}

/* Makes sure the cluster's user can reach state_dir (search permission). */
static int prepare_dirs(struct pgcluster *c, char *err, size_t errlen)
{
    if (fsutil_mkdir_p(c->state_dir, 0755) < 0) {
        errtext_set(err, errlen, "cannot create %s: %s", c->state_dir, strerror(errno));
        return -1;
    }
    if (mkdir(c->datadir, 0700) < 0 && errno != EEXIST) {
        errtext_set(err, errlen, "cannot create %s: %s", c->datadir, strerror(errno));
        return -1;
    }
    if (c->as_other_user && chown(c->datadir, c->uid, c->gid) < 0) {
        errtext_set(err, errlen, "cannot give %s to %s: %s", c->datadir, c->user, strerror(errno));
        return -1;
    }
    return 0;
}

/* 1 when the cluster's user can search directory path (fork, drop to the
 * user, access()). Always 1 when not running as another user. */
static int reachable_by_user(const struct pgcluster *c, const char *path)
{
    if (!c->as_other_user)
        return 1;
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        if (setgroups(0, NULL) < 0 || setgid(c->gid) < 0 || setuid(c->uid) < 0)
            _exit(2);
        _exit(access(path, X_OK) == 0 ? 0 : 1);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return 1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* When root keeps the state directory where the cluster's user cannot reach
 * it (a clone under /root, mode 0700), the data goes to a directory of its own
 * under /var/lib/ringmaster-embedded, named by a hash of the state directory,
 * and STATE_DIR/pg becomes a link to it. */
static int choose_datadir(struct pgcluster *c, char *err, size_t errlen)
{
    snprintf(c->datadir, sizeof(c->datadir), "%.4000s/pg", c->state_dir);
    /* Our own state directory may be searched by the cluster's user. */
    struct stat st;
    if (c->as_other_user && stat(c->state_dir, &st) == 0 && (st.st_mode & S_IXOTH) == 0)
        chmod(c->state_dir, (st.st_mode & 07777) | S_IXGRP | S_IXOTH);
    if (reachable_by_user(c, c->state_dir))
        return 0;
    uint64_t h = fnv1a_str(c->state_dir);
    char parent[] = "/var/lib/ringmaster-embedded";
    if (fsutil_mkdir_p(parent, 0755) < 0) {
        errtext_set(err, errlen, "user %s cannot reach %s, and %s cannot be made: %s", c->user,
                c->state_dir, parent, strerror(errno));
        return -1;
    }
    char link[PATH_MAX];
    snprintf(c->datadir, sizeof(c->datadir), "%s/%016llx", parent, (unsigned long long)h);
    snprintf(link, sizeof(link), "%.4000s/pg", c->state_dir);
    if (symlink(c->datadir, link) < 0 && errno != EEXIST) {
        errtext_set(err, errlen, "cannot link %s to %s: %s", link, c->datadir, strerror(errno));
        return -1;
    }
    log_info("pgcluster: user %s cannot reach %s; the cluster lives in %s (linked as %s)",
             c->user, c->state_dir, c->datadir, link);
    return 0;
}

struct pgcluster *pgcluster_create(const char *state_dir, char *err, size_t errlen)
{
    struct pgcluster *c = calloc(1, sizeof(*c));
    if (!c) {
        errtext_set(err, errlen, "out of memory");
        return NULL;
    }
    if (resolve_user(c, err, errlen) < 0)
        goto error;
    if (find_bindir(c->bindir, sizeof(c->bindir)) < 0) {
        errtext_set(err, errlen, "no PostgreSQL server binaries in /usr/lib/postgresql/*/bin "
                             "(install postgresql or set RINGMASTER_PG_BINDIR)");
        goto error;
    }
    if (fsutil_mkdir_p(state_dir, 0755) < 0 || !realpath(state_dir, c->state_dir)) {
        errtext_set(err, errlen, "state directory %s: %s", state_dir, strerror(errno));
        goto error;
    }
    if (choose_datadir(c, err, errlen) < 0)
        goto error;
    snprintf(c->logfile, sizeof(c->logfile), "%.4000s/postgres.log", c->state_dir);
    if (check_socket_path(c, err, errlen) < 0 ||
        pgcluster_conninfo_db(c, PG_DATABASE, c->conninfo, sizeof(c->conninfo)) < 0)
        goto error;
    if (prepare_dirs(c, err, errlen) < 0)
        goto error;
    return c;
error:
    pgcluster_destroy(c);
    return NULL;
}

void pgcluster_destroy(struct pgcluster *c)
{
    free(c);
}

const char *pgcluster_conninfo(const struct pgcluster *c)
{
    return c->conninfo;
}

const char *pgcluster_datadir(const struct pgcluster *c)
{
    return c->datadir;
}

/* In the child: become the cluster's user and send output to the log. Only
 * async-signal-safe calls here (we may be forked from a threaded process). */
static void child_setup(const struct pgcluster *c, int logfd)
{
    if (logfd >= 0) {
        dup2(logfd, STDOUT_FILENO);
        dup2(logfd, STDERR_FILENO);
    }
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
        dup2(devnull, STDIN_FILENO);
    /* The postmaster outlives us: it must not inherit our sockets or files. */
    closefrom(3);
    if (c->as_other_user) {
        if (setgroups(0, NULL) < 0 || setgid(c->gid) < 0 || setuid(c->uid) < 0)
            _exit(126);
    }
    if (chdir("/") < 0)
        _exit(126);
}

/* Runs bindir/prog with argv (argv[0] is the program name) as the cluster's
 * user and waits. Returns its exit status, or -1 if it could not run. */
static int run_pg(const struct pgcluster *c, const char *prog, char *const argv[])
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%.4000s/%s", c->bindir, prog);
    int logfd = open(c->logfile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (logfd >= 0 && c->as_other_user && fchown(logfd, c->uid, c->gid) < 0)
        log_warn("pgcluster: cannot give %s to %s", c->logfile, c->user);
    pid_t pid = fork();
    if (pid < 0) {
        if (logfd >= 0)
            close(logfd);
        return -1;
    }
    if (pid == 0) {
        child_setup(c, logfd);
        execv(path, argv);
        _exit(127);
    }
    if (logfd >= 0)
        close(logfd);
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int initdb_if_needed(struct pgcluster *c, char *err, size_t errlen)
{
    char version_file[PATH_MAX];
    snprintf(version_file, sizeof(version_file), "%.4000s/PG_VERSION", c->datadir);
    if (access(version_file, F_OK) == 0)
        return 0;
    log_info("pgcluster: creating a new cluster in %s", c->datadir);
    char *argv[] = {"initdb",         "-D",      c->datadir,        "-U", PG_SUPERUSER,
                    "--auth=trust",   "-E",      "UTF8",            "--locale=C.UTF-8",
                    "--no-instructions", NULL};
    int rc = run_pg(c, "initdb", argv);
    if (rc != 0) {
        errtext_set(err, errlen, "initdb into %s failed (exit %d); see %s", c->datadir, rc,
                c->logfile);
        return -1;
    }
    return 0;
}

/* 0 when a server runs on the data directory, 1 when not. */
static int server_running(const struct pgcluster *c)
{
    char *argv[] = {"pg_ctl", "status", "-D", (char *)c->datadir, NULL};
    return run_pg(c, "pg_ctl", argv) == 0 ? 0 : 1;
}

static int server_start(struct pgcluster *c, char *err, size_t errlen)
{
    /* recovery_init_sync_method=syncfs: after a crash, PostgreSQL syncs the data directory
     * before it replays the WAL; file by file (the default) took ~5 s of a 9 s restart on a
     * small cluster, one syncfs() takes a fraction of that. */
    char opts[PATH_MAX + 512];
    const char *extra = getenv("RINGMASTER_PG_OPTIONS");
    snprintf(opts, sizeof(opts),
             "-c listen_addresses='' -c port=" PG_PORT " -c unix_socket_directories='%.4000s'"
             " -c unix_socket_permissions=0700 -c recovery_init_sync_method=syncfs %s",
             c->datadir, extra ? extra : "");
    char *argv[] = {"pg_ctl", "start", "-w", "-t", START_TIMEOUT_S, "-D", c->datadir,
                    "-o",     opts,    NULL};
    int rc = run_pg(c, "pg_ctl", argv);
    if (rc != 0) {
        errtext_set(err, errlen, "pg_ctl start on %s failed (exit %d); see %s", c->datadir, rc,
                c->logfile);
        return -1;
    }
    return 0;
}

static int ensure_database(struct pgcluster *c, char *err, size_t errlen)
{
    char ci[PATH_MAX + 128];
    pgcluster_conninfo_db(c, "postgres", ci, sizeof(ci));
    PGconn *conn = PQconnectdb(ci);
    if (PQstatus(conn) != CONNECTION_OK) {
        errtext_set(err, errlen, "cannot connect to the embedded cluster: %s", PQerrorMessage(conn));
        PQfinish(conn);
        return -1;
    }
    const char *params[] = {PG_DATABASE};
    PGresult *r = PQexecParams(conn, "SELECT 1 FROM pg_database WHERE datname = $1", 1, NULL,
                               params, NULL, NULL, 0);
    int exists = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    PQclear(r);
    int rc = 0;
    if (!exists) {
        /* CREATE DATABASE takes no parameters; the name is our constant. */
        r = PQexec(conn, "CREATE DATABASE " PG_DATABASE);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            errtext_set(err, errlen, "cannot create database %s: %s", PG_DATABASE,
                    PQresultErrorMessage(r));
            rc = -1;
        }
        PQclear(r);
    }
    PQfinish(conn);
    return rc;
}

int pgcluster_start(struct pgcluster *c, char *err, size_t errlen)
{
    if (prepare_dirs(c, err, errlen) < 0 || initdb_if_needed(c, err, errlen) < 0)
        return -1;
    if (server_running(c) == 0) {
        log_info("pgcluster: reusing the server already running on %s", c->datadir);
    } else {
        log_info("pgcluster: starting PostgreSQL on %s%s%s", c->datadir,
                 c->as_other_user ? " as " : "", c->as_other_user ? c->user : "");
        if (server_start(c, err, errlen) < 0)
            return -1;
    }
    return ensure_database(c, err, errlen);
}

long pgcluster_postmaster_pid(const struct pgcluster *c)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%.4000s/postmaster.pid", c->datadir);
    FILE *f = fopen(path, "re");
    long pid = 0;
    if (f && fscanf(f, "%ld", &pid) != 1)
        pid = 0;
    if (f)
        fclose(f);
    /* EPERM: alive, and owned by the cluster's user. */
    if (pid <= 0 || (kill((pid_t)pid, 0) < 0 && errno != EPERM))
        return 0;
    return pid;
}

int pgcluster_stop(struct pgcluster *c)
{
    if (server_running(c) != 0)
        return 0;
    long pid = pgcluster_postmaster_pid(c);
    char *argv[] = {"pg_ctl", "stop", "-w", "-t", START_TIMEOUT_S, "-m", "fast", "-D",
                    c->datadir, NULL};
    int rc = run_pg(c, "pg_ctl", argv);
    if (rc != 0) {
        log_error("pgcluster: pg_ctl stop on %s failed (exit %d)", c->datadir, rc);
        return -1;
    }
    log_info("pgcluster: stopped PostgreSQL on %s", c->datadir);
    /* Reap it when it is our child (we were its subreaper); else ECHILD at once. */
    while (pid > 0 && waitpid((pid_t)pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return 0;
}
