/* pgsup: the supervisor of an embedded PostgreSQL cluster (pgcluster.h). A thread watches
 * the postmaster (a pidfd on the pid in postmaster.pid, checked twice a second as well) and,
 * when it exits for any reason (a signal, a crash, someone's pg_ctl stop), starts the cluster
 * again half a second later (so that the pg_ctl stop sees its stop done): PostgreSQL replays
 * its WAL (crash recovery) before it accepts connections. Failed
 * starts are retried with back-off (PGSUP_RETRY_MIN_S doubling to PGSUP_RETRY_MAX_S); every
 * exit, attempt and return is a log line. The owner hears of each through a callback, from
 * the supervisor's thread: PGSUP_DOWN when the postmaster was found gone, PGSUP_UP once it
 * accepts connections again. docs/operations.md, "When the database dies". */
#ifndef RINGMASTER_PGSUP_H
#define RINGMASTER_PGSUP_H

#include <stddef.h>

#define PGSUP_RETRY_MIN_S 0.2
#define PGSUP_RETRY_MAX_S 5.0

struct pgcluster;
struct pgsup;

enum pgsup_event { PGSUP_DOWN, PGSUP_UP };

typedef void pgsup_event_f(void *arg, enum pgsup_event ev);

/* Makes this process the parent of the postmasters it starts from now on (a child
 * subreaper: the postmaster is re-parented to us when pg_ctl exits), so that the supervisor
 * reaps it when it dies and no zombie passes for a running server. Call it before
 * pgcluster_start(). Returns 0, or -1 with errno set. */
int pgsup_adopt(void);

/* Starts watching c (borrowed; it runs already). cb (may be NULL) is called with arg from
 * the supervisor's thread. Returns the supervisor, or NULL with text in err. */
struct pgsup *pgsup_create(struct pgcluster *c, pgsup_event_f *cb, void *arg, char *err,
                           size_t errlen);

/* Stops watching (waiting for a start in progress to end) and frees; the cluster is left as
 * it is. Call it before stopping the cluster, or the supervisor starts it again. NULL ok. */
void pgsup_destroy(struct pgsup *s);

/* How many times the supervisor has started the cluster again. */
unsigned pgsup_restarts(const struct pgsup *s);

#endif
