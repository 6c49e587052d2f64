//! `airlock-bench roundtrip`: how long a person's decision takes to reach whoever waits
//! for it (DESIGN.md §9, "Approval round trip"), on SQLite.
//!
//! - **long-poll**: an agent's call is pending; a caller long-polls it
//!   (`GET /v1/calls/{id}?wait_s=30`); the clock starts when the decision POST is sent and
//!   stops when the caller holds the verdict.
//! - **run**: a built-in run (a scripted model whose first turn calls `email.send`) is
//!   suspended on the approval; the clock starts when the decision POST is sent and stops
//!   when the run's journal (SSE) shows the tool finished (its outbox row written, the
//!   grant consumed in the same transaction), and again at `run_completed`. Beside them,
//!   when the journal shows `run_resumed` (the runtime heard of the decision and claimed
//!   the run), to tell waking up from executing.
//!
//! Beside both, the decision POST's own answer time: the decision's commit is part of
//! every round trip. Approvals are made one after another, each measured on its own.

use crate::report::Report;
use crate::server::{Airlock, Backend};
use airlock_bench::stats::summarize;
use anyhow::{bail, Context};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const BENCH: &str = "roundtrip";

/// Mail is asked (risk `external`: the outbox).
const POLICY: &str = r#"
version = 1
default = "ask"
deadline = "1h"

[[rules]]
name = "mail-needs-a-person"
tool = "email.send"
decision = "ask"
"#;

/// The scripted model: the first turn mails Bob, the second answers.
const SCENARIOS: &str = r##"
[[scenario]]
marker = "#email"
[[scenario.turn]]
events = [{ type = "tool_use", name = "email.send", arguments = { to = "bob@example.com", subject = "Report", body = "Hi Bob." } }]
[[scenario.turn]]
events = [{ type = "text", text = "Mailed Bob." }]
"##;

/// How long anything that should happen at once may take before the run fails.
const PATIENCE: Duration = Duration::from_secs(30);

pub fn run(report: &mut Report, quick: bool) -> anyhow::Result<()> {
    let approvals = if quick { 50 } else { 1_000 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let server = Airlock::start(&Backend::Sqlite).await?;
        server.put_policy(POLICY).await?;
        long_poll(report, &server, approvals).await?;
        suspended_run(report, &server, approvals).await?;
        server.stop().await
    })
}

fn add(report: &mut Report, case: &str, samples: &mut [u64]) {
    let summary = summarize(samples);
    report.add(BENCH, case, "p50", summary.p50 / 1e6, "ms");
    report.add(BENCH, case, "p99", summary.p99 / 1e6, "ms");
    report.add(BENCH, case, "approvals", summary.count as f64, "count");
}

fn text<'a>(value: &'a Value, key: &str) -> anyhow::Result<&'a str> {
    value[key]
        .as_str()
        .with_context(|| format!("no `{key}` in {value}"))
}

/// Approves `approval` as the owner.
async fn approve(server: &Airlock, approval: &Value) -> anyhow::Result<()> {
    let body = json!({
        "decision": "approve",
        "binding_digest": text(approval, "binding_digest")?,
        "reason": "benchmark",
    });
    let path = format!("/v1/approvals/{}/decision", text(approval, "id")?);
    server
        .send(Method::POST, &path, &server.owner_token, Some(&body), 200)
        .await?;
    Ok(())
}

