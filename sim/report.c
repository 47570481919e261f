/* report: run workloads and print the results (see report.h). */
#include "report.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum simulate_view report_view_for(const struct sched_policy_ops *p)
{
    return strcmp(p->name, "exploratory") ? SIMULATE_VIEW_PROFILE : SIMULATE_VIEW_EXPLORED;
}

int report_subcluster(const struct options_cluster *c, int gpus, struct options_cluster *out)
{
    memset(out, 0, sizeof(*out));
    out->nodes = calloc(c->nnodes + 1, sizeof(*out->nodes));
    if (!out->nodes)
        return -1;
    for (size_t n = 0; n < c->nnodes && out->total_gpus < gpus; n++) {
        struct sched_node nd = c->nodes[n];
        int left = gpus - out->total_gpus;
        if (nd.ngpus > left)
            nd.ngpus = left;
        out->nodes[out->nnodes++] = nd;
        out->total_gpus += nd.ngpus;
    }
    return 0;
}

/* Mean JCT of user's jobs in r; NAN when it has none. */
static double user_mean_jct(const struct simulate_result *r, int64_t user)
{
    double sum = 0;
    size_t n = 0;

    for (size_t k = 0; k < r->njobs; k++)
        if (r->jobs[k].user == user) {
            sum += r->jobs[k].jct_s;
            n++;
        }
    return n ? sum / (double)n : NAN;
}

/* The user's jobs alone on gpus GPUs of c (bounds cut to them): mean JCT. */
static double alone_mean_jct(const struct workload *w, const struct options_cluster *c,
                             const struct simulate_config *base, int64_t user, int gpus,
                             char *why, size_t len)
{
    struct options_cluster sub;
    struct simulate_job_spec *jobs = calloc(w->njobs + 1, sizeof(*jobs));
    size_t n = 0;
    double mean = NAN;

    if (!jobs || report_subcluster(c, gpus, &sub)) {
        free(jobs);
        snprintf(why, len, "out of memory");
        return NAN;
    }
    for (size_t i = 0; i < w->njobs; i++) {
        if (w->jobs[i].user != user)
            continue;
        struct simulate_job_spec *j = &jobs[n++];
        *j = w->jobs[i];
        j->max_gpus = j->max_gpus < gpus ? j->max_gpus : gpus;
        j->requested_gpus = j->requested_gpus < j->max_gpus ? j->requested_gpus : j->max_gpus;
        j->min_gpus = j->min_gpus < j->requested_gpus ? j->min_gpus : j->requested_gpus;
    }
    struct simulate_config cfg = *base;
    cfg.nodes = sub.nodes;
    cfg.nnodes = sub.nnodes;
    struct simulate_result *r = simulate_run(&cfg, jobs, n, NULL, NULL, why, len);
    if (r)
        mean = user_mean_jct(r, user);
    simulate_result_destroy(r);
    options_cluster_free(&sub);
    free(jobs);
    return mean;
}

#define REPORT_MAX_USERS 256

/* row->fairness (see report.h), equal shares: each user alone on 1/K. */
static int fairness(const struct workload *w, const struct options_cluster *c,
                    const struct simulate_config *cfg, struct report_row *row, char *err,
                    size_t errlen)
{
    int64_t ids[REPORT_MAX_USERS];
    size_t k = workload_users(w, ids, REPORT_MAX_USERS);
    char why[256];

    row->fairness = NAN;
    if (k < 2)
        return 0;
    int gpus = c->total_gpus / (int)k > 0 ? c->total_gpus / (int)k : 1;
    for (size_t u = 0; u < k; u++) {
        double alone = alone_mean_jct(w, c, cfg, ids[u], gpus, why, sizeof(why));
        if (isnan(alone)) {
            snprintf(err, errlen, "%s: user %lld alone: %s", w->name, (long long)ids[u], why);
            return -1;
        }
        double ratio = user_mean_jct(row->result, ids[u]) / alone;
        if (isnan(row->fairness) || ratio > row->fairness) {
            row->fairness = ratio;
            row->worst_user = ids[u];
        }
    }
    return 0;
}

/* The forecasts checked in a run under p (calib.h), with the run's interval and seed. */
static struct calib *calib_of(const struct report_params *prm, const struct sched_policy_ops *p)
{
    struct outlook_config oc;
    outlook_config_init(&oc);
    oc.policy = p;
    oc.runs = prm->forecast_runs > 0 ? prm->forecast_runs : oc.runs;
    double spread = prm->forecast_spread >= 0  ? prm->forecast_spread
                    : prm->estimate_error > 0 ? prm->estimate_error
                                              : oc.spread;
    oc.spread = oc.declared_spread = spread; /* the engine's estimates have no source */
    oc.interval_s = prm->interval_s;
    oc.seed = prm->seed;
    return calib_create(&oc, prm->forecast_every_s, prm->forecast_arrivals_s);
}

