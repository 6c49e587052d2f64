//! `airlock`, the command users and agents run: a small front to `airlock-full`.
//!
//! Coding agents run `airlock hook …` as a new process for every tool call, and most of a
//! process's cost is its start: loading and relocating the binary. The whole CLI carries
//! the server (an async runtime, two database drivers, TLS, the web inbox, the MCP proxy),
//! and relocating it cost more than the hook's own work. So this binary links only
//! `airlock-client` and runs `airlock hook …` itself, with the same code the whole CLI
//! uses, when the gateway is `http://`. Every other command line (and a hook to an
//! `https://` gateway) goes unchanged to `airlock-full` beside it, by `exec`: the same
//! process, arguments, standard streams, environment and exit code.

// The binary's job is to say why it cannot hand over.
#![allow(clippy::print_stderr)]

use airlock_client::hook::{Post, Posted};
use anyhow::anyhow;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// The binary with the whole CLI.
const FULL: &str = "airlock-full";

fn main() -> ExitCode {
    let mut args = std::env::args_os();
    let program = args.next().unwrap_or_else(|| OsString::from("airlock"));
    let rest: Vec<OsString> = args.collect();
    if rest.first().is_some_and(|first| first == "hook") {
        let hook = match airlock_client::run_plain_hook(airlock_client::parse_hook_command()) {
            Ok(outcome) => return airlock_client::exit_code(outcome),
            Err(hook) => hook,
        };
        // Only a failed hand-over comes back: the hook still answers in the agent's own
        // deny form (fail closed), which a bare exit code is not for every agent.
        let error = hand_over(program, &rest);
        let unreachable = CannotHandOver(format!("{error:#}"));
        return airlock_client::exit_code(airlock_client::hook::run(hook, unreachable));
    }
    let error = hand_over(program, &rest);
    eprintln!("error: {error:#}");
    ExitCode::from(2)
}

/// Runs `airlock-full` with this command line in this process; returns only on failure.
fn hand_over(program: OsString, rest: &[OsString]) -> anyhow::Error {
    let full = full_binary();
    let error = Command::new(&full).arg0(program).args(rest).exec();
    anyhow!(
        "cannot run {}: {error}. `airlock` runs `airlock hook` itself and hands every other \
         command to `{FULL}`, installed beside it (cargo install and cargo build put both in \
         the same folder)",
        full.display()
    )
}

/// `airlock-full` in this binary's own folder (links resolved), else the one on `PATH`.
fn full_binary() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|folder| folder.join(FULL)))
        .filter(|beside| beside.is_file())
        .unwrap_or_else(|| PathBuf::from(FULL))
}

/// The hook's way to a gateway this binary cannot reach itself, when `airlock-full`
/// could not be run: every request fails, with why.
struct CannotHandOver(String);

impl Post for CannotHandOver {
    fn post_text(&self, _: &str, _: &str, _: &[(&str, String)]) -> anyhow::Result<Posted> {
        Err(anyhow!("{}", self.0))
    }
}
