//! Coding-agent hooks: `POST /v1/hooks/claude-code`, `/v1/hooks/codex` and
//! `/v1/hooks/gemini` take each agent's own hook payload (Claude Code's `http` hook posts
//! here with no process spawned; `airlock hook …` forwards what the agent wrote on its
//! stdin), translate the native call into the canonical vocabulary (`airlock-hooks`, so one
//! policy governs every agent), put it through the gate with its project context
//! ([`place`]), and answer in the agent's own shape. [`answer`] is the one place that says
//! what a call's status means to a hook (shared with the MCP proxy in the CLI).
//!
//! A hook answers `allow` or `deny`, nothing else, and fails closed (G4):
//! - allowed / approved → the grant is redeemed first (G1: consumed exactly once, before
//!   the agent runs the tool); only a successful redeem answers `allow`. A call the
//!   policy allows has its grant consumed in the commit that records it (one commit per
//!   allowed hook call, `Gate::submit_or_adopt_redeeming`), and everything the call reads
//!   before it is judged is one statement (`Gate::look_up_hook_call`);
//! - denied, rejected (with the person's reason), expired, cancelled → `deny`;
//! - still pending when the wait is over → `deny`, saying which approval to decide; the
//!   call is held, and the agent's identical retry in the same session adopts it
//!   (`airlock_gate::retries`) instead of opening a second approval.
//!
//! Unlike every other endpoint, this one answers **every** failure it can see — a missing
//! or unknown token, a body of the wrong shape, a bad `wait_s`, a gate error — as
//! `200` with a `deny`: Claude Code treats a non-2xx answer of an `http` hook as a
//! non-blocking error and runs the tool anyway, so a problem+json here would fail open.
//!
//! The body is read leniently (unknown fields are ignored, against §6's 422 rule): it is
//! Claude Code's payload, not ours, and it grows new fields with Claude Code releases; a
//! strict reader would turn every upgrade of the agent into a blanket deny.

use crate::auth::Auth;
use crate::body::{JsonBody, Query};
use crate::error::ApiError;
use crate::AppState;
use airlock_gate::calls::{CallContext, RedeemOnAllow, Redeeming, Submission, MAX_WAIT};
use airlock_gate::retries::escalation_key;
use airlock_hooks::{Agent, HookCall, HookEvent, Verdict};
use airlock_protocol::{Call, CallStatus, DecidedBy};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;
use utoipa::{IntoParams, ToSchema};

mod after;
pub mod place;

pub use after::OUTCOME_HEADER;

pub use airlock_hooks::place::UNDECIDED_HEADER;

/// How long a hook waits for a person by default: with `airlock hook`'s 3 s to answer,
/// below the 60 s hook timeout every integration guide configures.
pub const DEFAULT_HOOK_WAIT: Duration = Duration::from_secs(55);

/// What a hook tells the agent about a call, before any grant is redeemed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The call may run once its grant is redeemed; `reason` is for the transcript.
    RedeemThenAllow { reason: String },
    /// The call must not run; `reason` is what the model reads.
    Deny { reason: String },
}

/// The meaning of a call's status to a hook (fail closed: anything but allowed/approved is
/// a deny).
pub fn answer(call: &Call) -> Answer {
    let rule = call
        .rule
        .as_deref()
        .map(|rule| format!(" (rule `{rule}`)"))
        .unwrap_or_default();
    let said = |fallback: &str| {
        call.reason
            .as_deref()
            .filter(|reason| !reason.trim().is_empty())
            .unwrap_or(fallback)
            .to_owned()
    };
    match call.status {
        CallStatus::Allowed => Answer::RedeemThenAllow {
            reason: match call.decided_by {
                DecidedBy::StandingRule => "allowed by airlock (a standing rule)".to_owned(),
                _ => format!("allowed by airlock{rule}"),
            },
        },
        CallStatus::Approved => Answer::RedeemThenAllow {
            reason: "approved by a person in airlock".to_owned(),
        },
        CallStatus::Denied => Answer::Deny {
            reason: format!("denied by airlock{rule}: {}", said("policy")),
        },
        CallStatus::Rejected => Answer::Deny {
            reason: format!(
                "rejected by a person in airlock: {}",
                said("no reason given")
            ),
        },
        CallStatus::Expired => Answer::Deny {
            reason: "the airlock approval expired: nobody decided before its deadline".to_owned(),
        },
        CallStatus::Cancelled => Answer::Deny {
            reason: "the airlock approval was cancelled".to_owned(),
        },
        CallStatus::Pending => {
            let approval = call.approval_id.as_deref().unwrap_or("(unknown)");
            Answer::Deny {
                reason: format!(
                    "not allowed yet: airlock approval {approval} is still pending. A person \
                     can approve it in the airlock inbox or with `airlock approvals approve \
                     {approval}` (or POST /v1/approvals/{approval}/decision); then try the \
                     call again"
                ),
            }
        }
    }
}

