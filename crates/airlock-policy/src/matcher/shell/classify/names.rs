//! What a command's or a task's name says about it.

use super::super::lex::Word;
use super::super::names_production;
use crate::classes::{Class, ClassSet};

/// The binary tool a cross toolchain's (`arm-none-eabi-objdump`: a target named in two
/// parts or more) or LLVM's (`llvm-nm`) program is: each only reads the files it is
/// given, as the host's tool of that name does.
pub(super) fn toolchain_tool(name: &str) -> Option<&str> {
    let (prefix, tool) = name.rsplit_once('-')?;
    let known = matches!(
        tool,
        "objdump" | "readelf" | "nm" | "addr2line" | "size" | "strings" | "c++filt"
    );
    (known && (prefix == "llvm" || prefix.matches('-').count() >= 1)).then_some(tool)
}

/// A task runner's arguments run a task named for deploying (`npm run deploy`, `make
/// publish`, `make apply ENV=prod` (infrastructure applied), `make push` (images pushed),
/// `bun scripts/publish.ts`), unless the runner only builds, tests or checks
/// what it names (`bun build scripts/publish.ts`, `bun --check scripts/publish.ts`).
/// What a command's own name and words say it does beyond its class, for a build-class
/// command that is no dry run: the project's task or script named for deploying or
/// releasing (`npm run deploy`, `make publish`, `turbo run deploy:prod`; `./deploy.sh`,
/// `bash scripts/publish.sh prod`) deploys, and a task named for wiping a database (`npm
/// run db:reset`, `make drop-db`) discards. `go run` of a module fetched at a version (`go
/// run github.com/x/y@latest`) installs, not the project's own code.
pub(super) fn named_effects(
    program: &str,
    name: &str,
    arguments: &[Word],
    classes: ClassSet,
    dry_run: bool,
) -> ClassSet {
    let mut effects = ClassSet::EMPTY;
    // `npx nx run api:deploy`, `pnpm exec turbo run deploy`: the task runner a package
    // runner starts, with its own words.
    let texts: Vec<&str> = arguments.iter().map(|word| word.text.as_str()).collect();
    if let Some((package, rest)) = started_package(name, &texts) {
        if task_runner(package) {
            let at = arguments.len() - rest.len();
            effects.extend(named_effects(
                program,
                package,
                &arguments[at..],
                classes,
                dry_run,
            ));
        }
    }
    if classes.contains(Class::Build) && !dry_run {
        // `cargo xtask publish-crates`, `deno task deploy`: the project's own task runners
        // behind a toolchain's subcommand.
        let first = arguments.first().map(|word| word.text.as_str());
        let task_runner = task_runner(name)
            || matches!(
                (name, first),
                ("cargo", Some("xtask")) | ("deno", Some("task"))
            );
        if (task_runner && deploys_by_name(arguments)) || cake_target_deploys(name, arguments) {
            effects.insert(Class::Deploy);
        }
        // Jib builds an image and pushes it to its registry (`./gradlew :api:jib`, `mvn
        // compile jib:build`); `jibDockerBuild` and `jib:dockerBuild` stay on this machine.
        if (name.starts_with("gradle") || name.starts_with("mvn"))
            && arguments.iter().any(|word| {
                matches!(word.text.as_str(), "jib" | "jib:build") || word.text.ends_with(":jib")
            })
        {
            effects.insert(Class::Deploy);
        }
        // Maven's phases and sbt's tasks run in sequence: `mvn clean deploy`, `sbt test
        // +publishSigned` publish at the end.
        if matches!(name, "mvn" | "mvnw" | "mvnw.cmd" | "sbt")
            && arguments.iter().any(|word| {
                matches!(
                    word.text.trim_start_matches('+'),
                    "deploy"
                        | "deploy:deploy-file"
                        | "release:perform"
                        | "publish"
                        | "publishSigned"
                        | "sonatypeBundleRelease"
                        | "sonatypeRelease"
                        | "ci-release"
                )
            })
        {
            effects.insert(Class::Deploy);
        }
        // `npm run tunnel`: the project's server opened to the internet by name.
        if task_runner && arguments.iter().any(|word| names_tunnel(&word.text)) {
            effects.insert(Class::Network);
        }
        if task_runner && installs_by_name(name, arguments) {
            effects.insert(Class::Install);
        }
        effects.extend(script_effects(program, name, arguments));
        if task_runner && arguments.iter().any(|word| names_wiping_task(&word.text)) {
            effects.insert(Class::Discard);
        }
    }
    if name == "go" && runs_fetched_module(arguments) {
        effects.insert(Class::Install);
    }
    effects
}

