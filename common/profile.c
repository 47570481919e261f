/* profile: loader of the measured job profiles (see profile.h). */
#include "profile.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errtext.h"

#define PROFILE_MAX_FIELDS 8
#define PROFILE_PATH_MAX 4096 /* longer paths are cut (and then fail to open) */

static const char *const app_names[PROFILE_NAPPS] = {"bert",     "cifar10", "deepspeech2",
                                                     "imagenet", "ncf",     "yolov3"};

/* One CSV file being read: its name for messages and the current line number. */
struct csv {
    FILE *f;
    const char *path;
    int lineno;
    char *line;
    size_t cap;
};

/* Growth state of a profile_points being filled. */
struct points_builder {
    struct profile_points *pts;
    size_t cap;
};

const char *profile_app_name(size_t i)
{
    return i < PROFILE_NAPPS ? app_names[i] : NULL;
}

/* The folder sub of the shared data ($RINGMASTER_SHARED_DIR, else ../shared) into buf. */
static const char *shared_dir(char *buf, size_t len, const char *sub)
{
    const char *shared = getenv("RINGMASTER_SHARED_DIR");
    if (!shared || !*shared)
        shared = "../shared";
    snprintf(buf, len, "%s/%s", shared, sub);
    return buf;
}

const char *profile_dir(char *buf, size_t len)
{
    return shared_dir(buf, len, "profiles");
}

/* Splits line (modified in place) at commas; returns the field count or -1 if more than
 * max. A trailing newline or carriage return is dropped. */
static int split_fields(char *line, char **fields, int max)
{
    line[strcspn(line, "\r\n")] = '\0';
    int n = 0;
    for (char *p = line;; p++) {
        if (n == max)
            return -1;
        fields[n++] = p;
        p += strcspn(p, ",");
        if (*p == '\0')
            return n;
        *p = '\0';
    }
}

static bool parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static bool parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE || v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

/* Opens path and checks that its header starts with `header`. Returns 0, 1 if the file
 * does not exist (and missing_ok), or -1 with a message. */
static int csv_open(struct csv *c, const char *path, const char *header, bool missing_ok, char *err,
                    size_t errlen)
{
    *c = (struct csv){.path = path};
    c->f = fopen(path, "r");
    if (!c->f) {
        if (missing_ok && errno == ENOENT)
            return 1;
        errtext_set(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (getline(&c->line, &c->cap, c->f) < 0 || strncmp(c->line, header, strlen(header))) {
        errtext_set(err, errlen, "%s:1: expected header \"%s\"", path, header);
        return -1;
    }
    c->lineno = 1;
    return 0;
}

/* Reads the next non-empty line and splits it; returns the field count, 0 at the end. */
static int csv_next(struct csv *c, char **fields)
{
    while (getline(&c->line, &c->cap, c->f) >= 0) {
        c->lineno++;
        if (c->line[strspn(c->line, " \t\r\n")] == '\0')
            continue;
        int n = split_fields(c->line, fields, PROFILE_MAX_FIELDS);
        return n < 0 ? PROFILE_MAX_FIELDS + 1 : n;
    }
    return 0;
}

static void csv_close(struct csv *c)
{
    if (c->f)
        fclose(c->f);
    free(c->line);
    c->f = NULL;
    c->line = NULL;
}

static void *grow(void *p, size_t cap, size_t size, bool *ok)
{
    void *q = realloc(p, cap * size);
    if (!q)
        *ok = false;
    return q ? q : p;
}

/* Makes room for one more row; returns false on ENOMEM. */
static bool points_reserve(struct points_builder *b)
{
    struct profile_points *p = b->pts;
    if (p->n < b->cap)
        return true;
    size_t cap = b->cap ? 2 * b->cap : 256;
    bool ok = true;
    p->w = grow(p->w, cap, sizeof(int), &ok);
    p->nodes = grow(p->nodes, cap, sizeof(int), &ok);
    p->max_per_node = grow(p->max_per_node, cap, sizeof(int), &ok);
    p->local_bsz = grow(p->local_bsz, cap, sizeof(int), &ok);
    p->step_time = grow(p->step_time, cap, sizeof(double), &ok);
    p->sync_time = grow(p->sync_time, cap, sizeof(double), &ok);
    if (ok)
        b->cap = cap;
    return ok;
}

static void points_free(struct profile_points *p)
{
    free(p->w);
    free(p->nodes);
    free(p->max_per_node);
    free(p->local_bsz);
    free(p->step_time);
    free(p->sync_time);
    memset(p, 0, sizeof(*p));
}

/* "2233" -> w = 10, nodes = 4, max = 3. */
static bool parse_placement(const char *s, int *w, int *nodes, int *max)
{
    size_t len = strlen(s);
    if (len == 0 || len > 64)
        return false;
    *w = *max = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '1' || s[i] > '9')
            return false;
        int d = s[i] - '0';
        *w += d;
        *max = d > *max ? d : *max;
    }
    *nodes = (int)len;
    return true;
}

