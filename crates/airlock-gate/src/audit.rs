//! Reading and verifying the audit chain (G8), online and offline.
//!
//! [`ChainVerifier`] is fed records in order and reports the first record where the chain
//! breaks: a wrong `seq` (a record deleted or reordered), a `prev_hash` that does not link,
//! or a `hash` that does not recompute (a record edited). [`verify_export`] checks an NDJSON
//! export and also reports a torn last line.
//!
//! Verification must keep up with long chains (DESIGN.md §9: a million records a second),
//! so the work is split: recomputing each record's hash (`check`, the costly part) needs
//! nothing but the record itself and runs on every core, from the stored or exported text
//! without building JSON trees (`canonical`); linking the records runs afterwards, in
//! order, on the small results.

mod canonical;
mod check;
mod export;
#[cfg(test)]
mod tests;

use crate::identity::require_role;
use crate::{Gate, GateError};
use airlock_policy::digest::GENESIS_HASH;
use airlock_protocol::{AuditRecord, Role, WorkspaceEvent};
use airlock_store::{AuditRow, AuditRows, Principal, StoreError};
use check::{check_all, claim_all, threads, Checked, Hex, Scratch};

/// Records per page when the gate walks the whole chain. Small enough that a page's
/// buffers (SQLite's aggregate of each column, sqlx's copy of it, ours) stay about a
/// megabyte of ~1 KB records: at 10,000 a page, SQLite's page read took 2.5 µs of CPU a
/// row instead of 1.05, most of the difference page faults on fresh multi-megabyte
/// buffers (630,000 faults for a million records against 2,000; BENCHMARKS.md "Audit").
/// Large enough that the round trips and thread hand-offs of a page stay small beside
/// reading and hashing it.
const PAGE: u32 = 1_000;

pub use airlock_protocol::{AuditHead as Head, VerifyReport};

/// Checks records one at a time, in order.
#[derive(Debug)]
pub struct ChainVerifier {
    expected_seq: u64,
    /// The hash of the last record read (the chain's head once all are read), as bytes:
    /// it is only compared until the report.
    prev_hash: Vec<u8>,
    records: u64,
    last_seq: Option<u64>,
    first_bad: Option<(u64, String)>,
}

impl Default for ChainVerifier {
    fn default() -> Self {
        ChainVerifier {
            expected_seq: 1,
            prev_hash: GENESIS_HASH.as_bytes().to_vec(),
            records: 0,
            last_seq: None,
            first_bad: None,
        }
    }
}

impl ChainVerifier {
    pub fn push(&mut self, record: &AuditRecord) {
        self.push_checked(Checked::Record {
            seq: record.seq,
            prev_hash: Hex::Borrowed(&record.prev_hash),
            hash: Hex::Borrowed(&record.hash),
            hash_ok: check::recompute(record) == record.hash,
        });
    }

    /// Checks a page of stored records: each row's hash on every core (only a flag per
    /// row comes back), then the links in order, read from the page itself.
    pub fn push_rows(&mut self, rows: &AuditRows) {
        let rows: Vec<AuditRow<'_>> = rows.iter().collect();
        let mut hashes_ok = Vec::with_capacity(rows.len());
        check_all(
            &rows,
            threads(),
            |scratch, row| Some(scratch.row_hash_ok(*row)),
            // A row no thread checked is not verified.
            || None,
            &mut hashes_ok,
        );
        self.push_hashed(rows.into_iter().zip(hashes_ok));
    }

