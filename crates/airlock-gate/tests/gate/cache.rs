//! The read cache (tokens, agents, standing rules, workspaces without ambiguous calls)
//! never lets a revoked token or rule pass, nor a call past its ambiguous twin: on the node
//! that changes it at once, on other nodes once they heard the change, and on a node whose
//! listener lost its connection by reading through until it resynced. Two real nodes (two
//! gates, two pools, two listeners) on one PostgreSQL database; the single-node case on
//! SQLite.

use super::harness::{Harness, POLICY};
use airlock_gate::calls::Submission;
use airlock_gate::clock::ManualClock;
use airlock_gate::identity::AgentSpec;
use airlock_gate::rules::NewRule;
use airlock_gate::{Gate, GateError};
use airlock_protocol::{CallStatus, ReconcileRequest, Resolution, Role, RuleScope, StandingRule};
use airlock_store::postgres::{PgOptions, PostgresStore};
use airlock_store::{Principal, Subject};
use serde_json::json;
use sqlx::{Connection, PgConnection};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The deadline of every wait: a backstop, never the thing asserted.
const DEADLINE: Duration = Duration::from_secs(20);

fn email(to: &str) -> Submission {
    Submission {
        tool: "email.send".into(),
        arguments: json!({"to": to, "body": "hi"}),
        session_id: None,
        declared: None,
        context: Default::default(),
    }
}

fn agent_id(principal: &Principal) -> String {
    match &principal.subject {
        Subject::Agent { id, .. } => id.clone(),
        other => panic!("not an agent: {other:?}"),
    }
}

async fn status(gate: &Gate, agent: &Principal, to: &str) -> CallStatus {
    gate.submit_call(agent, email(to)).await.unwrap().status
}

async fn mint(gate: &Gate, approver: &Principal, agent: &str, to: &str) -> StandingRule {
    let (rule, created) = gate
        .create_rule(
            approver,
            NewRule {
                tool: "email.send".into(),
                target: to.into(),
                scope: RuleScope::Agent,
                scope_id: agent.into(),
                expires_in: None,
            },
        )
        .await
        .unwrap();
    assert!(created);
    rule
}

