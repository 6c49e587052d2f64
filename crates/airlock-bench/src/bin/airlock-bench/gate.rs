//! `airlock-bench gate`: auto-allowed calls over HTTP with the durable audit append
//! (DESIGN.md §9, "Gate throughput"), on SQLite and on PostgreSQL, beside the limits
//! measured in the same run: a bare axum JSON endpoint under the same load, and the raw
//! commit rate of the same database (one row per commit, and 64 rows per commit).
//!
//! Each backend runs twice, with the gate's read cache (tokens, agents, standing rules)
//! and without it (`Gate::disable_read_cache`: every read goes to the database), and on
//! PostgreSQL the window of a revocation across two nodes is measured (`window.rs`).
//!
//! The load is 64 concurrent keep-alive clients in a second process (`load.rs`), each
//! posting `POST /v1/calls` back to back; every answer must be `201` (the call allowed,
//! its grant, call row and audit record committed).
//!
//! The cases above run the server inside this process, under the bench's allocator (the
//! system's, counted for `policy`). The cases `airlock BACKEND auto-allowed, serve
//! process` are the same load against the shipped `airlock serve` binary (its own
//! allocator, `--policy` the same policy): the product's figures.

use crate::load::{self, LoadArgs, LoadResult};
use crate::process::{airlock_binary, create_agent, ServerProcess};
use crate::report::Report;
use crate::server::{Airlock, Backend, Bare};
use crate::{pg, Options};
use anyhow::bail;
use serde_json::json;
use sqlx::{ConnectOptions, Connection, Executor};
use std::time::{Duration, Instant};

const BENCH: &str = "gate";

/// The policy under load: one tool, allowed when its argument matches.
pub const POLICY: &str = r#"
version = 1
default = "deny"

[tools."bench.op"]
risk = "read"
summary = "Bench {resource}"

[[rules]]
name = "bench-allowed"
tool = "bench.op"
decision = "allow"
when = { resource = { glob = "res/*" } }
"#;

/// The call every client posts.
pub fn call_body() -> String {
    json!({"tool": "bench.op", "arguments": {"resource": "res/item"}}).to_string()
}

/// A row the size of an audit record, for the raw commit rate.
fn row_payload() -> String {
    "x".repeat(400)
}

struct Plan {
    clients: usize,
    warmup_ms: u64,
    window_ms: u64,
    /// Rows per transaction of the batched commit rate.
    batch: usize,
    commit_window: Duration,
}

impl Plan {
    fn new(quick: bool) -> Plan {
        Plan {
            clients: 64,
            warmup_ms: if quick { 300 } else { 1_000 },
            window_ms: if quick { 1_000 } else { 5_000 },
            batch: 64,
            commit_window: Duration::from_millis(if quick { 500 } else { 3_000 }),
        }
    }

    fn load(&self, url: String, token: String) -> LoadArgs {
        LoadArgs {
            url,
            token,
            body: call_body(),
            expect: 201,
            clients: self.clients,
            warmup_ms: self.warmup_ms,
            window_ms: self.window_ms,
        }
    }
}

pub fn run(report: &mut Report, options: &Options) -> anyhow::Result<()> {
    let plan = Plan::new(options.quick);
    let admin_url = pg::admin_url(options)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        bare(report, &plan).await?;
        gate(report, &plan, &Backend::Sqlite, Cache::On).await?;
        gate(report, &plan, &Backend::Sqlite, Cache::Off).await?;
        let binary = airlock_binary(options)?;
        serve_process(report, &plan, &binary, None).await?;
        sqlite_commits(report, &plan).await?;
        ratios(report, "sqlite");
        for cache in [Cache::On, Cache::Off] {
            let database = pg::Database::create(&admin_url).await?;
            let backend = Backend::Postgres {
                url: database.url.clone(),
            };
            gate(report, &plan, &backend, cache).await?;
            database.drop().await?;
        }
        let database = pg::Database::create(&admin_url).await?;
        serve_process(report, &plan, &binary, Some(&database.url)).await?;
        database.drop().await?;
        let database = pg::Database::create(&admin_url).await?;
        crate::window::measure(report, &database.url, if options.quick { 10 } else { 200 }).await?;
        database.drop().await?;
        let database = pg::Database::create(&admin_url).await?;
        postgres_commits(report, &plan, &database.url).await?;
        database.drop().await?;
        ratios(report, "postgres");
        Ok(())
    })
}

