/* decide_input: the reader of `ringmaster-sim decide`'s JSON snapshot (docs/decide.md): nodes,
 * jobs with their observations fitted into models, users and the estimate rules' prior. */
#include "decide_input.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decide_int.h"
#include "learn_types.h"
#include "options.h"

void decide_input_destroy(struct decide_input *in)
{
    if (!in)
        return;
    for (size_t i = 0; in->slots && i < in->njobs; i++)
        free(in->slots[i]);
    for (size_t i = 0; in->steps && i < in->njobs; i++) {
        free((void *)in->steps[i].obs);
        free(in->steps[i].types);
    }
    free(in->steps);
    free(in->slots);
    free(in->users);
    free(in->finished);
    free(in->jobs);
    free(in->nodes);
    free(in->type_names);
    json_decref(in->root);
    free(in);
}

/* ---- nodes --------------------------------------------------------------- */

/* The simulator's GPU model named name (options_gpu_models(): the name itself, or one of its
 * words, case insensitive, as the server reads a node's reported model: "NVIDIA
 * A100-SXM4-80GB" is a100), or NULL. */
static const struct options_gpu_model *known_type(const char *name)
{
    const struct options_gpu_model *t = options_gpu_models();
    for (const struct options_gpu_model *m = t; m->name; m++)
        if (!strcasecmp(m->name, name))
            return m;
    for (const char *q = name; *q;) {
        size_t n = 0;
        while (isalnum((unsigned char)q[n]))
            n++;
        for (const struct options_gpu_model *m = t; n > 0 && m->name; m++)
            if (strlen(m->name) == n && !strncasecmp(q, m->name, n))
                return m;
        q += n ? n : 1;
    }
    return NULL;
}

/* A node's gpu_type: its name, and unless the node gives them its gpu_model (the simulator's
 * for a name it knows, else the next free one from DECIDE_UNKNOWN_MODEL),
 * gpu_speed and gpu_mem_gb (the known model's). Two nodes of one name have one model, and one
 * model one name. */
static int read_node_type(struct decide_input *in, json_t *o, const char *p, size_t i,
                          int model_given)
{
    json_t *t = json_object_get(o, "gpu_type");
    struct sched_node *n = &in->nodes[i];
    char path[96];
    snprintf(path, sizeof(path), "%s.gpu_type", p);
    if (!t)
        return 0;
    const char *name = json_string_value(t);
    if (!name || !*name || strlen(name) > DECIDE_GPU_TYPE_MAX)
        return decide_bad(in, path, "expected a GPU type name of 1..63 characters (e.g. \"a100\")");
    in->type_names[i] = name;
    const struct options_gpu_model *m = known_type(name);
    int next = DECIDE_UNKNOWN_MODEL, same = -1;
    for (size_t k = 0; k < i; k++) {
        const char *other = in->type_names[k];
        if (other && !strcasecmp(other, name) && same < 0)
            same = in->nodes[k].gpu_model;
        if (in->nodes[k].gpu_model >= next)
            next = in->nodes[k].gpu_model + 1;
    }
    if (!model_given)
        n->gpu_model = same >= 0 ? same : m ? m->index : next;
    if (same >= 0 && same != n->gpu_model)
        return decide_bad(in, path, "another node of this gpu_type has another gpu_model");
    for (size_t k = 0; k < i; k++)
        if (in->type_names[k] && in->nodes[k].gpu_model == n->gpu_model &&
            strcasecmp(in->type_names[k], name))
            return decide_bad(in, path, "another node of its gpu_model has another gpu_type");
    if (m && !json_object_get(o, "gpu_speed"))
        n->gpu_speed = m->speed;
    if (m && !json_object_get(o, "gpu_mem_gb"))
        n->gpu_mem_gb = m->mem_gb;
    return 0;
}

/* Host resources and GPU model of a node (docs/plans.md); all optional. */
static int read_node_extras(struct decide_input *in, json_t *o, const char *p, size_t i)
{
    long long cores, model;
    struct sched_node *n = &in->nodes[i];
    if (decide_get_int(in, o, p, "cpu_cores", 0, 1 << 24, 0, &cores) ||
        decide_get_num(in, o, p, "host_mem_gb", 0, 1e9, 0, &n->host_mem_gb) ||
        decide_get_int(in, o, p, "gpu_model", 0, 1 << 20, 0, &model) ||
        decide_get_num(in, o, p, "gpu_speed", 0, 1e3, 0, &n->gpu_speed) ||
        decide_get_num(in, o, p, "gpu_mem_gb", 0, 1e6, 0, &n->gpu_mem_gb))
        return -1;
    n->cpu_cores = (int)cores;
    n->gpu_model = (int)model;
    return read_node_type(in, o, p, i, json_object_get(o, "gpu_model") != NULL);
}

