//! Submitting a call, waiting for its verdict, and redeeming its grant (G1).
//!
//! Submission evaluates the call under the policy in force and the standing rules in its
//! scope, then records call + approval (ask) or call + grant (allow) + audit + events in
//! one store transaction. The arguments are stored redacted; the binding digest is taken
//! over the exact arguments, so an approval is bound to what was submitted (G2) without
//! the secrets being kept (G9).

use crate::clock::add_seconds;
use crate::effects::{audit, event};
use crate::identity::require_agent;
use crate::ids::new_id;
use crate::lookup::LookedUp;
use crate::outcomes::{check_idempotency_key, unless_twin};
use crate::policy::LoadedPolicy;
use crate::{Gate, GateError};
use airlock_policy::digest::{binding_digest, Binding};
use airlock_policy::matcher::path::{absolute_folder, application_settings_folder, folder_holds};
use airlock_policy::preview::build_preview;
use airlock_policy::{
    secrets, Call as PolicyCall, CompiledTool, Decision, StandingRule as Standing,
};
use airlock_protocol::events::{ApprovalRequestedAudit, CallAudit, GrantConsumedAudit};
use airlock_protocol::{
    Approval, ApprovalStatus, Call, CallStatus, Risk, RuleScope, Session, Verdict,
};
use airlock_protocol::{AuditEvent, WorkspaceEventData};
use airlock_store::{Effects, Grant, NewCall, Principal, RedeemRequest, Redemption, Subject};
use serde_json::Value;
use std::time::Duration;

/// How long a submission keeps re-evaluating while the policy keeps being replaced under it.
const STALE_POLICY_BUDGET: Duration = Duration::from_secs(5);

/// The longest a caller may long-poll in one request.
pub const MAX_WAIT: Duration = Duration::from_secs(60);

/// A call as submitted (`POST /v1/calls`).
#[derive(Debug, Clone)]
pub struct Submission {
    pub tool: String,
    pub arguments: Value,
    pub session_id: Option<String>,
    /// What a trusted tool provider (the built-in runtime) declares about the tool, used
    /// when the policy does not list it. Never taken from an agent's request.
    pub declared: Option<CompiledTool>,
    /// Where the call comes from: the agent's own tool name and the call's folders.
    pub context: CallContext,
}

/// Where a call comes from (DESIGN.md §11.1–11.2). Every field is optional, and each one
/// missing only ever makes the policy stricter: an allow rule that names an anchor never
/// matches a call with no `cwd`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallContext {
    /// The agent's own name for the tool (`Bash`, `apply_patch`), for hook calls.
    pub native_tool: Option<String>,
    /// The absolute working folder.
    pub cwd: Option<String>,
    /// The root of the git work tree holding `cwd`, else `cwd` (`{project}`); never the
    /// home folder or `/`.
    pub project: Option<String>,
    /// The user's home folder (`{home}`, `~`); used to evaluate, not stored.
    pub home: Option<String>,
}

impl CallContext {
    /// Keeps only absolute paths: a relative or empty folder is no folder at all (fail
    /// closed), and a project must hold the `cwd`. A Windows drive path (`E:\app`) is
    /// absolute too, kept as the agent wrote it; the policy reads it as `/e:/app`.
    pub fn checked(self) -> CallContext {
        let absolute = |path: Option<String>| path.as_deref().and_then(absolute_folder);
        let cwd = absolute(self.cwd);
        let project = absolute(self.project)
            .filter(|project| cwd.as_deref().is_some_and(|cwd| folder_holds(project, cwd)));
        let home = absolute(self.home).filter(|home| home != "/");
        // The home folder (or `/`) is never a project: an agent started there would have
        // all of it for its work area, `mv Documents /tmp/x` and every dotfile included.
        // Such a call has no project, and what it changes is judged by where it lies.
        let whole = |project: &String| {
            project == "/"
                || home
                    .as_deref()
                    .is_some_and(|home| folder_holds(project, home) && folder_holds(home, project))
        };
        CallContext {
            native_tool: self.native_tool.filter(|name| !name.is_empty()),
            // A folder where applications keep their settings (the editor's `User`
            // folder) is no project unless the caller found a work tree there.
            project: project
                .or_else(|| {
                    cwd.clone()
                        .filter(|cwd| !application_settings_folder(cwd, home.as_deref()))
                })
                .filter(|project| !whole(project)),
            cwd,
            home,
        }
    }
}

