-- 008: execution plans live (docs/plans.md). A job may declare its model size and the plans
-- it supports; the scheduler chooses one with its GPUs, and the plan of its latest start,
-- resize or migration is kept beside it.

-- {model_size, activation_gb, plans, plan, max_tp, max_pp} with every default filled in
-- (server/jobspec.c), or NULL: the job declared no plan information (plain data parallel).
ALTER TABLE jobs ADD COLUMN plan_spec jsonb
    CHECK (plan_spec IS NULL OR jsonb_typeof(plan_spec) = 'object');

-- The plan the scheduler last started, resized or migrated the job with ("zero2",
-- "dp-tp2"): what RINGJOB_PLAN says in its ranks. NULL before its first start.
ALTER TABLE jobs ADD COLUMN current_plan text;
