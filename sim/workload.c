/* workload: Poisson and trace workloads for the simulator (see workload.h). */
#include "workload.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void workload_destroy(struct workload *w)
{
    if (!w)
        return;
    free(w->jobs);
    free(w);
}

static struct workload *workload_create(size_t cap, char *err, size_t errlen)
{
    struct workload *w = calloc(1, sizeof(*w));
    if (w)
        w->jobs = calloc(cap ? cap : 1, sizeof(*w->jobs));
    if (!w || !w->jobs) {
        workload_destroy(w);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    return w;
}

static int min_int(int a, int b)
{
    return a < b ? a : b;
}

static void fill_from_template(struct simulate_job_spec *j, const struct template *t,
                               int cluster_gpus)
{
    j->speed = t->speed;
    j->plan = t->plan;
    j->max_gpus = min_int(t->max_gpus, cluster_gpus);
    j->requested_gpus = min_int(t->requested_gpus, j->max_gpus);
    j->min_gpus = 1;
    j->elastic = 1;
}

struct workload *workload_poisson(const struct template *templates, size_t ntemplates,
                                  double mean_s, size_t n, uint64_t seed, int cluster_gpus,
                                  char *err, size_t errlen)
{
    if (!templates || ntemplates == 0 || !(mean_s > 0) || n == 0 || cluster_gpus < 1) {
        snprintf(err, errlen, "poisson: need a template, a mean > 0 and at least one job");
        return NULL;
    }
    struct workload *w = workload_create(n, err, errlen);
    if (!w)
        return NULL;
    snprintf(w->name, sizeof(w->name), "poisson-%g-%zu", mean_s, n);
    uint64_t rng = seed;
    double t = 0;
    for (size_t i = 0; i < n; i++) {
        struct simulate_job_spec *j = &w->jobs[i];
        if (i > 0)
            t += simulate_rng_exponential(&rng, mean_s);
        size_t k = ntemplates == 1 ? 0 : (size_t)(simulate_rng_uniform(&rng) * ntemplates);
        j->id = (int64_t)i + 1;
        j->submit_time = t;
        fill_from_template(j, &templates[k], cluster_gpus);
        j->epochs = template_draw_epochs(&templates[k], &rng);
    }
    w->njobs = n;
    return w;
}

/* ---- traces ------------------------------------------------------------ */

enum { COL_ID, COL_SUBMIT, COL_GPUS, COL_DURATION, NCOLS };
/* Optional columns, after the required ones in the col arrays. */
enum { COL_USER = NCOLS, COL_ELASTIC, COL_MIN, COL_MAX, COL_THETA, COL_BATCH, COL_DATASET,
       COL_COURSE, COL_ALL };
static const char *const opt_names[COL_ALL - NCOLS] = {
    "user",        "elastic",       "min_gpus",     "max_gpus",
    "speed_theta", "batch_per_gpu", "dataset_size", "course"};
#define TRACE_MIN_DURATION_S 1e-3 /* seconds */
#define TRACE_MAX_DURATION_S 1e12
static const char *const col_names[NCOLS] = {"job_id", "submit_time_s", "num_gpus", "duration_s"};

/* Splits line in place at commas; returns the field count (at most max). */
static size_t split(char *line, char **f, size_t max)
{
    size_t n = 0;
    line[strcspn(line, "\r\n")] = '\0';
    for (char *p = line; n < max;) {
        f[n++] = p;
        char *c = strchr(p, ',');
        if (!c)
            break;
        *c = '\0';
        p = c + 1;
    }
    return n;
}

static int parse_header(char *line, int *col, char *err, size_t errlen)
{
    char *f[64];
    size_t n = split(line, f, 64);
    for (int c = NCOLS; c < COL_ALL; c++) {
        col[c] = -1; /* optional */
        for (size_t i = 0; i < n; i++)
            if (!strcmp(f[i], opt_names[c - NCOLS]))
                col[c] = (int)i;
    }
    for (int c = 0; c < NCOLS; c++) {
        col[c] = -1;
        for (size_t i = 0; i < n; i++)
            if (!strcmp(f[i], col_names[c]))
                col[c] = (int)i;
        if (col[c] < 0) {
            snprintf(err, errlen,
                     "line 1: header lacks column '%s' (need job_id, "
                     "submit_time_s, num_gpus, duration_s)",
                     col_names[c]);
            return -1;
        }
    }
    return 0;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

#define TRACE_MAX_COURSE 1024 /* world sizes of a job's measured course (max_gpus) */

/* A job's measured course: at world size w[k] it ran steps[k] minibatches. */
struct trace_course {
    int n;
    int w[TRACE_MAX_COURSE];
    double steps[TRACE_MAX_COURSE];
};

struct trace_row {
    double submit, duration;
    int gpus;
    int never_ran;
    int elastic;           /* -1: not given (elastic within the template's bounds) */
    int min_gpus, max_gpus; /* 0: not given */
    const char *user; /* "" when the trace names none (points into the line) */
    /* The job's own measured speed model (what ringmasterd fitted): has_theta 0 when the
     * trace gives none; batch_per_gpu, dataset_size 0 when not given. */
    int has_theta;
    double theta[SPEED_NFEATURES];
    double batch_per_gpu, dataset_size;
    struct trace_course course; /* n 0: not given */
};

/* The users a trace names, numbered 1, 2, ... in order of first appearance. */
struct user_names {
    char **names;
    size_t n, cap;
};

static void user_names_free(struct user_names *u)
{
    for (size_t i = 0; i < u->n; i++)
        free(u->names[i]);
    free(u->names);
}

/* The number of user name (0 for ""); -1 when out of memory. */
static int64_t user_number(struct user_names *u, const char *name)
{
    if (!name || !*name)
        return 0;
    for (size_t i = 0; i < u->n; i++)
        if (!strcmp(u->names[i], name))
            return (int64_t)i + 1;
    if (u->n == u->cap) {
        size_t ncap = u->cap ? 2 * u->cap : 16;
        char **p = realloc(u->names, ncap * sizeof(*p));
        if (!p)
            return -1;
        u->names = p;
        u->cap = ncap;
    }
    if (!(u->names[u->n] = strdup(name)))
        return -1;
    return (int64_t)++u->n;
}

/* "t0;t1;t2;t3;t4;t5[;t6;t7]": the coefficients of the speed model (speed.h), each finite and
 * >= 0, not all 0: the six before the link classes (t6, t7 then 0), or all eight. Returns 0,
 * or -1 with why. */
static int parse_theta(char *s, struct trace_row *r, char *why, size_t len)
{
    double sum = 0;
    int k = 0;
    for (char *tok = s, *next; tok; tok = next, k++) {
        next = strchr(tok, ';');
        if (next)
            *next++ = '\0';
        if (k >= SPEED_NFEATURES || parse_double(tok, &r->theta[k]) || r->theta[k] < 0) {
            k = -1;
            break;
        }
        sum += r->theta[k];
    }
    if ((k != SPEED_NFEATURES && k != SPEED_NFEATURES_NODES) || !(sum > 0)) {
        snprintf(why, len, "speed_theta is not %d or %d numbers >= 0 separated by ';'",
                 SPEED_NFEATURES_NODES, SPEED_NFEATURES);
        return -1;
    }
    r->has_theta = 1;
    return 0;
}

/* "w:steps[:step_s];...": the minibatches run at each world size (and their mean seconds,
 * for the record). Returns 0, or -1 with why. */
static int parse_course(char *s, struct trace_course *c, char *why, size_t len)
{
    double total = 0;
    for (char *tok = s, *next; tok; tok = next) {
        next = strchr(tok, ';');
        if (next)
            *next++ = '\0';
        char *steps = strchr(tok, ':'), *secs;
        if (steps)
            *steps++ = '\0';
        if (steps && (secs = strchr(steps, ':')))
            *secs++ = '\0';
        double w, n;
        if (!steps || parse_double(tok, &w) || w < 1 || w > 1e6 || w != floor(w) ||
            parse_double(steps, &n) || n < 0 || c->n >= TRACE_MAX_COURSE) {
            snprintf(why, len, "course is not w:steps[:step_s] pairs separated by ';' (at most %d)",
                     TRACE_MAX_COURSE);
            return -1;
        }
        c->w[c->n] = (int)w;
        c->steps[c->n++] = n;
        total += n;
    }
    if (!(total > 0)) {
        snprintf(why, len, "course has no step");
        return -1;
    }
    return 0;
}

/* The optional model columns of row f (n fields). Returns 0, or -1 with why. */
static int parse_models(char **f, size_t n, const int *col, struct trace_row *r, char *why,
                        size_t len)
{
    int c = col[COL_THETA];
    if (c >= 0 && (size_t)c < n && f[c][0] && parse_theta(f[c], r, why, len))
        return -1;
    static const char *const pos[2] = {"batch_per_gpu", "dataset_size"};
    double *out[2] = {&r->batch_per_gpu, &r->dataset_size};
    for (int b = 0; b < 2; b++) {
        c = col[COL_BATCH + b];
        if (c < 0 || (size_t)c >= n || !f[c][0])
            continue;
        if (parse_double(f[c], out[b]) || !(*out[b] > 0) || *out[b] > 1e15) {
            snprintf(why, len, "%s '%s' is not a number > 0", pos[b], f[c]);
            return -1;
        }
    }
    c = col[COL_COURSE];
    if (c >= 0 && (size_t)c < n && f[c][0] && parse_course(f[c], &r->course, why, len))
        return -1;
    return 0;
}

/* Parses one data row; returns 0 or -1 with the reason in why. */
static int parse_row(char *line, const int *col, struct trace_row *r, char *why, size_t len)
{
    char *f[64];
    size_t n = split(line, f, 64);
    double g;
    for (int c = 0; c < NCOLS; c++)
        if ((size_t)col[c] >= n) {
            snprintf(why, len, "%zu fields, column '%s' missing", n, col_names[c]);
            return -1;
        }
    memset(r, 0, sizeof(*r));
    r->user = col[COL_USER] >= 0 && (size_t)col[COL_USER] < n ? f[col[COL_USER]] : "";
    if (parse_double(f[col[COL_SUBMIT]], &r->submit) || r->submit < 0) {
        snprintf(why, len, "submit_time_s '%s' is not a number >= 0", f[col[COL_SUBMIT]]);
        return -1;
    }
    if (parse_double(f[col[COL_GPUS]], &g) || g < 1 || g > 1e6 || g != floor(g)) {
        snprintf(why, len, "num_gpus '%s' is not a whole number >= 1", f[col[COL_GPUS]]);
        return -1;
    }
    r->gpus = (int)g;
    r->elastic = -1;
    if (col[COL_ELASTIC] >= 0 && (size_t)col[COL_ELASTIC] < n && f[col[COL_ELASTIC]][0]) {
        const char *e = f[col[COL_ELASTIC]];
        if (strcmp(e, "0") && strcmp(e, "1")) {
            snprintf(why, len, "elastic '%s' is not 0 or 1", e);
            return -1;
        }
        r->elastic = e[0] == '1';
    }
    static const char *const bound[2] = {"min_gpus", "max_gpus"};
    int *out[2] = {&r->min_gpus, &r->max_gpus};
    for (int b = 0; b < 2; b++) {
        int c = col[COL_MIN + b];
        if (c < 0 || (size_t)c >= n || !f[c][0])
            continue;
        if (parse_double(f[c], &g) || g < 1 || g > 1e6 || g != floor(g)) {
            snprintf(why, len, "%s '%s' is not a whole number >= 1", bound[b], f[c]);
            return -1;
        }
        *out[b] = (int)g;
    }
    if ((r->min_gpus && r->min_gpus > r->gpus) || (r->max_gpus && r->max_gpus < r->gpus)) {
        snprintf(why, len, "num_gpus %d is outside min_gpus..max_gpus", r->gpus);
        return -1;
    }
    if (parse_models(f, n, col, r, why, len))
        return -1;
    if (f[col[COL_DURATION]][0] == '\0') {
        r->never_ran = 1;
        return 0;
    }
    /* Bounded: the template's speed model is scaled by the duration, and one near the
     * ends of the double range made a job of zero or infinite run time. */
    if (parse_double(f[col[COL_DURATION]], &r->duration) || r->duration < TRACE_MIN_DURATION_S ||
        r->duration > TRACE_MAX_DURATION_S) {
        snprintf(why, len, "duration_s '%s' is not a number in [%g, %g]", f[col[COL_DURATION]],
                 TRACE_MIN_DURATION_S, TRACE_MAX_DURATION_S);
        return -1;
    }
    return 0;
}

static int keep_row(const struct trace_row *r, const struct workload_trace_opts *o,
                    int cluster_gpus)
{
    if (r->never_ran || r->submit < o->start_s || r->gpus > cluster_gpus)
        return 0;
    if (o->window_s > 0 && r->submit >= o->start_s + o->window_s)
        return 0;
    if (r->duration < o->min_duration_s || (o->max_gpus > 0 && r->gpus > o->max_gpus))
        return 0;
    return 1;
}

/* The seconds the model takes for the course (the steps at each world size), or for the
 * job's epochs at gpus without one; 0 when it cannot say. */
static double model_seconds(const struct simulate_job_spec *j, const struct trace_course *c,
                            int gpus)
{
    if (c->n == 0) {
        double eps = speed_epochs_per_second(&j->speed, gpus);
        return eps > 0 ? j->epochs / eps : 0;
    }
    double s = 0;
    for (int k = 0; k < c->n; k++)
        s += c->steps[k] * speed_step_time(&j->speed, c->w[k]);
    return isfinite(s) ? s : 0;
}

/* The job's speed and work: its own measured model when the row has one (theta, with its
 * batch and dataset size), else the template's; its work the epochs of its measured course
 * (its steps at each size, at the model's examples per GPU) when the row has one, else the
 * template's. Then every coefficient is scaled by one factor so that the job, run as it ran
 * (its course, else duration at num_gpus), takes its measured run time: the model's shape
 * (how the job speeds up with GPUs) is kept and its launches and restarts, which the run time
 * holds, are spread over its steps. Returns 1 when the job's own model is used. */
static int trace_speed(struct simulate_job_spec *j, const struct trace_row *r,
                       const struct template *t)
{
    for (int pass = r->has_theta ? 0 : 1; pass < 2; pass++) {
        j->speed = t->speed;
        if (pass == 0) {
            memcpy(j->speed.theta, r->theta, sizeof(j->speed.theta));
            j->speed.gpus_per_node = 0; /* the live fit's placement: one node */
            j->speed.fitted = 1;
            if (r->batch_per_gpu > 0)
                j->speed.batch_per_gpu = r->batch_per_gpu;
            if (r->dataset_size > 0)
                j->speed.dataset_size = r->dataset_size;
        }
        j->epochs = t->epochs;
        if (r->course.n) {
            double ex = 0;
            for (int k = 0; k < r->course.n; k++)
                ex += r->course.steps[k] * r->course.w[k] * j->speed.batch_per_gpu;
            j->epochs = ex / j->speed.dataset_size;
        }
        double s = model_seconds(j, &r->course, r->gpus);
        if (!(s > 0) || !(j->epochs > 0) || !isfinite(j->epochs))
            continue; /* the job's own model cannot say: the template's */
        int finite = 1;
        for (int k = 0; k < SPEED_NFEATURES; k++)
            finite &= isfinite(j->speed.theta[k] *= r->duration / s);
        double run = j->epochs / speed_epochs_per_second(&j->speed, r->gpus);
        if (finite && isfinite(run) && run > 0) /* else extreme coefficients: the template's */
            return pass == 0;
    }
    /* neither can say with the course (a bad one): the template at the request, as before */
    j->speed = t->speed;
    j->epochs = t->epochs;
    double c = r->duration / model_seconds(j, &(struct trace_course){0}, r->gpus);
    for (int k = 0; k < SPEED_NFEATURES; k++)
        j->speed.theta[k] *= c;
    return 0;
}

/* The job of row r: its arrival, bounds and speed (trace_speed). Returns 1 when it runs at
 * its own measured speed model. */
static int trace_job(struct simulate_job_spec *j, const struct trace_row *r, int64_t id,
                     const struct template *t, int cluster_gpus)
{
    memset(j, 0, sizeof(*j));
    j->id = id;
    j->submit_time = r->submit;
    int own = trace_speed(j, r, t);
    j->requested_gpus = r->gpus;
    j->min_gpus = 1;
    j->max_gpus = min_int(r->gpus > t->max_gpus ? r->gpus : t->max_gpus, cluster_gpus);
    j->elastic = 1;
    if (r->elastic == 0) { /* rigid: exactly its GPUs */
        j->elastic = 0;
        j->min_gpus = j->max_gpus = r->gpus;
        return own;
    }
    if (r->min_gpus)
        j->min_gpus = r->min_gpus;
    if (r->max_gpus)
        j->max_gpus = min_int(r->max_gpus, cluster_gpus);
    if (j->max_gpus < j->requested_gpus)
        j->max_gpus = j->requested_gpus;
    return own;
}

static int grow(struct workload *w, size_t *cap)
{
    if (w->njobs < *cap)
        return 0;
    size_t ncap = *cap * 2;
    void *p = realloc(w->jobs, ncap * sizeof(*w->jobs));
    if (!p)
        return -1;
    w->jobs = p;
    *cap = ncap;
    return 0;
}

/* Reads the data rows into w; returns 0 or -1 with err filled. */
static int read_rows(FILE *in, struct workload *w, const int *col,
                     const struct workload_trace_opts *o, const struct template *t,
                     int cluster_gpus, FILE *bad, char *err, size_t errlen)
{
    char *line = NULL, why[160];
    size_t len = 0, cap = 1024, lineno = 1;
    int rc = 0;
    struct trace_row r;
    struct user_names users = {0};
    while (rc == 0 && getline(&line, &len, in) > 0) {
        lineno++;
        if (line[strspn(line, " \t\r\n")] == '\0')
            continue;
        if (o->max_jobs && w->njobs >= o->max_jobs)
            break;
        if (parse_row(line, col, &r, why, sizeof(why))) {
            if (!o->skip_bad_rows) {
                snprintf(err, errlen, "%s:%zu: %s", w->name, lineno, why);
                rc = -1;
            } else if (bad) {
                fprintf(bad, "%s:%zu: %s (skipped)\n", w->name, lineno, why);
            }
            w->skipped++;
            continue;
        }
        if (!keep_row(&r, o, cluster_gpus)) {
            w->skipped++;
            continue;
        }
        if (grow(w, &cap)) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
            break;
        }
        w->own_speed +=
            (size_t)trace_job(&w->jobs[w->njobs], &r, (int64_t)w->njobs + 1, t, cluster_gpus);
        w->with_course += r.course.n > 0;
        if ((w->jobs[w->njobs].user = user_number(&users, r.user)) < 0) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
            break;
        }
        w->njobs++;
    }
    free(line);
    user_names_free(&users);
    return rc;
}

