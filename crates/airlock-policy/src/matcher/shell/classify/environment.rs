//! The environment: commands that print all of it, or one variable, and lines that print
//! a variable named like a credential.

use super::super::basename;
use super::super::lex::{Segment, Word};
use super::programs;
use super::remote::container_command;
use super::words::unwrapped;
use crate::classes::Class;

/// The class of a command about the shell's own state that prints no secret, when it is
/// one: `set -e`, `set -o pipefail`, `set -- a b` change options or arguments (only a
/// bare `set` prints the variables); `printenv NAME` prints one variable, a look at
/// `PATH` or a read of `API_KEY`.
pub(super) fn variables_read(name: &str, arguments: &[Word], job_pids: &[String]) -> Option<Class> {
    match name {
        // `kill %1`, `kill $!`, `kill $PID` after `PID=$!`: a job this shell started
        // (`npm run dev & sleep 3; kill %1`) is its own to stop.
        "kill" if kills_own_jobs(arguments, job_pids) => Some(Class::ReadOnly),
        "set" if !arguments.is_empty() => Some(Class::ReadOnly),
        // `declare -px`, `typeset -p`: every variable with its value; `declare -p TOKEN`
        // the named ones; `declare -x NAME=1`, `declare -a list` only set.
        "declare" | "typeset" => {
            let names: Vec<&Word> = arguments
                .iter()
                .filter(|word| !word.text.starts_with(['-', '+']))
                .collect();
            let options: String = arguments
                .iter()
                .filter(|word| word.text.starts_with('-'))
                .map(|word| word.text.as_str())
                .collect();
            Some(match (names.is_empty(), options.contains('p')) {
                (true, _) if options.is_empty() || options.contains(['p', 'x', 'f']) => {
                    Class::CredentialSearch
                }
                (false, true)
                    if names.iter().any(|word| {
                        word.dynamic
                            || programs::secret_name(word.text.split('=').next().unwrap_or(""))
                    }) =>
                {
                    Class::CredentialAccess
                }
                _ => Class::ReadOnly,
            })
        }
        // `mount` alone lists what is mounted.
        "mount" if arguments.iter().all(|word| word.text == "-l") => Some(Class::ReadOnly),
        // `sysctl hw.model`, `sysctl -n kern.ostype`, `sysctl -a`: a look at kernel settings;
        // a value given (`name=value`) or loaded (`-w`, `-p`, `--system`, `-f`) sets them.
        "sysctl" if !arguments.iter().any(sets_kernel_setting) => Some(Class::ReadOnly),
        "printenv" if arguments.iter().any(|word| !word.text.starts_with('-')) => {
            let secret = arguments
                .iter()
                .any(|word| word.dynamic || programs::secret_name(&word.text));
            Some(if secret {
                Class::CredentialAccess
            } else {
                Class::ReadOnly
            })
        }
        _ => None,
    }
}

/// A command that prints the whole environment: `env`, `printenv`, `set`, `export -p`,
/// `declare -px` (with no names). (`compgen -e` prints the names alone.)
pub(super) fn dumps_environment(segment: &Segment) -> bool {
    // `declare -px` is read as written: the wrappers of assignments would take `declare`.
    let words = match segment.words.first() {
        Some(first) if matches!(first.text.as_str(), "declare" | "typeset") => &segment.words[..],
        _ => unwrapped(&segment.words),
    };
    let Some((first, arguments)) = words.split_first() else {
        return false;
    };
    if first.dynamic {
        return false;
    }
    let names = arguments.iter().any(|word| !word.text.starts_with('-'));
    match basename(&first.text) {
        "env" | "printenv" | "set" | "export" => !names,
        "declare" | "typeset" => {
            !names && arguments.iter().any(|word| word.text.contains(['p', 'x']))
        }
        _ => false,
    }
}

/// The program a segment runs (its basename) and its arguments, when every word of it is
/// written out (no expansion computes one).
fn written_out(segment: &Segment) -> Option<(&str, Vec<&str>)> {
    let words = unwrapped(&segment.words);
    if words.iter().any(|word| word.dynamic) {
        return None;
    }
    program_words(segment)
}

/// The program a segment runs, by its name (past wrappers), and its words, when the
/// program is written out (its words may be computed).
fn program_words(segment: &Segment) -> Option<(&str, Vec<&str>)> {
    let words = unwrapped(&segment.words);
    let (first, arguments) = words.split_first()?;
    if first.dynamic {
        return None;
    }
    Some((
        basename(&first.text),
        arguments.iter().map(|word| word.text.as_str()).collect(),
    ))
}

