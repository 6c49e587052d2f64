//! What a build tool hands the program it builds and runs: `cargo run -- ARGS`, `go run .
//! ARGS`, `dotnet run -- ARGS`, `npm run NAME -- ARGS`, `pnpm run NAME ARGS`, and a
//! script runner started from its package (`npx tsx x.ts ARGS`). The project's program
//! opens what it is handed as a script run by its interpreter does (`python x.py ARGS`),
//! so the written-out arguments are read as files: a credential file handed over is read.

use super::*;

/// Build options of `go run` that take the next word as their value.
const GO_VALUED: &[&str] = &[
    "-C",
    "-p",
    "-tags",
    "-ldflags",
    "-gcflags",
    "-asmflags",
    "-exec",
    "-mod",
    "-modfile",
    "-overlay",
    "-pgo",
    "-toolexec",
    "-buildmode",
    "-compiler",
    "-installsuffix",
    "-pkgdir",
    "-coverpkg",
];

/// Script runners started from their package that take a script, then its arguments.
const SCRIPT_PACKAGES: &[&str] = &["tsx", "ts-node", "vite-node", "esno", "esrun", "jiti"];

/// The words after the first `--`.
fn after_dashes(words: &[Word]) -> Option<&[Word]> {
    let at = words.iter().position(|word| word.text == "--")?;
    Some(&words[at + 1..])
}

/// The arguments `name ARGUMENTS` hands to the program it runs: after `--` for cargo,
/// dotnet and npm's scripts; after the script's name for `pnpm run`/`yarn run`; after the
/// package or its `.go` files for `go run`; after the script for `npx tsx` and its kin.
pub(super) fn passed_arguments<'w>(name: &str, arguments: &'w [Word]) -> Option<&'w [Word]> {
    let first = arguments
        .iter()
        .position(|word| !word.text.starts_with('-') && !word.text.starts_with('+'))?;
    let subcommand = arguments[first].text.as_str();
    let rest = &arguments[first + 1..];
    match (name, subcommand) {
        ("cargo", "run" | "r") | ("dotnet", "run") => after_dashes(rest),
        ("npm", "run" | "run-script" | "start" | "test" | "t" | "restart" | "stop") => {
            after_dashes(rest)
        }
        ("pnpm" | "yarn", "run") => {
            let script = rest.iter().position(|word| !word.text.starts_with('-'))?;
            let after = &rest[script + 1..];
            Some(after_dashes(after).unwrap_or(after))
        }
        ("go", "run") => {
            let mut words = rest.iter().enumerate();
            let mut package = None;
            while let Some((at, word)) = words.next() {
                if GO_VALUED.contains(&word.text.as_str()) {
                    words.next();
                } else if !word.text.starts_with('-') {
                    package = Some(at);
                    break;
                }
            }
            let mut at = package? + 1;
            // `go run main.go util.go ARGS`: the files are the package.
            if rest[at - 1].text.ends_with(".go") {
                while rest.get(at).is_some_and(|word| word.text.ends_with(".go")) {
                    at += 1;
                }
            }
            Some(&rest[at..])
        }
        _ => {
            let texts: Vec<&str> = arguments.iter().map(|word| word.text.as_str()).collect();
            let (package, given) = started_package(name, &texts)?;
            if !SCRIPT_PACKAGES.contains(&package) {
                return None;
            }
            // The script is the first word that is not an option; its words follow it.
            let skipped = arguments.len() - given.len();
            let given = &arguments[skipped..];
            let script = given.iter().position(|word| !word.text.starts_with('-'))?;
            Some(&given[script + 1..])
        }
    }
}
