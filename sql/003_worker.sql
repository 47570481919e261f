-- 003: what the worker side needs beyond 002: the jobs' logs, remote commands.

-- A job's stdout and stderr as its workers shipped them: chunks at byte offsets of one
-- stream each (a worker's own log file of the job, named by its node id; a migrated job has
-- one stream per worker). A chunk sent again is trimmed or dropped. The log people read is
-- the streams one after the other, in the order they began.
CREATE TABLE job_logs (
    job_id  bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    stream  text NOT NULL DEFAULT '' CHECK (stream ~ '^[A-Za-z0-9._-]{0,64}$'),
    off     bigint NOT NULL CHECK (off >= 0),
    data    bytea NOT NULL,
    at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, stream, off)
);

-- 'exec': a command a job's mpirun asks another node's worker to run (its remote daemon,
-- through the workers' rsh agent), for jobs spanning nodes.
ALTER TABLE actions DROP CONSTRAINT actions_kind_check;
ALTER TABLE actions ADD CONSTRAINT actions_kind_check CHECK (kind IN ('start', 'suspend',
    'resume', 'resize', 'migrate', 'cancel', 'exec'));
