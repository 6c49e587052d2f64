-- Each workspace's audit chain head (seq and hash of its newest record), kept apart from
-- the records: `audit verify` compares the chain it read with it, so records deleted from
-- the chain's end (which leave a shorter chain that verifies) are found. PostgreSQL has
-- kept this row since its first migration (its write lock and head); here a trigger
-- moves it with every record appended, so no write path has to know about it. The head
-- only ever moves forward: a record appended again at a seq already passed (after the
-- newest rows were deleted) leaves the head's hash different from the chain's.
CREATE TABLE audit_heads (
    workspace  TEXT PRIMARY KEY REFERENCES workspaces (id),
    seq        INTEGER NOT NULL,
    hash       TEXT NOT NULL
);

INSERT INTO audit_heads (workspace, seq, hash)
SELECT a.workspace, a.seq, a.hash FROM audit a
WHERE a.seq = (SELECT max(b.seq) FROM audit b WHERE b.workspace = a.workspace);

CREATE TRIGGER audit_heads_move AFTER INSERT ON audit
WHEN typeof(NEW.seq) = 'integer'
BEGIN
    INSERT OR IGNORE INTO audit_heads (workspace, seq, hash) VALUES (NEW.workspace, 0, '');
    UPDATE audit_heads SET seq = NEW.seq, hash = NEW.hash
    WHERE workspace = NEW.workspace AND seq < NEW.seq;
END;
