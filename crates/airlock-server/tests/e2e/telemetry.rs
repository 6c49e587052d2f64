//! OpenTelemetry (issue 20): a real server exporting to a real OTLP/HTTP receiver
//! (`scripts/otlp_receiver.py`, the official protobuf definitions from the
//! `opentelemetry-proto` package), the spans read back as they went over the wire; and
//! a collector that is down or never answers, which must not slow a decision.

use crate::support::{ask, decide, POLICY};
use airlock_server::telemetry::Telemetry;
use airlock_server::ServeOptions;
use airlock_testkit::TestServer;
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;

/// The caller's trace: its trace id and the span that made the request.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN: &str = "00f067aa0ba902b7";

/// Starts the OTLP receiver on a free port; its span lines arrive on the channel.
async fn receiver() -> (tokio::process::Child, u16, mpsc::UnboundedReceiver<Value>) {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/otlp_receiver.py"
    );
    let mut child = tokio::process::Command::new("python3")
        .args(["-u", script, "--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("python3 is needed for the OTLP receiver");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("the OTLP receiver did not start in time")
        .unwrap()
        .unwrap_or_else(|| {
            panic!(
                "the OTLP receiver exited at once; pip install opentelemetry-proto \
                 (scripts/services.sh install_mcp_peers)"
            )
        });
    let port: u16 = first
        .strip_prefix("listening ")
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("unexpected first line from the receiver: {first}"));
    let (sender, spans) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = sender.send(serde_json::from_str(&line).unwrap());
        }
    });
    (child, port, spans)
}

/// Telemetry exporting to `endpoint`, built off the async threads as the binary does.
async fn telemetry_to(endpoint: String) -> Telemetry {
    tokio::task::spawn_blocking(move || {
        Telemetry::from_env(&|name| {
            (name == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| endpoint.clone())
        })
        .unwrap()
    })
    .await
    .unwrap()
}

async fn server_with(telemetry: &Telemetry) -> (TestServer, String) {
    let options = ServeOptions {
        telemetry: telemetry.clone(),
        ..ServeOptions::default()
    };
    let server = TestServer::start_with_options(None, options).await.unwrap();
    server.put_policy(POLICY).await.unwrap();
    let (_, agent) = server.create_agent("scout").await.unwrap();
    (server, agent)
}

/// Exports what is queued, then reads spans until one named `name` satisfies `matches`.
async fn span_named(
    telemetry: &Telemetry,
    spans: &mut mpsc::UnboundedReceiver<Value>,
    name: &str,
    matches: impl Fn(&Value) -> bool,
) -> Value {
    let flushing = telemetry.clone();
    tokio::task::spawn_blocking(move || flushing.flush())
        .await
        .unwrap();
    let deadline = Instant::now() + crate::support::PATIENCE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let span = tokio::time::timeout(left, spans.recv())
            .await
            .unwrap_or_else(|_| panic!("no {name} span reached the receiver"))
            .unwrap();
        if span["name"] == name && matches(&span) {
            return span;
        }
    }
}

