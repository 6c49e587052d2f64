//! `airlock-bench telemetry`: what OpenTelemetry export costs the gate (issue 20; the
//! budget is 5% of throughput).
//!
//! The same load as `gate` (64 keep-alive clients in a second process posting the
//! auto-allowed call) against a fresh SQLite airlock, in pairs: one run with telemetry
//! off, one with it on (every call's `airlock.call` span made and exported over OTLP/HTTP
//! to the receiver `OTEL_EXPORTER_OTLP_ENDPOINT` names), the order alternating from pair
//! to pair so that drift in a shared machine's load falls on both sides. The figure is
//! the median over pairs of (on / off); each run's rate is printed too.

use crate::gate::{call_body, POLICY};
use crate::load::{self, LoadArgs};
use crate::report::Report;
use crate::server::{Airlock, Backend};
use airlock_server::telemetry::{traces_endpoint, Telemetry};
use airlock_server::ServeOptions;
use anyhow::{bail, Context};
use serde_json::json;

const BENCH: &str = "telemetry";

#[derive(clap::Args, Clone, Debug)]
pub struct TelemetryOptions {
    /// How many (off, on) pairs to run.
    #[arg(long, default_value_t = 5)]
    pub pairs: usize,
    /// Seconds of load per run (after one second of warm-up).
    #[arg(long, default_value_t = 5)]
    pub seconds: u64,
}

pub fn run(report: &mut Report, options: &TelemetryOptions) -> anyhow::Result<()> {
    let env = |name: &str| std::env::var(name).ok();
    let endpoint = traces_endpoint(&env)
        .context("set OTEL_EXPORTER_OTLP_ENDPOINT to a running OTLP/HTTP receiver")?;
    eprintln!("telemetry: exporting to {endpoint}");
    // Built outside the async runtime, as `airlock serve` does.
    let telemetry = Telemetry::from_env(&env).map_err(anyhow::Error::msg)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let mut ratios = Vec::new();
    for pair in 0..options.pairs {
        // Alternate which side goes first.
        let order = if pair % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        let mut rates = [0.0f64; 2];
        for on in order {
            let serve = ServeOptions {
                telemetry: if on {
                    telemetry.clone()
                } else {
                    Telemetry::disabled()
                },
                ..ServeOptions::default()
            };
            let rate = runtime.block_on(one_run(serve, options.seconds))?;
            let side = if on { "on" } else { "off" };
            report.add(
                BENCH,
                format!("pair {pair}, telemetry {side}"),
                "throughput",
                rate,
                "decisions/s",
            );
            rates[usize::from(on)] = rate;
        }
        ratios.push(rates[1] / rates[0]);
    }
    telemetry.shutdown();
    ratios.sort_by(f64::total_cmp);
    let median = match ratios.len() {
        0 => bail!("no pairs were run"),
        n if n % 2 == 1 => ratios[n / 2],
        n => (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0,
    };
    report.add(BENCH, "on / off, median of pairs", "ratio", median, "x");
    report.add(
        BENCH,
        "cost of telemetry on",
        "throughput_lost",
        (1.0 - median) * 100.0,
        "%",
    );
    Ok(())
}

/// One run: a fresh SQLite airlock with `serve`, the policy, an agent, the load.
async fn one_run(serve: ServeOptions, seconds: u64) -> anyhow::Result<f64> {
    let server = Airlock::start_with(&Backend::Sqlite, serve).await?;
    server.put_policy(POLICY).await?;
    let (_, agent) = server.create_agent(&json!({"name": "bench"})).await?;
    let args = LoadArgs {
        url: format!("{}/v1/calls", server.url),
        token: agent,
        body: call_body(),
        expect: 201,
        clients: 64,
        warmup_ms: 1_000,
        window_ms: seconds * 1_000,
    };
    let result = load::run(&args).await?;
    server.stop().await?;
    Ok(result.per_second())
}
