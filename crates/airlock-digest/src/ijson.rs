//! I-JSON (RFC 7493), the input domain of RFC 8785: JSON text every value of which the
//! canonical writer ([`crate::canonical`]) keeps exactly, checked on the text itself.
//!
//! serde_json reads more than that, and silently changes it: of duplicate object keys it
//! keeps the last one, an integer beyond `u64`/`i64` becomes the nearest double, a literal
//! with more digits than a double holds is rounded. A value changed on the way in is then
//! previewed, hashed into a binding digest and audited as something the sender did not send
//! (DESIGN.md G2, §6.3). So the API refuses such text, with the path of the first value
//! that breaks a rule:
//! - **duplicate keys**: two members of one object whose keys decode to the same string
//!   (`"to"` and `"t\u006f"` too), at any depth;
//! - **integers** (no fraction, no exponent) beyond ±(2^53 − 1), JavaScript's
//!   `Number.MAX_SAFE_INTEGER`: a double does not tell 2^53 + 1 from 2^53, and RFC 8785
//!   writes numbers as doubles while [`crate::canonical`] writes such integers exactly;
//!   below the bound the two agree byte for byte;
//! - **other numbers** whose decimal value is not the one the nearest double writes in its
//!   shortest form (`100000000000000000000000000000.5` is the double `1e+29`; `0.1`,
//!   `1e2`, `2.50` and `1.5e-7` are kept);
//! - **negative zero**, which RFC 8785 writes as `0`.
//!
//! The check reads text that serde_json has already accepted; anything it does not
//! understand is [`Refusal::Malformed`], never a panic.

use std::collections::HashSet;
use std::fmt;
use std::ops::Range;

/// The largest integer a double holds exactly together with its neighbours: 2^53 − 1.
pub const MAX_EXACT_INTEGER: u64 = (1 << 53) - 1;

/// Nesting deeper than this is refused as malformed (serde_json itself stops at 128).
const MAX_DEPTH: u32 = 256;

/// Why a JSON text is not I-JSON: the first value found that breaks a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not JSON this check can read (text serde_json accepted never is).
    Malformed { at: usize },
    /// The object at `path` has `key` twice.
    DuplicateKey { path: String, key: String },
    /// The number at `path` cannot be kept exactly; `message` says why.
    Inexact { path: String, message: String },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = |path: &str| {
            if path.is_empty() {
                String::new()
            } else {
                format!("{path}: ")
            }
        };
        match self {
            Refusal::Malformed { at: offset } => write!(f, "not valid JSON at byte {offset}"),
            Refusal::DuplicateKey { path, key } => write!(
                f,
                "{}duplicate key `{key}`: a key may appear once in an object",
                at(path)
            ),
            Refusal::Inexact { path, message } => write!(f, "{}{message}", at(path)),
        }
    }
}

impl std::error::Error for Refusal {}

/// Checks that the JSON text `text` is I-JSON as this module defines it.
pub fn check(text: &[u8]) -> Result<(), Refusal> {
    let mut scanner = Scanner {
        text,
        position: 0,
        path: Vec::new(),
    };
    scanner.value(0)?;
    scanner.skip_space();
    if scanner.position == text.len() {
        Ok(())
    } else {
        Err(scanner.malformed())
    }
}

/// One step of the path to the value being read.
enum Segment {
    /// The member with this key: the range of its quoted text.
    Key(Range<usize>),
    Index(usize),
}

struct Scanner<'a> {
    text: &'a [u8],
    position: usize,
    path: Vec<Segment>,
}