static int by_submit(const void *a, const void *b)
{
    const struct simulate_job_spec *x = a, *y = b;
    if (x->submit_time != y->submit_time)
        return x->submit_time < y->submit_time ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

struct workload *workload_trace_read(FILE *in, const char *name,
                                     const struct workload_trace_opts *o, const struct template *t,
                                     int cluster_gpus, FILE *bad, char *err, size_t errlen)
{
    char *line = NULL;
    size_t len = 0;
    int col[COL_ALL];
    struct workload *w = workload_create(1024, err, errlen);
    if (!w)
        return NULL;
    snprintf(w->name, sizeof(w->name), "%s", name);
    if (getline(&line, &len, in) <= 0) {
        snprintf(err, errlen, "%s: empty file, expected a header line", name);
        goto error;
    }
    if (parse_header(line, col, err, errlen) ||
        read_rows(in, w, col, o, t, cluster_gpus, bad, err, errlen))
        goto error;
    if (w->njobs == 0) {
        snprintf(err, errlen, "%s: no job left after slicing (%zu rows skipped)", name, w->skipped);
        goto error;
    }
    qsort(w->jobs, w->njobs, sizeof(*w->jobs), by_submit);
    double t0 = w->jobs[0].submit_time;
    for (size_t i = 0; i < w->njobs; i++)
        w->jobs[i].submit_time -= t0;
    free(line);
    return w;
error:
    free(line);
    workload_destroy(w);
    return NULL;
}

struct workload *workload_trace_load(const char *path, const struct workload_trace_opts *o,
                                     const struct template *t, int cluster_gpus, FILE *bad,
                                     char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    const char *base = strrchr(path, '/');
    char name[128];
    snprintf(name, sizeof(name), "%s", base ? base + 1 : path);
    char *dot = strrchr(name, '.');
    if (dot && dot != name)
        *dot = '\0';
    struct workload *w = workload_trace_read(f, name, o, t, cluster_gpus, bad, err, errlen);
    fclose(f);
    return w;
}

void workload_draw_gpu_util(struct workload *w, double lo, double hi, uint64_t seed)
{
    uint64_t rng = seed ^ 0x6a09e667f3bcc909ULL;

    for (size_t i = 0; i < w->njobs; i++)
        w->jobs[i].gpu_util = lo + (hi - lo) * simulate_rng_uniform(&rng);
}

double workload_time_alone(const struct simulate_job_spec *j)
{
    double eps = sched_speed_rate(&j->speed, &j->batch, j->requested_gpus, NULL);

    return eps > 0 && isfinite(eps) ? j->epochs / eps : 0.0;
}

void workload_draw_deadlines(struct workload *w, double share, double lo, double hi,
                             uint64_t seed)
{
    uint64_t rng = seed ^ 0xbb67ae8584caa73bULL;

    for (size_t i = 0; i < w->njobs; i++) {
        struct simulate_job_spec *j = &w->jobs[i];
        double pick = simulate_rng_uniform(&rng);
        double lambda = lo + (hi - lo) * simulate_rng_uniform(&rng);
        double alone = workload_time_alone(j);
        j->deadline = pick < share && alone > 0 ? j->submit_time + lambda * alone : 0.0;
    }
}

int workload_assign_users(struct workload *w, int k, const double *mix, size_t nmix,
                          uint64_t seed)
{
    uint64_t rng = seed ^ 0x3c6ef372fe94f82bULL;
    double total = 0;

    if (k < 1 || (nmix && nmix != (size_t)k))
        return -1;
    for (size_t u = 0; u < nmix; u++)
        total += mix[u] > 0 ? mix[u] : 0;
    if (nmix && !(total > 0))
        return -1;
    for (size_t i = 0, next = 0; i < w->njobs; i++) {
        if (w->jobs[i].user)
            continue;
        if (!nmix) {
            w->jobs[i].user = (int64_t)(next++ % (size_t)k) + 1;
            continue;
        }
        double x = simulate_rng_uniform(&rng) * total;
        size_t u = 0;
        while (u + 1 < nmix && (x -= (mix[u] > 0 ? mix[u] : 0)) >= 0)
            u++;
        w->jobs[i].user = (int64_t)u + 1;
    }
    return 0;
}

size_t workload_users(const struct workload *w, int64_t *ids, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < w->njobs; i++) {
        size_t k = 0;
        while (k < n && ids[k] != w->jobs[i].user)
            k++;
        if (k == n && n < max)
            ids[n++] = w->jobs[i].user;
    }
    return n;
}
