-- A session may override its agent's mode (DESIGN.md §4.4, §11.6): `mode` is ask,
-- read_only or unattended for this session only; NULL: the agent's mode applies.
ALTER TABLE sessions ADD COLUMN mode TEXT;
