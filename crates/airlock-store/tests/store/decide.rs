//! Deciding an approval: the happy paths, and every refusal writing nothing (G2, G3, G4);
//! closing one without a decision (`cancel_approval`), refused the same way.

use super::fixtures::{effects, policy, snapshot, t, world, Spec, World, POLICY_2};
use super::harness::Ctx;
use airlock_protocol::{Approval, ApprovalStatus, CallStatus, DecidedBy, RuleScope};
use airlock_store::{DecideError, Decision, Edit, Effects, RedeemError, RedeemRequest};
use serde_json::json;

/// Records `spec` as an asked call, with its request effects.
async fn ask(ctx: &Ctx, world: &World, spec: &Spec) {
    ctx.store
        .record_call(
            &world.ws,
            spec.asked(),
            effects("approval.requested", &spec.approval_id(), spec.created_at),
        )
        .await
        .unwrap();
}

/// Decides and asserts the refusal `expected` describes, and that nothing changed.
async fn assert_refused(
    ctx: &Ctx,
    world: &World,
    specs: &[&Spec],
    decision: &Decision,
    expected: impl Fn(&DecideError) -> bool,
) {
    let before = snapshot(ctx, world, specs).await;
    let outcome = ctx
        .store
        .decide(
            &world.ws,
            decision,
            &effects("approval.approved", &decision.approval_id, decision.at),
        )
        .await;
    match &outcome {
        Err(error) if expected(error) => {}
        other => panic!("unexpected outcome {other:?}"),
    }
    assert_eq!(
        snapshot(ctx, world, specs).await,
        before,
        "a refusal changed something"
    );
}

pub async fn approve_writes_approval_call_grant_audit_and_events(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let spec = world.spec("x");
    ask(&ctx, &world, &spec).await;
    let decided = ctx
        .store
        .decide(
            &world.ws,
            &spec.approve(t(10)),
            &effects("approval.approved", "apr_x", t(10)),
        )
        .await
        .unwrap();

    let approval = &decided.approval;
    assert_eq!(approval.status, ApprovalStatus::Approved);
    assert_eq!(approval.decided_at, Some(t(10)));
    assert_eq!(approval.decided_by.as_deref(), Some("user:usr_a"));
    assert_eq!(approval.decision_reason.as_deref(), Some("looks right"));
    // Nothing else about the approval changes.
    let mut expected: Approval = spec.asked().approval.unwrap();
    expected.status = ApprovalStatus::Approved;
    expected.decided_at = Some(t(10));
    expected.decided_by = Some("user:usr_a".into());
    expected.decision_reason = Some("looks right".into());
    assert_eq!(approval, &expected);

    let call = &decided.call;
    assert_eq!(call.status, CallStatus::Approved);
    assert_eq!(call.decided_by, DecidedBy::Human);
    assert_eq!(call.decided_at, Some(t(10)));
    assert_eq!(call.grant_id.as_deref(), Some("grt_x"));
    assert_eq!(call.reason.as_deref(), Some("asks a person"));
    assert_eq!(decided.grant, spec.approve(t(10)).grant);
    assert_eq!(decided.standing_rule, None);

    let store = ctx.store.as_ref();
    assert_eq!(
        store
            .get_approval(&world.ws, "apr_x")
            .await
            .unwrap()
            .as_ref(),
        Some(approval)
    );
    assert_eq!(
        store.get_call(&world.ws, "call_x").await.unwrap().as_ref(),
        Some(call)
    );
    let rows = ctx.row_counts().await;
    assert_eq!((rows["grants"], rows["audit"], rows["events"]), (1, 2, 2));
    let audit = store.audit_after(&world.ws, 1, 10).await.unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(
        (audit[0].kind.as_str(), audit[0].subject.as_str()),
        ("approval.approved", "apr_x")
    );
    let grant = store
        .redeem(&world.ws, "call_x", t(11), &Effects::none())
        .await
        .unwrap();
    assert_eq!(grant.consumed_at, Some(t(11)));
}

fn edit() -> Edit {
    Edit {
        arguments: json!({"to": "carol@acme.test", "body": "edited"}),
        binding_digest: "e".repeat(64),
    }
}

