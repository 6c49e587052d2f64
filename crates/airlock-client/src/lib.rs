//! The client side of airlock that must start fast: the whole of `airlock hook claude-code |
//! codex | gemini` ([`hook`]), a plain-HTTP client for it ([`plain`]), and what every
//! client command shares: its options ([`args`]), how a failed request reads
//! ([`errors`]), and sending a request again while its answer is lost ([`retry`]).
//!
//! Coding agents run their hook as a new process for every tool call, so the hook's cost
//! is mostly the cost of starting a process. The `airlock` binary is therefore a small
//! front (`airlock-cli/src/front.rs`) that links this crate and nothing of the server or
//! of TLS: it runs `airlock hook …` itself for `http://` gateways and hands every other
//! command line to `airlock-full`, the binary with the whole CLI, installed beside it.
//! Both binaries run the same hook code, this one; `airlock-full` reaches `https://`
//! gateways through its own client (with TLS).
//!
//! Exit codes (DESIGN.md §7): 0 ok, 1 a refusal or a failed check, 2 usage or connection
//! error; [`exit_code`] is the one place an outcome becomes one.

// The hook's answer goes to stdout, its reasons to stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]

pub mod args;
pub mod errors;
pub mod hook;
pub mod plain;
pub mod retry;
pub mod url;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// How a command ended, mapped to the exit codes of DESIGN.md §7.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0.
    Ok,
    /// Exit 1: a refusal or a failed check.
    Refused,
}

/// A command's exit code: an error is printed and is exit 2 unless it is a
/// [`errors::Refused`] (exit 1).
pub fn exit_code(result: anyhow::Result<Outcome>) -> ExitCode {
    match result {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Refused) => ExitCode::from(1),
        Err(error) => {
            eprintln!("error: {error:#}");
            if error.downcast_ref::<errors::Refused>().is_some() {
                ExitCode::from(1)
            } else {
                ExitCode::from(2)
            }
        }
    }
}

/// A fresh `Idempotency-Key` for one call (the form of the server's ids: a prefix and a
/// time-ordered UUID).
pub fn new_key() -> String {
    format!("idem_{}", uuid::Uuid::now_v7().simple())
}

/// The parser of `airlock hook …` alone, so that a hook process builds no other command's
/// parser. The command, its flags, its help and its errors are the same as the whole
/// CLI's (`airlock-cli/src/main.rs` has the test that compares them).
#[derive(Debug, Parser)]
#[command(name = "airlock", bin_name = "airlock", version, about = ABOUT)]
pub struct HookCli {
    #[command(subcommand)]
    pub command: HookCommand,
}

/// The whole CLI's description, which `--help` prints first.
pub const ABOUT: &str = "airlock: a human-in-the-loop approval gateway for AI agent tool calls.";

#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Gate a coding agent's tool call from its hook: hook JSON on stdin, verdict on stdout.
    Hook(hook::HookArgs),
}

/// Parses `airlock hook …` from the process's arguments, printing help or a usage error
/// and exiting as clap does.
pub fn parse_hook_command() -> hook::HookArgs {
    let HookCli {
        command: HookCommand::Hook(args),
    } = HookCli::parse();
    args
}

/// Runs `airlock hook …` against an `http://` gateway; any other URL gives the arguments
/// back, for a client that speaks TLS.
pub fn run_plain_hook(args: hook::HookArgs) -> Result<anyhow::Result<Outcome>, hook::HookArgs> {
    if !plain::serves(&args.client().url) {
        return Err(args);
    }
    let client = plain::Plain::new(&args.client().url, args.client().resolve_token());
    Ok(hook::run(args, client))
}
