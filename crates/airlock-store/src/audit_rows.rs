//! A page of audit records exactly as stored, for verifying the chain
//! ([`crate::Store::audit_rows_after`]).
//!
//! Verification reads every record of a chain (a million and more), so the page is lean:
//! each column of every row is appended to one buffer per column and a row is a set of
//! offsets into them, and `data` stays the JSON text the store holds (the verifier
//! hashes that text as it is instead of building a `serde_json::Value` per record).
//! A page is a handful of allocations, however many rows it holds, and a backend can
//! hand over columns it aggregated itself ([`AuditRows::from_separated`]). A sealed
//! segment's page keeps its columns as the segment lays them out, one after another in
//! one buffer, read there with no other copy ([`read_segment`], [`ChainReader`]).

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

impl AuditRow<'_> {
    /// `at, actor, kind, subject, data, prev_hash, hash`.
    pub fn values(&self) -> [&str; 7] {
        [
            self.at,
            self.actor,
            self.kind,
            self.subject,
            self.data,
            self.prev_hash,
            self.hash,
        ]
    }

    /// The record it stores, with `data` as parsed from its text.
    pub fn record(&self, data: serde_json::Value) -> airlock_protocol::AuditRecord {
        airlock_protocol::AuditRecord {
            seq: self.seq,
            at: self.at.to_owned(),
            actor: self.actor.to_owned(),
            kind: self.kind.to_owned(),
            subject: self.subject.to_owned(),
            data,
            prev_hash: self.prev_hash.to_owned(),
            hash: self.hash.to_owned(),
        }
    }

    /// The bytes of its values.
    pub fn size(&self) -> usize {
        self.values().iter().map(|value| value.len()).sum()
    }
}

/// Records in `seq` order; see the module comment.
#[derive(Debug, Clone, Default)]
pub struct AuditRows {
    /// `at, actor, kind, subject, data, prev_hash, hash`: each column of every row, one
    /// after the other, in a buffer per column (rows pushed one by one, or columns a
    /// database aggregated)...
    columns: [String; 7],
    /// ...unless they lie together, as a segment holds them.
    together: Option<Together>,
    rows: Vec<Spans>,
    /// Bytes between one row's value and the next one's in a column: 0, or 1 for the
    /// [`SEPARATOR`] of [`AuditRows::from_separated`].
    gap: usize,
}

/// The columns one after another in one buffer, as a segment holds them (read with one
/// copy in all, [`read_segment`]): column `i` is `whole[starts[i]..starts[i + 1]]`.
#[derive(Debug, Clone)]
struct Together {
    whole: String,
    starts: [usize; 8],
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
            rows: Vec::with_capacity(rows),
            ..AuditRows::default()
        }
    }

    /// Column `index` (`at, actor, kind, subject, data, prev_hash, hash`) of every row.
    fn column(&self, index: usize) -> &str {
        match &self.together {
            Some(Together { whole, starts }) => starts
                .get(index)
                .zip(starts.get(index + 1))
                .and_then(|(start, end)| whole.get(*start..*end))
                .unwrap_or_default(),
            None => self.columns.get(index).map_or("", String::as_str),
        }
    }

    /// Appends a row; `columns` are `at, actor, kind, subject, data, prev_hash, hash`.
    pub fn push(&mut self, seq: u64, columns: [&str; 7]) {
        if self.together.is_some() {
            self.columns = std::array::from_fn(|index| self.column(index).to_owned());
            self.together = None;
        }
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
            together: None,
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
            self.column(column)
                .get(start.unwrap_or(0)..end)
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

    /// The `seq` of the first row.
    pub fn first_seq(&self) -> Option<u64> {
        self.rows.first().map(|spans| spans.seq)
    }

    /// Appends the rows of `other` with `seq > after`, at most `limit` of them.
    pub fn extend_after(&mut self, other: &AuditRows, after: u64, limit: usize) {
        for row in other.iter().filter(|row| row.seq > after).take(limit) {
            self.push_row(&row);
        }
    }

    /// Appends a copy of `row`.
    pub fn push_row(&mut self, row: &AuditRow<'_>) {
        self.push(row.seq, row.values());
    }

    /// The page as the body of a sealed segment (`sql/audit_segments.rs`): the
    /// [`SEGMENT_MAGIC`], the row count (`u32`), each row's `seq` (`u64`) and the length of
    /// each of its seven values (`u32`), then each column's length (`u64`) and text. All
    /// little-endian. Every value is kept byte for byte, whatever it holds. `None` if a
    /// value is 4 GiB or longer, which no request can carry.
    pub fn to_segment(&self) -> Option<Vec<u8>> {
        let text: usize = (0..7).map(|index| self.column(index).len()).sum();
        let mut body = Vec::with_capacity(text + self.rows.len() * 36 + 64);
        body.extend_from_slice(SEGMENT_MAGIC);
        body.extend_from_slice(&u32::try_from(self.rows.len()).ok()?.to_le_bytes());
        let mut columns: [String; 7] = Default::default();
        for row in self.iter() {
            body.extend_from_slice(&row.seq.to_le_bytes());
            for (value, column) in row.values().into_iter().zip(&mut columns) {
                body.extend_from_slice(&u32::try_from(value.len()).ok()?.to_le_bytes());
                column.push_str(value);
            }
        }
        for column in &columns {
            body.extend_from_slice(&u64::try_from(column.len()).ok()?.to_le_bytes());
            body.extend_from_slice(column.as_bytes());
        }
        Some(body)
    }

    /// The page [`AuditRows::to_segment`] wrote, from memory: [`read_segment`].
    pub fn from_segment(mut body: &[u8]) -> Option<AuditRows> {
        read_segment(&mut body)
    }
}

