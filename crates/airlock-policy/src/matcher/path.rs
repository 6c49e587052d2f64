//! The `path` matcher (DESIGN.md §4.1): globs over lexically normalised paths.
//!
//! A tool argument such as `/srv/app/../etc/passwd` must be judged by where it points, not
//! by how it is spelled, or `allow /srv/app/**` would let an agent walk out of the tree.
//! Normalisation is purely lexical: the gateway may not run on the machine (or in the
//! container) where the tool runs, so it cannot ask the filesystem, and symlinks are not
//! resolved. Whatever cannot be known lexically (`~/..`, a NUL byte, an empty path) is
//! `None`, which the matcher turns into the strict answer for its [`Side`].

use globset::{GlobBuilder, GlobMatcher};

mod except;
mod extent;
mod list;
mod literal;
pub use extent::Extent;
pub use list::PathList;
use literal::{needle, root_text, Literal};
mod settings;
pub use settings::application_settings_folder;

use super::Side;
use crate::context::Context;

/// A path an agent on Windows sends (`E:\work\app\x.py`, `E:/work/app`), as the absolute
/// path airlock matches: the drive is a folder at the top, separators are `/`, and the
/// case is folded, since Windows ignores it (`/e:/work/app/x.py`). Patterns are matched
/// against it in lower case too ([`PathPattern::folded`]). `None` for any other path.
pub fn windows_path(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let drive = bytes.first().is_some_and(u8::is_ascii_alphabetic)
        && bytes.get(1) == Some(&b':')
        && matches!(bytes.get(2), None | Some(b'\\' | b'/'));
    drive.then(|| format!("/{}", path.replace('\\', "/").to_lowercase()))
}

/// The drive path a POSIX shell on Windows (Git Bash, MSYS2, Cygwin) writes as `/c/Users/me`
/// or `/cygdrive/c/Users/me`: `c:/Users/me`, which [`windows_path`] reads. `None` for any
/// other path. Only a call made on Windows means a drive by it (see
/// [`Context::native`]); elsewhere `/c` is a folder like any other.
pub fn posix_drive_path(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/cygdrive").unwrap_or(path);
    let bytes = rest.as_bytes();
    let drive = bytes.first() == Some(&b'/')
        && bytes.get(1).is_some_and(u8::is_ascii_alphabetic)
        && matches!(bytes.get(2), None | Some(b'/'));
    drive.then(|| format!("{}:/{}", &rest[1..2], rest.get(3..).unwrap_or("")))
}

/// Whether a normalised path is a Windows one ([`windows_path`]): `/e:` or below it.
pub fn is_windows(path: &str) -> bool {
    let bytes = path.as_bytes();
    bytes.first() == Some(&b'/')
        && bytes.get(1).is_some_and(u8::is_ascii_alphabetic)
        && bytes.get(2) == Some(&b':')
        && matches!(bytes.get(3), None | Some(b'/'))
}

/// Whether `path` is absolute, on a POSIX system or on Windows (`C:\…`).
pub fn is_absolute(path: &str) -> bool {
    path.starts_with('/') || windows_path(path).is_some()
}

/// `path` as a caller's folder (a call's `cwd`, project or home): without a trailing
/// separator, when it is absolute (a Windows drive path too, kept as written) and holds no
/// control character; `None` otherwise (fail closed: a relative folder is no folder).
pub fn absolute_folder(path: &str) -> Option<String> {
    if !is_absolute(path) || path.chars().any(char::is_control) {
        return None;
    }
    Some(match path.trim_end_matches(['/', '\\']) {
        "" => "/".to_owned(),
        drive if drive.ends_with(':') => format!("{drive}\\"),
        trimmed => trimmed.to_owned(),
    })
}

/// Whether the absolute folder `folder` is `path` or one of its ancestors, comparing
/// whole components as the policy reads both (`E:\App` holds `e:/app/src`).
pub fn folder_holds(folder: &str, path: &str) -> bool {
    match (
        normalize(folder).filter(|_| is_absolute(folder)),
        normalize(path).filter(|_| is_absolute(path)),
    ) {
        (Some(folder), Some(path)) => below(&path, &folder).is_some(),
        _ => false,
    }
}

