//! What every agent test needs: the installed agent CLIs, a real `airlock serve` with a
//! small policy, a temp home and project, the guides' configurations, and running an
//! agent to its end with a deadline.

use crate::model::FakeModel;
use crate::support::{command, eventually, stderr, wait_exit, Captured, Server, BIN};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// `touch allowed.txt` is allowed, `touch forbidden.txt` denied with a reason the model
/// must read, everything else is asked.
const POLICY: &str = r#"version = 1
default = "ask"
deadline = "1h"

[[rules]]
name = "allowed-file"
tool = "shell.exec"
decision = "allow"
when = { command = { prefix = ["touch allowed.txt"] } }

[[rules]]
name = "forbidden-file"
tool = "shell.exec"
decision = "deny"
reason = "the test forbids forbidden.txt"
when = { command = { prefix = ["touch forbidden.txt"] } }
"#;

/// The reason of the deny rule above, as the model must see it.
pub const DENY_REASON: &str = "the test forbids forbidden.txt";

/// The longest one agent run may take (a backstop: runs end in seconds).
const RUN_LIMIT: Duration = Duration::from_secs(120);

/// Where the agent CLIs are: `AIRLOCK_TEST_AGENTS` (set by `install_agent_peers`), else
/// target/test-peers/node_modules/.bin. Missing is a failure, never a skip.
pub fn agent_bin(name: &str) -> PathBuf {
    let dir = std::env::var_os("AIRLOCK_TEST_AGENTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-peers/node_modules/.bin")
        });
    let bin = dir.join(name);
    assert!(
        bin.exists(),
        "{} is missing: run `source scripts/services.sh && install_agent_peers`",
        bin.display()
    );
    bin
}

/// A real `airlock serve` with [`POLICY`] and an agent token.
pub struct Gateway {
    pub server: Server,
    pub token: String,
    _work: tempfile::TempDir,
}

impl Gateway {
    pub fn start() -> Gateway {
        let work = tempfile::tempdir().unwrap();
        let policy = work.path().join("policy.toml");
        std::fs::write(&policy, POLICY).unwrap();
        let server = Server::start(work.path(), &["--policy", policy.to_str().unwrap()]);
        let token = server.create_agent("coder");
        Gateway {
            server,
            token,
            _work: work,
        }
    }

    /// Every approval, newest first.
    pub fn approvals(&self) -> Vec<Value> {
        self.server.get_json("/v1/approvals?limit=100")["items"]
            .as_array()
            .unwrap()
            .clone()
    }

    /// How many grants were consumed (each is one tool run airlock let through).
    pub fn consumed_grants(&self) -> usize {
        self.consumed_calls().len()
    }

