//! The `airlock` binary: argument parsing, dispatch and exit codes (DESIGN.md §7).
//!
//! Exit codes: 0 ok, 1 a refusal or a failed check (a deny, an invalid policy, a failed
//! case, a tampered audit), 2 usage or connection error. Each command module returns an
//! [`Outcome`] and only this file turns it into a process exit code.

// The binary's job is to print.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod commands;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// airlock: a human-in-the-loop approval gateway for AI agent tool calls.
#[derive(Debug, Parser)]
#[command(name = "airlock", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check, evaluate and test policy files offline.
    #[command(subcommand)]
    Policy(commands::policy::PolicyCommand),
}

/// How a command ended, mapped to the exit codes of DESIGN.md §7.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0.
    Ok,
    /// Exit 1: a refusal or a failed check.
    Refused,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Policy(command) => commands::policy::run(command),
    };
    match result {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Refused) => ExitCode::from(1),
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}