/// A command run in a container or pod that prints the whole environment there (`docker
/// compose exec worker env`, `docker exec web printenv`, `kubectl exec api -- env`), or
/// the environment a container was given printed by `docker inspect`: the application's
/// settings, its keys and passwords among them.
pub(super) fn container_dumps_environment(segment: &Segment) -> bool {
    let Some((program, texts)) = written_out(segment) else {
        return false;
    };
    // `docker inspect web --format '{{json .Config.Env}}'`: the environment it was given.
    if matches!(program, "docker" | "podman" | "nerdctl")
        && texts.contains(&"inspect")
        && texts.iter().any(|text| text.contains(".Config.Env"))
    {
        return true;
    }
    let inner = match container_command(program, &texts, true) {
        Some(found) => &texts[found.start..],
        None if matches!(program, "kubectl" | "oc") && texts.contains(&"exec") => texts
            .iter()
            .position(|text| *text == "--")
            .map_or(&[][..], |at| &texts[at + 1..]),
        None => return false,
    };
    let Some((program, rest)) = inner.split_first() else {
        return false;
    };
    let names = rest.iter().any(|text| !text.starts_with('-'));
    match basename(program) {
        "env" | "printenv" | "set" | "export" => !names,
        _ => false,
    }
}

/// The patterns of a `grep`/`egrep`/`rg` filter of a pipe, given as operands or by `-e`,
/// when every option is one that keeps lines as they are (`-E`, `-P`, `-i`, `-n`,
/// `--color=never`, or one of `also`); `None` for any other option (`-v` keeps the rest,
/// `-o` cuts) or a computed word.
fn filter_patterns<'s>(segment: &'s Segment, also: &[&str]) -> Option<Vec<&'s str>> {
    let words = unwrapped(&segment.words);
    let (first, arguments) = words.split_first()?;
    if first.dynamic || !matches!(basename(&first.text), "grep" | "egrep" | "rg") {
        return None;
    }
    let mut patterns = Vec::new();
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        if word.dynamic {
            return None;
        }
        match word.text.as_str() {
            "-e" | "--regexp" => match words.next() {
                Some(pattern) if !pattern.dynamic => patterns.push(pattern.text.as_str()),
                _ => return None,
            },
            "-E" | "-P" | "-i" | "-n" | "--color=never" => {}
            text if also.contains(&text) => {}
            text if text.starts_with('-') => return None,
            text => patterns.push(text),
        }
    }
    Some(patterns)
}

/// A filter of the environment's lines that keeps only the variables it names, none named
/// like a credential (`env | grep -E '^(LANG|DISPLAY)='`, `env | rg '^PATH='`): what
/// passes is those values. One pattern, anchored at the line's start and closed by `=`,
/// of names alone, read from the pipe; any other option (`-v` keeps the rest) or operand
/// is not such a filter.
pub(super) fn keeps_named_variables(segment: &Segment) -> bool {
    let Some(patterns) = filter_patterns(segment, &["-N", "-x", "--no-line-number"]) else {
        return false;
    };
    let [pattern] = patterns.as_slice() else {
        return false;
    };
    let Some(names) = pattern
        .strip_prefix('^')
        .and_then(|rest| rest.strip_suffix('='))
    else {
        return false;
    };
    let names = names
        .strip_prefix('(')
        .and_then(|inner| inner.strip_suffix(')'))
        .unwrap_or(names);
    names.split('|').all(|name| {
        let upper = name.to_ascii_uppercase();
        name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !programs::secret_name(name)
            && !["AUTH", "PASS", "URL", "URI", "COOKIE", "CERT", "SIGN"]
                .iter()
                .any(|word| upper.contains(word))
    })
}

