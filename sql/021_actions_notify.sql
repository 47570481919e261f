-- 021: a worker's long-poll for actions (GET /api/v1/nodes/{id}/actions?wait=S) is answered
-- when an action for its node is committed, not when the server next looks: a new pending
-- action notifies channel ringmaster_actions with its node's id, whoever wrote it (the
-- scheduler's round, a person's suspend or cancel, an rsh agent's exec, another ringmasterd
-- on the same database). Delivered on commit, once per node and transaction (PostgreSQL
-- folds equal payloads); the server listens (server/store/dblisten.c) and looks again at
-- every node after it reconnects, and on a slow timer, for what it may have missed.
CREATE FUNCTION ringmaster_actions_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ringmaster_actions', NEW.node_id::text);
    RETURN NULL;
END;
$$;

CREATE TRIGGER actions_notify AFTER INSERT ON actions
    FOR EACH ROW WHEN (NEW.state = 'pending')
    EXECUTE FUNCTION ringmaster_actions_notify();