pub async fn an_edit_is_stored_with_the_grant_and_redeemed_as_the_arguments(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let spec = world.spec("x");
    ask(&ctx, &world, &spec).await;
    let asked = spec.asked().call.arguments;
    let decision = Decision {
        edit: Some(edit()),
        ..spec.approve(t(10))
    };
    let decided = ctx
        .store
        .decide(
            &world.ws,
            &decision,
            &effects("approval.approved", "apr_x", t(10)),
        )
        .await
        .unwrap();
    assert_eq!(decided.approval.edited_binding_digest, Some("e".repeat(64)));
    assert_eq!(decided.call.arguments, edit().arguments);
    assert_eq!(decided.call.original_arguments, Some(asked));
    let stored = ctx.store.get_call(&world.ws, "call_x").await.unwrap();
    assert_eq!(stored.as_ref(), Some(&decided.call));

    let request = RedeemRequest {
        at: t(11),
        key: Some("key-1"),
        outcome_due: None,
    };
    let first = ctx
        .store
        .redeem_keyed(&world.ws, "call_x", &request, &Effects::none())
        .await
        .unwrap();
    assert_eq!(first.arguments, Some(edit().arguments));
    assert!(!first.replayed);
    let replay = ctx
        .store
        .redeem_keyed(&world.ws, "call_x", &request, &Effects::none())
        .await
        .unwrap();
    assert_eq!(
        (replay.replayed, replay.arguments),
        (true, Some(edit().arguments))
    );
}

pub async fn a_refused_edit_writes_nothing(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let spec = world.spec("x");
    ask(&ctx, &world, &spec).await;
    // A wrong digest refuses the decision and its edit with it.
    let decision = Decision {
        edit: Some(edit()),
        binding_digest: "0".repeat(64),
        ..spec.approve(t(10))
    };
    assert_refused(&ctx, &world, &[&spec], &decision, |e| {
        matches!(e, DecideError::BindingMismatch)
    })
    .await;
    // An edit never comes with a rejection: one handed in is not stored.
    let decision = Decision {
        edit: Some(edit()),
        ..spec.reject(t(10))
    };
    let decided = ctx
        .store
        .decide(
            &world.ws,
            &decision,
            &effects("approval.rejected", "apr_x", t(10)),
        )
        .await
        .unwrap();
    assert_eq!(decided.approval.edited_binding_digest, None);
    assert_eq!(decided.call.original_arguments, None);
    assert_eq!(decided.call.arguments, spec.asked().call.arguments);
}

pub async fn reject_writes_no_grant_and_keeps_the_reason(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let spec = world.spec("x");
    ask(&ctx, &world, &spec).await;
    // Even a grant handed in with a rejection is not stored.
    let decision = Decision {
        grant: Some(spec.grant()),
        ..spec.reject(t(10))
    };
    let decided = ctx
        .store
        .decide(
            &world.ws,
            &decision,
            &effects("approval.rejected", "apr_x", t(10)),
        )
        .await
        .unwrap();
    assert_eq!(decided.approval.status, ApprovalStatus::Rejected);
    assert_eq!(
        decided.approval.decision_reason.as_deref(),
        Some("wrong recipient")
    );
    assert_eq!(decided.call.status, CallStatus::Rejected);
    assert_eq!(decided.call.decided_by, DecidedBy::Human);
    // The person's reason is what the caller reads on the call (G10).
    assert_eq!(decided.call.reason.as_deref(), Some("wrong recipient"));
    assert_eq!(decided.call.grant_id, None);
    assert_eq!(decided.grant, None);
    let rows = ctx.row_counts().await;
    assert_eq!((rows["grants"], rows["audit"], rows["events"]), (0, 2, 2));
    let redeemed = ctx
        .store
        .redeem(&world.ws, "call_x", t(11), &Effects::none())
        .await;
    assert!(
        matches!(redeemed, Err(RedeemError::NoGrant)),
        "{redeemed:?}"
    );
}

pub async fn unknown_approval_is_not_found_and_writes_nothing(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let spec = world.spec("x");
    ask(&ctx, &world, &spec).await;
    let mut decision = spec.approve(t(10));
    decision.approval_id = "apr_nope".into();
    assert_refused(&ctx, &world, &[&spec], &decision, |e| {
        matches!(e, DecideError::NotFound)
    })
    .await;
}

pub async fn second_decision_is_refused_and_writes_nothing(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let approved = world.spec("approved");
    let rejected = world.spec("rejected");
    ask(&ctx, &world, &approved).await;
    ask(&ctx, &world, &rejected).await;
    ctx.store
        .decide(
            &world.ws,
            &approved.approve(t(10)),
            &effects("approval.approved", "apr_approved", t(10)),
        )
        .await
        .unwrap();
    ctx.store
        .decide(
            &world.ws,
            &rejected.reject(t(10)),
            &effects("approval.rejected", "apr_rejected", t(10)),
        )
        .await
        .unwrap();
    let specs = [&approved, &rejected];
    let is =
        |status| move |e: &DecideError| matches!(e, DecideError::AlreadyDecided(s) if *s == status);
    for decision in [approved.approve(t(11)), approved.reject(t(11))] {
        assert_refused(
            &ctx,
            &world,
            &specs,
            &decision,
            is(ApprovalStatus::Approved),
        )
        .await;
    }
    for decision in [rejected.approve(t(11)), rejected.reject(t(11))] {
        assert_refused(
            &ctx,
            &world,
            &specs,
            &decision,
            is(ApprovalStatus::Rejected),
        )
        .await;
    }
}

