-- The two-person rule (DESIGN.md §11.6, issue 18): an approval may need several distinct
-- people (`approvals_required`, 1 by default) and may name who can decide (`approvers`,
-- a JSON list of roles and `user:<name>`; NULL: every approver). Each person's vote is
-- kept on the approval (`votes`, a JSON list of {user, decision, at}; NULL: none), written
-- under the same lock as the decision, so one person's concurrent votes count once.
-- A session remembers who opened it (`created_by`: `user:<id>` or `agent:<id>`), since
-- the person whose own session asked never counts towards the approvals.
ALTER TABLE approvals ADD COLUMN approvals_required BIGINT NOT NULL DEFAULT 1;
ALTER TABLE approvals ADD COLUMN approvers TEXT;
ALTER TABLE approvals ADD COLUMN votes TEXT;
ALTER TABLE sessions ADD COLUMN created_by TEXT;