/* The GPU positions of member key of node n ("drained", "failed": an array of 0..gpus-1)
 * into *mask. */
static int read_positions(struct decide_input *in, json_t *d, const char *p, const char *key,
                          const struct sched_node *n, uint64_t *mask)
{
    size_t k;
    json_t *g;
    char what[96];
    snprintf(what, sizeof(what), "member %s: expected GPU positions 0..gpus-1", key);
    if (!json_is_array(d))
        return decide_bad(in, p, what);
    json_array_foreach(d, k, g)
    {
        if (!json_is_integer(g) || json_integer_value(g) < 0 || json_integer_value(g) >= n->ngpus)
            return decide_bad(in, p, what);
        *mask |= UINT64_C(1) << json_integer_value(g);
    }
    return 0;
}

/* A node's optional drain: "drained" (its GPU positions 0..gpus-1, or true: all of them) and
 * "evacuate" (boolean, false); and "failed" (GPU positions with a fault). */
static int read_drain(struct decide_input *in, json_t *o, const char *p, size_t i)
{
    struct sched_node *n = &in->nodes[i];
    json_t *d = json_object_get(o, "drained"), *f = json_object_get(o, "failed");
    int ev;
    if (decide_get_bool(in, o, p, "evacuate", 0, &ev))
        return -1;
    if (f && read_positions(in, f, p, "failed", n, &n->failed))
        return -1;
    n->evacuate = ev;
    if (!d || json_is_false(d))
        return 0;
    if (json_is_true(d)) {
        n->drained = n->ngpus >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << n->ngpus) - 1;
        return 0;
    }
    if (!json_is_array(d))
        return decide_bad(in, p, "member drained: expected true or an array of GPU positions");
    return read_positions(in, d, p, "drained", n, &n->drained);
}

static int read_nodes(struct decide_input *in, json_t *root)
{
    json_t *arr, *o;
    size_t i;
    if (decide_get_array(in, root, "$", "nodes", 100000, &arr))
        return -1;
    if (!arr || json_array_size(arr) == 0)
        return decide_bad(in, "$.nodes", "expected a non-empty array of nodes");
    in->nodes = calloc(json_array_size(arr), sizeof(*in->nodes));
    in->type_names = calloc(json_array_size(arr), sizeof(*in->type_names));
    if (!in->nodes || !in->type_names)
        return decide_bad(in, "$", "out of memory");
    for (i = 0; i < json_array_size(arr); i++) {
        o = json_array_get(arr, i);
        char p[64];
        long long id, gpus;
        int up;
        snprintf(p, sizeof(p), "$.nodes[%zu]", i);
        if (!json_is_object(o))
            return decide_bad(in, p, "expected an object");
        if (decide_get_int(in, o, p, "id", INT64_MIN, INT64_MAX, (long long)i, &id) ||
            decide_get_int(in, o, p, "gpus", 0, SCHED_MAX_GPUS_PER_NODE, -1, &gpus) ||
            decide_get_bool(in, o, p, "up", 1, &up))
            return -1;
        if (gpus < 0)
            return decide_bad(in, p, "member gpus is required");
        in->nodes[i] = (struct sched_node){.id = id, .ngpus = (int)gpus, .up = up};
        if (read_node_extras(in, o, p, i) || read_drain(in, o, p, i))
            return -1;
        in->total_gpus += (int)gpus;
    }
    in->snap.nodes = in->nodes;
    in->snap.nnodes = json_array_size(arr);
    return decide_read_topology(in, arr);
}

/* ---- one job --------------------------------------------------------------- */

