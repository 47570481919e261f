-- 036: job dependencies (issue 33 item 4). A job's "after" as it was submitted, checked and
-- with every default filled in: [{"job": 12, "when": "ok"}, {"array": 7, "when": "any"}], NULL
-- when it has none. {"array": ID} names every element of the job array whose id is ID (its
-- first element's id, jobs.array_id). The rounds read the PENDING jobs that have some through
-- the partial index; whether they are met is the core's rule (scheduler/deps.c).
ALTER TABLE jobs ADD COLUMN deps jsonb CHECK (jsonb_typeof(deps) = 'array');
CREATE INDEX jobs_pending_deps ON jobs (id) WHERE deps IS NOT NULL AND state = 'PENDING';

-- The setting (scheduler/settings.c): true holds a job whose dependency can no longer be met
-- (it stays PENDING, its reason says so) instead of cancelling it.
ALTER TABLE scheduler_config ADD COLUMN hold_unmet_deps boolean NOT NULL DEFAULT false;
