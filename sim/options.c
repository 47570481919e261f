/* options: command-line value parsing for ringmaster-sim (see options.h). */
#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int options_double(const char *s, double lo, double hi, double *out, const char *what, char *err,
                   size_t errlen)
{
    char *end;
    errno = 0;
    double v = s ? strtod(s, &end) : NAN;
    if (!s || end == s || *end || errno || !isfinite(v) || v < lo || v > hi) {
        snprintf(err, errlen, "%s: expected a number in %g..%g, got '%s'", what, lo, hi,
                 s ? s : "");
        return -1;
    }
    *out = v;
    return 0;
}

int options_setting(const struct settings_desc *d, const char *v, struct settings *s, char *err,
                    size_t errlen)
{
    char what[64];
    double *at = settings_seconds(d, s);
    if (!d->flag || !at) {
        snprintf(err, errlen, "%s: not an option of the simulator", d->name);
        return -1;
    }
    snprintf(what, sizeof(what), "--%s", d->flag);
    return options_double(v, d->sim_min, d->sim_max, at, what, err, errlen);
}

int options_long(const char *s, long long lo, long long hi, long long *out, const char *what,
                 char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long long v = s ? strtoll(s, &end, 10) : 0;
    if (!s || end == s || *end || errno || v < lo || v > hi) {
        snprintf(err, errlen, "%s: expected a whole number in %lld..%lld, got '%s'", what, lo, hi,
                 s ? s : "");
        return -1;
    }
    *out = v;
    return 0;
}

int options_cluster_make(struct options_cluster *c, size_t nodes, int gpus)
{
    memset(c, 0, sizeof(*c));
    c->nodes = calloc(nodes ? nodes : 1, sizeof(*c->nodes));
    if (!c->nodes)
        return -1;
    for (size_t i = 0; i < nodes; i++)
        c->nodes[i] = (struct sched_node){.id = (int64_t)i, .ngpus = gpus, .up = 1};
    c->nnodes = nodes;
    c->total_gpus = (int)nodes * gpus;
    return 0;
}

void options_cluster_free(struct options_cluster *c)
{
    free(c->nodes);
    memset(c, 0, sizeof(*c));
}

/* The node types of shared/profiles-hetero have two names each: t4 = aws, a100 = dgx-ext,
 * rtx (RTX 2080Ti), quad (Quadro RTX 6000). Their one factor each is the speed-up of a
 * compute-bound job (bert, cifar10 in profiles-hetero/README.md: 2080Ti 2.1x, RTX 6000 2.4x,
 * A100 5.3x a T4), as a lab would set it from a benchmark; a job's own speed on each type is
 * what the factor cannot say (simulate_job_spec.types). */
static const struct options_gpu_model gpu_models[] = {
    {"v100", 1, 1.0, 32, 5, 64},
    {"a100", 2, 2.0, 80, 16, 128},
    {"h100", 3, 3.0, 80, 14, 256},
    {"t4", 4, 0.4, 16, 4, 32},
    {"rtx", 5, 0.8, 11, 4, 32},
    {"quad", 6, 0.9, 24, 6, 48},
    {"aws", 4, 0.4, 16, 4, 32},
    {"dgx-ext", 2, 2.0, 80, 16, 128},
    {NULL, 0, 0, 0, 0, 0},
};

const struct options_gpu_model *options_gpu_models(void)
{
    return gpu_models;
}

/* "NxG" into nodes and gpus. */
static int parse_shape(const char *s, long long *nodes, long long *gpus, char *err, size_t errlen)
{
    char nodes_s[32], gpus_s[32];
    const char *x = strchr(s, 'x');
    if (!x || (size_t)(x - s) >= sizeof(nodes_s) || strlen(x + 1) >= sizeof(gpus_s)) {
        snprintf(err, errlen, "--cluster: expected NODESxGPUS (e.g. 8x8), got '%s'", s);
        return -1;
    }
    memcpy(nodes_s, s, (size_t)(x - s));
    nodes_s[x - s] = '\0';
    strcpy(gpus_s, x + 1);
    return options_long(nodes_s, 1, 100000, nodes, "--cluster nodes", err, errlen) ||
                   options_long(gpus_s, 1, SCHED_MAX_GPUS_PER_NODE, gpus,
                                "--cluster GPUs per node", err, errlen)
               ? -1
               : 0;
}

/* A group's NVLink islands "AxB" (A islands of B GPUs, A x B = gpus) on its n nodes from
 * first: GPU g in island g / B (sched_node.island numbers them from 1). */
