//! `airlock-bench recovery`: restart to serving (DESIGN.md §9, "Audit"): a real `airlock
//! serve` on a SQLite store holding many pending approvals and run journal events, timed
//! from spawning the process to its first `200` on `/healthz`, and on to its first inbox
//! page (`GET /v1/approvals?status=pending`).
//!
//! The server is started several times; it is stopped alternately with SIGTERM (a clean
//! shutdown) and SIGKILL (a crash, which leaves the WAL and whatever was in flight to the
//! next start), and each kind of restart reports its median.

use crate::process::{airlock_binary, ServerProcess};
use crate::report::Report;
use crate::seed::Seeded;
use crate::Options;
use airlock_bench::stats::median;
use anyhow::bail;
use std::time::Instant;

const BENCH: &str = "recovery";

struct Plan {
    pending: usize,
    runs: usize,
    events_per_run: usize,
    /// Restarts of each kind.
    restarts: usize,
}

pub fn run(report: &mut Report, options: &Options) -> anyhow::Result<()> {
    let plan = if options.quick {
        Plan {
            pending: 1_000,
            runs: 10,
            events_per_run: 1_000,
            restarts: 1,
        }
    } else {
        Plan {
            pending: 100_000,
            runs: 1_000,
            events_per_run: 1_000,
            restarts: 3,
        }
    };
    let binary = airlock_binary(options)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(measure(report, &plan, &binary))
}

async fn measure(report: &mut Report, plan: &Plan, binary: &std::path::Path) -> anyhow::Result<()> {
    let folder = tempfile::TempDir::new()?;
    let data = folder.path().join("data");
    let started = Instant::now();
    let seeded = Seeded::create(&data).await?;
    let agents = seeded.agents(16).await?;
    seeded.pending_calls(&agents, plan.pending).await?;
    seeded
        .journal(&agents[0].0, plan.runs, plan.events_per_run)
        .await?;
    let owner_token = seeded.owner_token.clone();
    seeded.close().await?;
    let events = plan.runs * plan.events_per_run;
    let case = format!(
        "{} pending approvals, {events} journal events (sqlite)",
        plan.pending
    );
    report.add(
        BENCH,
        &case,
        "seeding_time",
        started.elapsed().as_secs_f64(),
        "s",
    );
    let size: u64 = std::fs::read_dir(&data)?
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .starts_with("airlock.db")
        })
        .filter_map(|entry| entry.metadata().ok())
        .map(|metadata| metadata.len())
        .sum();
    report.add(
        BENCH,
        &case,
        "database_size",
        size as f64 / (1024.0 * 1024.0),
        "MiB",
    );

    let http = reqwest::Client::new();
    let expected = plan.pending.min(100);
    let mut to_health = [Vec::new(), Vec::new()];
    let mut to_inbox = [Vec::new(), Vec::new()];
    // The first start follows the seeding's clean close; each start is followed by a
    // SIGTERM or a SIGKILL in turn, so the next start is after that kind of stop.
    let mut after_crash = false;
    for _ in 0..=2 * plan.restarts {
        let spawned = Instant::now();
        let (server, healthy) = ServerProcess::start(binary, &data).await?;
        let reply = http
            .get(format!("{}/v1/approvals?status=pending", server.url))
            .bearer_auth(&owner_token)
            .send()
            .await?;
        let status = reply.status();
        let body: serde_json::Value = reply.json().await?;
        let inbox = spawned.elapsed();
        let items = body["items"].as_array().map_or(0, Vec::len);
        if !status.is_success() || items != expected {
            bail!("the restarted server's inbox: {status}, {items} items (expected {expected})");
        }
        let kind = usize::from(after_crash);
        to_health[kind].push(healthy.as_secs_f64() * 1e3);
        to_inbox[kind].push(inbox.as_secs_f64() * 1e3);
        after_crash = !after_crash;
        if after_crash {
            server.crash().await?;
        } else {
            server.stop().await?;
        }
    }
    for (kind, name) in [(0, "after clean stop"), (1, "after kill -9")] {
        let restarts = to_health[kind].len();
        let name = format!("{case}, restart {name} (median of {restarts})");
        report.add(
            BENCH,
            &name,
            "to_healthz",
            median(&mut to_health[kind]),
            "ms",
        );
        report.add(
            BENCH,
            &name,
            "to_first_inbox_page",
            median(&mut to_inbox[kind]),
            "ms",
        );
    }
    Ok(())
}
