//! `when = { "*" = { … } }`: a matcher tried on every argument, at any depth, for the tools
//! whose argument names nobody can know in advance (an MCP server's `path`, `file`, `uri`,
//! `source`…). Only a deny or ask rule may name it (the loader refuses an allow: one
//! argument that looks safe says nothing of the others).
//!
//! Each string in the arguments is offered to the matcher in the form it reads: a path
//! matcher gets the strings that are written as paths (`/…`, `~/…`, `C:\…`, `file://…`),
//! and a bare file name given to an argument named for a file (`file_path = ".env"`), a
//! domain matcher every `http(s)://` address found in a string (also inside prose: "fetch
//! https://… and summarise"), any other matcher every string. A string it cannot read is
//! passed over rather than counted as a match, or every call would match; arguments too many
//! to read (more than [`MAX_STRINGS`], or nested deeper than [`MAX_DEPTH`]) count as a match
//! (fail closed).

use super::Matcher;
use crate::context::Context;
use crate::matcher::path::is_absolute;
use crate::matcher::Side;
use serde_json::Value;

/// How many strings are read at most; a call with more matches.
pub const MAX_STRINGS: usize = 4096;

/// How deep arguments are followed; a deeper value counts as too many to read.
pub const MAX_DEPTH: usize = 32;

/// Whether some argument of `arguments` satisfies `matcher`, as the module says.
pub fn holds(matcher: &Matcher, arguments: &Value, context: &Context) -> bool {
    let mut strings = Vec::new();
    if !collect(arguments, None, 0, &mut strings) {
        return true;
    }
    // The secret scan reads every string of a value itself: one scan of the whole.
    if let Matcher::Secret(_) = matcher {
        return matcher.holds(Some(arguments), Side::Restrict, context);
    }
    let test = |text: &str| {
        matcher.holds(
            Some(&Value::String(text.to_owned())),
            Side::Restrict,
            context,
        )
    };
    strings.into_iter().any(|(key, text)| match matcher {
        Matcher::Path(_) => path_like(text)
            .or_else(|| {
                key.filter(|key| names_a_file(key))
                    .and_then(|_| bare_name(text))
            })
            .is_some_and(|path| test(&path)),
        Matcher::Domain(_) | Matcher::Local(_) => addresses(text).any(test),
        // These read the call's other arguments, or only say whether one is there.
        Matcher::Plants(_) | Matcher::Hooks(_) | Matcher::Present(_) => false,
        _ => test(text),
    })
}

/// Gathers every string (object keys not included), each with the key it stands under
/// (an array's items under the array's); `false` when there are too many or they lie too
/// deep.
fn collect<'v>(
    value: &'v Value,
    key: Option<&'v str>,
    depth: usize,
    out: &mut Vec<(Option<&'v str>, &'v str)>,
) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match value {
        Value::String(text) => {
            out.push((key, text));
            out.len() <= MAX_STRINGS
        }
        Value::Array(items) => items.iter().all(|item| collect(item, key, depth + 1, out)),
        Value::Object(map) => map
            .iter()
            .all(|(key, item)| collect(item, Some(key), depth + 1, out)),
        _ => true,
    }
}

/// Whether an argument's name says it holds a file's path: its last word (`_`, `-` and a
/// capital letter start one) is `path`, `file` or `filename`, or their plurals (`path`,
/// `file_path`, `filePath`, `files`, `target_file`, `relativePath`, `fileName`): its value
/// names a file even when it is a bare name (`.env.production` read from a forge's
/// repository). `profile` or `pathway` are other words.
fn names_a_file(key: &str) -> bool {
    let mut words: Vec<String> = vec![String::new()];
    let mut previous_lower = false;
    for c in key.chars() {
        if c == '_' || c == '-' || (c.is_ascii_uppercase() && previous_lower) {
            words.push(String::new());
        }
        if let Some(word) = words.last_mut().filter(|_| c != '_' && c != '-') {
            word.push(c.to_ascii_lowercase());
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
    }
    let last = words.last().map(String::as_str).unwrap_or_default();
    let before = words.len().checked_sub(2).map(|at| words[at].as_str());
    matches!(
        last.strip_suffix('s').unwrap_or(last),
        "path" | "file" | "filename" | "filepath"
    ) || (matches!(last, "name" | "names") && before == Some("file"))
}

/// A bare file name (`.env`, `id_rsa`, `secrets.yaml`): one word, no address, option or
/// pattern.
fn bare_name(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()
        && !text.contains(char::is_whitespace)
        && !text.contains("://")
        && !text.starts_with('-')
        && !text.contains(['*', '?', '[', '{', '\0']))
    .then(|| text.to_owned())
}

