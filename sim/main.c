/* ringmaster-sim: the discrete-event simulator's command line. Each subcommand
 * lives in its own file (run.c, paper.c, bench.c, decide_cmd.c, gandiva_micro.c, pollux.c). */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "decide_cmd.h"
#include "gandiva_micro.h"
#include "paper.h"
#include "pollux.h"
#include "roundmem.h"
#include "run.h"

static const struct {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"run", run_main, "simulate a Poisson or trace workload under policies"},
    {"paper-table3", paper_main, "the first paper's Table 3 beside ours"},
    {"bench-round", bench_main, "time full scheduling rounds on a synthetic snapshot"},
    {"decide", decide_cmd_main, "one round on a JSON snapshot from stdin"},
    {"gandiva-micro", gandiva_micro_main, "the Gandiva seed's experiments beside ours"},
    {"pollux", pollux_main, "the Pollux paper's workloads: goodput jobs, fixed or adaptive batch"},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
    fprintf(out, "usage: ringmaster-sim COMMAND [OPTIONS]   (COMMAND --help for its options)\n\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-14s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nExit codes: 0 ok, 1 simulation failure, 2 usage or input error.\n");
}

int main(int argc, char **argv)
{
    roundmem_keep();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("ringmaster-sim %s\n", RINGMASTER_VERSION);
        return 0;
    }
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].main(argc - 1, argv + 1);
    fprintf(stderr, "ringmaster-sim: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
