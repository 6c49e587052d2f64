//! Recomputing one record's hash, from an export line or a stored row, and doing so for
//! many records on several threads.
//!
//! A record's hash depends only on its own content and its own `prev_hash`, so every
//! record can be checked on its own; what links records (`seq` contiguous, `prev_hash` =
//! the hash before) is left to [`super::ChainVerifier`], one cheap pass in order.
//!
//! The hashed text is `prev_hash + "\n" + canonical JSON of the record without hash`
//! (DESIGN.md §6.3). Its members in canonical order are `actor, at, data, kind,
//! prev_hash, seq, subject`; they are fed to SHA-256 in that order, each where it lies.
//!
//! `data` is first hashed exactly as it is stored or exported, unparsed: the store has
//! kept it as its canonical JSON since it began hashing records from their parts, so for
//! those records this is the whole check. Taking those bytes as they are is sound: if
//! they hash to the stored hash, they are byte for byte the canonical text hashed at
//! append time (or SHA-256 is broken), and canonicalizing them would give them back
//! unchanged, so the general check would have passed too. The meaning columns (`at`,
//! `actor`, `kind`, `subject`) are always hashed from the row or line itself, so none of
//! them can change without the hash failing; nothing is trusted that is not hashed.
//! Only when that first hash fails is `data` canonicalized by [`Canonicalizer`] (records
//! stored before, or spaced and reordered exports) and hashed again; whatever that fast
//! path declines is checked the general way (`serde_json` → `Value` → `audit_hash`). The
//! verdict is therefore the one canonicalizing first gave, on every text.

use super::canonical::{string_end, value_end, write_string, Canonicalizer};
use airlock_policy::digest::audit_hash;
use airlock_protocol::AuditRecord;
use airlock_store::AuditRow;
use sha2::{Digest, Sha256};
use std::ops::Range;

/// A hash as read: borrowed, or held inline when it has the usual 64 hex digits, so that
/// a result crossing threads costs no allocation per record.
#[derive(Debug, Clone)]
pub(crate) enum Hex<'a> {
    Borrowed(&'a str),
    Inline([u8; 64]),
    Owned(String),
}

impl Hex<'_> {
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Hex::Borrowed(text) => text.as_bytes(),
            Hex::Inline(bytes) => bytes,
            Hex::Owned(text) => text.as_bytes(),
        }
    }

    fn into_owned(self) -> Hex<'static> {
        match self {
            Hex::Borrowed(text) => match <[u8; 64]>::try_from(text.as_bytes()) {
                Ok(bytes) => Hex::Inline(bytes),
                Err(_) => Hex::Owned(text.to_owned()),
            },
            Hex::Inline(bytes) => Hex::Inline(bytes),
            Hex::Owned(text) => Hex::Owned(text),
        }
    }
}

/// A record after its own hash was recomputed: what the in-order pass needs.
#[derive(Debug)]
pub(crate) enum Checked<'a> {
    Record {
        seq: u64,
        prev_hash: Hex<'a>,
        hash: Hex<'a>,
        /// The stored hash equals the one recomputed from the content.
        hash_ok: bool,
    },
    /// Not a record at all: what was wrong with it.
    Unreadable(String),
}

impl Checked<'_> {
    /// The same result, holding its own text (to cross threads).
    pub(crate) fn into_owned(self) -> Checked<'static> {
        match self {
            Checked::Record {
                seq,
                prev_hash,
                hash,
                hash_ok,
            } => Checked::Record {
                seq,
                prev_hash: prev_hash.into_owned(),
                hash: hash.into_owned(),
                hash_ok,
            },
            Checked::Unreadable(problem) => Checked::Unreadable(problem),
        }
    }
}

/// One thread's reusable buffers.
#[derive(Default)]
pub(crate) struct Scratch {
    canonicalizer: Canonicalizer,
    data: Vec<u8>,
    /// One escaped member at a time, on its way to the hasher.
    record: Vec<u8>,
}

