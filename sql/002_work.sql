-- 002: what the scheduler decides and the workers carry out (docs/worker-protocol.md):
-- the GPUs each job holds, the actions written for workers, and the jobs' minibatch reports.

ALTER TABLE nodes ADD COLUMN simulated boolean NOT NULL DEFAULT false;

-- The live allocation: which GPUs each job holds now. Written by the scheduler in the same
-- transaction as the actions that make it so.
CREATE TABLE allocations (
    job_id   bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    node_id  bigint NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    gpu_idx  integer NOT NULL CHECK (gpu_idx BETWEEN 0 AND 1023),
    since    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, node_id, gpu_idx)
);
-- One job per GPU; packing (two jobs on a GPU) relaxes this in its own migration.
CREATE UNIQUE INDEX allocations_one_job_per_gpu ON allocations (node_id, gpu_idx);

-- Actions for workers. Idempotent by id: a worker re-fetches every action of its node
-- that is still 'pending' until it posts the result.
CREATE TABLE actions (
    id             bigserial PRIMARY KEY,
    node_id        bigint NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    job_id         bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    kind           text NOT NULL CHECK (kind IN ('start', 'suspend', 'resume', 'resize',
                                                 'migrate', 'cancel')),
    spec           jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(spec) = 'object'),
    state          text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done',
                                                                    'failed', 'superseded')),
    round_id       bigint,          -- the scheduler round that wrote it; NULL when a person did
    created_at     timestamptz NOT NULL DEFAULT now(),
    delivered_at   timestamptz,     -- first time a worker fetched it
    finished_at    timestamptz,
    outcome_detail text NOT NULL DEFAULT ''
);
CREATE INDEX actions_pending_by_node ON actions (node_id, id) WHERE state = 'pending';
CREATE INDEX actions_by_job ON actions (job_id, id);

-- Minibatch reports, forwarded in batches by workers from libringjob.
CREATE TABLE job_metrics (
    job_id     bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    step       bigint NOT NULL CHECK (step >= 0),
    world_size integer NOT NULL CHECK (world_size >= 1),
    loss       double precision,
    samples    bigint,
    seconds    double precision,
    at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, step, world_size)
);
