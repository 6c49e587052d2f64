//! The `class` matcher (DESIGN.md §11.3): `command = { class = ["read_only", "build"],
//! paths = ["{project}/**"] }`.
//!
//! The command line is judged once per evaluation ([`classify`]) into segments, each with
//! its classes and the files it names. Then, as for `prefix`:
//! - **allow**: every segment's classes are among the rule's (and none is `unknown`),
//!   every file it names lies outside credential material and, when `paths` is given,
//!   every file it changes lies under one of them; a file nobody can place fails;
//! - **deny/ask**: one segment with one of the rule's classes is enough, and with `paths`
//!   it must change a file under them, or one nobody can place; a rule that names
//!   `read_only` also counts the placed files a segment reads.

use std::sync::Arc;

use super::path::{PathList, PathPattern};
use super::shell::classify::{classify, CommandFacts, Role};
use super::Side;
use crate::classes::{Class, ClassSet, ClassTable};
use crate::context::Context;

/// One compiled `class` matcher.
#[derive(Debug, Clone)]
pub struct ClassMatcher {
    classes: ClassSet,
    /// Boxed: the index is large, and a matcher is one variant of a small enum.
    paths: Box<PathList>,
    table: Arc<ClassTable>,
}

impl ClassMatcher {
    /// Compiles the class names and the optional `paths`.
    pub fn compile(
        names: &[String],
        paths: Option<&[String]>,
        table: Arc<ClassTable>,
    ) -> Result<ClassMatcher, String> {
        if names.is_empty() {
            return Err("`class` needs at least one class".into());
        }
        let mut classes = ClassSet::EMPTY;
        for name in names {
            let class = Class::from_name(name).ok_or_else(|| {
                format!("unknown class `{name}`; the classes are {}", Class::names())
            })?;
            classes.insert(class);
        }
        let paths = match paths {
            None => Box::default(),
            Some([]) => return Err("`paths` needs at least one pattern".into()),
            Some(patterns) => patterns
                .iter()
                .map(|pattern| {
                    PathPattern::compile(pattern).map_err(|e| format!("bad paths entry: {e}"))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(|patterns| Box::new(PathList::new(patterns)))?,
        };
        Ok(ClassMatcher {
            classes,
            paths,
            table,
        })
    }

    /// The class table the matcher judges with.
    pub fn table(&self) -> &Arc<ClassTable> {
        &self.table
    }

    /// The classes the rule names.
    pub fn classes(&self) -> ClassSet {
        self.classes
    }

    /// Whether the command line matches for a rule on `side`.
    pub fn matches(&self, command: &str, side: Side, context: &Context) -> bool {
        let table = Arc::as_ptr(&self.table) as usize;
        let facts =
            context.command_facts(command, table, || classify(command, &self.table, context));
        self.matches_facts(&facts, side, context)
    }

    /// Whether already judged facts match.
    pub fn matches_facts(&self, facts: &CommandFacts, side: Side, context: &Context) -> bool {
        if facts.segments.is_empty() {
            return false;
        }
        match side {
            Side::Allow => facts.segments.iter().all(|segment| {
                !segment.classes.is_empty()
                    && !segment.classes.contains(Class::Unknown)
                    && segment.classes.is_subset(self.classes)
                    && segment.files.iter().enumerate().all(|(index, file)| {
                        let Some(path) = &file.path else {
                            return false;
                        };
                        // One known file in a context where every pattern can be placed:
                        // both sides ask the same question, already answered by the
                        // classifier.
                        let known = (!file.tree && self.table.credentials.resolvable(context))
                            .then(|| segment.credential.get(index).copied())
                            .flatten();
                        let credential = known.unwrap_or_else(|| {
                            self.table.credentials.any_resolved(
                                path,
                                file.extent(),
                                Side::Restrict,
                                context,
                                true,
                            )
                        });
                        let placed = file.role == Role::Read
                            || self.paths.is_empty()
                            || self.paths.any_resolved(
                                path,
                                file.extent(),
                                Side::Allow,
                                context,
                                false,
                            );
                        !credential && placed
                    })
            }),
            Side::Restrict => facts.segments.iter().any(|segment| {
                // A rule about `read_only` commands reads its `paths` as files they read.
                let reads = self.classes.contains(Class::ReadOnly);
                segment.classes.intersects(self.classes)
                    && (self.paths.is_empty()
                        || segment
                            .files
                            .iter()
                            .filter(|file| {
                                file.role == Role::Change
                                    || (reads && file.role == Role::Read && file.path.is_some())
                            })
                            .any(|file| match &file.path {
                                None => true,
                                Some(path) => self.paths.any_resolved(
                                    path,
                                    file.extent(),
                                    Side::Restrict,
                                    context,
                                    true,
                                ),
                            }))
            }),
        }
    }
}

/// A command given as an argv, as one command line (each word single-quoted).
pub fn argv_command(argv: &[&str]) -> String {
    argv.iter()
        .map(|word| format!("'{}'", word.replace('\'', "'\\''")))
        .collect::<Vec<_>>()
        .join(" ")
}
