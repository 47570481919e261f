#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "plan.h"
#include "profile.h"
#include "snap.h"
#include "store/db.h"

#define DEFAULT_DATASET 50000.0
#define LOSS_TOLERANCE 0.001  /* an epoch improving the loss by less: converged */
#define SCHED_MODEL_PAGE 4096 /* (step, loss) points read per query */
#define SCHED_MODEL_PAGE_TEXT "4096"
#define MAX_WORLD_SIZES 64

/* A class's speed model, loaded at most once. */
struct class_model {
    char name[32];
    int tried, ok;
    struct speed_model speed;
    double dataset_size;
};

struct sched_models {
    struct sched_model **items; /* by job id; each allocated alone: pointers stay valid */
    size_t n, cap;
    struct class_model classes[PROFILE_NAPPS + 1];
};

struct sched_models *sched_models_create(void)
{
    struct sched_models *ms = calloc(1, sizeof(*ms));
    if (!ms)
        return NULL;
    snprintf(ms->classes[0].name, sizeof(ms->classes[0].name), "resnet110");
    for (size_t i = 0; i < PROFILE_NAPPS; i++)
        snprintf(ms->classes[i + 1].name, sizeof(ms->classes[i + 1].name), "%s",
                 profile_app_name(i));
    return ms;
}

void sched_models_destroy(struct sched_models *ms)
{
    if (!ms)
        return;
    for (size_t i = 0; i < ms->n; i++)
        free(ms->items[i]);
    free(ms->items);
    free(ms);
}

/* The paper's ResNet-110 on CIFAR-10 (DESIGN.md): 128 images per GPU, 50,000 images. */
static int load_resnet110(struct class_model *cm)
{
    static const int w[] = {1, 2, 4, 8};
    static const double step_s[] = {0.4025, 0.4272, 0.4443, 0.4702};
    cm->speed.batch_per_gpu = 128;
    cm->dataset_size = 50000;
    cm->speed.dataset_size = cm->dataset_size;
    return speed_fit(&cm->speed, w, step_s, 4);
}

/* A measured profile: the step times at its most common per-GPU batch. */
static int load_profile(struct class_model *cm)
{
    char err[256];
    struct profile *p = profile_load(cm->name, err, sizeof(err));
    if (!p) {
        log_info("scheduler: no profile for class %s (%s): such jobs explore", cm->name, err);
        return -1;
    }
    int m = profile_common_local_bsz(p);
    size_t n = 0;
    struct speed_obs *obs = calloc(p->placements.n + 1, sizeof(*obs));
    for (size_t i = 0; obs && i < p->placements.n; i++)
        if (p->placements.local_bsz[i] == m)
            obs[n++] = (struct speed_obs){p->placements.w[i], p->placements.nodes[i], m,
                                          p->placements.step_time[i]};
    cm->dataset_size = DEFAULT_DATASET;
    if (p->nvalidations > 0 && p->validations[0].n > 0)
        cm->dataset_size = p->validations[0].global_bsz * p->validations[0].iteration[0];
    cm->speed.batch_per_gpu = m;
    cm->speed.dataset_size = cm->dataset_size;
    cm->speed.gpus_per_node = 4;
    int rc = obs && n > 0 && m > 0 ? speed_fit_obs(&cm->speed, obs, n) : -1;
    free(obs);
    profile_destroy(p);
    return rc;
}

static const struct class_model *class_find(struct sched_models *ms, const char *name)
{
    for (size_t i = 0; i < PROFILE_NAPPS + 1; i++) {
        struct class_model *cm = &ms->classes[i];
        if (strcmp(cm->name, name) != 0)
            continue;
        if (!cm->tried) {
            cm->tried = 1;
            cm->ok = (i == 0 ? load_resnet110(cm) : load_profile(cm)) == 0;
        }
        return cm->ok ? cm : NULL;
    }
    return NULL;
}

static double obj_num(const json_t *o, const char *k, double def)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) && json_number_value(v) > 0 ? json_number_value(v) : def;
}

