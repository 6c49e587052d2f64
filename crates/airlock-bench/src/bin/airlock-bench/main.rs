//! `airlock-bench`: airlock measured against its peers and against the machine's limits
//! (issue 9, DESIGN.md §9). Each subcommand prints one JSON line per figure as it is
//! measured and a human table at the end; `--quick` is the small run CI makes so the code
//! keeps working (CI checks that it runs, not its numbers).
//!
//! - `policy` (`policy.rs`): airlock, `cedar-policy` and `regorus` on one corpus.
//! - `gate` (`gate.rs`): auto-allowed calls over HTTP from a second process, beside a bare
//!   axum endpoint and the raw commit rate of the same database.
//! - `roundtrip` (`roundtrip.rs`): decision → long-poller, decision → suspended run.
//! - `all`: every one of them in turn.
//!
//! `park`, `audit` and `recovery` of issue 9 are not written yet (BENCHMARKS.md says so).

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod gate;
mod load;
mod policy;
mod report;
mod roundtrip;
mod server;

use clap::{Parser, Subcommand};
use report::Report;
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use std::alloc::System;
use std::process::ExitCode;

/// Counts allocations so `policy` can report the heap a compiled policy keeps. The
/// counters are relaxed atomics: a few nanoseconds per allocation, the same for every
/// engine and server measured.
#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[derive(Parser)]
#[command(name = "airlock-bench", about = "airlock's benchmarks (BENCHMARKS.md)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Policy evaluation: airlock vs cedar-policy vs regorus.
    Policy(Options),
    /// Gate throughput over HTTP, beside a bare axum endpoint and raw commits.
    Gate(Options),
    /// Approval round trips: to a long-poller, and to a suspended run's tool.
    Roundtrip(Options),
    /// Every benchmark in turn.
    All(Options),
    /// The load generator `gate` runs in a second process (not for people).
    #[command(hide = true)]
    Load(load::LoadArgs),
}

#[derive(clap::Args, Clone, Copy)]
struct Options {
    /// A small, fast run (CI's): fewer sizes, samples and seconds.
    #[arg(long)]
    quick: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Load(args) = cli.command {
        return match load::child(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("airlock-bench load: {error:#}");
                ExitCode::FAILURE
            }
        };
    }
    let mut report = Report::default();
    let outcome = run(&cli.command, &mut report);
    println!("{}", report.table());
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("airlock-bench: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: &Command, report: &mut Report) -> anyhow::Result<()> {
    match *command {
        Command::Policy(options) => policy::run(report, options.quick, ALLOCATOR),
        Command::Gate(options) => gate::run(report, options.quick),
        Command::Roundtrip(options) => roundtrip::run(report, options.quick),
        Command::All(options) => {
            policy::run(report, options.quick, ALLOCATOR)?;
            gate::run(report, options.quick)?;
            roundtrip::run(report, options.quick)
        }
        Command::Load(_) => Ok(()),
    }
}
