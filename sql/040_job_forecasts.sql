-- 040: forecasts of each pending and running job's start and finish, P50 and P90 (issue 33
-- item 1, docs/forecast.md). The leader's forecast thread (server/live/forecast_thread.c)
-- replaces the rows after each pass; every server reads them, so a standby or a restarted
-- server shows the forecasts the leader made, with as_of saying when. NULL: unknown.
CREATE TABLE job_forecasts (
    job_id     bigint PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
    start_p50  timestamptz,
    start_p90  timestamptz,
    finish_p50 timestamptz,
    finish_p90 timestamptz,
    as_of      timestamptz NOT NULL
);

-- The forecasts kept to be scored when the job starts and when it ends (041): at most one per
-- job per 10 minutes. running: the job ran when it was made (its finish forecast is then of
-- its remaining work alone, which sets the spread of the next forecasts). A mark's start is
-- cleared once scored; the marks of an ended job go once its finish is scored.
CREATE TABLE forecast_marks (
    job_id     bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    made_at    timestamptz NOT NULL,
    running    boolean NOT NULL,
    start_p50  timestamptz,
    start_p90  timestamptz,
    finish_p50 timestamptz,
    finish_p90 timestamptz,
    PRIMARY KEY (job_id, made_at)
);