/// `?wait_s=N` of the hook endpoints.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct HookQuery {
    /// Seconds to wait for a person to decide an asked call (default 55, at most 60).
    #[serde(default)]
    pub wait_s: Option<u64>,
}

/// Claude Code's `PreToolUse` hook input (the shape of the other agents' payloads is
/// alike: DESIGN.md §11.1). The tool, its input, the session and the folder matter to the
/// gate; the other documented fields are accepted and ignored, and so are fields not known
/// today.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(example = json!({
    "session_id": "abc123",
    "transcript_path": "/home/ana/.claude/projects/demo/abc123.jsonl",
    "cwd": "/home/ana/demo",
    "permission_mode": "default",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "git push", "description": "Push the branch"}
}))]
pub struct ClaudeCodeHook {
    /// As Claude Code names it (`Bash`, `Edit`, `mcp__server__tool`…); translated into the
    /// canonical vocabulary (`shell.exec`, `fs.edit`…) and kept as `native_tool`.
    pub tool_name: String,
    /// The tool's arguments, a JSON object.
    #[schema(value_type = Object)]
    pub tool_input: Value,
    /// `PreToolUse` when absent. `PreSkillShellCommand` (a skill's shell line) is gated
    /// alike and answered under its own name; `PostToolUse` and `PostToolUseFailure`
    /// report an outcome (answered `{}`); any other event is refused (with a deny).
    #[serde(default)]
    pub hook_event_name: Option<String>,
    /// Claude Code's session: its calls share one airlock session (so session-scoped
    /// standing rules and the inbox follow it).
    #[serde(default)]
    pub session_id: Option<String>,
    /// The working folder: the call's `cwd`, and the start of the search for its project
    /// (the git work tree holding it).
    #[serde(default)]
    pub cwd: Option<String>,
}

/// Claude Code's hook output.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClaudeCodeOutput {
    #[serde(rename = "hookSpecificOutput")]
    pub hook_specific_output: PreToolUseOutput,
}

/// The `PreToolUse` part of Claude Code's hook output.
#[derive(Debug, Serialize, ToSchema)]
pub struct PreToolUseOutput {
    /// Always `PreToolUse`.
    #[serde(rename = "hookEventName")]
    pub hook_event_name: String,
    /// `allow` or `deny`.
    #[serde(rename = "permissionDecision")]
    pub permission_decision: String,
    /// Shown to the model on deny, to the user on allow.
    #[serde(rename = "permissionDecisionReason")]
    pub permission_decision_reason: String,
}

/// Gates one Claude Code tool call (agent token): submits it, waits up to `wait_s` for a
/// person, redeems the grant of an allowed or approved call, and answers in Claude Code's
/// `PreToolUse` shape. Every failure is a `200` deny (see the module documentation).
#[utoipa::path(post, path = "/v1/hooks/claude-code", operation_id = "claude_code_hook", tag = "hooks",
    request_body = ClaudeCodeHook, params(HookQuery),
    responses(
        (status = 200, description = "The verdict for Claude Code: allow (grant redeemed) or deny with the reason. \
            Failures — a bad token, a bad body, a gate error — are also a 200 deny, because Claude Code runs the tool \
            when an http hook answers anything but 2xx.", body = ClaudeCodeOutput)))]
