-- 035: an admin's labels on a node (PATCH /api/v1/nodes/{id} {"labels": {...}}, issue 32 item
-- 1): where it sits (switch, rack) and anything else an operator tracks. Registration and
-- heartbeats leave them as they are.
ALTER TABLE nodes ADD COLUMN labels jsonb NOT NULL DEFAULT '{}'
    CHECK (jsonb_typeof(labels) = 'object');
