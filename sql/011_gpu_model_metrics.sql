-- 011: the GPU model each minibatch report was measured on (the name its nodes advertise,
-- node_gpus.model; '' when the job held no GPUs when the report arrived), filled by the
-- server at ingest from the job's allocation, and the running sums kept per
-- (job, world size, GPU model), so that the scheduler can normalise step times measured on
-- a fast GPU to the reference GPU before it fits the job's speed model (docs/plans.md, "Live").

ALTER TABLE job_metrics ADD COLUMN gpu_model text NOT NULL DEFAULT '';

ALTER TABLE job_metric_sums ADD COLUMN gpu_model text NOT NULL DEFAULT '';
ALTER TABLE job_metric_sums DROP CONSTRAINT job_metric_sums_pkey;
ALTER TABLE job_metric_sums ADD PRIMARY KEY (job_id, world_size, gpu_model);

CREATE OR REPLACE FUNCTION job_metric_sums_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_metric_sums AS t (job_id, world_size, gpu_model, reports, timed,
                                      sum_seconds, sum_samples)
    SELECT job_id, world_size, gpu_model, count(*), count(*) FILTER (WHERE seconds > 0),
           COALESCE(sum(seconds) FILTER (WHERE seconds > 0), 0),
           COALESCE(sum(samples) FILTER (WHERE seconds > 0), 0)
    FROM new_rows GROUP BY job_id, world_size, gpu_model
    ON CONFLICT (job_id, world_size, gpu_model) DO UPDATE
    SET reports = t.reports + EXCLUDED.reports,
        timed = t.timed + EXCLUDED.timed,
        sum_seconds = t.sum_seconds + EXCLUDED.sum_seconds,
        sum_samples = t.sum_samples + EXCLUDED.sum_samples;
    RETURN NULL;
END
$$;
