/* options: parsing of the simulator's command-line values (cluster shapes,
 * policy lists, numbers, output formats), each with an error text. */
#ifndef RINGMASTER_SIM_OPTIONS_H
#define RINGMASTER_SIM_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "sched.h"
#include "settings.h"

enum options_format { OPTIONS_TABLE, OPTIONS_CSV, OPTIONS_JSON };

#define OPTIONS_MAX_POLICIES 16

struct options_cluster {
    struct sched_node *nodes;
    size_t nnodes;
    int total_gpus;
};

/* "NODESxGPUS" (e.g. 8x8) into a new node array (free with options_cluster_free),
 * or comma-separated groups "NODESxGPUS:MODEL[:CORES:MEMGB]" (e.g.
 * 4x8:a100,4x8:v100, or 6x4:t4,3x8:rtx,2x8:a100) of the GPU models of
 * options_gpu_models(), with CPU cores and host memory per node (default: the
 * model's per-GPU figures times GPUs).
 * Returns 0, or -1 with a message in err. */
int options_cluster_parse(const char *s, struct options_cluster *c, char *err, size_t errlen);
/* nodes identical nodes of gpus GPUs each, all up. */
int options_cluster_make(struct options_cluster *c, size_t nodes, int gpus);
void options_cluster_free(struct options_cluster *c);

/* A GPU model the simulator knows: index (sched_node.gpu_model), compute
 * speed relative to the reference (v100: the GPU the job models describe),
 * memory, and a typical node's host resources per GPU. Two names may share an
 * index (the node types of shared/profiles-hetero: t4 = aws, a100 = dgx-ext). */
struct options_gpu_model {
    const char *name;
    int index;
    double speed, mem_gb;
    int cores_per_gpu;
    double host_gb_per_gpu;
};

/* The table, NULL-name terminated. */
const struct options_gpu_model *options_gpu_models(void);

/* "a,b,c" into policies (each must exist); returns the count, or -1 with err. */
int options_policies_parse(const char *s, const struct sched_policy_ops **out, size_t max,
                           char *err, size_t errlen);

int options_format_parse(const char *s, enum options_format *f, char *err, size_t errlen);

/* --speed: "given" (0) or "live" (1) into *live. Returns 0, or -1 with err. */
int options_speed_parse(const char *s, int *live, char *err, size_t errlen);

/* The value v of the simulator's option for setting d (a row with a flag, scheduler/
 * settings.h) into s, within the row's simulator bounds; the message names it "--FLAG".
 * Returns 0, or -1 with err (s unchanged). */
int options_setting(const struct settings_desc *d, const char *v, struct settings *s, char *err,
                    size_t errlen);

/* A finite double within [lo, hi]; what names the option in the message. */
int options_double(const char *s, double lo, double hi, double *out, const char *what, char *err,
                   size_t errlen);
/* A whole number within [lo, hi]. */
int options_long(const char *s, long long lo, long long hi, long long *out, const char *what,
                 char *err, size_t errlen);

#endif