/// Lexically normalises `path`, or `None` when where it points cannot be known.
///
/// - repeated slashes collapse, `.` segments go, a trailing slash goes (except on `/`);
/// - `..` removes the previous segment; at the root of an absolute path it stays at `/`
///   (as the kernel does: `/../etc` is `/etc`);
/// - a relative path that climbs above its start keeps its leading `..` (`a/../../x` is
///   `../x`), and an emptied relative path is `.`;
/// - `~` and `~user` are kept as a root segment (`~/a/../b` is `~/b`); climbing above it
///   is `None`, because where a home directory's parent is depends on the machine;
/// - an empty path or one holding a NUL byte is `None` (no system call accepts it, so
///   nothing sensible can be said about it).
pub fn normalize(path: &str) -> Option<String> {
    let normal = normalize_lexically(path)?;
    if !normal.starts_with("/private/") {
        return Some(normal);
    }
    // On macOS `/tmp`, `/var` and `/etc` are links into `/private`, and tools print the
    // real path (`/private/tmp/claude-501/…`): both spellings are one place.
    for linked in ["/private/tmp", "/private/var", "/private/etc"] {
        if let Some(rest) = normal.strip_prefix(linked) {
            if rest.is_empty() || rest.starts_with('/') {
                return Some(normal["/private".len()..].to_owned());
            }
        }
    }
    Some(normal)
}

/// [`normalize`] but for the folders macOS links into `/private`.
fn normalize_lexically(path: &str) -> Option<String> {
    if path.is_empty() || path.contains('\0') {
        return None;
    }
    if let Some(posix) = windows_path(path) {
        return normalize_lexically(&posix);
    }
    if is_windows(path) {
        // The drive is the top: `E:\..\x` is `E:\x`, as Windows reads it.
        let (drive, rest) = path.split_at(3);
        return Some(match normalize_lexically(&format!("/{rest}"))?.as_str() {
            "/" => drive.to_owned(),
            rest => format!("{drive}{rest}"),
        });
    }
    // Most paths are already normal (every command's files, the call's cwd and home):
    // kept as they are without splitting and joining.
    if path == "/" || (!path.starts_with('~') && is_normal(path.strip_prefix('/').unwrap_or(path)))
    {
        return Some(path.to_string());
    }
    let (root, rest) = if let Some(rest) = path.strip_prefix('/') {
        (Root::Absolute, rest)
    } else if path.starts_with('~') {
        let (home, rest) = path.split_once('/').unwrap_or((path, ""));
        (Root::Home(home), rest)
    } else {
        (Root::Relative, path)
    };

    let mut segments: Vec<&str> = Vec::new();
    for segment in rest.split('/') {
        match segment {
            "" | "." => {}
            ".." => match segments.last() {
                Some(&last) if last != ".." => {
                    segments.pop();
                }
                _ => match root {
                    Root::Absolute => {}
                    Root::Home(_) => return None,
                    Root::Relative => segments.push(".."),
                },
            },
            other => segments.push(other),
        }
    }

    let joined = segments.join("/");
    Some(match root {
        Root::Absolute => format!("/{joined}"),
        Root::Home(home) if joined.is_empty() => home.to_string(),
        Root::Home(home) => format!("{home}/{joined}"),
        Root::Relative if joined.is_empty() => ".".to_string(),
        Root::Relative => joined,
    })
}

/// Whether a path (after its leading `/`) has no empty, `.` or `..` segment: then
/// normalising it changes nothing.
fn is_normal(rest: &str) -> bool {
    // One pass over the bytes (this runs for every path a call names): a segment is
    // abnormal when it is empty, `.` or `..`, i.e. when it has at most two bytes, all dots.
    let mut length = 0usize;
    let mut dots = true;
    for &byte in rest.as_bytes().iter().chain(std::iter::once(&b'/')) {
        if byte == b'/' {
            if length == 0 || (dots && length <= 2) {
                return false;
            }
            (length, dots) = (0, true);
        } else {
            length += 1;
            dots &= byte == b'.';
        }
    }
    true
}

/// Where a path starts, which decides what a `..` at its top does.
#[derive(Clone, Copy)]
enum Root<'a> {
    /// `/…`: `..` at the top stays at `/`.
    Absolute,
    /// `~…` or `~user…`: `..` at the top is unknowable.
    Home(&'a str),
    /// Anything else: `..` at the top is kept.
    Relative,
}

/// A place a path pattern may start from, resolved per call (DESIGN.md §11.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// `{project}`: the root of the git work tree holding the call's `cwd`, else `cwd`.
    Project,
    /// `{home}` (or a leading `~`): the agent user's home directory.
    Home,
    /// `{tmp}`: `/tmp`, `/var/tmp` and, on Windows, the user's `%TEMP%`.
    Tmp,
}

