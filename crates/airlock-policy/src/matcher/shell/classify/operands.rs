//! What a command's operands name, by the operand mode the classification gives its
//! name (`[operands]` in `classes.toml`): files read or changed, a pattern then files, a
//! copy's sources and target, `find`'s places, code, URLs, `dd`'s `if=`/`of=`, the next
//! working directory.

use super::*;

/// The command whose operands are read, as [`Judge::command`] found it.
pub(super) struct Operands<'w> {
    pub name: &'w str,
    pub arguments: &'w [Word],
    /// How many words after the name the classification's entry used.
    pub used: usize,
    pub texts: &'w [&'w str],
    /// The command changes what its operands name (it writes, deletes or changes
    /// permissions).
    pub changes: bool,
    pub role: Role,
    pub mode: OperandMode,
    pub segment: &'w Segment,
    pub nesting: usize,
}

impl Judge<'_> {
    /// Notes the files the operands name into `facts`, seen from `cwd` (the line's folder)
    /// or `dir` (the folder the command's own option names); returns the next working
    /// directory when the command changes it (`cd`).
    pub(super) fn operands_by_mode(
        &mut self,
        command: Operands<'_>,
        cwd: Option<&str>,
        dir: Option<&str>,
        facts: &mut SegmentFacts,
    ) -> Option<Cwd> {
        let Operands {
            name,
            arguments,
            used,
            texts,
            changes,
            role,
            mode,
            segment,
            nesting,
        } = command;
        let mut moved = None;
        let mut operands: Vec<&Word> = operands(&arguments[used.min(arguments.len())..]);
        // `tail -n 200 app.log`, `head -c 64 f`, `grep -m 5 -A 3 x f` (`ag -A 30 x dir`): a
        // count given to its option is no file, nor the pattern.
        if matches!(
            name,
            "head" | "tail" | "grep" | "egrep" | "fgrep" | "zgrep" | "rg" | "ag" | "ack"
        ) {
            let counts: Vec<&Word> = arguments
                .windows(2)
                .filter(|pair| {
                    let option = pair[0].text.as_str();
                    let value = pair[1].text.trim_start_matches(['+', '-']);
                    let counted: &[&str] = if matches!(name, "head" | "tail") {
                        &["-n", "-c", "--lines", "--bytes"]
                    } else {
                        &["-m", "-A", "-B", "-C", "--max-count"]
                    };
                    counted.contains(&option)
                        && !pair[1].dynamic
                        && !value.is_empty()
                        && value.chars().all(|c| c.is_ascii_digit())
                })
                .map(|pair| &pair[1])
                .collect();
            operands.retain(|word| !counts.iter().any(|count| std::ptr::eq(*count, *word)));
        }
        // `zip -r out.zip logs -x '*.env' 'tmp/*'`, `tar -czf a.tgz --exclude .env src`: the
        // names given to leave out or keep are patterns, no file read.
        if matches!(name, "zip" | "tar" | "rsync") {
            let mut patterns: Vec<&Word> = Vec::new();
            let mut listing = false;
            for (at, word) in arguments.iter().enumerate() {
                let text = word.text.as_str();
                if text.starts_with('-') {
                    listing =
                        name == "zip" && matches!(text, "-x" | "-i" | "--exclude" | "--include");
                    if matches!(
                        text,
                        "--exclude" | "--include" | "--exclude-from" | "--include-from"
                    ) && name != "zip"
                    {
                        patterns.extend(arguments.get(at + 1));
                    }
                } else if listing {
                    patterns.push(word);
                }
            }
            operands.retain(|word| !patterns.iter().any(|pattern| std::ptr::eq(*pattern, *word)));
        }
        // `chmod +x f`, `chown app:app f`, `chown -R "$USER" build`: the first operand is
        // the mode or the owner, not a file (unless it is taken from `--reference`; `chmod
        // -x f` names the mode as an option, so a computed first word, which may also
        // split into several, is the mode or owner only when files follow it).
        let count = operands.len();
        if matches!(name, "chmod" | "chown" | "chgrp")
            && !texts.iter().any(|text| text.starts_with("--reference"))
            && operands.first().is_some_and(|first| match name {
                _ if first.dynamic => count > 1,
                "chmod" => first
                    .text
                    .chars()
                    .all(|c| "ugoa+-=rwxXst01234567,".contains(c)),
                _ => true,
            })
        {
            operands.remove(0);
        }
        match mode {
            OperandMode::None => {
                // `git log --output=FILE`: what it writes is named by an option.
                if changes {
                    self.option_values(&arguments[used.min(arguments.len())..], dir, facts);
                }
                // `cargo run -- ~/.aws/credentials`: what the program it runs is handed.
                if let Some(passed) = passed::passed_arguments(name, arguments) {
                    self.script_arguments_read(passed, dir, facts);
                }
            }
            OperandMode::Default => {
                let deletes = facts.classes.contains(Class::Delete);
                let mut destroyed = None;
                for word in &operands {
                    let file = self.file(word, dir, role);
                    if deletes && destroyed.is_none() {
                        destroyed = project::destroyed_project(&file, dir, self.context);
                    }
                    facts.files.push(file);
                }
                facts.files.extend(destroyed);
                if changes {
                    self.option_values(&arguments[used.min(arguments.len())..], dir, facts);
                }
            }
            OperandMode::Pattern if name == "mdfind" => {
                self.spotlight(&arguments[used.min(arguments.len())..], dir, facts);
            }
            OperandMode::Pattern => {
                let explicit = texts.iter().any(|text| {
                    matches!(*text, "-e" | "-f" | "--regexp" | "--file" | "--expression")
                        || text.starts_with("--regexp=")
                        || text.starts_with("--expression=")
                });
                let (patterns, files) = if explicit || operands.is_empty() {
                    (&operands[..0], &operands[..])
                } else {
                    (&operands[..1], &operands[1..])
                };
                let mut searched = Vec::new();
                for word in files {
                    let file = self.file(word, dir, role);
                    searched.push(file.clone());
                    facts.files.push(file);
                }
                if matches!(name, "locate" | "plocate" | "mlocate") {
                    searched.push(FileRef {
                        path: Some("/".into()),
                        tree: true,
                        file_only: false,
                        role: Role::Read,
                    });
                }
                // With no file named, a filter of a pipe or a here-text searches that text
                // (what printed it is judged itself); `rg`, `ag`, `ack` and a recursive
                // `grep` otherwise search the folder they run in.
                let filters_input = segment.piped
                    || segment.here_text.is_some()
                    || (matches!(name, "grep" | "egrep" | "fgrep" | "zgrep")
                        && !texts.iter().any(|text| {
                            matches!(*text, "--recursive" | "--dereference-recursive")
                                || (text.starts_with('-')
                                    && !text.starts_with("--")
                                    && text.contains(['r', 'R']))
                        }));
                if searched.is_empty() && !filters_input {
                    searched.push(FileRef {
                        path: dir.map(str::to_owned),
                        tree: true,
                        file_only: false,
                        role: Role::Read,
                    });
                }
                let words: Vec<&str> = patterns.iter().map(|w| w.text.as_str()).collect();
                self.hunting(&words, texts, &searched, facts);
            }
            OperandMode::Copy => {
                self.copy(name, &arguments[used.min(arguments.len())..], dir, facts);
            }
            OperandMode::Names => {
                // Looking at a credential file's name, size or date is not reading it: in
                // the project or a temporary folder that is a look at the work area
                // (`ls .env`), elsewhere it is looking for credentials (`ls ~/.ssh/id_*`).
                // A credential folder's own entry looked at (`ls -d ~/.ssh`, `du -sh ~/.*`,
                // `stat ~/.aws`) shows its name and size, not what it holds; `ls ~/.ssh` and
                // `du -a ~/.ssh` list what it holds.
                let lists_contents = names_list_contents(name, arguments);
                for word in &operands {
                    // `du -sh ~/.*`: the home's hidden entries at large, their sizes.
                    if !lists_contents
                        && word.glob.as_ref().is_some_and(|glob| {
                            super::globs::names_hidden_entries_at_large(&word.text, glob)
                        })
                    {
                        continue;
                    }
                    let mut file = self.file(word, dir, role);
                    // A glob over one folder's entries looks at them, not into them: it
                    // names its folder, as a folder operand does (`du -sh ~/.cache/*` looks
                    // at `~/.cache`, whatever credential files lie deeper; `ls ~/.ssh/*`
                    // still looks in a credential folder). A glob with wildcards in its
                    // folders (`ls ~/.claude.*/.credentials.json`) keeps its reach.
                    let folder_wild = word
                        .text
                        .trim_end_matches('/')
                        .rsplit_once('/')
                        .is_some_and(|(folder, _)| folder.contains(['*', '?', '[']));
                    if !folder_wild {
                        file.tree = false;
                    }
                    let own_entry_only = !lists_contents
                        && !file.tree
                        && file.path.as_deref().is_some_and(|path| {
                            self.table.credential_dirs.any_resolved(
                                path,
                                file.extent(),
                                crate::matcher::Side::Restrict,
                                self.context,
                                false,
                            )
                        });
                    if own_entry_only {
                        continue;
                    }
                    let credential = !file.tree
                        && file.path.as_deref().is_some_and(|path| {
                            self.table.credentials.any_resolved(
                                path,
                                crate::matcher::path::Extent::Entry,
                                crate::matcher::Side::Restrict,
                                self.context,
                                false,
                            )
                        });
                    if !credential {
                        facts.files.push(file);
                    } else if !file
                        .path
                        .as_deref()
                        .is_some_and(|path| self.inside_work_area(path))
                    {
                        facts.classes.insert(Class::CredentialSearch);
                    }
                }
            }
            OperandMode::Find if matches!(name, "fd" | "fdfind") => {
                self.fd(&arguments[used.min(arguments.len())..], dir, facts);
            }
            OperandMode::Find => self.find(arguments, dir, texts, facts),
            OperandMode::Code | OperandMode::Script => {
                self.runner(name, arguments, segment, dir, nesting, facts);
            }
            OperandMode::Url => self.url(name, arguments, dir, facts),
            OperandMode::Dd => {
                for word in arguments {
                    if let Some(path) = word.text.strip_prefix("of=") {
                        facts
                            .files
                            .push(self.path(path, word.dynamic, dir, Role::Change));
                    } else if let Some(path) = word.text.strip_prefix("if=") {
                        facts
                            .files
                            .push(self.path(path, word.dynamic, dir, Role::Read));
                    }
                }
            }
            OperandMode::Cd => {
                moved = Some(match operands.first() {
                    None => self.context.home().map(str::to_string),
                    // A folder from `mktemp` is no folder if `mktemp` failed: `cd ""`
                    // stays where it was.
                    Some(word) if word.text == "-" || holds_temp(word) => None,
                    // `cd "$(git rev-parse --show-toplevel)/web"`, `cd "$HOME"`: a place
                    // known although the shell computes it.
                    Some(word) if word.dynamic => self
                        .known_variables(&word.text, cwd)
                        .and_then(|text| self.context.resolve_from(&text, cwd)),
                    Some(word) => self.context.resolve_from(&word.text, cwd),
                });
            }
        }
        moved
    }
}

/// Whether a command that looks at names (`ls`, `du`, `stat`…) lists what a folder it is
/// given holds: `ls` unless told `-d`, `du` when told `-a` (without it, only folders'
/// totals); the others look at the entries they are given.
fn names_list_contents(name: &str, arguments: &[Word]) -> bool {
    let has = |short: char, long: &str| {
        arguments.iter().any(|word| {
            word.dynamic
                || word.text == long
                || (word.text.starts_with('-')
                    && !word.text.starts_with("--")
                    && word.text.contains(short))
        })
    };
    match name {
        "ls" | "ll" | "la" | "dir" | "exa" | "eza" | "lsd" | "tree" => !has('d', "--directory"),
        "du" => has('a', "--all"),
        _ => false,
    }
}
