/* model: the live scheduler's cache of each job's speed and convergence models (model.h): declared
 * classes, refits from job_metrics and what is left to run (the core's progress.h); the JSON
 * of a model is in model_json.c. */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "monotime.h"
#include "plan.h"
#include "profile.h"
#include "progress.h"
#include "snap.h"
#include "store/db.h"

#define DEFAULT_DATASET 50000.0
#define LIVE_MODEL_PAGE 4096 /* (step, loss) points read per query */
#define LIVE_MODEL_PAGE_TEXT "4096"

/* A class's speed model, loaded at most once. */
struct class_model {
    char name[32];
    int tried, ok;
    struct speed_model speed;
    double dataset_size;
};

struct live_models {
    struct live_model **items; /* by job id; each allocated alone: pointers stay valid */
    size_t n, cap;
    struct class_model classes[PROFILE_NAPPS + 1];
    int64_t conv_after; /* the last job whose convergence a round fitted */
};

struct live_models *live_models_create(void)
{
    struct live_models *ms = calloc(1, sizeof(*ms));
    if (!ms)
        return NULL;
    snprintf(ms->classes[0].name, sizeof(ms->classes[0].name), "resnet110");
    for (size_t i = 0; i < PROFILE_NAPPS; i++)
        snprintf(ms->classes[i + 1].name, sizeof(ms->classes[i + 1].name), "%s",
                 profile_app_name(i));
    return ms;
}

void live_models_destroy(struct live_models *ms)
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
                                          p->placements.step_time[i], SPEED_LINK_ISLAND};
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

static const struct class_model *class_find(struct live_models *ms, const char *name)
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
static void declare(struct live_models *ms, struct live_model *m, const char *model_json,
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

struct live_model *live_models_get(struct live_models *ms, int64_t job_id,
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
        struct live_model **items = realloc(ms->items, cap * sizeof(*items));
        if (!items)
            return NULL;
        ms->items = items;
        ms->cap = cap;
    }
    struct live_model *m = calloc(1, sizeof(*m));
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

void live_models_prune(struct live_models *ms, long round)
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

/* The refits of a round read the new metrics of many jobs at once: a statement per group of
 * jobs (REFIT_GROUP_JOBS at most) for their new (step, loss) points and one for their sums,
 * instead of two per job. A group holds jobs until the rows it may return (each job's
 * new reports, at most a page) reach REFRESH_ROWS_MAX, which bounds the result's memory
 * when a restart reads every job's history. */
#define REFRESH_ROWS_MAX 262144

/* The jobs refitted in one round at most: those with the most new reports first (a job left
 * out has more the next round, so none waits for ever). Jobs started together report
 * together, and in make bench-scale's window the rounds where 1,200-2,600 of them had new
 * reports at once spent 74-152 ms refitting and were the rounds over 250 ms (docs/
 * benchmarks.md, "The round's write and its refits"); a round takes about half a second to
 * come again, so a model is at most a few rounds late. */
#define REFITS_MAX 384

/* And the time they may take: the cap bounds the count, not the time (384 refits still took
 * 89-108 ms in bench-scale's slow rounds). Groups of at most REFIT_GROUP_JOBS jobs, in
 * REFITS_MAX's order; no group starts once the refits took REFIT_BUDGET_US (the first always
 * runs), and those left out come first in a later round, as REFITS_MAX's do. */
#define REFIT_GROUP_JOBS 64
#define REFIT_BUDGET_US 40000

/* $1 the jobs, $2 the step after which each one's points are new (-1: all), in the same
 * order: up to a page of each job's points in step order, the job by its position in $1. */
static const char *const new_points_sql =
    "SELECT a.i, m.step, m.loss FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY"
    " AS a(job_id, after, i) CROSS JOIN LATERAL (SELECT step, loss FROM job_metrics"
    " WHERE job_id = a.job_id AND step > a.after AND loss > 0 AND loss < 'Infinity'"
    " ORDER BY step LIMIT " LIVE_MODEL_PAGE_TEXT ") m ORDER BY a.i, m.step";

/* $1 the jobs: their sums per (world size, GPU model) with timed reports, and what each job
 * reported fits in one GPU of that model (NULL: nothing, sql/049). */
static const char *const sums_sql =
    "SELECT s.job_id, s.world_size, s.sum_seconds / s.timed, s.sum_seconds, s.sum_progress,"
    " s.gpu_model, s.sum_samples / s.timed, s.nodes, s.link, f.max_local FROM job_metric_sums s"
    " LEFT JOIN job_fits f ON f.job_id = s.job_id AND f.gpu_model = s.gpu_model"
    " WHERE s.job_id = ANY($1::bigint[]) AND s.timed > 0"
    " ORDER BY s.job_id, s.world_size, s.gpu_model, s.nodes, s.link";

/* A job being refreshed: its model, the metrics count to reach, whether more pages of its
 * points remain. */
struct refresh {
    struct live_model *m;
    long long nmetrics;
    int more;
};

/* "{a,b,c}" of n numbers from get(i). Returns a new string, or NULL (ENOMEM). */
static char *int_array(const struct refresh *rs, size_t n, long long (*get)(const struct refresh *))
{
    char *a = malloc(n * 24 + 3), *p = a;
    if (!a)
        return NULL;
    *p++ = '{';
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, "%s%lld", i ? "," : "", get(&rs[i]));
    strcpy(p, "}");
    return a;
}

