//! `airlock-bench audit`: how fast the audit chain verifies (DESIGN.md §9, "Audit"), on a
//! SQLite store holding a long chain.
//!
//! - **store**: `Gate::verify_audit`, what `GET /v1/audit/verify` runs: pages of records
//!   read from the store, each hash recomputed over its canonical JSON and linked; once
//!   with every record a row, as appended (`verify_store_rows`), then (`verify_store`)
//!   after the chain was sealed into segments of a thousand (`seal_rate`), as the
//!   server's sealer leaves it at a lull.
//! - **export file**: the chain written as NDJSON (`GET /v1/audit/export`'s format), then
//!   read and checked side by side with `airlock_gate::audit::verify_export_from`, what
//!   `airlock audit verify --file` runs.
//!   Also without the file read (`verify_export_in_memory`): the verifier's own cost.
//! - **serve process**: the same SQLite store verified by the shipped `airlock serve`
//!   (its own allocator), timed from outside as `GET /v1/audit/verify` with the owner's
//!   token: the product's figure for the store.
//! - **store on PostgreSQL**, when a server is named (`--pg-url` or
//!   `AIRLOCK_TEST_PG_URL`): the same chain in a fresh database, verified the same way.
//! - the floors measured beside them on the same bytes: one SHA-256 per exported line, and
//!   parsing every line into a record. Both are one thread; the verifier checks records on
//!   every core (`threads`), and no longer parses lines into records, so it can beat the
//!   parse floor, never twice the SHA-256 floor on two cores.

use crate::pg;
use crate::process::{airlock_binary, ServerProcess};
use crate::report::Report;
use crate::seed::Seeded;
use crate::Options;
use airlock_bench::stats::median;
use airlock_gate::audit::{verify_export, verify_export_from};
use airlock_protocol::AuditRecord;
use anyhow::bail;
use sha2::{Digest, Sha256};
use std::hint::black_box;
use std::io::Write;
use std::time::Instant;

const BENCH: &str = "audit";

pub fn run(report: &mut Report, options: &Options) -> anyhow::Result<()> {
    let binary = airlock_binary(options)?;
    let (records, repeats) = if options.quick {
        (10_000, 1)
    } else {
        (1_000_000, 3)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        measure(report, &binary, records, repeats).await?;
        // PostgreSQL's store figure when a server is named (`--pg-url`): the same chain,
        // verified in the same way (its pages are read row by row).
        if options.pg_url.is_some() {
            let database = pg::Database::create(&pg::admin_url(options)?).await?;
            let seeded = Seeded::create_postgres(&database.url).await?;
            let case = format!("{records} records (postgres)");
            let measured = in_the_store(report, &seeded, &case, records, repeats).await;
            seeded.close().await?;
            database.drop().await?;
            measured?;
        }
        Ok(())
    })
}

