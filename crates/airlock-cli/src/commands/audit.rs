//! `airlock audit verify | export`: check the hash chain (G8) online or on an export, and
//! save an export.
//!
//! An export verified offline needs no server and no token: the chain carries its own
//! proof. A torn last line (an export cut off mid-write) is reported as such.

use crate::client::{parse, print_json, Client, ClientArgs};
use crate::Outcome;
use anyhow::Context;
use clap::{Args, Subcommand};
use serde::Deserialize;
use serde_json::Value;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct AuditArgs {
    #[command(flatten)]
    client: ClientArgs,
    #[command(subcommand)]
    command: AuditCommand,
}

#[derive(Debug, Subcommand)]
enum AuditCommand {
    /// Verify the audit chain (exit 1 when it is broken).
    Verify {
        /// Verify this NDJSON export offline instead of asking the server.
        #[arg(long, value_name = "EXPORT.ndjson")]
        file: Option<PathBuf>,
        /// The head the chain must reach, as `SEQ:HASH` (the `head` that `airlock audit
        /// verify` printed earlier): the chain must hold that record, with that hash.
        /// Records cut from the end of an export, or deleted from the end of the
        /// database together with the head it keeps, are found only this way.
        #[arg(long, value_name = "SEQ:HASH", value_parser = parse_head)]
        head: Option<Head>,
    },
    /// Export the audit log as NDJSON, one record a line.
    Export {
        /// Write to this file instead of standard output.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

/// What both verifications report (`GET /v1/audit/verify` and `verify_export`).
#[derive(Debug, Deserialize)]
struct Report {
    ok: bool,
    records: u64,
    head: Option<Head>,
    #[serde(default)]
    first_bad_seq: Option<u64>,
    #[serde(default)]
    torn_tail: bool,
    #[serde(default)]
    problem: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct Head {
    seq: u64,
    hash: String,
}

/// `SEQ:HASH`, as printed by `airlock audit verify` (`head seq N hash H`).
fn parse_head(text: &str) -> Result<Head, String> {
    let (seq, hash) = text
        .split_once(':')
        .ok_or("expected SEQ:HASH, e.g. 42:9f86d0…")?;
    let seq = seq
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|seq| *seq > 0)
        .ok_or_else(|| format!("{seq:?} is not a record seq (1 or more)"))?;
    let hash = hash.trim().to_ascii_lowercase();
    if hash.len() != 64 || !hash.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return Err(format!("{hash:?} is not a record hash (64 hex digits)"));
    }
    Ok(Head { seq, hash })
}

pub fn run(args: AuditArgs) -> anyhow::Result<Outcome> {
    match args.command {
        AuditCommand::Verify { file, head } => {
            let value = match (file, head) {
                (Some(file), Some(head)) => {
                    reaches_head(verify_file(&file)?, &head, |seq| hash_at(&file, seq))?
                }
                (Some(file), None) => verify_file(&file)?,
                (None, head) => {
                    let client = Client::new(&args.client);
                    let value = client.get("/v1/audit/verify")?;
                    match head {
                        Some(head) => {
                            reaches_head(value, &head, |seq| stored_hash_at(&client, seq))?
                        }
                        None => value,
                    }
                }
            };
            let report: Report = parse(&value, "a verification report")?;
            if args.client.json {
                print_json(&value)?;
            } else {
                print_report(&report);
            }
            Ok(if report.ok {
                Outcome::Ok
            } else {
                Outcome::Refused
            })
        }
        AuditCommand::Export { out } => export(&Client::new(&args.client), out.as_deref()),
    }
}

/// Verifies the file as it is read (on every core, in bounded memory).
fn verify_file(file: &Path) -> anyhow::Result<Value> {
    let cannot_read = || format!("cannot read {}", file.display());
    let reader = std::fs::File::open(file).with_context(cannot_read)?;
    let report = airlock_gate::audit::verify_export_from(reader).with_context(cannot_read)?;
    Ok(serde_json::to_value(report)?)
}

/// A verified chain must also hold the record `head` names, with that hash: an export cut
/// at a line boundary verifies as a chain of its own (as does a database whose newest
/// records were deleted together with the head it keeps), and only an anchor from outside
/// (the head the server reported before) shows that records are missing from its end.
/// `hash_at` finds a record's hash in the chain verified.
fn reaches_head(
    mut value: Value,
    head: &Head,
    hash_at: impl FnOnce(u64) -> anyhow::Result<Option<String>>,
) -> anyhow::Result<Value> {
    let report: Report = parse(&value, "a verification report")?;
    if !report.ok {
        return Ok(value);
    }
    let problem = match report.head.as_ref() {
        Some(last) if last.seq >= head.seq => match hash_at(head.seq)? {
            Some(hash) if hash.eq_ignore_ascii_case(&head.hash) => return Ok(value),
            Some(hash) => format!(
                "record {} has hash {hash}, not the expected head {}: the chain is not \
                 the one that head belongs to",
                head.seq, head.hash
            ),
            None => format!("record {} is not in the chain", head.seq),
        },
        Some(last) => format!(
            "the chain ends at seq {} but the head is seq {}: records {}..={} are missing \
             from its end",
            last.seq,
            head.seq,
            last.seq + 1,
            head.seq
        ),
        None => format!(
            "the chain holds no records but the head is seq {}",
            head.seq
        ),
    };
    if let Some(object) = value.as_object_mut() {
        object.insert("ok".to_owned(), Value::Bool(false));
        object.insert("problem".to_owned(), Value::String(problem));
    }
    Ok(value)
}

/// The `hash` of the record `seq` as the server keeps it (`GET /v1/audit`).
fn stored_hash_at(client: &Client, seq: u64) -> anyhow::Result<Option<String>> {
    let page = client.get(&format!("/v1/audit?after={}&limit=1", seq - 1))?;
    Ok(page["items"]
        .as_array()
        .and_then(|items| items.first())
        .filter(|record| record["seq"].as_u64() == Some(seq))
        .and_then(|record| record["hash"].as_str())
        .map(str::to_owned))
}

/// The `hash` of the record `seq` in a verified export (whose lines are in seq order).
fn hash_at(file: &Path, seq: u64) -> anyhow::Result<Option<String>> {
    use std::io::BufRead;
    #[derive(Deserialize)]
    struct Link {
        seq: u64,
        hash: String,
    }
    let reader =
        std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?;
    for line in std::io::BufReader::new(reader).lines() {
        let line = line.with_context(|| format!("cannot read {}", file.display()))?;
        let Ok(link) = serde_json::from_str::<Link>(&line) else {
            continue;
        };
        if link.seq == seq {
            return Ok(Some(link.hash));
        }
        if link.seq > seq {
            break;
        }
    }
    Ok(None)
}

fn print_report(report: &Report) {
    let head = report
        .head
        .as_ref()
        .map(|head| format!(", head seq {} hash {}", head.seq, head.hash))
        .unwrap_or_default();
    if report.ok {
        println!("audit ok: {} records{head}", report.records);
        return;
    }
    let problem = report
        .problem
        .as_deref()
        .unwrap_or("the chain does not verify");
    match report.first_bad_seq {
        Some(seq) => println!("audit NOT ok: first bad seq {seq}: {problem}"),
        None if report.torn_tail => println!(
            "audit NOT ok: torn tail after {} records: {problem}",
            report.records
        ),
        None => println!("audit NOT ok: {problem}"),
    }
}

/// Streams the export to the file or to standard output, never holding it whole.
fn export(client: &Client, out: Option<&Path>) -> anyhow::Result<Outcome> {
    let mut response = client.get_raw("/v1/audit/export")?;
    let mut reader = response.body_mut().as_reader();
    match out {
        Some(path) => {
            // Written beside the target and renamed, so a failed export never leaves a
            // file that looks like a (torn) export.
            let partial = path.with_extension("partial");
            let mut file = std::fs::File::create(&partial)
                .with_context(|| format!("cannot create {}", partial.display()))?;
            let records = copy_counting_lines(&mut reader, &mut file)?;
            file.sync_all()?;
            std::fs::rename(&partial, path)
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("exported {records} records to {}", path.display());
        }
        None => {
            let stdout = std::io::stdout();
            let mut lock = stdout.lock();
            copy_counting_lines(&mut reader, &mut lock)?;
            lock.flush()?;
        }
    }
    Ok(Outcome::Ok)
}

/// Copies everything and returns how many lines (records) went through.
fn copy_counting_lines(reader: &mut impl Read, writer: &mut impl Write) -> anyhow::Result<u64> {
    let mut buffer = vec![0u8; 64 * 1024];
    let mut lines = 0;
    loop {
        let read = reader
            .read(&mut buffer)
            .context("the export was cut off while downloading")?;
        let Some(chunk) = buffer.get(..read).filter(|chunk| !chunk.is_empty()) else {
            return Ok(lines);
        };
        lines += chunk.iter().filter(|byte| **byte == b'\n').count() as u64;
        writer.write_all(chunk)?;
    }
}
