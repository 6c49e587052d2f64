//! What git's own words do beyond its subcommand's class: forced pushes and file checkouts
//! that discard work, `git -c` settings and `git config` values that run commands or print
//! credentials.

use super::*;

/// `git push +main` forces; `git -c core.sshCommand=…` can run anything.
/// git's words from its subcommand on, past git's own options (`-C DIR`, `-c KEY=VALUE`,
/// `--git-dir DIR`: those that take a value skip it).
pub(super) fn git_subcommand(arguments: &[Word]) -> &[Word] {
    let mut at = 0;
    while let Some(word) = arguments.get(at) {
        if !word.text.starts_with('-') {
            break;
        }
        at += if matches!(
            word.text.as_str(),
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace"
        ) {
            2
        } else {
            1
        };
    }
    &arguments[at.min(arguments.len())..]
}

/// `git rm --cached FILES` (not forced): the index forgets the files; they are neither read
/// nor changed on disk (untracking a key is what keeps it out of a push). Whether the
/// operands are only the index's.
pub(super) fn untracks_only(arguments: &[Word]) -> bool {
    // (Another repository's index, `--git-dir=~/.dotfiles --work-tree=~`, is judged by its
    // files, where they lie.)
    if arguments
        .iter()
        .any(|word| word.text.starts_with("--git-dir") || word.text.starts_with("--work-tree"))
    {
        return false;
    }
    match git_subcommand(arguments) {
        [rm, rest @ ..] if rm.text == "rm" => options_before_dashes(rest).contains(&"--cached"),
        _ => false,
    }
}

/// The options among `words`, up to a `--` that ends them.
fn options_before_dashes(words: &[Word]) -> Vec<&str> {
    words
        .iter()
        .map(|word| word.text.as_str())
        .take_while(|text| *text != "--")
        .filter(|text| text.starts_with('-'))
        .collect()
}