/// What a caller that redeems the moment its call is allowed (a coding agent's hook)
/// adds to a submission ([`Gate::submit_redeeming`]).
#[derive(Debug, Clone, Default)]
pub struct Redeeming {
    /// The call's session as the caller has just read it (`Gate::session_for_external`):
    /// used instead of reading it again when it is the submission's session.
    pub session: Option<Session>,
    /// When the call is allowed, its grant is consumed in the commit that records it.
    pub redeem: Option<RedeemOnAllow>,
    /// What the caller read for this call a moment ago ([`Gate::look_up_hook_call`]):
    /// the held call and the ambiguous twin are not read again for it.
    pub looked_up: Option<LookedUp>,
}

/// How the grant of an allowed call is consumed as it is recorded.
#[derive(Debug, Clone, Default)]
pub struct RedeemOnAllow {
    /// The `Idempotency-Key` it is consumed under (a retry under it is `replayed`).
    pub key: Option<String>,
    /// The key the call is then held under, as [`Gate::hold_for_escalation`] would.
    pub hold: Option<String>,
}

impl Gate {
    /// Submits a call for the agent the token belongs to.
    pub async fn submit_call(
        &self,
        principal: &Principal,
        submission: Submission,
    ) -> Result<Call, GateError> {
        self.submit_redeeming(principal, submission, &Redeeming::default())
            .await
            .map(|(call, _)| call)
    }

    /// [`Gate::submit_call`] for a caller that redeems an allowed call's grant at once:
    /// when the call is allowed, the call's record and its grant's consumption (the
    /// `grant.consumed` record after `call.allowed`) are one commit instead of two, and
    /// the redemption comes back with the call. Anything else is recorded as
    /// [`Gate::submit_call`] records it, and comes back with no redemption.
    pub async fn submit_redeeming(
        &self,
        principal: &Principal,
        submission: Submission,
        redeeming: &Redeeming,
    ) -> Result<(Call, Option<Redemption>), GateError> {
        // A key that would be refused is left to the separate redeem, which refuses it as
        // it always did.
        let redeem = redeeming.redeem.as_ref().filter(|redeem| {
            redeem
                .key
                .as_deref()
                .is_none_or(|key| check_idempotency_key(key).is_ok())
        });
        let submission = Submission {
            context: submission.context.checked(),
            ..submission
        };
        // Another node may replace the policy between evaluation and recording (on this
        // node the workspace's change lock prevents it; see `PolicyCache::turns`); the
        // store refuses an approval bound to a policy no longer in force, and the call is
        // evaluated again under the new one. Each refusal means a newer
        // policy is in force, so retrying makes progress; only a policy that keeps changing
        // for longer than the budget (a time, not a count: a loaded machine is slower
        // than the changes) turns into a 503.
        let budget = std::time::Instant::now() + STALE_POLICY_BUDGET;
        let turn = self.inner.policies.turn(&principal.workspace);
        loop {
            let attempt = {
                let _submitting = turn.read().await;
                // On the heap: its state is kilobytes, and every future that awaits it
                // inline (this one, the caller's, the HTTP handler's) is copied whole
                // each time it moves.
                Box::pin(self.submit_once(principal, &submission, redeeming, redeem)).await
            };
            match attempt {
                Err(GateError::StalePolicy) if std::time::Instant::now() < budget => {
                    self.inner
                        .policies
                        .reload(self.store(), &principal.workspace)
                        .await?;
                }
                Err(GateError::StalePolicy) => {
                    return Err(GateError::Unavailable(
                        "the policy keeps changing; submit the call again".into(),
                    ))
                }
                outcome => return outcome,
            }
        }
    }