/// Where a segment's body is read from: memory, or a database's blob read in place.
pub(crate) trait SegmentBody {
    fn len(&self) -> usize;
    /// Fills `into` with the bytes at `offset`; `None` if the body does not hold them.
    fn read_at(&mut self, into: &mut [u8], offset: usize) -> Option<()>;
}

impl SegmentBody for &[u8] {
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }

    fn read_at(&mut self, into: &mut [u8], offset: usize) -> Option<()> {
        let end = offset.checked_add(into.len())?;
        into.copy_from_slice(self.get(offset..end)?);
        Some(())
    }
}

/// The page [`AuditRows::to_segment`] wrote, its columns read straight into one buffer
/// (no copy but that read); `None` unless every part of `body` adds up: the magic, the
/// count, lengths that fill each column exactly and end on character boundaries, UTF-8
/// text, `seq`s strictly rising, and nothing after the last column. A segment edited in
/// place is then either refused here or read as the rows it now spells, whose hashes tell.
pub(crate) fn read_segment(body: &mut impl SegmentBody) -> Option<AuditRows> {
    let length = body.len();
    let mut head = [0u8; 8];
    body.read_at(&mut head, 0)?;
    let mut cursor = Cursor { rest: &head };
    if cursor.take(SEGMENT_MAGIC.len())? != SEGMENT_MAGIC {
        return None;
    }
    let count = usize::try_from(u32::from_le_bytes(cursor.array()?)).ok()?;
    // Each row takes 36 bytes of the body: a count larger than that allows is a lie.
    if count > (length - head.len()) / 36 {
        return None;
    }
    let mut table = vec![0u8; count * 36];
    body.read_at(&mut table, head.len())?;
    let mut offset = head.len() + table.len();
    let mut cursor = Cursor { rest: &table };
    let mut rows = Vec::with_capacity(count);
    let mut ends = [0usize; 7];
    for _ in 0..count {
        let seq = u64::from_le_bytes(cursor.array()?);
        if rows.last().is_some_and(|before: &Spans| before.seq >= seq) {
            return None;
        }
        for end in &mut ends {
            let length = usize::try_from(u32::from_le_bytes(cursor.array()?)).ok()?;
            *end = end.checked_add(length)?;
        }
        rows.push(Spans { seq, ends });
    }
    let mut whole = Vec::with_capacity(length.saturating_sub(offset + 7 * 8));
    let mut starts = [0usize; 8];
    for (index, column_end) in ends.iter().enumerate() {
        let mut size = [0u8; 8];
        body.read_at(&mut size, offset)?;
        offset += size.len();
        let size = usize::try_from(u64::from_le_bytes(size)).ok()?;
        if *column_end != size || size > length - offset {
            return None;
        }
        let start = whole.len();
        whole.resize(start + size, 0);
        body.read_at(whole.get_mut(start..)?, offset)?;
        offset += size;
        *starts.get_mut(index + 1)? = whole.len();
    }
    if offset != length {
        return None;
    }
    let whole = String::from_utf8(whole).ok()?;
    // Each column, and each value in it, begins on a character boundary.
    let bounded = starts.iter().take(7).enumerate().all(|(index, start)| {
        whole.is_char_boundary(*start)
            && rows
                .iter()
                .all(|row| whole.is_char_boundary(start + row.ends[index]))
    });
    bounded.then_some(AuditRows {
        columns: Default::default(),
        together: Some(Together { whole, starts }),
        rows,
        gap: 0,
    })
}

