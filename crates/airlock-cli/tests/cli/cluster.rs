//! Several `airlock serve` processes on one PostgreSQL database behave as one service:
//! a decision on one node wakes the waiter held by another, concurrent decisions spread
//! over the nodes make exactly one, and a node killed with SIGKILL loses nothing.

use crate::support::{eventually, Server};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// A fresh database on the test cluster (scripts/test.sh starts one; without it the
/// pgtest crate starts its own).
fn database() -> String {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(airlock_pgtest::fresh_database())
}

fn node(dir: &Path, name: &str, db: &str) -> Server {
    let work = dir.join(name);
    std::fs::create_dir_all(&work).unwrap();
    Server::start(&work, &["--db", db])
}

fn post(url: &str, token: &str, body: &Value) -> (u16, Value) {
    let response = ureq::post(url)
        .header("Authorization", format!("Bearer {token}"))
        .config()
        .http_status_as_error(false)
        .build()
        .send_json(body)
        .unwrap();
    let status = response.status().as_u16();
    (
        status,
        response.into_body().read_json().unwrap_or(Value::Null),
    )
}

fn get(url: &str, token: &str) -> Value {
    ureq::get(url)
        .header("Authorization", format!("Bearer {token}"))
        .call()
        .unwrap()
        .into_body()
        .read_json()
        .unwrap()
}

/// Submits a call that the starter policy asks about; returns (call id, approval).
fn asked_call(node: &Server, agent: &str, owner: &str) -> (String, Value) {
    let (status, call) = post(
        &format!("{}/v1/calls", node.url),
        agent,
        &json!({"tool": "email.send", "arguments": {"to": "eve@example.org", "body": "hi"}}),
    );
    assert_eq!(status, 201, "{call}");
    assert_eq!(call["status"], "pending", "{call}");
    let approval = get(
        &format!(
            "{}/v1/approvals/{}",
            node.url,
            call["approval_id"].as_str().unwrap()
        ),
        owner,
    );
    (call["id"].as_str().unwrap().to_owned(), approval)
}

