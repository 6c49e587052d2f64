//! The HTTP load generator: N concurrent keep-alive clients, each sending the same `POST`
//! back to back, in a second process so that it does not share the server's scheduler.
//!
//! The parent (`run`) re-executes this binary with the hidden `load` subcommand; the child
//! (`child`) warms up, then counts the requests that start and finish inside the measured
//! window, and prints one JSON line with the counts and the latency percentiles.

use airlock_bench::stats::summarize;
use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// The hidden `load` subcommand's arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct LoadArgs {
    /// The full URL to POST to.
    #[arg(long)]
    pub url: String,
    /// Bearer token (empty: none).
    #[arg(long, default_value = "")]
    pub token: String,
    /// The JSON body.
    #[arg(long)]
    pub body: String,
    /// The status every answer must have.
    #[arg(long, default_value_t = 201)]
    pub expect: u16,
    /// Concurrent clients (each one keep-alive connection).
    #[arg(long, default_value_t = 64)]
    pub clients: usize,
    /// Unmeasured warm-up, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    pub warmup_ms: u64,
    /// The measured window, in milliseconds.
    #[arg(long, default_value_t = 5000)]
    pub window_ms: u64,
}

/// What the child measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadResult {
    /// Requests that started and finished inside the window with the expected status.
    pub requests: u64,
    /// Answers with another status, or failed requests (any time).
    pub errors: u64,
    pub first_error: Option<String>,
    pub window_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

impl LoadResult {
    pub fn per_second(&self) -> f64 {
        self.requests as f64 / self.window_s
    }
}

/// Runs the load generator in a second process and returns what it measured.
pub async fn run(args: &LoadArgs) -> anyhow::Result<LoadResult> {
    let exe = std::env::current_exe()?;
    let output = tokio::process::Command::new(exe)
        .arg("load")
        .args(["--url", &args.url])
        .args(["--token", &args.token])
        .args(["--body", &args.body])
        .args(["--expect", &args.expect.to_string()])
        .args(["--clients", &args.clients.to_string()])
        .args(["--warmup-ms", &args.warmup_ms.to_string()])
        .args(["--window-ms", &args.window_ms.to_string()])
        .kill_on_drop(true)
        .output()
        .await?;
    if !output.status.success() {
        bail!(
            "the load generator failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .last()
        .context("the load generator printed nothing")?;
    let result: LoadResult = serde_json::from_str(line)
        .with_context(|| format!("the load generator's answer: {line}"))?;
    if let Some(error) = &result.first_error {
        bail!(
            "{} failed requests under load, first: {error}",
            result.errors
        );
    }
    Ok(result)
}

/// The child: generate the load, print the result.
pub fn child(args: LoadArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(generate(args))?;
    println!("{}", serde_json::to_string(&result)?);
    Ok(())
}

struct ClientTally {
    latencies_ns: Vec<u64>,
    errors: u64,
    first_error: Option<String>,
}

async fn generate(args: LoadArgs) -> anyhow::Result<LoadResult> {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(args.clients)
        .tcp_nodelay(true)
        .build()?;
    let body = args.body.clone();
    let start = Instant::now();
    let window_start = start + Duration::from_millis(args.warmup_ms);
    let window_end = window_start + Duration::from_millis(args.window_ms);
    let clients: Vec<_> = (0..args.clients)
        .map(|_| {
            let http = http.clone();
            let body = body.clone();
            let args = args.clone();
            tokio::spawn(async move {
                let mut tally = ClientTally {
                    latencies_ns: Vec::new(),
                    errors: 0,
                    first_error: None,
                };
                loop {
                    let sent = Instant::now();
                    if sent >= window_end {
                        break;
                    }
                    let mut request = http
                        .post(&args.url)
                        .header("content-type", "application/json")
                        .body(body.clone());
                    if !args.token.is_empty() {
                        request = request.bearer_auth(&args.token);
                    }
                    let outcome = match request.send().await {
                        Ok(reply) => {
                            let status = reply.status().as_u16();
                            match reply.bytes().await {
                                Ok(_) if status == args.expect => Ok(()),
                                Ok(text) => Err(format!(
                                    "status {status}: {}",
                                    String::from_utf8_lossy(&text)
                                )),
                                Err(error) => Err(error.to_string()),
                            }
                        }
                        Err(error) => Err(error.to_string()),
                    };
                    let done = Instant::now();
                    match outcome {
                        Ok(()) if sent >= window_start && done <= window_end => tally
                            .latencies_ns
                            .push(done.duration_since(sent).as_nanos() as u64),
                        Ok(()) => {}
                        Err(error) => {
                            tally.errors += 1;
                            tally.first_error.get_or_insert(error);
                        }
                    }
                }
                tally
            })
        })
        .collect();
    let mut latencies = Vec::new();
    let mut errors = 0;
    let mut first_error = None;
    for client in clients {
        let tally = client.await?;
        latencies.extend(tally.latencies_ns);
        errors += tally.errors;
        if first_error.is_none() {
            first_error = tally.first_error;
        }
    }
    let summary = summarize(&mut latencies);
    Ok(LoadResult {
        requests: summary.count as u64,
        errors,
        first_error,
        window_s: args.window_ms as f64 / 1e3,
        p50_ms: summary.p50 / 1e6,
        p99_ms: summary.p99 / 1e6,
    })
}
