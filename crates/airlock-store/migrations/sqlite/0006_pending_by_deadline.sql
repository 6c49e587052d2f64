-- The sweeper's index, as PostgreSQL has it (same name, same rows): only pending
-- approvals, by deadline. Every query on deadlines also says `status = 'pending'`, so
-- SQLite uses the partial index for them, and decided approvals no longer fill it.
DROP INDEX approvals_by_status_deadline;
CREATE INDEX approvals_pending_by_deadline ON approvals (deadline) WHERE status = 'pending';