fn add_load(report: &mut Report, case: &str, result: &LoadResult, unit: &'static str) {
    report.add(BENCH, case, "throughput", result.per_second(), unit);
    report.add(BENCH, case, "p50", result.p50_ms, "ms");
    report.add(BENCH, case, "p99", result.p99_ms, "ms");
}

/// The HTTP stack alone: same clients, same body, nothing behind the endpoint.
async fn bare(report: &mut Report, plan: &Plan) -> anyhow::Result<()> {
    let server = Bare::start().await?;
    let result = load::run(&plan.load(format!("{}/v1/calls", server.url), String::new())).await?;
    server.stop().await?;
    add_load(report, "bare axum JSON endpoint", &result, "req/s");
    Ok(())
}

/// Whether the gate keeps tokens, agents and standing rules in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cache {
    On,
    Off,
}

/// airlock on `backend`: one agent, [`POLICY`], and the load.
async fn gate(
    report: &mut Report,
    plan: &Plan,
    backend: &Backend,
    cache: Cache,
) -> anyhow::Result<()> {
    let server = Airlock::start(backend).await?;
    if cache == Cache::Off {
        server.gate.disable_read_cache();
    }
    server.put_policy(POLICY).await?;
    let (_, agent) = server.create_agent(&json!({"name": "bench"})).await?;
    let body: serde_json::Value = serde_json::from_str(&call_body())?;
    let call = server
        .send(reqwest::Method::POST, "/v1/calls", &agent, Some(&body), 201)
        .await?;
    if call["status"] != "allowed" {
        bail!("the bench call is not auto-allowed: {call}");
    }
    let result = load::run(&plan.load(format!("{}/v1/calls", server.url), agent)).await?;
    server.stop().await?;
    let case = match cache {
        Cache::On => format!("airlock {} auto-allowed", backend.name()),
        Cache::Off => format!("airlock {} auto-allowed, read cache off", backend.name()),
    };
    add_load(report, &case, &result, "decisions/s");
    Ok(())
}

/// The shipped `airlock serve` with [`POLICY`], on a fresh SQLite data folder or on the
/// PostgreSQL database at `postgres`: one agent made through the API with the owner's
/// token, then the same load as [`gate`].
async fn serve_process(
    report: &mut Report,
    plan: &Plan,
    binary: &std::path::Path,
    postgres: Option<&str>,
) -> anyhow::Result<()> {
    let data = tempfile::TempDir::new()?;
    let policy = data.path().join("policy.toml");
    std::fs::write(&policy, POLICY)?;
    let data_dir = data.path().join("data");
    let mut extra = vec!["--policy".into(), policy.into_os_string()];
    if let Some(url) = postgres {
        extra.extend(["--db".into(), url.into()]);
    }
    let (server, _) = ServerProcess::start_with(binary, &data_dir, &extra).await?;
    let outcome = async {
        let http = reqwest::Client::new();
        let agent = create_agent(&http, &server.url, &server.owner_token()?, "bench").await?;
        let call: serde_json::Value = http
            .post(format!("{}/v1/calls", server.url))
            .bearer_auth(&agent)
            .json(&serde_json::from_str::<serde_json::Value>(&call_body())?)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        if call["status"] != "allowed" {
            bail!("the bench call is not auto-allowed: {call}");
        }
        load::run(&plan.load(format!("{}/v1/calls", server.url), agent)).await
    }
    .await;
    server.stop().await?;
    let backend = if postgres.is_some() {
        "postgres"
    } else {
        "sqlite"
    };
    let case = format!("airlock {backend} auto-allowed, serve process");
    add_load(report, &case, &outcome?, "decisions/s");
    Ok(())
}

