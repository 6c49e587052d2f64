-- Sealed audit segments (`sql/audit.rs`): the oldest records of a workspace's chain, a
-- run of them at a time, moved out of `audit` into one row each, their columns kept byte
-- for byte in `body` (`AuditRows::to_segment`). A record is in `audit` or in exactly one
-- segment, never both; the chain's newest record always stays in `audit`.
CREATE TABLE audit_segments (
    workspace  TEXT NOT NULL REFERENCES workspaces (id),
    first_seq  INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    records    INTEGER NOT NULL,
    body       BLOB NOT NULL,
    PRIMARY KEY (workspace, last_seq)
);
