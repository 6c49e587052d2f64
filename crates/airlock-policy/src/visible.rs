//! Text a person checks before deciding, with nothing hidden in it: characters that are
//! invisible, or that reorder what is around them, written out (DESIGN.md G2, §10.1).
//!
//! An argument `bob@evil\u{202e}tset.elpmaxe` shows in a browser or a terminal as
//! `bob@evilexample.test`; a zero-width space makes two different strings look the same.
//! Previews replace such characters with `�` ([`crate::preview`]); the places that show
//! the exact value (the arguments, the text to edit, the target a standing rule would bind
//! to) write them out instead, so the person sees exactly what there is:
//! - [`show_hidden`] writes each one as `<U+202E>`, for text shown as it is
//!   ([`show_hidden_in_block`] keeps line breaks and tabs);
//! - [`json_pretty_visible`] writes them as JSON escapes (`\u202e`) inside strings, which
//!   is the same JSON value: edited and sent back, it parses to exactly the same arguments.

use serde_json::Value;
use std::fmt::Write;

/// Whether `character` is invisible or reorders the text around it when shown: control
/// characters (line breaks and tabs too), bidirectional marks, embeddings, overrides and
/// isolates, zero-width and other default-ignorable characters, line and paragraph
/// separators, and the Unicode tag characters.
pub fn is_hidden(character: char) -> bool {
    character.is_control()
        || matches!(
            character,
            '\u{00ad}'
                | '\u{034f}'
                | '\u{061c}'
                | '\u{115f}'
                | '\u{1160}'
                | '\u{17b4}'
                | '\u{17b5}'
                | '\u{180b}'..='\u{180f}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}'
                | '\u{3164}'
                | '\u{fe00}'..='\u{fe0f}'
                | '\u{feff}'
                | '\u{ffa0}'
                | '\u{fff0}'..='\u{fffb}'
                | '\u{1bca0}'..='\u{1bca3}'
                | '\u{1d173}'..='\u{1d17a}'
                | '\u{e0000}'..='\u{e0fff}'
        )
}

/// `text` with every [hidden](is_hidden) character written as `<U+XXXX>`.
pub fn show_hidden(text: &str) -> String {
    if !text.chars().any(is_hidden) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for character in text.chars() {
        if is_hidden(character) {
            // Writing to a String cannot fail.
            let _ = write!(out, "<U+{:04X}>", u32::from(character));
        } else {
            out.push(character);
        }
    }
    out
}

/// [`show_hidden`] for a block of text: its line breaks (`\n`) and tabs stay as they are.
pub fn show_hidden_in_block(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            line.split('\t')
                .map(show_hidden)
                .collect::<Vec<_>>()
                .join("\t")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `value` as pretty-printed JSON with every [hidden](is_hidden) character inside its
/// strings (keys included) written as a `\uXXXX` escape: the same JSON value, shown.
pub fn json_pretty_visible(value: &Value) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    escape_hidden_in_json(&text)
}

/// Rewrites every hidden character of the JSON text `text` as a JSON escape. JSON's own
/// syntax is ASCII without controls, so every such character is inside a string, where an
/// escape stands for exactly that character.
fn escape_hidden_in_json(text: &str) -> String {
    if !text.chars().any(is_hidden_raw) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for character in text.chars() {
        if is_hidden_raw(character) {
            let mut units = [0u16; 2];
            for unit in character.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(character);
        }
    }
    out
}

/// [`is_hidden`], but for JSON text: its layout's line breaks and indentation stay (a
/// control character inside a string is already escaped by serde_json).
fn is_hidden_raw(character: char) -> bool {
    is_hidden(character) && character != '\n'
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn hidden_characters_are_written_out() {
        assert_eq!(
            show_hidden("bob@evil\u{202e}tset.elpmaxe"),
            "bob@evil<U+202E>tset.elpmaxe"
        );
        assert_eq!(show_hidden("x\u{200b}"), "x<U+200B>");
        assert_eq!(show_hidden("a\nb\tc\u{7f}"), "a<U+000A>b<U+0009>c<U+007F>");
        assert_eq!(show_hidden("tag\u{e0041}"), "tag<U+E0041>");
        assert_eq!(
            show_hidden_in_block("a\tb\u{200b}\nc\u{202e}\r"),
            "a\tb<U+200B>\nc<U+202E><U+000D>"
        );
        for plain in ["bob@example.test", "é😀 ümlaut", "中文", "a b"] {
            assert_eq!(show_hidden(plain), plain);
        }
    }

    #[test]
    fn json_shows_them_as_escapes_of_the_same_value() {
        let value = json!({
            "to": "bob@evil\u{202e}tset.elpmaxe",
            "body": "x\u{200b}\n\u{2066}y\u{2069}",
            "k\u{feff}ey": ["\u{e0041}", "plain é"],
        });
        let shown = json_pretty_visible(&value);
        assert!(shown.contains(r#""bob@evil\u202etset.elpmaxe""#), "{shown}");
        assert!(shown.contains(r#""x\u200b\n\u2066y\u2069""#), "{shown}");
        assert!(shown.contains(r#""k\ufeffey""#), "{shown}");
        assert!(shown.contains(r#""\udb40\udc41""#), "{shown}");
        assert!(shown.contains("plain é"), "{shown}");
        assert!(!shown.chars().any(is_hidden_raw), "{shown}");
        let back: Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, value);
        let plain = json!({"to": "bob@example.test", "n": [1, 2.5]});
        assert_eq!(
            json_pretty_visible(&plain),
            serde_json::to_string_pretty(&plain).unwrap()
        );
    }
}