impl Scanner<'_> {
    fn value(&mut self, depth: u32) -> Result<(), Refusal> {
        self.skip_space();
        match self.text.get(self.position) {
            Some(b'{') if depth < MAX_DEPTH => self.object(depth + 1),
            Some(b'[') if depth < MAX_DEPTH => self.array(depth + 1),
            Some(b'"') => self.string().map(|_| ()),
            Some(b't') => self.word(b"true"),
            Some(b'f') => self.word(b"false"),
            Some(b'n') => self.word(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.malformed()),
        }
    }

    fn object(&mut self, depth: u32) -> Result<(), Refusal> {
        self.position += 1;
        if self.next_is(b'}') {
            return Ok(());
        }
        let mut keys = HashSet::new();
        loop {
            self.skip_space();
            let quoted = self.string()?;
            let key = self.decode(quoted.clone())?;
            if !keys.insert(key) {
                return Err(Refusal::DuplicateKey {
                    path: self.path_text(),
                    key: self.decode(quoted)?.escape_debug().take(200).collect(),
                });
            }
            if !self.next_is(b':') {
                return Err(self.malformed());
            }
            self.path.push(Segment::Key(quoted));
            self.value(depth)?;
            self.path.pop();
            if self.next_is(b',') {
                continue;
            }
            if self.next_is(b'}') {
                return Ok(());
            }
            return Err(self.malformed());
        }
    }

    fn array(&mut self, depth: u32) -> Result<(), Refusal> {
        self.position += 1;
        if self.next_is(b']') {
            return Ok(());
        }
        let mut index = 0;
        loop {
            self.path.push(Segment::Index(index));
            self.value(depth)?;
            self.path.pop();
            index += 1;
            if self.next_is(b',') {
                continue;
            }
            if self.next_is(b']') {
                return Ok(());
            }
            return Err(self.malformed());
        }
    }

    /// Skips the string at the position (its opening quote); returns its quoted range.
    fn string(&mut self) -> Result<Range<usize>, Refusal> {
        let start = self.position;
        if self.text.get(start) != Some(&b'"') {
            return Err(self.malformed());
        }
        let mut position = start + 1;
        loop {
            match self.text.get(position) {
                None => return Err(self.malformed()),
                Some(b'"') => break,
                // An escape is two bytes or more; none of the others is a quote.
                Some(b'\\') => position += 2,
                Some(_) => position += 1,
            }
        }
        self.position = position + 1;
        Ok(start..self.position)
    }

    /// The text of the quoted string at `quoted`, escapes decoded.
    fn decode(&self, quoted: Range<usize>) -> Result<String, Refusal> {
        let at = quoted.start;
        let raw = &self.text[quoted];
        let inner = &raw[1..raw.len() - 1];
        let decoded = if inner.contains(&b'\\') {
            serde_json::from_slice::<String>(raw).ok()
        } else {
            std::str::from_utf8(inner).ok().map(str::to_owned)
        };
        decoded.ok_or(Refusal::Malformed { at })
    }

    fn word(&mut self, word: &[u8]) -> Result<(), Refusal> {
        if self.text.get(self.position..self.position + word.len()) == Some(word) {
            self.position += word.len();
            Ok(())
        } else {
            Err(self.malformed())
        }
    }

    fn number(&mut self) -> Result<(), Refusal> {
        let start = self.position;
        let mut end = start + usize::from(self.text.get(start) == Some(&b'-'));
        let digits = |end: &mut usize| {
            let from = *end;
            while matches!(self.text.get(*end), Some(b'0'..=b'9')) {
                *end += 1;
            }
            *end > from
        };
        let mut well_formed = digits(&mut end);
        if self.text.get(end) == Some(&b'.') {
            end += 1;
            well_formed &= digits(&mut end);
        }
        if matches!(self.text.get(end), Some(b'e' | b'E')) {
            end += 1;
            if matches!(self.text.get(end), Some(b'+' | b'-')) {
                end += 1;
            }
            well_formed &= digits(&mut end);
        }
        if !well_formed {
            return Err(self.malformed());
        }
        self.position = end;
        // Only ASCII digits, signs, `.` and `e` were taken: always UTF-8.
        let literal = std::str::from_utf8(&self.text[start..end]).map_err(|_| self.malformed())?;
        number_is_exact(literal).map_err(|message| Refusal::Inexact {
            path: self.path_text(),
            message,
        })
    }

    fn skip_space(&mut self) {
        while matches!(
            self.text.get(self.position),
            Some(b' ' | b'\t' | b'\n' | b'\r')
        ) {
            self.position += 1;
        }
    }

    fn next_is(&mut self, byte: u8) -> bool {
        self.skip_space();
        if self.text.get(self.position) == Some(&byte) {
            self.position += 1;
            true
        } else {
            false
        }
    }

    fn malformed(&self) -> Refusal {
        Refusal::Malformed { at: self.position }
    }

    /// The path as serde_path_to_error writes it: `arguments.items[0].to`.
    fn path_text(&self) -> String {
        let mut out = String::new();
        for segment in &self.path {
            match segment {
                Segment::Key(quoted) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    let key = self.decode(quoted.clone()).unwrap_or_default();
                    out.extend(key.escape_debug().take(200));
                }
                Segment::Index(index) => out.push_str(&format!("[{index}]")),
            }
        }
        out
    }
}

