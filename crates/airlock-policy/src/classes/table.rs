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
    /// The operands are files it looks at, not into (`ls`, `stat`, `du`): their names,
    /// sizes and dates, never their contents.
    Names,
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
            "names" => OperandMode::Names,
            "files" => OperandMode::Default,
            _ => return None,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Data {
    classes: BTreeMap<String, ClassData>,
    options: BTreeMap<String, Vec<String>>,
    dry_run: BTreeMap<String, String>,
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

/// The entries of one command name, indexed by their first subcommand word: an entry whose
/// first word is not an option can only match when that word is the first argument that
/// is not an option (see [`match_subcommand`]), so `git status` is tried against the
/// entries starting `status` (and the few starting with an option, and the bare `git`)
/// rather than against all two hundred `git` entries.
#[derive(Debug, Clone, Default)]
struct Entries {
    all: Vec<Entry>,
    by_first: HashMap<String, Vec<usize>>,
    /// Entries with no subcommand words or whose first word is an option.
    loose: Vec<usize>,
}

impl Entries {
    fn push(&mut self, entry: Entry) {
        let index = self.all.len();
        match entry.words.first() {
            Some(first) if !first.starts_with(['-', '+']) => {
                self.by_first.entry(first.clone()).or_default().push(index);
            }
            _ => self.loose.push(index),
        }
        self.all.push(entry);
    }

    /// The entries that may match `arguments` of the command `name`.
    fn candidates<'e>(&'e self, name: &str, arguments: &[&str]) -> impl Iterator<Item = &'e Entry> {
        let first = first_operand(name, arguments);
        let named = first
            .and_then(|word| self.by_first.get(word))
            .map_or(&[][..], Vec::as_slice);
        named
            .iter()
            .chain(&self.loose)
            .filter_map(|&index| self.all.get(index))
    }
}

/// The first argument that is not an option (nor an option's value), skipped as
/// [`match_subcommand`] skips them.
fn first_operand<'a>(name: &str, arguments: &[&'a str]) -> Option<&'a str> {
    let mut index = 0;
    loop {
        let argument = *arguments.get(index)?;
        index += 1;
        if argument.starts_with('-') || (argument.starts_with('+') && name == "cargo") {
            if takes_value(name, argument) {
                index += 1;
            }
            continue;
        }
        return Some(argument);
    }
}

/// An option that adds classes: the subcommand words before it and its own words.
#[derive(Debug, Clone)]
struct OptionEntry {
    subcommand: Vec<String>,
    option: Vec<String>,
    classes: ClassSet,
    /// The command (with its subcommand) takes clustered short options (`-rf`).
    clustered: bool,
}

