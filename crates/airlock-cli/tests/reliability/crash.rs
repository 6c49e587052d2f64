//! Crash tests (DESIGN.md G1, G3, G7, G8): the server dies at each durable step of the
//! approval path, by an armed failpoint (`abort()` right after the step's commit, or
//! right before it for `call.submitted`) or by SIGKILL after a seeded random delay; it
//! is started again over the same data, the interrupted flows are finished, and the
//! invariants are checked. Each test repeats `AIRLOCK_CRASH_ROUNDS` times (default 1)
//! with seeded timing (`AIRLOCK_CRASH_SEED`), on SQLite and on PostgreSQL.

use crate::node::{base_seed, rounds, Backend, Node, Rng};
use crate::scenario::{check_invariants, drive, expire_dead_leases, settle, setup};
use std::time::Duration;

/// One round: arm `point`, drive until the process aborts, restart, settle, check.
fn crash_at(point: &str, backend: fn() -> Backend) {
    for round in 0..rounds(1) {
        let seed = base_seed() ^ (round << 32) ^ fxhash(point);
        let context = format!("failpoint {point}, round {round}, seed {seed}");
        let dir = tempfile::tempdir().unwrap();
        let backend = backend();
        let mut rng = Rng::new(seed);
        let mut node = Node::start(dir.path(), &backend, Some(point));
        let mut seen = setup(&node);
        let owner = node.owner_token();
        let driven = drive(&node.url, &owner, &mut seen, &mut rng);
        let Some(status) = node.wait_exit(Duration::from_secs(20)) else {
            panic!(
                "{context}: the server never reached the failpoint (flow: {driven:?})\n{}",
                node.stderr.text()
            );
        };
        assert!(
            Node::aborted(status),
            "{context}: the server exited {status}, not by the failpoint\n{}",
            node.stderr.text()
        );
        assert!(
            node.stderr.text().contains("failpoint reached"),
            "{context}: {}",
            node.stderr.text()
        );
        drop(node);

        expire_dead_leases(&backend);
        let node = Node::start(dir.path(), &backend, None);
        settle(&node, &mut seen);
        let tally = check_invariants(&node, &seen, &context);
        println!(
            "{context}: flow {driven:?}; {} approvals, {} outbox rows, {} grants consumed",
            tally.approvals, tally.outbox, tally.consumed
        );
    }
}

/// One round: SIGKILL at a seeded random moment of the flow, restart, settle, check.
fn kill_at_random(backend: fn() -> Backend, salt: u64, flow_millis: u64) {
    for round in 0..rounds(2) {
        let seed = base_seed() ^ (round << 32) ^ salt;
        let mut rng = Rng::new(seed);
        // The kill lands anywhere in the flow (`flow_millis`: about how long it takes on
        // a debug build), now and then after it ended.
        let delay = rng.millis(flow_millis);
        let context = format!("SIGKILL after {delay:?}, round {round}, seed {seed}");
        let dir = tempfile::tempdir().unwrap();
        let backend = backend();
        let mut node = Node::start(dir.path(), &backend, None);
        let mut seen = setup(&node);
        let (url, owner) = (node.url.clone(), node.owner_token());
        let driver = std::thread::spawn(move || {
            let outcome = drive(&url, &owner, &mut seen, &mut rng);
            (outcome, seen)
        });
        std::thread::sleep(delay);
        node.kill9();
        let (outcome, mut seen) = driver.join().unwrap();
        drop(node);

        expire_dead_leases(&backend);
        let node = Node::start(dir.path(), &backend, None);
        settle(&node, &mut seen);
        let tally = check_invariants(&node, &seen, &context);
        println!(
            "{context}: flow {outcome:?}; {} approvals, {} outbox rows, {} grants consumed",
            tally.approvals, tally.outbox, tally.consumed
        );
    }
}

/// A stable salt per point name, so each point gets its own timing.
fn fxhash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One test per point and backend, so nextest runs them side by side.
macro_rules! kill_points {
    ($($test:ident => $point:literal,)*) => {
        mod sqlite {
            $(#[test] fn $test() { super::crash_at($point, super::Backend::sqlite); })*
        }
        mod postgres {
            $(#[test] fn $test() { super::crash_at($point, super::Backend::postgres); })*
        }
    };
}

kill_points! {
    http_call_before_commit => "call.submitted:1",
    run_call_before_commit => "call.submitted:2",
    http_approval_created => "approval.created:1",
    run_approval_created => "approval.created:2",
    http_decision_committed => "decision.committed:1",
    run_decision_committed => "decision.committed:2",
    grant_redeemed => "grant.redeemed",
    effect_written => "effect.written",
    run_suspended => "run.suspended",
    run_resumed => "run.resumed",
}

#[test]
fn sigkill_at_random_moments_on_sqlite() {
    kill_at_random(Backend::sqlite, 1, 500);
}

#[test]
fn sigkill_at_random_moments_on_postgres() {
    kill_at_random(Backend::postgres, 2, 800);
}

/// A typo in `AIRLOCK_FAILPOINT` must stop the server, not run a crash test that can
/// never crash.
#[test]
fn an_unknown_failpoint_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(crate::node::BIN)
        .current_dir(dir.path())
        .env("AIRLOCK_FAILPOINT", "grant.redeem")
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let text = String::from_utf8_lossy(&output.stderr);
    assert!(text.contains("unknown point `grant.redeem`"), "{text}");
    // And nothing was created.
    assert!(!dir.path().join("data/owner.token").exists());
}
