//! Environment runners: tools that run the rest of their words as a command in the
//! project's environment (`uv run`, `bundle exec`, `conda run -n env`), seen through to the
//! command they run.

use super::lex::Word;
use super::{after_options, basename};

/// Tools that run the rest of their words as a command in the project's environment
/// (`uv run pytest`, `bundle exec rspec`, `conda run -n ml python x.py`): the subcommand
/// that does, its options that take the next word as a value, and how the command is
/// found. Restrict and the classification see through them to the command, which is
/// judged as itself (`uv run rm -rf /` deletes `/`).
const RUNNERS: &[(&str, &str, &str, Runs)] = &[
    (
        "uv",
        "run",
        "--with --with-requirements --with-editable --python -p --package --extra --group \
         --only-group --no-group --env-file --directory --project --index --index-url \
         --default-index --extra-index-url --find-links -f --upgrade-package -P \
         --reinstall-package --refresh-package --config-file --cache-dir --color \
         --python-preference --link-mode --index-strategy --keyring-provider --resolution \
         --prerelease --exclude-newer --no-binary-package --no-build-package --config-setting \
         -C --all-extras-except --no-extra",
        Runs::Rest,
    ),
    ("poetry", "run", "-C --directory -P --project", Runs::Rest),
    (
        "pdm",
        "run",
        "-p --project -g --global -c --config",
        Runs::Rest,
    ),
    ("hatch", "run", "-e --env", Runs::Rest),
    ("pipenv", "run", "--python", Runs::Rest),
    ("rye", "run", "--pyproject", Runs::Rest),
    (
        "pixi",
        "run",
        "-e --environment --manifest-path",
        Runs::Rest,
    ),
    ("bundle", "exec", "--gemfile", Runs::Rest),
    ("pnpm", "exec", "-C --dir --filter -F", Runs::Rest),
    ("conda", "run", "-n --name -p --prefix --cwd", Runs::Rest),
    ("mamba", "run", "-n --name -p --prefix --cwd", Runs::Rest),
    (
        "micromamba",
        "run",
        "-n --name -p --prefix --cwd",
        Runs::Rest,
    ),
    ("asdf", "exec", "", Runs::Rest),
    (
        "tox",
        "exec",
        "-e --env -c --conf --root --workdir",
        Runs::AfterDashes,
    ),
    ("nx", "exec", "", Runs::AfterDashes),
    ("lerna", "exec", "", Runs::AfterDashes),
    ("just", "--command", "", Runs::Rest),
    (
        "devbox",
        "run",
        "-c --config -e --env --env-file",
        Runs::Rest,
    ),
    ("flox", "activate", "-d --dir", Runs::AfterDashes),
    ("direnv", "exec", "", Runs::AfterOperand),
    ("mise", "exec", "", Runs::AfterDashes),
    ("rtx", "exec", "", Runs::AfterDashes),
    ("nix", "develop", "", Runs::AfterCommandOption),
    ("nix", "shell", "", Runs::AfterCommandOption),
    // `minikube kubectl -- get pods`: minikube's own kubectl, judged as kubectl.
    ("minikube", "kubectl", "-p --profile", Runs::AfterDashes),
    // Loaders that put an env file's or a secret store's values in the command's
    // environment (`dotenv -e .env.test -- vitest run`, `op run -- dbt build`): the values
    // go to the command, not to the agent, so the command is judged (`-- env` prints them).
    ("dotenv", "", "-e -v -c", Runs::AfterDashes),
    (
        "dotenvx",
        "run",
        "-f --env-file -e --env --convention --ops-off",
        Runs::AfterDashes,
    ),
    (
        "env-cmd",
        "",
        "-f --file -e --environments -r --rc-file",
        Runs::Rest,
    ),
    ("op", "run", "--env-file", Runs::AfterDashes),
    (
        "doppler",
        "run",
        "-p --project -c --config --command --mount --mount-format",
        Runs::AfterDashes,
    ),
    (
        "infisical",
        "run",
        "--env --path --projectId --token --command --watch-path",
        Runs::AfterDashes,
    ),
    // `git bisect run cargo test`: the test run at each step.
    ("git", "bisect", "", Runs::AfterWord("run")),
    // File watchers that run their command again on each change (no subcommand).
    (
        "watchexec",
        "",
        "-e --exts -w --watch -i --ignore -f --filter -d --debounce --delay-run -s --signal \
         --shell --on-busy-update --project-origin --workdir",
        Runs::AfterDashes,
    ),
];

