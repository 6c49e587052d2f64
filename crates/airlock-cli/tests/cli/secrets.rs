//! No secrets at rest (G9), through every way in, against the real binary: a corpus of
//! more than twenty kinds of secret goes into call arguments over the HTTP API (allowed
//! and asked calls), the Claude Code hook (the `airlock hook` command and the `http`
//! endpoint), the MCP proxy (a real MCP client and server) and the built-in runtime (a
//! scripted model's tool call). Afterwards none of them is in clear in the data folder
//! (database, WAL and every other file), the server's and the proxy's logs (at `debug`),
//! an audit export, the API's answers or the web pages.
//!
//! Each secret carries this run's nonce, so a hit can only come from this test; a visible
//! marker sent beside them must be found everywhere the secrets are not, so the search
//! itself is shown to work.

use crate::support::{eventually, finished_output, stderr, wait_exit, KillOnDrop, Server};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const POLICY: &str = r#"version = 1
default = "ask"
deadline = "1h"
secrets = "deny"

[tools."notes.save"]
risk = "write"
summary = "Save {text}"

[[rules]]
name = "reads-are-fine"
tool = "fs.read"
decision = "allow"

[[rules]]
name = "echo-is-fine"
tool = "mcp__everything__echo"
decision = "allow"

[[rules]]
name = "shell-is-fine-here"
# Claude Code's Bash arrives as shell.exec; `native_tool` narrows the rule to it.
tool = "shell.exec"
native_tool = "Bash"
decision = "allow"

[[rules]]
name = "notes-need-a-person"
tool = "notes.save"
decision = "ask"
"#;

/// The corpus: (what it is, the secret). Built from pieces and this run's `nonce` (hex),
/// so the file holds nothing a scanner would take for a credential.
fn corpus(nonce: &str) -> Vec<(&'static str, String)> {
    let n = nonce;
    let upper = n.to_uppercase();
    let hex64 = format!("{n}{}", "0123456789abcdef".repeat(4))[..64].to_owned();
    let pem = |label: &str| {
        format!(
            "-----BEGIN {label}PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B{n}AQEFAASC\n-----END {label}PRIVATE KEY-----"
        )
    };
    let basic = format!("YWxpY2U6{n}c2VjcmV0");
    vec![
        (
            "aws access key",
            format!("AKIA{}", &format!("{upper}QWERTYUIOPASDFGH")[..16]),
        ),
        (
            "aws secret key",
            format!("aws_secret_access_key={n}wJalrXUtnFEMIK7MDENG"),
        ),
        ("github token", format!("ghp_{n}a1B2c3D4e5F6g7H8i9J0")),
        (
            "github fine-grained token",
            format!("github_pat_11AB{n}_cdefGHIJklmnOPQRstu"),
        ),
        ("gitlab token", format!("glpat-{n}xY7zW6vU5tS4rQ3")),
        ("slack bot token", format!("xoxb-1234567890-{n}")),
        (
            "slack webhook",
            format!("https://hooks.slack.com/services/T0000/B0000/{n}"),
        ),
        ("stripe secret key", format!("sk_live_{n}4eC39HqLyjWDar")),
        ("openai key", format!("sk-proj-{n}Ab3De6Gh9Jk2Lm5No8")),
        ("anthropic key", format!("sk-ant-api03-{n}q1W2e3R4t5Y6")),
        (
            "jwt",
            format!("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ{n}In0.dBjftJeZ4CVPmB92K27uhbUJU"),
        ),
        ("pem private key", pem("RSA ")),
        ("ssh private key", pem("OPENSSH ")),
        (
            "password in a url",
            format!("postgres://app:{n}hunter2@db.acme.test/app"),
        ),
        (
            "bearer header",
            format!("Authorization: Bearer {n}Zx9Yw8Vu7Ts6Rq5"),
        ),
        ("basic auth header", format!("Authorization: Basic {basic}")),
        (
            "google api key",
            format!(
                "AIza{}",
                &format!("{n}SyD9tSrke72PouQMnMX7a7eZSW0jkFMBWY")[..35]
            ),
        ),
        ("gcp oauth token", format!("ya29.a0AfH6{n}SMBx3jT9")),
        (
            "azure storage key",
            format!(
                "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={n}Eby8vdM02xNOcqFl==;"
            ),
        ),
        (
            "npm token",
            format!(
                "npm_{}",
                &format!("{n}Xy7Ab3Cd9Ef1Gh5Ij2Kl4Mn6Op8Qr0St")[..36]
            ),
        ),
        ("pypi token", format!("pypi-AgEIcHlwaS5vcmc{n}CJDk5ZjM")),
        (
            "hugging face token",
            format!("hf_{n}AbCdEfGhIjKlMnOpQrStUv"),
        ),
        ("sendgrid key", format!("SG.{n}ngeVfQFYQl.{n}TTgCm0xU9eKz")),
        ("digitalocean token", format!("dop_v1_{hex64}")),
        ("password flag", format!("mysql --password={n}S3cr3t -h db")),
        ("cookie header", format!("Cookie: session={n}abcdef")),
        (
            "password query",
            format!("https://api.acme.test/x?access_token={n}q9w8"),
        ),
    ]
}

