//! A list of path patterns indexed by what a matching path's last segment must be.
//!
//! The classifier tries every file a command names against lists of a hundred patterns or
//! more (credential material, shell start-up files) and the `class` matcher tries it again
//! for an allow. Most patterns end in a literal file name (`{home}/.aws/credentials`,
//! `**/id_rsa`) or an extension (`**/*.pem`): a path can only match such a pattern when
//! its own last segment is that name or has that extension. So each list keeps its
//! patterns by name and by extension, and a path is tried against the few patterns filed
//! under its own name and extension plus the ones that could match any name (ending in
//! `**`, a wildcard mixed with text, an anchor alone).
//!
//! The answers are exactly those of trying every pattern in turn:
//! - a glob standing for a whole tree (`tree`) is tried against every pattern, since
//!   anything below it may match;
//! - a pattern anchored on `{project}` in a call whose project is unknown answers "cannot
//!   be known" whatever the path; when that answer counts as a match (`unknown`), every
//!   pattern is tried.

use std::collections::HashMap;

use super::{Anchor, Extent, PathPattern};
use crate::context::Context;
use crate::matcher::Side;

/// Path patterns with an index by the last segment of the paths they can match.
#[derive(Debug, Clone, Default)]
pub struct PathList {
    patterns: Vec<PathPattern>,
    /// Patterns whose last segment is plain text: a matching path ends in that segment.
    by_name: HashMap<String, Vec<usize>>,
    /// Patterns whose last segment is `*.ext`: a matching path's last segment ends in
    /// `.ext`; filed under the text after the last dot.
    by_extension: HashMap<String, Vec<usize>>,
    /// Patterns that may match a path of any name, but only below a plain first segment
    /// after their root: `/etc/cron*` (segment `etc` of an absolute path),
    /// `{home}/.ssh/*_key` (segment `.ssh` below the home). Filed by root (absolute,
    /// `{project}`, `{home}`, `{tmp}`), then by that segment.
    placed: [HashMap<String, Vec<usize>>; 4],
    /// Patterns that may match any path.
    other: Vec<usize>,
    /// Whether a pattern is anchored on `{project}` (unknowable without a project).
    project_anchored: bool,
}

impl PathList {
    /// Indexes `patterns`.
    pub fn new(patterns: Vec<PathPattern>) -> PathList {
        let mut list = PathList {
            project_anchored: patterns
                .iter()
                .any(|pattern| pattern.anchor == Some(Anchor::Project)),
            ..PathList::default()
        };
        for (index, pattern) in patterns.iter().enumerate() {
            match last_segment_key(pattern) {
                Key::Name(name) => list.by_name.entry(name).or_default().push(index),
                Key::Extension(extension) => {
                    list.by_extension.entry(extension).or_default().push(index)
                }
                Key::Any => match first_segment(pattern) {
                    Some((root, segment)) => list.placed[root]
                        .entry(segment.to_string())
                        .or_default()
                        .push(index),
                    None => list.other.push(index),
                },
            }
        }
        list.patterns = patterns;
        list
    }

    /// The patterns, in the order given.
    pub fn patterns(&self) -> &[PathPattern] {
        &self.patterns
    }