    /// Takes in rows whose hashes were recomputed, each with whether it matched (`None`:
    /// the thread checking it failed).
    fn push_hashed<'r>(&mut self, rows: impl IntoIterator<Item = (AuditRow<'r>, Option<bool>)>) {
        for (row, hash_ok) in rows {
            self.push_checked(match hash_ok {
                Some(hash_ok) => Checked::Record {
                    seq: row.seq,
                    prev_hash: Hex::Borrowed(row.prev_hash),
                    hash: Hex::Borrowed(row.hash),
                    hash_ok,
                },
                None => Checked::Unreadable("a verification thread failed".to_owned()),
            });
        }
    }

    /// Takes in a record whose own hash was already recomputed.
    fn push_checked(&mut self, checked: Checked<'_>) {
        let (seq, prev_hash, hash, hash_ok) = match checked {
            Checked::Record {
                seq,
                prev_hash,
                hash,
                hash_ok,
            } => (seq, prev_hash, hash, hash_ok),
            Checked::Unreadable(problem) => return self.unreadable(problem),
        };
        self.records += 1;
        if self.first_bad.is_none() {
            self.first_bad = if seq != self.expected_seq {
                Some((
                    self.expected_seq,
                    format!(
                        "expected seq {}, found seq {seq}: a record is missing or out of order",
                        self.expected_seq
                    ),
                ))
            } else if prev_hash.bytes() != self.prev_hash {
                Some((
                    seq,
                    format!("seq {seq}: prev_hash does not link to the record before"),
                ))
            } else if !hash_ok {
                Some((
                    seq,
                    format!("seq {seq}: hash does not match the record's contents"),
                ))
            } else {
                None
            };
        }
        self.expected_seq = seq.saturating_add(1);
        self.prev_hash.clear();
        self.prev_hash.extend_from_slice(hash.bytes());
        self.last_seq = Some(seq);
    }

    /// Something that should have been a record and is not: a break at the position
    /// where the next record was expected.
    fn unreadable(&mut self, problem: String) {
        if self.first_bad.is_none() {
            self.first_bad = Some((self.expected_seq, problem));
        }
        self.records += 1;
    }

    /// The verdict when verification itself could not be done: never ok.
    fn failed(problem: String) -> VerifyReport {
        let mut verifier = ChainVerifier::default();
        verifier.unreadable(problem);
        verifier.finish(false)
    }

    pub fn finish(self, torn_tail: bool) -> VerifyReport {
        let (first_bad_seq, problem) = match self.first_bad {
            Some((seq, problem)) => (Some(seq), Some(problem)),
            None if torn_tail => (
                None,
                Some("the last line is cut off (torn tail)".to_owned()),
            ),
            None => (None, None),
        };
        // Every hash held came from text, so the conversion is lossless.
        let head = self.last_seq.map(|seq| Head {
            seq,
            hash: String::from_utf8_lossy(&self.prev_hash).into_owned(),
        });
        VerifyReport {
            ok: first_bad_seq.is_none() && !torn_tail,
            records: self.records,
            head,
            first_bad_seq,
            torn_tail,
            problem,
        }
    }
}

/// Verifies an NDJSON export. A last line that does not end in a newline or does not
/// parse is a torn tail; an unparsable line in the middle is a break at that position.
pub fn verify_export(text: &str) -> VerifyReport {
    export::verify_text(text.as_bytes())
}

/// Verifies an NDJSON export as it is read (`airlock audit verify --file`), on every
/// core and in bounded memory; the verdict is [`verify_export`]'s on the same text.
pub fn verify_export_from(reader: impl std::io::Read) -> std::io::Result<VerifyReport> {
    export::verify_reader(reader)
}

/// A verified chain must reach the head the store kept apart from its records
/// (`audit_heads`): a chain whose newest records were deleted verifies on its own, and
/// only that head shows what is missing from its end (G8). A chain that goes on past the
/// kept head must hold the kept head's record, with its hash.
async fn reaches_kept_head(
    gate: &Gate,
    workspace: &str,
    mut report: VerifyReport,
    kept: Option<(u64, String)>,
) -> Result<VerifyReport, GateError> {
    let Some((kept_seq, kept_hash)) = kept.filter(|(seq, _)| *seq > 0) else {
        return Ok(report);
    };
    if !report.ok {
        return Ok(report);
    }
    let last = report.head.as_ref().map_or(0, |head| head.seq);
    let problem = if last < kept_seq {
        format!(
            "the chain ends at seq {last} but its head was seq {kept_seq}: records \
             {}..={kept_seq} are missing from its end",
            last + 1
        )
    } else {
        let hash = match report.head.as_ref() {
            Some(head) if head.seq == kept_seq => Some(head.hash.clone()),
            _ => gate.record_at(workspace, kept_seq).await?.map(|r| r.hash),
        };
        match hash {
            Some(hash) if hash.eq_ignore_ascii_case(&kept_hash) => return Ok(report),
            _ => format!(
                "record {kept_seq} is not the one appended there (the head's hash was \
                 {kept_hash}): the chain's end was replaced"
            ),
        }
    };
    report.ok = false;
    report.first_bad_seq = Some(last.min(kept_seq).saturating_add(1).min(kept_seq));
    report.problem = Some(problem);
    Ok(report)
}

