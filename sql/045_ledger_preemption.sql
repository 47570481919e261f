-- 045: what preemption loses, booked to it (issue 33 item 6; the ledger of sql/039). 039
-- booked the steps a preempted job redoes after going back to its checkpoint as preemption,
-- but not the time its GPUs were lost while it came back: a job requeued by a preemption
-- restarted as any launch does ('restart'), and one the scheduler stopped in place (a
-- guarantee's yield, or time-slicing: the round's 'suspend' and 'resume' events) held its GPUs
-- while it resumed in state SUSPENDED, booked as idle. Now:
--  - the round's suspension and resumption of a job are preemption (a person's suspend, whose
--    events the worker writes, stays what it was);
--  - a job that comes back from a stop whose cause was a preemption (or a fault) loses its
--    GPUs to that cause while it starts again (STARTING after PENDING, MIGRATING after
--    SUSPENDED), not to 'restart';
--  - the GPUs a job holds while it resumes from such a suspension (SUSPENDED) are lost to
--    preemption, not idle.

CREATE OR REPLACE FUNCTION ledger_cause(state text, event text, detail text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN detail LIKE '%failed GPU%' OR detail LIKE '%is down%' THEN 'fault'
        WHEN detail LIKE 'preempted%' THEN 'preemption'
        WHEN event IN ('suspend', 'resume') AND detail LIKE 'round %' THEN 'preemption'
        WHEN event = 'resize' OR state = 'RESIZING' THEN 'resize'
        WHEN event = 'migrate' OR state = 'MIGRATING' THEN 'migration'
        WHEN event = 'requeue' THEN 'preemption'
        ELSE 'restart' END
$$;

-- 039's ledger_on_event, with the cause of a come-back: what the stop before it was lost to.
CREATE OR REPLACE FUNCTION ledger_on_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ledger_close(ARRAY[NEW.job_id]);
    -- the state entered, the cause its GPUs are lost to, and what steps redone after it are
    UPDATE job_ledger_open o
       SET state = NEW.to_state,
           cause = CASE WHEN NEW.from_state IN ('PENDING', 'SUSPENDED')
                             AND NEW.to_state IN ('STARTING', 'MIGRATING')
                             AND o.redo_to IN ('preemption', 'fault') THEN o.redo_to
                        ELSE ledger_cause(NEW.to_state, NEW.event, NEW.detail) END,
           redo_to = CASE WHEN NEW.to_state IN ('PENDING', 'RESIZING', 'MIGRATING', 'SUSPENDED')
                          THEN CASE WHEN NEW.to_state = 'SUSPENDED' AND o.cause = 'preemption'
                                    THEN 'preemption'
                                    WHEN NEW.from_state = 'SUSPENDED' AND NEW.to_state = 'MIGRATING'
                                         AND o.redo_to = 'preemption' THEN 'preemption'
                                    ELSE ledger_cause(NEW.to_state, NEW.event, NEW.detail) END
                          ELSE o.redo_to END
     WHERE o.job_id = NEW.job_id;
    RETURN NULL;
END
$$;

-- 039's ledger_close, a span of a job resuming from a preemption (SUSPENDED, holding GPUs,
-- cause 'preemption') lost to it instead of idle.
CREATE OR REPLACE FUNCTION ledger_close(ids bigint[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    job record;
    per_step double precision;
    left_s double precision;
    part_s double precision;
    row_ record;
BEGIN
    INSERT INTO job_ledger_open (job_id, since, gpus, state, step, redo)
    SELECT j.id, now(), 0, j.state, COALESCE(l.step, 0), COALESCE(l.redo, 0)
      FROM jobs j LEFT JOIN job_last_report l ON l.job_id = j.id
     WHERE j.id = ANY(ids) AND EXISTS (SELECT 1 FROM allocations a WHERE a.job_id = j.id)
    ON CONFLICT (job_id) DO NOTHING;
    -- the spans locked in one order, so that two closers never wait on each other in a circle
    PERFORM 1 FROM job_ledger_open WHERE job_id = ANY(ids) ORDER BY job_id FOR UPDATE;

    WITH o AS (
        SELECT o.*, j.user_id, j.array_id,
               COALESCE(l.at + greatest(30, 3 * COALESCE(s.sum_seconds / nullif(s.timed, 0), 0))
                               * interval '1 second', '-infinity') AS busy_until
          FROM job_ledger_open o JOIN jobs j ON j.id = o.job_id
          LEFT JOIN job_last_report l ON l.job_id = o.job_id
          LEFT JOIN (SELECT job_id, sum(sum_seconds) AS sum_seconds, sum(timed) AS timed
                       FROM job_metric_sums WHERE job_id = ANY(ids) GROUP BY job_id) s
                 ON s.job_id = o.job_id
         WHERE o.job_id = ANY(ids) AND o.gpus > 0 AND o.since < now()),
    piece AS (
        SELECT o.*, d::date AS day,
               greatest(o.since, d AT TIME ZONE 'UTC') AS a,
               least(now(), (d + interval '1 day') AT TIME ZONE 'UTC') AS b
          FROM o, generate_series(date_trunc('day', o.since AT TIME ZONE 'UTC'),
                                  date_trunc('day', now() AT TIME ZONE 'UTC'),
                                  interval '1 day') d),
    s AS (
        SELECT p.*, extract(epoch FROM p.b - p.a) * p.gpus AS held,
               extract(epoch FROM greatest(p.a, least(p.b, p.busy_until)) - p.a) * p.gpus
                   AS busy
          FROM piece p WHERE p.b > p.a)
    INSERT INTO usage_ledger AS u (day, job_id, user_id, array_id, allocated_s, useful_s,
                                   idle_s, lost_restart_s, lost_resize_s, lost_migration_s,
                                   lost_preemption_s, lost_fault_s)
    SELECT day, job_id, user_id, array_id, held,
           CASE WHEN state = 'RUNNING' THEN busy ELSE 0 END,
           CASE WHEN state = 'RUNNING' THEN held - busy WHEN lost THEN 0 ELSE held END,
           CASE WHEN lost AND cause = 'restart' THEN held ELSE 0 END,
           CASE WHEN lost AND cause = 'resize' THEN held ELSE 0 END,
           CASE WHEN lost AND cause = 'migration' THEN held ELSE 0 END,
           CASE WHEN lost AND cause = 'preemption' THEN held ELSE 0 END,
           CASE WHEN lost AND cause = 'fault' THEN held ELSE 0 END
      FROM (SELECT s.*, s.state IN ('STARTING', 'RESIZING', 'MIGRATING')
                        OR (s.state = 'SUSPENDED' AND s.cause = 'preemption') AS lost FROM s) x
    ON CONFLICT (day, job_id) DO UPDATE
       SET allocated_s = u.allocated_s + EXCLUDED.allocated_s,
           useful_s = u.useful_s + EXCLUDED.useful_s,
           idle_s = u.idle_s + EXCLUDED.idle_s,
           lost_restart_s = u.lost_restart_s + EXCLUDED.lost_restart_s,
           lost_resize_s = u.lost_resize_s + EXCLUDED.lost_resize_s,
           lost_migration_s = u.lost_migration_s + EXCLUDED.lost_migration_s,
           lost_preemption_s = u.lost_preemption_s + EXCLUDED.lost_preemption_s,
           lost_fault_s = u.lost_fault_s + EXCLUDED.lost_fault_s;

    -- Progress (net steps gained) on today's row, made if the job held no GPUs today; the
    -- GPU-seconds of steps redone left_s from useful to the stop's cause, latest days first.
    FOR job IN SELECT o.job_id, o.redo_to, j.user_id, j.array_id,
                    COALESCE(l.step, 0) - o.step AS gained, COALESCE(l.redo, 0) - o.redo AS redone
               FROM job_ledger_open o JOIN jobs j ON j.id = o.job_id
               LEFT JOIN job_last_report l ON l.job_id = o.job_id
              WHERE o.job_id = ANY(ids)
                AND (COALESCE(l.step, 0) <> o.step OR COALESCE(l.redo, 0) <> o.redo) LOOP
        INSERT INTO usage_ledger AS u (day, job_id, user_id, array_id, steps)
        VALUES ((now() AT TIME ZONE 'UTC')::date, job.job_id, job.user_id, job.array_id, job.gained)
        ON CONFLICT (day, job_id) DO UPDATE SET steps = u.steps + EXCLUDED.steps;
        CONTINUE WHEN job.redone <= 0;
        SELECT sum(useful_s) / nullif(sum(steps) + job.redone, 0) INTO per_step
          FROM usage_ledger WHERE job_id = job.job_id;
        left_s := greatest(COALESCE(per_step, 0), 0) * job.redone;
        FOR row_ IN SELECT day, useful_s FROM usage_ledger
                  WHERE job_id = job.job_id AND useful_s > 0 ORDER BY day DESC LOOP
            EXIT WHEN left_s <= 0;
            part_s := least(left_s, row_.useful_s);
            UPDATE usage_ledger
               SET useful_s = useful_s - part_s,
                   lost_restart_s = lost_restart_s + CASE job.redo_to WHEN 'restart' THEN part_s
                                                                 ELSE 0 END,
                   lost_resize_s = lost_resize_s + CASE job.redo_to WHEN 'resize' THEN part_s
                                                               ELSE 0 END,
                   lost_migration_s = lost_migration_s + CASE job.redo_to WHEN 'migration'
                                                                     THEN part_s ELSE 0 END,
                   lost_preemption_s = lost_preemption_s + CASE job.redo_to WHEN 'preemption'
                                                                       THEN part_s ELSE 0 END,
                   lost_fault_s = lost_fault_s + CASE job.redo_to WHEN 'fault' THEN part_s
                                                               ELSE 0 END
             WHERE day = row_.day AND job_id = job.job_id;
            left_s := left_s - part_s;
        END LOOP;
    END LOOP;

    UPDATE job_ledger_open o
       SET since = now(), state = j.state,
           gpus = (SELECT count(*) FROM allocations a WHERE a.job_id = o.job_id),
           step = COALESCE(l.step, 0), redo = COALESCE(l.redo, 0)
      FROM jobs j LEFT JOIN job_last_report l ON l.job_id = j.id
     WHERE o.job_id = ANY(ids) AND j.id = o.job_id;
    DELETE FROM job_ledger_open o USING jobs j
     WHERE o.job_id = ANY(ids) AND j.id = o.job_id AND o.gpus = 0
       AND j.state IN ('COMPLETED', 'FAILED', 'CANCELLED');
END
$$;
