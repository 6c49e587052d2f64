//! `airlock chat AGENT`: talk to a built-in agent from the terminal.
//!
//! Each line read from stdin is a message to the agent; its run's journal streams back
//! (text as it is written, each tool call and what the gate decided). When the run stops
//! for an approval, a user token with the approver role can decide it right there
//! (`y` approve, `n` reject with a reason, Enter leaves it to the inbox); the decision
//! goes through the same endpoint as every other. End with Ctrl-D.

use crate::client::{encode, Client, ClientArgs};
use crate::Outcome;
use airlock_client::errors::is_transient;
use airlock_protocol::RunKind;
use anyhow::{anyhow, bail, Context};
use clap::Args;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};

/// How long `chat` keeps trying to reach a server that went away (a restart) while it
/// follows a run.
const RECONNECT_FOR: Duration = Duration::from_secs(30);

#[derive(Debug, Args)]
pub struct ChatArgs {
    #[command(flatten)]
    client: ClientArgs,
    /// The agent's name (or id).
    agent: String,
    /// Continue this session instead of opening a new one.
    #[arg(long)]
    session: Option<String>,
}

pub fn run(args: ChatArgs) -> anyhow::Result<Outcome> {
    let client = Client::new(&args.client);
    let json_mode = args.client.json;
    let agent = find_agent(&client, &args.agent)?;
    let session = match args.session {
        Some(session) => session,
        None => {
            let created = client.post(
                "/v1/sessions",
                &json!({"agent_id": agent["id"], "title": format!("chat with {}", args.agent)}),
            )?;
            created["id"]
                .as_str()
                .context("the server did not return a session id")?
                .to_owned()
        }
    };
    let stdin = std::io::stdin();
    let mut input = stdin.lock().lines();
    if !json_mode {
        eprintln!(
            "chatting with `{}` in session {session} (Ctrl-D to end)",
            args.agent
        );
    }
    let mut outcome = Outcome::Ok;
    loop {
        if !json_mode {
            eprint!("you> ");
        }
        let Some(line) = input.next() else { break };
        let line = line.context("cannot read stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        let started = client.post(
            &format!("/v1/sessions/{}/messages", encode(&session)),
            &json!({ "text": line }),
        )?;
        let run_id = started["run_id"]
            .as_str()
            .context("the server did not return a run id")?
            .to_owned();
        if !follow(&client, &run_id, json_mode, &mut input)? {
            outcome = Outcome::Refused;
        }
    }
    Ok(outcome)
}

/// The agent with this name or id.
fn find_agent(client: &Client, name: &str) -> anyhow::Result<Value> {
    let listed = client.get("/v1/agents")?;
    let agents = listed["items"]
        .as_array()
        .or_else(|| listed.as_array())
        .cloned()
        .unwrap_or_default();
    agents
        .into_iter()
        .find(|agent| agent["name"] == name || agent["id"] == name)
        .ok_or_else(|| anyhow!("no agent named `{name}`; `airlock agents list` shows them"))
}

/// Streams a run's journal until the run ends, offering decisions on the way. Returns
/// whether the run completed.
fn follow(
    client: &Client,
    run_id: &str,
    json_mode: bool,
    input: &mut impl Iterator<Item = std::io::Result<String>>,
) -> anyhow::Result<bool> {
    let mut after = 0u64;
    let mut waiting: Vec<Value> = Vec::new();
    // A dropped stream (a restart, a proxy) is reopened from the last seq seen.
    for _attempt in 0..100 {
        let path = format!("/v1/runs/{}/events?after={after}", encode(run_id));
        let response = reopen(client, &path, json_mode)?;
        let reader = BufReader::new(response.into_body().into_reader());
        let mut data = String::new();
        for line in reader.lines() {
            let line = match line {
                Ok(line) => line,
                Err(_) => break,
            };
            if let Some(value) = line.strip_prefix("data:") {
                data.push_str(value.trim_start());
                continue;
            }
            if !line.is_empty() || data.is_empty() {
                continue;
            }
            let event: Value = serde_json::from_str(&std::mem::take(&mut data))
                .context("the server sent a journal event that is not JSON")?;
            after = event["seq"].as_u64().unwrap_or(after);
            if json_mode {
                println!("{event}");
            } else {
                show(&event);
            }
            match kind_of(&event) {
                Some(RunKind::ApprovalRequired) => waiting.push(event["data"].clone()),
                Some(RunKind::RunSuspended) => {
                    for approval in std::mem::take(&mut waiting) {
                        offer_decision(client, &approval, json_mode, input)?;
                    }
                }
                Some(RunKind::RunCompleted) => return Ok(true),
                Some(RunKind::RunFailed | RunKind::RunCancelled) => return Ok(false),
                _ => {}
            }
        }
    }
    bail!("the run's event stream kept breaking; follow it with GET /v1/runs/{run_id}")
}

