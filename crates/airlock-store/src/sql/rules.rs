//! Standing rules: minting (deduplicated), revoking, listing, and the live ones in a set
//! of scopes.
//!
//! A rule is live at `t` when it is not revoked and has no expiry or expires after `t`.

use super::audit::append_effects;
use super::dialect::{lock_workspace, Conn, Pool, ORD};
use super::{all, execute, optional};
use crate::codec::{database, millis, opt_millis, rule_from_row};
use crate::{Effects, StoreResult};
use airlock_protocol::{RuleScope, StandingRule};
use jiff::Timestamp;

const RULE_COLUMNS: &str =
    "id, tool, target, scope, scope_id, created_by, created_at, expires_at, revoked_at";

/// Inserts `rule`, or returns the identical rule live at `rule.created_at` with `false`
/// (writing nothing). Shared by `create_standing_rule` and "approve + remember".
pub(crate) async fn mint_or_reuse(
    conn: &mut Conn,
    workspace: &str,
    rule: &StandingRule,
) -> StoreResult<(StandingRule, bool)> {
    let sql = format!(
        "SELECT {RULE_COLUMNS} FROM standing_rules
         WHERE workspace = $1 AND tool = $2 AND target = $3 AND scope = $4 AND scope_id = $5
           AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $6)
         ORDER BY created_at DESC, {ORD} DESC LIMIT 1"
    );
    let query = sqlx::query(&sql)
        .bind(workspace)
        .bind(&rule.tool)
        .bind(&rule.target)
        .bind(rule.scope.as_str())
        .bind(&rule.scope_id)
        .bind(millis(rule.created_at));
    if let Some(existing) = optional(query, &mut *conn, rule_from_row).await? {
        return Ok((existing, false));
    }
    let query = sqlx::query(
        "INSERT INTO standing_rules (id, workspace, tool, target, scope, scope_id, created_by,
                                     created_at, expires_at, revoked_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
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
    .bind(opt_millis(rule.revoked_at));
    execute(query, &mut *conn).await?;
    Ok((rule.clone(), true))
}

pub(crate) async fn create_standing_rule(
    conn: &mut Conn,
    workspace: &str,
    rule: &StandingRule,
    effects: &Effects,
) -> StoreResult<(StandingRule, bool)> {
    // Serialises identical mints from two nodes: the second finds the first's rule.
    lock_workspace(conn, workspace).await?;
    let (rule, created) = mint_or_reuse(conn, workspace, rule).await?;
    if created {
        append_effects(conn, workspace, effects).await?;
    }
    Ok((rule, created))
}

pub(crate) async fn revoke_standing_rule(
    conn: &mut Conn,
    workspace: &str,
    id: &str,
    at: Timestamp,
    effects: &Effects,
) -> StoreResult<Option<StandingRule>> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query(
        "UPDATE standing_rules SET revoked_at = $1
         WHERE id = $2 AND workspace = $3 AND revoked_at IS NULL",
    )
    .bind(millis(at))
    .bind(id)
    .bind(workspace);
    let updated = execute(query, &mut *conn).await?;
    if updated.rows_affected() != 1 {
        return Ok(None);
    }
    append_effects(conn, workspace, effects).await?;
    let sql = format!("SELECT {RULE_COLUMNS} FROM standing_rules WHERE id = $1 AND workspace = $2");
    let row = sqlx::query(&sql)
        .bind(id)
        .bind(workspace)
        .fetch_one(&mut *conn)
        .await
        .map_err(database)?;
    rule_from_row(&row).map(Some)
}

pub(crate) async fn list_standing_rules(
    pool: &Pool,
    workspace: &str,
) -> StoreResult<Vec<StandingRule>> {
    let sql = format!(
        "SELECT {RULE_COLUMNS} FROM standing_rules WHERE workspace = $1
         ORDER BY created_at DESC, {ORD} DESC"
    );
    let query = sqlx::query(&sql).bind(workspace);
    all(query, pool, rule_from_row).await
}

pub(crate) async fn live_standing_rules(
    pool: &Pool,
    workspace: &str,
    scopes: &[(RuleScope, String)],
    now: Timestamp,
) -> StoreResult<Vec<StandingRule>> {
    if scopes.is_empty() {
        return Ok(Vec::new());
    }
    // $1 and $2 are the workspace and the time; each scope takes the next two.
    let any_scope = (0..scopes.len())
        .map(|index| {
            let first = 3 + 2 * index;
            format!("(scope = ${first} AND scope_id = ${})", first + 1)
        })
        .collect::<Vec<_>>()
        .join(" OR ");
    let sql = format!(
        "SELECT {RULE_COLUMNS} FROM standing_rules
         WHERE workspace = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)
           AND ({any_scope})
         ORDER BY created_at DESC, {ORD} DESC"
    );
    let mut query = sqlx::query(&sql).bind(workspace).bind(millis(now));
    for (scope, scope_id) in scopes {
        query = query.bind(scope.as_str()).bind(scope_id);
    }
    all(query, pool, rule_from_row).await
}
