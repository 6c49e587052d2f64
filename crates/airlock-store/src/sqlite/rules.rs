//! Standing rules: minting (deduplicated), revoking, listing, and the live ones in a set
//! of scopes.
//!
//! A rule is live at `t` when it is not revoked and has no expiry or expires after `t`.

use super::audit::append_effects;
use super::codec::{database, millis, opt_millis};
use crate::codec::rule_from_row;
use crate::{Effects, StoreResult};
use airlock_protocol::{RuleScope, StandingRule};
use jiff::Timestamp;
use sqlx::{SqliteConnection, SqlitePool};

const RULE_COLUMNS: &str =
    "id, tool, target, scope, scope_id, created_by, created_at, expires_at, revoked_at";

/// Inserts `rule`, or returns the identical rule live at `rule.created_at` with `false`
/// (writing nothing). Shared by `create_standing_rule` and "approve + remember".
pub(crate) async fn mint_or_reuse(
    conn: &mut SqliteConnection,
    workspace: &str,
    rule: &StandingRule,
) -> StoreResult<(StandingRule, bool)> {
    let sql = format!(
        "SELECT {RULE_COLUMNS} FROM standing_rules
         WHERE workspace = ? AND tool = ? AND target = ? AND scope = ? AND scope_id = ?
           AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)
         ORDER BY created_at DESC, rowid DESC LIMIT 1"
    );
    let existing = sqlx::query(&sql)
        .bind(workspace)
        .bind(&rule.tool)
        .bind(&rule.target)
        .bind(rule.scope.as_str())
        .bind(&rule.scope_id)
        .bind(millis(rule.created_at))
        .fetch_optional(&mut *conn)
        .await
        .map_err(database)?;
    if let Some(row) = existing {
        return Ok((rule_from_row(&row)?, false));
    }
    sqlx::query(
        "INSERT INTO standing_rules (id, workspace, tool, target, scope, scope_id, created_by,
                                     created_at, expires_at, revoked_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&rule.id)
    .bind(workspace)
    .bind(&rule.tool)
    .bind(&rule.target)
    .bind(rule.scope.as_str())
    .bind(&rule.scope_id)
    .bind(&rule.created_by)
    .bind(millis(rule.created_at))
    .bind(opt_millis(rule.expires_at))
    .bind(opt_millis(rule.revoked_at))
    .execute(&mut *conn)
    .await
    .map_err(database)?;
    Ok((rule.clone(), true))
}

pub(crate) async fn create_standing_rule(
    conn: &mut SqliteConnection,
    workspace: &str,
    rule: &StandingRule,
    effects: &Effects,
) -> StoreResult<(StandingRule, bool)> {
    let (rule, created) = mint_or_reuse(conn, workspace, rule).await?;
    if created {
        append_effects(conn, workspace, effects).await?;
    }
    Ok((rule, created))
}

pub(crate) async fn revoke_standing_rule(
    conn: &mut SqliteConnection,
    workspace: &str,
    id: &str,
    at: Timestamp,
    effects: &Effects,
) -> StoreResult<Option<StandingRule>> {
    let updated = sqlx::query(
        "UPDATE standing_rules SET revoked_at = ?
         WHERE id = ? AND workspace = ? AND revoked_at IS NULL",
    )
    .bind(millis(at))
    .bind(id)
    .bind(workspace)
    .execute(&mut *conn)
    .await
    .map_err(database)?;
    if updated.rows_affected() != 1 {
        return Ok(None);
    }
    append_effects(conn, workspace, effects).await?;
    let sql = format!("SELECT {RULE_COLUMNS} FROM standing_rules WHERE id = ? AND workspace = ?");
    let row = sqlx::query(&sql)
        .bind(id)
        .bind(workspace)
        .fetch_one(&mut *conn)
        .await
        .map_err(database)?;
    rule_from_row(&row).map(Some)
}

pub(crate) async fn list_standing_rules(
    readers: &SqlitePool,
    workspace: &str,
) -> StoreResult<Vec<StandingRule>> {
    let sql = format!(
        "SELECT {RULE_COLUMNS} FROM standing_rules WHERE workspace = ?
         ORDER BY created_at DESC, rowid DESC"
    );
    let rows = sqlx::query(&sql)
        .bind(workspace)
        .fetch_all(readers)
        .await
        .map_err(database)?;
    rows.iter().map(rule_from_row).collect()
}

pub(crate) async fn live_standing_rules(
    readers: &SqlitePool,
    workspace: &str,
    scopes: &[(RuleScope, String)],
    now: Timestamp,
) -> StoreResult<Vec<StandingRule>> {
    if scopes.is_empty() {
        return Ok(Vec::new());
    }
    let any_scope = vec!["(scope = ? AND scope_id = ?)"; scopes.len()].join(" OR ");
    let sql = format!(
        "SELECT {RULE_COLUMNS} FROM standing_rules
         WHERE workspace = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)
           AND ({any_scope})
         ORDER BY created_at DESC, rowid DESC"
    );
    let mut query = sqlx::query(&sql).bind(workspace).bind(millis(now));
    for (scope, scope_id) in scopes {
        query = query.bind(scope.as_str()).bind(scope_id);
    }
    let rows = query.fetch_all(readers).await.map_err(database)?;
    rows.iter().map(rule_from_row).collect()
}