    /// Whether every pattern can be placed in `context` (none is anchored on an unknown
    /// project), so that no answer depends on how "cannot be known" counts.
    pub fn resolvable(&self, context: &Context) -> bool {
        !(self.project_anchored && context.project_unknown())
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Whether any pattern matches the absolute, normalised `path` (standing for what
    /// `extent` says) as [`PathPattern::matches_resolved`] decides; a pattern whose
    /// answer cannot be known counts as `unknown`.
    pub fn any_resolved(
        &self,
        path: &str,
        extent: Extent,
        side: Side,
        context: &Context,
        unknown: bool,
    ) -> bool {
        let test = |pattern: &PathPattern| {
            pattern
                .matches_resolved(path, extent, side, context)
                .unwrap_or(unknown)
        };
        // A Windows path is in lower case: a deny or ask pattern written with upper case
        // (`**/CLAUDE.md`) is tried folded too.
        if side == Side::Restrict
            && super::is_windows(path)
            && self
                .patterns
                .iter()
                .filter_map(PathPattern::folded)
                .any(test)
        {
            return true;
        }
        if extent.tree() || (unknown && self.project_anchored && context.project_unknown()) {
            return self.patterns.iter().any(test);
        }
        let name = path.rsplit('/').next().unwrap_or(path);
        let named = self.by_name.get(name).map_or(&[][..], Vec::as_slice);
        let extended = name
            .rsplit_once('.')
            .and_then(|(_, extension)| self.by_extension.get(extension))
            .map_or(&[][..], Vec::as_slice);
        // Where the path sits below each root, by its first segment there: at most one
        // absolute place, one below the project, one below the home and three below `{tmp}`.
        let mut places: [Option<(usize, &str)>; 6] = [None; 6];
        let mut count = 0;
        if !self.placed[ABSOLUTE].is_empty() {
            if let Some(rest) = path.strip_prefix('/') {
                put(&mut places, &mut count, ABSOLUTE, first_of(rest));
            }
        }
        for (root, anchor) in [
            (PROJECT, Anchor::Project),
            (HOME, Anchor::Home),
            (TMP, Anchor::Tmp),
        ] {
            if self.placed[root].is_empty() {
                continue;
            }
            for directory in anchor.directories(context).iter() {
                if let Some(rest) = super::below(path, directory) {
                    put(&mut places, &mut count, root, first_of(rest));
                }
            }
        }
        let placed = places.iter().flatten().flat_map(|&(root, segment)| {
            self.placed
                .get(root)
                .and_then(|places| places.get(segment))
                .map_or(&[][..], Vec::as_slice)
        });
        named
            .iter()
            .chain(extended)
            .chain(placed)
            .chain(&self.other)
            .filter_map(|&index| self.patterns.get(index))
            .any(test)
    }
}

/// Records a place in the next free slot.
fn put<'p>(
    places: &mut [Option<(usize, &'p str)>],
    count: &mut usize,
    root: usize,
    segment: &'p str,
) {
    if let Some(slot) = places.get_mut(*count) {
        *slot = Some((root, segment));
        *count += 1;
    }
}

/// The first segment of a relative path.
fn first_of(rest: &str) -> &str {
    rest.split('/').next().unwrap_or(rest)
}

const ABSOLUTE: usize = 0;
const PROJECT: usize = 1;
const HOME: usize = 2;
const TMP: usize = 3;

/// The root a pattern starts from and its first segment below it, when that segment is
/// plain text: a path the pattern matches has that segment first below the same root (the
/// glob begins with it, and so does the directory of a `dir/**` pattern).
fn first_segment(pattern: &PathPattern) -> Option<(usize, &str)> {
    let text = pattern.as_str();
    let (root, rest) = match pattern.anchor {
        None => (ABSOLUTE, text.strip_prefix('/')?),
        Some(anchor) => (
            match anchor {
                Anchor::Project => PROJECT,
                Anchor::Home => HOME,
                Anchor::Tmp => TMP,
            },
            text.split_once("}/")?.1,
        ),
    };
    let segment = rest.split('/').next()?;
    (!segment.is_empty() && !segment.contains(['*', '?', '[', ']', '{', '}', '\\', ',']))
        .then_some((root, segment))
}

/// What a pattern's last segment says about the last segment of the paths it matches.
enum Key {
    /// Exactly this text.
    Name(String),
    /// Ends in `.` and this text.
    Extension(String),
    /// Nothing useful.
    Any,
}

fn last_segment_key(pattern: &PathPattern) -> Key {
    // Only the glob decides a match of a pattern with text after its anchor (`root` and
    // the anchor-alone case belong to patterns ending in `**` or in the anchor itself).
    let Some((_, last)) = pattern.as_str().rsplit_once('/') else {
        return match pattern.anchor {
            // An anchor alone (`{home}`) matches only its directory, of any name.
            Some(_) => Key::Any,
            // A relative pattern of one segment (`id_rsa`, `*.pem`).
            None => key_of(pattern.as_str()),
        };
    };
    key_of(last)
}

fn key_of(segment: &str) -> Key {
    let special = |text: &str| text.contains(['*', '?', '[', ']', '{', '}', '\\', '(']);
    if segment.is_empty() {
        return Key::Any;
    }
    if !special(segment) {
        return Key::Name(segment.to_string());
    }
    if let Some(suffix) = segment.strip_prefix("*.") {
        if !suffix.is_empty() && !special(suffix) {
            let extension = suffix.rsplit('.').next().unwrap_or(suffix);
            if !extension.is_empty() {
                return Key::Extension(extension.to_string());
            }
        }
    }
    Key::Any
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::classes::ClassTable;

    /// The index answers exactly as trying every pattern does, on the shipped lists and a
    /// list of every kind of pattern, for paths that hit and miss each kind of key.
    #[test]
    fn the_index_answers_as_every_pattern_tried_in_turn() {
        let table = ClassTable::built_in().unwrap();
        let mixed = PathList::new(
            [
                "{project}/.git/**",
                "**/.env",
                "**/*.pem",
                "{home}/.ssh/*_key",
                "{home}",
                "{project}",
                "/etc/**",
                "id_rsa",
                "*.key",
                "**/secrets.yml",
                "/",
                "{tmp}/**",
                "{home}/.config/*/token.json",
                "**/*.tar.gz",
            ]
            .iter()
            .map(|pattern| PathPattern::compile(pattern).unwrap())
            .collect(),
        );
        let paths = [
            "/",
            "/etc",
            "/etc/passwd",
            "/home/dev",
            "/home/dev/.ssh/id_rsa",
            "/home/dev/.ssh/host_key",
            "/home/dev/.aws/credentials",
            "/home/dev/app",
            "/home/dev/app/.env",
            "/home/dev/app/.git/config",
            "/home/dev/app/src/main.rs",
            "/home/dev/app/cert.pem",
            "/home/dev/app/a.tar.gz",
            "/home/dev/app/b.gz",
            "/home/dev/app/config/secrets.yml",
            "/tmp/x",
            "/home/dev/.config/gh/token.json",
            "/home/dev/.bashrc",
            "/home/dev/app/.pem",
            "/home/dev/app/key",
        ];
        let contexts = [
            Context::new(
                Some("/home/dev/app"),
                Some("/home/dev/app"),
                Some("/home/dev"),
            ),
            Context::new(None, None, Some("/home/dev")),
            Context::new(None, None, None),
        ];
        for list in [
            &table.credentials,
            &table.credential_dirs,
            &table.startup,
            &mixed,
        ] {
            for context in &contexts {
                for path in paths {
                    for extent in [Extent::Entry, Extent::Tree, Extent::File, Extent::Files] {
                        for side in [Side::Allow, Side::Restrict] {
                            for unknown in [false, true] {
                                let every = list.patterns().iter().any(|pattern| {
                                    pattern
                                        .matches_resolved(path, extent, side, context)
                                        .unwrap_or(unknown)
                                });
                                assert_eq!(
                                    list.any_resolved(path, extent, side, context, unknown),
                                    every,
                                    "{path} {extent:?} unknown={unknown} {context:?}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn patterns_are_filed_by_name_and_extension() {
        let key = |pattern: &str| last_segment_key(&PathPattern::compile(pattern).unwrap());
        assert!(matches!(key("{home}/.aws/credentials"), Key::Name(name) if name == "credentials"));
        assert!(matches!(key("**/*.tar.gz"), Key::Extension(ext) if ext == "gz"));
        assert!(matches!(key("{home}/.ssh/*_key"), Key::Any));
        assert!(matches!(key("{home}"), Key::Any));
        assert!(matches!(key("/etc/**"), Key::Any));
        assert!(matches!(key("**/.env.{a,b}"), Key::Any));
    }
}