/// A sealed segment found by [`ChainReader::next_segments`], to be read by
/// [`ChainReader::read`] (on this reader or another of the same store).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentRef {
    pub first_seq: u64,
    pub last_seq: u64,
    /// Where the backend finds it.
    pub(crate) id: i64,
}

/// Blocking reads of an audit chain as stored, its sealed segments and its rows, each
/// reader on a connection of its own, for walking a whole chain on every core
/// (`Store::chain_reader`). A record never changes once appended, wherever it is kept, so
/// what one reader lists another may read; a seal committing meanwhile can only make
/// records missing from a read, which the caller sees by their seqs.
pub trait ChainReader: Send {
    /// The segments of `workspace` that come next after `after`, at most `max`: the
    /// first holds `after + 1`, and each one after holds the seq after the last one's.
    /// Empty when the record after `after` is not the first of a segment.
    fn next_segments(
        &mut self,
        workspace: &str,
        after: u64,
        max: usize,
    ) -> crate::StoreResult<Vec<SegmentRef>>;

    /// The records of `segment`: an error if it cannot be read or does not hold what it
    /// was found by ([`checked_segment`]).
    fn read(&mut self, segment: SegmentRef) -> crate::StoreResult<AuditRows>;

    /// The records of `workspace` kept as rows with `after < seq <= through`, in seq
    /// order (those in segments are not among them): an error for a row that is not a
    /// record's text.
    fn read_rows(
        &mut self,
        workspace: &str,
        after: u64,
        through: u64,
    ) -> crate::StoreResult<AuditRows>;
}

/// A record's `seq` as a database holds it (a signed integer), or why it is not one.
pub(crate) fn stored_seq(seq: i64) -> crate::StoreResult<u64> {
    u64::try_from(seq).map_err(|_| crate::StoreError::Corrupt {
        table: "audit",
        detail: "seq: negative".to_owned(),
    })
}

/// A segment read back, `None` if it did not add up: its records must be the ones its
/// row is found by (`first`, `last`), or it would be skipped or read out of order.
pub(crate) fn checked_segment(
    segment: Option<AuditRows>,
    first: i64,
    last: i64,
) -> crate::StoreResult<AuditRows> {
    let seq = |seq: Option<u64>| seq.and_then(|seq| i64::try_from(seq).ok());
    match segment {
        Some(segment)
            if seq(segment.first_seq()) == Some(first) && seq(segment.last_seq()) == Some(last) =>
        {
            Ok(segment)
        }
        _ => Err(crate::StoreError::Corrupt {
            table: "audit_segments",
            detail: format!("the segment {first}..={last} cannot be read"),
        }),
    }
}

/// The first bytes of a sealed segment's body, naming its layout ([`AuditRows::to_segment`]).
pub const SEGMENT_MAGIC: &[u8; 4] = b"ALS1";

