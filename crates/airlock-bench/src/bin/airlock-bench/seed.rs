//! Filling a data folder with what `park`, `audit` and `recovery` need, through the gate
//! and store APIs (not over HTTP, which would take far longer for a million records, and
//! not with SQL, which could make rows the code never would).
//!
//! - Pending approvals: real calls submitted by agents through `Gate::submit_call`, so
//!   each has its preview, binding digest, audit record and event. One transaction each.
//! - Run journal events: finished runs written through `Store::start_run` and
//!   `Store::update_run`, a thousand events per transaction.
//! - Audit records: `approval.requested`-shaped records of about 1 KB appended through the store (the store
//!   computes the hash chain inside the transaction as always), ten thousand per
//!   transaction, carried by an agent update.

use airlock_gate::calls::Submission;
use airlock_gate::identity::AgentSpec;
use airlock_gate::ids::new_id;
use airlock_gate::{clock::SystemClock, Gate};
use airlock_protocol::{Run, RunState};
use airlock_store::postgres::{PgOptions, PostgresStore};
use airlock_store::sqlite::SqliteStore;
use airlock_store::{AuditEntry, Effects, Lease, Principal, RunEventEntry, RunUpdate, Store};
use anyhow::{bail, Context};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Every mail is asked; approvals stay pending for a day, well past any run.
pub const POLICY: &str = r#"
version = 1
default = "ask"
deadline = "24h"

[tools."email.send"]
risk = "external"
summary = "Mail {to}: {subject}"
body = "{body}"

[[rules]]
name = "mail-needs-a-person"
tool = "email.send"
decision = "ask"
"#;

/// A store's gate and owner, open in this process.
pub struct Seeded {
    pub gate: Gate,
    store: Arc<dyn Store>,
    /// The same store when it is a data folder's SQLite file, which [`Seeded::close`]
    /// closes cleanly.
    sqlite: Option<Arc<SqliteStore>>,
    pub owner: Principal,
    pub owner_token: String,
}

impl Seeded {
    /// Opens (creating) `<data_dir>/airlock.db`, bootstraps workspace `default` and puts
    /// [`POLICY`] in force, as `airlock serve` would on a first start.
    pub async fn create(data_dir: &Path) -> anyhow::Result<Seeded> {
        std::fs::create_dir_all(data_dir)?;
        let sqlite = Arc::new(SqliteStore::open(&data_dir.join("airlock.db")).await?);
        Seeded::bootstrap(sqlite.clone(), Some(sqlite)).await
    }

    /// The same on an empty PostgreSQL database (a fresh `pg::Database`).
    pub async fn create_postgres(url: &str) -> anyhow::Result<Seeded> {
        let store = PostgresStore::connect(url, PgOptions::default()).await?;
        Seeded::bootstrap(Arc::new(store), None).await
    }

    async fn bootstrap(
        store: Arc<dyn Store>,
        sqlite: Option<Arc<SqliteStore>>,
    ) -> anyhow::Result<Seeded> {
        let gate = Gate::new(store.clone(), Arc::new(SystemClock)).await?;
        let bootstrapped = gate
            .bootstrap("default", "owner")
            .await?
            .context("the data folder is not empty")?;
        let owner = gate.authenticate(&bootstrapped.owner_token).await?;
        gate.replace_policy(&owner.workspace, &owner.actor(), POLICY)
            .await?;
        Ok(Seeded {
            gate,
            store,
            sqlite,
            owner,
            owner_token: bootstrapped.owner_token,
        })
    }

    /// Closes the store cleanly (a SQLite file with its WAL checkpointed, as a stopped
    /// server leaves it).
    pub async fn close(self) -> anyhow::Result<()> {
        let Seeded {
            gate,
            store,
            sqlite,
            ..
        } = self;
        drop(gate);
        drop(store);
        match sqlite.map(Arc::try_unwrap) {
            Some(Ok(sqlite)) => Ok(sqlite.close().await?),
            Some(Err(_)) => bail!("the store is still in use"),
            None => Ok(()),
        }
    }