impl super::Judge<'_> {
    /// The segment at `index` of `segments` reads the environment that the facts at
    /// `printed` printed: a filter of named variables or of names alone (`env | grep -E
    /// '^(LANG|PATH)='`, `env | cut -d= -f1`) takes it out of the credential search; one
    /// for secrets (`env | grep -i token`) makes it credential access, unless a later
    /// filter of the same pipe cuts the lines to names. Whether values still flow on.
    pub(super) fn environment_filtered(
        &mut self,
        printed: std::ops::Range<usize>,
        segments: &[Segment],
        index: usize,
    ) -> bool {
        let segment = &segments[index];
        let names_only = if !segment.piped {
            return true;
        } else if keeps_named_variables(segment) || keeps_names_only(segment) {
            true
        } else if picks_secrets(segment) {
            // (`env | grep -i token | cut -d= -f1`: still only their names.)
            segments[index + 1..]
                .iter()
                .take_while(|next| next.piped)
                .any(keeps_names_only)
        } else {
            return true;
        };
        for facts in &mut self.out[printed] {
            if names_only {
                facts.classes = super::remove(facts.classes, Class::CredentialSearch);
                if facts.classes.is_empty() {
                    facts.classes.insert(Class::ReadOnly);
                }
            } else {
                facts.classes.insert(Class::CredentialAccess);
            }
        }
        !names_only
    }

    /// `echo "$GHCR_TOKEN" | docker login ghcr.io -u me --password-stdin`, `aws ecr
    /// get-login-password | docker login … --password-stdin`, `gh auth token | gh auth login
    /// --with-token`: a secret printed straight into a program that reads its password or
    /// token from its input never reaches the agent. The login is what a person decides on
    /// (asked), not a read of credentials to refuse; a credential file's content so handed
    /// (`cat ~/.docker/token | …`) is still read.
    pub(super) fn secret_handed_to_login(
        &mut self,
        segments: &[Segment],
        before: Option<(usize, std::ops::Range<usize>)>,
        index: usize,
    ) {
        let Some((_, printed)) = before else {
            return;
        };
        if !segments[index].piped || !reads_secret_from_input(&segments[index]) {
            return;
        }
        for index in printed {
            let facts = &mut self.out[index];
            if facts.credential.iter().any(|credential| *credential) {
                continue;
            }
            self.handed_to_login.push(index);
            if facts.classes.contains(Class::CredentialAccess) {
                facts.classes = super::remove(facts.classes, Class::CredentialAccess);
                facts.classes.insert(Class::CredentialSearch);
            }
        }
    }

    /// `cat ~/.config/app/settings.json | grep -i token`, `docker inspect web | grep -i
    /// secret`, `git log -p --all | grep password`: a filter for secrets' names (the segment
    /// at `index`, whose facts start at `judged`) over what holds them (the segment before
    /// and its facts) prints them.
    pub(super) fn secrets_filtered(
        &mut self,
        segments: &[Segment],
        before: Option<(usize, std::ops::Range<usize>)>,
        index: usize,
        judged: usize,
    ) {
        let segment = &segments[index];
        // `git config --list | grep -E 'core\.(autocrlf|eol)'`: git's settings cut to ones
        // named, none of which holds a secret, print only those.
        if let Some((before, printed)) = before.clone() {
            if segment.piped
                && lists_git_settings(&segments[before])
                && keeps_plain_settings(segment)
            {
                for facts in &mut self.out[printed] {
                    facts.classes = super::remove(facts.classes, Class::CredentialSearch);
                    if facts.classes.is_empty() {
                        facts.classes.insert(Class::ReadOnly);
                    }
                }
            }
        }
        if segment.piped
            && before.is_some_and(|(before, printed)| {
                prints_secret_holders(&segments[before]) || self.reads_own_files(&self.out[printed])
            })
            && picks_secret_values(segment)
        {
            for facts in &mut self.out[judged..] {
                facts.classes.insert(Class::CredentialSearch);
            }
        }
    }
}

/// A filter of the environment's lines that keeps only the names (`env | cut -d= -f1`,
/// `env | awk -F= '{print $1}'`, `env | sed 's/=.*//'`): no value passes.
pub(super) fn keeps_names_only(segment: &Segment) -> bool {
    let Some((program, texts)) = written_out(segment) else {
        return false;
    };
    match (program, texts.as_slice()) {
        ("cut", options) => {
            let joined = options.concat();
            matches!(
                joined.as_str(),
                "-d=-f1" | "-f1-d=" | "-d=-f 1" | "-f1-d =" | "--delimiter==--fields=1"
            ) || options == ["-d", "=", "-f", "1"]
                || options == ["-d", "=", "-f1"]
                || options == ["-f1", "-d", "="]
                || options == ["-d=", "-f", "1"]
        }
        ("awk", ["-F=", program] | ["-F", "=", program]) => {
            matches!(program.replace(' ', "").as_str(), "{print$1}")
        }
        ("sed", [script] | ["-e", script]) => matches!(*script, "s/=.*//" | "s/=.*$//"),
        _ => false,
    }
}

