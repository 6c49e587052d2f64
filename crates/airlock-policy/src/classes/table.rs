//! The classification table: `classes.toml` parsed, plus a policy's additions.

use super::{Class, ClassSet, CLASSES_TOML};
use crate::matcher::path::{PathList, PathPattern};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, LazyLock};

/// How a command's operands name files (see `[operands]` in `classes.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperandMode {
    /// Files it reads, or, for a command that writes, deletes or changes permissions,
    /// files it changes.
    Default,
    None,
    Pattern,
    Copy,
    Find,
    Code,
    Script,
    Url,
    Dd,
    Cd,
}

impl OperandMode {
    fn from_name(name: &str) -> Option<OperandMode> {
        Some(match name {
            "none" => OperandMode::None,
            "pattern" => OperandMode::Pattern,
            "copy" => OperandMode::Copy,
            "find" => OperandMode::Find,
            "code" => OperandMode::Code,
            "script" => OperandMode::Script,
            "url" => OperandMode::Url,
            "dd" => OperandMode::Dd,
            "cd" => OperandMode::Cd,
            _ => return None,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Data {
    classes: BTreeMap<String, ClassData>,
    options: BTreeMap<String, Vec<String>>,
    clustered: ClusteredData,
    operands: BTreeMap<String, Vec<String>>,
    files: FilesData,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClassData {
    #[allow(dead_code)]
    description: String,
    commands: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClusteredData {
    commands: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FilesData {
    credentials: Vec<String>,
    credential_dirs: Vec<String>,
    credential_words: Vec<String>,
    startup: Vec<String>,
}

/// A command pattern: the name and the subcommand words after it.
#[derive(Debug, Clone)]
struct Entry {
    words: Vec<String>,
    classes: ClassSet,
}

/// An option that adds classes: the subcommand words before it and its own words.
#[derive(Debug, Clone)]
struct OptionEntry {
    subcommand: Vec<String>,
    option: Vec<String>,
    classes: ClassSet,
}

/// The classification in force for one policy.
#[derive(Debug, Clone)]
pub struct ClassTable {
    commands: HashMap<String, Vec<Entry>>,
    options: HashMap<String, Vec<OptionEntry>>,
    clustered: HashSet<String>,
    operands: HashMap<String, Vec<(Vec<String>, OperandMode)>>,
    pub(crate) credentials: PathList,
    pub(crate) credential_dirs: PathList,
    /// Lower-case.
    pub(crate) credential_words: Vec<String>,
    pub(crate) startup: PathList,
}

static BUILT_IN: LazyLock<Result<Arc<ClassTable>, String>> =
    LazyLock::new(|| ClassTable::parse(CLASSES_TOML).map(Arc::new));

impl ClassTable {
    /// The table shipped with airlock. An error only if the shipped data is broken, which
    /// a unit test rules out; callers fail closed on it.
    pub fn built_in() -> Result<Arc<ClassTable>, String> {
        BUILT_IN.clone()
    }

    fn parse(text: &str) -> Result<ClassTable, String> {
        let data: Data = toml::from_str(text).map_err(|error| error.to_string())?;
        let mut table = ClassTable {
            commands: HashMap::new(),
            options: HashMap::new(),
            clustered: data
                .clustered
                .commands
                .iter()
                .map(|command| command.to_string())
                .collect(),
            operands: HashMap::new(),
            credentials: compile_paths(&data.files.credentials)?,
            credential_dirs: compile_paths(&data.files.credential_dirs)?,
            credential_words: data
                .files
                .credential_words
                .iter()
                .map(|word| word.to_ascii_lowercase())
                .collect(),
            startup: compile_paths(&data.files.startup)?,
        };
        for (name, class) in &data.classes {
            let class_id =
                Class::from_name(name).ok_or_else(|| format!("unknown class `{name}`"))?;
            for command in &class.commands {
                table.add(class_id, command)?;
            }
        }
        for (pattern, classes) in &data.options {
            let words: Vec<&str> = pattern.split_whitespace().collect();
            let Some((name, rest)) = words.split_first() else {
                return Err("empty option entry".into());
            };
            let split = rest
                .iter()
                .position(|word| word.starts_with('-'))
                .ok_or_else(|| format!("option entry `{pattern}` names no option"))?;
            let mut set = ClassSet::EMPTY;
            for class in classes {
                set.insert(
                    Class::from_name(class).ok_or_else(|| format!("unknown class `{class}`"))?,
                );
            }
            table
                .options
                .entry((*name).to_string())
                .or_default()
                .push(OptionEntry {
                    subcommand: rest[..split].iter().map(|w| w.to_string()).collect(),
                    option: rest[split..].iter().map(|w| w.to_string()).collect(),
                    classes: set,
                });
        }
        for (mode, commands) in &data.operands {
            let mode = OperandMode::from_name(mode)
                .ok_or_else(|| format!("unknown operand mode `{mode}`"))?;
            for command in commands {
                let words: Vec<String> = command.split_whitespace().map(str::to_string).collect();
                let Some((name, rest)) = words.split_first() else {
                    return Err("empty operand entry".into());
                };
                table
                    .operands
                    .entry(name.clone())
                    .or_default()
                    .push((rest.to_vec(), mode));
            }
        }
        Ok(table)
    }

    /// Adds a command pattern (`jq`, `my-tool check`) to a class.
    pub fn add(&mut self, class: Class, pattern: &str) -> Result<(), String> {
        let words: Vec<String> = pattern.split_whitespace().map(str::to_string).collect();
        let Some((name, rest)) = words.split_first() else {
            return Err("empty command".into());
        };
        if name.contains('/') {
            return Err(format!(
                "`{pattern}`: name the command without a directory (`/bin/rm` is judged as `rm`)"
            ));
        }
        let entries = self.commands.entry(name.clone()).or_default();
        match entries.iter_mut().find(|entry| entry.words == rest) {
            Some(entry) => entry.classes.insert(class),
            None => entries.push(Entry {
                words: rest.to_vec(),
                classes: ClassSet::of(&[class]),
            }),
        }
        Ok(())
    }

    /// Whether `name` is listed at all.
    pub fn knows(&self, name: &str) -> bool {
        self.commands.contains_key(name)
    }

    /// The classes of the command `name` with `arguments`: the longest matching entry's
    /// (entries of the same length are united), and the number of argument words the
    /// entry's subcommand used. `None` when no entry matches.
    pub fn lookup(&self, name: &str, arguments: &[&str]) -> Option<(ClassSet, usize)> {
        let entries = self.commands.get(name)?;
        let mut best: Option<(usize, ClassSet, usize)> = None;
        for entry in entries {
            let Some(used) = match_subcommand(name, &entry.words, arguments) else {
                continue;
            };
            let length = entry.words.len();
            best = match best {
                Some((best_length, classes, best_used)) if best_length == length => {
                    let mut united = classes;
                    united.extend(entry.classes);
                    Some((length, united, best_used.max(used)))
                }
                Some(current) if current.0 > length => Some(current),
                _ => Some((length, entry.classes, used)),
            };
        }
        best.map(|(_, classes, used)| (classes, used))
    }

    /// The classes the options among `arguments` add.
    pub fn option_classes(&self, name: &str, arguments: &[&str]) -> ClassSet {
        let mut classes = ClassSet::EMPTY;
        let Some(entries) = self.options.get(name) else {
            return classes;
        };
        for entry in entries {
            let Some(used) = match_subcommand(name, &entry.subcommand, arguments) else {
                continue;
            };
            let key = if entry.subcommand.is_empty() {
                name.to_string()
            } else {
                format!("{name} {}", entry.subcommand.join(" "))
            };
            let clustered = self.clustered.contains(&key) || self.clustered.contains(name);
            if has_option(&arguments[used..], &entry.option, clustered) {
                classes.extend(entry.classes);
            }
        }
        classes
    }

    /// How the operands of `name arguments` name files; the longest entry wins.
    pub fn operand_mode(&self, name: &str, arguments: &[&str]) -> OperandMode {
        let Some(entries) = self.operands.get(name) else {
            return OperandMode::Default;
        };
        entries
            .iter()
            .filter(|(words, _)| match_subcommand(name, words, arguments).is_some())
            .max_by_key(|(words, _)| words.len())
            .map_or(OperandMode::Default, |(_, mode)| *mode)
    }

    /// Every operand mode `name` has, whatever its subcommand (a command can be both a
    /// script runner and an inline-code runner: `python x.py`, `python -c '…'`).
    pub fn has_mode(&self, name: &str, mode: OperandMode) -> bool {
        self.operands
            .get(name)
            .is_some_and(|entries| entries.iter().any(|(_, m)| *m == mode))
    }
}

fn compile_paths(patterns: &[String]) -> Result<PathList, String> {
    patterns
        .iter()
        .map(|pattern| PathPattern::compile(pattern))
        .collect::<Result<Vec<_>, _>>()
        .map(PathList::new)
}

/// Global options of a few commands that take a value before the subcommand.
fn takes_value(name: &str, option: &str) -> bool {
    matches!(
        (name, option),
        (
            "git",
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path"
        ) | (
            "make" | "gmake",
            "-C" | "-f" | "--directory" | "--file" | "-j"
        ) | (
            "npm" | "pnpm" | "yarn",
            "--prefix" | "--workspace" | "-w" | "--filter" | "-C" | "--cwd" | "--dir"
        ) | (
            "cargo",
            "--manifest-path" | "-p" | "--package" | "-Z" | "--config" | "--color"
        ) | (
            "docker",
            "-H" | "--host" | "--context" | "-c" | "--config" | "-l" | "--log-level"
        ) | (
            "docker compose" | "compose",
            "-f" | "--file" | "-p" | "--project-name" | "--profile" | "--env-file"
        ) | (
            "kubectl",
            "-n" | "--namespace"
                | "--context"
                | "--kubeconfig"
                | "-l"
                | "--selector"
                | "-o"
                | "--output"
        ) | ("python" | "python3", "-W" | "-X")
            | ("uv", "--directory" | "--project" | "-p" | "--python")
            | ("go", "-C")
            | ("terraform", "-chdir")
    )
}

/// Matches subcommand `words` against `arguments`, skipping options (and the values of
/// the few global options known to take one) in between. Returns how many argument words
/// were used, or `None`.
fn match_subcommand(name: &str, words: &[String], arguments: &[&str]) -> Option<usize> {
    let mut index = 0;
    for word in words {
        loop {
            let argument = arguments.get(index)?;
            index += 1;
            if argument == word {
                break;
            }
            if argument.starts_with('-') || (argument.starts_with('+') && name == "cargo") {
                if takes_value(name, argument) {
                    index += 1;
                }
                continue;
            }
            return None;
        }
    }
    Some(index)
}

/// Whether `option` (one or more words) appears among `arguments`.
fn has_option(arguments: &[&str], option: &[String], clustered: bool) -> bool {
    let Some((first, rest)) = option.split_first() else {
        return false;
    };
    let long = first.starts_with("--") || (first.len() > 2 && first.starts_with('-'));
    for (index, argument) in arguments.iter().enumerate() {
        if *argument == "--" {
            return false;
        }
        // The value the option's next word is compared with, when the option matched.
        let attached: Option<Option<&str>> = if argument == first {
            Some(None)
        } else if long {
            argument
                .strip_prefix(first.as_str())
                .and_then(|tail| tail.strip_prefix('='))
                .map(Some)
        } else if let Some(tail) = argument.strip_prefix(first.as_str()) {
            // `-i.bak`, `-XPOST`, `-oFILE`.
            (!tail.is_empty()).then_some(Some(tail))
        } else if clustered
            && first.len() == 2
            && argument.len() > 2
            && argument.starts_with('-')
            && !argument.starts_with("--")
            && argument[1..].chars().all(|c| c.is_ascii_alphabetic())
        {
            let letter = first.chars().nth(1).unwrap_or('-');
            argument[1..].contains(letter).then_some(None)
        } else {
            None
        };
        let Some(attached) = attached else {
            continue;
        };
        let mut following = arguments[index + 1..].iter();
        let mut expected = rest.iter();
        if let Some(value) = attached {
            match expected.next() {
                Some(word) if word == value => {}
                Some(_) => continue,
                // `-i.bak` is `-i` with a value.
                None => return true,
            }
        }
        if expected.all(|word| following.next().is_some_and(|next| next == word)) {
            return true;
        }
    }
    false
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_table_parses() {
        let table = ClassTable::built_in().unwrap();
        assert!(table.knows("ls"));
        assert_eq!(
            table.lookup("git", &["status", "-s"]).map(|(c, _)| c),
            Some(ClassSet::of(&[Class::ReadOnly]))
        );
        assert_eq!(
            table.lookup("git", &["--no-pager", "-C", "x", "log"]),
            Some((ClassSet::of(&[Class::ReadOnly]), 4))
        );
        assert!(table.lookup("git", &["frobnicate"]).is_none());
        assert!(table
            .option_classes("sed", &["-ni", "s/a/b/", "f"])
            .contains(Class::Write));
        assert!(table
            .option_classes("git", &["push", "origin", "main", "--force"])
            .contains(Class::Discard));
        assert!(table
            .option_classes(
                "claude",
                &["-p", "x", "--permission-mode=bypassPermissions"]
            )
            .contains(Class::UnsafeAgent));
        assert!(table
            .option_classes("find", &[".", "-name", "x"])
            .is_empty());
        assert_eq!(
            table.operand_mode("grep", &["-r", "x"]),
            OperandMode::Pattern
        );
    }
}