static int read_allocation(struct decide_input *in, json_t *o, const char *path, size_t j)
{
    json_t *arr, *s;
    size_t i;
    if (decide_get_array(in, o, path, "allocation", (size_t)in->total_gpus, &arr))
        return -1;
    size_t n = arr ? json_array_size(arr) : 0;
    if (n && !(in->slots[j] = calloc(n, sizeof(**in->slots))))
        return decide_bad(in, path, "out of memory");
    for (i = 0; i < json_array_size(arr); i++) {
        s = json_array_get(arr, i);
        char p[160];
        long long node, gpu;
        snprintf(p, sizeof(p), "%s.allocation[%zu]", path, i);
        if (!json_is_object(s))
            return decide_bad(in, p, "expected {\"node\": N, \"gpu\": G}");
        if (decide_get_int(in, s, p, "node", 0, (long long)in->snap.nnodes - 1, -1, &node))
            return -1;
        if (node < 0)
            return decide_bad(in, p, "member node is required");
        if (decide_get_int(in, s, p, "gpu", 0, in->nodes[node].ngpus - 1, -1, &gpu))
            return -1;
        if (gpu < 0)
            return decide_bad(in, p, "member gpu is required");
        in->slots[j][i] = (struct sched_slot){.node = (int)node, .gpu = (int)gpu};
    }
    in->jobs[j].cur_gpus = (int)n;
    in->jobs[j].slots = in->slots[j];
    return 0;
}

static int read_scalars(struct decide_input *in, json_t *o, const char *path, struct sched_job *job,
                        int *remaining_given)
{
    long long id, prio, req, lo, hi;
    int el;
    double rem;
    if (decide_get_int(in, o, path, "id", INT64_MIN, INT64_MAX, LLONG_MIN, &id) ||
        decide_get_int(in, o, path, "priority", INT32_MIN, INT32_MAX, 0, &prio) ||
        decide_get_int(in, o, path, "requested_gpus", 1, in->total_gpus, -1, &req) ||
        decide_get_int(in, o, path, "min_gpus", 1, in->total_gpus, 1, &lo) ||
        decide_get_int(in, o, path, "max_gpus", 1, in->total_gpus, in->total_gpus, &hi) ||
        decide_get_bool(in, o, path, "elastic", 1, &el) ||
        decide_get_num(in, o, path, "submit_time", -1e15, 1e15, 0, &job->submit_time) ||
        decide_get_num(in, o, path, "run_time", 0, 1e15, 0, &job->run_time) ||
        decide_get_num(in, o, path, "epochs_done", 0, 1e15, 0, &job->epochs_done) ||
        decide_get_num(in, o, path, "remaining_epochs", -1, 1e15, -2, &rem))
        return -1;
    if (id == LLONG_MIN || req < 0)
        return decide_bad(in, path, "members id and requested_gpus are required");
    if (lo > hi)
        return decide_bad(in, path, "min_gpus is above max_gpus");
    *job = (struct sched_job){
        .id = id,
        .priority = (int)prio,
        .requested_gpus = (int)req,
        .min_gpus = (int)lo,
        .max_gpus = (int)hi,
        .elastic = el,
        .submit_time = job->submit_time,
        .run_time = job->run_time,
        .epochs_done = job->epochs_done,
        .remaining_epochs = rem < -1 ? -1 : rem,
    };
    *remaining_given = rem >= -1;
    long long step;
    if (decide_get_num(in, o, path, "last_checkpoint_time", -1e15, 1e15, 0,
                       &job->last_checkpoint_time) ||
        decide_get_int(in, o, path, "last_checkpoint_step", 0, INT64_MAX, 0, &step))
        return -1;
    job->last_checkpoint_step = step;
    return decide_get_num(in, o, path, "last_change_time", -1e15, 1e15, job->submit_time,
                          &job->last_change_time) ||
           decide_get_num(in, o, path, "deadline", 0, 1e15, 0, &job->deadline);
}

static const char *const plan_kinds[] = {"dp", "zero1", "zero2", "zero3", "offload"};

static int read_kind(struct decide_input *in, json_t *o, const char *path, int *kind)
{
    json_t *k = json_object_get(o, "kind");
    *kind = PLAN_DP;
    if (!k)
        return 0;
    for (int i = 0; i < PLAN_NKINDS; i++)
        if (json_is_string(k) && !strcmp(json_string_value(k), plan_kinds[i])) {
            *kind = i;
            return 0;
        }
    return decide_bad(in, path, "kind: expected dp, zero1, zero2, zero3 or offload");
}