/// A filter of the environment's lines for names of secrets (`env | grep -i token`, `set
/// | grep KEY`): what passes is the secrets' values.
pub(super) fn picks_secrets(segment: &Segment) -> bool {
    let words = unwrapped(&segment.words);
    let Some((first, arguments)) = words.split_first() else {
        return false;
    };
    if first.dynamic || !matches!(basename(&first.text), "grep" | "egrep" | "rg" | "ag") {
        return false;
    }
    !inverts(arguments)
        && arguments
            .iter()
            .filter(|word| !word.text.starts_with('-'))
            .any(|word| {
                // (A pattern computed at run time may pick anything: the dump stays a search.)
                let upper = word.text.to_ascii_uppercase();
                !word.dynamic
                    && [
                        "TOKEN",
                        "SECRET",
                        "PASS",
                        "KEY",
                        "CREDENTIAL",
                        "AUTH",
                        "API",
                    ]
                    .iter()
                    .any(|name| upper.contains(name))
            })
}

/// `git config --list` (`-l`, any scope): every setting with its value.
fn lists_git_settings(segment: &Segment) -> bool {
    let words = unwrapped(&segment.words);
    let Some((first, arguments)) = words.split_first() else {
        return false;
    };
    !first.dynamic
        && basename(&first.text) == "git"
        && arguments.first().is_some_and(|word| word.text == "config")
        && arguments
            .iter()
            .any(|word| matches!(word.text.as_str(), "--list" | "-l"))
}

/// A filter of settings' lines whose patterns each name settings (a run of three letters or
/// more), none where secrets are kept (URLs, HTTP headers, credentials, tokens, passwords).
fn keeps_plain_settings(segment: &Segment) -> bool {
    const SECRET_PLACES: &[&str] = &[
        "url",
        "http",
        "cred",
        "token",
        "pass",
        "secret",
        "auth",
        "header",
        "insteadof",
        "key",
    ];
    let Some(patterns) = filter_patterns(segment, &["-w", "-F"]) else {
        return false;
    };
    !patterns.is_empty()
        && patterns.iter().all(|pattern| {
            let lower = pattern.to_ascii_lowercase();
            let named = lower
                .split(|c: char| !c.is_ascii_alphabetic())
                .any(|run| run.len() >= 3);
            named && !SECRET_PLACES.iter().any(|place| lower.contains(place))
        })
}

/// A registry or forge login that takes its password or token from its input
/// (`docker login --password-stdin`, also Podman's, nerdctl's, Buildah's, Skopeo's, ORAS's
/// and crane's, `helm registry login --password-stdin`, `gh auth login --with-token`).
fn reads_secret_from_input(segment: &Segment) -> bool {
    let Some((program, texts)) = program_words(segment) else {
        return false;
    };
    match program {
        "docker" | "podman" | "nerdctl" | "buildah" | "skopeo" | "oras" | "crane" => {
            texts.first() == Some(&"login") && texts.contains(&"--password-stdin")
        }
        "helm" => texts.starts_with(&["registry", "login"]) && texts.contains(&"--password-stdin"),
        "gh" => texts.starts_with(&["auth", "login"]) && texts.contains(&"--with-token"),
        _ => false,
    }
}

