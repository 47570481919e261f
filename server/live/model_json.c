/* model_json: the job's `model` object of the API (model.h): the remaining work
 * (live_model_remaining_json), its speed model with its curve and per GPU type
 * (speed.by_gpu_model), its convergence fit and the fit's own evidence (live_model_json). */
#include "model.h"

#include <math.h>
#include <stdlib.h>

#include "plan.h"
#include "progress.h"
#include "snap.h"

static json_t *num_or_null(double v)
{
    return v >= 0 && isfinite(v) ? json_real(v) : json_null();
}

static const char *const type_sources[] = {"given", "measured", "estimated"};

/* What a job's model on one GPU type is and says: the type (name, index, its one factor), where
 * the model comes from (source, the uncertainty of an estimate, the sizes measured), and its
 * predictions with speed model sp (absolute: the type's own, or the reference one with its
 * compute divided by the factor) and batch model b: at w GPUs (step time, samples per second,
 * seconds to finish the remaining work) and the curve at 1, 2, 4, ... 64 GPUs. */
struct type_view {
    const char *name;
    int index;
    double factor;
    const char *source;
    double uncertainty; /* < 0: none stated */
    int sizes;
    double max_local;   /* <= 0: the job's */
    struct speed_model sp;
    struct batch_spec b;
};

static json_t *type_point(const struct live_model *m, const struct type_view *v, int w)
{
    double t = speed_step_time(&v->sp, w);
    if (!isfinite(t) || t <= 0)
        t = -1;
    double left = live_model_remaining_epochs(m, w);
    return json_pack("{s:i, s:o, s:o, s:o}", "gpus", w, "step_time_s", num_or_null(t),
                     "samples_per_second",
                     num_or_null(t > 0 ? w * v->sp.batch_per_gpu / t : -1), "remaining_s",
                     num_or_null(progress_remaining_s(left, &v->sp, &v->b, w)));
}

static json_t *type_json(const struct live_model *m, const struct type_view *v, int w)
{
    json_t *curve = json_array();
    for (int g = 1; g <= 64; g *= 2)
        json_array_append_new(curve, type_point(m, v, g));
    json_t *e = json_pack("{s:s, s:i, s:f, s:s, s:o, s:i, s:o, s:o}", "gpu_model", v->name,
                          "index", v->index, "speed", v->factor, "source", v->source,
                          "uncertainty", v->uncertainty >= 0 ? json_real(v->uncertainty)
                                                             : json_null(),
                          "measured_sizes", v->sizes, "max_local",
                          num_or_null(v->max_local > 0 ? v->max_local : -1), "curve", curve);
    json_t *now = type_point(m, v, w);
    if (e && now)
        json_object_update(e, now);
    json_decref(now);
    return e;
}

/* The type view of the job's own entry t (types[]), named name. */
static struct type_view own_view(const struct live_model *m, const struct sched_type_speed *t,
                                 const char *name)
{
    unsigned src = (unsigned)t->source < 3 ? (unsigned)t->source : 0;
    int index;
    double factor = 1, mem;
    if (!live_snap_gpu_model(name, &index, &factor, &mem))
        factor = 1;
    struct type_view v = {.name = name, .index = t->gpu_model, .factor = factor,
                          .source = type_sources[src],
                          .uncertainty = t->source == SCHED_TYPE_ESTIMATED ? t->uncertainty : -1,
                          .sizes = t->measured_sizes, .max_local = t->max_local, .sp = t->speed,
                          .b = m->batch};
    if (t->max_local > 0)
        v.b.max_local = t->max_local;
    return v;
}

/* The type view of a GPU type the job has no entry for: its reference model sp with the
 * compute terms divided by the type's one factor (plan.h), source "factor". */
static struct type_view factor_view(const struct live_model *m, const struct speed_model *sp,
                                    const struct snap_node *n)
{
    double f = n->gpu_speed > 0 && isfinite(n->gpu_speed) ? n->gpu_speed : 1;
    struct type_view v = {.name = n->gpu_name ? n->gpu_name : "", .index = n->gpu_model,
                          .factor = f, .source = "factor", .uncertainty = -1, .sp = *sp,
                          .b = m->batch};
    v.sp.theta[0] /= f;
    v.sp.theta[1] /= f;
    return v;
}

