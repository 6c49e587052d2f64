//! Commands a written file runs later by itself: what the `plants` matcher judges.
//!
//! Some files are run without anyone deciding to run them: git hooks on a commit, CI
//! steps on a push, a Makefile recipe or a package's scripts on a build, `conftest.py`
//! on a test run, `build.rs` on a build, `sitecustomize.py` on every Python start, and
//! the shell scripts the agent itself runs next as "the project's own script". Writing a
//! command into one of them is running it later, unasked. This module finds, from a file's
//! path and the text written into it, the commands it holds, each as shell text, as
//! PowerShell text or as code in another language; [`planted`] judges them as if they ran
//! now.
//!
//! It reads by file kind, line by line, so an edit's fragment (a few lines of a YAML
//! file) is read as well as a whole file. A file of no kind it knows plants nothing.
//! Ordinary source code is not read as commands: only code that reads credential material
//! and reaches the network in the same text counts, as credential access.

use serde_json::Value;

use super::shell::classify::{classify, classify_code, CommandFacts, SegmentFacts};
use crate::classes::{Class, ClassSet, ClassTable};
use crate::context::Context;

/// One command text a file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// A POSIX shell script or command line.
    Shell(String),
    /// A PowerShell script.
    PowerShell(String),
    /// Code in another language, run when the file is loaded.
    Code(String),
    /// Ordinary source code of the project, run when the project runs: judged only for
    /// credential material it sends away.
    Source(String),
    /// A command an agent's instruction file tells the agent to run (`instructions.rs`):
    /// judged only for code that arrives at run time or an agent unleashed.
    Instruction(String),
}

/// How a file holds its commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A git hook: the whole text is a shell script git runs on its own.
    Hook,
    /// The whole text is a shell script (`*.sh`, a `#!/bin/sh` file).
    Script,
    PowerShell,
    /// Tab-indented recipe lines (Makefiles).
    Make,
    /// Indented recipe lines (justfiles).
    Just,
    /// YAML whose `run:`, `script:`, `cmds:`… values are commands (CI, hook managers,
    /// task runners).
    Yaml,
    /// JSON whose `scripts` or `tasks` values are commands (`package.json`).
    Json,
    /// JSON whose `command` values are commands (`.vscode/tasks.json`, which may run on
    /// opening the folder).
    EditorTasks,
    /// An MSBuild project or its imports (`*.csproj`, `Directory.Build.props`): the
    /// `Command` of each `Exec` task runs on a build.
    MsBuild,
    /// JSON whose lifecycle commands run in the container, or on the host for
    /// `initializeCommand` (`devcontainer.json`).
    Devcontainer,
    /// JSON or YAML whose every string value is a command (`.lintstagedrc`).
    Strings,
    /// Code run when the file is loaded (`conftest.py`, `build.rs`, `*.config.js`).
    Code,
    /// Settings whose values are commands (`tox.ini`, `.cargo/config.toml`, `.npmrc`).
    Settings(&'static ini::Settings),
    /// A Python `.pth` file: its `import` lines run at every interpreter start.
    Pth,
    /// A Jupyter notebook: its code cells (`notebook.rs`).
    Notebook,
    /// An agent's instruction file (`CLAUDE.md`, `AGENTS.md`, `GEMINI.md`, `.cursorrules`):
    /// every session reads it, and the commands it shows are what the agent is told to run.
    Instructions,
    /// Ordinary source code (`src/telemetry.ts`, `internal/report.go`): not a command the
    /// file runs by itself, but code the project runs; only credential material it reads
    /// and sends over the network counts (`fetch(url, {body: readFileSync(~/.npmrc)})`).
    Source,
}

/// Extensions of ordinary source code (`Kind::Source`).
const SOURCE_EXTENSIONS: &[&str] = &[
    "py", "js", "mjs", "cjs", "jsx", "ts", "mts", "cts", "tsx", "go", "rs", "rb", "php", "java",
    "kt", "kts", "cs", "swift", "scala", "ex", "exs", "lua", "pl",
];

/// Git's hook names: a file so named in a `hooks` folder runs on git's events.
pub(super) const GIT_HOOKS: &[&str] = &[
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "post-receive",
    "post-update",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "reference-transaction",
];

