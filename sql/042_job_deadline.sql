-- 042: a job's deadline (issue 33 item 3): when its submitter needs it finished (POST
-- /api/v1/jobs "deadline", RFC 3339; server/spec/jobspec_deadline.c). NULL: none. The policy
-- ringmaster gives such a job the least share of GPUs that meets it once its slack runs out
-- (scheduler/policies/minshare.h); the submission's answer says whether the forecast meets it.
ALTER TABLE jobs ADD COLUMN deadline timestamptz;
