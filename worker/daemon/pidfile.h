/* pidfile: <job dir>/mpirun.pid, "pid starttime" of a job's running mpirun, so that the next
 * instance of a worker killed with SIGKILL can end what it left behind. */
#ifndef RINGMASTER_PIDFILE_H
#define RINGMASTER_PIDFILE_H

#include <sys/types.h>

/* Writes the pid file of mpirun pid into the job's folder dir; nothing when it cannot. */
void pidfile_write(const char *dir, pid_t pid);

/* Removes the pid file of the job's folder dir, if any. */
void pidfile_remove(const char *dir);

/* How long the jobs an earlier worker left get to stop at a checkpoint (SIGUSR1) before
 * they are ended with SIGTERM. */
#define PIDFILE_CHECKPOINT_WAIT_S 20.0

/* At start: ends the jobs an earlier instance of this worker started and left running (it
 * was killed with SIGKILL), found by the pid files under <state_dir>/jobs/: their channel is
 * gone, they would train on unseen and clash with the same job restarted elsewhere from its
 * checkpoint. Each is first asked to checkpoint and exit (SIGUSR1, ringjob.h), so that the
 * job's restart goes on from where it was; what still runs after
 * PIDFILE_CHECKPOINT_WAIT_S gets SIGTERM, then SIGKILL. A pid file whose process is not the
 * one started (pid reuse) only goes. */
void pidfile_end_orphans(const char *state_dir);

#endif
