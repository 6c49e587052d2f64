//! Policy versions: every version is kept, the highest one is in force, and replacing it
//! cancels the pending approvals made under another policy (G4: a changed policy under a
//! pending approval ends as not executed).

use super::audit::append_effects;
use super::dialect::{lock_workspace, Conn, Db, Pool, ORD};
use super::runs::close_approvals;
use super::{all, execute, optional, with_workspace};
use crate::codec::{database, millis, policy_from_row, to_i64};
use crate::{ClosingApprovals, Effects, StoreError, StoreResult};
use airlock_protocol::{Approval, PolicyInfo};
use sqlx::Executor;

/// Stores `policy` as the workspace's newest version and cancels what it makes stale.
///
/// The version must be newer than every stored one: two writers that both computed
/// "current + 1" cannot both win, and the loser gets a [`StoreError::Conflict`]. Two
/// nodes putting a policy at once queue on the workspace lock, so the second reads the
/// first's version (and the primary key (workspace, version) backs this up).
pub(crate) async fn put_policy(
    conn: &mut Conn,
    workspace: &str,
    policy: &PolicyInfo,
    effects: &Effects,
    cancel_reason: &str,
    on_cancel: &(dyn for<'a> Fn(&'a Approval) -> Effects + Sync),
) -> StoreResult<Vec<Approval>> {
    lock_workspace(conn, workspace).await?;
    let row = sqlx::query("SELECT MAX(version) AS version FROM policies WHERE workspace = $1")
        .bind(workspace)
        .fetch_one(&mut *conn)
        .await
        .map_err(database)?;
    let latest: Option<i64> = sqlx::Row::try_get(&row, "version").map_err(database)?;
    let version = to_i64(policy.version)?;
    if let Some(latest) = latest.filter(|latest| *latest >= version) {
        return Err(StoreError::Conflict(format!(
            "policy version {version} is not newer than the stored version {latest}"
        )));
    }
    let query = sqlx::query(
        "INSERT INTO policies (workspace, version, digest, source, created_at)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(workspace)
    .bind(version)
    .bind(&policy.digest)
    .bind(&policy.source)
    .bind(millis(policy.updated_at));
    execute(query, &mut *conn).await?;
    append_effects(conn, workspace, effects).await?;

    let stale: Vec<String> = sqlx::query_scalar(&format!(
        "SELECT id FROM approvals
         WHERE workspace = $1 AND status = 'pending' AND policy_digest <> $2
         ORDER BY created_at, {ORD}"
    ))
    .bind(workspace)
    .bind(&policy.digest)
    .fetch_all(&mut *conn)
    .await
    .map_err(database)?;
    let closing = ClosingApprovals {
        at: policy.updated_at,
        reason: cancel_reason,
        effects: on_cancel,
    };
    close_approvals(conn, workspace, stale, &closing).await
}

pub(crate) async fn current_policy(
    pool: &Pool,
    workspace: &str,
) -> StoreResult<Option<PolicyInfo>> {
    let query = sqlx::query(
        "SELECT version, digest, source, created_at FROM policies WHERE workspace = $1
         ORDER BY version DESC LIMIT 1",
    )
    .bind(workspace);
    optional(query, pool, policy_from_row).await
}

pub(crate) async fn current_policies(pool: &Pool) -> StoreResult<Vec<(String, PolicyInfo)>> {
    let query = sqlx::query(
        "SELECT p.workspace, p.version, p.digest, p.source, p.created_at FROM policies p
         WHERE p.version = (SELECT MAX(version) FROM policies WHERE workspace = p.workspace)
         ORDER BY p.workspace",
    );
    all(query, pool, |row| {
        with_workspace(row, "policies", policy_from_row)
    })
    .await
}

/// The digest of the policy in force, read inside a transaction. A workspace without a
/// policy has the empty digest, which is what the gate records for calls made under no
/// policy.
pub(crate) async fn digest_in_force<'e, E>(executor: E, workspace: &str) -> StoreResult<String>
where
    E: Executor<'e, Database = Db>,
{
    let digest: Option<String> = sqlx::query_scalar(
        "SELECT digest FROM policies WHERE workspace = $1 ORDER BY version DESC LIMIT 1",
    )
    .bind(workspace)
    .fetch_optional(executor)
    .await
    .map_err(database)?;
    Ok(digest.unwrap_or_default())
}
