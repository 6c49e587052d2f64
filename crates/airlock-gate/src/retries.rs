//! A coding agent's retry adopts the call its hook stopped waiting for (issue 23).
//!
//! A hook waits a bounded time for a person (Claude Code kills a hook after 60 s), then
//! denies with "still pending; approve it, then try the call again". The agent's retry is
//! a new hook call with the same tool and arguments. Without this module it would open a
//! second approval, and the one the person approved would never run: a loop of questions.
//!
//! So when a hook's wait ends on a pending call, the call is **held** under a retry key: a
//! digest of workspace, agent, session, tool, exact arguments and working folder. A later
//! hook call with the same key (the same agent, in the same session, the identical call)
//! adopts the held call instead of being submitted:
//! - still pending → the retry waits on the same approval (no duplicate is opened);
//! - allowed or approved, before the approval's deadline → the retry redeems its grant
//!   (once: the grant's conditional update decides between concurrent retries);
//! - rejected → the retry gets the rejection, once (the hold is released by one
//!   conditional update, so two concurrent retries cannot both take it);
//! - expired, cancelled, or approved too late → the hold is dropped and the retry is
//!   judged afresh: nobody said no to it.
//!
//! A call without a session is never held: nothing would prove that the retry comes from
//! the same run of the agent. Every adoption is an audit record, `call.adopted`, written in
//! the transaction that takes the answer (the redeem, or the release).
//!
//! Codex asks twice about a call that leaves its sandbox: `PreToolUse` (every shell call),
//! then `PermissionRequest` for the same call in the same turn (it carries no
//! `tool_use_id`, and adds the model's justification as `description`). Judged twice, an
//! asked call would ask its person twice and an allowed one spend two grants. So a Codex
//! call allowed at `PreToolUse` is held under an **escalation key** (the retry key without
//! `description`, plus the turn id), and the `PermissionRequest` that follows takes it,
//! once: allowed without a second question or grant (`call.adopted`, `"escalation": true`).

use crate::calls::{Redeeming, Submission};
use crate::effects::audit;
use crate::identity::require_agent;
use crate::{Gate, GateError};
use airlock_policy::digest::json_digest;
use airlock_protocol::{Call, CallStatus};
use airlock_store::{Effects, Principal, Redemption};
use serde_json::json;

/// A hook call as the gate took it: submitted afresh, or a held call adopted.
#[derive(Debug, Clone)]
pub struct Taken {
    pub call: Call,
    /// The key the call is held under if the hook stops waiting again (`None`: no session).
    pub retry_key: Option<String>,
    /// Whether `call` is an earlier call this retry adopted.
    pub adopted: bool,
    /// The grant of a call allowed and redeemed in the commit that recorded it
    /// ([`Gate::submit_or_adopt_redeeming`]).
    pub redemption: Option<Redemption>,
}

impl Gate {
    /// Submits a hook's call, unless it is the agent's retry of a call held for it (see
    /// the module documentation): then that call, adopted.
    pub async fn submit_or_adopt(
        &self,
        principal: &Principal,
        submission: Submission,
    ) -> Result<Taken, GateError> {
        self.submit_or_adopt_redeeming(principal, submission, &Redeeming::default())
            .await
    }

    /// [`Gate::submit_or_adopt`], submitting as [`Gate::submit_redeeming`] does: a call
    /// submitted afresh and allowed comes back with its grant already consumed. An adopted
    /// call is redeemed as before ([`Gate::redeem_adopted`]).
    pub async fn submit_or_adopt_redeeming(
        &self,
        principal: &Principal,
        submission: Submission,
        redeeming: &Redeeming,
    ) -> Result<Taken, GateError> {
        let submission = Submission {
            context: submission.context.checked(),
            ..submission
        };
        let retry_key = retry_key(principal, &submission);
        // A lookup made for this very key that found no held call is not repeated.
        let none_held = |key: &str| {
            redeeming
                .looked_up
                .as_ref()
                .and_then(|looked_up| looked_up.held_under(key))
                == Some(false)
        };
        if let Some(key) = retry_key.as_deref().filter(|key| !none_held(key)) {
            if let Some(call) = self.adopt(principal, key).await? {
                return Ok(Taken {
                    call,
                    retry_key,
                    adopted: true,
                    redemption: None,
                });
            }
        }
        let (call, redemption) = self
            .submit_redeeming(principal, submission, redeeming)
            .await?;
        Ok(Taken {
            call,
            retry_key,
            adopted: false,
            redemption,
        })
    }

    /// Holds a call its hook stopped waiting for (the call as the hook last read it for
    /// `principal`), for the agent's retry under `key`.
    pub async fn hold_for_retry(
        &self,
        principal: &Principal,
        call: &Call,
        key: &str,
    ) -> Result<(), GateError> {
        if matches!(call.status, CallStatus::Pending | CallStatus::Approved) {
            self.store()
                .hold_for_retry(&principal.workspace, &call.id, key)
                .await?;
        }
        Ok(())
    }

