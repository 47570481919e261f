-- 005: running sums of each job's minibatch reports per world size, kept by a trigger on
-- job_metrics, so that the scheduler's rounds read a few rows per job (has anything new
-- arrived? the mean step time at each size) instead of scanning every report it ever made.

CREATE TABLE job_metric_sums (
    job_id      bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    world_size  integer NOT NULL,
    reports     bigint NOT NULL DEFAULT 0,           -- every report at this size
    timed       bigint NOT NULL DEFAULT 0,           -- reports with seconds > 0
    sum_seconds double precision NOT NULL DEFAULT 0, -- of the timed reports
    sum_samples double precision NOT NULL DEFAULT 0, -- of the timed reports
    PRIMARY KEY (job_id, world_size)
);

CREATE FUNCTION job_metric_sums_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_metric_sums AS t (job_id, world_size, reports, timed, sum_seconds,
                                      sum_samples)
    SELECT job_id, world_size, count(*), count(*) FILTER (WHERE seconds > 0),
           COALESCE(sum(seconds) FILTER (WHERE seconds > 0), 0),
           COALESCE(sum(samples) FILTER (WHERE seconds > 0), 0)
    FROM new_rows GROUP BY job_id, world_size
    ON CONFLICT (job_id, world_size) DO UPDATE
    SET reports = t.reports + EXCLUDED.reports,
        timed = t.timed + EXCLUDED.timed,
        sum_seconds = t.sum_seconds + EXCLUDED.sum_seconds,
        sum_samples = t.sum_samples + EXCLUDED.sum_samples;
    RETURN NULL;
END
$$;

-- Only rows really inserted are in new_rows (a duplicate skipped by ON CONFLICT is not).
CREATE TRIGGER job_metrics_sums AFTER INSERT ON job_metrics
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION job_metric_sums_add();

INSERT INTO job_metric_sums (job_id, world_size, reports, timed, sum_seconds, sum_samples)
SELECT job_id, world_size, count(*), count(*) FILTER (WHERE seconds > 0),
       COALESCE(sum(seconds) FILTER (WHERE seconds > 0), 0),
       COALESCE(sum(samples) FILTER (WHERE seconds > 0), 0)
FROM job_metrics GROUP BY job_id, world_size;
