-- 019: job arrays (issue 13 item 1b), and lists by name prefix. A batch whose elements carry
-- array_index is an array: each element is a job of its own, array_id is the id of its first
-- element (as Slurm names an array by its first job) and array_index its index. Jobs outside
-- arrays keep both NULL.
-- Lists filter by array (GET /api/v1/jobs?array=ID), oldest first: the partial index serves
-- that keyset scan without growing with the jobs outside arrays.

ALTER TABLE jobs
    ADD COLUMN array_id bigint,
    ADD COLUMN array_index integer CHECK (array_index >= 0),
    ADD CONSTRAINT jobs_array_both CHECK ((array_id IS NULL) = (array_index IS NULL));

CREATE UNIQUE INDEX jobs_array ON jobs (array_id, array_index) WHERE array_id IS NOT NULL;
CREATE INDEX jobs_array_id ON jobs (array_id, id) WHERE array_id IS NOT NULL;

-- Lists by name prefix (GET /api/v1/jobs?name_prefix=, a sweep's jobs): starts_with() is a
-- range of this index in the C collation, instead of a scan of every job.
CREATE INDEX jobs_name_prefix ON jobs ((name COLLATE "C"), id);