static long long job_of(const struct refresh *r)
{
    return (long long)r->m->job_id;
}

static long long after_of(const struct refresh *r)
{
    return r->m->points_read > 0 ? (long long)llround(r->m->points_after) : -1;
}

/* Reads a page of new points of each of the n jobs of rs into its fitter (points come in
 * step order: a late report of an older step is not read), and marks those with a full page
 * for another read. Returns 0, or -1 on a database error. */
static int read_new_points(struct refresh *rs, size_t n, PGconn *c)
{
    char *ids = int_array(rs, n, job_of), *after = int_array(rs, n, after_of);
    const char *p[] = {ids, after};
    PGresult *r = ids && after ? db_exec(c, new_points_sql, 2, p) : NULL;
    free(ids);
    free(after);
    if (!db_ok(r)) {
        PQclear(r);
        return -1;
    }
    long long *page = calloc(n + 1, sizeof(*page));
    for (int i = 0; page && i < PQntuples(r); i++) {
        long long k = strtoll(PQgetvalue(r, i, 0), NULL, 10) - 1;
        if (k < 0 || (size_t)k >= n)
            continue;
        struct live_model *m = rs[k].m;
        m->points_after = strtod(PQgetvalue(r, i, 1), NULL);
        m->conv_due |=
            live_fit_series_add(&m->points, m->points_after, strtod(PQgetvalue(r, i, 2), NULL));
        m->points_read++;
        page[k]++;
    }
    PQclear(r);
    if (!page)
        return -1;
    for (size_t k = 0; k < n; k++)
        rs[k].more = page[k] >= LIVE_MODEL_PAGE;
    free(page);
    return 0;
}

/* The convergence model from the job's points (they changed since its last fit). */
static void refit_conv(struct live_model *m)
{
    struct conv_model cm;
    const struct live_fit_series *s = &m->points;
    if (conv_fit(s->step, s->loss, s->n, &cm) == 0)
        m->conv = cm;
    m->conv_due = 0;
    m->changed = 1;
}

static int conv_fit_due(const struct live_model *m)
{
    return m->conv_due && m->points.n >= 3;
}

/* The convergence fits due among the n models, at most LIVE_CONV_FITS_MAX, and past
 * LIVE_CONV_FITS_MIN within LIVE_CONV_FIT_BUDGET_US, in turn by job id after the last one
 * fitted (models in job id order). */
static void refit_convs(struct live_models *ms, struct live_model *const *models, size_t n)
{
    int fits = 0, more = 1;
    long long t0 = monotime_us();
    for (int pass = 0; pass < 2 && more; pass++)
        for (size_t i = 0; i < n && more; i++) {
            struct live_model *m = models[i];
            if ((pass == 0) != (m->job_id > ms->conv_after) || !conv_fit_due(m))
                continue;
            refit_conv(m);
            fits++;
            ms->conv_after = m->job_id;
            more = fits < LIVE_CONV_FITS_MAX &&
                   (fits < LIVE_CONV_FITS_MIN || monotime_us() - t0 < LIVE_CONV_FIT_BUDGET_US);
        }
}