/// Whether the JSON number `literal` is kept exactly; else why not, for the sender.
fn number_is_exact(literal: &str) -> Result<(), String> {
    let shown: String = if literal.len() > 40 {
        format!("{}…", &literal[..40])
    } else {
        literal.to_owned()
    };
    let negative = literal.starts_with('-');
    let integer = !literal.contains(['.', 'e', 'E']);
    if integer {
        let digits = literal.trim_start_matches('-');
        if digits == "0" {
            return if negative {
                Err(negative_zero(&shown))
            } else {
                Ok(())
            };
        }
        let fits =
            digits.len() <= 16 && digits.parse::<u64>().is_ok_and(|n| n <= MAX_EXACT_INTEGER);
        return if fits {
            Ok(())
        } else {
            Err(format!(
                "the integer {shown} cannot be kept exactly: integers must be within \
                 ±{MAX_EXACT_INTEGER} (2^53 − 1); send a larger one as a string"
            ))
        };
    }
    let double: f64 = literal
        .parse()
        .map_err(|_| format!("{shown} is not a number"))?;
    if !double.is_finite() {
        return Err(format!("the number {shown} is out of range for a double"));
    }
    if double == 0.0 && negative {
        return Err(negative_zero(&shown));
    }
    if decimal(literal) == decimal(&format!("{double:e}")) {
        Ok(())
    } else {
        Err(format!(
            "the number {shown} cannot be kept exactly: it has more precision than a double \
             holds and would become {}; send it as a string",
            ryu_js::Buffer::new().format(double)
        ))
    }
}

fn negative_zero(shown: &str) -> String {
    format!("negative zero ({shown}) is not kept apart from 0 (RFC 8785 writes it as 0); send 0")
}

/// The decimal value of a JSON number (or of Rust's `{:e}` of a double) as
/// `(negative, significant digits, exponent)`: `0.DIGITS × 10^exponent`, with no leading
/// or trailing zero digit; zero is `(false, "", 0)` whatever its sign.
fn decimal(text: &str) -> (bool, String, i64) {
    let negative = text.starts_with('-');
    let unsigned = text.trim_start_matches('-');
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, saturating_integer(exponent)),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all: String = whole.chars().chain(fraction.chars()).collect();
    let leading = all.len() - all.trim_start_matches('0').len();
    let significant = all.trim_start_matches('0').trim_end_matches('0');
    if significant.is_empty() {
        return (false, String::new(), 0);
    }
    let point =
        i64::try_from(whole.len()).unwrap_or(i64::MAX) - i64::try_from(leading).unwrap_or(i64::MAX);
    (
        negative,
        significant.to_owned(),
        point.saturating_add(exponent),
    )
}

