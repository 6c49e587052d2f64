-- A run may be `paused` (DESIGN.md §11.6). SQLite cannot alter a CHECK constraint, so
-- `runs` is rebuilt by SQLite's documented procedure (https://sqlite.org/lang_altertable.html
-- §7): create the new table, copy the rows, drop the old one, rename the new one, make
-- its indexes again.
--
-- Foreign keys must be off meanwhile: with them on, dropping `runs` first deletes its
-- rows, which its children (run_events, run_steps, messages) still reference, and the
-- commit fails even with `defer_foreign_keys`. `PRAGMA foreign_keys` is a no-op inside a
-- transaction, and sqlx runs each SQLite migration in one, so `SqliteStore::open` turns
-- them off around the migrations and runs `PRAGMA foreign_key_check` before turning them
-- on again (the procedure's steps 1, 10 and 12).
CREATE TABLE runs_rebuilt (
    id           TEXT PRIMARY KEY,
    workspace    TEXT NOT NULL REFERENCES workspaces (id),
    session_id   TEXT NOT NULL REFERENCES sessions (id),
    agent_id     TEXT NOT NULL REFERENCES agents (id),
    state        TEXT NOT NULL
        CHECK (state IN ('running', 'awaiting_approval', 'paused', 'completed', 'failed',
                         'cancelled')),
    error        TEXT,
    last_seq     INTEGER NOT NULL DEFAULT 0,
    lease_owner  TEXT,
    lease_until  INTEGER,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
INSERT INTO runs_rebuilt (id, workspace, session_id, agent_id, state, error, last_seq,
                          lease_owner, lease_until, created_at, updated_at)
    SELECT id, workspace, session_id, agent_id, state, error, last_seq,
           lease_owner, lease_until, created_at, updated_at
    FROM runs;
DROP TABLE runs;
ALTER TABLE runs_rebuilt RENAME TO runs;
CREATE INDEX runs_by_session ON runs (workspace, session_id, created_at);
CREATE INDEX runs_by_state ON runs (state, lease_until);