pub(super) fn git_specials(arguments: &[Word], facts: &mut SegmentFacts) {
    let subcommand = git_subcommand(arguments);
    if subcommand.first().is_some_and(|word| word.text == "config") {
        // `git config user.name`: one key named, nothing written, is its value read.
        if config_reads_one_key(&subcommand[1..]) {
            facts.classes = remove(facts.classes, Class::Unknown);
            facts.classes.insert(Class::ReadOnly);
        }
        if config_prints_secret_value(&subcommand[1..]) {
            facts.classes.insert(Class::CredentialAccess);
        } else if config_prints_secrets(&subcommand[1..]) {
            facts.classes.insert(Class::CredentialSearch);
        }
    }
    match subcommand {
        [checkout, rest @ ..] if checkout.text == "checkout" && checkout_names_files(rest) => {
            facts.classes.insert(Class::Discard);
        }
        // `git rm` deletes only files git tracks, whose committed text stays in history,
        // and refuses to drop changes made since: bookkeeping, as a commit is, not a
        // deletion. `--cached` leaves the files alone. Forced, it drops those changes too:
        // a file's (`git rm -f old.py`) as `rm -f` would, every file of a tree (`git rm
        // -rf .`, an orphan deploy branch emptied) a discard, not the tree destroyed.
        [rm, rest @ ..] if rm.text == "rm" => {
            let options = options_before_dashes(rest);
            let short = |letter: char| {
                options
                    .iter()
                    .any(|option| !option.starts_with("--") && option[1..].contains(letter))
            };
            let forced =
                !options.contains(&"--cached") && (short('f') || options.contains(&"--force"));
            let recursive = short('r');
            if !forced {
                facts.classes = remove(facts.classes, Class::Delete);
                facts.classes.insert(Class::VcsLocal);
            } else if recursive {
                facts.classes = remove(facts.classes, Class::Delete);
                facts.classes.insert(Class::Discard);
            }
        }
        // As the table's `git worktree remove --force`, wherever the option stands: the
        // worktree's uncommitted changes go with it.
        [worktree, verb, rest @ ..]
            if worktree.text == "worktree"
                && verb.text == "remove"
                && rest
                    .iter()
                    .take_while(|word| word.text != "--")
                    .any(|word| matches!(word.text.as_str(), "--force" | "-f" | "-ff")) =>
        {
            facts.classes = remove(facts.classes, Class::Delete);
            facts.classes.insert(Class::Discard);
        }
        _ => {}
    }
    let mut pushing = false;
    let mut before_subcommand = true;
    for (index, word) in arguments.iter().enumerate() {
        if before_subcommand
            && !word.text.starts_with('-')
            && index > 0
            && arguments[index - 1].text != "-c"
            && arguments[index - 1].text != "-C"
        {
            before_subcommand = false;
        }
        if index == 0 && !word.text.starts_with('-') {
            before_subcommand = false;
        }
        if word.text == "push" {
            pushing = true;
        } else if pushing && word.text.starts_with('+') {
            facts.classes.insert(Class::Discard);
        }
        if before_subcommand && word.text == "-c" {
            let value = arguments.get(index + 1).map_or("", |w| w.text.as_str());
            let key = value.split('=').next().unwrap_or("").to_ascii_lowercase();
            // A setting that only shapes output or bookkeeping; or one whose value git
            // runs as a command (`core.pager=cat`), which `kept_code` judges as the
            // command line it is.
            let harmless = [
                "user.",
                "color.",
                "advice.",
                "init.",
                "safe.directory",
                "core.quotepath",
                "core.abbrev",
                "core.autocrlf",
                "log.",
                "diff.color",
                "diff.noprefix",
                "diff.renames",
                "diff.algorithm",
                "format.",
                "status.",
                "column.",
                "pull.",
                "merge.ff",
                "rebase.autosquash",
                "rebase.autostash",
                "commit.gpgsign",
                "tag.gpgsign",
                "tag.sort",
                "branch.sort",
                "versionsort.",
                "gc.auto",
            ]
            .iter()
            .any(|prefix| key.starts_with(prefix))
                || git_key_runs(&key);
            if !harmless {
                facts.classes.insert(Class::Unknown);
            }
        }
    }
}

/// Whether `git config …` prints settings that may hold credentials: every setting
/// (`--list`, `-l`), those a pattern or URL selects (`--get-regexp`, `--get-urlmatch`)
/// where it may reach them, or one such setting by name (`http.<url>.extraHeader` holds
/// the `Authorization` header a CI checkout leaves, `credential.*`, `url.*.insteadOf` may
/// hold a token in its URL).
/// Whether `git config` prints one key whose value is itself a secret: CI's
/// `http.<url>.extraheader` (the checkout's token), a `…token` or `…password` key, a
/// `url.<url>.insteadof` rewrite (it may carry a token in its URL). Printing it is reading
/// the credential, not looking for one.
/// `git config [--global|--local|--system|--worktree|--show-origin|--show-scope] KEY`:
/// exactly one key and only options that choose where to look or how to print.
fn config_reads_one_key(arguments: &[Word]) -> bool {
    let mut keys = 0;
    for word in arguments {
        let text = word.text.as_str();
        if word.dynamic {
            return false;
        }
        if text.starts_with('-') {
            let looks = matches!(
                text,
                "--global"
                    | "--local"
                    | "--system"
                    | "--worktree"
                    | "--show-origin"
                    | "--show-scope"
                    | "--includes"
                    | "--null"
                    | "-z"
                    | "--bool"
                    | "--int"
                    | "--path"
                    | "--get"
                    | "--get-all"
                    | "--get-regexp"
                    | "--name-only"
            ) || text.starts_with("--type=");
            if !looks {
                return false;
            }
        } else {
            keys += 1;
        }
    }
    keys == 1
}