/* Fills one row of a points table from fields: placement form (4 fields) or scalability
 * form (5 fields: num_nodes, num_replicas, ...). */
static bool parse_point_row(char **f, int nf, bool scal, struct profile_points *p)
{
    size_t i = p->n;
    int off = scal ? 2 : 1;
    if (nf != off + 3)
        return false;
    if (scal) {
        if (!parse_int(f[0], 1, 1 << 20, &p->nodes[i]) || !parse_int(f[1], 1, 1 << 20, &p->w[i]))
            return false;
        if (p->nodes[i] > p->w[i])
            return false;
        p->max_per_node[i] = (p->w[i] + p->nodes[i] - 1) / p->nodes[i];
    } else if (!parse_placement(f[0], &p->w[i], &p->nodes[i], &p->max_per_node[i])) {
        return false;
    }
    return parse_int(f[off], 1, INT_MAX, &p->local_bsz[i]) &&
           parse_double(f[off + 1], &p->step_time[i]) && p->step_time[i] > 0.0 &&
           parse_double(f[off + 2], &p->sync_time[i]) && p->sync_time[i] >= 0.0;
}

static int load_points(const char *dir, const char *file, bool scal, struct profile_points *p,
                       char *err, size_t errlen)
{
    char path[PROFILE_PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    const char *header = scal ? "num_nodes,num_replicas,local_bsz,step_time,sync_time"
                              : "placement,local_bsz,step_time,sync_time";
    struct csv c;
    int rc = csv_open(&c, path, header, scal, err, errlen);
    struct points_builder b = {.pts = p};
    char *f[PROFILE_MAX_FIELDS];
    int nf;
    while (rc == 0 && (nf = csv_next(&c, f)) > 0) {
        if (!points_reserve(&b)) {
            errtext_set(err, errlen, "%s: out of memory", path);
            rc = -1;
        } else if (!parse_point_row(f, nf, scal, p)) {
            errtext_set(err, errlen, "%s:%d: bad row", path, c.lineno);
            rc = -1;
        } else {
            p->n++;
        }
    }
    csv_close(&c);
    return rc < 0 ? -1 : 0;
}

/* As load_points, with the columns in any order (profiles-hetero: read by header); missing_ok
 * as for csv_open. */
static int load_points_by_header(const char *path, bool scal, bool missing_ok,
                                 struct profile_points *p, char *err, size_t errlen)
{
    static const char *const scal_cols[] = {"num_nodes", "num_replicas", "local_bsz",
                                            "step_time", "sync_time"};
    static const char *const place_cols[] = {"placement", "local_bsz", "step_time",
                                             "sync_time"};
    const char *const *cols = scal ? scal_cols : place_cols;
    int ncols = scal ? 5 : 4, at[5], nh;
    struct csv c;
    int rc = csv_open(&c, path, "", missing_ok, err, errlen);
    char *f[PROFILE_MAX_FIELDS], *row[5];
    if (rc == 0 && (nh = split_fields(c.line, f, PROFILE_MAX_FIELDS)) < 0)
        nh = 0;
    for (int k = 0; rc == 0 && k < ncols; k++) {
        at[k] = -1;
        for (int h = 0; h < nh; h++)
            if (!strcmp(f[h], cols[k]))
                at[k] = h;
        if (at[k] < 0) {
            errtext_set(err, errlen, "%s:1: no column \"%s\"", path, cols[k]);
            rc = -1;
        }
    }
    struct points_builder b = {.pts = p};
    int nf;
    while (rc == 0 && (nf = csv_next(&c, f)) > 0) {
        int ok = nf == nh;
        for (int k = 0; ok && k < ncols; k++)
            row[k] = f[at[k]];
        if (!points_reserve(&b)) {
            errtext_set(err, errlen, "%s: out of memory", path);
            rc = -1;
        } else if (!ok || !parse_point_row(row, ncols, scal, p)) {
            errtext_set(err, errlen, "%s:%d: bad row", path, c.lineno);
            rc = -1;
        } else {
            p->n++;
        }
    }
    csv_close(&c);
    return rc < 0 ? -1 : 0;
}

static void validation_free(struct profile_validation *v)
{
    free(v->progress);
    free(v->iteration);
    free(v->metric);
    free(v->grad_sqr);
    free(v->grad_var);
    memset(v, 0, sizeof(*v));
}

static bool validation_reserve(struct profile_validation *v, size_t *cap)
{
    if (v->n < *cap)
        return true;
    size_t ncap = *cap ? 2 * *cap : 64;
    bool ok = true;
    v->progress = grow(v->progress, ncap, sizeof(double), &ok);
    v->iteration = grow(v->iteration, ncap, sizeof(double), &ok);
    v->metric = grow(v->metric, ncap, sizeof(double), &ok);
    v->grad_sqr = grow(v->grad_sqr, ncap, sizeof(double), &ok);
    v->grad_var = grow(v->grad_var, ncap, sizeof(double), &ok);
    if (ok)
        *cap = ncap;
    return ok;
}

static bool parse_validation_row(char **f, int nf, struct profile_validation *v)
{
    size_t i = v->n;
    v->grad_sqr[i] = v->grad_var[i] = 0.0;
    return nf >= 3 && parse_double(f[0], &v->progress[i]) && v->progress[i] >= 0.0 &&
           parse_double(f[1], &v->iteration[i]) && v->iteration[i] >= 0.0 &&
           parse_double(f[2], &v->metric[i]) &&
           (nf < 5 || (parse_double(f[3], &v->grad_sqr[i]) && v->grad_sqr[i] >= 0.0 &&
                       parse_double(f[4], &v->grad_var[i]) && v->grad_var[i] >= 0.0));
}

static int load_validation(const char *path, struct profile_validation *v, char *err, size_t errlen)
{
    struct csv c;
    int rc = csv_open(&c, path, "progress,iteration,metric", false, err, errlen);
    size_t cap = 0;
    char *f[PROFILE_MAX_FIELDS];
    int nf;
    while (rc == 0 && (nf = csv_next(&c, f)) > 0) {
        if (!validation_reserve(v, &cap)) {
            errtext_set(err, errlen, "%s: out of memory", path);
            rc = -1;
        } else if (!parse_validation_row(f, nf, v)) {
            errtext_set(err, errlen, "%s:%d: bad row", path, c.lineno);
            rc = -1;
        } else {
            v->n++;
        }
    }
    csv_close(&c);
    return rc;
}

/* "validation-<digits>.csv" -> the global batch, or -1. */
static int validation_batch(const char *name)
{
    const char *prefix = "validation-";
    size_t plen = strlen(prefix), len = strlen(name);
    if (len <= plen + 4 || strncmp(name, prefix, plen) || strcmp(name + len - 4, ".csv"))
        return -1;
    char digits[16];
    size_t nd = len - plen - 4;
    if (nd >= sizeof(digits))
        return -1;
    memcpy(digits, name + plen, nd);
    digits[nd] = '\0';
    for (size_t i = 0; i < nd; i++)
        if (!isdigit((unsigned char)digits[i]))
            return -1;
    int b;
    return parse_int(digits, 1, INT_MAX, &b) ? b : -1;
}

static int cmp_validation(const void *a, const void *b)
{
    const struct profile_validation *x = a, *y = b;
    return (x->global_bsz > y->global_bsz) - (x->global_bsz < y->global_bsz);
}

/* Appends one empty validation slot; returns it or NULL (ENOMEM). */
static struct profile_validation *add_validation(struct profile *p)
{
    struct profile_validation *v =
        realloc(p->validations, (p->nvalidations + 1) * sizeof(*p->validations));
    if (!v)
        return NULL;
    p->validations = v;
    v += p->nvalidations++;
    memset(v, 0, sizeof(*v));
    return v;
}

static int load_validations(const char *dir, struct profile *p, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d) {
        errtext_set(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        int batch = validation_batch(e->d_name);
        if (batch < 0)
            continue;
        struct profile_validation *v = add_validation(p);
        char path[PROFILE_PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (!v) {
            errtext_set(err, errlen, "%s: out of memory", path);
            rc = -1;
        } else {
            v->global_bsz = batch;
            rc = load_validation(path, v, err, errlen);
        }
    }
    closedir(d);
    if (rc == 0 && p->nvalidations > 1)
        qsort(p->validations, p->nvalidations, sizeof(*p->validations), cmp_validation);
    return rc;
}

/* Rising (accuracy) or falling (error rate, loss): the last epoch against the first, on
 * the smallest global batch that has at least two rows. */
static int metric_rises(const struct profile *p)
{
    for (size_t i = 0; i < p->nvalidations; i++) {
        const struct profile_validation *v = &p->validations[i];
        if (v->n >= 2)
            return v->metric[v->n - 1] > v->metric[0];
    }
    return 0;
}

struct profile *profile_load_dir(const char *dir, const char *app, char *err, size_t errlen)
{
    struct profile *p = calloc(1, sizeof(*p));
    if (!p) {
        errtext_set(err, errlen, "%s: out of memory", dir);
        return NULL;
    }
    snprintf(p->app, sizeof(p->app), "%s", app ? app : "");
    if (load_points(dir, "placements.csv", false, &p->placements, err, errlen) < 0 ||
        load_points(dir, "scalability.csv", true, &p->scalability, err, errlen) < 0 ||
        load_validations(dir, p, err, errlen) < 0)
        goto error;
    if (p->placements.n == 0) {
        errtext_set(err, errlen, "%s/placements.csv: no rows", dir);
        goto error;
    }
    p->metric_rises = metric_rises(p);
    return p;
error:
    profile_destroy(p);
    return NULL;
}

static const char *const type_names[PROFILE_NTYPES] = {"aws", "rtx", "quad", "dgx-ext"};

const char *profile_type_name(size_t i)
{
    return i < PROFILE_NTYPES ? type_names[i] : NULL;
}

const char *profile_hetero_dir(char *buf, size_t len)
{
    return shared_dir(buf, len, "profiles-hetero");
}

static bool app_name_ok(const char *app);

struct profile *profile_load_type(const char *app, const char *type, char *err, size_t errlen)
{
    size_t t = 0;
    while (t < PROFILE_NTYPES && (!type || strcmp(type, type_names[t])))
        t++;
    if (!app_name_ok(app) || t == PROFILE_NTYPES) {
        errtext_set(err, errlen, "profile: bad app \"%s\" or node type \"%s\"",
                    app ? app : "(null)", type ? type : "(null)");
        return NULL;
    }
    struct profile *p = calloc(1, sizeof(*p));
    char base[PROFILE_PATH_MAX], path[PROFILE_PATH_MAX + 128];
    if (!p) {
        errtext_set(err, errlen, "%s: out of memory", app);
        return NULL;
    }
    snprintf(p->app, sizeof(p->app), "%s", app);
    profile_hetero_dir(base, sizeof(base));
    snprintf(path, sizeof(path), "%s/%s/placements-%s.csv", base, app, type);
    int rc = load_points_by_header(path, false, false, &p->placements, err, errlen);
    if (rc == 0 && p->placements.n == 0) {
        errtext_set(err, errlen, "%s: no rows", path);
        rc = -1;
    }
    snprintf(path, sizeof(path), "%s/%s/scalability-%s.csv", base, app, type);
    if (rc == 0)
        rc = load_points_by_header(path, true, true, &p->scalability, err, errlen);
    if (rc) {
        profile_destroy(p);
        return NULL;
    }
    return p;
}

static bool app_name_ok(const char *app)
{
    size_t len = app ? strlen(app) : 0;
    if (len == 0 || len >= sizeof(((struct profile *)0)->app) || app[0] == '.')
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)app[i]) && app[i] != '_' && app[i] != '-' && app[i] != '.')
            return false;
    return true;
}