fn waiting_callers(node: &Server) -> u64 {
    let text = ureq::get(format!("{}/metrics", node.url))
        .call()
        .unwrap()
        .into_body()
        .read_to_string()
        .unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix("airlock_waiting_callers "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// Long-polls a call on `url` in a thread; returns the handle yielding (call, when it returned).
fn long_poll(url: String, token: String) -> std::thread::JoinHandle<(Value, Instant)> {
    std::thread::spawn(move || {
        let call = get(&format!("{url}?wait_s=30"), &token);
        (call, Instant::now())
    })
}

#[test]
fn a_decision_on_node_b_wakes_the_waiter_on_node_a() {
    let dir = tempfile::tempdir().unwrap();
    let db = database();
    let a = node(dir.path(), "a", &db);
    let b = node(dir.path(), "b", &db);
    let owner = a.owner_token();
    let agent = a.create_agent("scout");
    let (call_id, approval) = asked_call(&a, &agent, &owner);

    // The approval made on A is listed on B.
    assert!(b.client_as(&owner, &["approvals", "list"]).status.success());
    let waiter = long_poll(format!("{}/v1/calls/{call_id}", a.url), agent.clone());
    eventually(Duration::from_secs(10), "the waiter parks on A", || {
        waiting_callers(&a) == 1
    });

    let decided_at = Instant::now();
    let (status, decided) = post(
        &format!(
            "{}/v1/approvals/{}/decision",
            b.url,
            approval["id"].as_str().unwrap()
        ),
        &owner,
        &json!({"decision": "approve", "binding_digest": approval["binding_digest"]}),
    );
    assert_eq!(status, 200, "{decided}");
    let (call, woke_at) = waiter.join().unwrap();
    let latency = woke_at.duration_since(decided_at);
    println!(
        "cross-node wake-up: decision POST on B -> waiter on A holds the verdict in {latency:?}"
    );
    assert_eq!(call["status"], "approved", "{call}");
    // A missed wake-up would hold the waiter its whole 30 s; the bound leaves room for a
    // loaded machine's stalls (a PostgreSQL commit has stalled 2 s in CI).
    assert!(latency < Duration::from_secs(10), "woke after {latency:?}");

    // Events made on B reach A's workspace stream store, and the chain verifies on both.
    for node in [&a, &b] {
        let report = get(&format!("{}/v1/audit/verify", node.url), &owner);
        assert_eq!(report["ok"], true, "{report}");
    }
}

#[test]
fn a_hundred_concurrent_decisions_over_two_nodes_make_exactly_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = database();
    let a = node(dir.path(), "a", &db);
    let b = node(dir.path(), "b", &db);
    let owner = a.owner_token();
    let agent = a.create_agent("scout");
    let (_, approval) = asked_call(&a, &agent, &owner);
    let id = approval["id"].as_str().unwrap().to_owned();
    let digest = approval["binding_digest"].clone();

    let start = Arc::new(Barrier::new(100));
    let threads: Vec<_> = (0..100)
        .map(|i| {
            let url = if i % 2 == 0 {
                a.url.clone()
            } else {
                b.url.clone()
            };
            let (owner, id, digest, start) =
                (owner.clone(), id.clone(), digest.clone(), start.clone());
            std::thread::spawn(move || {
                let decision = if i % 3 == 0 { "reject" } else { "approve" };
                start.wait();
                post(
                    &format!("{url}/v1/approvals/{id}/decision"),
                    &owner,
                    &json!({"decision": decision, "binding_digest": digest}),
                )
                .0
            })
        })
        .collect();
    let statuses: Vec<u16> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        99,
        "{statuses:?}"
    );
    let audit = get(&format!("{}/v1/audit?limit=1000", b.url), &owner);
    let decisions = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "approval.approved" || r["kind"] == "approval.rejected")
        .count();
    assert_eq!(decisions, 1);
    assert_eq!(
        get(&format!("{}/v1/audit/verify", a.url), &owner)["ok"],
        true
    );
}

#[test]
fn a_node_killed_with_waiters_loses_nothing_and_callers_re_poll() {
    let dir = tempfile::tempdir().unwrap();
    let db = database();
    let a = node(dir.path(), "a", &db);
    let b = node(dir.path(), "b", &db);
    let owner = a.owner_token();
    let agent = a.create_agent("scout");
    let (call_id, approval) = asked_call(&a, &agent, &owner);
    let waiter = long_poll(format!("{}/v1/calls/{call_id}", a.url), agent.clone());
    eventually(Duration::from_secs(10), "the waiter parks on A", || {
        waiting_callers(&a) == 1
    });

    drop(a); // SIGKILL: no graceful shutdown, the waiter's connection just breaks
    assert!(
        waiter.join().is_err(),
        "the waiter's request fails with its node"
    );

    // Still pending, seen from B; A comes back on the same database and the caller re-polls.
    let seen = get(&format!("{}/v1/calls/{call_id}", b.url), &agent);
    assert_eq!(seen["status"], "pending", "{seen}");
    let a = node(dir.path(), "a", &db);
    let waiter = long_poll(format!("{}/v1/calls/{call_id}", a.url), agent.clone());
    eventually(
        Duration::from_secs(10),
        "the waiter parks on A again",
        || waiting_callers(&a) == 1,
    );
    let (status, _) = post(
        &format!(
            "{}/v1/approvals/{}/decision",
            b.url,
            approval["id"].as_str().unwrap()
        ),
        &owner,
        &json!({"decision": "reject", "binding_digest": approval["binding_digest"], "reason": "not today"}),
    );
    assert_eq!(status, 200);
    let (call, _) = waiter.join().unwrap();
    assert_eq!(call["status"], "rejected", "{call}");
    assert_eq!(call["reason"], "not today");
    assert_eq!(
        get(&format!("{}/v1/audit/verify", a.url), &owner)["ok"],
        true
    );
}