/// Segments (or runs of [`PAGE`] rows) each thread reads and checks at a time in
/// [`verify_direct`]: enough that the threads' uneven ends of a batch (one waits while
/// another finishes its last segment) cost little, few enough that a batch's records (a
/// megabyte a segment) stay small.
const SEGMENTS_A_THREAD: usize = 8;

/// What one thread reads and hashes in [`verify_direct`].
enum Part {
    Segment(airlock_store::SegmentRef),
    /// The rows with `after < seq <= through`.
    Rows {
        after: u64,
        through: u64,
    },
}

/// The chain of `workspace` verified from its start where the store can read it on
/// threads of its own ([`airlock_store::Store::chain_reader`]; SQLite): the sealed
/// segments that follow one another, then the rows after them, [`PAGE`] seqs a part, each
/// thread reading a part and hashing its records, then the links in order. Gives the
/// verifier fed with their records and the last seq they hold (0 when none), where the
/// pages go on. It takes only parts that run on from the record before: it stops at a
/// part it cannot read, at a gap, at records missing from a run of rows (the chain's end,
/// or a seal that moved them meanwhile), and the pages, read in one snapshot each, read
/// from there and report whatever is there as they report any page.
fn verify_direct(store: &dyn airlock_store::Store, workspace: &str) -> (ChainVerifier, u64) {
    let mut verifier = ChainVerifier::default();
    let mut readers = Vec::new();
    while readers.len() < threads() {
        match store.chain_reader() {
            Ok(Some(reader)) => readers.push((reader, Scratch::default())),
            // None: the store has no such reader; an error: the pages read it all.
            Ok(None) | Err(_) => break,
        }
    }
    let mut after = 0;
    let mut checked = Vec::new();
    loop {
        let wanted = readers.len() * SEGMENTS_A_THREAD;
        let Some((lister, _)) = readers.first_mut() else {
            return (verifier, after);
        };
        let parts: Vec<Part> = match lister.next_segments(workspace, after, wanted) {
            Ok(segments) if !segments.is_empty() => {
                segments.into_iter().map(Part::Segment).collect()
            }
            Ok(_) => (0..wanted)
                .map(|nth| {
                    let start = |nth: usize| {
                        let span = u64::try_from(nth)
                            .unwrap_or(u64::MAX)
                            .saturating_mul(u64::from(PAGE));
                        after.saturating_add(span)
                    };
                    Part::Rows {
                        after: start(nth),
                        through: start(nth + 1),
                    }
                })
                .collect(),
            Err(_) => return (verifier, after),
        };
        claim_all(
            &parts,
            &mut readers,
            1,
            |(reader, scratch), part| {
                let rows = match part {
                    Part::Segment(segment) => reader.read(*segment),
                    Part::Rows { after, through } => reader.read_rows(workspace, *after, *through),
                }
                .ok()?;
                let hashes_ok: Vec<bool> =
                    rows.iter().map(|row| scratch.row_hash_ok(row)).collect();
                Some((rows, hashes_ok))
            },
            || None,
            &mut checked,
        );
        for (part, read) in parts.iter().zip(checked.drain(..)) {
            let Some((rows, hashes_ok)) = read else {
                return (verifier, after);
            };
            let (first, last) = match part {
                Part::Segment(segment) => (segment.first_seq, segment.last_seq),
                Part::Rows { after, through } => (after.saturating_add(1), *through),
            };
            // Rows are taken while each is the seq after the one before; a run of
            // rows that ends early is the last part taken.
            let run_on = (first..).zip(rows.iter()).all(|(seq, row)| row.seq == seq);
            if !run_on || rows.is_empty() {
                return (verifier, after);
            }
            verifier.push_hashed(rows.iter().zip(hashes_ok.into_iter().map(Some)));
            after = rows.last_seq().unwrap_or(after);
            if after != last {
                return (verifier, after);
            }
        }
    }
}

/// What a page read that failed means for verification: the store found something that
/// is not a record where records are kept (`Corrupt`), which is a break in the chain; any
/// other failure (the database is unreachable) is an error, not a verdict.
fn unreadable_page(error: StoreError) -> Result<String, GateError> {
    match error {
        StoreError::Corrupt { table, detail } => Ok(format!("unreadable {table}: {detail}")),
        other => Err(other.into()),
    }
}