/// Reads a segment's body from the front.
struct Cursor<'a> {
    rest: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, length: usize) -> Option<&'a [u8]> {
        if length > self.rest.len() {
            return None;
        }
        let (taken, rest) = self.rest.split_at(length);
        self.rest = rest;
        Some(taken)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
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

    fn sample() -> AuditRows {
        let mut rows = AuditRows::default();
        rows.push(3, ["t", "actor", "", "süb\u{1f}", r#"{"a":"é"}"#, "p", "h"]);
        rows.push(4, ["t2", "a2", "k2", "s2", "{}", "h", "h2"]);
        rows.push(9, ["t3", "", "k3", "s3", "[]", "h2", "h3"]);
        rows
    }

    #[test]
    fn a_segment_holds_its_rows_byte_for_byte() {
        let rows = sample();
        let body = rows.to_segment().unwrap();
        let back = AuditRows::from_segment(&body).unwrap();
        assert!(back.iter().eq(rows.iter()));
        assert_eq!((back.first_seq(), back.last_seq()), (Some(3), Some(9)));
        // A page cut from separated columns (gap 1) writes the same segment.
        let separated = AuditRows::from_separated(
            2,
            "4 9",
            [
                "t2\u{1f}t3",
                "a2\u{1f}",
                "k2\u{1f}k3",
                "s2\u{1f}s3",
                "{}\u{1f}[]",
                "h\u{1f}h2",
                "h2\u{1f}h3",
            ]
            .map(str::to_owned),
        )
        .unwrap();
        let mut tail = AuditRows::default();
        tail.extend_after(&rows, 3, 10);
        assert_eq!(separated.to_segment(), tail.to_segment());
        let empty = AuditRows::from_segment(&AuditRows::default().to_segment().unwrap()).unwrap();
        assert!(empty.is_empty());
    }

    #[test]
    fn extend_after_takes_the_rows_past_the_cursor_up_to_the_limit() {
        let rows = sample();
        let mut page = AuditRows::default();
        page.extend_after(&rows, 3, 1);
        assert_eq!(page.iter().map(|row| row.seq).collect::<Vec<_>>(), [4]);
        page.extend_after(&rows, 4, 10);
        assert_eq!(page.iter().map(|row| row.seq).collect::<Vec<_>>(), [4, 9]);
        assert!(page.get(1).unwrap() == rows.get(2).unwrap());
    }

    #[test]
    fn a_segment_that_does_not_add_up_is_refused() {
        let body = sample().to_segment().unwrap();
        for length in 0..body.len() {
            assert!(
                AuditRows::from_segment(&body[..length]).is_none(),
                "cut at {length}"
            );
        }
        let mut longer = body.clone();
        longer.push(b'x');
        assert!(AuditRows::from_segment(&longer).is_none());
        let edit = |at: usize, byte: u8| {
            let mut edited = body.clone();
            edited[at] = byte;
            AuditRows::from_segment(&edited)
        };
        assert!(edit(0, b'X').is_none(), "magic");
        assert!(edit(4, 2).is_none(), "a row fewer");
        assert!(edit(4, 4).is_none(), "a row more");
        assert!(
            edit(4 + 4 + 36, 3).is_none(),
            "the second seq repeats the first"
        );
        assert!(
            edit(4 + 4 + 8, 2).is_none(),
            "the first `at` is one byte longer"
        );
        // A value's bytes edited in place still read: the row then spells the edit, and its
        // hash no longer matches (the verifier's part).
        let text = body.len() - 5;
        let edited = edit(text, b'X').unwrap();
        assert!(!edited.iter().eq(sample().iter()));
        // A cut in the middle of a character is refused: `é` is two bytes, and the lengths
        // 1 and 1 still fill the column's 2.
        let mut rows = AuditRows::default();
        rows.push(1, ["", "", "", "", "é", "", ""]);
        rows.push(2, ["", "", "", "", "", "", ""]);
        let body = rows.to_segment().unwrap();
        let data_length = |row: usize| 4 + 4 + row * 36 + 8 + 4 * 4;
        let mut split = body.clone();
        split[data_length(0)] = 1;
        split[data_length(1)] = 1;
        assert!(AuditRows::from_segment(&body).is_some());
        assert!(AuditRows::from_segment(&split).is_none());
        // A column that ends in the middle of a character, the next beginning with its
        // last byte: the text is still UTF-8 as a whole, and refused all the same.
        let mut rows = AuditRows::default();
        rows.push(1, ["é", "x", "", "", "", "", ""]);
        let body = rows.to_segment().unwrap();
        // magic, count, the row (seq, then seven lengths), the `at` column's length (at
        // 44) and its text "é" (at 52), the `actor` column's length (at 54) and "x".
        assert_eq!(&body[52..54], "é".as_bytes());
        let mut shifted = body[..52].to_vec();
        shifted[16] = 1; // the row's `at`: 1 byte
        shifted[20] = 2; // its `actor`: 2 bytes
        shifted[44] = 1; // the `at` column: 1 byte
        shifted.push(body[52]);
        shifted.extend_from_slice(&2u64.to_le_bytes()); // the `actor` column: 2 bytes
        shifted.extend_from_slice(&[body[53], b'x']);
        shifted.extend_from_slice(&body[63..]);
        assert_eq!(shifted.len(), body.len());
        assert!(AuditRows::from_segment(&body).is_some());
        assert!(AuditRows::from_segment(&shifted).is_none());
    }

    /// A segment read in place keeps its rows apart from the buffer it lies in: rows
    /// pushed after them, or the page cut after a cursor, read the same as pushed rows.
    #[test]
    fn a_segment_read_in_place_takes_more_rows_like_any_page() {
        let mut read = AuditRows::from_segment(&sample().to_segment().unwrap()).unwrap();
        let mut pushed = sample();
        for page in [&mut read, &mut pushed] {
            page.push(10, ["t4", "a4", "k4", "s4", "{}", "h3", "h4"]);
        }
        assert!(read.iter().eq(pushed.iter()));
        let mut tail = AuditRows::default();
        tail.extend_after(&read, 4, 10);
        assert_eq!(tail.iter().map(|row| row.seq).collect::<Vec<_>>(), [9, 10]);
        assert_eq!(tail.to_segment(), {
            let mut expected = AuditRows::default();
            expected.extend_after(&pushed, 4, 10);
            expected.to_segment()
        });
    }
}
