//! What the words of one command say, read without a `Judge`: plain names, operands, the
//! directory options (`git -C`), inline code, URL options, tools installed in a project.

use super::*;

/// A command name a person would read as what it is: ASCII letters, digits and a few
/// punctuation marks, no look-alikes.
pub(super) fn plain_name(text: &str) -> bool {
    !text.is_empty()
        && text.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '.' | '_' | '-' | '+' | '/' | ':' | '[' | ']' | '}' | '{')
        })
}

/// The words that are not options (after `--`, everything).
pub(super) fn operands(arguments: &[Word]) -> Vec<&Word> {
    let mut out = Vec::new();
    let mut options_done = false;
    for word in arguments {
        if !options_done && word.text == "--" {
            options_done = true;
            continue;
        }
        if !options_done && word.text.len() > 1 && word.text.starts_with('-') && !word.dynamic {
            continue;
        }
        out.push(word);
    }
    out
}

pub(super) fn remove(classes: ClassSet, class: Class) -> ClassSet {
    let mut out = ClassSet::EMPTY;
    for kept in classes.iter().filter(|kept| *kept != class) {
        out.insert(kept);
    }
    out
}

/// The directory a command is told to work in (`git -C dir`, `make -C dir`, `npm
/// --prefix dir`): its text and whether it is computed at run time.
pub(super) fn directory_option(name: &str, arguments: &[Word]) -> Option<(String, bool)> {
    let options: &[&str] = match name {
        "git" => &["-C", "--work-tree"],
        "make" | "gmake" | "go" => &["-C", "--directory"],
        "npm" | "pnpm" | "yarn" => &["--prefix", "-C", "--dir", "--cwd"],
        "uv" => &["--directory", "--project"],
        "cargo" => &["--manifest-path"],
        // `python -m http.server --directory /` serves that folder.
        "python" | "python3" if arguments.iter().any(|word| word.text == "http.server") => {
            &["--directory", "-d"]
        }
        _ => return None,
    };
    let mut found = None;
    for (index, word) in arguments.iter().enumerate() {
        if options.contains(&word.text.as_str()) {
            found = arguments
                .get(index + 1)
                .map(|value| (value.text.clone(), value.dynamic));
        } else if let Some((option, value)) = word.text.split_once('=') {
            if options.contains(&option) {
                found = Some((value.to_string(), word.dynamic));
            }
        }
    }
    if name == "cargo" {
        // The manifest's directory is where cargo works.
        found = found.map(|(text, dynamic)| {
            let directory = text
                .rsplit_once('/')
                .map_or(".", |(directory, _)| directory);
            (
                if directory.is_empty() {
                    "/".to_string()
                } else {
                    directory.to_string()
                },
                dynamic,
            )
        });
    }
    found
}

/// Whether a command's arguments are its subcommand words (the first `used`, with no
/// option among them) and then only `--help` or `--version`.
pub(super) fn only_asks_help(name: &str, texts: &[&str], used: usize) -> bool {
    let (subcommand, rest) = texts.split_at(used.min(texts.len()));
    let plain = |text: &&str| !text.starts_with('-') && !text.starts_with('+');
    // `spl-token wrap --help`: subcommand words the table does not list, then `--help`.
    let subcommand_help = |rest: &[&str]| match rest.split_last() {
        Some((&"--help", words)) => words.iter().all(|word| {
            word.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == ':')
                && word.starts_with(|c: char| c.is_ascii_alphabetic())
        }),
        _ => false,
    };
    subcommand.iter().all(plain)
        && (matches!(rest, ["--help"] | ["--version"] | ["-help"] | ["-version"])
            || (subcommand_help(rest) && !package_runner(name)))
}

/// A package runner: its next word is a package it fetches and runs (`npx cowsay --help`).
fn package_runner(name: &str) -> bool {
    matches!(
        name,
        "npx"
            | "pnpx"
            | "bunx"
            | "uvx"
            | "pipx"
            | "npm"
            | "pnpm"
            | "yarn"
            | "bun"
            | "uv"
            | "go"
            | "deno"
            | "dotnet"
            | "gem"
            | "pip"
            | "pip3"
            | "cargo"
    )
}

/// Whether a glob's last name matches only some entries of its folder: it has literal
/// text outside brackets (`*.log`, `test_*`) and no leading dot (`.*` and `.env*` can
/// match `.git` or `.env`).
pub(super) fn names_some_entries(name: &str) -> bool {
    if name.starts_with('.') {
        return false;
    }
    let mut in_brackets = false;
    let mut literal = false;
    for c in name.chars() {
        match c {
            '[' => in_brackets = true,
            ']' => in_brackets = false,
            _ if !in_brackets && (c.is_ascii_alphanumeric() || c == '_' || c == '-') => {
                literal = true;
            }
            _ => {}
        }
    }
    literal
}