/* The model index and speed of the GPU model named (live_snap's table; unknown names and ''
 * get index -1 and the reference's speed) and notes the name in m->measured_on. */
static double measured_speed(struct live_model *m, const char *name, int *index)
{
    double speed = 1.0, mem;
    if (!live_snap_gpu_model(name, index, &speed, &mem)) {
        speed = 1.0;
        *index = -1;
    }
    const char *word = name[0] ? name : "unknown";
    size_t len = strlen(m->measured_on);
    if (!strstr(m->measured_on, word) && len + strlen(word) + 2 < sizeof(m->measured_on))
        snprintf(m->measured_on + len, sizeof(m->measured_on) - len, "%s%s", len ? ", " : "", word);
    return speed;
}

/* Row's fit (what the job reported fits in one GPU of its model, index) into m->fits, once
 * per model. */
static void note_fits(struct live_model *m, int index, const PGresult *r, int row)
{
    if (index < 0 || PQgetisnull(r, row, 9) || m->nfits == LIVE_MAX_GPU_TYPES)
        return;
    for (size_t k = 0; k < m->nfits; k++)
        if (m->fits[k].gpu_model == index)
            return;
    m->fits[m->nfits++] = (struct learn_fits){index, strtod(PQgetvalue(r, row, 9), NULL)};
}

/* The job's sums per (world size, GPU model, nodes, link class: where the steps ran, sql/046),
 * rows [from, to) of sums_sql's result, into
 * m->steps (the first LIVE_MAX_STEPS); also epochs done and the seconds run at 1, 2, 4, 8 GPUs
 * (exploration). Epochs done count its progress (sum_progress, sql/025): raw examples, or for
 * a job with a batch model examples at its initial batch weighted by the statistical
 * efficiency of the batch each step ran at, as the simulator counts them. Returns the number
 * of obs. */
static int apply_sums(struct live_model *m, const PGresult *r, int from, int to)
{
    double samples = 0;
    int n = to - from < LIVE_MAX_STEPS ? to - from : LIVE_MAX_STEPS, prev_w = 0;
    double meas_s = 0, meas_m = 0;
    struct learn_obs *obs = m->steps;
    m->nworld_sizes = 0;
    m->measured_max_w = 0;
    m->measured_on[0] = '\0';
    m->nfits = 0;
    memset(m->explored_s, 0, sizeof(m->explored_s));
    for (int i = 0; i < n; i++) {
        int row = from + i, w = atoi(PQgetvalue(r, row, 1)), index;
        double sec = strtod(PQgetvalue(r, row, 3), NULL);
        const char *gpu = PQgetvalue(r, row, 5);
        double speed = measured_speed(m, gpu, &index);
        int link = atoi(PQgetvalue(r, row, 8));
        obs[i] = (struct learn_obs){.w = w,
                                    .nodes = atoi(PQgetvalue(r, row, 7)) > 1
                                                 ? atoi(PQgetvalue(r, row, 7))
                                                 : 1,
                                    .link = link >= 0 && link < SPEED_NLINKS
                                                ? (enum speed_link)link
                                                : SPEED_LINK_ISLAND,
                                    .gpu_model = index,
                                    .gpu_speed = speed,
                                    .step_s = strtod(PQgetvalue(r, row, 2), NULL),
                                    .seconds = sec};
        snprintf(m->step_gpu[i], sizeof(m->step_gpu[i]), "%s", gpu);
        note_fits(m, index, r, row);
        if (m->own_batch && w > 0)
            obs[i].m = strtod(PQgetvalue(r, row, 6), NULL) / w;
        samples += PQgetisnull(r, row, 4) ? 0 : strtod(PQgetvalue(r, row, 4), NULL);
        for (int k = 0; k < SCHED_EXPLORE_STAGES; k++)
            if (w == 1 << k)
                m->explored_s[k] += sec;
        m->nworld_sizes += w != prev_w;
        prev_w = w;
        m->measured_max_w = w > m->measured_max_w ? w : m->measured_max_w;
        double per_gpu = w > 0 ? strtod(PQgetvalue(r, row, 6), NULL) / w : 0;
        if (sec > 0 && per_gpu > 0 && isfinite(per_gpu)) {
            meas_s += sec;
            meas_m += sec * per_gpu;
        }
    }
    m->nsteps = (size_t)n;
    /* The examples per GPU its steps measured (samples a step over its GPUs), when it has no
     * batch model: what the job runs, which its declared batch_per_gpu (or the default of 128)
     * need not be. Its speed model counts its epochs at that, or every rate it gives is off by
     * their ratio (train-mlp's 32 a rank under the default 128: its remaining seconds were a
     * quarter of the truth). */
    if (!m->own_batch && !m->class_name[0] && meas_s > 0 && meas_m > 0)
        m->speed.batch_per_gpu = meas_m / meas_s;
    m->epochs_run = m->dataset_size > 0 ? samples / m->dataset_size : 0;
    return n;
}