/// The directories `{tmp}` stands for.
pub const TMP_DIRS: [&str; 2] = ["/tmp", "/var/tmp"];

impl Anchor {
    fn parse(pattern: &str) -> Result<Option<(Anchor, &str)>, String> {
        for (name, anchor) in [
            ("{project}", Anchor::Project),
            ("{home}", Anchor::Home),
            ("{tmp}", Anchor::Tmp),
        ] {
            if let Some(rest) = pattern.strip_prefix(name) {
                if rest.is_empty() || rest.starts_with('/') {
                    return Ok(Some((anchor, rest.trim_start_matches('/'))));
                }
                return Err(format!(
                    "anchor {name} must be followed by `/` or end the pattern"
                ));
            }
        }
        if let Some(rest) = pattern.strip_prefix('~') {
            if rest.is_empty() || rest.starts_with('/') {
                return Ok(Some((Anchor::Home, rest.trim_start_matches('/'))));
            }
        }
        if let Some(name) = pattern
            .strip_prefix('{')
            .and_then(|rest| rest.split_once('}'))
            .map(|(name, _)| name)
        {
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!(
                    "unknown anchor {{{name}}}; the anchors are {{project}}, {{home}} and {{tmp}}"
                ));
            }
        }
        if pattern.contains("{project}") || pattern.contains("{home}") || pattern.contains("{tmp}")
        {
            return Err("an anchor ({project}, {home}, {tmp}) must start the pattern".into());
        }
        Ok(None)
    }

    /// Whether this anchor is known to stand for no directory: `{project}` of a call made
    /// in the home (no project, known), where an unknown project may be anything.
    fn names_nothing(self, context: &Context) -> bool {
        self == Anchor::Project && !context.project_unknown()
    }

    /// The directories this anchor stands for in `context`; empty when unknown. A small
    /// array, not a vector: this runs for every pattern tried on every file.
    fn directories(self, context: &Context) -> Directories<'_> {
        Directories(match self {
            Anchor::Project => [context.project(), None, None],
            Anchor::Home => [Some(context.home_or_tilde()), None, None],
            Anchor::Tmp => context.temp_dirs(),
        })
    }
}

/// The directories an anchor stands for: at most three.
#[derive(Clone, Copy)]
struct Directories<'a>([Option<&'a str>; 3]);

impl<'a> Directories<'a> {
    fn is_empty(self) -> bool {
        self.0.iter().all(Option::is_none)
    }

    fn iter(self) -> impl Iterator<Item = &'a str> {
        self.0.into_iter().flatten()
    }
}

/// A path argument as every pattern sees it: normalised as written and, when the context
/// allows, resolved to where it points (see [`Context::resolve`]).
#[derive(Debug, Clone)]
pub struct PathValue {
    lexical: String,
    resolved: Option<String>,
}

impl PathValue {
    /// `value` normalised and resolved, or `None` when it cannot be normalised.
    pub fn new(value: &str, context: &Context) -> Option<PathValue> {
        let value = &*context.native(value);
        let lexical = normalize(value)?;
        // An absolute value resolves to its own normal form: no second pass over it.
        let resolved = if is_absolute(value) {
            Some(lexical.clone())
        } else {
            context.resolve(value)
        };
        Some(PathValue { lexical, resolved })
    }

    /// Whether the value is a Windows path, as written or where it points.
    fn is_windows(&self) -> bool {
        is_windows(&self.lexical) || self.resolved.as_deref().is_some_and(is_windows)
    }
}