    /// Creates `count` agents; returns each one's principal and token.
    pub async fn agents(&self, count: usize) -> anyhow::Result<Vec<(Principal, String)>> {
        let mut agents = Vec::with_capacity(count);
        for n in 0..count {
            let spec = AgentSpec {
                name: format!("agent-{n}"),
                mode: None,
                system_prompt: None,
                tools: None,
                workspace_dir: None,
                llm: None,
                mcp_servers: None,
            };
            let (_, token) = self.gate.create_agent(&self.owner, spec).await?;
            agents.push((self.gate.authenticate(&token).await?, token));
        }
        Ok(agents)
    }

    /// Submits `count` mails spread over `agents`, each asked and left pending, from four
    /// concurrent submitters. Returns `(agent index, call id)` of each, in no order.
    pub async fn pending_calls(
        &self,
        agents: &[(Principal, String)],
        count: usize,
    ) -> anyhow::Result<Vec<(usize, String)>> {
        const SUBMITTERS: usize = 4;
        let started = Instant::now();
        let mut workers = Vec::new();
        for worker in 0..SUBMITTERS {
            let gate = self.gate.clone();
            let agents = agents.to_vec();
            workers.push(tokio::spawn(async move {
                let mut calls = Vec::new();
                for n in (worker..count).step_by(SUBMITTERS) {
                    let agent = n % agents.len();
                    let submission = Submission {
                        tool: "email.send".into(),
                        arguments: json!({
                            "to": format!("customer{n}@example.com"),
                            "subject": format!("Your order #{n}"),
                            "body": "Hello,\n\nyour order has shipped and will arrive on Tuesday.\n\nBest regards",
                        }),
                        session_id: None,
                        declared: None,
                        context: Default::default(),
                    };
                    let call = gate.submit_call(&agents[agent].0, submission).await?;
                    if call.approval_id.is_none() {
                        bail!("the seeded call is not pending: {call:?}");
                    }
                    calls.push((agent, call.id));
                    if worker == 0 && n % 20_000 == 0 && n > 0 {
                        eprintln!(
                            "seeded {n} pending approvals in {:.1} s",
                            started.elapsed().as_secs_f64()
                        );
                    }
                }
                Ok(calls)
            }));
        }
        let mut calls = Vec::with_capacity(count);
        for worker in workers {
            calls.extend(worker.await??);
        }
        Ok(calls)
    }

    /// Writes `runs` finished runs of `agent` with `events_per_run` journal events each
    /// (`run_started`, text deltas, `run_completed`).
    pub async fn journal(
        &self,
        agent: &Principal,
        runs: usize,
        events_per_run: usize,
    ) -> anyhow::Result<()> {
        const BATCH: usize = 1_000;
        let agent_id = match &agent.subject {
            airlock_store::Subject::Agent { id, .. } => id.clone(),
            airlock_store::Subject::User { .. } => bail!("not an agent"),
        };
        let workspace = &self.owner.workspace;
        let store = self.store.as_ref();
        let owner = "bench-seed".to_owned();
        for _ in 0..runs {
            let session = self
                .gate
                .create_session(&self.owner, Some(agent_id.clone()), Some("bench".into()))
                .await?;
            let now = self.gate.now();
            let lease = Lease {
                owner: owner.clone(),
                until: now + jiff::SignedDuration::from_secs(3600),
            };
            let run = Run {
                id: new_id("run"),
                session_id: session.id.clone(),
                agent_id: agent_id.clone(),
                state: RunState::Running,
                error: None,
                last_seq: 0,
                created_at: now,
                updated_at: now,
            };
            let event = |kind: &str, data: serde_json::Value| RunEventEntry {
                at: now,
                kind: kind.to_owned(),
                data,
            };
            let started = RunUpdate {
                at: Some(now),
                events: vec![event(
                    "run_started",
                    json!({"run_id": run.id, "session_id": session.id, "agent_id": agent_id, "text": "Summarise the report"}),
                )],
                ..RunUpdate::default()
            };
            store.start_run(workspace, &run, &lease, &started).await?;
            let mut written = 1;
            while written < events_per_run {
                let take = BATCH.min(events_per_run - written);
                let mut update = RunUpdate {
                    at: Some(now),
                    lease: Some(lease.clone()),
                    ..RunUpdate::default()
                };
                for n in 0..take {
                    let last = written + n + 1 == events_per_run;
                    update.events.push(if last {
                        event("run_completed", json!({"run_id": run.id}))
                    } else {
                        event(
                            "text_delta",
                            json!({"text": "The quarterly report shows revenue up 4% "}),
                        )
                    });
                }
                written += take;
                if written == events_per_run {
                    update.state = Some((RunState::Completed, None));
                    update.lease = None;
                }
                store
                    .update_run(workspace, &run.id, &owner, &update)
                    .await?;
            }
        }
        Ok(())
    }