#[test]
fn the_audit_chain_survives_pg_dump_and_restore() {
    let dir = tempfile::tempdir().unwrap();
    let db = database();
    let a = node(dir.path(), "a", &db);
    let owner = a.owner_token();
    let agent = a.create_agent("scout");
    let (_, approval) = asked_call(&a, &agent, &owner);
    let (status, _) = post(
        &format!(
            "{}/v1/approvals/{}/decision",
            a.url,
            approval["id"].as_str().unwrap()
        ),
        &owner,
        &json!({"decision": "approve", "binding_digest": approval["binding_digest"]}),
    );
    assert_eq!(status, 200);
    let before = get(&format!("{}/v1/audit/verify", a.url), &owner);
    assert_eq!(before["ok"], true, "{before}");
    drop(a);

    let dump = dir.path().join("airlock.dump");
    let dumped = std::process::Command::new("pg_dump")
        .args(["-Fc", "-d", &db, "-f"])
        .arg(&dump)
        .output()
        .unwrap();
    assert!(
        dumped.status.success(),
        "{}",
        String::from_utf8_lossy(&dumped.stderr)
    );
    let restored = database();
    let loaded = std::process::Command::new("pg_restore")
        .args(["--no-owner", "-d", &restored])
        .arg(&dump)
        .output()
        .unwrap();
    assert!(
        loaded.status.success(),
        "{}",
        String::from_utf8_lossy(&loaded.stderr)
    );

    let b = node(dir.path(), "b", &restored);
    let after = get(&format!("{}/v1/audit/verify", b.url), &owner);
    assert_eq!(after["ok"], true, "{after}");
    assert_eq!(after["records"], before["records"]);
    assert_eq!(after["head"], before["head"]);
}

#[test]
fn an_unreachable_database_at_start_is_exit_2_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    // Port 1 on loopback: nothing listens there, the connection is refused at once.
    let output = crate::support::command(dir.path())
        .args(["serve", "--data-dir", "data", "--listen", "127.0.0.1:0"])
        .args(["--db", "postgres://airlock@127.0.0.1:1/airlock"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot open the database postgres://…@127.0.0.1:1/airlock"),
        "{stderr}"
    );
    assert!(stderr.to_lowercase().contains("refused"), "{stderr}");
}

/// Status, and the problem `type` when there is one, of `GET path` on a node.
fn status_of(node: &Server, path: &str, token: &str) -> (u16, String) {
    let response = ureq::get(format!("{}{path}", node.url))
        .header("Authorization", format!("Bearer {token}"))
        .config()
        .http_status_as_error(false)
        .build()
        .call()
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.into_body().read_json().unwrap_or(Value::Null);
    (status, body["type"].as_str().unwrap_or_default().to_owned())
}

#[test]
fn while_the_database_is_away_requests_are_503_and_the_node_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = airlock_pgtest::PrivateCluster::create().unwrap();
    cluster.start().unwrap();
    let db = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(cluster.fresh_database());
    let a = node(dir.path(), "a", &db);
    let owner = a.owner_token();
    assert_eq!(status_of(&a, "/v1/approvals", &owner).0, 200);

    cluster.stop().unwrap();
    let (status, kind) = status_of(&a, "/v1/approvals", &owner);
    assert_eq!((status, kind.as_str()), (503, "unavailable"));
    // The node itself stays up and says so.
    assert_eq!(status_of(&a, "/healthz", &owner).0, 200);

    cluster.start().unwrap();
    eventually(Duration::from_secs(30), "the node serves again", || {
        status_of(&a, "/v1/approvals", &owner).0 == 200
    });
}

