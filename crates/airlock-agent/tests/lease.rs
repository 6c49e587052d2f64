//! A run's lease while its leg waits: on a model slower than the lease, the leg renews it,
//! so no other node would find the run stalled and take it over from a node that is
//! alive. Real SQLite, a manual clock, and the local fake OpenAI server as the model.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airlock_agent::{Runtime, RuntimeConfig, LEASE};
use airlock_gate::clock::ManualClock;
use airlock_gate::identity::AgentSpec;
use airlock_gate::Gate;
use airlock_llm::fake::{FakeOpenAi, FakeReply};
use airlock_protocol::{LlmConfig, RunState};
use airlock_store::sqlite::SqliteStore;
use std::sync::Arc;
use std::time::{Duration, Instant};

const POLICY: &str = "version = 1\ndefault = \"deny\"\n";

/// Whether another node's sweeper would take the run over now.
async fn stalled(gate: &Gate, run_id: &str) -> bool {
    let stalled = gate.runs().stalled_runs(gate.now(), 100).await.unwrap();
    stalled.iter().any(|(_, id)| id == run_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leg_waiting_on_a_slow_model_renews_its_lease() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        SqliteStore::open(&dir.path().join("airlock.db"))
            .await
            .unwrap(),
    );
    let clock = Arc::new(ManualClock::new(jiff::Timestamp::now()));
    let gate = Gate::new(store, clock.clone()).await.unwrap();
    let boot = gate.bootstrap("default", "owner").await.unwrap().unwrap();
    let owner = gate.authenticate(&boot.owner_token).await.unwrap();
    gate.put_policy(&owner, POLICY).await.unwrap();
    let mut config = RuntimeConfig::under(dir.path());
    config.lease_renewal = Duration::from_millis(100);
    // Three attempts that each time out after 1.5 s keep the leg waiting, and writing
    // nothing, for about 4.5 s; then the run fails.
    config.client.idle_timeout = Duration::from_millis(1500);
    config.client.max_retries = 2;
    config.client.backoff = Duration::from_millis(10);
    // No background sweeper: this test is about the lease in the store alone.
    let runtime = Runtime::new(gate.clone(), config);
    let model = FakeOpenAi::start().await;
    for _ in 0..3 {
        model.push(FakeReply::Delay(
            Duration::from_secs(10),
            Box::new(FakeReply::Text("far too late".into())),
        ));
    }
    let spec = AgentSpec {
        name: "slow".into(),
        llm: Some(LlmConfig {
            base_url: model.base_url(),
            model: "fake-1".into(),
            api_key_env: None,
            stream: None,
        }),
        ..AgentSpec::default()
    };
    let (agent, _) = gate.create_agent(&owner, spec).await.unwrap();
    let session = gate
        .create_session(&owner, Some(agent.id), Some("test".into()))
        .await
        .unwrap();
    let run = runtime
        .post_message(&owner, &session.id, "take your time")
        .await
        .unwrap();
    let start = Instant::now();
    while model.requests().is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the model was never asked"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // The whole lease passes on the clock while the model thinks: the run looks stalled
    // until the leg's next renewal, then it does not.
    clock.advance(LEASE + Duration::from_secs(1));
    assert!(stalled(&gate, &run.id).await, "the lease did not run out");
    let advanced = Instant::now();
    while stalled(&gate, &run.id).await {
        assert!(
            advanced.elapsed() < Duration::from_secs(2),
            "the waiting leg never renewed its lease"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let waiting = runtime.get_run(&owner, &run.id).await.unwrap();
    assert_eq!(
        waiting.state,
        RunState::Running,
        "renewed while still waiting"
    );
    assert_eq!(model.requests().len(), 1, "still the first attempt");

    // Once the leg has stopped (the model never answered: the run failed), nothing
    // renews the lease any more; an ended run is never stalled.
    let ended = Instant::now();
    while runtime.get_run(&owner, &run.id).await.unwrap().state != RunState::Failed {
        assert!(
            ended.elapsed() < Duration::from_secs(20),
            "the run never failed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!stalled(&gate, &run.id).await);
}