/// Containers and systems that share the user's folders (Fedora's toolbox, distrobox,
/// Windows' WSL), in [`RUNNERS`]' shape: the command runs there, on the same files, and is
/// judged as itself. Unlike a runner's, a command unknown there is not the project's own
/// tool.
const SYSTEMS: &[(&str, &str, &str, Runs)] = &[
    (
        "toolbox",
        "run",
        "-c --container -d --distro -r --release",
        Runs::Rest,
    ),
    (
        "distrobox",
        "enter",
        "-n --name -a --additional-flags",
        Runs::AfterDashes,
    ),
    ("wsl", "", "-d --distribution -u --user --cd", Runs::Rest),
];

/// Where a runner's command starts, after its options.
#[derive(Clone, Copy)]
enum Runs {
    /// At the first word that is not an option.
    Rest,
    /// After one operand (`direnv exec DIR cmd`).
    AfterOperand,
    /// After `--` only (`mise exec node@20 -- cmd`: tools come first).
    AfterDashes,
    /// After `-c`/`--command` only (`nix develop .#x -c cmd`).
    AfterCommandOption,
    /// After this word, given first (`git bisect run cmd`; `git bisect start` runs nothing).
    AfterWord(&'static str),
}

/// The command a runner runs (`uv run --with x pytest` → `pytest`), or `None` when
/// `words` is no runner, or one whose command cannot be told.
pub(super) fn strip_runner(words: &[Word]) -> Option<&[Word]> {
    strip_with(RUNNERS, words)
}

/// The command a container or system sharing the user's folders runs ([`SYSTEMS`]:
/// `wsl -d Ubuntu -- make test` → `make test`), or `None`.
pub(super) fn strip_system(words: &[Word]) -> Option<&[Word]> {
    strip_with(SYSTEMS, words)
}

/// The command `words` run through one of `table`'s tools, after its options.
fn strip_with<'w>(table: &[(&str, &str, &str, Runs)], words: &'w [Word]) -> Option<&'w [Word]> {
    let (first, rest) = words.split_first()?;
    if first.dynamic {
        return None;
    }
    let program = basename(&first.text);
    // The runner's subcommand, after the options it may take before it (`pnpm -r exec`,
    // `pnpm --filter api exec`).
    let (options_with_value, runs, rest) = table
        .iter()
        .filter(|(name, _, _, _)| *name == program)
        .find_map(|&(_, sub, options_with_value, runs)| {
            // No subcommand: the runner's own words are all options.
            if sub.is_empty() {
                return Some((options_with_value, runs, rest));
            }
            let mut at = 0;
            while let Some(word) = rest.get(at) {
                if word.dynamic || word.text == sub || !word.text.starts_with('-') {
                    break;
                }
                let takes_value = options_with_value
                    .split_whitespace()
                    .chain(["--filter", "-F", "-C", "--dir"])
                    .any(|known| known == word.text);
                at += if takes_value { 2 } else { 1 };
            }
            let subcommand = rest.get(at)?;
            (!subcommand.dynamic && subcommand.text == sub).then(|| {
                (
                    options_with_value,
                    runs,
                    rest.get(at + 1..).unwrap_or_default(),
                )
            })
        })?;
    match runs {
        Runs::AfterDashes => {
            let at = rest.iter().position(|word| word.text == "--")?;
            return rest.get(at + 1..).filter(|inner| !inner.is_empty());
        }
        Runs::AfterCommandOption => {
            let at = rest
                .iter()
                .position(|word| matches!(word.text.as_str(), "-c" | "--command"))?;
            return rest.get(at + 1..).filter(|inner| !inner.is_empty());
        }
        Runs::AfterWord(word) => {
            let (first, inner) = rest.split_first()?;
            return (!first.dynamic && first.text == word && !inner.is_empty()).then_some(inner);
        }
        Runs::Rest | Runs::AfterOperand => {}
    }
    let rest = after_options(rest, options_with_value);
    let operands = usize::from(matches!(runs, Runs::AfterOperand));
    rest.get(operands..).filter(|inner| !inner.is_empty())
}