/* Fills a new entry from the job's declaration. */
static void declare(struct sched_models *ms, struct sched_model *m, const char *model_json,
                    int batch)
{
    json_t *o = model_json ? json_loads(model_json, 0, NULL) : NULL;
    const char *cls = json_string_value(json_object_get(o, "class"));
    const struct class_model *cm = cls ? class_find(ms, cls) : NULL;
    m->dataset_size = DEFAULT_DATASET;
    m->target_epochs = -1;
    if (cm) {
        snprintf(m->class_name, sizeof(m->class_name), "%s", cm->name);
        m->speed = cm->speed;
        m->dataset_size = cm->dataset_size;
        m->source = SCHED_MODEL_PROFILE;
    }
    m->dataset_size = obj_num(o, "dataset_size", m->dataset_size);
    m->target_epochs = obj_num(o, "epochs", -1);
    if (!cm)
        m->speed.batch_per_gpu = batch;
    m->speed.dataset_size = m->dataset_size;
    json_decref(o);
}

struct sched_model *sched_models_get(struct sched_models *ms, int64_t job_id,
                                     const char *model_json, int batch_per_gpu, long round)
{
    size_t lo = 0, hi = ms->n; /* items are kept in job id order: the first >= job_id */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ms->items[mid]->job_id < job_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < ms->n && ms->items[lo]->job_id == job_id) {
        ms->items[lo]->round = round;
        return ms->items[lo];
    }
    if (ms->n == ms->cap) {
        size_t cap = ms->cap ? 2 * ms->cap : 64;
        struct sched_model **items = realloc(ms->items, cap * sizeof(*items));
        if (!items)
            return NULL;
        ms->items = items;
        ms->cap = cap;
    }
    struct sched_model *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    memmove(ms->items + lo + 1, ms->items + lo, (ms->n - lo) * sizeof(*ms->items));
    ms->items[lo] = m;
    ms->n++;
    m->job_id = job_id;
    m->round = round;
    m->changed = 1;
    declare(ms, m, model_json, batch_per_gpu > 0 ? batch_per_gpu : 1);
    return m;
}

void sched_models_prune(struct sched_models *ms, long round)
{
    size_t k = 0;
    for (size_t i = 0; i < ms->n; i++) {
        if (ms->items[i]->round == round)
            ms->items[k++] = ms->items[i];
        else
            free(ms->items[i]);
    }
    ms->n = k;
}

/* Reads the job's (step, loss) points beyond the last one read into its fitter, a page at a
 * time (points are read in step order: a late report of an older step is not read).
 * Returns the points read, or -1 on a database error. */
static long long read_new_points(struct sched_model *m, PGconn *c, const char *id)
{
    long long got = 0;
    for (;;) {
        char after[32];
        snprintf(after, sizeof(after), "%.0f", m->points_read > 0 ? m->last_step : -1.0);
        const char *p[] = {id, after};
        PGresult *r = db_exec(c,
                              "SELECT step, loss FROM job_metrics WHERE job_id = $1"
                              " AND step > $2::bigint AND loss > 0 AND loss < 'Infinity'"
                              " ORDER BY step LIMIT " SCHED_MODEL_PAGE_TEXT,
                              2, p);
        if (!db_ok(r)) {
            PQclear(r);
            return -1;
        }
        int n = PQntuples(r);
        for (int i = 0; i < n; i++) {
            m->last_step = strtod(PQgetvalue(r, i, 0), NULL);
            sched_fit_series_add(&m->points, m->last_step, strtod(PQgetvalue(r, i, 1), NULL));
        }
        PQclear(r);
        m->points_read += n;
        got += n;
        if (n < SCHED_MODEL_PAGE)
            return got;
    }
}

/* The convergence model from the job's points, refitted when new ones came. */
static int refit_conv(struct sched_model *m, PGconn *c, const char *id)
{
    long long got = read_new_points(m, c, id);
    if (got < 0)
        return -1;
    struct conv_model cm;
    const struct sched_fit_series *s = &m->points;
    if (got > 0 && s->n >= 3 && conv_fit(s->step, s->loss, s->n, &cm) == 0)
        m->conv = cm;
    return 0;
}

/* The speed of the GPU model named (sched_snap's table; unknown names and '' count as the
 * reference) and notes the name in m->measured_on. */
static double measured_speed(struct sched_model *m, const char *name)
{
    int index;
    double speed = 1.0, mem;
    if (!sched_snap_gpu_model(name, &index, &speed, &mem))
        speed = 1.0;
    const char *word = name[0] ? name : "unknown";
    size_t len = strlen(m->measured_on);
    if (!strstr(m->measured_on, word) && len + strlen(word) + 2 < sizeof(m->measured_on))
        snprintf(m->measured_on + len, sizeof(m->measured_on) - len, "%s%s", len ? ", " : "", word);
    return speed;
}

