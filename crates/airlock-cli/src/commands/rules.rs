//! `airlock rules list | add | revoke`: standing rules, a person's "allow every time" for
//! one tool and one exact target in one scope (a session, an agent or a task).
//!
//! The server decides what is eligible (write/external tools with a target; exec never)
//! and says why when it refuses: the command then exits 1 with that reason. Adding a rule
//! that already exists, live and identical, is not an error: the server answers 200 with
//! the existing rule instead of 201, and the command says so.

use crate::client::{
    encode, hide_userinfo, parse, print_json, without_userinfo, Client, ClientArgs, Refused,
};
use crate::table::{fields, relative, when, Table};
use crate::Outcome;
use airlock_protocol::{Problem, RuleScope, StandingRule};
use anyhow::{anyhow, Context};
use clap::{Args, Subcommand};
use jiff::Timestamp;
use serde_json::{json, Value};
use std::time::Duration;

#[derive(Debug, Args)]
pub struct RulesArgs {
    #[command(flatten)]
    client: ClientArgs,
    #[command(subcommand)]
    command: RulesCommand,
}

#[derive(Debug, Subcommand)]
enum RulesCommand {
    /// List the live standing rules (not revoked, not expired), newest first.
    List {
        /// Also list revoked and expired rules.
        #[arg(long)]
        all: bool,
    },
    /// Allow TOOL for exactly TARGET without asking, in one scope.
    Add {
        /// A write or external tool the policy lists with a target, such as `email.send`.
        tool: String,
        /// The exact target, such as `bob@elsewhere.test`.
        target: String,
        /// session, agent or task.
        #[arg(long)]
        scope: RuleScope,
        /// The id of the session, agent or task.
        #[arg(long, value_name = "ID")]
        scope_id: String,
        /// How long the rule lasts, such as `30m` or `7d` (default: until revoked).
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        expires_in: Option<String>,
    },
    /// Revoke a standing rule: calls evaluated from now on are asked again.
    Revoke {
        /// The rule's id (`rule_…`).
        id: String,
    },
}

/// Checks a duration here, so that a typo is a usage error (exit 2) before any request;
/// the server is sent the text as typed.
fn parse_duration(text: &str) -> Result<String, String> {
    match humantime::parse_duration(text) {
        Ok(duration) if duration.as_secs() > 0 => Ok(text.to_owned()),
        Ok(_) => Err("must be at least one second".into()),
        Err(error) => Err(format!("{error} (try `30m`, `8h` or `7d`)")),
    }
}

pub fn run(args: RulesArgs) -> anyhow::Result<Outcome> {
    let as_json = args.client.json;
    match args.command {
        RulesCommand::List { all } => {
            let client = Client::new(&args.client);
            let mut page = client.get("/v1/rules")?;
            let rules: Vec<StandingRule> = parse(&page["items"], "a list of standing rules")?;
            let now = Timestamp::now();
            let shown: Vec<(StandingRule, Value)> = rules
                .into_iter()
                .zip(page["items"].as_array().cloned().unwrap_or_default())
                .filter(|(rule, _)| all || state(rule, now) == "live")
                .collect();
            if as_json {
                // The server's objects, filtered as the table would be.
                page["items"] = shown.iter().map(|(_, raw)| raw.clone()).collect();
                print_json(&page)?;
                return Ok(Outcome::Ok);
            }
            if shown.is_empty() {
                let which = if all { "" } else { "live " };
                println!("no {which}standing rules; add one with `airlock rules add TOOL TARGET --scope S --scope-id ID`");
                return Ok(Outcome::Ok);
            }
            let mut table = Table::new(&[
                "ID", "TOOL", "TARGET", "SCOPE", "STATE", "EXPIRES", "CREATED",
            ]);
            for (rule, _) in shown {
                table.row(vec![
                    rule.id.clone(),
                    rule.tool.clone(),
                    rule.target.clone(),
                    format!("{} {}", rule.scope, rule.scope_id),
                    state(&rule, now).to_owned(),
                    rule.expires_at.map_or_else(|| "never".to_owned(), relative),
                    format!("{} by {}", relative(rule.created_at), rule.created_by),
                ]);
            }
            print!("{}", table.render());
            Ok(Outcome::Ok)
        }
        RulesCommand::Add {
            tool,
            target,
            scope,
            scope_id,
            expires_in,
        } => {
            let mut body =
                json!({"tool": tool, "target": target, "scope": scope, "scope_id": scope_id});
            if let Some(expires_in) = expires_in {
                body["expires_in"] = expires_in.into();
            }
            let (status, answer) = send(&args.client, Verb::Post, "/v1/rules", &body)?;
            if as_json {
                print_json(&answer)?;
                return Ok(Outcome::Ok);
            }
            let rule: StandingRule = parse(&answer, "a standing rule")?;
            print!("{}", describe(&rule));
            if status == 200 {
                eprintln!(
                    "an identical live rule already existed: {} (nothing was added)",
                    rule.id
                );
            }
            Ok(Outcome::Ok)
        }
        RulesCommand::Revoke { id } => {
            let path = format!("/v1/rules/{}", encode(&id));
            let (_, answer) = send(&args.client, Verb::Delete, &path, &Value::Null)?;
            if as_json {
                print_json(&answer)?;
                return Ok(Outcome::Ok);
            }
            let rule: StandingRule = parse(&answer, "a standing rule")?;
            println!(
                "revoked {}: {} for {} ({} {}) is asked again from now on",
                rule.id, rule.tool, rule.target, rule.scope, rule.scope_id
            );
            Ok(Outcome::Ok)
        }
    }
}

