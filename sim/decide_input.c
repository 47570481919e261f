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

#include "learn_types.h"
#include "options.h"

#define DECIDE_MAX_POINTS 4096
#define DECIDE_UNKNOWN_MODEL 100 /* the first gpu_model of a gpu_type the simulator does not
                                  * know, as the server numbers them (server/live/snap.c) */

struct decide_input {
    struct sched_snapshot snap;
    struct sched_node *nodes;
    struct sched_job *jobs;
    struct sched_slot **slots;
    struct sched_user *users;
    double *finished;
    size_t njobs;
    int total_gpus;
    const char **type_names; /* per node: its gpu_type (borrowed), or NULL */
    /* per job: the steps of observations that name their gpu_type, and the storage of its
     * models per type (learn_types.h); obs NULL: none */
    struct learn_job_steps *steps;
    int typed; /* some job's observations name their gpu_type */
    const char *policy; /* borrowed from the JSON document */
    json_t *root;       /* the JSON document */
    char *err;
    size_t errlen;
};

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

/* ---- typed getters, each with a path in its message ---------------------- */

static int bad(struct decide_input *in, const char *path, const char *what)
{
    snprintf(in->err, in->errlen, "%s: %s", path, what);
    errno = EINVAL;
    return -1;
}

/* Number member key of o into *v: def when absent, an error when not a finite
 * number within [lo, hi]. */
static int get_num(struct decide_input *in, json_t *o, const char *path, const char *key, double lo,
                   double hi, double def, double *v)
{
    json_t *j = json_object_get(o, key);
    char p[160];
    snprintf(p, sizeof(p), "%s.%s", path, key);
    if (!j) {
        *v = def;
        return 0;
    }
    double x = json_is_number(j) ? json_number_value(j) : NAN;
    if (!isfinite(x) || x < lo || x > hi) {
        char what[96];
        snprintf(what, sizeof(what), "expected a number in %g..%g", lo, hi);
        return bad(in, p, what);
    }
    *v = x;
    return 0;
}

static int get_int(struct decide_input *in, json_t *o, const char *path, const char *key,
                   long long lo, long long hi, long long def, long long *v)
{
    json_t *j = json_object_get(o, key);
    char p[160];
    snprintf(p, sizeof(p), "%s.%s", path, key);
    if (!j) {
        *v = def;
        return 0;
    }
    if (!json_is_integer(j) || json_integer_value(j) < lo || json_integer_value(j) > hi) {
        char what[96];
        snprintf(what, sizeof(what), "expected a whole number in %lld..%lld", lo, hi);
        return bad(in, p, what);
    }
    *v = json_integer_value(j);
    return 0;
}

static int get_bool(struct decide_input *in, json_t *o, const char *path, const char *key, int def,
                    int *v)
{
    json_t *j = json_object_get(o, key);
    if (!j) {
        *v = def;
        return 0;
    }
    if (!json_is_boolean(j)) {
        char p[160];
        snprintf(p, sizeof(p), "%s.%s", path, key);
        return bad(in, p, "expected true or false");
    }
    *v = json_is_true(j);
    return 0;
}

/* Array member (NULL if absent); an error if present and not an array of at most max. */
static int get_array(struct decide_input *in, json_t *o, const char *path, const char *key,
                     size_t max, json_t **arr)
{
    *arr = json_object_get(o, key);
    if (!*arr)
        return 0;
    if (!json_is_array(*arr) || json_array_size(*arr) > max) {
        char p[160], what[64];
        snprintf(p, sizeof(p), "%s.%s", path, key);
        snprintf(what, sizeof(what), "expected an array of at most %zu entries", max);
        return bad(in, p, what);
    }
    return 0;
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
        return bad(in, path, "expected a GPU type name of 1..63 characters (e.g. \"a100\")");
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
        return bad(in, path, "another node of this gpu_type has another gpu_model");
    for (size_t k = 0; k < i; k++)
        if (in->type_names[k] && in->nodes[k].gpu_model == n->gpu_model &&
            strcasecmp(in->type_names[k], name))
            return bad(in, path, "another node of its gpu_model has another gpu_type");
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
    if (get_int(in, o, p, "cpu_cores", 0, 1 << 24, 0, &cores) ||
        get_num(in, o, p, "host_mem_gb", 0, 1e9, 0, &n->host_mem_gb) ||
        get_int(in, o, p, "gpu_model", 0, 1 << 20, 0, &model) ||
        get_num(in, o, p, "gpu_speed", 0, 1e3, 0, &n->gpu_speed) ||
        get_num(in, o, p, "gpu_mem_gb", 0, 1e6, 0, &n->gpu_mem_gb))
        return -1;
    n->cpu_cores = (int)cores;
    n->gpu_model = (int)model;
    return read_node_type(in, o, p, i, json_object_get(o, "gpu_model") != NULL);
}

