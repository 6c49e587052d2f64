//! Notifications of pending approvals: enqueued once per approval and channel, claimed by
//! one node per attempt, every attempt kept; signed links used once; the link-signing
//! secret generated once.

use super::fixtures::{effects, t, token_hash, world, World};
use super::harness::Ctx;
use airlock_protocol::{Approval, ApprovalStatus};
use airlock_store::{
    LinkError, LinkUse, NewNotification, NotificationAttempt, NotificationOutcome,
    NotificationStatus, Store, Subject, WebSession,
};

fn channels() -> Vec<String> {
    vec!["webhooks[0]".to_owned(), "email:alice@acme.test".to_owned()]
}

fn new_notification(id: &str, approval: &str, channel: &str, at: i64) -> NewNotification {
    NewNotification {
        id: id.into(),
        approval_id: approval.into(),
        channel: channel.into(),
        status: NotificationStatus::Pending,
        note: None,
        created_at: t(at),
    }
}

async fn record_asked(store: &dyn Store, world: &World, id: &str, at: i64) -> Approval {
    let mut spec = world.spec(id);
    spec.created_at = t(at);
    spec.deadline = t(at + 3600);
    let asked = spec.asked();
    store
        .record_call(&world.ws, asked.clone(), effects("call.asked", id, t(at)))
        .await
        .unwrap();
    asked.approval.unwrap()
}

async fn ids_to_notify(store: &dyn Store, since: i64) -> Vec<(String, String)> {
    store
        .approvals_to_notify(&channels(), t(since), 100)
        .await
        .unwrap()
        .into_iter()
        .map(|(workspace, approval)| (workspace, approval.id))
        .collect()
}

