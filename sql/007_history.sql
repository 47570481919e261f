-- 007: the cluster over time, for the dashboard's charts (GET /api/v1/cluster/history).
-- The scheduler thread adds a sample at most every few seconds (server/history.c); samples
-- older than a day are averaged into 10-minute rows and rows older than 30 days are
-- dropped, so the table stays bounded (about 22,000 rows).

CREATE TABLE cluster_history (
    id             bigserial PRIMARY KEY,
    at             timestamptz NOT NULL DEFAULT now(),
    span_s         double precision NOT NULL DEFAULT 0 CHECK (span_s >= 0), -- 0: one sample;
                                                   -- else the seconds averaged into the row
    samples        integer NOT NULL DEFAULT 1 CHECK (samples >= 1),
    gpus_total     double precision NOT NULL,   -- GPUs of the nodes that are UP
    gpus_allocated double precision NOT NULL,   -- GPUs held by jobs
    gpus_busy      double precision NOT NULL,   -- held by a job that reported a minibatch lately
    queue_length   double precision NOT NULL,   -- PENDING jobs
    jobs_running   double precision NOT NULL,   -- RUNNING jobs
    wait_pending_s double precision,            -- mean wait so far of the PENDING jobs (NULL: none)
    jobs_started   integer NOT NULL DEFAULT 0,  -- jobs that left PENDING for STARTING since the
                                                -- sample before
    wait_started_s double precision             -- their mean wait (NULL: none started)
);
CREATE INDEX cluster_history_at ON cluster_history (at);

-- The time of each job's latest minibatch report (kept by a trigger on job_metrics): what
-- tells a busy GPU from one that is allocated but idle.
CREATE TABLE job_last_report (
    job_id bigint PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
    at     timestamptz NOT NULL
);

CREATE FUNCTION job_last_report_set() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_last_report AS t (job_id, at)
    SELECT job_id, max(at) FROM new_rows GROUP BY job_id
    ON CONFLICT (job_id) DO UPDATE SET at = greatest(t.at, EXCLUDED.at);
    RETURN NULL;
END
$$;

CREATE TRIGGER job_metrics_last_report AFTER INSERT ON job_metrics
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION job_last_report_set();

INSERT INTO job_last_report (job_id, at)
SELECT job_id, max(at) FROM job_metrics GROUP BY job_id;

-- The starts since a time, and each job's latest return to the queue, are found by index.
CREATE INDEX job_events_starts ON job_events (at)
    WHERE from_state = 'PENDING' AND to_state = 'STARTING';
CREATE INDEX job_events_queued ON job_events (job_id, at) WHERE to_state = 'PENDING';