/// Waits until `check` holds, failing after the deadline.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + DEADLINE;
    while !check().await {
        assert!(Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn sqlite_revocations_take_effect_before_they_answer() {
    let h = Harness::new().await;
    let to = "bob@other.test";
    let rule = mint(&h.gate, &h.approver, &h.agent_id, to).await;
    for _ in 0..3 {
        assert_eq!(status(&h.gate, &h.agent, to).await, CallStatus::Allowed);
    }
    assert!(h.gate.cache_status().live, "SQLite has no other writer");
    h.gate.revoke_rule(&h.approver, &rule.id).await.unwrap();
    assert_eq!(status(&h.gate, &h.agent, to).await, CallStatus::Pending);

    // A token in use (so cached) stops working as soon as its revocation answers.
    let (agent, token) = h
        .gate
        .create_agent(
            &h.owner,
            AgentSpec {
                name: "second".into(),
                ..AgentSpec::default()
            },
        )
        .await
        .unwrap();
    for _ in 0..3 {
        h.gate.authenticate(&token).await.unwrap();
    }
    let viewer_refused = h.gate.revoke_tokens(&h.viewer, &agent.id).await;
    assert!(
        matches!(viewer_refused, Err(GateError::Forbidden(_))),
        "{viewer_refused:?}"
    );
    assert_eq!(h.gate.revoke_tokens(&h.owner, &agent.id).await.unwrap(), 1);
    assert!(matches!(
        h.gate.authenticate(&token).await,
        Err(GateError::Unauthorized)
    ));
    // The other agent's token is untouched.
    h.gate.authenticate(&token_of(&h, "agent")).await.unwrap();
}

/// Redeems an allowed call, as an agent does before it runs the tool: from then on it
/// waits for its outcome, and turns ambiguous when none comes in time.
async fn redeemed(gate: &Gate, agent: &Principal, to: &str, key: &str) -> String {
    let call = gate.submit_call(agent, email(to)).await.unwrap();
    assert_eq!(call.status, CallStatus::Allowed, "{call:?}");
    gate.redeem_keyed(agent, &call.id, Some(key)).await.unwrap();
    call.id
}

/// Past the default `outcome_timeout` (10 minutes).
const OVERDUE: Duration = Duration::from_secs(11 * 60);

fn did_not_run() -> ReconcileRequest {
    ReconcileRequest {
        resolution: Resolution::DidNotRun,
        reason: None,
    }
}

#[tokio::test]
async fn sqlite_a_call_marked_ambiguous_stops_its_twin_at_once() {
    let h = Harness::new().await;
    let to = "x@acme.test";
    let first = redeemed(&h.gate, &h.agent, to, "k1").await;
    // No call is ambiguous yet: the same call again is allowed (and the workspace is
    // known to hold no ambiguous call from now on).
    for _ in 0..3 {
        assert_eq!(status(&h.gate, &h.agent, to).await, CallStatus::Allowed);
    }
    h.clock.advance(OVERDUE);
    assert_eq!(h.gate.sweep_ambiguous_once().await.unwrap(), 1);
    let twin = h.gate.submit_call(&h.agent, email(to)).await.unwrap();
    assert_eq!(twin.status, CallStatus::Denied, "{twin:?}");
    assert!(
        twin.reason.as_deref().unwrap_or("").contains(&first),
        "{twin:?}"
    );
    // Another call in the workspace is not its twin.
    assert_eq!(
        status(&h.gate, &h.agent, "y@acme.test").await,
        CallStatus::Allowed
    );
    // Once a person reconciled it, the same call is evaluated afresh.
    h.gate
        .reconcile(&h.approver, &first, &did_not_run())
        .await
        .unwrap();
    assert_eq!(status(&h.gate, &h.agent, to).await, CallStatus::Allowed);
}

fn token_of(h: &Harness, name: &str) -> String {
    std::fs::read_to_string(h.dir.path().join(format!("{name}.token"))).unwrap()
}

/// One node: a gate over its own pool, with its listener running.
struct Node {
    gate: Gate,
    clock: Arc<ManualClock>,
    stop: CancellationToken,
}

impl Node {
    async fn start(url: &str) -> Node {
        let node = Node::start_deaf(url).await;
        assert!(
            !node.gate.cache_status().live,
            "a shared database's cache is unknown until the listener runs"
        );
        tokio::spawn({
            let gate = node.gate.clone();
            let stop = node.stop.clone();
            async move { gate.run_listener(stop).await }
        });
        eventually("the listener runs", || async {
            node.gate.cache_status().live
        })
        .await;
        node
    }

    /// A node whose listener never runs.
    async fn start_deaf(url: &str) -> Node {
        let store = Arc::new(
            PostgresStore::connect(url, PgOptions::default())
                .await
                .unwrap(),
        );
        let clock = Arc::new(ManualClock::new(
            jiff::Timestamp::from_second(1_800_000_000).unwrap(),
        ));
        let gate = Gate::new(store, clock.clone()).await.unwrap();
        Node {
            gate,
            clock,
            stop: CancellationToken::new(),
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The backends of this database that hold a `LISTEN`.
async fn listeners(admin: &mut PgConnection, database: &str) -> Vec<i32> {
    sqlx::query_scalar(
        "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND query ILIKE 'LISTEN%'",
    )
    .bind(database)
    .fetch_all(admin)
    .await
    .unwrap()
}

/// Nodes A and B, listening, on the database `url`; a connection of the server's admin,
/// and the backend of A's listener (to kill).
async fn two_nodes(url: &str) -> (PgConnection, Node, Node, i32) {
    let database = url.rsplit('/').next().unwrap().to_owned();
    let admin_url = std::env::var(airlock_pgtest::SERVER_URL_VAR)
        .unwrap_or_else(|_| url.replace(&format!("/{database}"), "/postgres"));
    let mut admin = PgConnection::connect(&admin_url).await.unwrap();
    // B listens first, so that the LISTEN backend that appears next is A's.
    let b = Node::start(url).await;
    let b_listeners = listeners(&mut admin, &database).await;
    let a = Node::start(url).await;
    let a_listener = listeners(&mut admin, &database)
        .await
        .into_iter()
        .find(|pid| !b_listeners.contains(pid))
        .expect("A's listener backend");
    (admin, a, b, a_listener)
}

/// The workspace, made on `gate`: the policy, an approver and an agent of each name;
/// returns the owner's, the approver's and the agents' tokens.
async fn workspace_on(gate: &Gate, agents: &[&str]) -> (String, String, Vec<String>) {
    let boot = gate.bootstrap("default", "owner").await.unwrap().unwrap();
    let owner = gate.authenticate(&boot.owner_token).await.unwrap();
    gate.put_policy(&owner, POLICY).await.unwrap();
    let (_, approver_token) = gate
        .create_user(&owner, "ann", Role::Approver)
        .await
        .unwrap();
    let mut agent_tokens = Vec::new();
    for name in agents {
        let spec = AgentSpec {
            name: (*name).into(),
            ..AgentSpec::default()
        };
        agent_tokens.push(gate.create_agent(&owner, spec).await.unwrap().1);
    }
    (boot.owner_token, approver_token, agent_tokens)
}

/// Kills the backend of `gate`'s listener and waits until the gate has seen the loss.
async fn kill_listener(gate: &Gate, admin: &mut PgConnection, listener: i32) {
    let losses = gate.cache_status().losses;
    let killed: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
        .bind(listener)
        .fetch_one(admin)
        .await
        .unwrap();
    assert!(killed);
    eventually("the node saw its listener's connection lost", || async {
        gate.cache_status().losses > losses
    })
    .await;
}

async fn authenticates(gate: &Gate, token: &str) -> bool {
    match gate.authenticate(token).await {
        Ok(_) => true,
        Err(GateError::Unauthorized) => false,
        Err(other) => panic!("{other}"),
    }
}

#[tokio::test]
async fn postgres_revoke_on_b_is_never_masked_on_a_even_with_its_listener_killed() {
    let url = airlock_pgtest::fresh_database().await;
    let (mut admin, a, b, a_listener) = two_nodes(&url).await;

    let (owner_token, approver_token, agent_tokens) =
        workspace_on(&a.gate, &["scout", "second", "third"]).await;
    let agent_a = a.gate.authenticate(&agent_tokens[0]).await.unwrap();
    let scout = agent_id(&agent_a);
    let owner_b = b.gate.authenticate(&owner_token).await.unwrap();
    let approver_b = b.gate.authenticate(&approver_token).await.unwrap();
    // B heard the policy A stored.
    eventually("B has A's policy", || async {
        b.gate
            .policy(&owner_b)
            .await
            .is_ok_and(|info| info.version == 2)
    })
    .await;

    // 1. A rule minted on B is heard on A; revoked on B, A stops allowing and stays so.
    let to = "bob@other.test";
    let rule = mint(&b.gate, &approver_b, &scout, to).await;
    eventually("A allows under B's rule", || async {
        status(&a.gate, &agent_a, to).await == CallStatus::Allowed
    })
    .await;
    assert_eq!(status(&a.gate, &agent_a, to).await, CallStatus::Allowed);
    b.gate.revoke_rule(&approver_b, &rule.id).await.unwrap();
    eventually("A hears the revocation", || async {
        status(&a.gate, &agent_a, to).await != CallStatus::Allowed
    })
    .await;
    for _ in 0..5 {
        assert_eq!(status(&a.gate, &agent_a, to).await, CallStatus::Pending);
    }

    // 2. A token in use on A, revoked on B: refused on A once heard, and from then on.
    let second = a.gate.authenticate(&agent_tokens[1]).await.unwrap();
    assert!(authenticates(&a.gate, &agent_tokens[1]).await);
    assert_eq!(
        b.gate
            .revoke_tokens(&owner_b, &agent_id(&second))
            .await
            .unwrap(),
        1
    );
    eventually("A hears the token revocation", || async {
        !authenticates(&a.gate, &agent_tokens[1]).await
    })
    .await;
    for _ in 0..5 {
        assert!(!authenticates(&a.gate, &agent_tokens[1]).await);
    }

    // 3. A's listener is killed. Once A has seen the loss, whether it is still reading
    // through or has already listened again (and dropped everything it held), a rule and
    // a token revoked on B are refused on A at once, with nothing heard from B.
    let to = "carol@other.test";
    let rule = mint(&b.gate, &approver_b, &scout, to).await;
    eventually("A allows under B's second rule", || async {
        status(&a.gate, &agent_a, to).await == CallStatus::Allowed
    })
    .await;
    let third = a.gate.authenticate(&agent_tokens[2]).await.unwrap();
    assert!(authenticates(&a.gate, &agent_tokens[2]).await);
    kill_listener(&a.gate, &mut admin, a_listener).await;
    b.gate.revoke_rule(&approver_b, &rule.id).await.unwrap();
    assert_eq!(
        b.gate
            .revoke_tokens(&owner_b, &agent_id(&third))
            .await
            .unwrap(),
        1
    );
    assert_eq!(status(&a.gate, &agent_a, to).await, CallStatus::Pending);
    assert!(!authenticates(&a.gate, &agent_tokens[2]).await);

    // 4. The listener came back and resynced: trusted again and in step with B.
    eventually("A listens again", || async { a.gate.cache_status().live }).await;
    assert_eq!(status(&a.gate, &agent_a, to).await, CallStatus::Pending);
    assert!(!authenticates(&a.gate, &agent_tokens[2]).await);
    let to = "dave@other.test";
    let rule = mint(&b.gate, &approver_b, &scout, to).await;
    eventually("A allows under B's third rule", || async {
        status(&a.gate, &agent_a, to).await == CallStatus::Allowed
    })
    .await;
    b.gate.revoke_rule(&approver_b, &rule.id).await.unwrap();
    eventually("A hears the third revocation", || async {
        status(&a.gate, &agent_a, to).await != CallStatus::Allowed
    })
    .await;

    // 5. A node that does not listen at all (C) never trusts its cache: a revocation on
    // B is refused on C at once.
    let c = Node::start_deaf(&url).await;
    let agent_c = c.gate.authenticate(&agent_tokens[0]).await.unwrap();
    let approver_c = c.gate.authenticate(&approver_token).await.unwrap();
    let to = "erin@other.test";
    let rule = mint(&c.gate, &approver_c, &scout, to).await;
    for _ in 0..3 {
        assert_eq!(status(&c.gate, &agent_c, to).await, CallStatus::Allowed);
    }
    b.gate.revoke_rule(&approver_b, &rule.id).await.unwrap();
    assert_eq!(status(&c.gate, &agent_c, to).await, CallStatus::Pending);
    assert!(!c.gate.cache_status().live);
    let _ = admin.close().await;
}

#[tokio::test]
async fn postgres_a_call_marked_ambiguous_on_b_is_never_let_past_on_a() {
    let url = airlock_pgtest::fresh_database().await;
    let (mut admin, a, b, a_listener) = two_nodes(&url).await;

    let (_, approver_token, agent_tokens) = workspace_on(&a.gate, &["scout"]).await;
    let agent_a = a.gate.authenticate(&agent_tokens[0]).await.unwrap();
    let approver_b = b.gate.authenticate(&approver_token).await.unwrap();

    // 1. A holds that the workspace has no ambiguous call (its twin checks pass without a
    // read); B marks A's redeemed call ambiguous: once A heard it, the twin is denied.
    let to = "x@acme.test";
    let first = redeemed(&a.gate, &agent_a, to, "k1").await;
    for _ in 0..3 {
        assert_eq!(status(&a.gate, &agent_a, to).await, CallStatus::Allowed);
    }
    b.clock.advance(OVERDUE);
    assert_eq!(b.gate.sweep_ambiguous_once().await.unwrap(), 1);
    eventually("A hears the call marked ambiguous", || async {
        status(&a.gate, &agent_a, to).await != CallStatus::Allowed
    })
    .await;
    for _ in 0..5 {
        assert_eq!(status(&a.gate, &agent_a, to).await, CallStatus::Denied);
    }
    b.gate
        .reconcile(&approver_b, &first, &did_not_run())
        .await
        .unwrap();
    assert_eq!(status(&a.gate, &agent_a, to).await, CallStatus::Allowed);

    // 2. A's listener is killed. Once A has seen the loss, a call B marks is denied on A
    // at once, with nothing heard from B.
    let to = "y@acme.test";
    let second = redeemed(&a.gate, &agent_a, to, "k2").await;
    assert_eq!(status(&a.gate, &agent_a, to).await, CallStatus::Allowed);
    kill_listener(&a.gate, &mut admin, a_listener).await;
    b.clock.advance(OVERDUE);
    assert_eq!(b.gate.sweep_ambiguous_once().await.unwrap(), 1);
    let twin = a.gate.submit_call(&agent_a, email(to)).await.unwrap();
    assert_eq!(twin.status, CallStatus::Denied, "{twin:?}");
    assert!(
        twin.reason.as_deref().unwrap_or("").contains(&second),
        "{twin:?}"
    );
}
