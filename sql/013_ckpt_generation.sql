-- 013: checkpoint generations (docs/worker-protocol.md, "Checkpoint generations"). Every
-- requeue of a job starts a new generation; its launches checkpoint into
-- RINGMASTER_CHECKPOINT_ROOT/job-<id>/g<gen>, so that a stale copy left running by the
-- requeue (its worker cut off from the server, not from the shared folder) writes only into
-- an older generation's folder, never over the live copy's checkpoint.

ALTER TABLE jobs ADD COLUMN ckpt_gen integer NOT NULL DEFAULT 0 CHECK (ckpt_gen >= 0);
