//! An asked call, while a person decides: the client's request stays open (with progress
//! notifications when it gave a progress token), the person may also be asked inline
//! through the client's elicitation, and the client may give up (cancel the request, or
//! disconnect).
//!
//! Inline approval: when the client declared form elicitation and the gate holds a
//! person's token ([`Gate::decides_inline`]), the client is sent an `elicitation/create`
//! with the approval's preview while the approval also waits in the inbox. Whichever
//! decides first wins, through the same gate: an inline answer is posted as that person's
//! decision (with the approval's binding digest), so a late one is refused by the gate
//! like any second decision (G3). An inbox decision first cancels the outstanding
//! elicitation (`notifications/cancelled`), and whatever the client answers later is
//! ignored. A dismissed dialog (`cancel`) decides nothing: the inbox still can.

use crate::gate::{ApprovalPrompt, Gate, InlineDecision, Pending, Waited};
use rmcp::model::{
    ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationSchema, ProgressNotificationParam, ServerRequest,
};
use rmcp::service::{PeerRequestOptions, RequestContext};
use rmcp::{Peer, RoleServer};
use std::time::Duration;
use tokio::sync::{oneshot, watch};

/// How often a waiting call tells the client it is still alive (when it asked for
/// progress), well inside the usual 60 s request timeouts. Only clients that reset their
/// timeout on progress wait longer for it: the TypeScript SDK's do not by default.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// The field of the inline approval form.
const APPROVE_FIELD: &str = "approve";

/// Why the proxy stopped waiting for a person although nobody decided.
pub const CLIENT_CANCELLED: &str = "the MCP client cancelled the call";
pub const CLIENT_DISCONNECTED: &str = "the MCP client disconnected";

/// Waits until the asked call is decided, the gate stops waiting, or the client gives up
/// (its request cancelled, or `client_gone` set); the last two end `gave_up`, and the
/// caller cancels the approval.
pub async fn wait_for_person<G: Gate>(
    gate: &G,
    pending: &Pending,
    context: &RequestContext<RoleServer>,
    mut client_gone: watch::Receiver<bool>,
) -> Waited {
    let wait = gate.wait(pending.call_id.clone());
    tokio::pin!(wait);

    // Dropping `stop_inline` tells the inline question to withdraw.
    let (stop_inline, stopped) = oneshot::channel::<()>();
    let asks_inline = gate.decides_inline() && elicits_forms(context);
    let inline = ask_inline(gate, pending.approval_id.clone(), &context.peer, stopped);
    tokio::pin!(inline);
    let mut inline_done = !asks_inline;

    let progress_token = context.meta.get_progress_token();
    let mut ticks =
        tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
    let mut progress = 0.0;
    let waited = loop {
        tokio::select! {
            waited = &mut wait => break waited,
            () = context.ct.cancelled() => break gave_up(CLIENT_CANCELLED),
            () = gone(&mut client_gone) => break gave_up(CLIENT_DISCONNECTED),
            answered = &mut inline, if !inline_done => {
                inline_done = true;
                // The decision (if any) wakes the wait; a failure leaves the inbox to decide.
                if let Err(error) = answered {
                    tracing::warn!(approval = %pending.approval_id, %error, "no inline decision");
                }
            }
            _ = ticks.tick() => {
                let Some(token) = progress_token.clone() else { continue };
                progress += 1.0;
                let mut notification = ProgressNotificationParam::new(token, progress);
                notification.message = Some("waiting for approval in airlock".into());
                // A client that cannot take it will cancel or disconnect; keep waiting.
                let _ = context.peer.notify_progress(notification).await;
            }
        }
    };
    if !inline_done {
        drop(stop_inline);
        // Withdraws the question (sends the cancellation) before the call's answer goes out.
        let _ = inline.await;
    }
    waited
}

/// Completes once the client is gone (or nobody can tell anymore whether it is).
async fn gone(client_gone: &mut watch::Receiver<bool>) {
    // `wait_for` holds a read guard in its output: drop it here, at once.
    let _gone = client_gone.wait_for(|gone| *gone).await.is_ok();
}

fn gave_up(reason: &str) -> Waited {
    Waited::Closed {
        reason: reason.to_owned(),
        gave_up: true,
    }
}

/// Whether the client declared form elicitation (a bare `elicitation: {}` means form), at
/// `initialize` or, on 2026-07-28, in this request.
pub fn elicits_forms(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|capabilities| capabilities.elicitation)
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

