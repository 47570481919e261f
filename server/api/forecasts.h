/* forecasts: GET /api/v1/forecasts/calibration, how well the start and finish forecasts
 * (docs/forecast.md) came true: the view forecast_calibration (sql/041) that /metrics reads
 * too. */
#ifndef RINGMASTER_API_FORECASTS_H
#define RINGMASTER_API_FORECASTS_H

struct api_call;

/* 200 {"items": [{event, lead, n, within_p90, median_rel_err}]}: event "start" or "finish",
 * lead "<10m", "10-60m", "1-4h" or ">4h" (how far ahead the forecast was made), every one of
 * the eight always listed (n 0, the two ratios null when none was scored). */
void forecasts_calibration_get(struct api_call *call);

#endif