/// `go run example.com/tool@v1.2` (`@latest`): the module is fetched and run, whatever the
/// project holds.
fn runs_fetched_module(arguments: &[Word]) -> bool {
    arguments.first().is_some_and(|word| word.text == "run")
        && arguments[1..]
            .iter()
            .find(|word| !word.text.starts_with('-'))
            .is_some_and(|word| word.text.contains('@') && word.text.contains('/'))
}

fn task_runner(name: &str) -> bool {
    matches!(
        name,
        "npm"
            | "yarn"
            | "pnpm"
            | "bun"
            | "make"
            | "gmake"
            | "just"
            | "rake"
            | "turbo"
            | "nx"
            | "task"
            | "mage"
            | "invoke"
            | "nox"
            | "tox"
            | "composer"
            | "grunt"
            | "gulp"
            | "gradle"
            | "gradlew"
            | "gradlew.bat"
            | "bazel"
            | "bazelisk"
            | "pants"
    )
}

/// Cake's target, named by option (`dotnet cake --target=Publish`, `dotnet cake build.cake
/// -t Deploy`), named for deploying.
fn cake_target_deploys(name: &str, arguments: &[Word]) -> bool {
    let cake = matches!(name, "cake" | "dotnet-cake")
        || (name == "dotnet" && arguments.first().is_some_and(|word| word.text == "cake"));
    let mut words = arguments.iter();
    cake && std::iter::from_fn(|| {
        let word = words.next()?;
        Some(match word.text.split_once('=') {
            Some(("--target" | "-target", target)) => Some(target.to_owned()),
            None if matches!(word.text.as_str(), "--target" | "-target" | "-t") => {
                words.next().map(|target| target.text.clone())
            }
            _ => None,
        })
    })
    .flatten()
    .any(|target| names_deploy_task(&target))
}

fn deploys_by_name(arguments: &[Word]) -> bool {
    let checks = arguments.iter().any(|word| word.text == "--check")
        || arguments
            .iter()
            .find(|word| !word.text.starts_with('-'))
            .is_some_and(|first| {
                matches!(
                    first.text.as_str(),
                    "build" | "test" | "check" | "lint" | "typecheck" | "fmt" | "format"
                )
            });
    !checks && arguments.iter().any(|word| names_deploy_task(&word.text))
}

/// Interpreters that run the script file they are given first.
const SCRIPT_INTERPRETERS: &[&str] = &[
    "bash",
    "sh",
    "zsh",
    "dash",
    "ksh",
    "python",
    "python3",
    "node",
    "ruby",
    "perl",
    "deno",
    "tsx",
    "ts-node",
    "pwsh",
    "powershell",
];

