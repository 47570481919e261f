-- 003: what the worker side needs beyond 002: the jobs' logs, and a notification on every
-- new action so that a long-poll of GET /api/v1/nodes/{id}/actions answers at once.

-- A job's stdout and stderr as its workers shipped them: chunks at byte offsets of one
-- stream each (a worker's own log file of the job, named by its node id; a migrated job has
-- one stream per worker). A chunk sent again is trimmed or dropped. The log people read is
-- the streams one after the other, in the order they began.
CREATE TABLE job_logs (
    job_id  bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    stream  text NOT NULL DEFAULT '' CHECK (stream ~ '^[A-Za-z0-9._-]{0,64}$'),
    off     bigint NOT NULL CHECK (off >= 0),
    data    bytea NOT NULL,
    at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, stream, off)
);

-- NOTIFY ringmaster_actions '<node_id>' when an action is written (delivered on commit).
CREATE FUNCTION ringmaster_actions_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ringmaster_actions', NEW.node_id::text);
    RETURN NULL;
END;
$$;

CREATE TRIGGER actions_notify AFTER INSERT ON actions
    FOR EACH ROW EXECUTE FUNCTION ringmaster_actions_notify();
