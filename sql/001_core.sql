-- 001: users, nodes with their GPUs, jobs and their events.
-- Later migrations add allocations, actions, metrics and scheduler rounds.

CREATE TABLE users (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9._-]{1,64}$'),
    role        text NOT NULL CHECK (role IN ('admin', 'user', 'worker')),
    -- sha256 of the bearer token; the token itself is never stored
    token_hash  bytea NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE nodes (
    id                bigserial PRIMARY KEY,
    name              text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 253),
    cpus              integer NOT NULL CHECK (cpus BETWEEN 1 AND 65536),
    memory_bytes      bigint NOT NULL CHECK (memory_bytes >= 0),
    state             text NOT NULL DEFAULT 'UP' CHECK (state IN ('UP', 'DOWN', 'DRAINING')),
    registered_by     bigint REFERENCES users(id),
    registered_at     timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    last_heartbeat_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE node_gpus (
    node_id      bigint NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    idx          integer NOT NULL CHECK (idx BETWEEN 0 AND 1023),
    model        text NOT NULL,
    memory_bytes bigint NOT NULL CHECK (memory_bytes >= 0),
    PRIMARY KEY (node_id, idx)
);

CREATE TABLE jobs (
    id              bigserial PRIMARY KEY,
    user_id         bigint NOT NULL REFERENCES users(id),
    name            text NOT NULL,
    command         jsonb NOT NULL CHECK (jsonb_typeof(command) = 'array'),
    env             jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(env) = 'object'),
    model           jsonb CHECK (model IS NULL OR jsonb_typeof(model) = 'object'),
    gpus            integer NOT NULL,
    min_gpus        integer NOT NULL,
    max_gpus        integer NOT NULL,
    elastic         boolean NOT NULL DEFAULT false,
    priority        integer NOT NULL DEFAULT 0,
    batch_per_gpu   integer NOT NULL DEFAULT 128 CHECK (batch_per_gpu >= 1),
    state           text NOT NULL DEFAULT 'PENDING' CHECK (state IN ('PENDING', 'STARTING',
                        'RUNNING', 'SUSPENDED', 'RESIZING', 'MIGRATING', 'COMPLETED', 'FAILED',
                        'CANCELLED')),
    idempotency_key text,
    request_hash    bytea,
    submitted_at    timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    CHECK (1 <= min_gpus AND min_gpus <= gpus AND gpus <= max_gpus AND max_gpus <= 1024),
    -- a retried submission finds the first job instead of making a twin
    UNIQUE (user_id, idempotency_key)
);
CREATE INDEX jobs_state_id ON jobs (state, id);
CREATE INDEX jobs_user_id ON jobs (user_id, id);

CREATE TABLE job_events (
    id          bigserial PRIMARY KEY,
    job_id      bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    at          timestamptz NOT NULL DEFAULT now(),
    from_state  text,
    to_state    text NOT NULL,
    event       text NOT NULL,
    actor       text NOT NULL,
    detail      text NOT NULL DEFAULT ''
);
CREATE INDEX job_events_job ON job_events (job_id, id);