/// One compiled `path` glob, matched against normalised paths.
#[derive(Debug, Clone)]
pub struct PathPattern {
    /// The pattern after normalisation, as it is matched.
    normalized: String,
    /// Where it starts, when it names an anchor; the globs then apply to the rest of the
    /// path below the anchor's directory (`src/main.rs` of `{project}/src/main.rs`).
    anchor: Option<Anchor>,
    /// The glob itself: `*` and `?` stay within one segment, `**` spans segments. For an
    /// anchored pattern that is the anchor alone (`{home}`), `None`: only the directory
    /// itself matches.
    glob: Option<GlobMatcher>,
    /// For a pattern ending in `/**`, the directory itself: `/srv/app/**` names the tree
    /// rooted at `/srv/app`, and a rule author expects the root to be part of it.
    root: Option<GlobMatcher>,
    /// The pattern is `<something>/**` (or an anchor and `**`): everything below a path it
    /// matches matches too.
    tree: bool,
    /// Written with `~` rather than `{home}`: as before anchors existed, an absolute path
    /// is simply not under `~` when the home is unknown.
    tilde: bool,
    /// Written with a trailing `/` (`{home}/*/`): it names folders only, so a file that
    /// can only be a file ([`Extent::File`], [`Extent::Files`]) never matches it.
    folders: bool,
    /// Text every path `glob` matches contains (see [`needle`]): a path without it is
    /// rejected before the glob runs. Lists of a hundred credential globs are tried on
    /// every file a command names, and most paths hold none of their names.
    needle: Option<String>,
    /// The glob's answer without running it, for the shapes that are plain text (see
    /// [`Literal`]); `None` runs the glob.
    literal: Option<Literal>,
    /// `root` when it is plain text: compared, not run.
    root_text: Option<String>,
    /// [`PathPattern::folded`], compiled the first time a Windows path needs it.
    folded: std::sync::OnceLock<Option<Box<PathPattern>>>,
    /// The names a last segment `!(…)` excepts: `glob` then matches it as `*`.
    except: Option<except::Except>,
}

impl PathPattern {
    /// Normalises `pattern` like a path (so `/srv/app/./**` and `/srv//app/**` are the same
    /// rule) and compiles it as a glob. A pattern may start with an anchor: `{project}`,
    /// `{home}` (or `~`) or `{tmp}`.
    pub fn compile(pattern: &str) -> Result<PathPattern, String> {
        if pattern.is_empty() || pattern.contains('\0') {
            return Err(format!(
                "path pattern {pattern:?} is empty or holds a NUL byte"
            ));
        }
        // `{home}/*/`: folders only. `/` alone is the root, and `x//` is not a form.
        let (pattern, folders) = match pattern.strip_suffix('/') {
            Some(rest) if !rest.is_empty() && !rest.ends_with('/') => (rest, true),
            _ => (pattern, false),
        };
        if let Some((anchor, rest)) =
            Anchor::parse(pattern).map_err(|error| format!("path pattern {pattern:?}: {error}"))?
        {
            let rest = if rest.is_empty() {
                String::new()
            } else {
                match normalize(rest) {
                    Some(rest) if rest == "." => String::new(),
                    Some(rest) if !rest.starts_with("..") => rest,
                    _ => return Err(format!("path pattern {pattern:?} climbs above its anchor")),
                }
            };
            let prefix = match anchor {
                Anchor::Project => "{project}",
                Anchor::Home => "{home}",
                Anchor::Tmp => "{tmp}",
            };
            let normalized = if rest.is_empty() {
                prefix.to_string()
            } else {
                format!("{prefix}/{rest}")
            };
            let (rest, except) = except::split(&rest, pattern)?;
            let tree = rest == "**" || rest.ends_with("/**");
            let glob = (!rest.is_empty())
                .then(|| compile_glob(&rest, pattern))
                .transpose()?;
            let root = match rest.strip_suffix("**") {
                Some("") => None,
                Some(directory) => Some(compile_glob(
                    directory.strip_suffix('/').unwrap_or(directory),
                    pattern,
                )?),
                None => None,
            };
            return Ok(PathPattern {
                normalized,
                anchor: Some(anchor),
                glob,
                root,
                tree,
                tilde: pattern.starts_with('~'),
                folders,
                needle: needle(&rest),
                literal: Literal::of(&rest, false),
                root_text: root_text(&rest),
                folded: std::sync::OnceLock::new(),
                except,
            });
        }
        let normalized = normalize(pattern).ok_or_else(|| {
            format!("path pattern {pattern:?} is empty, holds a NUL byte or climbs above `~`")
        })?;
        let (globbed, except) = except::split(&normalized, pattern)?;
        let glob = compile_glob(&globbed, pattern)?;
        let root = match globbed.strip_suffix("/**") {
            // `/**` is every absolute path; its root is `/`.
            Some("") => Some(compile_glob("/", pattern)?),
            Some(directory) => Some(compile_glob(directory, pattern)?),
            None => None,
        };
        Ok(PathPattern {
            tree: globbed.ends_with("/**") || globbed == "**",
            needle: needle(&globbed),
            anchor: None,
            glob: Some(glob),
            root,
            tilde: false,
            folders,
            literal: Literal::of(&globbed, true),
            root_text: root_text(&globbed),
            normalized,
            folded: std::sync::OnceLock::new(),
            except,
        })
    }

