-- 025: progress counted in statistically efficient examples (issue 18, docs/scheduler.md
-- "Goodput"). A job with a batch model counts its work in examples at its initial global
-- batch M0: one step of global batch m is worth M0 * gain(m) examples there, gain(m) =
-- (var + sqr) / (var / s + sqr) with s = m / M0 and (sqr, var) the gradient statistics it
-- reported last (scheduler/goodput.h; Pollux counts its progress the same way, each step at
-- the efficiency of the moment). Raw samples overstate the progress of a larger batch: at an
-- efficiency of 0.7, 46 examples a step do the work of 32 at M0.
--
-- job_metric_sums.sum_progress keeps that sum beside sum_samples (same reports: the timed
-- ones), weighted when each report arrives with the statistics the job has reported by then.
-- A job without a batch model, or without statistics yet, counts every example in full
-- (sum_progress = sum_samples). Each minibatch report is one step (ringjob_report), so its
-- samples are the step's global batch. Rows from before this migration keep their raw count.

CREATE FUNCTION job_metric_progress(samples double precision, batch_spec jsonb,
                                    sqr double precision, var double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN samples IS NULL OR samples <= 0 THEN COALESCE(samples, 0)
        WHEN batch_spec IS NULL OR (batch_spec->>'batch')::float8 IS NULL
             OR (batch_spec->>'batch')::float8 <= 0 OR sqr IS NULL OR var IS NULL
             OR sqr < 0 OR var < 0 OR sqr + var <= 0 THEN samples
        ELSE (batch_spec->>'batch')::float8 * (var + sqr)
             / (var * (batch_spec->>'batch')::float8 / samples + sqr)
    END
$$;

ALTER TABLE job_metric_sums ADD COLUMN sum_progress double precision;
UPDATE job_metric_sums SET sum_progress = sum_samples;
ALTER TABLE job_metric_sums ALTER COLUMN sum_progress SET DEFAULT 0,
                            ALTER COLUMN sum_progress SET NOT NULL;

-- The reports are grouped by their samples first, so that the job's row is read once per
-- (job, world size, GPU model, batch) of the statement, by its key (LATERAL), not joined
-- row by row.
CREATE OR REPLACE FUNCTION job_metric_sums_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_metric_sums AS t (job_id, world_size, gpu_model, reports, timed,
                                      sum_seconds, sum_samples, sum_progress)
    SELECT g.job_id, g.world_size, g.gpu_model, sum(g.reports), sum(g.timed), sum(g.secs),
           COALESCE(sum(g.timed * g.samples), 0),
           COALESCE(sum(g.timed * job_metric_progress(g.samples, j.batch_spec, j.grad_sqr,
                                                      j.grad_var)), 0)
    FROM (SELECT job_id, world_size, gpu_model, samples, count(*) AS reports,
                 count(*) FILTER (WHERE seconds > 0) AS timed,
                 COALESCE(sum(seconds) FILTER (WHERE seconds > 0), 0) AS secs
          FROM new_rows GROUP BY job_id, world_size, gpu_model, samples) g
    LEFT JOIN LATERAL (SELECT batch_spec, grad_sqr, grad_var FROM jobs
                       WHERE jobs.id = g.job_id) j ON true
    GROUP BY g.job_id, g.world_size, g.gpu_model
    ON CONFLICT (job_id, world_size, gpu_model) DO UPDATE
    SET reports = t.reports + EXCLUDED.reports,
        timed = t.timed + EXCLUDED.timed,
        sum_seconds = t.sum_seconds + EXCLUDED.sum_seconds,
        sum_samples = t.sum_samples + EXCLUDED.sum_samples,
        sum_progress = t.sum_progress + EXCLUDED.sum_progress;
    RETURN NULL;
END
$$;
