-- 014: schedule on what is actually known (docs/scheduler.md, "Estimates").
--  * A job may declare its length: total_steps, or epochs; stop_at_convergence lets the
--    convergence fit shorten it, stop_at_loss names the loss it stops at. A running job may
--    report the total it will run (libringjob's ringjob_set_total_steps), kept apart.
--  * No starvation: a job that fits gets GPUs within max_wait_s of becoming runnable.
--  * Fair shares: each user's weight (share) and optional quota (max_gpus).
--  * Each round keeps where a job's remaining estimate came from; a few of its predicted
--    finishes are kept (thinned as the job ages), and when the job completes the mean
--    relative error of those predictions is recorded with the job.

ALTER TABLE jobs
    ADD COLUMN total_steps bigint CHECK (total_steps IS NULL OR total_steps >= 1),
    ADD COLUMN epochs double precision CHECK (epochs IS NULL OR epochs > 0),
    ADD COLUMN stop_at_convergence boolean NOT NULL DEFAULT false,
    ADD COLUMN stop_at_loss double precision,
    ADD COLUMN reported_total_steps bigint
        CHECK (reported_total_steps IS NULL OR reported_total_steps >= 1),
    ADD COLUMN estimate_error double precision,
    ADD COLUMN estimate_samples integer,
    ADD COLUMN estimate_source text;

ALTER TABLE scheduler_config ADD COLUMN max_wait_s double precision NOT NULL DEFAULT 3600
    CHECK (max_wait_s >= 1 AND max_wait_s <= 2592000);

ALTER TABLE users
    ADD COLUMN share double precision NOT NULL DEFAULT 1 CHECK (share > 0 AND share <= 1000),
    ADD COLUMN max_gpus integer CHECK (max_gpus IS NULL OR (max_gpus >= 1 AND max_gpus <= 100000));

-- estimates: [[at, predicted_finish, source], ...] in epoch seconds, one at most every
-- max(60 s, age / 32) of the job, so a month-long job keeps a few hundred.
ALTER TABLE job_sched
    ADD COLUMN remaining_source text,
    ADD COLUMN remaining_s double precision,
    ADD COLUMN estimates jsonb NOT NULL DEFAULT '[]',
    ADD COLUMN estimate_at timestamptz;

-- When a job completes: the mean of |predicted - actual finish| / max(actual - at, 60 s) over
-- its kept predictions, and the source most of them came from.
CREATE FUNCTION ringmaster_estimate_error() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    fin double precision := extract(epoch FROM COALESCE(NEW.finished_at, now()));
BEGIN
    SELECT avg(abs((e->>1)::float8 - fin) / greatest(fin - (e->>0)::float8, 60)), count(*),
           mode() WITHIN GROUP (ORDER BY e->>2)
      INTO NEW.estimate_error, NEW.estimate_samples, NEW.estimate_source
      FROM job_sched s, jsonb_array_elements(s.estimates) e
     WHERE s.job_id = NEW.id AND (e->>0)::float8 <= fin;
    IF NEW.estimate_samples = 0 THEN
        NEW.estimate_error := NULL;
        NEW.estimate_samples := NULL;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER jobs_estimate_error BEFORE UPDATE OF state ON jobs
    FOR EACH ROW WHEN (NEW.state = 'COMPLETED' AND OLD.state IS DISTINCT FROM 'COMPLETED')
    EXECUTE FUNCTION ringmaster_estimate_error();

-- The prior of jobs without a declared length: how long this cluster's completed jobs ran.
CREATE INDEX jobs_completed_at ON jobs (finished_at) WHERE state = 'COMPLETED';
