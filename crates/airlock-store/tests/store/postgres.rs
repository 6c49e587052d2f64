//! The PostgreSQL backend for the suite, and what only PostgreSQL promises: several
//! nodes (stores) on one database deciding, appending, sweeping and notifying each other
//! correctly, and a clear error when the database is not there.
//!
//! Every test runs on its own fresh database (`airlock_pgtest::fresh_database`), on the
//! server `AIRLOCK_TEST_PG_URL` names or on a throwaway cluster started for the run.

use super::fixtures::{effects, t, world, World};
use super::harness::{Backend, TABLES};
use airlock_digest::digest::{audit_hash, GENESIS_HASH};
use airlock_protocol::{Approval, ApprovalStatus};
use airlock_store::postgres::{PgOptions, PostgresStore};
use airlock_store::{
    AuditEntry, Change, DecideError, Decision, Effects, EventEntry, Grant, Store, StoreError,
};
use async_trait::async_trait;
use jiff::Timestamp;
use serde_json::json;
use sqlx::{Connection, PgConnection};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Barrier};

/// One fresh database; [`Backend::open`] connects a new store (a node) to it.
pub struct Postgres {
    url: String,
}

impl Postgres {
    pub async fn fresh() -> Postgres {
        Postgres {
            url: airlock_pgtest::fresh_database().await,
        }
    }

    async fn node(&self) -> Arc<PostgresStore> {
        Arc::new(
            PostgresStore::connect(&self.url, PgOptions::default())
                .await
                .unwrap(),
        )
    }

    async fn raw(&self) -> PgConnection {
        PgConnection::connect(&self.url).await.unwrap()
    }
}

#[async_trait]
impl Backend for Postgres {
    async fn open(&self) -> Arc<dyn Store> {
        self.node().await
    }

    async fn revoke_token(&self, token_hash: &str, at: Timestamp) {
        let mut conn = self.raw().await;
        let done = sqlx::query("UPDATE tokens SET revoked_at = $1 WHERE hash = $2")
            .bind(at.as_millisecond())
            .bind(token_hash)
            .execute(&mut conn)
            .await
            .unwrap();
        assert_eq!(done.rows_affected(), 1);
    }

    async fn row_counts(&self) -> BTreeMap<String, i64> {
        let mut conn = self.raw().await;
        let mut counts = BTreeMap::new();
        for table in TABLES {
            let count: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
                .fetch_one(&mut conn)
                .await
                .unwrap();
            counts.insert((*table).to_owned(), count);
        }
        counts
    }
}

/// Two nodes on one fresh database, and the usual world in it.
async fn two_nodes() -> (Postgres, Arc<PostgresStore>, Arc<PostgresStore>, World) {
    let database = Postgres::fresh().await;
    let (a, b) = tokio::join!(database.node(), database.node());
    let world = world(a.as_ref()).await;
    (database, a, b, world)
}

/// `effects(kind, subject, at)` whose event names the call, as the gate's events do.
fn call_effects(kind: &str, subject: &str, call_id: &str, at: Timestamp) -> Effects {
    Effects::none()
        .audit(AuditEntry {
            at,
            actor: "user:usr_a".into(),
            kind: kind.into(),
            subject: subject.into(),
            data: json!({"call_id": call_id, "n": 1.5}).into(),
        })
        .event(EventEntry {
            at,
            kind: kind.into(),
            data: json!({"call_id": call_id, "approval_id": subject}).into(),
        })
}

/// Checks the workspace's whole chain: seq 1..n, links, hashes recomputed from storage.
async fn assert_chain(store: &dyn Store, workspace: &str, expected: usize) {
    let records = store.audit_after(workspace, 0, 100_000).await.unwrap();
    assert_eq!(records.len(), expected);
    let mut prev_hash = GENESIS_HASH.to_owned();
    for (index, record) in records.iter().enumerate() {
        assert_eq!(record.seq, u64::try_from(index).unwrap() + 1, "seq gap");
        assert_eq!(record.prev_hash, prev_hash, "broken link at {}", record.seq);
        let without_hash = json!({
            "seq": record.seq,
            "at": record.at,
            "actor": record.actor,
            "kind": record.kind,
            "subject": record.subject,
            "data": record.data,
            "prev_hash": record.prev_hash,
        });
        assert_eq!(record.hash, audit_hash(&prev_hash, &without_hash));
        prev_hash = record.hash.clone();
    }
}

