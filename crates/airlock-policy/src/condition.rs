//! `when` conditions: a dotted argument path and one compiled matcher (DESIGN.md §4.1).
//!
//! The leaf matchers that need real parsing live in [`crate::matcher`]; this module binds
//! them to argument values, including the array and odd-shape rules that keep every
//! matcher failing closed.

use crate::classes::ClassTable;
use crate::context::Context;
use crate::document::MatcherEntry;
use crate::matcher::class::{self, ClassMatcher};
use crate::matcher::domain::{self, DomainPattern};
use crate::matcher::local_data;
use crate::matcher::path::{self, PathPattern};
use crate::matcher::planted;
use crate::matcher::shell::classify::{sql, CommandFacts};
use crate::matcher::shell::{self, CommandPrefix};
use crate::matcher::Side;
use globset::{GlobBuilder, GlobMatcher};
use regex::Regex;
use serde_json::Value;
use std::sync::Arc;

/// One compiled matcher.
#[derive(Debug, Clone)]
pub enum Matcher {
    Eq(Value),
    In(Vec<Value>),
    Glob(Vec<GlobMatcher>),
    Regex(Vec<Regex>),
    Prefix(Vec<CommandPrefix>),
    Path(Vec<PathPattern>),
    Domain(Vec<DomainPattern>),
    Present(bool),
    Class(ClassMatcher),
    /// `secret = true`: the value holds secret material, as the secret scan finds it
    /// (DESIGN.md G9); `false`: it holds none.
    Secret(bool),
    /// `local = true`: the address carries data from this machine; `false`: it does not.
    Local(bool),
    /// `sql_reads = true`: the text is SQL that only reads and names no secret material;
    /// `false`: anything else (fail closed: text that is not SQL counts as `false`).
    SqlReads(bool),
    /// `plants = ["remote_code"]`: the file the value names, with the text the call
    /// writes into it, runs a command of these classes later by itself.
    Plants(ClassMatcher),
    /// `hooks = ["vcs_remote"]`: as `Plants`, for what runs with no one running it.
    Hooks(ClassMatcher),
}

mod anywhere;

/// One `when` entry: a dotted argument path and its matcher.
#[derive(Debug, Clone)]
pub struct Condition {
    /// The path as written (`headers.host`), for messages.
    pub path: String,
    segments: Vec<String>,
    pub matcher: Matcher,
}

impl Condition {
    pub fn new(path: &str, matcher: Matcher) -> Result<Condition, String> {
        let segments: Vec<String> = path.split('.').map(str::to_owned).collect();
        if segments.iter().any(String::is_empty) {
            return Err(format!(
                "argument path `{path}` has an empty segment; write nested keys as `a.b`"
            ));
        }
        Ok(Condition {
            path: path.to_owned(),
            segments,
            matcher,
        })
    }

    /// Whether the condition holds for these arguments, leaning the way `side` says.
    pub fn holds(&self, arguments: &Value, side: Side, context: &Context) -> bool {
        // `"*"`: some argument anywhere (deny and ask rules only; the loader sees to it).
        if self.path == "*" {
            return side == Side::Restrict && anywhere::holds(&self.matcher, arguments, context);
        }
        let value = lookup(arguments, &self.segments);
        match &self.matcher {
            Matcher::Plants(matcher) => {
                return plants_hold(
                    matcher,
                    ("plants", planted::planted),
                    value,
                    arguments,
                    side,
                    context,
                )
            }
            Matcher::Hooks(matcher) => {
                return plants_hold(
                    matcher,
                    ("hooks", planted::planted_in_hooks),
                    value,
                    arguments,
                    side,
                    context,
                )
            }
            _ => {}
        }
        self.matcher.holds(value, side, context)
    }
}

