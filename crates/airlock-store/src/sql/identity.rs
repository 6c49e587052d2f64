//! Workspaces, users, agents, their tokens, and sessions.
//!
//! Tokens are looked up by the SHA-256 hex of the bearer token and nothing else; the
//! token itself never reaches the store. A token resolves only while unrevoked, and only
//! to a subject that exists in the token's own workspace.

use super::audit::append_effects;
use super::dialect::{self, lock_workspace, Conn, Pool, ORD};
use super::{all, execute, optional};
use crate::codec::{agent_from_row, database, enum_text, millis, opt_json_text, Columns};
use crate::{Effects, Principal, StoreError, StoreResult, Subject, Workspace};
use airlock_protocol::{Agent, Session, User};
use jiff::Timestamp;

pub(crate) async fn workspace_by_name(pool: &Pool, name: &str) -> StoreResult<Option<Workspace>> {
    let query =
        sqlx::query("SELECT id, name, created_at FROM workspaces WHERE name = $1").bind(name);
    optional(query, pool, |row| {
        let columns = Columns::new(row, "workspaces");
        Ok(Workspace {
            id: columns.text("id")?,
            name: columns.text("name")?,
            created_at: columns.time("created_at")?,
        })
    })
    .await
}

pub(crate) async fn create_workspace(conn: &mut Conn, workspace: &Workspace) -> StoreResult<()> {
    let query = sqlx::query("INSERT INTO workspaces (id, name, created_at) VALUES ($1, $2, $3)")
        .bind(&workspace.id)
        .bind(&workspace.name)
        .bind(millis(workspace.created_at));
    execute(query, &mut *conn).await?;
    dialect::create_chain(conn, &workspace.id).await
}

/// Registers the hash of a subject's token.
async fn insert_token(
    conn: &mut Conn,
    workspace: &str,
    token_hash: &str,
    subject: (&str, &str),
    created_at: jiff::Timestamp,
) -> StoreResult<()> {
    let (kind, id) = subject;
    let query = sqlx::query(
        "INSERT INTO tokens (hash, workspace, subject_kind, subject_id, created_at)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(token_hash)
    .bind(workspace)
    .bind(kind)
    .bind(id)
    .bind(millis(created_at));
    execute(query, conn).await?;
    Ok(())
}

pub(crate) async fn create_user(
    conn: &mut Conn,
    workspace: &str,
    user: &User,
    token_hash: &str,
    effects: &Effects,
) -> StoreResult<()> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query(
        "INSERT INTO users (id, workspace, name, role, created_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(&user.id)
    .bind(workspace)
    .bind(&user.name)
    .bind(user.role.as_str())
    .bind(millis(user.created_at));
    execute(query, &mut *conn).await?;
    insert_token(
        conn,
        workspace,
        token_hash,
        ("user", &user.id),
        user.created_at,
    )
    .await?;
    append_effects(conn, workspace, effects).await
}

pub(crate) async fn list_users(pool: &Pool, workspace: &str) -> StoreResult<Vec<User>> {
    let sql = format!(
        "SELECT id, name, role, created_at FROM users WHERE workspace = $1
         ORDER BY created_at, {ORD}"
    );
    all(sqlx::query(&sql).bind(workspace), pool, |row| {
        let columns = Columns::new(row, "users");
        Ok(User {
            id: columns.text("id")?,
            name: columns.text("name")?,
            role: columns.enumeration("role")?,
            created_at: columns.time("created_at")?,
        })
    })
    .await
}

pub(crate) async fn create_agent(
    conn: &mut Conn,
    workspace: &str,
    agent: &Agent,
    token_hash: &str,
    effects: &Effects,
) -> StoreResult<()> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query(
        "INSERT INTO agents (id, workspace, name, mode, system_prompt, tools, workspace_dir,
                             llm, mcp_servers, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(&agent.id)
    .bind(workspace)
    .bind(&agent.name)
    .bind(enum_text(&agent.mode)?)
    .bind(&agent.system_prompt)
    .bind(opt_json_text(&agent.tools)?)
    .bind(&agent.workspace_dir)
    .bind(opt_json_text(&agent.llm)?)
    .bind(opt_json_text(&agent.mcp_servers)?)
    .bind(millis(agent.created_at));
    execute(query, &mut *conn).await?;
    insert_token(
        conn,
        workspace,
        token_hash,
        ("agent", &agent.id),
        agent.created_at,
    )
    .await?;
    append_effects(conn, workspace, effects).await
}

/// Replaces an agent's settings. An agent that does not exist in the workspace is a
/// conflict (the caller read it moments ago), and nothing is written.
pub(crate) async fn update_agent(
    conn: &mut Conn,
    workspace: &str,
    agent: &Agent,
    effects: &Effects,
) -> StoreResult<()> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query(
        "UPDATE agents SET mode = $1, system_prompt = $2, tools = $3, workspace_dir = $4, llm = $5,
                           mcp_servers = $6
         WHERE id = $7 AND workspace = $8",
    )
    .bind(enum_text(&agent.mode)?)
    .bind(&agent.system_prompt)
    .bind(opt_json_text(&agent.tools)?)
    .bind(&agent.workspace_dir)
    .bind(opt_json_text(&agent.llm)?)
    .bind(opt_json_text(&agent.mcp_servers)?)
    .bind(&agent.id)
    .bind(workspace);
    let updated = execute(query, &mut *conn).await?;
    if updated.rows_affected() != 1 {
        return Err(StoreError::Conflict(
            "no agent with this id in the workspace".to_owned(),
        ));
    }
    append_effects(conn, workspace, effects).await
}

