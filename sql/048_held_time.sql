-- 048: how long each active job has held GPUs in all, for the scheduler's snapshot
-- (sched_job.run_time: "seconds it has held GPUs in total"). The snapshot used to take it from
-- the job's allocation rows, which every start, resize and migration rewrites: a job grown
-- 1 -> 2 -> 4 GPUs was 10 s old to the core after a minute of running, so the prior of
-- remaining work (finished jobs of its age) called it "93 % done, finishing in 2 s", and
-- Tiresias' attained service and the fair shares' started again at each resize.
--
-- The ledger's open span (039) already knows since when a job holds how many GPUs, and every
-- change of allocation or state closes it: the time of each closed span with GPUs is added
-- to the span row's held_s, which lives as long as the job is active (also while it waits
-- after a preemption). The snapshot reads held_s plus the open span's age.

ALTER TABLE job_ledger_open ADD COLUMN held_s double precision NOT NULL DEFAULT 0;

-- 039's ledger_close books the span; the new ledger_close adds the span's time to held_s
-- first, under the same lock order (job order), then books it. Its callers (the triggers and
-- the retention pass) call it by name and are unchanged.
ALTER FUNCTION ledger_close(bigint[]) RENAME TO ledger_book;

CREATE FUNCTION ledger_close(ids bigint[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM job_ledger_open WHERE job_id = ANY(ids) ORDER BY job_id FOR UPDATE;
    UPDATE job_ledger_open
       SET held_s = held_s + extract(epoch FROM now() - since)
     WHERE job_id = ANY(ids) AND gpus > 0 AND since < now();
    PERFORM ledger_book(ids);
END
$$;