struct profile *profile_load(const char *app, char *err, size_t errlen)
{
    if (!app_name_ok(app)) {
        errtext_set(err, errlen, "profile: bad app name \"%s\"", app ? app : "(null)");
        return NULL;
    }
    char base[PROFILE_PATH_MAX], dir[PROFILE_PATH_MAX + 64];
    profile_dir(base, sizeof(base));
    snprintf(dir, sizeof(dir), "%s/%s", base, app);
    return profile_load_dir(dir, app, err, errlen);
}

void profile_destroy(struct profile *p)
{
    if (!p)
        return;
    points_free(&p->placements);
    points_free(&p->scalability);
    for (size_t i = 0; i < p->nvalidations; i++)
        validation_free(&p->validations[i]);
    free(p->validations);
    free(p);
}

int profile_common_local_bsz(const struct profile *p)
{
    int best = 0;
    size_t best_count = 0;
    const struct profile_points *pts = &p->placements;
    for (size_t i = 0; i < pts->n; i++) {
        size_t count = 0;
        for (size_t j = 0; j < pts->n; j++)
            count += pts->local_bsz[j] == pts->local_bsz[i];
        if (count > best_count || (count == best_count && pts->local_bsz[i] < best)) {
            best = pts->local_bsz[i];
            best_count = count;
        }
    }
    return best;
}

