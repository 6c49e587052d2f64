//! What the Slack app shows: the approval message with its Approve / Reject buttons, the
//! same message once the approval ended (buttons gone, who decided said), and the modal
//! that asks a rejecter for the reason.
//!
//! Only the preview is shown (G9): the summary and the arguments as the gate redacted
//! them. A button's `value` is `<approval id>:<binding digest>`, so a click decides
//! exactly what the message showed.
//!
//! What Approve approves is what the message shows (G2), as on the inbox's cards: every
//! value is shown with its invisible and reordering characters written out (the inbox's
//! own `visible` module: `\u202e` in the arguments, `<U+202E>` in text), Slack's markup
//! characters escaped everywhere (the fallback `text` too), and a call that cannot be
//! shown whole (arguments too long for a block, a summary too long, or arguments holding
//! ``` which would end the code block early) gets no Approve button: Reject, and a link
//! to read it all in airlock and approve there.

use super::super::payload::Notice;
use airlock_policy::visible::{json_pretty_visible, show_hidden};
use airlock_protocol::{Approval, ApprovalStatus};
use serde_json::{json, Value};

/// The `action_id` of the Approve button.
pub const APPROVE: &str = "airlock_approve";
/// The `action_id` of the Reject button.
pub const REJECT: &str = "airlock_reject";
/// The `action_id` of the link button shown instead of Approve when the message cannot
/// show the call whole (a click on it only opens the link).
pub const READ_ALL: &str = "airlock_read_all";
/// The `callback_id` of the reason modal.
pub const REASON_MODAL: &str = "airlock_reject_reason";
/// The `block_id` and `action_id` of the modal's reason input.
pub const REASON_INPUT: &str = "reason";

/// The longest argument text shown, escaped (a section's text holds 3000 characters,
/// the code fence included).
const ARGUMENTS_SHOWN: usize = 2900;

/// The longest summary shown whole in the headline.
const SUMMARY_SHOWN: usize = 1000;

/// Slack reads `<`, `>` and `&` as markup.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Text as a person must see it in Slack: hidden characters written out, markup escaped.
pub fn shown(text: &str) -> String {
    escape(&show_hidden(text))
}