/// `live`, `revoked` or `expired`.
fn state(rule: &StandingRule, now: Timestamp) -> &'static str {
    if rule.revoked_at.is_some() {
        "revoked"
    } else if rule.expires_at.is_some_and(|at| at <= now) {
        "expired"
    } else {
        "live"
    }
}

/// The `key  value` view of one rule.
pub(super) fn describe(rule: &StandingRule) -> String {
    fields(&[
        ("rule", rule.id.clone()),
        ("tool", rule.tool.clone()),
        ("target", rule.target.clone()),
        ("scope", format!("{} {}", rule.scope, rule.scope_id)),
        (
            "created",
            format!("{} by {}", when(rule.created_at), rule.created_by),
        ),
        (
            "expires",
            rule.expires_at
                .map_or_else(|| "never (until revoked)".to_owned(), when),
        ),
        ("revoked", rule.revoked_at.map(when).unwrap_or_default()),
        ("state", state(rule, Timestamp::now()).to_owned()),
    ])
}

/// The methods [`crate::client::Client`] does not offer.
#[derive(Debug, Clone, Copy)]
pub(super) enum Verb {
    Post,
    Patch,
    Delete,
}

/// `VERB path` with a JSON body (ignored for DELETE): the answer's status and JSON.
///
/// `Client` speaks GET and POST and hides the status, but rules need DELETE and the
/// 201-or-200 of a mint, and tasks need PATCH. This mirrors `Client` exactly (the same
/// token choice, the same problem messages, 403/409/422 as a [`Refused`], the rest exit
/// 2) and belongs beside it in `client.rs`.
pub(super) fn send(
    args: &ClientArgs,
    verb: Verb,
    path: &str,
    body: &Value,
) -> anyhow::Result<(u16, Value)> {
    let base = args.url.trim_end_matches('/');
    let token = args
        .token
        .clone()
        .filter(|token| !token.trim().is_empty())
        .or_else(|| std::fs::read_to_string(args.data_dir.join("owner.token")).ok())
        .map(|token| token.trim().to_owned())
        .filter(|token| !token.is_empty());
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(10)))
        .timeout_recv_response(Some(Duration::from_secs(90)))
        .build()
        .into();
    let url = format!("{base}{path}");
    let bearer = token.as_ref().map(|token| format!("Bearer {token}"));
    let sent = match verb {
        Verb::Post => authorized(agent.post(&url), bearer.as_deref()).send_json(body),
        Verb::Patch => authorized(agent.patch(&url), bearer.as_deref()).send_json(body),
        Verb::Delete => authorized(agent.delete(&url), bearer.as_deref()).call(),
    };
    let mut response = sent.map_err(|error| {
        // Never a password of the URL in a message (G9), nor in the error quoting it.
        let error = hide_userinfo(&error.to_string(), base);
        anyhow!(
            "cannot reach airlock at {}: {error}",
            without_userinfo(base)
        )
    })?;
    let status = response.status().as_u16();
    if (200..300).contains(&status) {
        let value = response
            .body_mut()
            .read_json()
            .context("the server's answer is not JSON")?;
        return Ok((status, value));
    }
    if status == 401 {
        let hint = if token.is_none() {
            " (no token was given and no owner.token was found)"
        } else {
            ""
        };
        return Err(anyhow!("unauthorized: check --token/AIRLOCK_TOKEN{hint}"));
    }
    let text = response.body_mut().read_to_string().unwrap_or_default();
    let message = match serde_json::from_str::<Problem>(&text) {
        Ok(problem) if problem.detail.is_empty() => problem.title,
        Ok(problem) => format!("{}: {}", problem.title, problem.detail),
        Err(_) if text.trim().is_empty() => format!("the server answered {status}"),
        Err(_) => format!("the server answered {status}: {}", text.trim()),
    };
    if matches!(status, 403 | 409 | 422) {
        Err(Refused(message).into())
    } else {
        Err(anyhow!(message))
    }
}

fn authorized<B>(
    request: ureq::RequestBuilder<B>,
    bearer: Option<&str>,
) -> ureq::RequestBuilder<B> {
    match bearer {
        Some(bearer) => request.header("Authorization", bearer),
        None => request,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_checked_before_any_request() {
        assert_eq!(parse_duration("30m").as_deref(), Ok("30m"));
        assert_eq!(parse_duration("7d").as_deref(), Ok("7d"));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("soon").unwrap_err().contains("try `30m`"));
    }
}