/// The ratios of the gate's rate to the limits measured beside it.
fn ratios(report: &mut Report, backend: &str) {
    let case = format!("airlock {backend} auto-allowed");
    let Some(decisions) = report.value(BENCH, &case, "throughput") else {
        return;
    };
    let limits = [
        (
            format!("airlock {backend} auto-allowed, read cache off"),
            "throughput",
            "of_read_cache_off",
        ),
        (
            "bare axum JSON endpoint".to_owned(),
            "throughput",
            "of_bare_axum",
        ),
        (
            format!("raw {backend} commit, 1 row"),
            "commits",
            "of_raw_single_row_commits",
        ),
        (
            format!("raw {backend} commit, 64 rows"),
            "rows",
            "of_raw_batched_rows",
        ),
    ];
    for (limit_case, metric, name) in limits {
        if let Some(limit) = report.value(BENCH, &limit_case, metric) {
            report.add(
                BENCH,
                &case,
                format!("ratio_{name}"),
                decisions / limit,
                "x",
            );
        }
    }
}

/// The raw commit rate of SQLite as airlock opens it (WAL, `synchronous=FULL`), on the
/// same file system as the gate's database: one row per transaction, then `batch` rows.
async fn sqlite_commits(report: &mut Report, plan: &Plan) -> anyhow::Result<()> {
    use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
    let folder = tempfile::TempDir::new()?;
    let mut connection = SqliteConnectOptions::new()
        .filename(folder.path().join("raw.db"))
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .connect()
        .await?;
    connection
        .execute("CREATE TABLE raw (id INTEGER PRIMARY KEY, data TEXT NOT NULL)")
        .await?;
    let payload = row_payload();
    for rows in [1, plan.batch] {
        let started = Instant::now();
        let mut commits = 0u64;
        while started.elapsed() < plan.commit_window {
            let mut transaction = connection.begin_with("BEGIN IMMEDIATE").await?;
            for _ in 0..rows {
                sqlx::query("INSERT INTO raw (data) VALUES (?)")
                    .bind(&payload)
                    .execute(&mut *transaction)
                    .await?;
            }
            transaction.commit().await?;
            commits += 1;
        }
        add_commits(report, "sqlite", rows, commits, started.elapsed());
    }
    connection.close().await?;
    Ok(())
}

/// The raw commit rate of the same PostgreSQL server: one row per transaction on one
/// connection, `batch` rows per transaction, and one row per transaction from as many
/// connections as the load has clients (PostgreSQL flushes their commits together).
async fn postgres_commits(report: &mut Report, plan: &Plan, url: &str) -> anyhow::Result<()> {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(plan.clients as u32)
        .connect(url)
        .await?;
    pool.execute("CREATE TABLE raw (id BIGSERIAL PRIMARY KEY, data TEXT NOT NULL)")
        .await?;
    let payload = row_payload();
    for rows in [1, plan.batch] {
        let mut connection = pool.acquire().await?;
        let started = Instant::now();
        let mut commits = 0u64;
        while started.elapsed() < plan.commit_window {
            let mut transaction = connection.begin().await?;
            for _ in 0..rows {
                sqlx::query("INSERT INTO raw (data) VALUES ($1)")
                    .bind(&payload)
                    .execute(&mut *transaction)
                    .await?;
            }
            transaction.commit().await?;
            commits += 1;
        }
        add_commits(report, "postgres", rows, commits, started.elapsed());
    }
    let started = Instant::now();
    let workers: Vec<_> = (0..plan.clients)
        .map(|_| {
            let pool = pool.clone();
            let payload = payload.clone();
            let window = plan.commit_window;
            tokio::spawn(async move {
                let mut commits = 0u64;
                while started.elapsed() < window {
                    sqlx::query("INSERT INTO raw (data) VALUES ($1)")
                        .bind(&payload)
                        .execute(&pool)
                        .await?;
                    commits += 1;
                }
                Ok::<u64, sqlx::Error>(commits)
            })
        })
        .collect();
    let mut commits = 0;
    for worker in workers {
        commits += worker.await??;
    }
    let elapsed = started.elapsed();
    report.add(
        BENCH,
        format!("raw postgres commit, 1 row, {} connections", plan.clients),
        "commits",
        commits as f64 / elapsed.as_secs_f64(),
        "/s",
    );
    pool.close().await;
    Ok(())
}

fn add_commits(report: &mut Report, database: &str, rows: usize, commits: u64, took: Duration) {
    let noun = if rows == 1 { "row" } else { "rows" };
    let case = format!("raw {database} commit, {rows} {noun}");
    let per_second = commits as f64 / took.as_secs_f64();
    report.add(BENCH, &case, "commits", per_second, "/s");
    report.add(BENCH, &case, "rows", per_second * rows as f64, "/s");
}
