/* settings: the table of the scheduler's settings: every setting once and in the order of its
 * struct, its bounds and defaults (and that they are the columns' CHECKs and DEFAULTs of
 * sql/), the simulator's bounds, and setting values from a column's text. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched.h"
#include "settings.h"

static size_t size_of(const struct settings_desc *d)
{
    return d->type == SETTINGS_POLICY    ? SETTINGS_POLICY_MAX
           : d->type == SETTINGS_SECONDS ? sizeof(double)
                                         : sizeof(int);
}

Test(settings, every_setting_once_in_the_order_of_its_struct)
{
    const struct settings_desc *t = settings_list();
    size_t n = settings_count();
    cr_assert_eq(n, 12);
    cr_assert(n <= SETTINGS_MAX);
    cr_assert_null(t[n].name);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(settings_find(t[i].name), &t[i], "%s", t[i].name);
        if (t[i].flag)
            cr_assert_eq(settings_find_flag(t[i].flag), &t[i], "%s", t[i].flag);
        if (i > 0)
            cr_assert_geq(t[i].offset, t[i - 1].offset + size_of(&t[i - 1]), "%s", t[i].name);
        for (size_t k = 0; k < i; k++)
            cr_assert_str_neq(t[i].name, t[k].name);
    }
    /* the last member ends the struct (but for its padding): none is left out at the end */
    cr_assert_leq(t[n - 1].offset + size_of(&t[n - 1]), sizeof(struct settings));
    cr_assert_gt(t[n - 1].offset + size_of(&t[n - 1]) + sizeof(double), sizeof(struct settings));
    cr_assert_eq(t[0].offset, 0);
    cr_assert_null(settings_find("max_wait"));
    cr_assert_null(settings_find(NULL));
    cr_assert_null(settings_find_flag("node-timeout"));
    cr_assert_eq(settings_find_flag("max-wait"), settings_find("max_wait_s"));
}

Test(settings, defaults_are_within_their_bounds)
{
    struct settings s, sim;
    settings_defaults(&s);
    settings_sim_defaults(&sim);
    cr_assert_str_eq(s.policy, "ringmaster");
    cr_assert_not_null(sched_policy_find(s.policy));
    cr_assert_eq(s.interval_s, 10);
    cr_assert_eq(s.node_timeout_s, 30);
    cr_assert_eq(s.min_resize_interval_s, 120);
    cr_assert_eq(s.resize_cost_s, 30);
    cr_assert_eq(s.grace_s, 60);
    cr_assert_eq(s.quantum_s, 60);
    cr_assert_eq(s.explore_stage_s, 150);
    cr_assert_eq(s.max_wait_s, 3600);
    cr_assert_eq(s.paused, 0);
    cr_assert_eq(s.hold_unmet_deps, 0);
    cr_assert_eq(s.min_runtime_s, 0, "no minimum run before a preemption by default");
    cr_assert_eq(settings_find_flag("min-runtime"), settings_find("min_runtime_s"));
    /* the simulator's: its historical defaults (max wait off) */
    cr_assert_eq(sim.interval_s, 60);
    cr_assert_eq(sim.resize_cost_s, 10);
    cr_assert_eq(sim.min_resize_interval_s, SCHED_MIN_RESIZE_INTERVAL_S);
    cr_assert_eq(sim.quantum_s, SCHED_QUANTUM_S);
    cr_assert_eq(sim.max_wait_s, 0);
    cr_assert_eq(sim.node_timeout_s, 30); /* no option: the server's */
    for (const struct settings_desc *d = settings_list(); d->name; d++) {
        if (d->type != SETTINGS_SECONDS)
            continue;
        cr_assert(settings_in_bounds(d, settings_seconds_of(d, &s)), "%s", d->name);
        cr_assert_lt(d->min, d->max, "%s", d->name);
        if (!d->flag)
            continue;
        double v = settings_seconds_of(d, &sim);
        cr_assert(v >= d->sim_min && v <= d->sim_max, "%s", d->name);
        /* what-if hands the server's values to the simulator: its bounds take them all */
        cr_assert(d->sim_min <= d->min && d->max <= d->sim_max, "%s", d->name);
    }
}

Test(settings, bounds)
{
    const struct settings_desc *w = settings_find("max_wait_s"), *iv = settings_find("interval_s");
    cr_assert(settings_in_bounds(w, 1));
    cr_assert(settings_in_bounds(w, 2592000));
    cr_assert_not(settings_in_bounds(w, 2592000.001));
    cr_assert_not(settings_in_bounds(w, 0.999));
    cr_assert_not(settings_in_bounds(w, -3));
    cr_assert_not(settings_in_bounds(w, NAN));
    cr_assert_not(settings_in_bounds(w, INFINITY));
    cr_assert(settings_in_bounds(iv, 0.1));
    cr_assert_not(settings_in_bounds(iv, 0.09));
    cr_assert_not(settings_in_bounds(settings_find("paused"), 0));
    cr_assert_not(settings_in_bounds(settings_find("policy"), 0));
}

