-- Web sessions: browsers signed in to the inbox (crates/airlock-server/src/web).
--
-- Only the SHA-256 hex of the session cookie is stored; the cookie itself never is. A
-- session acts as whoever holds token_hash, and only while that token is unrevoked, so
-- revoking a token also signs out every browser that signed in with it. Rows live in the
-- database so that sessions survive a restart and work on every node.

CREATE TABLE web_sessions (
    id           TEXT PRIMARY KEY,
    cookie_hash  TEXT NOT NULL UNIQUE,
    workspace    TEXT NOT NULL REFERENCES workspaces (id),
    token_hash   TEXT NOT NULL REFERENCES tokens (hash),
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
);
CREATE INDEX web_sessions_by_expiry ON web_sessions (workspace, expires_at);
