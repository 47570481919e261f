-- 048: how long each active job has held GPUs in all, and what each GPU fault cost.
--
-- Held time is for the scheduler's snapshot (sched_job.run_time: "seconds it has held GPUs
-- in total"). The snapshot used to take it from
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

-- The GPU-time each GPU fault cost (issue 32 item 5, "recorded against the fault"): what the
-- ledger books as lost to a fault for a job moved off a failed GPU (its move, and the steps
-- it redoes from its checkpoint) is added to that fault's row too. The job's span keeps the
-- fault it is losing time to (fault_id, set with redo_to by a move off a failed GPU, the
-- latest open fault that names the job); a node that went down has no row to charge.
ALTER TABLE gpu_faults ADD COLUMN lost_gpu_s double precision NOT NULL DEFAULT 0;
ALTER TABLE job_ledger_open ADD COLUMN fault_id bigint;

-- 039's ledger_close books the span; the new ledger_close adds the span's time to held_s
-- first, under the same lock order (job order), then books it, and adds to the fault a job
-- is losing time to what the booking added to the job's lost_fault_s. Its callers (the
-- triggers and the retention pass) call it by name and are unchanged.
ALTER FUNCTION ledger_close(bigint[]) RENAME TO ledger_book;

CREATE FUNCTION ledger_close(ids bigint[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    hit bigint[];  -- the jobs losing time to a GPU fault (fault_id below), that fault,
    fid bigint[];
    was double precision[]; -- and the GPU-seconds their ledger had lost to faults before
BEGIN
    -- The jobs' rows first, then their spans, each in job order. Every writer that moves a job
    -- updates its row before its trigger closes the span (a cancel, a state report, a round's
    -- moves), but a writer of allocations alone (an action's result, a round's releases)
    -- closed the span first and then updated the row: against a cancel of the same job that
    -- was a deadlock (seen in the browser suite: a cancel during a migration, 40P01). Taking
    -- the row here too puts every closer in one order: the job's row, then its span.
    PERFORM 1 FROM jobs WHERE id = ANY(ids) ORDER BY id FOR NO KEY UPDATE;
    PERFORM 1 FROM job_ledger_open WHERE job_id = ANY(ids) ORDER BY job_id FOR UPDATE;
    UPDATE job_ledger_open
       SET held_s = held_s + extract(epoch FROM now() - since)
     WHERE job_id = ANY(ids) AND gpus > 0 AND since < now();
    hit := ARRAY(SELECT job_id FROM job_ledger_open
                  WHERE job_id = ANY(ids) AND fault_id IS NOT NULL ORDER BY job_id);
    IF cardinality(hit) > 0 THEN
        fid := ARRAY(SELECT o.fault_id FROM unnest(hit) WITH ORDINALITY AS h(job, n)
                       JOIN job_ledger_open o ON o.job_id = h.job ORDER BY h.n);
        was := ARRAY(SELECT COALESCE((SELECT sum(u.lost_fault_s) FROM usage_ledger u
                                       WHERE u.job_id = h.job), 0)
                       FROM unnest(hit) WITH ORDINALITY AS h(job, n) ORDER BY h.n);
    END IF;
    PERFORM ledger_book(ids);
    IF cardinality(hit) > 0 THEN
        UPDATE gpu_faults f SET lost_gpu_s = f.lost_gpu_s + d.lost
          FROM (SELECT h.fault_id, sum(COALESCE((SELECT sum(u.lost_fault_s) FROM usage_ledger u
                                                  WHERE u.job_id = h.job), 0) - h.was) AS lost
                  FROM unnest(hit, fid, was) AS h(job, fault_id, was)
                 GROUP BY h.fault_id) d
         WHERE f.id = d.fault_id AND d.lost > 0;
    END IF;
END
$$;

-- 045's (which was 039's with the causes of a come-back), with fault_id beside redo_to.
CREATE OR REPLACE FUNCTION ledger_on_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    stops boolean := NEW.to_state IN ('PENDING', 'RESIZING', 'MIGRATING', 'SUSPENDED');
BEGIN
    PERFORM ledger_close(ARRAY[NEW.job_id]);
    -- the state entered, the cause its GPUs are lost to, what steps redone after it are, and
    -- the GPU fault they are charged to
    UPDATE job_ledger_open o
       SET state = NEW.to_state,
           cause = CASE WHEN NEW.from_state IN ('PENDING', 'SUSPENDED')
                             AND NEW.to_state IN ('STARTING', 'MIGRATING')
                             AND o.redo_to IN ('preemption', 'fault') THEN o.redo_to
                        ELSE ledger_cause(NEW.to_state, NEW.event, NEW.detail) END,
           redo_to = CASE WHEN stops
                          THEN CASE WHEN NEW.to_state = 'SUSPENDED' AND o.cause = 'preemption'
                                    THEN 'preemption'
                                    WHEN NEW.from_state = 'SUSPENDED' AND NEW.to_state = 'MIGRATING'
                                         AND o.redo_to = 'preemption' THEN 'preemption'
                                    ELSE ledger_cause(NEW.to_state, NEW.event, NEW.detail) END
                          ELSE o.redo_to END,
           fault_id = CASE WHEN NOT stops THEN o.fault_id
                           WHEN NEW.detail LIKE '%failed GPU%' THEN
                               (SELECT f.id FROM gpu_faults f WHERE NEW.job_id = ANY(f.jobs)
                                   AND f.cleared_at IS NULL ORDER BY f.at DESC LIMIT 1)
                           ELSE NULL END
     WHERE o.job_id = NEW.job_id;
    RETURN NULL;
END
$$;

-- 039's, in the same order as ledger_close: the spans whose job's row no other transaction
-- holds, and that no other closer holds; the others are being closed by whoever holds them.
CREATE OR REPLACE FUNCTION ledger_close_all() RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
BEGIN
    ids := ARRAY(SELECT j.id FROM jobs j
                  WHERE j.id IN (SELECT job_id FROM job_ledger_open WHERE gpus > 0)
                  ORDER BY j.id FOR NO KEY UPDATE SKIP LOCKED);
    ids := ARRAY(SELECT job_id FROM job_ledger_open WHERE job_id = ANY(ids) ORDER BY job_id
                 FOR UPDATE SKIP LOCKED);
    IF cardinality(ids) > 0 THEN
        PERFORM ledger_close(ids);
    END IF;
    RETURN cardinality(ids);
END
$$;
