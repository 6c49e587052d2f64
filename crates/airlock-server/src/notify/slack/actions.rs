//! `POST /v1/integrations/slack/actions`: Slack's interactivity callback.
//!
//! In order, before anything in the request is believed: the v0 signature over the raw
//! body and its 5-minute window (else 401), then the signature is recorded in the store
//! and a second arrival of the same signed request is a replay (401). Nothing is decided
//! on a 401.
//!
//! Then, for a click on Approve (`block_actions`) or the reason modal's submission
//! (`view_submission`): the Slack user must be mapped to an airlock user in the config and
//! that user must exist in the approval's workspace (else an ephemeral reply to the
//! clicker, nothing decided); the approval must be one whose message this server posted;
//! the decision goes through `Gate::decide` as that user, echoing the binding digest the
//! button carried, so the gate's checks (role, status, deadline, digest, policy) all apply.
//! A click on Reject opens the modal (`views.open`). Whatever the outcome, an approval
//! that is no longer pending gets its message updated (buttons removed, who decided),
//! which is also what a click on an already decided approval gets: nothing else changes.

use super::blocks::{self, parse_value, APPROVE, REASON_INPUT, REASON_MODAL, REJECT};
use super::verify::{self, WINDOW_SECONDS};
use super::{call, Notifier};
use crate::error::ApiError;
use crate::notify::config::{Channel, SlackTarget};
use crate::AppState;
use airlock_gate::GateError;
use airlock_protocol::{
    ApprovalStatus, DecisionRequest, DecisionVerdict, Principal, Problem, Subject,
};
use airlock_store::SlackMessage;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use jiff::Timestamp;
use serde::Deserialize;
use serde_json::{json, Value};

/// The parts of an interaction payload used here; Slack sends many more (ignored).
#[derive(Debug, Deserialize)]
struct Interaction {
    #[serde(rename = "type")]
    kind: String,
    user: SlackUser,
    #[serde(default)]
    actions: Vec<Action>,
    #[serde(default)]
    trigger_id: Option<String>,
    #[serde(default)]
    view: Option<View>,
}

#[derive(Debug, Deserialize)]
struct SlackUser {
    id: String,
}

#[derive(Debug, Deserialize)]
struct Action {
    action_id: String,
    #[serde(default)]
    value: Option<String>,
}

#[derive(Debug, Deserialize)]
struct View {
    #[serde(default)]
    callback_id: Option<String>,
    #[serde(default)]
    private_metadata: Option<String>,
    #[serde(default)]
    state: Option<ViewState>,
}

#[derive(Debug, Deserialize)]
struct ViewState {
    #[serde(default)]
    values: Value,
}

/// The form Slack posts: `payload=<JSON>`.
#[derive(Debug, Deserialize)]
struct Form {
    payload: String,
}

/// Slack's interactivity callback: Approve / Reject clicks and the reason modal. Signed
/// by Slack (v0), not by a bearer token.
#[utoipa::path(post, path = "/v1/integrations/slack/actions", operation_id = "slack_actions", tag = "integrations",
    security(()),
    request_body(content = String, content_type = "application/x-www-form-urlencoded",
        description = "Slack's form `payload=<interaction JSON>`, with `X-Slack-Request-Timestamp` and `X-Slack-Signature`."),
    responses(
        (status = 200, description = "Handled: decided, a modal opened, or the clicker told privately why not"),
        (status = 401, description = "A bad or missing signature, a timestamp over 5 minutes off, or a replayed request: nothing decided", body = Problem),
        (status = 404, description = "No Slack app is configured on this server", body = Problem),
        (status = 422, description = "Not a Slack interaction payload", body = Problem)))]
