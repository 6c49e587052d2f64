-- Approve with edits (DESIGN.md §11.6, issue 18): a person may change a call's arguments
-- while approving it. The call then keeps the arguments as run in `arguments` and what
-- the agent asked for in `original_arguments` (both redacted; NULL when never edited),
-- and the approval keeps the binding digest over the edited arguments, which its grant
-- is bound to.
ALTER TABLE calls ADD COLUMN original_arguments TEXT;
ALTER TABLE approvals ADD COLUMN edited_binding_digest TEXT;