fn config_prints_secret_value(arguments: &[Word]) -> bool {
    let reads = arguments
        .iter()
        .any(|word| matches!(word.text.as_str(), "--get" | "--get-all"))
        || arguments
            .iter()
            .filter(|word| !word.text.starts_with('-'))
            .count()
            == 1;
    reads
        && arguments.iter().any(|word| {
            let key = word.text.to_ascii_lowercase();
            !word.dynamic
                && !key.starts_with('-')
                && ((key.starts_with("http") && key.ends_with("extraheader"))
                    || (key.starts_with("url.") && key.ends_with("insteadof"))
                    || key.ends_with("token")
                    || key.ends_with("password"))
        })
}

fn config_prints_secrets(arguments: &[Word]) -> bool {
    let secret_key = |key: &str| {
        let key = key.to_ascii_lowercase();
        key.starts_with("http") && key.ends_with("extraheader")
            || key.starts_with("credential")
            || (key.starts_with("url.") && key.ends_with("insteadof"))
            || key.contains("token")
            || key.contains("password")
    };
    let texts: Vec<&str> = arguments.iter().map(|word| word.text.as_str()).collect();
    match texts.as_slice() {
        [] => false,
        list if list.iter().any(|text| matches!(*text, "--list" | "-l")) => true,
        [.., "--get-urlmatch", section, _] => {
            section.eq_ignore_ascii_case("credential")
                || section.to_ascii_lowercase().starts_with("http")
        }
        [.., "--get-regexp", pattern] | [.., "--get-regexp", pattern, _] => {
            let pattern = pattern.to_ascii_lowercase();
            ["http", "cred", "url", "extraheader", "token", "pass"]
                .iter()
                .any(|word| pattern.contains(word))
                || pattern.chars().all(|c| matches!(c, '.' | '*' | '^' | '$'))
        }
        [.., key] => arguments.iter().any(|word| word.dynamic) || secret_key(key),
    }
}

/// Whether `git checkout`'s arguments name files to take from another version
/// (`git checkout stash@{0} -- a.md`, `git checkout HEAD~1 src/x.rs`): their uncommitted
/// changes are overwritten with no way back. A branch switch names at most one operand
/// besides the values of `-b`, `-B` and `--orphan`; a file checkout names paths after `--`
/// or a second operand, or names a file by its extension (`git checkout src/app.dart`:
/// branch names seldom have one; misread, a branch switch is asked).
fn checkout_names_files(arguments: &[Word]) -> bool {
    let names_file = |text: &str| {
        let name = text.rsplit(['/', '\\']).next().unwrap_or(text);
        name.rsplit_once('.').is_some_and(|(stem, extension)| {
            !stem.is_empty()
                && (1..=8).contains(&extension.len())
                && extension.chars().all(|c| c.is_ascii_alphanumeric())
                && extension.chars().any(|c| c.is_ascii_alphabetic())
        })
    };
    let mut operands = 0;
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        let text = word.text.as_str();
        if text == "--" {
            return words.next().is_some();
        }
        if matches!(text, "-b" | "-B" | "--orphan") {
            words.next();
        } else if !text.starts_with('-') || word.dynamic {
            if !word.dynamic && names_file(text) {
                return true;
            }
            operands += 1;
        }
    }
    operands >= 2
}

/// Whether a git configuration key names a command git runs through a shell (or, with a
/// leading `!`, an alias or credential helper that is one).
fn git_key_runs(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    let last = key.rsplit('.').next().unwrap_or_default();
    matches!(
        key.as_str(),
        "core.pager"
            | "core.sshcommand"
            | "core.editor"
            | "core.fsmonitor"
            | "core.askpass"
            | "sequence.editor"
            | "diff.external"
            | "gpg.program"
            | "interactive.difffilter"
            | "uploadpack.packobjectshook"
    ) || key.starts_with("pager.")
        || key.starts_with("alias.")
        || key.starts_with("credential.")
        || (key.starts_with("filter.") && matches!(last, "clean" | "smudge" | "process"))
        || (key.starts_with("diff.") && matches!(last, "command" | "textconv"))
        || (key.starts_with("merge.") && last == "driver")
        || (key.starts_with("gpg.") && last == "program")
        || (key.starts_with("remote.") && matches!(last, "uploadpack" | "receivepack"))
}

