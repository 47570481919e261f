-- 051: the ledger's work for a round's moves once for all of them, not once a job.
--
-- A round writes its moves as one INSERT into job_events (server/live/plan_write.c), and the
-- row trigger job_events_ledger (039, 048's ledger_on_event) closed each moved job's span on
-- its own: ledger_close with one id, three locks, a booking and an update per job. A round of
-- make bench-scale at 2,048 nodes that started 9,000 jobs spent 38 s in its write, most of it
-- there; every later round migrating 100-200 jobs paid a few ms a job (docs/benchmarks.md).
--
-- ledger_moved() is that work for arrays of moves (one per job): one ledger_close of all of
-- them (already set-based, in job order), then one update of their spans. The row trigger
-- calls it with one move, so the rule lives here once. A writer of many moves sets
-- ringmaster.ledger_moves_batched to 'on' for its transaction (set_config(..., true)) around
-- its insert, which the row trigger then leaves alone, and calls ledger_moved() itself right
-- after it, in the same transaction, before anything else touches those jobs.

CREATE FUNCTION ledger_moved(ids bigint[], froms text[], tos text[], evs text[], details text[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ledger_close(ids);
    -- the state entered, the cause its GPUs are lost to, what steps redone after it are, and
    -- the GPU fault they are charged to (048's ledger_on_event, per move)
    UPDATE job_ledger_open o
       SET state = m.to_state,
           cause = CASE WHEN m.from_state IN ('PENDING', 'SUSPENDED')
                             AND m.to_state IN ('STARTING', 'MIGRATING')
                             AND o.redo_to IN ('preemption', 'fault') THEN o.redo_to
                        ELSE ledger_cause(m.to_state, m.event, m.detail) END,
           redo_to = CASE WHEN m.stops
                          THEN CASE WHEN m.to_state = 'SUSPENDED' AND o.cause = 'preemption'
                                    THEN 'preemption'
                                    WHEN m.from_state = 'SUSPENDED' AND m.to_state = 'MIGRATING'
                                         AND o.redo_to = 'preemption' THEN 'preemption'
                                    ELSE ledger_cause(m.to_state, m.event, m.detail) END
                          ELSE o.redo_to END,
           fault_id = CASE WHEN NOT m.stops THEN o.fault_id
                           WHEN m.detail LIKE '%failed GPU%' THEN
                               (SELECT f.id FROM gpu_faults f WHERE m.job_id = ANY(f.jobs)
                                   AND f.cleared_at IS NULL ORDER BY f.at DESC LIMIT 1)
                           ELSE NULL END
      FROM (SELECT u.*, u.to_state IN ('PENDING', 'RESIZING', 'MIGRATING', 'SUSPENDED') AS stops
              FROM unnest(ids, froms, tos, evs, details)
                   AS u(job_id, from_state, to_state, event, detail)) m
     WHERE o.job_id = m.job_id;
END
$$;

CREATE OR REPLACE FUNCTION ledger_on_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('ringmaster.ledger_moves_batched', true) = 'on' THEN
        RETURN NULL; -- its writer calls ledger_moved() for all its moves at once
    END IF;
    PERFORM ledger_moved(ARRAY[NEW.job_id], ARRAY[NEW.from_state], ARRAY[NEW.to_state],
                         ARRAY[NEW.event], ARRAY[NEW.detail]);
    RETURN NULL;
END
$$;