/// Waits (at most `within`) for a change matching `wanted`.
async fn wait_for(
    changes: &mut mpsc::Receiver<Change>,
    within: Duration,
    wanted: impl Fn(&Change) -> bool,
) -> Change {
    tokio::time::timeout(within, async {
        loop {
            let change = changes.recv().await.expect("the listener ended");
            if wanted(&change) {
                return change;
            }
        }
    })
    .await
    .expect("no such change in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_decisions_on_two_nodes_have_one_winner() {
    let (database, a, b, world) = two_nodes().await;
    let spec = world.spec("race");
    a.record_call(&world.ws, spec.asked(), Effects::none())
        .await
        .unwrap();

    const DECIDERS: usize = 100;
    let barrier = Arc::new(Barrier::new(DECIDERS));
    let mut tasks = Vec::new();
    for n in 0..DECIDERS {
        let node = Arc::clone(if n % 2 == 0 { &a } else { &b });
        let barrier = Arc::clone(&barrier);
        let ws = world.ws.clone();
        let base = if n % 3 == 0 {
            spec.reject(t(10))
        } else {
            spec.approve(t(10))
        };
        let decision = Decision {
            decided_by: format!("user:usr_{n}"),
            grant: base.grant.as_ref().map(|grant| Grant {
                id: format!("grt_race_{n}"),
                ..grant.clone()
            }),
            ..base
        };
        let fx = effects("approval.decided", "apr_race", t(10));
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            node.decide(&ws, &decision, &fx).await
        }));
    }
    let mut winners = Vec::new();
    let mut refused = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(decided) => winners.push(decided),
            Err(DecideError::AlreadyDecided(_)) => refused += 1,
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    assert_eq!((winners.len(), refused), (1, DECIDERS - 1));
    let decisions = b.audit_after(&world.ws, 0, 1000).await.unwrap();
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].kind, "approval.decided");
    assert_eq!(
        a.get_approval(&world.ws, "apr_race")
            .await
            .unwrap()
            .as_ref(),
        Some(&winners[0].approval)
    );
    let rows = database.row_counts().await;
    assert_eq!((rows["audit"], rows["events"]), (1, 1));
    assert_eq!(rows["grants"], i64::from(winners[0].grant.is_some()));
}

/// Two nodes' sealers on one chain at once: each record moves once (the node that commits
/// second is refused whole, `Conflict`, and writes nothing), and the chain reads whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_sealing_at_once_move_each_record_once() {
    let (_database, a, b, world) = two_nodes().await;
    let mut many = Effects::none();
    for n in 0..2_500 {
        many = many.audit(AuditEntry {
            at: t(1),
            actor: "system".into(),
            kind: "call.allowed".into(),
            subject: format!("call_{n}"),
            data: json!({"n": n}).into(),
        });
    }
    let user = super::fixtures::user("usr_s", airlock_protocol::Role::Viewer);
    a.create_user(
        &world.ws,
        &user,
        &super::fixtures::token_hash("usr_s"),
        &many,
    )
    .await
    .unwrap();
    for _ in 0..3 {
        let (on_a, on_b) = tokio::join!(a.seal_audit(&world.ws), b.seal_audit(&world.ws));
        for sealed in [on_a, on_b] {
            match sealed {
                Ok(0 | 1_000) | Err(StoreError::Conflict(_)) => {}
                other => panic!("{other:?}"),
            }
        }
    }
    let segments: i64 = sqlx::query_scalar("SELECT sum(records)::BIGINT FROM audit_segments")
        .fetch_one(&mut _database.raw().await)
        .await
        .unwrap();
    assert_eq!(segments, 2_000);
    assert_chain(b.as_ref(), &world.ws, 2_500).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_from_two_nodes_form_one_chain() {
    let (_database, a, b, world) = two_nodes().await;
    const PER_NODE: usize = 50;
    let barrier = Arc::new(Barrier::new(2 * PER_NODE));
    let mut tasks = Vec::new();
    for n in 0..2 * PER_NODE {
        let node = Arc::clone(if n % 2 == 0 { &a } else { &b });
        let barrier = Arc::clone(&barrier);
        let ws = world.ws.clone();
        let spec = world.spec(&format!("c{n}"));
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let fx = effects("call.allowed", &spec.call_id(), t(1));
            node.record_call(&ws, spec.allowed(), fx.clone()).await
        }));
    }
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    assert_chain(a.as_ref(), &world.ws, 2 * PER_NODE).await;
    // The other workspace's chain was not touched, and event ids are distinct.
    assert_chain(b.as_ref(), &world.other, 0).await;
    let events = b.events_after(&world.ws, 0, 1000).await.unwrap();
    let ids: BTreeSet<u64> = events.iter().map(|event| event.id).collect();
    assert_eq!(ids.len(), 2 * PER_NODE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::print_stdout)]