pub async fn claude_code(
    State(state): State<AppState>,
    auth: Result<Auth, ApiError>,
    headers: HeaderMap,
    query: Result<Query<HookQuery>, ApiError>,
    body: Result<JsonBody<Value>, ApiError>,
) -> (HeaderMap, Json<Value>) {
    hook(Agent::ClaudeCode, &state, auth, &headers, query, body).await
}

/// Gates one Codex tool call: a `PreToolUse` payload (every shell call; an allowed call is
/// answered `{}`, which Codex reads as "no objection") or a `PermissionRequest` one (an
/// escalation out of the sandbox; answered allow or deny). Every failure is a `200` deny
/// in the event's own shape.
#[utoipa::path(post, path = "/v1/hooks/codex", operation_id = "codex_hook", tag = "hooks",
    request_body(content = Object, description = "Codex's `PreToolUse` or `PermissionRequest` hook input, as Codex writes it on the hook's stdin."),
    params(HookQuery),
    responses(
        (status = 200, description = "Codex's hook output: `{}` for an allowed `PreToolUse` call, \
            `hookSpecificOutput.permissionDecision = deny` for a denied one, \
            `hookSpecificOutput.decision.behavior` for a `PermissionRequest`. Failures are a 200 deny.", body = Object)))]
pub async fn codex(
    State(state): State<AppState>,
    auth: Result<Auth, ApiError>,
    headers: HeaderMap,
    query: Result<Query<HookQuery>, ApiError>,
    body: Result<JsonBody<Value>, ApiError>,
) -> (HeaderMap, Json<Value>) {
    hook(Agent::Codex, &state, auth, &headers, query, body).await
}

/// Gates one Gemini CLI tool call (a `BeforeTool` payload) and answers `{decision, reason}`.
/// Every failure is a `200` deny.
#[utoipa::path(post, path = "/v1/hooks/gemini", operation_id = "gemini_hook", tag = "hooks",
    request_body(content = Object, description = "Gemini CLI's `BeforeTool` hook input, as Gemini writes it on the hook's stdin."),
    params(HookQuery),
    responses(
        (status = 200, description = "Gemini CLI's hook output `{decision: allow|deny, reason}`. Failures are a 200 deny.", body = Object)))]
pub async fn gemini(
    State(state): State<AppState>,
    auth: Result<Auth, ApiError>,
    headers: HeaderMap,
    query: Result<Query<HookQuery>, ApiError>,
    body: Result<JsonBody<Value>, ApiError>,
) -> (HeaderMap, Json<Value>) {
    hook(Agent::Gemini, &state, auth, &headers, query, body).await
}

/// One hook call of any agent, answered in that agent's shape for the event it names
/// (the agent's default event when the payload cannot be read). A deny that comes from a
/// failure rather than a verdict also carries the [`UNDECIDED_HEADER`], so that
/// `airlock hook` can block with exit 2 as the agents expect of a hook that could not
/// decide.
async fn hook(
    agent: Agent,
    state: &AppState,
    auth: Result<Auth, ApiError>,
    headers: &HeaderMap,
    query: Result<Query<HookQuery>, ApiError>,
    body: Result<JsonBody<Value>, ApiError>,
) -> (HeaderMap, Json<Value>) {
    // The shape of the answer follows the event the payload names, even when the rest of
    // it cannot be read.
    let event = match &body {
        Ok(JsonBody(value)) => Some(agent.event_in(value)).filter(|event| event.is_before()),
        Err(_) => None,
    }
    .unwrap_or_else(|| agent.default_event());
    // `PostToolUse` / `AfterTool`: an outcome to record, nothing to decide (§11.8).
    let body = match body {
        Ok(JsonBody(value)) if !agent.event_in(&value).is_before() => {
            return after::report(agent, state, auth, headers, value).await;
        }
        body => body,
    };
    let outcome = match read(agent, body) {
        Ok(call) => gate(state, auth, headers, query, call).await,
        Err(error) => Err(error),
    };
    let mut answer_headers = HeaderMap::new();
    let verdict = outcome.unwrap_or_else(|error| {
        answer_headers.insert(UNDECIDED_HEADER, HeaderValue::from_static("true"));
        Verdict::Deny {
            reason: failure(&error),
        }
    });
    let body = airlock_hooks::render(agent, event, &verdict)
        .unwrap_or_else(|| Value::Object(Default::default()));
    (answer_headers, Json(body))
}

