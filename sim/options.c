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

int options_cluster_parse(const char *s, struct options_cluster *c, char *err, size_t errlen)
{
    char nodes_s[32], gpus_s[32];
    const char *x = s ? strchr(s, 'x') : NULL;
    long long nodes, gpus;
    if (!x || (size_t)(x - s) >= sizeof(nodes_s) || strlen(x + 1) >= sizeof(gpus_s)) {
        snprintf(err, errlen, "--cluster: expected NODESxGPUS (e.g. 8x8), got '%s'", s ? s : "");
        return -1;
    }
    memcpy(nodes_s, s, (size_t)(x - s));
    nodes_s[x - s] = '\0';
    strcpy(gpus_s, x + 1);
    if (options_long(nodes_s, 1, 100000, &nodes, "--cluster nodes", err, errlen) ||
        options_long(gpus_s, 1, SCHED_MAX_GPUS_PER_NODE, &gpus, "--cluster GPUs per node", err,
                     errlen))
        return -1;
    if (options_cluster_make(c, (size_t)nodes, (int)gpus)) {
        snprintf(err, errlen, "out of memory");
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