/// A client's `after` cursor as the stores can hold it: sequence numbers are at most
/// `i64::MAX` (SQL integers), so a larger cursor means the same as that one — nothing
/// after it. Found by API fuzzing: `?after=9223372036854775808` was a 503.
pub fn seq_bound(after: u64) -> u64 {
    after.min(i64::MAX.unsigned_abs())
}

impl Gate {
    /// Audit records after `after`, at most `limit` (≤ 1000).
    pub async fn audit_after(
        &self,
        principal: &Principal,
        after: u64,
        limit: u32,
    ) -> Result<Vec<AuditRecord>, GateError> {
        require_role(principal, Role::Viewer, "read the audit log")?;
        Ok(self
            .store()
            .audit_after(&principal.workspace, seq_bound(after), limit.clamp(1, 1000))
            .await?)
    }

    /// Walks the whole chain of the workspace and verifies it, reading
    /// [`Gate::audit_pages_at_once`] pages at a time: see [`Gate::verify_audit_reading`].
    pub async fn verify_audit(&self, principal: &Principal) -> Result<VerifyReport, GateError> {
        self.verify_audit_reading(principal, self.audit_pages_at_once())
            .await
    }

    /// How many pages [`Gate::verify_audit`] reads at once: as many as the store reads
    /// best at once (`Store::long_reads_at_once`; one a core on SQLite, four on
    /// PostgreSQL), and at least two, one read ahead on the guess. Once hashing has every
    /// core, reading sets the pace (BENCHMARKS.md "Audit").
    pub fn audit_pages_at_once(&self) -> usize {
        self.store().long_reads_at_once().max(2)
    }

    /// [`Gate::verify_audit`], reading `at_once` pages at a time (one to sixteen). Reading
    /// and checking run side by side: the pages are read ahead, a batch at a time, while
    /// the batches before are checked on blocking threads (each page's hashes on every
    /// core), so that neither waits for the other while there is work. In a batch, each
    /// page is read on a connection of its own: the first where the last batch ended,
    /// each one after it on the guess that the chain is whole (seqs run on without a
    /// gap, so it starts `PAGE` after the one before). A page is kept only when the page
    /// before it proves the guess (full, ending exactly there); the pages after a wrong
    /// guess are dropped and read again from where the chain really went on. Either way
    /// the pages checked are exactly those one-after-another paging gives, so the verdict
    /// is the same for any `at_once`. Before the pages, as much of the chain as runs on
    /// from its start is verified by [`verify_direct`] where the store can read it on
    /// threads of its own (SQLite: no hand-off per statement, a segment with one copy);
    /// the pages go on from the last record it took, so the records checked are the same.
    pub async fn verify_audit_reading(
        &self,
        principal: &Principal,
        at_once: usize,
    ) -> Result<VerifyReport, GateError> {
        require_role(principal, Role::Viewer, "verify the audit log")?;
        let workspace = &principal.workspace;
        // The head the store kept apart from the records, read before them: the chain
        // read afterwards reaches at least that far (appends only add to it).
        let kept_head = self.store().audit_head(workspace).await?;
        let report = self.verify_chain(workspace, at_once).await?;
        reaches_kept_head(self, workspace, report, kept_head).await
    }

