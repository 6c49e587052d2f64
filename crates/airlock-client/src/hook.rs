//! `airlock hook claude-code | codex | gemini`: gate a coding agent's tool calls from its
//! command hook. Reads the agent's hook JSON on stdin, forwards it as it is to the server's
//! hook endpoint (`POST /v1/hooks/{agent}`, where the native call is translated into the
//! canonical vocabulary, gated, waited on and redeemed), and prints the server's answer,
//! which is already in the agent's own shape.
//!
//! What the hook adds from the agent's machine: the project (the git work tree holding the
//! payload's `cwd`, found here because the server may run elsewhere) and the user's home
//! folder, in the `Airlock-Project` and `Airlock-Home` headers; and the agent's trace, when
//! it runs the hook with a W3C `TRACEPARENT` variable, as the `traceparent` header (the
//! server's `airlock.call` span joins that trace).
//!
//! Fail closed (G4), in the two ways every agent understands at once:
//! - a verdict — allowed (grant redeemed), denied, rejected, expired, still pending when
//!   the wait is over — is printed on stdout, exit 0 (Codex's `PreToolUse` prints nothing
//!   for an allowed call: that is how Codex lets it through);
//! - anything that prevents a verdict — unreadable stdin, an unreachable gateway, a refused
//!   token, a server error — prints the agent's own deny form on stdout **and** exits 2 with
//!   the reason on stderr. Exit 2 is "blocked" for all three agents; the stdout deny covers
//!   an agent that reads stdout first (Gemini CLI treats exit 2 with nothing to read as a
//!   warning and runs the tool).
//!
//! One deadline for the whole hook (G4): reading stdin, connecting, every retry and the
//! wait for a person all happen within `--wait` + [`ANSWER_MARGIN`] (58 s by default), and
//! when that passes the hook answers the agent's deny at once ("airlock did not answer in
//! time") and exits 2, whatever it was still waiting on. A hook killed by its agent's own
//! timeout is not a block to any of the three agents (the tool runs), so the guides set
//! that timeout above the deadline (`--wait 55`, `"timeout": 60`) and the hook answers
//! first. The request runs on a worker thread so that nothing it blocks on (a gateway that
//! accepts and never answers, a name that does not resolve) can hold the answer back.
//!
//! No approved call silently lost (DESIGN.md §11.8): the hook sends an `Idempotency-Key`
//! (`<agent>:<tool_use_id>`, else a fresh one) and, when the answer does not come (the
//! server restarting), sends the same request again under the same key, within the
//! hook's deadline ([`submit_hook`]); a call whose grant the first attempt consumed
//! is answered again, not submitted twice. After-the-fact events (`PostToolUse`,
//! `AfterTool`) report the call's outcome; they decide nothing, so a failure there is a
//! warning, never a block.
//!
//! The request goes through a [`Post`]: the front binary's plain HTTP client for `http://`
//! gateways, the whole CLI's TLS client for `https://` ones; the rest is this module's,
//! whichever binary runs it.

use crate::args::ClientArgs;
use crate::errors::Transient;
use crate::retry::{with_retries, RETRY_FOR};
use crate::Outcome;
use airlock_hooks::place::{work_tree_of, HOME_HEADER, PROJECT_HEADER, UNDECIDED_HEADER};
use airlock_hooks::{Agent, HookEvent, Verdict};
use anyhow::{anyhow, Context};
use clap::{Args, ValueEnum};
use serde_json::Value;
use std::io::Read;
use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The longest one request may wait on the server (DESIGN.md §6.1).
pub const MAX_POLL_SECONDS: u64 = 60;

/// How long after `--wait` the hook may still take to answer: the server's work once the
/// wait is over (redeeming a grant) and the way back. The whole hook answers within
/// `--wait` + this; an agent's hook timeout must be above that (the guides: `--wait 55`
/// and a 60 s timeout).
pub const ANSWER_MARGIN: Duration = Duration::from_secs(3);

/// How the hook reaches the server: [`crate::plain::Plain`] for `http://` gateways, the
/// whole CLI's client (with TLS) for the others.
pub trait Post {
    /// `POST path` with `body` (JSON text) and extra `headers`: a 2xx answer, or the error
    /// it stands for ([`crate::errors`]).
    fn post_text(
        &self,
        path: &str,
        body: &str,
        headers: &[(&str, String)],
    ) -> anyhow::Result<Posted>;
}

/// A 2xx answer to the hook's request.
pub struct Posted {
    /// It carries the [`UNDECIDED_HEADER`].
    pub undecided: bool,
    pub body: Vec<u8>,
}

/// Hook inputs larger than this are refused (the server takes 1 MiB bodies).
const MAX_INPUT: u64 = 1024 * 1024;

/// The agents `airlock hook` speaks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AgentName {
    /// Claude Code `PreToolUse` hooks.
    ClaudeCode,
    /// Codex `PreToolUse` and `PermissionRequest` hooks.
    Codex,
    /// Gemini CLI `BeforeTool` hooks.
    Gemini,
}