    /// The calls whose grants were consumed, in the order they were redeemed.
    fn consumed_calls(&self) -> Vec<String> {
        let page = self.server.get_json("/v1/audit?limit=1000");
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|record| record["kind"] == "grant.consumed")
            .map(|record| record["data"]["call_id"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The outcomes reported on the calls whose grants were consumed (`None`: nothing
    /// reported yet).
    pub fn outcomes(&self) -> Vec<Option<String>> {
        self.consumed_calls()
            .iter()
            .map(|id| {
                let call = self.server.get_json(&format!("/v1/calls/{id}"));
                call["outcome"]["status"].as_str().map(str::to_owned)
            })
            .collect()
    }

    /// Waits until every call airlock let through has its outcome reported by the
    /// guide's after-the-fact hook (`PostToolUse`, `AfterTool`): all `succeeded`.
    pub fn all_reported(&self, why: &str) {
        let until = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let outcomes = self.outcomes();
            if !outcomes.is_empty() && outcomes.iter().all(|o| o.as_deref() == Some("succeeded")) {
                return;
            }
            assert!(
                std::time::Instant::now() < until,
                "outcomes never reported: {outcomes:?}\n{why}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for an approval to be pending, then approves it as a person.
    pub fn approve_when_pending(&self) -> String {
        let mut pending = Vec::new();
        eventually(Duration::from_secs(60), "an approval to decide", || {
            pending = self.server.pending();
            !pending.is_empty()
        });
        approve(&self.server.url, &self.server.owner_token(), &pending[0]);
        pending.swap_remove(0)
    }
}

/// `airlock approvals approve ID` as the owner (a person).
pub fn approve(url: &str, owner_token: &str, id: &str) {
    let dir = tempfile::tempdir().unwrap();
    let output = command(dir.path())
        .args(["approvals", "approve", id, "--url", url])
        .env("AIRLOCK_TOKEN", owner_token)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

/// A temp home and project folder for one agent run.
pub struct Place {
    pub home: PathBuf,
    pub project: PathBuf,
    _dir: tempfile::TempDir,
}

impl Place {
    pub fn new() -> Place {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        Place {
            home,
            project,
            _dir: dir,
        }
    }

    /// Writes `text` at `relative` under `base`, making its folders.
    pub fn write(base: &Path, relative: &str, text: &str) {
        let path = base.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// Where an agent run gates its calls, and how.
pub struct Setup<'a> {
    pub place: &'a Place,
    pub model: &'a FakeModel,
    /// `AIRLOCK_URL` (a dead port for the gateway-down runs).
    pub url: String,
    pub token: String,
    /// The hook's `--wait` in place of the guides' 55.
    pub wait: u64,
}

impl Setup<'_> {
    /// A command for an agent CLI with nothing inherited but `PATH` (with the airlock
    /// binary's folder first, so that the guides' `airlock hook …` runs this build), in
    /// the temp home and project.
    pub fn command(&self, agent: &str) -> Command {
        let bin_dir = Path::new(BIN).parent().unwrap();
        let path = format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut command = Command::new(agent_bin(agent));
        command
            .current_dir(&self.place.project)
            .env_clear()
            .env("PATH", path)
            .env("HOME", &self.place.home)
            .env("LANG", "C.UTF-8")
            .env("RUST_LOG", "warn")
            .env("AIRLOCK_URL", &self.url)
            .env("AIRLOCK_TOKEN", &self.token)
            .stdin(Stdio::null());
        command
    }

    /// A guide's hook configuration with this run's `--wait`.
    pub fn with_wait(&self, config: &str) -> String {
        assert!(config.contains("--wait 55"), "{config}");
        config.replace("--wait 55", &format!("--wait {}", self.wait))
    }
}

/// The fenced `lang` block that follows `heading` in docs/integrations/`guide` — the
/// configuration the tests run is the one the guide shows.
pub fn guide_block(guide: &str, heading: &str, lang: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/integrations")
        .join(guide);
    let text = std::fs::read_to_string(&path).unwrap();
    let after = text
        .split_once(heading)
        .unwrap_or_else(|| panic!("{} has no `{heading}`", path.display()))
        .1;
    let fence = format!("```{lang}\n");
    let block = after
        .split_once(&fence)
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .unwrap_or_else(|| panic!("no {lang} block after `{heading}` in {}", path.display()))
        .0;
    block.to_owned()
}

/// An agent process run to its end.
pub struct Finished {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// A running agent, killed when dropped.
pub struct Running {
    child: Child,
    stdout: Captured,
    stderr: Captured,
}

impl Running {
    pub fn start(mut command: Command) -> Running {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{command:?}: {e}"));
        let (stdout, stderr) = (Captured::default(), Captured::default());
        stdout.collect(child.stdout.take().unwrap());
        stderr.collect(child.stderr.take().unwrap());
        Running {
            child,
            stdout,
            stderr,
        }
    }

    pub fn finish(mut self) -> Finished {
        let status = wait_exit(&mut self.child, RUN_LIMIT);
        // A helper the agent left behind may hold the pipes; what was read is enough.
        self.stdout.drain_within(Duration::from_secs(5));
        self.stderr.drain_within(Duration::from_secs(5));
        Finished {
            code: status.code(),
            stdout: self.stdout.text(),
            stderr: self.stderr.text(),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `command` to its end.
pub fn run(command: Command) -> Finished {
    Running::start(command).finish()
}

/// A gateway that accepts every connection and never answers (it hangs), until the test
/// process ends.
pub fn hung_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    format!("http://127.0.0.1:{port}")
}

/// A port nobody listens on: the gateway is down.
pub fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}