/// The part of a secret that must never appear: the nonce-bearing token (for headers and
/// flags, the value after the label).
fn needle(secret: &str, nonce: &str) -> String {
    let at = secret
        .find(nonce)
        .or_else(|| secret.find(&nonce.to_uppercase()))
        .unwrap_or_else(|| panic!("no nonce in {secret}"));
    let start = secret[..at]
        .rfind(|c: char| c.is_whitespace() || matches!(c, '=' | ':' | '\n'))
        .map_or(0, |i| i + 1);
    let end = secret[at..]
        .find(|c: char| c.is_whitespace() || matches!(c, ';' | '@' | '\n'))
        .map_or(secret.len(), |i| at + i);
    secret[start..end].to_owned()
}

fn post(server: &Server, token: &str, path: &str, body: &Value) -> (u16, Value) {
    let response = ureq::post(format!("{}{path}", server.url))
        .header("Authorization", format!("Bearer {token}"))
        .config()
        .http_status_as_error(false)
        .build()
        .send_json(body)
        .unwrap();
    let status = response.status().as_u16();
    let text = response.into_body().read_to_string().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn get_text(server: &Server, path: &str, header: (&str, String)) -> String {
    ureq::get(format!("{}{path}", server.url))
        .header(header.0, header.1)
        .config()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .call()
        .unwrap()
        .into_body()
        .read_to_string()
        .unwrap()
}

fn npm_everything() -> String {
    let folder = std::env::var_os("AIRLOCK_TEST_MCP_EVERYTHING")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
                "../../target/test-peers/node_modules/@modelcontextprotocol/server-everything",
            )
        });
    let script = folder.join("dist/index.js");
    assert!(
        script.is_file(),
        "server-everything is not installed: run scripts/test.sh"
    );
    script.display().to_string()
}

/// Every file under `dir`, concatenated.
fn folder_bytes(dir: &Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            bytes.extend(folder_bytes(&path));
        } else if let Ok(content) = std::fs::read(&path) {
            bytes.extend(content);
        }
    }
    bytes
}

