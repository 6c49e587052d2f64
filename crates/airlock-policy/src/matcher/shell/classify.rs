//! The `class` matcher's judge: a command line → what each of its segments does.
//!
//! Each segment (see the parent module: `&&`/`;`/`|` parts, substitutions, `sh -c` scripts,
//! `find -exec` commands) gets a set of classes and the files it names, each read or
//! changed. The lexer does the shell's reading; this module does the judging:
//! - wrappers are seen through (`sudo` adds `privilege`, `xargs` feeds operands nobody can
//!   see), and a command is judged by its basename;
//! - a command that cannot be known before it runs (a variable or substitution in command
//!   position, a glob, non-ASCII look-alikes, unparsable text) is `unknown`;
//! - a shell or interpreter reading code from a pipe fed by a download or a decoder is
//!   `remote_code`; inline code (`python -c`) is inspected by [`super::code`];
//! - redirections are writes; `cd` moves the working directory of what follows it;
//! - files are resolved against the working directory and checked against credential
//!   material, credential directories and start-up files from the classification data.

use std::sync::Arc;

use super::code;
use super::lex::{holds_temp, LexError, Segment, Word};
use super::{
    basename, crude_segments, is_assignment, parse_command, strip_one_wrapper, KEYWORDS, SHELLS,
};
use crate::classes::{Class, ClassSet, ClassTable, OperandMode};
use crate::context::Context;
use crate::matcher::path::{below, TMP_DIRS};

mod find;
mod programs;
mod project;
mod remote;
mod url;
mod words;

use words::*;

/// Commands longer than this are not read at all: they are one `unknown` segment. Real
/// command lines are far shorter; this bounds the work a hostile one can cause.
pub const MAX_COMMAND_BYTES: usize = 256 * 1024;

/// Whether a file is only read, or changed (written, created, deleted, moved, its
/// permissions changed, or a directory something is built or run in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Read,
    Change,
    /// The directory a command builds, installs or runs in: it must lie where an allow
    /// rule's `paths` say, as a change does, but the command does not delete, write or
    /// change the permissions of the directory itself (`python -c "os.remove('x')"` run
    /// in the project does not delete the project).
    Workdir,
}

/// A file a segment names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRef {
    /// Absolute and normalised, or `None` when it cannot be known (a variable, a relative
    /// path without a working directory, operands fed by `xargs`).
    pub path: Option<String>,
    /// The word was a glob: it stands for `path` and everything below it.
    pub tree: bool,
    pub role: Role,
}

/// What one segment does.
#[derive(Debug, Clone, Default)]
pub struct SegmentFacts {
    /// The segment as words, for explanations.
    pub text: String,
    pub classes: ClassSet,
    pub files: Vec<FileRef>,
    /// For each of `files`: whether it is credential material, when it is one known file
    /// (`false` for a tree or an unknown path). Computed once here, reused by the `class`
    /// matcher's allow.
    pub credential: Vec<bool>,
}

/// What a whole command line does.
#[derive(Debug, Clone, Default)]
pub struct CommandFacts {
    pub segments: Vec<SegmentFacts>,
}

/// Judges a command line in `context`.
pub fn classify(command: &str, table: &Arc<ClassTable>, context: &Context) -> CommandFacts {
    if command.len() > MAX_COMMAND_BYTES {
        return CommandFacts {
            segments: vec![SegmentFacts {
                text: "(a command too long to read)".into(),
                classes: ClassSet::of(&[Class::Unknown]),
                files: Vec::new(),
                credential: Vec::new(),
            }],
        };
    }
    let segments = match parse_command(command, 0) {
        Ok(segments) => segments,
        Err(LexError::TooDeep) => vec![Segment::unknowable()],
        Err(_) => crude_segments(command),
    };
    let mut judge = Judge {
        table,
        context,
        sources: segments.iter().any(feeds_code),
        out: Vec::new(),
        found: None,
    };
    judge.all(&segments, context.cwd().map(str::to_string), 0);
    let mut out = judge.out;
    project::replaces_checkout(&mut out);
    for segment in &mut out {
        if prints_secret_variable(&segment.text) {
            segment.classes.insert(Class::CredentialAccess);
        }
    }
    CommandFacts { segments: out }
}

