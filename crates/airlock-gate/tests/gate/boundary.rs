//! What the gate hands out to code beside it checks who is asking: the policy history
//! (the inbox's policy page reads it through the gate, not the store) and web sessions.

use super::harness::Harness;
use airlock_gate::GateError;
use airlock_store::WebSession;

#[tokio::test]
async fn the_policy_history_needs_a_user_with_a_role() {
    let h = Harness::new().await;
    let refused = h.gate.policy_history(&h.agent, 50).await;
    assert!(
        matches!(&refused, Err(GateError::Forbidden(message)) if message.contains("policy history")),
        "{refused:?}"
    );
    // The starter policy, then the harness's: newest first, this workspace's only.
    let history = h.gate.policy_history(&h.viewer, 50).await.unwrap();
    let versions: Vec<u64> = history.iter().map(|info| info.version).collect();
    assert_eq!(versions, [2, 1]);
    let other = h.gate.bootstrap("other", "olga").await.unwrap().unwrap();
    let stranger = h.gate.authenticate(&other.owner_token).await.unwrap();
    let theirs = h.gate.policy_history(&stranger, 50).await.unwrap();
    assert_eq!(theirs.len(), 1);
    assert_ne!(theirs[0].digest, history[0].digest);
}

#[tokio::test]
async fn an_agent_cannot_open_a_web_session_and_nothing_is_written() {
    let h = Harness::new().await;
    let now = h.gate.now();
    let session = WebSession {
        id: "web_1".into(),
        cookie_hash: "c".repeat(64),
        token_hash: "t".repeat(64),
        created_at: now,
        expires_at: airlock_gate::clock::add_seconds(now, 3600),
    };
    let before = h.gate.audit_after(&h.owner, 0, 1000).await.unwrap().len();
    let refused = h.gate.open_web_session(&h.agent, &session).await;
    assert!(
        matches!(refused, Err(GateError::Forbidden(_))),
        "{refused:?}"
    );
    assert!(h
        .gate
        .web_session(&session.cookie_hash)
        .await
        .unwrap()
        .is_none());
    let after = h.gate.audit_after(&h.owner, 0, 1000).await.unwrap().len();
    assert_eq!(before, after);
}
