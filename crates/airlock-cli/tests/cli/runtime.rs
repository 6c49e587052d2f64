//! The built-in runtime through real `airlock serve` processes: the demo's scripted agent
//! driven by `airlock chat` with an inline approval, a run that survives `kill -9`, and a
//! run resumed by another node on a shared PostgreSQL.

use crate::support::{eventually, stderr as stderr_of, stdout, Server};
use serde_json::{json, Value};
use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

fn call(method: &str, url: &str, token: &str, body: Option<&Value>) -> Value {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let auth = format!("Bearer {token}");
    let response = match body {
        Some(body) => agent
            .post(url)
            .header("Authorization", &auth)
            .send_json(body)
            .unwrap(),
        None if method == "GET" => agent
            .get(url)
            .header("Authorization", &auth)
            .call()
            .unwrap(),
        None => agent
            .post(url)
            .header("Authorization", &auth)
            .send_empty()
            .unwrap(),
    };
    response.into_body().read_json().unwrap_or(Value::Null)
}

/// Opens a session with the agent named `name` and says `text`; returns the run id.
fn start_run(server: &Server, owner: &str, name: &str, text: &str) -> String {
    let agents = call("GET", &format!("{}/v1/agents", server.url), owner, None);
    let agent = agents["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == name)
        .unwrap_or_else(|| panic!("no agent {name}: {agents}"))
        .clone();
    let session = call(
        "POST",
        &format!("{}/v1/sessions", server.url),
        owner,
        Some(&json!({"agent_id": agent["id"]})),
    );
    let started = call(
        "POST",
        &format!(
            "{}/v1/sessions/{}/messages",
            server.url,
            session["id"].as_str().unwrap()
        ),
        owner,
        Some(&json!({ "text": text })),
    );
    started["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned()
}

fn run_state(server: &Server, owner: &str, run_id: &str) -> String {
    call(
        "GET",
        &format!("{}/v1/runs/{run_id}", server.url),
        owner,
        None,
    )["state"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn outbox(server: &Server, owner: &str) -> Vec<Value> {
    call("GET", &format!("{}/v1/outbox", server.url), owner, None)["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// `serve --demo`, then `airlock chat assistant`: the scripted agent's email waits for
/// approval, `y` approves it inline, the run completes and the email is in the outbox.
#[test]
fn demo_chat_approves_inline() {
    let work = tempfile::tempdir().unwrap();
    let server = Server::start(work.path(), &["--demo"]);
    // Printed before the server answers, but maybe not yet read from the pipe.
    eventually(Duration::from_secs(5), "the demo's chat command", || {
        server.stdout.text().contains("chat assistant")
    });
    let mut chat = server
        .client_command(&server.owner_token(), &["chat", "assistant"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    chat.stdin
        .take()
        .unwrap()
        .write_all(b"email Bob the report\ny\n")
        .unwrap();
    let output = chat.wait_with_output().unwrap();
    let text = stdout(&output);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(text.contains("→ email.send"), "{text}");
    assert!(text.contains("needs approval"), "{text}");
    assert!(text.contains("Send email to bob@elsewhere.test"), "{text}");
    assert!(text.contains("ok:"), "{text}");
    let owner = server.owner_token();
    let items = outbox(&server, &owner);
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["recipient"], "bob@elsewhere.test");
}

/// F12: `airlock chat` follows a run that waits for an approval left to the inbox; the
/// server restarts meanwhile (SIGTERM, then a start on the same address). Chat reconnects
/// from the last event it saw once the server is back, shows the rest of the run and
/// exits 0 when it completes.
#[test]
fn chat_follows_a_run_across_a_server_restart() {
    let work = tempfile::tempdir().unwrap();
    let mut server = Server::start(work.path(), &["--demo"]);
    let owner = server.owner_token();
    let mut chat = server
        .client_command(&owner, &["chat", "assistant"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The message, then Enter at the approval prompt: leave it to the inbox.
    chat.stdin
        .take()
        .unwrap()
        .write_all(b"email Bob the report\n\n")
        .unwrap();
    let pending = format!("{}/v1/approvals?status=pending", server.url);
    eventually(Duration::from_secs(10), "the run waits", || {
        let listed = call("GET", &pending, &owner, None);
        listed["items"]
            .as_array()
            .is_some_and(|items| items.len() == 1)
    });

    server.terminate();
    server.restart();
    let approved = server.client(&["approvals", "approve", "--latest"]);
    assert_eq!(approved.status.code(), Some(0), "{}", stdout(&approved));
    let output = chat.wait_with_output().unwrap();
    let (text, errors) = (stdout(&output), stderr_of(&output));
    assert_eq!(output.status.code(), Some(0), "{text}\n{errors}");
    assert!(text.contains("ok:"), "{text}\n{errors}");
    assert!(errors.contains("reconnecting"), "{errors}");
}

/// G7 with a real process: `kill -9` while a run awaits approval; after a restart the
/// approval is decided and the run completes, its email once.
#[test]
fn a_run_awaiting_approval_survives_kill_9() {
    let work = tempfile::tempdir().unwrap();
    let server = Server::start(work.path(), &["--demo"]);
    let owner = server.owner_token();
    let run_id = start_run(&server, &owner, "assistant", "email Bob");
    eventually(Duration::from_secs(10), "the run waits", || {
        run_state(&server, &owner, &run_id) == "awaiting_approval"
    });
    drop(server); // SIGKILL

    let server = Server::start(work.path(), &["--demo"]);
    assert_eq!(run_state(&server, &owner, &run_id), "awaiting_approval");
    let approved = server.client(&["approvals", "approve", "--latest"]);
    assert_eq!(approved.status.code(), Some(0), "{}", stdout(&approved));
    eventually(Duration::from_secs(10), "the run completes", || {
        run_state(&server, &owner, &run_id) == "completed"
    });
    assert_eq!(outbox(&server, &owner).len(), 1);
}

/// Several nodes on one PostgreSQL: the node that started a run is killed while the run
/// waits; the decision made on the other node resumes it there, once.
#[test]
fn another_node_resumes_a_run_after_its_node_died() {
    let dir = tempfile::tempdir().unwrap();
    let db = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(airlock_pgtest::fresh_database());
    let node = |name: &str| {
        let work = dir.path().join(name);
        std::fs::create_dir_all(&work).unwrap();
        Server::start(&work, &["--db", &db])
    };
    let a = node("a");
    let owner = a.owner_token();
    let b = node("b");
    let created = call(
        "POST",
        &format!("{}/v1/agents", a.url),
        &owner,
        Some(
            &json!({"name": "assistant", "llm": {"base_url": "scripted:demo", "model": "scripted"}}),
        ),
    );
    assert!(created["token"].is_string(), "{created}");
    let run_id = start_run(&a, &owner, "assistant", "email Bob");
    eventually(Duration::from_secs(10), "the run waits", || {
        run_state(&b, &owner, &run_id) == "awaiting_approval"
    });
    drop(a); // SIGKILL

    let approval_id = call("GET", &format!("{}/v1/runs/{run_id}", b.url), &owner, None)
        ["pending_approvals"][0]
        .as_str()
        .unwrap()
        .to_owned();
    let approval = call(
        "GET",
        &format!("{}/v1/approvals/{approval_id}", b.url),
        &owner,
        None,
    );
    let decided = call(
        "POST",
        &format!("{}/v1/approvals/{approval_id}/decision", b.url),
        &owner,
        Some(&json!({"decision": "approve", "binding_digest": approval["binding_digest"]})),
    );
    assert_eq!(decided["status"], "approved", "{decided}");
    eventually(Duration::from_secs(15), "node b completes the run", || {
        run_state(&b, &owner, &run_id) == "completed"
    });
    assert_eq!(outbox(&b, &owner).len(), 1);
}

/// With `AIRLOCK_SMTP` set, the approved email leaves the outbox for a real SMTP server
/// (the `aiosmtpd` sink from PyPI), once, and the outbox records the delivery.
#[test]
fn an_approved_email_is_delivered_over_smtp() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let sink = std::process::Command::new("python3")
        // Unbuffered: the message is printed before the sink answers 250.
        .args([
            "-u",
            "-m",
            "aiosmtpd",
            "-n",
            "-l",
            &format!("127.0.0.1:{port}"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 -m aiosmtpd starts (scripts/test.sh installs aiosmtpd)");
    let mut sink = crate::support::KillOnDrop(sink);
    let received = crate::support::Captured::default();
    received.collect(sink.0.stdout.take().unwrap());
    eventually(Duration::from_secs(10), "the SMTP sink listens", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });

    let work = tempfile::tempdir().unwrap();
    let smtp = format!("127.0.0.1:{port}");
    let server = Server::start_with_env(
        work.path(),
        &["--demo"],
        &[
            ("AIRLOCK_SMTP", &smtp),
            ("AIRLOCK_SMTP_FROM", "airlock@demo.test"),
        ],
    );
    let owner = server.owner_token();
    let run_id = start_run(&server, &owner, "assistant", "email Bob");
    eventually(Duration::from_secs(10), "the run waits", || {
        run_state(&server, &owner, &run_id) == "awaiting_approval"
    });
    let approved = server.client(&["approvals", "approve", "--latest"]);
    assert_eq!(approved.status.code(), Some(0), "{}", stdout(&approved));
    eventually(Duration::from_secs(20), "the email is delivered", || {
        outbox(&server, &owner)
            .first()
            .is_some_and(|item| item["delivered_at"].is_string())
    });
    let item = outbox(&server, &owner).remove(0);
    assert_eq!(item["attempts"], 1, "{item}");
    // The sink printed the message before it answered the delivery; the reader thread
    // may not have read it yet.
    eventually(
        Duration::from_secs(10),
        "the sink's printed message",
        || received.text().contains("END MESSAGE"),
    );
    let mail = received.text();
    assert!(mail.contains("bob@elsewhere.test"), "{mail}");
    assert!(mail.contains("Weekly report"), "{mail}");
    assert_eq!(mail.matches("Subject: Weekly report").count(), 1, "{mail}");
}

/// `airlock runs pause ID` and `runs resume ID` (with `--json`): the pause closes the
/// run's approval, a second pause is a refusal (exit 1), a viewer is refused (exit 1), a
/// missing id is a usage error (exit 2); the resume asks again and the run completes once
/// the new approval is approved.
#[test]
fn runs_pause_and_resume_from_the_cli() {
    let work = tempfile::tempdir().unwrap();
    let server = Server::start(work.path(), &["--demo"]);
    let owner = server.owner_token();
    let run_id = start_run(&server, &owner, "assistant", "email Bob");
    eventually(Duration::from_secs(10), "the run waits", || {
        run_state(&server, &owner, &run_id) == "awaiting_approval"
    });
    let first = server.pending();
    assert_eq!(first.len(), 1, "{first:?}");

    let paused = server.client(&["runs", "pause", &run_id]);
    assert_eq!(paused.status.code(), Some(0), "{}", stderr_of(&paused));
    assert_eq!(
        stdout(&paused).trim(),
        format!("paused {run_id} (now paused)")
    );
    assert!(server.pending().is_empty(), "the pause closed the approval");
    let again = server.client(&["runs", "pause", &run_id, "--json"]);
    assert_eq!(again.status.code(), Some(1), "{}", stdout(&again));
    assert!(
        stderr_of(&again).contains("the run is paused"),
        "{}",
        stderr_of(&again)
    );
    let viewer = call(
        "POST",
        &format!("{}/v1/users", server.url),
        &owner,
        Some(&json!({"name": "vic", "role": "viewer"})),
    );
    let viewer_token = viewer["token"]
        .as_str()
        .unwrap_or_else(|| panic!("{viewer}"));
    let refused = server.client_as(viewer_token, &["runs", "resume", &run_id]);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr_of(&refused));
    let usage = server.client(&["runs", "resume"]);
    assert_eq!(usage.status.code(), Some(2), "{}", stderr_of(&usage));

    let resumed = server.client(&["runs", "resume", &run_id, "--json"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr_of(&resumed));
    let body: Value = serde_json::from_str(&stdout(&resumed)).unwrap();
    assert_eq!(body["id"], run_id.as_str());
    let mut second = Vec::new();
    eventually(Duration::from_secs(10), "the run asks again", || {
        second = server.pending();
        second.len() == 1
    });
    assert_ne!(second, first, "a new approval, never the old one");
    let approved = server.client(&["approvals", "approve", &second[0]]);
    assert_eq!(approved.status.code(), Some(0), "{}", stdout(&approved));
    eventually(Duration::from_secs(10), "the run completes", || {
        run_state(&server, &owner, &run_id) == "completed"
    });
    assert_eq!(outbox(&server, &owner).len(), 1);
    let ended = server.client(&["runs", "resume", &run_id]);
    assert_eq!(ended.status.code(), Some(1), "{}", stderr_of(&ended));
}