/// A string member of a record: as JSON text already canonical (from an export line) or
/// as plain text (a column) to be escaped.
#[derive(Clone, Copy)]
enum Text<'a> {
    Json(&'a [u8]),
    Plain(&'a str),
}

impl Text<'_> {
    /// Feeds its canonical JSON to `hasher`; `scratch` holds an escaped column.
    fn hash(self, hasher: &mut Sha256, scratch: &mut Vec<u8>) {
        match self {
            Text::Json(json) => hasher.update(json),
            // Most columns need no escape: hashed where they lie, between quotes.
            Text::Plain(plain)
                if !plain
                    .bytes()
                    .any(|byte| byte < 0x20 || byte == b'"' || byte == b'\\') =>
            {
                hasher.update(b"\"");
                hasher.update(plain.as_bytes());
                hasher.update(b"\"");
            }
            Text::Plain(plain) => {
                scratch.clear();
                write_string(scratch, plain);
                hasher.update(&scratch[..]);
            }
        }
    }
}

/// The members of a record the hash covers but `data`.
struct Members<'a> {
    seq: u64,
    at: Text<'a>,
    actor: Text<'a>,
    kind: Text<'a>,
    subject: Text<'a>,
    prev_hash: &'a str,
}

impl<'a> Members<'a> {
    /// The members of an export line whose JSON strings `at, actor, kind, subject` lie
    /// at `spans`.
    fn of_line(
        text: &'a [u8],
        seq: u64,
        spans: [Range<usize>; 4],
        prev_hash: &'a str,
    ) -> Option<Self> {
        let [at, actor, kind, subject] = spans.map(|span| text.get(span).map(Text::Json));
        Some(Members {
            seq,
            at: at?,
            actor: actor?,
            kind: kind?,
            subject: subject?,
            prev_hash,
        })
    }
}

impl Scratch {
    /// Whether `hash` is the hash of the members with `data` (canonical JSON text). The
    /// canonical text is fed to SHA-256 piece by piece, in the order it would be written
    /// (no record buffer: `data`, most of the bytes, is hashed where it lies).
    fn hash_matches(&mut self, members: &Members<'_>, data: &[u8], hash: &str) -> bool {
        let mut hasher = Sha256::new();
        let piece = &mut self.record;
        hasher.update(members.prev_hash.as_bytes());
        hasher.update(b"\n{\"actor\":");
        members.actor.hash(&mut hasher, piece);
        hasher.update(b",\"at\":");
        members.at.hash(&mut hasher, piece);
        hasher.update(b",\"data\":");
        hasher.update(data);
        hasher.update(b",\"kind\":");
        members.kind.hash(&mut hasher, piece);
        hasher.update(b",\"prev_hash\":");
        Text::Plain(members.prev_hash).hash(&mut hasher, piece);
        piece.clear();
        piece.extend_from_slice(b",\"seq\":");
        write_u64(piece, members.seq);
        piece.extend_from_slice(b",\"subject\":");
        hasher.update(&piece[..]);
        members.subject.hash(&mut hasher, piece);
        hasher.update(b"}");
        hex_equals(&hasher.finalize(), hash)
    }

    /// Whether a stored row's hash recomputes from its columns: `data` as stored first,
    /// then canonicalized (module comment).
    pub(crate) fn row_hash_ok(&mut self, row: AuditRow<'_>) -> bool {
        let members = Members {
            seq: row.seq,
            at: Text::Plain(row.at),
            actor: Text::Plain(row.actor),
            kind: Text::Plain(row.kind),
            subject: Text::Plain(row.subject),
            prev_hash: row.prev_hash,
        };
        let mut data = std::mem::take(&mut self.data);
        data.clear();
        let hash_ok = if self.hash_matches(&members, row.data.as_bytes(), row.hash) {
            true
        } else if self.canonicalizer.write(row.data.as_bytes(), &mut data) {
            self.hash_matches(&members, &data, row.hash)
        } else {
            match serde_json::from_str(row.data) {
                Ok(data) => recompute(&AuditRow { hash: "", ..row }.record(data)) == row.hash,
                // Data that is not JSON cannot have been what was hashed.
                Err(_) => false,
            }
        };
        self.data = data;
        hash_ok
    }

