//! `airlock-bench park`: parked capacity (DESIGN.md §9): a real `airlock serve` on SQLite
//! holding many pending approvals, with thousands of agents long-polling their calls at
//! once (`GET /v1/calls/{id}?wait_s=60`, each poller asking again whenever an answer comes
//! back still pending, so that all stay parked).
//!
//! Figures: the server's resident memory (`VmRSS`, and the peak `VmHWM`, from `/proc`)
//! before and while the callers are parked; the latency of the inbox's first page,
//! `GET /v1/approvals?status=pending` (100 approvals), and of the web inbox `GET /` for a
//! signed-in person, each timed idle and then with the callers parked.

use crate::process::{airlock_binary, raise_fd_limit, ServerProcess};
use crate::report::Report;
use crate::seed::Seeded;
use crate::Options;
use airlock_bench::stats::summarize;
use anyhow::{bail, Context};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const BENCH: &str = "park";
const MIB: f64 = 1024.0 * 1024.0;

struct Plan {
    pollers: usize,
    pending: usize,
    agents: usize,
    /// Inbox requests timed per page and situation.
    samples: usize,
}

impl Plan {
    fn new(quick: bool) -> Plan {
        if quick {
            Plan {
                pollers: 100,
                pending: 1_000,
                agents: 4,
                samples: 30,
            }
        } else {
            Plan {
                pollers: 10_000,
                pending: 100_000,
                agents: 16,
                samples: 300,
            }
        }
    }
}

pub fn run(report: &mut Report, options: &Options) -> anyhow::Result<()> {
    let plan = Plan::new(options.quick);
    let binary = airlock_binary(options)?;
    // Each poller holds a socket here and one in the server; both processes get the
    // raised limit (the server inherits it).
    raise_fd_limit(plan.pollers as u64 + 1_000)?;
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
    let agents = seeded.agents(plan.agents).await?;
    let calls = seeded.pending_calls(&agents, plan.pending).await?;
    let owner_token = seeded.owner_token.clone();
    seeded.close().await?;
    let seeding = started.elapsed().as_secs_f64();
    let case = format!("{} pending approvals (sqlite)", plan.pending);
    report.add(BENCH, &case, "seeding_time", seeding, "s");

    let (server, _) = ServerProcess::start(binary, &data).await?;
    let outcome = parked(report, plan, &server, &case, &owner_token, &agents, &calls).await;
    let stopped = server.stop().await;
    outcome?;
    stopped
}

