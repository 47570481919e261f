-- 024: each heartbeat finds the jobs its node runs (server/api/nodes.c, NODE_JOBS_SQL: the
-- launched jobs whose latest placement action names the node, by its node or its first
-- slot's) from the node's own placement actions, by index, instead of looking at the latest
-- action of every launched job: at 512 nodes and 3,000 running jobs that look, twice a
-- heartbeat, kept PostgreSQL's core busy and heartbeats waited seconds (make bench-scale).
CREATE INDEX actions_placement_node ON actions (node_id)
    WHERE kind IN ('start', 'resize', 'migrate') AND state <> 'superseded';
CREATE INDEX actions_placement_first ON actions (((spec->'slots'->0->>'node_id')::bigint))
    WHERE kind IN ('start', 'resize', 'migrate') AND state <> 'superseded';