/// The command a segment really runs: its words past every wrapper, assignment and
/// keyword (`sudo env X=1 timeout 5 curl …` is `curl …`); a wrapper alone is itself.
pub(super) fn unwrapped(words: &[Word]) -> &[Word] {
    let mut words = words;
    while let Some(inner) = strip_one_wrapper(words) {
        if inner.is_empty() {
            break;
        }
        words = inner;
    }
    words
}

/// Whether a segment produces code or data someone may run: a download, a decoder.
pub(super) fn feeds_code(segment: &Segment) -> bool {
    let words = unwrapped(&segment.words);
    let Some((first, arguments)) = words.split_first() else {
        return false;
    };
    if first.dynamic {
        return false;
    }
    let has = |flags: &[&str]| {
        arguments
            .iter()
            .any(|word| flags.contains(&word.text.as_str()))
    };
    match basename(&first.text) {
        "curl" | "wget" | "fetch" | "aria2c" | "http" | "https" | "xh" | "nc" | "ncat"
        | "netcat" | "socat" | "ssh" | "lynx" | "w3m" | "ftp" | "tftp" => true,
        "base64" | "base32" | "basenc" => has(&["-d", "--decode", "-D"]),
        "xxd" => has(&["-r", "-revert"]),
        "openssl" => has(&["-d", "base64", "enc"]),
        "gunzip" | "zcat" | "bunzip2" | "xz" | "unxz" | "uudecode" | "rev" | "tac" => true,
        "gzip" => has(&["-d", "--decompress"]),
        // Inline code that decodes, fetches, runs programs, hides what it calls or holds
        // another command's output may print code nobody has seen; code that only computes
        // from its own text and variables does not (unless it is piped into a runner:
        // `any_feeds_code`).
        name if python_family(name) || matches!(name, "perl" | "ruby" | "node" | "php") => {
            inline_code(name, arguments).is_some_and(|code| {
                (code.dynamic && substitutes_output(&code.text))
                    || crate::matcher::shell::code::may_produce_code(&code.text)
            })
        }
        "echo" | "printf" => arguments.iter().any(|word| {
            // `echo cm0gLXJmIH4= | base64 -d`: a long opaque token is a payload (`=` only
            // pads its end: a rule of `=====` is no payload).
            let body = word.text.trim_end_matches('=');
            word.text.len() >= 16
                && body.chars().filter(char::is_ascii_alphanumeric).count() >= 16
                && body
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/'))
        }),
        _ => false,
    }
}

/// Whether a word's text holds a command's output (`$(…)`, backticks).
fn substitutes_output(text: &str) -> bool {
    text.contains("$(") || text.contains('`')
}

/// Whether some segment produces code or data someone may run ([`feeds_code`]), or
/// prints a value computed at run time into a pipe that runs it (`echo "$P" | sh`): a
/// variable printed elsewhere (`echo $c`, PowerShell's `$obj | Add-Member`) is output.
pub(super) fn any_feeds_code(segments: &[Segment]) -> bool {
    segments.iter().enumerate().any(|(index, segment)| {
        feeds_code(segment)
            || ((prints_computed_value(segment) || runs_inline_code(segment))
                && segments
                    .get(index + 1)
                    .is_some_and(|next| next.piped && runs_its_input(next)))
    })
}

/// `python3 -c '…'`, `perl -e '…'`: what it prints, piped into a runner, is code.
fn runs_inline_code(segment: &Segment) -> bool {
    let words = unwrapped(&segment.words);
    words.split_first().is_some_and(|(first, arguments)| {
        !first.dynamic && inline_code(basename(&first.text), arguments).is_some()
    })
}

/// `echo $X`, `printf '%s' "$X"`.
fn prints_computed_value(segment: &Segment) -> bool {
    let words = unwrapped(&segment.words);
    match words.split_first() {
        Some((first, arguments)) if !first.dynamic => {
            matches!(basename(&first.text), "echo" | "printf")
                && arguments.iter().any(|word| word.dynamic)
        }
        _ => false,
    }
}

