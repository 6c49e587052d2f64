//! No approved call silently lost (DESIGN.md §11.8): idempotency keys, the outcome an
//! agent reports after running a call, the sweep that makes a call nobody reported on
//! *ambiguous*, and a person's reconciliation of it.
//!
//! The windows this closes: an answer to a redeem lost after the grant's commit is
//! replayed to a retry under the same key; an execution nobody hears of (the agent died,
//! the tool hung, the outcome report was lost) surfaces as an ambiguous call in the inbox
//! after `outcome_timeout`, once, on one node.

use crate::effects::{audit, event};
use crate::identity::{require_agent, require_role};
use crate::{Gate, GateError};
use airlock_policy::secrets;
use airlock_protocol::events::{
    CallAmbiguousAudit, CallOutcomeAudit, CallOutcomeEvent, CallReconciledAudit,
    CallReconciledEvent,
};
use airlock_protocol::{AuditEvent, WorkspaceEventData};
use airlock_protocol::{
    Call, CallOutcome, DecidedBy, Decision, OutcomeReport, ReconcileRequest, Reconciliation, Role,
    Verdict,
};
use airlock_store::{Effects, Principal, Redemption, Subject};
use serde_json::Value;
use std::time::Duration;

/// The longest `Idempotency-Key` accepted, in bytes.
pub const MAX_IDEMPOTENCY_KEY: usize = 255;

/// The longest outcome `detail` or reconciliation `reason` accepted, in characters.
pub const MAX_DETAIL: usize = 2000;

/// How many calls one ambiguity sweep marks at most (the rest wait for the next sweep).
const BATCH: u32 = 500;

/// An `Idempotency-Key` is 1 to 255 visible ASCII characters: what any client can send in
/// a header unchanged, and small enough to store beside every grant.
pub fn check_idempotency_key(key: &str) -> Result<(), GateError> {
    if key.is_empty() || key.len() > MAX_IDEMPOTENCY_KEY {
        return Err(GateError::Invalid(format!(
            "Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY} characters; this one has {}",
            key.len()
        )));
    }
    if let Some(bad) = key.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(GateError::Invalid(format!(
            "Idempotency-Key must be visible ASCII characters (no spaces or controls); it \
             holds {bad:?}"
        )));
    }
    Ok(())
}

/// Which call a hook's after-the-fact event (`PostToolUse`, `AfterTool`) reports on.
#[derive(Debug, Clone)]
pub struct ReportedCall {
    /// The key its redeem was made under (from the agent's tool-use id), when known.
    pub key: Option<String>,
    /// Else: the newest redeemed call of the agent with this tool and these exact
    /// arguments (redacted here, as they were stored) that has no outcome yet.
    pub tool: String,
    pub arguments: Value,
}

/// The call a replayed hook must be: the same tool, exact arguments and session.
#[derive(Debug, Clone, Copy)]
pub struct SameCall<'a> {
    pub tool: &'a str,
    pub arguments: &'a Value,
    pub session_id: Option<&'a str>,
}

impl Gate {
    /// When a call redeemed at `now` in `workspace` turns ambiguous without an outcome.
    pub(crate) fn outcome_due(&self, workspace: &str, now: jiff::Timestamp) -> jiff::Timestamp {
        let timeout = self
            .inner
            .policies
            .get(workspace)
            .map_or(airlock_policy::DEFAULT_OUTCOME_TIMEOUT, |loaded| {
                loaded.policy.outcome_timeout()
            });
        add(now, timeout)
    }

    /// Records what happened when the call's agent ran it (`POST /v1/calls/{id}/outcome`).
    /// Stored once: the same report again is answered with the call, another refused.
    pub async fn report_outcome(
        &self,
        principal: &Principal,
        call_id: &str,
        report: &OutcomeReport,
    ) -> Result<Call, GateError> {
        let (agent_id, _) = require_agent(principal, "report outcomes")?;
        let detail = clean_text(report.detail.as_deref(), "detail")?;
        let now = self.now();
        let outcome = CallOutcome {
            status: report.status,
            detail,
            reported_at: now,
        };
        let effects = Effects::none()
            .audit(audit(
                now,
                &principal.actor(),
                call_id,
                AuditEvent::CallOutcome(CallOutcomeAudit {
                    call_id: call_id.to_owned(),
                    status: outcome.status,
                    detail: outcome.detail.clone(),
                }),
            ))
            .event(event(
                now,
                WorkspaceEventData::CallOutcome(CallOutcomeEvent {
                    call_id: call_id.to_owned(),
                    status: outcome.status,
                }),
            ));
        let recorded = self
            .store()
            .record_outcome(&principal.workspace, call_id, agent_id, &outcome, &effects)
            .await?;
        if recorded.stored {
            self.poke(&principal.workspace);
        }
        Ok(recorded.call)
    }

