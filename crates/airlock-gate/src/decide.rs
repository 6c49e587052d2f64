//! Approvals and the decision on them.
//!
//! The gate checks who is deciding (G6) and prepares the grant, the standing rule and the
//! audit records; the store then checks status, deadline, binding digest and policy
//! staleness and applies everything in one transaction (G2, G3, G4). The first valid
//! decision wins; every refusal writes nothing.

use crate::clock::checked_add_seconds;
use crate::edit::edit_data;
use crate::effects::{audit, event};
use crate::identity::require_role;
use crate::ids::new_id;
use crate::votes;
use crate::{Gate, GateError};
use airlock_protocol::events::{ApprovalAudit, ApprovalDecidedAudit, RuleCreatedAudit};
use airlock_protocol::{Approval, ApprovalStatus, Call, Role, RuleScope, StandingRule};
use airlock_protocol::{AuditEvent, WorkspaceEventData, MAX_DURATION_SECONDS};
use airlock_store::{ApprovalFilter, Decision, Effects, Grant, Principal, Subject};

pub use airlock_protocol::{DecisionRequest, DecisionVerdict as Verdict, ExpiresIn, Remember};

/// An `expires_in` in seconds: more than zero and at most [`MAX_DURATION_SECONDS`] (100
/// years), text parsed as a human duration (`1h`).
pub fn expires_in_seconds(expires_in: &ExpiresIn) -> Result<u64, GateError> {
    let seconds = match expires_in {
        ExpiresIn::Seconds(seconds) => *seconds,
        ExpiresIn::Text(text) => humantime::parse_duration(text)
            .map_err(|e| GateError::Invalid(format!("expires_in `{text}`: {e}")))?
            .as_secs(),
    };
    if seconds == 0 {
        return Err(GateError::Invalid(
            "expires_in must be longer than zero".into(),
        ));
    }
    if seconds > MAX_DURATION_SECONDS {
        return Err(GateError::Invalid(format!(
            "expires_in must be at most 36525d (100 years, {MAX_DURATION_SECONDS} seconds); leave it out for a rule that lasts until revoked"
        )));
    }
    Ok(seconds)
}

/// When a rule minted at `now` for `expires_in` ends; an end the store cannot keep is 422.
pub(crate) fn expires_at(
    now: jiff::Timestamp,
    expires_in: Option<&ExpiresIn>,
) -> Result<Option<jiff::Timestamp>, GateError> {
    let Some(expires_in) = expires_in else {
        return Ok(None);
    };
    let seconds = expires_in_seconds(expires_in)?;
    checked_add_seconds(now, seconds).map(Some).ok_or_else(|| {
        GateError::Invalid(format!(
            "expires_in: {seconds} seconds from now is past the latest time airlock can keep"
        ))
    })
}

impl Gate {
    /// Approvals of the workspace, newest first; with `before` (an approval's id), those
    /// older than it: the page after the one it ends.
    pub async fn list_approvals(
        &self,
        principal: &Principal,
        status: Option<ApprovalStatus>,
        limit: u32,
        before: Option<&str>,
    ) -> Result<Vec<Approval>, GateError> {
        require_role(principal, Role::Viewer, "list approvals")?;
        if let Some(before) = before {
            // A page after an approval that is not here is no page at all.
            self.get_approval(principal, before).await?;
        }
        Ok(self
            .store()
            .list_approvals(
                &principal.workspace,
                &ApprovalFilter {
                    status,
                    session_id: None,
                    run_id: None,
                    before: before.map(str::to_owned),
                    limit: limit.clamp(1, 1000),
                },
            )
            .await?)
    }

    /// Approvals of one run's calls, newest first (what `approve --run` decides at once);
    /// with `before`, those older than that approval.
    pub async fn run_approvals(
        &self,
        principal: &Principal,
        run_id: &str,
        status: Option<ApprovalStatus>,
        limit: u32,
        before: Option<&str>,
    ) -> Result<Vec<Approval>, GateError> {
        require_role(principal, Role::Viewer, "list approvals")?;
        if let Some(before) = before {
            self.get_approval(principal, before).await?;
        }
        let workspace = principal.workspace.as_str();
        if self.store().get_run(workspace, run_id).await?.is_none() {
            return Err(GateError::NotFound("run"));
        }
        Ok(self
            .store()
            .list_approvals(
                workspace,
                &ApprovalFilter {
                    status,
                    session_id: None,
                    run_id: Some(run_id.to_owned()),
                    before: before.map(str::to_owned),
                    limit: limit.clamp(1, 1000),
                },
            )
            .await?)
    }

    /// Pending approvals of one session (for the session snapshot), for whoever may read
    /// the session.
    pub async fn session_approvals(
        &self,
        principal: &Principal,
        session_id: &str,
    ) -> Result<Vec<Approval>, GateError> {
        self.get_session(principal, session_id).await?;
        Ok(self
            .store()
            .list_approvals(
                &principal.workspace,
                &ApprovalFilter {
                    status: Some(ApprovalStatus::Pending),
                    session_id: Some(session_id.to_owned()),
                    run_id: None,
                    before: None,
                    limit: 1000,
                },
            )
            .await?)
    }