/// Code files a tool loads on its own: test fixtures, build scripts, interpreter start-up
/// hooks, build tools' configuration, and Vim's and Neovim's start-up files (run at every
/// start of the editor: `vim.fn.system("…")`, `os.execute`, `system('…')` run commands).
const CODE_FILES: &[&str] = &[
    "init.lua",
    "init.vim",
    ".vimrc",
    "_vimrc",
    ".nvimrc",
    ".exrc",
    "conftest.py",
    "setup.py",
    "sitecustomize.py",
    "usercustomize.py",
    "noxfile.py",
    "build.rs",
    "gulpfile.js",
    "gulpfile.mjs",
    "gulpfile.ts",
    "gruntfile.js",
    "rakefile",
    "build.gradle",
    "build.gradle.kts",
    "settings.gradle",
    "settings.gradle.kts",
    "gemfile",
    "hatch_build.py",
    "jenkinsfile",
    "cmakelists.txt",
    ".eslintrc.js",
    ".eslintrc.cjs",
    ".babelrc.js",
    ".prettierrc.js",
];

/// YAML files whose command keys run: CI systems, hook managers and task runners.
fn yaml_runs(lower: &str, name: &str, parents: &[&str]) -> bool {
    let yaml = name.ends_with(".yml") || name.ends_with(".yaml");
    if !yaml {
        return false;
    }
    let stem = name.trim_end_matches(".yml").trim_end_matches(".yaml");
    parents
        .windows(2)
        .any(|pair| pair == [".github", "workflows"])
        || (parents.contains(&".github") && stem == "action")
        || lower.contains("/.circleci/")
        || lower.contains("/.buildkite/")
        || lower.contains("/.woodpecker")
        || stem.ends_with("gitlab-ci")
        || stem.starts_with("lefthook")
        || stem.starts_with(".lefthook")
        || stem == ".pre-commit-config"
        || stem == ".pre-commit-hooks"
        || stem.starts_with("azure-pipelines")
        || stem == "bitbucket-pipelines"
        || stem == ".travis"
        || stem == ".drone"
        || stem == "appveyor"
        || stem == ".appveyor"
        || stem == ".gitpod"
        || stem == "codemagic"
        || stem.starts_with("taskfile")
        || stem == ".goreleaser"
        || stem == "goreleaser"
}

