//! RFC 8785 JSON Canonicalization Scheme (JCS): one byte sequence per JSON value.
//!
//! Digests (DESIGN.md §6.3) hash canonical JSON so that two parties who hold the same value
//! compute the same digest, whatever key order or whitespace their serializer produced. The
//! rules, from RFC 8785 §3.2:
//! - no whitespace between tokens;
//! - object members sorted by their keys' UTF-16 code units (not UTF-8 bytes, not chars:
//!   the two orders differ for keys above U+FFFF, which sort before U+E000..U+FFFF);
//! - strings escaped as ECMAScript's `JSON.stringify` does: only `"`, `\` and the controls
//!   below U+0020 (`\b \t \n \f \r` by name, the rest as lower-case `\u00xx`); everything
//!   else is literal UTF-8;
//! - numbers in ECMAScript `Number.prototype.toString` form (`1e+30`, `0.002`, `1e-7`).
//!
//! One deliberate extension: an integer that serde_json holds as `i64`/`u64` is printed
//! exactly. Strict JCS would first round it to an IEEE double, which changes integers
//! beyond ±2^53; below that the two are the same digits. Every id and counter airlock
//! digests is far below it, and the API refuses a body holding an integer beyond
//! ±(2^53 − 1) or any other number a double does not keep exactly ([`crate::ijson`]), so
//! what a client sends is canonicalized exactly as strict RFC 8785 would (audit C, M3).
//!
//! This is the one canonical writer of the workspace. [`crate::text`] writes the same bytes
//! straight from JSON text for the audit verifier's fast path, with this module's string
//! escaping ([`write_string`]), key order ([`key_order`]) and integer rule
//! ([`is_canonical_integer`]).

use crate::text::Canonicalizer;
use serde_json::{Map, Number, Value};
use std::cell::RefCell;
use std::cmp::Ordering;

/// The canonical form of `value` as a string.
pub fn to_canonical_string(value: &Value) -> String {
    // The writer appends only ASCII tokens and escapes and the bytes of whole `str`s, so
    // the bytes are always valid UTF-8 and the lossy conversion never replaces anything.
    String::from_utf8_lossy(&to_canonical_bytes(value)).into_owned()
}

