-- A call a coding agent's hook stopped waiting for is held for the agent's identical
-- retry (DESIGN.md §11.1, issue 23): the key is the gate's digest of the call; the retry
-- finds the call by it instead of opening a second approval. NULL when not held.
ALTER TABLE calls ADD COLUMN retry_key TEXT;
CREATE INDEX calls_retry_key ON calls (workspace, retry_key) WHERE retry_key IS NOT NULL;
