/* decide_topology: the snapshot's topology (docs/decide.md): each node's optional "islands"
 * (an island number >= 0 per GPU, or null for one not known), "switch" and "rack" (its labels'
 * names), numbered for the core by scheduler/domain.h as the server numbers them; and a job's
 * optional "max_switches" and "max_switches_wait_s" (its switch bound). */
#include <stdio.h>
#include <stdlib.h>

#include "decide_int.h"
#include "domain.h"

/* Node i's "islands" into the core's numbering. */
static int read_islands(struct decide_input *in, json_t *o, const char *p, size_t i)
{
    struct sched_node *n = &in->nodes[i];
    json_t *arr, *v;
    int raw[SCHED_MAX_GPUS_PER_NODE];
    size_t k;
    if (decide_get_array(in, o, p, "islands", SCHED_MAX_GPUS_PER_NODE, &arr))
        return -1;
    if (!arr)
        return 0;
    if (json_array_size(arr) != (size_t)n->ngpus)
        return decide_bad(in, p, "member islands: expected one entry per GPU");
    json_array_foreach(arr, k, v)
    {
        if (!json_is_null(v) &&
            (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1023))
            return decide_bad(in, p, "member islands: expected island numbers 0..1023 or null");
        raw[k] = json_is_null(v) ? -1 : (int)json_integer_value(v);
    }
    domain_islands_from(raw, n->ngpus, n->island);
    return 0;
}

/* Member key ("switch", "rack") of every node, a name or absent, numbered into the nodes. */
static int read_group(struct decide_input *in, json_t *arr, const char *key, int rack)
{
    size_t nn = json_array_size(arr);
    const char **names = calloc(nn + 1, sizeof(*names));
    int *ids = calloc(nn + 1, sizeof(*ids)), rc = 0;
    if (!names || !ids)
        rc = decide_bad(in, "$", "out of memory");
    for (size_t i = 0; rc == 0 && i < nn; i++) {
        json_t *v = json_object_get(json_array_get(arr, i), key);
        char p[64], what[64];
        snprintf(p, sizeof(p), "$.nodes[%zu]", i);
        snprintf(what, sizeof(what), "member %s: expected a name", key);
        if (v && !json_is_string(v))
            rc = decide_bad(in, p, what);
        names[i] = json_string_value(v);
    }
    if (rc == 0)
        domain_number(names, nn, ids);
    for (size_t i = 0; rc == 0 && i < nn; i++)
        *(rack ? &in->nodes[i].rack_id : &in->nodes[i].switch_id) = ids[i];
    free(names);
    free(ids);
    return rc;
}

int decide_read_topology(struct decide_input *in, json_t *arr)
{
    for (size_t i = 0; i < json_array_size(arr); i++) {
        char p[64];
        snprintf(p, sizeof(p), "$.nodes[%zu]", i);
        if (read_islands(in, json_array_get(arr, i), p, i))
            return -1;
    }
    return read_group(in, arr, "switch", 0) || read_group(in, arr, "rack", 1) ? -1 : 0;
}

int decide_read_switch_bound(struct decide_input *in, json_t *o, const char *path,
                             struct sched_job *job)
{
    long long n;
    if (decide_get_int(in, o, path, "max_switches", 0, 1 << 20, 0, &n) ||
        decide_get_num(in, o, path, "max_switches_wait_s", 0, 1e12, 0, &job->max_switches_wait_s))
        return -1;
    job->max_switches = (int)n;
    return 0;
}
