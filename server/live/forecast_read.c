/* forecast_read: the forecasts the forecast thread stored (job_forecasts, sql/040), read by
 * whoever needs one job's (live.h). */
#include <stdio.h>
#include <stdlib.h>

#include "live.h"
#include "store/db.h"

int live_forecast_finish(PGconn *c, long long job_id, double *p50, double *p90, double *as_of)
{
    char id[32];
    snprintf(id, sizeof(id), "%lld", job_id);
    const char *p[] = {id};
    PGresult *r = db_exec(c,
                          "SELECT extract(epoch FROM finish_p50), extract(epoch FROM finish_p90),"
                          " extract(epoch FROM as_of) FROM job_forecasts WHERE job_id = $1::bigint"
                          " AND finish_p50 IS NOT NULL",
                          1, p);
    int rc = !db_ok(r) ? -1 : PQntuples(r) == 1 ? 0 : 1;
    if (rc == 0) {
        double v[3];
        for (int k = 0; k < 3; k++)
            v[k] = PQgetisnull(r, 0, k) ? -1 : strtod(PQgetvalue(r, 0, k), NULL);
        if (p50)
            *p50 = v[0];
        if (p90)
            *p90 = v[1];
        if (as_of)
            *as_of = v[2];
    }
    PQclear(r);
    return rc;
}
