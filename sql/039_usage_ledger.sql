-- 039: the ledger of GPU time (issue 33 item 5, docs/operations.md "The ledger"): for every
-- job and UTC day, the GPU-seconds its allocation held, and what they did: useful (it ran
-- and reported minibatches), idle (it ran but reported none lately, or held GPUs in a state
-- that uses none), or lost by cause: its launches (restart), resizes, migrations, work
-- redone after going back to a checkpoint on a preemption, and GPU or node faults.
--
-- The database keeps it, so that every writer of allocations and job states (a round, a
-- worker's report, a person's cancel, a lost node's requeue) is counted by the same rule
-- without knowing of it: triggers on allocations and job_events close the job's open span
-- (job_ledger_open: since when it has held how many GPUs, in which state) at each change,
-- and the retention pass (server/live/retention.c) closes every open span each 30 s, so a
-- report is never more than that behind. The parts of a row add up to its allocated time
-- by construction; what they are tested against is the allocation's own history.
--
-- A GPU shared by two packed jobs counts for each. Rows outlive their jobs (no foreign key):
-- the retention pass drops them after 400 days.

CREATE TABLE usage_ledger (
    day                date NOT NULL,
    job_id             bigint NOT NULL,
    user_id            bigint NOT NULL,
    array_id           bigint,
    allocated_s        double precision NOT NULL DEFAULT 0,
    useful_s           double precision NOT NULL DEFAULT 0,
    idle_s             double precision NOT NULL DEFAULT 0,
    lost_restart_s     double precision NOT NULL DEFAULT 0,
    lost_resize_s      double precision NOT NULL DEFAULT 0,
    lost_migration_s   double precision NOT NULL DEFAULT 0,
    lost_preemption_s  double precision NOT NULL DEFAULT 0,
    lost_fault_s       double precision NOT NULL DEFAULT 0,
    steps              bigint NOT NULL DEFAULT 0, -- progress: steps gained, less those redone
    PRIMARY KEY (day, job_id)
);
CREATE INDEX usage_ledger_user ON usage_ledger (user_id, day);

-- Each job's open span. cause: what its GPUs are lost to while it restarts, resizes or
-- migrates ('restart', 'resize', 'migration', 'fault'), and what steps it redoes are lost to
-- after ('preemption', 'fault', ...). step and redo: job_last_report's at the span's start.
CREATE TABLE job_ledger_open (
    job_id  bigint PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
    since   timestamptz NOT NULL,
    gpus    integer NOT NULL DEFAULT 0,
    state   text NOT NULL,
    cause   text NOT NULL DEFAULT 'restart',
    redo_to text NOT NULL DEFAULT 'preemption',
    step    bigint NOT NULL DEFAULT 0,
    redo    bigint NOT NULL DEFAULT 0
);

-- Steps a job went back (a restart from a checkpoint reports from the checkpoint's step
-- again), summed by job_last_report's trigger: the ledger books them as lost at the cost of
-- the job's useful GPU-seconds per step.
ALTER TABLE job_last_report ADD COLUMN redo bigint NOT NULL DEFAULT 0;

-- 031's function (the latest report's time and step, the rows kept, the reports made),
-- summing the steps gone back.
CREATE OR REPLACE FUNCTION job_last_report_set() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_last_report AS t (job_id, at, step, rows, reports)
    SELECT l.job_id, l.at, l.step, c.n, c.n
      FROM (SELECT DISTINCT ON (job_id) job_id, at, step FROM new_rows
             ORDER BY job_id, at DESC, step DESC) l
      JOIN (SELECT job_id, count(*) AS n FROM new_rows GROUP BY job_id) c USING (job_id)
    ON CONFLICT (job_id) DO UPDATE
       SET at = greatest(t.at, EXCLUDED.at),
           step = CASE WHEN EXCLUDED.at >= t.at OR t.step IS NULL THEN EXCLUDED.step
                       ELSE t.step END,
           redo = t.redo + CASE WHEN EXCLUDED.at >= t.at AND EXCLUDED.step < t.step
                                THEN t.step - EXCLUDED.step ELSE 0 END,
           rows = t.rows + EXCLUDED.rows,
           reports = t.reports + EXCLUDED.reports;
    RETURN NULL;
END
$$;

