-- Notifications of pending approvals (crates/airlock-server/src/notify) and the signed
-- links they carry.
--
-- One row per (approval, channel): the UNIQUE pair makes enqueueing idempotent, so any
-- node may enqueue any approval any number of times. A node claims a row for one attempt
-- by moving next_at forward with a conditional update (only while due), so of several
-- nodes exactly one attempts it; every attempt is kept in notification_attempts.

CREATE TABLE notifications (
    id            TEXT PRIMARY KEY,
    workspace     TEXT NOT NULL REFERENCES workspaces (id),
    approval_id   TEXT NOT NULL REFERENCES approvals (id),
    channel       TEXT NOT NULL,
    status        TEXT NOT NULL
        CHECK (status IN ('pending', 'delivered', 'skipped', 'gave_up')),
    attempts      BIGINT NOT NULL DEFAULT 0,
    next_at       BIGINT NOT NULL,
    delivered_at  BIGINT,
    last_error    TEXT,
    created_at    BIGINT NOT NULL,
    UNIQUE (approval_id, channel)
);
CREATE INDEX notifications_due ON notifications (status, next_at);

CREATE TABLE notification_attempts (
    notification_id  TEXT NOT NULL REFERENCES notifications (id),
    attempt          BIGINT NOT NULL,
    at               BIGINT NOT NULL,
    status_code      BIGINT,
    error            TEXT,
    PRIMARY KEY (notification_id, attempt)
);

-- A signed link's nonce, once used. A second use finds the row and is refused. Rows
-- whose link has expired are removed (an expired link is refused before the lookup).
CREATE TABLE link_uses (
    nonce        TEXT PRIMARY KEY,
    workspace    TEXT NOT NULL REFERENCES workspaces (id),
    approval_id  TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    used_at      BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL
);
CREATE INDEX link_uses_by_expiry ON link_uses (expires_at);

-- Secrets the server generates once per database (the link-signing key). Never logged,
-- never served.
CREATE TABLE server_secrets (
    name        TEXT PRIMARY KEY,
    value       TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
