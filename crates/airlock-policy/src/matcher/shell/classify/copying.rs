//! How a copy-like command (`cp`, `ln`, `install`, `scp`, `rsync`) lays out its words,
//! read without a `Judge`: its operands and target, the files its options read or write,
//! and whether an option makes it run another program (`scp -S`, `rsync -e`, ssh's
//! `ProxyCommand`).

use super::*;

/// How a copy-like command (`cp`, `ln`, `install`, `scp`, `rsync`) lays out its words:
/// which operands are read, where it writes, and whether an option makes it run another
/// program.
#[derive(Debug, Default)]
pub(super) struct CopyLayout {
    /// The operands, without the values of options that take one (`scp -i KEY`, `rsync
    /// --exclude DIR`).
    pub(super) operands: Vec<Word>,
    /// `-t DIR`/`--target-directory DIR`: every operand is a source, copied into it.
    pub(super) target: Option<Word>,
    /// Values of options that name files it reads (`rsync --files-from F`, `scp -F CONFIG`)
    /// or writes (`rsync --log-file F`).
    pub(super) reads: Vec<Word>,
    pub(super) writes: Vec<Word>,
    /// An option makes it run a program it is given (`scp -S prog`, `rsync -e 'sh -c …'`,
    /// `-o ProxyCommand=…`, `install --strip-program=…`).
    pub(super) runs: bool,
    /// `rsync --remove-source-files`: the sources are deleted once copied.
    pub(super) removes_sources: bool,
}

/// What an option's value is to a copy-like command.
#[derive(Clone, Copy, PartialEq, Eq)]
enum CopyValue {
    /// Not a file (a port, a suffix, a pattern, a mode, the key ssh signs in with).
    Other,
    Target,
    Reads,
    Writes,
    /// A remote-shell command (`rsync -e`): plain `ssh` with options is what it is for.
    Shell,
    /// An ssh option (`-o Name=value`): some of them run local commands.
    SshOption,
    Runs,
}

/// The options of `name` that take a value, short (one letter) and long.
fn copy_value_option(name: &str, option: &str) -> Option<CopyValue> {
    use CopyValue::*;
    let found = match (name, option) {
        ("cp" | "ln" | "install", "-t" | "--target-directory") => Target,
        ("cp" | "ln" | "install", "-S" | "--suffix") => Other,
        ("install", "-m" | "--mode" | "-o" | "--owner" | "-g" | "--group") => Other,
        ("install", "--strip-program") => Runs,
        ("scp", "-c" | "-D" | "-i" | "-J" | "-l" | "-P" | "-X") => Other,
        ("scp", "-F") => Reads,
        ("scp", "-o") => SshOption,
        ("scp", "-S") => Runs,
        ("rsync", "-e" | "--rsh") => Shell,
        ("rsync", "--rsync-path") => Runs,
        ("rsync", "--exclude-from" | "--include-from" | "--files-from" | "--password-file") => {
            Reads
        }
        ("rsync", "--log-file" | "--write-batch" | "--only-write-batch") => Writes,
        (
            "rsync",
            "-f" | "--filter" | "--exclude" | "--include" | "-B" | "--block-size" | "-M"
            | "--remote-option" | "-T" | "--temp-dir" | "--backup-dir" | "--partial-dir"
            | "--suffix" | "--compare-dest" | "--copy-dest" | "--link-dest" | "--chmod" | "--chown"
            | "--usermap" | "--groupmap" | "--port" | "--timeout" | "--contimeout" | "--bwlimit"
            | "--max-size" | "--min-size" | "--max-delete" | "--out-format" | "--log-file-format"
            | "--sockopts" | "--outbuf" | "--modify-window" | "--checksum-choice"
            | "--compress-choice" | "--compress-level" | "--skip-compress" | "--iconv"
            | "--address" | "--info" | "--debug" | "--stop-after" | "--stop-at" | "--read-batch"
            | "--protocol",
        ) => Other,
        _ => return None,
    };
    Some(found)
}

/// Whether an ssh option (`-o Name=value`, `Name value`) runs a local command.
pub(super) fn ssh_option_runs(value: &str) -> bool {
    let name: String = value
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    matches!(
        name.as_str(),
        "proxycommand" | "localcommand" | "permitlocalcommand" | "knownhostscommand"
    ) || name.is_empty()
}

/// Whether a remote-shell command (`rsync -e CMD`) is plain `ssh` with options that run
/// nothing else.
fn plain_ssh(command: &str) -> bool {
    let mut words = command.split_whitespace();
    if words.next().map(basename) != Some("ssh") {
        return false;
    }
    let rest: Vec<&str> = words.collect();
    !command.contains(['$', '`', ';', '|', '&', '(', ')', '<', '>', '\'', '"', '\\'])
        && !rest.iter().enumerate().any(|(index, word)| {
            let option = word.strip_prefix("-o").filter(|_| word.starts_with("-o"));
            match option {
                Some("") => rest
                    .get(index + 1)
                    .is_none_or(|value| ssh_option_runs(value)),
                Some(value) => ssh_option_runs(value),
                None => false,
            }
        })
}

/// Reads the words of a copy-like command (see [`CopyLayout`]).
pub(super) fn copy_layout(name: &str, arguments: &[Word]) -> CopyLayout {
    let mut layout = CopyLayout::default();
    let take = |kind: CopyValue, value: Word, layout: &mut CopyLayout| match kind {
        CopyValue::Other => {}
        CopyValue::Target => layout.target = Some(value),
        CopyValue::Reads => layout.reads.push(value),
        CopyValue::Writes => layout.writes.push(value),
        CopyValue::Shell => layout.runs |= value.dynamic || !plain_ssh(&value.text),
        CopyValue::SshOption => layout.runs |= value.dynamic || ssh_option_runs(&value.text),
        CopyValue::Runs => layout.runs = true,
    };
    let mut words = arguments.iter();
    let mut options_done = false;
    while let Some(word) = words.next() {
        let text = word.text.as_str();
        if options_done || word.dynamic || text.len() < 2 || !text.starts_with('-') {
            layout.operands.push(word.clone());
            continue;
        }
        if text == "--" {
            options_done = true;
            continue;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (option, glued) = match long.split_once('=') {
                Some((option, value)) => (format!("--{option}"), Some(value)),
                None => (text.to_string(), None),
            };
            if name == "rsync"
                && matches!(
                    option.as_str(),
                    "--remove-source-files" | "--remove-sent-files"
                )
            {
                layout.removes_sources = true;
            }
            if let Some(kind) = copy_value_option(name, &option) {
                let value = match glued {
                    Some(value) => Some(Word::literal(value)),
                    None => words.next().cloned(),
                };
                match value {
                    Some(value) => take(kind, value, &mut layout),
                    // A value-taking option at the end: nothing to copy, but say so.
                    None => layout.runs |= kind == CopyValue::Runs,
                }
            }
            continue;
        }
        // A cluster of short options: the first that takes a value takes the rest of the
        // word, or the next word.
        for (at, letter) in text.char_indices().skip(1) {
            let option = format!("-{letter}");
            let Some(kind) = copy_value_option(name, &option) else {
                continue;
            };
            let rest = &text[at + letter.len_utf8()..];
            let value = if rest.is_empty() {
                words.next().cloned()
            } else {
                Some(Word::literal(rest))
            };
            if let Some(value) = value {
                take(kind, value, &mut layout);
            }
            break;
        }
    }
    layout
}
