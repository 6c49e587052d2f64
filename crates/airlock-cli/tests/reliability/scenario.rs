//! The approval flows a crash test drives, what a client learned before the crash, how
//! the flows are finished after the restart, and the invariants checked at the end.
//!
//! The flow passes every failure-injection point once per path, in this order:
//! 1. HTTP: an agent submits `email.send` to an outside address (asked), long-polls it,
//!    the owner approves it, the agent redeems the grant.
//! 2. Runtime: the demo's scripted agent is told "email Bob"; its `email.send` waits for
//!    approval, the owner approves, the run resumes, writes the outbox row and completes.
//!
//! So `call.submitted`, `approval.created` and `decision.committed` are passed first by
//! the HTTP path (`:1`) and then by the runtime (`:2`).

use crate::node::{http, Dead, Http, Node, Rng};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// What the clients were told before the server died: only acknowledged facts.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    pub caller_token: String,
    /// The HTTP call, once `POST /v1/calls` answered.
    pub http_call: Option<String>,
    /// Approvals whose creation a client saw.
    pub approvals: BTreeSet<String>,
    /// Decisions answered 200 (approval id).
    pub decided: BTreeSet<String>,
    /// Redeems answered 200 (call id), over the whole test.
    pub redeemed: Vec<String>,
    pub run: Option<String>,
}

/// Creates the HTTP agent (no failpoint is passed on the way).
pub fn setup(node: &Node) -> Seen {
    let (status, created) = http()
        .post(
            &format!("{}/v1/agents", node.url),
            &node.owner_token(),
            &json!({"name": "caller"}),
        )
        .expect("the node is up");
    assert_eq!(status, 201, "{created}");
    Seen {
        caller_token: created["token"].as_str().unwrap().to_owned(),
        ..Seen::default()
    }
}

/// A status the flow did not expect is a defect, not a crash.
pub fn expect(what: &str, got: (u16, Value), want: u16) -> Value {
    assert_eq!(got.0, want, "{what}: {}", got.1);
    got.1
}

/// Drives both flows as far as the server lives. Returns `Err(Dead)` when it died.
pub fn drive(url: &str, owner: &str, seen: &mut Seen, rng: &mut Rng) -> Result<(), Dead> {
    let client = http();
    // 1. The HTTP caller.
    let call = expect(
        "submit",
        client.post(
            &format!("{url}/v1/calls"),
            &seen.caller_token,
            &json!({"tool": "email.send", "arguments": {"to": "eve@elsewhere.test", "subject": "Invoice", "body": "Pay 100"}}),
        )?,
        201,
    );
    assert_eq!(call["status"], "pending", "{call}");
    let call_id = call["id"].as_str().unwrap().to_owned();
    let approval_id = call["approval_id"].as_str().unwrap().to_owned();
    seen.http_call = Some(call_id.clone());
    seen.approvals.insert(approval_id.clone());
    let poller = {
        let (client, url, token, call_id) = (
            client.clone(),
            url.to_owned(),
            seen.caller_token.clone(),
            call_id.clone(),
        );
        std::thread::spawn(move || {
            client.get(&format!("{url}/v1/calls/{call_id}?wait_s=20"), &token)
        })
    };
    std::thread::sleep(rng.millis(150));
    approve(&client, url, owner, &approval_id, seen)?;
    if let Ok((status, polled)) = poller.join().unwrap() {
        assert_eq!(status, 200, "{polled}");
        assert_eq!(polled["status"], "approved", "{polled}");
    }
    std::thread::sleep(rng.millis(100));
    redeem(&client, url, seen, &call_id)?;

    // 2. The built-in runtime.
    std::thread::sleep(rng.millis(100));
    let run_id = start_run(&client, url, owner)?;
    seen.run = Some(run_id.clone());
    let approval_id = wait_for_run_approval(&client, url, owner, &run_id)?;
    seen.approvals.insert(approval_id.clone());
    std::thread::sleep(rng.millis(150));
    approve(&client, url, owner, &approval_id, seen)?;
    wait_until(Duration::from_secs(20), "the run completes", || {
        Ok(run_state(&client, url, owner, &run_id)? == "completed")
    })
}

fn approve(
    client: &Http,
    url: &str,
    owner: &str,
    approval_id: &str,
    seen: &mut Seen,
) -> Result<bool, Dead> {
    let approval = expect(
        "read the approval",
        client.get(&format!("{url}/v1/approvals/{approval_id}"), owner)?,
        200,
    );
    if approval["status"] != "pending" {
        return Ok(false);
    }
    let (status, body) = client.post(
        &format!("{url}/v1/approvals/{approval_id}/decision"),
        owner,
        &json!({"decision": "approve", "binding_digest": approval["binding_digest"]}),
    )?;
    match status {
        200 => {
            seen.decided.insert(approval_id.to_owned());
            Ok(true)
        }
        // Decided meanwhile (its own waiter, a retry): refused and nothing written.
        409 => Ok(false),
        other => panic!("deciding {approval_id}: {other} {body}"),
    }
}