async fn measure(
    report: &mut Report,
    binary: &std::path::Path,
    records: usize,
    repeats: usize,
) -> anyhow::Result<()> {
    let folder = tempfile::TempDir::new()?;
    let seeded = Seeded::create(&folder.path().join("data")).await?;
    let case = format!("{records} records (sqlite)");
    in_the_store(report, &seeded, &case, records, repeats).await?;

    // The export file.
    let file = folder.path().join("audit.ndjson");
    let started = Instant::now();
    let exported = export(&seeded, &file).await?;
    report.add(
        BENCH,
        &case,
        "export_to_file",
        exported as f64 / started.elapsed().as_secs_f64(),
        "records/s",
    );
    let owner_token = seeded.owner_token.clone();
    seeded.close().await?;
    served(
        report,
        binary,
        &folder.path().join("data"),
        &owner_token,
        &case,
        repeats,
    )
    .await?;
    // For profiling the served figure by hand: the sealed store, and its owner's token
    // beside it, moved to where `AIRLOCK_BENCH_KEEP` says (on the same file system).
    if let Some(keep) = std::env::var_os("AIRLOCK_BENCH_KEEP") {
        std::fs::write(folder.path().join("data").join("owner.token"), &owner_token)?;
        std::fs::rename(folder.path().join("data"), keep)?;
    }
    let mut rates = Vec::new();
    let mut cpu_rates = Vec::new();
    let mut memory_rates = Vec::new();
    let mut memory_cpu_rates = Vec::new();
    for _ in 0..repeats {
        // What `airlock audit verify --file` runs: the file read and checked side by side.
        let started = Instant::now();
        let cpu = cpu_seconds()?;
        let verdict = verify_export_from(std::fs::File::open(&file)?)?;
        let took = started.elapsed().as_secs_f64();
        cpu_rates.push(exported as f64 / (cpu_seconds()? - cpu));
        if !verdict.ok || verdict.records != exported {
            bail!("the export does not verify: {verdict:?}");
        }
        rates.push(exported as f64 / took);
        // The file read apart: what the verifier itself costs, once the text is in memory.
        let text = std::fs::read_to_string(&file)?;
        let verify_started = Instant::now();
        let verify_cpu = cpu_seconds()?;
        let verdict = verify_export(&text);
        memory_rates.push(exported as f64 / verify_started.elapsed().as_secs_f64());
        memory_cpu_rates.push(exported as f64 / (cpu_seconds()? - verify_cpu));
        if !verdict.ok || verdict.records != exported {
            bail!("the export does not verify in memory: {verdict:?}");
        }
    }
    report.add(
        BENCH,
        &case,
        "verify_export_in_memory",
        median(&mut memory_rates),
        "records/s",
    );
    report.add(
        BENCH,
        &case,
        "verify_export_in_memory_per_cpu_s",
        median(&mut memory_cpu_rates),
        "records/s",
    );
    report.add(
        BENCH,
        &case,
        "threads",
        std::thread::available_parallelism().map_or(1, |count| count.get()) as f64,
        "count",
    );
    report.add(
        BENCH,
        &case,
        "verify_export_file",
        median(&mut rates),
        "records/s",
    );

    let cpu_rate = median(&mut cpu_rates);
    report.add(
        BENCH,
        &case,
        "verify_export_per_cpu_s",
        cpu_rate,
        "records/s",
    );

    // The floors, on the same lines.
    let text = std::fs::read_to_string(&file)?;
    let started = Instant::now();
    for line in text.lines() {
        black_box(Sha256::digest(line.as_bytes()));
    }
    let sha = exported as f64 / started.elapsed().as_secs_f64();
    report.add(
        BENCH,
        "floor: one SHA-256 per exported line",
        "rate",
        sha,
        "records/s",
    );
    let started = Instant::now();
    for line in text.lines() {
        black_box(serde_json::from_str::<AuditRecord>(line)?);
    }
    let parse = exported as f64 / started.elapsed().as_secs_f64();
    report.add(
        BENCH,
        "floor: parse each exported line",
        "rate",
        parse,
        "records/s",
    );
    if let Some(verify) = report.value(BENCH, &case, "verify_export_file") {
        report.add(
            BENCH,
            &case,
            "verify_export_of_sha256_floor",
            verify / sha,
            "x",
        );
        report.add(
            BENCH,
            &case,
            "verify_export_of_parse_floor",
            verify / parse,
            "x",
        );
    }
    Ok(())
}