    async fn submit_once(
        &self,
        principal: &Principal,
        submission: &Submission,
        redeeming: &Redeeming,
        redeem: Option<&RedeemOnAllow>,
    ) -> Result<(Call, Option<Redemption>), GateError> {
        let known_session = redeeming.session.as_ref();
        let (agent_id, agent_name) = require_agent(principal, "submit calls")?;
        let workspace = principal.workspace.as_str();
        check_submission(submission)?;
        let session = match &submission.session_id {
            // The caller's own read of this agent's session, a moment ago.
            Some(session_id)
                if known_session.is_some_and(|known| {
                    known.id == *session_id && known.agent_id.as_deref() == Some(agent_id)
                }) =>
            {
                known_session.cloned()
            }
            // Another agent's session is as invisible as another workspace's.
            Some(session_id) => Some(self.get_session(principal, session_id).await?),
            None => None,
        };
        let agent = self
            .agent_cached(workspace, agent_id)
            .await?
            .ok_or(GateError::NotFound("agent"))?;
        let now = self.now();
        let standing = self
            .standing_in_scope(workspace, agent_id, session.as_ref(), now)
            .await?;
        let verdict = self.evaluate(
            workspace,
            &PolicyCall {
                tool: &submission.tool,
                arguments: &submission.arguments,
                agent: Some(agent_name),
                // A session's own mode, when a person set one, instead of its agent's.
                mode: session
                    .as_ref()
                    .and_then(|session| session.mode)
                    .unwrap_or(agent.mode),
                standing: &standing,
                declared: submission.declared.as_ref(),
                native_tool: submission.context.native_tool.as_deref(),
                cwd: submission.context.cwd.as_deref(),
                project: submission.context.project.as_deref(),
                home: submission.context.home.as_deref(),
            },
        );
        let loaded = self.loaded_policy(workspace);
        let policy_digest = loaded
            .as_ref()
            .map_or_else(String::new, |loaded| loaded.info.digest.clone());

        let redacted = secrets::redact(&submission.arguments);
        // An ambiguous twin the caller's own lookup found (or did not) a moment ago for
        // this very call; otherwise read now.
        let verdict = match redeeming
            .looked_up
            .as_ref()
            .and_then(|looked_up| looked_up.twin_of(&submission.tool, &redacted))
        {
            Some(twin) => unless_twin(verdict, twin),
            None => {
                self.unless_ambiguous(workspace, agent_id, &submission.tool, &redacted, verdict)
                    .await?
            }
        };
        let call_id = new_id("call");
        let mut call = Call {
            id: call_id.clone(),
            agent_id: agent_id.to_owned(),
            session_id: submission.session_id.clone(),
            tool: submission.tool.clone(),
            arguments: redacted.clone(),
            risk: verdict.risk,
            status: CallStatus::Pending,
            decided_by: verdict.decided_by,
            // An allow by a standing rule cites that rule.
            rule: if verdict.decided_by == airlock_protocol::DecidedBy::StandingRule {
                verdict.standing_rule.clone()
            } else {
                verdict.rule.clone()
            },
            reason: verdict.reason.clone(),
            approval_id: None,
            grant_id: None,
            created_at: now,
            decided_at: None,
            native_tool: submission.context.native_tool.clone(),
            cwd: submission.context.cwd.clone(),
            project: submission.context.project.clone(),
            redeemed_at: None,
            outcome: None,
            ambiguous_at: None,
            reconciliation: None,
            original_arguments: None,
        };
        let actor = principal.actor();
        let task_id = session
            .as_ref()
            .and_then(|session| session.task_id.as_deref());
        // What is recorded with the call: its grant when allowed, its approval when asked.
        let (mut new_grant, mut new_approval) = (None, None);
        let effects = match verdict.decision {
            Decision::Allow => {
                let grant = Grant {
                    id: new_id("grt"),
                    call_id: call_id.clone(),
                    created_at: now,
                    consumed_at: redeem.map(|_| now),
                };
                call.status = CallStatus::Allowed;
                call.grant_id = Some(grant.id.clone());
                call.decided_at = Some(now);
                new_grant = Some(grant);
                let mut effects = Effects::none()
                    .audit(audit(
                        now,
                        &actor,
                        &call.id,
                        AuditEvent::CallAllowed(CallAudit::of(
                            &call,
                            verdict.standing_rule.as_deref(),
                            task_id,
                        )),
                    ))
                    .event(event(now, WorkspaceEventData::CallDecided(call.clone())));
                if redeem.is_some() {
                    // The records the separate redeem would have appended next.
                    effects
                        .audit
                        .extend(redeem_effects(principal, &call, now).audit);
                    call.redeemed_at = Some(now);
                }
                effects
            }
            Decision::Deny => {
                call.status = CallStatus::Denied;
                call.decided_at = Some(now);
                Effects::none()
                    .audit(audit(
                        now,
                        &actor,
                        &call.id,
                        AuditEvent::CallDenied(CallAudit::of(&call, None, task_id)),
                    ))
                    .event(event(now, WorkspaceEventData::CallDecided(call.clone())))
            }
            Decision::Ask => {
                let approval = approval_for(
                    workspace,
                    &call,
                    submission,
                    &verdict,
                    loaded.as_deref(),
                    &policy_digest,
                    now,
                );
                let approval_id = approval.id.clone();
                let deadline = approval.deadline;
                call.approval_id = Some(approval_id.clone());
                let data = AuditEvent::ApprovalRequested(ApprovalRequestedAudit {
                    call: CallAudit::of(&call, None, task_id),
                    approval_id: approval_id.clone(),
                    deadline: deadline.to_string(),
                    binding_digest: approval.binding_digest.clone(),
                });
                let effects = Effects::none()
                    .audit(audit(now, &actor, &approval_id, data))
                    .event(event(
                        now,
                        WorkspaceEventData::ApprovalRequested(approval.clone()),
                    ));
                new_approval = Some(approval);
                effects
            }
        };
        let new_call = NewCall {
            call: call.clone(),
            approval: new_approval,
            grant: new_grant,
        };
        crate::failpoint!("call.submitted");
        // The store takes the call and its effects whole (a batch moves them, uncopied).
        let asked = new_call.approval.is_some();
        let granted = redeem.and_then(|_| new_call.grant.clone());
        let redemption = match (redeem, granted) {
            (Some(redeem), Some(grant)) => {
                let request = RedeemRequest {
                    at: now,
                    key: redeem.key.as_deref(),
                    outcome_due: Some(self.outcome_due(workspace, now)),
                };
                self.store()
                    .record_call_redeemed(
                        workspace,
                        new_call,
                        &request,
                        redeem.hold.as_deref(),
                        effects,
                    )
                    .await?;
                crate::failpoint!("grant.redeemed");
                Some(Redemption {
                    grant,
                    replayed: false,
                    arguments: None,
                })
            }
            _ => {
                self.store()
                    .record_call(workspace, new_call, effects)
                    .await?;
                None
            }
        };
        if asked {
            crate::failpoint!("approval.created");
            self.inner.sweeper_wake.notify_one();
        }
        self.poke(workspace);
        Ok((call, redemption))
    }