/// The values of git settings that run a command, given as `git -c KEY=VALUE` before the
/// subcommand or as `git config [options] KEY VALUE`: each with the word it came from,
/// without an alias's or helper's leading `!`.
pub(super) fn git_settings_that_run(arguments: &[Word]) -> Vec<(&Word, String)> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(word) = arguments.get(at) {
        match word.text.as_str() {
            "-c" => {
                if let Some(setting) = arguments.get(at + 1) {
                    if let Some((key, value)) = setting.text.split_once('=') {
                        if git_key_runs(key) {
                            found.push((setting, value.trim_start_matches('!').to_string()));
                        }
                    }
                }
                at += 2;
            }
            "-C" | "--git-dir" | "--work-tree" | "--namespace" => at += 2,
            text if text.starts_with('-') => at += 1,
            "config" => {
                let rest: Vec<&Word> = arguments[at + 1..]
                    .iter()
                    .filter(|word| !word.text.starts_with('-'))
                    .collect();
                if let [key, value, ..] = rest.as_slice() {
                    if git_key_runs(&key.text) {
                        found.push((*value, value.text.trim_start_matches('!').to_string()));
                    }
                }
                break;
            }
            _ => break,
        }
    }
    found
}

impl Judge<'_> {
    /// `git init` naming no folder makes its repository in the folder it runs in (`git -C
    /// ~/.claude init`, `cd /etc && git init`): that folder is changed, judged where it
    /// lies. (A folder named, `git init DIR`, is the operand's.)
    pub(super) fn git_init_here(
        &self,
        arguments: &[Word],
        dir: Option<&str>,
        facts: &mut SegmentFacts,
    ) {
        let Some((subcommand, rest)) = git_subcommand(arguments).split_first() else {
            return;
        };
        if subcommand.text != "init" {
            return;
        }
        let mut words = rest.iter();
        let mut operands = 0;
        while let Some(word) = words.next() {
            match word.text.as_str() {
                "-b" | "--initial-branch" | "--template" | "--separate-git-dir"
                | "--object-format" | "--ref-format" => {
                    words.next();
                }
                text if text.starts_with('-') => {}
                _ => operands += 1,
            }
        }
        if operands == 0 {
            facts
                .files
                .push(self.file(&Word::literal("."), dir, Role::Change));
        }
    }
}

/// `git log -p -S 'AKIA'`, `git log -G 'ghp_' --patch --all`: history searched for text
/// shaped like a credential, with the changes that hold it printed: the secrets it finds
/// are printed, as `grep -o 'AKIA…'` prints them (the names of the commits alone are not).
pub(super) fn history_key_search(arguments: &[Word], facts: &mut SegmentFacts) {
    let texts: Vec<&str> = git_subcommand(arguments)
        .iter()
        .map(|word| word.text.as_str())
        .collect();
    let Some((&subcommand, rest)) = texts
        .split_first()
        .filter(|(subcommand, _)| matches!(**subcommand, "log" | "show" | "whatchanged"))
    else {
        return;
    };
    let mut patterns = Vec::new();
    let mut words = rest.iter();
    while let Some(text) = words.next() {
        match *text {
            "-S" | "-G" => patterns.extend(words.next().copied()),
            _ => {
                if let Some(pattern) = ["-S", "-G"]
                    .iter()
                    .find_map(|option| text.strip_prefix(option))
                {
                    if !pattern.is_empty() {
                        patterns.push(pattern);
                    }
                }
            }
        }
    }
    let patch = subcommand == "show"
        || rest
            .iter()
            .any(|text| matches!(*text, "-p" | "-u" | "--patch" | "--pickaxe-all"));
    if patch
        && patterns
            .iter()
            .any(|pattern| super::find::key_shaped(pattern, &[]))
    {
        facts.classes.insert(Class::CredentialSearch);
    }
}
