//! The written files that run with no one running them at all: git hooks, hook managers'
//! configuration and package lifecycle scripts. A build file or a script runs when someone
//! (or the agent) runs the build or the script, under the name they chose; a hook runs
//! under someone else's command (`git commit` runs `pre-commit`, `npm install` runs
//! `postinstall`), so what it does is never seen. The `hooks` matcher judges only these.

use serde_json::Value;

use super::{json_pair, kind, strings, yaml_commands, Kind, Piece, GIT_HOOKS, HOOK_SECTIONS};
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

/// A script key that runs under another command: npm's install and publish lifecycle,
/// composer's events (`post-install-cmd`, `post-autoload-dump`), a git hook's name (husky,
/// simple-git-hooks). npm's `pre`/`post` scripts of a named script (`postversion`) run
/// when someone runs that script by its name, and are not counted.
fn runs_around(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    LIFECYCLE.contains(&key.as_str())
        || ((key.starts_with("pre-") || key.starts_with("post-"))
            && (key.ends_with("-cmd") || key.ends_with("-dump") || key.ends_with("-install")))
        || GIT_HOOKS.contains(&key.as_str())
}

/// The commands `text` puts in the file at `path` that run by themselves, as hooks.
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
        Some(Kind::Json) => manifest_hooks(text),
        _ => Vec::new(),
    }
}

/// A manifest's lifecycle scripts and hook sections, whole or in a fragment.
fn manifest_hooks(text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    if let Ok(document) = serde_json::from_str::<Value>(text) {
        if let Some(Value::Object(scripts)) = document.get("scripts") {
            for (key, value) in scripts {
                if runs_around(key) {
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
            if runs_around(&key) {
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
        assert!(hook_pieces("/p/Makefile", "x:\n\tgit push\n").is_empty());
        let manifest = r#"{"scripts": {"build": "tsc", "deploy": "npm publish", "postinstall": "git push"}, "simple-git-hooks": {"pre-push": "npm publish"}}"#;
        let mut found = hook_pieces("/p/package.json", manifest);
        found.sort_by_key(|piece| format!("{piece:?}"));
        assert_eq!(found, [shell("git push"), shell("npm publish")].concat());
        assert_eq!(
            hook_pieces(
                "/p/package.json",
                "    \"prepare\": \"husky install\",\n    \"build\": \"tsc -p .\""
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
}
