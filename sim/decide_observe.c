/* decide_observe: a job's observations in `ringmaster-sim decide`'s snapshot (docs/decide.md):
 * its speed observations fitted into its models (per gpu_type when they name one), its batch
 * model, its loss observations, its model source and its time explored per GPU type. */
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

/* The GPU model and one factor of the nodes whose gpu_type is name (case aside). Returns 0, or
 * -1 when no node has it. */
static int type_of_name(const struct decide_input *in, const char *name, int *model, double *speed)
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
                      const struct speed_obs *obs, const int *model, const double *speed, size_t n)
{
    struct learn_obs *lo = calloc(n, sizeof(*lo));
    struct sched_type_speed *types = calloc(LEARN_MAX_TYPES, sizeof(*types));
    if (!lo || !types) {
        free(lo);
        free(types);
        return decide_bad(in, path, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        lo[i] = (struct learn_obs){.w = obs[i].w,
                                   .nodes = obs[i].nodes,
                                   .gpu_model = model[i],
                                   .gpu_speed = speed[i],
                                   .step_s = obs[i].step_s,
                                   .m = obs[i].m,
                                   .seconds = 1,
                                   .link = obs[i].link};
    in->steps[j] = (struct learn_job_steps){
        .obs = lo, .nobs = n, .types = types, .cap = LEARN_MAX_TYPES, .max_local_model = -1};
    in->typed = 1;
    learn_fit_measured(job, lo, n);
    if (job->measured_sizes < 2)
        return 0;
    if (learn_fit_speed(&job->speed, lo, n))
        return decide_bad(in, path, "speed_observations: the speed model cannot be fitted");
    job->model_source = SCHED_MODEL_FITTED;
    return 0;
}

int decide_read_speed(struct decide_input *in, json_t *o, const char *path, size_t j,
                      struct sched_job *job)
{
    json_t *arr, *pt;
    size_t i, n = 0;
    int w[DECIDE_MAX_POINTS], placed = 0;
    double step[DECIDE_MAX_POINTS], m, d;
    long long per_node;
    struct speed_obs *obs;
    if (decide_get_array(in, o, path, "speed_observations", DECIDE_MAX_POINTS, &arr) ||
        decide_get_num(in, o, path, "batch_per_gpu", 1, 1e9, 128, &m) ||
        decide_get_num(in, o, path, "dataset_size", 1, 1e15, 50000, &d) ||
        decide_get_int(in, o, path, "gpus_per_node", 0, 1024, 0, &per_node))
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
        return decide_bad(in, path, "out of memory");
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
            return decide_bad(in, p, "expected {\"w\": GPUS, \"step_s\": SECONDS}");
        }
        long long nodes;
        double om;
        if (decide_get_int(in, pt, p, "w", 1, 1000000, -1, &wi) ||
            decide_get_num(in, pt, p, "step_s", 1e-9, 1e6, -1, &step[n]) ||
            decide_get_int(in, pt, p, "nodes", 1, 1000000, 0, &nodes) ||
            decide_get_num(in, pt, p, "m", 1e-9, 1e9, m, &om)) {
            free(obs);
            free(model);
            free(speed);
            return -1;
        }
        json_t *gt = json_object_get(pt, "gpu_type"), *lt = json_object_get(pt, "link");
        int link = !lt ? 0 : json_is_string(lt) ? speed_link_parse(json_string_value(lt)) : -1;
        if (lt && link >= 0 && link <= SPEED_LINK_PCIE && nodes == 0)
            nodes = 1; /* a class inside one node says where it ran */
        const char *fault = wi < 0 || step[n] < 0       ? "w and step_s are required"
                            : nodes > wi                ? "nodes: at most w"
                            : lt && link < 0
                                ? "link: expected \"island\", \"pcie\", \"switch\" or \"cross\""
                            : lt && link >= SPEED_LINK_SWITCH && nodes < 2
                                ? "link: switch and cross span nodes >= 2"
                            : lt && link <= SPEED_LINK_PCIE && nodes > 1
                                ? "link: island and pcie are on one node"
                            : gt && !json_is_string(gt) ? "gpu_type: expected a GPU type name"
                            : gt && type_of_name(in, json_string_value(gt), &model[n], &speed[n])
                                ? "gpu_type: no node has this gpu_type"
                                : NULL;
        typed += gt != NULL;
        if (fault) {
            free(obs);
            free(model);
            free(speed);
            return decide_bad(in, p, fault);
        }
        placed |= nodes > 0 || lt || json_object_get(pt, "m") != NULL;
        if (nodes == 0)
            nodes = speed_packed_nodes(&job->speed, (int)wi);
        obs[n] = (struct speed_obs){(int)wi, (int)nodes, om, step[n], (enum speed_link)link};
        w[n++] = (int)wi;
    }
    int rc;
    if (typed > 0 && typed < n)
        rc = decide_bad(in, path, "speed_observations: a gpu_type on every observation or on none");
    else if (typed > 0)
        rc = read_typed(in, path, j, job, obs, model, speed, n);
    else if ((placed ? speed_fit_obs(&job->speed, obs, n) : speed_fit(&job->speed, w, step, n)))
        rc = decide_bad(in, path, "speed_observations: the speed model cannot be fitted");
    else
        rc = 0, job->model_source = SCHED_MODEL_FITTED;
    free(obs);
    free(model);
    free(speed);
    return rc;
}