/// The hook call in a body, or why it cannot be judged.
fn read(agent: Agent, body: Result<JsonBody<Value>, ApiError>) -> Result<HookCall, ApiError> {
    let JsonBody(value) = body?;
    let call = agent
        .read(value)
        .map_err(|error| ApiError::Invalid(error.to_string()))?;
    if !call.event.is_before() {
        return Err(ApiError::Invalid(format!(
            "this endpoint gates calls before they run ({}), not {}",
            before_events(agent),
            call.event.name()
        )));
    }
    Ok(call)
}

fn before_events(agent: Agent) -> &'static str {
    match agent {
        Agent::ClaudeCode => "PreToolUse, PreSkillShellCommand",
        Agent::Codex => "PreToolUse, PermissionRequest",
        Agent::Gemini => "BeforeTool",
    }
}

/// Translate, submit, wait, redeem: the verdict, or the error that makes it a deny.
async fn gate(
    state: &AppState,
    auth: Result<Auth, ApiError>,
    headers: &HeaderMap,
    query: Result<Query<HookQuery>, ApiError>,
    call: HookCall,
) -> Result<Verdict, ApiError> {
    let Auth(principal) = auth?;
    let Query(query) = query?;
    let wait = query.wait_s.map_or(DEFAULT_HOOK_WAIT, Duration::from_secs);
    if wait > MAX_WAIT {
        return Err(ApiError::Invalid(format!(
            "wait_s must be at most {}",
            MAX_WAIT.as_secs()
        )));
    }
    let canonical =
        airlock_hooks::canonical(&call).map_err(|error| ApiError::Invalid(error.to_string()))?;
    let span = state.telemetry.call_span(headers);
    let key = after::redeem_key(headers, &call)?;
    // The session's place. A shell call that names its own folder (Codex's `workdir`,
    // Gemini's `dir_path`) has it as its `cwd` argument, which the policy judges its
    // relative paths against, in the session's project.
    let place = place::Place::of(&call, headers);
    let submission = Submission {
        tool: canonical.tool.clone(),
        arguments: canonical.arguments.clone(),
        session_id: None,
        declared: None,
        context: CallContext {
            native_tool: Some(canonical.native_tool.clone()),
            cwd: place.cwd,
            project: place.project,
            home: place.home,
        },
    };
    // Calls of one agent session share one airlock session. The session, a redeem under
    // the key, a call held for this retry and an ambiguous twin: one read.
    let external = call
        .session_id
        .as_deref()
        .map(|external| (external, session_title(call.agent, call.cwd.as_deref())));
    let looked_up = state
        .gate
        .look_up_hook_call(&principal, external, key.as_deref(), &submission)
        .await?;
    let session = looked_up.session.clone();
    let session_id = session.as_ref().map(|session| session.id.clone());
    // A retry of a hook whose grant was consumed and whose answer was lost (§11.8).
    if let (Some(key), Some(call_id)) = (key.as_deref(), looked_up.redeemed_under.clone()) {
        if let Some(verdict) =
            after::replayed(state, &principal, key, call_id, &canonical, &session_id).await?
        {
            return Ok(verdict);
        }
    }
    // What this hook call asks for, to tell a person's edit from the call itself.
    let asked = canonical.arguments.clone();
    let hook_call = call.clone();
    let submission = Submission {
        session_id,
        ..submission
    };
    // Codex asks about a call leaving its sandbox twice (`PreToolUse`, then
    // `PermissionRequest`): the second takes the first's verdict (`retries`).
    let event = call.event;
    let escalation = match (call.agent, event) {
        (Agent::Codex, HookEvent::PreToolUse | HookEvent::PermissionRequest) => {
            escalation_key(&principal, &submission, call.turn_id.as_deref())
        }
        _ => None,
    };
    if event == HookEvent::PermissionRequest {
        if let Some(key) = &escalation {
            if let Some(allowed) = state.gate.take_escalation(&principal, key).await? {
                return Ok(Verdict::Allow {
                    reason: format!(
                        "allowed by airlock: call {} was allowed when Codex first asked to run it",
                        allowed.id
                    ),
                });
            }
        }
    }
    let submitted = submission.clone();
    // An allowed call is redeemed as it is recorded: one commit, not two (the grant is
    // consumed by that commit, under the same key a separate redeem would use, and held
    // for Codex's escalation as it would be after one).
    let redeeming = Redeeming {
        session,
        redeem: Some(RedeemOnAllow {
            key: key.clone(),
            hold: escalation
                .clone()
                .filter(|_| event == HookEvent::PreToolUse),
        }),
        looked_up: Some(looked_up),
    };
    let mut taken = state
        .gate
        .submit_or_adopt_redeeming(&principal, submission, &redeeming)
        .await?;
    if !taken.adopted {
        state.metrics.call(taken.call.status);
    }
    let call = if taken.call.status == CallStatus::Pending && !wait.is_zero() {
        tokio::select! {
            call = state.gate.wait_call(&principal, &taken.call.id, wait) => call?,
            // On shutdown, answer with the call as it stands (a pending call is a deny).
            _ = state.shutdown.cancelled() => state.gate.get_call(&principal, &taken.call.id).await?,
        }
    } else {
        taken.call
    };
    state.telemetry.finish(span, &state.gate, &call).await;
    // The agent is told to try again: its identical retry adopts this call (no second
    // approval), so a person's late decision is not lost.
    if call.status == CallStatus::Pending {
        if let Some(key) = &taken.retry_key {
            state.gate.hold_for_retry(&principal, &call, key).await?;
            return Ok(Verdict::Deny {
                reason: still_pending(&call),
            });
        }
    }
    // A person approved other arguments than this hook call's (DESIGN.md §11.6).
    let edit = match answer(&call) {
        Answer::RedeemThenAllow { .. }
            if call.original_arguments.is_some() && call.arguments != asked =>
        {
            let input = airlock_hooks::native_input(&hook_call, &asked, &call.arguments);
            // Only Claude Code's `PreToolUse` applies an `updatedInput`.
            match (hook_call.agent, hook_call.event, input) {
                (Agent::ClaudeCode, HookEvent::PreToolUse, Some(input)) => Some(input),
                (_, _, input) => {
                    return edited_elsewhere(state, &principal, &call, submitted, input).await
                }
            }
        }
        _ => None,
    };
    Ok(match answer(&call) {
        Answer::Deny { reason } => Verdict::Deny { reason },
        Answer::RedeemThenAllow { reason } => {
            let at_record = taken.redemption.take();
            let held = at_record.is_some();
            let redeemed = match (at_record, &taken.retry_key, taken.adopted) {
                (Some(redemption), _, _) => Ok(redemption),
                (None, Some(retry), true) => {
                    state
                        .gate
                        .redeem_adopted(&principal, &call, retry, key.as_deref())
                        .await
                }
                _ => {
                    state
                        .gate
                        .redeem_keyed(&principal, &call.id, key.as_deref())
                        .await
                }
            };
            if let (Ok(_), Some(escalation), HookEvent::PreToolUse, false) =
                (&redeemed, &escalation, event, held)
            {
                state
                    .gate
                    .hold_for_escalation(&principal, &call.id, escalation)
                    .await?;
            }
            // Claude Code reports no outcome for a skill's shell line: without one the
            // call would turn ambiguous after `outcome_timeout` and hold back every identical
            // call until a person reconciled it. It runs as soon as it is allowed, so it is
            // recorded as run, saying why.
            if redeemed.is_ok() && event == HookEvent::PreSkillShellCommand {
                let report = airlock_protocol::OutcomeReport {
                    status: airlock_protocol::OutcomeStatus::Succeeded,
                    detail: Some(
                        "a skill's shell line: Claude Code reports no outcome for it; recorded \
                         as run when it was allowed"
                            .into(),
                    ),
                };
                if let Err(error) = state
                    .gate
                    .report_outcome(&principal, &call.id, &report)
                    .await
                {
                    tracing::warn!(call = %call.id, error = %ApiError::from(error).detail(), "a skill line's outcome was not recorded");
                }
            }
            let reason = if taken.adopted {
                format!(
                    "{reason} (approval {} of the earlier identical call)",
                    call.approval_id.as_deref().unwrap_or("-")
                )
            } else {
                reason
            };
            match redeemed {
                Ok(_) => match edit {
                    Some(input) => Verdict::AllowEdited {
                        reason: format!(
                            "{reason}, with its arguments edited by that person: {}",
                            call.arguments
                        ),
                        input,
                    },
                    None => Verdict::Allow { reason },
                },
                Err(error) => Verdict::Deny {
                    reason: format!(
                        "the call's grant could not be redeemed: {}",
                        ApiError::from(error).detail()
                    ),
                },
            }
        }
    })
}

