-- 053: a job's reports are kept by launch, and the steps it redoes count from the first step
-- it reported after going back.
--
-- 039 summed t.step - EXCLUDED.step, the post's latest step: a post that gathered many steps
-- of the restarted launch (a restart from the checkpoint of step 20 after step 40, reporting
-- 21..30 in one post) counted 10 steps gone back, not 20, and the scheduler's epochs done
-- (server/live/model.c, live_model_progress) and the ledger's lost GPU-hours with them.
-- first_step keeps the lowest step of the latest statement's reports. A statement whose
-- reports are newer than the ones kept (at > t.at: a post sent again is not a restart) and
-- whose first step is at or below the step kept went back to the step before its first:
-- t.step - (first - 1) steps are redone. The rest is 039's function.
ALTER TABLE job_last_report ADD COLUMN first_step bigint;

CREATE OR REPLACE FUNCTION job_last_report_set() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_last_report AS t (job_id, at, step, rows, reports, first_step)
    SELECT l.job_id, l.at, l.step, c.n, c.n, c.first
      FROM (SELECT DISTINCT ON (job_id) job_id, at, step FROM new_rows
             ORDER BY job_id, at DESC, step DESC) l
      JOIN (SELECT job_id, count(*) AS n, min(step) AS first FROM new_rows GROUP BY job_id) c
        USING (job_id)
    ON CONFLICT (job_id) DO UPDATE
       SET at = greatest(t.at, EXCLUDED.at),
           step = CASE WHEN EXCLUDED.at >= t.at OR t.step IS NULL THEN EXCLUDED.step
                       ELSE t.step END,
           redo = t.redo + CASE WHEN EXCLUDED.at > t.at AND EXCLUDED.first_step <= t.step
                                THEN t.step - EXCLUDED.first_step + 1
                                WHEN EXCLUDED.at >= t.at AND EXCLUDED.step < t.step
                                THEN t.step - EXCLUDED.step ELSE 0 END,
           first_step = EXCLUDED.first_step,
           rows = t.rows + EXCLUDED.rows,
           reports = t.reports + EXCLUDED.reports;
    RETURN NULL;
END
$$;

-- A report's launch: the id of its job's latest start, resize or migrate action when it was
-- stored (0: none), the server's (server/api/reports_metrics.c). The key was (job, step,
-- world size), which dropped every report of the steps a job redid at the size it ran
-- before (a preemption, a requeue or a move restarts it from its checkpoint at its size):
-- its latest step stayed the one it reached before until it passed it, its redone steps were
-- never counted and their step times never measured. A report sent again (a retried post) is
-- still the same row: same step, world size and launch.
ALTER TABLE job_metrics ADD COLUMN launch bigint NOT NULL DEFAULT 0;
ALTER TABLE job_metrics DROP CONSTRAINT job_metrics_pkey,
    ADD PRIMARY KEY (job_id, step, world_size, launch);