    /// Checks an export line: the fast path when the line is what the server writes,
    /// else the line parsed as an [`AuditRecord`] like any JSON.
    pub(crate) fn check_line<'a>(&mut self, line: &'a str) -> Checked<'a> {
        if let Some(checked) = self.check_line_fast(line) {
            return checked;
        }
        match serde_json::from_str::<AuditRecord>(line) {
            Ok(record) => {
                let hash_ok = recompute(&record) == record.hash;
                Checked::Record {
                    seq: record.seq,
                    prev_hash: Hex::Owned(record.prev_hash),
                    hash: Hex::Owned(record.hash),
                    hash_ok,
                }
            }
            Err(error) => Checked::Unreadable(error.to_string()),
        }
    }

    /// Checks a line laid out as the server exports it, without reading `data` at all:
    /// `Some` only for a genuine record, `None` for anything else (then the line takes
    /// [`Scratch::check_line`], whose verdict this one always equals).
    ///
    /// The server writes the members in the order `seq, at, actor, kind, subject, data,
    /// prev_hash, hash`, so a line ends with `,"prev_hash":"<64 hex>","hash":"<64 hex>"}`,
    /// 154 bytes long. The members before `data` are read as [`Scratch::check_line`] reads
    /// them (short); `data` is then everything between them and that tail, taken without
    /// finding where the value ends (most of a line's bytes, which the scan in
    /// `value_end` read one string at a time before SHA-256 read them again) and without
    /// a UTF-8 check of the line.
    ///
    /// Why a matching hash makes that sound: the hashed text is `prev_hash`, a newline and
    /// `{"actor":A,"at":T,"data":D,"kind":K,"prev_hash":P,"seq":S,"subject":U}` with
    /// A, T, K, U the line's own JSON strings (each ends at its first unescaped quote),
    /// P hex and S digits. If it hashes to the record's hash, it is the canonical text of
    /// the record hashed at append time. In that text the real `data` starts where D
    /// does; had it ended elsewhere, the text after it (`,"kind":` and the rest, valid
    /// JSON strings between) and the text after D would be two different-length endings
    /// of the same bytes, one starting inside the other, which needs `,"` outside a string
    /// where only `,"prev_hash"`, `,"seq"` and `,"subject"` occur, or inside one where no
    /// unescaped quote can. So D is the real `data`, canonical JSON, and the line is that
    /// record (valid JSON and UTF-8 because every part of it was hashed or is ASCII).
    pub(crate) fn check_exported(&mut self, text: &[u8]) -> Option<Checked<'static>> {
        const PREV: &[u8] = b",\"prev_hash\":\"";
        const HASH: &[u8] = b"\",\"hash\":\"";
        const TAIL: usize = PREV.len() + 64 + HASH.len() + 64 + 2;
        let data_end = text.len().checked_sub(TAIL)?;
        let tail = text.get(data_end..)?;
        let (prev_key, tail) = tail.split_at(PREV.len());
        let (prev_hash, tail) = tail.split_at(64);
        let (hash_key, tail) = tail.split_at(HASH.len());
        let (hash, end) = tail.split_at(64);
        let lower_hex = |hex: &[u8]| {
            hex.iter()
                .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
        };
        if prev_key != PREV
            || hash_key != HASH
            || end != b"\"}"
            || !lower_hex(prev_hash)
            || !lower_hex(hash)
        {
            return None;
        }
        // The members before `data`: the four strings and `seq`, and not the two hashes
        // (a line holding them twice is not a record).
        let Read {
            seq: Some(seq),
            strings: [Some(at), Some(actor), Some(kind), Some(subject), None, None],
            data: Some(data_at),
            ..
        } = read_members(text, true)?
        else {
            return None;
        };
        let data = text
            .get(data_at.start..data_end)
            .filter(|data| !data.is_empty())?;
        // Hex digits are text (ASCII).
        let prev_text = std::str::from_utf8(prev_hash).ok()?;
        let hash_text = std::str::from_utf8(hash).ok()?;
        let members = Members::of_line(text, seq, [at, actor, kind, subject], prev_text)?;
        if !self.hash_matches(&members, data, hash_text) {
            return None;
        }
        Some(Checked::Record {
            seq,
            prev_hash: Hex::Inline(prev_hash.try_into().ok()?),
            hash: Hex::Inline(hash.try_into().ok()?),
            hash_ok: true,
        })
    }

    /// `None` when the line is off the fast path (see `canonical`'s invariant; here also
    /// an unknown, missing or repeated member, a `seq` that is not a plain integer, an
    /// escaped character in either hash).
    fn check_line_fast<'a>(&mut self, line: &'a str) -> Option<Checked<'a>> {
        let text = line.as_bytes();
        let Read {
            seq,
            strings,
            data,
            position,
        } = read_members(text, false)?;
        if skip_space(text, position + 1) != text.len() {
            return None;
        }
        let data = text.get(data?)?;
        let [Some(at), Some(actor), Some(kind), Some(subject), Some(prev_hash), Some(hash)] =
            strings
        else {
            return None;
        };
        let prev_hash = unquoted(line, prev_hash)?;
        let hash = unquoted(line, hash)?;
        let seq = seq?;
        let members = Members::of_line(text, seq, [at, actor, kind, subject], prev_hash)?;
        // `data` as it lies first, then canonicalized (module comment); a `data` the
        // canonical writer declines sends the whole line to the general path.
        let hash_ok = if self.hash_matches(&members, data, hash) {
            true
        } else {
            let mut canonical = std::mem::take(&mut self.data);
            canonical.clear();
            let written = self.canonicalizer.write(data, &mut canonical);
            let hash_ok = written && self.hash_matches(&members, &canonical, hash);
            self.data = canonical;
            if !written {
                return None;
            }
            hash_ok
        };
        Some(Checked::Record {
            seq,
            prev_hash: Hex::Borrowed(prev_hash),
            hash: Hex::Borrowed(hash),
            hash_ok,
        })
    }
}

