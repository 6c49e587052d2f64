//! Standing rules: deduplicated minting, revocation, and which rules are live.

use super::fixtures::{effects, t, world};
use super::harness::Ctx;
use airlock_protocol::{RuleScope, StandingRule};
use jiff::Timestamp;

/// A rule for `email.send` to `bob@acme.test` in one scope.
pub fn rule(
    id: &str,
    scope: RuleScope,
    scope_id: &str,
    created_at: Timestamp,
    expires_at: Option<Timestamp>,
) -> StandingRule {
    StandingRule {
        id: id.into(),
        tool: "email.send".into(),
        target: "bob@acme.test".into(),
        scope,
        scope_id: scope_id.into(),
        created_by: "user:usr_a".into(),
        created_at,
        expires_at,
        revoked_at: None,
    }
}

pub async fn standing_rules_dedupe_and_revoke(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let ws = world.ws.as_str();
    let first = rule(
        "rule_1",
        RuleScope::Session,
        &world.session,
        t(1),
        Some(t(100)),
    );
    let created = store
        .create_standing_rule(ws, &first, &effects("rule.created", "rule_1", t(1)))
        .await
        .unwrap();
    assert_eq!(created, (first.clone(), true));

    // Identical (tool, target, scope, scope id) and live: the existing one, nothing written.
    let before = ctx.row_counts().await;
    let duplicate = rule("rule_2", RuleScope::Session, &world.session, t(2), None);
    let reused = store
        .create_standing_rule(ws, &duplicate, &effects("rule.created", "rule_2", t(2)))
        .await
        .unwrap();
    assert_eq!(reused, (first.clone(), false));
    assert_eq!(ctx.row_counts().await, before);

    // Any difference makes a new rule.
    let mut other_target = rule("rule_3", RuleScope::Session, &world.session, t(3), None);
    other_target.target = "carol@acme.test".into();
    let other_scope = rule("rule_4", RuleScope::Agent, &world.agent, t(4), None);
    for new in [&other_target, &other_scope] {
        let (stored, created) = store
            .create_standing_rule(ws, new, &effects("rule.created", &new.id, new.created_at))
            .await
            .unwrap();
        assert_eq!((&stored, created), (new, true));
    }
    // Once the first one has expired, an identical one is minted anew.
    let after_expiry = rule("rule_5", RuleScope::Session, &world.session, t(100), None);
    let (_, created) = store
        .create_standing_rule(
            ws,
            &after_expiry,
            &effects("rule.created", "rule_5", t(100)),
        )
        .await
        .unwrap();
    assert!(created);

    let revoked = store
        .revoke_standing_rule(
            ws,
            "rule_4",
            t(110),
            &effects("rule.revoked", "rule_4", t(110)),
        )
        .await
        .unwrap();
    assert_eq!(
        revoked,
        Some(StandingRule {
            revoked_at: Some(t(110)),
            ..other_scope.clone()
        })
    );
    // Revoking twice, or an unknown rule, is `None` and writes nothing.
    let before = ctx.row_counts().await;
    for id in ["rule_4", "rule_nope"] {
        let again = store
            .revoke_standing_rule(ws, id, t(111), &effects("rule.revoked", id, t(111)))
            .await
            .unwrap();
        assert_eq!(again, None);
    }
    assert_eq!(ctx.row_counts().await, before);
    // A revoked rule is not reused.
    let after_revoke = rule("rule_6", RuleScope::Agent, &world.agent, t(112), None);
    let (_, created) = store
        .create_standing_rule(
            ws,
            &after_revoke,
            &effects("rule.created", "rule_6", t(112)),
        )
        .await
        .unwrap();
    assert!(created);

    // Every rule, newest first, revoked and expired included.
    let ids: Vec<String> = store
        .list_standing_rules(ws)
        .await
        .unwrap()
        .into_iter()
        .map(|rule| rule.id)
        .collect();
    assert_eq!(ids, ["rule_6", "rule_5", "rule_4", "rule_3", "rule_1"]);
    let kinds: Vec<String> = store
        .audit_after(ws, 0, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|record| format!("{} {}", record.kind, record.subject))
        .collect();
    assert_eq!(
        kinds,
        [
            "rule.created rule_1",
            "rule.created rule_3",
            "rule.created rule_4",
            "rule.created rule_5",
            "rule.revoked rule_4",
            "rule.created rule_6",
        ]
    );
}