/// What the project's own script says it does by its file's name: the program is that
/// script (`./deploy.sh`, `scripts/publish-npm.sh`, `./install.sh`), or an interpreter is
/// given it first (`bash scripts/deploy.sh production`, `python deploy.py`). A script named
/// for deploying deploys; one named for installing (`install.sh`, `install-deps.sh`,
/// `uninstall.sh`) or for setting a machine up (`./setup`, `bin/setup`,
/// `scripts/bootstrap.sh`: the name alone, not `setup-plan.sh`) installs. Only the file's
/// own name counts (`deploy/build.sh` builds); asking for its help, or a dry run, does not.
pub(super) fn script_effects(program: &str, name: &str, arguments: &[Word]) -> ClassSet {
    let mut effects = ClassSet::EMPTY;
    let Some((file, script_arguments)) = script_file(program, name, arguments) else {
        return effects;
    };
    // A shell told `-n` reads the script for its syntax and runs nothing.
    let syntax_only = matches!(name, "bash" | "sh" | "zsh" | "dash" | "ksh")
        && arguments
            .iter()
            .take_while(|word| word.text.starts_with('-'))
            .any(|word| word.text == "-n");
    let rehearsal = syntax_only
        || arguments.iter().any(|word| {
            matches!(
                word.text.as_str(),
                "--dry-run" | "--dryrun" | "--help" | "-h" | "--check" | "--plan" | "--noop"
            )
        });
    if rehearsal {
        return effects;
    }
    if names_deploy_task(file) {
        effects.insert(Class::Deploy);
    }
    // Python's packaging script is judged by the command it is given (`python setup.py
    // install`, `develop`; `sdist upload` publishes; `build_ext --inplace` builds).
    if file == "setup.py" {
        let given = |names: &[&str]| {
            arguments
                .iter()
                .any(|word| names.contains(&word.text.as_str()))
        };
        if given(&["install", "develop"]) {
            effects.insert(Class::Install);
        }
        if given(&["upload", "register"]) {
            effects.insert(Class::Deploy);
        }
        return effects;
    }
    let stem = file.split('.').next().unwrap_or(file).to_ascii_lowercase();
    if names_install_task(&stem) || matches!(stem.as_str(), "setup" | "bootstrap") {
        effects.insert(Class::Install);
    }
    if names_tunnel(&stem) {
        effects.insert(Class::Network);
    }
    // `python3 scripts/reset_db.py --prod`, `tools/backfill.py --apply --env staging`: the
    // project's own script told to work on production or staging (a build told to build
    // for production, `build.py --prod`, builds).
    let builds = task_words(&stem).iter().any(|part| {
        matches!(
            part.as_str(),
            "build"
                | "bundle"
                | "compile"
                | "test"
                | "tests"
                | "lint"
                | "check"
                | "fmt"
                | "format"
                | "dev"
                | "serve"
                | "preview"
        )
    });
    if !builds && targets_deployment(script_arguments) {
        effects.insert(Class::Deploy);
    }
    // A script that takes a task as its first word, as a task runner does
    // (`./manage_database.sh install`, `scripts/ops.sh deploy production`): the whole word
    // only, since a script's words are as often its data (`create_worktree.py test-push`,
    // `rails tailwindcss:install`, a generator's).
    if let Some(task) = script_arguments
        .iter()
        .find(|word| !word.text.starts_with('-'))
        .map(|word| word.text.as_str())
    {
        if matches!(task, "deploy" | "publish" | "release" | "ship") {
            effects.insert(Class::Deploy);
        }
        if matches!(task, "install" | "uninstall") {
            effects.insert(Class::Install);
        }
    }
    effects
}

/// The file name of the script a command runs, as [`script_effects`] reads it, and the
/// words given to the script.
fn script_file<'a>(
    program: &'a str,
    name: &str,
    arguments: &'a [Word],
) -> Option<(&'a str, &'a [Word])> {
    // PowerShell is given its script by `-File` (`-f`), after options that take values
    // (`-ExecutionPolicy Bypass`).
    let powershell_file = matches!(name, "pwsh" | "powershell")
        .then(|| {
            arguments
                .iter()
                .position(|word| matches!(word.text.to_ascii_lowercase().as_str(), "-file" | "-f"))
                .map(|at| at + 1)
                .filter(|at| *at < arguments.len())
        })
        .flatten();
    // `pwsh -Command "Get-Content a/upload.ts"` runs a command line, no script file.
    let powershell_command = matches!(name, "pwsh" | "powershell")
        && arguments.iter().any(|word| {
            matches!(
                word.text.to_ascii_lowercase().as_str(),
                "-command" | "-c" | "-encodedcommand" | "-e" | "-ec"
            )
        });
    if powershell_command && powershell_file.is_none() {
        return None;
    }
    let (script, rest) = if program.contains(['/', '\\']) {
        (program, arguments)
    } else if let Some(at) = powershell_file {
        (arguments[at].text.as_str(), &arguments[at + 1..])
    } else if SCRIPT_INTERPRETERS.contains(&name) {
        // `python3 -c "…open('deploy.yml')…"`: code given on the line, no script file.
        if super::inline::inline_code(name, arguments).is_some() {
            return None;
        }
        let at = arguments
            .iter()
            .position(|word| !word.text.starts_with('-'))
            .filter(|at| {
                let text = &arguments[*at].text;
                text.contains('.') || text.contains('/')
            })?;
        (arguments[at].text.as_str(), &arguments[at + 1..])
    } else {
        return None;
    };
    // (A name with blanks in it is a command line given as one word, not a file.)
    let file = script.rsplit(['/', '\\']).next().unwrap_or(script);
    (!file.contains(char::is_whitespace)).then_some((file, rest))
}

