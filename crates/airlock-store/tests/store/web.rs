//! Web sessions (the browser inbox): found by the hash of their cookie only, acting as the
//! user whose token opened them while that token lives and the session has not expired,
//! kept across a restart, ended once.

use super::fixtures::{effects, t, token_hash, world, World};
use super::harness::Ctx;
use airlock_protocol::Role;
use airlock_store::{Effects, Principal, Store, Subject, WebSession};

/// A session of `world`'s approver, opened at `at` seconds for `lifetime` seconds.
fn session(id: &str, token: &str, at: i64, lifetime: i64) -> WebSession {
    WebSession {
        id: format!("web_{id}"),
        cookie_hash: token_hash(&format!("cookie_{id}")),
        token_hash: token_hash(token),
        created_at: t(at),
        expires_at: t(at + lifetime),
    }
}

fn approver(world: &World) -> Principal {
    Principal {
        workspace: world.ws.clone(),
        subject: Subject::User {
            id: world.user.clone(),
            name: format!("{}-name", world.user),
            role: Role::Approver,
        },
    }
}

async fn open(store: &dyn Store, world: &World, session: &WebSession) {
    store
        .create_web_session(
            &world.ws,
            session,
            &effects("web_session.created", &session.id, session.created_at),
        )
        .await
        .unwrap();
}

pub async fn web_sessions_resolve_by_cookie_hash_until_they_expire(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let first = session("one", "tok_usr_a", 10, 3600);
    open(store, &world, &first).await;

    let found = store.web_session(&first.cookie_hash, t(11)).await.unwrap();
    assert_eq!(found, Some((first.clone(), approver(&world))));
    // Only the hash is a key: not the cookie, not the token's hash, not the id.
    for wrong in [
        "cookie_one",
        &token_hash("tok_usr_a"),
        "web_one",
        "",
        &token_hash("cookie_two"),
    ] {
        assert_eq!(
            store.web_session(wrong, t(11)).await.unwrap(),
            None,
            "{wrong}"
        );
    }
    // Live until just before its expiry, gone from it on.
    assert!(store
        .web_session(&first.cookie_hash, t(3609))
        .await
        .unwrap()
        .is_some());
    assert_eq!(
        store
            .web_session(&first.cookie_hash, t(3610))
            .await
            .unwrap(),
        None
    );
    // The effects were appended with it.
    let audit = store.audit_after(&world.ws, 0, 10).await.unwrap();
    let kinds: Vec<&str> = audit.iter().map(|record| record.kind.as_str()).collect();
    assert_eq!(kinds, ["web_session.created"]);
    // A cookie hash is unique: a second session with it is refused.
    let mut again = session("again", "tok_usr_a", 12, 60);
    again.cookie_hash = first.cookie_hash.clone();
    assert!(store
        .create_web_session(&world.ws, &again, &Effects::none())
        .await
        .is_err());
}

pub async fn web_sessions_act_only_as_a_live_user_token(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    // An agent's token never resolves to a web session, whatever is stored.
    let agent = session("agent", "tok_agt_a", 10, 3600);
    open(store, &world, &agent).await;
    assert_eq!(
        store.web_session(&agent.cookie_hash, t(11)).await.unwrap(),
        None
    );
    // Revoking the token signs its browser out.
    let person = session("person", "tok_usr_a", 10, 3600);
    open(store, &world, &person).await;
    assert!(store
        .web_session(&person.cookie_hash, t(11))
        .await
        .unwrap()
        .is_some());
    ctx.revoke_token(&token_hash("tok_usr_a"), t(20)).await;
    assert_eq!(
        store.web_session(&person.cookie_hash, t(21)).await.unwrap(),
        None
    );
}

pub async fn web_sessions_survive_a_restart_and_end_once(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let kept = session("kept", "tok_usr_a", 10, 3600);
    open(ctx.store.as_ref(), &world, &kept).await;

    let ctx = ctx.restart().await;
    let store = ctx.store.as_ref();
    assert_eq!(
        store.web_session(&kept.cookie_hash, t(11)).await.unwrap(),
        Some((kept.clone(), approver(&world)))
    );
    // Another workspace cannot end it.
    assert!(!store
        .delete_web_session(
            &world.other,
            &kept.cookie_hash,
            &effects("web_session.ended", &kept.id, t(12))
        )
        .await
        .unwrap());
    assert!(store
        .delete_web_session(
            &world.ws,
            &kept.cookie_hash,
            &effects("web_session.ended", &kept.id, t(12))
        )
        .await
        .unwrap());
    assert_eq!(
        store.web_session(&kept.cookie_hash, t(13)).await.unwrap(),
        None
    );
    // Ending it again finds nothing and appends nothing.
    assert!(!store
        .delete_web_session(
            &world.ws,
            &kept.cookie_hash,
            &effects("web_session.ended", &kept.id, t(14))
        )
        .await
        .unwrap());
    let audit = store.audit_after(&world.ws, 0, 10).await.unwrap();
    let kinds: Vec<&str> = audit.iter().map(|record| record.kind.as_str()).collect();
    assert_eq!(kinds, ["web_session.created", "web_session.ended"]);
    assert!(store
        .audit_after(&world.other, 0, 10)
        .await
        .unwrap()
        .is_empty());
}

pub async fn opening_a_web_session_clears_the_expired_ones(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let old = session("old", "tok_usr_a", 10, 60);
    open(store, &world, &old).await;
    // A later sign-in removes the expired session's row: deleting it finds nothing.
    open(store, &world, &session("new", "tok_usr_a", 100, 60)).await;
    assert!(!store
        .delete_web_session(&world.ws, &old.cookie_hash, &Effects::none())
        .await
        .unwrap());
}

pub async fn policy_versions_list_newest_first_in_their_workspace_only(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    store
        .put_policy(
            &world.ws,
            &super::fixtures::policy(2, super::fixtures::POLICY_2),
            &Effects::none(),
            "stale",
            &|_| Effects::none(),
        )
        .await
        .unwrap();
    let versions = store.policy_versions(&world.ws, 10).await.unwrap();
    let listed: Vec<(u64, &str)> = versions
        .iter()
        .map(|policy| (policy.version, policy.digest.as_str()))
        .collect();
    assert_eq!(
        listed,
        [
            (2, super::fixtures::POLICY_2),
            (1, super::fixtures::POLICY_1)
        ]
    );
    let newest = store.policy_versions(&world.ws, 1).await.unwrap();
    assert_eq!(newest.len(), 1);
    assert_eq!(newest[0].version, 2);
    let other = store.policy_versions(&world.other, 10).await.unwrap();
    assert_eq!(other.len(), 1, "the other workspace has its own history");
    assert!(store
        .policy_versions("ws_nobody", 10)
        .await
        .unwrap()
        .is_empty());
}