/// An interpreter's arguments name its code: an inline-code option (`-c`, `-e`, `-E`, `-p`,
/// or a cluster holding `e`, such as perl's `-lne`) or a script operand (not `-`), also a
/// computed path that cannot be empty (`node "$P/hook.js"`: a file, wherever it is).
fn given_code(arguments: &[Word]) -> bool {
    arguments.iter().any(|word| {
        let text = word.text.as_str();
        match text.strip_prefix('-') {
            None => !word.dynamic || computed_path(text),
            Some("" | "-" | "s") => false,
            Some(option) => {
                !option.starts_with('-')
                    && (matches!(option, "c" | "e" | "E" | "p" | "r")
                        || (option.len() > 1
                            && option.chars().all(|c| c.is_ascii_alphabetic())
                            && option.contains(['e', 'E'])))
            }
        }
    })
}

/// A computed word that names a file in some folder: an expansion, then a literal `/` and
/// a name (`$P/scripts/x.js`, `${ROOT}/hook.py`), never empty whatever the expansion is.
fn computed_path(text: &str) -> bool {
    text.starts_with('$')
        && text
            .rsplit_once('/')
            .is_some_and(|(_, name)| !name.is_empty() && !name.contains(['$', '`', '*', '?']))
}

/// A command that runs what it reads (`sh`, `python`, `xargs`, `iex`), or one nobody can
/// name.
fn runs_its_input(segment: &Segment) -> bool {
    // `printf … | python - <<'PY'`: a here-document or here-string is what it reads, not
    // the pipe.
    if segment.here_text.is_some() {
        return false;
    }
    let words = unwrapped(&segment.words);
    let Some(first) = words.first() else {
        return false;
    };
    if first.dynamic {
        return true;
    }
    let name = basename(&first.text).to_ascii_lowercase();
    // An interpreter given its code (`perl -lne '…'`, `python3 -c '…'`, `sh -c '…'`,
    // `python3 tool.py`) reads its input as data.
    let interpreter = SHELLS.contains(&name.as_str())
        || matches!(
            name.as_str(),
            "python" | "python3" | "perl" | "ruby" | "node" | "php" | "lua" | "bun" | "deno"
        );
    if interpreter && given_code(&words[1..]) {
        return false;
    }
    SHELLS.contains(&name.as_str())
        || matches!(
            name.as_str(),
            "python"
                | "python3"
                | "perl"
                | "ruby"
                | "node"
                | "php"
                | "lua"
                | "bun"
                | "deno"
                | "xargs"
                | "eval"
                | "source"
                | "."
                | "iex"
                | "invoke-expression"
                | "powershell"
                | "pwsh"
                | "cmd"
                | "osascript"
        )
}

/// A path standing for "some entry below `directory`" (with `tree`, everything below that
/// entry): the name is a control character no real file name uses in practice, so it
/// matches `*` and `**` but no literal pattern.
pub(super) fn any_child(directory: &str) -> String {
    if directory == "/" {
        "/\u{1}".to_string()
    } else {
        format!("{directory}/\u{1}")
    }
}

/// `host:path` or `user@host:path`: an operand of `scp`/`rsync` on another machine.
pub(super) fn is_remote_operand(text: &str) -> bool {
    match text.split_once(':') {
        Some((host, _)) => !host.is_empty() && !host.contains('/'),
        None => false,
    }
}

