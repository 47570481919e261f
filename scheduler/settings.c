/* settings: the table of the scheduler's settings (name, type, bounds, default, where each
 * lands, the simulator's option) and the few functions that read and set them by it. */
#include "settings.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched.h"

#define AT(member) offsetof(struct settings, member)

/* The server's bounds are the columns' CHECKs and DEFAULTs (sql/004, 006, 012, 014, 015, 036,
 * 044). */
/* clang-format off */
static const struct settings_desc table[] = {
    {.name = "policy", .type = SETTINGS_POLICY, .offset = AT(policy), .def_policy = "ringmaster"},
    {.name = "interval_s", .type = SETTINGS_SECONDS, .offset = AT(interval_s), .min = 0.1,
     .max = 3600, .def = 10, .flag = "interval", .sim_min = 0.001, .sim_max = 1e9, .sim_def = 60},
    {.name = "node_timeout_s", .type = SETTINGS_SECONDS, .offset = AT(node_timeout_s), .min = 1,
     .max = 86400, .def = 30},
    {.name = "min_resize_interval_s", .type = SETTINGS_SECONDS,
     .offset = AT(min_resize_interval_s), .min = 0, .max = 86400, .def = 120,
     .flag = "min-resize-interval", .sim_min = 0, .sim_max = 1e9,
     .sim_def = SCHED_MIN_RESIZE_INTERVAL_S},
    {.name = "resize_cost_s", .type = SETTINGS_SECONDS, .offset = AT(resize_cost_s), .min = 0,
     .max = 86400, .def = 30, .flag = "resize-cost", .sim_min = 0, .sim_max = 1e9, .sim_def = 10},
    {.name = "grace_s", .type = SETTINGS_SECONDS, .offset = AT(grace_s), .min = 0, .max = 3600,
     .def = 60},
    {.name = "quantum_s", .type = SETTINGS_SECONDS, .offset = AT(quantum_s), .min = 1,
     .max = 86400, .def = 60, .flag = "quantum", .sim_min = 1, .sim_max = 1e9,
     .sim_def = SCHED_QUANTUM_S},
    {.name = "explore_stage_s", .type = SETTINGS_SECONDS, .offset = AT(explore_stage_s),
     .min = 1, .max = 86400, .def = 150},
    {.name = "max_wait_s", .type = SETTINGS_SECONDS, .offset = AT(max_wait_s), .min = 1,
     .max = 2592000, .def = 3600, .flag = "max-wait", .sim_min = 0, .sim_max = 1e12,
     .sim_def = 0},
    {.name = "paused", .type = SETTINGS_BOOL, .offset = AT(paused), .def = 0},
    {.name = "hold_unmet_deps", .type = SETTINGS_BOOL, .offset = AT(hold_unmet_deps), .def = 0},
    {.name = "min_runtime_s", .type = SETTINGS_SECONDS, .offset = AT(min_runtime_s), .min = 0,
     .max = 2592000, .def = 0, .flag = "min-runtime", .sim_min = 0, .sim_max = 1e12,
     .sim_def = 0},
    {.name = NULL},
};
/* clang-format on */
#define NROWS (sizeof(table) / sizeof(table[0]) - 1)

_Static_assert(NROWS <= SETTINGS_MAX, "raise SETTINGS_MAX");

const struct settings_desc *settings_list(void)
{
    return table;
}

size_t settings_count(void)
{
    return NROWS;
}

const struct settings_desc *settings_find(const char *name)
{
    for (const struct settings_desc *d = table; name && d->name; d++)
        if (!strcmp(d->name, name))
            return d;
    return NULL;
}

const struct settings_desc *settings_find_flag(const char *flag)
{
    for (const struct settings_desc *d = table; flag && d->name; d++)
        if (d->flag && !strcmp(d->flag, flag))
            return d;
    return NULL;
}

static void *field(const struct settings_desc *d, struct settings *s)
{
    return (char *)s + d->offset;
}

static void copy_name(char *dst, const char *src)
{
    size_t n = strlen(src);
    if (n > SETTINGS_POLICY_MAX - 1)
        n = SETTINGS_POLICY_MAX - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Row d of s = its server default, or its simulator default when sim and it has a flag. */
static void set_default(const struct settings_desc *d, struct settings *s, int sim)
{
    switch (d->type) {
    case SETTINGS_POLICY:
        copy_name(field(d, s), d->def_policy);
        break;
    case SETTINGS_SECONDS:
        *settings_seconds(d, s) = sim && d->flag ? d->sim_def : d->def;
        break;
    case SETTINGS_BOOL:
        *settings_bool(d, s) = d->def != 0;
        break;
    }
}

void settings_defaults(struct settings *s)
{
    memset(s, 0, sizeof(*s));
    for (const struct settings_desc *d = table; d->name; d++)
        set_default(d, s, 0);
}

void settings_sim_defaults(struct settings *s)
{
    memset(s, 0, sizeof(*s));
    for (const struct settings_desc *d = table; d->name; d++)
        set_default(d, s, 1);
}

double *settings_seconds(const struct settings_desc *d, struct settings *s)
{
    return d->type == SETTINGS_SECONDS ? field(d, s) : NULL;
}

double settings_seconds_of(const struct settings_desc *d, const struct settings *s)
{
    return d->type == SETTINGS_SECONDS ? *(const double *)((const char *)s + d->offset) : NAN;
}

int *settings_bool(const struct settings_desc *d, struct settings *s)
{
    return d->type == SETTINGS_BOOL ? field(d, s) : NULL;
}

int settings_bool_of(const struct settings_desc *d, const struct settings *s)
{
    return d->type == SETTINGS_BOOL ? *(const int *)((const char *)s + d->offset) : 0;
}

const char *settings_policy_of(const struct settings_desc *d, const struct settings *s)
{
    return d->type == SETTINGS_POLICY ? (const char *)s + d->offset : NULL;
}

int settings_in_bounds(const struct settings_desc *d, double v)
{
    return d->type == SETTINGS_SECONDS && v >= d->min && v <= d->max;
}

int settings_set_policy(const struct settings_desc *d, struct settings *s, const char *name)
{
    if (d->type != SETTINGS_POLICY || !name || !sched_policy_find(name))
        return -1;
    copy_name(field(d, s), name);
    return 0;
}

int settings_set_text(const struct settings_desc *d, struct settings *s, const char *text)
{
    char *end;
    double v;
    if (!text)
        return -1;
    switch (d->type) {
    case SETTINGS_POLICY:
        copy_name(field(d, s), text);
        return 0;
    case SETTINGS_SECONDS:
        v = strtod(text, &end);
        if (end == text || *end)
            return -1;
        *settings_seconds(d, s) = v;
        return 0;
    case SETTINGS_BOOL:
        if (strcmp(text, "t") && strcmp(text, "true") && strcmp(text, "f") && strcmp(text, "false"))
            return -1;
        *settings_bool(d, s) = text[0] == 't';
        return 0;
    }
    return -1;
}
