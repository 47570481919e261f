/* launch: starts a job's ranks with OpenMPI's mpirun, one rank per GPU, and the per-rank
 * wrapper that gives each rank its GPU; also the shell of a remote daemon (exec).
 *
 * The worker runs `mpirun [--allow-run-as-root] --oversubscribe --bind-to none -np W
 * -x VAR... <worker> --rank-exec -- <command...>` in a process group of its own, with its
 * stdout and stderr appended to the job's log. Each rank starts as the worker binary in
 * --rank-exec mode, which sets CUDA_VISIBLE_DEVICES to the entry of RINGMASTER_RANK_GPUS
 * (a comma list, one GPU per rank, by world rank) at OMPI_COMM_WORLD_RANK and execs the
 * command. The environment is the worker's (with RINGMASTER_GPU_MODEL, the model of the
 * worker's GPUs), the job's env, and libringjob's RINGJOB_*. */
#ifndef RINGMASTER_LAUNCH_H
#define RINGMASTER_LAUNCH_H

#include <stddef.h>
#include <sys/types.h>

struct launch_req {
    const char *job_id;
    const char *const *command; /* NULL-terminated */
    const char *const *env;     /* NAME=value, NULL-terminated; may be NULL */
    int world_size;
    const char *gpus;   /* "0,1": the GPU of each rank, by world rank */
    const char *hosts;  /* NULL, or mpirun's --host "a:2,b:2" for a job on several nodes,
                           whose remote daemons start through the workers' rsh agent */
    const char *server; /* RINGMASTER_SERVER and RINGMASTER_TOKEN_FILE, for that agent */
    const char *token_file;
    const char *socket;   /* RINGJOB_SOCKET */
    const char *ckpt_dir; /* RINGJOB_CHECKPOINT_DIR */
    const char *plan;     /* RINGJOB_PLAN, may be NULL */
    double lr_scale;      /* RINGJOB_LR_SCALE; <= 0: unset (libringjob uses the world size) */
    long batch;           /* RINGJOB_BATCH, the global batch chosen; <= 0: unset */
    long init_batch;      /* RINGJOB_INIT_BATCH, the job's initial global batch; <= 0: unset */
    long max_local;       /* RINGJOB_MAX_LOCAL_BATCH, most examples per rank at once; <= 0: unset */
    const char *log_path; /* stdout and stderr are appended here */
    const char *self;     /* the worker binary (the rank wrapper) */
    int simulated;        /* simulated GPUs: unless the worker's environment says otherwise,
                             ranks yield the CPU while waiting in MPI (they share the host's
                             cores with other jobs) and use OpenMPI's ob1 messaging (pml)
                             over its shared-memory and TCP transports, not UCX, whose probe
                             of the host's devices slows every MPI_Init and finds no fabric */
};

/* Forks and execs mpirun ($RINGMASTER_MPIRUN or "mpirun" on PATH). Returns its pid, which
 * is also its process group, or -1 with text in err. */
pid_t launch_start(const struct launch_req *r, char *err, size_t errlen);

/* Forks `/bin/sh -c cmd` (job_id's remote mpirun daemon, the exec action) in a session of
 * its own, with stdin from /dev/null and stdout and stderr appended to log_path, as
 * mpirun's (simulated GPUs: in the job's session folder, as its mpirun). Returns its pid,
 * which is also its process group, or -1 when fork failed. */
pid_t launch_shell(const char *cmd, const char *log_path, long long job_id);

/* Sends sig to the process group of mpirun pid and, since mpirun puts each local rank in a
 * process group of its own, to the group of each of its children too (so that SIGKILL,
 * which mpirun cannot forward, leaves no rank behind). */
void launch_kill(pid_t pid, int sig);

/* The start time of process pid (clock ticks since boot, /proc/PID/stat), or -1 when there
 * is no such process: with the pid it names one process across pid reuse. */
long long launch_start_time(pid_t pid);

/* Remembers the CUDA_VISIBLE_DEVICES the worker itself was started with (real GPUs only) in
 * RINGMASTER_HOST_GPUS, which every process it starts inherits: the worker numbers its GPUs
 * 0..n-1 among those it sees, and a rank must be given the host's own name for that GPU. */
void launch_note_host_gpus(int simulated);

/* Remembers the GPU model the worker registers (its first GPU's: the node's, as the
 * scheduler names it; "" or NULL when it has none) in RINGMASTER_GPU_MODEL, which every
 * process it starts inherits (not passed with mpirun's -x: a rank on another node reads the
 * model of the worker that started its daemon there), so that a job knows the GPUs it runs
 * on (train-mlp --speed-by-gpu). */
void launch_note_gpu_model(const char *model);

/* Simulated GPUs only (nodes that may share one host): gives every process the worker starts
 * (its mpiruns, the remote daemons it runs for other nodes' jobs, and their ranks) a TMPDIR
 * of its own, state_dir/mpi, where OpenMPI keeps its session directory. Two workers on one
 * host would otherwise both start a daemon of one job in the same /tmp/ompi.HOST.UID/jf.N,
 * and the second one's orte_init fails ("File exists"), which leaves the job's mpirun waiting
 * for it for good. TMPDIR, not OMPI_MCA_orte_tmpdir_base, since mpirun hands its OMPI_MCA_*
 * to every remote daemon. Skipped when the path would be too long for OpenMPI's UNIX
 * sockets. With real GPUs too, the folder is the root of the jobs' session folders (below). */
void launch_note_session_dir(const char *state_dir, int simulated);

/* Each mpirun (and, simulated, each remote daemon) the worker starts keeps OpenMPI's session
 * folder in one of the job's own, state_dir/mpi/j<id> (see child_session in launch.c):
 * concurrent mpiruns under one base fail at random. Removes the job's folder and what is in
 * it, once its mpirun and daemon are gone. */
void launch_session_remove(long long job_id);

/* The rank wrapper: argv is "--rank-exec" "--" command...; execs the command with
 * CUDA_VISIBLE_DEVICES set to the rank's GPU of RINGMASTER_RANK_GPUS (by
 * OMPI_COMM_WORLD_RANK), mapped through RINGMASTER_HOST_GPUS when that is set. Returns only
 * on failure (127). */
int launch_rank_exec(int argc, char **argv);

#endif
