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
//! file) is read as well as a whole file. A file of no kind it knows plants nothing:
//! ordinary source code is not read as commands.

use serde_json::Value;

use super::shell::classify::{classify, classify_code, CommandFacts};
use crate::classes::ClassTable;
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
}

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

/// Keys whose values are commands in CI files, hook managers and task runners.
const COMMAND_KEYS: &[&str] = &[
    "run",
    "script",
    "scripts",
    "before_script",
    "after_script",
    "before_install",
    "install",
    "after_install",
    "before_deploy",
    "after_deploy",
    "after_success",
    "after_failure",
    "command",
    "commands",
    "cmd",
    "cmds",
    // Taskfile's dynamic variables (`vars: X: sh: …`), run on every task.
    "sh",
    "entry",
    "bash",
    "init",
    "before",
    "prebuild",
    "build_script",
    "test_script",
    "on_finish",
];

/// Keys whose values are PowerShell.
const POWERSHELL_KEYS: &[&str] = &["pwsh", "powershell", "ps"];

/// `key: value` at the start of a YAML line: the key (lower-cased) and the rest.
fn yaml_key(line: &str) -> Option<(String, &str)> {
    let (key, rest) = line.split_once(':')?;
    let key = key.trim().trim_matches(['"', '\'']);
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    (plain && (rest.is_empty() || rest.starts_with([' ', '\t'])))
        .then(|| (key.to_ascii_lowercase(), rest.trim()))
}

/// A YAML scalar without its quotes.
fn unquote(value: &str) -> String {
    let value = value.trim();
    if value.len() >= 2 {
        if let Some(inner) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            return inner.replace("\\\"", "\"").replace("\\n", "\n");
        }
        if let Some(inner) = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
            return inner.replace("''", "'");
        }
    }
    value.to_owned()
}

/// A CI expression (`${{ … }}`, GitHub and Gitea) as the shell sees it once it is filled
/// in: an unknown value, except the whole secrets context (`toJSON(secrets)`), which is
/// every credential the pipeline holds.
fn ci_expressions(command: &str) -> String {
    let mut out = String::with_capacity(command.len());
    let mut rest = command;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 3..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let expression = after[..end].to_ascii_lowercase().replace(' ', "");
        out.push_str(if expression.contains("(secrets)") {
            "${CI_ALL_SECRETS}"
        } else {
            "${CI_VALUE}"
        });
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    // What a step appends to its job's summary (`>> $GITHUB_STEP_SUMMARY`) is shown on the
    // run's page, as its log is: read as printed.
    for target in [
        " >> \"$GITHUB_STEP_SUMMARY\"",
        " >> $GITHUB_STEP_SUMMARY",
        " > \"$GITHUB_STEP_SUMMARY\"",
        " > $GITHUB_STEP_SUMMARY",
        ">>$GITHUB_STEP_SUMMARY",
    ] {
        out = out.replace(target, "");
    }
    out
}

/// Whether a CI line prints a secret of the pipeline to the log (see [`yaml_commands`]):
/// `echo`/`printf` of a `${{ secrets.… }}` expression, not redirected to a file, piped into
/// nothing or only into encoders (`base64`, `xxd`, `rev`…); masking it (`::add-mask::`) or
/// handing it to a program on its input (`| docker login --password-stdin`) prints nothing.
fn prints_ci_secret(line: &str) -> bool {
    const ENCODERS: &[&str] = &[
        "base64", "base32", "xxd", "od", "hexdump", "rev", "tr", "sed", "cut", "fold", "cat",
        "tee", "awk",
    ];
    let line = line.trim();
    let line = line.strip_prefix("- ").unwrap_or(line).trim_start();
    let line = ["run:", "script:", "command:"]
        .iter()
        .find_map(|key| line.strip_prefix(key))
        .unwrap_or(line)
        .trim_start();
    let lower = line.to_ascii_lowercase();
    if !(lower.starts_with("echo ") || lower.starts_with("printf "))
        || lower.contains("::add-mask::")
        || !lower
            .match_indices("${{")
            .any(|(at, _)| lower[at + 3..].trim_start().starts_with("secrets."))
    {
        return false;
    }
    let mut stages = line.split('|');
    let printed = stages.next().unwrap_or_default();
    !printed.replace(">&2", "").contains('>')
        && stages.all(|stage| {
            let program = stage.split_whitespace().next().unwrap_or_default();
            ENCODERS.contains(&program) && !stage.contains('>')
        })
}

