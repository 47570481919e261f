-- 026: a minibatch report no longer checks its job by a foreign key of its own. The check
-- ran once per row (a KEY SHARE lock on the job's row each time): at 512 nodes and 2,700
-- running jobs reporting, 369,193 of them in 95 s took 33 s of PostgreSQL's time, and a
-- job's state change (SELECT ... FOR UPDATE) waited behind them (make bench-scale,
-- docs/benchmarks.md "A large cluster"). The reports' job is still checked, once per job
-- and statement: the same insert adds to job_last_report and job_metric_sums (the triggers
-- of sql/007, 016, 022 and sql/005, 011), whose foreign keys fail for a job that does not
-- exist (SQLSTATE 23503, as before: the metrics API answers 404). Jobs are never deleted
-- by the server; a job deleted by hand still takes its reports with it, by the trigger
-- below, as ON DELETE CASCADE did.
ALTER TABLE job_metrics DROP CONSTRAINT job_metrics_job_id_fkey;

CREATE FUNCTION job_metrics_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM job_metrics m USING old_rows o WHERE m.job_id = o.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_forget_metrics AFTER DELETE ON jobs
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION job_metrics_forget();