/* The local batch of pts nearest bsz (ties: the smaller). */
static int nearest_bsz(const struct profile_points *pts, int bsz)
{
    int best = 0;
    for (size_t i = 0; i < pts->n; i++) {
        int d = abs(pts->local_bsz[i] - bsz), bd = abs(best - bsz);
        if (best == 0 || d < bd || (d == bd && pts->local_bsz[i] < best))
            best = pts->local_bsz[i];
    }
    return best;
}

/* The mean step and sync time of w GPUs at batch b, on one node (multi 0) or on several. */
static int mean_at(const struct profile_points *pts, int b, int w, int multi, double *step,
                   double *sync)
{
    int k = 0;
    *step = *sync = 0;
    for (size_t i = 0; i < pts->n; i++)
        if (pts->local_bsz[i] == b && pts->w[i] == w && (pts->nodes[i] > 1) == multi) {
            *step += pts->step_time[i];
            *sync += pts->sync_time[i];
            k++;
        }
    if (k > 0) {
        *step /= k;
        *sync /= k;
    }
    return k;
}

int profile_link_shares(const struct profile *p, int bsz, double *pcie, double *cross)
{
    const struct profile_points *pts = &p->placements;
    int b = nearest_bsz(pts, bsz), n = 0;
    double t1, s1, one, one_sync, multi, multi_sync;
    *pcie = *cross = 0;
    if (!mean_at(pts, b, 1, 0, &t1, &s1) || !(t1 > 0))
        return 0;
    for (int w = 2; w <= 4; w++) {
        if (!mean_at(pts, b, w, 0, &one, &one_sync) || !mean_at(pts, b, w, 1, &multi, &multi_sync))
            continue;
        *pcie += one_sync * (1.0 - 1.0 / PROFILE_NVLINK_SPEEDUP) / t1;
        *cross += fmax(0.0, multi - one) * (PROFILE_SWITCH_OVERSUB - 1.0) / t1;
        n++;
    }
    if (n > 0) {
        *pcie /= n;
        *cross /= n;
    }
    return n;
}