#[test]
fn secrets_through_every_way_in_are_stored_logged_and_shown_nowhere() {
    let nonce = format!(
        "{:08x}{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos(),
        std::process::id()
    );
    let corpus = corpus(&nonce);
    assert!(corpus.len() >= 20);
    let visible = format!("visible-{nonce}-marker");
    // Every kind is one the redactor knows (else the checks below would only prove luck).
    for (what, secret) in &corpus {
        assert!(
            !airlock_policy::secrets::scan(&json!({ "text": secret })).is_empty(),
            "the redactor misses the {what}: {secret}"
        );
    }

    let work = tempfile::tempdir().unwrap();
    let policy = work.path().join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let scenarios = work.path().join("model.toml");
    let mut script =
        String::from("[[scenario]]\nmarker = \"#leak\"\n[[scenario.turn]]\nevents = [\n");
    for (_, secret) in &corpus {
        let arguments = json!({"path": format!("/tmp/{visible}"), "note": secret});
        script.push_str(&format!(
            "  {{ type = \"tool_use\", name = \"fs.read\", arguments = {} }},\n",
            toml_inline(&arguments)
        ));
    }
    script.push_str("]\n[[scenario.turn]]\nevents = [{ type = \"text\", text = \"done\" }]\n");
    std::fs::write(&scenarios, script).unwrap();
    let mut server = Server::start_with_env(
        work.path(),
        &["--policy", policy.to_str().unwrap()],
        &[("RUST_LOG", "debug")],
    );
    let owner = server.owner_token();
    let (status, created) = post(&server, &owner, "/v1/agents", &json!({"name": "coder"}));
    assert_eq!(status, 201, "{created}");
    let agent = created["token"].as_str().unwrap().to_owned();
    let mut answers = Vec::new();

    // 1. The HTTP API: an allowed call (redeemed) and an asked one, per secret.
    for (what, secret) in &corpus {
        let arguments = json!({"path": format!("/tmp/{visible}"), "note": secret});
        let (status, call) = post(
            &server,
            &agent,
            "/v1/calls",
            &json!({"tool": "fs.read", "arguments": arguments}),
        );
        assert_eq!(
            (status, call["status"].as_str()),
            (201, Some("allowed")),
            "{what}: {call}"
        );
        let id = call["id"].as_str().unwrap();
        let (status, redeemed) = post(
            &server,
            &agent,
            &format!("/v1/calls/{id}/redeem"),
            &json!({}),
        );
        assert_eq!(status, 200, "{what}: {redeemed}");
        answers.push(call.to_string());
        answers.push(redeemed.to_string());
        let asked =
            json!({"tool": "notes.save", "arguments": {"text": format!("{visible} {secret}")}});
        let (status, call) = post(&server, &agent, "/v1/calls", &asked);
        assert_eq!(status, 201, "{what}: {call}");
        assert_eq!(call["decided_by"], "secrets", "{what}: {call}");
        answers.push(call.to_string());
    }
    let all = corpus
        .iter()
        .map(|(_, s)| s.as_str())
        .collect::<Vec<_>>()
        .join(" \n ");
    let (status, evaluated) = post(
        &server,
        &owner,
        "/v1/policy/evaluate",
        &json!({"tool": "notes.save", "arguments": {"text": all}}),
    );
    assert_eq!(status, 200, "{evaluated}");
    answers.push(evaluated.to_string());

    // 2. The Claude Code hook: the command and the `http` endpoint.
    let payload = json!({
        "session_id": format!("cc-{nonce}"), "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": format!("echo {visible} {all}")}, "cwd": "/tmp"
    });
    let mut hook = server.client_command(&agent, &["hook", "claude-code"]);
    let mut child = hook
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let mut child = KillOnDrop(child);
    let status = wait_exit(&mut child.0, Duration::from_secs(30));
    let (out, err) = finished_output(&mut child.0);
    assert!(
        status.success() && out.contains("\"allow\""),
        "{status} {out} {err}"
    );
    let mut logs = err;
    let (status, answer) = post(&server, &agent, "/v1/hooks/claude-code?wait_s=0", &payload);
    assert_eq!(status, 200);
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "allow",
        "{answer}"
    );

    // 3. The MCP proxy between a real client and server-everything: echo is allowed.
    let client =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/echo_client.py");
    let output = Command::new("python3")
        .arg(&client)
        .arg(format!("{visible} {all}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_airlock"))
        .args([
            "mcp",
            "proxy",
            "--url",
            &server.url,
            "--server-name",
            "everything",
            "--",
            "node",
        ])
        .arg(npm_everything())
        .env("AIRLOCK_TOKEN", &agent)
        .env("RUST_LOG", "debug")
        .output()
        .expect("python3 runs (pip install mcp, see scripts/test.sh)");
    let echoed = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && echoed.contains(&visible),
        "{echoed}\n{}",
        stderr(&output)
    );
    logs.push_str(&stderr(&output));

    // 4. The built-in runtime: a scripted model calls `fs.read` with every secret.
    let llm = json!({"base_url": format!("scripted:{}", scenarios.display()), "model": "script"});
    let (status, created) = post(
        &server,
        &owner,
        "/v1/agents",
        &json!({"name": "runner", "llm": llm, "tools": ["fs.read"]}),
    );
    assert_eq!(status, 201, "{created}");
    let runner = created["agent"]["id"].as_str().unwrap().to_owned();
    let (status, session) = post(
        &server,
        &owner,
        "/v1/sessions",
        &json!({"agent_id": runner}),
    );
    assert_eq!(status, 201, "{session}");
    let session = session["id"].as_str().unwrap().to_owned();
    let (status, run) = post(
        &server,
        &owner,
        &format!("/v1/sessions/{session}/messages"),
        &json!({"text": "#leak"}),
    );
    assert_eq!(status, 202, "{run}");
    let run = run["run_id"].as_str().unwrap().to_owned();
    eventually(Duration::from_secs(30), "the run ends", || {
        let state = server.get_json(&format!("/v1/runs/{run}"));
        matches!(state["state"].as_str(), Some("completed" | "failed"))
    });

    // Every tool call of the model was put to the gate (and ran: reads are allowed).
    let steps = server.get_json(&format!("/v1/runs/{run}"))["steps"].clone();
    assert_eq!(
        steps.as_array().map(Vec::len),
        Some(corpus.len()),
        "{steps}"
    );
    assert!(steps.to_string().contains(&visible), "{steps}");

    // What the API and the pages show.
    let bearer = ("Authorization", format!("Bearer {owner}"));
    for path in [
        "/v1/audit?limit=1000".to_owned(),
        "/v1/approvals".to_owned(),
        format!("/v1/runs/{run}"),
        format!("/v1/sessions/{session}"),
        format!("/v1/sessions/{session}/messages"),
        "/v1/outbox".to_owned(),
    ] {
        answers.push(get_text(&server, &path, bearer.clone()));
    }
    let signed_in = ureq::post(format!("{}/login", server.url))
        .config()
        .max_redirects(0)
        .http_status_as_error(false)
        .build()
        .send_form([("token", owner.as_str())])
        .unwrap();
    let cookie = signed_in
        .headers()
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap();
    let cookie = ("Cookie", cookie.split(';').next().unwrap().to_owned());
    for path in [
        "/".to_owned(),
        "/audit".to_owned(),
        format!("/sessions/{session}"),
    ] {
        let page = get_text(&server, &path, cookie.clone());
        assert!(page.contains("<html"), "{path}: {page}");
        answers.push(page);
    }
    let export = work.path().join("audit.ndjson");
    let exported = server.client(&["audit", "export", "--out", export.to_str().unwrap()]);
    assert_eq!(exported.status.code(), Some(0), "{}", stderr(&exported));
    let export = std::fs::read_to_string(&export).unwrap();

    // The database while the server runs (the WAL holds the latest pages), then after a
    // clean stop, with every other file of the data folder.
    let live = folder_bytes(&server.data_dir);
    server.terminate();
    let mut stored = folder_bytes(&server.data_dir);
    stored.extend(live);
    logs.push_str(&server.stdout.text());
    logs.push_str(&server.stderr.text());
    let shown = answers.join("\n");

    // The search works: the marker beside the secrets is found in each place.
    let contains = |haystack: &[u8], needle: &str| {
        haystack
            .windows(needle.len())
            .any(|w| w == needle.as_bytes())
    };
    assert!(
        contains(&stored, &visible),
        "the marker is not in the database"
    );
    assert!(export.contains(&visible), "the marker is not in the export");
    assert!(shown.contains(&visible), "the marker is not in the answers");
    assert!(logs.len() > 1000, "hardly any logs captured: {logs}");
    let mut leaks = Vec::new();
    for (what, secret) in &corpus {
        let needle = needle(secret, &nonce);
        for (place, found) in [
            ("the data folder", contains(&stored, &needle)),
            ("the logs", logs.contains(&needle)),
            ("the audit export", export.contains(&needle)),
            ("the API answers and pages", shown.contains(&needle)),
        ] {
            if found {
                leaks.push(format!("{what} ({needle}) in {place}"));
            }
        }
    }
    assert!(leaks.is_empty(), "secrets in clear:\n{}", leaks.join("\n"));
}

/// A JSON object as a TOML inline table (strings, objects).
fn toml_inline(value: &Value) -> String {
    match value {
        Value::Object(members) => {
            let fields: Vec<String> = members
                .iter()
                .map(|(key, value)| format!("{key} = {}", toml_inline(value)))
                .collect();
            format!("{{ {} }}", fields.join(", "))
        }
        Value::String(text) => serde_json::to_string(text).unwrap(),
        other => other.to_string(),
    }
}
