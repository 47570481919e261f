/* forecast_cells: the cells of the forecasts' calibration (the view forecast_calibration,
 * sql/041), that GET /api/v1/forecasts/calibration (forecasts.c) and /metrics (metrics.c)
 * both list in full: the events, and how far ahead of them the forecasts were made. Text
 * only, so that neither reader needs the other. */
#ifndef RINGMASTER_API_FORECAST_CELLS_H
#define RINGMASTER_API_FORECAST_CELLS_H

#define FORECAST_EVENTS 2
#define FORECAST_EVENT_NAMES                                                                       \
    {                                                                                              \
        "start", "finish"                                                                          \
    }
#define FORECAST_LEADS 4
#define FORECAST_LEAD_NAMES                                                                        \
    {                                                                                              \
        "<10m", "10-60m", "1-4h", ">4h"                                                            \
    }

#endif