pub async fn actions(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    match handle(&state, &headers, &body).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

async fn handle(state: &AppState, headers: &HeaderMap, body: &[u8]) -> Result<Response, ApiError> {
    let not_configured = || ApiError::NotFound("no Slack app is configured on this server".into());
    let notifier = state.notifier.as_ref().ok_or_else(not_configured)?;
    let (channel, target) = notifier.settings.slack().ok_or_else(not_configured)?;
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    let signature = header("x-slack-signature");
    // Slack's clock against ours, not the gate's (which tests may move).
    let now = Timestamp::now();
    verify::verify(
        &target.signing_secret,
        header("x-slack-request-timestamp"),
        signature,
        body,
        now.as_second(),
    )
    .map_err(|refusal| ApiError::Unauthorized(refusal.message().into()))?;
    let forget_before = Timestamp::from_second(now.as_second() - 2 * WINDOW_SECONDS).unwrap_or(now);
    let first = notifier
        .gate
        .notifications()
        .first_slack_request(signature.unwrap_or_default(), now, forget_before)
        .await
        .map_err(GateError::from)?;
    if !first {
        return Err(ApiError::Unauthorized(
            "this signed request was already received (a replay)".into(),
        ));
    }
    let form: Form = serde_urlencoded::from_bytes(body)
        .map_err(|error| ApiError::Invalid(format!("the body is not Slack's form: {error}")))?;
    let interaction: Interaction = serde_json::from_str(&form.payload)
        .map_err(|error| ApiError::Invalid(format!("the payload is not Slack's: {error}")))?;
    let slack = Slack {
        state,
        notifier,
        channel,
        target,
    };
    match interaction.kind.as_str() {
        "block_actions" => slack.clicked(&interaction).await,
        "view_submission"
            if interaction
                .view
                .as_ref()
                .and_then(|view| view.callback_id.as_deref())
                == Some(REASON_MODAL) =>
        {
            slack.submitted(&interaction).await
        }
        // Other interactions (a closed modal, shortcuts…) are not ours to act on.
        _ => Ok(StatusCode::OK.into_response()),
    }
}

struct Slack<'a> {
    state: &'a AppState,
    notifier: &'a Notifier,
    channel: &'a Channel,
    target: &'a SlackTarget,
}