    /// The live standing rules that may apply to a call of this agent: its own, its
    /// session's, and (for a task's run) the task's.
    pub(crate) async fn standing_in_scope(
        &self,
        workspace: &str,
        agent_id: &str,
        session: Option<&Session>,
        now: jiff::Timestamp,
    ) -> Result<Vec<Standing>, GateError> {
        let mut scopes = vec![(RuleScope::Agent, agent_id.to_owned())];
        if let Some(session) = session {
            scopes.push((RuleScope::Session, session.id.clone()));
            // A task's run is held to the rules people gave that task.
            if let Some(task_id) = &session.task_id {
                scopes.push((RuleScope::Task, task_id.clone()));
            }
        }
        // The same rules, in the same order, as `Store::live_standing_rules` would give.
        Ok(self
            .unrevoked_rules(workspace)
            .await?
            .iter()
            .filter(|rule| rule.expires_at.is_none_or(|at| at > now))
            .filter(|rule| {
                scopes
                    .iter()
                    .any(|(scope, id)| rule.scope == *scope && rule.scope_id == *id)
            })
            .map(|rule| Standing {
                id: rule.id.clone(),
                tool: rule.tool.clone(),
                target: rule.target.clone(),
            })
            .collect())
    }

    /// A call, for its agent or for users of the workspace.
    pub async fn get_call(&self, principal: &Principal, id: &str) -> Result<Call, GateError> {
        let call = self
            .store()
            .get_call(&principal.workspace, id)
            .await?
            .ok_or(GateError::NotFound("call"))?;
        match &principal.subject {
            Subject::Agent { id: agent, .. } if *agent != call.agent_id => {
                Err(GateError::NotFound("call"))
            }
            _ => Ok(call),
        }
    }

