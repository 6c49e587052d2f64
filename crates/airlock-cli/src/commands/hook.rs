//! `airlock hook claude-code | codex | gemini`: gate a coding agent's tool calls from its
//! hook. Reads the agent's hook JSON on stdin, submits the call as the agent (agent
//! token), waits up to `--wait` seconds for a person to decide an asked call, and prints
//! the verdict in the agent's own shape ([`shapes`]).
//!
//! Fail closed (G4), in two ways the agents understand:
//! - a verdict — allowed, approved, denied, rejected, expired, cancelled, still pending
//!   when the wait is over — is printed on stdout, exit 0; only allowed or approved, with
//!   the grant redeemed here first (consumed exactly once, G1), is an `allow`;
//! - anything that prevents a verdict — unreadable stdin, an unreachable gateway, a
//!   refused token, a server error — is exit 2 with the reason on stderr, which Claude
//!   Code, Codex and Gemini CLI all treat as "blocked" and show to the model.
//!
//! The default wait (55 s) stays under Claude Code's default hook timeout (60 s): a hook
//! killed by its agent's timeout is not a deny everywhere, so we answer first.

mod shapes;

use crate::client::{encode, parse, Client, ClientArgs};
use crate::Outcome;
use airlock_protocol::{Call, CallStatus};
use airlock_server::handlers::hooks::{answer, Answer};
use anyhow::{anyhow, Context};
use clap::Args;
use serde_json::json;
use shapes::Agent;
use std::io::Read;
use std::time::{Duration, Instant};

/// The longest one request may wait on the server (DESIGN.md §6.1).
const MAX_POLL_SECONDS: u64 = 60;

/// Hook inputs larger than this are refused (the server takes 1 MiB bodies).
const MAX_INPUT: u64 = 1024 * 1024;

#[derive(Debug, Args)]
pub struct HookArgs {
    #[command(flatten)]
    client: ClientArgs,
    /// Whose hook is calling: its input is read, its output written.
    #[arg(value_enum)]
    agent: Agent,
    /// Wait up to this many seconds for a person to decide an asked call, then deny.
    /// Keep it below the agent's hook timeout (Claude Code: 60 s by default).
    #[arg(long, value_name = "SECONDS", default_value_t = 55)]
    wait: u64,
}

pub fn run(args: HookArgs) -> anyhow::Result<Outcome> {
    match decide(&args) {
        Ok((allow, reason)) => {
            println!("{}", args.agent.render(allow, &reason));
            Ok(Outcome::Ok)
        }
        // Flattened to text on purpose: every failure here is exit 2 (blocked), even a
        // refusal that other commands report with exit 1.
        Err(error) => Err(anyhow!(
            "airlock blocked this call because it could not decide it: {error:#}"
        )),
    }
}

/// Reads, submits, waits and redeems: `(allow, reason)`.
fn decide(args: &HookArgs) -> anyhow::Result<(bool, String)> {
    let mut text = String::new();
    std::io::stdin()
        .take(MAX_INPUT + 1)
        .read_to_string(&mut text)
        .context("cannot read the hook input on stdin")?;
    if text.len() as u64 > MAX_INPUT {
        return Err(anyhow!("the hook input is over {MAX_INPUT} bytes"));
    }
    let call = args.agent.parse(&text).map_err(|error| anyhow!(error))?;

    let client = Client::new(&args.client);
    // Calls of one agent session share one airlock session (session rules, the inbox).
    let session = match &call.session_id {
        Some(external) => {
            let title = match &call.cwd {
                Some(cwd) => format!("{} in {cwd}", args.agent.display_name()),
                None => args.agent.display_name().to_owned(),
            };
            let session = client.post(
                "/v1/sessions",
                &json!({"external_id": external, "title": title}),
            )?;
            Some(
                session["id"]
                    .as_str()
                    .context("the server did not return a session id")?
                    .to_owned(),
            )
        }
        None => None,
    };
    gate_in_session(
        &client,
        &args.client.url,
        &call.tool,
        call.arguments,
        session.as_deref(),
        args.wait,
    )
}

/// Submits one call as the agent (in an airlock session when given), waits up to `wait`
/// seconds for a pending call's verdict and, when it is allowed or approved, redeems its
/// grant: `(allow, reason)`. `Err` is anything that prevents a verdict (the caller fails
/// closed).
fn gate_in_session(
    client: &Client,
    url: &str,
    tool: &str,
    arguments: serde_json::Value,
    session: Option<&str>,
    wait: u64,
) -> anyhow::Result<(bool, String)> {
    let until = Instant::now() + Duration::from_secs(wait);
    let mut body = json!({"tool": tool, "arguments": arguments});
    if let Some(session) = session {
        body["session_id"] = session.into();
    }
    if wait > 0 {
        body["wait_s"] = wait.min(MAX_POLL_SECONDS).into();
    }
    let mut call: Call = parse(&client.post("/v1/calls", &body)?, "a call")?;
    loop {
        let left = until.saturating_duration_since(Instant::now()).as_secs();
        if call.status != CallStatus::Pending || left == 0 {
            break;
        }
        let path = format!(
            "/v1/calls/{}?wait_s={}",
            encode(&call.id),
            left.min(MAX_POLL_SECONDS)
        );
        call = parse(&client.get(&path)?, "a call")?;
    }

    Ok(match answer(&call) {
        Answer::Deny { reason } if call.status == CallStatus::Pending => (
            false,
            format!("{reason} (airlock at {})", url.trim_end_matches('/')),
        ),
        Answer::Deny { reason } => (false, reason),
        Answer::RedeemThenAllow { reason } => {
            let path = format!("/v1/calls/{}/redeem", encode(&call.id));
            match client.post(&path, &json!({})) {
                Ok(_) => (true, reason),
                Err(error) => (
                    false,
                    format!("the call's grant could not be redeemed: {error:#}"),
                ),
            }
        }
    })
}