impl AgentName {
    fn agent(self) -> Agent {
        match self {
            AgentName::ClaudeCode => Agent::ClaudeCode,
            AgentName::Codex => Agent::Codex,
            AgentName::Gemini => Agent::Gemini,
        }
    }
}

#[derive(Debug, Args)]
pub struct HookArgs {
    #[command(flatten)]
    client: ClientArgs,
    /// Whose hook is calling: its input is read, its output written.
    #[arg(value_enum)]
    agent: AgentName,
    /// Wait up to this many seconds for a person to decide an asked call, then deny. The
    /// whole hook answers within this + 3 s (a deny if airlock has not answered by then):
    /// set the agent's hook timeout above that (the guides: --wait 55, timeout 60 s).
    #[arg(long, value_name = "SECONDS", default_value_t = 55)]
    wait: u64,
}

impl HookArgs {
    /// Where the server is and how to sign in.
    pub fn client(&self) -> &ClientArgs {
        &self.client
    }

    /// How long the whole hook may take, from its start to its answer. The server never
    /// waits longer than [`MAX_POLL_SECONDS`], so neither does the hook.
    pub fn budget(&self) -> Duration {
        Duration::from_secs(self.wait.min(MAX_POLL_SECONDS)) + ANSWER_MARGIN
    }
}

/// What the worker thread tells the thread that answers the agent.
enum Heard {
    /// The event the payload names, once stdin is read: the shape of a late deny.
    Event(HookEvent),
    /// The server's answer, or why there is none.
    Outcome(anyhow::Result<Forwarded>),
}

/// Runs the hook, reaching the server through `post`, and answers the agent within
/// [`HookArgs::budget`] whatever happens to the request.
pub fn run<P: Post + Send + 'static>(args: HookArgs, post: P) -> anyhow::Result<Outcome> {
    let agent = args.agent.agent();
    let budget = args.budget();
    let deadline = Instant::now() + budget;
    let (tell, heard) = mpsc::channel();
    // The request runs on a worker: this thread answers the agent at the deadline even if
    // the worker is stuck (a gateway that accepts and never answers). A worker still
    // running then ends with the process.
    let worker = std::thread::Builder::new()
        .name("airlock-hook".into())
        .spawn(move || {
            let mut text = String::new();
            let read = std::io::stdin()
                .take(MAX_INPUT + 1)
                .read_to_string(&mut text)
                .context("cannot read the hook input on stdin");
            // The shape of a deny depends on the event; an unreadable payload gets the
            // default's. A send fails only when the answer has already been given.
            let _ = tell.send(Heard::Event(agent.event_of(&text)));
            let outcome = read.and_then(|_| forward(&post, agent, &text, deadline));
            let _ = tell.send(Heard::Outcome(outcome));
        });
    let mut event = agent.default_event();
    let outcome = match worker {
        Err(error) => Err(anyhow!("cannot start the hook's worker thread: {error}")),
        Ok(_) => loop {
            match heard.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(Heard::Event(named)) => event = named,
                Ok(Heard::Outcome(outcome)) => break outcome,
                Err(RecvTimeoutError::Timeout) => {
                    break Err(anyhow!(
                        "airlock did not answer in time (within {} s: the hook's --wait and \
                         {} s to answer)",
                        budget.as_secs(),
                        ANSWER_MARGIN.as_secs()
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    break Err(anyhow!("the hook stopped before airlock answered"))
                }
            }
        },
    };
    answer(agent, event, outcome)
}

/// Tells the agent: the verdict on stdout, or (when there is none) its own deny form on
/// stdout and the reason as the error (exit 2).
fn answer(
    agent: Agent,
    event: HookEvent,
    outcome: anyhow::Result<Forwarded>,
) -> anyhow::Result<Outcome> {
    match outcome {
        Ok(Forwarded::Verdict(answer)) => {
            if let Some(answer) = answer {
                println!("{answer}");
            }
            Ok(Outcome::Ok)
        }
        Ok(Forwarded::Undecided(answer)) => {
            println!("{answer}");
            let reason = reason_in(&answer).unwrap_or("the server could not decide");
            Err(anyhow!("airlock blocked this call: {reason}"))
        }
        // An outcome report that failed blocks nothing: the call ran. Unreported, it turns
        // ambiguous in the inbox.
        Err(error) if !event.is_before() => {
            eprintln!("airlock could not record this call's outcome: {error:#}");
            Ok(Outcome::Ok)
        }
        Err(error) => {
            let reason =
                format!("airlock blocked this call because it could not decide it: {error:#}");
            if let Some(deny) = airlock_hooks::render(
                agent,
                event,
                &Verdict::Deny {
                    reason: reason.clone(),
                },
            ) {
                println!("{deny}");
            }
            // Flattened to text on purpose: every failure here is exit 2 (blocked), even a
            // refusal that other commands report with exit 1.
            Err(anyhow!(reason))
        }
    }
}

