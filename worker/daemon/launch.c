/* launch: the start of a job's mpirun (and of a remote daemon's shell command) in a child
 * of the worker, the kill of its ranks, and the per-rank wrapper (see launch.h). */
#include "launch.h"

#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_ARGS 512

struct argv_buf {
    const char *v[MAX_ARGS];
    int n;
    char owned[64][80]; /* -np value and "-x NAME" names */
    char agent[4200];
    int nowned;
};

static void push(struct argv_buf *a, const char *s)
{
    if (a->n < MAX_ARGS - 1)
        a->v[a->n++] = s;
}

/* "-x NAME" for an environment entry NAME=value. */
static void push_export(struct argv_buf *a, const char *entry)
{
    size_t len = strcspn(entry, "=");
    if (a->nowned >= 64 || len == 0 || len >= sizeof(a->owned[0]))
        return;
    char *name = a->owned[a->nowned++];
    memcpy(name, entry, len);
    name[len] = '\0';
    push(a, "-x");
    push(a, name);
}

static const char *const ringjob_vars[] = {
    "RINGJOB_SOCKET",   "RINGJOB_JOB_ID", "RINGJOB_CHECKPOINT_DIR", "RINGJOB_WORLD_SIZE",
    "RINGJOB_LR_SCALE", "RINGJOB_PLAN",   "RINGMASTER_RANK_GPUS", "RINGJOB_BATCH",
    "RINGJOB_INIT_BATCH", "RINGJOB_MAX_LOCAL_BATCH"};

static void build_argv(const struct launch_req *r, struct argv_buf *a)
{
    const char *mpirun = getenv("RINGMASTER_MPIRUN");
    push(a, mpirun && *mpirun ? mpirun : "mpirun");
    if (geteuid() == 0)
        push(a, "--allow-run-as-root");
    push(a, "--oversubscribe");
    push(a, "--bind-to");
    push(a, "none");
    if (r->hosts) {
        push(a, "--host");
        push(a, r->hosts);
        snprintf(a->agent, sizeof(a->agent), "%s --rsh-agent", r->self);
        push(a, "--mca");
        push(a, "plm_rsh_agent");
        push(a, a->agent);
    }
    push(a, "-np");
    snprintf(a->owned[a->nowned], sizeof(a->owned[0]), "%d", r->world_size);
    push(a, a->owned[a->nowned++]);
    for (size_t i = 0; i < sizeof(ringjob_vars) / sizeof(ringjob_vars[0]); i++) {
        if ((r->lr_scale <= 0 && !strcmp(ringjob_vars[i], "RINGJOB_LR_SCALE")) ||
            (r->batch <= 0 && !strcmp(ringjob_vars[i], "RINGJOB_BATCH")) ||
            (r->init_batch <= 0 && !strcmp(ringjob_vars[i], "RINGJOB_INIT_BATCH")) ||
            (r->max_local <= 0 && !strcmp(ringjob_vars[i], "RINGJOB_MAX_LOCAL_BATCH")))
            continue; /* unset in the ranks: mpirun warns about -x of a missing variable */
        push(a, "-x");
        push(a, ringjob_vars[i]);
    }
    for (size_t i = 0; r->env && r->env[i]; i++)
        push_export(a, r->env[i]);
    push(a, r->self);
    push(a, "--rank-exec");
    push(a, "--");
    for (size_t i = 0; r->command[i]; i++)
        push(a, r->command[i]);
    a->v[a->n] = NULL;
}

/* In the child: name=v, or name unset when v <= 0 (libringjob's default then). */
static void set_positive(const char *name, long v)
{
    char buf[64];
    if (v > 0) {
        snprintf(buf, sizeof(buf), "%ld", v);
        setenv(name, buf, 1);
    } else {
        unsetenv(name);
    }
}

