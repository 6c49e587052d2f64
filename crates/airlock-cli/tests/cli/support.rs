//! Running the real `airlock` binary: a `serve` process on a free port in a temp folder
//! (killed on drop), client commands against it, and waiting with deadlines.

pub use crate::captured::Captured;
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_airlock");

/// A command for the binary with no inherited airlock settings, run in `dir` (so that the
/// default `./airlock-data/owner.token` is never one left lying around).
pub fn command(dir: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .current_dir(dir)
        .env_remove("AIRLOCK_URL")
        .env_remove("AIRLOCK_TOKEN")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null());
    command
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A port nobody listened on a moment ago.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind port 0");
    listener.local_addr().expect("local address").port()
}

/// Polls `condition` every 50 ms until it holds or `limit` passes.
pub fn eventually(limit: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !condition() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits for a child to exit, killing it and failing after `limit`.
pub fn wait_exit(child: &mut Child, limit: Duration) -> ExitStatus {
    let until = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("the process did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A running `airlock serve`, killed when dropped.
pub struct Server {
    child: Child,
    pub url: String,
    pub data_dir: PathBuf,
    /// Where client commands run.
    pub work_dir: PathBuf,
    pub stdout: Captured,
    pub stderr: Captured,
    /// What it was started with, for [`Server::restart`].
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Server {
    /// Starts `airlock serve --data-dir WORK/data --listen 127.0.0.1:PORT ARGS…` and waits
    /// until `/healthz` answers.
    pub fn start(work_dir: &Path, args: &[&str]) -> Server {
        Server::start_with_env(work_dir, args, &[])
    }

    /// [`Server::start`] with extra environment variables.
    pub fn start_with_env(work_dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
        let args: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        for _attempt in 0..5 {
            let listen = format!("127.0.0.1:{}", free_port());
            let mut server = Server::spawn(work_dir, &listen, args.clone(), env.clone());
            match server.wait_healthy() {
                Ok(()) => return server,
                // Someone took the port between our probe and the bind: try another.
                Err(stderr) if stderr.contains("cannot listen") => continue,
                Err(stderr) => panic!("airlock serve did not start:\n{stderr}"),
            }
        }
        panic!("no free port after 5 attempts");
    }

    /// `airlock serve` on `listen`, not yet known to be healthy.
    fn spawn(
        work_dir: &Path,
        listen: &str,
        args: Vec<String>,
        env: Vec<(String, String)>,
    ) -> Server {
        let data_dir = work_dir.join("data");
        let mut child = command(work_dir)
            .env("RUST_LOG", "info")
            .envs(env.iter().map(|(name, value)| (name, value)))
            .arg("serve")
            .arg("--data-dir")
            .arg(&data_dir)
            .args(["--listen", listen])
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("airlock serve starts");
        let (stdout, stderr) = (Captured::default(), Captured::default());
        stdout.collect(child.stdout.take().unwrap());
        stderr.collect(child.stderr.take().unwrap());
        Server {
            child,
            url: format!("http://{listen}"),
            data_dir,
            work_dir: work_dir.to_owned(),
            stdout,
            stderr,
            args,
            env,
        }
    }

    /// Starts the server again on the same address and data (after [`Server::terminate`]).
    pub fn restart(&mut self) {
        let listen = self.url.trim_start_matches("http://").to_owned();
        let mut again = Server::spawn(&self.work_dir, &listen, self.args.clone(), self.env.clone());
        if let Err(stderr) = again.wait_healthy() {
            panic!("airlock serve did not start again:\n{stderr}");
        }
        *self = again;
    }

    fn wait_healthy(&mut self) -> Result<(), String> {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // Its last words ("cannot listen") may still be in the pipe.
                self.stderr.drain();
                return Err(format!("exited {status}: {}", self.stderr.text()));
            }
            // Only our own server's answer counts: between `free_port` and the bind, another
            // test's server may take the port and answer `/healthz` while ours fails to
            // bind (and exits a moment later). Ours says it listens on our address.
            let ours = [&self.stdout, &self.stderr].iter().any(|output| {
                output
                    .text()
                    .lines()
                    .any(|line| line.contains("airlock listening") && line.contains(&self.url))
            });
            let healthy = ours
                && ureq::get(format!("{}/healthz", self.url))
                    .call()
                    .is_ok_and(|response| response.status() == 200);
            if healthy {
                return Ok(());
            }
            if Instant::now() > until {
                return Err(format!("not healthy after 30 s: {}", self.stderr.text()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn owner_token(&self) -> String {
        std::fs::read_to_string(self.data_dir.join("owner.token"))
            .unwrap()
            .trim()
            .to_owned()
    }

    /// A client command as the owner.
    pub fn client(&self, args: &[&str]) -> Output {
        self.client_as(&self.owner_token(), args)
    }

    /// A client command with `token`.
    pub fn client_as(&self, token: &str, args: &[&str]) -> Output {
        self.client_command(token, args).output().unwrap()
    }

    pub fn client_command(&self, token: &str, args: &[&str]) -> Command {
        let mut command = command(&self.work_dir);
        command
            .args(args)
            .args(["--url", &self.url])
            .env("AIRLOCK_TOKEN", token);
        command
    }

    /// The ids of the pending approvals, newest first.
    pub fn pending(&self) -> Vec<String> {
        let output = self.client(&["approvals", "list", "--json"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let page: Value = serde_json::from_str(&stdout(&output)).unwrap();
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|approval| approval["id"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Creates an agent with the CLI and returns its token.
    pub fn create_agent(&self, name: &str) -> String {
        let output = self.client(&["agents", "create", name]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        stdout(&output)
            .lines()
            .find_map(|line| line.strip_prefix("token"))
            .map(|token| token.trim().to_owned())
            .expect("agents create prints a token line")
    }

    /// `GET path` with the owner token, as JSON.
    pub fn get_json(&self, path: &str) -> Value {
        ureq::get(format!("{}{path}", self.url))
            .header("Authorization", format!("Bearer {}", self.owner_token()))
            .call()
            .unwrap()
            .body_mut()
            .read_json()
            .unwrap()
    }

    /// Sends SIGTERM and returns how the server exited, once all it printed has been read.
    pub fn terminate(&mut self) -> ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(sent.success());
        let status = wait_exit(&mut self.child, Duration::from_secs(15));
        self.stdout.drain();
        self.stderr.drain();
        status
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Kills a child process when dropped (a waiting `airlock call`, say).
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Reads what a finished child wrote to stdout and stderr.
pub fn finished_output(child: &mut Child) -> (String, String) {
    let mut out = String::new();
    let mut err = String::new();
    if let Some(mut pipe) = child.stdout.take() {
        pipe.read_to_string(&mut out).unwrap();
    }
    if let Some(mut pipe) = child.stderr.take() {
        pipe.read_to_string(&mut err).unwrap();
    }
    (out, err)
}
