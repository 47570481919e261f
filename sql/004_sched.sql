-- 004: the live scheduler: its settings (one row, so the choice survives a restart), the audit
-- of every round, and what each round learnt about each job (fitted models, why it waits).

CREATE TABLE scheduler_config (
    id                    integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    policy                text NOT NULL DEFAULT 'precompute',
    interval_s            double precision NOT NULL DEFAULT 10
                              CHECK (interval_s >= 0.1 AND interval_s <= 3600),
    node_timeout_s        double precision NOT NULL DEFAULT 30
                              CHECK (node_timeout_s >= 1 AND node_timeout_s <= 86400),
    min_resize_interval_s double precision NOT NULL DEFAULT 120
                              CHECK (min_resize_interval_s >= 0 AND min_resize_interval_s <= 86400),
    resize_cost_s         double precision NOT NULL DEFAULT 30
                              CHECK (resize_cost_s >= 0 AND resize_cost_s <= 86400),
    grace_s               double precision NOT NULL DEFAULT 60
                              CHECK (grace_s >= 0 AND grace_s <= 3600),
    paused                boolean NOT NULL DEFAULT false, -- true: no rounds at all
    updated_at            timestamptz NOT NULL DEFAULT now()
);
INSERT INTO scheduler_config DEFAULT VALUES;

CREATE TABLE sched_rounds (
    id           bigserial PRIMARY KEY,
    at           timestamptz NOT NULL DEFAULT now(),
    policy       text NOT NULL,
    duration_us  bigint NOT NULL CHECK (duration_us >= 0),
    jobs         integer NOT NULL,   -- jobs considered
    decisions    integer NOT NULL,   -- assignments that changed
    actions      integer NOT NULL,   -- actions written
    nodes_down   integer NOT NULL DEFAULT 0,
    detail       text NOT NULL DEFAULT ''
);
CREATE INDEX sched_rounds_at ON sched_rounds (id DESC);

-- Per job: the models fitted from its reports (or its profile) and the queue's explanation.
-- Rewritten by every round; nothing here is needed to rebuild the scheduler's state.
CREATE TABLE job_sched (
    job_id          bigint PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
    model           jsonb,
    metrics_seen    bigint NOT NULL DEFAULT 0,
    pending_reason  text,
    queue_position  integer,
    predicted_start timestamptz,
    migrate_to      bigint,          -- a person asked to move it (0: anywhere else)
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- Wake the scheduler thread (it LISTENs on ringmaster_sched) when a job starts running, is
-- suspended or ends, or a node changes state, whoever wrote it: the worker's reports, a person,
-- another ringmasterd. Delivered on commit; the scheduler's timer covers a lost one.
CREATE FUNCTION ringmaster_sched_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ringmaster_sched', TG_TABLE_NAME);
    RETURN NULL;
END;
$$;

CREATE TRIGGER jobs_sched_notify AFTER UPDATE OF state ON jobs
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state
                       AND NEW.state IN ('RUNNING', 'SUSPENDED', 'COMPLETED', 'FAILED',
                                         'CANCELLED'))
    EXECUTE FUNCTION ringmaster_sched_notify();

CREATE TRIGGER nodes_sched_notify AFTER UPDATE OF state ON nodes
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state AND NEW.state = 'UP')
    EXECUTE FUNCTION ringmaster_sched_notify();