/* Reads the job's sums per (world size, GPU model) into obs (up to MAX_WORLD_SIZES); also
 * epochs done and the seconds run at 1, 2, 4, 8 GPUs (exploration). Returns the number of
 * rows, or -1 on a database error. */
static int read_sums(struct sched_model *m, PGconn *c, const char *id, struct sched_fit_obs *obs)
{
    const char *p[] = {id};
    PGresult *r = db_exec(
        c,
        "SELECT world_size, sum_seconds / timed, sum_seconds, sum_samples,"
        " gpu_model, sum_samples / timed FROM job_metric_sums WHERE job_id = $1 AND timed > 0"
        " ORDER BY world_size, gpu_model LIMIT 64",
        1, p);
    if (!db_ok(r)) {
        PQclear(r);
        return -1;
    }
    double samples = 0;
    int n = PQntuples(r), prev_w = 0;
    m->nworld_sizes = 0;
    m->measured_on[0] = '\0';
    memset(m->explored_s, 0, sizeof(m->explored_s));
    for (int i = 0; i < n; i++) {
        int w = atoi(PQgetvalue(r, i, 0));
        obs[i] = (struct sched_fit_obs){w, strtod(PQgetvalue(r, i, 1), NULL),
                                        measured_speed(m, PQgetvalue(r, i, 4)), 0};
        if (m->own_batch && w > 0)
            obs[i].m = strtod(PQgetvalue(r, i, 5), NULL) / w;
        samples += PQgetisnull(r, i, 3) ? 0 : strtod(PQgetvalue(r, i, 3), NULL);
        for (int k = 0; k < SCHED_EXPLORE_STAGES; k++)
            if (w == 1 << k)
                m->explored_s[k] += strtod(PQgetvalue(r, i, 2), NULL);
        m->nworld_sizes += w != prev_w;
        prev_w = w;
    }
    m->epochs_done = m->dataset_size > 0 ? samples / m->dataset_size : 0;
    PQclear(r);
    return n;
}

/* The speed model from the mean step time at each world size and GPU model, normalised to
 * the reference GPU. Read from the running sums that a trigger keeps (sql/005, sql/011),
 * not from every report. */
static int refit_speed(struct sched_model *m, PGconn *c, const char *id)
{
    struct sched_fit_obs obs[MAX_WORLD_SIZES];
    int n = read_sums(m, c, id, obs);
    if (n < 0)
        return -1;
    struct speed_model sm = m->speed;
    sm.gpus_per_node = 0;
    if (m->nworld_sizes >= 2 && sched_fit_speed(&sm, obs, (size_t)n) == 0) {
        m->speed = sm;
        m->source = SCHED_MODEL_FITTED;
    }
    return 0;
}

int sched_model_refresh(struct sched_model *m, PGconn *c, long long nmetrics)
{
    if (nmetrics == m->metrics_seen)
        return 0;
    char id[24];
    snprintf(id, sizeof(id), "%lld", (long long)m->job_id);
    if (refit_conv(m, c, id) < 0 || refit_speed(m, c, id) < 0)
        return -1;
    m->metrics_seen = nmetrics;
    m->changed = 1;
    return 1;
}

double sched_model_fit_epochs(const struct sched_model *m, int w)
{
    if (!m->conv.fitted || w < 1)
        return -1;
    double spe = m->dataset_size / (w * m->speed.batch_per_gpu);
    double steps = conv_steps_to_converge(&m->conv, m->last_step, spe, LOSS_TOLERANCE);
    return isfinite(steps) ? steps / spe : -1;
}

double sched_model_remaining_epochs(const struct sched_model *m, int w)
{
    if (m->has_estimate)
        return m->estimate_epochs;
    if (m->target_epochs > 0)
        return fmax(0, m->target_epochs - m->epochs_done);
    if (!m->conv.fitted || w < 1)
        return -1;
    double spe = m->dataset_size / (w * m->speed.batch_per_gpu);
    double steps = conv_steps_to_converge(&m->conv, m->last_step, spe, LOSS_TOLERANCE);
    return isfinite(steps) ? steps / spe : -1;
}

double sched_model_remaining_s(const struct sched_model *m, int w)
{
    if (m->source == SCHED_MODEL_NONE || w < 1)
        return -1;
    double ep = sched_model_remaining_epochs(m, w);
    double eps = speed_epochs_per_second(&m->speed, w);
    return ep >= 0 && eps > 0 && isfinite(eps) ? ep / eps : -1;
}

