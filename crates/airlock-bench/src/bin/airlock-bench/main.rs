//! `airlock-bench`: airlock measured against its peers and against the machine's limits
//! (issue 9, DESIGN.md §9). Each subcommand prints one JSON line per figure as it is
//! measured and a human table at the end; `--quick` is the small run CI makes so the code
//! keeps working (CI checks that it runs, not its numbers).
//!
//! - `policy` (`policy.rs`): airlock, `cedar-policy` and `regorus` on one corpus.
//! - `gate` (`gate.rs`): auto-allowed calls over HTTP from a second process, beside a bare
//!   axum endpoint and the raw commit rate of the same database.
//! - `roundtrip` (`roundtrip.rs`): decision → long-poller, decision → suspended run.
//! - `park` (`park.rs`): thousands of parked long-pollers over a store of pending
//!   approvals, against a real `airlock serve` process: its RSS and the inbox's latency.
//! - `audit` (`audit.rs`): verifying a long hash chain, in the store and from an export.
//! - `recovery` (`recovery.rs`): a real `airlock serve` from process start to serving, on
//!   a store holding many pending approvals and run journal events.
//! - `telemetry` (`telemetry.rs`): the gate's throughput with OpenTelemetry export on
//!   and off, in alternating pairs (not part of `all`: it needs an OTLP receiver).
//! - `replay` (`replay.rs`): `airlock policy replay` over a million recorded calls piped
//!   into the real binary: wall time and peak memory at two sizes.
//! - `fatigue` (`fatigue.rs`): prompts, over-asks, misses and unsafe allows on recorded
//!   sessions of other people's agents, replayed through the hook endpoints of a real
//!   `airlock serve`, beside Claude Code's permission regimes. It prints its own table (or
//!   `--json`), not the figures' lines, and is not part of `all`.
//! - `all`: every one of them in turn.
//!
//! The data the last three need is made through the gate and store APIs (`seed.rs`); the
//! server they measure is the `airlock` binary (`process.rs`).

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod audit;
mod fatigue;
mod gate;
mod load;
mod park;
mod pg;
mod policy;
mod process;
mod recovery;
mod replay;
mod report;
mod roundtrip;
mod seed;
mod server;
mod telemetry;
mod window;

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
    /// Parked long-pollers over many pending approvals: server RSS, inbox latency.
    Park(Options),
    /// Audit chain verification, in the store and from an export file.
    Audit(Options),
    /// Restart to serving over many pending approvals and journal events.
    Recovery(Options),
    /// `airlock policy replay` over a million recorded calls: time and peak memory.
    Replay(Options),
    /// Every benchmark in turn.
    All(Options),
    /// Prompts and misses on recorded agent sessions, beside Claude Code's regimes.
    Fatigue(fatigue::FatigueArgs),
    /// Gate throughput with OpenTelemetry on and off, in pairs (needs
    /// OTEL_EXPORTER_OTLP_ENDPOINT: a receiver to export to).
    Telemetry(telemetry::TelemetryOptions),
    /// The load generator `gate` runs in a second process (not for people).
    #[command(hide = true)]
    Load(load::LoadArgs),
}

#[derive(clap::Args, Clone, Debug)]
pub struct Options {
    /// A small, fast run (CI's): fewer sizes, samples and seconds.
    #[arg(long)]
    pub quick: bool,
    /// A PostgreSQL server for the PostgreSQL figures: the URL of a database of a role
    /// that may `CREATE DATABASE` (each figure gets a fresh database, dropped after).
    #[arg(long, value_name = "URL", env = "AIRLOCK_TEST_PG_URL")]
    pub pg_url: Option<String>,
    /// The `airlock` binary that `gate`, `park` and `recovery` start [default: `airlock` beside
    /// this binary, as `cargo build -p airlock-cli` leaves it].
    #[arg(long, value_name = "FILE", env = "AIRLOCK_BIN")]
    pub airlock_bin: Option<std::path::PathBuf>,
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
    if let Command::Fatigue(args) = &cli.command {
        return match fatigue::run(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("airlock-bench fatigue: {error:#}");
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
    match command {
        Command::Policy(options) => policy::run(report, options.quick, ALLOCATOR),
        Command::Gate(options) => gate::run(report, options),
        Command::Roundtrip(options) => roundtrip::run(report, options.quick),
        Command::Park(options) => park::run(report, options),
        Command::Audit(options) => audit::run(report, options),
        Command::Recovery(options) => recovery::run(report, options),
        Command::Telemetry(options) => telemetry::run(report, options),
        Command::Replay(options) => replay::run(report, options),
        Command::All(options) => {
            // The PostgreSQL figures need a server: say so before minutes of other work.
            pg::admin_url(options)?;
            process::airlock_binary(options)?;
            policy::run(report, options.quick, ALLOCATOR)?;
            gate::run(report, options)?;
            roundtrip::run(report, options.quick)?;
            park::run(report, options)?;
            audit::run(report, options)?;
            recovery::run(report, options)?;
            replay::run(report, options)
        }
        Command::Load(_) | Command::Fatigue(_) => Ok(()),
    }
}
