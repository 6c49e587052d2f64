//! One test per guarantee the gate carries (DESIGN.md §3), named after it.

use super::harness::Harness;
use airlock_gate::calls::Submission;
use airlock_gate::decide::{DecisionRequest, Remember, Verdict};
use airlock_gate::rules::NewRule;
use airlock_gate::GateError;
use airlock_protocol::{ApprovalStatus, CallStatus, DecidedBy, RuleScope};
use serde_json::{json, Value};
use std::time::Duration;

fn submission(tool: &str, arguments: Value) -> Submission {
    Submission {
        tool: tool.into(),
        arguments,
        session_id: None,
        declared: None,
        context: Default::default(),
    }
}

fn approve(digest: &str) -> DecisionRequest {
    DecisionRequest {
        decision: Verdict::Approve,
        binding_digest: digest.into(),
        reason: None,
        remember: None,
        arguments: None,
    }
}

async fn audit_kinds(h: &Harness) -> Vec<String> {
    h.gate
        .audit_after(&h.owner, 0, 1000)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.kind)
        .collect()
}

#[tokio::test]
async fn allow_deny_and_ask_are_recorded_with_grant_or_approval() {
    let h = Harness::new().await;
    let allowed = h
        .gate
        .submit_call(
            &h.agent,
            submission("email.send", json!({"to": "a@acme.test"})),
        )
        .await
        .unwrap();
    assert_eq!(allowed.status, CallStatus::Allowed);
    assert_eq!(allowed.rule.as_deref(), Some("inside"));
    assert!(allowed.grant_id.is_some() && allowed.approval_id.is_none());

    let denied = h
        .gate
        .submit_call(
            &h.agent,
            submission("shell.exec", json!({"command": "ls && rm -rf /"})),
        )
        .await
        .unwrap();
    assert_eq!(denied.status, CallStatus::Denied);
    assert_eq!(denied.reason.as_deref(), Some("destructive command"));
    assert!(denied.grant_id.is_none() && denied.approval_id.is_none());

    let asked = h
        .gate
        .submit_call(
            &h.agent,
            submission("email.send", json!({"to": "eve@evil.test", "body": "hi"})),
        )
        .await
        .unwrap();
    assert_eq!(asked.status, CallStatus::Pending);
    let approval = h
        .gate
        .get_approval(&h.owner, asked.approval_id.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(approval.preview.summary, "Send email to eve@evil.test");
    assert_eq!(approval.preview.body.as_deref(), Some("hi"));
    assert_eq!(approval.standing_target.as_deref(), Some("eve@evil.test"));
    let kinds = audit_kinds(&h).await;
    for kind in ["call.allowed", "call.denied", "approval.requested"] {
        assert!(kinds.contains(&kind.to_owned()), "{kinds:?}");
    }
}

#[tokio::test]
async fn g1_a_grant_is_consumed_once() {
    let h = Harness::new().await;
    let call = h
        .gate
        .submit_call(
            &h.agent,
            submission("email.send", json!({"to": "a@acme.test"})),
        )
        .await
        .unwrap();
    h.gate.redeem(&h.agent, &call.id).await.unwrap();
    assert!(matches!(
        h.gate.redeem(&h.agent, &call.id).await,
        Err(GateError::GrantSpent)
    ));
    let denied = h
        .gate
        .submit_call(
            &h.agent,
            submission("shell.exec", json!({"command": "rm -rf /"})),
        )
        .await
        .unwrap();
    assert!(matches!(
        h.gate.redeem(&h.agent, &denied.id).await,
        Err(GateError::Forbidden(_))
    ));
    assert!(matches!(
        h.gate.redeem(&h.owner, &call.id).await,
        Err(GateError::Forbidden(_))
    ));
}

#[tokio::test]
async fn g2_a_wrong_binding_digest_changes_nothing() {
    let h = Harness::new().await;
    let call = h
        .gate
        .submit_call(
            &h.agent,
            submission("email.send", json!({"to": "eve@evil.test"})),
        )
        .await
        .unwrap();
    let id = call.approval_id.unwrap();
    let before = audit_kinds(&h).await.len();
    let refused = h
        .gate
        .decide(&h.approver, &id, approve(&"0".repeat(64)))
        .await;
    assert!(
        matches!(refused, Err(GateError::BindingMismatch)),
        "{refused:?}"
    );
    assert_eq!(audit_kinds(&h).await.len(), before);
    assert_eq!(
        h.gate.get_approval(&h.owner, &id).await.unwrap().status,
        ApprovalStatus::Pending
    );
}

#[tokio::test]
async fn g3_the_first_decision_wins_and_waiters_wake_at_once() {
    let h = Harness::new().await;
    let call = h
        .gate
        .submit_call(
            &h.agent,
            submission("email.send", json!({"to": "eve@evil.test"})),
        )
        .await
        .unwrap();
    let approval = h
        .gate
        .get_approval(&h.owner, call.approval_id.as_deref().unwrap())
        .await
        .unwrap();
    let waiter = {
        let gate = h.gate.clone();
        let agent = h.agent.clone();
        let id = call.id.clone();
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let call = gate
                .wait_call(&agent, &id, Duration::from_secs(30))
                .await
                .unwrap();
            (call, started.elapsed())
        })
    };
    // Let the waiter park first.
    while h.gate.waiting() == 0 {
        tokio::task::yield_now().await;
    }
    let decided_at = std::time::Instant::now();
    h.gate
        .decide(&h.approver, &approval.id, approve(&approval.binding_digest))
        .await
        .unwrap();
    let (woken, _) = waiter.await.unwrap();
    let latency = decided_at.elapsed();
    assert_eq!(woken.status, CallStatus::Approved);
    // A missed wake-up would hold the waiter its whole 30 s; the bound leaves room for a
    // loaded machine's stalls, which are not what this checks (BENCHMARKS.md times it).
    assert!(latency < Duration::from_secs(10), "woke after {latency:?}");
    let again = h
        .gate
        .decide(&h.owner, &approval.id, approve(&approval.binding_digest))
        .await;
    assert!(
        matches!(
            again,
            Err(GateError::AlreadyDecided(ApprovalStatus::Approved))
        ),
        "{again:?}"
    );
    let approvals = audit_kinds(&h)
        .await
        .iter()
        .filter(|k| *k == "approval.approved")
        .count();
    assert_eq!(approvals, 1);
}