/* In the child: the environment of the ranks. */
static void set_env(const struct launch_req *r)
{
    char buf[64];
    setenv("RINGJOB_SOCKET", r->socket, 1);
    setenv("RINGJOB_JOB_ID", r->job_id, 1);
    setenv("RINGJOB_CHECKPOINT_DIR", r->ckpt_dir, 1);
    snprintf(buf, sizeof(buf), "%d", r->world_size);
    setenv("RINGJOB_WORLD_SIZE", buf, 1);
    if (r->lr_scale > 0) {
        snprintf(buf, sizeof(buf), "%.17g", r->lr_scale);
        setenv("RINGJOB_LR_SCALE", buf, 1);
    } else {
        unsetenv("RINGJOB_LR_SCALE");
    }
    set_positive("RINGJOB_BATCH", r->batch);
    set_positive("RINGJOB_INIT_BATCH", r->init_batch);
    set_positive("RINGJOB_MAX_LOCAL_BATCH", r->max_local);
    setenv("RINGJOB_PLAN", r->plan ? r->plan : "dp", 1);
    setenv("RINGMASTER_RANK_GPUS", r->gpus, 1);
    if (r->hosts) {
        setenv("RINGMASTER_SERVER", r->server, 1);
        setenv("RINGMASTER_TOKEN_FILE", r->token_file, 1);
    }
    if (r->simulated) {
        setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
        /* No fabric to find: UCX's probe of the host's devices cost each MPI_Init about
         * 0.25 s of a job's start (docs/benchmarks.md, "Live scheduler"). */
        setenv("OMPI_MCA_pml", "ob1", 0);
        /* Simulated nodes of one job may share a host, where OpenMPI's shared-memory
         * transport names its segments by the host's name and the job: two "nodes" on one
         * host would map each other's (a rank died of SIGSEGV in vader's poll), and
         * self,vader (make run's setting for its one worker) cannot reach another node at
         * all. TCP between every pair of ranks, as between real nodes, whatever the worker's
         * environment says; mpirun passes it to every daemon. */
        if (r->hosts)
            setenv("OMPI_MCA_btl", "self,tcp", 1);
    }
    for (size_t i = 0; r->env && r->env[i]; i++)
        putenv((char *)r->env[i]);
}

/* Longest session base that leaves room under it for OpenMPI's own levels
 * (ompi.HOST.UID/jf.N/VPID/...) and its UNIX sockets' names (at most 107 bytes): the
 * worker's root, and a job's folder under it ("/j" and its id). */
#define SESSION_BASE_MAX 56

/* The worker's root of its jobs' OpenMPI session folders (state_dir/mpi), "" when none. */
static char session_root[SESSION_BASE_MAX + 1];
static int session_simulated;

void launch_note_session_dir(const char *state_dir, int simulated)
{
    char abs[4096], dir[4200];
    session_root[0] = '\0';
    session_simulated = simulated;
    if (!realpath(state_dir, abs))
        return;
    int n = snprintf(dir, sizeof(dir), "%s/mpi", abs);
    if (n < 0 || n > SESSION_BASE_MAX || (mkdir(dir, 0700) < 0 && errno != EEXIST))
        return;
    memcpy(session_root, dir, (size_t)n + 1);
    if (simulated)
        setenv("TMPDIR", dir, 1);
}

/* The session folder of job id into buf, "" when the worker has no root or the folder's
 * path would be too long (the job then shares the root). */
static void session_dir(const char *job_id, char *buf, size_t len)
{
    int n = session_root[0] ? snprintf(buf, len, "%s/j%s", session_root, job_id) : -1;
    if (n < 0 || n > SESSION_BASE_MAX || (size_t)n >= len)
        buf[0] = '\0';
}

/* In a child that starts mpirun or a remote daemon of job_id (on several nodes: hosts != 0):
 * its OpenMPI session folder of its own. Two mpiruns that start at once under one base race
 * in creating and removing ompi.HOST.UID ("A call to mkdir was unable to create the desired
 * directory ... File exists", orte_init fails and the job fails with exit code 1; 1 in ~600
 * of four concurrent mpiruns here, and it failed live tests whose worker started two jobs in
 * one round). Simulated: TMPDIR, as the worker's own (see launch_note_session_dir). Real
 * GPUs: OMPI_MCA_orte_tmpdir_base for a job on this node only, leaving the job's TMPDIR as
 * it is; mpirun hands it to remote daemons, on hosts where the folder need not exist, so a
 * job on several nodes keeps OpenMPI's default. A job's env that sets it wins. */
static void child_session(const char *job_id, int hosts)
{
    char dir[SESSION_BASE_MAX + 32];
    session_dir(job_id, dir, sizeof(dir));
    if (!dir[0] || (mkdir(dir, 0700) < 0 && errno != EEXIST))
        return;
    if (session_simulated)
        setenv("TMPDIR", dir, 1);
    else if (!hosts)
        setenv("OMPI_MCA_orte_tmpdir_base", dir, 0);
}

void launch_session_remove(long long job_id)
{
    char id[24], dir[SESSION_BASE_MAX + 32];
    snprintf(id, sizeof(id), "%lld", job_id);
    session_dir(id, dir, sizeof(dir));
    if (dir[0])
        fsutil_remove_tree(dir);
}

/* In a child after fork: stdin from /dev/null, stdout and stderr appended to log_path, no
 * signal blocked and SIGPIPE back to its default. _exits 127 when the files cannot be set. */