    /// This pattern in lower case, which is how a Windows path is matched (its case is
    /// folded: `CLAUDE.md` and `claude.md` are one file there); `None` when the pattern
    /// has no upper case and so is its own folded form.
    pub fn folded(&self) -> Option<&PathPattern> {
        self.folded
            .get_or_init(|| {
                self.normalized
                    .bytes()
                    .any(|b| b.is_ascii_uppercase())
                    .then(|| PathPattern::compile(&self.normalized.to_lowercase()).ok())
                    .flatten()
                    .map(|folded| {
                        Box::new(PathPattern {
                            folders: self.folders,
                            ..folded
                        })
                    })
            })
            .as_deref()
    }

    /// The pattern as it is matched (normalised).
    pub fn as_str(&self) -> &str {
        &self.normalized
    }

    /// Whether the pattern names an anchor.
    pub fn anchored(&self) -> bool {
        self.anchor.is_some()
    }

    /// Whether an already normalised path (see [`normalize`]) matches an unanchored
    /// pattern; an anchored one never matches here (use [`PathPattern::matches`]).
    pub fn is_match(&self, normalized_path: &str) -> bool {
        self.anchor.is_none() && self.is_match_rest(normalized_path)
    }

    fn is_match_rest(&self, rest: &str) -> bool {
        match &self.glob {
            None => rest.is_empty(),
            Some(glob) => {
                (!rest.is_empty()
                    && match &self.literal {
                        Some(literal) => literal.matches(rest),
                        None => {
                            self.needle
                                .as_deref()
                                .is_none_or(|needle| rest.contains(needle))
                                && glob.is_match(rest)
                        }
                    }
                    && !self
                        .except
                        .as_ref()
                        .is_some_and(|except| except.excepts(rest)))
                    || match &self.root_text {
                        Some(directory) => rest == directory,
                        None => self.root.as_ref().is_some_and(|root| root.is_match(rest)),
                    }
                    || (rest.is_empty()
                        && self.tree
                        && self.root.is_none()
                        && self.anchor.is_some())
            }
        }
    }

    /// Whether the path `value` matches, in `context`: `Some(answer)`, or `None` when that
    /// cannot be known (an anchor the context does not resolve, a relative path without an
    /// absolute working directory, or a value that cannot be normalised).
    pub fn matches(&self, value: &str, context: &Context) -> Option<bool> {
        self.matches_value(&PathValue::new(value, context)?, context)
    }

    /// [`PathPattern::matches`] for a value already normalised and resolved.
    pub fn matches_value(&self, value: &PathValue, context: &Context) -> Option<bool> {
        let lexical = value.lexical.as_str();
        let resolved = value.resolved.as_deref();
        let Some(anchor) = self.anchor else {
            if self.normalized.starts_with('/') {
                // An absolute pattern: judged by where the value points; a value that
                // cannot be resolved is judged as written (a relative path is not under `/`).
                return Some(self.is_match_rest(resolved.unwrap_or(lexical)));
            }
            // A relative pattern (`docs/**`, `**/.env`) is about the value as written and,
            // when it resolves, also about where it points.
            return Some(
                self.is_match_rest(lexical)
                    || resolved.is_some_and(|resolved| self.is_match_rest(resolved)),
            );
        };
        // `~/…` against a `{home}` pattern is decidable without knowing the home.
        if anchor == Anchor::Home && (lexical == "~" || lexical.starts_with("~/")) {
            let rest = lexical
                .strip_prefix('~')
                .unwrap_or("")
                .trim_start_matches('/');
            return Some(self.is_match_rest(rest));
        }
        let directories = anchor.directories(context);
        if directories.is_empty() && anchor.names_nothing(context) {
            return Some(false);
        }
        let (Some(resolved), false) = (resolved, directories.is_empty()) else {
            return if self.tilde { Some(false) } else { None };
        };
        Some(directories.iter().any(|directory| {
            below(resolved, directory).is_some_and(|rest| self.is_match_rest(rest))
        }))
    }