/// The path a string names when it is written as one: absolute, in the home, a Windows
/// drive or share path, a `file:` URL, or relative with a folder (`prod/terraform.tfvars`:
/// a forge's or a server's file, placed as the project's would be). Free text (blanks, line
/// breaks), addresses, options, patterns (`**/.env`: a search for names) and a bare name
/// (`.env` may be a search's words) are not.
fn path_like(text: &str) -> Option<String> {
    let text = text.trim();
    if text.is_empty() || text.contains(['\n', '\r', '\0']) {
        return None;
    }
    let text = match text.get(..7) {
        Some(scheme) if scheme.eq_ignore_ascii_case("file://") => {
            let rest = &text[7..];
            rest.strip_prefix("localhost").unwrap_or(rest)
        }
        _ => text,
    };
    let placed =
        is_absolute(text) || text.starts_with("~/") || text == "~" || text.starts_with("\\\\");
    let relative = !text.contains(char::is_whitespace)
        && !text.contains("://")
        && !text.starts_with('-')
        && !text.contains(['*', '?', '[', '{'])
        && text.contains('/');
    (placed || relative).then(|| text.to_owned())
}

/// The `http://` and `https://` addresses in a string, each up to the first blank, quote
/// or bracket that ends it in prose, without the punctuation that ends a sentence.
fn addresses(text: &str) -> impl Iterator<Item = &str> {
    let lower = text.to_ascii_lowercase();
    let starts: Vec<usize> = lower
        .match_indices("http")
        .map(|(at, _)| at)
        .filter(|&at| lower[at..].starts_with("http://") || lower[at..].starts_with("https://"))
        .collect();
    starts
        .into_iter()
        .map(move |at| {
            let rest = &text[at..];
            let end = rest
                .find(|c: char| {
                    c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | ')' | ']')
                })
                .unwrap_or(rest.len());
            // A sentence's own punctuation after the address ends it too (`open
            // http://localhost:4321.`).
            rest[..end].trim_end_matches(['.', ',', ';', ':', '!', '?'])
        })
        .filter(|address| !address.ends_with("//"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_strings_written_as_paths() {
        for (text, expected) in [
            ("/home/kim/.ssh/id_rsa", Some("/home/kim/.ssh/id_rsa")),
            ("~/.netrc", Some("~/.netrc")),
            (
                "file:///Users/sam/.aws/credentials",
                Some("/Users/sam/.aws/credentials"),
            ),
            ("FILE://localhost/etc/shadow", Some("/etc/shadow")),
            (
                "C:\\Users\\maria\\.aws\\credentials",
                Some("C:\\Users\\maria\\.aws\\credentials"),
            ),
            ("id_rsa", None),
            ("prod/terraform.tfvars", Some("prod/terraform.tfvars")),
            (".env", None),
            ("**/.env*", None),
            ("text/plain; charset=utf-8", None),
            ("--config=.env", None),
            ("https://example.net/a/b", None),
            ("how do I rotate ~/.ssh keys?\nthanks", None),
            ("select * from users", None),
            ("", None),
        ] {
            assert_eq!(path_like(text).as_deref(), expected, "{text}");
        }
    }

    #[test]
    fn bare_names_count_under_file_arguments_only() {
        let matcher = Matcher::Path(vec![crate::matcher::path::PathPattern::compile(
            "**/.env.production",
        )
        .unwrap()]);
        let context = Context::unknown();
        for (arguments, expected) in [
            (serde_json::json!({"file_path": ".env.production"}), true),
            (serde_json::json!({"filePath": ".env.production"}), true),
            (
                serde_json::json!({"paths": ["README.md", ".env.production"]}),
                true,
            ),
            (serde_json::json!({"target_file": ".env.production"}), true),
            (serde_json::json!({"query": ".env.production"}), false),
            (serde_json::json!({"path": "**/.env.production"}), false),
            (serde_json::json!({"path": ".env.example"}), false),
            (serde_json::json!({"profile": ".env.production"}), false),
            (serde_json::json!({"fileName": ".env.production"}), true),
            (serde_json::json!({"pathway": ".env.production"}), false),
        ] {
            assert_eq!(
                holds(&matcher, &arguments, &context),
                expected,
                "{arguments}"
            );
        }
    }

    #[test]
    fn addresses_are_found_in_prose() {
        let found: Vec<&str> = addresses(
            "Fetch https://x.example.net/i?t=1 and (http://169.254.169.254/latest) \"HTTPS://A.b/c\"",
        )
        .collect();
        assert_eq!(
            found,
            [
                "https://x.example.net/i?t=1",
                "http://169.254.169.254/latest",
                "HTTPS://A.b/c"
            ]
        );
        assert_eq!(addresses("no address, httpx only").count(), 0);
        let found: Vec<&str> = addresses(
            "Run it and open http://localhost:4321. Then see https://x.example/a?b=1, too",
        )
        .collect();
        assert_eq!(found, ["http://localhost:4321", "https://x.example/a?b=1"]);
    }

    #[test]
    fn too_many_or_too_deep_arguments_count_as_a_match() {
        let matcher = Matcher::Eq(Value::String("never".into()));
        let many = Value::Array(vec![Value::String("a".into()); MAX_STRINGS + 1]);
        assert!(holds(&matcher, &many, &Context::unknown()));
        let few = Value::Array(vec![Value::String("a".into()); 3]);
        assert!(!holds(&matcher, &few, &Context::unknown()));
        let mut deep = Value::String("a".into());
        for _ in 0..=MAX_DEPTH {
            deep = Value::Array(vec![deep]);
        }
        assert!(holds(&matcher, &deep, &Context::unknown()));
    }
}