    /// Returns the call once it is no longer pending, or as it is after `wait`
    /// (at most [`MAX_WAIT`]). Woken by the decision itself, not by polling.
    pub async fn wait_call(
        &self,
        principal: &Principal,
        id: &str,
        wait: Duration,
    ) -> Result<Call, GateError> {
        let until = tokio::time::Instant::now() + wait.min(MAX_WAIT);
        loop {
            let registration = self.inner.waiters.register(id);
            let notified = registration.notify.notified();
            tokio::pin!(notified);
            // Enabled before the read, so a decision between read and wait still wakes us.
            notified.as_mut().enable();
            let call = self.get_call(principal, id).await?;
            if call.status != CallStatus::Pending || tokio::time::Instant::now() >= until {
                return Ok(call);
            }
            // Parked callers hold nothing they read: the call (arguments, preview) is read
            // again when woken, so 10,000 waiters do not keep 10,000 copies of it.
            drop(call);
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep_until(until) => {
                    return self.get_call(principal, id).await;
                }
            }
        }
    }

    /// Consumes the call's grant: succeeds once, ever (G1). Only the call's agent redeems.
    pub async fn redeem(&self, principal: &Principal, call_id: &str) -> Result<Grant, GateError> {
        self.redeem_keyed(principal, call_id, None)
            .await
            .map(|redemption| redemption.grant)
    }

    /// Consumes the call's grant under the client's `Idempotency-Key` (DESIGN.md §11.8):
    /// the first redeem consumes it and stores the key with it; a retry under the same key
    /// answers the same grant, `replayed`; any other key, or none, is `GrantSpent`. Only
    /// the call's agent redeems, so "the same key" is always the same agent's.
    pub async fn redeem_keyed(
        &self,
        principal: &Principal,
        call_id: &str,
        key: Option<&str>,
    ) -> Result<Redemption, GateError> {
        self.redeem_keyed_recording(principal, call_id, key, Effects::none())
            .await
    }

    /// [`Gate::redeem_keyed`], appending `also` in the redeem's transaction (a retry's
    /// adoption of the call, `retries.rs`).
    pub(crate) async fn redeem_keyed_recording(
        &self,
        principal: &Principal,
        call_id: &str,
        key: Option<&str>,
        also: Effects,
    ) -> Result<Redemption, GateError> {
        let (agent_id, _) = require_agent(principal, "redeem grants")?;
        if let Some(key) = key {
            check_idempotency_key(key)?;
        }
        let call = self.get_call(principal, call_id).await?;
        if call.agent_id != agent_id {
            return Err(GateError::NotFound("call"));
        }
        let now = self.now();
        let mut effects = redeem_effects(principal, &call, now);
        effects.audit.extend(also.audit);
        effects.events.extend(also.events);
        let request = RedeemRequest {
            at: now,
            key,
            outcome_due: Some(self.outcome_due(&principal.workspace, now)),
        };
        let redemption = self
            .store()
            .redeem_keyed(&principal.workspace, call_id, &request, &effects)
            .await?;
        if !redemption.replayed {
            crate::failpoint!("grant.redeemed");
        }
        Ok(redemption)
    }
}

/// The audit record of consuming a call's grant, for every path that consumes one.
pub fn redeem_effects(principal: &Principal, call: &Call, now: jiff::Timestamp) -> Effects {
    Effects::none().audit(audit(
        now,
        &principal.actor(),
        call.grant_id.as_deref().unwrap_or(&call.id),
        AuditEvent::GrantConsumed(GrantConsumedAudit {
            call_id: call.id.clone(),
            tool: call.tool.clone(),
        }),
    ))
}

/// The shape every submission must have before anything is evaluated.
fn check_submission(submission: &Submission) -> Result<(), GateError> {
    check_call_shape(&submission.tool, &submission.arguments)
}

/// A tool name of 1 to 200 characters with none that is invisible or breaks a line (it
/// is shown in lists and previews), and an arguments object. The dry run checks the same.
pub(crate) fn check_call_shape(tool: &str, arguments: &Value) -> Result<(), GateError> {
    if tool.is_empty() || tool.len() > 200 {
        return Err(GateError::Invalid(
            "tool must be 1 to 200 characters".into(),
        ));
    }
    if let Some(hidden) = tool
        .chars()
        .find(|c| airlock_policy::visible::is_hidden(*c))
    {
        return Err(GateError::Invalid(format!(
            "tool must not hold control or invisible characters (it holds U+{:04X})",
            u32::from(hidden)
        )));
    }
    if !arguments.is_object() {
        return Err(GateError::Invalid("arguments must be a JSON object".into()));
    }
    Ok(())
}