/* The speed model from the mean step time at each world size and GPU model, normalised to
 * the reference GPU (the core's learn_fit_speed). Read from the running sums that a trigger
 * keeps (sql/005, sql/011), not from every report. */
static void refit_speed(struct live_model *m, const PGresult *r, int from, int to)
{
    int n = apply_sums(m, r, from, to);
    m->steps_version++;
    struct speed_model sm = m->speed;
    sm.gpus_per_node = 0;
    if (m->nworld_sizes >= 2 && learn_fit_speed(&sm, m->steps, (size_t)n) == 0) {
        m->speed = sm;
        m->source = SCHED_MODEL_FITTED;
    }
}

/* Reads the sums of the n jobs of rs (sorted by job id), refits their models and marks them
 * refitted. Returns 0, or -1 on a database error. */
static int refit_group(struct refresh *rs, size_t n, PGconn *c)
{
    char *ids = int_array(rs, n, job_of);
    const char *p[] = {ids};
    PGresult *r = ids ? db_exec(c, sums_sql, 1, p) : NULL;
    free(ids);
    if (!db_ok(r)) {
        PQclear(r);
        return -1;
    }
    int row = 0, rows = PQntuples(r);
    for (size_t k = 0; k < n; k++) {
        struct live_model *m = rs[k].m;
        while (row < rows && strtoll(PQgetvalue(r, row, 0), NULL, 10) < m->job_id)
            row++;
        int from = row;
        while (row < rows && strtoll(PQgetvalue(r, row, 0), NULL, 10) == m->job_id)
            row++;
        refit_speed(m, r, from, row);
        m->metrics_seen = rs[k].nmetrics;
        m->changed = 1;
    }
    PQclear(r);
    return 0;
}

/* Refreshes the n jobs of rs (sorted by job id): their points, page after page, then their
 * sums and fits. Returns 0, or -1 on a database error (their models are then left to the
 * next round). */
static int refresh_group(struct refresh *rs, size_t n, PGconn *c)
{
    struct refresh **more = calloc(n + 1, sizeof(*more));
    struct refresh *again = calloc(n + 1, sizeof(*again));
    int rc = more && again ? read_new_points(rs, n, c) : -1;
    for (;;) { /* the jobs with a full page read on */
        size_t k = 0;
        for (size_t i = 0; rc == 0 && i < n; i++)
            if (rs[i].more) {
                more[k] = &rs[i];
                again[k++] = rs[i];
            }
        if (rc < 0 || k == 0)
            break;
        rc = read_new_points(again, k, c);
        for (size_t i = 0; i < k; i++)
            more[i]->more = rc == 0 && again[i].more;
    }
    free(more);
    free(again);
    return rc == 0 ? refit_group(rs, n, c) : -1;
}

static int by_job(const void *a, const void *b)
{
    int64_t x = ((const struct refresh *)a)->m->job_id, y = ((const struct refresh *)b)->m->job_id;
    return x < y ? -1 : x > y;
}

/* The most new reports first, then by job id. */
static int by_news(const void *a, const void *b)
{
    const struct refresh *x = a, *y = b;
    long long nx = x->nmetrics - x->m->metrics_seen, ny = y->nmetrics - y->m->metrics_seen;
    return nx != ny ? (nx < ny ? 1 : -1) : by_job(a, b);
}

