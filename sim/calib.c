/* calib: forecasts made periodically inside a simulated run and scored at its end
 * (calib.h). */
#include "calib.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One job's forecast made at `made` (simulated seconds). */
struct calib_rec {
    int64_t id;
    double made;
    double start50, start90; /* < 0: none (it ran, or unknown) */
    double fin50, fin90;
};

struct calib {
    struct outlook_config cfg;
    double every_s, next_at;
    double arrivals_s;      /* > 0: the arrivals of the last arrivals_s repeated forward */
    struct sched_job *seen; /* every job as it arrived (arrivals_s > 0) */
    size_t nseen, capseen;
    double seen_to; /* jobs submitted up to this are in seen */
    struct calib_rec *recs;
    size_t n, cap;
    long passes;
    double cpu_s;
    int failed;
    char why[256];
};

int calib_bucket(double lead_s)
{
    return lead_s < 600 ? 0 : lead_s < 3600 ? 1 : lead_s < 4 * 3600 ? 2 : 3;
}

const char *calib_bucket_name(int k)
{
    static const char *const names[CALIB_BUCKETS] = {"<10m", "10-60m", "1-4h", ">4h"};
    return k >= 0 && k < CALIB_BUCKETS ? names[k] : "?";
}

struct calib *calib_create(const struct outlook_config *c, double every_s, double arrivals_s)
{
    struct calib *k = calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    k->cfg = *c;
    k->every_s = every_s;
    k->arrivals_s = arrivals_s;
    k->seen_to = -INFINITY;
    return k;
}

void calib_destroy(struct calib *c)
{
    if (!c)
        return;
    free(c->recs);
    free(c->seen);
    free(c);
}

/* Keeps the jobs that arrived since the last round as a snapshot showed them then, waiting
 * (a round runs at every arrival, so each is seen). Returns 0 or -1 (ENOMEM). */
static int note_arrivals(struct calib *c, const struct sched_snapshot *snap)
{
    for (size_t i = 0; i < snap->njobs; i++) {
        const struct sched_job *j = &snap->jobs[i];
        if (!(j->submit_time > c->seen_to))
            continue;
        if (c->nseen == c->capseen) {
            size_t cap = c->capseen ? 2 * c->capseen : 256;
            struct sched_job *n = realloc(c->seen, cap * sizeof(*n));
            if (!n)
                return -1;
            c->seen = n;
            c->capseen = cap;
        }
        struct sched_job g = {0};
        g.submit_time = j->submit_time;
        g.priority = j->priority;
        g.requested_gpus = j->requested_gpus;
        g.min_gpus = j->min_gpus;
        g.max_gpus = j->max_gpus;
        g.elastic = j->elastic;
        g.remaining_epochs = j->remaining_epochs + j->epochs_done;
        g.remaining_source = j->remaining_source;
        g.model_source = j->model_source;
        g.speed = j->speed;
        g.plan = j->plan;
        g.batch = j->batch;
        g.user_id = j->user_id;
        g.gpu_util = j->gpu_util;
        g.gpu_mem_bytes = j->gpu_mem_bytes;
        c->seen[c->nseen++] = g;
    }
    c->seen_to = snap->now;
    return 0;
}

/* The jobs expected after now: those that arrived in the last arrivals_s, each again
 * arrivals_s later (ids below 0, apart from the jobs'); *n of them (new; NULL when none). */
