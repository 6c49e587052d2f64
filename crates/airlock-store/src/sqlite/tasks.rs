//! Scheduled tasks: their settings, their task-scoped rules, and dispatch — the claim of
//! the overlap guard together with the run it starts, in one transaction.

use super::audit::append_effects;
use super::codec::{database, millis, opt_millis};
use super::identity::create_session;
use super::rules::mint_or_reuse;
use super::runs::start_run;
use crate::codec::{task_from_row, TASK_COLUMNS};
use crate::{Effects, Lease, RunUpdate, StoreResult};
use airlock_protocol::{Run, Session, StandingRule, Task};
use jiff::Timestamp;
use sqlx::{SqliteConnection, SqlitePool};

pub(crate) async fn create_task(
    conn: &mut SqliteConnection,
    workspace: &str,
    task: &Task,
    rules: &[StandingRule],
    effects: &Effects,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO tasks (id, workspace, title, instructions, agent_id, cron, timezone,
                            enabled, created_by, created_at, updated_at, revoked_at,
                            next_run_at, active_run_id, last_run_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)",
    )
    .bind(&task.id)
    .bind(workspace)
    .bind(&task.title)
    .bind(&task.instructions)
    .bind(&task.agent_id)
    .bind(&task.cron)
    .bind(&task.timezone)
    .bind(i64::from(task.enabled))
    .bind(&task.created_by)
    .bind(millis(task.created_at))
    .bind(millis(task.updated_at))
    .bind(opt_millis(task.revoked_at))
    .bind(opt_millis(task.next_run_at))
    .execute(&mut *conn)
    .await
    .map_err(database)?;
    for rule in rules {
        mint_or_reuse(conn, workspace, rule).await?;
    }
    append_effects(conn, workspace, effects).await
}

pub(crate) async fn get_task(
    readers: &SqlitePool,
    workspace: &str,
    id: &str,
) -> StoreResult<Option<Task>> {
    let row = sqlx::query(&format!(
        "SELECT {TASK_COLUMNS} FROM tasks WHERE workspace = ? AND id = ?"
    ))
    .bind(workspace)
    .bind(id)
    .fetch_optional(readers)
    .await
    .map_err(database)?;
    row.as_ref().map(task_from_row).transpose()
}

pub(crate) async fn list_tasks(readers: &SqlitePool, workspace: &str) -> StoreResult<Vec<Task>> {
    let rows = sqlx::query(&format!(
        "SELECT {TASK_COLUMNS} FROM tasks WHERE workspace = ? ORDER BY created_at DESC, rowid DESC"
    ))
    .bind(workspace)
    .fetch_all(readers)
    .await
    .map_err(database)?;
    rows.iter().map(task_from_row).collect()
}

pub(crate) async fn update_task(
    conn: &mut SqliteConnection,
    workspace: &str,
    task: &Task,
    revoke_rules_at: Option<Timestamp>,
    effects: &Effects,
) -> StoreResult<()> {
    sqlx::query(
        "UPDATE tasks SET title = ?, instructions = ?, cron = ?, timezone = ?, enabled = ?,
            updated_at = ?, revoked_at = ?, next_run_at = ?
         WHERE workspace = ? AND id = ?",
    )
    .bind(&task.title)
    .bind(&task.instructions)
    .bind(&task.cron)
    .bind(&task.timezone)
    .bind(i64::from(task.enabled))
    .bind(millis(task.updated_at))
    .bind(opt_millis(task.revoked_at))
    .bind(opt_millis(task.next_run_at))
    .bind(workspace)
    .bind(&task.id)
    .execute(&mut *conn)
    .await
    .map_err(database)?;
    if let Some(at) = revoke_rules_at {
        sqlx::query(
            "UPDATE standing_rules SET revoked_at = ?
             WHERE workspace = ? AND scope = 'task' AND scope_id = ? AND revoked_at IS NULL",
        )
        .bind(millis(at))
        .bind(workspace)
        .bind(&task.id)
        .execute(&mut *conn)
        .await
        .map_err(database)?;
    }
    append_effects(conn, workspace, effects).await
}

pub(crate) async fn due_tasks(
    readers: &SqlitePool,
    now: Timestamp,
    limit: u32,
) -> StoreResult<Vec<(String, Task)>> {
    let rows = sqlx::query(&format!(
        "SELECT workspace, {TASK_COLUMNS} FROM tasks
         WHERE enabled = 1 AND revoked_at IS NULL AND next_run_at IS NOT NULL
           AND next_run_at <= ?
         ORDER BY next_run_at, rowid LIMIT ?"
    ))
    .bind(millis(now))
    .bind(i64::from(limit))
    .fetch_all(readers)
    .await
    .map_err(database)?;
    rows.iter()
        .map(|row| {
            let workspace: String = sqlx::Row::try_get(row, "workspace").map_err(database)?;
            Ok((workspace, task_from_row(row)?))
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
pub(crate) async fn dispatch_task(
    conn: &mut SqliteConnection,
    workspace: &str,
    task_id: &str,
    now: Timestamp,
    manual: bool,
    next_run_at: Option<Timestamp>,
    session: &Session,
    run: &Run,
    lease: &Lease,
    update: &RunUpdate,
) -> StoreResult<bool> {
    let claimed = sqlx::query(
        "UPDATE tasks SET active_run_id = ?, last_run_id = ?,
            next_run_at = CASE WHEN ? THEN next_run_at ELSE ? END
         WHERE workspace = ? AND id = ? AND enabled = 1 AND revoked_at IS NULL
           AND active_run_id IS NULL
           AND (? OR (next_run_at IS NOT NULL AND next_run_at <= ?))",
    )
    .bind(&run.id)
    .bind(&run.id)
    .bind(manual)
    .bind(opt_millis(next_run_at))
    .bind(workspace)
    .bind(task_id)
    .bind(manual)
    .bind(millis(now))
    .execute(&mut *conn)
    .await
    .map_err(database)?;
    if claimed.rows_affected() != 1 {
        return Ok(false);
    }
    create_session(&mut *conn, workspace, session).await?;
    start_run(conn, workspace, run, lease, update).await?;
    Ok(true)
}

pub(crate) async fn skip_task_tick(
    conn: &mut SqliteConnection,
    workspace: &str,
    task_id: &str,
    now: Timestamp,
    next_run_at: Option<Timestamp>,
) -> StoreResult<bool> {
    let skipped = sqlx::query(
        "UPDATE tasks SET next_run_at = ?
         WHERE workspace = ? AND id = ? AND active_run_id IS NOT NULL
           AND next_run_at IS NOT NULL AND next_run_at <= ?",
    )
    .bind(opt_millis(next_run_at))
    .bind(workspace)
    .bind(task_id)
    .bind(millis(now))
    .execute(&mut *conn)
    .await
    .map_err(database)?;
    Ok(skipped.rows_affected() == 1)
}
