//! Canonical JSON (RFC 8785, as [`crate::canonical`] writes it) straight from JSON
//! text, without building a `serde_json::Value` tree: the verifier's fast path.
//!
//! Verifying a chain of a million records through `Value` trees spends most of its time
//! allocating and freeing them. The text the stores and exports hold is what serde_json
//! wrote: no whitespace, strings escaped exactly as JCS escapes them, integers. Only the
//! member order differs (serde_json keeps insertion order here), so the canonical form is
//! the same bytes with each object's members sorted, which this module writes with two
//! reusable buffers.
//!
//! INVARIANT: the fast path accepts a text only when its output is, byte for byte, what
//! `to_canonical_bytes(serde_json::from_str::<Value>(text))` gives. Anything it is not
//! sure of (a float, a non-canonical escape, a duplicate or escaped key, deep nesting,
//! invalid JSON) makes it answer `false`, and the caller takes the slow, general path, so
//! what verifies (and what does not) is unchanged. Escaping, key order and the integer
//! rule are [`crate::canonical`]'s, so the two paths cannot drift apart.

use crate::canonical::{is_canonical_integer, key_order};
use std::cmp::Ordering;
use std::ops::Range;

/// Deeper than this goes to the slow path (serde_json itself stops at 128).
const MAX_DEPTH: u32 = 64;

/// One object member: its key (without quotes) in the input, and its `"key":value`
/// canonical bytes in the output.
struct Member {
    key: Range<usize>,
    written: Range<usize>,
}

/// Reusable buffers; one per thread.
#[derive(Default)]
pub struct Canonicalizer {
    members: Vec<Member>,
    scratch: Vec<u8>,
}

impl Canonicalizer {
    /// Appends the canonical form of the JSON value `text` (the whole text) to `out`.
    /// `false`: not on the fast path; `out` then holds garbage after its old length.
    pub fn write(&mut self, text: &[u8], out: &mut Vec<u8>) -> bool {
        let mut position = 0;
        self.write_at(text, &mut position, out) && skip_space(text, position) == text.len()
    }

    /// Like [`Self::write`] for the value at `position` in a larger text; `position` ends
    /// just after it.
    pub fn write_at(&mut self, text: &[u8], position: &mut usize, out: &mut Vec<u8>) -> bool {
        self.members.clear();
        self.value(text, position, out, 0)
    }

    fn value(&mut self, text: &[u8], position: &mut usize, out: &mut Vec<u8>, depth: u32) -> bool {
        *position = skip_space(text, *position);
        match text.get(*position) {
            Some(b'{') if depth < MAX_DEPTH => self.object(text, position, out, depth + 1),
            Some(b'[') if depth < MAX_DEPTH => self.array(text, position, out, depth + 1),
            Some(b'"') => match string_end(text, *position) {
                Some(end) => {
                    out.extend_from_slice(&text[*position..end]);
                    *position = end;
                    true
                }
                None => false,
            },
            Some(b't') => literal(text, position, b"true", out),
            Some(b'f') => literal(text, position, b"false", out),
            Some(b'n') => literal(text, position, b"null", out),
            Some(b'-' | b'0'..=b'9') => integer(text, position, out),
            _ => false,
        }
    }

    fn array(&mut self, text: &[u8], position: &mut usize, out: &mut Vec<u8>, depth: u32) -> bool {
        *position += 1;
        out.push(b'[');
        if next_is(text, position, b']') {
            out.push(b']');
            return true;
        }
        loop {
            if !self.value(text, position, out, depth) {
                return false;
            }
            if next_is(text, position, b',') {
                out.push(b',');
            } else if next_is(text, position, b']') {
                out.push(b']');
                return true;
            } else {
                return false;
            }
        }
    }

