//! The PostgreSQL backend: several airlock nodes sharing one database.
//!
//! Every operation is one transaction at READ COMMITTED on a connection of a pool, and
//! runs beside the other nodes' transactions; row locks order them:
//!
//! - INVARIANT: a write transaction on a workspace first locks the workspace's
//!   `audit_heads` row (`audit::lock_workspace`), and only then reads for update or
//!   writes other rows of it; the sweeper, the one operation spanning workspaces, locks
//!   their heads in workspace order. So writes of one workspace are serialised across
//!   nodes (the audit chain, event ids, policy versions and rule deduplication rely on
//!   it), transactions queue instead of deadlocking, and no retry loop is needed.
//! - Within that, each operation takes the locks its guarantee rests on by itself:
//!   `decide` locks the approval (`FOR UPDATE`) and updates it only from `pending`,
//!   `redeem` is one conditional update on `consumed_at IS NULL`, the sweeper takes
//!   approvals `FOR UPDATE SKIP LOCKED`.
//! - Commits are synchronous (`synchronous_commit = on`, G7), and every statement has a
//!   time limit (`statement_timeout`) so a stuck lock surfaces as an error, not a hang.
//! - Every event appended is also announced with `pg_notify` in its transaction
//!   (delivered on commit); [`Store::listen`] turns the announcements into [`Change`]s.
//!
//! The schema is embedded and migrated at connect; sqlx's migrator holds an advisory lock
//! while it runs, so nodes starting together migrate once. The database being away is a
//! [`StoreError::Database`] with the reason, and the pool reconnects by itself when it
//! is back.
//!
//! - `codec`: column encodings and error mapping (SQLite's encodings).
//! - `audit`: the workspace lock, appending effects (hash chain, events, notifications)
//!   and reading them back.
//! - `identity`: workspaces, users, agents, tokens, sessions.
//! - `policy`: policy versions and the cancellation of stale approvals.
//! - `calls`: call, approval and grant rows.
//! - `decide`, `grants`, `expiry`: the three operations that end a wait.
//! - `rules`: standing rules.
//! - `web`: the browser inbox's sessions (cookie hash → principal).
//! - `listen`: other nodes' changes (LISTEN/NOTIFY).
//! - `notify`: notifications, used links, server secrets (notification rows are the
//!   one exception to the workspace lock; the file says why).

mod audit;
mod batch;
mod calls;
mod codec;
mod decide;
mod expiry;
mod grants;
mod identity;
mod listen;
mod policy;
mod rules;
mod runs;
mod tasks;
mod web;

use crate::{
    ApprovalFilter, Change, DecideError, Decided, Decision, Effects, Grant, Lease, NewCall,
    Principal, RedeemError, RunUpdate, Store, StoreError, StoreResult, StoredStep, WebSession,
    Workspace,
};
use airlock_protocol::{
    Agent, Approval, AuditRecord, Call, Message, OutboxItem, PolicyInfo, RuleScope, Run, RunEvent,
    Session, StandingRule, Task, User, WorkspaceEvent,
};
use async_trait::async_trait;
use codec::database;
use identity::AgentKey;
use jiff::Timestamp;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, Executor, PgConnection, PgPool};
use std::str::FromStr;
use std::time::Duration;

/// The schema, embedded at build time and brought up to date by
/// [`PostgresStore::connect`].
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");

/// How a node uses the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgOptions {
    /// Connections of this node's pool (one of them is held by [`Store::listen`]).
    pub max_connections: u32,
    /// How long an operation waits for a connection — including the time to (re)connect
    /// to the server — before failing with [`StoreError::Database`].
    pub acquire_timeout: Duration,
    /// The longest any one statement may run, lock waits included.
    pub statement_timeout: Duration,
}

impl Default for PgOptions {
    fn default() -> PgOptions {
        PgOptions {
            max_connections: 10,
            acquire_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(30),
        }
    }
}