async fn long_poll(report: &mut Report, server: &Airlock, count: usize) -> anyhow::Result<()> {
    let (_, agent) = server.create_agent(&json!({"name": "poller"})).await?;
    let submit =
        json!({"tool": "email.send", "arguments": {"to": "bob@example.com", "body": "hi"}});
    let mut woken = Vec::with_capacity(count);
    let mut answered = Vec::with_capacity(count);
    for _ in 0..count {
        let call = server
            .send(Method::POST, "/v1/calls", &agent, Some(&submit), 201)
            .await?;
        if call["status"] != "pending" {
            bail!("the call is not asked: {call}");
        }
        let approval_path = format!("/v1/approvals/{}", text(&call, "approval_id")?);
        let approval = server
            .send(Method::GET, &approval_path, &server.owner_token, None, 200)
            .await?;
        let poll = {
            let http = server.http.clone();
            let url = format!("{}/v1/calls/{}?wait_s=30", server.url, text(&call, "id")?);
            let agent = agent.clone();
            tokio::spawn(async move {
                let reply = http.get(url).bearer_auth(agent).send().await?;
                let status = reply.status();
                let body = reply.text().await?;
                Ok::<_, reqwest::Error>((status, body, Instant::now()))
            })
        };
        let waited = Instant::now();
        while server.gate.waiting() == 0 {
            if waited.elapsed() > PATIENCE {
                bail!("the long-poller never started waiting");
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        let sent = Instant::now();
        approve(server, &approval).await?;
        answered.push(sent.elapsed().as_nanos() as u64);
        let (status, body, held) = poll.await??;
        if !status.is_success() || !body.contains("\"approved\"") {
            bail!("the long-poller got {status}: {body}");
        }
        woken.push(held.duration_since(sent).as_nanos() as u64);
    }
    add(report, "decision POST answered (sqlite)", &mut answered);
    add(
        report,
        "decision -> long-poller holds verdict (sqlite)",
        &mut woken,
    );
    Ok(())
}

async fn suspended_run(report: &mut Report, server: &Airlock, count: usize) -> anyhow::Result<()> {
    let scenarios = server.data.path().join("bench.scenarios.toml");
    std::fs::write(&scenarios, SCENARIOS)?;
    let llm = json!({"base_url": format!("scripted:{}", scenarios.display()), "model": "script"});
    let (agent_id, _) = server
        .create_agent(&json!({"name": "mailer", "llm": llm, "system_prompt": "You mail."}))
        .await?;
    let owner = &server.owner_token;
    let mut resumed = Vec::with_capacity(count);
    let mut executed = Vec::with_capacity(count);
    let mut completed = Vec::with_capacity(count);
    for _ in 0..count {
        // A session per run, so every run reads the same short conversation.
        let session = server
            .send(
                Method::POST,
                "/v1/sessions",
                owner,
                Some(&json!({"agent_id": agent_id, "title": "bench"})),
                201,
            )
            .await?;
        let path = format!("/v1/sessions/{}/messages", text(&session, "id")?);
        let started = server
            .send(
                Method::POST,
                &path,
                owner,
                Some(&json!({"text": "#email"})),
                202,
            )
            .await?;
        let run_id = text(&started, "run_id")?.to_owned();
        let run = until_suspended(server, &run_id).await?;
        let pending = server
            .send(
                Method::GET,
                "/v1/approvals?status=pending&limit=10",
                owner,
                None,
                200,
            )
            .await?;
        let approval = match pending["items"].as_array().map(Vec::as_slice) {
            Some([approval]) => approval.clone(),
            _ => bail!("expected one pending approval, got {pending}"),
        };
        // Follow the journal from the suspension on, before deciding.
        let events_url = format!(
            "{}/v1/runs/{run_id}/events?after={}",
            server.url, run["last_seq"]
        );
        let mut journal = server
            .http
            .get(events_url)
            .bearer_auth(owner)
            .send()
            .await?;
        if !journal.status().is_success() {
            bail!("GET run events: {}", journal.status());
        }
        let sent = Instant::now();
        approve(server, &approval).await?;
        let mut seen = String::new();
        let mut run_resumed = None;
        let mut tool_finished = None;
        loop {
            let chunk = tokio::time::timeout(PATIENCE, journal.chunk())
                .await
                .context("the run's journal went quiet")??
                .context("the run's journal ended")?;
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if run_resumed.is_none() && seen.contains("\"kind\":\"run_resumed\"") {
                run_resumed = Some(sent.elapsed());
            }
            if tool_finished.is_none() && seen.contains("\"kind\":\"tool_finished\"") {
                tool_finished = Some(sent.elapsed());
            }
            if seen.contains("\"kind\":\"run_completed\"") {
                break;
            }
            if seen.contains("\"kind\":\"run_failed\"") {
                bail!("the run failed: {seen}");
            }
        }
        completed.push(sent.elapsed().as_nanos() as u64);
        let tool_finished = tool_finished.context("no tool_finished before run_completed")?;
        let run_resumed = run_resumed.context("no run_resumed before run_completed")?;
        resumed.push(run_resumed.as_nanos() as u64);
        executed.push(tool_finished.as_nanos() as u64);
    }
    // The tool did run: one outbox row per approved run.
    let outbox = server
        .send(Method::GET, "/v1/outbox?limit=1000", owner, None, 200)
        .await?;
    let rows = outbox["items"].as_array().map_or(0, Vec::len);
    if rows < count.min(1_000) {
        bail!("{count} runs approved but {rows} outbox rows: {outbox}");
    }
    add(
        report,
        "decision -> suspended run resumed (sqlite)",
        &mut resumed,
    );
    add(
        report,
        "decision -> suspended run executed tool (sqlite)",
        &mut executed,
    );
    add(
        report,
        "decision -> suspended run completed (sqlite)",
        &mut completed,
    );
    Ok(())
}

/// Waits (bounded) until the run is `awaiting_approval`; returns it.
async fn until_suspended(server: &Airlock, run_id: &str) -> anyhow::Result<Value> {
    let started = Instant::now();
    loop {
        let run = server
            .send(
                Method::GET,
                &format!("/v1/runs/{run_id}"),
                &server.owner_token,
                None,
                200,
            )
            .await?;
        match run["state"].as_str() {
            Some("awaiting_approval") => return Ok(run),
            Some("running") if started.elapsed() < PATIENCE => {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            _ => bail!("the run did not suspend: {run}"),
        }
    }
}
