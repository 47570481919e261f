-- 050: job_placement_link (046) as a set-returning function, so that PostgreSQL inlines it
-- into the statement that calls it (the metrics post, server/api/reports.c: "pl AS (SELECT *
-- FROM job_placement_link($1::bigint))"), which is prepared: its plan then holds the
-- function's body. With OUT parameters and no SETOF it was not inlinable, and PostgreSQL
-- parsed and planned its four-table join on every call: 0.85 ms a call against 0.35 ms
-- inlined (3,000 calls in a loop, 512 nodes, 1,000 jobs; docs/benchmarks.md): about half of the
-- metrics post's rise from 0.60 to 1.54 ms since 046 (make bench-scale). The same rows: one
-- (an aggregate without GROUP BY), the nodes and the link class of the job's allocation.

DROP FUNCTION job_placement_link(bigint);

CREATE FUNCTION job_placement_link(job bigint) RETURNS TABLE (nodes integer, link smallint)
LANGUAGE sql STABLE AS $$
    SELECT GREATEST(count(DISTINCT a.node_id), 1)::integer,
           (CASE
                WHEN count(DISTINCT NULLIF(n.labels->>'switch', '')) > 1
                     AND count(DISTINCT a.node_id) > 1 THEN 3
                WHEN count(DISTINCT a.node_id) > 1 THEN 2
                WHEN count(*) > 1 AND bool_or(k.known)
                     AND count(DISTINCT COALESCE(g.island::text, 'gpu' || g.idx)) > 1 THEN 1
                ELSE 0
            END)::smallint
    FROM allocations a
    JOIN nodes n ON n.id = a.node_id
    JOIN node_gpus g ON g.node_id = a.node_id AND g.idx = a.gpu_idx
    LEFT JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM node_gpus o WHERE o.node_id = a.node_id
                                      AND o.island IS NOT NULL) AS known) k ON true
    WHERE a.job_id = job
$$;