/// Appends `records` records to `seeded`'s store, then verifies the chain in the store
/// `repeats` times (`Gate::verify_audit`): the append rate, the chain's length and the
/// median verification rates, wall-clock and per CPU second.
async fn in_the_store(
    report: &mut Report,
    seeded: &Seeded,
    case: &str,
    records: usize,
    repeats: usize,
) -> anyhow::Result<()> {
    let agents = seeded.agents(1).await?;
    let started = Instant::now();
    seeded.audit_records(&agents[0].0, records).await?;
    report.add(
        BENCH,
        case,
        "append_rate_batched",
        records as f64 / started.elapsed().as_secs_f64(),
        "records/s",
    );
    // The chain as appended, every record a row: what verification reads until the
    // sealer's next lull. Then sealed, as a server leaves it at a lull.
    let started = Instant::now();
    let verdict = seeded.gate.verify_audit(&seeded.owner).await?;
    if !verdict.ok || (verdict.records as usize) < records {
        bail!("the seeded chain does not verify as rows: {verdict:?}");
    }
    report.add(
        BENCH,
        case,
        "verify_store_rows",
        verdict.records as f64 / started.elapsed().as_secs_f64(),
        "records/s",
    );
    let started = Instant::now();
    let sealed = seeded.gate.seal_audit_once().await?;
    report.add(
        BENCH,
        case,
        "seal_rate",
        sealed as f64 / started.elapsed().as_secs_f64(),
        "records/s",
    );
    let mut rates = Vec::new();
    let mut cpu_rates = Vec::new();
    // The same verification reading one, two or four pages at a time beside the store's
    // default: how much reading ahead adds, and what more would.
    let default = seeded.gate.audit_pages_at_once();
    let others: Vec<usize> = [1, 2, 4].into_iter().filter(|n| *n != default).collect();
    let mut other_rates = vec![Vec::new(); others.len()];
    let mut chain = 0;
    for _ in 0..repeats {
        let started = Instant::now();
        let cpu = cpu_seconds()?;
        let verdict = seeded.gate.verify_audit(&seeded.owner).await?;
        let took = started.elapsed().as_secs_f64();
        cpu_rates.push(verdict.records as f64 / (cpu_seconds()? - cpu));
        if !verdict.ok || (verdict.records as usize) < records {
            bail!("the seeded chain does not verify: {verdict:?}");
        }
        chain = verdict.records;
        rates.push(verdict.records as f64 / took);
        for (at_once, measured) in others.iter().zip(&mut other_rates) {
            let started = Instant::now();
            let other = seeded
                .gate
                .verify_audit_reading(&seeded.owner, *at_once)
                .await?;
            if other != verdict {
                bail!("{at_once} pages at once gave another verdict: {other:?}");
            }
            measured.push(other.records as f64 / started.elapsed().as_secs_f64());
        }
    }
    report.add(BENCH, case, "chain_length", chain as f64, "count");
    report.add(
        BENCH,
        case,
        "verify_store_per_cpu_s",
        median(&mut cpu_rates),
        "records/s",
    );
    report.add(BENCH, case, "verify_store", median(&mut rates), "records/s");
    report.add(
        BENCH,
        case,
        "verify_store_pages_at_once",
        default as f64,
        "count",
    );
    for (at_once, mut measured) in others.into_iter().zip(other_rates) {
        report.add(
            BENCH,
            case,
            format!("verify_store_{at_once}_pages_at_once"),
            median(&mut measured),
            "records/s",
        );
    }
    Ok(())
}

/// The chain in `data_dir` verified by `airlock serve` itself, `repeats` times:
/// `GET /v1/audit/verify`'s median rate, timed from here.
async fn served(
    report: &mut Report,
    binary: &std::path::Path,
    data_dir: &std::path::Path,
    owner_token: &str,
    case: &str,
    repeats: usize,
) -> anyhow::Result<()> {
    let (server, _) = ServerProcess::start(binary, data_dir).await?;
    let outcome = async {
        let http = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(600))
            .build()?;
        let mut rates = Vec::new();
        for _ in 0..repeats {
            let started = Instant::now();
            let verdict: serde_json::Value = http
                .get(format!("{}/v1/audit/verify", server.url))
                .bearer_auth(owner_token)
                .send()
                .await?
                .error_for_status()?
                .json()
                .await?;
            let took = started.elapsed().as_secs_f64();
            let records = verdict["records"].as_u64().unwrap_or(0);
            if verdict["ok"] != true || records == 0 {
                bail!("the served chain does not verify: {verdict}");
            }
            rates.push(records as f64 / took);
        }
        anyhow::Ok(median(&mut rates))
    }
    .await;
    server.stop().await?;
    report.add(BENCH, case, "verify_serve_process", outcome?, "records/s");
    Ok(())
}

/// CPU time this process has used (all threads, user + system): on a shared machine the
/// rate per CPU second says what the code costs, the wall-clock rate what it got.
fn cpu_seconds() -> anyhow::Result<f64> {
    use nix::sys::resource::{getrusage, UsageWho};
    let usage = getrusage(UsageWho::RUSAGE_SELF)?;
    let seconds =
        |time: nix::sys::time::TimeVal| time.tv_sec() as f64 + time.tv_usec() as f64 / 1e6;
    Ok(seconds(usage.user_time()) + seconds(usage.system_time()))
}

/// Writes the whole chain as NDJSON, one record a line; returns how many.
async fn export(seeded: &Seeded, file: &std::path::Path) -> anyhow::Result<u64> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(file)?);
    let mut after = 0;
    let mut count = 0;
    loop {
        let page = seeded.gate.audit_after(&seeded.owner, after, 1000).await?;
        for record in &page {
            serde_json::to_writer(&mut out, record)?;
            out.write_all(b"\n")?;
        }
        count += page.len() as u64;
        match page.last() {
            Some(last) if page.len() == 1000 => after = last.seq,
            _ => break,
        }
    }
    out.flush()?;
    Ok(count)
}
