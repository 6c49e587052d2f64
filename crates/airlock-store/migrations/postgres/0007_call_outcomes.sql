-- No approved call silently lost (DESIGN.md §11.8).
-- The key a grant was consumed under: a retry under it replays the answer. The answer
-- itself is the grant row (id, call, consumed_at), so key and answer are written by the
-- very update that consumes the grant, and live as long as the call.
ALTER TABLE grants ADD COLUMN idempotency_key TEXT;
-- When the grant was consumed, and by when its outcome is due (the policy's
-- outcome_timeout at the redeem); what the agent reported; when the sweeper found no
-- outcome by the due time; a person's reconciliation of such an ambiguous call.
ALTER TABLE calls ADD COLUMN redeemed_at BIGINT;
ALTER TABLE calls ADD COLUMN outcome_due_at BIGINT;
ALTER TABLE calls ADD COLUMN outcome_status TEXT;
ALTER TABLE calls ADD COLUMN outcome_detail TEXT;
ALTER TABLE calls ADD COLUMN outcome_at BIGINT;
ALTER TABLE calls ADD COLUMN ambiguous_at BIGINT;
ALTER TABLE calls ADD COLUMN reconciled TEXT;
ALTER TABLE calls ADD COLUMN reconciled_by TEXT;
ALTER TABLE calls ADD COLUMN reconciled_reason TEXT;
ALTER TABLE calls ADD COLUMN reconciled_at BIGINT;
-- The ambiguity sweeper's index: only calls still waiting for an outcome.
CREATE INDEX calls_awaiting_outcome ON calls (outcome_due_at)
    WHERE outcome_due_at IS NOT NULL AND outcome_status IS NULL AND ambiguous_at IS NULL;
-- The inbox's list: ambiguous calls nobody reconciled yet.
CREATE INDEX calls_ambiguous ON calls (workspace, ambiguous_at)
    WHERE ambiguous_at IS NOT NULL AND reconciled IS NULL;
-- A hook's retry and its after-the-fact event find the call by the key it was redeemed
-- under.
CREATE INDEX grants_by_idempotency_key ON grants (workspace, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
