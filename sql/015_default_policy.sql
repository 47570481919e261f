-- 015: ringmaster is the policy of a new installation (docs/evaluation.md, section 6: the
-- lowest mean JCT of every policy when the remaining work is only estimated, as it is live).
-- An installation that has already scheduled keeps the policy it runs: a round on record
-- means someone has been running it, and perhaps chose precompute.

ALTER TABLE scheduler_config ALTER COLUMN policy SET DEFAULT 'ringmaster';

UPDATE scheduler_config SET policy = 'ringmaster', updated_at = now()
 WHERE policy = 'precompute' AND NOT EXISTS (SELECT 1 FROM sched_rounds);