    fn object(&mut self, text: &[u8], position: &mut usize, out: &mut Vec<u8>, depth: u32) -> bool {
        *position += 1;
        let start = out.len();
        out.push(b'{');
        if next_is(text, position, b'}') {
            out.push(b'}');
            return true;
        }
        let base = self.members.len();
        loop {
            *position = skip_space(text, *position);
            if text.get(*position) != Some(&b'"') {
                return false;
            }
            let Some(key_end) = string_end(text, *position) else {
                return false;
            };
            let key = *position + 1..key_end - 1;
            // An escaped key sorts by its decoded text; left to the slow path (rare).
            if text[key.clone()].contains(&b'\\') {
                return false;
            }
            *position = key_end;
            if !next_is(text, position, b':') {
                return false;
            }
            let written = out.len();
            out.extend_from_slice(&text[key.start - 1..key_end]);
            out.push(b':');
            if !self.value(text, position, out, depth) {
                return false;
            }
            self.members.push(Member {
                key,
                written: written..out.len(),
            });
            if next_is(text, position, b',') {
                out.push(b',');
            } else if next_is(text, position, b'}') {
                out.push(b'}');
                break;
            } else {
                return false;
            }
        }
        let ok = self.sort_members(text, base, start, out);
        self.members.truncate(base);
        ok
    }

    /// Rewrites the object written from `start` with its members (from `base` on) in
    /// UTF-16 key order; `false` on a duplicate key.
    fn sort_members(&mut self, text: &[u8], base: usize, start: usize, out: &mut Vec<u8>) -> bool {
        let members = &mut self.members[base..];
        let in_order = members.windows(2).all(|pair| {
            key_order(&text[pair[0].key.clone()], &text[pair[1].key.clone()]) == Ordering::Less
        });
        if in_order {
            return true;
        }
        members.sort_by(|left, right| key_order(&text[left.key.clone()], &text[right.key.clone()]));
        if members.windows(2).any(|pair| {
            key_order(&text[pair[0].key.clone()], &text[pair[1].key.clone()]) == Ordering::Equal
        }) {
            return false;
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(&out[start..]);
        out.truncate(start);
        out.push(b'{');
        for (index, member) in members.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            out.extend_from_slice(
                &self.scratch[member.written.start - start..member.written.end - start],
            );
        }
        out.push(b'}');
        true
    }
}

/// Where the JSON value starting at `start` ends, found by skipping it without checking
/// that it is valid or canonical: strings through [`string_end`] (so `None` on an escape
/// JCS would not write), containers by counting brackets, a bare scalar up to the next
/// delimiter. `None` also for nesting deeper than [`Canonicalizer`] takes, or no end.
///
/// The verifier uses it to hash a value's text as it lies: when those bytes hash to the
/// stored hash they are the canonical text that was hashed at append time, which is valid
/// JSON, so the value really ends here. When they do not, the caller canonicalizes the
/// same span, which does check everything (and declines what this skipped wrongly).
pub fn value_end(text: &[u8], start: usize) -> Option<usize> {
    let mut position = start;
    if !matches!(text.get(position), Some(b'{' | b'[' | b'"')) {
        while !matches!(
            text.get(position),
            None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
        ) {
            position += 1;
        }
        return (position > start).then_some(position);
    }
    let mut depth = 0u32;
    loop {
        match *text.get(position)? {
            b'"' => position = string_end(text, position)?,
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return None;
                }
                position += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                position += 1;
            }
            _ => position += 1,
        }
        if depth == 0 {
            return Some(position);
        }
    }
}

fn skip_space(text: &[u8], mut position: usize) -> usize {
    while matches!(text.get(position), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        position += 1;
    }
    position
}

/// Skips space, then takes `byte` if it is next.
fn next_is(text: &[u8], position: &mut usize, byte: u8) -> bool {
    *position = skip_space(text, *position);
    if text.get(*position) == Some(&byte) {
        *position += 1;
        true
    } else {
        false
    }
}

fn literal(text: &[u8], position: &mut usize, word: &[u8], out: &mut Vec<u8>) -> bool {
    if text.get(*position..*position + word.len()) == Some(word) {
        out.extend_from_slice(word);
        *position += word.len();
        true
    } else {
        false
    }
}

/// An integer whose canonical form is its own digits ([`is_canonical_integer`]); other
/// numbers are left to the slow path.
fn integer(text: &[u8], position: &mut usize, out: &mut Vec<u8>) -> bool {
    let start = *position;
    let mut end = start + usize::from(text.get(start) == Some(&b'-'));
    while matches!(text.get(end), Some(b'0'..=b'9')) {
        end += 1;
    }
    if !is_canonical_integer(&text[start..end]) || matches!(text.get(end), Some(b'.' | b'e' | b'E'))
    {
        return false;
    }
    out.extend_from_slice(&text[start..end]);
    *position = end;
    true
}