/* Optional "batch" (goodput.h's batch_spec): {"init", "batch", "max", "min_local",
 * "max_local", "adaptive", "grad_sqr", "grad_var"}; without it the job has no batch model. */
int decide_read_batch(struct decide_input *in, json_t *o, const char *path, struct sched_job *job)
{
    json_t *b = json_object_get(o, "batch");
    struct batch_spec *s = &job->batch;
    char p[96];
    int adaptive;

    if (!b)
        return 0;
    snprintf(p, sizeof(p), "%s.batch", path);
    if (!json_is_object(b))
        return decide_bad(in, p, "expected an object");
    if (decide_get_num(in, b, p, "init", 1e-9, 1e12, -1, &s->init_batch) ||
        decide_get_num(in, b, p, "batch", 0, 1e12, 0, &s->batch) ||
        decide_get_num(in, b, p, "max", 0, 1e12, 0, &s->max_batch) ||
        decide_get_num(in, b, p, "min_local", 0, 1e12, 0, &s->min_local) ||
        decide_get_num(in, b, p, "max_local", 0, 1e12, 0, &s->max_local) ||
        decide_get_bool(in, b, p, "adaptive", 0, &adaptive) ||
        decide_get_num(in, b, p, "grad_sqr", 0, 1e300, 0, &s->grad_sqr) ||
        decide_get_num(in, b, p, "grad_var", 0, 1e300, 0, &s->grad_var))
        return -1;
    if (s->init_batch < 0)
        return decide_bad(in, p, "member init is required");
    s->adaptive = adaptive;
    return 0;
}

/* Fits the loss curve when given; fills remaining_epochs when it was not. */
int decide_read_loss(struct decide_input *in, json_t *o, const char *path, struct sched_job *job,
                     int remaining_given)
{
    json_t *arr, *pt;
    size_t i, n = 0;
    double steps[DECIDE_MAX_POINTS], loss[DECIDE_MAX_POINTS], target, tol;
    if (decide_get_array(in, o, path, "loss_observations", DECIDE_MAX_POINTS, &arr) ||
        decide_get_num(in, o, path, "target_loss", 0, 1e12, -1, &target) ||
        decide_get_num(in, o, path, "loss_tolerance", 0, 1e12, 0.001, &tol))
        return -1;
    for (i = 0; i < json_array_size(arr); i++) {
        pt = json_array_get(arr, i);
        char p[160];
        snprintf(p, sizeof(p), "%s.loss_observations[%zu]", path, i);
        if (!json_is_object(pt))
            return decide_bad(in, p, "expected {\"step\": K, \"loss\": L}");
        if (decide_get_num(in, pt, p, "step", 0, 1e15, -1, &steps[n]) ||
            decide_get_num(in, pt, p, "loss", 1e-300, 1e300, -1, &loss[n]))
            return -1;
        if (steps[n] < 0 || loss[n] < 0)
            return decide_bad(in, p, "step and loss are required");
        n++;
    }
    if (n == 0)
        return 0;
    if (conv_fit(steps, loss, n, &job->conv))
        return decide_bad(in, path, "loss_observations: need at least 3 usable points to fit");
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

int decide_read_model_source(struct decide_input *in, json_t *o, const char *path,
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
    return decide_bad(in, p, "expected \"none\", \"profile\" or \"fitted\"");
}

int decide_read_explored(struct decide_input *in, json_t *o, const char *path,
                         struct sched_job *job)
{
    json_t *arr, *v;
    size_t i;
    if (decide_get_array(in, o, path, "explored_s", 4, &arr))
        return -1;
    for (i = 0; i < json_array_size(arr); i++) {
        v = json_array_get(arr, i);
        if (!json_is_number(v) || !(json_number_value(v) >= 0)) {
            char p[160];
            snprintf(p, sizeof(p), "%s.explored_s[%zu]", path, i);
            return decide_bad(in, p, "expected seconds >= 0");
        }
        job->explored_s[i] = json_number_value(v);
    }
    return 0;
}