int report_run(const struct workload *w, const struct options_cluster *c,
               const struct sched_policy_ops *p, const struct report_params *prm,
               struct report_row *row, char *err, size_t errlen)
{
    struct simulate_config cfg;
    simulate_config_init(&cfg);
    cfg.estimate_error = prm->estimate_error;
    cfg.estimate_live = prm->estimate_live;
    cfg.estimate_declared = prm->estimate_declared;
    cfg.max_wait_s = prm->max_wait_s;
    cfg.show_type_speeds = prm->show_type_speeds;
    cfg.speed_live = prm->speed_live;
    cfg.hide_deadlines = prm->hide_deadlines;
    cfg.topology_blind = prm->topology_blind;
    cfg.checkpoint_every_s = prm->checkpoint_every_s;
    cfg.min_runtime_s = prm->min_runtime_s;
    cfg.preempt_order = prm->preempt_order;
    cfg.nodes = c->nodes;
    cfg.nnodes = c->nnodes;
    cfg.policy = p;
    cfg.view = report_view_for(p);
    cfg.interval_s = prm->interval_s;
    cfg.resize_cost_s = prm->resize_cost_s;
    cfg.min_resize_interval_s = prm->min_resize_interval_s;
    cfg.seed = prm->seed;
    if (prm->quantum_s > 0)
        cfg.quantum_s = prm->quantum_s;
    if (prm->suspend_cost_set)
        cfg.suspend_cost_s = prm->suspend_cost_s;
    memset(row, 0, sizeof(*row));
    snprintf(row->scenario, sizeof(row->scenario), "%s", w->name);
    snprintf(row->policy, sizeof(row->policy), "%s", p->name);
    row->own_speed = w->own_speed;
    row->with_course = w->with_course;
    char why[256];
    struct calib *k = prm->forecast_every_s > 0 ? calib_of(prm, p) : NULL;
    if (prm->forecast_every_s > 0 && !k) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    row->result = simulate_run(&cfg, w->jobs, w->njobs, k ? calib_on_round : NULL, k, why,
                               sizeof(why));
    if (row->result && k)
        row->has_calib = calib_score(k, row->result, &row->calib, why, sizeof(why)) == 0;
    calib_destroy(k);
    if (!row->result || (k && !row->has_calib)) {
        snprintf(err, errlen, "%s under %s: %s", w->name, p->name, why);
        return -1;
    }
    return fairness(w, c, &cfg, row, err, errlen);
}

void report_row_clear(struct report_row *row)
{
    simulate_result_destroy(row->result);
    row->result = NULL;
}

/* With deadlines in the workload: per row, those met (count and share) and the mean JCT of
 * the jobs without one. */
static void print_deadlines(FILE *out, const struct report_row *rows, size_t n)
{
    int any = 0;

    for (size_t i = 0; i < n; i++)
        any |= rows[i].result->deadlines > 0;
    if (!any)
        return;
    fprintf(out, "\n%-24s %-12s %9s %9s %7s %14s\n", "scenario", "policy", "deadlines", "met",
            "met%", "other_avg_h");
    for (size_t i = 0; i < n; i++) {
        const struct simulate_result *r = rows[i].result;
        fprintf(out, "%-24s %-12s %9ld %9ld %7.1f %14.2f\n", rows[i].scenario, rows[i].policy,
                r->deadlines, r->deadlines_met,
                r->deadlines ? 100.0 * (double)r->deadlines_met / (double)r->deadlines : 0.0,
                r->avg_jct_other_s / 3600);
    }
}

static void print_table(FILE *out, const struct report_row *rows, size_t n)
{
    fprintf(out, "%-24s %-12s %9s %9s %9s %10s %9s %6s %8s %10s %9s %11s %6s %6s %8s %9s\n",
            "scenario", "policy", "avg_jct_h", "median_h", "p95_h", "makespan_h", "queue_h",
            "util", "resizes", "first100_m", "p99_h", "max_queue_h", "fair", "idle%", "preempts",
            "lost_gpuh");
    for (size_t i = 0; i < n; i++) {
        const struct simulate_result *r = rows[i].result;
        fprintf(out,
                "%-24s %-12s %9.2f %9.2f %9.2f %10.2f %9.2f %6.3f %8ld %10.2f %9.2f %11.2f %6.2f "
                "%6.2f %8ld %9.2f\n",
                rows[i].scenario, rows[i].policy, r->avg_jct_s / 3600, r->median_jct_s / 3600,
                r->p95_jct_s / 3600, r->makespan_s / 3600, r->avg_queue_s / 3600, r->utilization,
                r->resizes, r->avg_first100_s / 60, r->p99_jct_s / 3600, r->max_queue_s / 3600,
                rows[i].fairness, 100.0 * r->idle_wanted_frac, r->preemptions,
                r->lost_preemption_gpu_s / 3600);
    }
    print_deadlines(out, rows, n);
}