    /// Redeems the grant of an adopted call (under the hook's idempotency key, if any):
    /// the adoption's audit record is written in the redeem's transaction, and the hold is
    /// dropped either way (a spent grant is never adopted twice).
    pub async fn redeem_adopted(
        &self,
        principal: &Principal,
        call: &Call,
        key: &str,
        idempotency_key: Option<&str>,
    ) -> Result<Redemption, GateError> {
        let also = Effects::none().audit(adopted_record(principal, call, self.now(), false));
        let redeemed = self
            .redeem_keyed_recording(principal, &call.id, idempotency_key, also)
            .await;
        self.store()
            .release_retry(&principal.workspace, &call.id, key, &Effects::none())
            .await?;
        redeemed
    }

    /// The held call a retry under `key` adopts, if any (see the module documentation).
    async fn adopt(&self, principal: &Principal, key: &str) -> Result<Option<Call>, GateError> {
        let workspace = principal.workspace.as_str();
        let Some(held) = self.store().held_for_retry(workspace, key).await? else {
            return Ok(None);
        };
        // The key names the agent; a row of another agent is never adopted all the same.
        let (agent_id, _) = require_agent(principal, "submit calls")?;
        if held.agent_id != agent_id {
            return Ok(None);
        }
        let now = self.now();
        match held.status {
            CallStatus::Pending => Ok(Some(held)),
            CallStatus::Allowed | CallStatus::Approved => {
                let in_time = match &held.approval_id {
                    Some(approval) => self
                        .store()
                        .get_approval(workspace, approval)
                        .await?
                        .is_some_and(|approval| now < approval.deadline),
                    None => true,
                };
                if in_time {
                    return Ok(Some(held));
                }
                self.store()
                    .release_retry(workspace, &held.id, key, &Effects::none())
                    .await?;
                Ok(None)
            }
            CallStatus::Rejected | CallStatus::Denied => {
                let effects = Effects::none().audit(adopted_record(principal, &held, now, false));
                let taken = self
                    .store()
                    .release_retry(workspace, &held.id, key, &effects)
                    .await?;
                Ok(taken.then_some(held))
            }
            CallStatus::Expired | CallStatus::Cancelled => {
                self.store()
                    .release_retry(workspace, &held.id, key, &Effects::none())
                    .await?;
                Ok(None)
            }
        }
    }
}

impl Gate {
    /// Holds a call allowed (and redeemed) at Codex's `PreToolUse` for the
    /// `PermissionRequest` of the same tool call.
    pub async fn hold_for_escalation(
        &self,
        principal: &Principal,
        call_id: &str,
        key: &str,
    ) -> Result<(), GateError> {
        self.store()
            .hold_for_retry(&principal.workspace, call_id, key)
            .await?;
        Ok(())
    }

    /// The call allowed at `PreToolUse` that this `PermissionRequest` (same key) escalates:
    /// taken once, audited as its adoption.
    pub async fn take_escalation(
        &self,
        principal: &Principal,
        key: &str,
    ) -> Result<Option<Call>, GateError> {
        let workspace = principal.workspace.as_str();
        let Some(held) = self.store().held_for_retry(workspace, key).await? else {
            return Ok(None);
        };
        let (agent_id, _) = require_agent(principal, "submit calls")?;
        if held.agent_id != agent_id
            || !matches!(held.status, CallStatus::Allowed | CallStatus::Approved)
        {
            return Ok(None);
        }
        let record = adopted_record(principal, &held, self.now(), true);
        let taken = self
            .store()
            .release_retry(workspace, &held.id, key, &Effects::none().audit(record))
            .await?;
        Ok(taken.then_some(held))
    }
}

/// The key a Codex call allowed at `PreToolUse` is held under for the `PermissionRequest`
/// of the same call in the same turn: `None` without a session or a turn id.
pub fn escalation_key(
    principal: &Principal,
    submission: &Submission,
    turn_id: Option<&str>,
) -> Option<String> {
    let mut checked = Submission {
        context: submission.context.clone().checked(),
        ..submission.clone()
    };
    // Codex's `PermissionRequest` adds the model's justification for leaving the sandbox
    // as `description`: words for the person, not part of what runs.
    if let Some(arguments) = checked.arguments.as_object_mut() {
        arguments.remove("description");
    }
    let base = retry_key(principal, &checked)?;
    let turn_id = turn_id.filter(|id| !id.is_empty())?;
    Some(json_digest(
        &json!({"escalation_of": base, "turn_id": turn_id}),
    ))
}

/// The key a hook call is held under: `None` without a session.
pub fn retry_key(principal: &Principal, submission: &Submission) -> Option<String> {
    let session = submission.session_id.as_deref()?;
    let agent = match &principal.subject {
        airlock_store::Subject::Agent { id, .. } => id.as_str(),
        _ => return None,
    };
    Some(json_digest(&json!({
        "workspace": principal.workspace,
        "agent": agent,
        "session": session,
        "tool": submission.tool,
        "arguments": submission.arguments,
        "native_tool": submission.context.native_tool,
        "cwd": submission.context.cwd,
    })))
}

/// The audit record of a retry adopting `call`.
fn adopted_record(
    principal: &Principal,
    call: &Call,
    now: jiff::Timestamp,
    escalation: bool,
) -> airlock_store::AuditEntry {
    audit(
        now,
        &principal.actor(),
        &call.id,
        airlock_protocol::AuditEvent::CallAdopted(airlock_protocol::events::CallAdoptedAudit {
            call_id: call.id.clone(),
            approval_id: call.approval_id.clone(),
            session_id: call.session_id.clone(),
            tool: call.tool.clone(),
            outcome: call.status,
            escalation,
        }),
    )
}
