//! Previews: what a person sees of an asked call before deciding (DESIGN.md §4, §6.2).
//!
//! A tool's `summary` and `body` templates (`"Send email to {to}"`) are parsed once at
//! policy load ([`Template::parse`], errors at byte offsets so the loader can report
//! file:line:column, and [`Template::placeholders`] so it can check argument names) and
//! rendered per call by [`build_preview`].
//!
//! A preview must never show a secret (G9) and must not mislead (G2, "exactly as
//! previewed"), so rendering:
//! - reads only the **already redacted** arguments ([`build_preview`] redacts first, and runs
//!   the rendered text through [`redact_text`] again, because two harmless values placed
//!   side by side can spell a secret no single value held);
//! - replaces control and bidirectional-override characters, so an argument cannot fake
//!   extra lines or reorder what is shown; a summary is one line (line breaks become
//!   spaces), a body keeps `\n` and `\t`;
//! - bounds every value (200 characters) and the whole text ([`SUMMARY_MAX_CHARS`],
//!   [`BODY_MAX_CHARS`]), cutting on character boundaries and marking the cut with `…`.

use serde_json::Value;

use crate::secrets::{redact, redact_text};

/// Longest summary, in characters.
pub const SUMMARY_MAX_CHARS: usize = 200;
/// Longest body, in characters.
pub const BODY_MAX_CHARS: usize = 4000;
/// Longest rendering of one placeholder's value, in characters.
const VALUE_MAX_CHARS: usize = 200;
/// What a placeholder naming an absent argument renders as.
const MISSING: &str = "(none)";
const ELLIPSIS: char = '…';

/// A parsed summary or body template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(String),
    /// A dotted argument path: `to`, `message.subject`, `items.0.name`.
    Placeholder(String),
}

/// Why a template does not parse, at a byte offset into its text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (at byte {offset})")]
pub struct TemplateError {
    /// Byte offset in the template text of the offending character.
    pub offset: usize,
    pub message: String,
}

/// How rendered text may be laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// One line: a summary, shown in lists and notifications.
    Line,
    /// Several lines: a body.
    Block,
}

impl Template {
    /// Parses `{arg}` and `{nested.arg}` placeholders; `{{` and `}}` are literal braces.
    ///
    /// A name is one or more segments of letters, digits, `_` and `-`, joined by single
    /// dots; a numeric segment indexes an array. An unclosed `{`, an empty `{}`, a lone `}`
    /// and a bad name are errors.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let error = |offset, message: String| Err(TemplateError { offset, message });
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut characters = text.char_indices().peekable();
        while let Some((offset, character)) = characters.next() {
            match character {
                '{' | '}' if characters.peek().map(|&(_, next)| next) == Some(character) => {
                    characters.next();
                    literal.push(character);
                }
                '}' => {
                    return error(
                        offset,
                        "unmatched `}` (write `}}` for a literal brace)".into(),
                    )
                }
                '{' => {
                    let start = offset + 1;
                    // The placeholder ends at the next `}`; a `{` before it means this one
                    // was never closed.
                    let close = match text[start..].find(['{', '}']) {
                        Some(length) if text[start + length..].starts_with('}') => start + length,
                        _ => {
                            return error(
                                offset,
                                "unclosed `{` (write `{{` for a literal brace)".into(),
                            )
                        }
                    };
                    let name = &text[start..close];
                    check_name(name, start)?;
                    if !literal.is_empty() {
                        pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                    }
                    pieces.push(Piece::Placeholder(name.to_owned()));
                    while characters.next_if(|&(at, _)| at <= close).is_some() {}
                }
                other => literal.push(other),
            }
        }
        if !literal.is_empty() {
            pieces.push(Piece::Literal(literal));
        }
        Ok(Template { pieces })
    }

    /// The dotted argument names the template uses, in order of appearance (repeats
    /// included), for load-time checks against a tool's schema.
    pub fn placeholders(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|piece| match piece {
            Piece::Placeholder(name) => Some(name.as_str()),
            Piece::Literal(_) => None,
        })
    }

    /// Renders a body: `\n` and `\t` kept, at most `max_chars` characters.
    ///
    /// `arguments` must already be redacted ([`crate::secrets::redact`]): values are shown as
    /// they are. [`build_preview`] does this and should be preferred.
    pub fn render(&self, arguments: &Value, max_chars: usize) -> String {
        cut(&self.render_with(arguments, Layout::Block), max_chars)
    }

    /// Renders a summary: one line, at most `max_chars` characters. `arguments` must
    /// already be redacted, as for [`Template::render`].
    pub fn render_line(&self, arguments: &Value, max_chars: usize) -> String {
        cut(&self.render_with(arguments, Layout::Line), max_chars)
    }

    fn render_with(&self, arguments: &Value, layout: Layout) -> String {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Literal(text) => out.push_str(text),
                Piece::Placeholder(name) => match lookup(arguments, name) {
                    Some(value) => out.push_str(&cut(&value_text(value), VALUE_MAX_CHARS)),
                    None => out.push_str(MISSING),
                },
            }
        }
        sanitize(&out, layout)
    }
}