#[allow(clippy::too_many_arguments)]
async fn parked(
    report: &mut Report,
    plan: &Plan,
    server: &ServerProcess,
    case: &str,
    owner_token: &str,
    agents: &[(airlock_store::Principal, String)],
    calls: &[(usize, String)],
) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let cookie = sign_in(&server.url, owner_token).await?;
    let expected_page = plan.pending.min(100);

    let (rss, _) = server.memory()?;
    report.add(BENCH, case, "rss_idle", rss as f64 / MIB, "MiB");
    inbox(
        report,
        plan,
        &http,
        server,
        owner_token,
        &cookie,
        expected_page,
        &format!("{case}, 0 parked"),
    )
    .await?;

    // Park the callers: one long-poll per pending call, ramped up in bursts so that the
    // server's listen backlog is not what is measured.
    let stop = CancellationToken::new();
    let pollers = reqwest::Client::builder()
        .pool_max_idle_per_host(plan.pollers)
        .timeout(Duration::from_secs(90))
        .build()?;
    let mut tasks = Vec::with_capacity(plan.pollers);
    let ramp = Instant::now();
    for (n, (agent, call_id)) in calls.iter().take(plan.pollers).enumerate() {
        let url = format!("{}/v1/calls/{call_id}?wait_s=60", server.url);
        tasks.push(tokio::spawn(poll(
            pollers.clone(),
            url,
            agents[*agent].1.clone(),
            stop.clone(),
        )));
        if n % 250 == 249 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let parked_case = format!("{case}, {} parked", plan.pollers);
    let waited = Instant::now();
    loop {
        let waiting = waiting_callers(&http, &server.url).await?;
        if waiting >= plan.pollers {
            break;
        }
        if let Some(finished) = tasks.iter().position(|task| task.is_finished()) {
            let task = tasks.swap_remove(finished);
            task.await??;
            bail!("a long-poller stopped before it was told to");
        }
        if waited.elapsed() > Duration::from_secs(120) {
            bail!(
                "only {waiting} of {} callers parked after 120 s",
                plan.pollers
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    report.add(
        BENCH,
        &parked_case,
        "time_to_park_all",
        ramp.elapsed().as_secs_f64(),
        "s",
    );
    // Let the allocator settle, then read the memory the parked callers hold.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (rss, _) = server.memory()?;
    report.add(BENCH, &parked_case, "rss", rss as f64 / MIB, "MiB");
    inbox(
        report,
        plan,
        &http,
        server,
        owner_token,
        &cookie,
        expected_page,
        &parked_case,
    )
    .await?;
    let waiting = waiting_callers(&http, &server.url).await?;
    if waiting < plan.pollers {
        bail!(
            "only {waiting} of {} callers were still parked at the end",
            plan.pollers
        );
    }
    let (rss, peak) = server.memory()?;
    report.add(BENCH, &parked_case, "rss_end", rss as f64 / MIB, "MiB");
    report.add(BENCH, &parked_case, "rss_peak", peak as f64 / MIB, "MiB");
    stop.cancel();
    for task in tasks {
        task.await??;
    }
    Ok(())
}

/// One caller: long-polls its call until told to stop; any answer but "still pending" is
/// an error (nobody decides these calls).
async fn poll(
    http: reqwest::Client,
    url: String,
    token: String,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    loop {
        let request = http.get(&url).bearer_auth(&token).send();
        let reply = tokio::select! {
            reply = request => reply?,
            _ = stop.cancelled() => return Ok(()),
        };
        let status = reply.status();
        let body = reply.text().await?;
        if !status.is_success() || !body.contains("\"status\":\"pending\"") {
            bail!("a long-poll answered {status}: {body}");
        }
    }
}

/// `airlock_waiting_callers` from `/metrics`.
async fn waiting_callers(http: &reqwest::Client, url: &str) -> anyhow::Result<usize> {
    let text = http
        .get(format!("{url}/metrics"))
        .send()
        .await?
        .text()
        .await?;
    let line = text
        .lines()
        .find(|line| line.starts_with("airlock_waiting_callers "))
        .context("no airlock_waiting_callers in /metrics")?;
    Ok(line["airlock_waiting_callers ".len()..].trim().parse()?)
}

/// Signs in to the web inbox with the owner's token; returns the session cookie.
async fn sign_in(url: &str, token: &str) -> anyhow::Result<String> {
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let reply = no_redirects
        .post(format!("{url}/login"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("origin", url)
        .body(format!("token={}", form_escape(token)))
        .send()
        .await?;
    let status = reply.status();
    let cookie = reply
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find(|value| value.starts_with("airlock_session="))
        .and_then(|value| value.split(';').next())
        .map(str::to_owned);
    match cookie {
        Some(cookie) if status.as_u16() == 303 => Ok(cookie),
        _ => bail!("POST /login answered {status} without a session cookie"),
    }
}

fn form_escape(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (byte as char).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// Times the inbox's first page over the API and on the web, one request at a time.
#[allow(clippy::too_many_arguments)]
async fn inbox(
    report: &mut Report,
    plan: &Plan,
    http: &reqwest::Client,
    server: &ServerProcess,
    owner_token: &str,
    cookie: &str,
    expected: usize,
    case: &str,
) -> anyhow::Result<()> {
    let api = format!("{}/v1/approvals?status=pending", server.url);
    let mut samples = Vec::with_capacity(plan.samples);
    for _ in 0..plan.samples {
        let sent = Instant::now();
        let reply = http.get(&api).bearer_auth(owner_token).send().await?;
        let status = reply.status();
        let body: serde_json::Value = reply.json().await?;
        samples.push(sent.elapsed().as_nanos() as u64);
        let items = body["items"].as_array().map_or(0, Vec::len);
        if !status.is_success() || items != expected {
            bail!(
                "GET /v1/approvals?status=pending: {status}, {items} items (expected {expected})"
            );
        }
    }
    let summary = summarize(&mut samples);
    let name = format!("{case}: GET /v1/approvals?status=pending");
    report.add(BENCH, &name, "p50", summary.p50 / 1e6, "ms");
    report.add(BENCH, &name, "p99", summary.p99 / 1e6, "ms");

    let web = format!("{}/", server.url);
    let mut samples = Vec::with_capacity(plan.samples);
    for _ in 0..plan.samples {
        let sent = Instant::now();
        let reply = http.get(&web).header("cookie", cookie).send().await?;
        let status = reply.status();
        let page = reply.text().await?;
        samples.push(sent.elapsed().as_nanos() as u64);
        if !status.is_success() || !page.contains("customer") {
            bail!("GET / (signed in): {status}, the page lists no pending mail");
        }
    }
    let summary = summarize(&mut samples);
    let name = format!("{case}: web inbox GET /");
    report.add(BENCH, &name, "p50", summary.p50 / 1e6, "ms");
    report.add(BENCH, &name, "p99", summary.p99 / 1e6, "ms");
    Ok(())
}