/// The canonical form of `value` as UTF-8 bytes, what digests hash.
pub fn to_canonical_bytes(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => write_number(out, number),
        Value::String(text) => write_string(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (position, item) in items.iter().enumerate() {
                if position > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(members) => write_object(out, members),
    }
}

fn write_object(out: &mut Vec<u8>, members: &Map<String, Value>) {
    // serde_json's map iterates in UTF-8 byte order (or insertion order with
    // `preserve_order`); JCS wants UTF-16 code unit order, so sort explicitly.
    let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
    sorted.sort_by(|(left, _), (right, _)| key_order(left.as_bytes(), right.as_bytes()));
    out.push(b'{');
    for (position, (key, member)) in sorted.into_iter().enumerate() {
        if position > 0 {
            out.push(b',');
        }
        write_string(out, key);
        out.push(b':');
        write_value(out, member);
    }
    out.push(b'}');
}

fn write_number(out: &mut Vec<u8>, number: &Number) {
    if let Some(integer) = number.as_i64() {
        out.extend_from_slice(integer.to_string().as_bytes());
    } else if let Some(integer) = number.as_u64() {
        out.extend_from_slice(integer.to_string().as_bytes());
    } else if let Some(float) = number.as_f64() {
        // ryu-js implements ECMAScript's Number::toString, `-0` included (→ "0").
        // serde_json cannot hold NaN or infinities, so every f64 here is finite.
        out.extend_from_slice(ryu_js::Buffer::new().format(float).as_bytes());
    } else {
        // Only reachable with serde_json's `arbitrary_precision`, which this workspace does
        // not enable; the number's own text is the closest faithful rendering.
        out.extend_from_slice(number.to_string().as_bytes());
    }
}

/// Whether the JSON number text `number` is an integer that [`write_number`] prints as
/// the same digits: at most 18 digits (so serde_json holds it as `i64`/`u64`), no
/// leading zero, no `-0`, no fraction or exponent (those go through the float path).
pub fn is_canonical_integer(number: &[u8]) -> bool {
    let digits = number.strip_prefix(b"-").unwrap_or(number);
    match digits {
        [] => false,
        [b'0'] => digits.len() == number.len(),
        [b'0', ..] => false,
        _ => digits.len() <= 18 && digits.iter().all(u8::is_ascii_digit),
    }
}

/// Appends `text` as a canonical JSON string: only `"`, `\` and the controls below
/// U+0020 are escaped (`\b \t \n \f \r` by name, the rest as lower-case `\u00xx`);
/// everything else is literal UTF-8.
pub fn write_string(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    let bytes = text.as_bytes();
    if !bytes
        .iter()
        .any(|byte| *byte < 0x20 || *byte == b'"' || *byte == b'\\')
    {
        out.extend_from_slice(bytes);
    } else {
        for byte in bytes {
            match byte {
                b'"' => out.extend_from_slice(b"\\\""),
                b'\\' => out.extend_from_slice(b"\\\\"),
                0x08 => out.extend_from_slice(b"\\b"),
                b'\t' => out.extend_from_slice(b"\\t"),
                b'\n' => out.extend_from_slice(b"\\n"),
                0x0c => out.extend_from_slice(b"\\f"),
                b'\r' => out.extend_from_slice(b"\\r"),
                control if *control < 0x20 => {
                    const HEX: &[u8; 16] = b"0123456789abcdef";
                    out.extend_from_slice(b"\\u00");
                    out.push(HEX[usize::from(control >> 4)]);
                    out.push(HEX[usize::from(control & 0xf)]);
                }
                other => out.push(*other),
            }
        }
    }
    out.push(b'"');
}

/// JCS orders keys by UTF-16 code units; this compares two keys' UTF-8 bytes in that
/// order. UTF-8 byte order is code point order, which is the same except where a
/// character in U+E000..U+FFFF (lead byte 0xEE or 0xEF) meets one above U+FFFF (lead byte
/// 0xF0 and up): UTF-16 puts the latter first (its surrogates are 0xD800..0xDFFF). The
/// first differing bytes are both lead bytes (or ASCII): the keys agree before them, so
/// inside one character they would both be continuation bytes of the same lead, and then
/// the plain byte order holds.
pub fn key_order(left: &[u8], right: &[u8]) -> Ordering {
    let Some((l, r)) = left.iter().zip(right).find(|(l, r)| l != r) else {
        return left.len().cmp(&right.len());
    };
    let private = |lead: &u8| (0xEE..=0xEF).contains(lead);
    if private(l) && *r >= 0xF0 {
        Ordering::Greater
    } else if *l >= 0xF0 && private(r) {
        Ordering::Less
    } else {
        l.cmp(r)
    }
}

/// JSON text in canonical form: what the audit chain hashes and the store keeps as an
/// audit record's or event's `data`.
///
/// [`CanonicalJson::from_json`] makes it from JSON text without a `Value` tree (the gate
/// hands it serde_json's bytes of a typed event): [`Canonicalizer`] sorts its members in
/// one pass. Text that pass declines (a float, a duplicate key) goes the general way, through
/// a `Value` and this module's writer, so the bytes are always what
/// [`to_canonical_string`] gives for the same value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CanonicalJson(String);

impl CanonicalJson {
    /// The canonical form of the JSON text `text`; an error when it is not JSON.
    pub fn from_json(text: &[u8]) -> Result<CanonicalJson, serde_json::Error> {
        thread_local! {
            static CANONICALIZER: RefCell<Canonicalizer> = RefCell::new(Canonicalizer::default());
        }
        let mut out = Vec::with_capacity(text.len());
        let fast = CANONICALIZER.with(|canonicalizer| {
            canonicalizer
                .try_borrow_mut()
                .is_ok_and(|mut canonicalizer| canonicalizer.write(text, &mut out))
        });
        match fast.then(|| String::from_utf8(out)) {
            Some(Ok(canonical)) => Ok(CanonicalJson(canonical)),
            _ => Ok(CanonicalJson::from_value(&serde_json::from_slice(text)?)),
        }
    }

    /// The canonical form of `value`.
    pub fn from_value(value: &Value) -> CanonicalJson {
        CanonicalJson(to_canonical_string(value))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<Value> for CanonicalJson {
    fn from(value: Value) -> CanonicalJson {
        CanonicalJson::from_value(&value)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canonical_of_text(json_text: &str) -> String {
        to_canonical_string(&serde_json::from_str(json_text).unwrap())
    }

    /// A JSON number from its text. Fractions go through std's correctly rounded parser:
    /// serde_json without its `float_roundtrip` feature may land one ULP off
    /// (`333333333.33333329`), which is a parsing matter, not a canonicalization one.
    fn number(text: &str) -> Value {
        match serde_json::from_str::<Value>(text).unwrap() {
            integer if integer.is_i64() || integer.is_u64() => integer,
            _ => Value::from(text.parse::<f64>().unwrap()),
        }
    }

    /// RFC 8785 Appendix B: IEEE 754 bit patterns and their ECMAScript serialisation.
    #[test]
    fn rfc8785_number_table() {
        let table: &[(u64, &str)] = &[
            (0x0000000000000000, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0xffefffffffffffff, "-1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0xc340000000000000, "-9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x44b52d02c7e14af5, "9.999999999999997e+22"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
            (0x444b1ae4d6e2ef4e, "999999999999999700000"),
            (0x444b1ae4d6e2ef4f, "999999999999999900000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0x41b3de4355555554, "333333333.33333325"),
            (0x41b3de4355555555, "333333333.3333333"),
            (0x41b3de4355555556, "333333333.3333334"),
            (0x41b3de4355555557, "333333333.33333343"),
            (0xbecbf647612f3696, "-0.0000033333333333333333"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
        ];
        for (bits, expected) in table {
            let number = Number::from_f64(f64::from_bits(*bits)).unwrap();
            assert_eq!(
                to_canonical_string(&Value::Number(number)),
                *expected,
                "bits {bits:#018x}"
            );
        }
    }

    /// Numbers as they arrive in JSON text.
    #[test]
    fn numbers_from_text() {
        let table = [
            ("1e30", "1e+30"),
            ("1E30", "1e+30"),
            ("4.50", "4.5"),
            ("2e-3", "0.002"),
            ("0.002", "0.002"),
            ("1e-7", "1e-7"),
            ("0.000000000000000000000000001", "1e-27"),
            ("333333333.33333329", "333333333.3333333"),
            ("-0", "0"),
            ("-0.0", "0"),
            ("1.0", "1"),
            ("100", "100"),
            ("-17", "-17"),
            ("1e21", "1e+21"),
            ("1e20", "100000000000000000000"),
            ("9223372036854775807", "9223372036854775807"),
            ("18446744073709551615", "18446744073709551615"),
            ("-9223372036854775808", "-9223372036854775808"),
        ];
        for (input, expected) in table {
            assert_eq!(
                to_canonical_string(&number(input)),
                expected,
                "input {input}"
            );
        }
    }

    /// RFC 8785 §3.2.2, the worked example.
    #[test]
    fn rfc8785_worked_example() {
        let string: Value =
            serde_json::from_str(r#""\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/""#).unwrap();
        #[allow(clippy::excessive_precision)]
        let input = json!({
            "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
            "string": string,
            "literals": [null, true, false]
        });
        assert_eq!(
            to_canonical_string(&input),
            r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        );
    }

    /// RFC 8785 §3.2.3: member order is by UTF-16 code units.
    #[test]
    fn rfc8785_sorting_example() {
        let input = r#"{
          "\u20ac": "Euro Sign",
          "\r": "Carriage Return",
          "\ufb33": "Hebrew Letter Dalet With Dagesh",
          "1": "One",
          "\ud83d\ude00": "Emoji: Grinning Face",
          "\u0080": "Control",
          "\u00f6": "Latin Small Letter O With Diaeresis"
        }"#;
        let expected = concat!(
            r#"{"\r":"Carriage Return","1":"One","#,
            "\"\u{80}\":\"Control\",",
            "\"\u{f6}\":\"Latin Small Letter O With Diaeresis\",",
            "\"\u{20ac}\":\"Euro Sign\",",
            "\"\u{1f600}\":\"Emoji: Grinning Face\",",
            "\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}",
        );
        assert_eq!(canonical_of_text(input), expected);
    }

    /// The RFC's companion test data, `weird.json`.
    #[test]
    fn weird_keys() {
        let input = r#"{
          "\u20ac": "Euro Sign",
          "\r": "Carriage Return",
          "\u000a": "Newline",
          "1": "One",
          "\u0080": "Control\u007f",
          "\ud83d\ude02": "Smiley",
          "\u00f6": "Latin Small Letter O With Diaeresis",
          "\ufb33": "Hebrew Letter Dalet With Dagesh",
          "</script>": "Browser Challenge"
        }"#;
        let expected = concat!(
            r#"{"\n":"Newline","\r":"Carriage Return","1":"One","</script>":"Browser Challenge","#,
            "\"\u{80}\":\"Control\u{7f}\",",
            "\"\u{f6}\":\"Latin Small Letter O With Diaeresis\",",
            "\"\u{20ac}\":\"Euro Sign\",",
            "\"\u{1f602}\":\"Smiley\",",
            "\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}",
        );
        assert_eq!(canonical_of_text(input), expected);
    }

    #[test]
    fn string_escapes() {
        let table = [
            ("plain", r#""plain""#),
            ("q\"b\\", r#""q\"b\\""#),
            ("\u{8}\t\n\u{c}\r", r#""\b\t\n\f\r""#),
            ("\u{0}\u{1}\u{1f}", r#""\u0000\u0001\u001f""#),
            ("\u{1b}[31m", r#""\u001b[31m""#),
            ("/ slash stays", r#""/ slash stays""#),
            ("\u{7f}\u{2028}é😀", "\"\u{7f}\u{2028}é😀\""),
        ];
        for (input, expected) in table {
            assert_eq!(
                to_canonical_string(&json!(input)),
                expected,
                "input {input:?}"
            );
        }
    }

    #[test]
    fn nesting_and_whitespace() {
        let value = json!({"b": [1, {"z": null, "a": "x"}], "a": {}, "c": []});
        assert_eq!(
            to_canonical_string(&value),
            r#"{"a":{},"b":[1,{"a":"x","z":null}],"c":[]}"#
        );
        assert_eq!(
            to_canonical_bytes(&value),
            to_canonical_string(&value).into_bytes()
        );
    }

    #[test]
    fn key_order_does_not_matter() {
        let first = canonical_of_text(r#"{"b": 1, "a": {"y": 2, "x": 3}}"#);
        let second = canonical_of_text(r#"{"a": {"x": 3, "y": 2}, "b": 1}"#);
        assert_eq!(first, second);
    }

    /// A record as the gate hands one over: members out of key order, an optional one
    /// left out, a nested map, a flattened map that repeats a member, a float.
    #[derive(serde::Serialize)]
    struct Record {
        zeta: &'static str,
        alpha: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u32>,
        nested: std::collections::HashMap<&'static str, Value>,
        #[serde(flatten)]
        extra: serde_json::Map<String, Value>,
    }

    /// What the gate does with a typed event's data: serde_json's bytes, canonicalized.
    fn of(value: &impl serde::Serialize) -> CanonicalJson {
        CanonicalJson::from_json(&serde_json::to_vec(value).unwrap()).unwrap()
    }

    fn record(extra: Value, nested: Value) -> Record {
        let extra = extra.as_object().cloned().unwrap();
        Record {
            zeta: "z \"quoted\"\n",
            alpha: Some(7),
            skipped: None,
            nested: [("b", nested), ("a", json!([1, {"y": 2, "x": "é😀"}]))]
                .into_iter()
                .collect(),
            extra,
        }
    }

    #[test]
    fn a_serialized_value_is_written_as_its_value_tree_would_be() {
        let cases = [
            // The one-pass way: integers, strings, nesting.
            record(json!({"beta": 2}), json!({"k": null})),
            // Declined by the one-pass way, taken the general way: a float, a member
            // repeated by the flattened map, a key that needs an escape.
            record(json!({"beta": 0.1}), json!(1e30)),
            record(json!({"zeta": "again"}), json!(false)),
            record(json!({"q\"k": 1}), json!(-0.0)),
        ];
        for case in cases {
            let expected = to_canonical_string(&serde_json::to_value(&case).unwrap());
            assert_eq!(of(&case).as_str(), expected);
        }
        let plain = of(&record(json!({"beta": 2}), json!({"k": null})));
        assert_eq!(
            plain.as_str(),
            r#"{"alpha":7,"beta":2,"nested":{"a":[1,{"x":"é😀","y":2}],"b":{"k":null}},"zeta":"z \"quoted\"\n"}"#
        );
    }

    #[test]
    fn json_text_is_canonicalized_or_refused() {
        let canonical = CanonicalJson::from_json(br#" { "b" : 1.50, "a" : [ ] } "#).unwrap();
        assert_eq!(canonical.as_str(), r#"{"a":[],"b":1.5}"#);
        assert_eq!(CanonicalJson::from(json!({"b": 1.5, "a": []})), canonical);
        for text in [&b"{\"a\":"[..], b"", b"{\"a\":1} trailing", b"\xff"] {
            assert!(CanonicalJson::from_json(text).is_err(), "{text:?}");
        }
        let map_with_number_keys: std::collections::BTreeMap<u32, u32> = [(1, 2)].into();
        assert_eq!(of(&map_with_number_keys).as_str(), r#"{"1":2}"#);
    }
}
