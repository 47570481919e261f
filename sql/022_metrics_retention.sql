-- 022: a bound on each job's minibatch history (server/live/retention.c). job_last_report
-- also counts the job's rows in job_metrics, kept by the same trigger, so that the thinning
-- finds the jobs past their bound in one small table without counting anyone's rows. (No
-- index on the count: it changes with every report, and an index on it would make each of
-- those updates a non-HOT one; the server reads the table every 30 s.)
ALTER TABLE job_last_report ADD COLUMN rows bigint NOT NULL DEFAULT 0;

UPDATE job_last_report l SET rows = c.n
FROM (SELECT job_id, count(*) AS n FROM job_metrics GROUP BY job_id) c
WHERE c.job_id = l.job_id;

-- 016's function (the latest report's time and step), counting the rows too.
CREATE OR REPLACE FUNCTION job_last_report_set() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_last_report AS t (job_id, at, step, rows)
    SELECT l.job_id, l.at, l.step, c.n
      FROM (SELECT DISTINCT ON (job_id) job_id, at, step FROM new_rows
             ORDER BY job_id, at DESC, step DESC) l
      JOIN (SELECT job_id, count(*) AS n FROM new_rows GROUP BY job_id) c USING (job_id)
    ON CONFLICT (job_id) DO UPDATE
       SET at = greatest(t.at, EXCLUDED.at),
           step = CASE WHEN EXCLUDED.at >= t.at OR t.step IS NULL THEN EXCLUDED.step
                       ELSE t.step END,
           rows = t.rows + EXCLUDED.rows;
    RETURN NULL;
END
$$;

