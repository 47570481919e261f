-- 046: where each minibatch report was measured (issue 32 item 2, scheduler/speed.h "Link
-- classes"): the nodes the job's GPUs spanned and the slowest link between them, filled by the
-- server at ingest from the job's allocation, as its GPU model is (sql/011): 0 one NVLink
-- island (or a node whose islands are not known), 1 one node over PCIe (two islands), 2 nodes
-- on one switch (or of no known switch), 3 nodes across switches (the nodes' "switch"
-- labels, sql/035). The running sums are kept per (job, world size, GPU model, nodes, link),
-- so that the speed model learns the communication of each class from the job's own steps.
-- Reports from before this migration keep 1 node and class 0, as the model read them.

ALTER TABLE job_metrics
    ADD COLUMN nodes integer NOT NULL DEFAULT 1 CHECK (nodes >= 1),
    ADD COLUMN link smallint NOT NULL DEFAULT 0 CHECK (link BETWEEN 0 AND 3);

ALTER TABLE job_metric_sums
    ADD COLUMN nodes integer NOT NULL DEFAULT 1,
    ADD COLUMN link smallint NOT NULL DEFAULT 0;
ALTER TABLE job_metric_sums DROP CONSTRAINT job_metric_sums_pkey;
ALTER TABLE job_metric_sums ADD PRIMARY KEY (job_id, world_size, gpu_model, nodes, link);

-- The nodes and link class of a job's allocation now (1 and 0 when it holds no GPUs): the
-- core's domain_link() over the allocation (a GPU of no known island on a node whose islands
-- are known counts as an island of its own).
CREATE FUNCTION job_placement_link(job bigint, OUT nodes integer, OUT link smallint)
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

CREATE OR REPLACE FUNCTION job_metric_sums_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_metric_sums AS t (job_id, world_size, gpu_model, nodes, link, reports,
                                      timed, sum_seconds, sum_samples, sum_progress)
    SELECT g.job_id, g.world_size, g.gpu_model, g.nodes, g.link, sum(g.reports), sum(g.timed),
           sum(g.secs), COALESCE(sum(g.timed * g.samples), 0),
           COALESCE(sum(g.timed * job_metric_progress(g.samples, j.batch_spec, j.grad_sqr,
                                                      j.grad_var)), 0)
    FROM (SELECT job_id, world_size, gpu_model, nodes, link, samples, count(*) AS reports,
                 count(*) FILTER (WHERE seconds > 0) AS timed,
                 COALESCE(sum(seconds) FILTER (WHERE seconds > 0), 0) AS secs
          FROM new_rows GROUP BY job_id, world_size, gpu_model, nodes, link, samples) g
    LEFT JOIN LATERAL (SELECT batch_spec, grad_sqr, grad_var FROM jobs
                       WHERE jobs.id = g.job_id) j ON true
    GROUP BY g.job_id, g.world_size, g.gpu_model, g.nodes, g.link
    ON CONFLICT (job_id, world_size, gpu_model, nodes, link) DO UPDATE
    SET reports = t.reports + EXCLUDED.reports,
        timed = t.timed + EXCLUDED.timed,
        sum_seconds = t.sum_seconds + EXCLUDED.sum_seconds,
        sum_samples = t.sum_samples + EXCLUDED.sum_samples,
        sum_progress = t.sum_progress + EXCLUDED.sum_progress;
    RETURN NULL;
END
$$;
