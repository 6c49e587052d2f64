//! A page of audit records exactly as stored, for verifying the chain
//! ([`crate::Store::audit_rows_after`]).
//!
//! Verification reads every record of a chain (a million and more), so the page is lean:
//! each column of every row is appended to one buffer per column and a row is a set of
//! offsets into them, and `data` stays the JSON text the store holds (the verifier
//! canonicalizes that text itself instead of building a `serde_json::Value` per record).
//! A page is a handful of allocations, however many rows it holds, and a backend can
//! hand over columns it aggregated itself ([`AuditRows::from_columns`]).

/// One record as stored; `data` is its JSON text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditRow<'a> {
    pub seq: u64,
    pub at: &'a str,
    pub actor: &'a str,
    pub kind: &'a str,
    pub subject: &'a str,
    pub data: &'a str,
    pub prev_hash: &'a str,
    pub hash: &'a str,
}

/// Records in `seq` order; see the module comment.
#[derive(Debug, Clone, Default)]
pub struct AuditRows {
    /// `at, actor, kind, subject, data, prev_hash, hash`: each column of every row, one
    /// after the other.
    columns: [String; 7],
    rows: Vec<Spans>,
}

/// Where a row's columns end in each column buffer; each begins where the row before
/// ends (0 for the first).
#[derive(Debug, Clone)]
struct Spans {
    seq: u64,
    ends: [usize; 7],
}

impl AuditRows {
    pub fn with_capacity(rows: usize) -> Self {
        AuditRows {
            columns: Default::default(),
            rows: Vec::with_capacity(rows),
        }
    }

    /// Appends a row; `columns` are `at, actor, kind, subject, data, prev_hash, hash`.
    pub fn push(&mut self, seq: u64, columns: [&str; 7]) {
        let mut ends = [0; 7];
        for ((end, buffer), column) in ends.iter_mut().zip(&mut self.columns).zip(columns) {
            buffer.push_str(column);
            *end = buffer.len();
        }
        self.rows.push(Spans { seq, ends });
    }

    /// A page from whole columns, as a database can aggregate them: `numbers` holds, for
    /// each of `count` rows, its seq and the byte length of each of its seven columns,
    /// separated by single spaces; `columns` are those columns, each concatenated.
    /// `None` unless everything adds up: exactly `count` rows, seqs strictly rising, every
    /// column used to its end and cut on character boundaries.
    pub fn from_columns(count: usize, numbers: &str, columns: [String; 7]) -> Option<Self> {
        let mut numbers = numbers.split(' ').map(|number| number.parse::<u64>().ok());
        let mut rows = Vec::with_capacity(count);
        let mut ends = [0usize; 7];
        let mut last_seq = None;
        for _ in 0..count {
            let seq = numbers.next()??;
            if last_seq.is_some_and(|last| last >= seq) {
                return None;
            }
            last_seq = Some(seq);
            for (end, column) in ends.iter_mut().zip(&columns) {
                let length = usize::try_from(numbers.next()??).ok()?;
                let start = *end;
                *end = start.checked_add(length)?;
                column.get(start..*end)?;
            }
            rows.push(Spans { seq, ends });
        }
        let used_up = ends
            .iter()
            .zip(&columns)
            .all(|(end, column)| *end == column.len());
        (numbers.next().is_none() && used_up).then_some(AuditRows { columns, rows })
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn get(&self, index: usize) -> Option<AuditRow<'_>> {
        let spans = self.rows.get(index)?;
        let before = index
            .checked_sub(1)
            .and_then(|before| self.rows.get(before));
        let column = |column: usize| {
            let start = before.and_then(|before| before.ends.get(column)).copied();
            let end = spans.ends.get(column).copied().unwrap_or(0);
            self.columns
                .get(column)
                .and_then(|buffer| buffer.get(start.unwrap_or(0)..end))
                // Offsets were checked (or taken) at character boundaries.
                .unwrap_or_default()
        };
        Some(AuditRow {
            seq: spans.seq,
            at: column(0),
            actor: column(1),
            kind: column(2),
            subject: column(3),
            data: column(4),
            prev_hash: column(5),
            hash: column(6),
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = AuditRow<'_>> + '_ {
        (0..self.rows.len()).filter_map(|index| self.get(index))
    }

    /// The `seq` of the last row.
    pub fn last_seq(&self) -> Option<u64> {
        self.rows.last().map(|spans| spans.seq)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn rows_come_back_column_for_column() {
        let mut rows = AuditRows::with_capacity(1);
        assert!(rows.is_empty() && rows.last_seq().is_none());
        rows.push(7, ["t", "actor", "", "süb", r#"{"a":1}"#, "p", "h"]);
        rows.push(8, ["t2", "a2", "k2", "s2", "{}", "h", "h2"]);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows.get(0).unwrap(),
            AuditRow {
                seq: 7,
                at: "t",
                actor: "actor",
                kind: "",
                subject: "süb",
                data: r#"{"a":1}"#,
                prev_hash: "p",
                hash: "h",
            }
        );
        let second = rows.get(1).unwrap();
        assert_eq!((second.seq, second.at, second.hash), (8, "t2", "h2"));
        assert!(rows.get(2).is_none());
        assert_eq!(rows.iter().count(), 2);
        assert_eq!(rows.last_seq(), Some(8));
    }

    #[test]
    fn aggregated_columns_are_cut_into_rows_only_when_everything_adds_up() {
        let columns = || -> [String; 7] {
            ["t1t2", "a1a2", "k1", "sü1s2", "{}[1]", "p1p2", "h1h2"].map(str::to_owned)
        };
        let good = "4 2 2 2 4 2 2 2 5 2 2 0 2 3 2 2";
        let page = AuditRows::from_columns(2, good, columns()).unwrap();
        let mut expected = AuditRows::default();
        expected.push(4, ["t1", "a1", "k1", "sü1", "{}", "p1", "h1"]);
        expected.push(5, ["t2", "a2", "", "s2", "[1]", "p2", "h2"]);
        assert!(page.iter().eq(expected.iter()));
        assert_eq!(page.len(), 2);

        let refused = [
            (2, "4 2 2 2 4 2 2 2 5 2 2 0 2 3 2 2 9"), // a number too many
            (2, "4 2 2 2 4 2 2 2 5 2 2 0 2 3 2"),     // one too few
            (3, good),                                // fewer rows than counted
            (2, "5 2 2 2 4 2 2 2 4 2 2 0 2 3 2 2"),   // seq not rising
            (2, "4 2 2 2 4 2 2 2 4 2 2 0 2 3 2 2"),   // seq repeated
            (2, "4 2 2 2 4 2 2 2 5 2 2 0 2 2 2 2"),   // data not used up
            (2, "4 2 2 2 2 2 2 2 5 2 2 0 4 3 2 2"),   // cut inside ü
            (2, "4 2 2 2 4 2 2 2 5 2 2 0 2 3 2 x"),   // not a number
            (2, "4 2 2 2 4 2 2 2 5 2 2 0 2 3 2 99"),  // past the end
        ];
        for (count, numbers) in refused {
            assert!(
                AuditRows::from_columns(count, numbers, columns()).is_none(),
                "{numbers}"
            );
        }
    }
}
