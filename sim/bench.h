/* bench: `ringmaster-sim bench-round`, the wall time of full sched_decide()
 * rounds on a synthetic snapshot. */
#ifndef RINGMASTER_SIM_BENCH_H
#define RINGMASTER_SIM_BENCH_H

/* argv[0] is "bench-round". Prints one line per repeat and last
 * "round_us=MEDIAN_MICROSECONDS". Returns the exit code. */
int bench_main(int argc, char **argv);

#endif
