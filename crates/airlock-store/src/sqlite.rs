//! The embedded SQLite backend: one database file, WAL, `synchronous=FULL` (G7).
//!
//! Every write runs on a single writer connection behind an async mutex, so writes are
//! serialised inside the process and SQLite never answers BUSY between our own writers;
//! writes that arrive together share one `BEGIN IMMEDIATE` transaction and one fsync,
//! each in its own savepoint (group commit, `writer`); a small pool of `query_only` connections serves
//! the plain reads, which WAL lets run beside the writer. Reads that a write depends on
//! (the approval a decision checks, the chain head an audit append extends) are made
//! inside the write transaction, on the writer.
//!
//! - `codec`: column encodings and error mapping.
//! - `audit`: appending effects (hash chain, events) and reading them back.
//! - `identity`: workspaces, users, agents, tokens, sessions.
//! - `policy`: policy versions and the cancellation of stale approvals.
//! - `calls`: call, approval and grant rows.
//! - `decide`, `grants`, `expiry`: the three operations that end a wait.
//! - `rules`: standing rules.
//! - `web`: the browser inbox's sessions (cookie hash → principal).
//! - `runs`: the built-in runtime's runs, journal, steps, messages and outbox.
//! - `notify`: notifications of pending approvals, used links, server secrets.
//! - `writer`: the writer connection and its group commit.

mod audit;
mod calls;
mod codec;
mod decide;
mod expiry;
mod grants;
mod identity;
mod policy;
mod rules;
mod runs;
mod tasks;
mod web;
mod writer;

use crate::{
    ApprovalFilter, DecideError, Decided, Decision, Effects, Grant, Lease, NewCall, Principal,
    RedeemError, RunUpdate, Store, StoreError, StoreResult, StoredStep, WebSession, Workspace,
};
use airlock_protocol::{
    Agent, Approval, AuditRecord, Call, Message, OutboxItem, PolicyInfo, RuleScope, Run, RunEvent,
    Session, StandingRule, Task, User, WorkspaceEvent,
};
use async_trait::async_trait;
use codec::database;
use identity::AgentKey;
use jiff::Timestamp;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;
use std::path::Path;
use std::time::Duration;

/// The schema, embedded at build time and brought up to date by [`SqliteStore::open`].
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");

/// How long a connection waits for a lock held by another process (another airlock
/// opening the same file, a backup) before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Read connections. Reads are short; a few cover a 2-core machine.
const READERS: u32 = 4;

/// The SQLite store. Cheap to share behind an `Arc`.
pub struct SqliteStore {
    /// INVARIANT: every write runs as an operation of this writer (`write_transaction!`).
    writer: writer::Writer,
    readers: SqlitePool,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating the file and its folder if missing) and migrates the database at
    /// `path`.
    pub async fn open(path: &Path) -> StoreResult<SqliteStore> {
        if let Some(parent) = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            tokio::fs::create_dir_all(parent).await.map_err(|error| {
                StoreError::Database(format!("cannot create {}: {error}", parent.display()))
            })?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .foreign_keys(true)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(BUSY_TIMEOUT);
        // The writer creates the file and switches it to WAL (a persistent setting) before
        // any reader connects. It is opened through a one-connection pool only because
        // migrating through `&Pool` keeps `open`'s future `Send` (through `&mut
        // SqliteConnection` it is not), then detached from it.
        let bootstrap = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(
                options
                    .clone()
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    // Each write runs in a savepoint (group commit); SQLite journals the
                    // pages a savepoint changes, in memory rather than in a temp file.
                    .pragma("temp_store", "MEMORY"),
            )
            .await
            .map_err(database)?;
        MIGRATOR
            .run(&bootstrap)
            .await
            .map_err(|error| StoreError::Database(format!("migrating the schema: {error}")))?;
        let writer = bootstrap.acquire().await.map_err(database)?.detach();
        bootstrap.close().await;
        let readers = SqlitePoolOptions::new()
            .max_connections(READERS)
            .connect_with(options.pragma("query_only", "ON"))
            .await
            .map_err(database)?;
        Ok(SqliteStore {
            writer: writer::Writer::new(writer),
            readers,
        })
    }

    /// Closes every connection, waiting for the writer to finish its transaction.
    pub async fn close(self) -> StoreResult<()> {
        self.readers.close().await;
        self.writer.close().await
    }
}

/// Runs `$body` (an expression using `$conn: &mut SqliteConnection`, returning a
/// `Result`) as one write operation on the writer (`writer.rs`): it is committed, in a
/// group commit with whatever runs beside it, when it returns `Ok` — and the macro
/// returns only after that commit — and rolled back to nothing when it returns `Err`. If
/// the caller's future is dropped midway, its writes are rolled back before the next
/// operation runs.
macro_rules! write_transaction {
    ($store:expr, |$conn:ident| $body:expr) => {{
        let mut operation = $store.writer.begin().await?;
        let outcome = match operation.conn() {
            Ok($conn) => $body.await,
            Err(error) => Err(error.into()),
        };
        operation.finish(outcome).await
    }};
}

// Declared after `write_transaction!`, which it uses.
mod notify;