/* A plan object {"kind", "tp", "pp", "cpu_cores"} into *c. */
static int read_choice(struct decide_input *in, json_t *o, const char *path, struct plan_choice *c)
{
    long long tp, pp, cores;
    if (!json_is_object(o))
        return decide_bad(in, path, "expected a plan object");
    if (read_kind(in, o, path, &c->kind) ||
        decide_get_int(in, o, path, "tp", 1, PLAN_MAX_DEGREE, 1, &tp) ||
        decide_get_int(in, o, path, "pp", 1, PLAN_MAX_DEGREE, 1, &pp) ||
        decide_get_int(in, o, path, "cpu_cores", 0, 1024, 0, &cores))
        return -1;
    c->tp = (int)tp;
    c->pp = (int)pp;
    c->cpu_cores = (int)cores;
    return 0;
}

static int read_supported(struct decide_input *in, json_t *o, const char *path, unsigned *mask)
{
    json_t *arr = json_object_get(o, "supported"), *k;
    size_t i;
    *mask = 0;
    if (!arr)
        return 0;
    if (!json_is_array(arr))
        return decide_bad(in, path, "supported: expected an array of plan kinds");
    json_array_foreach(arr, i, k)
    {
        int kind = -1;
        for (int x = 0; x < PLAN_NKINDS; x++)
            if (json_is_string(k) && !strcmp(json_string_value(k), plan_kinds[x]))
                kind = x;
        if (kind < 0)
            return decide_bad(in, path, "supported: expected dp, zero1, zero2, zero3 or offload");
        *mask |= 1u << kind;
    }
    return 0;
}

/* Optional "plan" (the job's plan spec) and "cur_plan" (what it runs). */
static int read_plan(struct decide_input *in, json_t *o, const char *path, struct sched_job *job)
{
    json_t *pl = json_object_get(o, "plan"), *cur = json_object_get(o, "cur_plan"), *req;
    char p[96];
    long long tp, pp;
    snprintf(p, sizeof(p), "%s.plan", path);
    if (pl) {
        if (!json_is_object(pl))
            return decide_bad(in, p, "expected an object");
        if (decide_get_num(in, pl, p, "params_b", 0, 1e6, 0, &job->plan.params_b) ||
            decide_get_num(in, pl, p, "act_gb", 0, 1e6, 0, &job->plan.act_gb) ||
            decide_get_int(in, pl, p, "max_tp", 1, PLAN_MAX_DEGREE, 1, &tp) ||
            decide_get_int(in, pl, p, "max_pp", 1, PLAN_MAX_DEGREE, 1, &pp) ||
            read_supported(in, pl, p, &job->plan.supported))
            return -1;
        job->plan.max_tp = (int)tp;
        job->plan.max_pp = (int)pp;
        if ((req = json_object_get(pl, "requested")) &&
            read_choice(in, req, p, &job->plan.requested))
            return -1;
    }
    snprintf(p, sizeof(p), "%s.cur_plan", path);
    return cur ? read_choice(in, cur, p, &job->cur_plan) : 0;
}

/* Gandiva's members: suspended, home_node, gpu_util, gpu_mem_bytes,
 * packed_with, rate_alone, rate_packed, pack_reverted. */
static int read_gandiva(struct decide_input *in, json_t *o, const char *path, struct sched_job *job)
{
    long long home, with;
    int susp, rev;

    if (decide_get_bool(in, o, path, "suspended", 0, &susp) ||
        decide_get_int(in, o, path, "home_node", 0, (long long)in->snap.nnodes - 1, -1, &home) ||
        decide_get_num(in, o, path, "gpu_util", 0, 1, 0, &job->gpu_util) ||
        decide_get_num(in, o, path, "gpu_mem_bytes", 0, 1e15, 0, &job->gpu_mem_bytes) ||
        decide_get_int(in, o, path, "packed_with", INT64_MIN, INT64_MAX, LLONG_MIN, &with) ||
        decide_get_num(in, o, path, "rate_alone", 0, 1e12, 0, &job->rate_alone) ||
        decide_get_num(in, o, path, "rate_packed", 0, 1e12, 0, &job->rate_packed) ||
        decide_get_bool(in, o, path, "pack_reverted", 0, &rev))
        return -1;
    job->suspended = susp;
    job->pack_reverted = rev;
    job->has_home = home >= 0;
    job->home_node = home >= 0 ? (int)home : 0;
    job->packed = with != LLONG_MIN;
    job->packed_with = job->packed ? with : 0;
    return 0;
}

