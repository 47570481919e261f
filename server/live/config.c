/* config: table scheduler_config read and written by the core's table of the settings
 * (scheduler/settings.h): every column by its name, never by its position. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"

int live_config_read(const PGresult *r, int i, struct settings *s, char *err, size_t errlen)
{
    settings_defaults(s);
    for (const struct settings_desc *d = settings_list(); d->name; d++) {
        int col = PQfnumber(r, d->name);
        if (col < 0 || PQgetisnull(r, i, col) ||
            settings_set_text(d, s, PQgetvalue(r, i, col)) < 0) {
            snprintf(err, errlen, "scheduler config: column %s %s", d->name,
                     col < 0 ? "missing" : "unreadable");
            return -1;
        }
    }
    return 0;
}

int live_config_load(PGconn *c, struct settings *cfg, char *err, size_t errlen)
{
    PGresult *r = db_exec(c, "SELECT * FROM scheduler_config WHERE id = 1", 0, NULL);
    int rc = -1;
    if (db_ok(r) && PQntuples(r) == 1)
        rc = live_config_read(r, 0, cfg, err, errlen);
    else
        snprintf(err, errlen, "scheduler config: %s", PQresultErrorMessage(r));
    PQclear(r);
    return rc;
}

/* The cast of a setting's parameter in SQL. */
static const char *cast_of(const struct settings_desc *d)
{
    switch (d->type) {
    case SETTINGS_SECONDS:
        return "::float8";
    case SETTINGS_BOOL:
        return "::boolean";
    default:
        return "";
    }
}

/* Row d of s as a parameter's text, into buf (a borrowed string of s for a policy). */
static const char *param_of(const struct settings_desc *d, const struct settings *s, char *buf,
                            size_t len)
{
    switch (d->type) {
    case SETTINGS_SECONDS:
        snprintf(buf, len, "%.17g", settings_seconds_of(d, s));
        return buf;
    case SETTINGS_BOOL:
        return settings_bool_of(d, s) ? "true" : "false";
    default:
        return settings_policy_of(d, s);
    }
}

int live_config_save(PGconn *c, const struct settings *s, const unsigned char *given)
{
    char sql[4096], num[SETTINGS_MAX][32];
    const char *params[SETTINGS_MAX];
    int n = 0;
    size_t o = (size_t)snprintf(sql, sizeof(sql), "UPDATE scheduler_config SET");
    size_t k = 0;
    for (const struct settings_desc *d = settings_list(); d->name; d++, k++) {
        if (!given[k])
            continue;
        params[n] = param_of(d, s, num[n], sizeof(num[n]));
        n++;
        o += (size_t)snprintf(sql + o, sizeof(sql) - o, " %s = $%d%s,", d->name, n, cast_of(d));
    }
    snprintf(sql + o, sizeof(sql) - o, " updated_at = now() WHERE id = 1");
    return db_command_params(c, sql, n, params);
}