#[async_trait]
impl Store for SqliteStore {
    async fn workspace_by_name(&self, name: &str) -> StoreResult<Option<Workspace>> {
        identity::workspace_by_name(&self.readers, name).await
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
        identity::list_users(&self.readers, workspace).await
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
        identity::find_agent(&self.readers, workspace, AgentKey::Id, id).await
    }

    async fn agent_by_name(&self, workspace: &str, name: &str) -> StoreResult<Option<Agent>> {
        identity::find_agent(&self.readers, workspace, AgentKey::Name, name).await
    }

    async fn list_agents(&self, workspace: &str) -> StoreResult<Vec<Agent>> {
        identity::list_agents(&self.readers, workspace).await
    }

    async fn principal_for_token(&self, token_hash: &str) -> StoreResult<Option<Principal>> {
        identity::principal_for_token(&self.readers, token_hash).await
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
        policy::current_policy(&self.readers, workspace).await
    }

    async fn current_policies(&self) -> StoreResult<Vec<(String, PolicyInfo)>> {
        policy::current_policies(&self.readers).await
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
        identity::session_by_external(&self.readers, workspace, agent_id, external_id).await
    }

    async fn get_session(&self, workspace: &str, id: &str) -> StoreResult<Option<Session>> {
        identity::get_session(&self.readers, workspace, id).await
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
            return self.writer.record_call(workspace, call, effects).await;
        }
        write_transaction!(self, |conn| calls::record_call(
            conn, workspace, call, effects
        ))
    }

    async fn get_call(&self, workspace: &str, id: &str) -> StoreResult<Option<Call>> {
        calls::fetch_call(&self.readers, workspace, id).await
    }

    async fn get_approval(&self, workspace: &str, id: &str) -> StoreResult<Option<Approval>> {
        calls::fetch_approval(&self.readers, workspace, id).await
    }

    async fn list_approvals(
        &self,
        workspace: &str,
        filter: &ApprovalFilter,
    ) -> StoreResult<Vec<Approval>> {
        calls::list_approvals(&self.readers, workspace, filter).await
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
        expiry::next_deadline(&self.readers).await
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
        rules::list_standing_rules(&self.readers, workspace).await
    }

    async fn live_standing_rules(
        &self,
        workspace: &str,
        scopes: &[(RuleScope, String)],
        now: Timestamp,
    ) -> StoreResult<Vec<StandingRule>> {
        rules::live_standing_rules(&self.readers, workspace, scopes, now).await
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
        runs::stalled_runs(&self.readers, now, limit).await
    }

    async fn get_run(&self, workspace: &str, id: &str) -> StoreResult<Option<Run>> {
        runs::fetch_run(&self.readers, workspace, id).await
    }

    async fn session_runs(&self, workspace: &str, session_id: &str) -> StoreResult<Vec<Run>> {
        runs::session_runs(&self.readers, workspace, session_id).await
    }

    async fn run_events_after(
        &self,
        workspace: &str,
        run_id: &str,
        after: u64,
        limit: u32,
    ) -> StoreResult<Vec<RunEvent>> {
        runs::run_events_after(&self.readers, workspace, run_id, after, limit).await
    }

    async fn run_steps(&self, workspace: &str, run_id: &str) -> StoreResult<Vec<StoredStep>> {
        runs::run_steps(&self.readers, workspace, run_id).await
    }

    async fn run_of_call(&self, workspace: &str, call_id: &str) -> StoreResult<Option<String>> {
        runs::run_of_call(&self.readers, workspace, call_id).await
    }

    async fn session_messages(
        &self,
        workspace: &str,
        session_id: &str,
    ) -> StoreResult<Vec<Message>> {
        runs::session_messages(&self.readers, workspace, session_id).await
    }

    async fn list_outbox(&self, workspace: &str, limit: u32) -> StoreResult<Vec<OutboxItem>> {
        runs::list_outbox(&self.readers, workspace, limit).await
    }

    async fn outbox_due(
        &self,
        now: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<(String, OutboxItem)>> {
        runs::outbox_due(&self.readers, now, limit).await
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
        tasks::get_task(&self.readers, workspace, id).await
    }

    async fn list_tasks(&self, workspace: &str) -> StoreResult<Vec<Task>> {
        tasks::list_tasks(&self.readers, workspace).await
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
        tasks::due_tasks(&self.readers, now, limit).await
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
        audit::audit_after(&self.readers, workspace, after, limit).await
    }

    async fn audit_rows_after(
        &self,
        workspace: &str,
        after: u64,
        limit: u32,
    ) -> StoreResult<crate::AuditRows> {
        audit::audit_rows_after(&self.readers, workspace, after, limit).await
    }

    async fn events_after(
        &self,
        workspace: &str,
        after: u64,
        limit: u32,
    ) -> StoreResult<Vec<WorkspaceEvent>> {
        audit::events_after(&self.readers, workspace, after, limit).await
    }

    async fn last_event_id(&self, workspace: &str) -> StoreResult<u64> {
        audit::last_event_id(&self.readers, workspace).await
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
        web::web_session(&self.readers, cookie_hash, now).await
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
        web::policy_versions(&self.readers, workspace, limit).await
    }
}

#[cfg(test)]
mod tests;