/// Whether a segment prints the value of a variable named like a credential
/// (`echo "KEY=$OPENAI_API_KEY"`, `printf %s "${GITHUB_TOKEN}"`): the secret lands in the
/// transcript, which is reading it.
fn prints_secret_variable(segment: &str) -> bool {
    let Some(first) = segment.split_whitespace().next() else {
        return false;
    };
    if !matches!(basename(first), "echo" | "printf" | "print") {
        return false;
    }
    let mut rest = segment;
    while let Some(at) = rest.find('$') {
        rest = &rest[at + 1..];
        let name: String = rest
            .trim_start_matches('{')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if programs::secret_name(&name) {
            return true;
        }
    }
    false
}

struct Judge<'a> {
    table: &'a ClassTable,
    context: &'a Context,
    /// Some segment downloads or decodes: a shell reading a pipe may run what it produced.
    sources: bool,
    out: Vec<SegmentFacts>,
    /// While judging the command of a `find … -exec`: what its `{}` stands for (what the
    /// `find` finds below its one place), when that can be told.
    found: Option<FileRef>,
}

/// What a segment's working directory is: known, or unknown after `cd $X`.
type Cwd = Option<String>;

impl Judge<'_> {
    fn all(&mut self, segments: &[Segment], cwd: Cwd, nesting: usize) {
        if nesting > super::MAX_DEPTH {
            self.unknown("(nested too deeply)");
            return;
        }
        // `cd` effects by depth: a `cd` holds for what follows at its depth or deeper.
        let mut moves: Vec<(usize, Cwd)> = Vec::new();
        for (index, segment) in segments.iter().enumerate() {
            while moves
                .last()
                .is_some_and(|(depth, _)| *depth > segment.depth)
            {
                moves.pop();
            }
            let here = moves
                .last()
                .map_or_else(|| cwd.clone(), |(_, cwd)| cwd.clone());
            self.found = self.found_by_find(segments, index, here.as_deref());
            if let Some(next) = self.segment(segment, here, nesting) {
                moves.push((segment.depth, next));
            }
        }
    }

    fn unknown(&mut self, text: &str) {
        self.out.push(SegmentFacts {
            text: text.to_string(),
            classes: ClassSet::of(&[Class::Unknown]),
            files: Vec::new(),
            credential: Vec::new(),
        });
    }

    /// Judges one segment; returns the working directory it moves to, for `cd`.
    fn segment(&mut self, segment: &Segment, cwd: Cwd, nesting: usize) -> Option<Cwd> {
        let mut text =
            String::with_capacity(segment.words.iter().map(|word| word.text.len() + 1).sum());
        for (index, word) in segment.words.iter().enumerate() {
            if index > 0 {
                text.push(' ');
            }
            text.push_str(&word.text);
        }
        let mut facts = SegmentFacts {
            text,
            ..SegmentFacts::default()
        };
        if segment.crude {
            facts.classes.insert(Class::Unknown);
        }
        for (target, writes) in &segment.redirections {
            let role = if *writes { Role::Change } else { Role::Read };
            if *writes {
                facts.classes.insert(Class::Write);
            }
            facts.files.push(self.file(target, cwd.as_deref(), role));
        }

        // Wrappers: `sudo`, `env X=1`, `timeout 10`, `xargs`, keywords, assignments.
        let mut words = segment.words.as_slice();
        let mut from_stdin = false;
        while let Some(inner) = strip_one_wrapper(words) {
            let Some(first) = words.first() else {
                break;
            };
            let prefix = is_assignment(&first.text) || KEYWORDS.contains(&first.text.as_str());
            if is_assignment(&first.text) && programs::assignment_runs_code(&first.text) {
                facts.classes.insert(Class::Unknown);
                // What it runs is judged too: `GIT_SSH_COMMAND='cat ~/.aws/credentials'`.
                if let Some((_, value)) = first.text.split_once('=').filter(|_| !first.dynamic) {
                    self.nested(value, cwd.as_deref(), nesting);
                }
            }
            // A wrapper with nothing after it is itself the command (`env` alone prints the
            // environment); assignments and keywords alone run nothing.
            if inner.is_empty() && !prefix {
                break;
            }
            match basename(&first.text) {
                "sudo" | "doas" | "chroot" if !prefix => facts.classes.insert(Class::Privilege),
                "xargs" if !prefix => from_stdin = true,
                _ => {}
            }
            words = inner;
        }
        let mut moved = None;
        match words.split_first() {
            None => {
                // Only assignments, keywords or redirections: nothing runs.
                if facts.classes.is_empty() {
                    facts.classes.insert(Class::ReadOnly);
                }
            }
            Some((first, arguments)) => {
                moved = self.command(
                    first, arguments, segment, &cwd, from_stdin, nesting, &mut facts,
                );
            }
        }
        self.check_files(&mut facts, copies_trees(words));
        self.out.push(facts);
        moved
    }

    /// Judges the command `first arguments` into `facts`.
    #[allow(clippy::too_many_arguments)]
    fn command(
        &mut self,
        first: &Word,
        arguments: &[Word],
        segment: &Segment,
        cwd: &Cwd,
        from_stdin: bool,
        nesting: usize,
        facts: &mut SegmentFacts,
    ) -> Option<Cwd> {
        if first.dynamic || first.glob.is_some() || !plain_name(&first.text) {
            facts.classes.insert(if first.dynamic {
                self.hidden_code()
            } else {
                Class::Unknown
            });
            // What it is given may still be read: `$X ~/.ssh/id_rsa`.
            for word in arguments {
                facts
                    .files
                    .push(self.file(word, cwd.as_deref(), Role::Read));
            }
            return None;
        }
        // A relative path runs a file of the working tree (`./run.sh`, `bin/dev`): the
        // project's own script, judged by where it lies. A tool installed into the project
        // (`.venv/bin/pip`, `node_modules/.bin/prisma`) is judged as that tool when the
        // classification knows it (`.venv/bin/pip install` installs), else as a script.
        let installed = installed_tool(&first.text).and_then(|name| {
            let texts: Vec<&str> = arguments.iter().map(|word| word.text.as_str()).collect();
            self.table.lookup(name, &texts).map(|found| (name, found))
        });
        if first.text.contains('/') && !first.text.starts_with('/') && installed.is_none() {
            facts.classes.insert(Class::Build);
            facts
                .files
                .push(self.file(first, cwd.as_deref(), Role::Change));
            self.operands_read(arguments, cwd, facts);
            self.output_options(arguments, cwd.as_deref(), facts);
            return None;
        }
        let name = basename(&first.text);
        // On Windows the same line may reach `cmd`, where `type FILE` prints the file: it
        // is judged as the read it may be.
        if self.context.on_windows() && name.eq_ignore_ascii_case("type") {
            facts.classes.insert(Class::ReadOnly);
            self.operands_read(arguments, cwd, facts);
            return None;
        }
        let texts: Vec<&str> = arguments.iter().map(|word| word.text.as_str()).collect();
        let (classes, used) = match installed {
            Some((_, found)) => found,
            None => match self.table.lookup(name, &texts) {
                Some(found) => found,
                None => (ClassSet::of(&[Class::Unknown]), 0),
            },
        };
        // `pip install --help`, `gh --version`: a command the classification knows, asked
        // only for its help or its version, prints it and does nothing else.
        if self.table.knows(name) && only_asks_help(&texts, used) {
            facts.classes.insert(Class::ReadOnly);
            return None;
        }
        // `printenv NAME` prints one variable: a look at `PATH`, a read of `API_KEY`.
        if name == "printenv" && arguments.iter().any(|word| !word.text.starts_with('-')) {
            let secret = arguments
                .iter()
                .any(|word| word.dynamic || programs::secret_name(&word.text));
            facts.classes.insert(if secret {
                Class::CredentialAccess
            } else {
                Class::ReadOnly
            });
            return None;
        }
        facts.classes.extend(classes);
        facts
            .classes
            .extend(self.table.option_classes(name, &texts));
        let reach = programs::reach(name, arguments);
        if reach.runs {
            facts.classes.insert(Class::Unknown);
        }
        match reach.environment {
            // Printing the environment is looking for credentials; printing a secret's
            // value is reading it.
            Some(programs::Environment::Whole) => facts.classes.insert(Class::CredentialSearch),
            Some(programs::Environment::Secret) => facts.classes.insert(Class::CredentialAccess),
            None => {}
        }
        for (file, role) in reach.files {
            if role == Role::Change {
                facts.classes.insert(Class::Write);
            }
            facts
                .files
                .push(self.path(&file, false, cwd.as_deref(), role));
        }
        let changes = facts.classes.intersects(ClassSet::of(&[
            Class::Write,
            Class::Delete,
            Class::Permissions,
        ]));

        // The directory the command works in: `git -C dir`, `make -C dir`, `npm --prefix`.
        let mut dir = cwd.clone();
        if let Some((text, dynamic)) = directory_option(name, arguments) {
            dir = if dynamic {
                None
            } else {
                self.context.resolve_from(&text, cwd.as_deref())
            };
        }
        if facts.classes.intersects(ClassSet::of(&[
            Class::Build,
            Class::VcsLocal,
            Class::Install,
            Class::Discard,
        ])) {
            facts.files.push(FileRef {
                path: dir.clone(),
                tree: false,
                role: Role::Workdir,
            });
        }
        if name == "git" {
            git_specials(arguments, facts);
        }
        self.kept_code(name, arguments, cwd.as_deref(), nesting, facts);
        if name == "ssh" {
            self.ssh(arguments, nesting, facts);
        }

        let operands: Vec<&Word> = operands(&arguments[used.min(arguments.len())..]);
        let role = if changes { Role::Change } else { Role::Read };
        let mode = self.table.operand_mode(name, &texts);
        let mut moved = None;
        match mode {
            OperandMode::None => {
                // `git log --output=FILE`: what it writes is named by an option.
                if changes {
                    self.option_values(
                        &arguments[used.min(arguments.len())..],
                        dir.as_deref(),
                        facts,
                    );
                }
            }
            OperandMode::Default => {
                let deletes = facts.classes.contains(Class::Delete);
                let mut destroyed = None;
                for word in &operands {
                    let file = self.file(word, dir.as_deref(), role);
                    if deletes && destroyed.is_none() {
                        destroyed = project::destroyed_project(&file, self.context);
                    }
                    facts.files.push(file);
                }
                facts.files.extend(destroyed);
                if changes {
                    self.option_values(
                        &arguments[used.min(arguments.len())..],
                        dir.as_deref(),
                        facts,
                    );
                }
            }
            OperandMode::Pattern => {
                let explicit = texts.iter().any(|text| {
                    matches!(*text, "-e" | "-f" | "--regexp" | "--file" | "--expression")
                        || text.starts_with("--regexp=")
                        || text.starts_with("--expression=")
                });
                let (patterns, files) = if explicit || operands.is_empty() {
                    (&operands[..0], &operands[..])
                } else {
                    (&operands[..1], &operands[1..])
                };
                let mut searched = Vec::new();
                for word in files {
                    let file = self.file(word, dir.as_deref(), role);
                    searched.push(file.clone());
                    facts.files.push(file);
                }
                if matches!(name, "locate" | "plocate" | "mlocate") {
                    searched.push(FileRef {
                        path: Some("/".into()),
                        tree: true,
                        role: Role::Read,
                    });
                }
                if searched.is_empty() {
                    searched.push(FileRef {
                        path: dir.clone(),
                        tree: true,
                        role: Role::Read,
                    });
                }
                let words: Vec<&str> = patterns.iter().map(|w| w.text.as_str()).collect();
                self.hunting(&words, &texts, &searched, facts);
            }
            OperandMode::Copy => {
                self.copy(
                    name,
                    &arguments[used.min(arguments.len())..],
                    dir.as_deref(),
                    facts,
                );
            }
            OperandMode::Names => {
                // Looking at a credential file's name, size or date is not reading it: in
                // the project or a temporary folder that is a look at the work area
                // (`ls .env`), elsewhere it is looking for credentials (`ls ~/.ssh/id_*`).
                for word in &operands {
                    let file = self.file(word, dir.as_deref(), role);
                    let credential = !file.tree
                        && file.path.as_deref().is_some_and(|path| {
                            self.table.credentials.any_resolved(
                                path,
                                false,
                                crate::matcher::Side::Restrict,
                                self.context,
                                false,
                            )
                        });
                    if !credential {
                        facts.files.push(file);
                    } else if !file
                        .path
                        .as_deref()
                        .is_some_and(|path| self.inside_work_area(path))
                    {
                        facts.classes.insert(Class::CredentialSearch);
                    }
                }
            }
            OperandMode::Find => self.find(arguments, dir.as_deref(), &texts, facts),
            OperandMode::Code | OperandMode::Script => {
                self.runner(name, arguments, segment, dir.as_deref(), nesting, facts);
            }
            OperandMode::Url => self.url(name, arguments, dir.as_deref(), facts),
            OperandMode::Dd => {
                for word in arguments {
                    if let Some(path) = word.text.strip_prefix("of=") {
                        facts.files.push(self.path(
                            path,
                            word.dynamic,
                            dir.as_deref(),
                            Role::Change,
                        ));
                    } else if let Some(path) = word.text.strip_prefix("if=") {
                        facts
                            .files
                            .push(self.path(path, word.dynamic, dir.as_deref(), Role::Read));
                    }
                }
            }
            OperandMode::Cd => {
                moved = Some(match operands.first() {
                    None => self.context.home().map(str::to_string),
                    // A folder from `mktemp` is no folder if `mktemp` failed: `cd ""`
                    // stays where it was.
                    Some(word) if word.dynamic || word.text == "-" || holds_temp(word) => None,
                    Some(word) => self.context.resolve_from(&word.text, cwd.as_deref()),
                });
            }
        }
        if from_stdin {
            // `xargs rm`: the operands come from the pipe; nobody can say which.
            facts.files.push(FileRef {
                path: None,
                tree: false,
                role,
            });
        }
        moved
    }

    /// Option values (`--target-directory=/x`, `-o/x`) of a command that changes files:
    /// they may name what it changes.
    fn option_values(&self, arguments: &[Word], dir: Option<&str>, facts: &mut SegmentFacts) {
        for word in arguments {
            let text = word.text.as_str();
            if text == "--" {
                break;
            }
            let value = if let Some(long) = text.strip_prefix("--") {
                long.split_once('=').map(|(_, value)| value)
            } else if text.starts_with('-') && text.len() > 2 {
                text.get(2..)
            } else {
                None
            };
            if let Some(value) = value.filter(|value| value.contains('/') || value.starts_with('~'))
            {
                facts
                    .files
                    .push(self.path(value, word.dynamic, dir, Role::Change));
            }
        }
    }

    /// `cp`, `ln`, `install`, `scp`, `rsync`: the sources are read and the destination is
    /// written, and so is each source's name inside it (`cp x.desktop ~/.config/autostart`
    /// writes `~/.config/autostart/x.desktop`); `-t DIR` makes every operand a source.
    fn copy(&self, name: &str, arguments: &[Word], dir: Option<&str>, facts: &mut SegmentFacts) {
        let layout = copy_layout(name, arguments);
        if layout.runs {
            facts.classes.insert(Class::Unknown);
        }
        if matches!(name, "rsync" | "scp")
            && layout
                .operands
                .iter()
                .any(|word| is_remote_operand(&word.text))
        {
            facts.classes.insert(Class::Network);
            self.remote_copy(&layout, facts);
        }
        let (sources, target) = match &layout.target {
            Some(target) => (&layout.operands[..], Some(target)),
            None => match layout.operands.split_last() {
                Some((target, sources)) => (sources, Some(target)),
                None => (&layout.operands[..], None),
            },
        };
        // A link is another name for what it points to: writing or deleting through it
        // changes the target (`ln -s ~/.ssh/authorized_keys ak && cat key >> ak`).
        let source_role = if name == "ln" {
            Role::Change
        } else {
            Role::Read
        };
        // A symbolic link's relative target is read from the folder the link is in.
        let link_folder = (name == "ln" && symbolic_link(arguments))
            .then(|| target.filter(|target| !target.dynamic))
            .flatten()
            .and_then(|target| {
                let text = target.text.trim_end_matches('/');
                if layout.target.is_some() || sources.len() > 1 || target.text.ends_with('/') {
                    self.context.resolve_from(text, dir)
                } else {
                    let folder = text.rsplit_once('/').map_or(".", |(folder, _)| folder);
                    self.context
                        .resolve_from(if folder.is_empty() { "/" } else { folder }, dir)
                }
            });
        for word in sources {
            let from = match &link_folder {
                Some(folder) if !word.text.starts_with(['/', '~']) => Some(folder.as_str()),
                _ => dir,
            };
            facts.files.push(self.file(word, from, source_role));
        }
        for word in &layout.reads {
            facts.files.push(self.file(word, dir, Role::Read));
        }
        for word in &layout.writes {
            facts.files.push(self.file(word, dir, Role::Change));
        }
        if let Some(target) = target {
            facts.files.push(self.file(target, dir, Role::Change));
            if !(target.dynamic || target.glob.is_some() || is_remote_operand(&target.text)) {
                for source in sources.iter().filter(|source| !source.dynamic) {
                    let Some(named) = source
                        .text
                        .trim_end_matches('/')
                        .rsplit('/')
                        .next()
                        .filter(|named| !named.is_empty() && !matches!(*named, "." | ".."))
                    else {
                        continue;
                    };
                    let inside = format!("{}/{named}", target.text.trim_end_matches('/'));
                    facts
                        .files
                        .push(self.path(&inside, false, dir, Role::Change));
                }
            }
        }
        self.option_values(arguments, dir, facts);
    }

    /// A program the project runs, told where to write (`--out DIR`, `--output=FILE`,
    /// `-o FILE`): that place is changed, whatever the program is.
    fn output_options(&self, arguments: &[Word], dir: Option<&str>, facts: &mut SegmentFacts) {
        for word in option_value_words(arguments, OUTPUT_OPTIONS) {
            facts.files.push(self.file(&word, dir, Role::Change));
        }
    }

    fn operands_read(&self, arguments: &[Word], cwd: &Cwd, facts: &mut SegmentFacts) {
        for word in operands(arguments) {
            facts
                .files
                .push(self.file(word, cwd.as_deref(), Role::Read));
        }
    }

    /// Inside the project or a temporary directory.
    fn inside_work_area(&self, path: &str) -> bool {
        self.context
            .project()
            .is_some_and(|project| below(path, project).is_some())
            || TMP_DIRS.iter().any(|tmp| below(path, tmp).is_some())
    }

    /// Shells and interpreters: a script file, inline code, or code from stdin.
    fn runner(
        &mut self,
        name: &str,
        arguments: &[Word],
        segment: &Segment,
        dir: Option<&str>,
        nesting: usize,
        facts: &mut SegmentFacts,
    ) {
        let is_shell = SHELLS.contains(&name) || matches!(name, "source" | ".");
        // `sh -c '…'`: the parent module already made the script's commands segments of
        // their own; the shell itself does nothing more.
        if is_shell && super::shell_script(arguments).is_some() {
            facts.classes = remove(facts.classes, Class::Build);
            if facts.classes.is_empty() {
                facts.classes.insert(Class::ReadOnly);
            }
            return;
        }
        if !is_shell {
            if let Some(code) = inline_code(name, arguments) {
                facts.classes = remove(facts.classes, Class::Build);
                if code.dynamic {
                    facts.classes.insert(self.hidden_code());
                    return;
                }
                self.code(&code.text, dir, nesting, facts);
                return;
            }
            // `python -m pytest` and friends were classified by the table.
            if arguments.iter().any(|word| word.text == "-m") {
                return;
            }
        }
        let script = arguments.iter().find(|word| !word.text.starts_with('-'));
        match script {
            Some(word) if word.dynamic => {
                // `source <(curl …)`, `bash "$SCRIPT"`.
                facts.classes = remove(facts.classes, Class::Build);
                facts.classes.insert(self.hidden_code());
            }
            Some(word) => {
                facts.classes.insert(Class::Build);
                facts.files.push(self.file(word, dir, Role::Change));
                self.output_options(arguments, dir, facts);
            }
            // Only options (`python3 --version`, `node -v`): the table has judged it.
            None if !arguments.is_empty()
                && !segment.piped
                && segment.here_text.is_none()
                && !arguments
                    .iter()
                    .any(|word| matches!(word.text.as_str(), "-" | "-s" | "-i")) =>
            {
                if facts.classes == ClassSet::of(&[Class::Build]) {
                    facts.classes = ClassSet::of(&[Class::Unknown]);
                }
            }
            None => {
                facts.classes = remove(facts.classes, Class::Build);
                match &segment.here_text {
                    Some(Some(text)) if is_shell => {
                        if facts.classes.is_empty() {
                            facts.classes.insert(Class::ReadOnly);
                        }
                        self.nested(text, dir, nesting);
                    }
                    Some(Some(text)) => self.code(text, dir, nesting, facts),
                    Some(None) => facts.classes.insert(Class::Unknown),
                    None if segment.piped => facts.classes.insert(self.hidden_code()),
                    None => facts.classes.insert(Class::Unknown),
                }
            }
        }
    }

    /// Code the command line cannot show: `remote_code` when something downloads or
    /// decodes, else `unknown`.
    fn hidden_code(&self) -> Class {
        if self.sources {
            Class::RemoteCode
        } else {
            Class::Unknown
        }
    }

    /// Inline code in another language.
    fn code(&mut self, text: &str, dir: Option<&str>, nesting: usize, facts: &mut SegmentFacts) {
        let found = code::inspect(text);
        facts.classes.extend(found.classes);
        for (path, role) in &found.paths {
            facts.files.push(self.path(path, false, dir, *role));
        }
        if found
            .classes
            .intersects(ClassSet::of(&[Class::Write, Class::Delete]))
            && found.paths.is_empty()
        {
            facts.files.push(FileRef {
                path: None,
                tree: false,
                role: Role::Change,
            });
        }
        for command in &found.commands {
            self.nested(command, dir, nesting);
        }
    }

    /// Code a command keeps to run: an alias's text and a trap's command run later in the
    /// same shell; a build file from outside the project, or from standard input (`make -f
    /// /dev/stdin <<< …`), holds recipes nobody has read.
    fn kept_code(
        &mut self,
        name: &str,
        arguments: &[Word],
        cwd: Option<&str>,
        nesting: usize,
        facts: &mut SegmentFacts,
    ) {
        let mut code = |judge: &mut Self, word: &Word, text: &str| {
            if word.dynamic {
                facts.classes.insert(Class::Unknown);
            } else {
                judge.nested(text, cwd, nesting);
            }
        };
        match name {
            "alias" => {
                for word in arguments {
                    if let Some((_, value)) = word.text.split_once('=') {
                        code(self, word, value);
                    }
                }
            }
            // `export GIT_SSH_COMMAND='…'`: the setting's command runs later.
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                for word in arguments {
                    if programs::assignment_runs_code(&word.text) {
                        if let Some((_, value)) = word.text.split_once('=') {
                            code(self, word, value);
                        }
                    }
                }
            }
            // `git -c core.pager='…' log`, `git config core.sshCommand '…'`: git runs the
            // value through a shell; `ext::` remotes run a command of their own.
            "git" => {
                for (word, value) in words::git_settings_that_run(arguments) {
                    code(self, word, &value);
                }
                for word in arguments {
                    if let Some(command) = word.text.strip_prefix("ext::") {
                        code(self, word, &command.replace("% ", " "));
                    }
                }
            }
            // `npm pkg set scripts.pretest='…'`: a script the next `npm test` runs.
            "npm" | "pnpm"
                if arguments
                    .iter()
                    .take(2)
                    .map(|word| word.text.as_str())
                    .eq(["pkg", "set"]) =>
            {
                for word in &arguments[2..] {
                    if let Some((key, value)) = word.text.split_once('=') {
                        if key.starts_with("scripts.") {
                            code(self, word, value);
                        }
                    }
                }
            }
            "trap" => {
                if let Some(word) = arguments.iter().find(|word| !word.text.starts_with('-')) {
                    code(self, word, &word.text);
                }
            }
            _ => {
                let Some(options) = build_file_options(name) else {
                    return;
                };
                for file in words::option_value_words(arguments, options) {
                    if file.dynamic
                        || matches!(file.text.as_str(), "-" | "/dev/stdin" | "/dev/fd/0")
                    {
                        facts.classes.insert(Class::Unknown);
                    } else {
                        facts.files.push(self.file(&file, cwd, Role::Change));
                    }
                }
            }
        }
    }

    /// A command line found inside another (a here-string into a shell, a string passed
    /// to `os.system`): its segments join the command's.
    fn nested(&mut self, text: &str, dir: Option<&str>, nesting: usize) {
        let segments = match parse_command(text, nesting + 1) {
            Ok(segments) => segments,
            Err(LexError::TooDeep) => vec![Segment::unknowable()],
            Err(_) => crude_segments(text),
        };
        if segments.iter().any(feeds_code) {
            self.sources = true;
        }
        self.all(&segments, dir.map(str::to_string), nesting + 1);
    }

    /// Resolves a word to a file reference.
    fn file(&self, word: &Word, cwd: Option<&str>, role: Role) -> FileRef {
        // `{}` is what `find -exec` puts there: whatever it found below its place, or, when
        // that cannot be told, anything.
        if word.text == "{}" && !word.dynamic {
            if let Some(found) = &self.found {
                // "Some entry below" keeps a filtered `find … -delete` from counting as
                // deleting its whole place; what is read may be any entry there, named like
                // a credential too (`find ~/.ssh -name 'id_*' -exec cat {} \;`).
                let path = match (role, found.path.as_deref()) {
                    (Role::Read, Some(path)) => path
                        .strip_suffix("/\u{1}")
                        .map(|parent| if parent.is_empty() { "/" } else { parent })
                        .unwrap_or(path),
                    (_, path) => path.unwrap_or_default(),
                };
                return FileRef {
                    path: found.path.as_ref().map(|_| path.to_string()),
                    role,
                    tree: found.tree,
                };
            }
        }
        // `%APPDATA%\x` is a variable to `cmd` on Windows: where it points is not known.
        if self.context.on_windows() && words::cmd_variable(&word.text) {
            return FileRef {
                path: None,
                tree: false,
                role,
            };
        }
        if word.dynamic || word.text.contains("{}") {
            // `$HOME/.ssh/id_rsa`: the home is known even if the shell computes it.
            if let Some(text) = self
                .known_variables(&word.text, cwd)
                .filter(|_| word.dynamic)
            {
                return self.path(&text, false, cwd, role);
            }
            return FileRef {
                path: None,
                tree: false,
                role,
            };
        }
        if let Some(glob) = &word.glob {
            let _ = glob;
            return self.glob_file(&word.text, cwd, role);
        }
        self.path(&word.text, false, cwd, role)
    }

    /// `text` with `$HOME`/`${HOME}` replaced, when that is all that is computed in it.
    /// `text` with `$HOME` and `$PWD` (the working directory where the word is read) in
    /// place, when those are known; `None` when anything else in it is computed.
    fn known_variables(&self, text: &str, cwd: Option<&str>) -> Option<String> {
        let mut replaced = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find('$') {
            replaced.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            let (name, used) = match after.strip_prefix('{') {
                Some(braced) => match braced.split_once('}') {
                    Some((name, _)) => (name, name.len() + 2),
                    None => return None,
                },
                None => {
                    let end = after
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(after.len());
                    (&after[..end], end)
                }
            };
            let value = match name {
                "HOME" => self.context.home()?,
                "PWD" => cwd?,
                _ => return None,
            };
            replaced.push_str(value);
            rest = &after[used..];
        }
        replaced.push_str(rest);
        (!replaced.contains(['`', '…'])).then_some(replaced)
    }

    fn path(&self, text: &str, dynamic: bool, cwd: Option<&str>, role: Role) -> FileRef {
        FileRef {
            path: if dynamic {
                None
            } else {
                self.context.resolve_from(text, cwd)
            },
            tree: false,
            role,
        }
    }

    /// A glob stands for the directory before its first glob character and what is
    /// below it.
    fn glob_file(&self, text: &str, cwd: Option<&str>, role: Role) -> FileRef {
        let first_glob = text.find(['*', '?', '[']).unwrap_or(text.len());
        // `rm *.log`, `rm -rf build/*.egg-info`: inside the project or a temporary folder,
        // a changed glob whose wildcards are all in its last name, and whose name has
        // literal text and no leading dot, stands for some entries of its folder, never the
        // folder itself (nor `.git`, `.env`…): it is judged as a name in that folder. `*`,
        // `.*` and `*.*` stand for the whole folder, and so does any glob elsewhere.
        let last_slash = text.rfind('/');
        if role == Role::Change
            && last_slash.is_none_or(|slash| slash < first_glob)
            && words::names_some_entries(&text[last_slash.map_or(0, |slash| slash + 1)..])
        {
            let path = self.context.resolve_from(text, cwd);
            if path
                .as_deref()
                .and_then(|path| path.rsplit_once('/'))
                .is_some_and(|(folder, _)| self.inside_work_area(folder))
            {
                return FileRef {
                    path,
                    tree: false,
                    role,
                };
            }
        }
        let directory = match text[..first_glob].rfind('/') {
            Some(0) => "/",
            Some(slash) => &text[..slash],
            None => ".",
        };
        FileRef {
            path: self.context.resolve_from(directory, cwd),
            tree: true,
            role,
        }
    }

    /// Credential material read, credential directories read, start-up files changed.
    ///
    /// A command that copies or archives whole folders (`tar c`, `zip -r`, `cp -r`,
    /// `rsync`) reads what a credential folder holds: that is credential access, where
    /// listing or searching it is looking for credentials.
    fn check_files(&self, facts: &mut SegmentFacts, copies: TreeCopy) {
        facts.credential.clear();
        for file in &facts.files {
            let Some(path) = &file.path else {
                facts.credential.push(false);
                continue;
            };
            // For one file (not a glob) both sides test the same path, and the restricting
            // side also tries the lists' patterns in lower case on a Windows path (these
            // lists only ever restrict). A glob keeps the allowing side's reading: the
            // pattern must cover all it may expand to.
            let side = if file.tree {
                crate::matcher::Side::Allow
            } else {
                crate::matcher::Side::Restrict
            };
            let matches = |patterns: &crate::matcher::path::PathList| {
                patterns.any_resolved(path, file.tree, side, self.context, false)
            };
            let credential = !file.tree && matches(&self.table.credentials);
            facts.credential.push(credential);
            match file.role {
                Role::Read => {
                    if credential {
                        facts.classes.insert(Class::CredentialAccess);
                    } else if matches(&self.table.credential_dirs) {
                        facts.classes.insert(if copies != TreeCopy::No {
                            Class::CredentialAccess
                        } else {
                            Class::CredentialSearch
                        });
                    }
                }
                Role::Change => {
                    if !file.tree && matches(&self.table.startup) {
                        facts.classes.insert(Class::Persistence);
                    }
                    if copies == TreeCopy::Archives
                        && (credential || matches(&self.table.credential_dirs))
                    {
                        facts.classes.insert(Class::CredentialAccess);
                    }
                }
                Role::Workdir => {}
            }
        }
    }
}