/// The kind of the file at `path` (with what is written into it, for a `#!` line).
pub(super) fn kind(path: &str, text: &str) -> Option<Kind> {
    let lower = path.replace('\\', "/").to_ascii_lowercase();
    let mut parts: Vec<&str> = lower.split('/').filter(|part| !part.is_empty()).collect();
    let name = parts.pop()?;
    let parents = parts;
    let parent = parents.last().copied().unwrap_or("");
    let extension = name.rsplit_once('.').map(|(_, extension)| extension);
    // Hooks: anything in `.husky/` (its `_` helpers aside) or a hooks folder, and a file
    // named as a git hook in any folder named like one.
    if (parents.contains(&".husky") && parent != "_")
        || parents.windows(2).any(|pair| pair == [".git", "hooks"])
        || parent == ".githooks"
        || (GIT_HOOKS.contains(&name) && parent.contains("hook"))
    {
        return Some(Kind::Hook);
    }
    if matches!(
        extension,
        Some("sh" | "bash" | "zsh" | "ksh" | "dash" | "command" | "bats")
    ) {
        return Some(Kind::Script);
    }
    if matches!(extension, Some("ps1" | "psm1")) {
        return Some(Kind::PowerShell);
    }
    if matches!(name, "makefile" | "gnumakefile") || extension == Some("mk") {
        return Some(Kind::Make);
    }
    if matches!(name, "justfile" | ".justfile") {
        return Some(Kind::Just);
    }
    if yaml_runs(&lower, name, &parents) {
        return Some(Kind::Yaml);
    }
    if matches!(
        name,
        "package.json" | "composer.json" | "deno.json" | "deno.jsonc"
    ) {
        return Some(Kind::Json);
    }
    match name {
        "tox.ini" => return Some(Kind::Settings(&ini::TOX)),
        "config.toml" | "config" if parent == ".cargo" => return Some(Kind::Settings(&ini::CARGO)),
        ".npmrc" => return Some(Kind::Settings(&ini::NPMRC)),
        // direnv runs it on entering the folder; a shell runs its start-up files (a
        // dotfiles repository's, once linked into the home) at every start.
        ".envrc" | ".bashrc" | ".bash_profile" | ".bash_login" | ".profile" | ".zshrc"
        | ".zprofile" | ".zshenv" | ".zlogin" => return Some(Kind::Script),
        _ => {}
    }
    if matches!(
        extension,
        Some("csproj" | "vbproj" | "fsproj" | "vcxproj" | "proj" | "props" | "targets")
    ) {
        return Some(Kind::MsBuild);
    }
    if name == "tasks.json" && parent == ".vscode" {
        return Some(Kind::EditorTasks);
    }
    if name == "devcontainer.json" || name == ".devcontainer.json" {
        return Some(Kind::Devcontainer);
    }
    if name.starts_with(".lintstagedrc")
        && !extension.is_some_and(|e| matches!(e, "js" | "cjs" | "mjs"))
    {
        return Some(Kind::Strings);
    }
    if name.starts_with(".lintstagedrc") || name.starts_with("lint-staged.config.") {
        return Some(Kind::Code);
    }
    if extension == Some("pth") {
        return Some(Kind::Pth);
    }
    if extension == Some("ipynb") {
        return Some(Kind::Notebook);
    }
    let script_extension = |rest: &str| matches!(rest, "js" | "cjs" | "mjs" | "ts" | "mts" | "cts");
    // Build tools' configuration and test runners' global set-up run on every build or
    // test run (`vite.config.ts`, `jest.global-setup.js`, `e2e/global-setup.ts`).
    let config_code = name
        .split_once(".config.")
        .is_some_and(|(_, rest)| script_extension(rest))
        || [
            "global-setup",
            "globalsetup",
            "global-teardown",
            "globalteardown",
        ]
        .iter()
        .any(|stem| name.contains(stem) && extension.is_some_and(script_extension));
    if CODE_FILES.contains(&name) || config_code {
        return Some(Kind::Code);
    }
    // A pytest plugin (a module defining pytest's hooks) runs on every test run, whatever
    // its name.
    if extension == Some("py")
        && [
            "def pytest_configure",
            "def pytest_sessionstart",
            "def pytest_collection",
            "def pytest_load_initial_conftests",
        ]
        .iter()
        .any(|hook| text.contains(hook))
    {
        return Some(Kind::Code);
    }
    // A file that starts with a shell's `#!` line is a script, whatever its name.
    let first = text.lines().next().unwrap_or("");
    if let Some(interpreter) = first.strip_prefix("#!") {
        let words: Vec<&str> = interpreter.split_whitespace().collect();
        let program = match words.as_slice() {
            [env, program, ..] if env.ends_with("/env") => program,
            [program, ..] => program,
            [] => "",
        };
        let program = program.rsplit('/').next().unwrap_or(program);
        if matches!(program, "sh" | "bash" | "zsh" | "dash" | "ksh" | "ash") {
            return Some(Kind::Script);
        }
    }
    if instructions::is_instructions(name, &parents) {
        return Some(Kind::Instructions);
    }
    if extension.is_some_and(|extension| SOURCE_EXTENSIONS.contains(&extension)) {
        return Some(Kind::Source);
    }
    None
}

/// The commands `text`, written into the file at `path`, will run by itself.
pub fn pieces(path: &str, text: &str) -> Vec<Piece> {
    let Some(kind) = kind(path, text) else {
        return Vec::new();
    };
    match kind {
        Kind::Hook | Kind::Script => vec![Piece::Shell(text.to_owned())],
        Kind::PowerShell => vec![Piece::PowerShell(text.to_owned())],
        Kind::Code => {
            let mut out = vec![Piece::Code(text.to_owned())];
            out.extend(steps::shell_steps(text).into_iter().map(Piece::Shell));
            out
        }
        Kind::Settings(settings) => ini::commands(text, settings),
        Kind::Devcontainer => json_commands(
            text,
            &[
                "initializeCommand",
                "onCreateCommand",
                "updateContentCommand",
                "postCreateCommand",
                "postStartCommand",
                "postAttachCommand",
            ],
        ),
        Kind::Strings => match serde_json::from_str::<Value>(text) {
            Ok(document) => {
                let mut out = Vec::new();
                strings(&document, &mut out);
                out
            }
            // A fragment (an edit's new text): each `"glob": "command"` line's command, and
            // YAML's list items.
            Err(_) => text
                .lines()
                .filter_map(|line| json_pair(line.trim()))
                .map(|(_, command)| Piece::Shell(command))
                .chain(yaml_commands(text, true))
                .collect(),
        },
        Kind::Notebook => notebook::pieces(text),
        // Go's `//go:generate` directives are commands `go generate` runs.
        Kind::Source => std::iter::once(Piece::Source(text.to_owned()))
            .chain(
                text.lines()
                    .filter_map(|line| line.trim_start().strip_prefix("//go:generate "))
                    .map(|command| Piece::Shell(command.trim().to_owned())),
            )
            .collect(),
        Kind::Instructions => instructions::commands(text)
            .into_iter()
            .map(Piece::Instruction)
            .collect(),
        Kind::Pth => text
            .lines()
            .filter(|line| line.starts_with("import ") || line.starts_with("import\t"))
            .map(|line| Piece::Code(line.to_owned()))
            .collect(),
        Kind::Make => recipe_lines(text, kind)
            .into_iter()
            .chain(
                make_shell_functions(text)
                    .iter()
                    .map(|line| make_to_shell(line)),
            )
            .map(Piece::Shell)
            .collect(),
        Kind::Just => recipe_lines(text, kind)
            .into_iter()
            .map(Piece::Shell)
            .collect(),
        Kind::Yaml => yaml_commands(text, false),
        Kind::Json => json_commands(text, &["scripts", "tasks"]),
        Kind::EditorTasks => json_commands(text, &["command"]),
        Kind::MsBuild => msbuild_commands(text),
    }
}