pub async fn notifications_are_enqueued_once_per_approval_and_channel(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let old = record_asked(store, &world, "old", 5).await;
    let first = record_asked(store, &world, "one", 10).await;
    let second = record_asked(store, &world, "two", 20).await;

    // Pending approvals created since `since`, newest first, that lack a channel.
    assert_eq!(
        ids_to_notify(store, 10).await,
        vec![
            (world.ws.clone(), second.id.clone()),
            (world.ws.clone(), first.id.clone())
        ]
    );
    assert!(store
        .approvals_to_notify(&[], t(0), 100)
        .await
        .unwrap()
        .is_empty());

    // One channel done: still listed for the other one.
    let inserted = store
        .enqueue_notifications(
            &world.ws,
            &[new_notification("ntf_1", &first.id, "webhooks[0]", 30)],
        )
        .await
        .unwrap();
    assert_eq!(inserted, 1);
    assert_eq!(ids_to_notify(store, 10).await.len(), 2);

    // Both channels: gone from the list. Enqueueing again (another node, a restart)
    // inserts nothing and keeps the first row.
    let skipped = NewNotification {
        status: NotificationStatus::Skipped,
        note: Some("risk external is below the filter".into()),
        ..new_notification("ntf_2", &first.id, "email:alice@acme.test", 30)
    };
    let again = [
        new_notification("ntf_3", &first.id, "webhooks[0]", 31),
        skipped.clone(),
    ];
    assert_eq!(
        store
            .enqueue_notifications(&world.ws, &again)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .enqueue_notifications(&world.ws, &again)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        ids_to_notify(store, 10).await,
        vec![(world.ws.clone(), second.id.clone())]
    );
    let listed = store
        .approval_notifications(&world.ws, &first.id)
        .await
        .unwrap();
    let shape: Vec<_> = listed
        .iter()
        .map(|(n, attempts)| {
            (
                n.id.as_str(),
                n.channel.as_str(),
                n.status,
                n.last_error.clone(),
                attempts.len(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            (
                "ntf_2",
                "email:alice@acme.test",
                NotificationStatus::Skipped,
                skipped.note.clone(),
                0
            ),
            ("ntf_1", "webhooks[0]", NotificationStatus::Pending, None, 0),
        ]
    );
    // A skipped notification is never due; the pending one is due from its creation.
    let due: Vec<_> = store
        .notifications_due(t(30), 10)
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.id)
        .collect();
    assert_eq!(due, vec!["ntf_1".to_owned()]);
    assert!(store.notifications_due(t(29), 10).await.unwrap().is_empty());

    // Another workspace's approval, or an unknown one, is not enqueued under this one.
    assert_eq!(
        store
            .enqueue_notifications(
                &world.other,
                &[new_notification("ntf_x", &second.id, "webhooks[0]", 30)]
            )
            .await
            .unwrap(),
        0
    );
    assert!(store
        .approval_notifications(&world.other, &second.id)
        .await
        .unwrap()
        .is_empty());

    // An approval that stopped pending is no longer listed.
    let decided = world.spec("two").approve(t(40));
    store
        .decide(
            &world.ws,
            &decided,
            &effects("approval.decided", "two", t(40)),
        )
        .await
        .unwrap();
    assert!(ids_to_notify(store, 10).await.is_empty());
    assert_eq!(
        ids_to_notify(store, 0).await,
        vec![(world.ws.clone(), old.id.clone())]
    );
    assert_eq!(
        store
            .get_approval(&world.ws, &second.id)
            .await
            .unwrap()
            .unwrap()
            .status,
        ApprovalStatus::Approved
    );
}

pub async fn notifications_are_claimed_once_and_every_attempt_is_recorded(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let approval = record_asked(store, &world, "one", 10).await;
    store
        .enqueue_notifications(
            &world.ws,
            &[new_notification("ntf_1", &approval.id, "webhooks[0]", 10)],
        )
        .await
        .unwrap();

    // Six nodes race for the first attempt: one wins, and until its claim runs out the
    // notification is neither due nor claimable.
    let claims =
        futures::future::join_all((0..6).map(|_| store.claim_notification("ntf_1", t(11), t(71))))
            .await;
    let won = claims.iter().filter(|c| *c.as_ref().unwrap()).count();
    assert_eq!(won, 1, "{claims:?}");
    assert!(store.notifications_due(t(70), 10).await.unwrap().is_empty());
    assert!(!store
        .claim_notification("ntf_1", t(70), t(130))
        .await
        .unwrap());

    // The receiver answered 500: recorded, retried at t(13).
    let failed = NotificationAttempt {
        at: t(12),
        status_code: Some(500),
        error: Some("HTTP 500".into()),
    };
    store
        .record_notification("ntf_1", Some(&failed), &NotificationOutcome::RetryAt(t(13)))
        .await
        .unwrap();
    let due = store.notifications_due(t(13), 10).await.unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].attempts, 1);
    assert_eq!(due[0].last_error.as_deref(), Some("HTTP 500"));
    assert!(store
        .claim_notification("ntf_1", t(13), t(73))
        .await
        .unwrap());
    let delivered = NotificationAttempt {
        at: t(14),
        status_code: Some(200),
        error: None,
    };
    store
        .record_notification("ntf_1", Some(&delivered), &NotificationOutcome::Delivered)
        .await
        .unwrap();

    // Delivered is final: later records and claims change nothing.
    store
        .record_notification("ntf_1", Some(&failed), &NotificationOutcome::GaveUp)
        .await
        .unwrap();
    assert!(!store
        .claim_notification("ntf_1", t(1000), t(2000))
        .await
        .unwrap());
    assert!(store
        .notifications_due(t(1000), 10)
        .await
        .unwrap()
        .is_empty());
    let listed = store
        .approval_notifications(&world.ws, &approval.id)
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    let (notification, attempts) = &listed[0];
    assert_eq!(notification.status, NotificationStatus::Delivered);
    assert_eq!(notification.attempts, 2);
    assert_eq!(notification.delivered_at, Some(t(14)));
    assert_eq!(notification.last_error, None);
    assert_eq!(attempts, &vec![failed.clone(), delivered]);

    // Given up after failing, or skipped without an attempt.
    let other = record_asked(store, &world, "two", 20).await;
    store
        .enqueue_notifications(
            &world.ws,
            &[
                new_notification("ntf_2", &other.id, "webhooks[0]", 20),
                new_notification("ntf_3", &other.id, "email:alice@acme.test", 20),
            ],
        )
        .await
        .unwrap();
    store
        .record_notification("ntf_2", Some(&failed), &NotificationOutcome::GaveUp)
        .await
        .unwrap();
    store
        .record_notification(
            "ntf_3",
            None,
            &NotificationOutcome::Skipped("the approval is already approved".into()),
        )
        .await
        .unwrap();
    let listed = store
        .approval_notifications(&world.ws, &other.id)
        .await
        .unwrap();
    let shape: Vec<_> = listed
        .iter()
        .map(|(n, a)| (n.id.as_str(), n.status, n.attempts, a.len()))
        .collect();
    assert_eq!(
        shape,
        vec![
            ("ntf_3", NotificationStatus::Skipped, 0, 0),
            ("ntf_2", NotificationStatus::GaveUp, 1, 1),
        ]
    );
    assert!(store
        .notifications_due(t(5000), 10)
        .await
        .unwrap()
        .is_empty());
}

fn link(nonce: &str, user: &str, at: i64) -> LinkUse {
    LinkUse {
        nonce: nonce.into(),
        approval_id: "apr_one".into(),
        user_id: user.into(),
        used_at: t(at),
        expires_at: t(at + 600),
    }
}

fn link_session(id: &str, at: i64) -> WebSession {
    WebSession {
        id: format!("web_{id}"),
        cookie_hash: token_hash(&format!("cookie_{id}")),
        // Chosen by the store.
        token_hash: String::new(),
        created_at: t(at),
        expires_at: t(at + 3600),
    }
}

