/* report: run workloads and print the results (see report.h). */
#include "report.h"

#include <jansson.h>
#include <string.h>

enum simulate_view report_view_for(const struct sched_policy_ops *p)
{
    return strcmp(p->name, "exploratory") ? SIMULATE_VIEW_PROFILE : SIMULATE_VIEW_EXPLORED;
}

int report_run(const struct workload *w, const struct options_cluster *c,
               const struct sched_policy_ops *p, const struct report_params *prm,
               struct report_row *row, char *err, size_t errlen)
{
    struct simulate_config cfg;
    simulate_config_init(&cfg);
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
    char why[256];
    row->result = simulate_run(&cfg, w->jobs, w->njobs, NULL, NULL, why, sizeof(why));
    if (!row->result) {
        snprintf(err, errlen, "%s under %s: %s", w->name, p->name, why);
        return -1;
    }
    return 0;
}

void report_row_clear(struct report_row *row)
{
    simulate_result_destroy(row->result);
    row->result = NULL;
}

static void print_table(FILE *out, const struct report_row *rows, size_t n)
{
    fprintf(out, "%-24s %-12s %9s %9s %9s %10s %9s %6s %8s %10s\n", "scenario", "policy",
            "avg_jct_h", "median_h", "p95_h", "makespan_h", "queue_h", "util", "resizes",
            "first100_m");
    for (size_t i = 0; i < n; i++) {
        const struct simulate_result *r = rows[i].result;
        fprintf(out, "%-24s %-12s %9.2f %9.2f %9.2f %10.2f %9.2f %6.3f %8ld %10.2f\n",
                rows[i].scenario, rows[i].policy, r->avg_jct_s / 3600, r->median_jct_s / 3600,
                r->p95_jct_s / 3600, r->makespan_s / 3600, r->avg_queue_s / 3600, r->utilization,
                r->resizes, r->avg_first100_s / 60);
    }
}

static void print_csv(FILE *out, const struct report_row *rows, size_t n)
{
    fprintf(out, "%s\n", REPORT_CSV_HEADER);
    for (size_t i = 0; i < n; i++) {
        const struct simulate_result *r = rows[i].result;
        fprintf(out, "%s,%s,%.1f,%.1f,%.1f,%.1f,%.1f,%.4f,%ld\n", rows[i].scenario, rows[i].policy,
                r->avg_jct_s, r->median_jct_s, r->p95_jct_s, r->makespan_s, r->avg_queue_s,
                r->utilization, r->resizes);
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
            fprintf(out, "%s,%s,%lld,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%d,%.1f,%d,%d,%d\n",
                    rows[i].scenario, rows[i].policy, (long long)j->id, j->submit_time,
                    j->start_time, j->finish_time, j->jct_s, j->queue_s, j->gpu_seconds,
                    j->resizes, j->first100_s, j->suspends, j->packs, j->migrations);
        }
    }
}