async fn a_decision_on_one_node_reaches_the_other_within_a_second() {
    let (_database, a, b, world) = two_nodes().await;
    let mut changes = a.listen().await.unwrap().expect("PostgreSQL listens");
    let spec = world.spec("far");
    a.record_call(
        &world.ws,
        spec.asked(),
        call_effects("approval.requested", "apr_far", "call_far", t(1)),
    )
    .await
    .unwrap();
    let requested = wait_for(&mut changes, Duration::from_secs(1), |change| {
        change.kind == "approval.requested"
    })
    .await;
    assert_eq!(requested.call_id.as_deref(), Some("call_far"));
    assert_eq!(requested.workspace, world.ws);

    let started = Instant::now();
    b.decide(
        &world.ws,
        &spec.approve(t(2)),
        &call_effects("approval.approved", "apr_far", "call_far", t(2)),
    )
    .await
    .unwrap();
    // A lost notification never arrives; the bound leaves room for a loaded machine's
    // stalls (a PostgreSQL commit has stalled 2 s in CI), which are not what this checks.
    let change = wait_for(&mut changes, Duration::from_secs(10), |change| {
        change.kind == "approval.approved"
    })
    .await;
    let latency = started.elapsed();
    println!("decide on node B -> change on node A: {latency:?} (commit included)");
    assert_eq!(change.call_id.as_deref(), Some("call_far"));
    assert_eq!(change.workspace, world.ws);
    assert_eq!(change.event_id, b.last_event_id(&world.ws).await.unwrap());
    assert!(latency < Duration::from_secs(10), "{latency:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweepers_on_two_nodes_never_expire_twice() {
    let (_database, a, b, world) = two_nodes().await;
    const DUE: usize = 40;
    for n in 0..DUE {
        let mut spec = world.spec(&format!("d{n}"));
        spec.deadline = t(10);
        // Half in each workspace, so the sweeps span both.
        let (ws, agent) = if n % 2 == 0 {
            (&world.ws, &world.agent)
        } else {
            (&world.other, &world.other_agent)
        };
        spec.agent.clone_from(agent);
        spec.session = None;
        a.record_call(ws, spec.asked(), Effects::none())
            .await
            .unwrap();
    }
    let on_expire = |approval: &Approval| effects("approval.expired", &approval.id, t(20));
    let barrier = Arc::new(Barrier::new(4));
    let mut sweeps = Vec::new();
    for n in 0..4 {
        let node = Arc::clone(if n % 2 == 0 { &a } else { &b });
        let barrier = Arc::clone(&barrier);
        sweeps.push(tokio::spawn(async move {
            barrier.wait().await;
            let mut expired = Vec::new();
            loop {
                let batch = node.expire_due(t(20), 7, &on_expire).await.unwrap();
                if batch.is_empty() {
                    return expired;
                }
                expired.extend(batch.into_iter().map(|(_, approval)| approval.id));
            }
        }));
    }
    let mut all = Vec::new();
    for sweep in sweeps {
        all.extend(sweep.await.unwrap());
    }
    let distinct: BTreeSet<&String> = all.iter().collect();
    assert_eq!((all.len(), distinct.len()), (DUE, DUE), "expired twice");
    for ws in [&world.ws, &world.other] {
        let records = a.audit_after(ws, 0, 1000).await.unwrap();
        assert_eq!(records.len(), DUE / 2);
        assert!(records
            .iter()
            .all(|record| record.kind == "approval.expired"));
        assert_chain(b.as_ref(), ws, DUE / 2).await;
    }
    assert_eq!(a.next_deadline().await.unwrap(), None);
    let approval = b.get_approval(&world.ws, "apr_d0").await.unwrap().unwrap();
    assert_eq!(approval.status, ApprovalStatus::Expired);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_starting_together_migrate_once() {
    let database = Postgres::fresh().await;
    let url = Arc::new(database.url.clone());
    let starts: Vec<_> = (0..4)
        .map(|_| {
            let url = Arc::clone(&url);
            tokio::spawn(async move { PostgresStore::connect(&url, PgOptions::default()).await })
        })
        .collect();
    let mut nodes = Vec::new();
    for start in starts {
        nodes.push(start.await.unwrap().unwrap());
    }
    assert_eq!(nodes.len(), 4);
    let mut conn = database.raw().await;
    let duplicates: i64 =
        sqlx::query_scalar("SELECT COUNT(*) - COUNT(DISTINCT version) FROM _sqlx_migrations")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(duplicates, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_database_is_a_database_error_at_once() {
    // A port nobody listens on (it was free a moment ago).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let options = PgOptions {
        acquire_timeout: Duration::from_secs(2),
        ..PgOptions::default()
    };
    let started = Instant::now();
    let refused = PostgresStore::connect(
        &format!("postgres://airlock@127.0.0.1:{port}/airlock"),
        options,
    )
    .await;
    let elapsed = started.elapsed();
    match refused {
        Err(StoreError::Database(reason)) => {
            assert!(reason.to_lowercase().contains("refused"), "{reason}")
        }
        other => panic!("expected a database error, got {other:?}"),
    }
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
}

/// Ends every other connection to the database, as a restart of the server (or a
/// network blip) would.
async fn cut_every_connection(admin: &mut PgConnection) {
    let cut: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .fetch_all(admin)
    .await
    .unwrap();
    assert!(!cut.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_connections_are_replaced_and_listeners_resync() {
    let (database, a, _b, world) = two_nodes().await;
    let mut changes = a.listen().await.unwrap().expect("PostgreSQL listens");
    // Cut every connection to the database, the listener's included, as a restart of
    // the server (or a network blip) would.
    let mut admin = database.raw().await;
    cut_every_connection(&mut admin).await;
    wait_for(&mut changes, Duration::from_secs(10), |change| {
        change.kind == "resync"
    })
    .await;

    // The pool replaced its connections: operations work again, and are heard again.
    let spec = world.spec("after");
    a.record_call(
        &world.ws,
        spec.asked(),
        call_effects("approval.requested", "apr_after", "call_after", t(1)),
    )
    .await
    .unwrap();
    let change = wait_for(&mut changes, Duration::from_secs(5), |change| {
        change.kind == "approval.requested"
    })
    .await;
    assert_eq!(change.call_id.as_deref(), Some("call_after"));
}

/// The batcher keeps a connection of its own, which the pool does not ping. When that
/// connection died while idle, the next batch fails before its commit and is recorded
/// on a fresh connection: the call is answered once, stored once, chained once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_whose_connection_died_is_recorded_on_a_fresh_one() {
    let (database, a, _b, world) = two_nodes().await;
    let first = world.spec("first");
    a.record_call(
        &world.ws,
        first.allowed(),
        call_effects("call.allowed", "call_first", "call_first", t(1)),
    )
    .await
    .unwrap();
    let mut admin = database.raw().await;
    cut_every_connection(&mut admin).await;
    let second = world.spec("second");
    a.record_call(
        &world.ws,
        second.allowed(),
        call_effects("call.allowed", "call_second", "call_second", t(2)),
    )
    .await
    .unwrap();
    assert!(a
        .get_call(&world.ws, &second.call_id())
        .await
        .unwrap()
        .is_some());
    let calls: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM calls")
        .fetch_one(&mut admin)
        .await
        .unwrap();
    assert_eq!(calls, 2);
    assert_chain(a.as_ref(), &world.ws, 2).await;
}

/// Calls submitted together share the batcher's transaction; one whose id is taken fails
/// alone (the batch is redone call by call in savepoints), the others are stored, and
/// the chain has no gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_call_in_a_batch_fails_alone_on_postgres() {
    let (_database, a, _b, world) = two_nodes().await;
    let taken = world.spec("taken");
    a.record_call(
        &world.ws,
        taken.allowed(),
        call_effects("call.allowed", "call_taken", "call_taken", t(1)),
    )
    .await
    .unwrap();
    const CALLS: usize = 20;
    let barrier = Arc::new(Barrier::new(CALLS));
    let mut tasks = Vec::new();
    for n in 0..CALLS {
        let node = Arc::clone(&a);
        let barrier = Arc::clone(&barrier);
        let ws = world.ws.clone();
        // Call 7 reuses the stored call's id.
        let id = if n == 7 {
            "taken".to_owned()
        } else {
            format!("c{n}")
        };
        let spec = world.spec(&id);
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let fx = effects("call.allowed", &spec.call_id(), t(2));
            node.record_call(&ws, spec.allowed(), fx.clone()).await
        }));
    }
    let mut failed = Vec::new();
    for (n, task) in tasks.into_iter().enumerate() {
        if task.await.unwrap().is_err() {
            failed.push(n);
        }
    }
    assert_eq!(failed, vec![7]);
    assert_chain(a.as_ref(), &world.ws, CALLS).await;
}