pub async fn signed_links_sign_in_once_as_their_user(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    // The links below are for `apr_one`, pending.
    record_asked(store, &world, "one", 50).await;
    let session = link_session("one", 100);
    let opened = store
        .use_link(
            &world.ws,
            &link("nonce_1", &world.user, 100),
            &session,
            &effects("web_session.created", "web_one", t(100)),
        )
        .await
        .unwrap();
    assert_eq!(opened.token_hash, token_hash("tok_usr_a"));
    let (found, principal) = store
        .web_session(&session.cookie_hash, t(101))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found, opened);
    assert!(matches!(principal.subject, Subject::User { ref id, .. } if *id == world.user));
    assert_eq!(principal.workspace, world.ws);

    // The second use is refused and writes nothing: no session, no audit record.
    let before = ctx.row_counts().await;
    let again = store
        .use_link(
            &world.ws,
            &link("nonce_1", &world.user, 101),
            &link_session("two", 101),
            &effects("web_session.created", "web_two", t(101)),
        )
        .await;
    assert!(matches!(again, Err(LinkError::AlreadyUsed)), "{again:?}");
    assert_eq!(ctx.row_counts().await, before);
    assert_eq!(
        store
            .web_session(&link_session("two", 101).cookie_hash, t(102))
            .await
            .unwrap(),
        None
    );

    // A user of another workspace, an unknown one, or one whose tokens are all revoked
    // cannot be signed in, and the link stays unused.
    for user in ["usr_nobody", "agt_a"] {
        let refused = store
            .use_link(
                &world.ws,
                &link("nonce_2", user, 102),
                &link_session("three", 102),
                &effects("web_session.created", "web_three", t(102)),
            )
            .await;
        assert!(
            matches!(refused, Err(LinkError::UnknownUser)),
            "{refused:?}"
        );
    }
    // Another workspace has no such approval.
    assert!(matches!(
        store
            .use_link(
                &world.other,
                &link("nonce_2", &world.user, 102),
                &link_session("three", 102),
                &effects("web_session.created", "web_three", t(102)),
            )
            .await,
        Err(LinkError::NoApproval)
    ));
    assert_eq!(ctx.row_counts().await, before);
    ctx.revoke_token(&token_hash("tok_usr_a"), t(103)).await;
    assert!(matches!(
        store
            .use_link(
                &world.ws,
                &link("nonce_2", &world.user, 104),
                &link_session("three", 104),
                &effects("web_session.created", "web_three", t(104)),
            )
            .await,
        Err(LinkError::UnknownUser)
    ));
    // The revoked token also ended the session the link opened.
    assert_eq!(
        store
            .web_session(&session.cookie_hash, t(104))
            .await
            .unwrap(),
        None
    );
}

pub async fn the_server_secret_is_generated_once(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let first = store.server_secret("link_key", "aaaa", t(0)).await.unwrap();
    assert_eq!(first, "aaaa");
    let racing = futures::future::join_all(
        ["bbbb", "cccc", "dddd"].map(|candidate| store.server_secret("link_key", candidate, t(1))),
    )
    .await;
    for secret in racing {
        assert_eq!(secret.unwrap(), "aaaa");
    }
    assert_eq!(
        store
            .server_secret("other_key", "eeee", t(2))
            .await
            .unwrap(),
        "eeee"
    );
    let ctx = ctx.restart().await;
    assert_eq!(
        ctx.store
            .server_secret("link_key", "ffff", t(3))
            .await
            .unwrap(),
        "aaaa"
    );
}

pub async fn a_link_signs_nobody_in_once_its_approval_is_decided_or_if_it_has_none(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    record_asked(store, &world, "one", 50).await;
    store
        .decide(
            &world.ws,
            &world.spec("one").reject(t(60)),
            &effects("approval.rejected", "apr_one", t(60)),
        )
        .await
        .unwrap();
    let before = ctx.row_counts().await;
    let decided = store
        .use_link(
            &world.ws,
            &link("nonce_1", &world.user, 100),
            &link_session("one", 100),
            &effects("web_session.created", "web_one", t(100)),
        )
        .await;
    assert!(
        matches!(decided, Err(LinkError::NotPending(ref status)) if status == "rejected"),
        "{decided:?}"
    );
    // A link for an approval that was never there (forged with a leaked key, say).
    let mut forged = link("nonce_2", &world.user, 100);
    forged.approval_id = "apr_forged".into();
    let refused = store
        .use_link(
            &world.ws,
            &forged,
            &link_session("two", 100),
            &effects("web_session.created", "web_two", t(100)),
        )
        .await;
    assert!(matches!(refused, Err(LinkError::NoApproval)), "{refused:?}");
    // Neither wrote anything: no session, no nonce, no audit record.
    assert_eq!(ctx.row_counts().await, before);
    assert_eq!(
        store
            .web_session(&link_session("one", 100).cookie_hash, t(101))
            .await
            .unwrap(),
        None
    );
}