/// The end (one past the closing quote) of the string starting at `start` (its opening
/// quote), if it is escaped exactly as JCS escapes: only `\"`, `\\`, `\b`, `\t`, `\n`,
/// `\f`, `\r`, and `\u00xx` (lower-case) for the other controls below U+0020; no raw
/// control characters. Such a string's canonical form is its own text.
pub fn string_end(text: &[u8], start: usize) -> Option<usize> {
    let mut position = start + 1;
    loop {
        // Most of a string is plain: skip it eight bytes at a time, then straight to the
        // first byte that is not.
        while let Some(chunk) = text.get(position..position + 8) {
            // (A chunk is always 8 bytes; a failed conversion reads as "look closer".)
            let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
            let special = ends_or_escapes(word);
            if special != 0 {
                position += special.trailing_zeros() as usize / 8;
                break;
            }
            position += 8;
        }
        match *text.get(position)? {
            b'"' => return Some(position + 1),
            b'\\' => match *text.get(position + 1)? {
                b'"' | b'\\' | b'b' | b't' | b'n' | b'f' | b'r' => position += 2,
                b'u' => {
                    let code = text.get(position + 2..position + 6)?;
                    let named = [b"0008", b"0009", b"000a", b"000c", b"000d"];
                    let control = matches!(code, [b'0', b'0', b'0' | b'1', low]
                            if low.is_ascii_digit() || (b'a'..=b'f').contains(low));
                    if !control || named.iter().any(|name| code == *name) {
                        return None;
                    }
                    position += 6;
                }
                _ => return None,
            },
            byte if byte < 0x20 => return None,
            _ => position += 1,
        }
    }
}