/* Whether the job has an entry for GPU model index g among its first n types. */
static int has_type(const struct live_model *m, size_t n, int g)
{
    for (size_t k = 0; k < n; k++)
        if (m->types[k].gpu_model == g)
            return 1;
    return 0;
}

/* Per GPU type: the job's own models (types[], measured or estimated by the round's
 * learning, learn_types.h), then each other GPU model of the cluster's nodes (s; NULL: none)
 * at its reference model (sp) times that model's one factor. */
static json_t *by_model_json(const struct live_model *m, const struct speed_model *sp, int w,
                             const struct live_snap *s)
{
    json_t *a = json_array();
    size_t n = m->ntypes < LIVE_MAX_GPU_TYPES ? m->ntypes : LIVE_MAX_GPU_TYPES;
    for (size_t k = 0; k < n; k++) {
        struct type_view v = own_view(m, &m->types[k], m->type_names[k]);
        json_array_append_new(a, type_json(m, &v, w));
    }
    for (size_t i = 0; s && i < s->nnodes; i++) {
        const struct snap_node *node = &s->nodes[i];
        int seen = has_type(m, n, node->gpu_model);
        for (size_t k = 0; k < i && !seen; k++)
            seen = s->nodes[k].gpu_model == node->gpu_model;
        if (seen || node->ngpus <= 0)
            continue;
        struct type_view v = factor_view(m, sp, node);
        json_array_append_new(a, type_json(m, &v, w));
    }
    return a;
}

/* speed: theta, and per GPU count 1..64 (powers of two) the predicted step time, samples
 * per second and seconds to finish, as curve [{gpus, step_time_s, samples_per_second,
 * remaining_s}]. */
static json_t *speed_json(const struct live_model *m, int w, const struct live_snap *s)
{
    json_t *theta = json_array(), *curve = json_array();
    for (int k = 0; k < SPEED_NFEATURES; k++)
        json_array_append_new(theta, json_real(m->speed.theta[k]));
    for (int w = 1; w <= 64; w *= 2) {
        double t = speed_step_time(&m->speed, w);
        json_array_append_new(curve,
                              json_pack("{s:i, s:o, s:o, s:o}", "gpus", w, "step_time_s",
                                        num_or_null(t), "samples_per_second",
                                        num_or_null(t > 0 ? w * m->speed.batch_per_gpu / t : -1),
                                        "remaining_s", num_or_null(live_model_remaining_s(m, w))));
    }
    return json_pack("{s:o, s:f, s:f, s:o, s:s, s:s, s:o}", "theta", theta, "rmse_s", m->speed.rmse,
                     "batch_per_gpu", m->speed.batch_per_gpu, "curve", curve, "reference_gpu",
                     "v100", "measured_on", m->measured_on, "by_gpu_model",
                     by_model_json(m, &m->speed, w, s));
}

/* The steps of a count (< 0 unknown: null) as an integer. */
static json_t *steps_or_null(double v)
{
    return v >= 0 && isfinite(v) && v < 9e18 ? json_integer((json_int_t)llround(v)) : json_null();
}

/* Why a part of the remaining work is not known (null when all of it is). */
static const char *remaining_reason(const struct live_model *m, double seconds)
{
    if (!m->has_estimate)
        return "waiting for the scheduler's first estimate";
    if (seconds < 0)
        return !live_model_planned_speed(m) ? "learning its speed"
                                             : "its speed model gives no rate at this size";
    return NULL;
}

/* The scheduler's seconds to go at w GPUs (< 0 unknown): its estimate's epochs at its rate. */
static double est_seconds(const struct live_model *m, int w)
{
    return m->has_estimate ? live_model_remaining_s(m, w) : -1;
}

