//! What the proxy tells the model when it gets no verdict, what it keeps from the real
//! server, and what it logs: a password in the gateway URL is never shown (G9); a call
//! too large for the API, or an HTTP error, is not called "unreachable"; the person's
//! token of `--approver-token-env` is removed from the real server's environment by its
//! name, whatever it holds; rmcp's complaints reach stderr, never stdout, and the log
//! carries neither tokens nor call arguments, even at `trace`.

use super::*;
use axum::http::StatusCode;
use axum::response::IntoResponse;

#[test]
fn a_password_in_the_gateway_url_never_reaches_the_model() {
    let folder = folder_with_hello();
    let root = folder.path().canonicalize().unwrap();
    let upstream = filesystem_upstream(&root);
    // Port 1 is never an airlock server.
    let mut running = McpClient::new(
        "http://admin:hunter2@127.0.0.1:1",
        "any-token",
        "down",
        &root,
        &upstream,
    )
    .start();
    let steps = {
        let status = wait_exit(&mut running.child.0, Duration::from_secs(60));
        running.stdout.drain();
        running.stderr.drain_within(Duration::from_secs(5));
        assert!(status.success(), "{}", running.stderr.text());
        running.steps()
    };
    let read = step(&steps, "read");
    assert_eq!(read["is_error"], true, "{read}");
    let text = read["text"].as_str().unwrap();
    assert!(
        text.starts_with(
            "Denied: airlock is unreachable: cannot reach airlock at http://127.0.0.1:1: "
        ),
        "{text}"
    );
    for shown in [text.to_owned(), running.stderr.text()] {
        assert!(
            !shown.contains("hunter2") && !shown.contains("admin"),
            "{shown}"
        );
    }
}

#[test]
fn arguments_too_large_for_airlock_are_denied_as_such_not_as_unreachable() {
    let (_work, server, agent, _folder, root) = filesystem_setup();
    let upstream = filesystem_upstream(&root);
    let steps = McpClient::new(&server.url, &agent, "big", &root, &upstream)
        // 2 MB: answered 413 once read; 12 MB: cut off while it is sent (the server reads
        // at most 8 MiB of a refused body).
        .env("AIRLOCK_TEST_MCP_SIZES", "2000000,12000000")
        .run(|_| {});
    for size in ["2000000", "12000000"] {
        let big = step(&steps, &format!("big-{size}"));
        assert_eq!(big["is_error"], true, "{big}");
        let text = big["text"].as_str().unwrap();
        assert!(
            text.starts_with(
                "Denied: the call's arguments are too large for airlock to judge (its API \
                 takes requests of up to 1048576 bytes), so the call is denied"
            ),
            "{size}: {text}"
        );
    }
    assert!(!root.join("big.txt").exists(), "a call reached the server");
    // The session goes on: a small call is gated as usual.
    let read = step(&steps, "read");
    assert_eq!(read["is_error"], false, "{read}");
}

#[test]
fn an_http_error_from_airlock_names_its_status() {
    let (_work, server, _agent, _folder, root) = filesystem_setup();
    let upstream = filesystem_upstream(&root);
    let steps =
        McpClient::new(&server.url, "alk_not_a_token", "down", &root, &upstream).run(|_| {});
    let read = step(&steps, "read");
    assert_eq!(read["is_error"], true, "{read}");
    let text = read["text"].as_str().unwrap();
    assert!(
        text.starts_with("Denied: airlock answered 401 Unauthorized: unauthorized: "),
        "{text}"
    );
    assert!(!root.join("moved.txt").exists());
}

/// An airlock stand-in: a person's token passes the `--approver-token-env` check (it has
/// no agent: 403), and every other request is 404.
struct FakeAirlock {
    url: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl FakeAirlock {
    fn start() -> FakeAirlock {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (bound, port) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                bound.send(listener.local_addr().unwrap().port()).unwrap();
                let app = axum::Router::new().fallback(fake_answer);
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap();
            });
        });
        let port = port.recv().unwrap();
        FakeAirlock {
            url: format!("http://127.0.0.1:{port}"),
            _stop: stop,
        }
    }
}

async fn fake_answer(uri: axum::http::Uri) -> axum::response::Response {
    let (status, kind, title) = if uri.path() == "/v1/agents/me" {
        (StatusCode::FORBIDDEN, "forbidden", "Forbidden")
    } else {
        (StatusCode::NOT_FOUND, "not_found", "Not found")
    };
    let problem =
        json!({"type": kind, "title": title, "status": status.as_u16(), "detail": uri.path()});
    (
        status,
        [("content-type", "application/problem+json")],
        problem.to_string(),
    )
        .into_response()
}

