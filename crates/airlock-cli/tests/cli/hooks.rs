//! `airlock hook claude-code | codex | gemini` against a real `airlock serve`: recorded hook
//! payloads of each agent (tests/fixtures/hooks/) in, the agent's expected output out —
//! allow (grant redeemed), deny, ask-then-approve, ask-then-reject, timeout, and the
//! exit-2 block when the gateway is down or the input is unreadable.

#[path = "hooks/front.rs"]
mod front;
#[path = "hooks/http_doc.rs"]
mod http_doc;

use crate::support::{command, eventually, finished_output, stderr, wait_exit, KillOnDrop, Server};
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

const AGENTS: [&str; 3] = ["claude-code", "codex", "gemini"];

/// `git status` is allowed, `rm -rf` denied, everything else asked — for any tool whose
/// arguments hold a `command` (Claude Code and Codex `Bash`, Gemini `run_shell_command`).
const POLICY: &str = r#"version = 1
default = "ask"
deadline = "1h"

[[rules]]
name = "status-is-fine"
tool = "*"
decision = "allow"
when = { command = { prefix = ["git status"] } }

[[rules]]
name = "no-destructive-shell"
tool = "*"
decision = "deny"
reason = "destructive command"
when = { command = { prefix = ["rm -rf"] } }
"#;