/// A command that prints where secrets are kept: a container's settings, its environment
/// among them (`docker inspect web`, `docker exec web env`, `kubectl exec pod --
/// printenv`), services' and CI jobs' logs (`journalctl -u api`, `docker logs web`,
/// `kubectl logs pod`, `gh run view --log`), or the history's patches, every secret ever
/// committed (`git log -p --all`).
pub(super) fn prints_secret_holders(segment: &Segment) -> bool {
    let Some((program, texts)) = program_words(segment) else {
        return false;
    };
    match program {
        // Logs: what services printed, keys and tokens they were given among it (a log
        // file printed whole, too: `cat /var/log/nginx/access.log`, `Get-Content
        // C:\inetpub\logs\…\*.log`).
        "journalctl" => true,
        "cat" | "tail" | "head" | "zcat" | "less" | "more" => texts
            .iter()
            .filter(|text| !text.starts_with('-'))
            .any(|text| names_log_file(text)),
        "docker" | "podman" | "nerdctl" => {
            matches!(
                texts.iter().find(|text| !text.starts_with('-')).copied(),
                Some("inspect" | "logs")
            ) || texts.starts_with(&["compose", "logs"])
                || (texts.contains(&"exec")
                    && texts
                        .iter()
                        .any(|text| matches!(*text, "env" | "printenv" | "set")))
        }
        "docker-compose" | "podman-compose" => texts.first() == Some(&"logs"),
        // Hosted platforms' logs (`heroku logs`, `fly logs`, `vercel logs`, `railway
        // logs`): what the deployed service printed.
        "heroku" | "fly" | "flyctl" | "vercel" | "railway" | "render" | "netlify" => texts
            .iter()
            .find(|text| !text.starts_with('-'))
            .is_some_and(|first| first.starts_with("logs")),
        // CI jobs' logs: what the pipeline printed, its secrets where it echoed them
        // (`gh run view 123 --log`, `glab ci trace`).
        "gh" => {
            texts.first() == Some(&"run")
                && texts.get(1) == Some(&"view")
                && texts
                    .iter()
                    .any(|text| matches!(*text, "--log" | "--log-failed"))
        }
        "glab" => texts.starts_with(&["ci", "trace"]),
        "kubectl" | "oc" => {
            texts.iter().find(|text| !text.starts_with('-')) == Some(&"logs")
                || texts.contains(&"exec")
                    && texts
                        .iter()
                        .any(|text| matches!(*text, "env" | "printenv" | "set"))
        }
        "git" => {
            texts.iter().find(|text| !text.starts_with('-')) == Some(&"log")
                && texts
                    .iter()
                    .any(|text| matches!(*text, "-p" | "--patch" | "-u"))
        }
        _ => false,
    }
}

/// A log file by its name or folder (`app.log`, `access.log.1`, `/var/log/syslog`,
/// `logs/worker.txt`).
fn names_log_file(text: &str) -> bool {
    let lower = text.to_ascii_lowercase().replace('\\', "/");
    let file = lower.rsplit('/').next().unwrap_or(&lower);
    file.ends_with(".log")
        || file.contains(".log.")
        || lower.starts_with("/var/log/")
        || lower.contains("/logs/")
        || lower.starts_with("logs/")
}

/// Whether a filter keeps the lines that do not match (`-v`, also in a cluster: `-viE`).
fn inverts(arguments: &[Word]) -> bool {
    arguments.iter().any(|word| {
        word.text == "--invert-match"
            || (word.text.starts_with('-')
                && !word.text.starts_with("--")
                && word.text.contains('v'))
    })
}

/// A filter of a file's or a container's lines for the words secrets are written under
/// (`grep -i token`, `grep -E 'secret|password'`), each a word of its own: `tokenizer`,
/// `keyboard` or `passthrough` are other words.
fn picks_secret_values(segment: &Segment) -> bool {
    const WORDS: &[&str] = &[
        "token",
        "secret",
        "password",
        "passwd",
        "pwd",
        "apikey",
        "api_key",
        "api-key",
        "credential",
        "private_key",
        "access_key",
        "bearer",
        "authorization",
        // Addresses that carry a password (`postgres://user:pass@…`).
        "database_url",
        "db_url",
        "dsn",
        "connection_string",
        "connectionstring",
    ];
    let words = unwrapped(&segment.words);
    let Some((first, arguments)) = words.split_first() else {
        return false;
    };
    // Inline code that shows a value under a secret's name from what it parses
    // (`cat ~/.claude.json | python3 -c "…print(d.get('primaryApiKey'))"`).
    if !first.dynamic {
        if let Some(code) = super::inline::inline_code(basename(&first.text), arguments) {
            return !code.dynamic && crate::matcher::shell::code::shows_secret_key(&code.text);
        }
    }
    if first.dynamic
        || !matches!(basename(&first.text), "grep" | "egrep" | "rg" | "ag")
        || inverts(arguments)
    {
        return false;
    }
    arguments
        .iter()
        .filter(|word| !word.text.starts_with('-') && !word.dynamic)
        .any(|word| {
            let lower = word.text.to_ascii_lowercase();
            WORDS.iter().any(|name| {
                lower.match_indices(name).any(|(at, _)| {
                    let before = lower[..at].chars().next_back();
                    let after = lower[at + name.len()..]
                        .trim_start_matches('s')
                        .chars()
                        .next();
                    !before.is_some_and(|c| c.is_ascii_alphabetic())
                        && !after.is_some_and(|c| c.is_ascii_alphabetic())
                })
            })
        })
}