/// The `Command="…"` attributes of an MSBuild file's `Exec` tasks, with XML's entities
/// written out; they run through `cmd` on Windows and `sh` elsewhere, read here as shell.
fn msbuild_commands(text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("<Exec") {
        let tag = &text[at..];
        let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
        let Some(start) = tag.find("Command=") else {
            continue;
        };
        let value = &tag[start + "Command=".len()..];
        let Some(quote) = value.chars().next().filter(|c| matches!(c, '"' | '\'')) else {
            continue;
        };
        let value = &value[1..];
        let value = &value[..value.find(quote).unwrap_or(value.len())];
        let command = value
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&");
        out.push(Piece::Shell(command));
    }
    out
}

/// Keys of a package manifest that never hold a command.
const MANIFEST_KEYS: &[&str] = &[
    "name",
    "version",
    "description",
    "main",
    "module",
    "types",
    "typings",
    "homepage",
    "license",
    "author",
    "url",
    "type",
    "email",
    "repository",
    "bugs",
    "keywords",
    "engines",
    "packagemanager",
    "$schema",
];

/// The command values of a JSON manifest: under the `sections` objects of a whole file,
/// or, in a fragment, every string value with a blank in it outside the manifest's
/// descriptive keys.
fn json_commands(text: &str, sections: &[&str]) -> Vec<Piece> {
    if let Ok(document) = serde_json::from_str::<Value>(text) {
        let mut out = Vec::new();
        collect_sections(&document, sections, &mut out);
        return out;
    }
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((key, value)) = json_pair(line.trim()) else {
            continue;
        };
        if MANIFEST_KEYS.contains(&key.to_ascii_lowercase().as_str())
            || !value.contains(char::is_whitespace)
        {
            continue;
        }
        out.push(Piece::Shell(value));
    }
    out
}

/// Sections of a package manifest whose values are commands that run by themselves:
/// husky 4's `hooks`, `simple-git-hooks`, `lint-staged`.
pub(super) const HOOK_SECTIONS: &[&str] = &["hooks", "simple-git-hooks", "lint-staged"];

/// Every string under a key named in `sections`, at any depth.
fn collect_sections(value: &Value, sections: &[&str], out: &mut Vec<Piece>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                if sections.contains(&key.as_str()) || HOOK_SECTIONS.contains(&key.as_str()) {
                    strings(inner, out);
                } else {
                    collect_sections(inner, sections, out);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                collect_sections(item, sections, out);
            }
        }
        _ => {}
    }
}

pub(super) fn strings(value: &Value, out: &mut Vec<Piece>) {
    match value {
        Value::String(text) => out.push(Piece::Shell(text.clone())),
        Value::Array(items) => items.iter().for_each(|item| strings(item, out)),
        Value::Object(map) => map.values().for_each(|item| strings(item, out)),
        _ => {}
    }
}

