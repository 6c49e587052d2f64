//! One `airlock serve` process of the reliability tests, built with the `failpoints`
//! feature: started on a free port over a SQLite data folder or a PostgreSQL database,
//! optionally armed with `AIRLOCK_FAILPOINT`, killed with SIGKILL or left to abort, and
//! started again over the same data. Plus a small HTTP client that reports a dead server
//! as [`Dead`] instead of failing, and a seeded random generator.

use crate::captured::Captured;
use serde_json::Value;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_airlock");

/// Where a node keeps its data.
#[derive(Clone, Debug)]
pub enum Backend {
    Sqlite,
    /// A fresh database on the test cluster, shared by every start of the node.
    Postgres(String),
}

impl Backend {
    pub fn sqlite() -> Backend {
        Backend::Sqlite
    }

    pub fn postgres() -> Backend {
        let url = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(airlock_pgtest::fresh_database());
        Backend::Postgres(url)
    }

    /// Runs SQL on the node's PostgreSQL database with `psql`.
    pub fn psql(&self, sql: &str) -> String {
        let Backend::Postgres(url) = self else {
            panic!("psql on a SQLite node")
        };
        let output = Command::new("psql")
            .args([url.as_str(), "-v", "ON_ERROR_STOP=1", "-At", "-c", sql])
            .output()
            .expect("psql runs (PostgreSQL's client is installed with the server)");
        assert!(
            output.status.success(),
            "psql failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

/// A running `airlock serve`; SIGKILLed when dropped.
pub struct Node {
    child: Child,
    pub url: String,
    pub work: PathBuf,
    pub backend: Backend,
    pub stderr: Captured,
    exited: Option<ExitStatus>,
}

impl Node {
    /// Starts `airlock serve --demo` in `work` (data in `work/data`), armed with
    /// `failpoint` when given, and waits until `/healthz` answers.
    pub fn start(work: &Path, backend: &Backend, failpoint: Option<&str>) -> Node {
        Node::start_with(work, backend, failpoint, &[])
    }

    pub fn start_with(
        work: &Path,
        backend: &Backend,
        failpoint: Option<&str>,
        extra: &[&str],
    ) -> Node {
        for _attempt in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            match Node::spawn(work, backend, failpoint, extra, port) {
                Ok(node) => return node,
                Err(text) if text.contains("cannot listen") => continue,
                Err(text) => panic!("airlock serve did not start:\n{text}"),
            }
        }
        panic!("no free port after 5 attempts");
    }

    /// Starts the node again on the port it had, as a restarted service would: clients
    /// that retry the old address reach the new process.
    pub fn restart_in_place(&mut self) -> Node {
        let port: u16 = self.url.rsplit(':').next().unwrap().parse().unwrap();
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            match Node::spawn(&self.work, &self.backend, None, &[], port) {
                Ok(node) => return node,
                // The old socket may linger a moment.
                Err(text) if text.contains("cannot listen") && Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(text) => panic!("airlock serve did not start again:\n{text}"),
            }
        }
    }

    fn spawn(
        work: &Path,
        backend: &Backend,
        failpoint: Option<&str>,
        extra: &[&str],
        port: u16,
    ) -> Result<Node, String> {
        std::fs::create_dir_all(work).unwrap();
        {
            let listen = format!("127.0.0.1:{port}");
            let mut command = Command::new(BIN);
            command
                .current_dir(work)
                .env_remove("AIRLOCK_URL")
                .env_remove("AIRLOCK_TOKEN")
                .env_remove("AIRLOCK_FAILPOINT")
                .env_remove("AIRLOCK_SMTP")
                .env("RUST_LOG", "warn")
                .args(["serve", "--demo", "--listen", &listen, "--data-dir"])
                .arg(work.join("data"))
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            if let Backend::Postgres(url) = backend {
                command.args(["--db", url]);
            }
            if let Some(point) = failpoint {
                command.env("AIRLOCK_FAILPOINT", point);
            }
            let mut child = command.spawn().expect("airlock serve starts");
            // Keep the tail only: a soak writes a lot of log.
            let stderr = Captured::keeping_tail(128 * 1024);
            stderr.collect(child.stderr.take().unwrap());
            let mut node = Node {
                child,
                url: format!("http://{listen}"),
                work: work.to_owned(),
                backend: backend.clone(),
                stderr,
                exited: None,
            };
            node.wait_healthy().map(|()| node)
        }
    }

    fn wait_healthy(&mut self) -> Result<(), String> {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                self.stderr.drain();
                return Err(format!("exited {status}: {}", self.stderr.text()));
            }
            // Only our own server's answer counts: between picking the port and the bind,
            // another test's server may take the port and answer `/healthz` while ours
            // fails to bind (and exits a moment later). Ours holds the listening socket.
            let port: u16 = self
                .url
                .rsplit(':')
                .next()
                .and_then(|port| port.parse().ok())
                .unwrap_or(0);
            if listens_on(self.child.id(), port)
                && matches!(
                    http().get(&format!("{}/healthz", self.url), ""),
                    Ok((200, _))
                )
            {
                return Ok(());
            }
            if Instant::now() > until {
                return Err(format!("not healthy after 30 s: {}", self.stderr.text()));
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn owner_token(&self) -> String {
        std::fs::read_to_string(self.work.join("data/owner.token"))
            .unwrap()
            .trim()
            .to_owned()
    }

    /// SIGKILL, as a power cut or the OOM killer would.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        self.exited = Some(self.child.wait().unwrap());
        self.stderr.drain();
    }

    /// Waits for the process to end on its own (an armed failpoint) and returns how.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                self.exited = Some(status);
                self.stderr.drain();
                return Some(status);
            }
            if Instant::now() > until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether the process died of `abort()` (SIGABRT), as an armed failpoint makes it.
    pub fn aborted(status: ExitStatus) -> bool {
        status.signal() == Some(6)
    }

