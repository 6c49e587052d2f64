//! The `path` matcher (DESIGN.md §4.1): globs over lexically normalised paths.
//!
//! A tool argument such as `/srv/app/../etc/passwd` must be judged by where it points, not
//! by how it is spelled, or `allow /srv/app/**` would let an agent walk out of the tree.
//! Normalisation is purely lexical: the gateway may not run on the machine (or in the
//! container) where the tool runs, so it cannot ask the filesystem, and symlinks are not
//! resolved. Whatever cannot be known lexically (`~/..`, a NUL byte, an empty path) is
//! `None`, which the matcher turns into the strict answer for its [`Side`].

use globset::{GlobBuilder, GlobMatcher};

use super::Side;

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
    if path.is_empty() || path.contains('\0') {
        return None;
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

/// One compiled `path` glob, matched against normalised paths.
#[derive(Debug, Clone)]
pub struct PathPattern {
    /// The pattern after normalisation, as it is matched.
    normalized: String,
    /// The glob itself: `*` and `?` stay within one segment, `**` spans segments.
    glob: GlobMatcher,
    /// For a pattern ending in `/**`, the directory itself: `/srv/app/**` names the tree
    /// rooted at `/srv/app`, and a rule author expects the root to be part of it.
    root: Option<GlobMatcher>,
}

impl PathPattern {
    /// Normalises `pattern` like a path (so `/srv/app/./**` and `/srv//app/**` are the same
    /// rule) and compiles it as a glob.
    pub fn compile(pattern: &str) -> Result<PathPattern, String> {
        let normalized = normalize(pattern).ok_or_else(|| {
            format!("path pattern {pattern:?} is empty, holds a NUL byte or climbs above `~`")
        })?;
        let glob = compile_glob(&normalized, pattern)?;
        let root = match normalized.strip_suffix("/**") {
            // `/**` is every absolute path; its root is `/`.
            Some("") => Some(compile_glob("/", pattern)?),
            Some(directory) => Some(compile_glob(directory, pattern)?),
            None => None,
        };
        Ok(PathPattern {
            normalized,
            glob,
            root,
        })
    }

    /// The pattern as it is matched (normalised).
    pub fn as_str(&self) -> &str {
        &self.normalized
    }

    /// Whether an already normalised path (see [`normalize`]) matches.
    pub fn is_match(&self, normalized_path: &str) -> bool {
        self.glob.is_match(normalized_path)
            || self
                .root
                .as_ref()
                .is_some_and(|root| root.is_match(normalized_path))
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

/// Whether the path `value` matches any of `patterns`.
///
/// A value that cannot be normalised never satisfies an allow rule and always satisfies a
/// deny or ask rule (fail closed, see [`Side`]).
pub fn path_matches(value: &str, patterns: &[PathPattern], side: Side) -> bool {
    match normalize(value) {
        Some(path) => patterns.iter().any(|pattern| pattern.is_match(&path)),
        None => side == Side::Restrict,
    }
}

#[cfg(test)]
#[allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_normalize(cases: &[(&str, Option<&str>)]) {
        let failures: Vec<String> = cases
            .iter()
            .filter(|(input, expected)| normalize(input).as_deref() != *expected)
            .map(|(input, expected)| {
                format!(
                    "normalize({input:?}) = {:?}, expected {expected:?}",
                    normalize(input)
                )
            })
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// Each case: (value, expected match) against `patterns` on `side`.
    #[track_caller]
    fn check(patterns: &[&str], side: Side, cases: &[(&str, bool)]) {
        let compiled: Vec<PathPattern> = patterns
            .iter()
            .map(|pattern| PathPattern::compile(pattern))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|error| panic!("{error}"));
        let failures: Vec<String> = cases
            .iter()
            .filter(|(value, expected)| path_matches(value, &compiled, side) != *expected)
            .map(|(value, expected)| {
                format!("{side:?} {patterns:?} on {value:?}: expected {expected}")
            })
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn normalizes_lexically() {
        check_normalize(&[
            ("/", Some("/")),
            ("//", Some("/")),
            ("/etc/passwd", Some("/etc/passwd")),
            ("/etc//passwd", Some("/etc/passwd")),
            ("/etc/./passwd", Some("/etc/passwd")),
            ("/srv/app/", Some("/srv/app")),
            ("/srv/app/../etc/passwd", Some("/srv/etc/passwd")),
            ("/srv/app/../../etc/passwd", Some("/etc/passwd")),
            ("/../etc", Some("/etc")),
            ("/../../..", Some("/")),
            ("/a/b/c/../../d", Some("/a/d")),
            ("a/b", Some("a/b")),
            ("./a", Some("a")),
            (".", Some(".")),
            ("a/..", Some(".")),
            ("a/../../x", Some("../x")),
            ("../../x", Some("../../x")),
            ("../a/../x", Some("../x")),
            ("~", Some("~")),
            ("~/", Some("~")),
            ("~/a/../b", Some("~/b")),
            ("~/.ssh/./id_ed25519", Some("~/.ssh/id_ed25519")),
            ("~/a/../..", None),
            ("~/..", None),
            ("~bob/x/..", Some("~bob")),
            ("~bob/..", None),
            ("", None),
            ("/etc/passwd\0.txt", None),
            // A file literally named `...` is an ordinary segment.
            ("/a/.../b", Some("/a/.../b")),
        ]);
    }

    #[test]
    fn allow_needs_the_normalised_path_inside_the_tree() {
        check(
            &["/srv/app/**"],
            Side::Allow,
            &[
                ("/srv/app", true),
                ("/srv/app/", true),
                ("/srv/app/x", true),
                ("/srv/app/x/y/z.txt", true),
                ("/srv/app/./x", true),
                ("/srv/app/x/../y", true),
                ("/srv//app//x", true),
                ("/srv/app/../etc/passwd", false),
                ("/srv/app/x/../../etc", false),
                ("/srv/application", false),
                ("/srv/app.bak/x", false),
                ("/srv", false),
                ("srv/app/x", false),
                ("", false),
                ("/srv/app/\0", false),
            ],
        );
    }

    #[test]
    fn restrict_sees_through_traversal_and_fails_closed() {
        check(
            &["/etc/**", "~/.ssh/**"],
            Side::Restrict,
            &[
                ("/etc/passwd", true),
                ("/etc", true),
                ("/srv/app/../../etc/passwd", true),
                ("/srv/app/../../../../etc/shadow", true),
                // One `..` only leaves `app`: this is `/srv/etc/passwd`.
                ("/srv/app/../etc/passwd", false),
                ("//etc//passwd", true),
                ("/etcetera/x", false),
                ("/srv/etc/passwd", false),
                ("~/.ssh/id_ed25519", true),
                ("~/x/../.ssh/config", true),
                ("~/.sshx", false),
                // Unknowable values count as a match for deny and ask rules.
                ("~/../root/.ssh/id_rsa", true),
                ("", true),
                ("/tmp/a\0b", true),
            ],
        );
    }

    #[test]
    fn single_stars_stay_within_a_segment() {
        check(
            &["/tmp/*.txt", "/var/log/?.log", "/data/**/secret"],
            Side::Allow,
            &[
                ("/tmp/a.txt", true),
                ("/tmp/a/b.txt", false),
                ("/tmp/.txt", true),
                ("/var/log/a.log", true),
                ("/var/log/ab.log", false),
                ("/data/secret", true),
                ("/data/a/b/secret", true),
                ("/data/a/b/secret/x", false),
            ],
        );
    }

    #[test]
    fn home_and_relative_patterns() {
        check(
            &["~/projects/**", "src/*.rs"],
            Side::Allow,
            &[
                ("~/projects", true),
                ("~/projects/a/b", true),
                ("~/projects/../.ssh/id_rsa", false),
                ("~/../bob/projects/x", false),
                ("/home/me/projects/x", false),
                ("src/lib.rs", true),
                ("./src/lib.rs", true),
                ("src/../src/lib.rs", true),
                ("src/a/lib.rs", false),
                ("../src/lib.rs", false),
            ],
        );
    }

    #[test]
    fn patterns_are_normalised_and_validated() {
        let normalized =
            |pattern: &str| PathPattern::compile(pattern).map(|p| p.as_str().to_string());
        assert_eq!(normalized("/srv//app/./**").as_deref(), Ok("/srv/app/**"));
        assert_eq!(normalized("/srv/x/../app/**").as_deref(), Ok("/srv/app/**"));
        assert_eq!(normalized("~/a/").as_deref(), Ok("~/a"));
        for bad in ["", "~/../x", "/tmp/[a", "/a\0"] {
            let error = PathPattern::compile(bad).err();
            assert!(error.is_some(), "{bad:?} should be rejected");
        }
        // `/**` covers every absolute path, including `/` itself.
        check(
            &["/**"],
            Side::Allow,
            &[("/", true), ("/etc/passwd", true), ("etc", false)],
        );
        // No pattern: nothing matches, but an unknowable value still restricts.
        check(&[], Side::Allow, &[("/etc", false)]);
        check(&[], Side::Restrict, &[("/etc", false), ("~/..", true)]);
    }
}
