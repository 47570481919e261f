-- 030: the jobs table's checks of one column become domains, but state's.
--
-- PostgreSQL reads a table's CHECK constraints from their stored text, plans and compiles
-- them again in every statement that writes the table (ExecRelCheck): the 17 checks of jobs
-- are ~14,000 characters of node text, parsed and planned by each insert and each update,
-- whatever columns it writes (a metrics post updates jobs). A domain's checks are read and
-- planned once per session (the type cache) and compiled in a statement only for the
-- columns it writes. pgbench on the bench's database, one client, 4 s: a single-row INSERT
-- into jobs 10.2-11.0k -> 15.3-15.5k, the submissions' group statement with 4 jobs
-- 5.3-5.7k -> 6.4k (docs/benchmarks.md, "Checks read once a session"). The same rules, and
-- the same SQLSTATE when one is broken (23514, check_violation).
--
-- state keeps its CHECK: a parameter that sets a domain column takes the domain's type, and
-- the statements that write state from a parameter also use it as text (UPDATE jobs SET
-- state = $2 ... $2 IN (...)), which PostgreSQL then refuses ("inconsistent types deduced");
-- a server of the release before this one, still serving during a rolling upgrade
-- (docs/operations.md, "Upgrades"), sends them so. Kept, it costs the group statement
-- little (within the runs' spread). The checks over several columns stay on the table too.
--
-- Changing the columns' types rewrites jobs once (each row is checked against its domains).

CREATE DOMAIN json_object_t AS jsonb CHECK (jsonb_typeof(VALUE) = 'object');
CREATE DOMAIN json_array_t AS jsonb CHECK (jsonb_typeof(VALUE) = 'array');
CREATE DOMAIN batch_spec_t AS jsonb
    CHECK (jsonb_typeof(VALUE) = 'object' AND (VALUE->>'batch')::bigint >= 1);
CREATE DOMAIN positive_bigint_t AS bigint CHECK (VALUE >= 1);
CREATE DOMAIN positive_int_t AS integer CHECK (VALUE >= 1);
CREATE DOMAIN nonneg_int_t AS integer CHECK (VALUE >= 0);
CREATE DOMAIN nonneg_float_t AS double precision CHECK (VALUE >= 0);
CREATE DOMAIN positive_float_t AS double precision CHECK (VALUE > 0);

ALTER TABLE jobs
    DROP CONSTRAINT jobs_command_check,
    DROP CONSTRAINT jobs_env_check,
    DROP CONSTRAINT jobs_model_check,
    DROP CONSTRAINT jobs_plan_spec_check,
    DROP CONSTRAINT jobs_batch_spec_check,
    DROP CONSTRAINT jobs_batch_per_gpu_check,
    DROP CONSTRAINT jobs_ckpt_gen_check,
    DROP CONSTRAINT jobs_total_steps_check,
    DROP CONSTRAINT jobs_reported_total_steps_check,
    DROP CONSTRAINT jobs_epochs_check,
    DROP CONSTRAINT jobs_array_index_check,
    DROP CONSTRAINT jobs_grad_sqr_check,
    DROP CONSTRAINT jobs_grad_var_check,
    DROP CONSTRAINT jobs_current_batch_check,
    ALTER COLUMN command TYPE json_array_t,
    ALTER COLUMN env TYPE json_object_t,
    ALTER COLUMN model TYPE json_object_t,
    ALTER COLUMN plan_spec TYPE json_object_t,
    ALTER COLUMN batch_spec TYPE batch_spec_t,
    ALTER COLUMN batch_per_gpu TYPE positive_int_t,
    ALTER COLUMN ckpt_gen TYPE nonneg_int_t,
    ALTER COLUMN total_steps TYPE positive_bigint_t,
    ALTER COLUMN reported_total_steps TYPE positive_bigint_t,
    ALTER COLUMN epochs TYPE positive_float_t,
    ALTER COLUMN array_index TYPE nonneg_int_t,
    ALTER COLUMN grad_sqr TYPE nonneg_float_t,
    ALTER COLUMN grad_var TYPE nonneg_float_t,
    ALTER COLUMN current_batch TYPE positive_bigint_t;