    /// The outcome of a call reported by a hook's after-the-fact event. `Ok(None)` when no
    /// redeemed call matches (the tool ran without airlock's grant, e.g. under a policy
    /// that left it to the agent): nothing to record.
    pub async fn report_hook_outcome(
        &self,
        principal: &Principal,
        reported: &ReportedCall,
        report: &OutcomeReport,
    ) -> Result<Option<Call>, GateError> {
        let (agent_id, _) = require_agent(principal, "report outcomes")?;
        let store = self.store();
        let mut call_id = None;
        if let Some(key) = &reported.key {
            check_idempotency_key(key)?;
            call_id = store
                .call_redeemed_under(&principal.workspace, agent_id, key)
                .await?;
        }
        if call_id.is_none() {
            let arguments = secrets::redact(&reported.arguments);
            call_id = store
                .awaiting_outcome(&principal.workspace, agent_id, &reported.tool, &arguments)
                .await?;
        }
        match call_id {
            Some(id) => self.report_outcome(principal, &id, report).await.map(Some),
            None => Ok(None),
        }
    }

    /// The answer a retry under `key` gets when this agent's very call (`same`) was
    /// already redeemed under it (a hook whose first answer was lost): the same grant,
    /// `replayed`. A key met again on a different call (another tool, other arguments,
    /// another session) replays nothing: that is a new call.
    pub async fn replay_for_key(
        &self,
        principal: &Principal,
        key: &str,
        same: &SameCall<'_>,
    ) -> Result<Option<(String, Redemption)>, GateError> {
        let (agent_id, _) = require_agent(principal, "redeem grants")?;
        check_idempotency_key(key)?;
        let Some(call_id) = self
            .store()
            .call_redeemed_under(&principal.workspace, agent_id, key)
            .await?
        else {
            return Ok(None);
        };
        self.replay_of(principal, key, call_id, same).await
    }

    /// [`Gate::replay_for_key`] once the call redeemed under `key` is known (`call_id`,
    /// as `Store::call_redeemed_under` or a hook's lookup found it).
    pub async fn replay_of(
        &self,
        principal: &Principal,
        key: &str,
        call_id: String,
        same: &SameCall<'_>,
    ) -> Result<Option<(String, Redemption)>, GateError> {
        let call = self.get_call(principal, &call_id).await?;
        let redacted = secrets::redact(same.arguments);
        if call.tool != same.tool
            || call.arguments != redacted
            || call.session_id.as_deref() != same.session_id
        {
            return Ok(None);
        }
        let redemption = self.redeem_keyed(principal, &call_id, Some(key)).await?;
        Ok(Some((call_id, redemption)))
    }

    /// Ambiguous calls waiting for a person (the inbox, `airlock approvals`).
    pub async fn ambiguous_calls(&self, principal: &Principal) -> Result<Vec<Call>, GateError> {
        require_role(principal, Role::Viewer, "list ambiguous calls")?;
        Ok(self
            .store()
            .list_ambiguous(&principal.workspace, BATCH)
            .await?)
    }

    /// A person's settling of an ambiguous call (`POST /v1/calls/{id}/reconcile`).
    /// `did_not_run` revives nothing: the grant stays consumed, and the agent's next
    /// identical call is a new call, asked afresh under the policy in force.
    pub async fn reconcile(
        &self,
        principal: &Principal,
        call_id: &str,
        request: &ReconcileRequest,
    ) -> Result<Call, GateError> {
        require_role(principal, Role::Approver, "reconcile calls")?;
        let Subject::User { id: user, .. } = &principal.subject else {
            return Err(GateError::Forbidden("only people reconcile calls".into()));
        };
        let reason = clean_text(request.reason.as_deref(), "reason")?;
        let now = self.now();
        let reconciliation = Reconciliation {
            resolution: request.resolution,
            by: format!("user:{user}"),
            reason,
            at: now,
        };
        let effects = Effects::none()
            .audit(audit(
                now,
                &principal.actor(),
                call_id,
                AuditEvent::CallReconciled(CallReconciledAudit {
                    call_id: call_id.to_owned(),
                    resolution: reconciliation.resolution,
                    reason: reconciliation.reason.clone(),
                }),
            ))
            .event(event(
                now,
                WorkspaceEventData::CallReconciled(CallReconciledEvent {
                    call_id: call_id.to_owned(),
                    resolution: reconciliation.resolution,
                }),
            ));
        let call = self
            .store()
            .reconcile(&principal.workspace, call_id, &reconciliation, &effects)
            .await?;
        self.poke(&principal.workspace);
        Ok(call)
    }