const AGENT_COLUMNS: &str =
    "id, name, mode, system_prompt, tools, workspace_dir, llm, mcp_servers, created_at";

/// The agent of `workspace` whose `column` (`id` or `name`) equals `value`.
pub(crate) async fn find_agent(
    pool: &Pool,
    workspace: &str,
    column: AgentKey,
    value: &str,
) -> StoreResult<Option<Agent>> {
    let key = match column {
        AgentKey::Id => "id",
        AgentKey::Name => "name",
    };
    let sql = format!("SELECT {AGENT_COLUMNS} FROM agents WHERE workspace = $1 AND {key} = $2");
    let query = sqlx::query(&sql).bind(workspace).bind(value);
    optional(query, pool, agent_from_row).await
}

/// Which unique key [`find_agent`] looks an agent up by.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AgentKey {
    Id,
    Name,
}

pub(crate) async fn list_agents(pool: &Pool, workspace: &str) -> StoreResult<Vec<Agent>> {
    let sql = format!(
        "SELECT {AGENT_COLUMNS} FROM agents WHERE workspace = $1 ORDER BY created_at, {ORD}"
    );
    let query = sqlx::query(&sql).bind(workspace);
    all(query, pool, agent_from_row).await
}

pub(crate) async fn principal_for_token(
    pool: &Pool,
    token_hash: &str,
) -> StoreResult<Option<Principal>> {
    // The joins also check the subject's workspace, so a token can never act in a
    // workspace other than the one its subject belongs to.
    let row = sqlx::query(
        "SELECT t.workspace, t.subject_kind, t.subject_id,
                u.name AS user_name, u.role AS user_role, a.name AS agent_name
         FROM tokens t
         LEFT JOIN users u
           ON t.subject_kind = 'user' AND u.id = t.subject_id AND u.workspace = t.workspace
         LEFT JOIN agents a
           ON t.subject_kind = 'agent' AND a.id = t.subject_id AND a.workspace = t.workspace
         WHERE t.hash = $1 AND t.revoked_at IS NULL",
    )
    .bind(token_hash)
    .fetch_optional(pool)
    .await
    .map_err(database)?;
    let Some(row) = row else {
        return Ok(None);
    };
    let columns = Columns::new(&row, "tokens");
    let id = columns.text("subject_id")?;
    let subject = match columns.text("subject_kind")?.as_str() {
        "user" => match (
            columns.opt_text("user_name")?,
            columns.opt_text("user_role")?,
        ) {
            (Some(name), Some(_)) => Subject::User {
                id,
                name,
                role: columns.enumeration("user_role")?,
            },
            _ => return Ok(None),
        },
        "agent" => match columns.opt_text("agent_name")? {
            Some(name) => Subject::Agent { id, name },
            None => return Ok(None),
        },
        other => {
            return Err(StoreError::Corrupt {
                table: "tokens",
                detail: format!("subject_kind: unknown kind `{other}`"),
            })
        }
    };
    Ok(Some(Principal {
        workspace: columns.text("workspace")?,
        subject,
    }))
}

