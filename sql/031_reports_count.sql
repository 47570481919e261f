-- 031: job_last_report also counts every report its job ever made (reports: monotonic, where
-- rows is what is left after the thinning), kept by the same trigger, so that the
-- scheduler's snapshot reads a job's count in one primary-key row instead of summing its
-- job_metric_sums rows (a subquery with an aggregate per active job): the round's jobs
-- statement at 5,186 active jobs, 2,700 of them with reports, quiet database, pgbench:
-- 18.4-20.4 -> 9.8-11.1 ms (docs/benchmarks.md, "The round's count of reports"). The same
-- count as sum(job_metric_sums.reports), which the trigger of sql/005 and 011 keeps from the
-- same inserts.
ALTER TABLE job_last_report ADD COLUMN reports bigint NOT NULL DEFAULT 0;

UPDATE job_last_report l SET reports = s.n
FROM (SELECT job_id, sum(reports) AS n FROM job_metric_sums GROUP BY job_id) s
WHERE s.job_id = l.job_id;

-- 022's function (the latest report's time and step, the rows kept), counting the reports.
CREATE OR REPLACE FUNCTION job_last_report_set() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_last_report AS t (job_id, at, step, rows, reports)
    SELECT l.job_id, l.at, l.step, c.n, c.n
      FROM (SELECT DISTINCT ON (job_id) job_id, at, step FROM new_rows
             ORDER BY job_id, at DESC, step DESC) l
      JOIN (SELECT job_id, count(*) AS n FROM new_rows GROUP BY job_id) c USING (job_id)
    ON CONFLICT (job_id) DO UPDATE
       SET at = greatest(t.at, EXCLUDED.at),
           step = CASE WHEN EXCLUDED.at >= t.at OR t.step IS NULL THEN EXCLUDED.step
                       ELSE t.step END,
           rows = t.rows + EXCLUDED.rows,
           reports = t.reports + EXCLUDED.reports;
    RETURN NULL;
END
$$;