/// Whether a word is a web address (`http://…`, `https://…`, in any case).
pub(super) fn is_url(text: &str) -> bool {
    let lower = text.get(..8).unwrap_or(text).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// Whether a literal URL points at this machine.
pub(in crate::matcher::shell) fn is_local_url(text: &str) -> bool {
    let host = url_host(text);
    matches!(host.as_str(), "localhost" | "127.0.0.1" | "::1" | "0.0.0.0")
        || host.ends_with(".localhost")
}

/// The host of a URL as a command writes it, lower-case, without user info, port or
/// IPv6 brackets.
pub(super) fn url_host(text: &str) -> String {
    let rest = text.split_once("://").map_or(text, |(_, rest)| rest);
    let host_port = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = host_port
        .rsplit_once('@')
        .map_or(host_port, |(_, host)| host);
    let host = if let Some(inner) = host_port.strip_prefix('[') {
        inner.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// Cloud instance metadata services: they hand out the machine's credentials to anyone
/// on it who asks.
pub(super) fn is_instance_metadata(host: &str) -> bool {
    matches!(
        host,
        "169.254.169.254"
            | "169.254.170.2"
            | "169.254.170.23"
            | "fd00:ec2::254"
            | "metadata.google.internal"
            | "metadata.goog"
            | "metadata"
            | "100.100.100.200"
    )
}

/// HashiCorp Vault's secret engines under their default mounts (`/v1/secret/…`, `/v1/kv/…`,
/// `/v1/cubbyhole/…`): a read there is a secret's value, as `vault kv get` is.
pub(super) fn reads_secret_store(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = rest.find('/').map_or("", |at| &rest[at..]);
    ["/v1/secret/", "/v1/kv/", "/v1/cubbyhole/"]
        .iter()
        .any(|mount| path.starts_with(mount))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum UrlOption {
    Not,
    /// Takes no value.
    Flag,
    /// Takes a value that names nothing on disk.
    Value,
    /// Its value names a file written.
    Output,
    /// Its value is data sent, `@file` naming a file read.
    Sends,
    /// Its value names a file read.
    ReadsFile,
}

pub(super) fn url_option(name: &str, option: &str) -> UrlOption {
    if name == "wget" {
        return match option {
            "-O" | "--output-document" | "-P" | "--directory-prefix" | "-o" | "--output-file"
            | "-a" | "--append-output" => UrlOption::Output,
            "--post-file" | "--body-file" | "-i" | "--input-file" | "--certificate"
            | "--private-key" | "--load-cookies" => UrlOption::ReadsFile,
            "--post-data" | "--body-data" => UrlOption::Sends,
            "--header" | "--method" | "--user" | "--password" | "-U" | "--user-agent" | "-t"
            | "--tries" | "-T" | "--timeout" | "-e" | "--execute" => UrlOption::Value,
            _ => UrlOption::Not,
        };
    }
    match option {
        "-o" | "--output" | "-c" | "--cookie-jar" | "-D" | "--dump-header" | "--trace"
        | "--trace-ascii" | "--stderr" | "--output-dir" => UrlOption::Output,
        "-O" | "--remote-name" | "-J" | "--remote-header-name" => UrlOption::Flag,
        "-d" | "--data" | "--data-raw" | "--data-binary" | "--data-urlencode" | "--data-ascii"
        | "-F" | "--form" | "--form-string" | "--json" => UrlOption::Sends,
        "-T" | "--upload-file" | "-K" | "--config" | "--cert" | "-E" | "--key" | "--cacert"
        | "-b" | "--cookie" => UrlOption::ReadsFile,
        "-H" | "--header" | "-X" | "--request" | "-u" | "--user" | "-A" | "--user-agent" | "-e"
        | "--referer" | "-x" | "--proxy" | "-w" | "--write-out" | "-m" | "--max-time"
        | "--connect-timeout" | "-r" | "--range" | "--retry" | "-C" | "--continue-at"
        | "--resolve" | "--url" | "-U" | "--proxy-user" | "--limit-rate" | "-Y" | "-y"
        | "--max-redirs" | "--oauth2-bearer" | "--aws-sigv4" => UrlOption::Value,
        _ => UrlOption::Not,
    }
}

/// The tool a relative path names when it lies in a project's tool folder
/// (`.venv/bin/pip`, `venv/bin/python`, `node_modules/.bin/prisma`, `vendor/bin/phpunit`).
pub(super) fn installed_tool(path: &str) -> Option<&str> {
    let (folder, name) = path.rsplit_once(['/', '\\'])?;
    // `.\\gradlew.bat`, `mvnw.cmd`: the Windows script of the same wrapper.
    let name = name
        .strip_suffix(".bat")
        .or_else(|| name.strip_suffix(".cmd"))
        .filter(|stem| matches!(*stem, "gradlew" | "mvnw"))
        .unwrap_or(name);
    // A virtual environment's `Scripts\python.exe`, `pip.exe`: the tool, on Windows.
    let name = name
        .strip_suffix(".exe")
        .filter(|_| folder.ends_with("Scripts") || folder.ends_with("bin"))
        .unwrap_or(name);
    let tool_folder = folder.ends_with("node_modules/.bin")
        || ["bin", "Scripts"].iter().any(|bin| {
            folder.strip_suffix(bin).is_some_and(|parent| {
                let parent = parent.trim_end_matches('/');
                let last = parent.rsplit('/').next().unwrap_or(parent);
                matches!(
                    last,
                    ".venv" | "venv" | "env" | ".env" | ".tox" | "vendor" | "virtualenv"
                )
            })
        });
    // The build tool's wrapper a project keeps (`./gradlew publish`), or a Rails app's
    // binstub in its `bin/` (`bin/rails db:drop`): judged as the tool.
    let binstub = folder.trim_start_matches("./") == "bin" && matches!(name, "rails" | "rake");
    let wrapper = matches!(name, "gradlew" | "mvnw") || binstub;
    ((tool_folder || wrapper) && !name.is_empty()).then_some(name)
}

/// The options naming the build file a build tool runs (`make -f FILE`).
pub(super) fn build_file_options(name: &str) -> Option<&'static [&'static str]> {
    match name {
        "make" | "gmake" => Some(&["-f", "--file", "--makefile"]),
        "just" => Some(&["-f", "--justfile"]),
        "rake" => Some(&["-f", "--rakefile"]),
        _ => None,
    }
}

/// The values of `options` in `arguments`: `-f FILE`, `-fFILE`, `--file FILE`,
/// `--file=FILE`.
pub(super) fn option_value_words(arguments: &[Word], options: &[&str]) -> Vec<Word> {
    let mut values = Vec::new();
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        let text = word.text.as_str();
        if text == "--" {
            break;
        }
        // A long option in any case: `--outDir` is `--outdir`.
        let lower = if text.starts_with("--") {
            text.to_ascii_lowercase()
        } else {
            text.to_owned()
        };
        for option in options {
            if lower == *option {
                values.extend(words.next().cloned());
            } else if let Some(value) = lower
                .strip_prefix(option)
                .and_then(|rest| {
                    if option.starts_with("--") {
                        rest.strip_prefix('=')
                    } else {
                        Some(rest)
                    }
                })
                .filter(|value| !value.is_empty())
            {
                // ASCII case changes no length: the value is the original's tail.
                let value = &text[text.len() - value.len()..];
                values.push(Word {
                    text: value.to_string(),
                    dynamic: word.dynamic,
                    glob: None,
                    wild: false,
                });
            } else {
                continue;
            }
            break;
        }
    }
    values
}

/// Whether a word holds a `cmd` variable (`%APPDATA%`, `%USERPROFILE%`).
pub(super) fn cmd_variable(text: &str) -> bool {
    !cmd_variables(text).is_empty()
}

/// The names of the `cmd` variables a text holds (`%APPDATA%\x` holds `APPDATA`).
pub(super) fn cmd_variables(text: &str) -> Vec<&str> {
    let mut inside: Vec<&str> = text.split('%').skip(1).collect();
    // The text between two `%` is a name only when another `%` closes it.
    inside.pop();
    inside
        .into_iter()
        .step_by(2)
        .filter(|name| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
        .collect()
}

/// Whether `ln` is told to make symbolic links (`-s`, `-sf`, `--symbolic`).
pub(super) fn symbolic_link(arguments: &[Word]) -> bool {
    arguments
        .iter()
        .take_while(|word| word.text != "--")
        .any(|word| {
            word.text == "--symbolic"
                || (word.text.starts_with('-')
                    && !word.text.starts_with("--")
                    && word.text[1..].chars().all(|c| c.is_ascii_alphabetic())
                    && word.text.contains('s'))
        })
}

/// How a command reads whole folders into a copy or an archive, if it does.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum TreeCopy {
    No,
    /// `cp -r`, `scp -r`, `rsync`, `rclone`: the sources are read.
    Copies,
    /// `tar c`, `zip`, `7z a`: every operand is taken as changed, sources included.
    Archives,
}

/// Whether and how a command reads whole folders into a copy or an archive.
pub(super) fn copies_trees(words: &[Word]) -> TreeCopy {
    let Some((first, arguments)) = words.split_first() else {
        return TreeCopy::No;
    };
    if first.dynamic {
        return TreeCopy::No;
    }
    match basename(&first.text) {
        "cp" | "scp" | "rsync" | "rclone" => TreeCopy::Copies,
        "zip" | "7z" | "7za" => TreeCopy::Archives,
        "tar" | "bsdtar" | "gtar"
            if arguments.iter().any(|word| {
                word.text == "--create"
                    || (!word.text.starts_with("--")
                        && word
                            .text
                            .trim_start_matches('-')
                            .chars()
                            .all(|c| c.is_ascii_alphabetic())
                        && word.text.contains('c'))
            }) =>
        {
            TreeCopy::Archives
        }
        _ => TreeCopy::No,
    }
}

/// Options by which programs are commonly told where to write.
pub(super) const OUTPUT_OPTIONS: &[&str] = &[
    "-o",
    "--out",
    "--output",
    "--outdir",
    "--out-dir",
    "--output-dir",
    "--output-file",
    "--outfile",
    "--dest",
    "--destination",
    "--target-dir",
    "--save",
    "--save-to",
    "--save-dir",
    "--export-dir",
    // MkDocs' site.
    "--site-dir",
    "--log-file",
    "--logfile",
    "--log-dir",
    // pytest empties its base temporary folder before the run.
    "--basetemp",
];