/// Marks (the high bit of) the bytes of `word`, read little-endian, that are `"`, `\\` or
/// below 0x20, with the classic "has a byte less than n" bit trick. A borrow can mark a
/// byte above a marked one too, so only the lowest mark is exact: it is the first such
/// byte, and it is there if and only if one is.
fn ends_or_escapes(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let below = |word: u64, limit: u8| word.wrapping_sub(ONES * u64::from(limit)) & !word & HIGHS;
    below(word ^ (ONES * u64::from(b'"')), 1)
        | below(word ^ (ONES * u64::from(b'\\')), 1)
        | below(word, 0x20)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::canonical::{to_canonical_bytes, write_string};
    use serde_json::Value;

    /// What the fast path writes, or `None` when it declines.
    fn fast(text: &str) -> Option<String> {
        let mut out = b"prefix".to_vec();
        Canonicalizer::default()
            .write(text.as_bytes(), &mut out)
            .then(|| String::from_utf8(out[6..].to_vec()).unwrap())
    }

    fn slow(text: &str) -> String {
        String::from_utf8(to_canonical_bytes(
            &serde_json::from_str::<Value>(text).unwrap(),
        ))
        .unwrap()
    }

    #[test]
    fn agrees_with_the_value_path_where_it_answers() {
        let table = [
            r#"{"b":1,"a":{"z":[1,{"y":null,"x":true}],"c":"d"},"é":false}"#,
            r#"{"call_id":"call_1","arguments":{"path":"/srv/1.txt"},"session_id":null}"#,
            r#" { "b" : [ ] , "a" : { } } "#,
            r#"{"s":"q\"b\\ \b\t\n\f\r \u0000\u001f é😀 /"}"#,
            r#"{"n":[0,-1,123456789012345678,-123456789012345678]}"#,
            "{\"\u{e000}\":1,\"\u{1f600}\":2,\"a\":3}",
            r#"[]"#,
            r#""just a string""#,
            r#"-7"#,
        ];
        for text in table {
            assert_eq!(fast(text).as_deref(), Some(slow(text).as_str()), "{text}");
        }
    }

    #[test]
    fn a_value_skipped_ends_where_the_canonical_writer_ends_it() {
        let texts = [
            r#"{"b":1,"a":{"z":[1,{"y":null,"x":true}],"c":"d"},"é":false}"#,
            r#" { "b" : [ ] , "a" : { } } "#,
            r#"{"s":"q\"b\\ \b\t\n\f\r \u0000\u001f é😀 /]}"}"#,
            r#"[[],[{}],"]",-12]"#,
            r#""just a string""#,
            r#"-7"#,
            "true",
            "null",
        ];
        for text in texts {
            for suffix in ["", ",\"k\":1}", "]"] {
                let whole = format!("{text}{suffix}");
                let bytes = whole.as_bytes();
                let start = skip_space(bytes, 0);
                let mut end = 0;
                assert!(Canonicalizer::default().write_at(bytes, &mut end, &mut Vec::new()));
                assert_eq!(value_end(bytes, start), Some(end), "{whole}");
            }
        }
        for text in [
            r#"{"a":"\u0041"}"#,
            "[[[",
            r#"{"a":"open"#,
            "",
            "]",
            r#"{"a":1}}"#,
        ] {
            let end = value_end(text.as_bytes(), 0);
            assert!(end.is_none() || end == Some(7), "{text}: {end:?}");
        }
        let deep = "[".repeat(MAX_DEPTH as usize) + &"]".repeat(MAX_DEPTH as usize);
        assert_eq!(value_end(deep.as_bytes(), 0), Some(deep.len()));
        let deeper = format!("[{deep}]");
        assert_eq!(value_end(deeper.as_bytes(), 0), None);
    }

    #[test]
    fn declines_what_it_cannot_copy() {
        let table = [
            r#"{"a":1.5}"#,
            r#"{"a":1e3}"#,
            r#"{"a":-0}"#,
            r#"{"a":1234567890123456789}"#,
            r#"{"a":"\u0041"}"#,
            r#"{"a":"\/"}"#,
            r#"{"a":"\u000A"}"#,
            r#"{"a":"\u000a"}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"b":1,"a":2,"b":3}"#,
            r#"{"\n":1}"#,
            r#"{"\u00e9":1}"#,
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            r#"[1 2]"#,
            r#"{"a":tru}"#,
            r#"{"a":1} x"#,
            r#"{"a":01}"#,
            "{\"a\":\"raw\ttab\"}",
            r#"{"a":"unterminated}"#,
            "",
        ];
        for text in table {
            assert_eq!(fast(text), None, "{text}");
        }
        let deep = "[".repeat(100) + &"]".repeat(100);
        assert_eq!(fast(&deep), None);
    }

    #[test]
    fn the_word_scan_finds_the_first_byte_that_ends_or_escapes() {
        for special in [b'"', b'\\', 0, 0x1f] {
            for at in 0..8 {
                for after in [b'a', b'"', 0, 0xff] {
                    let mut bytes = *b"abcdefgh";
                    bytes[at] = special;
                    if let Some(rest) = bytes.get_mut(at + 1..) {
                        rest.fill(after);
                    }
                    let found = ends_or_escapes(u64::from_le_bytes(bytes)).trailing_zeros() / 8;
                    assert_eq!(found as usize, at, "{special} at {at}, then {after}");
                }
            }
        }
        for plain in [
            *b"abcdefgh",
            *b" !#$%&'(",
            [0x7f, 0x80, 0xff, 0xee, b'[', b']', b'~', b'/'],
        ] {
            assert_eq!(ends_or_escapes(u64::from_le_bytes(plain)), 0, "{plain:?}");
        }
    }

    #[test]
    fn keys_sort_by_utf16_code_units() {
        let keys = [
            "",
            "a",
            "ab",
            "b",
            "é",
            "\u{e000}",
            "\u{ffff}",
            "\u{10000}",
            "\u{1f600}",
            "a\u{e000}",
            "a\u{1f600}",
        ];
        for left in keys {
            for right in keys {
                let order = key_order(left.as_bytes(), right.as_bytes());
                assert_eq!(
                    order,
                    left.encode_utf16().cmp(right.encode_utf16()),
                    "{left:?} {right:?}"
                );
            }
        }
    }

    #[test]
    fn strings_are_escaped_as_jcs_escapes_them() {
        for text in [
            "plain",
            "q\"b\\",
            "\u{8}\t\n\u{c}\r\u{0}\u{1f}",
            "é😀\u{7f}",
        ] {
            let mut out = Vec::new();
            write_string(&mut out, text);
            assert_eq!(out, to_canonical_bytes(&Value::from(text)), "{text:?}");
            assert_eq!(string_end(&out, 0), Some(out.len()), "{text:?}");
        }
    }
}
