-- User names are unique per workspace: a policy's `approvers = ["user:NAME"]` names a
-- user by name, so a second user given the same name would be admitted too (audit C,
-- M10). A workspace that already has several users of one name keeps it on the first
-- one created; each later one is renamed `NAME.<its id>`, which drops what the name let
-- it decide and grants nothing.
UPDATE users SET name = name || '.' || id
WHERE EXISTS (
    SELECT 1 FROM users AS earlier
    WHERE earlier.workspace = users.workspace
      AND earlier.name = users.name
      AND (earlier.created_at < users.created_at
           OR (earlier.created_at = users.created_at AND earlier.id < users.id))
);

CREATE UNIQUE INDEX users_by_name ON users (workspace, name);
