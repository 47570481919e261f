/* config: the live scheduler's settings, table scheduler_config (PUT /api/v1/scheduler
 * writes them; each round reads them afresh). The settings and their columns are the core's
 * table (scheduler/settings.h): a column per setting, named as the setting, read by its name. */
#ifndef RINGMASTER_LIVE_CONFIG_H
#define RINGMASTER_LIVE_CONFIG_H

#include <libpq-fe.h>
#include <stddef.h>

#include "settings.h"

/* Reads the settings. Returns 0, or -1 with text in err. */
int live_config_load(PGconn *c, struct settings *cfg, char *err, size_t errlen);

/* The settings of row i of r, a result that holds scheduler_config's columns under their own
 * names (SELECT c.* ...), into s. Returns 0, or -1 with text in err (a column missing or
 * unreadable). */
int live_config_read(const PGresult *r, int i, struct settings *s, char *err, size_t errlen);

/* Stores the settings of s that given marks (given[k] for row k of settings_list()), the
 * others as they are, and the time of the change. Returns 0, or -1 (a database error). */
int live_config_save(PGconn *c, const struct settings *s, const unsigned char *given);

#endif