fn event_streams(node: &Server) -> u64 {
    let text = ureq::get(format!("{}/metrics", node.url))
        .call()
        .unwrap()
        .into_body()
        .read_to_string()
        .unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix("airlock_event_streams "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn the_event_stream_of_node_a_shows_events_made_on_node_b() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let db = database();
    let a = node(dir.path(), "a", &db);
    let b = node(dir.path(), "b", &db);
    let owner = a.owner_token();
    let agent = a.create_agent("scout");

    let (lines, received) = std::sync::mpsc::channel::<String>();
    let stream_url = format!("{}/v1/events", a.url);
    let stream_token = owner.clone();
    std::thread::spawn(move || {
        let response = ureq::get(stream_url)
            .header("Authorization", format!("Bearer {stream_token}"))
            .call()
            .unwrap();
        let reader = std::io::BufReader::new(response.into_body().into_reader());
        for line in reader.lines() {
            let Ok(line) = line else { return };
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    eventually(Duration::from_secs(10), "the stream is open on A", || {
        event_streams(&a) == 1
    });

    let (call_id, _) = asked_call(&b, &agent, &owner);
    let until = Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let line = received
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no approval.requested on A's stream; saw {seen:?}"));
        // The SSE fields of one event come in any order; the data names its kind.
        if line.starts_with("data:")
            && line.contains(&call_id)
            && line.contains(r#""kind":"approval.requested""#)
        {
            break;
        }
        seen.push(line);
    }
}

/// Two nodes run the scheduler on one PostgreSQL: a task due each minute is dispatched
/// once at its tick (both nodes tick every second), and while that run waits for an
/// approval neither node starts it again, by schedule or by hand.
#[test]
fn two_schedulers_on_one_database_dispatch_a_task_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = database();
    let a = node(dir.path(), "a", &db);
    let owner = a.owner_token();
    let b = node(dir.path(), "b", &db);
    let (status, agent) = post(
        &format!("{}/v1/agents", a.url),
        &owner,
        &json!({"name": "assistant", "llm": {"base_url": "scripted:demo", "model": "scripted"}}),
    );
    assert_eq!(status, 201, "{agent}");
    let agent_id = agent["agent"]["id"]
        .as_str()
        .or(agent["id"].as_str())
        .unwrap_or_else(|| panic!("no agent id in {agent}"))
        .to_owned();
    let (status, created) = post(
        &format!("{}/v1/tasks", b.url),
        &owner,
        &json!({"title": "Mail Bob", "instructions": "email Bob", "agent": agent_id,
                "cron": "* * * * *", "timezone": "UTC"}),
    );
    assert_eq!(status, 201, "{created}");
    let task_id = created["task"]["id"].as_str().unwrap().to_owned();
    let task = |node: &Server| get(&format!("{}/v1/tasks/{task_id}", node.url), &owner);

    // The next minute's tick: one run, whichever node won the claim.
    eventually(Duration::from_secs(75), "the task's first run", || {
        task(&a)["last_run_id"].is_string()
    });
    let run_id = task(&a)["last_run_id"].as_str().unwrap().to_owned();
    let pending = |node: &Server| {
        get(&format!("{}/v1/approvals?status=pending", node.url), &owner)["items"]
            .as_array()
            .unwrap()
            .len()
    };
    eventually(
        Duration::from_secs(15),
        "the run asks about the email",
        || pending(&b) == 1,
    );

    // Starting it by hand on both nodes at once while the run is parked: refused.
    let barrier = Arc::new(Barrier::new(10));
    let starts: Vec<_> = (0..10)
        .map(|n| {
            let url = format!(
                "{}/v1/tasks/{task_id}/run",
                if n % 2 == 0 { &a.url } else { &b.url }
            );
            let (owner, barrier) = (owner.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                post(&url, &owner, &json!({})).0
            })
        })
        .collect();
    for start in starts {
        assert_eq!(start.join().unwrap(), 409);
    }
    let now = task(&b);
    assert_eq!(now["active_run_id"], run_id.as_str(), "{now}");
    assert_eq!(now["last_run_id"], run_id.as_str(), "{now}");
    assert_eq!(pending(&a), 1);
}