/// The classification in force for one policy.
#[derive(Debug, Clone)]
pub struct ClassTable {
    commands: HashMap<String, Entries>,
    options: HashMap<String, Vec<OptionEntry>>,
    /// Options that make a command change nothing, with the class it is then; by command
    /// name (a few names, searched in order: cheaper than hashing each segment's name).
    dry_runs: Vec<(String, Vec<OptionEntry>)>,
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
            dry_runs: Vec::new(),
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
            let (name, entry) = table.option_entry(pattern, classes)?;
            table.options.entry(name).or_default().push(entry);
        }
        for (pattern, class) in &data.dry_run {
            let (name, entry) = table.option_entry(pattern, std::slice::from_ref(class))?;
            match table.dry_runs.iter_mut().find(|(known, _)| *known == name) {
                Some((_, entries)) => entries.push(entry),
                None => table.dry_runs.push((name, vec![entry])),
            }
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

    /// An entry of `[options]` or `[dry_run]`: `name subcommand… -option [value]` and
    /// the classes it names.
    fn option_entry(
        &self,
        pattern: &str,
        classes: &[String],
    ) -> Result<(String, OptionEntry), String> {
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
            set.insert(Class::from_name(class).ok_or_else(|| format!("unknown class `{class}`"))?);
        }
        let subcommand: Vec<String> = rest[..split].iter().map(|w| w.to_string()).collect();
        let key = if subcommand.is_empty() {
            (*name).to_string()
        } else {
            format!("{name} {}", subcommand.join(" "))
        };
        let clustered = self.clustered.contains(&key) || self.clustered.contains(*name);
        let entry = OptionEntry {
            subcommand,
            option: rest[split..].iter().map(|w| w.to_string()).collect(),
            classes: set,
            clustered,
        };
        Ok(((*name).to_string(), entry))
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
        match entries.all.iter_mut().find(|entry| entry.words == rest) {
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
        let name = same_program(name);
        self.commands.contains_key(name)
    }

    /// The classes of the command `name` with `arguments`: the longest matching entry's
    /// (entries of the same length are united), and the number of argument words the
    /// entry's subcommand used. `None` when no entry matches.
    pub fn lookup(&self, name: &str, arguments: &[&str]) -> Option<(ClassSet, usize)> {
        let (name, arguments, skipped) = self.spelled(name, arguments);
        self.lookup_entries(name, arguments)
            .map(|(classes, used)| (classes, used + skipped))
    }

    /// The program a command's table entries are looked up under, the words after its name
    /// that they see, and how many words before those were the program's other spelling:
    /// `tofu` is `terraform`; `npm exec -- eslint`, `npm x`, `bun x` are `npx`/`bunx`
    /// (which may fetch the package they name); and pnpm or yarn given a name that is none
    /// of their own subcommands (`pnpm next build`, `yarn astro check`) run the project's
    /// installed program of that name, as `npx next build` does (never fetching one).
    /// Every query of the table (classes, options, dry runs, operands) goes through it, so
    /// the operands of `npm exec rimraf ~/x` are read as `npx rimraf`'s are.
    fn spelled<'a, 'w>(
        &self,
        name: &'a str,
        arguments: &'a [&'w str],
    ) -> (&'a str, &'a [&'w str], usize) {
        let name = same_program(name);
        if let Some((runner, rest)) = runner_spelled_out(name, arguments) {
            return (runner, rest, 1);
        }
        if matches!(name, "pnpm" | "yarn")
            && arguments.first().is_some_and(|first| !first.starts_with('-'))
            && self
                .lookup_entries(name, arguments)
                .is_none_or(|(_, used)| used == 0)
            && self
                .lookup_entries("npx", arguments)
                .is_some_and(|(_, used)| used > 0)
            // (A runner of code, `pnpm tsx x.ts`, stays unknown: what it runs and the
            // files handed to it are read for `npx`'s spelling only.)
            && !matches!(
                self.operand_mode_entries("npx", arguments),
                OperandMode::Code | OperandMode::Script
            )
            && !arguments.first().is_some_and(|program| {
                matches!(
                    *program,
                    "tsx" | "ts-node" | "node" | "esno" | "vite-node" | "babel-node" | "jiti"
                        | "zx"
                )
            })
        {
            return ("npx", arguments, 0);
        }
        (name, arguments, 0)
    }

    /// The longest matching entry of `name` itself (see [`ClassTable::lookup`]).
    fn lookup_entries(&self, name: &str, arguments: &[&str]) -> Option<(ClassSet, usize)> {
        let entries = self.commands.get(name)?;
        let mut best: Option<(usize, ClassSet, usize)> = None;
        // The answer does not depend on the order entries are tried in (ties are united).
        for entry in entries.candidates(name, arguments) {
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
        let (name, arguments, _) = self.spelled(name, arguments);
        let mut classes = ClassSet::EMPTY;
        let Some(entries) = self.options.get(name) else {
            return classes;
        };
        for entry in entries {
            let Some(used) = match_subcommand(name, &entry.subcommand, arguments) else {
                continue;
            };
            if has_option(&arguments[used..], &entry.option, entry.clustered) {
                classes.extend(entry.classes);
            }
        }
        classes
    }

    /// The class `name arguments` is when one of its options makes it a dry run (`git push
    /// --dry-run`, `rsync -n`): what it still does, with nothing changed.
    pub fn dry_run(&self, name: &str, arguments: &[&str]) -> Option<ClassSet> {
        let (name, arguments, _) = self.spelled(name, arguments);
        /// The long options of the `[dry_run]` table: `--dry-run`, the AWS CLI's S3
        /// `--dryrun` and Ansible's `--check`.
        const DRY_RUN_OPTIONS: &[&str] = &["--dry-run", "--dryrun", "--check"];
        // Every dry-run option of the table is one of [`DRY_RUN_OPTIONS`] or `-n` (a test
        // holds it so): most commands have none, and are passed over without matching
        // subcommands.
        let may_be = arguments.iter().any(|argument| {
            DRY_RUN_OPTIONS
                .iter()
                .any(|option| argument.starts_with(option))
                || (argument.starts_with('-')
                    && !argument.starts_with("--")
                    && argument.contains('n'))
        });
        // Turned off again (`--no-dry-run`, `--dry-run=false`, kubectl's `--dry-run=none`,
        // npm's `--dry-run false`), it is no dry run: the tool would publish. Kubernetes'
        // and Helm's `--dry-run=client|server` are dry runs.
        let negated = arguments.iter().enumerate().any(|(index, argument)| {
            *argument == "--no-dry-run"
                || argument.strip_prefix("--dry-run=").is_some_and(|value| {
                    !matches!(value, "true" | "1" | "yes" | "client" | "server")
                })
                || (*argument == "--dry-run"
                    && arguments
                        .get(index + 1)
                        .is_some_and(|next| matches!(*next, "false" | "0" | "no")))
        });
        if !may_be || negated {
            return None;
        }
        let (_, entries) = self.dry_runs.iter().find(|(known, _)| known == name)?;
        entries.iter().find_map(|entry| {
            let used = match_subcommand(name, &entry.subcommand, arguments)?;
            has_option(&arguments[used..], &entry.option, entry.clustered).then_some(entry.classes)
        })
    }

    /// How the operands of `name arguments` name files; the longest entry wins.
    pub fn operand_mode(&self, name: &str, arguments: &[&str]) -> OperandMode {
        let (name, arguments, _) = self.spelled(name, arguments);
        self.operand_mode_entries(name, arguments)
    }

    /// The operand mode of `name` itself (see [`ClassTable::operand_mode`]).
    fn operand_mode_entries(&self, name: &str, arguments: &[&str]) -> OperandMode {
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
        let name = same_program(name);
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

/// A package runner spelled as its package manager's subcommand (`npm exec eslint src`,
/// `npm x -- tsc`, `bun x vitest`): the same program as `npx` or `bunx`, which may fetch
/// the package it names, so it is looked up as that runner with the words after the
/// subcommand.
fn runner_spelled_out<'a, 'w>(
    name: &str,
    arguments: &'a [&'w str],
) -> Option<(&'static str, &'a [&'w str])> {
    let (first, rest) = arguments.split_first()?;
    match (name, *first) {
        ("npm", "exec" | "x") => Some(("npx", rest)),
        ("bun", "x") => Some(("bunx", rest)),
        _ => None,
    }
}

/// A program published under another name that takes the same commands and options:
/// OpenTofu's `tofu` is Terraform's `terraform`.
fn same_program(name: &str) -> &str {
    match name {
        "tofu" => "terraform",
        _ => name,
    }
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
            "ninja",
            "-C" | "-f" | "-j" | "-k" | "-l" | "-d" | "-t" | "-w"
        ) | (
            "restic",
            "-r" | "--repo" | "--repository-file" | "-p" | "--password-file" | "--cache-dir"
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
            // Compose's own (`docker compose -f x.yml up`): the name is still `docker` when
            // its subcommand words are matched, and docker itself has none of these.
            "docker" | "docker-compose" | "docker compose" | "compose",
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
        ) | (
            "helm",
            "-n" | "--namespace" | "--kube-context" | "--kubeconfig" | "--repository-config"
        ) | (
            "aws",
            "--profile" | "--region" | "--output" | "--endpoint-url" | "--query"
        ) | (
            "gcloud",
            "--project" | "--account" | "--configuration" | "--format" | "--region"
        ) | ("az", "--subscription" | "--output" | "-o")
            | ("tofu" | "terragrunt", "-chdir")
            | (
                "ansible-playbook",
                "-i" | "--inventory" | "-l" | "--limit" | "-e" | "--extra-vars"
            )
            | ("python" | "python3", "-W" | "-X")
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
            && argument[1..]
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .chars()
                .all(|c| c.is_ascii_alphabetic())
        {
            // (A leading number is an option's value, as perl's `-0` in `-0pi`.)
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
    fn every_dry_run_option_is_dry_run_or_n() {
        let table = ClassTable::built_in().unwrap();
        assert!(!table.dry_runs.is_empty());
        for (name, entries) in &table.dry_runs {
            for entry in entries {
                assert!(
                    matches!(entry.option.as_slice(), [option] if matches!(option.as_str(), "--dry-run" | "--dryrun" | "--check" | "-n")),
                    "{name} {:?}: ClassTable::dry_run looks only for --dry-run, --dryrun, --check and -n",
                    entry.option
                );
            }
        }
    }

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

    /// The index by first word finds what trying every entry finds, for every entry of
    /// the shipped table spelled plainly, behind options, and with an extra word.
    #[test]
    fn the_first_word_index_answers_as_every_entry_tried() {
        let table = ClassTable::built_in().unwrap();
        let every = |name: &str, arguments: &[&str]| {
            let mut best: Option<(usize, ClassSet, usize)> = None;
            for entry in &table.commands.get(name)?.all {
                let Some(used) = match_subcommand(name, &entry.words, arguments) else {
                    continue;
                };
                let length = entry.words.len();
                best = match best {
                    Some((l, classes, u)) if l == length => {
                        let mut united = classes;
                        united.extend(entry.classes);
                        Some((length, united, u.max(used)))
                    }
                    Some(current) if current.0 > length => Some(current),
                    _ => Some((length, entry.classes, used)),
                };
            }
            best.map(|(_, classes, used)| (classes, used))
        };
        let mut tried = 0;
        for (name, entries) in &table.commands {
            for entry in &entries.all {
                let words: Vec<&str> = entry.words.iter().map(String::as_str).collect();
                let mut variants = vec![words.clone()];
                variants.push([&["-C", "/x"][..], &words].concat());
                variants.push([&["--verbose"][..], &words, &["x"]].concat());
                variants.push([&["+nightly"][..], &words].concat());
                variants.push(words.iter().rev().copied().collect());
                for arguments in variants {
                    assert_eq!(
                        table.lookup(name, &arguments),
                        every(name, &arguments),
                        "{name} {arguments:?}"
                    );
                    tried += 1;
                }
            }
        }
        assert!(tried > 1000);
    }
}
