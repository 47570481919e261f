/* Checkpoint generations (docs/worker-protocol.md, "Checkpoint generations"): a real
 * ringmasterd (policy fifo), two real workers with one simulated GPU each sharing one
 * checkpoint folder (RINGMASTER_CHECKPOINT_ROOT), a real `mpirun ... train-mlp` job that
 * checkpoints every few steps. Worker A's daemon stays frozen (SIGSTOP; its job's ranks run
 * on and keep checkpointing) while its node goes DOWN and the job restarts on B from A's last
 * checkpoint. While B's copy is paused (SIGSTOP to its mpirun and ranks) A's stale copy
 * writes on, into its own generation's folder only: the live copy's checkpoint does not
 * change. Then A comes back, its stale copy is killed, and B's job completes. Every wait is
 * bounded. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "twoworkers.h"
#include "wtest.h"

#ifndef TRAIN_MLP_PATH
#define TRAIN_MLP_PATH "build/examples/train-mlp"
#endif

#define STEPS 1800
#define EVERY 25 /* --checkpoint-every */

static void setup(void)
{
    tw_setup("rm-fence");
}

TestSuite(fence, .init = setup, .fini = tw_teardown, .timeout = 300);

/* What identifies one write of a checkpoint file (a new file each time: atomic renames). */
struct ckpt_seen {
    int exists;
    long long step; /* hdr[3] of train-mlp's checkpoint */
    ino_t ino;
    struct timespec mtime;
};

static struct ckpt_seen seen(const char *dir)
{
    struct ckpt_seen s = {0};
    char path[600];
    snprintf(path, sizeof(path), "%s/train-mlp.ckpt", dir);
    struct stat st;
    FILE *f = fopen(path, "rb");
    int64_t hdr[4];
    if (f && fstat(fileno(f), &st) == 0 && fread(hdr, 8, 4, f) == 4)
        s = (struct ckpt_seen){1, (long long)hdr[3], st.st_ino, st.st_mtim};
    if (f)
        fclose(f);
    return s;
}

static int same_write(struct ckpt_seen x, struct ckpt_seen y)
{
    return x.exists == y.exists && x.step == y.step && x.ino == y.ino &&
           x.mtime.tv_sec == y.mtime.tv_sec && x.mtime.tv_nsec == y.mtime.tv_nsec;
}

/* The checkpoint folder the job's copy under worker writes (its ranks' environment). */
static void ckpt_dir_of(const char *worker, long long job, char *buf, size_t len)
{
    cr_assert_eq(wt_job_env(worker, job, "RINGJOB_CHECKPOINT_DIR", buf, len), 0,
                 "no process of job %lld under %s names its checkpoint folder", job, worker);
}

/* SIGSTOP or SIGCONT to every process of the job's copy under worker; returns how many. */
static int signal_copy(const char *worker, long long job, int sig)
{
    pid_t pids[64];
    int n = wt_job_pids(worker, job, pids, 64);
    for (int i = 0; i < n && i < 64; i++)
        kill(pids[i], sig);
    return n;
}

/* Watches both folders for window_s while B's copy is paused: returns 1 when A's changed. */
static int paused_window(long long job, const char *dir_a, const char *dir_b, double window_s)
{
    cr_assert_geq(signal_copy("sim-b", job, SIGSTOP), 1, "B's copy runs");
    usleep(300000); /* a rename B had begun is done or waits for SIGCONT */
    struct ckpt_seen a0 = seen(dir_a), b0 = seen(dir_b);
    int a_changed = 0, b_changed = 0;
    for (double end = hx_now() + window_s; hx_now() < end && !b_changed; usleep(50000)) {
        a_changed |= !same_write(a0, seen(dir_a));
        b_changed |= !same_write(b0, seen(dir_b));
    }
    struct ckpt_seen b1 = seen(dir_b);
    signal_copy("sim-b", job, SIGCONT);
    cr_assert(!b_changed,
              "the live copy's checkpoint %s/train-mlp.ckpt was written (step %lld -> %lld) while"
              " the live copy was paused: by the stale copy on A",
              dir_b, b0.step, b1.step);
    return a_changed;
}