static void child_io(const char *log_path)
{
    int log = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int null = open("/dev/null", O_RDONLY);
    if (log < 0 || null < 0 || dup2(null, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0)
        _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
}

static void child(const struct launch_req *r, struct argv_buf *a)
{
    setpgid(0, 0);
    child_io(r->log_path);
    child_session(r->job_id, r->hosts != NULL);
    set_env(r);
    execvp(a->v[0], (char *const *)a->v);
    dprintf(2, "ringmaster-worker: cannot run %s: %s\n", a->v[0], strerror(errno));
    _exit(127);
}

pid_t launch_start(const struct launch_req *r, char *err, size_t errlen)
{
    static struct argv_buf a; /* the daemon's main thread is the only caller */
    memset(&a, 0, sizeof(a));
    if (!r->command || !r->command[0] || r->world_size < 1) {
        snprintf(err, errlen, "launch: empty command or world size < 1");
        return -1;
    }
    build_argv(r, &a);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0)
        child(r, &a);
    setpgid(pid, pid); /* also here, so that a kill right after the fork reaches the group */
    return pid;
}

pid_t launch_shell(const char *cmd, const char *log_path, long long job_id)
{
    char id[24];
    snprintf(id, sizeof(id), "%lld", job_id);
    pid_t pid = fork();
    if (pid == 0) {
        setsid();
        child_io(log_path);
        if (session_simulated)
            child_session(id, 1);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* The fields of /proc/PID/stat after "pid (comm)" into buf; 0 or -1. */
static int stat_fields(const char *pid, char *buf, size_t len, const char **rest)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%s/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    *rest = strrchr(buf, ')');
    return *rest ? 0 : -1;
}

/* The parent of process pid from /proc, or -1. */
static pid_t parent_of(const char *pid)
{
    char buf[1024];
    const char *p;
    int ppid;
    if (stat_fields(pid, buf, sizeof(buf), &p) < 0)
        return -1;
    return sscanf(p + 1, " %*c %d", &ppid) == 1 ? (pid_t)ppid : -1;
}

long long launch_start_time(pid_t pid)
{
    char buf[1024], ids[24];
    const char *p;
    long long t;
    snprintf(ids, sizeof(ids), "%d", (int)pid);
    if (stat_fields(ids, buf, sizeof(buf), &p) < 0)
        return -1;
    /* state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
     * cutime cstime priority nice threads itrealvalue starttime */
    return sscanf(p + 1,
                  " %*c"
                  " %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d"
                  " %*d %*d %lld",
                  &t) == 1
               ? t
               : -1;
}

void launch_kill(pid_t pid, int sig)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9' || parent_of(e->d_name) != pid)
            continue;
        pid_t child = (pid_t)atoi(e->d_name);
        pid_t g = getpgid(child);
        if (g > 1 && g != getpgrp())
            kill(-g, sig);
        kill(child, sig);
    }
    if (d)
        closedir(d);
    kill(-pid, sig);
}

/* The n-th entry of a comma list into out, or "" when there is none. */
static void nth_entry(const char *list, int n, char *out, size_t len)
{
    const char *p = list;
    for (int i = 0; i < n && p; i++) {
        p = strchr(p, ',');
        if (p)
            p++;
    }
    size_t k = p ? strcspn(p, ",") : 0;
    snprintf(out, len, "%.*s", (int)(k < len ? k : len - 1), p ? p : "");
}

void launch_note_host_gpus(int simulated)
{
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    if (!simulated && cvd && *cvd)
        setenv("RINGMASTER_HOST_GPUS", cvd, 1);
    else
        unsetenv("RINGMASTER_HOST_GPUS");
}

void launch_note_gpu_model(const char *model)
{
    if (model && *model)
        setenv("RINGMASTER_GPU_MODEL", model, 1);
    else
        unsetenv("RINGMASTER_GPU_MODEL");
}

int launch_rank_exec(int argc, char **argv)
{
    int i = 1;
    while (i < argc && strcmp(argv[i], "--") != 0)
        i++;
    if (i + 1 >= argc) {
        fprintf(stderr, "ringmaster-worker --rank-exec: no command after --\n");
        return 127;
    }
    const char *gpus = getenv("RINGMASTER_RANK_GPUS");
    const char *lr = getenv("OMPI_COMM_WORLD_RANK");
    char dev[128];
    if (gpus && *gpus) {
        nth_entry(gpus, lr ? atoi(lr) : 0, dev, sizeof(dev));
        const char *host = getenv("RINGMASTER_HOST_GPUS");
        char phys[128];
        if (host && *host && *dev) {
            nth_entry(host, atoi(dev), phys, sizeof(phys));
            if (*phys)
                snprintf(dev, sizeof(dev), "%s", phys);
        }
        setenv("CUDA_VISIBLE_DEVICES", dev, 1);
    }
    execvp(argv[i + 1], argv + i + 1);
    fprintf(stderr, "ringmaster-worker --rank-exec: cannot run %s: %s\n", argv[i + 1],
            strerror(errno));
    return 127;
}
