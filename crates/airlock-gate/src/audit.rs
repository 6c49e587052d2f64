//! Reading and verifying the audit chain (G8), online and offline.
//!
//! [`ChainVerifier`] is fed records in order and reports the first record where the chain
//! breaks: a wrong `seq` (a record deleted or reordered), a `prev_hash` that does not link,
//! or a `hash` that does not recompute (a record edited). [`verify_export`] checks an NDJSON
//! export and also reports a torn last line.

use crate::identity::require_role;
use crate::{Gate, GateError};
use airlock_policy::digest::{audit_hash, GENESIS_HASH};
use airlock_protocol::{AuditRecord, Role, WorkspaceEvent};
use airlock_store::Principal;
use serde::Serialize;

/// Page size when the gate walks the whole chain.
const PAGE: u32 = 1000;

/// The newest record of a chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Head {
    pub seq: u64,
    pub hash: String,
}

/// The result of a verification (`GET /v1/audit/verify`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    pub ok: bool,
    /// Records read.
    pub records: u64,
    pub head: Option<Head>,
    /// The first seq at which the chain breaks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_bad_seq: Option<u64>,
    /// Offline only: the export's last line is cut off.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub torn_tail: bool,
    /// What is wrong, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// Checks records one at a time, in order.
#[derive(Debug)]
pub struct ChainVerifier {
    expected_seq: u64,
    prev_hash: String,
    records: u64,
    head: Option<Head>,
    first_bad: Option<(u64, String)>,
}

impl Default for ChainVerifier {
    fn default() -> Self {
        ChainVerifier {
            expected_seq: 1,
            prev_hash: GENESIS_HASH.to_owned(),
            records: 0,
            head: None,
            first_bad: None,
        }
    }
}

impl ChainVerifier {
    pub fn push(&mut self, record: &AuditRecord) {
        self.records += 1;
        if self.first_bad.is_none() {
            let problem = if record.seq != self.expected_seq {
                Some((
                    self.expected_seq,
                    format!(
                        "expected seq {}, found seq {}: a record is missing or out of order",
                        self.expected_seq, record.seq
                    ),
                ))
            } else if record.prev_hash != self.prev_hash {
                Some((
                    record.seq,
                    format!(
                        "seq {}: prev_hash does not link to the record before",
                        record.seq
                    ),
                ))
            } else {
                // The hash is taken out of the record's own value rather than left for
                // `audit_hash` to skip, which would copy the whole record once more.
                let recomputed = serde_json::to_value(record)
                    .map(|mut value| {
                        if let Some(members) = value.as_object_mut() {
                            members.remove("hash");
                        }
                        audit_hash(&record.prev_hash, &value)
                    })
                    .unwrap_or_default();
                (recomputed != record.hash).then(|| {
                    (
                        record.seq,
                        format!(
                            "seq {}: hash does not match the record's contents",
                            record.seq
                        ),
                    )
                })
            };
            self.first_bad = problem;
        }
        self.expected_seq = record.seq.saturating_add(1);
        self.prev_hash = record.hash.clone();
        self.head = Some(Head {
            seq: record.seq,
            hash: record.hash.clone(),
        });
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
        VerifyReport {
            ok: first_bad_seq.is_none() && !torn_tail,
            records: self.records,
            head: self.head,
            first_bad_seq,
            torn_tail,
            problem,
        }
    }
}