/// Whether a segment prints the value of a variable named like a credential
/// (`echo "KEY=$OPENAI_API_KEY"`, `printf %s "${GITHUB_TOKEN}"`): the secret lands in the
/// transcript, which is reading it.
/// `echo "${!name}"`: prints a variable whose name is computed at run time, which may be
/// any of them, secrets included (looking for credentials, asked).
pub(super) fn prints_computed_variable(segment: &str) -> bool {
    segment.contains(crate::matcher::shell::lex::INDIRECT) && prints_words(segment)
}

/// Whether a segment's command, after the keywords that start a loop's or a branch's
/// body (`do echo $TOKEN`), prints its words: `echo`, `printf`, `print`.
fn prints_words(segment: &str) -> bool {
    segment
        .split_whitespace()
        .find(|word| !crate::matcher::shell::KEYWORDS.contains(word))
        .is_some_and(|first| matches!(basename(first), "echo" | "printf" | "print"))
}

/// On Windows `cmd` expands `%NAME%` too (`echo %DATABASE_PASSWORD%`), and the line may
/// reach it.
pub(super) fn prints_secret_variable(segment: &str, set_here: &[String], windows: bool) -> bool {
    if !prints_words(segment) {
        return false;
    }
    if windows
        && super::words::cmd_variables(segment)
            .into_iter()
            .any(|name| programs::secret_name(name) && !set_here.iter().any(|set| set == name))
    {
        return true;
    }
    let mut rest = segment;
    while let Some(at) = rest.find('$') {
        rest = &rest[at + 1..];
        let name: String = rest
            .trim_start_matches('{')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if programs::secret_name(&name) && !set_here.contains(&name) {
            return true;
        }
    }
    false
}

/// `ps e`, `ps eww`: BSD-style options that print every process's environment, secrets
/// included. The value of an option that takes one (`-C node`, `-o etime`, `-u helen`) is
/// a name, not options.
pub(super) fn lists_process_environments(name: &str, arguments: &[Word]) -> bool {
    const TAKES_VALUE: &[&str] = &[
        "-o",
        "-O",
        "-p",
        "-q",
        "-C",
        "-u",
        "-U",
        "-g",
        "-G",
        "-t",
        "-k",
        "--pid",
        "--ppid",
        "--sort",
        "--format",
        "--user",
        "--group",
        "--tty",
        "--cols",
        "--columns",
        "--rows",
    ];
    if name != "ps" {
        return false;
    }
    let mut value_next = false;
    arguments.iter().any(|word| {
        let is_value =
            std::mem::replace(&mut value_next, TAKES_VALUE.contains(&word.text.as_str()));
        !is_value
            && !word.text.starts_with('-')
            && word.text.contains('e')
            && word.text.chars().all(|c| c.is_ascii_alphabetic())
    })
}

/// Whether a word of `sysctl` sets a kernel setting rather than reading one: a value given
/// (`name=value`), or one of the options that write or load (`-w`, `-p`, `--system`, `-f`,
/// also clustered as in `-wq`); a word nobody can read counts.
fn sets_kernel_setting(word: &Word) -> bool {
    let text = word.text.as_str();
    let short_cluster = text.starts_with('-') && !text.starts_with("--");
    word.dynamic
        || text.contains('=')
        || matches!(text, "--write" | "--load" | "--system")
        || (short_cluster && text.contains(['w', 'p', 'f']))
}

/// The variable a segment that is only `NAME=$!` sets to the process id of the job just
/// started.
pub(super) fn job_pid_variable(words: &[Word]) -> Option<String> {
    match words {
        [word] => word
            .text
            .strip_suffix("=$!")
            .filter(|name| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
            .map(str::to_owned),
        _ => None,
    }
}

/// Every target of `kill` is a job of this shell (`%1`, `%+`, `$!`, or a variable the line
/// set to `$!`), after its signal options (`-9`, `-TERM`, `-s TERM`).
fn kills_own_jobs(arguments: &[Word], job_pids: &[String]) -> bool {
    let mut targets = Vec::new();
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        match word.text.as_str() {
            "-s" | "-n" => {
                words.next();
            }
            text if text.starts_with('-') && !word.dynamic => {}
            _ => targets.push(word),
        }
    }
    !targets.is_empty()
        && targets.iter().all(|word| {
            let variable = word.text.strip_prefix('$').map(|name| {
                name.strip_prefix('{')
                    .and_then(|name| name.strip_suffix('}'))
                    .unwrap_or(name)
            });
            word.text == "$!"
                || variable.is_some_and(|name| job_pids.iter().any(|pid| pid == name))
                || (!word.dynamic && word.text.starts_with('%'))
        })
}