#[tokio::test]
async fn g4_a_deadline_passed_is_expired_not_rejected() {
    let h = Harness::new().await;
    let call = h
        .gate
        .submit_call(
            &h.agent,
            submission("email.send", json!({"to": "eve@evil.test"})),
        )
        .await
        .unwrap();
    let approval = h
        .gate
        .get_approval(&h.owner, call.approval_id.as_deref().unwrap())
        .await
        .unwrap();
    h.clock.advance(Duration::from_secs(3601));
    let refused = h
        .gate
        .decide(&h.approver, &approval.id, approve(&approval.binding_digest))
        .await;
    assert!(matches!(refused, Err(GateError::Expired)), "{refused:?}");
    assert_eq!(
        h.gate
            .get_approval(&h.owner, &approval.id)
            .await
            .unwrap()
            .status,
        ApprovalStatus::Expired
    );
    let call = h.gate.get_call(&h.agent, &call.id).await.unwrap();
    assert_eq!(call.status, CallStatus::Expired);
    assert!(audit_kinds(&h)
        .await
        .contains(&"approval.expired".to_owned()));
}

#[tokio::test]
async fn g4_a_policy_change_cancels_pending_approvals_as_stale() {
    let h = Harness::new().await;
    let call = h
        .gate
        .submit_call(
            &h.agent,
            submission("email.send", json!({"to": "eve@evil.test"})),
        )
        .await
        .unwrap();
    let approval = h
        .gate
        .get_approval(&h.owner, call.approval_id.as_deref().unwrap())
        .await
        .unwrap();
    h.gate
        .put_policy(&h.owner, "version = 1\ndefault = \"ask\"\n")
        .await
        .unwrap();
    let refused = h
        .gate
        .decide(&h.approver, &approval.id, approve(&approval.binding_digest))
        .await;
    assert!(
        matches!(refused, Err(GateError::StalePolicy)),
        "{refused:?}"
    );
    let call = h
        .gate
        .wait_call(&h.agent, &call.id, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(call.status, CallStatus::Cancelled);
}

#[tokio::test]
async fn g4_a_bad_policy_is_refused_and_the_old_one_stays() {
    let h = Harness::new().await;
    let before = h.gate.policy(&h.owner).await.unwrap();
    let refused = h
        .gate
        .put_policy(
            &h.owner,
            "version = 1\n[[rules]]\ntool = \"x\"\ndecison = \"allow\"\n",
        )
        .await;
    match refused {
        Err(GateError::PolicyInvalid(errors)) => {
            assert_eq!((errors.0[0].line, errors.0[0].column), (4, 1))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(h.gate.policy(&h.owner).await.unwrap(), before);
}

#[tokio::test]
async fn g5_a_deny_cannot_be_approved_or_remembered_away() {
    let h = Harness::new().await;
    let denied = h
        .gate
        .submit_call(
            &h.agent,
            submission("shell.exec", json!({"command": "rm -rf /"})),
        )
        .await
        .unwrap();
    assert!(denied.approval_id.is_none());
    let exec_rule = h
        .gate
        .create_rule(
            &h.owner,
            NewRule {
                tool: "shell.exec".into(),
                target: "rm -rf /".into(),
                scope: RuleScope::Agent,
                scope_id: h.agent_id.clone(),
                expires_in: None,
            },
        )
        .await;
    assert!(
        matches!(exec_rule, Err(GateError::Invalid(_))),
        "{exec_rule:?}"
    );
}

#[tokio::test]
async fn g6_only_approvers_of_the_workspace_decide() {
    let h = Harness::new().await;
    let call = h
        .gate
        .submit_call(
            &h.agent,
            submission("email.send", json!({"to": "eve@evil.test"})),
        )
        .await
        .unwrap();
    let approval = h
        .gate
        .get_approval(&h.owner, call.approval_id.as_deref().unwrap())
        .await
        .unwrap();
    for who in [&h.agent, &h.viewer] {
        let refused = h
            .gate
            .decide(who, &approval.id, approve(&approval.binding_digest))
            .await;
        assert!(
            matches!(refused, Err(GateError::Forbidden(_))),
            "{refused:?}"
        );
    }
    let rule = NewRule {
        tool: "email.send".into(),
        target: "x@evil.test".into(),
        scope: RuleScope::Agent,
        scope_id: h.agent_id.clone(),
        expires_in: None,
    };
    assert!(matches!(
        h.gate.create_rule(&h.agent, rule).await,
        Err(GateError::Forbidden(_))
    ));
    assert!(matches!(
        h.gate.put_policy(&h.agent, "version = 1\n").await,
        Err(GateError::Forbidden(_))
    ));
    let other = h.gate.bootstrap("other", "olga").await.unwrap().unwrap();
    let stranger = h.gate.authenticate(&other.owner_token).await.unwrap();
    assert!(matches!(
        h.gate.get_approval(&stranger, &approval.id).await,
        Err(GateError::NotFound(_))
    ));
    let refused = h
        .gate
        .decide(&stranger, &approval.id, approve(&approval.binding_digest))
        .await;
    assert!(
        matches!(refused, Err(GateError::NotFound(_))),
        "{refused:?}"
    );
}

#[tokio::test]
async fn g7_pending_approvals_survive_a_restart_and_stay_decidable() {
    let h = Harness::new().await;
    let call = h
        .gate
        .submit_call(
            &h.agent,
            submission("email.send", json!({"to": "eve@evil.test"})),
        )
        .await
        .unwrap();
    let approval_id = call.approval_id.clone().unwrap();
    let h = h.restart().await;
    let approval = h.gate.get_approval(&h.owner, &approval_id).await.unwrap();
    assert_eq!(approval.status, ApprovalStatus::Pending);
    h.gate
        .decide(&h.approver, &approval_id, approve(&approval.binding_digest))
        .await
        .unwrap();
    let call = h
        .gate
        .wait_call(&h.agent, &call.id, Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(call.status, CallStatus::Approved);
    assert!(h.gate.verify_audit(&h.owner).await.unwrap().ok);
}

#[tokio::test]
async fn g8_every_change_is_in_a_chain_that_verifies() {
    let h = Harness::new().await;
    let call = h
        .gate
        .submit_call(
            &h.agent,
            submission("email.send", json!({"to": "eve@evil.test"})),
        )
        .await
        .unwrap();
    let approval = h
        .gate
        .get_approval(&h.owner, call.approval_id.as_deref().unwrap())
        .await
        .unwrap();
    h.gate
        .decide(&h.approver, &approval.id, approve(&approval.binding_digest))
        .await
        .unwrap();
    h.gate.redeem(&h.agent, &call.id).await.unwrap();
    let report = h.gate.verify_audit(&h.owner).await.unwrap();
    assert!(report.ok, "{report:?}");
    let records = h.gate.audit_after(&h.owner, 0, 1000).await.unwrap();
    assert_eq!(report.records, records.len() as u64);
    let seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (1..=records.len() as u64).collect::<Vec<_>>());
    let kinds: Vec<&str> = records.iter().map(|r| r.kind.as_str()).collect();
    for kind in [
        "user.created",
        "policy.updated",
        "agent.created",
        "approval.requested",
        "approval.approved",
        "grant.consumed",
    ] {
        assert!(kinds.contains(&kind), "{kinds:?}");
    }
}

#[tokio::test]
async fn g9_an_asked_call_with_a_key_is_denied_and_the_key_is_stored_nowhere() {
    let h = Harness::new().await;
    let key = "AKIAZZQQ7EXAMPLEKEY9";
    let call = h
        .gate
        .submit_call(
            &h.agent,
            submission(
                "email.send",
                json!({"to": "eve@evil.test", "body": format!("the key is {key}")}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(call.status, CallStatus::Denied);
    assert_eq!(call.decided_by, DecidedBy::Secrets);
    assert!(call
        .reason
        .as_deref()
        .unwrap()
        .starts_with("cannot be approved exactly"));
    assert!(!call.arguments.to_string().contains(key));
    // An allowed call with a key is stored redacted too.
    h.gate
        .submit_call(
            &h.agent,
            submission("email.send", json!({"to": "a@acme.test", "body": key})),
        )
        .await
        .unwrap();
    let h = h.restart().await; // checkpoints nothing by itself; read every file anyway
    for entry in std::fs::read_dir(h.dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
            "key found in {}",
            path.display()
        );
    }
}

#[tokio::test]
async fn standing_rules_from_remember_allow_exactly_that_target() {
    let h = Harness::new().await;
    let call = h
        .gate
        .submit_call(
            &h.agent,
            submission("email.send", json!({"to": "eve@evil.test"})),
        )
        .await
        .unwrap();
    let approval = h
        .gate
        .get_approval(&h.owner, call.approval_id.as_deref().unwrap())
        .await
        .unwrap();
    let mut request = approve(&approval.binding_digest);
    request.remember = Some(Remember {
        scope: RuleScope::Agent,
        expires_in: None,
    });
    h.gate
        .decide(&h.approver, &approval.id, request)
        .await
        .unwrap();
    let again = h
        .gate
        .submit_call(
            &h.agent,
            submission("email.send", json!({"to": "eve@evil.test"})),
        )
        .await
        .unwrap();
    assert_eq!(again.status, CallStatus::Allowed);
    assert_eq!(again.decided_by, DecidedBy::StandingRule);
    let other = h
        .gate
        .submit_call(
            &h.agent,
            submission("email.send", json!({"to": "eva@evil.test"})),
        )
        .await
        .unwrap();
    assert_eq!(other.status, CallStatus::Pending);
    let records = h.gate.audit_after(&h.owner, 0, 1000).await.unwrap();
    let allowed = records
        .iter()
        .rev()
        .find(|r| r.kind == "call.allowed")
        .unwrap();
    assert!(
        allowed.data["standing_rule"]
            .as_str()
            .unwrap()
            .starts_with("rule_"),
        "{}",
        allowed.data
    );
    let rules = h.gate.list_rules(&h.owner).await.unwrap();
    assert_eq!(rules.len(), 1);
    h.gate.revoke_rule(&h.owner, &rules[0].id).await.unwrap();
    let after = h
        .gate
        .submit_call(
            &h.agent,
            submission("email.send", json!({"to": "eve@evil.test"})),
        )
        .await
        .unwrap();
    assert_eq!(after.status, CallStatus::Pending);
}

#[tokio::test]
async fn g4_a_call_evaluated_under_a_policy_replaced_meanwhile_is_evaluated_again() {
    let h = Harness::new().await;
    // A second gate on the same database, like a second node: its policy cache goes stale
    // when the first gate replaces the policy.
    let store = airlock_store::sqlite::SqliteStore::open(&h.dir.path().join("airlock.db"))
        .await
        .unwrap();
    let other = airlock_gate::Gate::new(std::sync::Arc::new(store), h.clock.clone())
        .await
        .unwrap();
    let agent = other
        .authenticate(&std::fs::read_to_string(h.dir.path().join("agent.token")).unwrap())
        .await
        .unwrap();
    h.gate
        .put_policy(&h.owner, "version = 1\ndefault = \"deny\"\n")
        .await
        .unwrap();
    let call = other
        .submit_call(
            &agent,
            submission("email.send", json!({"to": "eve@evil.test"})),
        )
        .await
        .unwrap();
    assert_eq!(call.status, CallStatus::Denied, "{call:?}");
    assert!(h
        .gate
        .list_approvals(&h.owner, Some(ApprovalStatus::Pending), 10, None)
        .await
        .unwrap()
        .is_empty());
}