/// Submits a call in the caller's trace. `client` is reused: building one (its TLS
/// setup) costs more than a call.
async fn submit_traced(
    client: &reqwest::Client,
    server: &TestServer,
    agent: &str,
    tool: &str,
    arguments: Value,
) -> Value {
    let reply = client
        .post(format!("{}/v1/calls", server.url))
        .bearer_auth(agent)
        .header("traceparent", format!("00-{TRACE_ID}-{PARENT_SPAN}-01"))
        .json(&json!({"tool": tool, "arguments": arguments}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 201);
    reply.json().await.unwrap()
}

#[tokio::test]
async fn calls_join_the_callers_trace_and_a_wait_is_a_linked_span() {
    let (_receiver, port, mut spans) = receiver().await;
    let telemetry = telemetry_to(format!("http://127.0.0.1:{port}")).await;
    let (server, agent) = server_with(&telemetry).await;

    // An asked call, in the caller's trace.
    let http = reqwest::Client::new();
    let call = submit_traced(
        &http,
        &server,
        &agent,
        "email.send",
        json!({"to": "bob@acme.test", "body": "hi"}),
    )
    .await;
    assert_eq!(call["status"], "pending");
    let call_id = call["id"].as_str().unwrap();
    let approval_id = call["approval_id"].as_str().unwrap();
    let span = span_named(&telemetry, &mut spans, "airlock.call", |span| {
        span["attributes"]["gen_ai.tool.call.id"] == call_id
    })
    .await;
    assert_eq!(span["trace_id"], TRACE_ID, "{span}");
    assert_eq!(span["parent_span_id"], PARENT_SPAN, "{span}");
    assert_eq!(span["resource"]["service.name"], "airlock");
    let attributes = &span["attributes"];
    assert_eq!(attributes["gen_ai.tool.name"], "email.send");
    assert_eq!(attributes["airlock.tool"], "email.send");
    assert_eq!(attributes["airlock.decision"], "pending");
    assert_eq!(attributes["airlock.rule"], "mail-needs-a-person");
    assert_eq!(attributes["airlock.approval.id"], approval_id);
    let call_span = span["span_id"].clone();

    // The person decides: the wait is its own span, linked to the call's.
    let approval = server
        .client
        .get(&format!("/v1/approvals/{approval_id}"), &server.owner_token)
        .await
        .unwrap()
        .body;
    decide(&server, &server.owner_token, &approval, "approve")
        .await
        .expect_status(200)
        .unwrap();
    let wait = span_named(&telemetry, &mut spans, "airlock.approval.wait", |span| {
        span["attributes"]["airlock.approval.id"] == approval_id
    })
    .await;
    assert_eq!(
        wait["links"],
        json!([{"trace_id": TRACE_ID, "span_id": call_span}]),
        "{wait}"
    );
    assert_eq!(wait["attributes"]["airlock.decision"], "approved");
    assert!(wait["attributes"]["airlock.decided_by"]
        .as_str()
        .unwrap()
        .starts_with("user:"));
    assert!(wait["attributes"]["airlock.wait_seconds"].as_f64().unwrap() >= 0.0);
    assert_eq!(wait["events"][0]["name"], "airlock.approval.decided");

    // The histogram counts the wait.
    let metrics = server.client.get("/metrics", "").await.unwrap().text;
    assert!(
        metrics.contains("airlock_approval_wait_seconds_count 1"),
        "{metrics}"
    );

    // A hook call (Claude Code's http hook) is traced the same way, with its native tool.
    let reply = http
        .post(format!("{}/v1/hooks/claude-code?wait_s=0", server.url))
        .bearer_auth(&agent)
        .header("traceparent", format!("00-{TRACE_ID}-{PARENT_SPAN}-01"))
        .json(&json!({
            "session_id": "9f1c2d3e-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
            "cwd": "/home/ana/shop",
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": "/home/ana/shop/README.md"},
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
    let hooked = span_named(&telemetry, &mut spans, "airlock.call", |span| {
        span["attributes"]["airlock.native_tool"] == "Read"
    })
    .await;
    assert_eq!(hooked["trace_id"], TRACE_ID);
    assert_eq!(hooked["attributes"]["gen_ai.tool.name"], "fs.read");
    assert_eq!(hooked["attributes"]["airlock.decision"], "allowed");
}

/// Submits `count` allowed calls one after the other; the slowest answer.
async fn slowest_of(server: &TestServer, agent: &str, count: usize) -> Duration {
    let http = reqwest::Client::new();
    let mut slowest = Duration::ZERO;
    for n in 0..count {
        let started = Instant::now();
        let call = submit_traced(
            &http,
            server,
            agent,
            "fs.read",
            json!({"path": format!("/tmp/{n}")}),
        )
        .await;
        assert_eq!(call["status"], "allowed");
        slowest = slowest.max(started.elapsed());
    }
    slowest
}

/// The OTLP exporter's default timeout (`OTEL_EXPORTER_OTLP_TIMEOUT` is not set here).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_collector_that_is_down_or_silent_never_slows_a_decision() {
    // Down: the receiver was started and stopped, so its port refuses connections.
    let (mut stopped, port, _) = receiver().await;
    stopped.kill().await.unwrap();
    stopped.wait().await.unwrap();
    let refused = telemetry_to(format!("http://127.0.0.1:{port}")).await;
    // Silent: accepts connections and never answers (exports wait for their timeout).
    let black_hole = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_port = black_hole.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = black_hole.accept().await {
            held.push(socket);
        }
    });
    let silent = telemetry_to(format!("http://127.0.0.1:{silent_port}")).await;

    for telemetry in [refused, silent] {
        let (server, agent) = server_with(&telemetry).await;
        // More spans than one export batch holds (512), so that exports are attempted
        // (and fail or hang) while calls are being answered, on the SDK's own thread.
        // A call that waited on an export to the silent collector would take the
        // exporter's timeout (10 s). The bound is half that: a loaded machine's disk has
        // stalled a PostgreSQL commit for 2 s here, and that is not what this measures.
        let slowest = slowest_of(&server, &agent, 600).await;
        assert!(
            slowest < EXPORT_TIMEOUT / 2,
            "a call took {slowest:?} with the collector unreachable"
        );
        // A person's decision is answered as promptly.
        let (_, approval) = ask(&server, &agent, "bob@acme.test").await;
        let started = Instant::now();
        decide(&server, &server.owner_token, &approval, "approve")
            .await
            .expect_status(200)
            .unwrap();
        assert!(started.elapsed() < EXPORT_TIMEOUT / 2);
    }
}