    pub async fn get_approval(
        &self,
        principal: &Principal,
        id: &str,
    ) -> Result<Approval, GateError> {
        require_role(principal, Role::Viewer, "read approvals")?;
        self.store()
            .get_approval(&principal.workspace, id)
            .await?
            .ok_or(GateError::NotFound("approval"))
    }

    /// Decides an approval. Approvers and above only; agents never (G6).
    pub async fn decide(
        &self,
        principal: &Principal,
        approval_id: &str,
        request: DecisionRequest,
    ) -> Result<Approval, GateError> {
        require_role(principal, Role::Approver, "decide approvals")?;
        if request
            .reason
            .as_ref()
            .is_some_and(|r| r.chars().count() > 2000)
        {
            return Err(GateError::Invalid(
                "reason is longer than 2000 characters".into(),
            ));
        }
        let workspace = principal.workspace.as_str();
        let approval = self
            .store()
            .get_approval(workspace, approval_id)
            .await?
            .ok_or(GateError::NotFound("approval"))?;
        self.check_voter(principal, &approval).await?;
        let now = self.now();
        let actor = principal.actor();
        let approve = request.decision == Verdict::Approve;
        // Under the two-person rule each person votes on the call as asked: an edit would
        // have the others approve something else, a standing rule would let one person
        // allow what needs several.
        if let Some(required) = approval.approvals_required {
            if request.arguments.is_some() {
                return Err(GateError::Invalid(format!(
                    "this approval needs {required} people, who each approve the call as asked: it cannot be approved with edits; reject it and let the agent ask again"
                )));
            }
            if request.remember.is_some() {
                return Err(GateError::Invalid(format!(
                    "this approval needs {required} people: remember would let one person allow it from now on"
                )));
            }
        }

        let edit = match (&request.arguments, approve) {
            (Some(_), false) => {
                return Err(GateError::Invalid(
                    "arguments (an edit) only go with approve".into(),
                ))
            }
            (Some(arguments), true) => self.checked_edit(workspace, &approval, arguments).await?,
            (None, _) => None,
        };
        if edit.is_some() && request.remember.is_some() {
            // The standing target was read from the asked call; a rule made from an
            // edited one would allow what nobody was shown.
            return Err(GateError::Invalid(
                "remember does not go with edited arguments: approve the edit, then add a rule"
                    .into(),
            ));
        }
        let standing_rule = match (&request.remember, approve) {
            (Some(_), false) => {
                return Err(GateError::Invalid("remember only goes with approve".into()))
            }
            (Some(remember), true) => {
                let task_id = match &approval.session_id {
                    Some(session_id) => self
                        .store()
                        .get_session(workspace, session_id)
                        .await?
                        .and_then(|session| session.task_id),
                    None => None,
                };
                let rule = self.standing_rule_for(&approval, remember, &actor, task_id)?;
                // An identical live rule already says "every time": mint nothing, audit
                // nothing beyond the decision itself.
                let live = self
                    .store()
                    .live_standing_rules(workspace, &[(rule.scope, rule.scope_id.clone())], now)
                    .await?;
                let exists = live
                    .iter()
                    .any(|existing| existing.tool == rule.tool && existing.target == rule.target);
                (!exists).then_some(rule)
            }
            (None, _) => None,
        };
        let grant = approve.then(|| Grant {
            id: new_id("grt"),
            call_id: approval.call_id.clone(),
            created_at: now,
            consumed_at: None,
        });

        // The effects describe the approval as it will be after the decision.
        let mut decided = approval.clone();
        decided.status = if approve {
            ApprovalStatus::Approved
        } else {
            ApprovalStatus::Rejected
        };
        decided.decided_at = Some(now);
        decided.decided_by = Some(actor.clone());
        decided.decision_reason = request.reason.clone();
        decided.edited_binding_digest = edit
            .as_ref()
            .map(|(edit, _)| edit.binding_digest.clone())
            .or(decided.edited_binding_digest);
        let data = ApprovalDecidedAudit {
            approval: ApprovalAudit::of(&decided),
            grant_id: grant.as_ref().map(|grant| grant.id.clone()),
            edit: edit
                .as_ref()
                .map(|(edit, original)| edit_data(&approval, original, edit)),
        };
        let data = if approve {
            AuditEvent::ApprovalApproved(data)
        } else {
            AuditEvent::ApprovalRejected(data)
        };
        // Under the two-person rule every vote is its own audit record, the one that
        // settles the approval too.
        let voted = approval
            .approvals_required
            .map(|_| votes::with_vote(&approval, &actor, approve, now));
        if let Some(voted) = &voted {
            decided.votes = voted.votes.clone();
        }
        let vote = voted
            .as_ref()
            .map(|voted| votes::vote_effects(voted, &actor, approve, now));
        let mut effects = voted
            .as_ref()
            .map_or_else(Effects::none, |voted| {
                votes::vote_effects(voted, &actor, approve, now)
            })
            .audit(audit(now, &actor, &approval.id, data))
            .event(event(
                now,
                WorkspaceEventData::ApprovalDecided(decided.clone()),
            ));
        if let Some(rule) = &standing_rule {
            effects = effects
                .audit(audit(
                    now,
                    &actor,
                    &rule.id,
                    AuditEvent::RuleCreated(RuleCreatedAudit {
                        tool: rule.tool.clone(),
                        target: rule.target.clone(),
                        scope: rule.scope,
                        scope_id: rule.scope_id.clone(),
                        expires_at: Some(rule.expires_at.map(|t| t.to_string())),
                        from_approval: Some(approval.id.clone()),
                    }),
                ))
                .event(event(now, WorkspaceEventData::RuleCreated(rule.clone())));
        }
        let outcome = self
            .store()
            .decide(
                workspace,
                &Decision {
                    approval_id: approval.id.clone(),
                    approve,
                    binding_digest: request.binding_digest,
                    decided_by: actor,
                    reason: request.reason,
                    at: now,
                    grant,
                    standing_rule,
                    edit: edit.map(|(edit, _)| edit),
                    vote,
                },
                &effects,
            )
            .await;
        match outcome {
            Ok(decided) => {
                crate::failpoint!("decision.committed");
                // A vote that leaves the approval pending settles nothing yet.
                if decided.approval.status != ApprovalStatus::Pending {
                    self.settle(workspace, &decided.approval.call_id);
                }
                self.poke(workspace);
                Ok(decided.approval)
            }
            Err(airlock_store::DecideError::Expired) => {
                // The refusal wrote nothing; the expiry is the sweeper's own change, made
                // now so that the approval reads `expired` right after the refusal.
                self.sweep_once().await?;
                Err(GateError::Expired)
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Closes a pending call's approval without a decision: its run was cancelled, or its
    /// MCP client gave up. The call's agent or a user with role ≥ approver may cancel.
    /// Refused like a decision once the approval is no longer pending (G3).
    pub async fn cancel_call(
        &self,
        principal: &Principal,
        call_id: &str,
        reason: &str,
    ) -> Result<Call, GateError> {
        if let Subject::User { .. } = principal.subject {
            require_role(principal, Role::Approver, "cancel calls")?;
        }
        // An agent sees only its own calls.
        let call = self.get_call(principal, call_id).await?;
        let Some(approval_id) = call.approval_id.clone() else {
            return Err(GateError::Invalid(format!(
                "the call was {} when it was submitted; only a call waiting for a person can be cancelled",
                call.status
            )));
        };
        let workspace = principal.workspace.as_str();
        let approval = self
            .store()
            .get_approval(workspace, &approval_id)
            .await?
            .ok_or(GateError::NotFound("approval"))?;
        if approval.status != ApprovalStatus::Pending {
            return Err(GateError::AlreadyDecided(approval.status));
        }
        let now = self.now();
        let actor = principal.actor();
        let reason = format!("cancelled by {actor}: {reason}");
        let mut closed = approval.clone();
        closed.status = ApprovalStatus::Cancelled;
        closed.decided_at = Some(now);
        closed.decided_by = Some("system".into());
        closed.decision_reason = Some(reason.clone());
        let effects = Effects::none()
            .audit(audit(
                now,
                &actor,
                &approval.id,
                AuditEvent::ApprovalCancelled(ApprovalAudit::of(&closed)),
            ))
            .event(event(
                now,
                WorkspaceEventData::ApprovalCancelled(closed.clone()),
            ));
        self.store()
            .cancel_approval(workspace, &approval.id, now, &reason, &effects)
            .await?;
        self.settle(workspace, call_id);
        self.poke(workspace);
        self.get_call(principal, call_id).await
    }

    /// The standing rule an "approve + remember" mints, or why it cannot.
    fn standing_rule_for(
        &self,
        approval: &Approval,
        remember: &Remember,
        actor: &str,
        task_id: Option<String>,
    ) -> Result<StandingRule, GateError> {
        let Some(target) = approval.standing_target.clone() else {
            return Err(GateError::Invalid(format!(
                "this call cannot be remembered: `{}` has risk {} or no target argument; standing rules need a write or external tool with a target",
                approval.tool, approval.risk
            )));
        };
        let scope_id = match remember.scope {
            RuleScope::Session => approval.session_id.clone().ok_or_else(|| {
                GateError::Invalid("remember scope `session` needs a call made in a session".into())
            })?,
            RuleScope::Agent => approval.agent_id.clone(),
            RuleScope::Task => task_id.ok_or_else(|| {
                GateError::Invalid(
                    "remember scope `task` needs a call made by a task's run; this call has none"
                        .into(),
                )
            })?,
        };
        let now = self.now();
        let expires_at = expires_at(now, remember.expires_in.as_ref())?;
        Ok(StandingRule {
            id: new_id("rule"),
            tool: approval.tool.clone(),
            target,
            scope: remember.scope,
            scope_id,
            created_by: actor.to_owned(),
            created_at: now,
            expires_at,
            revoked_at: None,
        })
    }
}
