-- Scheduled tasks, and the task a session was opened for (task-scoped standing rules).

ALTER TABLE sessions ADD COLUMN task_id TEXT;

-- A session as another system names it (a Claude Code session id): one airlock session
-- per agent and external id.
ALTER TABLE sessions ADD COLUMN external_id TEXT;
CREATE UNIQUE INDEX sessions_by_external ON sessions (workspace, agent_id, external_id);

-- INVARIANT: active_run_id is set only by the conditional update that dispatches the task
-- (together with its run), and cleared in the transaction that ends that run: while it
-- is set, no tick dispatches the task again (the overlap guard).
CREATE TABLE tasks (
    id                  TEXT PRIMARY KEY,
    workspace           TEXT NOT NULL REFERENCES workspaces (id),
    title               TEXT NOT NULL,
    instructions        TEXT NOT NULL,
    agent_id            TEXT NOT NULL REFERENCES agents (id),
    cron                TEXT NOT NULL,
    timezone            TEXT NOT NULL,
    enabled             INTEGER NOT NULL,
    created_by          TEXT NOT NULL,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    revoked_at          INTEGER,
    next_run_at         INTEGER,
    active_run_id       TEXT,
    last_run_id         TEXT
);
CREATE INDEX tasks_by_workspace ON tasks (workspace, created_at);
CREATE INDEX tasks_due ON tasks (next_run_at);
