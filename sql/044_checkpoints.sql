-- 044: preemption that loses the least (issue 33 item 6, scheduler/preempt.h). A job's last
-- checkpoint as its program reported it through libringjob (ringjob_checkpoint_saved() while
-- it trains on, ringjob_checkpoint_done() at a planned stop) and its worker forwarded with
-- the job's metrics: the step it holds and when it was complete on disk. NULL: none reported.
-- Each round hands both to the core (sched_job.last_checkpoint_time, _step), which stops, when
-- a guarantee must take GPUs, the running job that would lose the least since then.
ALTER TABLE jobs ADD COLUMN checkpoint_step bigint CHECK (checkpoint_step >= 0),
                 ADD COLUMN checkpoint_at timestamptz;

-- The setting (scheduler/settings.c): a running job is not preempted within this many seconds
-- of its start; 0, the default, is no minimum (Slurm's PreemptExemptTime).
ALTER TABLE scheduler_config ADD COLUMN min_runtime_s double precision NOT NULL DEFAULT 0
    CHECK (min_runtime_s >= 0 AND min_runtime_s <= 2592000);