    /// Appends `count` audit records shaped like the gate's `approval.requested` (about 1 KB), ten thousand
    /// per transaction.
    pub async fn audit_records(&self, agent: &Principal, count: usize) -> anyhow::Result<()> {
        const BATCH: usize = 10_000;
        let agent_id = match &agent.subject {
            airlock_store::Subject::Agent { id, .. } => id.clone(),
            airlock_store::Subject::User { .. } => bail!("not an agent"),
        };
        let workspace = &self.owner.workspace;
        let record = self
            .store
            .get_agent(workspace, &agent_id)
            .await?
            .context("the agent is gone")?;
        let actor = agent.actor();
        let started = Instant::now();
        let mut written = 0;
        while written < count {
            let take = BATCH.min(count - written);
            let now = self.gate.now();
            let mut effects = Effects::none();
            for n in written..written + take {
                // Shaped like a real `approval.requested` record of a coding agent's shell
                // call (about 1 KB a line exported), the realistic size DESIGN §9's target
                // is judged on.
                let call_id = new_id("call");
                let approval_id = new_id("appr");
                effects = effects.audit(AuditEntry {
                    at: now,
                    actor: actor.clone(),
                    kind: "approval.requested".into(),
                    subject: approval_id.clone(),
                    data: json!({
                        "call_id": call_id,
                        "agent_id": agent_id,
                        "session_id": "sess_01JDX4K8Q2M7ZC3V9N5B6T0RWA",
                        "tool": "shell.exec",
                        "native_tool": "Bash",
                        "arguments": {
                            "command": format!(
                                "cd services/billing && cargo test --package billing-core \
                                 invoices::tests::case_{n} -- --nocapture 2>&1 | tail -n 40 && \
                                 git diff --stat HEAD~1 -- src/invoices.rs src/ledger.rs"
                            ),
                            "description": "Run the invoice tests touched by the last change \
                                            and show which files it changed",
                            "timeout": 120_000,
                        },
                        "cwd": "/home/dev/work/acme-platform/services/billing",
                        "project": "/home/dev/work/acme-platform",
                        "risk": "exec",
                        "outcome": "pending",
                        "decided_by": null,
                        "rule": "shell-outside-the-classes-asks",
                        "standing_rule": null,
                        "reason": "a command outside the known classes needs a person",
                        "grant_id": null,
                        "approval_id": approval_id,
                        "deadline": "2026-12-02T10:15:00Z",
                        "binding_digest": format!("sha256:{:064x}", n),
                    })
                    .into(),
                });
            }
            self.store
                .update_agent(workspace, &record, &effects)
                .await?;
            written += take;
            if written % 200_000 == 0 {
                eprintln!(
                    "seeded {written} audit records in {:.1} s",
                    started.elapsed().as_secs_f64()
                );
            }
        }
        Ok(())
    }
}
