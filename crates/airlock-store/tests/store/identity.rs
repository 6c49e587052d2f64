//! Workspaces, users, agents, tokens and sessions, and workspace isolation (G6).

use super::fixtures::{agent, effects, t, token_hash, user, world, World};
use super::harness::Ctx;
use airlock_protocol::{LlmConfig, McpServerConfig, Mode, Role, RuleScope, Session};
use airlock_store::{
    ApprovalFilter, DecideError, Effects, Principal, RedeemError, StoreError, Subject, Workspace,
};

pub async fn workspaces_are_found_by_unique_name(ctx: Ctx) {
    let store = ctx.store.as_ref();
    assert_eq!(store.workspace_by_name("alpha").await.unwrap(), None);
    let alpha = Workspace {
        id: "ws_a".into(),
        name: "alpha".into(),
        created_at: t(7),
    };
    store.create_workspace(&alpha).await.unwrap();
    assert_eq!(store.workspace_by_name("alpha").await.unwrap(), Some(alpha));
    let duplicate = Workspace {
        id: "ws_other".into(),
        name: "alpha".into(),
        created_at: t(8),
    };
    let error = store.create_workspace(&duplicate).await.unwrap_err();
    assert!(matches!(error, StoreError::Conflict(_)), "{error:?}");
    assert_eq!(ctx.row_counts().await["workspaces"], 1);
}

pub async fn user_tokens_resolve_only_by_hash(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let admin = user("usr_admin", Role::Admin);
    store
        .create_user(
            &world.ws,
            &admin,
            &token_hash("tok_admin"),
            &effects("user.created", "usr_admin", t(1)),
        )
        .await
        .unwrap();
    let principal = store
        .principal_for_token(&token_hash("tok_admin"))
        .await
        .unwrap();
    assert_eq!(
        principal,
        Some(Principal {
            workspace: world.ws.clone(),
            subject: Subject::User {
                id: "usr_admin".into(),
                name: "usr_admin-name".into(),
                role: Role::Admin,
            },
        })
    );
    // The token itself is not a key; neither is anything else that is not the hash.
    for wrong in ["tok_admin", "", &token_hash("tok_nobody"), "usr_admin"] {
        assert_eq!(
            store.principal_for_token(wrong).await.unwrap(),
            None,
            "{wrong}"
        );
    }
    let users = store.list_users(&world.ws).await.unwrap();
    let ids: Vec<&str> = users.iter().map(|user| user.id.as_str()).collect();
    assert_eq!(ids, ["usr_a", "usr_admin"]);
    assert!(users.contains(&admin));
    // The user's effects were appended with it.
    let audit = store.audit_after(&world.ws, 0, 10).await.unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].kind, "user.created");
    // A duplicate token hash is refused, and the user that came with it is not created.
    let error = store
        .create_user(
            &world.ws,
            &user("usr_dup", Role::Viewer),
            &token_hash("tok_admin"),
            &Effects::none(),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::Conflict(_)), "{error:?}");
    assert_eq!(store.list_users(&world.ws).await.unwrap().len(), 2);
}

pub async fn revoked_tokens_resolve_to_nobody(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let hash = token_hash("tok_agt_a");
    let principal = ctx.store.principal_for_token(&hash).await.unwrap().unwrap();
    assert_eq!(
        principal.subject,
        Subject::Agent {
            id: world.agent.clone(),
            name: "scout".into()
        }
    );
    assert_eq!(principal.actor(), "agent:agt_a");
    ctx.revoke_token(&hash, t(5)).await;
    assert_eq!(ctx.store.principal_for_token(&hash).await.unwrap(), None);
    // Other tokens are unaffected.
    assert!(ctx
        .store
        .principal_for_token(&token_hash("tok_usr_a"))
        .await
        .unwrap()
        .is_some());
}

pub async fn tokens_are_revoked_by_subject(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let hash = token_hash("tok_agt_a");
    assert!(store.principal_for_token(&hash).await.unwrap().is_some());
    // Naming a subject of another workspace revokes nothing and appends nothing.
    let before = ctx.row_counts().await;
    let revoked = store
        .revoke_tokens(
            &world.ws,
            &world.other_agent,
            t(4),
            &effects("token.revoked", &world.other_agent, t(4)),
        )
        .await
        .unwrap();
    assert_eq!(revoked, 0);
    assert_eq!(ctx.row_counts().await, before);
    let revoked = store
        .revoke_tokens(
            &world.ws,
            &world.agent,
            t(5),
            &effects("token.revoked", &world.agent, t(5)),
        )
        .await
        .unwrap();
    assert_eq!(revoked, 1);
    assert_eq!(store.principal_for_token(&hash).await.unwrap(), None);
    let audit = store.audit_after(&world.ws, 0, 10).await.unwrap();
    assert_eq!(
        audit.last().map(|record| record.kind.as_str()),
        Some("token.revoked")
    );
    // The user's token is untouched; a second revocation finds nothing and appends nothing.
    assert!(store
        .principal_for_token(&token_hash("tok_usr_a"))
        .await
        .unwrap()
        .is_some());
    let before = ctx.row_counts().await;
    let again = store
        .revoke_tokens(
            &world.ws,
            &world.agent,
            t(6),
            &effects("token.revoked", &world.agent, t(6)),
        )
        .await
        .unwrap();
    assert_eq!(again, 0);
    assert_eq!(ctx.row_counts().await, before);
}

