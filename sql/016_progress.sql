-- 016: each job's latest reported step beside the time of its latest report, so that a job's
-- progress (steps done of its declared or reported total) is one primary-key lookup for the
-- job lists instead of a scan of its reports. The step is that of the latest report (a job
-- restarted from a checkpoint goes back to the checkpoint's step).

ALTER TABLE job_last_report ADD COLUMN step bigint;

CREATE OR REPLACE FUNCTION job_last_report_set() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_last_report AS t (job_id, at, step)
    SELECT DISTINCT ON (job_id) job_id, at, step FROM new_rows
     ORDER BY job_id, at DESC, step DESC
    ON CONFLICT (job_id) DO UPDATE
       SET at = greatest(t.at, EXCLUDED.at),
           step = CASE WHEN EXCLUDED.at >= t.at OR t.step IS NULL THEN EXCLUDED.step
                       ELSE t.step END;
    RETURN NULL;
END
$$;

UPDATE job_last_report l SET step = m.step
  FROM (SELECT DISTINCT ON (job_id) job_id, step FROM job_metrics
         ORDER BY job_id, at DESC, step DESC) m
 WHERE m.job_id = l.job_id;