/// The batcher commits on a thread and a connection of its own; both end with the store.
/// A node that is closed leaves no connection behind, the batcher's included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_node_leaves_no_connection_behind() {
    let database = Postgres::fresh().await;
    let node = database.node().await;
    let world = world(node.as_ref()).await;
    let spec = world.spec("closing");
    node.record_call(
        &world.ws,
        spec.allowed(),
        call_effects("call.allowed", "call_closing", "call_closing", t(1)),
    )
    .await
    .unwrap();
    let mut admin = database.raw().await;
    let count = "SELECT COUNT(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND pid <> pg_backend_pid()";
    let open: i64 = sqlx::query_scalar(count)
        .fetch_one(&mut admin)
        .await
        .unwrap();
    assert!(
        open >= 2,
        "the pool's and the batcher's connections: {open}"
    );
    let Ok(node) = Arc::try_unwrap(node) else {
        panic!("the test holds the only handle")
    };
    node.close().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let open: i64 = sqlx::query_scalar(count)
            .fetch_one(&mut admin)
            .await
            .unwrap();
        if open == 0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{open} connections still open after the node closed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An announcement names the event's `call_id` only when its data has one that is a
/// string, whatever else the data holds, and carries the event's own id and kind; the
/// events of one batch are announced in the order they were stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn announcements_name_a_call_only_when_the_data_has_one_as_text() {
    let (_database, a, b, world) = two_nodes().await;
    let mut changes = b.listen().await.unwrap().expect("PostgreSQL listens");
    let datas = [
        json!({"call_id": "call_text"}),
        json!({"call_id": 7}),
        json!({"approval_id": "apr_1"}),
        json!(["call_id"]),
        json!("call_id"),
        json!({"call_id": null, "nested": {"call_id": "call_deep"}}),
    ];
    let mut effects = Effects::none();
    for (n, data) in datas.iter().enumerate() {
        effects = effects.event(EventEntry {
            at: t(1),
            kind: format!("kind.{n}"),
            data: data.clone().into(),
        });
    }
    a.record_call(
        &world.ws,
        world.spec("announced").allowed(),
        effects.clone(),
    )
    .await
    .unwrap();
    let mut heard = Vec::new();
    while heard.len() < datas.len() {
        let change = wait_for(&mut changes, Duration::from_secs(5), |change| {
            change.kind.starts_with("kind.")
        })
        .await;
        heard.push(change);
    }
    let kinds: Vec<&str> = heard.iter().map(|change| change.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["kind.0", "kind.1", "kind.2", "kind.3", "kind.4", "kind.5"]
    );
    let call_ids: Vec<Option<&str>> = heard.iter().map(|c| c.call_id.as_deref()).collect();
    assert_eq!(call_ids, [Some("call_text"), None, None, None, None, None]);
    assert!(heard.iter().all(|change| change.workspace == world.ws));
    let ids: Vec<u64> = heard.iter().map(|change| change.event_id).collect();
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{ids:?}");
}

