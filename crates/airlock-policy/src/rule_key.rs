//! The key that names what a rule's conditions test, so that a call judged under two
//! policies (a replay's baseline and candidate) tests each rule they share once.

use crate::classes::ClassTable;
use crate::digest;
use crate::matcher::Side;
use std::sync::Arc;

/// Names what a rule's conditions test: its `when` as written, the side it leans to, and
/// the class table its `class` matchers were compiled against. Two rules with one key
/// hold or fail alike for every call, whatever policy each belongs to, since compiling a
/// `when` depends on nothing else: a call judged under a baseline and a candidate that
/// share most rules tests each shared rule once (see [`crate::Prepared`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConditionKey {
    /// The first 128 bits of the SHA-256 of the side and the written `when` entries: no
    /// two different texts meet.
    written: u128,
    /// The class table's address: policies share the built-in table, and one with its
    /// own `[commands]` has its own table, so its class rules never share a key.
    table: usize,
}

impl ConditionKey {
    pub(crate) fn new(
        side: Side,
        entries: &[String],
        table: &Arc<ClassTable>,
    ) -> Option<ConditionKey> {
        if entries.is_empty() {
            return None;
        }
        let side = match side {
            Side::Allow => "allow",
            Side::Restrict => "restrict",
        };
        // A JSON array: the entries' text cannot run into each other.
        let text = serde_json::to_string(&(side, entries)).ok()?;
        let digest = digest::sha256_hex(text.as_bytes());
        Some(ConditionKey {
            written: u128::from_str_radix(digest.get(..32)?, 16).ok()?,
            table: Arc::as_ptr(table) as usize,
        })
    }
}
