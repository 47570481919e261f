-- 018: several ringmasterd may share one database (docs/operations.md, "A second head node");
-- the one holding the leader lock runs the rounds. Each round's audit names the server that
-- ran it: its scheduler connection's application_name, which the server sets to its name.

ALTER TABLE sched_rounds ADD COLUMN server text NOT NULL
    DEFAULT current_setting('application_name');