static json_t *num_or_null(double v)
{
    return v >= 0 && isfinite(v) ? json_real(v) : json_null();
}

/* The curve the core predicts on GPUs of speed and mem_gb (plan_step_time of plain data
 * parallel: the compute terms divided by the speed): [{gpus, step_time_s,
 * samples_per_second}] at 1, 2, 4, ... 64 GPUs. */
static json_t *model_curve(const struct sched_model *m, double speed, double mem_gb)
{
    const struct plan_spec none = {0};
    const struct plan_choice dp = {0};
    int gpn = m->speed.gpus_per_node;
    json_t *curve = json_array();
    for (int w = 1; w <= 64; w *= 2) {
        double t = plan_step_time(&m->speed, &none, &dp, w, gpn > 0 ? (w + gpn - 1) / gpn : 1,
                                  speed, mem_gb);
        if (!isfinite(t))
            t = -1;
        json_array_append_new(curve,
                              json_pack("{s:i, s:o, s:o}", "gpus", w, "step_time_s", num_or_null(t),
                                        "samples_per_second",
                                        num_or_null(t > 0 ? w * m->speed.batch_per_gpu / t : -1)));
    }
    return curve;
}

/* Per known GPU model: [{gpu_model, speed, curve}]. */
static json_t *by_model_json(const struct sched_model *m)
{
    static const char *const names[] = {"v100", "a100", "h100", "t4"};
    json_t *a = json_array();
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        int index;
        double speed = 1, mem = 0;
        sched_snap_gpu_model(names[k], &index, &speed, &mem);
        json_array_append_new(a, json_pack("{s:s, s:f, s:o}", "gpu_model", names[k], "speed", speed,
                                           "curve", model_curve(m, speed, mem)));
    }
    return a;
}

/* speed: theta, and per GPU count 1..64 (powers of two) the predicted step time, samples
 * per second and seconds to finish, as curve [{gpus, step_time_s, samples_per_second,
 * remaining_s}]. */
static json_t *speed_json(const struct sched_model *m)
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
                                        "remaining_s", num_or_null(sched_model_remaining_s(m, w))));
    }
    return json_pack("{s:o, s:f, s:f, s:o, s:s, s:s, s:o}", "theta", theta, "rmse_s", m->speed.rmse,
                     "batch_per_gpu", m->speed.batch_per_gpu, "curve", curve, "reference_gpu",
                     "v100", "measured_on", m->measured_on, "by_gpu_model", by_model_json(m));
}

/* convergence: b0, b1, b2, the fit's error, and steps and seconds still to go at w GPUs. */
static json_t *conv_json(const struct sched_model *m, int w)
{
    double ep = sched_model_remaining_epochs(m, w);
    double steps = ep >= 0 ? ep * m->dataset_size / (w * m->speed.batch_per_gpu) : -1;
    return json_pack("{s:f, s:f, s:f, s:f, s:I, s:o, s:o}", "b0", m->conv.b0, "b1", m->conv.b1,
                     "b2", m->conv.b2, "rmse", m->conv.rmse, "points", (json_int_t)m->conv.npoints,
                     "steps_remaining", num_or_null(steps), "seconds_remaining",
                     num_or_null(sched_model_remaining_s(m, w)));
}

json_t *sched_model_json(const struct sched_model *m, int cur_gpus)
{
    static const char *const src[] = {"none", "profile", "fitted"};
    int w = cur_gpus > 0 ? cur_gpus : 1;
    json_t *j = json_pack("{s:s, s:I, s:f, s:f, s:o, s:o, s:i}", "source", src[m->source],
                          "metrics", (json_int_t)m->metrics_seen, "dataset_size", m->dataset_size,
                          "epochs_done", m->epochs_done, "remaining_epochs",
                          num_or_null(sched_model_remaining_epochs(m, w)), "predicted_remaining_s",
                          num_or_null(sched_model_remaining_s(m, w)), "world_sizes_measured",
                          m->nworld_sizes);
    if (!j)
        return NULL;
    if (m->class_name[0])
        json_object_set_new(j, "class", json_string(m->class_name));
    json_object_set_new(j, "remaining_source",
                        m->has_estimate
                            ? json_string(sched_estimate_source_name(m->estimate_source))
                            : json_null());
    json_object_set_new(j, "speed", m->source != SCHED_MODEL_NONE ? speed_json(m) : json_null());
    json_object_set_new(j, "convergence", m->conv.fitted ? conv_json(m, w) : json_null());
    return j;
}
