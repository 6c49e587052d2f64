//! Parked long-pollers (DESIGN.md §9 "Parked capacity": 10,000 callers parked at once in
//! 512 MiB): what one caller waiting on `GET /v1/calls/{id}?wait_s=60` costs the server,
//! counted exactly by this binary's global allocator, and that every parked caller still
//! gets its verdict when the approvals are decided.
//!
//! The callers are raw TCP connections written by hand, so that the client side of each
//! costs next to nothing and what the count shows is the server's share: the connection
//! (hyper's buffers, its task), the request's handler future and its waiter. This test is
//! a binary of its own because the allocator counts the whole process.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]

use airlock_testkit::TestServer;
use serde_json::{json, Value};
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use std::alloc::System;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Parked callers in the test (two sockets each in this one process).
const CALLERS: usize = 200;

/// What one parked caller may keep allocated in the server. Measured in a debug build:
/// ~39 KiB, of which hyper's read and write buffers are 24 KiB (the read buffer grows to
/// 16 KiB because hyper-util sniffs the first 24 bytes for HTTP/2 before hyper reads the
/// rest). Before the router was shared between connections every connection also held
/// its own copy of the route table: ~81 KiB a caller.
const BUDGET_PER_CALLER: i64 = 48 * 1024;

const POLICY: &str = r#"
version = 1
default = "deny"

[tools."email.send"]
risk = "external"
target = "to"
summary = "Send email to {to}"

[[rules]]
name = "mail-needs-a-person"
tool = "email.send"
decision = "ask"
"#;

/// Bytes allocated and not yet freed by the whole process.
fn live_bytes() -> i64 {
    let stats = GLOBAL.stats();
    stats.bytes_allocated as i64 - stats.bytes_deallocated as i64 + stats.bytes_reallocated as i64
}

async fn until_waiting(server: &TestServer, count: usize) {
    let start = Instant::now();
    while server.gate().waiting() < count {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "only {} of {count} callers parked after 30 s",
            server.gate().waiting()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Sends one long-poll on a fresh connection and leaves it waiting for the answer.
async fn park(address: &str, call_id: &str, token: &str) -> TcpStream {
    let mut stream = TcpStream::connect(address).await.unwrap();
    let request = format!(
        "GET /v1/calls/{call_id}?wait_s=60 HTTP/1.1\r\nhost: {address}\r\n\
         authorization: Bearer {token}\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

/// Reads one whole response (headers + `content-length` body) from a parked connection.
async fn answer(stream: &mut TcpStream) -> (u16, Value) {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let read = stream.read(&mut chunk).await.unwrap();
        assert!(
            read > 0,
            "the server closed a parked connection without answering"
        );
        bytes.extend_from_slice(&chunk[..read]);
        let text = String::from_utf8_lossy(&bytes);
        let Some(end) = text.find("\r\n\r\n") else {
            continue;
        };
        let head = text[..end].to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .map(|value| value.trim().parse().unwrap())
            .expect("a long-poll answer without content-length");
        if bytes.len() >= end + 4 + length {
            let status = head[9..12].parse().unwrap();
            let body = serde_json::from_slice(&bytes[end + 4..end + 4 + length]).unwrap();
            return (status, body);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_caller_holds_little_server_memory_and_still_gets_its_verdict() {
    let server = TestServer::start().await.unwrap();
    server.put_policy(POLICY).await.unwrap();
    let (_, agent) = server.create_agent("waiter").await.unwrap();
    let mut calls = Vec::with_capacity(CALLERS);
    for n in 0..CALLERS {
        let call = server
            .submit(
                &agent,
                "email.send",
                json!({"to": format!("r{n}@acme.test")}),
            )
            .await
            .unwrap()
            .expect_status(201)
            .unwrap();
        assert_eq!(call["status"], "pending", "{call}");
        calls.push(call);
    }
    let address = server.url.trim_start_matches("http://").to_owned();

    // Warm up what is allocated once, not per caller: the waiters' map, the readers'
    // statement caches, the runtime's I/O slabs.
    let mut warm = Vec::new();
    for call in calls.iter().take(8) {
        warm.push(park(&address, call["id"].as_str().unwrap(), &agent).await);
    }
    until_waiting(&server, warm.len()).await;
    drop(warm);
    let start = Instant::now();
    while server.gate().waiting() > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "closed callers stay parked"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    let before = live_bytes();
    let mut parked = Vec::with_capacity(CALLERS);
    for call in &calls {
        parked.push(park(&address, call["id"].as_str().unwrap(), &agent).await);
    }
    until_waiting(&server, CALLERS).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let per_caller = (live_bytes() - before) / CALLERS as i64;
    println!("one parked caller holds {per_caller} bytes");
    assert!(
        per_caller < BUDGET_PER_CALLER,
        "one parked caller holds {per_caller} bytes (budget {BUDGET_PER_CALLER})"
    );

    // Every parked caller is woken with its own verdict.
    for call in &calls {
        let approval_id = call["approval_id"].as_str().unwrap();
        let approval = server
            .client
            .get(&format!("/v1/approvals/{approval_id}"), &server.owner_token)
            .await
            .unwrap()
            .expect_status(200)
            .unwrap();
        server
            .client
            .post(
                &format!("/v1/approvals/{approval_id}/decision"),
                &server.owner_token,
                &json!({"decision": "approve", "binding_digest": approval["binding_digest"]}),
            )
            .await
            .unwrap()
            .expect_status(200)
            .unwrap();
    }
    for (stream, call) in parked.iter_mut().zip(&calls) {
        let (status, body) = tokio::time::timeout(Duration::from_secs(30), answer(stream))
            .await
            .expect("a parked caller was not answered after its approval");
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["id"], call["id"]);
        assert_eq!(body["status"], "approved", "{body}");
    }
    assert_eq!(server.gate().waiting(), 0);
}
