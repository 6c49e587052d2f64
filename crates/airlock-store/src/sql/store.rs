//! [`Store`] for either database: each method is one operation of the modules beside
//! this one, run as a read on the backend's read pool (`Backend::reads`) or as one write
//! transaction (`write_transaction!`, which each backend defines: SQLite's writer with its
//! group commit, a pooled PostgreSQL transaction).

use super::identity::AgentKey;
use super::{
    audit, calls, decide, expiry, grants, hook_reads, identity, outcomes, pause, policy, retries,
    rules, runs, tasks, web, Backend,
};
use crate::{
    ApprovalFilter, Change, ClosingApprovals, DecideError, Decided, Decision, Effects, Grant,
    HookFound, HookReads, Lease, NewCall, OutcomeRecorded, Principal, RedeemError, RedeemRequest,
    Redemption, RunUpdate, SettleError, Store, StoreResult, StoredStep, WebSession, Workspace,
};
use airlock_protocol::{
    Agent, Approval, AuditRecord, Call, CallOutcome, Message, OutboxItem, PolicyInfo,
    Reconciliation, RuleScope, Run, RunEvent, Session, StandingRule, Task, User, WorkspaceEvent,
};
use async_trait::async_trait;
use jiff::Timestamp;

#[async_trait]
impl Store for Backend {
    async fn workspace_by_name(&self, name: &str) -> StoreResult<Option<Workspace>> {
        identity::workspace_by_name(self.reads(), name).await
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
        identity::list_users(self.reads(), workspace).await
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
        identity::find_agent(self.reads(), workspace, AgentKey::Id, id).await
    }

    async fn agent_by_name(&self, workspace: &str, name: &str) -> StoreResult<Option<Agent>> {
        identity::find_agent(self.reads(), workspace, AgentKey::Name, name).await
    }

    async fn list_agents(&self, workspace: &str) -> StoreResult<Vec<Agent>> {
        identity::list_agents(self.reads(), workspace).await
    }

    async fn principal_for_token(&self, token_hash: &str) -> StoreResult<Option<Principal>> {
        identity::principal_for_token(self.reads(), token_hash).await
    }

    async fn revoke_tokens(
        &self,
        workspace: &str,
        subject_id: &str,
        at: Timestamp,
        effects: &Effects,
    ) -> StoreResult<u64> {
        write_transaction!(self, |conn| identity::revoke_tokens(
            conn, workspace, subject_id, at, effects
        ))
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
        policy::current_policy(self.reads(), workspace).await
    }

    async fn current_policies(&self) -> StoreResult<Vec<(String, PolicyInfo)>> {
        policy::current_policies(self.reads()).await
    }

    async fn create_session(&self, workspace: &str, session: &Session) -> StoreResult<()> {
        write_transaction!(self, |conn| identity::create_session(
            conn, workspace, session
        ))
    }

    async fn set_session_mode(
        &self,
        workspace: &str,
        session_id: &str,
        mode: Option<airlock_protocol::Mode>,
        effects: &Effects,
    ) -> StoreResult<bool> {
        write_transaction!(self, |conn| identity::set_session_mode(
            conn, workspace, session_id, mode, effects
        ))
    }

    async fn session_by_external(
        &self,
        workspace: &str,
        agent_id: &str,
        external_id: &str,
    ) -> StoreResult<Option<Session>> {
        identity::session_by_external(self.reads(), workspace, agent_id, external_id).await
    }