/// Verifies an NDJSON export. A last line that does not end in a newline or does not
/// parse is a torn tail; an unparsable line in the middle is a break at that position.
pub fn verify_export(text: &str) -> VerifyReport {
    let mut verifier = ChainVerifier::default();
    let complete = text.is_empty() || text.ends_with('\n');
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    let mut torn = false;
    for (index, line) in lines.iter().enumerate() {
        let last = index + 1 == lines.len();
        // The writer never finished a last line without its newline, even if it parses.
        if last && !complete {
            torn = true;
            break;
        }
        match serde_json::from_str::<AuditRecord>(line) {
            Ok(record) => verifier.push(&record),
            Err(_) if last => torn = true,
            Err(error) => {
                if verifier.first_bad.is_none() {
                    verifier.first_bad = Some((
                        verifier.expected_seq,
                        format!("line {}: not an audit record: {error}", index + 1),
                    ));
                }
                verifier.records += 1;
            }
        }
    }
    verifier.finish(torn)
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

    /// Walks the whole chain of the workspace and verifies it.
    pub async fn verify_audit(&self, principal: &Principal) -> Result<VerifyReport, GateError> {
        require_role(principal, Role::Viewer, "verify the audit log")?;
        let mut verifier = ChainVerifier::default();
        let mut after = 0;
        loop {
            let page = self
                .store()
                .audit_after(&principal.workspace, after, PAGE)
                .await?;
            for record in &page {
                verifier.push(record);
            }
            match page.last() {
                Some(last) if page.len() == PAGE as usize => after = last.seq,
                _ => return Ok(verifier.finish(false)),
            }
        }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    /// A valid chain of `n` records, as an export would hold it.
    fn chain(n: u64) -> Vec<AuditRecord> {
        let mut records = Vec::new();
        let mut prev = GENESIS_HASH.to_owned();
        for seq in 1..=n {
            let mut record = AuditRecord {
                seq,
                at: format!("2026-11-30T10:00:{seq:02}Z"),
                actor: "system".into(),
                kind: "call.allowed".into(),
                subject: format!("call_{seq}"),
                data: json!({"n": seq}),
                prev_hash: prev.clone(),
                hash: String::new(),
            };
            record.hash = audit_hash(&prev, &serde_json::to_value(&record).unwrap());
            prev = record.hash.clone();
            records.push(record);
        }
        records
    }

    fn export(records: &[AuditRecord]) -> String {
        records
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect()
    }

    #[test]
    fn an_intact_chain_verifies_with_its_head() {
        let records = chain(5);
        let report = verify_export(&export(&records));
        assert!(report.ok, "{report:?}");
        assert_eq!(report.records, 5);
        assert_eq!(report.head.unwrap().hash, records[4].hash);
        assert!(verify_export("").ok);
    }

    #[test]
    fn an_edited_record_is_located() {
        let mut records = chain(5);
        records[2].data = json!({"n": 99});
        assert_eq!(verify_export(&export(&records)).first_bad_seq, Some(3));
    }

    #[test]
    fn an_edited_record_with_a_recomputed_hash_breaks_the_next_link() {
        let mut records = chain(5);
        records[2].data = json!({"n": 99});
        records[2].hash = audit_hash(
            &records[2].prev_hash,
            &serde_json::to_value(&records[2]).unwrap(),
        );
        assert_eq!(verify_export(&export(&records)).first_bad_seq, Some(4));
    }

    #[test]
    fn a_deleted_record_is_located() {
        let mut records = chain(5);
        records.remove(1);
        let report = verify_export(&export(&records));
        assert_eq!(report.first_bad_seq, Some(2), "{report:?}");
        assert!(!report.ok);
    }

    #[test]
    fn reordered_records_are_located() {
        let mut records = chain(5);
        records.swap(2, 3);
        assert_eq!(verify_export(&export(&records)).first_bad_seq, Some(3));
    }

    #[test]
    fn a_torn_last_line_is_reported_apart_from_a_break() {
        let text = export(&chain(3));
        let torn = &text[..text.len() - 10];
        let report = verify_export(torn);
        assert!(!report.ok && report.torn_tail, "{report:?}");
        assert_eq!(report.first_bad_seq, None);
        assert_eq!(report.records, 2);
        // A complete last record without its newline was never finished either.
        let report = verify_export(text.trim_end());
        assert!(report.torn_tail && !report.ok);
    }

    #[test]
    fn a_garbled_line_in_the_middle_is_a_break() {
        let records = chain(3);
        let text = format!(
            "{}not json\n{}",
            export(&records[..1]),
            export(&records[1..])
        );
        let report = verify_export(&text);
        assert_eq!(report.first_bad_seq, Some(2), "{report:?}");
    }

    #[test]
    fn cursors_past_the_largest_sequence_mean_the_largest() {
        assert_eq!(seq_bound(0), 0);
        assert_eq!(seq_bound(42), 42);
        assert_eq!(seq_bound(u64::MAX), i64::MAX as u64);
        assert_eq!(seq_bound(i64::MAX as u64 + 1), i64::MAX as u64);
    }
}
