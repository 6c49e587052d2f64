//! A page of audit records exactly as stored, for verifying the chain
//! ([`crate::Store::audit_rows_after`]).
//!
//! Verification reads every record of a chain (a million and more), so the page is lean:
//! each column of every row is appended to one buffer per column and a row is a set of
//! offsets into them, and `data` stays the JSON text the store holds (the verifier
//! hashes that text as it is instead of building a `serde_json::Value` per record).
//! A page is a handful of allocations, however many rows it holds, and a backend can
//! hand over columns it aggregated itself ([`AuditRows::from_separated`]).

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
    /// Bytes between one row's value and the next one's in a column: 0, or 1 for the
    /// [`SEPARATOR`] of [`AuditRows::from_separated`].
    gap: usize,
}

/// What separates a column's values in [`AuditRows::from_separated`]: the unit separator
/// (U+001F), which canonical JSON never holds raw and the other columns hold only if
/// someone wrote it there (then the page does not add up and is read row by row).
pub const SEPARATOR: u8 = 0x1f;

/// Where a row's columns end in each column buffer; each begins where the row before
/// ends, after the page's gap (0 for the first).
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
            gap: 0,
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

    /// A page from whole columns, each row's value followed by [`SEPARATOR`] but the
    /// last's, as a database can aggregate them without computing a length per value:
    /// `seqs` holds the `count` rows' seqs separated by single spaces. `None` unless
    /// everything adds up: exactly `count` seqs, strictly rising, and exactly `count`
    /// values in each column (a value holding the separator makes one too many).
    pub fn from_separated(count: usize, seqs: &str, columns: [String; 7]) -> Option<Self> {
        let mut rows = Vec::with_capacity(count);
        let mut last_seq = None;
        for seq in seqs.split(' ') {
            let seq = seq.parse::<u64>().ok()?;
            if last_seq.is_some_and(|last| last >= seq) {
                return None;
            }
            last_seq = Some(seq);
            rows.push(Spans { seq, ends: [0; 7] });
        }
        if rows.len() != count {
            return None;
        }
        for (index, column) in columns.iter().enumerate() {
            let mut ends = memchr::memchr_iter(SEPARATOR, column.as_bytes())
                .chain(std::iter::once(column.len()));
            for row in &mut rows {
                *row.ends.get_mut(index)? = ends.next()?;
            }
            if ends.next().is_some() {
                return None;
            }
        }
        Some(AuditRows {
            columns,
            rows,
            gap: 1,
        })
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
            let start = before
                .and_then(|before| before.ends.get(column))
                .map(|end| end + self.gap);
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
    fn separated_columns_are_cut_into_rows_only_when_everything_adds_up() {
        let columns = |subject: &str| -> [String; 7] {
            [
                "t1\u{1f}t2",
                "a1\u{1f}a2",
                "k1\u{1f}",
                subject,
                "{}\u{1f}[1]",
                "p1\u{1f}p2",
                "h1\u{1f}h2",
            ]
            .map(str::to_owned)
        };
        let page = AuditRows::from_separated(2, "4 5", columns("sü1\u{1f}s2")).unwrap();
        let mut expected = AuditRows::default();
        expected.push(4, ["t1", "a1", "k1", "sü1", "{}", "p1", "h1"]);
        expected.push(5, ["t2", "a2", "", "s2", "[1]", "p2", "h2"]);
        assert!(page.iter().eq(expected.iter()));
        assert_eq!((page.len(), page.last_seq()), (2, Some(5)));
        let one =
            AuditRows::from_separated(1, "9", ["", "", "", "", "", "", ""].map(str::to_owned))
                .unwrap();
        assert_eq!(one.get(0).unwrap().seq, 9);
        assert_eq!(one.get(0).unwrap().data, "");

        let refused = [
            (2, "4 5", "sü1\u{1f}s\u{1f}2"), // a value holding the separator
            (2, "4 5", "sü1s2"),             // a value too few
            (3, "4 5 6", "sü1\u{1f}s2"),     // a row too many
            (2, "4", "sü1\u{1f}s2"),         // a seq too few
            (2, "5 4", "sü1\u{1f}s2"),       // seq not rising
            (2, "4 4", "sü1\u{1f}s2"),       // seq repeated
            (2, "4 x", "sü1\u{1f}s2"),       // not a number
            (2, "4  5", "sü1\u{1f}s2"),      // not one space
        ];
        for (count, seqs, subject) in refused {
            assert!(
                AuditRows::from_separated(count, seqs, columns(subject)).is_none(),
                "{count} {seqs} {subject:?}"
            );
        }
    }
}
