/* ringctl report: where the GPU-hours went (GET /api/v1/reports/usage), by user, job array
 * and day, as a table in the manner of sreport, or as CSV. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ringctl.h"
#include "table.h"

#define REPORT_USAGE                                                                               \
    "report [--since 30d|DAY] [--until DAY] [--by user|array|day[,...]] [--user NAME] [--csv]"

/* The sums of a row, their headers, and whether they are causes of loss (under "lost"). */
static const struct {
    const char *member, *header;
    int lost;
} cols[] = {
    {"allocated", "ALLOCATED", 0}, {"useful", "USEFUL", 0}, {"idle", "IDLE", 0},
    {"restart", "RESTART", 1},     {"resize", "RESIZE", 1}, {"migration", "MIGRATION", 1},
    {"preemption", "PREEMPT", 1},  {"fault", "FAULT", 1},
};
#define NCOLS (sizeof(cols) / sizeof(cols[0]))
#define NKEYS_MAX 3

/* --since: a day as given (YYYY-MM-DD), or a period back from now ("30d": the last 30 UTC
 * days, today included) as its first UTC day, into day. Returns 0 or -1 (printed). */
static int since_day(const char *arg, char *day, size_t len)
{
    if (strlen(arg) == 10 && arg[4] == '-' && arg[7] == '-') {
        snprintf(day, len, "%s", arg);
        return 0;
    }
    double s;
    if (ringctl_parse_period("--since", arg, &s) < 0)
        return -1;
    /* a whole number of days counts today as the first: 1d is today, 30d today and 29 more */
    double back = s >= 86400 && (long long)s % 86400 == 0 ? s - 86400 : s;
    time_t t = time(NULL) - (time_t)back;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(day, len, "%Y-%m-%d", &tm);
    return 0;
}

static double hours(const json_t *row, size_t c)
{
    const json_t *in = cols[c].lost ? json_object_get(row, "lost") : row;
    return json_number_value(json_object_get(in, cols[c].member));
}

/* A key's cell: its text, its number, or "-" (jobs outside arrays, a day of no user). */
static void key_text(const json_t *row, const char *key, char *buf, size_t len)
{
    const json_t *v = json_object_get(row, key);
    if (json_is_string(v))
        snprintf(buf, len, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, len, "%lld", (long long)json_integer_value(v));
    else
        snprintf(buf, len, "%s", json_is_null(v) && !strcmp(key, "array") ? "none" : "-");
}

static void print_csv(const json_t *report, const json_t *by)
{
    size_t k;
    const json_t *key;
    json_array_foreach(by, k, key) printf("%s,", json_string_value(key));
    for (size_t c = 0; c < NCOLS; c++)
        printf("%s_gpu_hours,", cols[c].member);
    printf("steps,jobs\n");
    size_t i;
    const json_t *row;
    json_array_foreach(json_object_get(report, "items"), i, row)
    {
        char cell[96];
        json_array_foreach(by, k, key)
        {
            key_text(row, json_string_value(key), cell, sizeof(cell));
            printf("%s,", cell);
        }
        for (size_t c = 0; c < NCOLS; c++)
            printf("%.6f,", hours(row, c));
        printf("%lld,%lld\n", (long long)json_integer_value(json_object_get(row, "steps")),
               (long long)json_integer_value(json_object_get(row, "jobs")));
    }
}

/* One table row of row: its keys (or "TOTAL" in the first), its sums in GPU-hours. */
static int add_row(struct table *t, const json_t *row, const json_t *by, int total)
{
    char buf[NKEYS_MAX + NCOLS + 2][64];
    const char *cells[NKEYS_MAX + NCOLS + 2];
    size_t nk = json_array_size(by), n = 0;
    for (size_t k = 0; k < nk; k++, n++) {
        if (total)
            snprintf(buf[n], sizeof(buf[n]), "%s", k ? "" : "TOTAL");
        else
            key_text(row, json_string_value(json_array_get(by, k)), buf[n], sizeof(buf[n]));
    }
    for (size_t c = 0; c < NCOLS; c++, n++)
        snprintf(buf[n], sizeof(buf[n]), "%.2f", hours(row, c));
    snprintf(buf[n++], sizeof(buf[0]), "%lld",
             (long long)json_integer_value(json_object_get(row, "steps")));
    snprintf(buf[n++], sizeof(buf[0]), "%lld",
             (long long)json_integer_value(json_object_get(row, "jobs")));
    for (size_t c = 0; c < n; c++)
        cells[c] = buf[c];
    return table_add(t, cells);
}