pub async fn agents_are_created_read_and_updated(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let mut writer = agent("agt_writer", "writer");
    writer.mode = Mode::ReadOnly;
    writer.system_prompt = Some("be brief".into());
    writer.tools = Some(vec!["fs.read".into(), "email.send".into()]);
    writer.workspace_dir = Some("/srv/work".into());
    writer.llm = Some(LlmConfig {
        base_url: "http://127.0.0.1:8080/v1".into(),
        model: "tiny".into(),
        api_key_env: Some("LLM_KEY".into()),
        stream: Some(true),
    });
    writer.mcp_servers = Some(vec![McpServerConfig {
        name: "fs".into(),
        command: "npx".into(),
        args: vec!["server-filesystem".into(), "/tmp".into()],
    }]);
    store
        .create_agent(
            &world.ws,
            &writer,
            &token_hash("tok_writer"),
            &effects("agent.created", "agt_writer", t(1)),
        )
        .await
        .unwrap();
    assert_eq!(
        store.get_agent(&world.ws, "agt_writer").await.unwrap(),
        Some(writer.clone())
    );
    assert_eq!(
        store.agent_by_name(&world.ws, "writer").await.unwrap(),
        Some(writer.clone())
    );
    let names: Vec<String> = store
        .list_agents(&world.ws)
        .await
        .unwrap()
        .into_iter()
        .map(|agent| agent.name)
        .collect();
    assert_eq!(names, ["scout", "writer"]);

    // Everything but id, name and created_at is replaced.
    let mut changed = writer.clone();
    changed.name = "renamed".into();
    changed.created_at = t(99);
    changed.mode = Mode::Unattended;
    changed.system_prompt = None;
    changed.tools = Some(vec![]);
    changed.llm = None;
    store
        .update_agent(
            &world.ws,
            &changed,
            &effects("agent.updated", "agt_writer", t(2)),
        )
        .await
        .unwrap();
    let stored = store
        .get_agent(&world.ws, "agt_writer")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.name, "writer");
    assert_eq!(stored.created_at, writer.created_at);
    assert_eq!(stored.mode, Mode::Unattended);
    assert_eq!(stored.system_prompt, None);
    assert_eq!(stored.tools, Some(vec![]));
    assert_eq!(stored.llm, None);
    assert_eq!(stored.mcp_servers, writer.mcp_servers);
    let kinds: Vec<String> = store
        .audit_after(&world.ws, 0, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|record| record.kind)
        .collect();
    assert_eq!(kinds, ["agent.created", "agent.updated"]);

    // Updating an agent of another workspace changes nothing and appends nothing.
    let mut foreign = agent(&world.other_agent, "scout");
    foreign.mode = Mode::Unattended;
    let before = ctx.row_counts().await;
    assert!(store
        .update_agent(
            &world.ws,
            &foreign,
            &effects("agent.updated", "agt_b", t(3))
        )
        .await
        .is_err());
    assert_eq!(ctx.row_counts().await, before);
    let untouched = store
        .get_agent(&world.other, &world.other_agent)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(untouched.mode, Mode::Ask);
}

pub async fn agent_names_are_unique_per_workspace(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let before = ctx.row_counts().await;
    // `scout` exists in both workspaces already (the world made them): per workspace only.
    let error = store
        .create_agent(
            &world.ws,
            &agent("agt_c", "scout"),
            &token_hash("tok_c"),
            &effects("agent.created", "agt_c", t(1)),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::Conflict(_)), "{error:?}");
    // The refused agent left no token and no audit record behind.
    assert_eq!(ctx.row_counts().await, before);
    assert_eq!(
        store
            .principal_for_token(&token_hash("tok_c"))
            .await
            .unwrap(),
        None
    );
}

