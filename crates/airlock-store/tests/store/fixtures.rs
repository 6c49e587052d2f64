//! A small world to run behaviours in, and builders for the values the store takes.
//!
//! Times are explicit ([`t`]), whole milliseconds (the store's precision), so no
//! behaviour depends on the clock or sleeps.

use airlock_digest::digest::sha256_hex;
use airlock_protocol::{
    Agent, Approval, ApprovalStatus, AuditRecord, Call, CallStatus, DecidedBy, Message, Mode,
    OutboxItem, PolicyInfo, Preview, Risk, Role, Run, RunEvent, RunState, Session, Step, StepState,
    StepStatus, User, WorkspaceEvent,
};
use airlock_store::{
    AuditEntry, Decision, Effects, EventEntry, Grant, Lease, NewCall, RunEventEntry, RunUpdate,
    Store, StoredStep, Workspace,
};
use jiff::Timestamp;
use serde_json::json;
use std::collections::BTreeMap;
use std::future::Future;

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
                task_id: None,
                external_id: None,
                created_at: t(0),
                created_by: None,
                mode: None,
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
            data: json!({"subject": subject, "n": 1.5, "nested": {"b": [1, 2], "a": null}}).into(),
        })
        .event(EventEntry {
            at,
            kind: kind.into(),
            data: json!({"id": subject}).into(),
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
            // Stored and read back like every other column (both backends).
            native_tool: Some("send_mail".into()),
            cwd: Some("/home/ana/shop/src".into()),
            project: Some("/home/ana/shop".into()),
            redeemed_at: None,
            outcome: None,
            ambiguous_at: None,
            reconciliation: None,
            original_arguments: None,
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
            edited_binding_digest: None,
            approvals_required: None,
            approvers: Vec::new(),
            votes: Vec::new(),
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
            edit: None,
            vote: None,
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
            run_id: None,
            before: None,
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

// ----- the built-in runtime

impl World {
    /// Creates another session of the world's agent in `ws`.
    pub async fn add_session(&self, store: &dyn Store, id: &str) {
        store
            .create_session(
                &self.ws,
                &Session {
                    id: id.into(),
                    agent_id: Some(self.agent.clone()),
                    title: None,
                    task_id: None,
                    external_id: None,
                    created_at: t(0),
                    created_by: None,
                    mode: None,
                },
            )
            .await
            .unwrap();
    }

    /// A run of the world's agent in `session`, created (and last updated) at `t(at)`.
    pub fn run(&self, id: &str, session: &str, at: i64) -> Run {
        Run {
            id: id.into(),
            session_id: session.into(),
            agent_id: self.agent.clone(),
            state: RunState::Running,
            error: None,
            last_seq: 0,
            created_at: t(at),
            updated_at: t(at),
        }
    }

    /// A message of `run` in the world's session, every optional field set by `role`:
    /// a user's text, an assistant's tool calls, a tool's call id and result text.
    pub fn message(&self, id: &str, run: &str, role: &str, at: i64) -> Message {
        Message {
            id: id.into(),
            session_id: self.session.clone(),
            run_id: run.into(),
            role: role.into(),
            text: (role != "assistant").then(|| format!("{role} says {id} ✓")),
            tool_calls: if role == "assistant" {
                vec![
                    json!({"id": "tc_1", "tool": "email.send", "arguments": {"to": "bob@acme.test"}}),
                    json!({"id": "tc_2", "tool": "fs.read", "arguments": {"path": "a/b", "n": [1, 2.5, null]}}),
                ]
            } else {
                Vec::new()
            },
            tool_call_id: (role == "tool").then(|| "tc_1".to_owned()),
            steps: Vec::new(),
            created_at: t(at),
        }
    }
}

/// A lease held by `owner` until `t(until)`.
pub fn lease(owner: &str, until: i64) -> Lease {
    Lease {
        owner: owner.into(),
        until: t(until),
    }
}

/// A journal event of `kind` at `t(at)`.
pub fn run_event(kind: &str, at: i64) -> RunEventEntry {
    RunEventEntry {
        at: t(at),
        kind: kind.into(),
        data: json!({"kind": kind, "nested": {"list": [1, "two", null], "f": 0.5}}),
    }
}

/// An update at `t(at)` appending one journal event per kind, and nothing else.
pub fn run_events(at: i64, kinds: &[&str]) -> RunUpdate {
    RunUpdate {
        at: Some(t(at)),
        events: kinds.iter().map(|kind| run_event(kind, at)).collect(),
        ..RunUpdate::default()
    }
}

/// An update at `t(at)` moving the run to `state` with one event of `kind`.
pub fn run_moves(at: i64, state: RunState, kind: &str) -> RunUpdate {
    RunUpdate {
        state: Some((state, None)),
        ..run_events(at, &[kind])
    }
}

/// A step just submitted to the gate: no outcome fields, arguments not exact.
pub fn gated_step(index: u32, call_id: Option<&str>) -> StoredStep {
    StoredStep {
        step: Step {
            index,
            tool_call_id: format!("tc_{index}"),
            tool: "email.send".into(),
            arguments: json!({"to": "bob@acme.test", "body": "[REDACTED:api_key]"}),
            call_id: call_id.map(str::to_owned),
            state: StepState::Gated,
            status: None,
            output: None,
            rule: None,
            standing_rule: None,
            approver: None,
            finished_at: None,
        },
        exact: false,
    }
}

/// `gated_step` finished at `t(at)`, with every optional field set.
pub fn finished_step(index: u32, call_id: Option<&str>, at: i64) -> StoredStep {
    let mut stored = gated_step(index, call_id);
    stored.step = Step {
        state: StepState::Finished,
        status: Some(StepStatus::Ok),
        output: Some(json!({"sent": true, "id": "m-1", "lines": ["a", "b"]})),
        rule: Some("rules[2]".into()),
        standing_rule: Some("srl_1".into()),
        approver: Some("user:usr_a".into()),
        finished_at: Some(t(at)),
        ..stored.step
    };
    stored
}

/// An email for the outbox, the effect of `call_id`, made at `t(at)`.
pub fn outbox_item(id: &str, call_id: &str, run_id: Option<&str>, at: i64) -> OutboxItem {
    OutboxItem {
        id: id.into(),
        kind: "email".into(),
        recipient: "bob@acme.test".into(),
        payload: json!({"subject": format!("about {id}"), "body": "hello ✓", "cc": []}),
        run_id: run_id.map(str::to_owned),
        call_id: call_id.into(),
        created_at: t(at),
        delivered_at: None,
        attempts: 0,
        last_error: None,
    }
}

/// What the trait shows of one run: the run, its whole journal and its steps.
pub async fn run_view(
    store: &dyn Store,
    workspace: &str,
    run_id: &str,
) -> (Option<Run>, Vec<RunEvent>, Vec<StoredStep>) {
    (
        store.get_run(workspace, run_id).await.unwrap(),
        store
            .run_events_after(workspace, run_id, 0, 10_000)
            .await
            .unwrap(),
        store.run_steps(workspace, run_id).await.unwrap(),
    )
}

/// Awaits `attempt` and checks that it wrote nothing: the same rows in every table, the
/// same [`Snapshot`], the same run `run_id`, conversation of the world's session and
/// outbox of `ws`. Returns what the attempt returned.
pub async fn writes_nothing<T>(
    ctx: &super::harness::Ctx,
    world: &World,
    run_id: &str,
    attempt: impl Future<Output = T>,
) -> T {
    let store = ctx.store.as_ref();
    let view = || async {
        (
            snapshot(ctx, world, &[]).await,
            run_view(store, &world.ws, run_id).await,
            store
                .session_messages(&world.ws, &world.session)
                .await
                .unwrap(),
            store.list_outbox(&world.ws, 1000).await.unwrap(),
        )
    };
    let before = view().await;
    let outcome = attempt.await;
    assert_eq!(view().await, before, "a refused write changed something");
    outcome
}

/// Starts run `id` in `session` at `t(at)` with its `run_started` event, held by `owner`
/// for 30 seconds; returns it as stored.
pub async fn start_run_held(
    store: &dyn Store,
    world: &World,
    id: &str,
    session: &str,
    at: i64,
    owner: &str,
) -> Run {
    let events = store
        .start_run(
            &world.ws,
            &world.run(id, session, at),
            &lease(owner, at + 30),
            &run_events(at, &["run_started"]),
        )
        .await
        .unwrap();
    assert_eq!(seqs(&events), [1]);
    store.get_run(&world.ws, id).await.unwrap().unwrap()
}

/// The `seq`s of `events`, in order.
pub fn seqs(events: &[RunEvent]) -> Vec<u64> {
    events.iter().map(|event| event.seq).collect()
}