    /// Runs an `airlock` client command against this node as the owner.
    pub fn client(&self, args: &[&str]) -> std::process::Output {
        Command::new(BIN)
            .current_dir(&self.work)
            .args(args)
            .args(["--url", &self.url])
            .env("AIRLOCK_TOKEN", self.owner_token())
            .env_remove("AIRLOCK_URL")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if self.exited.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The server is gone (connection refused or reset): the flow stops there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dead;

/// A blocking HTTP client: any status is an answer, a transport error is [`Dead`].
#[derive(Clone)]
pub struct Http(ureq::Agent);

pub fn http() -> Http {
    Http(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(45)))
            .build()
            .into(),
    )
}

impl Http {
    pub fn get(&self, url: &str, token: &str) -> Result<(u16, Value), Dead> {
        let response = self
            .0
            .get(url)
            .header("Authorization", format!("Bearer {token}"))
            .call()
            .map_err(|_| Dead)?;
        read(response)
    }

    pub fn post(&self, url: &str, token: &str, body: &Value) -> Result<(u16, Value), Dead> {
        let response = self
            .0
            .post(url)
            .header("Authorization", format!("Bearer {token}"))
            .send_json(body)
            .map_err(|_| Dead)?;
        read(response)
    }

    pub fn post_empty(&self, url: &str, token: &str) -> Result<(u16, Value), Dead> {
        let response = self
            .0
            .post(url)
            .header("Authorization", format!("Bearer {token}"))
            .send_empty()
            .map_err(|_| Dead)?;
        read(response)
    }

    /// `POST url` with no body, under an `Idempotency-Key` when one is given.
    pub fn post_keyed(
        &self,
        url: &str,
        token: &str,
        key: Option<&str>,
    ) -> Result<(u16, Value), Dead> {
        let mut request = self
            .0
            .post(url)
            .header("Authorization", format!("Bearer {token}"));
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        read(request.send_empty().map_err(|_| Dead)?)
    }

    pub fn text(&self, url: &str, token: &str) -> Result<(u16, String), Dead> {
        let response = self
            .0
            .get(url)
            .header("Authorization", format!("Bearer {token}"))
            .call()
            .map_err(|_| Dead)?;
        let status = response.status().as_u16();
        let text = response
            .into_body()
            .with_config()
            .limit(256 * 1024 * 1024)
            .read_to_string()
            .map_err(|_| Dead)?;
        Ok((status, text))
    }
}

fn read(response: ureq::http::Response<ureq::Body>) -> Result<(u16, Value), Dead> {
    let status = response.status().as_u16();
    // A body cut off by the crash is a dead server too.
    let text = response.into_body().read_to_string().map_err(|_| Dead)?;
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    Ok((status, body))
}

/// SplitMix64: small, seeded, reproducible; enough for timing jitter.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound`.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound.max(1)
    }

    pub fn millis(&mut self, bound: u64) -> Duration {
        Duration::from_millis(self.below(bound))
    }
}

/// `AIRLOCK_CRASH_ROUNDS` (default `default`), the rounds each test repeats.
pub fn rounds(default: u64) -> u64 {
    std::env::var("AIRLOCK_CRASH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `AIRLOCK_CRASH_SEED` (default fixed), so a failing round can be replayed.
pub fn base_seed() -> u64 {
    std::env::var("AIRLOCK_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_a1c0)
}

/// Whether process `pid` holds the TCP socket listening on `port`: `/proc/net/tcp{,6}` name
/// the listening socket's inode, `/proc/<pid>/fd` the sockets the process holds.
fn listens_on(pid: u32, port: u16) -> bool {
    let inodes: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .flat_map(|text| {
            text.lines()
                .skip(1)
                .filter_map(|line| {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    let local = u16::from_str_radix(fields.get(1)?.rsplit(':').next()?, 16).ok()?;
                    // `0A` is LISTEN.
                    let inode = fields.get(9)?;
                    (local == port && *fields.get(3)? == "0A").then(|| format!("socket:[{inode}]"))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| std::fs::read_link(entry.path()).ok())
        .any(|link| {
            inodes
                .iter()
                .any(|inode| link.to_string_lossy() == inode.as_str())
        })
}

#[test]
fn a_port_is_ours_only_while_we_hold_it() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    assert!(listens_on(std::process::id(), port));
    assert!(!listens_on(1, port));
    drop(listener);
    assert!(!listens_on(std::process::id(), port));
}
