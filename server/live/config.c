#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"

int sched_config_load(PGconn *c, struct sched_config *cfg, char *err, size_t errlen)
{
    PGresult *r = db_exec(c,
                          "SELECT policy, interval_s, node_timeout_s, min_resize_interval_s,"
                          " resize_cost_s, grace_s, paused, quantum_s, explore_stage_s, max_wait_s"
                          " FROM scheduler_config"
                          " WHERE id = 1",
                          0, NULL);
    int ok = db_ok(r) && PQntuples(r) == 1;
    if (ok) {
        snprintf(cfg->policy, sizeof(cfg->policy), "%s", PQgetvalue(r, 0, 0));
        cfg->interval_s = strtod(PQgetvalue(r, 0, 1), NULL);
        cfg->node_timeout_s = strtod(PQgetvalue(r, 0, 2), NULL);
        cfg->min_resize_interval_s = strtod(PQgetvalue(r, 0, 3), NULL);
        cfg->resize_cost_s = strtod(PQgetvalue(r, 0, 4), NULL);
        cfg->grace_s = strtod(PQgetvalue(r, 0, 5), NULL);
        cfg->paused = strcmp(PQgetvalue(r, 0, 6), "t") == 0;
        cfg->quantum_s = strtod(PQgetvalue(r, 0, 7), NULL);
        cfg->explore_stage_s = strtod(PQgetvalue(r, 0, 8), NULL);
        cfg->max_wait_s = strtod(PQgetvalue(r, 0, 9), NULL);
    } else {
        snprintf(err, errlen, "scheduler config: %s", PQresultErrorMessage(r));
    }
    PQclear(r);
    return ok ? 0 : -1;
}
