-- 027: job_unseen by node. Every heartbeat's statement (server/api/nodes.c) deletes and counts
-- the rows of its own node, and a node's deletion cascades to them; without an index each was
-- a scan of the whole table, which holds a row for every job a lost node ran (a rack that
-- goes down leaves hundreds) while every other node's heartbeat reads it.
CREATE INDEX job_unseen_by_node ON job_unseen (node_id);