static struct sched_job *expected(const struct calib *c, double now, size_t *n)
{
    struct sched_job *f = NULL;
    *n = 0;
    for (size_t i = 0; c->arrivals_s > 0 && i < c->nseen; i++) {
        if (!(c->seen[i].submit_time > now - c->arrivals_s))
            continue;
        if (!f && !(f = malloc((c->nseen - i) * sizeof(*f))))
            return NULL;
        f[*n] = c->seen[i];
        f[*n].submit_time += c->arrivals_s;
        f[*n].id = -(int64_t)(*n) - 1;
        (*n)++;
    }
    return f;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int keep(struct calib *c, const struct outlook *o, double made)
{
    if (c->n + o->njobs > c->cap) {
        size_t cap = (c->cap ? c->cap * 2 : 1024) + o->njobs;
        struct calib_rec *r = realloc(c->recs, cap * sizeof(*r));
        if (!r)
            return -1;
        c->recs = r;
        c->cap = cap;
    }
    for (size_t i = 0; i < o->njobs; i++) {
        const struct outlook_job *j = &o->jobs[i];
        c->recs[c->n++] = (struct calib_rec){j->id,        made,          j->start_p50,
                                             j->start_p90, j->finish_p50, j->finish_p90};
    }
    return 0;
}

/* The state after the round: the snapshot's jobs on the GPUs the decision gave them (the
 * engine has applied it: the snapshot's own slots are gone by the callback). */
static struct sched_job *after_round(const struct sched_snapshot *snap,
                                     const struct sched_decision *d)
{
    struct sched_job *jobs = malloc(snap->njobs * sizeof(*jobs));
    for (size_t i = 0; jobs && i < snap->njobs; i++) {
        const struct sched_assignment *as = &d->assign[i];
        jobs[i] = snap->jobs[i];
        jobs[i].cur_gpus = as->gpus;
        jobs[i].slots = as->gpus > 0 ? as->slots : NULL;
        jobs[i].packed = 0;
        if (as->changed)
            jobs[i].last_change_time = snap->now;
    }
    return jobs;
}

void calib_on_round(const struct sched_snapshot *snap, const struct sched_decision *d, void *arg)
{
    struct calib *c = arg;
    if (c->arrivals_s > 0 && !c->failed && note_arrivals(c, snap) < 0)
        c->failed = 1;
    if (c->failed || snap->now < c->next_at || snap->njobs == 0)
        return;
    c->next_at = snap->now + c->every_s;
    double t0 = cpu_now();
    struct sched_snapshot s = *snap;
    struct sched_job *jobs = after_round(snap, d);
    s.jobs = jobs;
    struct outlook_config oc = c->cfg;
    struct sched_job *future = expected(c, snap->now, &oc.nfuture);
    oc.future = future;
    struct outlook *o = jobs ? outlook_run(&s, &oc, c->why, sizeof(c->why)) : NULL;
    free(future);
    if (!o || keep(c, o, snap->now) < 0)
        c->failed = 1;
    outlook_destroy(o);
    free(jobs);
    c->passes++;
    c->cpu_s += cpu_now() - t0;
}

/* ---- scoring ---- */

struct by_id {
    int64_t id;
    size_t i;
};

static int cmp_id(const void *a, const void *b)
{
    const struct by_id *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* What a cell collects before its median. */
struct acc {
    long n, within;
    double *rel;
};

static void add(struct acc *a, double truth, double made, double p50, double p90)
{
    double lead = truth - made;
    a->rel[a->n++] = fabs(truth - p50) / fmax(lead, 1.0);
    a->within += truth <= p90 + 1e-6;
}

static struct calib_cell cell_of(struct acc *a)
{
    struct calib_cell c = {a->n, a->within, NAN};
    if (a->n > 0) {
        qsort(a->rel, (size_t)a->n, sizeof(*a->rel), cmp_dbl);
        c.median_rel = a->n % 2 ? a->rel[a->n / 2] : (a->rel[a->n / 2 - 1] + a->rel[a->n / 2]) / 2;
    }
    return c;
}

/* The truth of record k's job in r (-1 when it did not happen after the forecast). */
static double truth_of(const struct simulate_result *r, const struct by_id *map,
                       const struct calib_rec *k, int finish)
{
    struct by_id key = {k->id, 0};
    const struct by_id *m = bsearch(&key, map, r->njobs, sizeof(*map), cmp_id);
    if (!m)
        return -1;
    double t = finish ? r->jobs[m->i].finish_time : r->jobs[m->i].start_time;
    return t >= k->made ? t : -1;
}

static void score_all(const struct calib *c, const struct simulate_result *r,
                      const struct by_id *map, struct acc *acc)
{
    /* acc: CALIB_BUCKETS starts, CALIB_BUCKETS finishes, then the starts an hour ahead */
    for (size_t k = 0; k < c->n; k++) {
        const struct calib_rec *x = &c->recs[k];
        double ts = x->start50 >= 0 ? truth_of(r, map, x, 0) : -1;
        double tf = x->fin50 >= 0 ? truth_of(r, map, x, 1) : -1;
        if (ts >= 0) {
            add(&acc[calib_bucket(ts - x->made)], ts, x->made, x->start50, x->start90);
            if (ts - x->made >= 3600 && ts - x->made < 3600 + c->every_s)
                add(&acc[2 * CALIB_BUCKETS], ts, x->made, x->start50, x->start90);
        }
        if (tf >= 0)
            add(&acc[CALIB_BUCKETS + calib_bucket(tf - x->made)], tf, x->made, x->fin50, x->fin90);
    }
}

int calib_score(const struct calib *c, const struct simulate_result *r, struct calib_figures *out,
                char *err, size_t errlen)
{
    enum { NACC = 2 * CALIB_BUCKETS + 1 };
    struct acc acc[NACC];
    struct by_id *map = malloc((r->njobs ? r->njobs : 1) * sizeof(*map));
    size_t per = c->n ? c->n : 1; /* a cell gets at most one entry a record */
    double *room = malloc(per * NACC * sizeof(*room));
    memset(out, 0, sizeof(*out));
    if (c->failed || !map || !room) {
        snprintf(err, errlen, "forecast: %s", c->failed ? c->why : "out of memory");
        free(map);
        free(room);
        errno = c->failed ? EPROTO : ENOMEM;
        return -1;
    }
    for (size_t i = 0; i < r->njobs; i++)
        map[i] = (struct by_id){r->jobs[i].id, i};
    qsort(map, r->njobs, sizeof(*map), cmp_id);
    for (int k = 0; k < NACC; k++)
        acc[k] = (struct acc){0, 0, room + (size_t)k * per};
    score_all(c, r, map, acc);
    for (int k = 0; k < CALIB_BUCKETS; k++) {
        out->start[k] = cell_of(&acc[k]);
        out->finish[k] = cell_of(&acc[CALIB_BUCKETS + k]);
    }
    out->start_1h = cell_of(&acc[2 * CALIB_BUCKETS]);
    out->forecasts = c->passes;
    out->cpu_s = c->cpu_s;
    free(map);
    free(room);
    return 0;
}

static void print_cell(FILE *out, const char *policy, const char *event, const char *lead,
                       const struct calib_cell *c)
{
    fprintf(out, "forecast policy=%s event=%s lead=%s n=%ld within_p90=%.3f median_rel_err=%.3f\n",
            policy, event, lead, c->n, c->n ? (double)c->within / (double)c->n : NAN,
            c->median_rel);
}

void calib_print(FILE *out, const char *policy, const struct calib_figures *f)
{
    for (int k = 0; k < CALIB_BUCKETS; k++)
        print_cell(out, policy, "start", calib_bucket_name(k), &f->start[k]);
    for (int k = 0; k < CALIB_BUCKETS; k++)
        print_cell(out, policy, "finish", calib_bucket_name(k), &f->finish[k]);
    print_cell(out, policy, "start", "1h", &f->start_1h);
    fprintf(out, "forecast policy=%s passes=%ld cpu_s=%.1f\n", policy, f->forecasts, f->cpu_s);
}