/// A user's name is what a policy's `approvers = ["user:NAME"]` names, so two users of
/// one workspace never share it (audit C, M10): the second is a conflict and writes
/// nothing; another workspace may use the name.
pub async fn user_names_are_unique_per_workspace(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let before = ctx.row_counts().await;
    // The world's user `usr_a` is named `usr_a-name`.
    let mut twin = user("usr_twin", Role::Admin);
    twin.name = "usr_a-name".into();
    let error = store
        .create_user(
            &world.ws,
            &twin,
            &token_hash("tok_twin"),
            &effects("user.created", "usr_twin", t(1)),
        )
        .await
        .unwrap_err();
    match &error {
        StoreError::Conflict(message) => assert!(message.contains("user"), "{message}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(ctx.row_counts().await, before);
    assert_eq!(
        store
            .principal_for_token(&token_hash("tok_twin"))
            .await
            .unwrap(),
        None
    );
    store
        .create_user(
            &world.other,
            &twin,
            &token_hash("tok_twin"),
            &effects("user.created", "usr_twin", t(1)),
        )
        .await
        .unwrap();
}

pub async fn sessions_are_created_and_read(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let session = Session {
        id: "ses_untitled".into(),
        agent_id: None,
        title: None,
        task_id: None,
        external_id: None,
        created_at: t(4),
        created_by: None,
        mode: None,
    };
    store.create_session(&world.ws, &session).await.unwrap();
    assert_eq!(
        store.get_session(&world.ws, "ses_untitled").await.unwrap(),
        Some(session)
    );
    let first = store
        .get_session(&world.ws, &world.session)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.agent_id.as_deref(), Some("agt_a"));
    assert_eq!(first.title.as_deref(), Some("first"));
    assert_eq!(
        store.get_session(&world.ws, "ses_nope").await.unwrap(),
        None
    );
}

/// Every read, and every write that names an object, with the other workspace's id finds
/// nothing (G6), and the refused writes change nothing.
pub async fn another_workspace_sees_nothing(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let World { ws, other, .. } = &world;
    let asked = world.spec("asked");
    store
        .record_call(
            ws,
            asked.asked(),
            effects("approval.requested", "apr_asked", t(1)),
        )
        .await
        .unwrap();
    let allowed = world.spec("allowed");
    store
        .record_call(
            ws,
            allowed.allowed(),
            effects("call.allowed", "call_allowed", t(1)),
        )
        .await
        .unwrap();
    let rule = super::rules::rule("rule_1", RuleScope::Agent, &world.agent, t(1), None);
    store
        .create_standing_rule(ws, &rule, &effects("rule.created", "rule_1", t(1)))
        .await
        .unwrap();
    let before = ctx.row_counts().await;

    assert_eq!(store.get_agent(other, &world.agent).await.unwrap(), None);
    assert_eq!(store.agent_by_name(other, "nobody").await.unwrap(), None);
    assert!(store
        .list_agents(other)
        .await
        .unwrap()
        .iter()
        .all(|a| a.id != world.agent));
    assert!(store.list_users(other).await.unwrap().is_empty());
    assert_eq!(
        store.get_session(other, &world.session).await.unwrap(),
        None
    );
    assert_eq!(store.get_call(other, &asked.call_id()).await.unwrap(), None);
    assert_eq!(
        store.get_call(other, &allowed.call_id()).await.unwrap(),
        None
    );
    assert_eq!(
        store
            .get_approval(other, &asked.approval_id())
            .await
            .unwrap(),
        None
    );
    let all = ApprovalFilter {
        status: None,
        session_id: None,
        run_id: None,
        before: None,
        limit: 100,
    };
    assert!(store.list_approvals(other, &all).await.unwrap().is_empty());
    assert!(store.list_standing_rules(other).await.unwrap().is_empty());
    let scopes = [(RuleScope::Agent, world.agent.clone())];
    assert!(store
        .live_standing_rules(other, &scopes, t(2))
        .await
        .unwrap()
        .is_empty());
    assert!(store.audit_after(other, 0, 100).await.unwrap().is_empty());
    assert!(store.events_after(other, 0, 100).await.unwrap().is_empty());
    assert_eq!(store.last_event_id(other).await.unwrap(), 0);

    let decided = store
        .decide(
            other,
            &asked.approve(t(2)),
            &effects("approval.approved", "apr_asked", t(2)),
        )
        .await;
    assert!(matches!(decided, Err(DecideError::NotFound)), "{decided:?}");
    let redeemed = store
        .redeem(
            other,
            &allowed.call_id(),
            t(2),
            &effects("grant.consumed", "grt_allowed", t(2)),
        )
        .await;
    assert!(
        matches!(redeemed, Err(RedeemError::NotFound)),
        "{redeemed:?}"
    );
    let revoked = store
        .revoke_standing_rule(
            other,
            "rule_1",
            t(2),
            &effects("rule.revoked", "rule_1", t(2)),
        )
        .await
        .unwrap();
    assert_eq!(revoked, None);
    assert_eq!(ctx.row_counts().await, before);

    // The owner workspace still sees everything.
    assert!(store
        .get_approval(ws, &asked.approval_id())
        .await
        .unwrap()
        .is_some());
    assert_eq!(store.list_standing_rules(ws).await.unwrap().len(), 1);
}
