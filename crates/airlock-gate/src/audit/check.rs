//! Recomputing one record's hash, from an export line or a stored row, and doing so for
//! many records on several threads.
//!
//! A record's hash depends only on its own content and its own `prev_hash`, so every
//! record can be checked on its own; what links records (`seq` contiguous, `prev_hash` =
//! the hash before) is left to [`super::ChainVerifier`], one cheap pass in order.
//!
//! The hashed text is `prev_hash + "\n" + canonical JSON of the record without hash`
//! (DESIGN.md §6.3). Its members in canonical order are `actor, at, data, kind,
//! prev_hash, seq, subject`; the fixed ones are written here and `data` by
//! [`Canonicalizer`], into one reused buffer. Whatever the fast path declines is checked
//! the general way (`serde_json` → `Value` → `audit_hash`), so the verdict is the same.

use super::canonical::{string_end, write_string, Canonicalizer};
use airlock_policy::digest::audit_hash;
use airlock_protocol::AuditRecord;
use airlock_store::AuditRow;
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::ops::Range;

/// A record after its own hash was recomputed: what the in-order pass needs.
#[derive(Debug)]
pub(crate) enum Checked<'a> {
    Record {
        seq: u64,
        prev_hash: Cow<'a, str>,
        hash: Cow<'a, str>,
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
                prev_hash: Cow::Owned(prev_hash.into_owned()),
                hash: Cow::Owned(hash.into_owned()),
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
            Text::Plain(plain) => {
                scratch.clear();
                write_string(scratch, plain);
                hasher.update(&scratch[..]);
            }
        }
    }
}

/// The members of a record the hash covers; `data` already canonical, in `Scratch::data`.
struct Members<'a> {
    seq: u64,
    at: Text<'a>,
    actor: Text<'a>,
    kind: Text<'a>,
    subject: Text<'a>,
    prev_hash: &'a str,
}

impl Scratch {
    /// Whether `hash` is the hash of the members with `self.data` as `data`. The
    /// canonical text is fed to SHA-256 piece by piece, in the order it would be written
    /// (no record buffer: `data`, most of the bytes, is hashed where it lies).
    fn hash_matches(&mut self, members: &Members<'_>, hash: &str) -> bool {
        let mut hasher = Sha256::new();
        let piece = &mut self.record;
        hasher.update(members.prev_hash.as_bytes());
        hasher.update(b"\n{\"actor\":");
        members.actor.hash(&mut hasher, piece);
        hasher.update(b",\"at\":");
        members.at.hash(&mut hasher, piece);
        hasher.update(b",\"data\":");
        hasher.update(&self.data);
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

    /// Checks a stored row.
    pub(crate) fn check_row<'a>(&mut self, row: AuditRow<'a>) -> Checked<'a> {
        self.data.clear();
        let hash_ok = if self
            .canonicalizer
            .write(row.data.as_bytes(), &mut self.data)
        {
            let members = Members {
                seq: row.seq,
                at: Text::Plain(row.at),
                actor: Text::Plain(row.actor),
                kind: Text::Plain(row.kind),
                subject: Text::Plain(row.subject),
                prev_hash: row.prev_hash,
            };
            self.hash_matches(&members, row.hash)
        } else {
            match serde_json::from_str(row.data) {
                Ok(data) => {
                    let record = AuditRecord {
                        seq: row.seq,
                        at: row.at.to_owned(),
                        actor: row.actor.to_owned(),
                        kind: row.kind.to_owned(),
                        subject: row.subject.to_owned(),
                        data,
                        prev_hash: row.prev_hash.to_owned(),
                        hash: String::new(),
                    };
                    recompute(&record) == row.hash
                }
                // Data that is not JSON cannot have been what was hashed.
                Err(_) => false,
            }
        };
        Checked::Record {
            seq: row.seq,
            prev_hash: Cow::Borrowed(row.prev_hash),
            hash: Cow::Borrowed(row.hash),
            hash_ok,
        }
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
                    prev_hash: Cow::Owned(record.prev_hash),
                    hash: Cow::Owned(record.hash),
                    hash_ok,
                }
            }
            Err(error) => Checked::Unreadable(error.to_string()),
        }
    }

    /// `None` when the line is off the fast path (see `canonical`'s invariant; here also
    /// an unknown, missing or repeated member, a `seq` that is not a plain integer, an
    /// escaped character in either hash).
    fn check_line_fast<'a>(&mut self, line: &'a str) -> Option<Checked<'a>> {
        let text = line.as_bytes();
        let mut position = 0;
        let mut seq = None;
        let mut strings: [Option<Range<usize>>; 6] = Default::default();
        let mut data = false;
        self.data.clear();
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
                b"data" if !data => {
                    data = true;
                    if !self
                        .canonicalizer
                        .write_at(text, &mut position, &mut self.data)
                    {
                        return None;
                    }
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
        if skip_space(text, position + 1) != text.len() || !data {
            return None;
        }
        let [Some(at), Some(actor), Some(kind), Some(subject), Some(prev_hash), Some(hash)] =
            strings
        else {
            return None;
        };
        let prev_hash = unquoted(line, prev_hash)?;
        let hash = unquoted(line, hash)?;
        let seq = seq?;
        let members = Members {
            seq,
            at: Text::Json(text.get(at)?),
            actor: Text::Json(text.get(actor)?),
            kind: Text::Json(text.get(kind)?),
            subject: Text::Json(text.get(subject)?),
            prev_hash,
        };
        let hash_ok = self.hash_matches(&members, hash);
        Some(Checked::Record {
            seq,
            prev_hash: Cow::Borrowed(prev_hash),
            hash: Cow::Borrowed(hash),
            hash_ok,
        })
    }
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

/// Checks every item on up to `threads` threads, results in input order, into `out`.
pub(crate) fn check_all<'a, T: Sync>(
    items: &[T],
    threads: usize,
    check: impl Fn(&mut Scratch, &T) -> Checked<'a> + Sync,
    out: &mut Vec<Checked<'a>>,
) {
    out.clear();
    let per_thread = items.len().div_ceil(threads.max(1)).max(1);
    if threads <= 1 || items.len() < 256 {
        let mut scratch = Scratch::default();
        out.extend(items.iter().map(|item| check(&mut scratch, item)));
        return;
    }
    let check = &check;
    std::thread::scope(|scope| {
        let mut chunks = items.chunks(per_thread);
        let first = chunks.next().unwrap_or_default();
        let others: Vec<_> = chunks
            .map(|chunk| {
                let handle = scope.spawn(move || {
                    let mut scratch = Scratch::default();
                    chunk
                        .iter()
                        .map(|item| check(&mut scratch, item))
                        .collect::<Vec<_>>()
                });
                (handle, chunk.len())
            })
            .collect();
        let mut scratch = Scratch::default();
        out.extend(first.iter().map(|item| check(&mut scratch, item)));
        for (handle, len) in others {
            match handle.join() {
                Ok(checked) => out.extend(checked),
                // A thread that died checked nothing: its records fail rather than pass.
                Err(_) => out.extend(
                    (0..len)
                        .map(|_| Checked::Unreadable("a verification thread failed".to_owned())),
                ),
            }
        }
    });
}

/// How many threads to check records on.
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |count| count.get().min(8))
}