/// The PostgreSQL store. Cheap to share behind an `Arc`; one per node.
pub struct PostgresStore {
    pool: PgPool,
    /// Group commit of the calls that need no approval (`batch.rs`).
    batcher: batch::Batcher,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://…`) and migrates it.
    ///
    /// A database that cannot be reached is a [`StoreError::Database`] saying why, within
    /// `options.acquire_timeout`.
    pub async fn connect(url: &str, options: PgOptions) -> StoreResult<PostgresStore> {
        let connect_options = PgConnectOptions::from_str(url)
            .map_err(|error| StoreError::Database(format!("invalid database URL: {error}")))?
            .application_name("airlock");
        // One direct connection first: the pool retries a refused connection until its
        // timeout and then reports only that it timed out; this reports the reason.
        let probe = tokio::time::timeout(
            options.acquire_timeout,
            PgConnection::connect_with(&connect_options),
        )
        .await
        .map_err(|_| {
            StoreError::Database(format!(
                "no answer from the database within {:?}",
                options.acquire_timeout
            ))
        })?
        .map_err(database)?;
        if let Err(error) = probe.close().await {
            tracing::debug!(%error, "closing the probe connection");
        }
        let settings = format!(
            "SET statement_timeout = {}; SET synchronous_commit = on",
            options.statement_timeout.as_millis()
        );
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .after_connect(move |conn, _| {
                let settings = settings.clone();
                Box::pin(async move {
                    conn.execute(settings.as_str()).await?;
                    Ok(())
                })
            })
            .connect_lazy_with(connect_options);
        MIGRATOR
            .run(&pool)
            .await
            .map_err(|error| StoreError::Database(format!("migrating the schema: {error}")))?;
        let batcher = batch::Batcher::new(pool.clone());
        Ok(PostgresStore { pool, batcher })
    }

    /// Closes every connection (and ends every [`Store::listen`] task).
    pub async fn close(self) {
        self.pool.close().await;
    }
}

/// Runs `$body` (an expression using `$conn: &mut PgConnection`, returning a `Result`)
/// as one transaction on a pooled connection: committed when it returns `Ok`, rolled
/// back when it returns `Err` — a refusal writes nothing. If the caller's future is
/// dropped midway, dropping the transaction rolls it back before the connection is
/// reused.
macro_rules! write_transaction {
    ($store:expr, |$conn:ident| $body:expr) => {{
        let mut transaction = $store.pool.begin().await.map_err(database)?;
        let outcome = {
            let $conn: &mut PgConnection = &mut transaction;
            $body.await
        };
        match outcome {
            Ok(value) => {
                transaction.commit().await.map_err(database)?;
                Ok(value)
            }
            Err(error) => {
                if let Err(rollback) = transaction.rollback().await {
                    tracing::warn!(error = %rollback, "rolling back a refused write failed");
                }
                Err(error)
            }
        }
    }};
}

// Declared after `write_transaction!`, which it uses.
mod notify;

#[async_trait]
impl Store for PostgresStore {
    async fn workspace_by_name(&self, name: &str) -> StoreResult<Option<Workspace>> {
        identity::workspace_by_name(&self.pool, name).await
    }

    async fn create_workspace(&self, workspace: &Workspace) -> StoreResult<()> {
        write_transaction!(self, |conn| identity::create_workspace(conn, workspace))
    }

    async fn create_user(
        &self,
        workspace: &str,
        user: &User,
        token_hash: &str,
        effects: &Effects,
    ) -> StoreResult<()> {
        write_transaction!(self, |conn| identity::create_user(
            conn, workspace, user, token_hash, effects
        ))
    }

    async fn list_users(&self, workspace: &str) -> StoreResult<Vec<User>> {
        identity::list_users(&self.pool, workspace).await
    }

    async fn create_agent(
        &self,
        workspace: &str,
        agent: &Agent,
        token_hash: &str,
        effects: &Effects,
    ) -> StoreResult<()> {
        write_transaction!(self, |conn| identity::create_agent(
            conn, workspace, agent, token_hash, effects
        ))
    }

    async fn update_agent(
        &self,
        workspace: &str,
        agent: &Agent,
        effects: &Effects,
    ) -> StoreResult<()> {
        write_transaction!(self, |conn| identity::update_agent(
            conn, workspace, agent, effects
        ))
    }

    async fn get_agent(&self, workspace: &str, id: &str) -> StoreResult<Option<Agent>> {
        identity::find_agent(&self.pool, workspace, AgentKey::Id, id).await
    }

    async fn agent_by_name(&self, workspace: &str, name: &str) -> StoreResult<Option<Agent>> {
        identity::find_agent(&self.pool, workspace, AgentKey::Name, name).await
    }

    async fn list_agents(&self, workspace: &str) -> StoreResult<Vec<Agent>> {
        identity::list_agents(&self.pool, workspace).await
    }

    async fn principal_for_token(&self, token_hash: &str) -> StoreResult<Option<Principal>> {
        identity::principal_for_token(&self.pool, token_hash).await
    }

