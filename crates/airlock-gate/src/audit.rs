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
                let recomputed = serde_json::to_value(record)
                    .map(|value| audit_hash(&record.prev_hash, &value))
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
            .audit_after(&principal.workspace, after, limit.clamp(1, 1000))
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
            .events_after(&principal.workspace, after, limit.clamp(1, 1000))
            .await?)
    }

    pub async fn last_event_id(&self, principal: &Principal) -> Result<u64, GateError> {
        require_role(principal, Role::Viewer, "stream events")?;
        Ok(self.store().last_event_id(&principal.workspace).await?)
    }
}