fn redeem(client: &Http, url: &str, seen: &mut Seen, call_id: &str) -> Result<(), Dead> {
    let (status, body) = client.post_empty(
        &format!("{url}/v1/calls/{call_id}/redeem"),
        &seen.caller_token,
    )?;
    match status {
        200 => seen.redeemed.push(call_id.to_owned()),
        // The grant was consumed by a redeem whose answer the crash swallowed.
        409 => assert_eq!(body["type"], "grant_spent", "{body}"),
        other => panic!("redeem {call_id}: {other} {body}"),
    }
    Ok(())
}

pub fn start_run(client: &Http, url: &str, owner: &str) -> Result<String, Dead> {
    let agents = expect(
        "agents",
        client.get(&format!("{url}/v1/agents"), owner)?,
        200,
    );
    let assistant = agents["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "assistant")
        .unwrap_or_else(|| panic!("no demo agent: {agents}"))
        .clone();
    let session = expect(
        "session",
        client.post(
            &format!("{url}/v1/sessions"),
            owner,
            &json!({"agent_id": assistant["id"]}),
        )?,
        201,
    );
    let started = expect(
        "message",
        client.post(
            &format!(
                "{url}/v1/sessions/{}/messages",
                session["id"].as_str().unwrap()
            ),
            owner,
            &json!({"text": "email Bob"}),
        )?,
        202,
    );
    Ok(started["run_id"].as_str().unwrap().to_owned())
}

fn run_view(client: &Http, url: &str, owner: &str, run_id: &str) -> Result<Value, Dead> {
    Ok(expect(
        "run",
        client.get(&format!("{url}/v1/runs/{run_id}"), owner)?,
        200,
    ))
}

pub fn run_state(client: &Http, url: &str, owner: &str, run_id: &str) -> Result<String, Dead> {
    Ok(run_view(client, url, owner, run_id)?["state"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

pub fn wait_for_run_approval(
    client: &Http,
    url: &str,
    owner: &str,
    run_id: &str,
) -> Result<String, Dead> {
    let mut found = None;
    wait_until(Duration::from_secs(20), "the run asks", || {
        let run = run_view(client, url, owner, run_id)?;
        found = run["pending_approvals"][0].as_str().map(str::to_owned);
        Ok(found.is_some())
    })?;
    Ok(found.unwrap_or_default())
}

/// Polls every 25 ms; a timeout is a test failure, a dead server is `Err(Dead)`.
fn wait_until(
    limit: Duration,
    what: &str,
    mut condition: impl FnMut() -> Result<bool, Dead>,
) -> Result<(), Dead> {
    let until = Instant::now() + limit;
    while !condition()? {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
    Ok(())
}

/// Before the restart: a PostgreSQL node's runs that were `running` under the dead
/// process's lease become takeover-able when the lease runs out (120 s); the test moves
/// that clock instead of waiting. SQLite's single node takes them over at start.
///
/// Call it while no node is up. Run after the restart, it would also expire the lease
/// of a run the new node had already claimed, and that node's next sweep would claim it
/// a second time and drive it beside its own live leg (this once failed CI).
pub fn expire_dead_leases(backend: &crate::node::Backend) {
    if let crate::node::Backend::Postgres(_) = backend {
        backend.psql("UPDATE runs SET lease_until = 0 WHERE state = 'running'");
    }
}

/// Finishes what the crash interrupted, as clients and people would after a restart:
/// the owner decides every pending approval, a caller that never heard back about its
/// call submits it again, an approved call is redeemed, the run is started if it never
/// was; until no approval is pending and every run has ended.
pub fn settle(node: &Node, seen: &mut Seen) {
    let (url, owner, client) = (node.url.as_str(), node.owner_token(), http());
    let alive = "the restarted node stays up";
    if seen.http_call.is_none() {
        // The crash swallowed the answer: the caller retries with a new call.
        let mut rng = Rng::new(0);
        let mut retry = seen.clone();
        drive_http_only(url, &owner, &mut retry, &mut rng).expect(alive);
        *seen = retry;
    }
    if seen.run.is_none() {
        seen.run = Some(start_run(&client, url, &owner).expect(alive));
    }
    let run_id = seen.run.clone().unwrap_or_default();
    let until = Instant::now() + Duration::from_secs(45);
    loop {
        let pending = expect(
            "pending approvals",
            client
                .get(&format!("{url}/v1/approvals?status=pending"), &owner)
                .expect(alive),
            200,
        );
        let pending: Vec<String> = pending["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap().to_owned())
            .collect();
        for id in &pending {
            approve(&client, url, &owner, id, seen).expect(alive);
        }
        if let Some(call_id) = seen.http_call.clone() {
            let call = expect(
                "the HTTP call",
                client
                    .get(&format!("{url}/v1/calls/{call_id}"), &seen.caller_token)
                    .expect(alive),
                200,
            );
            let consumed = consumed_calls(node).contains_key(&call_id);
            if call["status"] == "approved" && !consumed {
                redeem(&client, url, seen, &call_id).expect(alive);
            }
        }
        let state = run_state(&client, url, &owner, &run_id).expect(alive);
        let ended = matches!(state.as_str(), "completed" | "failed" | "cancelled");
        if pending.is_empty() && ended {
            return;
        }
        assert!(
            Instant::now() < until,
            "not settled after 45 s: run {state}, pending {pending:?}\n{}",
            node.stderr.text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn drive_http_only(url: &str, owner: &str, seen: &mut Seen, rng: &mut Rng) -> Result<(), Dead> {
    // The runtime part of `drive` is skipped by pretending it already happened.
    let run = seen.run.take();
    let client = http();
    let call = expect(
        "submit again",
        client.post(
            &format!("{url}/v1/calls"),
            &seen.caller_token,
            &json!({"tool": "email.send", "arguments": {"to": "eve@elsewhere.test", "subject": "Invoice", "body": "Pay 100"}}),
        )?,
        201,
    );
    let call_id = call["id"].as_str().unwrap().to_owned();
    let approval_id = call["approval_id"].as_str().unwrap().to_owned();
    seen.http_call = Some(call_id.clone());
    seen.approvals.insert(approval_id.clone());
    std::thread::sleep(rng.millis(10));
    approve(&client, url, owner, &approval_id, seen)?;
    redeem(&client, url, seen, &call_id)?;
    seen.run = run;
    Ok(())
}

/// The audit export, one record a line.
pub fn audit(node: &Node) -> Vec<Value> {
    let (status, text) = http()
        .text(
            &format!("{}/v1/audit/export", node.url),
            &node.owner_token(),
        )
        .expect("the node is up");
    assert_eq!(status, 200, "{text}");
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// `grant.consumed` records by call id.
fn consumed_calls(node: &Node) -> BTreeMap<String, usize> {
    let mut consumed = BTreeMap::new();
    for record in audit(node) {
        if record["kind"] == "grant.consumed" {
            let call = record["data"]["call_id"].as_str().unwrap().to_owned();
            *consumed.entry(call).or_insert(0) += 1;
        }
    }
    consumed
}

/// Figures of one settled round, for the report.
#[derive(Debug, Default)]
pub struct Tally {
    pub approvals: usize,
    pub outbox: usize,
    pub consumed: usize,
}

/// The invariants (DESIGN.md G1, G3, G7, G8) over a settled node.
pub fn check_invariants(node: &Node, seen: &Seen, context: &str) -> Tally {
    let (url, owner, client) = (node.url.as_str(), node.owner_token(), http());
    let alive = "the node is up";
    let records = audit(node);
    let log = node.stderr.text();
    let fail = |what: String| -> ! { panic!("{context}: {what}\nserver log:\n{log}") };

    // G8: the chain verifies, through the CLI as an operator would check it.
    let verify = node.client(&["audit", "verify"]);
    if verify.status.code() != Some(0) {
        fail(format!(
            "airlock audit verify failed: {}{}",
            String::from_utf8_lossy(&verify.stdout),
            String::from_utf8_lossy(&verify.stderr)
        ));
    }

    // Approvals: every one requested exists, none pending; every one a client saw
    // exists; every decision a client heard about holds.
    let mut requested = BTreeMap::new();
    let mut approved = BTreeSet::new();
    for record in &records {
        let subject = record["subject"].as_str().unwrap_or_default().to_owned();
        match record["kind"].as_str().unwrap_or_default() {
            "approval.requested" => {
                requested.insert(subject, record["data"]["call_id"].clone());
            }
            "approval.approved" if !approved.insert(subject.clone()) => {
                fail(format!("approval {subject} approved twice"));
            }
            _ => {}
        }
    }
    for id in seen.approvals.iter().chain(requested.keys()) {
        let (status, approval) = client
            .get(&format!("{url}/v1/approvals/{id}"), &owner)
            .expect(alive);
        if status != 200 {
            fail(format!("approval {id} was lost: {status} {approval}"));
        }
        if approval["status"] == "pending" {
            fail(format!("approval {id} still pending after settling"));
        }
        if seen.decided.contains(id) && approval["status"] != "approved" {
            fail(format!(
                "the acknowledged decision on {id} was lost: {approval}"
            ));
        }
        if !requested.contains_key(id) {
            fail(format!("approval {id} has no approval.requested record"));
        }
    }

    // G1: no grant consumed twice, none without an approval or an allow.
    let consumed = consumed_calls(node);
    for (call_id, times) in &consumed {
        if *times > 1 {
            fail(format!("the grant of {call_id} was consumed {times} times"));
        }
        let call = expect(
            "consumed call",
            client
                .get(&format!("{url}/v1/calls/{call_id}"), &owner)
                .expect(alive),
            200,
        );
        let approval_ok = call["approval_id"]
            .as_str()
            .is_some_and(|a| approved.contains(a));
        if !(call["status"] == "allowed" || (call["status"] == "approved" && approval_ok)) {
            fail(format!("grant consumed without an approval: {call}"));
        }
    }
    let redeems: BTreeSet<&String> = seen.redeemed.iter().collect();
    if redeems.len() != seen.redeemed.len() {
        fail(format!("a redeem answered 200 twice: {:?}", seen.redeemed));
    }
    if let Some(call_id) = &seen.http_call {
        if consumed.get(call_id) != Some(&1) {
            fail(format!(
                "the approved HTTP call {call_id} was consumed {:?} times",
                consumed.get(call_id)
            ));
        }
    }

    // No effect twice, none without an approval: the outbox.
    let outbox = expect(
        "outbox",
        client
            .get(&format!("{url}/v1/outbox"), &owner)
            .expect(alive),
        200,
    );
    let items = outbox["items"].as_array().unwrap();
    let mut per_call = BTreeMap::new();
    for item in items {
        let call_id = item["call_id"].as_str().unwrap().to_owned();
        *per_call.entry(call_id.clone()).or_insert(0) += 1;
        if consumed.get(&call_id) != Some(&1) {
            fail(format!("outbox row without a consumed grant: {item}"));
        }
    }
    if per_call.values().any(|n| *n > 1) {
        fail(format!("an effect was written twice: {items:?}"));
    }

    // G7: the run ended, and its email left exactly once.
    let run_id = seen.run.as_deref().unwrap_or_default();
    let run = expect(
        "run",
        client
            .get(&format!("{url}/v1/runs/{run_id}"), &owner)
            .expect(alive),
        200,
    );
    if run["state"] != "completed" {
        fail(format!("the run did not complete: {run}"));
    }
    let run_items = items.iter().filter(|i| i["run_id"] == run_id).count();
    if run_items != 1 {
        fail(format!("the run wrote {run_items} outbox rows: {items:?}"));
    }
    // §10.2: the journal says the email's turn was settled (`step_finished` after its
    // `tool_finished`), whichever leg settled it, and seq runs 1..n with no gap.
    let (status, journal) = client
        .text(&format!("{url}/v1/runs/{run_id}/events?after=0"), &owner)
        .expect(alive);
    if status != 200 {
        fail(format!("the run's journal: {status} {journal}"));
    }
    let kinds: Vec<&str> = journal
        .lines()
        .filter_map(|line| line.strip_prefix("event:"))
        .map(str::trim)
        .collect();
    let ids: Vec<u64> = journal
        .lines()
        .filter_map(|line| line.strip_prefix("id:"))
        .filter_map(|id| id.trim().parse().ok())
        .collect();
    if ids != (1..=ids.len() as u64).collect::<Vec<_>>() {
        fail(format!("the journal's seq has a gap: {ids:?}"));
    }
    let settled = kinds
        .iter()
        .rposition(|kind| *kind == "tool_finished")
        .is_some_and(|last| kinds[last..].contains(&"step_finished"));
    if !settled {
        fail(format!(
            "no step_finished after the last tool_finished: {kinds:?}"
        ));
    }
    // One email, one question: a crash between the gate recording the run's call and
    // the run recording its step must not ask the person twice.
    let listed = expect(
        "approvals",
        client
            .get(&format!("{url}/v1/approvals?limit=1000"), &owner)
            .expect(alive),
        200,
    );
    let asked: Vec<&Value> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["session_id"] == run["session_id"])
        .collect();
    if asked.len() != 1 {
        fail(format!(
            "the run's one email was asked {} times: {asked:?}",
            asked.len()
        ));
    }
    Tally {
        approvals: requested.len(),
        outbox: items.len(),
        consumed: consumed.len(),
    }
}
