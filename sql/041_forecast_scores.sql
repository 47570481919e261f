-- 041: the forecasts scored against what happened (issue 33 item 2, docs/forecast.md
-- "Calibration"): for each forecast kept (forecast_marks) of a job that then started, or
-- completed, the time it was made ahead of the event (lead_s), the error of its P50 (truth
-- less P50, seconds), whether the truth fell at or below its P90, and for a finish forecast
-- made while the job ran, ln((truth - made) / (P50 - made)): the error of its remaining work,
-- whose spread and mean the next forecasts draw with. Rows outlive their jobs (no foreign
-- key); the forecast thread drops those older than 90 days.
CREATE TABLE forecast_scores (
    id         bigserial PRIMARY KEY,
    job_id     bigint NOT NULL,
    event      text NOT NULL CHECK (event IN ('start', 'finish')),
    made_at    timestamptz NOT NULL,
    lead_s     double precision NOT NULL CHECK (lead_s >= 0),
    error_s    double precision NOT NULL,
    within_p90 boolean NOT NULL,
    log_ratio  double precision,
    scored_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX forecast_scores_scored ON forecast_scores (scored_at);