pub async fn live_rules_filter_by_scope_expiry_and_revocation(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let ws = world.ws.as_str();
    let mut rules = [
        rule("in_session", RuleScope::Session, "ses_a", t(1), None),
        rule("in_agent", RuleScope::Agent, "agt_a", t(2), Some(t(50))),
        rule("other_session", RuleScope::Session, "ses_b", t(3), None),
        rule("task", RuleScope::Task, "ses_a", t(4), None),
        rule("expired", RuleScope::Agent, "agt_a", t(5), Some(t(20))),
        rule("revoked", RuleScope::Session, "ses_a", t(6), None),
    ];
    // Distinct targets, so that none is deduplicated into another.
    for (n, rule) in rules.iter_mut().enumerate() {
        rule.target = format!("target-{n}");
        store
            .create_standing_rule(
                ws,
                rule,
                &effects("rule.created", &rule.id, rule.created_at),
            )
            .await
            .unwrap();
    }
    store
        .revoke_standing_rule(
            ws,
            "revoked",
            t(7),
            &effects("rule.revoked", "revoked", t(7)),
        )
        .await
        .unwrap();

    let scopes = [
        (RuleScope::Session, "ses_a".to_owned()),
        (RuleScope::Agent, "agt_a".to_owned()),
    ];
    let scopes = &scopes;
    let live = |now| async move {
        let mut ids: Vec<String> = store
            .live_standing_rules("ws_a", scopes, now)
            .await
            .unwrap()
            .into_iter()
            .map(|rule| rule.id)
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(live(t(10)).await, ["expired", "in_agent", "in_session"]);
    // Expiry is exclusive: a rule expiring at `now` is no longer live.
    assert_eq!(live(t(20)).await, ["in_agent", "in_session"]);
    assert_eq!(live(t(60)).await, ["in_session"]);
    assert!(store
        .live_standing_rules(ws, &[], t(10))
        .await
        .unwrap()
        .is_empty());
    let task_scope = [(RuleScope::Task, "ses_a".to_owned())];
    let ids: Vec<String> = store
        .live_standing_rules(ws, &task_scope, t(10))
        .await
        .unwrap()
        .into_iter()
        .map(|rule| rule.id)
        .collect();
    assert_eq!(ids, ["task"]);
    // The rules come back whole.
    let live_session = store
        .live_standing_rules(ws, &[(RuleScope::Session, "ses_b".to_owned())], t(10))
        .await
        .unwrap();
    assert_eq!(live_session, vec![rules[2].clone()]);
}

/// A rule that lasts to the end of representable time is written and read back, so one
/// such row never makes every read of the table fail (audit C, H1: `Timestamp::MAX` was
/// stored as a millisecond that could not be read back, and every call answered 503).
pub async fn an_expiry_at_the_end_of_time_reads_back(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let ws = world.ws.as_str();
    let forever = rule(
        "rule_far",
        RuleScope::Agent,
        &world.agent,
        t(1),
        Some(Timestamp::MAX),
    );
    let (_, created) = store
        .create_standing_rule(ws, &forever, &effects("rule.created", "rule_far", t(1)))
        .await
        .unwrap();
    assert!(created);
    // Clamped to the last whole second the store reads back: earlier, never later.
    let latest = "9999-12-30T22:00:00Z";
    let listed = store.list_standing_rules(ws).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].expires_at.unwrap().to_string(), latest);
    let live = store
        .live_standing_rules(ws, &[(RuleScope::Agent, world.agent.clone())], t(2))
        .await
        .unwrap();
    assert_eq!(
        live.iter().map(|rule| rule.id.as_str()).collect::<Vec<_>>(),
        ["rule_far"]
    );
    let ctx = ctx.restart().await;
    assert_eq!(ctx.store.list_standing_rules(ws).await.unwrap(), listed);
}
