/* run: the `ringmaster-sim run` subcommand. */
#ifndef RINGMASTER_SIM_RUN_H
#define RINGMASTER_SIM_RUN_H

/* argv[0] is "run". Returns the exit code: 0 ok, 2 usage or input error, 1 a
 * simulation failure. */
int run_main(int argc, char **argv);

#endif