/// What the server answered.
enum Forwarded {
    /// A verdict in the agent's shape; `None` when the agent is to read nothing.
    Verdict(Option<Value>),
    /// A deny the server gave because it could not decide.
    Undecided(Value),
}

fn forward(
    post: &dyn Post,
    agent: Agent,
    text: &str,
    deadline: Instant,
) -> anyhow::Result<Forwarded> {
    if text.len() as u64 > MAX_INPUT {
        return Err(anyhow!("the hook input is over {MAX_INPUT} bytes"));
    }
    // Read here too, so that an unreadable payload is reported as such (and never sent).
    let call = agent.parse(text).map_err(|error| anyhow!(error))?;
    let mut headers = Vec::new();
    if let Some(project) = call
        .cwd
        .as_deref()
        .and_then(|cwd| work_tree_of(Path::new(cwd)))
    {
        headers.push((PROJECT_HEADER, project));
    }
    if let Some(home) = std::env::var_os("HOME").and_then(|home| home.into_string().ok()) {
        if home.starts_with('/') {
            headers.push((HOME_HEADER, home));
        }
    }
    if let Some(traceparent) = std::env::var("TRACEPARENT")
        .ok()
        .filter(|value| plain_traceparent(value))
    {
        headers.push(("traceparent", traceparent));
    }
    headers.push((
        "Idempotency-Key",
        airlock_hooks::tool_use_key(&call).unwrap_or_else(crate::new_key),
    ));
    let HookAnswer { answer, undecided } =
        submit_hook(post, agent.name(), text, &headers, deadline)?;
    if undecided {
        return Ok(Forwarded::Undecided(answer));
    }
    if !call.event.is_before() {
        return Ok(Forwarded::Verdict(None));
    }
    let silent = answer.as_object().is_some_and(|object| object.is_empty());
    if silent && !(agent == Agent::Codex && call.event == HookEvent::PreToolUse) {
        // Only Codex's PreToolUse lets a call through by saying nothing.
        return Err(anyhow!("the server gave no verdict"));
    }
    Ok(Forwarded::Verdict((!silent).then_some(answer)))
}

/// What the server's hook endpoint answered.
pub struct HookAnswer {
    /// The answer in the agent's own shape.
    pub answer: Value,
    /// The server could not decide (its deny is fail-closed, not a verdict).
    pub undecided: bool,
}

/// `POST /v1/hooks/{agent}` with the agent's payload `text` and `headers` (which carry
/// the call's `Idempotency-Key`), sent again while the answer is lost, until `deadline`.
/// Every attempt asks the server to wait only until [`ANSWER_MARGIN`] before the
/// deadline, so that its answer is back in time.
pub fn submit_hook(
    post: &dyn Post,
    agent: &str,
    text: &str,
    headers: &[(&str, String)],
    deadline: Instant,
) -> anyhow::Result<HookAnswer> {
    let retry_for = RETRY_FOR.min(deadline.saturating_duration_since(Instant::now()));
    with_retries(retry_for, || {
        let left = deadline
            .saturating_duration_since(Instant::now())
            .saturating_sub(ANSWER_MARGIN);
        // Rounded up: the margin holds the part of a second this adds.
        let path = format!(
            "/v1/hooks/{agent}?wait_s={}",
            left.as_millis()
                .div_ceil(1000)
                .min(u128::from(MAX_POLL_SECONDS))
        );
        let Posted { undecided, body } = post.post_text(&path, text, headers)?;
        // An answer that is not JSON is one that broke off: asked again.
        let answer = serde_json::from_slice(&body)
            .map_err(|error| Transient(format!("the server's answer is not JSON: {error}")))?;
        Ok(HookAnswer { answer, undecided })
    })
}

impl Post for crate::plain::Plain {
    fn post_text(
        &self,
        path: &str,
        body: &str,
        headers: &[(&str, String)],
    ) -> anyhow::Result<Posted> {
        let answer = self.post(path, body, headers)?;
        Ok(Posted {
            undecided: answer.has_header(UNDECIDED_HEADER),
            body: answer.body,
        })
    }
}

/// The reason in an agent-shaped deny.
fn reason_in(answer: &Value) -> Option<&str> {
    let inner = &answer["hookSpecificOutput"];
    answer["reason"]
        .as_str()
        .or_else(|| inner["permissionDecisionReason"].as_str())
        .or_else(|| inner["decision"]["message"].as_str())
}

/// Whether a `TRACEPARENT` value can go in a header as it is: W3C's form is
/// `version-traceid-spanid-flags` in lower-case hex, 55 characters for version 00; the
/// server checks the rest.
fn plain_traceparent(value: &str) -> bool {
    (55..=256).contains(&value.len())
        && value
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::plain_traceparent;

    #[test]
    fn only_a_w3c_shaped_traceparent_is_passed_on() {
        assert!(plain_traceparent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        ));
        for bad in [
            "",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\nx: y",
            "garbage",
        ] {
            assert!(!plain_traceparent(bad), "{bad:?}");
        }
    }
}