    async fn put_policy(
        &self,
        workspace: &str,
        policy: &PolicyInfo,
        effects: &Effects,
        cancel_reason: &str,
        on_cancel: &(dyn for<'a> Fn(&'a Approval) -> Effects + Sync),
    ) -> StoreResult<Vec<Approval>> {
        write_transaction!(self, |conn| policy::put_policy(
            conn,
            workspace,
            policy,
            effects,
            cancel_reason,
            on_cancel
        ))
    }

    async fn current_policy(&self, workspace: &str) -> StoreResult<Option<PolicyInfo>> {
        policy::current_policy(&self.pool, workspace).await
    }

    async fn current_policies(&self) -> StoreResult<Vec<(String, PolicyInfo)>> {
        policy::current_policies(&self.pool).await
    }

    async fn create_session(&self, workspace: &str, session: &Session) -> StoreResult<()> {
        write_transaction!(self, |conn| identity::create_session(
            conn, workspace, session
        ))
    }

    async fn session_by_external(
        &self,
        workspace: &str,
        agent_id: &str,
        external_id: &str,
    ) -> StoreResult<Option<Session>> {
        identity::session_by_external(&self.pool, workspace, agent_id, external_id).await
    }

    async fn get_session(&self, workspace: &str, id: &str) -> StoreResult<Option<Session>> {
        identity::get_session(&self.pool, workspace, id).await
    }

    async fn record_call(
        &self,
        workspace: &str,
        call: &NewCall,
        effects: &Effects,
    ) -> StoreResult<()> {
        if call.approval.is_none() {
            // Nothing to check against the policy in force: batched with the calls
            // recorded beside it.
            return self.batcher.record_call(workspace, call, effects).await;
        }
        write_transaction!(self, |conn| calls::record_call(
            conn, workspace, call, effects
        ))
    }

    async fn get_call(&self, workspace: &str, id: &str) -> StoreResult<Option<Call>> {
        calls::fetch_call(&self.pool, workspace, id).await
    }

    async fn get_approval(&self, workspace: &str, id: &str) -> StoreResult<Option<Approval>> {
        calls::fetch_approval(&self.pool, workspace, id).await
    }

    async fn list_approvals(
        &self,
        workspace: &str,
        filter: &ApprovalFilter,
    ) -> StoreResult<Vec<Approval>> {
        calls::list_approvals(&self.pool, workspace, filter).await
    }

    async fn decide(
        &self,
        workspace: &str,
        decision: &Decision,
        effects: &Effects,
    ) -> Result<Decided, DecideError> {
        write_transaction!(self, |conn| decide::decide(
            conn, workspace, decision, effects
        ))
    }

    async fn redeem(
        &self,
        workspace: &str,
        call_id: &str,
        at: Timestamp,
        effects: &Effects,
    ) -> Result<Grant, RedeemError> {
        write_transaction!(self, |conn| grants::redeem(
            conn, workspace, call_id, at, effects
        ))
    }

    async fn expire_due(
        &self,
        now: Timestamp,
        limit: u32,
        on_expire: &(dyn for<'a> Fn(&'a Approval) -> Effects + Sync),
    ) -> StoreResult<Vec<(String, Approval)>> {
        write_transaction!(self, |conn| expiry::expire_due(conn, now, limit, on_expire))
    }

    async fn next_deadline(&self) -> StoreResult<Option<Timestamp>> {
        expiry::next_deadline(&self.pool).await
    }

    async fn create_standing_rule(
        &self,
        workspace: &str,
        rule: &StandingRule,
        effects: &Effects,
    ) -> StoreResult<(StandingRule, bool)> {
        write_transaction!(self, |conn| rules::create_standing_rule(
            conn, workspace, rule, effects
        ))
    }

    async fn revoke_standing_rule(
        &self,
        workspace: &str,
        id: &str,
        at: Timestamp,
        effects: &Effects,
    ) -> StoreResult<Option<StandingRule>> {
        write_transaction!(self, |conn| rules::revoke_standing_rule(
            conn, workspace, id, at, effects
        ))
    }

    async fn list_standing_rules(&self, workspace: &str) -> StoreResult<Vec<StandingRule>> {
        rules::list_standing_rules(&self.pool, workspace).await
    }

    async fn live_standing_rules(
        &self,
        workspace: &str,
        scopes: &[(RuleScope, String)],
        now: Timestamp,
    ) -> StoreResult<Vec<StandingRule>> {
        rules::live_standing_rules(&self.pool, workspace, scopes, now).await
    }

    async fn cancel_approval(
        &self,
        workspace: &str,
        approval_id: &str,
        at: Timestamp,
        reason: &str,
        effects: &Effects,
    ) -> Result<Approval, DecideError> {
        write_transaction!(self, |conn| runs::cancel_approval(
            conn,
            workspace,
            approval_id,
            at,
            reason,
            effects
        ))
    }

    async fn start_run(
        &self,
        workspace: &str,
        run: &Run,
        lease: &Lease,
        update: &RunUpdate,
    ) -> StoreResult<Vec<RunEvent>> {
        write_transaction!(self, |conn| runs::start_run(
            conn, workspace, run, lease, update
        ))
    }

    async fn update_run(
        &self,
        workspace: &str,
        run_id: &str,
        owner: &str,
        update: &RunUpdate,
    ) -> StoreResult<Vec<RunEvent>> {
        write_transaction!(self, |conn| runs::update_run(
            conn, workspace, run_id, owner, update
        ))
    }

    async fn redeem_for_run(
        &self,
        workspace: &str,
        call_id: &str,
        at: Timestamp,
        effects: &Effects,
        outbox: Option<&OutboxItem>,
        run_id: &str,
        owner: &str,
        update: &RunUpdate,
    ) -> Result<Grant, RedeemError> {
        write_transaction!(self, |conn| runs::redeem_for_run(
            conn, workspace, call_id, at, effects, outbox, run_id, owner, update
        ))
    }

    async fn claim_run(
        &self,
        workspace: &str,
        run_id: &str,
        now: Timestamp,
        lease: &Lease,
        update: &RunUpdate,
    ) -> StoreResult<Option<Run>> {
        write_transaction!(self, |conn| runs::claim_run(
            conn, workspace, run_id, now, lease, update
        ))
    }

    async fn cancel_run(
        &self,
        workspace: &str,
        run_id: &str,
        update: &RunUpdate,
    ) -> StoreResult<Option<Run>> {
        write_transaction!(self, |conn| runs::cancel_run(
            conn, workspace, run_id, update
        ))
    }

    async fn stalled_runs(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<(String, String)>> {
        runs::stalled_runs(&self.pool, now, limit).await
    }

    async fn get_run(&self, workspace: &str, id: &str) -> StoreResult<Option<Run>> {
        runs::fetch_run(&self.pool, workspace, id).await
    }

    async fn session_runs(&self, workspace: &str, session_id: &str) -> StoreResult<Vec<Run>> {
        runs::session_runs(&self.pool, workspace, session_id).await
    }

    async fn run_events_after(
        &self,
        workspace: &str,
        run_id: &str,
        after: u64,
        limit: u32,
    ) -> StoreResult<Vec<RunEvent>> {
        runs::run_events_after(&self.pool, workspace, run_id, after, limit).await
    }

    async fn run_steps(&self, workspace: &str, run_id: &str) -> StoreResult<Vec<StoredStep>> {
        runs::run_steps(&self.pool, workspace, run_id).await
    }

    async fn run_of_call(&self, workspace: &str, call_id: &str) -> StoreResult<Option<String>> {
        runs::run_of_call(&self.pool, workspace, call_id).await
    }

    async fn session_messages(
        &self,
        workspace: &str,
        session_id: &str,
    ) -> StoreResult<Vec<Message>> {
        runs::session_messages(&self.pool, workspace, session_id).await
    }

    async fn list_outbox(&self, workspace: &str, limit: u32) -> StoreResult<Vec<OutboxItem>> {
        runs::list_outbox(&self.pool, workspace, limit).await
    }

    async fn outbox_due(
        &self,
        now: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<(String, OutboxItem)>> {
        runs::outbox_due(&self.pool, now, limit).await
    }

    async fn claim_outbox(
        &self,
        workspace: &str,
        id: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool> {
        write_transaction!(self, |conn| runs::claim_outbox(
            conn, workspace, id, now, until
        ))
    }

    async fn outbox_attempt(
        &self,
        workspace: &str,
        id: &str,
        at: Timestamp,
        error: Option<&str>,
        retry_at: Option<Timestamp>,
    ) -> StoreResult<()> {
        write_transaction!(self, |conn| runs::outbox_attempt(
            conn, workspace, id, at, error, retry_at
        ))
    }

    async fn create_task(
        &self,
        workspace: &str,
        task: &Task,
        rules: &[StandingRule],
        effects: &Effects,
    ) -> StoreResult<()> {
        write_transaction!(self, |conn| tasks::create_task(
            conn, workspace, task, rules, effects
        ))
    }

    async fn get_task(&self, workspace: &str, id: &str) -> StoreResult<Option<Task>> {
        tasks::get_task(&self.pool, workspace, id).await
    }

    async fn list_tasks(&self, workspace: &str) -> StoreResult<Vec<Task>> {
        tasks::list_tasks(&self.pool, workspace).await
    }

    async fn update_task(
        &self,
        workspace: &str,
        task: &Task,
        revoke_rules_at: Option<Timestamp>,
        effects: &Effects,
    ) -> StoreResult<()> {
        write_transaction!(self, |conn| tasks::update_task(
            conn,
            workspace,
            task,
            revoke_rules_at,
            effects
        ))
    }

    async fn due_tasks(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<(String, Task)>> {
        tasks::due_tasks(&self.pool, now, limit).await
    }

    async fn dispatch_task(
        &self,
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
        write_transaction!(self, |conn| tasks::dispatch_task(
            conn,
            workspace,
            task_id,
            now,
            manual,
            next_run_at,
            session,
            run,
            lease,
            update
        ))
    }

    async fn skip_task_tick(
        &self,
        workspace: &str,
        task_id: &str,
        now: Timestamp,
        next_run_at: Option<Timestamp>,
    ) -> StoreResult<bool> {
        write_transaction!(self, |conn| tasks::skip_task_tick(
            conn,
            workspace,
            task_id,
            now,
            next_run_at
        ))
    }

    async fn audit_after(
        &self,
        workspace: &str,
        after: u64,
        limit: u32,
    ) -> StoreResult<Vec<AuditRecord>> {
        audit::audit_after(&self.pool, workspace, after, limit).await
    }

    async fn audit_rows_after(
        &self,
        workspace: &str,
        after: u64,
        limit: u32,
    ) -> StoreResult<crate::AuditRows> {
        audit::audit_rows_after(&self.pool, workspace, after, limit).await
    }

    async fn events_after(
        &self,
        workspace: &str,
        after: u64,
        limit: u32,
    ) -> StoreResult<Vec<WorkspaceEvent>> {
        audit::events_after(&self.pool, workspace, after, limit).await
    }

    async fn last_event_id(&self, workspace: &str) -> StoreResult<u64> {
        audit::last_event_id(&self.pool, workspace).await
    }

    async fn create_web_session(
        &self,
        workspace: &str,
        session: &WebSession,
        effects: &Effects,
    ) -> StoreResult<()> {
        write_transaction!(self, |conn| web::create_web_session(
            conn, workspace, session, effects
        ))
    }

    async fn web_session(
        &self,
        cookie_hash: &str,
        now: Timestamp,
    ) -> StoreResult<Option<(WebSession, Principal)>> {
        web::web_session(&self.pool, cookie_hash, now).await
    }

    async fn delete_web_session(
        &self,
        workspace: &str,
        cookie_hash: &str,
        effects: &Effects,
    ) -> StoreResult<bool> {
        write_transaction!(self, |conn| web::delete_web_session(
            conn,
            workspace,
            cookie_hash,
            effects
        ))
    }

    async fn policy_versions(&self, workspace: &str, limit: u32) -> StoreResult<Vec<PolicyInfo>> {
        web::policy_versions(&self.pool, workspace, limit).await
    }

    async fn listen(&self) -> StoreResult<Option<tokio::sync::mpsc::Receiver<Change>>> {
        listen::listen(&self.pool).await.map(Some)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// The per-connection settings durability rests on (G7): they are not visible from
    /// another connection, so they are checked on the store's own.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connections_commit_synchronously_with_a_statement_timeout() {
        let url = airlock_pgtest::fresh_database().await;
        let options = PgOptions {
            statement_timeout: Duration::from_millis(1234),
            ..PgOptions::default()
        };
        let store = PostgresStore::connect(&url, options).await.unwrap();
        let mut conn = store.pool.acquire().await.unwrap();
        for (setting, expected) in [
            ("synchronous_commit", "on"),
            ("statement_timeout", "1234ms"),
            ("transaction_isolation", "read committed"),
        ] {
            let value: String = sqlx::query_scalar(&format!("SHOW {setting}"))
                .fetch_one(&mut *conn)
                .await
                .unwrap();
            assert_eq!(value, expected, "{setting}");
        }
        drop(conn);
        store.close().await;
    }
}