fn fixture(agent: &str, name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hooks")
        .join(agent)
        .join(format!("{name}.json"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn start() -> (tempfile::TempDir, Server, String) {
    let work = tempfile::tempdir().unwrap();
    let policy = work.path().join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let server = Server::start(work.path(), &["--policy", policy.to_str().unwrap()]);
    let agent = server.create_agent("coder");
    (work, server, agent)
}

/// Starts `command` with `input` on its stdin.
fn spawn_with_input(mut command: Command, input: &str) -> KillOnDrop {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    KillOnDrop(child)
}

/// `airlock hook AGENT ARGS…` as the agent, fed `input`.
fn spawn_hook(server: &Server, token: &str, agent: &str, args: &[&str], input: &str) -> KillOnDrop {
    let mut all = vec!["hook", agent];
    all.extend_from_slice(args);
    spawn_with_input(server.client_command(token, &all), input)
}

/// Waits for the hook to exit: `(exit code, stdout, stderr)`.
fn finish(mut hook: KillOnDrop) -> (Option<i32>, String, String) {
    let status = wait_exit(&mut hook.0, Duration::from_secs(30));
    let (out, err) = finished_output(&mut hook.0);
    (status.code(), out, err)
}

/// Runs the hook to its end and reads the verdict out of the agent's own output shape,
/// checking that shape exactly: `(allow|deny, reason)`.
fn verdict(agent: &str, (code, out, err): (Option<i32>, String, String)) -> (String, String) {
    assert_eq!(code, Some(0), "{agent}: stdout {out} stderr {err}");
    assert_eq!(out.lines().count(), 1, "{agent}: one JSON line: {out}");
    let value: Value = serde_json::from_str(&out).unwrap();
    let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
    match agent {
        "claude-code" => {
            let inner = &value["hookSpecificOutput"];
            assert_eq!(value.as_object().unwrap().len(), 1, "{value}");
            assert_eq!(inner["hookEventName"], "PreToolUse", "{value}");
            assert_eq!(inner.as_object().unwrap().len(), 3, "{value}");
            (
                text(&inner["permissionDecision"]),
                text(&inner["permissionDecisionReason"]),
            )
        }
        "codex" => {
            let inner = &value["hookSpecificOutput"];
            assert_eq!(value.as_object().unwrap().len(), 1, "{value}");
            assert_eq!(inner["hookEventName"], "PermissionRequest", "{value}");
            let decision = &inner["decision"];
            let behavior = text(&decision["behavior"]);
            if behavior == "allow" {
                assert!(decision.get("message").is_none(), "{value}");
            }
            (behavior, text(&decision["message"]))
        }
        "gemini" => {
            assert_eq!(value.as_object().unwrap().len(), 2, "{value}");
            (text(&value["decision"]), text(&value["reason"]))
        }
        other => panic!("unknown agent {other}"),
    }
}

fn consumed_grants(server: &Server) -> usize {
    let page = server.get_json("/v1/audit?limit=1000");
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|record| record["kind"] == "grant.consumed")
        .count()
}

/// The id of the one approval that appeared after `before`.
fn new_approval(server: &Server, before: &[String]) -> String {
    let mut approval = None;
    eventually(Duration::from_secs(20), "the hook's approval", || {
        approval = server.pending().into_iter().find(|id| !before.contains(id));
        approval.is_some()
    });
    approval.unwrap()
}

#[test]
fn allowed_calls_are_redeemed_then_allowed_and_denied_calls_say_why() {
    let (_work, server, token) = start();
    for (n, agent) in AGENTS.into_iter().enumerate() {
        let hook = spawn_hook(&server, &token, agent, &[], &fixture(agent, "allow"));
        let (decision, reason) = verdict(agent, finish(hook));
        assert_eq!(decision, "allow");
        if agent != "codex" {
            assert!(reason.contains("status-is-fine"), "{agent}: {reason}");
        }
        // The grant was consumed before the agent was told to go ahead (G1).
        assert_eq!(consumed_grants(&server), n + 1, "{agent}");

        let hook = spawn_hook(&server, &token, agent, &[], &fixture(agent, "deny"));
        let (decision, reason) = verdict(agent, finish(hook));
        assert_eq!(decision, "deny");
        assert!(reason.contains("destructive command"), "{agent}: {reason}");
        assert!(reason.contains("no-destructive-shell"), "{agent}: {reason}");
    }
    assert!(
        server.pending().is_empty(),
        "allow and deny leave nothing to approve"
    );
}

#[test]
fn asked_calls_wait_for_the_person_approve_then_allow() {
    let (_work, server, token) = start();
    let cases = [
        ("claude-code", "mcp"),
        ("claude-code", "ask"),
        ("codex", "ask"),
        ("gemini", "ask"),
    ];
    for (n, (agent, name)) in cases.into_iter().enumerate() {
        let before = server.pending();
        let hook = spawn_hook(
            &server,
            &token,
            agent,
            &["--wait", "30"],
            &fixture(agent, name),
        );
        let approval = new_approval(&server, &before);
        let output = server.client(&["approvals", "approve", &approval]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let (decision, _) = verdict(agent, finish(hook));
        assert_eq!(decision, "allow", "{agent} {name}");
        assert_eq!(consumed_grants(&server), n + 1, "{agent} {name}");
    }
    // The MCP tool was submitted under the name Claude Code gave it.
    let first = server.get_json("/v1/approvals?status=approved");
    let tools: Vec<&str> = first["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|approval| approval["tool"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"mcp__github__create_issue"), "{tools:?}");
    // The agents' shell tools (Bash, run_shell_command) arrive in the canonical vocabulary.
    assert!(tools.contains(&"shell.exec"), "{tools:?}");
    assert!(!tools.contains(&"run_shell_command"), "{tools:?}");
}

#[test]
fn asked_calls_rejected_by_the_person_are_denied_with_the_reason() {
    let (_work, server, token) = start();
    for agent in AGENTS {
        let before = server.pending();
        let hook = spawn_hook(
            &server,
            &token,
            agent,
            &["--wait", "30"],
            &fixture(agent, "ask"),
        );
        let approval = new_approval(&server, &before);
        let output = server.client(&[
            "approvals",
            "reject",
            &approval,
            "--reason",
            "not on a Friday",
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let (decision, reason) = verdict(agent, finish(hook));
        assert_eq!(decision, "deny", "{agent}");
        assert!(reason.contains("rejected"), "{agent}: {reason}");
        assert!(reason.contains("not on a Friday"), "{agent}: {reason}");
    }
    assert_eq!(consumed_grants(&server), 0);
}

#[test]
fn nobody_deciding_within_the_wait_is_a_deny_that_names_the_approval() {
    let (_work, server, token) = start();
    for agent in AGENTS {
        let before = server.pending();
        let hook = spawn_hook(
            &server,
            &token,
            agent,
            &["--wait", "1"],
            &fixture(agent, "ask"),
        );
        let (decision, reason) = verdict(agent, finish(hook));
        assert_eq!(decision, "deny", "{agent}");
        let approval = new_approval(&server, &before);
        assert!(reason.contains("still pending"), "{agent}: {reason}");
        assert!(
            reason.contains(&format!("airlock approvals approve {approval}")),
            "{agent}: {reason}"
        );
    }
}

#[test]
fn an_unreachable_gateway_blocks_with_exit_2_and_the_reason_on_stderr() {
    let work = tempfile::tempdir().unwrap();
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for agent in AGENTS {
        let mut hook = command(work.path());
        hook.args(["hook", agent, "--url", &format!("http://127.0.0.1:{port}")])
            .env("AIRLOCK_TOKEN", "not-checked");
        let (code, out, err) = finish(spawn_with_input(hook, &fixture(agent, "allow")));
        assert_eq!(code, Some(2), "{agent}: {out} {err}");
        // The agent's own deny on stdout as well as exit 2: blocked whichever it reads.
        let (decision, reason) = verdict(agent, (Some(0), out, err.clone()));
        assert_eq!(decision, "deny", "{agent}");
        assert!(reason.contains("cannot reach airlock"), "{agent}: {reason}");
        assert!(err.contains("blocked"), "{agent}: {err}");
        assert!(err.contains("cannot reach airlock"), "{agent}: {err}");
    }
}

/// A listener on port 0 that accepts every connection and never answers (a gateway that
/// hangs); its address.
fn hung_gateway() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        // Held open, never read from or written to, until the test process ends.
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    format!("http://{address}")
}

#[test]
fn a_gateway_that_never_answers_is_a_deny_before_the_agents_timeout() {
    let work = tempfile::tempdir().unwrap();
    let url = hung_gateway();
    // `--wait 1`: the whole hook answers within 1 + 3 s, as the guides' timeouts expect of
    // `--wait 55` (58 s, under 60).
    for (agent, name) in [
        ("claude-code", "allow"),
        ("codex", "allow"),
        ("codex", "pre_allow"),
        ("gemini", "allow"),
    ] {
        let mut hook = command(work.path());
        hook.args(["hook", agent, "--wait", "1", "--url", &url])
            .env("AIRLOCK_TOKEN", "not-checked");
        let started = std::time::Instant::now();
        let (code, out, err) = finish(spawn_with_input(hook, &fixture(agent, name)));
        let took = started.elapsed();
        assert!(took < Duration::from_secs(6), "{agent} {name}: {took:?}");
        assert!(took >= Duration::from_secs(3), "{agent} {name}: {took:?}");
        assert_eq!(code, Some(2), "{agent} {name}: {out} {err}");
        assert!(
            err.contains("did not answer in time"),
            "{agent} {name}: {err}"
        );
        // The deny is in the shape of the event that asked.
        let value: Value = serde_json::from_str(&out).unwrap();
        let reason = match (agent, name) {
            ("codex", "pre_allow") => {
                assert_eq!(value["hookSpecificOutput"]["hookEventName"], "PreToolUse");
                assert_eq!(value["hookSpecificOutput"]["permissionDecision"], "deny");
                value["hookSpecificOutput"]["permissionDecisionReason"].to_string()
            }
            _ => {
                let (decision, reason) = verdict(agent, (Some(0), out, err));
                assert_eq!(decision, "deny", "{agent}");
                reason
            }
        };
        assert!(
            reason.contains("did not answer in time"),
            "{agent}: {reason}"
        );
    }
    // An outcome report to a hung gateway blocks nothing, and ends in time too.
    let mut input: Value = serde_json::from_str(&fixture("claude-code", "allow")).unwrap();
    input["hook_event_name"] = "PostToolUse".into();
    let mut hook = command(work.path());
    hook.args(["hook", "claude-code", "--wait", "1", "--url", &url])
        .env("AIRLOCK_TOKEN", "not-checked");
    let started = std::time::Instant::now();
    let (code, out, err) = finish(spawn_with_input(hook, &input.to_string()));
    assert!(started.elapsed() < Duration::from_secs(6), "{err}");
    assert_eq!((code, out.as_str()), (Some(0), ""), "{err}");
    assert!(
        err.contains("could not record") && err.contains("in time"),
        "{err}"
    );
}

#[test]
fn unreadable_input_or_a_refused_token_blocks_with_exit_2() {
    let (_work, server, token) = start();
    for agent in AGENTS {
        for (input, says) in [
            ("", "not the expected JSON"),
            ("{\"tool_name\": ", "not the expected JSON"),
            (r#"{"tool_input": {"command": "ls"}}"#, "no `tool_name`"),
            (r#"{"tool_name": "Bash"}"#, "no `tool_input`"),
        ] {
            let (code, out, err) = finish(spawn_hook(&server, &token, agent, &[], input));
            assert_eq!(code, Some(2), "{agent} {input}: {out}");
            assert!(err.contains(says), "{agent} {input}: {err}");
            let (decision, reason) = verdict(agent, (Some(0), out, err.clone()));
            assert_eq!(decision, "deny", "{agent} {input}");
            assert!(reason.contains(says), "{agent} {input}: {reason}");
        }
        // The owner is a person, not an agent: the gate refuses, the hook blocks.
        let hook = spawn_hook(
            &server,
            &server.owner_token(),
            agent,
            &[],
            &fixture(agent, "allow"),
        );
        let (code, out, err) = finish(hook);
        assert_eq!(code, Some(2), "{agent}: {out}");
        assert!(err.contains("blocked"), "{agent}: {err}");
        assert_eq!(verdict(agent, (Some(0), out, err)).0, "deny", "{agent}");
    }
    // Another agent's payload is refused rather than guessed at.
    let hook = spawn_hook(&server, &token, "gemini", &[], &fixture("codex", "allow"));
    let (code, _, err) = finish(hook);
    assert_eq!(code, Some(2));
    assert!(err.contains("PermissionRequest"), "{err}");
    assert_eq!(consumed_grants(&server), 0);
}

#[test]
fn calls_of_one_agent_session_share_one_airlock_session() {
    let (_work, server, token) = start();
    let names = [
        ("claude-code", "Claude Code"),
        ("codex", "Codex"),
        ("gemini", "Gemini CLI"),
    ];
    let mut seen: Vec<String> = Vec::new();
    for (agent, display) in names {
        // The recorded payload, under the agent's session `one`, `two`, then `one` again.
        let mut sessions = Vec::new();
        for external in ["one", "two", "one"] {
            let mut input: Value = serde_json::from_str(&fixture(agent, "allow")).unwrap();
            input["session_id"] = format!("{agent}-{external}").into();
            // Each invocation is another tool use: the same `tool_use_id` with the same
            // call in the same session would be a retry, answered by replay (§11.8).
            if input.get("tool_use_id").is_some() {
                input["tool_use_id"] = format!("{agent}-{external}-{}", sessions.len()).into();
            }
            let hook = spawn_hook(&server, &token, agent, &[], &input.to_string());
            assert_eq!(verdict(agent, finish(hook)).0, "allow", "{agent}");
            // The call just allowed: the newest consumed grant's.
            let audit = server.get_json("/v1/audit?limit=1000");
            let call_id = audit["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|record| record["kind"] == "grant.consumed")
                .map(|record| record["data"]["call_id"].as_str().unwrap().to_owned())
                .find(|id| !seen.contains(id))
                .unwrap();
            seen.push(call_id.clone());
            let call = server.get_json(&format!("/v1/calls/{call_id}"));
            sessions.push(call["session_id"].as_str().unwrap().to_owned());
        }
        let (one, two, one_again) = (&sessions[0], &sessions[1], &sessions[2]);
        assert_eq!(one, one_again, "{agent}: {sessions:?}");
        assert_ne!(one, two, "{agent}: {sessions:?}");
        let session = server.get_json(&format!("/v1/sessions/{one}"));
        assert_eq!(session["external_id"], format!("{agent}-one"), "{session}");
        assert_eq!(
            session["title"],
            format!("{display} in /home/ana/shop"),
            "{session}"
        );
    }
}

/// Codex's `PreToolUse` fires for every shell call, and Codex honours only a deny there:
/// an allowed call is answered with nothing, a denied one with the deny form, and an asked
/// one waits inside the hook for the person.
#[test]
fn codex_pre_tool_use_gates_every_shell_call() {
    let (_work, server, token) = start();
    let (code, out, err) = finish(spawn_hook(
        &server,
        &token,
        "codex",
        &[],
        &fixture("codex", "pre_allow"),
    ));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.trim().is_empty(),
        "an allowed call prints nothing: {out}"
    );
    assert_eq!(consumed_grants(&server), 1, "the grant is redeemed first");

    let (code, out, err) = finish(spawn_hook(
        &server,
        &token,
        "codex",
        &[],
        &fixture("codex", "pre_deny"),
    ));
    assert_eq!(code, Some(0), "{err}");
    let value: Value = serde_json::from_str(&out).unwrap();
    let inner = &value["hookSpecificOutput"];
    assert_eq!(inner["hookEventName"], "PreToolUse", "{value}");
    assert_eq!(inner["permissionDecision"], "deny", "{value}");
    let reason = inner["permissionDecisionReason"].as_str().unwrap();
    assert!(reason.contains("destructive command"), "{reason}");

    let before = server.pending();
    let hook = spawn_hook(
        &server,
        &token,
        "codex",
        &["--wait", "30"],
        &fixture("codex", "pre_ask"),
    );
    let approval = new_approval(&server, &before);
    let output = server.client(&["approvals", "approve", &approval]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let (code, out, err) = finish(hook);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.trim().is_empty(),
        "an approved call prints nothing: {out}"
    );
    assert_eq!(consumed_grants(&server), 2);
}

/// The after-the-fact events (`PostToolUse`, `AfterTool`) report the outcome of the call
/// the hook allowed (DESIGN.md §11.8): nothing is printed, the hook exits 0, and the
/// call shows the outcome; a report the server cannot take blocks nothing.
#[test]
fn after_events_report_the_outcome_of_the_allowed_call() {
    let (_work, server, token) = start();
    for (agent, after, response) in [
        (
            "claude-code",
            "PostToolUse",
            json!({"stdout": "clean", "interrupted": false}),
        ),
        (
            "gemini",
            "AfterTool",
            json!({"llmContent": "", "error": {"message": "boom"}}),
        ),
    ] {
        let hook = spawn_hook(&server, &token, agent, &[], &fixture(agent, "allow"));
        assert_eq!(verdict(agent, finish(hook)).0, "allow");
        let audit = server.get_json("/v1/audit?limit=1000");
        let call_id = audit["items"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|record| record["kind"] == "grant.consumed")
            .map(|record| record["data"]["call_id"].as_str().unwrap().to_owned())
            .unwrap();
        let mut input: Value = serde_json::from_str(&fixture(agent, "allow")).unwrap();
        input["hook_event_name"] = after.into();
        input["tool_response"] = response;
        let (code, out, err) = finish(spawn_hook(&server, &token, agent, &[], &input.to_string()));
        assert_eq!((code, out.as_str()), (Some(0), ""), "{agent}: {err}");
        let call = server.get_json(&format!("/v1/calls/{call_id}"));
        let expected = if agent == "gemini" {
            "failed"
        } else {
            "succeeded"
        };
        assert_eq!(call["outcome"]["status"], expected, "{agent}: {call}");
    }
    // The gateway down: the report is lost (the call will turn ambiguous), the agent is
    // not blocked.
    let mut input: Value = serde_json::from_str(&fixture("claude-code", "allow")).unwrap();
    input["hook_event_name"] = "PostToolUse".into();
    let mut command = command(&server.work_dir);
    command
        .args(["hook", "claude-code", "--url", "http://127.0.0.1:1"])
        .env("AIRLOCK_TOKEN", &token);
    let (code, out, err) = finish(spawn_with_input(command, &input.to_string()));
    assert_eq!((code, out.as_str()), (Some(0), ""), "{err}");
    assert!(err.contains("could not record"), "{err}");
}

/// A hook run inside a traced agent passes the agent's `TRACEPARENT` on: the server's
/// span of the call joins that trace, as a real OTLP receiver records it
/// (`scripts/otlp_receiver.py`, the official protobuf definitions).
#[test]
fn a_hook_joins_the_agents_trace_from_traceparent() {
    const TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
    const PARENT_SPAN: &str = "b7ad6b7169203331";
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/otlp_receiver.py"
    );
    let mut receiver = KillOnDrop(
        Command::new("python3")
            .args(["-u", script, "--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 is needed for the OTLP receiver"),
    );
    let mut lines =
        std::io::BufRead::lines(std::io::BufReader::new(receiver.0.stdout.take().unwrap()));
    let first = lines.next().and_then(Result::ok).expect(
        "the OTLP receiver exited at once; pip install opentelemetry-proto (scripts/services.sh)",
    );
    let port = first
        .strip_prefix("listening ")
        .unwrap_or_else(|| panic!("unexpected first line from the receiver: {first}"))
        .to_owned();
    let spans = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let seen = std::sync::Arc::clone(&spans);
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            seen.lock()
                .unwrap()
                .push(serde_json::from_str(&line).unwrap());
        }
    });

    let work = tempfile::tempdir().unwrap();
    let policy = work.path().join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let endpoint = format!("http://127.0.0.1:{port}");
    let server = Server::start_with_env(
        work.path(),
        &["--policy", policy.to_str().unwrap()],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );
    let token = server.create_agent("coder");
    let mut hook = server.client_command(&token, &["hook", "claude-code"]);
    hook.env("TRACEPARENT", format!("00-{TRACE_ID}-{PARENT_SPAN}-01"));
    let answer = finish(spawn_with_input(hook, &fixture("claude-code", "allow")));
    assert_eq!(verdict("claude-code", answer).0, "allow");

    let mut joined = None;
    eventually(
        Duration::from_secs(30),
        "the hook's span at the receiver",
        || {
            joined = spans
                .lock()
                .unwrap()
                .iter()
                .find(|span| span["name"] == "airlock.call" && span["trace_id"] == TRACE_ID)
                .cloned();
            joined.is_some()
        },
    );
    let span = joined.unwrap();
    assert_eq!(span["parent_span_id"], PARENT_SPAN, "{span}");
    assert_eq!(span["attributes"]["airlock.native_tool"], "Bash", "{span}");
    assert_eq!(span["attributes"]["airlock.decision"], "allowed", "{span}");
}