impl Slack<'_> {
    /// A click on one of the message's buttons.
    async fn clicked(&self, interaction: &Interaction) -> Result<Response, ApiError> {
        let Some(action) = interaction.actions.first() else {
            return Ok(StatusCode::OK.into_response());
        };
        let value = action.value.as_deref().unwrap_or_default();
        let (approval_id, digest) = parse_value(value)
            .ok_or_else(|| ApiError::Invalid("the button carries no approval".into()))?;
        let Some(message) = self.message(approval_id).await? else {
            return Ok(StatusCode::OK.into_response());
        };
        match action.action_id.as_str() {
            APPROVE => {
                self.decide(
                    &interaction.user.id,
                    &message,
                    digest,
                    DecisionVerdict::Approve,
                    None,
                )
                .await
            }
            REJECT => {
                // An ended approval gets its message updated instead of a modal.
                if self.close_if_ended(&message).await? {
                    return Ok(StatusCode::OK.into_response());
                }
                if self.person(&interaction.user.id, &message).await?.is_none() {
                    return Ok(StatusCode::OK.into_response());
                }
                let trigger = interaction.trigger_id.as_deref().unwrap_or_default();
                let approval = self.approval(&message).await?;
                let summary = approval.map(|a| a.preview.summary).unwrap_or_default();
                let modal = blocks::reason_modal(trigger, value, &summary);
                if let Err(failure) =
                    call(&self.notifier.http, self.target, "views.open", &modal).await
                {
                    tracing::warn!(error = %failure.error, "slack: the reason modal could not be opened");
                }
                Ok(StatusCode::OK.into_response())
            }
            _ => Ok(StatusCode::OK.into_response()),
        }
    }

    /// The reason modal, submitted.
    async fn submitted(&self, interaction: &Interaction) -> Result<Response, ApiError> {
        let view = interaction.view.as_ref();
        let value = view
            .and_then(|view| view.private_metadata.as_deref())
            .unwrap_or_default();
        let (approval_id, digest) = parse_value(value)
            .ok_or_else(|| ApiError::Invalid("the modal carries no approval".into()))?;
        let reason = view
            .and_then(|view| view.state.as_ref())
            .and_then(|state| state.values.get(REASON_INPUT))
            .and_then(|block| block.get(REASON_INPUT))
            .and_then(|input| input.get("value"))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|reason| !reason.is_empty())
            .map(str::to_owned);
        let Some(message) = self.message(approval_id).await? else {
            return Ok(StatusCode::OK.into_response());
        };
        self.decide(
            &interaction.user.id,
            &message,
            digest,
            DecisionVerdict::Reject,
            reason,
        )
        .await
    }

    /// The message this server posted for `approval_id` on its Slack channel.
    async fn message(&self, approval_id: &str) -> Result<Option<SlackMessage>, ApiError> {
        Ok(self
            .notifier
            .gate
            .notifications()
            .slack_message(approval_id, &self.channel.name)
            .await
            .map_err(GateError::from)?)
    }

    async fn approval(
        &self,
        message: &SlackMessage,
    ) -> Result<Option<airlock_protocol::Approval>, ApiError> {
        Ok(self
            .notifier
            .gate
            .notifications()
            .approval(&message.workspace, &message.approval_id)
            .await
            .map_err(GateError::from)?)
    }

    /// Updates the message when its approval is no longer pending; whether it has ended.
    async fn close_if_ended(&self, message: &SlackMessage) -> Result<bool, ApiError> {
        let Some(approval) = self.approval(message).await? else {
            return Ok(true);
        };
        if approval.status == ApprovalStatus::Pending {
            return Ok(false);
        }
        self.notifier
            .close_slack_message(message, &approval)
            .await
            .map_err(GateError::from)?;
        Ok(true)
    }

    /// The airlock user a Slack user acts as, in the message's workspace; `None` (after
    /// telling the clicker, privately) when there is none.
    async fn person(
        &self,
        slack_user: &str,
        message: &SlackMessage,
    ) -> Result<Option<Principal>, ApiError> {
        let Some(name) = self.target.users.get(slack_user) else {
            self.ephemeral(
                message,
                slack_user,
                "Your Slack account is not linked to an airlock user, so nothing was \
                 decided. Ask an airlock admin to add it under [notifications.slack.users].",
            )
            .await;
            return Ok(None);
        };
        let users = self
            .notifier
            .gate
            .notifications()
            .users(&message.workspace)
            .await
            .map_err(GateError::from)?;
        let Some(user) = users.into_iter().find(|user| &user.name == name) else {
            self.ephemeral(
                message,
                slack_user,
                &format!(
                    "Your Slack account is linked to the airlock user {name}, who is not in \
                     this approval's workspace, so nothing was decided."
                ),
            )
            .await;
            return Ok(None);
        };
        Ok(Some(Principal {
            workspace: message.workspace.clone(),
            subject: Subject::User {
                id: user.id,
                name: user.name,
                role: user.role,
            },
        }))
    }

    /// Decides as the Slack user's airlock user, then updates the message if the approval
    /// ended (by this decision or before it).
    async fn decide(
        &self,
        slack_user: &str,
        message: &SlackMessage,
        digest: &str,
        verdict: DecisionVerdict,
        reason: Option<String>,
    ) -> Result<Response, ApiError> {
        if self.close_if_ended(message).await? {
            return Ok(StatusCode::OK.into_response());
        }
        let Some(principal) = self.person(slack_user, message).await? else {
            return Ok(StatusCode::OK.into_response());
        };
        let request = DecisionRequest {
            decision: verdict,
            binding_digest: digest.to_owned(),
            reason,
            remember: None,
            arguments: None,
        };
        let decided = self
            .notifier
            .gate
            .decide(&principal, &message.approval_id, request)
            .await;
        match decided {
            Ok(approval) => {
                crate::telemetry::decided(self.state, &approval).await;
            }
            // Ended meanwhile: the update below says how.
            Err(GateError::AlreadyDecided(_) | GateError::Expired) => {}
            Err(GateError::Unavailable(error)) => return Err(ApiError::Unavailable(error)),
            Err(error) => {
                self.ephemeral(
                    message,
                    slack_user,
                    &format!("Nothing was decided: {error}."),
                )
                .await;
            }
        }
        self.close_if_ended(message).await?;
        Ok(StatusCode::OK.into_response())
    }

    /// A message only `slack_user` sees, in the approval message's conversation.
    async fn ephemeral(&self, message: &SlackMessage, slack_user: &str, text: &str) {
        let body = json!({
            "channel": message.slack_channel,
            "user": slack_user,
            "text": text,
        });
        if let Err(failure) = call(
            &self.notifier.http,
            self.target,
            "chat.postEphemeral",
            &body,
        )
        .await
        {
            tracing::warn!(error = %failure.error, "slack: an ephemeral reply could not be sent");
        }
    }
}
