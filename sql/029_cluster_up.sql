-- 029: the cluster up, kept as nodes and their GPUs change. Every submission's statement checks
-- that the job can fit the nodes up (server/api/submit_sql.h); counting them meant joining
-- every node's GPUs, 0.77 ms a statement at 512 nodes of 8 GPUs, more than the rest of a group
-- of jobs' insert. Now it reads one row.
--
-- cluster_up: the nodes up with at least one GPU, and their GPUs (as the count did: a node up
-- without GPUs leaves the cluster "not known" when it is the only one). cluster_up_nodes: what
-- each node adds to it now. A change to a node (its state, its GPUs, the node itself) has that
-- node's share counted again from its row and its GPUs as they are: counting again is the same
-- whichever of a statement's triggers runs it, and how often. Each count runs after the node's
-- row is locked (by the statement that changed it, or here), with a snapshot taken after it.
-- The total row takes the differences of the shares at commit (a deferred trigger), so that a
-- transaction holds it only at its very end, after every node row it locks: the round's
-- statement that marks many nodes down and a registration of one of them never wait for each
-- other in a circle. Differences of different nodes add up in any order.
CREATE TABLE cluster_up (
    id    integer PRIMARY KEY CHECK (id = 1),
    nodes bigint NOT NULL,
    gpus  bigint NOT NULL
);

CREATE TABLE cluster_up_nodes (
    node_id bigint PRIMARY KEY REFERENCES nodes(id) ON DELETE CASCADE,
    gpus    bigint NOT NULL CHECK (gpus > 0)
);

INSERT INTO cluster_up_nodes (node_id, gpus)
SELECT n.id, count(*) FROM nodes n JOIN node_gpus g ON g.node_id = n.id
WHERE n.state = 'UP' GROUP BY n.id;

INSERT INTO cluster_up (id, nodes, gpus)
SELECT 1, count(*), COALESCE(sum(gpus), 0) FROM cluster_up_nodes;

-- Node nid's share counted again (none once it is deleted).
CREATE FUNCTION cluster_up_recount(nid bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    st   text;
    now_ bigint := 0; -- GPUs it adds now
    was  bigint;      -- GPUs it added
BEGIN
    SELECT state INTO st FROM nodes WHERE id = nid FOR NO KEY UPDATE;
    IF FOUND AND st = 'UP' THEN
        SELECT count(*) INTO now_ FROM node_gpus WHERE node_id = nid;
    END IF;
    SELECT gpus INTO was FROM cluster_up_nodes WHERE node_id = nid;
    was := COALESCE(was, 0);
    IF now_ = was THEN
        RETURN;
    END IF;
    IF now_ = 0 THEN
        DELETE FROM cluster_up_nodes WHERE node_id = nid;
    ELSE
        INSERT INTO cluster_up_nodes (node_id, gpus) VALUES (nid, now_)
            ON CONFLICT (node_id) DO UPDATE SET gpus = EXCLUDED.gpus;
    END IF;
END;
$$;

-- A node's share changed: its difference into the total, at commit.
CREATE FUNCTION cluster_up_total() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE cluster_up SET
        nodes = nodes + (TG_OP = 'INSERT')::int - (TG_OP = 'DELETE')::int,
        gpus = gpus + CASE TG_OP WHEN 'INSERT' THEN NEW.gpus WHEN 'DELETE' THEN -OLD.gpus
                                 ELSE NEW.gpus - OLD.gpus END
    WHERE id = 1;
    RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER cluster_up_nodes_total AFTER INSERT OR UPDATE OR DELETE
    ON cluster_up_nodes DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION cluster_up_total();

-- A node inserted or its state changed. A node deleted takes its share with it: the foreign
-- key's cascade deletes its cluster_up_nodes row (the total trigger subtracts it) and its GPUs
-- (whose recount then finds no node and no share left).
CREATE FUNCTION cluster_up_node() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM cluster_up_recount(NEW.id);
    RETURN NULL;
END;
$$;

CREATE TRIGGER nodes_cluster_up_insert AFTER INSERT ON nodes
    FOR EACH ROW EXECUTE FUNCTION cluster_up_node();
CREATE TRIGGER nodes_cluster_up_update AFTER UPDATE OF state ON nodes
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION cluster_up_node();

-- GPUs added or removed: each node they belong to, once per statement.
CREATE FUNCTION cluster_up_gpus() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM cluster_up_recount(c.node_id)
    FROM (SELECT DISTINCT node_id FROM changed_gpus ORDER BY node_id) c;
    RETURN NULL;
END;
$$;

CREATE TRIGGER node_gpus_cluster_up_insert AFTER INSERT ON node_gpus
    REFERENCING NEW TABLE AS changed_gpus FOR EACH STATEMENT EXECUTE FUNCTION cluster_up_gpus();
CREATE TRIGGER node_gpus_cluster_up_delete AFTER DELETE ON node_gpus
    REFERENCING OLD TABLE AS changed_gpus FOR EACH STATEMENT EXECUTE FUNCTION cluster_up_gpus();