    /// The chain of `workspace` verified from its start (see [`Gate::verify_audit_reading`]).
    async fn verify_chain(
        &self,
        workspace: &str,
        at_once: usize,
    ) -> Result<VerifyReport, GateError> {
        let at_once = u64::try_from(at_once.clamp(1, 16)).unwrap_or(1);
        // The chain first where the store reads it on threads of its own; the pages
        // below go on from the last record read that way.
        let store = std::sync::Arc::clone(&self.inner.store);
        let owned = workspace.to_owned();
        let (verifier, sealed) =
            tokio::task::spawn_blocking(move || verify_direct(store.as_ref(), &owned))
                .await
                .map_err(|error| {
                    GateError::Unavailable(format!("audit verification stopped: {error}"))
                })?;
        // Two batches wait while the one before is checked.
        let (batches, mut to_check) = tokio::sync::mpsc::channel(2);
        let reading = async move {
            let mut after = sealed;
            loop {
                let batch = self.read_batch(workspace, after, at_once).await;
                // The chain goes on after a batch that ends with a full page it could read.
                let next = match &batch {
                    Ok((pages, None)) => pages
                        .last()
                        .filter(|page| page.len() == PAGE as usize)
                        .and_then(AuditRows::last_seq),
                    _ => None,
                };
                // Sending fails once the checking has ended: nothing more is wanted.
                if batches.send(batch).await.is_err() {
                    return;
                }
                match next {
                    Some(last) => after = last,
                    None => return,
                }
            }
        };
        // One blocking thread checks every batch as it comes (each page's hashes on every
        // core), so that checking never waits on the runtime between batches.
        let checking = tokio::task::spawn_blocking(move || {
            let mut verifier = verifier;
            while let Some(batch) = to_check.blocking_recv() {
                let (pages, unreadable) = batch?;
                for page in &pages {
                    verifier.push_rows(page);
                }
                // A page the store cannot read (a segment that does not add up, a row
                // that is not a record) is a break where it starts, like an unreadable
                // line of an export.
                if let Some(problem) = unreadable {
                    verifier.unreadable(problem);
                    break;
                }
            }
            Ok::<_, GateError>(verifier.finish(false))
        });
        let ((), verdict) = tokio::join!(reading, checking);
        verdict.map_err(|error| {
            GateError::Unavailable(format!("audit verification stopped: {error}"))
        })?
    }

    /// The record `seq` of `workspace`'s chain, if there is one.
    async fn record_at(&self, workspace: &str, seq: u64) -> Result<Option<AuditRecord>, GateError> {
        let records = self
            .store()
            .audit_after(workspace, seq_bound(seq.saturating_sub(1)), 1)
            .await?;
        Ok(records
            .into_iter()
            .next()
            .filter(|record| record.seq == seq))
    }

    /// The pages after `after`, `at_once` of them read at once (see
    /// [`Gate::verify_audit_reading`]): those that follow one another, and what could not
    /// be read where the store found something that is not a record (the records before
    /// it salvaged).
    async fn read_batch(
        &self,
        workspace: &str,
        after: u64,
        at_once: u64,
    ) -> Result<(Vec<AuditRows>, Option<String>), GateError> {
        let starts =
            (0..at_once).map(|nth| after.saturating_add(nth.saturating_mul(u64::from(PAGE))));
        let read = futures::future::join_all(
            starts
                .clone()
                .map(|start| self.store().audit_rows_after(workspace, start, PAGE)),
        )
        .await;
        let mut proven: Vec<AuditRows> = Vec::with_capacity(read.len());
        for (start, page) in starts.zip(read) {
            let follows = proven.last().is_none_or(|before| {
                before.len() == PAGE as usize && before.last_seq() == Some(start)
            });
            if !follows {
                break;
            }
            match page {
                Ok(page) => proven.push(page),
                Err(error) => {
                    let (salvaged, problem) = self.salvage(workspace, start, error).await?;
                    proven.extend(salvaged);
                    return Ok((proven, Some(problem)));
                }
            }
        }
        Ok((proven, None))
    }

    /// A page after `after` that could not be read (`error`), read again a record at a
    /// time: the records before the damage, and what the damage is, so that the break is
    /// reported at the first record that cannot be read rather than where its page began.
    async fn salvage(
        &self,
        workspace: &str,
        mut after: u64,
        error: StoreError,
    ) -> Result<(Vec<AuditRows>, String), GateError> {
        let problem = unreadable_page(error)?;
        let mut records = Vec::new();
        for _ in 0..PAGE {
            match self.store().audit_rows_after(workspace, after, 1).await {
                Ok(record) => match record.last_seq() {
                    Some(seq) => {
                        after = seq;
                        records.push(record);
                    }
                    None => break,
                },
                Err(error) => {
                    unreadable_page(error)?;
                    break;
                }
            }
        }
        Ok((records, problem))
    }

    /// Workspace events after `after` (SSE replay), for users.
    pub async fn events_after(
        &self,
        principal: &Principal,
        after: u64,
        limit: u32,
    ) -> Result<Vec<WorkspaceEvent>, GateError> {
        require_role(principal, Role::Viewer, "stream events")?;
        Ok(self
            .store()
            .events_after(&principal.workspace, seq_bound(after), limit.clamp(1, 1000))
            .await?)
    }

    pub async fn last_event_id(&self, principal: &Principal) -> Result<u64, GateError> {
        require_role(principal, Role::Viewer, "stream events")?;
        Ok(self.store().last_event_id(&principal.workspace).await?)
    }
}
