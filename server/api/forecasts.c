/* forecasts: the forecasts' calibration, from the view that /metrics reads (forecasts.h). */
#include "forecasts.h"

#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "forecast_cells.h"
#include "store/db.h"

static const char *const forecasts_lead[FORECAST_LEADS] = FORECAST_LEAD_NAMES;
static const char *const forecasts_event[FORECAST_EVENTS] = FORECAST_EVENT_NAMES;

/* Cell c of row i as a JSON real, or null. */
static json_t *real_or_null(const PGresult *r, int i, int c)
{
    return i < 0 || PQgetisnull(r, i, c) ? json_null()
                                         : json_real(strtod(PQgetvalue(r, i, c), NULL));
}

/* The row of r for event and lead, or -1. */
static int row_of(const PGresult *r, const char *event, const char *lead)
{
    for (int i = 0; i < PQntuples(r); i++)
        if (!strcmp(PQgetvalue(r, i, 0), event) && !strcmp(PQgetvalue(r, i, 1), lead))
            return i;
    return -1;
}

void forecasts_calibration_get(struct api_call *call)
{
    PGresult *r = db_exec(call->db,
                          "SELECT event, lead, n, within_p90, median_rel_err FROM"
                          " forecast_calibration",
                          0, NULL);
    if (!db_ok(r)) {
        api_db_error(call, r);
        PQclear(r);
        return;
    }
    json_t *items = json_array();
    for (int e = 0; e < FORECAST_EVENTS; e++)
        for (int k = 0; k < FORECAST_LEADS; k++) {
            int i = row_of(r, forecasts_event[e], forecasts_lead[k]);
            json_array_append_new(
                items, json_pack("{s:s, s:s, s:I, s:o, s:o}", "event", forecasts_event[e], "lead",
                                 forecasts_lead[k], "n",
                                 (json_int_t)(i < 0 ? 0 : strtoll(PQgetvalue(r, i, 2), NULL, 10)),
                                 "within_p90", real_or_null(r, i, 3), "median_rel_err",
                                 real_or_null(r, i, 4)));
        }
    PQclear(r);
    api_respond_json(call, 200, json_pack("{s:o}", "items", items));
}
