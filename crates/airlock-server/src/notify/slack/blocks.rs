//! What the Slack app shows: the approval message with its Approve / Reject buttons, the
//! same message once the approval ended (buttons gone, who decided said), and the modal
//! that asks a rejecter for the reason.
//!
//! Only the preview is shown (G9): the summary and the arguments as the gate redacted
//! them. A button's `value` is `<approval id>:<binding digest>`, so a click decides
//! exactly what the message showed.

use super::super::payload::Notice;
use airlock_protocol::{Approval, ApprovalStatus};
use serde_json::{json, Value};

/// The `action_id` of the Approve button.
pub const APPROVE: &str = "airlock_approve";
/// The `action_id` of the Reject button.
pub const REJECT: &str = "airlock_reject";
/// The `callback_id` of the reason modal.
pub const REASON_MODAL: &str = "airlock_reject_reason";
/// The `block_id` and `action_id` of the modal's reason input.
pub const REASON_INPUT: &str = "reason";

/// The longest argument text shown (a section's text holds 3000 characters).
const ARGUMENTS_SHOWN: usize = 2500;

/// Slack reads `<`, `>` and `&` as markup.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The value a button carries.
pub fn button_value(approval: &Approval) -> String {
    format!("{}:{}", approval.id, approval.binding_digest)
}

/// `(approval id, binding digest)` from a button's value.
pub fn parse_value(value: &str) -> Option<(&str, &str)> {
    value
        .split_once(':')
        .filter(|(id, digest)| !id.is_empty() && !digest.is_empty())
}

fn headline(agent: &str, approval: &Approval) -> Value {
    json!({
        "type": "section",
        "text": {"type": "mrkdwn", "text": format!(
            "*{}* asks to run `{}` ({} risk)\n{}",
            escape(agent),
            escape(&approval.tool),
            approval.risk.as_str(),
            escape(&approval.preview.summary),
        )},
    })
}

fn arguments(approval: &Approval) -> Value {
    let text = serde_json::to_string_pretty(&approval.preview.arguments).unwrap_or_default();
    let mut shown: String = text.chars().take(ARGUMENTS_SHOWN).collect();
    if shown.len() < text.len() {
        shown.push_str("\n…");
    }
    json!({
        "type": "section",
        "text": {"type": "mrkdwn", "text": format!("```{}```", escape(&shown))},
    })
}

fn fallback(agent: &str, approval: &Approval) -> String {
    format!(
        "{agent} asks to run {} ({} risk): {}",
        approval.tool,
        approval.risk.as_str(),
        approval.preview.summary
    )
}

/// The body of `chat.postMessage` for a pending approval.
pub fn pending(channel: &str, notice: &Notice<'_>) -> Value {
    let approval = notice.approval;
    let value = button_value(approval);
    json!({
        "channel": channel,
        "text": fallback(notice.agent, approval),
        "blocks": [
            headline(notice.agent, approval),
            arguments(approval),
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": format!(
                    "Decide before {} · <{}|Open in airlock> · {}",
                    approval.deadline, notice.link, approval.id
                )}],
            },
            {
                "type": "actions",
                "block_id": "airlock_decision",
                "elements": [
                    {
                        "type": "button",
                        "action_id": APPROVE,
                        "text": {"type": "plain_text", "text": "Approve"},
                        "style": "primary",
                        "value": value,
                    },
                    {
                        "type": "button",
                        "action_id": REJECT,
                        "text": {"type": "plain_text", "text": "Reject"},
                        "style": "danger",
                        "value": value,
                    },
                ],
            },
        ],
    })
}

/// How an approval ended, in a line: `Approved by alice`, `Rejected by bob: too risky`,
/// `Expired: nobody decided in time`, `Cancelled`. `who` is the decider's name.
pub fn outcome_line(approval: &Approval, who: Option<&str>) -> String {
    let by = who.map(|name| format!(" by {name}")).unwrap_or_default();
    let reason = approval
        .decision_reason
        .as_deref()
        .filter(|reason| !reason.is_empty())
        .map(|reason| format!(": {reason}"))
        .unwrap_or_default();
    match approval.status {
        ApprovalStatus::Approved => format!("Approved{by}"),
        ApprovalStatus::Rejected => format!("Rejected{by}{reason}"),
        ApprovalStatus::Expired => "Expired: nobody decided in time".into(),
        ApprovalStatus::Cancelled => format!("Cancelled{reason}"),
        ApprovalStatus::Pending => "Still waiting for a decision".into(),
    }
}

/// The body of `chat.update` once the approval ended: the preview, no buttons, the outcome.
pub fn ended(
    channel: &str,
    ts: &str,
    agent: &str,
    approval: &Approval,
    who: Option<&str>,
) -> Value {
    let outcome = outcome_line(approval, who);
    json!({
        "channel": channel,
        "ts": ts,
        "text": format!("{} — {outcome}", fallback(agent, approval)),
        "blocks": [
            headline(agent, approval),
            arguments(approval),
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": format!(
                    "*{}* · {}", escape(&outcome), approval.id
                )}],
            },
        ],
    })
}

/// The body of `views.open`: a modal asking why, carrying the button's value.
pub fn reason_modal(trigger_id: &str, value: &str, summary: &str) -> Value {
    let summary: String = summary.chars().take(200).collect();
    json!({
        "trigger_id": trigger_id,
        "view": {
            "type": "modal",
            "callback_id": REASON_MODAL,
            "private_metadata": value,
            "title": {"type": "plain_text", "text": "Reject the call"},
            "submit": {"type": "plain_text", "text": "Reject"},
            "close": {"type": "plain_text", "text": "Cancel"},
            "blocks": [
                {
                    "type": "section",
                    "text": {"type": "mrkdwn", "text": escape(&summary)},
                },
                {
                    "type": "input",
                    "block_id": REASON_INPUT,
                    "label": {"type": "plain_text", "text": "Why? The agent is told."},
                    "element": {
                        "type": "plain_text_input",
                        "action_id": REASON_INPUT,
                        "multiline": true,
                        "max_length": 2000,
                    },
                },
            ],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_split_into_approval_and_digest() {
        assert_eq!(parse_value("apr_1:abc"), Some(("apr_1", "abc")));
        assert_eq!(parse_value("apr_1:"), None);
        assert_eq!(parse_value(":abc"), None);
        assert_eq!(parse_value("apr_1"), None);
    }
}