/// `"key": "value"` on one line of JSON, the value unescaped.
pub(super) fn json_pair(line: &str) -> Option<(String, String)> {
    let rest = line.strip_prefix('"')?;
    let (key, rest) = rest.split_once('"')?;
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let quoted = rest.trim_end().trim_end_matches(',');
    let value: String = serde_json::from_str(quoted).ok()?;
    Some((key.to_owned(), value))
}

/// The files a Codex patch adds to or changes, each with the lines it adds.
pub fn patch_files(patch: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in patch.lines() {
        let header = line
            .strip_prefix("*** Add File: ")
            .or_else(|| line.strip_prefix("*** Update File: "));
        if let Some(path) = header {
            out.push((path.trim().to_owned(), String::new()));
            continue;
        }
        if let Some(path) = line.strip_prefix("*** Move to: ") {
            if let Some(last) = out.last_mut() {
                last.0 = path.trim().to_owned();
            }
            continue;
        }
        if line.starts_with("*** ") {
            continue;
        }
        if let (Some(added), Some(last)) = (line.strip_prefix('+'), out.last_mut()) {
            last.1.push_str(added);
            last.1.push('\n');
        }
    }
    out
}

/// What the commands `text` plants in the file at `path` would do if they ran now: the
/// facts of every piece, judged in `context`.
pub fn planted(path: &str, text: &str, table: &ClassTable, context: &Context) -> CommandFacts {
    let mut out = CommandFacts::default();
    // A shell script file (`scripts/sync.sh`, not a hook or a start-up file) runs in its
    // own folder: its relative paths are judged from there, not from where the agent is.
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let script_folder = (matches!(kind(path, text), Some(Kind::Script)) && !name.starts_with('.'))
        .then(|| path.rsplit_once(['/', '\\']).map(|(folder, _)| folder))
        .flatten()
        .filter(|folder| !folder.is_empty());
    let in_folder = script_folder.map(|folder| context.in_folder(folder));
    let shell_context = in_folder.as_ref().unwrap_or(context);
    for piece in pieces(path, text) {
        match piece {
            Piece::Shell(script) => {
                for chunk in chunks(&script) {
                    out.segments
                        .extend(classify(chunk, table, shell_context).segments);
                }
            }
            Piece::PowerShell(script) => {
                let powershell = context.as_powershell();
                for chunk in chunks(&script) {
                    out.segments
                        .extend(classify(chunk, table, &powershell).segments);
                }
            }
            Piece::Code(code) => out
                .segments
                .extend(classify_code(&code, table, context).segments),
            // The project's own code counts only where it sends credential material away
            // (`code/sends.rs`): reading a key, or starting programs with the environment,
            // is what programs do.
            // What an instruction file tells the agent to run is judged again when the
            // agent runs it; written there, only code fetched and run or an agent with its
            // permissions off is planted (`curl … | sh` as a set-up step).
            Piece::Instruction(command) => {
                for chunk in chunks(&command) {
                    for mut segment in classify(chunk, table, shell_context).segments {
                        let kept: Vec<Class> = [Class::RemoteCode, Class::UnsafeAgent]
                            .into_iter()
                            .filter(|class| segment.classes.contains(*class))
                            .collect();
                        if !kept.is_empty() {
                            segment.classes = ClassSet::of(&kept);
                            out.segments.push(segment);
                        }
                    }
                }
            }
            Piece::Source(code) => {
                if crate::matcher::shell::code::sends_credentials(&code) {
                    out.segments.push(SegmentFacts {
                        text: "(code that reads credential material and sends it)".into(),
                        classes: ClassSet::of(&[Class::CredentialAccess, Class::Network]),
                        files: Vec::new(),
                        credential: Vec::new(),
                    });
                }
            }
        }
    }
    out
}

/// A script longer than a command line may be is judged in parts cut at line ends, so
/// that its last line counts as much as its first. A construct cut in two is read by the
/// fallback for unparsable text, which leans to doubt.
const CHUNK_BYTES: usize = 64 * 1024;

fn chunks(script: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = script;
    while rest.len() > CHUNK_BYTES {
        let mut cut = CHUNK_BYTES;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let cut = rest[..cut].rfind('\n').map_or(cut, |at| at + 1);
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out.push(rest);
    out
}

mod hooks;
mod ini;
mod instructions;
mod make;
mod notebook;
mod steps;
mod yaml;

use make::{make_shell_functions, make_to_shell, recipe_lines};
use yaml::yaml_commands;

pub use hooks::planted_in_hooks;

#[cfg(test)]
mod tests;