/// Asks the person in the client and records the answer through the gate; returns early,
/// withdrawing the question, when `stop` fires (the call was decided elsewhere).
async fn ask_inline<G: Gate>(
    gate: &G,
    approval_id: String,
    peer: &Peer<RoleServer>,
    mut stop: oneshot::Receiver<()>,
) -> Result<(), String> {
    let prompt = gate.prompt(approval_id).await?;
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(question(&prompt)?));
    let mut handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .map_err(|error| format!("cannot ask the MCP client: {error}"))?;
    let answer = tokio::select! {
        answer = &mut handle.rx => answer,
        _ = &mut stop => {
            let _ = handle.cancel(Some("decided in airlock".into())).await;
            return Ok(());
        }
    };
    let result = match answer {
        Ok(Ok(ClientResult::ElicitResult(result))) => result,
        Ok(Ok(_)) => return Err("the MCP client answered something else".into()),
        Ok(Err(error)) => return Err(format!("the MCP client: {error}")),
        Err(_) => return Err("the MCP client went away".into()),
    };
    match decision(&result) {
        Some(decision) => gate.decide(prompt, decision).await,
        None => Ok(()),
    }
}

/// The form the person sees: the preview and the approval's id, one yes/no field.
pub fn question(prompt: &ApprovalPrompt) -> Result<ElicitRequestParams, String> {
    let mut message = format!("airlock: approve this tool call?\n\n{}", prompt.summary);
    if let Some(body) = prompt
        .body
        .as_deref()
        .filter(|body| !body.trim().is_empty())
    {
        message.push_str("\n\n");
        message.push_str(body);
    }
    message.push_str(&format!(
        "\n\nApproval {} also waits in the airlock inbox; the first decision counts.",
        prompt.approval_id
    ));
    let schema = ElicitationSchema::builder()
        .required_bool_with(APPROVE_FIELD, |field| {
            field
                .title("Approve")
                .description("Run this call once, exactly as shown")
        })
        .build()
        .map_err(|error| format!("cannot build the approval form: {error}"))?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: schema,
    })
}

/// What the client's answer decides: approve only on an accepted form that says
/// `approve: true`; a decline (or an accepted "no") rejects; a dismissed dialog decides
/// nothing.
pub fn decision(result: &ElicitResult) -> Option<InlineDecision> {
    match result.action {
        ElicitationAction::Accept => {
            let approved = result
                .content
                .as_ref()
                .and_then(|content| content.get(APPROVE_FIELD))
                .and_then(serde_json::Value::as_bool)
                == Some(true);
            Some(if approved {
                InlineDecision::Approve
            } else {
                InlineDecision::Reject
            })
        }
        ElicitationAction::Decline => Some(InlineDecision::Reject),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    fn answer(value: serde_json::Value) -> ElicitResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn only_an_explicit_yes_approves() {
        let check = |value, expected| assert_eq!(decision(&answer(value)), expected);
        check(
            json!({"action": "accept", "content": {"approve": true}}),
            Some(InlineDecision::Approve),
        );
        check(
            json!({"action": "accept", "content": {"approve": false}}),
            Some(InlineDecision::Reject),
        );
        check(
            json!({"action": "accept", "content": {"approve": "yes"}}),
            Some(InlineDecision::Reject),
        );
        check(json!({"action": "accept"}), Some(InlineDecision::Reject));
        check(json!({"action": "decline"}), Some(InlineDecision::Reject));
        check(json!({"action": "cancel"}), None);
    }

    #[test]
    fn the_question_shows_the_preview_and_the_approval() {
        let prompt = ApprovalPrompt {
            approval_id: "apr_1".into(),
            summary: "Move a.txt to b.txt".into(),
            body: Some("exactly once".into()),
            binding_digest: "d".into(),
        };
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = question(&prompt).unwrap()
        else {
            panic!("a form");
        };
        assert!(message.contains("Move a.txt to b.txt") && message.contains("exactly once"));
        assert!(message.contains("apr_1"), "{message}");
        let schema = serde_json::to_value(requested_schema).unwrap();
        assert_eq!(
            schema["properties"]["approve"]["type"], "boolean",
            "{schema}"
        );
        assert_eq!(schema["required"], json!(["approve"]), "{schema}");
    }
}
