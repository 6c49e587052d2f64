//! `http.fetch` against a real local axum server on port 0.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use airlock_tools::{Builtins, ToolContext};
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::json;

use super::{context, error_of, run};

/// Every request the server saw, as `METHOD /path`.
type Log = Arc<Mutex<Vec<String>>>;

struct Server {
    port: u16,
    log: Log,
    _workspace: tempfile::TempDir,
    context: ToolContext,
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

async fn record(State(log): State<Log>, request: Request, next: Next) -> Response {
    log.lock()
        .unwrap()
        .push(format!("{} {}", request.method(), request.uri().path()));
    next.run(request).await
}

fn redirect(location: String) -> Response {
    (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
}

/// Starts the server; the context allows `127.0.0.1` only.
async fn server() -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let log: Log = Arc::default();
    let app = Router::new()
        .route(
            "/ok",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                    "hello from the test server",
                )
            }),
        )
        .route("/big", get(|| async { "x".repeat(100_000) }))
        .route(
            "/binary",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "application/octet-stream")],
                    vec![0xffu8, 0xfe, 0x00],
                )
            }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        )
        .route(
            "/redirect/in",
            get(|| async { redirect("/ok".to_string()) }),
        )
        .route(
            "/redirect/out",
            get(move || async move { redirect(format!("http://localhost:{port}/ok")) }),
        )
        .route(
            "/redirect/ftp",
            get(|| async { redirect("ftp://127.0.0.1/ok".to_string()) }),
        )
        .route(
            "/redirect/loop",
            get(|| async { redirect("/redirect/loop".to_string()) }),
        )
        .route(
            "/missing",
            get(|| async { (StatusCode::NOT_FOUND, "no such page") }),
        )
        .layer(axum::middleware::from_fn_with_state(log.clone(), record));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let workspace = tempfile::tempdir().unwrap();
    let mut context = context(workspace.path());
    context.http_allow = vec!["127.0.0.1".to_string()];
    Server {
        port,
        log,
        _workspace: workspace,
        context,
    }
}

#[tokio::test]
async fn an_allowed_host_is_fetched() {
    let server = server().await;
    let output = run(
        "http.fetch",
        json!({"url": server.url("/ok")}),
        &server.context,
    )
    .await;
    assert!(output.ok, "{output:?}");
    assert_eq!(
        output.output,
        json!({"status": 200, "content_type": "text/plain; charset=utf-8", "body": "hello from the test server", "truncated": false})
    );
    // A status that is not a success is still a fetched page.
    let output = run(
        "http.fetch",
        json!({"url": server.url("/missing")}),
        &server.context,
    )
    .await;
    assert!(output.ok, "{output:?}");
    assert_eq!(output.output["status"], 404);
    assert_eq!(server.requests(), ["GET /ok", "GET /missing"]);
}

#[tokio::test]
async fn a_host_not_allowed_is_refused_without_a_request() {
    let mut server = server().await;
    let url = format!("http://localhost:{}/ok", server.port);
    let output = run("http.fetch", json!({"url": url}), &server.context).await;
    assert_eq!(
        error_of(&output),
        "host localhost is not in the allowed hosts (http_allow)"
    );

    server.context.http_allow = vec!["*.example.com".to_string()];
    let output = run(
        "http.fetch",
        json!({"url": server.url("/ok")}),
        &server.context,
    )
    .await;
    assert_eq!(
        error_of(&output),
        "host 127.0.0.1 is not in the allowed hosts (http_allow)"
    );
    // Userinfo that looks like an allowed host does not make the host allowed.
    let output = run(
        "http.fetch",
        json!({"url": format!("http://api.example.com@127.0.0.1:{}/ok", server.port)}),
        &server.context,
    )
    .await;
    assert_eq!(
        error_of(&output),
        "host 127.0.0.1 is not in the allowed hosts (http_allow)"
    );

    server.context.http_allow = Vec::new();
    let output = run(
        "http.fetch",
        json!({"url": server.url("/ok")}),
        &server.context,
    )
    .await;
    assert_eq!(
        error_of(&output),
        "host 127.0.0.1 is not in the allowed hosts (http_allow)"
    );

    assert_eq!(server.requests(), Vec::<String>::new());

    // And `*` allows any host.
    server.context.http_allow = vec!["*".to_string()];
    let output = run(
        "http.fetch",
        json!({"url": server.url("/ok")}),
        &server.context,
    )
    .await;
    assert!(output.ok, "{output:?}");
}