/// An exponent's value (`+7`, `-12`, `0003`), saturating far beyond any double's.
fn saturating_integer(text: &str) -> i64 {
    let negative = text.starts_with('-');
    let magnitude = text
        .trim_start_matches(['+', '-'])
        .bytes()
        .fold(0i64, |value, digit| {
            value
                .saturating_mul(10)
                .saturating_add(i64::from(digit.wrapping_sub(b'0')))
        });
    if negative {
        -magnitude
    } else {
        magnitude
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use crate::canonical::to_canonical_string;
    use serde_json::Value;

    fn refusal(text: &str) -> String {
        match check(text.as_bytes()) {
            Ok(()) => panic!("accepted: {text}"),
            Err(refusal) => refusal.to_string(),
        }
    }

    #[test]
    fn duplicate_keys_are_found_at_any_depth_and_after_decoding() {
        for (text, path, key) in [
            (r#"{"a":1,"a":2}"#, "", "a"),
            (
                r#"{"arguments":{"to":"x","body":"b","to":"y"}}"#,
                "arguments",
                "to",
            ),
            (r#"{"a":{"b":[{},{"c":1,"c":1}]}}"#, "a.b[1]", "c"),
            (r#"{"a":{"to":1,"t\u006f":2}}"#, "a", "to"),
            (r#"{"a":{"é":1,"\u00e9":2}}"#, "a", "é"),
        ] {
            let expected = if path.is_empty() {
                format!("duplicate key `{key}`")
            } else {
                format!("{path}: duplicate key `{key}`")
            };
            assert!(
                refusal(text).starts_with(&expected),
                "{text}: {}",
                refusal(text)
            );
        }
        for text in [
            r#"{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}"#,
            r#"{"to":1,"To":2,"t o":3}"#,
            r#"[{"a":1},{"a":1}]"#,
        ] {
            assert_eq!(check(text.as_bytes()), Ok(()), "{text}");
        }
    }

    #[test]
    fn numbers_a_double_cannot_keep_are_refused() {
        for literal in [
            "12345678901234567890123",
            "18446744073709551616",
            "-9223372036854775809",
            "9007199254740992",
            "-9007199254740993",
            "100000000000000000000000000000.5",
            "0.1000000000000000055511151231257827",
            "1.2345678901234567890123e22",
            "4e-324",
            "1e-400",
            "-0",
            "-0.0",
            "-0e10",
        ] {
            let text = format!(r#"{{"arguments":{{"n":[{literal}]}}}}"#);
            let message = refusal(&text);
            assert!(message.starts_with("arguments.n[0]: "), "{message}");
        }
        assert!(refusal("[12345678901234567890123]").contains("±9007199254740991"));
        assert!(refusal("[1e1000]").contains("out of range"));
        assert!(refusal("[100000000000000000000000000000.5]").contains("would become 1e+29"));
    }

    #[test]
    fn numbers_a_double_keeps_are_accepted() {
        for literal in [
            "0",
            "7",
            "-7",
            "9007199254740991",
            "-9007199254740991",
            "0.1",
            "2.50",
            "1e2",
            "1E+2",
            "100.000",
            "1.5e-7",
            "1e22",
            "0.0",
            "0e-5",
            "5e-324",
            "1.7976931348623157e308",
            "0.30000000000000004",
            "123456789.125",
        ] {
            assert_eq!(
                check(format!("[{literal}]").as_bytes()),
                Ok(()),
                "{literal}"
            );
        }
    }

    /// Below the bound, the canonical writer's exact integers are what RFC 8785's doubles
    /// give, so no digest changes: integers are printed as their digits either way.
    #[test]
    fn accepted_integers_canonicalize_as_rfc_8785_doubles_do() {
        for literal in [
            "0",
            "1",
            "-1",
            "4294967296",
            "9007199254740991",
            "-9007199254740991",
        ] {
            let value: Value = serde_json::from_str(literal).unwrap();
            let double: f64 = literal.parse().unwrap();
            assert_eq!(
                to_canonical_string(&value),
                ryu_js::Buffer::new().format(double),
                "{literal}"
            );
            assert_eq!(to_canonical_string(&value), literal);
        }
    }

    #[test]
    fn what_it_cannot_read_is_malformed_not_a_panic() {
        for text in [
            "",
            "{",
            "[1,]",
            r#"{"a" 1}"#,
            "-",
            "1.",
            "1e",
            r#""open"#,
            "[] x",
            "\"\\",
        ] {
            assert!(
                matches!(check(text.as_bytes()), Err(Refusal::Malformed { .. })),
                "{text}"
            );
        }
        let deep = "[".repeat(300) + &"]".repeat(300);
        assert!(matches!(
            check(deep.as_bytes()),
            Err(Refusal::Malformed { .. })
        ));
    }

    #[test]
    fn decimal_values_compare_by_value() {
        assert_eq!(decimal("100"), decimal("1e2"));
        assert_eq!(decimal("1e2"), decimal(&format!("{:e}", 100.0)));
        assert_eq!(decimal("0.00150"), decimal("1.5e-3"));
        assert_eq!(decimal("-0.0"), decimal("0"));
        assert_ne!(decimal("-1"), decimal("1"));
        assert_eq!(decimal("1e99999999999999999999999").2, i64::MAX);
    }
}