/* The evidence of sched_estimate_apply(): user, declared_epochs,
 * stops_at_convergence. A job that declares either and gives no
 * remaining_epochs gets its remaining work by the core's estimate rules. */
static int read_evidence(struct decide_input *in, json_t *o, const char *path,
                         struct sched_job *job, int remaining_given)
{
    long long user;
    int conv;

    if (decide_get_int(in, o, path, "user", INT64_MIN, INT64_MAX, 0, &user) ||
        decide_get_num(in, o, path, "declared_epochs", 0, 1e15, 0, &job->declared_epochs) ||
        decide_get_bool(in, o, path, "stops_at_convergence", 0, &conv))
        return -1;
    job->user_id = user;
    job->stops_at_convergence = conv;
    if (!remaining_given && (conv || job->declared_epochs > 0))
        sched_estimate_apply(job, &in->snap);
    return 0;
}

static int read_job(struct decide_input *in, json_t *o, size_t j)
{
    char path[64];
    int remaining_given = 0; /* read_scalars() sets it before any use */
    struct sched_job *job = &in->jobs[j];
    snprintf(path, sizeof(path), "$.jobs[%zu]", j);
    if (!json_is_object(o))
        return decide_bad(in, path, "expected an object");
    if (read_scalars(in, o, path, job, &remaining_given) || read_allocation(in, o, path, j) ||
        decide_read_speed(in, o, path, j, job) || decide_read_batch(in, o, path, job) ||
        decide_read_loss(in, o, path, job, remaining_given) ||
        decide_read_explored(in, o, path, job) || read_gandiva(in, o, path, job) ||
        read_plan(in, o, path, job) || decide_read_model_source(in, o, path, job) ||
        decide_read_switch_bound(in, o, path, job))
        return -1;
    return read_evidence(in, o, path, job, remaining_given);
}

/* "users": [{"id", "share", "max_gpus"}]. */
static int read_users(struct decide_input *in, json_t *root)
{
    json_t *arr;
    char p[64];

    if (decide_get_array(in, root, "$", "users", 100000, &arr))
        return -1;
    in->snap.nusers = arr ? json_array_size(arr) : 0;
    in->users = calloc(in->snap.nusers + 1, sizeof(*in->users));
    if (!in->users)
        return decide_bad(in, "$.users", "out of memory");
    for (size_t u = 0; u < in->snap.nusers; u++) {
        json_t *o = json_array_get(arr, u);
        long long id, max;
        snprintf(p, sizeof(p), "$.users[%zu]", u);
        if (!json_is_object(o))
            return decide_bad(in, p, "expected {\"id\": ID, \"share\": W, \"max_gpus\": N}");
        if (decide_get_int(in, o, p, "id", INT64_MIN, INT64_MAX, LLONG_MIN, &id) ||
            decide_get_num(in, o, p, "share", 0, 1e9, 1, &in->users[u].share) ||
            decide_get_int(in, o, p, "max_gpus", 0, INT_MAX, 0, &max))
            return -1;
        if (id == LLONG_MIN)
            return decide_bad(in, p, "member id is required");
        in->users[u].id = id;
        in->users[u].max_gpus = (int)max;
    }
    in->snap.users = in->users;
    return 0;
}

/* "finished_run_s": [seconds, ...], the prior of the estimate rules. */
static int read_finished(struct decide_input *in, json_t *root)
{
    json_t *arr;
    char p[64];

    if (decide_get_array(in, root, "$", "finished_run_s", 1000000, &arr))
        return -1;
    in->snap.nfinished = arr ? json_array_size(arr) : 0;
    in->finished = calloc(in->snap.nfinished + 1, sizeof(*in->finished));
    if (!in->finished)
        return decide_bad(in, "$.finished_run_s", "out of memory");
    for (size_t k = 0; k < in->snap.nfinished; k++) {
        json_t *v = json_array_get(arr, k);
        snprintf(p, sizeof(p), "$.finished_run_s[%zu]", k);
        if (!json_is_number(v) || !(json_number_value(v) >= 0) || !isfinite(json_number_value(v)))
            return decide_bad(in, p, "expected a number of seconds >= 0");
        in->finished[k] = json_number_value(v);
    }
    in->snap.finished_run_s = in->finished;
    return 0;
}