Test(settings, text_round_trip)
{
    struct settings s, t;
    settings_defaults(&s);
    for (const struct settings_desc *d = settings_list(); d->name; d++) {
        if (d->type != SETTINGS_SECONDS)
            continue;
        double want = d->min + (d->max - d->min) / 3; /* not a short decimal */
        char text[40];
        snprintf(text, sizeof(text), "%.17g", want);
        cr_assert_eq(settings_set_text(d, &s, text), 0, "%s", d->name);
        cr_assert_eq(settings_seconds_of(d, &s), want, "%s", d->name);
        cr_assert_eq(*settings_seconds(d, &s), want, "%s", d->name);
        t = s;
        cr_assert_eq(settings_set_text(d, &s, "12x"), -1);
        cr_assert_eq(settings_set_text(d, &s, ""), -1);
        cr_assert_eq(settings_set_text(d, &s, NULL), -1);
        cr_assert_eq(memcmp(&s, &t, sizeof(s)), 0, "a failed set changes nothing");
        cr_assert_null(settings_bool(d, &s));
        cr_assert_null(settings_policy_of(d, &s));
    }
    const struct settings_desc *p = settings_find("paused"), *pol = settings_find("policy");
    cr_assert_eq(settings_set_text(p, &s, "t"), 0);
    cr_assert_eq(s.paused, 1);
    cr_assert_eq(settings_set_text(p, &s, "false"), 0);
    cr_assert_eq(settings_bool_of(p, &s), 0);
    cr_assert_eq(settings_set_text(p, &s, "yes"), -1);
    cr_assert_null(settings_seconds(p, &s));
    cr_assert(isnan(settings_seconds_of(p, &s)));
    cr_assert_eq(settings_set_text(pol, &s, "gandiva"), 0);
    cr_assert_str_eq(settings_policy_of(pol, &s), "gandiva");
    cr_assert_eq(settings_set_text(pol, &s, "0123456789012345678901234567890123456789"), 0);
    cr_assert_eq(strlen(s.policy), SETTINGS_POLICY_MAX - 1, "a long name is cut");
}

Test(settings, policy_is_one_of_the_core)
{
    struct settings s;
    const struct settings_desc *pol = settings_find("policy");
    settings_defaults(&s);
    cr_assert_eq(settings_set_policy(pol, &s, "precompute"), 0);
    cr_assert_str_eq(s.policy, "precompute");
    cr_assert_eq(settings_set_policy(pol, &s, "nonesuch"), -1);
    cr_assert_eq(settings_set_policy(pol, &s, NULL), -1);
    cr_assert_eq(settings_set_policy(settings_find("paused"), &s, "gandiva"), -1);
    cr_assert_str_eq(s.policy, "precompute");
    for (const struct sched_policy_ops *const *o = sched_policy_list(); *o; o++)
        cr_assert_eq(settings_set_policy(pol, &s, (*o)->name), 0, "%s", (*o)->name);
}

/* ---- the table against the columns of sql/ ---- */

/* Every migration of sql/ in one string, each run of white space one space (new). */
static char *schema_text(void)
{
    DIR *dir = opendir("sql");
    cr_assert_not_null(dir, "run from the repository root");
    size_t cap = 1 << 20, n = 0;
    char *out = calloc(1, cap);
    struct dirent *e;
    while ((e = readdir(dir))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".sql"))
            continue;
        char path[512];
        snprintf(path, sizeof(path), "sql/%s", e->d_name);
        FILE *f = fopen(path, "r");
        cr_assert_not_null(f);
        int c, space = 1;
        while ((c = fgetc(f)) != EOF && n + 2 < cap) {
            if (isspace(c)) {
                if (!space)
                    out[n++] = ' ';
                space = 1;
            } else {
                out[n++] = (char)c;
                space = 0;
            }
        }
        out[n++] = ' ';
        fclose(f);
    }
    closedir(dir);
    return out;
}

/* The number after the first "text" in s, NAN when there is none. */
static double number_after(const char *s, const char *text)
{
    const char *at = strstr(s, text);
    return at ? strtod(at + strlen(text), NULL) : NAN;
}

Test(settings, the_columns_checks_and_defaults)
{
    char *sql = schema_text(), want[160];
    for (const struct settings_desc *d = settings_list(); d->name; d++) {
        if (d->type == SETTINGS_SECONDS) {
            snprintf(want, sizeof(want), "%s double precision NOT NULL DEFAULT ", d->name);
            cr_expect_eq(number_after(sql, want), d->def, "%s: DEFAULT", d->name);
            snprintf(want, sizeof(want), "CHECK (%s >= ", d->name);
            cr_expect_eq(number_after(sql, want), d->min, "%s: CHECK's least", d->name);
            snprintf(want, sizeof(want), "AND %s <= ", d->name);
            cr_expect_eq(number_after(sql, want), d->max, "%s: CHECK's most", d->name);
        } else if (d->type == SETTINGS_BOOL) {
            snprintf(want, sizeof(want), "%s boolean NOT NULL DEFAULT %s", d->name,
                     d->def ? "true" : "false");
            cr_expect_not_null(strstr(sql, want), "%s", want);
        } else {
            snprintf(want, sizeof(want), "ALTER COLUMN %s SET DEFAULT '%s'", d->name,
                     d->def_policy);
            cr_expect_not_null(strstr(sql, want), "%s", want);
        }
    }
    free(sql);
}
