-- 052: job_placement_link (050) finds each allocation's node by its key.
--
-- Inlined into the metrics post (server/api/reports.c), its join of allocations to nodes was
-- planned as a hash join over a scan of every node (the generic plan counts ~22 allocations
-- for a job): 512 rows read for each post at 4,096 GPUs, 2,048 at 16,384, so that each post
-- cost more the larger the cluster, and all posts together grew with its square (make
-- bench-sweep, docs/benchmarks.md). The node's switch label is now a scalar subquery on the
-- nodes' primary key, read once for each of the job's allocations. The same rows.

CREATE OR REPLACE FUNCTION job_placement_link(job bigint) RETURNS TABLE (nodes integer, link smallint)
LANGUAGE sql STABLE AS $$
    SELECT GREATEST(count(DISTINCT a.node_id), 1)::integer,
           (CASE
                WHEN count(DISTINCT NULLIF((SELECT n.labels->>'switch' FROM nodes n
                                             WHERE n.id = a.node_id), '')) > 1
                     AND count(DISTINCT a.node_id) > 1 THEN 3
                WHEN count(DISTINCT a.node_id) > 1 THEN 2
                WHEN count(*) > 1 AND bool_or(k.known)
                     AND count(DISTINCT COALESCE(g.island::text, 'gpu' || g.idx)) > 1 THEN 1
                ELSE 0
            END)::smallint
    FROM allocations a
    JOIN node_gpus g ON g.node_id = a.node_id AND g.idx = a.gpu_idx
    LEFT JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM node_gpus o WHERE o.node_id = a.node_id
                                      AND o.island IS NOT NULL) AS known) k ON true
    WHERE a.job_id = job
$$;