pub async fn decision_at_or_after_deadline_is_expired(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let mut spec = world.spec("x");
    spec.deadline = t(100);
    ask(&ctx, &world, &spec).await;
    let expired = |e: &DecideError| matches!(e, DecideError::Expired);
    for at in [t(100), t(101), t(100_000)] {
        assert_refused(&ctx, &world, &[&spec], &spec.approve(at), expired).await;
        assert_refused(&ctx, &world, &[&spec], &spec.reject(at), expired).await;
    }
    // The refusal left it pending; a decision in time still wins.
    let decided = ctx
        .store
        .decide(&world.ws, &spec.approve(t(99)), &Effects::none())
        .await
        .unwrap();
    assert_eq!(decided.approval.status, ApprovalStatus::Approved);
}

pub async fn wrong_binding_digest_is_refused(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let spec = world.spec("x");
    ask(&ctx, &world, &spec).await;
    for wrong in ["", "bind_y", "BIND_X"] {
        let decision = Decision {
            binding_digest: wrong.into(),
            ..spec.approve(t(10))
        };
        assert_refused(&ctx, &world, &[&spec], &decision, |e| {
            matches!(e, DecideError::BindingMismatch)
        })
        .await;
    }
    ctx.store
        .decide(&world.ws, &spec.approve(t(10)), &Effects::none())
        .await
        .unwrap();
}

pub async fn decision_after_policy_cancellation_is_stale(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let spec = world.spec("x");
    ask(&ctx, &world, &spec).await;
    let on_cancel = |approval: &Approval| effects("approval.cancelled", &approval.id, t(5));
    let cancelled = ctx
        .store
        .put_policy(
            &world.ws,
            &policy(2, POLICY_2),
            &Effects::none(),
            "stale_policy",
            &on_cancel,
        )
        .await
        .unwrap();
    assert_eq!(cancelled.len(), 1);
    let stale = |e: &DecideError| matches!(e, DecideError::StalePolicy);
    assert_refused(&ctx, &world, &[&spec], &spec.approve(t(10)), stale).await;
    // Status comes before the binding digest: a wrong digest is still told "stale".
    let wrong = Decision {
        binding_digest: "bind_y".into(),
        ..spec.reject(t(10))
    };
    assert_refused(&ctx, &world, &[&spec], &wrong, stale).await;
}

/// The documented order: found, pending, deadline, binding digest, policy.
pub async fn refusals_are_checked_in_order(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let mut done = world.spec("done");
    done.deadline = t(50);
    ask(&ctx, &world, &done).await;
    ctx.store
        .decide(&world.ws, &done.reject(t(10)), &Effects::none())
        .await
        .unwrap();
    let mut pending = world.spec("pending");
    pending.deadline = t(50);
    ask(&ctx, &world, &pending).await;
    let specs = [&done, &pending];
    let wrong = |spec: &Spec, at| Decision {
        binding_digest: "bind_wrong".into(),
        ..spec.approve(at)
    };

    // Decided beats late and wrong.
    assert_refused(&ctx, &world, &specs, &wrong(&done, t(60)), |e| {
        matches!(e, DecideError::AlreadyDecided(ApprovalStatus::Rejected))
    })
    .await;
    // Late beats wrong digest.
    assert_refused(&ctx, &world, &specs, &wrong(&pending, t(60)), |e| {
        matches!(e, DecideError::Expired)
    })
    .await;
    assert_refused(&ctx, &world, &specs, &wrong(&pending, t(20)), |e| {
        matches!(e, DecideError::BindingMismatch)
    })
    .await;
    // Once the policy is replaced the approval is stale, whatever the decision says.
    let none = |_: &Approval| Effects::none();
    ctx.store
        .put_policy(
            &world.ws,
            &policy(2, POLICY_2),
            &Effects::none(),
            "stale",
            &none,
        )
        .await
        .unwrap();
    for decision in [
        pending.approve(t(20)),
        wrong(&pending, t(20)),
        pending.approve(t(60)),
    ] {
        assert_refused(&ctx, &world, &specs, &decision, |e| {
            matches!(e, DecideError::StalePolicy)
        })
        .await;
    }
}

