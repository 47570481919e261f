/* rsh: the workers' rsh agent, through which a job's mpirun starts its daemons on the other
 * nodes of the job (mpirun --mca plm_rsh_agent "<worker> --rsh-agent"), without ssh.
 *
 * mpirun runs it as `ringmaster-worker --rsh-agent [-options] HOST COMMAND...`; it asks the
 * server (POST /api/v1/jobs/{id}/remote) to have the worker of the node named HOST run
 * COMMAND, and exits 0 once the request is written (the remote daemon calls mpirun back by
 * itself). It reads RINGMASTER_SERVER, RINGMASTER_TOKEN_FILE and RINGJOB_JOB_ID, which the
 * launching worker puts in mpirun's environment. */
#ifndef RINGMASTER_RSH_H
#define RINGMASTER_RSH_H

/* The agent's main: argv[1] is "--rsh-agent". Returns the exit status. */
int rsh_agent_main(int argc, char **argv);

#endif
