-- 028: a job's latest placement action (start, resize or migrate, not superseded) by index.
-- Each heartbeat (server/api/nodes.c: NODE_JOBS_SQL, STALE_SQL) looks it up for every job its
-- node runs or reports, `ORDER BY id DESC LIMIT 1`. With only actions_by_job and 024's
-- partial indexes, PostgreSQL ANDed the job's few actions with a scan of the whole of
-- actions_placement_first: every placement action ever made (6,227 in make bench-scale after
-- its launch, 0.86 ms a job), a cost that grew with the cluster's history. This index holds
-- exactly those rows in the lookup's order: a few index pages a job.
CREATE INDEX actions_placement_by_job ON actions (job_id, id)
    WHERE kind IN ('start', 'resize', 'migrate') AND state <> 'superseded';