pub async fn approve_and_remember_mints_or_reuses_a_rule(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let store = ctx.store.as_ref();
    let [first, second, third] = ["one", "two", "three"].map(|id| world.spec(id));
    for spec in [&first, &second, &third] {
        ask(&ctx, &world, spec).await;
    }
    let rule = |id: &str, at| super::rules::rule(id, RuleScope::Agent, &world.agent, at, None);
    let remember = |spec: &Spec, id: &str, at| Decision {
        standing_rule: Some(rule(id, at)),
        ..spec.approve(at)
    };

    let decided = store
        .decide(
            &world.ws,
            &remember(&first, "rule_1", t(10)),
            &Effects::none(),
        )
        .await
        .unwrap();
    assert_eq!(decided.standing_rule, Some((rule("rule_1", t(10)), true)));
    // An identical live rule is reused, not duplicated.
    let decided = store
        .decide(
            &world.ws,
            &remember(&second, "rule_2", t(11)),
            &Effects::none(),
        )
        .await
        .unwrap();
    assert_eq!(decided.standing_rule, Some((rule("rule_1", t(10)), false)));
    // A rejection never mints one.
    let rejected = Decision {
        standing_rule: Some(rule("rule_3", t(12))),
        ..third.reject(t(12))
    };
    let decided = store
        .decide(&world.ws, &rejected, &Effects::none())
        .await
        .unwrap();
    assert_eq!(decided.standing_rule, None);
    let ids: Vec<String> = store
        .list_standing_rules(&world.ws)
        .await
        .unwrap()
        .into_iter()
        .map(|rule| rule.id)
        .collect();
    assert_eq!(ids, ["rule_1"]);
}

pub async fn cancel_approval_closes_a_pending_approval_once(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let gone = world.spec("gone");
    let done = world.spec("done");
    ask(&ctx, &world, &gone).await;
    ask(&ctx, &world, &done).await;
    ctx.store
        .decide(&world.ws, &done.approve(t(2)), &Effects::none())
        .await
        .unwrap();
    let store = ctx.store.as_ref();
    let reason = "run cancelled by user:usr_a";

    let approval = store
        .cancel_approval(
            &world.ws,
            "apr_gone",
            t(5),
            reason,
            &effects("approval.cancelled", "apr_gone", t(5)),
        )
        .await
        .unwrap();
    let expected = Approval {
        status: ApprovalStatus::Cancelled,
        decided_at: Some(t(5)),
        decided_by: Some("system".into()),
        decision_reason: Some(reason.into()),
        ..gone.asked().approval.unwrap()
    };
    assert_eq!(approval, expected);
    assert_eq!(
        store.get_approval(&world.ws, "apr_gone").await.unwrap(),
        Some(expected)
    );
    let call = store
        .get_call(&world.ws, "call_gone")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            call.status,
            call.decided_by,
            call.decided_at,
            call.reason.as_deref()
        ),
        (
            CallStatus::Cancelled,
            DecidedBy::System,
            Some(t(5)),
            Some(reason)
        )
    );
    let audit = store.audit_after(&world.ws, 0, 100).await.unwrap();
    assert_eq!(
        audit.last().map(|record| record.kind.as_str()),
        Some("approval.cancelled")
    );
    let events = store.events_after(&world.ws, 0, 100).await.unwrap();
    assert_eq!(
        events.last().map(|event| event.kind.as_str()),
        Some("approval.cancelled")
    );

    // Refused like a decision, writing nothing.
    let before = snapshot(&ctx, &world, &[&gone, &done]).await;
    for (workspace, approval_id) in [
        (&world.ws, "apr_gone"),
        (&world.ws, "apr_done"),
        (&world.ws, "apr_nope"),
        (&world.other, "apr_gone"),
    ] {
        let outcome = store
            .cancel_approval(
                workspace,
                approval_id,
                t(6),
                reason,
                &effects("approval.cancelled", approval_id, t(6)),
            )
            .await;
        let refused = match approval_id {
            "apr_gone" if workspace == &world.ws => matches!(
                outcome,
                Err(DecideError::AlreadyDecided(ApprovalStatus::Cancelled))
            ),
            "apr_done" => matches!(
                outcome,
                Err(DecideError::AlreadyDecided(ApprovalStatus::Approved))
            ),
            _ => matches!(outcome, Err(DecideError::NotFound)),
        };
        assert!(refused, "{workspace}/{approval_id}: {outcome:?}");
    }
    assert_eq!(snapshot(&ctx, &world, &[&gone, &done]).await, before);

    // Nobody decides it afterwards, and its call never gets a grant.
    assert_refused(&ctx, &world, &[&gone, &done], &gone.approve(t(7)), |e| {
        matches!(e, DecideError::AlreadyDecided(ApprovalStatus::Cancelled))
    })
    .await;
    let redeemed = store
        .redeem(&world.ws, "call_gone", t(8), &Effects::none())
        .await;
    assert!(
        matches!(redeemed, Err(RedeemError::NoGrant)),
        "{redeemed:?}"
    );
}
