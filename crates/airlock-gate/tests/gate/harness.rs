//! A gate over a temp-dir SQLite database, with a manual clock and ready principals.

use airlock_gate::clock::ManualClock;
use airlock_gate::identity::AgentSpec;
use airlock_gate::Gate;
use airlock_protocol::Role;
use airlock_store::sqlite::SqliteStore;
use airlock_store::Principal;
use std::sync::Arc;

pub struct Harness {
    pub dir: tempfile::TempDir,
    pub gate: Gate,
    pub clock: Arc<ManualClock>,
    pub owner: Principal,
    pub approver: Principal,
    pub viewer: Principal,
    pub agent: Principal,
    pub agent_id: String,
}

pub const POLICY: &str = r#"
version = 1
default = "ask"
deadline = "1h"

[tools."email.send"]
risk = "external"
target = "to"
summary = "Send email to {to}"
body = "{body}"

[tools."shell.exec"]
risk = "exec"

[[rules]]
name = "inside"
tool = "email.send"
decision = "allow"
when = { to = { glob = "*@acme.test" } }

[[rules]]
name = "no-rm"
tool = "shell.exec"
decision = "deny"
reason = "destructive command"
when = { command = { prefix = "rm -rf" } }
"#;

impl Harness {
    pub async fn new() -> Harness {
        let dir = tempfile::tempdir().unwrap();
        Harness::open(dir).await
    }

    /// Opens (or reopens) the gate over the database in `dir`.
    pub async fn open(dir: tempfile::TempDir) -> Harness {
        let store = Arc::new(
            SqliteStore::open(&dir.path().join("airlock.db"))
                .await
                .unwrap(),
        );
        let clock = Arc::new(ManualClock::new(
            jiff::Timestamp::from_second(1_800_000_000).unwrap(),
        ));
        let gate = Gate::new(store, clock.clone()).await.unwrap();
        let boot = gate.bootstrap("default", "owner").await.unwrap();
        let owner_token = match boot {
            Some(boot) => boot.owner_token,
            None => std::fs::read_to_string(dir.path().join("owner.token")).unwrap(),
        };
        std::fs::write(dir.path().join("owner.token"), &owner_token).unwrap();
        let owner = gate.authenticate(&owner_token).await.unwrap();
        let approver = user(&gate, &owner, &dir, "ann", Role::Approver).await;
        let viewer = user(&gate, &owner, &dir, "vic", Role::Viewer).await;
        let agent_token_file = dir.path().join("agent.token");
        let agent_token = match std::fs::read_to_string(&agent_token_file) {
            Ok(token) => token,
            Err(_) => {
                gate.put_policy(&owner, POLICY).await.unwrap();
                let (_, token) = gate
                    .create_agent(
                        &owner,
                        AgentSpec {
                            name: "scout".into(),
                            ..AgentSpec::default()
                        },
                    )
                    .await
                    .unwrap();
                std::fs::write(&agent_token_file, &token).unwrap();
                token
            }
        };
        let agent = gate.authenticate(&agent_token).await.unwrap();
        let agent_id = match &agent.subject {
            airlock_store::Subject::Agent { id, .. } => id.clone(),
            _ => unreachable!(),
        };
        Harness {
            dir,
            gate,
            clock,
            owner,
            approver,
            viewer,
            agent,
            agent_id,
        }
    }

    /// Drops the gate and reopens the same database, like a process restart.
    pub async fn restart(self) -> Harness {
        let Harness { dir, gate, .. } = self;
        drop(gate);
        Harness::open(dir).await
    }
}

async fn user(
    gate: &Gate,
    owner: &Principal,
    dir: &tempfile::TempDir,
    name: &str,
    role: Role,
) -> Principal {
    let file = dir.path().join(format!("{name}.token"));
    let token = match std::fs::read_to_string(&file) {
        Ok(token) => token,
        Err(_) => {
            let (_, token) = gate.create_user(owner, name, role).await.unwrap();
            std::fs::write(&file, &token).unwrap();
            token
        }
    };
    gate.authenticate(&token).await.unwrap()
}