static int parse_islands(const char *spec, struct sched_node *first, size_t n, int gpus, char *err,
                         size_t errlen)
{
    char a_s[32], b_s[32];
    long long a, b;
    const char *x = strchr(spec, 'x');
    if (!x || (size_t)(x - spec) >= sizeof(a_s) || strlen(x + 1) >= sizeof(b_s)) {
        snprintf(err, errlen, "--cluster: islands: expected AxB (e.g. @2x4), got '%s'", spec);
        return -1;
    }
    snprintf(a_s, sizeof(a_s), "%.*s", (int)(x - spec), spec);
    snprintf(b_s, sizeof(b_s), "%s", x + 1);
    if (options_long(a_s, 1, gpus, &a, "--cluster islands", err, errlen) ||
        options_long(b_s, 1, gpus, &b, "--cluster GPUs per island", err, errlen))
        return -1;
    if (a * b != gpus) {
        snprintf(err, errlen, "--cluster: islands %s: %lld GPUs, but the nodes have %d", spec,
                 a * b, gpus);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        for (int g = 0; g < gpus; g++)
            first[i].island[g] = (unsigned char)(g / b + 1);
    return 0;
}

/* Cuts "@AxB" off the end of text (a shape or a model); returns the islands, or NULL. */
static char *cut_islands(char *text)
{
    char *at = text ? strchr(text, '@') : NULL;
    if (at)
        *at++ = '\0';
    return at;
}

/* One group "NxG:MODEL[@AxB][:CORES:MEMGB]" appended to c. */
static int parse_group(char *g, struct options_cluster *c, char *err, size_t errlen)
{
    char *save = NULL, *shape = strtok_r(g, ":", &save), *model = strtok_r(NULL, ":", &save);
    char *cores_s = strtok_r(NULL, ":", &save), *mem_s = strtok_r(NULL, ":", &save);
    long long nodes, gpus, cores = 0;
    double mem = 0;
    const struct options_gpu_model *m = gpu_models;
    char *islands = cut_islands(model);
    if (!shape || parse_shape(shape, &nodes, &gpus, err, errlen))
        return -1;
    while (model && m->name && strcmp(m->name, model))
        m++;
    if (!model || !m->name) {
        snprintf(err, errlen,
                 "--cluster: unknown GPU model '%s' (v100, a100 or dgx-ext, h100, t4 or aws, "
                 "rtx, quad)",
                 model ? model : "");
        return -1;
    }
    if ((cores_s && options_long(cores_s, 1, 1 << 20, &cores, "--cluster cores", err, errlen)) ||
        (mem_s && options_double(mem_s, 1, 1e9, &mem, "--cluster memory GB", err, errlen)))
        return -1;
    struct sched_node *nn = realloc(c->nodes, (c->nnodes + (size_t)nodes) * sizeof(*nn));
    if (!nn) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    c->nodes = nn;
    for (long long i = 0; i < nodes; i++)
        c->nodes[c->nnodes++] = (struct sched_node){
            .id = (int64_t)c->nnodes, .ngpus = (int)gpus, .up = 1,
            .cpu_cores = cores ? (int)cores : m->cores_per_gpu * (int)gpus,
            .host_mem_gb = mem > 0 ? mem : m->host_gb_per_gpu * (double)gpus,
            .gpu_model = m->index, .gpu_speed = m->speed, .gpu_mem_gb = m->mem_gb};
    c->total_gpus += (int)(nodes * gpus);
    return islands ? parse_islands(islands, c->nodes + c->nnodes - nodes, (size_t)nodes,
                                   (int)gpus, err, errlen)
                   : 0;
}

int options_cluster_parse(const char *s, struct options_cluster *c, char *err, size_t errlen)
{
    char buf[512];
    long long nodes, gpus;
    if (!s || strlen(s) >= sizeof(buf)) {
        snprintf(err, errlen, "--cluster: expected NODESxGPUS (e.g. 8x8)");
        return -1;
    }
    if (!strchr(s, ':')) {
        strcpy(buf, s);
        char *islands = cut_islands(buf);
        if (parse_shape(buf, &nodes, &gpus, err, errlen))
            return -1;
        if (options_cluster_make(c, (size_t)nodes, (int)gpus)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (islands && parse_islands(islands, c->nodes, c->nnodes, (int)gpus, err, errlen)) {
            options_cluster_free(c);
            return -1;
        }
        return 0;
    }
    memset(c, 0, sizeof(*c));
    strcpy(buf, s);
    for (char *save = NULL, *g = strtok_r(buf, ",", &save); g; g = strtok_r(NULL, ",", &save))
        if (parse_group(g, c, err, errlen)) {
            options_cluster_free(c);
            return -1;
        }
    return 0;
}

int options_policies_parse(const char *s, const struct sched_policy_ops **out, size_t max,
                           char *err, size_t errlen)
{
    char buf[512];
    size_t n = 0;
    if (!s || strlen(s) >= sizeof(buf)) {
        snprintf(err, errlen, "--policies: expected a comma-separated list");
        return -1;
    }
    strcpy(buf, s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        const struct sched_policy_ops *p = sched_policy_find(tok);
        if (!p) {
            snprintf(err, errlen, "--policies: unknown policy '%s'", tok);
            return -1;
        }
        if (n == max) {
            snprintf(err, errlen, "--policies: at most %zu", max);
            return -1;
        }
        out[n++] = p;
    }
    if (n == 0)
        snprintf(err, errlen, "--policies: empty list");
    return n ? (int)n : -1;
}

int options_format_parse(const char *s, enum options_format *f, char *err, size_t errlen)
{
    static const char *const names[] = {"table", "csv", "json"};
    for (int i = 0; i < 3; i++)
        if (s && !strcmp(s, names[i])) {
            *f = (enum options_format)i;
            return 0;
        }
    snprintf(err, errlen, "--format: expected table, csv or json, got '%s'", s ? s : "");
    return -1;
}

int options_speed_parse(const char *s, int *live, char *err, size_t errlen)
{
    if (s && (!strcmp(s, "given") || !strcmp(s, "live"))) {
        *live = !strcmp(s, "live");
        return 0;
    }
    snprintf(err, errlen, "--speed: expected given or live, got '%s'", s ? s : "");
    return -1;
}