static int read_nodes(struct decide_input *in, json_t *root)
{
    json_t *arr, *o;
    size_t i;
    if (get_array(in, root, "$", "nodes", 100000, &arr))
        return -1;
    if (!arr || json_array_size(arr) == 0)
        return bad(in, "$.nodes", "expected a non-empty array of nodes");
    in->nodes = calloc(json_array_size(arr), sizeof(*in->nodes));
    in->type_names = calloc(json_array_size(arr), sizeof(*in->type_names));
    if (!in->nodes || !in->type_names)
        return bad(in, "$", "out of memory");
    for (i = 0; i < json_array_size(arr); i++) {
        o = json_array_get(arr, i);
        char p[64];
        long long id, gpus;
        int up;
        snprintf(p, sizeof(p), "$.nodes[%zu]", i);
        if (!json_is_object(o))
            return bad(in, p, "expected an object");
        if (get_int(in, o, p, "id", INT64_MIN, INT64_MAX, (long long)i, &id) ||
            get_int(in, o, p, "gpus", 0, SCHED_MAX_GPUS_PER_NODE, -1, &gpus) ||
            get_bool(in, o, p, "up", 1, &up))
            return -1;
        if (gpus < 0)
            return bad(in, p, "member gpus is required");
        in->nodes[i] = (struct sched_node){.id = id, .ngpus = (int)gpus, .up = up};
        if (read_node_extras(in, o, p, i))
            return -1;
        in->total_gpus += (int)gpus;
    }
    in->snap.nodes = in->nodes;
    in->snap.nnodes = json_array_size(arr);
    return 0;
}

/* ---- one job --------------------------------------------------------------- */

static int read_allocation(struct decide_input *in, json_t *o, const char *path, size_t j)
{
    json_t *arr, *s;
    size_t i;
    if (get_array(in, o, path, "allocation", (size_t)in->total_gpus, &arr))
        return -1;
    size_t n = arr ? json_array_size(arr) : 0;
    if (n && !(in->slots[j] = calloc(n, sizeof(**in->slots))))
        return bad(in, path, "out of memory");
    for (i = 0; i < json_array_size(arr); i++) {
        s = json_array_get(arr, i);
        char p[160];
        long long node, gpu;
        snprintf(p, sizeof(p), "%s.allocation[%zu]", path, i);
        if (!json_is_object(s))
            return bad(in, p, "expected {\"node\": N, \"gpu\": G}");
        if (get_int(in, s, p, "node", 0, (long long)in->snap.nnodes - 1, -1, &node))
            return -1;
        if (node < 0)
            return bad(in, p, "member node is required");
        if (get_int(in, s, p, "gpu", 0, in->nodes[node].ngpus - 1, -1, &gpu))
            return -1;
        if (gpu < 0)
            return bad(in, p, "member gpu is required");
        in->slots[j][i] = (struct sched_slot){.node = (int)node, .gpu = (int)gpu};
    }
    in->jobs[j].cur_gpus = (int)n;
    in->jobs[j].slots = in->slots[j];
    return 0;
}

/* The GPU model and one factor of the nodes whose gpu_type is name (case aside). Returns 0, or
 * -1 when no node has it. */
