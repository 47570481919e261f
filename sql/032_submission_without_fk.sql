-- 032: a submission no longer checks its user and its first event no longer checks its job by
-- foreign keys. Each check ran once per row, through SPI, with a KEY SHARE lock (a WAL record
-- and a dirtied page) on the user's or the job's row: a seventh of the connection's time in
-- the statement that stores a group of submissions, which runs one after another on one
-- connection (perf of that backend under make bench-api: ExecutorFinish 15.7 % of it), and
-- POST /api/v1/jobs at 8 clients went from 4,975-5,288 to 5,777-5,884 /s without them
-- (docs/benchmarks.md, "Submissions without foreign keys").
--
-- What the keys guarded still holds. A job's user is the caller the server authenticated,
-- and the server never deletes users; a user deleted or renumbered by hand while jobs of
-- theirs exist is refused, as the key's NO ACTION did (23503), by the trigger below. Every
-- event the server writes comes from its job's row in the same statement or transaction,
-- and the server never deletes jobs; a job deleted by hand still takes its events with it,
-- as ON DELETE CASCADE did (with sql/026's reports, by one trigger).
ALTER TABLE jobs DROP CONSTRAINT jobs_user_id_fkey;
ALTER TABLE job_events DROP CONSTRAINT job_events_job_id_fkey;

CREATE FUNCTION users_keep_jobs_owners() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    gone bigint;
BEGIN
    SELECT o.id INTO gone FROM old_rows o
     WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = o.id)
       AND EXISTS (SELECT 1 FROM jobs j WHERE j.user_id = o.id)
     LIMIT 1;
    IF gone IS NOT NULL THEN
        RAISE EXCEPTION 'user % still owns jobs', gone
            USING ERRCODE = 'foreign_key_violation', TABLE = 'jobs';
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER users_keep_jobs_owners_delete AFTER DELETE ON users
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION users_keep_jobs_owners();
CREATE TRIGGER users_keep_jobs_owners_update AFTER UPDATE ON users
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION users_keep_jobs_owners();

-- A job given by hand to a user who does not exist is refused too (the server never changes a
-- job's user; the trigger fires only for an update that sets user_id). A job or event
-- inserted by hand is not checked: that check is the cost this migration removes.
CREATE FUNCTION jobs_keep_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM users u WHERE u.id = NEW.user_id) THEN
        RAISE EXCEPTION 'no user %', NEW.user_id
            USING ERRCODE = 'foreign_key_violation', TABLE = 'jobs';
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_keep_owner AFTER UPDATE OF user_id ON jobs
    FOR EACH ROW WHEN (NEW.user_id IS DISTINCT FROM OLD.user_id)
    EXECUTE FUNCTION jobs_keep_owner();

-- One trigger takes a deleted job's reports (sql/026's) and its events.
DROP TRIGGER jobs_forget_metrics ON jobs;
DROP FUNCTION job_metrics_forget();

CREATE FUNCTION jobs_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM job_metrics m USING old_rows o WHERE m.job_id = o.id;
    DELETE FROM job_events e USING old_rows o WHERE e.job_id = o.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_forget AFTER DELETE ON jobs
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION jobs_forget();