/// A line's members as read by [`read_members`]: `seq`, the string members' spans
/// (quotes included) in the slots `at, actor, kind, subject, prev_hash, hash`, `data`'s
/// span, and where reading stopped.
struct Read {
    seq: Option<u64>,
    strings: [Option<Range<usize>>; 6],
    data: Option<Range<usize>>,
    position: usize,
}

/// Reads an object's members (each once, nothing unknown) up to its closing brace, or,
/// with `stop_at_data`, up to the start of `data`'s value (`data` is then empty there).
fn read_members(text: &[u8], stop_at_data: bool) -> Option<Read> {
    let mut position = 0;
    let mut seq = None;
    let mut strings: [Option<Range<usize>>; 6] = Default::default();
    let mut data = None;
    expect(text, &mut position, b'{')?;
    loop {
        position = skip_space(text, position);
        if text.get(position) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(text, position)?;
        let key = text.get(position + 1..key_end - 1)?;
        position = skip_space(text, key_end);
        expect(text, &mut position, b':')?;
        position = skip_space(text, position);
        let slot = match key {
            b"seq" if seq.is_none() => {
                let (value, end) = plain_u64(text, position)?;
                seq = Some(value);
                position = end;
                None
            }
            b"data" if stop_at_data => {
                data = Some(position..position);
                break;
            }
            b"data" if data.is_none() => {
                let end = value_end(text, position)?;
                data = Some(position..end);
                position = end;
                None
            }
            b"at" => Some(0),
            b"actor" => Some(1),
            b"kind" => Some(2),
            b"subject" => Some(3),
            b"prev_hash" => Some(4),
            b"hash" => Some(5),
            _ => return None,
        };
        if let Some(slot) = slot {
            if text.get(position) != Some(&b'"') {
                return None;
            }
            let end = string_end(text, position)?;
            let taken = strings.get_mut(slot)?;
            if taken.is_some() {
                return None;
            }
            *taken = Some(position..end);
            position = end;
        }
        position = skip_space(text, position);
        match text.get(position) {
            Some(b',') => position += 1,
            Some(b'}') => break,
            _ => return None,
        }
    }
    Some(Read {
        seq,
        strings,
        data,
        position,
    })
}

/// The general path: the record as a `Value` without its hash, canonicalized, hashed.
pub(crate) fn recompute(record: &AuditRecord) -> String {
    serde_json::to_value(record)
        .map(|mut value| {
            if let Some(members) = value.as_object_mut() {
                members.remove("hash");
            }
            audit_hash(&record.prev_hash, &value)
        })
        .unwrap_or_default()
}