/// Follows a dotted path into nested objects; numeric segments index arrays.
pub fn lookup<'v>(root: &'v Value, segments: &[String]) -> Option<&'v Value> {
    let mut current = root;
    for segment in segments {
        current = match current {
            Value::Object(map) => map.get(segment)?,
            Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

impl Matcher {
    /// Compiles the one matcher a `when` table holds.
    pub fn compile(entry: &MatcherEntry, table: &Arc<ClassTable>) -> Result<Matcher, String> {
        let mut compiled = Vec::new();
        let paths = entry.paths.as_ref().map(|paths| paths.0.as_slice());
        if let Some(classes) = &entry.class {
            compiled.push(Matcher::Class(ClassMatcher::compile(
                &classes.0,
                paths,
                table.clone(),
            )?));
        }
        if let Some(classes) = &entry.plants {
            compiled.push(Matcher::Plants(ClassMatcher::compile(
                &classes.0,
                paths,
                table.clone(),
            )?));
        }
        if let Some(classes) = &entry.hooks {
            compiled.push(Matcher::Hooks(ClassMatcher::compile(
                &classes.0,
                paths,
                table.clone(),
            )?));
        }
        if entry.paths.is_some()
            && entry.class.is_none()
            && entry.plants.is_none()
            && entry.hooks.is_none()
        {
            return Err(
                "`paths` goes with `class`, `plants` or `hooks`: write `{ class = [...], paths = [...] }`"
                    .into(),
            );
        }
        if let Some(value) = &entry.eq {
            compiled.push(Matcher::Eq(toml_to_json(value)));
        }
        if let Some(values) = &entry.one_of {
            if values.is_empty() {
                return Err("`in` needs at least one value".into());
            }
            compiled.push(Matcher::In(values.iter().map(toml_to_json).collect()));
        }
        if let Some(globs) = &entry.glob {
            compiled.push(Matcher::Glob(compile_each(&globs.0, "glob", |g| {
                GlobBuilder::new(g)
                    .literal_separator(false)
                    .backslash_escape(true)
                    .build()
                    .map(|glob| glob.compile_matcher())
                    .map_err(|e| e.kind().to_string())
            })?));
        }
        if let Some(patterns) = &entry.regex {
            compiled.push(Matcher::Regex(compile_each(&patterns.0, "regex", |p| {
                Regex::new(p).map_err(|e| e.to_string())
            })?));
        }
        if let Some(prefixes) = &entry.prefix {
            compiled.push(Matcher::Prefix(compile_each(
                &prefixes.0,
                "prefix",
                CommandPrefix::parse,
            )?));
        }
        if let Some(paths) = &entry.path {
            compiled.push(Matcher::Path(compile_each(
                &paths.0,
                "path",
                PathPattern::compile,
            )?));
        }
        if let Some(domains) = &entry.domain {
            compiled.push(Matcher::Domain(compile_each(
                &domains.0,
                "domain",
                DomainPattern::compile,
            )?));
        }
        if let Some(present) = entry.present {
            compiled.push(Matcher::Present(present));
        }
        if let Some(secret) = entry.secret {
            compiled.push(Matcher::Secret(secret));
        }
        if let Some(local) = entry.local {
            compiled.push(Matcher::Local(local));
        }
        if let Some(reads) = entry.sql_reads {
            compiled.push(Matcher::SqlReads(reads));
        }
        match compiled.len() {
            1 => Ok(compiled.remove(0)),
            0 => Err("empty matcher; expected one of eq, in, glob, regex, prefix, path, domain, present, class, plants, hooks, secret, local, sql_reads".into()),
            _ => Err("a matcher holds exactly one of eq, in, glob, regex, prefix, path, domain, present, class, plants, hooks, secret, local, sql_reads; write two conditions on two rules".into()),
        }
    }

    /// Whether the (possibly absent) argument value satisfies the matcher.
    ///
    /// Arrays: an allow needs every element to match, a deny/ask any element; an empty
    /// array satisfies neither. Objects and other shapes a string matcher cannot read never
    /// satisfy an allow and always satisfy a deny/ask (fail closed).
    pub fn holds(&self, value: Option<&Value>, side: Side, context: &Context) -> bool {
        let value = match value {
            None | Some(Value::Null) => return matches!(self, Matcher::Present(false)),
            Some(value) => value,
        };
        match self {
            Matcher::Present(expected) => *expected,
            Matcher::Secret(expected) => crate::secrets::scan(value).is_empty() != *expected,
            Matcher::Eq(expected) => {
                if json_equal(value, expected) {
                    return true;
                }
                match (value, expected) {
                    (Value::Array(items), expected) if !expected.is_array() => {
                        quantify(items, side, |item| json_equal(item, expected))
                    }
                    _ => false,
                }
            }
            Matcher::In(options) => match value {
                Value::Array(items) => quantify(items, side, |item| {
                    options.iter().any(|option| json_equal(item, option))
                }),
                scalar => options.iter().any(|option| json_equal(scalar, option)),
            },
            Matcher::Prefix(prefixes) => match value {
                Value::Array(items) => {
                    let argv: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
                    match argv {
                        Some(argv) => shell::argv_matches(&argv, prefixes, side),
                        None => side == Side::Restrict,
                    }
                }
                other => on_text(other, side, |text| {
                    shell::command_matches(text, prefixes, side)
                }),
            },
            Matcher::Glob(globs) => each_text(value, side, |text| {
                globs.iter().any(|glob| glob.is_match(text))
            }),
            Matcher::Regex(patterns) => each_text(value, side, |text| {
                patterns.iter().any(|pattern| pattern.is_match(text))
            }),
            Matcher::Path(patterns) => each_text(value, side, |text| {
                path::path_matches(text, patterns, side, context)
            }),
            Matcher::Domain(patterns) => each_text(value, side, |text| {
                domain::domain_matches(text, patterns, side)
            }),
            Matcher::Local(expected) => each_text(value, side, |text| {
                local_data::carries_local_data(text, context) == *expected
            }),
            Matcher::SqlReads(expected) => {
                each_text(value, side, |text| sql::reads_harmlessly(text) == *expected)
            }
            // Read with the call's other arguments, in `Condition::holds`.
            Matcher::Plants(_) | Matcher::Hooks(_) => side == Side::Restrict,
            Matcher::Class(matcher) => match value {
                Value::String(text) => matcher.matches(text, side, context),
                Value::Array(items) => {
                    let argv: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
                    match argv {
                        Some(argv) if !argv.is_empty() => {
                            matcher.matches(&class::argv_command(&argv), side, context)
                        }
                        _ => side == Side::Restrict,
                    }
                }
                _ => side == Side::Restrict,
            },
        }
    }
}

/// The `plants` matcher: the files `value` names (`path`, `paths`), with the text the call
/// writes into them (`content`, `new`, each of `edits`), and the files of a `patch`, each
/// with the lines it adds. Only a deny or ask rule can name it (the loader refuses an
/// allow); a value or text of a shape it cannot read matches (fail closed).
/// How a file's text is judged, by name: all it runs ([`planted::planted`]) or what it
/// runs as a hook ([`planted::planted_in_hooks`]).
type Judge = (
    &'static str,
    fn(&str, &str, &ClassTable, &Context) -> CommandFacts,
);

fn plants_hold(
    matcher: &ClassMatcher,
    (kind, judge): Judge,
    value: Option<&Value>,
    arguments: &Value,
    side: Side,
    context: &Context,
) -> bool {
    if side == Side::Allow {
        return false;
    }
    let paths: Vec<&str> = match value {
        None | Some(Value::Null) => return false,
        Some(Value::String(path)) => vec![path.as_str()],
        Some(Value::Array(items)) => match items.iter().map(Value::as_str).collect() {
            Some(paths) => paths,
            None => return true,
        },
        Some(_) => return true,
    };
    let mut texts: Vec<&str> = Vec::new();
    for key in ["content", "new"] {
        match arguments.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => texts.push(text),
            Some(_) => return true,
        }
    }
    match arguments.get("edits") {
        None | Some(Value::Null) => {}
        Some(Value::Array(edits)) => {
            for edit in edits {
                match edit.get("new_string").or_else(|| edit.get("new")) {
                    None | Some(Value::Null) => {}
                    Some(Value::String(text)) => texts.push(text),
                    Some(_) => return true,
                }
            }
        }
        Some(_) => return true,
    }
    let table = matcher.table();
    // Judged once per evaluation for every rule that reads the same file the same way
    // (the key names the judge, the path and the text; the context keeps the last one).
    let matches = |path: &str, text: &str| {
        let key = format!("\u{0}{kind}\u{0}{path}\u{0}{text}");
        let facts = context.command_facts(&key, Arc::as_ptr(table) as usize, || {
            let mut facts = judge(path, text, table, context);
            // A place computed when the file runs (`rm -rf "$OUT"`) is not known now:
            // only what can be placed is matched against `paths`.
            for segment in &mut facts.segments {
                let known: Vec<bool> = segment.files.iter().map(|f| f.path.is_some()).collect();
                let mut keep = known.iter();
                segment
                    .files
                    .retain(|_| keep.next().copied().unwrap_or(false));
                let mut keep = known.iter();
                segment
                    .credential
                    .retain(|_| keep.next().copied().unwrap_or(false));
            }
            facts
        });
        matcher.matches_facts(&facts, Side::Restrict, context)
    };
    if paths
        .iter()
        .any(|path| texts.iter().any(|text| matches(path, text)))
    {
        return true;
    }
    match arguments.get("patch") {
        None | Some(Value::Null) => false,
        Some(Value::String(patch)) => planted::patch_files(patch)
            .iter()
            .any(|(path, added)| matches(path, added)),
        Some(_) => true,
    }
}

/// Applies a string test to a scalar, or to each element of an array by the side's
/// quantifier.
fn each_text(value: &Value, side: Side, test: impl Fn(&str) -> bool) -> bool {
    match value {
        Value::Array(items) => quantify(items, side, |item| on_text(item, side, &test)),
        other => on_text(other, side, test),
    }
}

/// Applies a string test to a scalar; numbers and booleans are read as their text.
fn on_text(value: &Value, side: Side, test: impl Fn(&str) -> bool) -> bool {
    match value {
        Value::String(text) => test(text),
        Value::Number(number) => test(&number.to_string()),
        Value::Bool(flag) => test(if *flag { "true" } else { "false" }),
        Value::Null => false,
        // A shape the matcher cannot read: doubt lands on the strict side.
        Value::Array(_) | Value::Object(_) => side == Side::Restrict,
    }
}

fn quantify(items: &[Value], side: Side, test: impl Fn(&Value) -> bool) -> bool {
    if items.is_empty() {
        return false;
    }
    match side {
        Side::Allow => items.iter().all(test),
        Side::Restrict => items.iter().any(test),
    }
}

/// JSON equality where `1` equals `1.0` (TOML integers and JSON floats meet here).
pub fn json_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(a), Value::Number(b)) => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) if a.is_f64() || b.is_f64() => x == y,
            _ => a == b,
        },
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, x)| b.get(key).is_some_and(|y| json_equal(x, y)))
        }
        _ => left == right,
    }
}

fn compile_each<T>(
    patterns: &[String],
    kind: &str,
    compile: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    if patterns.is_empty() {
        return Err(format!("`{kind}` needs at least one pattern"));
    }
    patterns
        .iter()
        .map(|pattern| compile(pattern).map_err(|e| format!("bad {kind} `{pattern}`: {e}")))
        .collect()
}

/// Converts a TOML value to JSON; datetimes become their RFC 3339 text.
pub fn toml_to_json(value: &toml::Value) -> Value {
    match value {
        toml::Value::String(text) => Value::String(text.clone()),
        toml::Value::Integer(number) => Value::from(*number),
        toml::Value::Float(number) => serde_json::Number::from_f64(*number)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        toml::Value::Boolean(flag) => Value::Bool(*flag),
        toml::Value::Datetime(datetime) => Value::String(datetime.to_string()),
        toml::Value::Array(items) => Value::Array(items.iter().map(toml_to_json).collect()),
        toml::Value::Table(table) => Value::Object(
            table
                .iter()
                .map(|(key, value)| (key.clone(), toml_to_json(value)))
                .collect(),
        ),
    }
}