    async fn get_session(&self, workspace: &str, id: &str) -> StoreResult<Option<Session>> {
        identity::get_session(self.reads(), workspace, id).await
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
            let write = calls::CallWrite {
                workspace,
                call,
                effects,
                redeemed: None,
            };
            return self.record_batched(write).await;
        }
        write_transaction!(self, |conn| calls::record_call(
            conn, workspace, call, effects
        ))
    }

    async fn record_call_redeemed(
        &self,
        workspace: &str,
        call: &NewCall,
        request: &RedeemRequest<'_>,
        hold: Option<&str>,
        effects: &Effects,
    ) -> StoreResult<()> {
        if call.approval.is_some() || call.grant.is_none() {
            return Err(crate::StoreError::Conflict(
                "only an allowed call (a grant, no approval) is redeemed as it is recorded".into(),
            ));
        }
        let redeemed = calls::Redeemed {
            at: request.at,
            key: request.key.map(str::to_owned),
            outcome_due: request.outcome_due,
            hold: hold.map(str::to_owned),
        };
        // Batched like any allowed call: the grant's consumption rides in the same
        // multi-row statements and the same commit.
        self.record_batched(calls::CallWrite {
            workspace,
            call,
            effects,
            redeemed: Some(&redeemed),
        })
        .await
    }

    fn commits(&self) -> u64 {
        self.committed()
    }

    async fn get_call(&self, workspace: &str, id: &str) -> StoreResult<Option<Call>> {
        calls::fetch_call(self.reads(), workspace, id).await
    }

    async fn get_approval(&self, workspace: &str, id: &str) -> StoreResult<Option<Approval>> {
        calls::fetch_approval(self.reads(), workspace, id).await
    }

    async fn list_approvals(
        &self,
        workspace: &str,
        filter: &ApprovalFilter,
    ) -> StoreResult<Vec<Approval>> {
        calls::list_approvals(self.reads(), workspace, filter).await
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
        let request = RedeemRequest {
            at,
            key: None,
            outcome_due: None,
        };
        self.redeem_keyed(workspace, call_id, &request, effects)
            .await
            .map(|redemption| redemption.grant)
    }

    async fn redeem_keyed(
        &self,
        workspace: &str,
        call_id: &str,
        request: &RedeemRequest<'_>,
        effects: &Effects,
    ) -> Result<Redemption, RedeemError> {
        let outcome: Result<Redemption, RedeemError> =
            write_transaction!(self, |conn| grants::redeem(
                conn, workspace, call_id, request, effects
            ));
        match outcome {
            Err(RedeemError::Replay(grant, arguments)) => Ok(Redemption {
                grant,
                replayed: true,
                arguments,
            }),
            other => other,
        }
    }

    async fn record_outcome(
        &self,
        workspace: &str,
        call_id: &str,
        agent_id: &str,
        outcome: &CallOutcome,
        effects: &Effects,
    ) -> Result<OutcomeRecorded, SettleError> {
        write_transaction!(self, |conn| outcomes::record_outcome(
            conn, workspace, call_id, agent_id, outcome, effects
        ))
    }

    async fn hold_for_retry(&self, workspace: &str, call_id: &str, key: &str) -> StoreResult<()> {
        write_transaction!(self, |conn| retries::hold(conn, workspace, call_id, key))
    }

    async fn held_for_retry(&self, workspace: &str, key: &str) -> StoreResult<Option<Call>> {
        retries::held(self.reads(), workspace, key).await
    }

    async fn release_retry(
        &self,
        workspace: &str,
        call_id: &str,
        key: &str,
        effects: &Effects,
    ) -> StoreResult<bool> {
        write_transaction!(self, |conn| retries::release(
            conn, workspace, call_id, key, effects
        ))
    }

    async fn mark_ambiguous(
        &self,
        now: Timestamp,
        limit: u32,
        on_mark: &(dyn for<'a> Fn(&'a str, &'a Call) -> Effects + Sync),
    ) -> StoreResult<Vec<(String, Call)>> {
        write_transaction!(self, |conn| outcomes::mark_ambiguous(
            conn, now, limit, on_mark
        ))
    }

    async fn next_outcome_due(&self) -> StoreResult<Option<Timestamp>> {
        outcomes::next_outcome_due(self.reads()).await
    }

    async fn reconcile(
        &self,
        workspace: &str,
        call_id: &str,
        reconciliation: &Reconciliation,
        effects: &Effects,
    ) -> Result<Call, SettleError> {
        write_transaction!(self, |conn| outcomes::reconcile(
            conn,
            workspace,
            call_id,
            reconciliation,
            effects
        ))
    }

    async fn list_ambiguous(&self, workspace: &str, limit: u32) -> StoreResult<Vec<Call>> {
        outcomes::list_ambiguous(self.reads(), workspace, limit).await
    }

    async fn hook_reads(&self, workspace: &str, reads: &HookReads<'_>) -> StoreResult<HookFound> {
        hook_reads::hook_reads(self.reads(), workspace, reads).await
    }

    async fn call_redeemed_under(
        &self,
        workspace: &str,
        agent_id: &str,
        key: &str,
    ) -> StoreResult<Option<String>> {
        outcomes::call_redeemed_under(self.reads(), workspace, agent_id, key).await
    }

    async fn awaiting_outcome(
        &self,
        workspace: &str,
        agent_id: &str,
        tool: &str,
        arguments: &serde_json::Value,
    ) -> StoreResult<Option<String>> {
        let arguments = crate::codec::json_text(arguments)?;
        outcomes::awaiting_outcome(self.reads(), workspace, agent_id, tool, &arguments).await
    }

    async fn ambiguous_twin(
        &self,
        workspace: &str,
        agent_id: &str,
        tool: &str,
        arguments: &serde_json::Value,
    ) -> StoreResult<Option<String>> {
        let arguments = crate::codec::json_text(arguments)?;
        outcomes::ambiguous_twin(self.reads(), workspace, agent_id, tool, &arguments).await
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
        expiry::next_deadline(self.reads()).await
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
        rules::list_standing_rules(self.reads(), workspace).await
    }

    async fn live_standing_rules(
        &self,
        workspace: &str,
        scopes: &[(RuleScope, String)],
        now: Timestamp,
    ) -> StoreResult<Vec<StandingRule>> {
        rules::live_standing_rules(self.reads(), workspace, scopes, now).await
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
        closing: &ClosingApprovals<'_>,
    ) -> StoreResult<Option<(Run, Vec<Approval>)>> {
        write_transaction!(self, |conn| runs::cancel_run(
            conn, workspace, run_id, update, closing
        ))
    }

    async fn pause_run(
        &self,
        workspace: &str,
        run_id: &str,
        update: &RunUpdate,
        closing: &ClosingApprovals<'_>,
    ) -> StoreResult<Option<(Run, Vec<Approval>)>> {
        write_transaction!(self, |conn| pause::pause_run(
            conn, workspace, run_id, update, closing
        ))
    }

    async fn resume_run(
        &self,
        workspace: &str,
        run_id: &str,
        now: Timestamp,
        update: &RunUpdate,
    ) -> StoreResult<Option<Run>> {
        write_transaction!(self, |conn| pause::resume_run(
            conn, workspace, run_id, now, update
        ))
    }

    async fn release_paused(
        &self,
        workspace: &str,
        run_id: &str,
        owner: &str,
    ) -> StoreResult<bool> {
        write_transaction!(self, |conn| pause::release_paused(
            conn, workspace, run_id, owner
        ))
    }

    async fn stalled_runs(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<(String, String)>> {
        runs::stalled_runs(self.reads(), now, limit).await
    }

    async fn get_run(&self, workspace: &str, id: &str) -> StoreResult<Option<Run>> {
        runs::fetch_run(self.reads(), workspace, id).await
    }

    async fn session_runs(&self, workspace: &str, session_id: &str) -> StoreResult<Vec<Run>> {
        runs::session_runs(self.reads(), workspace, session_id).await
    }

    async fn run_events_after(
        &self,
        workspace: &str,
        run_id: &str,
        after: u64,
        limit: u32,
    ) -> StoreResult<Vec<RunEvent>> {
        runs::run_events_after(self.reads(), workspace, run_id, after, limit).await
    }

    async fn run_steps(&self, workspace: &str, run_id: &str) -> StoreResult<Vec<StoredStep>> {
        runs::run_steps(self.reads(), workspace, run_id).await
    }

    async fn run_of_call(&self, workspace: &str, call_id: &str) -> StoreResult<Option<String>> {
        runs::run_of_call(self.reads(), workspace, call_id).await
    }

    async fn session_messages(
        &self,
        workspace: &str,
        session_id: &str,
    ) -> StoreResult<Vec<Message>> {
        runs::session_messages(self.reads(), workspace, session_id).await
    }

    async fn list_outbox(&self, workspace: &str, limit: u32) -> StoreResult<Vec<OutboxItem>> {
        runs::list_outbox(self.reads(), workspace, limit).await
    }

    async fn outbox_due(
        &self,
        now: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<(String, OutboxItem)>> {
        runs::outbox_due(self.reads(), now, limit).await
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
        tasks::get_task(self.reads(), workspace, id).await
    }

    async fn list_tasks(&self, workspace: &str) -> StoreResult<Vec<Task>> {
        tasks::list_tasks(self.reads(), workspace).await
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
        tasks::due_tasks(self.reads(), now, limit).await
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
        audit::audit_after(self.reads(), workspace, after, limit).await
    }

    async fn audit_rows_after(
        &self,
        workspace: &str,
        after: u64,
        limit: u32,
    ) -> StoreResult<crate::AuditRows> {
        audit::audit_rows_after(self.reads(), workspace, after, limit).await
    }

    async fn events_after(
        &self,
        workspace: &str,
        after: u64,
        limit: u32,
    ) -> StoreResult<Vec<WorkspaceEvent>> {
        audit::events_after(self.reads(), workspace, after, limit).await
    }

    async fn last_event_id(&self, workspace: &str) -> StoreResult<u64> {
        audit::last_event_id(self.reads(), workspace).await
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
        web::web_session(self.reads(), cookie_hash, now).await
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
        web::policy_versions(self.reads(), workspace, limit).await
    }

    async fn listen(&self) -> StoreResult<Option<tokio::sync::mpsc::Receiver<Change>>> {
        self.changes().await
    }

    fn single_writer(&self) -> bool {
        super::dialect::SINGLE_WRITER
    }
}
