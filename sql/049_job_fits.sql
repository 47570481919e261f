-- 049: what a job reported fits in one GPU of each model it ran on (issue 31 item 3, "each
-- type has its own largest local batch"): libringjob's ringjob_report_fits, through its
-- worker's metrics post ("max_local_batch"), kept per job and GPU model (the model of the
-- GPUs the job held when it reported). The round gives it to the core as that type's limit
-- (learn_types.h "Largest local batch per type"), in place of the job's declared one scaled
-- by the GPUs' memory.
CREATE TABLE job_fits (
    job_id    bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    gpu_model text NOT NULL CHECK (length(gpu_model) BETWEEN 1 AND 128),
    max_local integer NOT NULL CHECK (max_local BETWEEN 1 AND 1000000),
    at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, gpu_model)
);