int live_models_refresh(struct live_models *ms, struct live_model *const *models,
                         const long long *nmetrics, size_t n, PGconn *c)
{
    struct refresh *rs = calloc(n + 1, sizeof(*rs));
    if (!rs)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (nmetrics[i] != models[i]->metrics_seen)
            rs[k++] = (struct refresh){.m = models[i], .nmetrics = nmetrics[i]};
    qsort(rs, k, sizeof(*rs), by_news);
    if (k > REFITS_MAX)
        k = REFITS_MAX;
    int rc = 0, refitted = 0;
    long long t0 = monotime_us();
    for (size_t first = 0; first < k && (first == 0 || monotime_us() - t0 < REFIT_BUDGET_US);) {
        size_t end = first;
        long long rows = 0;
        while (end < k && end - first < REFIT_GROUP_JOBS &&
               (end == first || rows < REFRESH_ROWS_MAX)) {
            long long fresh = rs[end].nmetrics - rs[end].m->metrics_seen;
            rows += fresh > 0 && fresh < LIVE_MODEL_PAGE ? fresh : LIVE_MODEL_PAGE;
            end++;
        }
        qsort(rs + first, end - first, sizeof(*rs), by_job);
        if (refresh_group(rs + first, end - first, c) < 0)
            rc = -1;
        else
            refitted += (int)(end - first);
        first = end;
    }
    free(rs);
    refit_convs(ms, models, n);
    return rc < 0 ? -1 : refitted;
}

void live_model_progress(struct live_model *m, long long step, long long redo)
{
    if (step < 0)
        step = 0;
    if (redo < 0)
        redo = 0;
    m->last_step = (double)step;
    m->epochs_done = step + redo > 0 ? m->epochs_run * ((double)step / (double)(step + redo))
                                     : m->epochs_run;
}

/* Its convergence fit as the core's progress_* count it. */
static struct progress_fit fit_of(const struct live_model *m)
{
    return (struct progress_fit){.conv = &m->conv,
                                 .last_step = m->last_step,
                                 .dataset_size = m->dataset_size,
                                 .batch_per_gpu = m->speed.batch_per_gpu};
}

double live_model_fit_epochs(const struct live_model *m, int w)
{
    struct progress_fit f = fit_of(m);
    return progress_fit_epochs(&f, w);
}

double live_model_remaining_epochs(const struct live_model *m, int w)
{
    struct progress_fit f = fit_of(m);
    return progress_remaining_epochs(m->has_estimate, m->estimate_epochs, m->target_epochs,
                                     m->epochs_done, &f, w);
}

/* The speed model the scheduler plans the job with: its own fit or profile, else this round's
 * model learned from one size (learn.h); NULL when it has none yet. */
const struct speed_model *live_model_planned_speed(const struct live_model *m)
{
    if (m->source != SCHED_MODEL_NONE)
        return &m->speed;
    return m->learned ? &m->learned_speed : NULL;
}

double live_model_remaining_s(const struct live_model *m, int w)
{
    const struct speed_model *sp = live_model_planned_speed(m);
    if (!sp || w < 1)
        return -1;
    return progress_remaining_s(live_model_remaining_epochs(m, w), sp, &m->batch, w);
}

void live_model_note_types(struct live_model *m)
{
    size_t n = m->ntypes < LIVE_MAX_GPU_TYPES ? m->ntypes : LIVE_MAX_GPU_TYPES;
    struct live_type_shown now[LIVE_MAX_GPU_TYPES];
    int moved = n != m->ntypes_shown;
    for (size_t k = 0; k < n; k++) {
        const struct sched_type_speed *t = &m->types[k];
        const struct live_type_shown *was = &m->types_shown[k];
        now[k] = (struct live_type_shown){t->gpu_model, (int)t->source, t->measured_sizes,
                                          speed_step_time(&t->speed, 1)};
        moved |= now[k].gpu_model != was->gpu_model || now[k].source != was->source ||
                 now[k].sizes != was->sizes ||
                 !(fabs(now[k].step_s - was->step_s) <= LIVE_TYPE_MOVED * fabs(was->step_s));
    }
    if (!moved)
        return;
    memcpy(m->types_shown, now, n * sizeof(now[0]));
    m->ntypes_shown = n;
    m->changed = 1;
}
