-- 003: what the worker side needs beyond 002: the jobs' logs, and a notification on every
-- new action so that a long-poll of GET /api/v1/nodes/{id}/actions answers at once.

-- A job's stdout and stderr as its worker shipped them: chunks at byte offsets. The log is
-- the concatenation of the chunks in offset order; a chunk sent again is trimmed or dropped.
CREATE TABLE job_logs (
    job_id  bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    off     bigint NOT NULL CHECK (off >= 0),
    data    bytea NOT NULL,
    at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, off)
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