/// A task runner's task named for installing (`make install`, `just install-hooks`, `npm
/// run deps:install`, `make uninstall`) or for setting the machine up (`make setup`, `yarn
/// bootstrap`: the task's whole name). `make install` into a staging folder given as a
/// relative path or under `/tmp` (`DESTDIR=/tmp/stage`, `PREFIX=./dist`) only builds.
fn installs_by_name(name: &str, arguments: &[Word]) -> bool {
    // A package manager's own `install` is judged by the table (`pnpm install
    // --lockfile-only` resolves without installing); only a script it runs counts here.
    // Gradle's `installDebug` puts the app being built on a device or emulator.
    if name.starts_with("gradle") {
        return false;
    }
    let mut first = arguments.iter().filter(|word| !word.text.starts_with('-'));
    if matches!(name, "npm" | "yarn" | "pnpm" | "bun")
        && !first.next().is_some_and(|word| {
            matches!(word.text.as_str(), "run" | "run-script")
                || (name != "npm" && word.text.contains(':'))
        })
    {
        return false;
    }
    let staged = arguments.iter().any(|word| {
        ["DESTDIR=", "PREFIX=", "prefix="].iter().any(|key| {
            word.text.strip_prefix(key).is_some_and(|to| {
                to.starts_with("/tmp/")
                    || !(to.starts_with('/') || to.starts_with('~') || to.starts_with('$'))
            })
        })
    });
    !staged
        && arguments.iter().any(|word| {
            names_install_task(&word.text) || matches!(word.text.as_str(), "setup" | "bootstrap")
        })
}

/// A task or script named for installing: a word of its name is `install` or `uninstall`.
fn names_install_task(word: &str) -> bool {
    !word.starts_with('-')
        && task_words(word)
            .iter()
            .any(|part| matches!(part.as_str(), "install" | "uninstall"))
}

/// A task named for deploying: `deploy`, `publish`, `ship`, `push`, `upload`, `destroy`,
/// alone or qualified (`deploy:prod`, `publish-npm`, `api:deploy`, `publishReleaseBundle`),
/// or for releasing (`release`, `release:minor`) unless it names a build too
/// (`build:release`, `release-notes`, `assembleRelease`). A `local` one publishes into
/// this machine's own repository (`publishToMavenLocal`, `publish:local`).
fn names_deploy_task(word: &str) -> bool {
    let parts = task_words(word);
    let named = |names: &[&str]| parts.iter().any(|part| names.contains(&part.as_str()));
    // `apply` only as a whole word (`make apply`, `tf:apply`): Gradle's `spotlessApply`
    // formats.
    let applies = word
        .split([':', '-', '_', '/', '.', ','])
        .any(|part| part.eq_ignore_ascii_case("apply"));
    !word.starts_with('-')
        && !named(&["local"])
        && (named(&["deploy", "publish", "ship", "destroy", "push", "upload"])
            || applies
            // `db:migrate:prod`, `seed-production`: production's data changed by name
            // (`build:prod` builds).
            || (parts.iter().any(|part| names_production(part))
                && named(&[
                    "migrate", "migration", "migrations", "seed", "db", "reset", "drop",
                    "rollback", "sync", "restore",
                ]))
            || (named(&["release"])
                && !named(&[
                    "build", "bundle", "compile", "assemble", "notes", "note", "check", "test",
                    "lint", "dry",
                ])))
}