/* Samples the live copy's checkpoint for window_s: its step never goes back. */
static void steps_only_grow(const char *dir_b, double window_s)
{
    long long last = seen(dir_b).step;
    for (double end = hx_now() + window_s; hx_now() < end; usleep(50000)) {
        long long step = seen(dir_b).step;
        cr_assert_geq(step, last, "the live checkpoint went back from step %lld to %lld", last,
                      step);
        last = step;
    }
}

Test(fence, a_stale_copy_cannot_write_over_the_live_copys_checkpoint)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"name\":\"fence\",\"command\":[\"%s\",\"--steps\",\"%d\",\"--seed\",\"7303\","
             "\"--print-every\",\"100\",\"--sleep-us-per-sample\",\"500\",\"--checkpoint-every\","
             "\"%d\"],\"gpus\":1,\"env\":{" WT_ASAN_ENV "}}",
             TRAIN_MLP_PATH, STEPS, EVERY);
    long long job = wt_post_job(body);
    tw_await(tw_runs_on, job, tw.node_a, 60, "not running on A", job);
    tw_await(tw_reported, job, 2 * EVERY, 60, "too few reports", job);
    char dir_a[512], dir_b[512];
    ckpt_dir_of("sim-a", job, dir_a, sizeof(dir_a));

    /* A's daemon freezes for the rest of the check (its job's ranks do not) */
    double t0 = hx_now();
    cr_assert_eq(kill(tw.worker_a, SIGSTOP), 0);
    tw_await(tw_node_is, tw.node_a, 1, 30, "node A not DOWN", job);
    tw_await(tw_runs_on, job, tw.node_b, 60, "not running on B", job);
    double t_b = hx_now();
    ckpt_dir_of("sim-b", job, dir_b, sizeof(dir_b));
    cr_assert_geq(wt_count_job_procs("sim-a", job), 1, "the stale copy runs on under A");
    struct ckpt_seen at_b = seen(dir_b);
    cr_assert(at_b.exists, "B's copy started with a checkpoint in %s", dir_b);

    /* B's copy paused: only A's stale copy could write, and it writes into its own folder */
    int a_wrote = paused_window(job, dir_a, dir_b, 4);
    cr_assert(a_wrote, "the stale copy on A went on checkpointing into %s", dir_a);
    steps_only_grow(dir_b, 3);
    cr_assert_gt(seen(dir_b).step, at_b.step, "B's copy checkpoints into %s", dir_b);
    char want[600];
    snprintf(want, sizeof(want), "%s/job-%lld/g0", tw.ckpt_root, job);
    cr_assert_str_eq(dir_a, want);
    snprintf(want, sizeof(want), "%s/job-%lld/g1", tw.ckpt_root, job);
    cr_assert_str_eq(dir_b, want, "the requeue started generation 1");
    cr_assert_eq(wt_db_int("SELECT ckpt_gen FROM jobs WHERE id = %lld", job), 1);

    /* A comes back: its stale copy is killed; B's copy completes */
    cr_assert_eq(kill(tw.worker_a, SIGCONT), 0);
    tw_await(tw_gone_on_a, job, 0, 30, "A's stale copy still runs", job);
    struct ckpt_seen a_end = seen(dir_a);
    cr_assert(tw_log_has("sim-b", job, "train-mlp: restored step"),
              "B's copy restored the checkpoint copied from g0");
    wt_expect_state(job, "COMPLETED", 180, wt_dump_logs);
    cr_assert_eq(wt_db_int("SELECT max(step) FROM job_metrics WHERE job_id = %lld", job), STEPS);
    cr_assert(same_write(a_end, seen(dir_a)), "nobody writes into generation 0 any more");
    cr_assert_eq(wt_db_int("SELECT count(*) FROM job_events WHERE job_id = %lld"
                           " AND event = 'requeue'",
                           job),
                 1);
    fprintf(stderr,
            "fence: the job running on B %.1f s after A froze, its checkpoint then at step %lld;"
            " A's stale copy reached step %lld in g0\n",
            t_b - t0, at_b.step, a_end.step);
    hx_finish();
}
