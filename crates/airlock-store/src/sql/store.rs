//! [`Store`] for either database: the operations listed in `lib.rs`
//! (`store_operations!`), each run as its entry says (`operations.rs`): a read on the
//! backend's read pool (`Backend::reads`), one write transaction (`write_transaction!`,
//! which each backend defines: SQLite's writer with its group commit, a pooled PostgreSQL
//! transaction), or one of the functions below, for the operations that choose their own
//! way.

use super::identity::AgentKey;
use super::{
    audit, calls, decide, expiry, grants, hook_reads, identity, outcomes, pages, pause, policy,
    retries, rules, runs, tasks, web, Backend,
};
use crate::codec::json_text;
use crate::{
    ApprovalFilter, AuditRows, Change, ClosingApprovals, DecideError, Decided, Decision, Effects,
    Grant, HookFound, HookReads, Lease, NewCall, OutcomeRecorded, Principal, RedeemError,
    RedeemRequest, Redemption, RunUpdate, SettleError, Store, StoreError, StoreResult, StoredStep,
    TwinFound, WebSession, Workspace,
};
use airlock_protocol::{
    Agent, Approval, AuditRecord, Call, CallOutcome, Message, OutboxItem, PolicyInfo,
    Reconciliation, Run, RunEvent, Session, StandingRule, Task, User, WorkspaceEvent,
};
use jiff::Timestamp;

store_operations!(implement [impl Store for Backend] {
    fn commits(&self) -> u64 {
        self.committed()
    }

    async fn listen(&self) -> StoreResult<Option<tokio::sync::mpsc::Receiver<Change>>> {
        self.changes().await
    }

    fn single_writer(&self) -> bool {
        super::dialect::SINGLE_WRITER
    }

    fn long_reads_at_once(&self) -> usize {
        self.long_reads()
    }

    fn chain_reader(&self) -> StoreResult<Option<Box<dyn crate::ChainReader>>> {
        self.open_chain_reader()
    }
});

/// [`Store::record_call`]: a call with nothing to check against the policy in force (no
/// approval) is batched with the calls recorded beside it (its data moves to the batch,
/// uncopied); one with an approval is its own transaction.
async fn record_call(
    store: &Backend,
    workspace: &str,
    call: NewCall,
    effects: Effects,
) -> StoreResult<()> {
    if call.approval.is_none() {
        let batched = calls::Batched {
            workspace: workspace.to_owned(),
            call,
            effects,
            redeemed: None,
        };
        return store.record_batched(batched).await;
    }
    write_transaction!(store, |conn| calls::record_call(
        conn, workspace, &call, &effects
    ))
}

/// [`Store::record_call_redeemed`], batched like any allowed call: the grant's
/// consumption rides in the same multi-row statements and the same commit.
async fn record_call_redeemed(
    store: &Backend,
    workspace: &str,
    call: NewCall,
    request: &RedeemRequest<'_>,
    hold: Option<&str>,
    effects: Effects,
) -> StoreResult<()> {
    if call.approval.is_some() || call.grant.is_none() {
        return Err(StoreError::Conflict(
            "only an allowed call (a grant, no approval) is redeemed as it is recorded".into(),
        ));
    }
    let redeemed = calls::Redeemed {
        at: request.at,
        key: request.key.map(str::to_owned),
        outcome_due: request.outcome_due,
        hold: hold.map(str::to_owned),
    };
    store
        .record_batched(calls::Batched {
            workspace: workspace.to_owned(),
            call,
            effects,
            redeemed: Some(redeemed),
        })
        .await
}

/// [`Store::redeem`]: a keyed redeem without a key or an outcome deadline.
async fn redeem(
    store: &Backend,
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
    redeem_keyed(store, workspace, call_id, &request, effects)
        .await
        .map(|redemption| redemption.grant)
}

/// [`Store::redeem_keyed`]: a replay is refused inside the transaction (so that it
/// writes nothing) and answered here as the grant it replays.
async fn redeem_keyed(
    store: &Backend,
    workspace: &str,
    call_id: &str,
    request: &RedeemRequest<'_>,
    effects: &Effects,
) -> Result<Redemption, RedeemError> {
    let outcome: Result<Redemption, RedeemError> = write_transaction!(
        store,
        |conn| grants::redeem(conn, workspace, call_id, request, effects)
    );
    match outcome {
        Err(RedeemError::Replay(grant, arguments)) => Ok(Redemption {
            grant,
            replayed: true,
            arguments,
        }),
        other => other,
    }
}