#[tokio::test]
async fn a_large_body_is_truncated_at_the_cap() {
    let mut server = server().await;
    server.context.limits.http_max_bytes = 1000;
    let output = run(
        "http.fetch",
        json!({"url": server.url("/big")}),
        &server.context,
    )
    .await;
    assert!(output.ok, "{output:?}");
    assert_eq!(output.output["truncated"], true);
    assert_eq!(output.output["body"].as_str().unwrap(), "x".repeat(1000));
}

#[tokio::test]
async fn a_binary_body_is_an_error() {
    let server = server().await;
    let output = run(
        "http.fetch",
        json!({"url": server.url("/binary")}),
        &server.context,
    )
    .await;
    assert_eq!(
        error_of(&output),
        "the body is not UTF-8 text (status 200, content type application/octet-stream)"
    );
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let mut server = server().await;
    server.context.limits.http_timeout = Duration::from_millis(300);
    let started = Instant::now();
    let output = run(
        "http.fetch",
        json!({"url": server.url("/slow")}),
        &server.context,
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(error_of(&output), "timed out after 300 ms");
}

#[tokio::test]
async fn redirects_are_followed_only_to_allowed_hosts_and_only_three_times() {
    let server = server().await;
    let output = run(
        "http.fetch",
        json!({"url": server.url("/redirect/in")}),
        &server.context,
    )
    .await;
    assert!(output.ok, "{output:?}");
    assert_eq!(output.output["body"], "hello from the test server");
    assert_eq!(server.requests(), ["GET /redirect/in", "GET /ok"]);

    let output = run(
        "http.fetch",
        json!({"url": server.url("/redirect/out")}),
        &server.context,
    )
    .await;
    assert_eq!(
        error_of(&output),
        format!(
            "redirect to http://localhost:{}/ok refused: host localhost is not in the allowed hosts (http_allow)",
            server.port
        )
    );
    let output = run(
        "http.fetch",
        json!({"url": server.url("/redirect/ftp")}),
        &server.context,
    )
    .await;
    assert_eq!(
        error_of(&output),
        "redirect to ftp://127.0.0.1/ok refused: the URL has scheme `ftp`: only http and https can be fetched"
    );
    let output = run(
        "http.fetch",
        json!({"url": server.url("/redirect/loop")}),
        &server.context,
    )
    .await;
    assert_eq!(error_of(&output), "more than 3 redirects");

    let requests = server.requests();
    // The refused redirects were never requested; the loop was requested 1 + 3 times.
    assert_eq!(
        requests
            .iter()
            .filter(|request| *request == "GET /ok")
            .count(),
        1,
        "{requests:?}"
    );
    assert_eq!(
        requests
            .iter()
            .filter(|request| *request == "GET /redirect/loop")
            .count(),
        4,
        "{requests:?}"
    );
}

#[tokio::test]
async fn only_get_is_possible() {
    let server = server().await;
    for extra in ["method", "body", "headers"] {
        let error = Builtins::plan(
            "http.fetch",
            &json!({"url": server.url("/ok"), extra: "POST"}),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("http.fetch: unknown argument `{extra}` (the tool takes `url`)")
        );
        let output = run(
            "http.fetch",
            json!({"url": server.url("/ok"), extra: "POST"}),
            &server.context,
        )
        .await;
        assert!(!output.ok);
    }
    let output = run(
        "http.fetch",
        json!({"url": server.url("/ok")}),
        &server.context,
    )
    .await;
    assert!(output.ok, "{output:?}");
    assert_eq!(server.requests(), ["GET /ok"]);
}
