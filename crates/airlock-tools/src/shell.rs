//! `shell.exec`: `sh -c COMMAND` in the workspace directory, in a process group of its
//! own, killed whole when it runs out of time.
//!
//! The command gets a cleared environment with only a sane `PATH`, `HOME` (the workspace)
//! and `LANG`: the server's own environment holds secrets (database URLs, SMTP passwords,
//! provider keys) that a command must not see. Standard input is `/dev/null`, so a command
//! that waits for input ends instead of hanging.
//!
//! Why a process group: `sh -c 'server &'` leaves children that outlive the shell, keep
//! its output pipes open (so reading them would never end) and keep running after the
//! tool has returned. The command is started as the leader of a new process group, and
//! the whole group is killed when the shell exits, when the time is up, or when the
//! execution is dropped. A process that leaves the group on purpose (`setsid`) escapes
//! this; the time limit still bounds how long we wait for it.

use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use crate::execute::{ToolContext, ToolOutput};

/// `PATH` for commands: the usual system directories, nothing from the server's own.
const SANE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// `shell.exec`: `{exit_code, stdout, stderr, timed_out, truncated}`; `ok` is exit code 0
/// within the time limit. `exit_code` is null when the command was killed by a signal.
pub(crate) async fn exec(command: &str, context: &ToolContext) -> ToolOutput {
    let workspace = match std::fs::canonicalize(&context.workspace_dir) {
        Ok(workspace) if workspace.is_dir() => workspace,
        _ => {
            return ToolOutput::error(format!(
                "the workspace directory {} is not usable",
                context.workspace_dir.display()
            ))
        }
    };
    let mut child = match Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .current_dir(&workspace)
        .env_clear()
        .env("PATH", SANE_PATH)
        .env("HOME", &workspace)
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
    {
        Ok(child) => child,
        Err(error) => return ToolOutput::error(format!("cannot start sh: {error}")),
    };
    // INVARIANT: a spawned child that has not been waited for has an id.
    let Some(group) = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(ProcessGroup::new)
    else {
        return ToolOutput::error("the command exited before it could be watched");
    };
    let stdout_pipe = child.stdout.take();
    let stderr_pipe = child.stderr.take();
    let limit = context.limits.output_max_bytes;
    let mut stdout = Capture::default();
    let mut stderr = Capture::default();
    let mut status: Option<std::io::Result<ExitStatus>> = None;

    let finished = tokio::time::timeout(context.limits.shell_timeout, async {
        let waiting = async {
            status = Some(child.wait().await);
            // The shell is gone; whatever it left running in its group goes too, which
            // also closes the pipes those leftovers hold, so the reads below can end.
            group.kill();
        };
        let reading = async {
            tokio::join!(
                stdout.read_from(stdout_pipe, limit),
                stderr.read_from(stderr_pipe, limit)
            )
        };
        tokio::join!(waiting, reading);
    })
    .await
    .is_ok();

    if !finished {
        group.kill();
        if status.is_none() {
            status = Some(child.wait().await);
        }
    }
    let status = match status {
        Some(Ok(status)) => status,
        Some(Err(error)) => return ToolOutput::error(format!("cannot wait for sh: {error}")),
        None => return ToolOutput::error("sh was never waited for"),
    };
    let timed_out = !finished;
    ToolOutput {
        ok: status.success() && !timed_out,
        output: json!({
            "exit_code": status.code(),
            "signal": status.signal(),
            "stdout": String::from_utf8_lossy(&stdout.bytes),
            "stderr": String::from_utf8_lossy(&stderr.bytes),
            "timed_out": timed_out,
            "truncated": stdout.truncated || stderr.truncated,
        }),
    }
}

/// The command's process group, killed (once) when asked or when dropped.
struct ProcessGroup {
    id: Pid,
    killed: AtomicBool,
}

impl ProcessGroup {
    fn new(leader: i32) -> ProcessGroup {
        ProcessGroup {
            id: Pid::from_raw(leader),
            killed: AtomicBool::new(false),
        }
    }

    /// Sends SIGKILL to every process of the group, the first time only: once the group
    /// is empty its id may be reused, and a second kill could hit a stranger.
    fn kill(&self) {
        if !self.killed.swap(true, Ordering::SeqCst) {
            // ESRCH (the group is already empty) is the normal case after a clean exit.
            let _ = killpg(self.id, Signal::SIGKILL);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        // The execution was dropped (cancelled) before it finished: leave nothing behind.
        self.kill();
    }
}

/// What was read from one output pipe, up to a limit.
#[derive(Default)]
struct Capture {
    bytes: Vec<u8>,
    truncated: bool,
}

impl Capture {
    /// Reads `pipe` to its end, keeping the first `limit` bytes. The rest is read and
    /// dropped rather than left unread: a writer blocked on a full pipe would never exit.
    async fn read_from(&mut self, pipe: Option<impl AsyncRead + Unpin>, limit: usize) {
        let Some(mut pipe) = pipe else { return };
        let mut buffer = [0u8; 8192];
        loop {
            let read = match pipe.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(read) => read,
            };
            let room = limit.saturating_sub(self.bytes.len());
            if read > room {
                self.truncated = true;
            }
            self.bytes.extend_from_slice(&buffer[..read.min(room)]);
        }
    }
}