#[test]
fn the_approver_variable_is_kept_from_the_real_server_whatever_it_holds() {
    let airlock = FakeAirlock::start();
    let work = tempfile::tempdir().unwrap();
    let environment = work.path().join("environment");
    // The "real server" writes down its environment, then serves.
    let proxy_args = [
        "--approver-token-env",
        "MY_APPROVER",
        "--server-name",
        "everything",
        "--",
        "sh",
        "-c",
        "env > \"$0\"; exec node \"$1\" stdio",
    ]
    .map(String::from)
    .into_iter()
    .chain([environment.display().to_string(), everything_server()])
    .collect::<Vec<_>>();
    // Nothing like an airlock token: only its name says what it is.
    let steps = McpClient::new(
        &airlock.url,
        "agent-token",
        "everything",
        work.path(),
        &proxy_args,
    )
    .env("MY_APPROVER", "a-person-token-of-another-shape")
    .env("AIRLOCK_TEST_KEPT", "kept")
    .run(|_| {});

    let seen = std::fs::read_to_string(&environment).unwrap();
    assert!(seen.contains("AIRLOCK_TEST_KEPT=kept"), "{seen}");
    assert!(
        !seen.contains("MY_APPROVER") && !seen.contains("a-person-token-of-another-shape"),
        "{seen}"
    );
    assert!(!seen.contains("agent-token"), "{seen}");
    // The stand-in knows no calls: an HTTP error, named by its status.
    let echo = step(&steps, "echo");
    assert_eq!(echo["is_error"], true, "{echo}");
    let text = echo["text"].as_str().unwrap();
    assert!(
        text.starts_with("Denied: airlock answered 404 Not Found: Not found: /v1/calls"),
        "{text}"
    );
}

/// `airlock mcp proxy` given one line longer than rmcp takes (16 MiB), then end of input:
/// `(stdout, stderr)`. `rust_log` is `RUST_LOG`, or none.
fn proxy_given_an_oversized_line(rust_log: Option<&str>) -> (String, String) {
    let work = tempfile::tempdir().unwrap();
    let mut command = crate::support::command(work.path());
    command
        .args(["mcp", "proxy", "--url", "http://127.0.0.1:1"])
        .args(["--server-name", "x", "--", "true"])
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(filter) = rust_log {
        command.env("RUST_LOG", filter);
    }
    let mut child = KillOnDrop(command.spawn().unwrap());
    let mut stdin = child.0.stdin.take().unwrap();
    let (stdout, stderr) = (Captured::default(), Captured::default());
    stdout.collect(child.0.stdout.take().unwrap());
    stderr.collect(child.0.stderr.take().unwrap());
    let line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}\n",
        "x".repeat(17 * 1024 * 1024)
    );
    stdin.write_all(line.as_bytes()).unwrap();
    drop(stdin);
    wait_exit(&mut child.0, Duration::from_secs(30));
    stdout.drain();
    stderr.drain();
    (stdout.text(), stderr.text())
}

#[test]
fn the_proxy_logs_to_stderr_at_warn_unless_rust_log_says_otherwise() {
    let (stdout, stderr) = proxy_given_an_oversized_line(None);
    assert!(
        stderr.contains("exceeded the maximum line length"),
        "{stderr}"
    );
    // stdout is the MCP stream: no log there.
    assert!(!stdout.contains("maximum line length"), "{stdout}");

    let (_, stderr) = proxy_given_an_oversized_line(Some("off"));
    assert!(
        !stderr.contains("exceeded the maximum line length"),
        "{stderr}"
    );
}

#[test]
fn even_at_trace_the_proxy_logs_neither_the_token_nor_the_arguments() {
    let airlock = FakeAirlock::start();
    let work = tempfile::tempdir().unwrap();
    let token = format!("alk_{}", "5eb7".repeat(16));
    let upstream = ["--server-name", "everything", "--", "node"]
        .map(String::from)
        .into_iter()
        .chain([everything_server(), "stdio".into()])
        .collect::<Vec<_>>();
    let mut running = McpClient::new(&airlock.url, &token, "everything", work.path(), &upstream)
        .env("RUST_LOG", "trace")
        .start();
    let status = wait_exit(&mut running.child.0, Duration::from_secs(60));
    running.stdout.drain();
    running.stderr.drain_within(Duration::from_secs(5));
    let logs = running.stderr.text();
    assert!(status.success(), "{logs}");
    assert_eq!(step(&running.steps(), "echo")["is_error"], true);
    // rmcp prints whole messages below `warn`, ureq the bytes it sends (the token in hex).
    for secret in ["alk_5eb7", "Bearer", "through airlock"] {
        assert!(!logs.contains(secret), "{secret} in {logs}");
    }
}