pub(crate) async fn revoke_tokens(
    conn: &mut Conn,
    workspace: &str,
    subject_id: &str,
    at: Timestamp,
    effects: &Effects,
) -> StoreResult<u64> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query(
        "UPDATE tokens SET revoked_at = $1
         WHERE workspace = $2 AND subject_id = $3 AND revoked_at IS NULL",
    )
    .bind(millis(at))
    .bind(workspace)
    .bind(subject_id);
    let revoked = execute(query, &mut *conn).await?.rows_affected();
    if revoked > 0 {
        append_effects(conn, workspace, effects).await?;
    }
    Ok(revoked)
}

pub(crate) async fn create_session(
    conn: &mut Conn,
    workspace: &str,
    session: &Session,
) -> StoreResult<()> {
    let query = sqlx::query(
        "INSERT INTO sessions (id, workspace, agent_id, title, task_id, external_id, created_at, created_by, mode) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(&session.id)
    .bind(workspace)
    .bind(&session.agent_id)
    .bind(&session.title)
    .bind(&session.task_id)
    .bind(&session.external_id)
    .bind(millis(session.created_at))
    .bind(&session.created_by)
    .bind(session.mode.map(|mode| mode.as_str()));
    execute(query, conn).await?;
    Ok(())
}

pub(crate) async fn get_session(
    pool: &Pool,
    workspace: &str,
    id: &str,
) -> StoreResult<Option<Session>> {
    let query = sqlx::query(
        "SELECT id, agent_id, title, task_id, external_id, created_at, created_by, mode
         FROM sessions WHERE workspace = $1 AND id = $2",
    )
    .bind(workspace)
    .bind(id);
    optional(query, pool, session_from_row).await
}

/// A session from a row with the `sessions` columns under their own names.
pub(super) fn session_from_row(row: &super::Row) -> StoreResult<Session> {
    let columns = Columns::new(row, "sessions");
    Ok(Session {
        id: columns.text("id")?,
        agent_id: columns.opt_text("agent_id")?,
        title: columns.opt_text("title")?,
        task_id: columns.opt_text("task_id")?,
        external_id: columns.opt_text("external_id")?,
        created_at: columns.time("created_at")?,
        created_by: columns.opt_text("created_by")?,
        mode: columns.opt_enumeration("mode")?,
    })
}

/// Sets (or clears, `None`) a session's own mode; `false` when the workspace has no such
/// session (nothing written then).
pub(crate) async fn set_session_mode(
    conn: &mut Conn,
    workspace: &str,
    session_id: &str,
    mode: Option<airlock_protocol::Mode>,
    effects: &Effects,
) -> StoreResult<bool> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query("UPDATE sessions SET mode = $1 WHERE id = $2 AND workspace = $3")
        .bind(mode.map(|mode| mode.as_str()))
        .bind(session_id)
        .bind(workspace);
    let updated = execute(query, &mut *conn).await?;
    if updated.rows_affected() != 1 {
        return Ok(false);
    }
    append_effects(conn, workspace, effects).await?;
    Ok(true)
}

pub(crate) async fn session_by_external(
    readers: &Pool,
    workspace: &str,
    agent_id: &str,
    external_id: &str,
) -> StoreResult<Option<Session>> {
    let id: Option<String> = sqlx::query_scalar(
        "SELECT id FROM sessions WHERE workspace = $1 AND agent_id = $2 AND external_id = $3",
    )
    .bind(workspace)
    .bind(agent_id)
    .bind(external_id)
    .fetch_optional(readers)
    .await
    .map_err(database)?;
    match id {
        Some(id) => get_session(readers, workspace, &id).await,
        None => Ok(None),
    }
}
