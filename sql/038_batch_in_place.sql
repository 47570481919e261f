-- 038: a running job's global batch changes in place (issue 34): the scheduler writes a 'batch'
-- action for the worker that runs the job, which sends the new batch on the job's channel;
-- no restart (docs/worker-protocol.md, "Actions"). Its spec: {"batch", "from_batch",
-- "init_batch", "lr_scale", "reason", "goodput"}; jobs.current_batch takes its batch in the
-- round's transaction, as it does a start's, and a failed one gives the job its from_batch back.
ALTER TABLE actions DROP CONSTRAINT actions_kind_check;
ALTER TABLE actions ADD CONSTRAINT actions_kind_check CHECK (kind IN ('start', 'suspend',
    'resume', 'resize', 'migrate', 'cancel', 'exec', 'batch'));