/// `text` cut to `limit` characters, and whether it is whole.
fn cut(text: &str, limit: usize) -> (String, bool) {
    if text.chars().count() <= limit {
        return (text.to_owned(), true);
    }
    let mut kept: String = text.chars().take(limit).collect();
    kept.push('…');
    (kept, false)
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

/// The headline block, and whether the summary in it is whole.
fn headline(agent: &str, approval: &Approval) -> (Value, bool) {
    let (summary, whole) = cut(&shown(&approval.preview.summary), SUMMARY_SHOWN);
    let block = json!({
        "type": "section",
        "text": {"type": "mrkdwn", "text": format!(
            "*{}* asks to run `{}` ({} risk)\n{summary}",
            shown(agent),
            shown(&approval.tool),
            approval.risk.as_str(),
        )},
    });
    (block, whole)
}

/// The arguments block, and whether it shows the arguments whole and exactly.
fn arguments(approval: &Approval) -> (Value, bool) {
    // Invisible and reordering characters as JSON escapes: the same value, shown.
    let text = escape(&json_pretty_visible(&approval.preview.arguments));
    // ``` inside would close the code block and show the rest as markup: such
    // arguments are not shown here at all (Slack has no way to escape it).
    if text.contains("```") {
        let block = json!({
            "type": "section",
            "text": {"type": "mrkdwn", "text":
                "_The arguments hold ``` (a code fence), which Slack cannot show exactly: \
                 read them in airlock._"},
        });
        return (block, false);
    }
    let (kept, whole) = cut(&text, ARGUMENTS_SHOWN);
    let block = json!({
        "type": "section",
        "text": {"type": "mrkdwn", "text": format!("```{kept}```")},
    });
    (block, whole)
}

/// The notification text (Slack shows it where blocks cannot be: a phone's banner).
fn fallback(agent: &str, approval: &Approval) -> String {
    let (summary, _) = cut(&approval.preview.summary, SUMMARY_SHOWN);
    format!(
        "{} asks to run {} ({} risk): {}",
        shown(agent),
        shown(&approval.tool),
        approval.risk.as_str(),
        shown(&summary)
    )
}

/// The body of `chat.postMessage` for a pending approval. Approve only when the
/// message shows the whole call; otherwise Reject and "Read it all to approve", a link
/// to the approval's page.
pub fn pending(channel: &str, notice: &Notice<'_>) -> Value {
    let approval = notice.approval;
    let value = button_value(approval);
    let (headline, summary_whole) = headline(notice.agent, approval);
    let (arguments, arguments_whole) = arguments(approval);
    let reject = json!({
        "type": "button",
        "action_id": REJECT,
        "text": {"type": "plain_text", "text": "Reject"},
        "style": "danger",
        "value": value,
    });
    let buttons = if summary_whole && arguments_whole {
        json!([
            {
                "type": "button",
                "action_id": APPROVE,
                "text": {"type": "plain_text", "text": "Approve"},
                "style": "primary",
                "value": value,
            },
            reject,
        ])
    } else {
        json!([
            reject,
            {
                "type": "button",
                "action_id": READ_ALL,
                "text": {"type": "plain_text", "text": "Read it all to approve"},
                "url": notice.link,
                "value": value,
            },
        ])
    };
    let mut blocks = vec![headline, arguments];
    if !(summary_whole && arguments_whole) {
        blocks.push(json!({
            "type": "context",
            "elements": [{"type": "mrkdwn", "text":
                "*Too long to show whole here*: what is approved must have been shown, so \
                 approve it in airlock, where it is shown whole."}],
        }));
    }
    blocks.push(json!({
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": format!(
            "Decide before {} · <{}|Open in airlock> · {}",
            approval.deadline, notice.link, approval.id
        )}],
    }));
    blocks.push(json!({
        "type": "actions",
        "block_id": "airlock_decision",
        "elements": buttons,
    }));
    json!({
        "channel": channel,
        "text": fallback(notice.agent, approval),
        "blocks": blocks,
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
        "text": format!("{} — {}", fallback(agent, approval), shown(&outcome)),
        "blocks": [
            headline(agent, approval).0,
            arguments(approval).0,
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": format!(
                    "*{}* · {}", shown(&outcome), approval.id
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
                    "text": {"type": "mrkdwn", "text": shown(&summary)},
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
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn approval(summary: &str, arguments: Value) -> Approval {
        serde_json::from_value(json!({
            "id": "apr_1", "call_id": "call_1", "agent_id": "agt_1", "session_id": null,
            "status": "pending", "tool": "fs.write", "risk": "write",
            "preview": {"summary": summary, "arguments": arguments},
            "rule": null, "reason": null, "binding_digest": "d1", "policy_digest": "p1",
            "standing_target": null, "deadline": "2026-12-05T10:00:00Z",
            "created_at": "2026-12-05T09:00:00Z", "decided_at": null, "decided_by": null,
            "decision_reason": null
        }))
        .unwrap()
    }

    fn actions(approval: &Approval) -> Vec<String> {
        let notice = Notice {
            delivery: "ntf_1",
            approval,
            agent: "scout",
            link: "https://airlock.example/approvals/apr_1",
            signs_in: false,
        };
        let message = pending("C1", &notice);
        let blocks = message["blocks"].as_array().unwrap();
        blocks
            .iter()
            .filter(|block| block["type"] == "actions")
            .flat_map(|block| block["elements"].as_array().unwrap())
            .map(|button| button["action_id"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn approve_is_offered_only_under_a_call_shown_whole() {
        let whole = approval(
            "Write notes.md",
            json!({"path": "notes.md", "content": "hi"}),
        );
        assert_eq!(actions(&whole), [APPROVE, REJECT]);
        // A code fence in the arguments would end the block early and show the rest as
        // markup; a summary too long for the headline is cut.
        for cut in [
            approval("Write notes.md", json!({"content": "```\n*not code*"})),
            approval(&"s".repeat(SUMMARY_SHOWN + 1), json!({})),
            approval("Write", json!({"content": "c".repeat(ARGUMENTS_SHOWN)})),
        ] {
            assert_eq!(actions(&cut), [REJECT, READ_ALL]);
        }
        // Escaping counts against the block: `&` is five characters shown.
        let escaped = approval("Write", json!({"c": "&".repeat(ARGUMENTS_SHOWN / 5 + 10)}));
        assert_eq!(actions(&escaped), [REJECT, READ_ALL]);
    }

    #[test]
    fn values_split_into_approval_and_digest() {
        assert_eq!(parse_value("apr_1:abc"), Some(("apr_1", "abc")));
        assert_eq!(parse_value("apr_1:"), None);
        assert_eq!(parse_value(":abc"), None);
        assert_eq!(parse_value("apr_1"), None);
    }
}