/// Appends the decimal digits of `value`, as the canonical form prints an integer.
fn write_u64(out: &mut Vec<u8>, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

/// Whether `hex` is the lower-case hex of `digest` (what `audit_hash` writes).
fn hex_equals(digest: &[u8], hex: &str) -> bool {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let hex = hex.as_bytes();
    hex.len() == digest.len() * 2
        && digest.iter().zip(hex.chunks_exact(2)).all(|(byte, pair)| {
            pair == [
                DIGITS[usize::from(byte >> 4)],
                DIGITS[usize::from(byte & 0xf)],
            ]
        })
}

/// The text of the JSON string at `span` (quotes included) if it holds no escape, so
/// that the text is its value.
fn unquoted(line: &str, span: Range<usize>) -> Option<&str> {
    let inner = line.get(span.start + 1..span.end.checked_sub(1)?)?;
    (!inner.contains('\\')).then_some(inner)
}

fn skip_space(text: &[u8], mut position: usize) -> usize {
    while matches!(text.get(position), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        position += 1;
    }
    position
}

fn expect(text: &[u8], position: &mut usize, byte: u8) -> Option<()> {
    *position = skip_space(text, *position);
    (text.get(*position) == Some(&byte)).then(|| *position += 1)
}

/// A JSON integer that is a `u64` written plainly (no sign, no leading zero, no fraction
/// or exponent), and where it ends.
fn plain_u64(text: &[u8], start: usize) -> Option<(u64, usize)> {
    let mut end = start;
    while matches!(text.get(end), Some(b'0'..=b'9')) {
        end += 1;
    }
    let digits = text.get(start..end)?;
    if digits.is_empty()
        || (digits.len() > 1 && digits.first() == Some(&b'0'))
        || matches!(text.get(end), Some(b'.' | b'e' | b'E'))
    {
        return None;
    }
    let value = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some((value, end))
}

/// Items a thread claims at a time in [`check_all`]: small, so that a thread slowed by
/// other work (reading the next pages) leaves the rest of the items to the others rather
/// than holding every thread up at the end, and large beside the cost of a claim.
const CHUNK: usize = 32;

/// Checks every item on up to `threads` threads, results in input order, into `out`;
/// `failed` stands for each item of a thread that died (it must not read as checked).
/// Threads claim [`CHUNK`] items at a time until none are left.
pub(crate) fn check_all<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    check: impl Fn(&mut Scratch, &T) -> R + Sync,
    failed: impl Fn() -> R,
    out: &mut Vec<R>,
) {
    let threads = if items.len() < 256 { 1 } else { threads };
    let mut scratches: Vec<Scratch> = (0..threads.max(1)).map(|_| Scratch::default()).collect();
    claim_all(items, &mut scratches, CHUNK, check, failed, out);
}

/// Checks every item on one thread per state in `states` (each thread with its own),
/// results in input order, into `out`; `failed` stands for each item of a thread that
/// died. Threads claim `chunk` items at a time until none are left.
pub(crate) fn claim_all<T: Sync, S: Send, R: Send>(
    items: &[T],
    states: &mut [S],
    chunk: usize,
    check: impl Fn(&mut S, &T) -> R + Sync,
    failed: impl Fn() -> R,
    out: &mut Vec<R>,
) {
    out.clear();
    let Some((first, others)) = states.split_first_mut() else {
        out.extend(items.iter().map(|_| failed()));
        return;
    };
    if others.is_empty() {
        out.extend(items.iter().map(|item| check(first, item)));
        return;
    }
    let chunks: Vec<&[T]> = items.chunks(chunk.max(1)).collect();
    let claimed = std::sync::atomic::AtomicUsize::new(0);
    // Each thread's chunks, checked: (the chunk's index, its results).
    let work = |state: &mut S| {
        let mut done = Vec::new();
        loop {
            let index = claimed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(chunk) = chunks.get(index) else {
                return done;
            };
            let results: Vec<R> = chunk.iter().map(|item| check(state, item)).collect();
            done.push((index, results));
        }
    };
    let work = &work;
    let mut results: Vec<Option<Vec<R>>> = Vec::new();
    results.resize_with(chunks.len(), || None);
    std::thread::scope(|scope| {
        let others: Vec<_> = others
            .iter_mut()
            .map(|state| scope.spawn(move || work(state)))
            .collect();
        let mut place = |done: Vec<(usize, Vec<R>)>| {
            for (index, checked) in done {
                if let Some(slot) = results.get_mut(index) {
                    *slot = Some(checked);
                }
            }
        };
        place(work(first));
        for handle in others {
            // A thread that died leaves its chunks unchecked: they fail below.
            if let Ok(done) = handle.join() {
                place(done);
            }
        }
    });
    for (chunk, checked) in chunks.iter().zip(results) {
        match checked {
            Some(checked) => out.extend(checked),
            None => out.extend(chunk.iter().map(|_| failed())),
        }
    }
}

/// How many threads to check records on.
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |count| count.get().min(8))
}
