//! A real `airlock serve` process, as a user runs it: the server `gate`, `audit`, `park`,
//! `recovery` and `fatigue` measure. Its resident memory is read from `/proc`, so it must be a process of its own.

use crate::Options;
use anyhow::{bail, Context};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// How long a server may take to answer `/healthz` before the run fails.
const START_PATIENCE: Duration = Duration::from_secs(120);

/// The `airlock` binary: `--airlock-bin`/`AIRLOCK_BIN`, else the one beside this binary.
pub fn airlock_binary(options: &Options) -> anyhow::Result<PathBuf> {
    let binary = match &options.airlock_bin {
        Some(path) => path.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("this binary has no folder")?
            .join("airlock"),
    };
    if !binary.is_file() {
        bail!(
            "no airlock binary at {}: build it first (`cargo build -p airlock-cli`, with \
             --release for a release run) or pass --airlock-bin",
            binary.display()
        );
    }
    Ok(binary)
}

/// Raises this process's open-file limit to its hard limit (children inherit it), and
/// fails when that is below `needed`.
pub fn raise_fd_limit(needed: u64) -> anyhow::Result<u64> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)
            .context("raising RLIMIT_NOFILE to its hard limit")?;
    }
    if hard < needed {
        bail!(
            "the open-file limit is {hard} and this run needs {needed}: raise the hard limit \
             (ulimit -Hn) or run with --quick"
        );
    }
    Ok(hard)
}

/// A running `airlock serve --data-dir DIR --listen 127.0.0.1:PORT`.
pub struct ServerProcess {
    child: tokio::process::Child,
    pub pid: u32,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    log: PathBuf,
    data_dir: PathBuf,
}

impl ServerProcess {
    /// Starts the server on the data folder and waits until `/healthz` answers 200.
    /// Returns it with the time from spawning the process to that first 200.
    pub async fn start(binary: &Path, data_dir: &Path) -> anyhow::Result<(Self, Duration)> {
        Self::start_with(binary, data_dir, &[]).await
    }

    /// [`ServerProcess::start`] with more `airlock serve` arguments (`--policy FILE`).
    pub async fn start_with(
        binary: &Path,
        data_dir: &Path,
        extra: &[std::ffi::OsString],
    ) -> anyhow::Result<(Self, Duration)> {
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0")?;
            probe.local_addr()?.port()
        };
        let url = format!("http://127.0.0.1:{port}");
        let log = data_dir.with_extension(format!("serve-{port}.log"));
        let log_file = std::fs::File::create(&log)?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()?;
        let health = format!("{url}/healthz");
        let started = Instant::now();
        let child = tokio::process::Command::new(binary)
            .arg("serve")
            .arg("--data-dir")
            .arg(data_dir)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let pid = child.id().context("the server exited at once")?;
        let mut server = ServerProcess {
            child,
            pid,
            url,
            log,
            data_dir: data_dir.to_owned(),
        };
        loop {
            if let Ok(reply) = http.get(&health).send().await {
                if reply.status().is_success() {
                    return Ok((server, started.elapsed()));
                }
            }
            if let Some(status) = server.child.try_wait()? {
                bail!("airlock serve exited ({status}): {}", server.log_tail());
            }
            if started.elapsed() > START_PATIENCE {
                bail!("airlock serve did not serve /healthz within {START_PATIENCE:?}");
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// The owner's token, as the server wrote it to its data folder on its first start.
    pub fn owner_token(&self) -> anyhow::Result<String> {
        let token = std::fs::read_to_string(self.data_dir.join("owner.token"))
            .context("the server wrote no owner.token")?;
        Ok(token.trim().to_owned())
    }

    /// Resident and peak resident memory, in bytes (`VmRSS`, `VmHWM`).
    pub fn memory(&self) -> anyhow::Result<(u64, u64)> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid))?;
        let field = |name: &str| -> anyhow::Result<u64> {
            let line = status
                .lines()
                .find(|line| line.starts_with(name))
                .with_context(|| format!("no {name} in /proc/{}/status", self.pid))?;
            let kib: u64 = line
                .trim_start_matches(name)
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()?;
            Ok(kib * 1024)
        };
        Ok((field("VmRSS:")?, field("VmHWM:")?))
    }

    /// Stops the server with SIGTERM (a clean shutdown) and waits for it.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        use nix::sys::signal::{kill, Signal};
        use nix::unistd::Pid;
        let pid = i32::try_from(self.pid)?;
        kill(Pid::from_raw(pid), Signal::SIGTERM)?;
        let status = match tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await {
            Ok(status) => status?,
            Err(_) => {
                self.child.kill().await?;
                bail!("airlock serve did not stop within 30 s of SIGTERM")
            }
        };
        if !status.success() {
            bail!(
                "airlock serve stopped badly ({status}): {}",
                self.log_tail()
            );
        }
        Ok(())
    }

    /// Kills the server with SIGKILL (a crash) and waits for it.
    pub async fn crash(mut self) -> anyhow::Result<()> {
        self.child.kill().await?;
        Ok(())
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let start = log.len().saturating_sub(2000);
        log.get(start..).unwrap_or(&log).to_owned()
    }
}

/// Creates an agent named `name` through the API of the server at `url`, as its owner;
/// returns the agent's token.
pub async fn create_agent(
    http: &reqwest::Client,
    url: &str,
    owner_token: &str,
    name: &str,
) -> anyhow::Result<String> {
    let reply = http
        .post(format!("{url}/v1/agents"))
        .bearer_auth(owner_token)
        .json(&serde_json::json!({"name": name}))
        .send()
        .await?;
    let status = reply.status();
    let body: serde_json::Value = reply.json().await.context("POST /v1/agents: not JSON")?;
    match body["token"].as_str() {
        Some(token) if status.as_u16() == 201 => Ok(token.to_owned()),
        _ => bail!("POST /v1/agents answered {status}: {body}"),
    }
}