/// For a runner that loads secrets into its command's environment (`dotenv`, `dotenvx`,
/// `env-cmd`, `op`, `doppler`, `infisical`), given with the command [`strip_runner`] found
/// in it: whether the secrets are production's, by a word of the runner's own
/// (`.env.production`, `--config prd`, `--env=prod`). `None` for any other runner.
pub(super) fn loads_secrets(words: &[Word], inner: &[Word]) -> Option<bool> {
    let first = words.first()?;
    if first.dynamic
        || !matches!(
            basename(&first.text),
            "dotenv" | "dotenvx" | "env-cmd" | "op" | "doppler" | "infisical"
        )
    {
        return None;
    }
    let own = words.get(1..words.len().checked_sub(inner.len())?)?;
    Some(own.iter().any(|word| {
        word.text
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(names_production)
    }))
}

/// Whether one word of a name says production (`prod`, `production`, `prd`, `live`, in any
/// case): a secret store's configuration, a variable, a task.
pub(super) fn names_production(part: &str) -> bool {
    ["prod", "production", "prd", "live"]
        .iter()
        .any(|word| part.eq_ignore_ascii_case(word))
}

/// Whether `words` start with a runner whose command [`strip_runner`] tells.
pub(super) fn is_runner(words: &[Word]) -> bool {
    strip_runner(words).is_some()
}

/// Where Nix fetches an expression from another host: flake references and URLs.
const NIX_ELSEWHERE: &[&str] = &[
    "github:",
    "gitlab:",
    "sourcehut:",
    "git+",
    "hg+",
    "tarball+",
    "file+http",
    "http://",
    "https://",
    "git://",
    "ssh://",
];

/// Whether Nix (`name`, a program's basename) is told to evaluate an expression fetched
/// from another host (`nix develop github:o/r`, `nix shell git+https://…#tool -c x`,
/// `nix-shell -I nixpkgs=https://…`): its shell hook and builders run here, a package
/// fetched and run, as `npx github:o/r` is. The registry's names (`nixpkgs#jq`) and the
/// project's own expressions (`.#dev`, `shell.nix`) are not that.
pub(super) fn nix_fetches_expression(name: &str, arguments: &[Word]) -> bool {
    // What builds or runs what it fetched: `nix develop|shell|run|build|profile install`,
    // `nix-shell`, `nix-build` (`nix flake metadata github:o/r` only reads it).
    let runs = match name {
        "nix-shell" | "nix-build" => true,
        "nix" => arguments
            .iter()
            .find(|word| !word.text.starts_with('-'))
            .is_some_and(|word| {
                matches!(
                    word.text.as_str(),
                    "develop" | "shell" | "run" | "build" | "profile" | "print-dev-env" | "bundle"
                )
            }),
        _ => false,
    };
    if !runs {
        return false;
    }
    arguments.iter().any(|word| {
        let value = word
            .text
            .split_once('=')
            .map_or(word.text.as_str(), |(_, value)| value);
        NIX_ELSEWHERE
            .iter()
            .any(|prefix| word.text.starts_with(prefix) || value.starts_with(prefix))
    })
}