static void print_csv(FILE *out, const struct report_row *rows, size_t n)
{
    fprintf(out, "%s\n", REPORT_CSV_HEADER);
    for (size_t i = 0; i < n; i++) {
        const struct simulate_result *r = rows[i].result;
        fprintf(out, "%s,%s,%.1f,%.1f,%.1f,%.1f,%.1f,%.4f,%ld,%.1f,%.1f,", rows[i].scenario,
                rows[i].policy, r->avg_jct_s, r->median_jct_s, r->p95_jct_s, r->makespan_s,
                r->avg_queue_s, r->utilization, r->resizes, r->p99_jct_s, r->max_queue_s);
        if (!isnan(rows[i].fairness))
            fprintf(out, "%.4f", rows[i].fairness);
        fputc('\n', out);
    }
}

/* A new JSON object for one row. */
static json_t *row_json(const struct report_row *row)
{
    const struct simulate_result *r = row->result;
    json_t *o = json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:I}", "scenario",
                          row->scenario, "policy", row->policy, "avg_jct_s", r->avg_jct_s,
                          "median_jct_s", r->median_jct_s, "p95_jct_s", r->p95_jct_s,
                          "makespan_s", r->makespan_s, "avg_queue_s", r->avg_queue_s,
                          "utilization", r->utilization, "resizes", (json_int_t)r->resizes,
                          "jobs", (json_int_t)r->njobs, "rounds", (json_int_t)r->rounds);
    json_t *g = json_pack("{s:f, s:f, s:I, s:I, s:I, s:I}", "avg_first100_s", r->avg_first100_s,
                          "steps_per_s", r->steps_per_s, "suspends", (json_int_t)r->suspends,
                          "packs", (json_int_t)r->packs, "pack_reverts",
                          (json_int_t)r->pack_reverts, "migrations", (json_int_t)r->migrations);
    if (o && g)
        json_object_update(o, g);
    json_decref(g);
    if (o) {
        json_object_set_new(o, "p99_jct_s", json_real(r->p99_jct_s));
        json_object_set_new(o, "max_queue_s", json_real(r->max_queue_s));
        json_object_set_new(o, "idle_wanted_frac", json_real(r->idle_wanted_frac));
        json_object_set_new(o, "idle_usable_frac", json_real(r->idle_usable_frac));
        json_object_set_new(o, "preemptions", json_integer((json_int_t)r->preemptions));
        json_object_set_new(o, "lost_preemption_gpu_s", json_real(r->lost_preemption_gpu_s));
        json_object_set_new(o, "lost_redo_gpu_s", json_real(r->lost_redo_gpu_s));
        json_object_set_new(o, "fairness",
                            isnan(row->fairness) ? json_null() : json_real(row->fairness));
        json_object_set_new(o, "jobs_own_speed", json_integer((json_int_t)row->own_speed));
        json_object_set_new(o, "jobs_with_course", json_integer((json_int_t)row->with_course));
        json_object_set_new(o, "deadlines",
                            json_pack("{s:I, s:I, s:f}", "jobs", (json_int_t)r->deadlines, "met",
                                      (json_int_t)r->deadlines_met, "other_avg_jct_s",
                                      r->avg_jct_other_s));
        json_object_set_new(o, "compact",
                            json_pack("{s:I, s:I, s:I, s:I}", "fit_node", (json_int_t)r->fit_node,
                                      "on_node", (json_int_t)r->on_node, "fit_island",
                                      (json_int_t)r->fit_island, "on_island",
                                      (json_int_t)r->on_island));
    }
    return o;
}

static void print_json(FILE *out, const struct report_row *rows, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        json_array_append_new(arr, row_json(&rows[i]));
    if (arr)
        json_dumpf(arr, out, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    fputc('\n', out);
    json_decref(arr);
}

void report_print(FILE *out, enum options_format f, const struct report_row *rows, size_t n)
{
    if (f == OPTIONS_CSV)
        print_csv(out, rows, n);
    else if (f == OPTIONS_JSON)
        print_json(out, rows, n);
    else
        print_table(out, rows, n);
}

void report_print_jobs(FILE *out, const struct report_row *rows, size_t n)
{
    fprintf(out, "%s\n", REPORT_JOBS_HEADER);
    for (size_t i = 0; i < n; i++) {
        const struct simulate_result *r = rows[i].result;
        for (size_t k = 0; k < r->njobs; k++) {
            const struct simulate_job_result *j = &r->jobs[k];
            fprintf(out, "%s,%s,%lld,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%d,%.1f,%d,%d,%d,%lld,%.1f,",
                    rows[i].scenario, rows[i].policy, (long long)j->id, j->submit_time,
                    j->start_time, j->finish_time, j->jct_s, j->queue_s, j->gpu_seconds,
                    j->resizes, j->first100_s, j->suspends, j->packs, j->migrations,
                    (long long)j->user, j->max_wait_s);
            if (j->deadline > 0) /* none: both empty */
                fprintf(out, "%.1f,%d\n", j->deadline, j->deadline_met);
            else
                fprintf(out, ",\n");
        }
    }
}
