//! A small world to run behaviours in, and builders for the values the store takes.
//!
//! Times are explicit ([`t`]), whole milliseconds (the store's precision), so no
//! behaviour depends on the clock or sleeps.

use airlock_policy::digest::sha256_hex;
use airlock_protocol::{
    Agent, Approval, ApprovalStatus, AuditRecord, Call, CallStatus, DecidedBy, Mode, PolicyInfo,
    Preview, Risk, Role, Session, User, WorkspaceEvent,
};
use airlock_store::{AuditEntry, Decision, Effects, EventEntry, Grant, NewCall, Store, Workspace};
use jiff::Timestamp;
use serde_json::json;
use std::collections::BTreeMap;

/// 2025-01-01T00:00:00Z plus `seconds`.
pub fn t(seconds: i64) -> Timestamp {
    Timestamp::from_millisecond(1_735_689_600_000 + seconds * 1000).unwrap()
}

/// The digest of the policy every world starts under.
pub const POLICY_1: &str = "1111111111111111111111111111111111111111111111111111111111111111";
pub const POLICY_2: &str = "2222222222222222222222222222222222222222222222222222222222222222";

/// The hash under which a token is stored.
pub fn token_hash(token: &str) -> String {
    sha256_hex(token.as_bytes())
}

/// Ids of the world's objects. Workspace `ws` has a user, an agent and a session;
/// workspace `other` has its own agent. Both are under [`POLICY_1`], version 1.
pub struct World {
    pub ws: String,
    pub other: String,
    pub user: String,
    pub agent: String,
    pub other_agent: String,
    pub session: String,
}

pub async fn world(store: &dyn Store) -> World {
    let world = World {
        ws: "ws_a".into(),
        other: "ws_b".into(),
        user: "usr_a".into(),
        agent: "agt_a".into(),
        other_agent: "agt_b".into(),
        session: "ses_a".into(),
    };
    for (id, name) in [(&world.ws, "alpha"), (&world.other, "beta")] {
        store
            .create_workspace(&Workspace {
                id: id.clone(),
                name: name.into(),
                created_at: t(0),
            })
            .await
            .unwrap();
        store
            .put_policy(id, &policy(1, POLICY_1), &Effects::none(), "stale", &|_| {
                Effects::none()
            })
            .await
            .unwrap();
    }
    store
        .create_user(
            &world.ws,
            &user(&world.user, Role::Approver),
            &token_hash("tok_usr_a"),
            &Effects::none(),
        )
        .await
        .unwrap();
    store
        .create_agent(
            &world.ws,
            &agent(&world.agent, "scout"),
            &token_hash("tok_agt_a"),
            &Effects::none(),
        )
        .await
        .unwrap();
    store
        .create_agent(
            &world.other,
            &agent(&world.other_agent, "scout"),
            &token_hash("tok_agt_b"),
            &Effects::none(),
        )
        .await
        .unwrap();
    store
        .create_session(
            &world.ws,
            &Session {
                id: world.session.clone(),
                agent_id: Some(world.agent.clone()),
                title: Some("first".into()),
                created_at: t(0),
            },
        )
        .await
        .unwrap();
    world
}

pub fn policy(version: u64, digest: &str) -> PolicyInfo {
    PolicyInfo {
        version,
        digest: digest.into(),
        source: format!("version = 1\n# v{version}\n"),
        updated_at: t(i64::try_from(version).unwrap()),
    }
}

pub fn user(id: &str, role: Role) -> User {
    User {
        id: id.into(),
        name: format!("{id}-name"),
        role,
        created_at: t(0),
    }
}

pub fn agent(id: &str, name: &str) -> Agent {
    Agent {
        id: id.into(),
        name: name.into(),
        mode: Mode::Ask,
        system_prompt: None,
        tools: None,
        workspace_dir: None,
        llm: None,
        mcp_servers: None,
        created_at: t(0),
    }
}

/// Effects with one audit record and one event.
pub fn effects(kind: &str, subject: &str, at: Timestamp) -> Effects {
    Effects::none()
        .audit(AuditEntry {
            at,
            actor: "user:usr_a".into(),
            kind: kind.into(),
            subject: subject.into(),
            data: json!({"subject": subject, "n": 1.5, "nested": {"b": [1, 2], "a": null}}),
        })
        .event(EventEntry {
            at,
            kind: kind.into(),
            data: json!({"id": subject}),
        })
}

/// How to build one call (and its approval or grant); ids derive from `id`:
/// `call_<id>`, `apr_<id>`, `grt_<id>`, binding digest `bind_<id>`.
#[derive(Clone)]
pub struct Spec {
    pub id: String,
    pub agent: String,
    pub session: Option<String>,
    pub created_at: Timestamp,
    pub deadline: Timestamp,
    pub policy: String,
}

impl World {
    pub fn spec(&self, id: &str) -> Spec {
        Spec {
            id: id.into(),
            agent: self.agent.clone(),
            session: Some(self.session.clone()),
            created_at: t(0),
            deadline: t(3600),
            policy: POLICY_1.into(),
        }
    }
}

