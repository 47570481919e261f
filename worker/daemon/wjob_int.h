/* wjob_int: the inside of one job of this worker (struct wjob), shared by the files that
 * carry out its actions and watch it (wjob.c), report it to the server (jobreport.c) and
 * launch its mpirun from a spec (jobstart.c). Private to worker/daemon/. */
#ifndef RINGMASTER_WJOB_INT_H
#define RINGMASTER_WJOB_INT_H

#include <jansson.h>
#include <sys/types.h>

#include "jobchan.h"

#define WJOB_PATH_LEN 1200

struct wjob {
    long long id;
    struct jobchan *chan;
    pid_t pid;    /* mpirun and its process group; 0 when not running */
    pid_t remote; /* the daemon this node runs for another node's mpirun (exec), or 0 */
    long long remote_act; /* the exec action that started it */
    int world;
    char dir[WJOB_PATH_LEN], sock[WJOB_PATH_LEN], log[WJOB_PATH_LEN];
    long long shipped; /* bytes of the log queued for the server */
    double log_at;
    int posted_running;
    enum jobchan_state seen;
    long long act; /* the action in progress, 0 when none */
    char kind[12];
    json_t *act_spec;
    long batch_want;            /* a batch action's batch, until the job says it took it */
    long batched, batched_step; /* the channel's last BATCHED when that action was given */
    double deadline, kill_at;
    json_t *metrics; /* reports not yet queued */
    double ckpt_sent_at; /* the channel's last checkpoint (its arrival) the server was sent */
    int finished;
    int stale; /* the server no longer has this node run it: killed, nothing more reported */
    struct wjob *next;
};

#endif
