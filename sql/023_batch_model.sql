-- 023: a job's batch model (issue 18, docs/scheduler.md "Goodput"). batch_spec holds what it
-- declared, as jobspec_batch_json() writes it: {"batch": M0, "adaptive_batch": {"min": M0,
-- "max": N} or null, "max_local_batch": L or null}; NULL for a job without one.
-- current_batch is the global batch of its latest start, resize or migration (the action's
-- "batch", written with the action in the round's transaction, as current_plan is); NULL
-- before it first starts, and for jobs without a batch model.

ALTER TABLE jobs
    ADD COLUMN batch_spec jsonb
        CHECK (batch_spec IS NULL OR (jsonb_typeof(batch_spec) = 'object'
                                      AND (batch_spec->>'batch')::bigint >= 1)),
    ADD COLUMN current_batch bigint CHECK (current_batch IS NULL OR current_batch >= 1);