-- What a state and the event that entered it make of the GPUs held: the cause of time lost
-- in it, and of steps redone after it.
CREATE FUNCTION ledger_cause(state text, event text, detail text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN detail LIKE '%failed GPU%' OR detail LIKE '%is down%' THEN 'fault'
        WHEN detail LIKE 'preempted%' THEN 'preemption'
        WHEN event = 'resize' OR state = 'RESIZING' THEN 'resize'
        WHEN event = 'migrate' OR state = 'MIGRATING' THEN 'migration'
        WHEN event = 'requeue' THEN 'preemption'
        ELSE 'restart' END
$$;

-- Closes the open spans of the given jobs at now(): books them into usage_ledger, one row per
-- UTC day they cross, and opens the next span with the job's GPUs and state as they are now.
-- A RUNNING span is useful up to 30 s (sampler.c's HISTORY_BUSY_S), or three of its mean
-- minibatches, after its latest report, and idle after; STARTING, RESIZING and MIGRATING
-- spans are lost to their cause; any other state holding GPUs is idle. Steps gained since
-- the span opened are progress; steps gone back are redone, and the GPU-seconds they cost
-- move from useful to lost (to the cause of the stop that made them redone), from the
-- job's latest days back.
CREATE FUNCTION ledger_close(ids bigint[]) RETURNS void LANGUAGE plpgsql AS $$
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
      FROM (SELECT s.*, s.state IN ('STARTING', 'RESIZING', 'MIGRATING') AS lost FROM s) x
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

-- Every open span with GPUs, closed now (the retention pass, each 30 s); a span another
-- transaction holds is skipped: that one is closing it. Returns the spans closed.
CREATE FUNCTION ledger_close_all() RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
BEGIN
    ids := ARRAY(SELECT job_id FROM job_ledger_open WHERE gpus > 0 ORDER BY job_id
                 FOR UPDATE SKIP LOCKED);
    IF cardinality(ids) > 0 THEN
        PERFORM ledger_close(ids);
    END IF;
    RETURN cardinality(ids);
END
$$;

-- The triggers: an allocation made or dropped, a state entered.
-- One function for both: each branch reads the transition table its trigger has (plpgsql
-- plans a statement when it first runs, so the other branch's table is never looked up).
CREATE FUNCTION ledger_on_alloc() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM ledger_close(ARRAY(SELECT DISTINCT job_id FROM new_rows));
    ELSE
        PERFORM ledger_close(ARRAY(SELECT DISTINCT job_id FROM old_rows));
    END IF;
    RETURN NULL;
END
$$;
CREATE FUNCTION ledger_on_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ledger_close(ARRAY[NEW.job_id]);
    -- the state entered, the cause its GPUs are lost to, and what steps redone after it are
    UPDATE job_ledger_open o
       SET state = NEW.to_state,
           cause = ledger_cause(NEW.to_state, NEW.event, NEW.detail),
           redo_to = CASE WHEN NEW.to_state IN ('PENDING', 'RESIZING', 'MIGRATING', 'SUSPENDED')
                          THEN ledger_cause(NEW.to_state, NEW.event, NEW.detail)
                          ELSE o.redo_to END
     WHERE o.job_id = NEW.job_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER allocations_ledger_in AFTER INSERT ON allocations
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ledger_on_alloc();
CREATE TRIGGER allocations_ledger_out AFTER DELETE ON allocations
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ledger_on_alloc();
-- Row by row, only for moves (a submission's event has no state before it): a statement
-- trigger ran for every submission too, and its call alone cost submissions ~17 % of their
-- rate (bench-api: 4,850 against 5,950 /s).
CREATE TRIGGER job_events_ledger AFTER INSERT ON job_events
    FOR EACH ROW WHEN (NEW.from_state IS NOT NULL) EXECUTE FUNCTION ledger_on_event();

-- The jobs that hold GPUs now open their spans now.
INSERT INTO job_ledger_open (job_id, since, gpus, state, step, redo)
SELECT j.id, now(), count(a.*), j.state, COALESCE(max(l.step), 0), 0
  FROM jobs j JOIN allocations a ON a.job_id = j.id
  LEFT JOIN job_last_report l ON l.job_id = j.id
 GROUP BY j.id, j.state;
