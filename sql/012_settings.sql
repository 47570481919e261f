-- 012: the exploring stage length becomes a setting (it was $RINGMASTER_EXPLORE_STAGE_S), and
-- each round keeps its predicted finish of every job beside its predicted start, so that the
-- job list can show both without reading every job's model.

ALTER TABLE scheduler_config ADD COLUMN explore_stage_s double precision NOT NULL DEFAULT 150
    CHECK (explore_stage_s >= 1 AND explore_stage_s <= 86400);

-- When the round that wrote the row predicts the job to end (running: now plus its model's
-- remaining time at its size; waiting: its predicted start plus that time). NULL: unknown.
ALTER TABLE job_sched ADD COLUMN predicted_finish timestamptz;