    /// `verdict`, unless an ambiguous call of this agent with exactly this tool and these
    /// redacted arguments waits for a person: then the same call is denied rather than
    /// allowed or asked again blindly, because the first may have run. Once a person
    /// reconciles it, the next identical call is evaluated afresh: a new call, a new
    /// approval, a new grant; the old grant is never revived. A workspace known to hold no
    /// ambiguous call at all (the read cache, `cache.rs`) needs no read.
    pub(crate) async fn unless_ambiguous(
        &self,
        workspace: &str,
        agent_id: &str,
        tool: &str,
        redacted: &Value,
        verdict: Verdict,
    ) -> Result<Verdict, GateError> {
        if verdict.decision == Decision::Deny {
            return Ok(verdict);
        }
        let cache = &self.inner.cache;
        if cache.unambiguous(workspace) {
            return Ok(verdict);
        }
        let ticket = cache.ticket();
        let found = self
            .store()
            .ambiguous_twin(workspace, agent_id, tool, redacted)
            .await?;
        if !found.any_in_workspace {
            cache.keep_unambiguous(ticket, workspace);
        }
        Ok(unless_twin(verdict, found.twin))
    }

    /// Marks every call whose outcome is overdue as ambiguous; returns how many.
    pub async fn sweep_ambiguous_once(&self) -> Result<usize, GateError> {
        let mut total = 0;
        loop {
            let now = self.now();
            let on_mark = |_: &str, call: &Call| -> Effects {
                Effects::none()
                    .audit(audit(
                        now,
                        "system",
                        &call.id,
                        AuditEvent::CallAmbiguous(CallAmbiguousAudit {
                            call_id: call.id.clone(),
                            agent_id: call.agent_id.clone(),
                            tool: call.tool.clone(),
                            redeemed_at: call.redeemed_at,
                        }),
                    ))
                    .event(event(now, WorkspaceEventData::CallAmbiguous(call.clone())))
            };
            let marking = self.inner.cache.marking();
            let marked = self.store().mark_ambiguous(now, BATCH, &on_mark).await?;
            marking.finish(marked.iter().map(|(workspace, _)| workspace.as_str()));
            for (workspace, _) in &marked {
                self.poke(workspace);
            }
            total += marked.len();
            if marked.len() < BATCH as usize {
                return Ok(total);
            }
        }
    }
}

/// `verdict`, unless `twin` names an unreconciled ambiguous call identical to this one:
/// then a deny that asks for the reconciliation first. A deny stays as it is.
pub(crate) fn unless_twin(verdict: Verdict, twin: Option<String>) -> Verdict {
    let Some(twin) = twin.filter(|_| verdict.decision != Decision::Deny) else {
        return verdict;
    };
    Verdict {
        decision: Decision::Deny,
        decided_by: DecidedBy::System,
        rule: None,
        reason: Some(format!(
            "an identical call ({twin}) was redeemed, but nobody reported whether it \
             ran; a person must reconcile it first (in the inbox, or `airlock approvals \
             reconcile {twin} ran|did_not_run`)"
        )),
        standing_rule: None,
        deadline_seconds: None,
        approvals: None,
        approvers: Vec::new(),
        ..verdict
    }
}

/// `text` trimmed, bounded and redacted (an outcome detail may echo a tool's output).
fn clean_text(text: Option<&str>, field: &str) -> Result<Option<String>, GateError> {
    let Some(text) = text.map(str::trim).filter(|text| !text.is_empty()) else {
        return Ok(None);
    };
    if text.chars().count() > MAX_DETAIL {
        return Err(GateError::Invalid(format!(
            "{field} must be at most {MAX_DETAIL} characters"
        )));
    }
    Ok(Some(secrets::redact_text(text)))
}

/// `at + duration`, saturating at the latest time the store reads back (the policy bounds
/// `outcome_timeout` to 100 years, so this only matters for a clock near year 9999).
fn add(at: jiff::Timestamp, duration: Duration) -> jiff::Timestamp {
    i64::try_from(duration.as_millis())
        .ok()
        .and_then(|millis| at.as_millisecond().checked_add(millis))
        .and_then(|millis| jiff::Timestamp::from_millisecond(millis).ok())
        .unwrap_or_else(crate::clock::latest)
}