static int read_input(struct decide_input *in, json_t *root)
{
    json_t *arr, *pol;
    size_t i;
    long long seed;
    if (!json_is_object(root))
        return decide_bad(in, "$", "expected an object with nodes and jobs");
    if (decide_get_num(in, root, "$", "now", -1e15, 1e15, 0, &in->snap.now) ||
        decide_get_int(in, root, "$", "seed", 0, INT64_MAX, 0, &seed) ||
        decide_get_num(in, root, "$", "resize_cost_s", 0, 1e9, 10, &in->snap.resize_cost_s) ||
        decide_get_num(in, root, "$", "min_resize_interval_s", 0, 1e9, 0,
                       &in->snap.min_resize_interval_s) ||
        decide_get_num(in, root, "$", "explore_stage_s", 0, 1e9, 0, &in->snap.explore_stage_s) ||
        decide_get_num(in, root, "$", "quantum_s", 0, 1e9, 0, &in->snap.quantum_s) ||
        decide_get_num(in, root, "$", "gpu_mem_bytes", 0, 1e15, 0, &in->snap.gpu_mem_bytes) ||
        decide_get_num(in, root, "$", "max_wait_s", 0, 1e15, 0, &in->snap.max_wait_s) ||
        decide_get_num(in, root, "$", "queue_threshold_gpu_s", 0, 1e15, 0,
                       &in->snap.queue_threshold_gpu_s) ||
        decide_get_num(in, root, "$", "starvation_knob", 0, 1e6, 0, &in->snap.starvation_knob) ||
        decide_get_num(in, root, "$", "min_runtime_s", 0, 1e15, 0, &in->snap.min_runtime_s) ||
        read_users(in, root) || read_finished(in, root) || read_nodes(in, root) ||
        decide_get_array(in, root, "$", "jobs", 1000000, &arr))
        return -1;
    in->snap.seed = (uint64_t)seed;
    if ((pol = json_object_get(root, "policy")) && !json_is_string(pol))
        return decide_bad(in, "$.policy", "expected a policy name");
    in->policy = pol ? json_string_value(pol) : NULL;
    in->njobs = arr ? json_array_size(arr) : 0;
    in->jobs = calloc(in->njobs ? in->njobs : 1, sizeof(*in->jobs));
    in->slots = calloc(in->njobs ? in->njobs : 1, sizeof(*in->slots));
    in->steps = calloc(in->njobs ? in->njobs : 1, sizeof(*in->steps));
    if (!in->jobs || !in->slots || !in->steps)
        return decide_bad(in, "$", "out of memory");
    for (i = 0; i < in->njobs; i++)
        if (read_job(in, json_array_get(arr, i), i))
            return -1;
    /* the round's learning, as the server's: one-size models from the prior, each job's
     * models on the types it measured and estimates on the cluster's others */
    if (in->typed)
        learn_round(in->jobs, in->njobs, in->nodes, in->snap.nnodes, in->steps);
    in->snap.jobs = in->jobs;
    in->snap.njobs = in->njobs;
    return 0;
}

struct decide_input *decide_input_read(const char *text, size_t len, char *err, size_t errlen)
{
    json_error_t jerr;
    struct decide_input *in = calloc(1, sizeof(*in));
    err[0] = '\0';
    if (!in) {
        snprintf(err, errlen, "out of memory");
        errno = ENOMEM;
        return NULL;
    }
    in->err = err;
    in->errlen = errlen;
    in->root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!in->root) {
        snprintf(err, errlen, "bad JSON at line %d column %d: %s", jerr.line, jerr.column,
                 jerr.text);
        errno = EINVAL;
    } else if (read_input(in, in->root) == 0) {
        return in;
    }
    decide_input_destroy(in);
    return NULL;
}

const struct sched_snapshot *decide_input_snapshot(const struct decide_input *in)
{
    return &in->snap;
}

const char *decide_input_policy(const struct decide_input *in)
{
    return in->policy;
}

const char *decide_input_gpu_type(const struct decide_input *in, int gpu_model)
{
    for (size_t i = 0; i < in->snap.nnodes; i++)
        if (in->type_names[i] && in->nodes[i].gpu_model == gpu_model)
            return in->type_names[i];
    return NULL;
}