/// The batcher's connection is opened with the pool's settings: its statements have the
/// node's time limit, so a batch that cannot get the workspace's lock fails in time
/// instead of hanging, stores nothing, and the next batch commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_kept_from_its_lock_fails_within_the_statement_timeout() {
    let database = Postgres::fresh().await;
    // Short enough to wait out, long enough that the setup's own writes meet it when a
    // loaded machine's disk stalls a commit (300 ms was a flake waiting to happen).
    let options = PgOptions {
        statement_timeout: Duration::from_millis(1500),
        ..PgOptions::default()
    };
    let node = PostgresStore::connect(&database.url, options)
        .await
        .unwrap();
    let world = world(&node).await;
    let mut admin = database.raw().await;
    sqlx::query("BEGIN").execute(&mut admin).await.unwrap();
    sqlx::query("SELECT seq FROM audit_heads WHERE workspace = $1 FOR UPDATE")
        .bind(&world.ws)
        .fetch_one(&mut admin)
        .await
        .unwrap();
    let started = Instant::now();
    // A backstop well past the limit, so a batch without it fails here instead of hanging.
    let held = tokio::time::timeout(
        Duration::from_secs(10),
        node.record_call(
            &world.ws,
            world.spec("held").allowed(),
            call_effects("call.allowed", "call_held", "call_held", t(1)),
        ),
    )
    .await
    .expect("the batch hung on the lock: no statement timeout on its connection");
    let elapsed = started.elapsed();
    match held {
        Err(StoreError::Database(reason)) => assert!(reason.contains("timeout"), "{reason}"),
        other => panic!("expected the statement timeout, got {other:?}"),
    }
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    sqlx::query("ROLLBACK").execute(&mut admin).await.unwrap();
    assert!(node
        .get_call(&world.ws, &world.spec("held").call_id())
        .await
        .unwrap()
        .is_none());
    node.record_call(
        &world.ws,
        world.spec("after").allowed(),
        call_effects("call.allowed", "call_after", "call_after", t(2)),
    )
    .await
    .unwrap();
    assert_chain(&node, &world.ws, 1).await;
}

/// The store never asks a long walk (verifying the audit chain) to overlap more reads
/// than half the node's pool: the rest stays for the calls served beside it. (The gate
/// reads at least two pages at once, so a pool of fewer than four lends it two.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_walk_reads_with_at_most_half_the_pool() {
    let database = Postgres::fresh().await;
    for (pool, expected) in [(10, 4), (40, 4), (6, 3), (4, 2), (1, 1)] {
        let options = PgOptions {
            max_connections: pool,
            ..PgOptions::default()
        };
        let store = PostgresStore::connect(&database.url, options)
            .await
            .unwrap();
        assert_eq!(store.long_reads_at_once(), expected, "a pool of {pool}");
        store.close().await;
    }
}
