//! The page shell and the pieces every page shares: risk and status badges, times,
//! the names behind ids, the two-person rule's votes.
//!
//! Every value reaches HTML through maud's escaping; nothing here builds markup from
//! strings by hand.

use crate::web::assets;
use crate::web::error::WebError;
use crate::web::session::WebUser;
use crate::AppState;
use airlock_protocol::{Approval, ApprovalStatus, Risk};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use jiff::Timestamp;
use maud::{html, Markup, DOCTYPE};
use std::collections::HashMap;

/// The sections of the navigation bar.
const NAV: &[(&str, &str)] = &[
    ("/", "Inbox"),
    ("/audit", "Audit"),
    ("/rules", "Rules"),
    ("/policy", "Policy"),
];

/// A whole page: `body` inside the shell, with the navigation and the sign-out button
/// when someone is signed in (`current` is the path of the section to highlight).
pub fn page(title: &str, signed_in: Option<(&WebUser, &str)>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (title) " · airlock" }
                link rel="stylesheet" href=(assets::css_url());
                script src=(assets::js_url()) defer {}
            }
            body {
                header.top {
                    a.brand href="/" { span.mark { "◧" } " airlock" }
                    @if let Some((user, current)) = signed_in {
                        nav aria-label="Sections" {
                            @for (path, label) in NAV {
                                @if *path == current {
                                    a href=(path) aria-current="page" { (label) }
                                } @else {
                                    a href=(path) { (label) }
                                }
                            }
                        }
                        @let (name, role) = user.name_and_role();
                        div.me {
                            span.who title="Signed in" { (name) " · " (role.as_str()) }
                            form.inline method="post" action="/logout" {
                                input type="hidden" name="csrf" value=(user.csrf);
                                button.link type="submit" { "Sign out" }
                            }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// An HTML answer with `status`.
pub fn respond(status: StatusCode, markup: Markup) -> Response {
    let mut response = (status, markup.into_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

/// A 200 page.
pub fn ok(markup: Markup) -> Response {
    respond(StatusCode::OK, markup)
}

/// The coloured badge of a risk level.
pub fn risk_badge(risk: Risk) -> Markup {
    let class = format!("badge risk-{}", risk.as_str());
    let title = match risk {
        Risk::Read => "reads state",
        Risk::Write => "changes state inside the agent's system",
        Risk::External => "reaches outside: email, webhooks, other services",
        Risk::Exec => "runs arbitrary code",
    };
    html! { span class=(class) title=(title) { (risk.as_str()) } }
}

/// The badge of an approval's status.
pub fn status_badge(status: ApprovalStatus) -> Markup {
    let class = format!("badge status-{}", status.as_str());
    html! { span class=(class) { (status.as_str()) } }
}

/// A point in time, shown in UTC and localised by the page's script.
pub fn when(at: Timestamp) -> Markup {
    html! {
        time.local datetime=(at.to_string()) { (at.strftime("%Y-%m-%d %H:%M UTC").to_string()) }
    }
}

/// How long until `deadline`, in words: `"4 min left"`, `"2 h 5 min left"`, `"overdue"`.
pub fn time_left(deadline: Timestamp, now: Timestamp) -> String {
    let seconds = deadline.as_second() - now.as_second();
    if seconds <= 0 {
        return "overdue".to_owned();
    }
    let minutes = (seconds + 59) / 60;
    match minutes {
        0..=59 => format!("{minutes} min left"),
        60..=1439 => match minutes % 60 {
            0 => format!("{} h left", minutes / 60),
            rest => format!("{} h {rest} min left", minutes / 60),
        },
        _ => format!("{} d {} h left", minutes / 1440, minutes % 1440 / 60),
    }
}

/// Shortens `text` to at most `max` characters, with an ellipsis when cut.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut short: String = text.chars().take(max.saturating_sub(1)).collect();
    short.push('…');
    short
}

/// The names behind user and agent ids, read once per page.
#[derive(Debug, Default)]
pub struct People {
    users: HashMap<String, String>,
    agents: HashMap<String, String>,
}

impl People {
    pub async fn load(state: &AppState, user: &WebUser) -> Result<People, WebError> {
        let principal = &user.principal;
        let users = state.gate.list_users(principal).await?;
        let agents = state.gate.list_agents(principal).await?;
        Ok(People {
            users: users.into_iter().map(|u| (u.id, u.name)).collect(),
            agents: agents.into_iter().map(|a| (a.id, a.name)).collect(),
        })
    }

    /// An agent's name (its id when unknown).
    pub fn agent<'a>(&'a self, id: &'a str) -> &'a str {
        self.agents.get(id).map_or(id, String::as_str)
    }

    /// An audit actor or `decided_by` in words: a person's name, an agent's name,
    /// "the system", "the policy".
    pub fn actor(&self, actor: &str) -> String {
        match actor.split_once(':') {
            Some(("user", id)) => self.users.get(id).cloned().unwrap_or_else(|| actor.into()),
            Some(("agent", id)) => match self.agents.get(id) {
                Some(name) => format!("agent {name}"),
                None => actor.to_owned(),
            },
            _ if actor == "system" => "the system".to_owned(),
            _ if actor == "policy" => "the policy".to_owned(),
            _ => actor.to_owned(),
        }
    }
}

/// The two-person rule's progress on an approval: "1 of 2 approvals", who voted how,
/// and who may decide when the rule names them. Nothing for an approval one person
/// decides.
pub fn votes(approval: &Approval, people: &People) -> Markup {
    let Some(required) = approval.approvals_required else {
        if approval.approvers.is_empty() {
            return html! {};
        }
        return html! { p.votes { "Only " (approval.approvers.join(", ")) " may decide." } };
    };
    let approving = approval
        .votes
        .iter()
        .filter(|vote| vote.decision == "approve")
        .count();
    html! {
        p.votes data-required=(required) data-approving=(approving) {
            strong { (approving) " of " (required) " approvals" }
            @for vote in &approval.votes {
                " · " (people.actor(&vote.user))
                @if vote.decision == "approve" { " approved" } @else { " rejected" }
            }
            @if !approval.approvers.is_empty() {
                " · only " (approval.approvers.join(", ")) " may decide"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn time_left_reads_in_words() {
        let now = at(0);
        assert_eq!(time_left(at(-5), now), "overdue");
        assert_eq!(time_left(at(0), now), "overdue");
        assert_eq!(time_left(at(30), now), "1 min left");
        assert_eq!(time_left(at(59 * 60), now), "59 min left");
        assert_eq!(time_left(at(3600), now), "1 h left");
        assert_eq!(time_left(at(3600 + 300), now), "1 h 5 min left");
        assert_eq!(time_left(at(3 * 86400 + 7200), now), "3 d 2 h left");
    }

    #[test]
    fn names_replace_ids() {
        let mut people = People::default();
        people.users.insert("usr_1".into(), "alice".into());
        people.agents.insert("agt_1".into(), "scout".into());
        assert_eq!(people.actor("user:usr_1"), "alice");
        assert_eq!(people.actor("agent:agt_1"), "agent scout");
        assert_eq!(people.actor("user:usr_gone"), "user:usr_gone");
        assert_eq!(people.actor("system"), "the system");
        assert_eq!(people.agent("agt_1"), "scout");
        assert_eq!(people.agent("agt_2"), "agt_2");
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("abc", 4), "abc");
    }

    #[test]
    fn pages_escape_what_they_show() {
        let markup = page(
            "<b>x</b>",
            None,
            html! { p { ("<script>alert(1)</script>") } },
        );
        let text = markup.into_string();
        assert!(!text.contains("<script>alert"));
        assert!(text.contains("&lt;script&gt;"));
        assert!(!text.contains("<b>x</b>"));
    }
}