json_t *live_model_remaining_json(const struct live_model *m, int cur_gpus)
{
    int w = cur_gpus > 0 ? cur_gpus : 1;
    double ep = m->has_estimate ? m->estimate_epochs : -1;
    double st = m->has_estimate ? m->estimate_steps : -1;
    double sec = est_seconds(m, w);
    const char *src = m->has_estimate ? sched_estimate_source_name(m->estimate_source) : "none";
    const char *why = remaining_reason(m, sec);
    json_t *rem = json_pack("{s:o, s:o, s:o, s:s, s:o, s:f, s:i, s:I}", "epochs", num_or_null(ep),
                            "steps", steps_or_null(st), "seconds", num_or_null(sec), "source",
                            src, "reason", why ? json_string(why) : json_null(), "epochs_done",
                            m->epochs_done, "gpus", w, "as_of_step",
                            (json_int_t)llround(m->last_step));
    return json_pack("{s:o, s:o, s:o, s:s, s:o}", "remaining_epochs", num_or_null(ep),
                     "remaining_steps", steps_or_null(st), "predicted_remaining_s",
                     num_or_null(sec), "remaining_source", src, "remaining", rem);
}

/* convergence: b0, b1, b2, the fit's error, and the steps and seconds still to go at w GPUs as
 * the scheduler counts them (its estimate, as "remaining"; the fit's own are in "fit"). */
static json_t *conv_json(const struct live_model *m, int w)
{
    return json_pack("{s:f, s:f, s:f, s:f, s:I, s:o, s:o}", "b0", m->conv.b0, "b1", m->conv.b1,
                     "b2", m->conv.b2, "rmse", m->conv.rmse, "points", (json_int_t)m->conv.npoints,
                     "steps_remaining", steps_or_null(m->has_estimate ? m->estimate_steps : -1),
                     "seconds_remaining", num_or_null(est_seconds(m, w)));
}

/* fit: what the convergence fit of the losses alone says (evidence for the estimate, not the
 * answer): its epochs and steps to go at w GPUs (0: it says converged; null: it never
 * converges), the loss it flattens at and the tolerance, and whether the estimate is it. */
static json_t *fit_json(const struct live_model *m, int w)
{
    double ep = live_model_fit_epochs(m, w);
    double per = m->dataset_size / (w * m->speed.batch_per_gpu);
    int used = m->has_estimate && m->estimate_source == SCHED_EST_FIT;
    return json_pack("{s:o, s:o, s:f, s:f, s:b}", "remaining_epochs", num_or_null(ep),
                     "remaining_steps", steps_or_null(ep >= 0 && per > 0 ? ep * per : -1),
                     "loss_floor", m->conv.b2, "loss_tolerance", PROGRESS_LOSS_TOLERANCE, "used",
                     used);
}

/* live_model_json() of m, its source named source. */
static json_t *model_json(const struct live_model *m, int cur_gpus, const char *source,
                          const struct live_snap *s)
{
    int w = cur_gpus > 0 ? cur_gpus : 1;
    json_t *j = json_pack("{s:s, s:I, s:f, s:f, s:i}", "source", source, "metrics",
                          (json_int_t)m->metrics_seen, "dataset_size", m->dataset_size,
                          "epochs_done", m->epochs_done, "world_sizes_measured", m->nworld_sizes);
    json_t *rem = live_model_remaining_json(m, cur_gpus);
    if (!j || !rem || json_object_update(j, rem) < 0) {
        json_decref(j);
        json_decref(rem);
        return NULL;
    }
    json_decref(rem);
    if (m->class_name[0])
        json_object_set_new(j, "class", json_string(m->class_name));
    json_object_set_new(j, "speed",
                        m->source != SCHED_MODEL_NONE ? speed_json(m, w, s) : json_null());
    json_object_set_new(j, "convergence", m->conv.fitted ? conv_json(m, w) : json_null());
    json_object_set_new(j, "fit", m->conv.fitted ? fit_json(m, w) : json_null());
    return j;
}

json_t *live_model_json(const struct live_model *m, int cur_gpus, const struct live_snap *s)
{
    static const char *const src[] = {"none", "profile", "fitted"};
    if (m->source != SCHED_MODEL_NONE || !m->learned)
        return model_json(m, cur_gpus, src[m->source], s);
    /* Learned from one size: shown as the model the policies planned with (source
     * "learned"), its speed the learned one. */
    struct live_model *v = malloc(sizeof(*v));
    if (!v)
        return NULL;
    *v = *m;
    v->speed = m->learned_speed;
    v->source = SCHED_MODEL_FITTED;
    json_t *j = model_json(v, cur_gpus, "learned", s);
    free(v);
    return j;
}