/// Opens the run's event stream at `path`. While airlock cannot be reached (it is
/// restarting) the stream is tried again, waiting a little longer each time, for up to
/// [`RECONNECT_FOR`]; any other failure is final.
fn reopen(
    client: &Client,
    path: &str,
    json_mode: bool,
) -> anyhow::Result<ureq::http::Response<ureq::Body>> {
    let until = Instant::now() + RECONNECT_FOR;
    let mut pause = Duration::from_millis(100);
    let mut said = false;
    loop {
        match client.get_raw(path) {
            Ok(response) => return Ok(response),
            Err(error) if is_transient(&error) && Instant::now() + pause < until => {
                if !json_mode && !said {
                    eprintln!("  (airlock cannot be reached: {error}; reconnecting)");
                    said = true;
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            Err(error) => return Err(error),
        }
    }
}

/// A journal event's kind; `None` for one this build does not know (a newer server's),
/// which is shown as JSON by `--json` and otherwise skipped.
fn kind_of(event: &Value) -> Option<RunKind> {
    RunKind::parse(event["kind"].as_str().unwrap_or_default())
}

/// Prints one journal event for a person.
fn show(event: &Value) {
    let data = &event["data"];
    let mut out = std::io::stdout();
    let text = |key: &str| data[key].as_str().unwrap_or_default().to_owned();
    let Some(kind) = kind_of(event) else {
        return;
    };
    match kind {
        RunKind::TextDelta => {
            let _ = write!(out, "{}", text("text"));
        }
        RunKind::ToolCall => {
            let _ = writeln!(out, "\n→ {} {}", text("tool"), data["arguments"]);
        }
        RunKind::ToolDecided => match text("status").as_str() {
            "allowed" => {
                let _ = writeln!(out, "  allowed{}", cited(data));
            }
            "denied" => {
                let _ = writeln!(out, "  denied: {}", text("reason"));
            }
            _ => {}
        },
        RunKind::ApprovalRequired => {
            let _ = writeln!(
                out,
                "  needs approval {}: {}",
                text("approval_id"),
                data["preview"]["summary"].as_str().unwrap_or_default()
            );
            if let Some(body) = data["preview"]["body"].as_str() {
                for line in body.lines() {
                    let _ = writeln!(out, "    | {line}");
                }
            }
        }
        RunKind::RunSuspended => {
            let _ = writeln!(out, "  (the run waits for a decision)");
        }
        RunKind::RunResumed => {
            let _ = writeln!(out, "  (the run goes on)");
        }
        RunKind::ToolFinished => {
            let output = match &data["output"] {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let short: String = output.chars().take(300).collect();
            let _ = writeln!(out, "  {}: {short}", text("status"));
        }
        RunKind::RunCompleted => {
            let _ = writeln!(out);
        }
        RunKind::RunFailed => {
            let _ = writeln!(out, "\nthe run failed: {}", text("error"));
        }
        RunKind::RunCancelled => {
            let _ = writeln!(out, "\nthe run was cancelled");
        }
        RunKind::RunPaused => {
            let _ = writeln!(
                out,
                "\n  (paused by {}; its approvals were closed)",
                text("by")
            );
        }
        RunKind::RunUnpaused => {
            let _ = writeln!(out, "  (resumed by {})", text("by"));
        }
        // Nothing to show a person: the stream's bookkeeping.
        RunKind::RunStarted | RunKind::ToolStarted | RunKind::StepFinished => {}
    }
    let _ = out.flush();
}

fn cited(data: &Value) -> String {
    match data["rule"].as_str() {
        Some(rule) => format!(" by rule `{rule}`"),
        None => String::new(),
    }
}

/// Asks the person at the terminal to decide; Enter (or end of input) leaves it to the
/// inbox.
fn offer_decision(
    client: &Client,
    approval: &Value,
    json_mode: bool,
    input: &mut impl Iterator<Item = std::io::Result<String>>,
) -> anyhow::Result<()> {
    let id = approval["approval_id"].as_str().unwrap_or_default();
    if !json_mode {
        eprint!("approve {id}? [y]es / [n]o / Enter to leave it to the inbox: ");
    }
    let answer = match input.next() {
        Some(line) => line.context("cannot read stdin")?,
        None => return Ok(()),
    };
    let decision = match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => "approve",
        "n" | "no" => "reject",
        _ => return Ok(()),
    };
    let mut body = json!({"decision": decision, "binding_digest": approval["binding_digest"]});
    if decision == "reject" {
        if !json_mode {
            eprint!("reason (optional): ");
        }
        if let Some(reason) = input.next() {
            let reason = reason.context("cannot read stdin")?;
            if !reason.trim().is_empty() {
                body["reason"] = json!(reason.trim());
            }
        }
    }
    match client.post(&format!("/v1/approvals/{}/decision", encode(id)), &body) {
        Ok(_) => {
            if !json_mode {
                let done = if decision == "approve" {
                    "approved"
                } else {
                    "rejected"
                };
                eprintln!("  {done}");
            }
        }
        // A viewer, an agent token or a stale click: say why and keep following.
        Err(error) => eprintln!("  cannot decide here: {error}; the approval stays in the inbox"),
    }
    Ok(())
}
