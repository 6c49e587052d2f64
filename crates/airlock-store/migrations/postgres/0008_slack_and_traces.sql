-- Interactive Slack approvals and the trace context of asked calls (issue 20).
--
-- slack_messages: one row per approval and Slack channel the notifier posted it to, with
-- the message's address (Slack channel id + ts) and the binding digest its buttons carry.
-- A message stays open until it is updated to say how the approval ended; any node may
-- do that, claiming the row first (claimed_until) so that one node updates it.
CREATE TABLE slack_messages (
    approval_id     TEXT NOT NULL REFERENCES approvals (id),
    channel         TEXT NOT NULL,
    workspace       TEXT NOT NULL REFERENCES workspaces (id),
    slack_channel   TEXT NOT NULL,
    ts              TEXT NOT NULL,
    binding_digest  TEXT NOT NULL,
    posted_at       BIGINT NOT NULL,
    claimed_until   BIGINT,
    closed_at       BIGINT,
    PRIMARY KEY (approval_id, channel)
);
CREATE INDEX slack_messages_open ON slack_messages (closed_at);

-- The signatures of Slack requests already acted on: the same signed request again is a
-- replay. Rows older than Slack's 5-minute window are forgotten (a request that old is
-- refused for its timestamp before the lookup).
CREATE TABLE slack_requests (
    signature  TEXT PRIMARY KEY,
    seen_at    BIGINT NOT NULL
);
CREATE INDEX slack_requests_by_time ON slack_requests (seen_at);

-- The W3C traceparent of the airlock.call span of a call that was asked, kept only while
-- telemetry is on, so that the span recording the person's wait links to it from any node.
CREATE TABLE approval_traces (
    approval_id  TEXT PRIMARY KEY REFERENCES approvals (id),
    traceparent  TEXT NOT NULL
);