/// Whether a script's options name production or staging as its target (`--prod`,
/// `--production`, `--staging`, `--env production`, `-e prod`, `--stage=staging`).
fn targets_deployment(arguments: &[Word]) -> bool {
    let deployed = |value: &str| {
        let value = value.trim_matches(['"', '\'']);
        crate::matcher::shell::runners::names_production(value)
            || matches!(value.to_ascii_lowercase().as_str(), "staging" | "stg")
    };
    arguments.iter().enumerate().any(|(at, word)| {
        // (PowerShell's parameters are caseless: `-Environment Production`.)
        let text = word.text.to_ascii_lowercase();
        if matches!(
            text.as_str(),
            "--prod" | "--production" | "--staging" | "--live" | "--push" | "--publish"
        ) {
            return true;
        }
        const TARGETS: &[&str] = &[
            "--env",
            "-e",
            "--environment",
            "-environment",
            "--stage",
            "--target-env",
        ];
        match text.split_once('=') {
            Some((option, value)) => TARGETS.contains(&option) && deployed(value),
            None => {
                TARGETS.contains(&text.as_str())
                    && arguments
                        .get(at + 1)
                        .is_some_and(|next| deployed(&next.text))
            }
        }
    })
}

/// An option whose name says the command shows or packs up secrets (`--print-secrets`,
/// `--reveal-secrets`, `--show-password`, `--include-env`, `--dump-tokens`).
pub(super) fn reveals_secrets_by_option(arguments: &[Word]) -> bool {
    arguments.iter().any(|word| {
        let Some(option) = word.text.strip_prefix("--") else {
            return false;
        };
        let option = option
            .split('=')
            .next()
            .unwrap_or(option)
            .to_ascii_lowercase();
        let parts: Vec<&str> = option.split(['-', '_']).collect();
        let shows = parts.iter().any(|part| {
            matches!(
                *part,
                "print" | "show" | "reveal" | "dump" | "include" | "export" | "unmask"
            )
        });
        let secrets = parts.iter().any(|part| {
            matches!(
                *part,
                "secret"
                    | "secrets"
                    | "password"
                    | "passwords"
                    | "token"
                    | "tokens"
                    | "env"
                    | "credentials"
                    | "creds"
                    | "keys"
            )
        });
        shows && secrets
    })
}

/// A task or script named for a tunnel that opens a server of this machine to the internet
/// (`start_tunnel.sh`, `npm run tunnel`, `test_serveo.sh`, `ngrok:start`).
fn names_tunnel(word: &str) -> bool {
    !word.starts_with('-')
        && task_words(word).iter().any(|part| {
            matches!(
                part.as_str(),
                "tunnel" | "tunnels" | "ngrok" | "serveo" | "localtunnel" | "cloudflared"
            )
        })
}

/// Words of a task's name in lower case, cut at `:`, `-`, `_`, `/`, `.` and `,`
/// (`db:reset`, `publish-npm`, Bazel's `//infra/prod:destroy`) and where a lower-case
/// letter meets an upper-case one (Gradle's `:app:publishReleaseBundle`).
fn task_words(word: &str) -> Vec<String> {
    let mut words = Vec::new();
    for part in word.split([':', '-', '_', '/', '.', ',']) {
        let mut current = String::new();
        let mut lower_before = false;
        for c in part.chars() {
            if c.is_uppercase() && lower_before && !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            lower_before = c.is_lowercase() || c.is_ascii_digit();
            current.extend(c.to_lowercase());
        }
        words.push(current);
    }
    words
}

/// A task named for wiping a database: `db:drop`, `wipe`, `truncate-all`, or a reset of
/// one (`db:reset`, `reset-db`, `db:fresh`, `db:seed:replant`).
fn names_wiping_task(word: &str) -> bool {
    let parts = task_words(word);
    let named = |names: &[&str]| parts.iter().any(|part| names.contains(&part.as_str()));
    !word.starts_with('-')
        && (named(&["drop", "wipe", "purge", "truncate", "nuke"])
            || (named(&["reset", "reseed", "replant", "fresh", "recreate"])
                && named(&["db", "database", "schema", "data"])))
}

/// Coding agents published as packages, by package name.
const AGENT_PACKAGES: &[(&str, &str)] = &[
    ("@anthropic-ai/claude-code", "claude"),
    ("@openai/codex", "codex"),
    ("@google/gemini-cli", "gemini"),
    ("aider-chat", "aider"),
];

