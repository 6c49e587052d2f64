//! `airlock call TOOL --args JSON`: submit a call as an agent and report its verdict.
//!
//! The exit code is the verdict, so a script can write `airlock call … && do_it`: 0 when
//! the call may execute (allowed or approved), 1 when it may not (denied, rejected,
//! expired, cancelled) or not yet (still pending when the wait is over) — fail closed.
//! The server holds one long poll for at most 60 s; longer waits are a series of polls,
//! and a poll whose answer is lost (the server restarting) is sent again until the wait
//! is over (`flow::wait`).
//!
//! With `-- COMMAND ARGS…`, airlock runs the call itself, exactly once (DESIGN.md §11.8):
//! it redeems the grant under a fresh `Idempotency-Key` (retrying a lost answer under the
//! same key), runs the command, and reports its outcome (`succeeded` on exit 0, else
//! `failed`); the exit code is then 0 when the command succeeded, 1 when it failed.

use crate::client::{print_json, Client, ClientArgs};
use crate::flow::{self, MAX_POLL_SECONDS};
use crate::table::{fields, or_dash};
use crate::Outcome;
use airlock_protocol::{Call, CallStatus};
use anyhow::{bail, Context};
use clap::Args;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct CallArgs {
    #[command(flatten)]
    client: ClientArgs,
    /// The tool's name, such as `email.send`.
    tool: String,
    /// The arguments, as a JSON object.
    #[arg(long, default_value = "{}")]
    args: String,
    /// The session the call belongs to.
    #[arg(long)]
    session: Option<String>,
    /// Wait up to this many seconds for a person to decide a pending call.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    wait: u64,
    /// The command that executes the call once it may run: airlock redeems the grant,
    /// runs it, and reports its outcome.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

pub fn run(args: CallArgs) -> anyhow::Result<Outcome> {
    let arguments: Value = serde_json::from_str(&args.args).context("--args is not valid JSON")?;
    if !arguments.is_object() {
        bail!("--args must be a JSON object, such as '{{\"to\": \"ana@acme.test\"}}'");
    }
    let client = Client::new(&args.client);
    let until = Instant::now()
        .checked_add(Duration::from_secs(args.wait))
        .with_context(|| format!("--wait {} is too long a wait", args.wait))?;
    let mut body = json!({"tool": args.tool, "arguments": arguments});
    if let Some(session) = &args.session {
        body["session_id"] = session.clone().into();
    }
    if args.wait > 0 {
        body["wait_s"] = args.wait.min(MAX_POLL_SECONDS).into();
    }
    let mut answered = flow::submit(&client, &body)?;
    if answered.call.status == CallStatus::Pending && args.wait > 0 {
        if !args.client.json {
            eprintln!(
                "waiting up to {}s for a person to decide approval {} …",
                args.wait,
                or_dash(answered.call.approval_id.as_deref())
            );
        }
        answered = flow::wait(&client, answered, until)?;
    }
    let flow::Answered { value, call } = answered;

    if args.client.json {
        print_json(&value)?;
    } else {
        print!("{}", describe(&call));
    }
    Ok(match call.status {
        CallStatus::Allowed | CallStatus::Approved if !args.command.is_empty() => {
            execute(&client, &call, &args.command)?
        }
        CallStatus::Allowed | CallStatus::Approved => Outcome::Ok,
        CallStatus::Pending => {
            if args.wait > 0 {
                eprintln!(
                    "still pending after waiting {}s: not allowed (yet)",
                    args.wait
                );
            } else {
                eprintln!(
                    "pending: a person must approve it first (wait for it with --wait SECONDS)"
                );
            }
            Outcome::Refused
        }
        CallStatus::Denied | CallStatus::Rejected | CallStatus::Expired | CallStatus::Cancelled => {
            Outcome::Refused
        }
    })
}

/// Redeems the call's grant, runs `command` once, and reports how it went.
fn execute(client: &Client, call: &Call, command: &[String]) -> anyhow::Result<Outcome> {
    // The command was written for the asked arguments; a person approved other ones
    // (DESIGN.md §11.6). Running it would run what nobody approved, so the grant is left
    // unspent and the caller is told what was approved instead.
    if call.original_arguments.is_some() {
        eprintln!(
            "a person approved {} only with edited arguments, and the command after -- was \
             built from the asked ones, so it was not run; the approved arguments are: {}",
            call.id, call.arguments
        );
        return Ok(Outcome::Refused);
    }
    let redeemed = flow::redeem(client, &call.id)?;
    if redeemed.replayed {
        eprintln!(
            "the grant of {} was consumed by this airlock call (answer replayed)",
            call.id
        );
    }
    let (program, rest) = command
        .split_first()
        .context("the command after -- is empty")?;
    let status = std::process::Command::new(program).args(rest).status();
    let (succeeded, detail) = match &status {
        Ok(status) if status.success() => (true, None),
        Ok(status) => (
            false,
            Some(match status.code() {
                Some(code) => format!("exit code {code}"),
                None => "killed by a signal".to_owned(),
            }),
        ),
        Err(error) => (false, Some(format!("cannot run `{program}`: {error}"))),
    };
    flow::report(client, &call.id, succeeded, detail.clone())
        .context("the command ran, but its outcome could not be reported")?;
    if let Some(detail) = detail {
        eprintln!("the command failed: {detail}");
        return Ok(Outcome::Refused);
    }
    Ok(Outcome::Ok)
}

fn describe(call: &Call) -> String {
    let approve = match (call.status, &call.approval_id) {
        (CallStatus::Pending, Some(approval)) => format!("airlock approvals approve {approval}"),
        _ => String::new(),
    };
    fields(&[
        ("call", call.id.clone()),
        ("tool", format!("{} (risk {})", call.tool, call.risk)),
        ("status", call.status.to_string()),
        (
            "decided by",
            json!(call.decided_by)
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        ),
        ("rule", call.rule.clone().unwrap_or_default()),
        ("reason", call.reason.clone().unwrap_or_default()),
        ("approval", call.approval_id.clone().unwrap_or_default()),
        ("grant", call.grant_id.clone().unwrap_or_default()),
        ("approve with", approve),
    ])
}