impl Spec {
    pub fn call_id(&self) -> String {
        format!("call_{}", self.id)
    }

    pub fn approval_id(&self) -> String {
        format!("apr_{}", self.id)
    }

    pub fn binding(&self) -> String {
        format!("bind_{}", self.id)
    }

    fn call(&self, status: CallStatus, decided_by: DecidedBy) -> Call {
        Call {
            id: self.call_id(),
            agent_id: self.agent.clone(),
            session_id: self.session.clone(),
            tool: "email.send".into(),
            arguments: json!({"to": "bob@acme.test", "body": "[REDACTED:api_key]", "n": 2}),
            risk: Risk::External,
            status,
            decided_by,
            rule: Some("rules[0]".into()),
            reason: Some("asks a person".into()),
            approval_id: None,
            grant_id: None,
            created_at: self.created_at,
            decided_at: None,
        }
    }

    pub fn asked(&self) -> NewCall {
        let mut call = self.call(CallStatus::Pending, DecidedBy::Rule);
        call.approval_id = Some(self.approval_id());
        let approval = Approval {
            id: self.approval_id(),
            call_id: call.id.clone(),
            agent_id: self.agent.clone(),
            session_id: self.session.clone(),
            status: ApprovalStatus::Pending,
            tool: call.tool.clone(),
            risk: call.risk,
            preview: Preview {
                summary: "Send email to bob@acme.test".into(),
                body: Some("hello".into()),
                arguments: call.arguments.clone(),
            },
            rule: call.rule.clone(),
            reason: call.reason.clone(),
            binding_digest: self.binding(),
            policy_digest: self.policy.clone(),
            standing_target: Some("bob@acme.test".into()),
            deadline: self.deadline,
            created_at: self.created_at,
            decided_at: None,
            decided_by: None,
            decision_reason: None,
        };
        NewCall {
            call,
            approval: Some(approval),
            grant: None,
        }
    }

    pub fn allowed(&self) -> NewCall {
        let mut call = self.call(CallStatus::Allowed, DecidedBy::Rule);
        let grant = self.grant();
        call.grant_id = Some(grant.id.clone());
        call.decided_at = Some(self.created_at);
        NewCall {
            call,
            approval: None,
            grant: Some(grant),
        }
    }

    pub fn denied(&self) -> NewCall {
        let mut call = self.call(CallStatus::Denied, DecidedBy::Rule);
        call.decided_at = Some(self.created_at);
        call.reason = Some("no email on Sundays".into());
        NewCall {
            call,
            approval: None,
            grant: None,
        }
    }

    pub fn grant(&self) -> Grant {
        Grant {
            id: format!("grt_{}", self.id),
            call_id: self.call_id(),
            created_at: self.created_at,
            consumed_at: None,
        }
    }

    /// An approval of this spec's approval by `user:usr_a` at `at`, echoing its digest.
    pub fn approve(&self, at: Timestamp) -> Decision {
        Decision {
            approval_id: self.approval_id(),
            approve: true,
            binding_digest: self.binding(),
            decided_by: "user:usr_a".into(),
            reason: Some("looks right".into()),
            at,
            grant: Some(Grant {
                created_at: at,
                ..self.grant()
            }),
            standing_rule: None,
        }
    }

    pub fn reject(&self, at: Timestamp) -> Decision {
        Decision {
            approve: false,
            reason: Some("wrong recipient".into()),
            grant: None,
            ..self.approve(at)
        }
    }
}

/// Everything a refusal must leave as it was: raw row counts, and the contents the trait
/// shows of the approvals, calls, audit chain and events of both workspaces.
#[derive(Debug, PartialEq)]
pub struct Snapshot {
    pub rows: BTreeMap<String, i64>,
    pub approvals: Vec<Approval>,
    pub calls: Vec<Option<Call>>,
    pub audit: Vec<AuditRecord>,
    pub events: Vec<WorkspaceEvent>,
}

pub async fn snapshot(ctx: &super::harness::Ctx, world: &World, specs: &[&Spec]) -> Snapshot {
    let store = ctx.store.as_ref();
    let mut snapshot = Snapshot {
        rows: ctx.row_counts().await,
        approvals: Vec::new(),
        calls: Vec::new(),
        audit: Vec::new(),
        events: Vec::new(),
    };
    for ws in [&world.ws, &world.other] {
        let all = airlock_store::ApprovalFilter {
            status: None,
            session_id: None,
            limit: 1000,
        };
        snapshot
            .approvals
            .extend(store.list_approvals(ws, &all).await.unwrap());
        snapshot
            .audit
            .extend(store.audit_after(ws, 0, 1000).await.unwrap());
        snapshot
            .events
            .extend(store.events_after(ws, 0, 1000).await.unwrap());
    }
    for spec in specs {
        snapshot
            .calls
            .push(store.get_call(&world.ws, &spec.call_id()).await.unwrap());
    }
    snapshot
}