/// A coding agent run from its package (`npx -y @anthropic-ai/claude-code …`, `bunx`,
/// `pnpm dlx`, `yarn dlx`, `npm exec`, `uvx aider-chat`): the agent's name and the
/// arguments it is given, so its options are judged as the agent's own.
pub(super) fn agent_from_package<'t>(
    name: &str,
    texts: &'t [&'t str],
) -> Option<(&'static str, &'t [&'t str])> {
    let (package, rest) = started_package(name, texts)?;
    let (_, agent) = AGENT_PACKAGES.iter().find(|(known, _)| *known == package)?;
    Some((agent, rest))
}

/// The package a package runner starts (`npx -y nx run …`, `bunx`, `pnpm dlx`, `pnpm
/// exec`, `yarn dlx`, `npm exec`, `uvx`, `pipx run`), without its version, and the words
/// it is given.
pub(super) fn started_package<'t>(
    name: &str,
    texts: &'t [&'t str],
) -> Option<(&'t str, &'t [&'t str])> {
    let rest = match (name, texts.first()) {
        ("npx" | "bunx" | "pnpx" | "uvx", _) => texts,
        ("pnpm" | "yarn", Some(&("dlx" | "exec"))) | ("npm", Some(&("exec" | "x"))) => &texts[1..],
        ("pipx", Some(&"run")) => &texts[1..],
        _ => return None,
    };
    let at = rest.iter().position(|text| !text.starts_with('-'))?;
    let package = rest[at];
    // `@scope/name@1.2.3`, `name@latest`: the version is no part of the name.
    let bare = match package.rfind('@') {
        Some(0) | None => package,
        Some(version) => &package[..version],
    };
    // `npm exec -y pkg -- -p hi`: npm's `--` between the package and what it is given.
    let given = &rest[at + 1..];
    let given = match (name, given.split_first()) {
        ("npm", Some((&"--", after))) => after,
        _ => given,
    };
    Some((bare, given))
}

/// `gh api graphql -f query='query { … }'` (and `glab api graphql`): the fields make it a
/// POST, but a GraphQL query only reads; a `mutation` (or a subscription, or any other
/// field, method or input file) is what the table says.
pub(super) fn graphql_reads(name: &str, arguments: &[Word]) -> bool {
    if !matches!(name, "gh" | "glab") {
        return false;
    }
    let texts: Vec<&str> = arguments.iter().map(|word| word.text.as_str()).collect();
    if texts.get(..2) != Some(&["api", "graphql"]) || arguments.iter().any(|word| word.dynamic) {
        return false;
    }
    let mut query = false;
    let mut rest = texts[2..].iter();
    while let Some(text) = rest.next() {
        let field = match *text {
            "-f" | "-F" | "--field" | "--raw-field" => rest.next().copied(),
            "--jq" | "-q" | "--template" | "-t" | "-H" | "--header" | "--hostname" => {
                rest.next();
                continue;
            }
            "--paginate" | "--silent" | "--verbose" | "-i" | "--include" | "--slurp" => continue,
            _ => return false,
        };
        let Some((key, value)) = field.and_then(|field| field.split_once('=')) else {
            return false;
        };
        if key == "query" {
            let body = value.trim_start();
            let operation = body.starts_with('{') || body.starts_with("query");
            if !operation || body.contains("mutation") || body.contains("subscription") {
                return false;
            }
            query = true;
        } else if !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return false;
        }
    }
    query
}

/// Reads that print a stored secret whatever the reader's class: GitLab's CI/CD variables
/// through its API (`glab api projects/x/variables/DEPLOY_KEY`, values included), and a
/// registry token from a package manager's configuration (`npm config get
/// //registry.npmjs.org/:_authToken`).
pub(super) fn prints_stored_secret(name: &str, arguments: &[Word]) -> bool {
    let texts: Vec<&str> = arguments.iter().map(|word| word.text.as_str()).collect();
    match (name, texts.as_slice()) {
        ("glab", ["api", rest @ ..]) => rest
            .iter()
            .any(|text| !text.starts_with('-') && text.contains("variables")),
        ("npm" | "pnpm" | "yarn", ["config", "get", rest @ ..]) => rest.iter().any(|text| {
            let lower = text.to_ascii_lowercase();
            lower.contains("_auth") || lower.contains("token") || lower.contains("password")
        }),
        _ => false,
    }
}