/// The commands of a CI, hook-manager or task-runner YAML text, whole or a fragment. List
/// items outside any known key are read as commands too when `items` (a file of nothing
/// else) or when they look like one (a fragment of a CI file's `script:` list).
pub(super) fn yaml_commands(text: &str, items: bool) -> Vec<Piece> {
    let mut out = Vec::new();
    // The whole secrets context put anywhere (`env: ALL: ${{ toJSON(secrets) }}`) hands
    // every credential of the pipeline to what runs next: a read of them.
    if ci_expressions(text).contains("${CI_ALL_SECRETS}") {
        out.push(Piece::Shell("printenv CI_ALL_SECRETS".into()));
    }
    // A step that prints one of the pipeline's secrets into the job's log, plainly or
    // encoded past the log's masking (`echo "${{ secrets.TOKEN }}" | base64`): a read of it
    // that anyone who can see the log shares.
    if text.lines().any(prints_ci_secret) {
        out.push(Piece::Shell("printenv CI_SECRET_PRINTED".into()));
    }
    // The open block under a command key: its indentation, whether it is PowerShell,
    // and the lines gathered so far.
    let mut block: Option<(usize, bool, Vec<String>)> = None;
    let close = |block: &mut Option<(usize, bool, Vec<String>)>, out: &mut Vec<Piece>| {
        if let Some((_, powershell, lines)) = block.take() {
            if !lines.is_empty() {
                let script = ci_expressions(&lines.join("\n"));
                out.push(if powershell {
                    Piece::PowerShell(script)
                } else {
                    Piece::Shell(script)
                });
            }
        }
    };
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = line.len() - trimmed.len();
        let item = trimmed
            .strip_prefix("- ")
            .or_else(|| trimmed.strip_prefix('-').filter(|rest| rest.is_empty()))
            .map(str::trim_start);
        let body = item.unwrap_or(trimmed);
        let keyed = yaml_key(body);
        if let Some((open, _, lines)) = &mut block {
            if indent > *open {
                match &keyed {
                    // A mapping inside the block (`lint:` under `commands:`): a command
                    // key in it is read below; any other key is not a command.
                    Some((key, _)) if !COMMAND_KEYS.contains(&key.as_str()) => continue,
                    Some(_) => {}
                    None => {
                        lines.push(unquote(body));
                        continue;
                    }
                }
            }
        }
        if block.as_ref().is_some_and(|(open, _, _)| indent <= *open) {
            close(&mut block, &mut out);
        }
        let Some((key, value)) = keyed else {
            if let Some(item) = item.filter(|item| items || item.contains(' ')) {
                let command = ci_expressions(&unquote(item));
                if !command.is_empty() && !command.starts_with(['{', '[']) {
                    out.push(Piece::Shell(command));
                }
            }
            continue;
        };
        let powershell = POWERSHELL_KEYS.contains(&key.as_str());
        if !powershell && !COMMAND_KEYS.contains(&key.as_str()) {
            continue;
        }
        // The key's own column: a list item's key sits after its `- `.
        let column = indent + (trimmed.len() - body.len());
        if value.is_empty() || value.starts_with(['|', '>']) {
            close(&mut block, &mut out);
            block = Some((column, powershell, Vec::new()));
        } else if let Some(list) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
            for item in list.split(',') {
                let command = ci_expressions(&unquote(item));
                if !command.is_empty() {
                    out.push(Piece::Shell(command));
                }
            }
        } else {
            let command = ci_expressions(&unquote(value));
            out.push(if powershell {
                Piece::PowerShell(command)
            } else {
                Piece::Shell(command)
            });
        }
    }
    close(&mut block, &mut out);
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
mod make;
mod notebook;
mod steps;

use make::{make_shell_functions, make_to_shell, recipe_lines};

pub use hooks::planted_in_hooks;

#[cfg(test)]
mod tests;
