-- Where a call comes from (DESIGN.md §11.1–11.2): the agent's own name for the tool, and
-- the call's working folder and project. All optional: calls before them have none.
ALTER TABLE calls ADD COLUMN native_tool TEXT;
ALTER TABLE calls ADD COLUMN cwd TEXT;
ALTER TABLE calls ADD COLUMN project TEXT;
