//! The hooks' part in exactly-once (DESIGN.md §11.8): the key a hook's redeem is made
//! under, the replay a retried hook gets when its first answer was lost, and the
//! after-the-fact events (`PostToolUse`, `AfterTool`) that report a call's outcome.
//!
//! An after event decides nothing, so it is answered `{}` whatever happens; the header
//! [`OUTCOME_HEADER`] says what became of the report (`recorded`, `unmatched`: no call of
//! this agent was redeemed for it, `failed`: why is in the log).

use crate::auth::Auth;
use crate::error::ApiError;
use crate::handlers::outcomes::idempotency_key;
use crate::AppState;
use airlock_gate::outcomes::{ReportedCall, SameCall};
use airlock_hooks::{Agent, HookCall, Verdict};
use airlock_protocol::{OutcomeReport, OutcomeStatus};
use axum::http::{HeaderMap, HeaderValue};
use axum::Json;
use serde_json::Value;

/// What became of an after event's report.
pub const OUTCOME_HEADER: &str = "airlock-outcome";

/// The key a hook call's grant is redeemed under: the request's `Idempotency-Key` (what
/// `airlock hook` sends, the same on each retry), else one made from the agent's
/// tool-use id, so that Claude Code's `http` hook, which sends no header, gets one too.
pub(super) fn redeem_key(headers: &HeaderMap, call: &HookCall) -> Result<Option<String>, ApiError> {
    Ok(match idempotency_key(headers)? {
        Some(key) => Some(key.to_owned()),
        None => airlock_hooks::tool_use_key(call),
    })
}

/// The answer to a retried hook whose first attempt's grant was consumed under `key`
/// (by the call `call_id`, as the hook's lookup found it) and whose answer was lost:
/// allow again, the same grant, no second call submitted. Only for the very same call
/// (tool, arguments, session): a key met again on another call is a new call.
pub(super) async fn replayed(
    state: &AppState,
    principal: &airlock_protocol::Principal,
    key: &str,
    call_id: String,
    canonical: &airlock_hooks::Canonical,
    session_id: &Option<String>,
) -> Result<Option<Verdict>, ApiError> {
    let same = SameCall {
        tool: &canonical.tool,
        arguments: &canonical.arguments,
        session_id: session_id.as_deref(),
    };
    Ok(state
        .gate
        .replay_of(principal, key, call_id, &same)
        .await?
        .map(|(call_id, _)| Verdict::Allow {
            reason: format!("allowed by airlock (call {call_id}, answer replayed)"),
        }))
}

/// Answers an after event of `agent`: records the outcome it reports on the call it is
/// about, and says nothing to the agent.
pub(super) async fn report(
    agent: Agent,
    state: &AppState,
    auth: Result<Auth, ApiError>,
    headers: &HeaderMap,
    payload: Value,
) -> (HeaderMap, Json<Value>) {
    let said = match record(agent, state, auth, headers, payload).await {
        Ok(true) => "recorded",
        Ok(false) => "unmatched",
        Err(error) => {
            tracing::warn!(%agent, error = %error.detail(), "a hook's outcome report was not recorded");
            "failed"
        }
    };
    let mut answer = HeaderMap::new();
    answer.insert(OUTCOME_HEADER, HeaderValue::from_static(said));
    (answer, Json(Value::Object(Default::default())))
}

async fn record(
    agent: Agent,
    state: &AppState,
    auth: Result<Auth, ApiError>,
    headers: &HeaderMap,
    payload: Value,
) -> Result<bool, ApiError> {
    let Auth(principal) = auth?;
    let said = airlock_hooks::reported(&payload);
    let call = agent
        .read(payload)
        .map_err(|error| ApiError::Invalid(error.to_string()))?;
    let canonical =
        airlock_hooks::canonical(&call).map_err(|error| ApiError::Invalid(error.to_string()))?;
    let reported = ReportedCall {
        key: redeem_key(headers, &call)?,
        tool: canonical.tool,
        arguments: canonical.arguments,
    };
    let report = OutcomeReport {
        status: if said.succeeded {
            OutcomeStatus::Succeeded
        } else {
            OutcomeStatus::Failed
        },
        detail: said.detail,
    };
    Ok(state
        .gate
        .report_hook_outcome(&principal, &reported, &report)
        .await?
        .is_some())
}
