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

-- The calibration, what the dashboard and /metrics show: per event and how far ahead the
-- forecast was made (lead: <10m, 10-60m, 1-4h, >4h), the scores, the share of truths at or
-- below the P90, and the median |P50 error| over the time to the event. One definition for
-- both readers.
CREATE VIEW forecast_calibration AS
SELECT event, lead, count(*) AS n,
       avg(within_p90::int)::float8 AS within_p90,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(error_s) / greatest(lead_s, 1))
           AS median_rel_err
  FROM (SELECT event, within_p90, error_s, lead_s,
               CASE WHEN lead_s < 600 THEN '<10m' WHEN lead_s < 3600 THEN '10-60m'
                    WHEN lead_s < 14400 THEN '1-4h' ELSE '>4h' END AS lead
          FROM forecast_scores) s
 GROUP BY event, lead;