/// The approval an asked `call` waits on: its preview (the policy's templates over the
/// arguments), the binding digest over the exact arguments and the policy in force
/// (G2), the target a standing rule could use, and its deadline.
fn approval_for(
    workspace: &str,
    call: &Call,
    submission: &Submission,
    verdict: &Verdict,
    loaded: Option<&LoadedPolicy>,
    policy_digest: &str,
    now: jiff::Timestamp,
) -> Approval {
    let approval_id = new_id("apr");
    let tool = loaded.and_then(|l| {
        l.policy
            .tool_or_declared(&submission.tool, submission.declared.as_ref())
    });
    let preview = build_preview(
        &submission.tool,
        tool.and_then(|t| t.summary.as_ref()),
        tool.and_then(|t| t.body.as_ref()),
        &submission.arguments,
    );
    // Only a target a standing rule could use, and never one holding a secret.
    let standing_target = verdict
        .target
        .clone()
        .filter(|_| matches!(verdict.risk, Risk::Write | Risk::External))
        .filter(|target| secrets::redact_text(target) == *target);
    let deadline = add_seconds(now, verdict.deadline_seconds.unwrap_or(24 * 60 * 60));
    Approval {
        binding_digest: binding_digest(&Binding {
            approval: &approval_id,
            workspace,
            agent: &call.agent_id,
            session: submission.session_id.as_deref(),
            tool: &submission.tool,
            arguments: &submission.arguments,
            policy: policy_digest,
        }),
        id: approval_id,
        call_id: call.id.clone(),
        agent_id: call.agent_id.clone(),
        session_id: submission.session_id.clone(),
        status: ApprovalStatus::Pending,
        tool: submission.tool.clone(),
        risk: verdict.risk,
        preview,
        rule: verdict.rule.clone(),
        reason: verdict.reason.clone(),
        policy_digest: policy_digest.to_owned(),
        standing_target,
        deadline,
        created_at: now,
        decided_at: None,
        decided_by: None,
        decision_reason: None,
        edited_binding_digest: None,
        approvals_required: verdict.approvals.filter(|n| *n > 1),
        approvers: verdict.approvers.clone(),
        votes: Vec::new(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::CallContext;

    fn checked(cwd: &str, project: Option<&str>) -> CallContext {
        CallContext {
            native_tool: None,
            cwd: Some(cwd.to_owned()),
            project: project.map(str::to_owned),
            home: Some("C:\\Users\\Me".to_owned()),
        }
        .checked()
    }

    #[test]
    fn windows_folders_are_kept_as_written_and_a_project_must_hold_the_cwd() {
        let context = checked("E:\\Algo\\backend\\", Some("E:\\Algo"));
        assert_eq!(context.cwd.as_deref(), Some("E:\\Algo\\backend"));
        assert_eq!(context.project.as_deref(), Some("E:\\Algo"));
        assert_eq!(context.home.as_deref(), Some("C:\\Users\\Me"));
        // The same folder in another case and separator holds it (Windows ignores both).
        assert_eq!(
            checked("e:/algo/backend", Some("E:\\Algo"))
                .project
                .as_deref(),
            Some("E:\\Algo")
        );
        // A project that does not hold the cwd is dropped: the cwd stands for it.
        assert_eq!(
            checked("E:\\Other", Some("E:\\Algo")).project.as_deref(),
            Some("E:\\Other")
        );
        assert_eq!(checked("E:\\", None).cwd.as_deref(), Some("E:\\"));
        // Relative and drive-relative folders are no folders.
        assert_eq!(checked("Algo\\backend", None).cwd, None);
        assert_eq!(checked("E:Algo", None).cwd, None);
        // POSIX paths as before.
        assert_eq!(
            checked("/home/dev/app/src/", Some("/home/dev/app"))
                .project
                .as_deref(),
            Some("/home/dev/app")
        );
        assert_eq!(checked("/", Some("/")).cwd.as_deref(), Some("/"));
    }

    #[test]
    fn the_home_folder_and_the_root_are_never_a_project() {
        // Started in the home folder (in any spelling): a cwd, no project.
        for cwd in ["C:\\Users\\Me", "c:/users/me/", "C:\\Users\\Me\\"] {
            let context = checked(cwd, None);
            assert!(context.cwd.is_some(), "{cwd}");
            assert_eq!(context.project, None, "{cwd}");
        }
        assert_eq!(
            checked("C:\\Users\\Me", Some("C:\\Users\\Me")).project,
            None
        );
        assert_eq!(checked("/", None).project, None);
        // A folder below the home is a project as before.
        assert_eq!(
            checked("C:\\Users\\Me\\app", None).project.as_deref(),
            Some("C:\\Users\\Me\\app")
        );
    }
}
