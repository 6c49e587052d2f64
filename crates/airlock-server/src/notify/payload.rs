//! What a notification says: the webhook JSON, the Slack-compatible payload, the email.
//!
//! Every shape carries the approval's preview as the gate redacted it (G9): summary,
//! tool, risk, agent, deadline; never the arguments.

use super::slack::blocks::shown;
use airlock_protocol::Approval;
use serde_json::{json, Value};

/// The facts every shape is built from.
#[derive(Debug, Clone)]
pub struct Notice<'a> {
    /// The notification's id (also the receiver's idempotency key).
    pub delivery: &'a str,
    pub approval: &'a Approval,
    /// The agent's name (its id when it cannot be found).
    pub agent: &'a str,
    /// The signed link, or the plain approval page (a shared channel, or a recipient
    /// bound to no user).
    pub link: &'a str,
    /// Whether the link signs the person in (an email recipient bound to their user).
    pub signs_in: bool,
}

/// The event every notification reports.
pub const EVENT: &str = "approval.requested";

/// `{event, delivery, approval: {id, agent, agent_id, tool, risk, summary, deadline,
/// created_at}, link}`.
pub fn webhook_json(notice: &Notice<'_>) -> Value {
    let approval = notice.approval;
    json!({
        "event": EVENT,
        "delivery": notice.delivery,
        "approval": {
            "id": approval.id,
            "agent": notice.agent,
            "agent_id": approval.agent_id,
            "tool": approval.tool,
            "risk": approval.risk,
            "summary": approval.preview.summary,
            "deadline": approval.deadline.to_string(),
            "created_at": approval.created_at.to_string(),
        },
        "link": notice.link,
    })
}

/// Slack's incoming-webhook shape: `text` (the fallback) and `blocks`. Every value is
/// shown as the Slack app shows it: hidden characters written out, markup escaped, in
/// `text` too (Slack shows it in notifications, and a receiver that ignores `blocks`
/// shows only it), so an agent's text can carry no live link.
pub fn slack(notice: &Notice<'_>) -> Value {
    let approval = notice.approval;
    let text = format!(
        "{} asks to run {} ({} risk): {}",
        shown(notice.agent),
        shown(&approval.tool),
        approval.risk.as_str(),
        shown(&approval.preview.summary)
    );
    json!({
        "text": format!("{text} — {}", notice.link),
        "blocks": [
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": format!(
                    "*{}* asks to run `{}` ({} risk)\n{}",
                    shown(notice.agent),
                    shown(&approval.tool),
                    approval.risk.as_str(),
                    shown(&approval.preview.summary),
                )},
            },
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": format!(
                    "Decide before {}", approval.deadline
                )}],
            },
            {
                "type": "actions",
                "elements": [{
                    "type": "button",
                    "text": {"type": "plain_text", "text": "Open in airlock"},
                    "url": notice.link,
                    "style": "primary",
                }],
            },
        ],
    })
}

/// The subject and plain-text body of the email.
pub fn email(notice: &Notice<'_>) -> (String, String) {
    let approval = notice.approval;
    // One line: a header cannot hold a line break.
    let summary: String = approval
        .preview
        .summary
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(120)
        .collect();
    let subject = format!("[airlock] {} asks: {summary}", notice.agent);
    let how = if notice.signs_in {
        "the link works once and signs you in"
    } else {
        "you will be asked to sign in"
    };
    let body = format!(
        "{agent} asks to run {tool} ({risk} risk):\n\n    {summary}\n\n\
         Open it to approve or reject ({how}):\n{link}\n\n\
         Decide before {deadline}; after that the call is refused.\n\
         Approval {id}\n",
        agent = notice.agent,
        tool = approval.tool,
        risk = approval.risk.as_str(),
        summary = approval.preview.summary,
        link = notice.link,
        deadline = approval.deadline,
        id = approval.id,
    );
    (subject, body)
}
