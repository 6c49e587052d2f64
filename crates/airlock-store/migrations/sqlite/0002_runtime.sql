-- The built-in runtime: runs, their journal, their steps, the sessions' conversations
-- and the outbox.

-- A run is held by one node at a time: lease_owner + lease_until, renewed by every write
-- of the holder, cleared when the run leaves `running`.
CREATE TABLE runs (
    id           TEXT PRIMARY KEY,
    workspace    TEXT NOT NULL REFERENCES workspaces (id),
    session_id   TEXT NOT NULL REFERENCES sessions (id),
    agent_id     TEXT NOT NULL REFERENCES agents (id),
    state        TEXT NOT NULL
        CHECK (state IN ('running', 'awaiting_approval', 'completed', 'failed', 'cancelled')),
    error        TEXT,
    last_seq     INTEGER NOT NULL DEFAULT 0,
    lease_owner  TEXT,
    lease_until  INTEGER,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX runs_by_session ON runs (workspace, session_id, created_at);
CREATE INDEX runs_by_state ON runs (state, lease_until);

-- INVARIANT: seq is continuous from 1 per run; only the lease holder appends.
CREATE TABLE run_events (
    workspace  TEXT NOT NULL REFERENCES workspaces (id),
    run_id     TEXT NOT NULL REFERENCES runs (id),
    seq        INTEGER NOT NULL,
    at         INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    data       TEXT NOT NULL,  -- JSON, redacted
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE run_steps (
    workspace      TEXT NOT NULL REFERENCES workspaces (id),
    run_id         TEXT NOT NULL REFERENCES runs (id),
    idx            INTEGER NOT NULL,
    tool_call_id   TEXT NOT NULL,
    tool           TEXT NOT NULL,
    arguments      TEXT NOT NULL,  -- JSON, redacted
    exact          INTEGER NOT NULL,  -- 1 when `arguments` held no secret (so are exact)
    call_id        TEXT REFERENCES calls (id),
    state          TEXT NOT NULL CHECK (state IN ('gated', 'started', 'finished')),
    status         TEXT,
    output         TEXT,  -- JSON, redacted
    rule           TEXT,
    standing_rule  TEXT,
    approver       TEXT,
    finished_at    INTEGER,
    PRIMARY KEY (run_id, idx)
);
CREATE INDEX run_steps_by_call ON run_steps (call_id);

CREATE TABLE messages (
    id            TEXT PRIMARY KEY,
    workspace     TEXT NOT NULL REFERENCES workspaces (id),
    session_id    TEXT NOT NULL REFERENCES sessions (id),
    run_id        TEXT NOT NULL REFERENCES runs (id),
    role          TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
    text          TEXT,
    tool_calls    TEXT NOT NULL,  -- JSON array, arguments redacted
    tool_call_id  TEXT,
    steps         TEXT NOT NULL,  -- JSON array of steps (a run's final reply)
    created_at    INTEGER NOT NULL
);
CREATE INDEX messages_by_session ON messages (workspace, session_id, created_at);

-- INVARIANT: one row per call at most; it is inserted in the transaction that consumes
-- the call's grant, so an effect exists exactly when its grant was spent on it.
CREATE TABLE outbox (
    id               TEXT PRIMARY KEY,
    workspace        TEXT NOT NULL REFERENCES workspaces (id),
    kind             TEXT NOT NULL,
    recipient        TEXT NOT NULL,
    payload          TEXT NOT NULL,
    run_id           TEXT,
    call_id          TEXT NOT NULL UNIQUE REFERENCES calls (id),
    created_at       INTEGER NOT NULL,
    delivered_at     INTEGER,
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT,
    next_attempt_at  INTEGER NOT NULL
);
CREATE INDEX outbox_by_workspace ON outbox (workspace, created_at);
CREATE INDEX outbox_due ON outbox (delivered_at, next_attempt_at);