static int print_table(const json_t *report, const json_t *by)
{
    const char *headers[NKEYS_MAX + NCOLS + 2];
    char upper[NKEYS_MAX][16];
    size_t nk = json_array_size(by), n = 0;
    for (size_t k = 0; k < nk && k < NKEYS_MAX; k++, n++) {
        const char *w = json_string_value(json_array_get(by, k));
        size_t j = 0;
        for (; w && w[j] && j + 1 < sizeof(upper[k]); j++)
            upper[k][j] = (char)(w[j] >= 'a' && w[j] <= 'z' ? w[j] - 32 : w[j]);
        upper[k][j] = '\0';
        headers[n] = upper[k];
    }
    for (size_t c = 0; c < NCOLS; c++)
        headers[n++] = cols[c].header;
    headers[n++] = "STEPS";
    headers[n++] = "JOBS";
    struct table *t = table_create((int)n, headers);
    if (!t)
        return RINGCTL_API_ERROR;
    size_t i;
    const json_t *row;
    int rc = 0;
    json_array_foreach(json_object_get(report, "items"), i, row) rc |= add_row(t, row, by, 0);
    const json_t *total = json_object_get(report, "total");
    if (json_is_object(total))
        rc |= add_row(t, total, by, 1);
    printf("GPU-hours of %s to %s (UTC days), booked up to %s; lost: its launches (RESTART),\n"
           "resizes, migrations, work redone after a preemption, GPU and node faults\n",
           json_string_value(json_object_get(report, "since")),
           json_string_value(json_object_get(report, "until")),
           json_string_value(json_object_get(report, "as_of")));
    table_print(t, stdout);
    table_destroy(t);
    return rc ? RINGCTL_API_ERROR : RINGCTL_OK;
}

/* The query of the command line into path. Returns 0, or RINGCTL_USAGE (printed). */
static int report_path(int argc, char **argv, int *csv, char *path, size_t len)
{
    char since[16] = "", query[512] = "";
    for (int i = 0; i < argc; i++) {
        const char *name = argv[i] + 2;
        size_t q = strlen(query);
        if (!strcmp(argv[i], "--csv")) {
            *csv = 1;
        } else if (!strcmp(argv[i], "--since") && i + 1 < argc) {
            if (since_day(argv[++i], since, sizeof(since)) < 0)
                return RINGCTL_USAGE;
        } else if ((!strcmp(argv[i], "--until") || !strcmp(argv[i], "--by") ||
                    !strcmp(argv[i], "--user")) &&
                   i + 1 < argc &&
                   strspn(argv[i + 1], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
                                       "OPQRSTUVWXYZ0123456789-_.,:") == strlen(argv[i + 1])) {
            snprintf(query + q, sizeof(query) - q, "&%s=%.100s", name, argv[++i]);
        } else {
            return ringctl_usage(REPORT_USAGE);
        }
    }
    snprintf(path, len, "/api/v1/reports/usage?since=%s%s", since, query);
    return RINGCTL_OK;
}

int ringctl_cmd_report(struct ringctl *ctl, int argc, char **argv)
{
    char path[640];
    int csv = 0;
    int rc = report_path(argc, argv, &csv, path, sizeof(path));
    if (rc != RINGCTL_OK)
        return rc;
    json_t *out;
    rc = ringctl_call(ctl, "GET", path, NULL, NULL, &out);
    if (rc != RINGCTL_OK)
        return rc;
    const json_t *by = json_object_get(out, "by");
    if (ctl->json)
        ringctl_print_json(out);
    else if (csv)
        print_csv(out, by);
    else
        rc = print_table(out, by);
    json_decref(out);
    return rc;
}
