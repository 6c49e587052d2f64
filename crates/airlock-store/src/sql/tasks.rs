//! Scheduled tasks: their settings, their task-scoped rules, and dispatch — the claim of
//! the overlap guard together with the run it starts, in one transaction.

use super::audit::append_effects;
use super::dialect::{lock_workspace, Conn, Pool, ORD};
use super::identity::create_session;
use super::rules::mint_or_reuse;
use super::runs::start_run;
use super::{all, execute, optional, with_workspace};
use crate::codec::{millis, opt_millis, task_from_row, TASK_COLUMNS};
use crate::{Effects, Lease, RunUpdate, StoreResult};
use airlock_protocol::{Run, Session, StandingRule, Task};
use jiff::Timestamp;

pub(crate) async fn create_task(
    conn: &mut Conn,
    workspace: &str,
    task: &Task,
    rules: &[StandingRule],
    effects: &Effects,
) -> StoreResult<()> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query(
        "INSERT INTO tasks (id, workspace, title, instructions, agent_id, cron, timezone,
                            enabled, created_by, created_at, updated_at, revoked_at,
                            next_run_at, active_run_id, last_run_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, NULL, NULL)",
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
    .bind(opt_millis(task.next_run_at));
    execute(query, &mut *conn).await?;
    for rule in rules {
        mint_or_reuse(conn, workspace, rule).await?;
    }
    append_effects(conn, workspace, effects).await
}

pub(crate) async fn get_task(
    readers: &Pool,
    workspace: &str,
    id: &str,
) -> StoreResult<Option<Task>> {
    let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE workspace = $1 AND id = $2");
    let query = sqlx::query(&sql).bind(workspace).bind(id);
    optional(query, readers, task_from_row).await
}

pub(crate) async fn list_tasks(readers: &Pool, workspace: &str) -> StoreResult<Vec<Task>> {
    let sql = format!(
        "SELECT {TASK_COLUMNS} FROM tasks WHERE workspace = $1 ORDER BY created_at DESC, {ORD} DESC"
    );
    let query = sqlx::query(&sql).bind(workspace);
    all(query, readers, task_from_row).await
}

pub(crate) async fn update_task(
    conn: &mut Conn,
    workspace: &str,
    task: &Task,
    revoke_rules_at: Option<Timestamp>,
    effects: &Effects,
) -> StoreResult<()> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query(
        "UPDATE tasks SET title = $1, instructions = $2, cron = $3, timezone = $4, enabled = $5,
            updated_at = $6, revoked_at = $7, next_run_at = $8
         WHERE workspace = $9 AND id = $10",
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
    .bind(&task.id);
    execute(query, &mut *conn).await?;
    if let Some(at) = revoke_rules_at {
        let query = sqlx::query(
            "UPDATE standing_rules SET revoked_at = $1
             WHERE workspace = $2 AND scope = 'task' AND scope_id = $3 AND revoked_at IS NULL",
        )
        .bind(millis(at))
        .bind(workspace)
        .bind(&task.id);
        execute(query, &mut *conn).await?;
    }
    append_effects(conn, workspace, effects).await
}

pub(crate) async fn due_tasks(
    readers: &Pool,
    now: Timestamp,
    limit: u32,
) -> StoreResult<Vec<(String, Task)>> {
    let sql = format!(
        "SELECT workspace, {TASK_COLUMNS} FROM tasks
         WHERE enabled = 1 AND revoked_at IS NULL AND next_run_at IS NOT NULL
           AND next_run_at <= $1
         ORDER BY next_run_at, {ORD} LIMIT $2"
    );
    let query = sqlx::query(&sql).bind(millis(now)).bind(i64::from(limit));
    all(query, readers, |row| {
        with_workspace(row, "tasks", task_from_row)
    })
    .await
}

#[allow(clippy::too_many_arguments)]
pub(crate) async fn dispatch_task(
    conn: &mut Conn,
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
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query(
        "UPDATE tasks SET active_run_id = $1, last_run_id = $2,
            next_run_at = CASE WHEN $3 THEN next_run_at ELSE $4 END
         WHERE workspace = $5 AND id = $6 AND enabled = 1 AND revoked_at IS NULL
           AND active_run_id IS NULL
           AND ($7 OR (next_run_at IS NOT NULL AND next_run_at <= $8))",
    )
    .bind(&run.id)
    .bind(&run.id)
    .bind(manual)
    .bind(opt_millis(next_run_at))
    .bind(workspace)
    .bind(task_id)
    .bind(manual)
    .bind(millis(now));
    let claimed = execute(query, &mut *conn).await?;
    if claimed.rows_affected() != 1 {
        return Ok(false);
    }
    create_session(&mut *conn, workspace, session).await?;
    start_run(conn, workspace, run, lease, update).await?;
    Ok(true)
}

pub(crate) async fn skip_task_tick(
    conn: &mut Conn,
    workspace: &str,
    task_id: &str,
    now: Timestamp,
    next_run_at: Option<Timestamp>,
) -> StoreResult<bool> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query(
        "UPDATE tasks SET next_run_at = $1
         WHERE workspace = $2 AND id = $3 AND active_run_id IS NOT NULL
           AND next_run_at IS NOT NULL AND next_run_at <= $4",
    )
    .bind(opt_millis(next_run_at))
    .bind(workspace)
    .bind(task_id)
    .bind(millis(now));
    let skipped = execute(query, &mut *conn).await?;
    Ok(skipped.rows_affected() == 1)
}
