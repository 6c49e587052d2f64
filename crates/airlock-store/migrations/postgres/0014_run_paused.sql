-- A run may be `paused` (DESIGN.md §11.6): widen the state's CHECK constraint.
ALTER TABLE runs DROP CONSTRAINT runs_state_check;
ALTER TABLE runs ADD CONSTRAINT runs_state_check
    CHECK (state IN ('running', 'awaiting_approval', 'paused', 'completed', 'failed',
                     'cancelled'));