/// The answer to an agent that cannot take an edited input (Codex, Gemini CLI), or to an
/// edit that its input cannot carry: a deny that says what to run instead. When the edit
/// can be written as the agent's own call, the approved call is held for exactly that
/// call (`airlock_gate::retries`), so running it uses this approval, once, with no second
/// question; the grant is never spent on the unedited call.
async fn edited_elsewhere(
    state: &AppState,
    principal: &airlock_protocol::Principal,
    call: &Call,
    submitted: Submission,
    input: Option<Value>,
) -> Result<Verdict, ApiError> {
    let approval = call.approval_id.as_deref().unwrap_or("(unknown)");
    let native = submitted.context.native_tool.clone().unwrap_or_default();
    let Some(input) = input else {
        return Ok(Verdict::Deny {
            reason: format!(
                "a person approved this call (airlock approval {approval}) only with edited \
                 arguments, which cannot be written as a `{native}` call: the approved call \
                 is `{}` with {}. Make that call instead if it is what you mean to do (it will \
                 be asked again)",
                call.tool, call.arguments
            ),
        });
    };
    // The key the agent's next call will be looked up by, taken as `submit_or_adopt`
    // takes it: over the checked context.
    let retry = Submission {
        arguments: call.arguments.clone(),
        context: submitted.context.clone().checked(),
        ..submitted
    };
    let held = match airlock_gate::retries::retry_key(principal, &retry) {
        Some(key) => {
            state.gate.hold_for_retry(principal, call, &key).await?;
            true
        }
        None => false,
    };
    let then = if held {
        "run exactly that call now: it runs once under this approval, without a new question"
    } else {
        "run exactly that call (outside a session it is asked again)"
    };
    Ok(Verdict::Deny {
        reason: format!(
            "not run as sent: a person approved this call (airlock approval {approval}) only \
             with edited arguments. Instead of this call, use `{native}` with the input \
             {input}; {then}"
        ),
    })
}

/// The deny of a call held for the agent's retry: what the person does, and what the
/// retry then gets (the held call's approval, never a second question).
fn still_pending(call: &Call) -> String {
    let approval = call.approval_id.as_deref().unwrap_or("(unknown)");
    format!(
        "not allowed yet: airlock approval {approval} is still pending (the hook stopped \
         waiting). A person can decide it in the airlock inbox or with `airlock approvals \
         approve {approval}`. Then retry exactly the same call in this session: it runs once \
         with that approval if approved, is refused with the reason if rejected, and waits \
         again if still undecided; no new approval is opened"
    )
}

/// A failure as the reason of a deny. Logged here, once, because it never becomes an
/// error response (whose conversion would log it).
fn failure(error: &ApiError) -> String {
    if let ApiError::Unavailable(message) = error {
        tracing::error!(error = %message, "hook denied: storage unavailable");
    }
    format!("airlock could not decide this call: {}", error.detail())
}

/// The title of a coding agent's session in airlock.
pub fn session_title(agent: Agent, cwd: Option<&str>) -> String {
    match cwd {
        Some(cwd) => format!("{} in {cwd}", agent.display_name()),
        None => agent.display_name().into(),
    }
}