    /// Like [`PathPattern::matches`] for an absolute, normalised path that stands for
    /// what `extent` says: itself or, for a tree, everything below it too (a glob such as
    /// `build/*`): an allow needs the whole tree covered, a deny or ask any part of it.
    /// What can only be files never matches a folders-only pattern. Files below a folder
    /// match a pattern naming the folder itself: a glob such as `~/*` deletes what the
    /// folder holds.
    pub fn matches_resolved(
        &self,
        path: &str,
        extent: Extent,
        side: Side,
        context: &Context,
    ) -> Option<bool> {
        if self.folders && matches!(extent, Extent::File | Extent::Files) {
            return Some(false);
        }
        let test = |candidate: &str| -> Option<bool> {
            match self.anchor {
                None => Some(self.is_match_rest(candidate)),
                Some(anchor) => {
                    let directories = anchor.directories(context);
                    if directories.is_empty() {
                        return anchor.names_nothing(context).then_some(false);
                    }
                    Some(directories.iter().any(|directory| {
                        below(candidate, directory).is_some_and(|rest| self.is_match_rest(rest))
                    }))
                }
            }
        };
        if !extent.tree() {
            return test(path);
        }
        match side {
            Side::Allow => Some(self.tree && test(path)?),
            Side::Restrict => {
                let child = if path == "/" {
                    "/\u{1}".to_string()
                } else {
                    format!("{path}/\u{1}")
                };
                Some(test(path)? || test(&child)? || self.starts_below(path, context))
            }
        }
    }

    /// Whether the pattern's literal beginning lies strictly below `directory` (so a glob
    /// expanding inside `directory` may reach what the pattern names).
    fn starts_below(&self, directory: &str, context: &Context) -> bool {
        // Compared piece by piece, without building the strings: this runs for every
        // tree-shaped pattern tried against every directory a command names.
        let literal = |text: &'_ str| -> usize {
            let wild = text.find(['*', '?', '[', '{']).unwrap_or(text.len());
            text.find("!(").map_or(wild, |except| except.min(wild))
        };
        let (prefix, slash) = if directory == "/" {
            ("/", "")
        } else {
            (directory, "/")
        };
        match self.anchor {
            None => {
                let base = &self.normalized[..literal(&self.normalized)];
                concat_starts_with((base, ""), (prefix, slash))
            }
            Some(anchor) => {
                let rest = self.normalized.split_once('}').map_or("", |(_, rest)| rest);
                let rest = &rest[..literal(rest)];
                anchor
                    .directories(context)
                    .iter()
                    .any(|base| concat_starts_with((base, rest), (prefix, slash)))
            }
        }
    }
}

/// The part of `path` below `directory` (`""` for the directory itself), or `None` when
/// `path` is not inside it. Both are absolute and normalised.
pub fn below<'p>(path: &'p str, directory: &str) -> Option<&'p str> {
    if directory == "/" {
        return path.strip_prefix('/');
    }
    let rest = path.strip_prefix(directory)?;
    if rest.is_empty() {
        Some("")
    } else {
        rest.strip_prefix('/')
    }
}

fn compile_glob(glob: &str, pattern: &str) -> Result<GlobMatcher, String> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|error| format!("invalid path pattern {pattern:?}: {error}"))
}

/// Whether the text `a.0 + a.1` starts with the text `b.0 + b.1`.
fn concat_starts_with(a: (&str, &str), b: (&str, &str)) -> bool {
    let needed = b.0.len() + b.1.len();
    a.0.len() + a.1.len() >= needed
        && a.0
            .bytes()
            .chain(a.1.bytes())
            .zip(b.0.bytes().chain(b.1.bytes()))
            .all(|(x, y)| x == y)
}

/// Whether the path `value` matches any of `patterns` in `context`.
///
/// A value that cannot be normalised, or that an anchored pattern cannot place (no `cwd`,
/// no project, no home), never satisfies an allow rule and always satisfies a deny or ask
/// rule (fail closed, see [`Side`]).
pub fn path_matches(value: &str, patterns: &[PathPattern], side: Side, context: &Context) -> bool {
    // Normalised and resolved once for the whole list: both allocate, and a rule's list
    // may hold dozens of patterns.
    let Some(value) = PathValue::new(value, context) else {
        return side == Side::Restrict;
    };
    let answer = |pattern: &PathPattern| match pattern.matches_value(&value, context) {
        Some(answer) => answer,
        None => side == Side::Restrict,
    };
    patterns.iter().any(answer)
        || (side == Side::Restrict
            && value.is_windows()
            && patterns.iter().filter_map(PathPattern::folded).any(answer))
}

#[cfg(test)]
#[allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]
mod tests;