static int type_of_name(const struct decide_input *in, const char *name, int *model,
                        double *speed)
{
    for (size_t k = 0; k < in->snap.nnodes; k++)
        if (in->type_names[k] && !strcasecmp(in->type_names[k], name)) {
            *model = in->nodes[k].gpu_model;
            double f = in->nodes[k].gpu_speed;
            *speed = f > 0 && isfinite(f) ? f : 1;
            return 0;
        }
    return -1;
}

/* The observations of job j that name their gpu_type (n of them, obs with their placement):
 * the core's fits learn from them as the server's round does (learn_fit.h): what the learning
 * rules read of them, and its reference model from every type's steps normalised to the
 * reference GPU when they span two sizes (from one, learn_round() makes it from the prior);
 * its models per type are made with the others' by learn_round() once every job is read. */
static int read_typed(struct decide_input *in, const char *path, size_t j, struct sched_job *job,
                      const struct speed_obs *obs, const int *model, const double *speed,
                      size_t n)
{
    struct learn_obs *lo = calloc(n, sizeof(*lo));
    struct sched_type_speed *types = calloc(LEARN_MAX_TYPES, sizeof(*types));
    if (!lo || !types) {
        free(lo);
        free(types);
        return bad(in, path, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        lo[i] = (struct learn_obs){.w = obs[i].w, .nodes = obs[i].nodes, .gpu_model = model[i],
                                   .gpu_speed = speed[i], .step_s = obs[i].step_s,
                                   .m = obs[i].m, .seconds = 1};
    in->steps[j] = (struct learn_job_steps){.obs = lo, .nobs = n, .types = types,
                                            .cap = LEARN_MAX_TYPES, .max_local_model = -1};
    in->typed = 1;
    learn_fit_measured(job, lo, n);
    if (job->measured_sizes < 2)
        return 0;
    if (learn_fit_speed(&job->speed, lo, n))
        return bad(in, path, "speed_observations: the speed model cannot be fitted");
    job->model_source = SCHED_MODEL_FITTED;
    return 0;
}

static int read_speed(struct decide_input *in, json_t *o, const char *path, size_t j,
                      struct sched_job *job)
{
    json_t *arr, *pt;
    size_t i, n = 0;
    int w[DECIDE_MAX_POINTS], placed = 0;
    double step[DECIDE_MAX_POINTS], m, d;
    long long per_node;
    struct speed_obs *obs;
    if (get_array(in, o, path, "speed_observations", DECIDE_MAX_POINTS, &arr) ||
        get_num(in, o, path, "batch_per_gpu", 1, 1e9, 128, &m) ||
        get_num(in, o, path, "dataset_size", 1, 1e15, 50000, &d) ||
        get_int(in, o, path, "gpus_per_node", 0, 1024, 0, &per_node))
        return -1;
    job->speed.batch_per_gpu = m;
    job->speed.dataset_size = d;
    job->speed.gpus_per_node = (int)per_node;
    if (json_array_size(arr) == 0)
        return 0;
    obs = calloc(json_array_size(arr), sizeof(*obs));
    int *model = calloc(json_array_size(arr), sizeof(*model));
    double *speed = calloc(json_array_size(arr), sizeof(*speed));
    size_t typed = 0;
    if (!obs || !model || !speed) {
        free(obs);
        free(model);
        free(speed);
        return bad(in, path, "out of memory");
    }
    for (i = 0; i < json_array_size(arr); i++) {
        pt = json_array_get(arr, i);
        char p[160];
        long long wi;
        snprintf(p, sizeof(p), "%s.speed_observations[%zu]", path, i);
        if (!json_is_object(pt)) {
            free(obs);
            free(model);
            free(speed);
            return bad(in, p, "expected {\"w\": GPUS, \"step_s\": SECONDS}");
        }
        long long nodes;
        double om;
        if (get_int(in, pt, p, "w", 1, 1000000, -1, &wi) ||
            get_num(in, pt, p, "step_s", 1e-9, 1e6, -1, &step[n]) ||
            get_int(in, pt, p, "nodes", 1, 1000000, 0, &nodes) ||
            get_num(in, pt, p, "m", 1e-9, 1e9, m, &om)) {
            free(obs);
            free(model);
            free(speed);
            return -1;
        }
        json_t *gt = json_object_get(pt, "gpu_type");
        const char *fault = wi < 0 || step[n] < 0 ? "w and step_s are required"
                            : nodes > wi          ? "nodes: at most w"
                            : gt && !json_is_string(gt) ? "gpu_type: expected a GPU type name"
                            : gt && type_of_name(in, json_string_value(gt), &model[n], &speed[n])
                                ? "gpu_type: no node has this gpu_type"
                                : NULL;
        typed += gt != NULL;
        if (fault) {
            free(obs);
            free(model);
            free(speed);
            return bad(in, p, fault);
        }
        placed |= nodes > 0 || json_object_get(pt, "m") != NULL;
        if (nodes == 0)
            nodes = speed_packed_nodes(&job->speed, (int)wi);
        obs[n] = (struct speed_obs){(int)wi, (int)nodes, om, step[n]};
        w[n++] = (int)wi;
    }
    int rc;
    if (typed > 0 && typed < n)
        rc = bad(in, path, "speed_observations: a gpu_type on every observation or on none");
    else if (typed > 0)
        rc = read_typed(in, path, j, job, obs, model, speed, n);
    else if ((placed ? speed_fit_obs(&job->speed, obs, n) : speed_fit(&job->speed, w, step, n)))
        rc = bad(in, path, "speed_observations: the speed model cannot be fitted");
    else
        rc = 0, job->model_source = SCHED_MODEL_FITTED;
    free(obs);
    free(model);
    free(speed);
    return rc;
}

/* Optional "batch" (goodput.h's batch_spec): {"init", "batch", "max", "min_local",
 * "max_local", "adaptive", "grad_sqr", "grad_var"}; without it the job has no batch model. */
static int read_batch(struct decide_input *in, json_t *o, const char *path, struct sched_job *job)
{
    json_t *b = json_object_get(o, "batch");
    struct batch_spec *s = &job->batch;
    char p[96];
    int adaptive;

    if (!b)
        return 0;
    snprintf(p, sizeof(p), "%s.batch", path);
    if (!json_is_object(b))
        return bad(in, p, "expected an object");
    if (get_num(in, b, p, "init", 1e-9, 1e12, -1, &s->init_batch) ||
        get_num(in, b, p, "batch", 0, 1e12, 0, &s->batch) ||
        get_num(in, b, p, "max", 0, 1e12, 0, &s->max_batch) ||
        get_num(in, b, p, "min_local", 0, 1e12, 0, &s->min_local) ||
        get_num(in, b, p, "max_local", 0, 1e12, 0, &s->max_local) ||
        get_bool(in, b, p, "adaptive", 0, &adaptive) ||
        get_num(in, b, p, "grad_sqr", 0, 1e300, 0, &s->grad_sqr) ||
        get_num(in, b, p, "grad_var", 0, 1e300, 0, &s->grad_var))
        return -1;
    if (s->init_batch < 0)
        return bad(in, p, "member init is required");
    s->adaptive = adaptive;
    return 0;
}

/* Fits the loss curve when given; fills remaining_epochs when it was not. */
static int read_loss(struct decide_input *in, json_t *o, const char *path, struct sched_job *job,
                     int remaining_given)
{
    json_t *arr, *pt;
    size_t i, n = 0;
    double steps[DECIDE_MAX_POINTS], loss[DECIDE_MAX_POINTS], target, tol;
    if (get_array(in, o, path, "loss_observations", DECIDE_MAX_POINTS, &arr) ||
        get_num(in, o, path, "target_loss", 0, 1e12, -1, &target) ||
        get_num(in, o, path, "loss_tolerance", 0, 1e12, 0.001, &tol))
        return -1;
    for (i = 0; i < json_array_size(arr); i++) {
        pt = json_array_get(arr, i);
        char p[160];
        snprintf(p, sizeof(p), "%s.loss_observations[%zu]", path, i);
        if (!json_is_object(pt))
            return bad(in, p, "expected {\"step\": K, \"loss\": L}");
        if (get_num(in, pt, p, "step", 0, 1e15, -1, &steps[n]) ||
            get_num(in, pt, p, "loss", 1e-300, 1e300, -1, &loss[n]))
            return -1;
        if (steps[n] < 0 || loss[n] < 0)
            return bad(in, p, "step and loss are required");
        n++;
    }
    if (n == 0)
        return 0;
    if (conv_fit(steps, loss, n, &job->conv))
        return bad(in, path, "loss_observations: need at least 3 usable points to fit");
    double spe = job->speed.dataset_size /
                 (job->speed.batch_per_gpu * (job->cur_gpus > 0 ? job->cur_gpus : 1));
    double k = job->epochs_done * spe;
    double left = target >= 0 ? conv_steps_to_loss(&job->conv, k, target)
                              : conv_steps_to_converge(&job->conv, k, spe, tol);
    job->has_fit = isfinite(left);
    job->fit_remaining_epochs = isfinite(left) ? left / spe : 0;
    if (!remaining_given) {
        job->remaining_epochs = isfinite(left) ? left / spe : -1;
        job->remaining_source = isfinite(left) ? SCHED_EST_FIT : SCHED_EST_GIVEN;
    }
    return 0;
}

static int read_model_source(struct decide_input *in, json_t *o, const char *path,
                             struct sched_job *job)
{
    static const char *const names[] = {"none", "profile", "fitted"};
    json_t *j = json_object_get(o, "model_source");
    if (!j)
        return 0;
    for (int i = 0; i < 3; i++)
        if (json_is_string(j) && !strcmp(json_string_value(j), names[i])) {
            job->model_source = (enum sched_model_source)i;
            return 0;
        }
    char p[160];
    snprintf(p, sizeof(p), "%s.model_source", path);
    return bad(in, p, "expected \"none\", \"profile\" or \"fitted\"");
}

static int read_explored(struct decide_input *in, json_t *o, const char *path,
                         struct sched_job *job)
{
    json_t *arr, *v;
    size_t i;
    if (get_array(in, o, path, "explored_s", 4, &arr))
        return -1;
    for (i = 0; i < json_array_size(arr); i++) {
        v = json_array_get(arr, i);
        if (!json_is_number(v) || !(json_number_value(v) >= 0)) {
            char p[160];
            snprintf(p, sizeof(p), "%s.explored_s[%zu]", path, i);
            return bad(in, p, "expected seconds >= 0");
        }
        job->explored_s[i] = json_number_value(v);
    }
    return 0;
}

static int read_scalars(struct decide_input *in, json_t *o, const char *path, struct sched_job *job,
                        int *remaining_given)
{
    long long id, prio, req, lo, hi;
    int el;
    double rem;
    if (get_int(in, o, path, "id", INT64_MIN, INT64_MAX, LLONG_MIN, &id) ||
        get_int(in, o, path, "priority", INT32_MIN, INT32_MAX, 0, &prio) ||
        get_int(in, o, path, "requested_gpus", 1, in->total_gpus, -1, &req) ||
        get_int(in, o, path, "min_gpus", 1, in->total_gpus, 1, &lo) ||
        get_int(in, o, path, "max_gpus", 1, in->total_gpus, in->total_gpus, &hi) ||
        get_bool(in, o, path, "elastic", 1, &el) ||
        get_num(in, o, path, "submit_time", -1e15, 1e15, 0, &job->submit_time) ||
        get_num(in, o, path, "run_time", 0, 1e15, 0, &job->run_time) ||
        get_num(in, o, path, "epochs_done", 0, 1e15, 0, &job->epochs_done) ||
        get_num(in, o, path, "remaining_epochs", -1, 1e15, -2, &rem))
        return -1;
    if (id == LLONG_MIN || req < 0)
        return bad(in, path, "members id and requested_gpus are required");
    if (lo > hi)
        return bad(in, path, "min_gpus is above max_gpus");
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
    return get_num(in, o, path, "last_change_time", -1e15, 1e15, job->submit_time,
                   &job->last_change_time);
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
    return bad(in, path, "kind: expected dp, zero1, zero2, zero3 or offload");
}

/* A plan object {"kind", "tp", "pp", "cpu_cores"} into *c. */
static int read_choice(struct decide_input *in, json_t *o, const char *path,
                       struct plan_choice *c)
{
    long long tp, pp, cores;
    if (!json_is_object(o))
        return bad(in, path, "expected a plan object");
    if (read_kind(in, o, path, &c->kind) ||
        get_int(in, o, path, "tp", 1, PLAN_MAX_DEGREE, 1, &tp) ||
        get_int(in, o, path, "pp", 1, PLAN_MAX_DEGREE, 1, &pp) ||
        get_int(in, o, path, "cpu_cores", 0, 1024, 0, &cores))
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
        return bad(in, path, "supported: expected an array of plan kinds");
    json_array_foreach(arr, i, k)
    {
        int kind = -1;
        for (int x = 0; x < PLAN_NKINDS; x++)
            if (json_is_string(k) && !strcmp(json_string_value(k), plan_kinds[x]))
                kind = x;
        if (kind < 0)
            return bad(in, path, "supported: expected dp, zero1, zero2, zero3 or offload");
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
            return bad(in, p, "expected an object");
        if (get_num(in, pl, p, "params_b", 0, 1e6, 0, &job->plan.params_b) ||
            get_num(in, pl, p, "act_gb", 0, 1e6, 0, &job->plan.act_gb) ||
            get_int(in, pl, p, "max_tp", 1, PLAN_MAX_DEGREE, 1, &tp) ||
            get_int(in, pl, p, "max_pp", 1, PLAN_MAX_DEGREE, 1, &pp) ||
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
static int read_gandiva(struct decide_input *in, json_t *o, const char *path,
                        struct sched_job *job)
{
    long long home, with;
    int susp, rev;

    if (get_bool(in, o, path, "suspended", 0, &susp) ||
        get_int(in, o, path, "home_node", 0, (long long)in->snap.nnodes - 1, -1, &home) ||
        get_num(in, o, path, "gpu_util", 0, 1, 0, &job->gpu_util) ||
        get_num(in, o, path, "gpu_mem_bytes", 0, 1e15, 0, &job->gpu_mem_bytes) ||
        get_int(in, o, path, "packed_with", INT64_MIN, INT64_MAX, LLONG_MIN, &with) ||
        get_num(in, o, path, "rate_alone", 0, 1e12, 0, &job->rate_alone) ||
        get_num(in, o, path, "rate_packed", 0, 1e12, 0, &job->rate_packed) ||
        get_bool(in, o, path, "pack_reverted", 0, &rev))
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

    if (get_int(in, o, path, "user", INT64_MIN, INT64_MAX, 0, &user) ||
        get_num(in, o, path, "declared_epochs", 0, 1e15, 0, &job->declared_epochs) ||
        get_bool(in, o, path, "stops_at_convergence", 0, &conv))
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
    int remaining_given;
    struct sched_job *job = &in->jobs[j];
    snprintf(path, sizeof(path), "$.jobs[%zu]", j);
    if (!json_is_object(o))
        return bad(in, path, "expected an object");
    if (read_scalars(in, o, path, job, &remaining_given) || read_allocation(in, o, path, j) ||
        read_speed(in, o, path, j, job) || read_batch(in, o, path, job) ||
        read_loss(in, o, path, job, remaining_given) || read_explored(in, o, path, job) ||
        read_gandiva(in, o, path, job) || read_plan(in, o, path, job) ||
        read_model_source(in, o, path, job))
        return -1;
    return read_evidence(in, o, path, job, remaining_given);
}

/* "users": [{"id", "share", "max_gpus"}]. */
static int read_users(struct decide_input *in, json_t *root)
{
    json_t *arr;
    char p[64];

    if (get_array(in, root, "$", "users", 100000, &arr))
        return -1;
    in->snap.nusers = arr ? json_array_size(arr) : 0;
    in->users = calloc(in->snap.nusers + 1, sizeof(*in->users));
    if (!in->users)
        return bad(in, "$.users", "out of memory");
    for (size_t u = 0; u < in->snap.nusers; u++) {
        json_t *o = json_array_get(arr, u);
        long long id, max;
        snprintf(p, sizeof(p), "$.users[%zu]", u);
        if (!json_is_object(o))
            return bad(in, p, "expected {\"id\": ID, \"share\": W, \"max_gpus\": N}");
        if (get_int(in, o, p, "id", INT64_MIN, INT64_MAX, LLONG_MIN, &id) ||
            get_num(in, o, p, "share", 0, 1e9, 1, &in->users[u].share) ||
            get_int(in, o, p, "max_gpus", 0, INT_MAX, 0, &max))
            return -1;
        if (id == LLONG_MIN)
            return bad(in, p, "member id is required");
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

    if (get_array(in, root, "$", "finished_run_s", 1000000, &arr))
        return -1;
    in->snap.nfinished = arr ? json_array_size(arr) : 0;
    in->finished = calloc(in->snap.nfinished + 1, sizeof(*in->finished));
    if (!in->finished)
        return bad(in, "$.finished_run_s", "out of memory");
    for (size_t k = 0; k < in->snap.nfinished; k++) {
        json_t *v = json_array_get(arr, k);
        snprintf(p, sizeof(p), "$.finished_run_s[%zu]", k);
        if (!json_is_number(v) || !(json_number_value(v) >= 0) ||
            !isfinite(json_number_value(v)))
            return bad(in, p, "expected a number of seconds >= 0");
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
        return bad(in, "$", "expected an object with nodes and jobs");
    if (get_num(in, root, "$", "now", -1e15, 1e15, 0, &in->snap.now) ||
        get_int(in, root, "$", "seed", 0, INT64_MAX, 0, &seed) ||
        get_num(in, root, "$", "resize_cost_s", 0, 1e9, 10, &in->snap.resize_cost_s) ||
        get_num(in, root, "$", "min_resize_interval_s", 0, 1e9, 0,
                &in->snap.min_resize_interval_s) ||
        get_num(in, root, "$", "explore_stage_s", 0, 1e9, 0, &in->snap.explore_stage_s) ||
        get_num(in, root, "$", "quantum_s", 0, 1e9, 0, &in->snap.quantum_s) ||
        get_num(in, root, "$", "gpu_mem_bytes", 0, 1e15, 0, &in->snap.gpu_mem_bytes) ||
        get_num(in, root, "$", "max_wait_s", 0, 1e15, 0, &in->snap.max_wait_s) ||
        get_num(in, root, "$", "queue_threshold_gpu_s", 0, 1e15, 0,
                &in->snap.queue_threshold_gpu_s) ||
        get_num(in, root, "$", "starvation_knob", 0, 1e6, 0, &in->snap.starvation_knob) ||
        read_users(in, root) || read_finished(in, root) || read_nodes(in, root) ||
        get_array(in, root, "$", "jobs", 1000000, &arr))
        return -1;
    in->snap.seed = (uint64_t)seed;
    if ((pol = json_object_get(root, "policy")) && !json_is_string(pol))
        return bad(in, "$.policy", "expected a policy name");
    in->policy = pol ? json_string_value(pol) : NULL;
    in->njobs = arr ? json_array_size(arr) : 0;
    in->jobs = calloc(in->njobs ? in->njobs : 1, sizeof(*in->jobs));
    in->slots = calloc(in->njobs ? in->njobs : 1, sizeof(*in->slots));
    in->steps = calloc(in->njobs ? in->njobs : 1, sizeof(*in->steps));
    if (!in->jobs || !in->slots || !in->steps)
        return bad(in, "$", "out of memory");
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
