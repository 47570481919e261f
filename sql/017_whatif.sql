-- 017: what if (docs/whatif.md). A run replays the jobs that finished in a period, as a
-- simulator trace, under every policy of the scheduling core. Its row holds the trace it
-- replayed, the jobs' measured figures, and one result row per policy as each simulation ends.

CREATE TABLE whatif_runs (
    id              bigserial PRIMARY KEY,
    user_id         bigint NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    state           text NOT NULL DEFAULT 'running'
                        CHECK (state IN ('running', 'done', 'failed')),
    since           timestamptz NOT NULL,
    until           timestamptz NOT NULL,
    policy_in_force text NOT NULL,           -- the live policy when the run was asked for
    policies        text[] NOT NULL,         -- those replayed, in order
    cluster         text NOT NULL,           -- the simulator's --cluster (the nodes up)
    jobs            integer NOT NULL CHECK (jobs >= 1),
    trace           text NOT NULL,           -- the CSV replayed (ringmaster-sim run --trace)
    measured        jsonb NOT NULL,          -- the jobs' own mean and p99 JCT, mean queueing
    results         jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(results) = 'array'),
    error           text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz
);

-- A run left 'running' by a server that stopped is failed by the next one at its start.
