//! The two-person rule in the store (DESIGN.md §11.6): a decision on an approval that
//! needs several people is a vote, kept on the approval under the decision's lock; the
//! same person counts once; a rejection rejects; the vote that completes the count
//! approves, with the grant.

use super::fixtures::{effects, snapshot, t, world, Spec, World};
use super::harness::Ctx;
use airlock_protocol::{ApprovalStatus, CallStatus};
use airlock_store::{DecideError, Decision};

/// Records `spec` asked, needing `required` people.
async fn ask(ctx: &Ctx, world: &World, spec: &Spec, required: u32) {
    let mut asked = spec.asked();
    if let Some(approval) = asked.approval.as_mut() {
        approval.approvals_required = Some(required);
        approval.approvers = vec!["approver".into()];
    }
    ctx.store
        .record_call(
            &world.ws,
            asked.clone(),
            effects("approval.requested", &spec.approval_id(), spec.created_at),
        )
        .await
        .unwrap();
}

fn by(spec: &Spec, user: &str, approve: bool, at: i64) -> Decision {
    let decision = if approve {
        spec.approve(t(at))
    } else {
        spec.reject(t(at))
    };
    Decision {
        decided_by: format!("user:{user}"),
        vote: Some(effects("approval.voted", &spec.approval_id(), t(at))),
        ..decision
    }
}

async fn decide(
    ctx: &Ctx,
    world: &World,
    decision: &Decision,
) -> Result<airlock_store::Decided, DecideError> {
    ctx.store
        .decide(
            &world.ws,
            decision,
            &effects("approval.approved", &decision.approval_id, decision.at),
        )
        .await
}

pub async fn votes_count_each_person_once_and_the_last_one_approves(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let spec = world.spec("v");
    ask(&ctx, &world, &spec, 2).await;
    let asked = ctx
        .store
        .get_approval(&world.ws, "apr_v")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(asked.approvals_required, Some(2));
    assert_eq!(asked.approvers, ["approver"]);
    assert!(asked.votes.is_empty());

    let first = decide(&ctx, &world, &by(&spec, "usr_a", true, 10))
        .await
        .unwrap();
    assert_eq!(first.approval.status, ApprovalStatus::Pending);
    assert_eq!(first.approval.votes.len(), 1);
    assert_eq!(first.approval.votes[0].user, "user:usr_a");
    assert_eq!(first.approval.votes[0].decision, "approve");
    assert_eq!(first.approval.votes[0].at, t(10));
    assert_eq!(first.call.status, CallStatus::Pending);
    assert_eq!(first.grant, None);
    let rows = ctx.row_counts().await;
    assert_eq!(rows["grants"], 0);
    let audit = ctx.store.audit_after(&world.ws, 1, 10).await.unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].kind, "approval.voted");

    // The same person again, either way: refused, nothing written.
    let before = snapshot(&ctx, &world, &[&spec]).await;
    for approve in [true, false] {
        let again = decide(&ctx, &world, &by(&spec, "usr_a", approve, 11)).await;
        assert!(matches!(again, Err(DecideError::AlreadyVoted)), "{again:?}");
    }
    assert_eq!(snapshot(&ctx, &world, &[&spec]).await, before);

    let second = decide(&ctx, &world, &by(&spec, "usr_b", true, 12))
        .await
        .unwrap();
    assert_eq!(second.approval.status, ApprovalStatus::Approved);
    assert_eq!(second.approval.votes.len(), 2);
    assert_eq!(second.call.status, CallStatus::Approved);
    assert!(second.grant.is_some());
    let audit = ctx.store.audit_after(&world.ws, 1, 10).await.unwrap();
    let kinds: Vec<&str> = audit.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds, ["approval.voted", "approval.approved"]);
    let late = decide(&ctx, &world, &by(&spec, "usr_c", true, 13)).await;
    assert!(
        matches!(
            late,
            Err(DecideError::AlreadyDecided(ApprovalStatus::Approved))
        ),
        "{late:?}"
    );
}

pub async fn one_rejection_rejects_an_approval_that_needs_several(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let spec = world.spec("r");
    ask(&ctx, &world, &spec, 3).await;
    decide(&ctx, &world, &by(&spec, "usr_a", true, 10))
        .await
        .unwrap();
    let rejected = decide(&ctx, &world, &by(&spec, "usr_b", false, 11))
        .await
        .unwrap();
    assert_eq!(rejected.approval.status, ApprovalStatus::Rejected);
    assert_eq!(rejected.approval.votes.len(), 2);
    assert_eq!(rejected.approval.votes[1].decision, "reject");
    assert_eq!(rejected.call.status, CallStatus::Rejected);
    assert_eq!(ctx.row_counts().await["grants"], 0);
}