fn check_name(name: &str, start: usize) -> Result<(), TemplateError> {
    if name.is_empty() {
        return Err(TemplateError {
            offset: start - 1,
            message: "empty placeholder `{}` (write `{{}}` for literal braces)".into(),
        });
    }
    let mut segment_start = true;
    for (index, character) in name.char_indices() {
        let offset = start + index;
        match character {
            '.' if segment_start => {
                return Err(TemplateError {
                    offset,
                    message: format!("empty segment in placeholder name `{name}`"),
                })
            }
            '.' => segment_start = true,
            c if c.is_alphanumeric() || c == '_' || c == '-' => segment_start = false,
            c => {
                return Err(TemplateError {
                    offset,
                    message: format!(
                        "{c:?} is not allowed in placeholder name `{name}` \
                         (letters, digits, `_`, `-`, and dots between segments)"
                    ),
                })
            }
        }
    }
    if segment_start {
        return Err(TemplateError {
            offset: start + name.len() - 1,
            message: format!("empty segment in placeholder name `{name}`"),
        });
    }
    Ok(())
}

/// The value at a dotted path: object members by name, array items by index.
fn lookup<'a>(arguments: &'a Value, name: &str) -> Option<&'a Value> {
    name.split('.')
        .try_fold(arguments, |value, segment| match value {
            Value::Object(members) => members.get(segment),
            Value::Array(items) => segment
                .parse::<usize>()
                .ok()
                .and_then(|index| items.get(index)),
            _ => None,
        })
}

/// Strings as they are, arrays of strings as a list, everything else as compact JSON.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_string) => items
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(", "),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// At most `max_chars` characters; a cut text ends with `…` (counted in the limit).
fn cut(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_owned(),
        Some(_) if max_chars == 0 => String::new(),
        Some(_) => {
            let mut out: String = text.chars().take(max_chars - 1).collect();
            out.push(ELLIPSIS);
            out
        }
    }
}

/// Replaces what could make shown text lie about its shape: line breaks (in a line),
/// control characters and bidirectional overrides (the "Trojan Source" trick) become `�`.
fn sanitize(text: &str, layout: Layout) -> String {
    let mut out = String::with_capacity(text.len());
    let mut characters = text.chars().peekable();
    while let Some(character) = characters.next() {
        match character {
            // A CRLF is one line break: the `\n` that follows stands for both.
            '\r' if characters.peek() == Some(&'\n') => {}
            '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}' => out.push(match layout {
                Layout::Line => ' ',
                Layout::Block => '\n',
            }),
            '\t' => out.push(match layout {
                Layout::Line => ' ',
                Layout::Block => '\t',
            }),
            '\u{061c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}' => out.push('\u{fffd}'),
            control if control.is_control() => out.push('\u{fffd}'),
            other => out.push(other),
        }
    }
    out
}

/// The wire shape lives in the protocol crate; re-exported here beside its builder.
pub use airlock_protocol::Preview;

/// Redacts `arguments`, then renders the tool's templates over them. Without a summary
/// template the summary is `Call <tool>`.
/// `Call <tool>: key value, key value` over the top-level arguments.
fn default_summary(tool: &str, arguments: &Value) -> String {
    let pairs: Vec<String> = arguments
        .as_object()
        .map(|object| {
            object
                .iter()
                .map(|(key, value)| match value {
                    Value::String(text) => format!("{key} {text}"),
                    other => format!("{key} {other}"),
                })
                .collect()
        })
        .unwrap_or_default();
    if pairs.is_empty() {
        format!("Call {tool}")
    } else {
        format!("Call {tool}: {}", pairs.join(", "))
    }
}

/// Every argument, as indented JSON; nothing for a call without arguments.
fn default_body(arguments: &Value) -> Option<String> {
    if arguments
        .as_object()
        .is_some_and(|object| object.is_empty())
    {
        return None;
    }
    serde_json::to_string_pretty(arguments).ok()
}

pub fn build_preview(
    tool: &str,
    summary: Option<&Template>,
    body: Option<&Template>,
    arguments: &Value,
) -> Preview {
    let arguments = redact(arguments);
    // A tool the policy gives no templates is still shown with its (redacted) arguments:
    // "Call mcp__node__move_file" alone gives a person nothing to decide on.
    let summary = match summary {
        Some(template) => template.render_with(&arguments, Layout::Line),
        None => sanitize(&default_summary(tool, &arguments), Layout::Line),
    };
    let body = match body {
        Some(template) => Some(template.render_with(&arguments, Layout::Block)),
        None => default_body(&arguments),
    }
    .map(|body| cut(&redact_text(&body), BODY_MAX_CHARS));
    Preview {
        summary: cut(&redact_text(&summary), SUMMARY_MAX_CHARS),
        body,
        arguments,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(template: &str, arguments: Value) -> String {
        Template::parse(template)
            .unwrap()
            .render(&arguments, BODY_MAX_CHARS)
    }

    #[test]
    fn parse_and_placeholders() {
        let table: [(&str, &[&str]); 7] = [
            ("no placeholders", &[]),
            ("Send email to {to}", &["to"]),
            ("{a}{b.c}{items.0.name}", &["a", "b.c", "items.0.name"]),
            ("{x-y_z} and {x-y_z}", &["x-y_z", "x-y_z"]),
            ("{{literal}} {n}", &["n"]),
            ("}}{{", &[]),
            ("{état}", &["état"]),
        ];
        for (text, expected) in table {
            let template = Template::parse(text).unwrap();
            assert_eq!(
                template.placeholders().collect::<Vec<_>>(),
                expected,
                "template {text:?}"
            );
        }
    }

    #[test]
    fn parse_errors_point_at_the_trouble() {
        let table = [
            ("Send {to", 5, "unclosed"),
            ("{a {b}", 0, "unclosed"),
            ("x {} y", 2, "empty placeholder"),
            ("oops }", 5, "unmatched `}`"),
            ("{a b}", 2, "not allowed"),
            ("{.a}", 1, "empty segment"),
            ("{a..b}", 3, "empty segment"),
            ("{a.}", 2, "empty segment"),
            ("é {a/b}", 5, "not allowed"),
            ("{a\nb}", 2, "not allowed"),
        ];
        for (text, offset, message) in table {
            let error = Template::parse(text).unwrap_err();
            assert_eq!(error.offset, offset, "template {text:?}: {error}");
            assert!(
                error.message.contains(message),
                "template {text:?}: {error}"
            );
            assert!(
                error.message.starts_with(|c: char| !c.is_uppercase()),
                "{error}"
            );
        }
    }

    #[test]
    fn rendering_values() {
        let arguments = json!({
            "to": "bob@acme.test",
            "cc": ["ann@acme.test", "eve@acme.test"],
            "n": 3,
            "flags": [1, "two"],
            "empty": [],
            "opts": {"b": true},
            "nothing": null,
            "msg": {"subject": "Hi"},
            "items": [{"name": "first"}, {"name": "second"}],
        });
        let table = [
            ("To {to}", "To bob@acme.test"),
            ("Cc {cc}", "Cc ann@acme.test, eve@acme.test"),
            (
                "{n} {flags} {empty} {opts} {nothing}",
                r#"3 [1,"two"] [] {"b":true} null"#,
            ),
            (
                "{msg.subject} / {items.1.name} / {items.0}",
                r#"Hi / second / {"name":"first"}"#,
            ),
            (
                "{missing} {to.x} {items.9} {items.x}",
                "(none) (none) (none) (none)",
            ),
            ("{{{to}}}", "{bob@acme.test}"),
        ];
        for (template, expected) in table {
            assert_eq!(
                render(template, arguments.clone()),
                expected,
                "template {template:?}"
            );
        }
    }

    #[test]
    fn long_values_and_texts_are_cut_on_char_boundaries() {
        let long = "é".repeat(300);
        let rendered = render("{v}", json!({ "v": long }));
        assert_eq!(rendered.chars().count(), 200);
        assert!(rendered.ends_with('…'));

        let template = Template::parse("{a}{b}").unwrap();
        let arguments = json!({"a": "😀".repeat(150), "b": "x".repeat(150)});
        let summary = template.render_line(&arguments, 10);
        assert_eq!(summary, format!("{}…", "😀".repeat(9)));
        assert_eq!(
            template.render_line(&json!({"a": "abc", "b": ""}), 3),
            "abc"
        );
        assert_eq!(
            template.render_line(&json!({"a": "abcd", "b": ""}), 3),
            "ab…"
        );
        assert_eq!(template.render_line(&json!({"a": "abcd", "b": ""}), 0), "");
    }

    #[test]
    fn control_characters_cannot_spoof_lines() {
        let arguments = json!({"v": "a\nb\r\nc\td\u{1b}[2J\u{202e}e\u{2028}f\rg"});
        let template = Template::parse("x {v}").unwrap();
        assert_eq!(
            template.render_line(&arguments, 200),
            "x a b c d\u{fffd}[2J\u{fffd}e f g"
        );
        assert_eq!(
            template.render(&arguments, 200),
            "x a\nb\nc\td\u{fffd}[2J\u{fffd}e\nf\ng"
        );
    }

    #[test]
    fn build_preview_redacts_before_rendering() {
        let summary = Template::parse("Fetch {url} as {user}").unwrap();
        let body = Template::parse("Headers: {headers}\nPassword: {password}").unwrap();
        let arguments = json!({
            "url": "https://bob:hunter2@host/",
            "user": "bob",
            "password": "hunter2",
            "headers": {"Authorization": "Bearer abc"},
        });
        let preview = build_preview("http.get", Some(&summary), Some(&body), &arguments);
        assert_eq!(
            preview.summary,
            "Fetch https://bob:[REDACTED:url_password]@host/ as bob"
        );
        assert_eq!(
            preview.body.as_deref(),
            Some("Headers: {\"Authorization\":\"[REDACTED:authorization_header]\"}\nPassword: [REDACTED:secret_field]")
        );
        assert_eq!(preview.arguments, crate::secrets::redact(&arguments));
        assert!(!serde_json::to_string(&preview).unwrap().contains("hunter2"));
    }

    #[test]
    fn build_preview_redacts_secrets_formed_by_concatenation() {
        let summary = Template::parse("{a}{b}").unwrap();
        let arguments = json!({"a": "AKIA", "b": "IOSFODNN7EXAMPLE"});
        let preview = build_preview("t", Some(&summary), None, &arguments);
        assert_eq!(preview.summary, "[REDACTED:aws_access_key]");
    }

    #[test]
    fn build_preview_defaults_and_wire_shape() {
        let preview = build_preview("email.send", None, None, &json!({"to": "bob"}));
        assert_eq!(preview.summary, "Call email.send: to bob");
        assert_eq!(preview.body.as_deref(), Some("{\n  \"to\": \"bob\"\n}"));
        let wire = serde_json::to_value(&preview).unwrap();
        assert_eq!(
            wire,
            json!({"summary": "Call email.send: to bob", "body": "{\n  \"to\": \"bob\"\n}",
                "arguments": {"to": "bob"}})
        );
        // No arguments: nothing more to show.
        let bare = build_preview("mcp__srv__ping", None, None, &json!({}));
        assert_eq!(bare.summary, "Call mcp__srv__ping");
        assert_eq!(bare.body, None);
        // Redacted, and kept to one line, in the summary as in the body.
        let moved = build_preview(
            "mcp__node__move_file",
            None,
            None,
            &json!({"source": "a\nb.txt", "destination": "/tmp/b.txt", "token": "ghp_0123456789abcdefghijklmnopqrstuvwxyz"}),
        );
        assert!(
            moved.summary.starts_with("Call mcp__node__move_file: "),
            "{}",
            moved.summary
        );
        assert!(
            moved.summary.contains("destination /tmp/b.txt"),
            "{}",
            moved.summary
        );
        assert!(!moved.summary.contains('\n'), "{}", moved.summary);
        let shown = format!("{}{}", moved.summary, moved.body.clone().unwrap());
        assert!(!shown.contains("ghp_0123"), "{shown}");
        let back: Preview = serde_json::from_value(wire).unwrap();
        assert_eq!(back, preview);

        let long_tool = "t".repeat(500);
        let preview = build_preview(&long_tool, None, None, &json!({}));
        assert_eq!(preview.summary.chars().count(), SUMMARY_MAX_CHARS);

        let body = Template::parse("{a}\n{a}").unwrap();
        let preview = build_preview("t", None, Some(&body), &json!({"a": "x".repeat(5000)}));
        assert_eq!(
            preview.body.unwrap(),
            format!("{0}…\n{0}…", "x".repeat(199))
        );
    }
}
