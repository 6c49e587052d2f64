//! How the words of a command name files: operands, option values, copies, globs and
//! variables, resolved against the working directory; and which of those files are
//! credential material, credential folders or start-up files.

use super::*;

/// Variables whose value is the path of a credential file, with the file their tool keeps
/// by default (what `$KUBECONFIG` names is a kubeconfig, wherever it lies).
const CREDENTIAL_FILE_VARIABLES: &[(&str, &str)] = &[
    ("KUBECONFIG", "~/.kube/config"),
    (
        "GOOGLE_APPLICATION_CREDENTIALS",
        "~/.config/gcloud/application_default_credentials.json",
    ),
    ("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials"),
    ("DOCKER_CONFIG", "~/.docker/config.json"),
    ("NETRC", "~/.netrc"),
];

impl Judge<'_> {
    /// Option values (`--target-directory=/x`, `-o/x`) of a command that changes files:
    /// they may name what it changes.
    pub(super) fn option_values(
        &self,
        arguments: &[Word],
        dir: Option<&str>,
        facts: &mut SegmentFacts,
    ) {
        for word in arguments {
            let text = word.text.as_str();
            if text == "--" {
                break;
            }
            let value = if let Some(long) = text.strip_prefix("--") {
                long.split_once('=').map(|(_, value)| value)
            } else if text.starts_with('-') && text.len() > 2 {
                text.get(2..)
            } else {
                None
            };
            // On Windows a path is written with `\` or a drive (`-oC:\Windows`).
            let windows = self.context.on_windows();
            if let Some(value) = value.filter(|value| {
                value.contains('/')
                    || value.starts_with('~')
                    || (windows && (value.contains('\\') || value.as_bytes().get(1) == Some(&b':')))
            }) {
                facts
                    .files
                    .push(self.path(value, word.dynamic, dir, Role::Change));
            }
        }
    }

    /// `cp`, `ln`, `install`, `scp`, `rsync`: the sources are read and the destination is
    /// written, and so is each source's name inside it (`cp x.desktop ~/.config/autostart`
    /// writes `~/.config/autostart/x.desktop`); `-t DIR` makes every operand a source.
    pub(super) fn copy(
        &self,
        name: &str,
        arguments: &[Word],
        dir: Option<&str>,
        facts: &mut SegmentFacts,
    ) {
        let layout = copy_layout(name, arguments);
        if layout.runs {
            facts.classes.insert(Class::Unknown);
        }
        if matches!(name, "rsync" | "scp")
            && layout
                .operands
                .iter()
                .any(|word| is_remote_operand(&word.text))
        {
            facts.classes.insert(Class::Network);
            self.remote_copy(&layout, facts);
        }
        let (sources, target) = match &layout.target {
            Some(target) => (&layout.operands[..], Some(target)),
            None => match layout.operands.split_last() {
                Some((target, sources)) => (sources, Some(target)),
                None => (&layout.operands[..], None),
            },
        };
        // A link is another name for what it points to: writing or deleting through it
        // changes the target (`ln -s ~/.ssh/authorized_keys ak && cat key >> ak`).
        let source_role = if name == "ln" {
            Role::Change
        } else {
            Role::Read
        };
        // A symbolic link's relative target is read from the folder the link is in.
        let link_folder = (name == "ln" && symbolic_link(arguments))
            .then(|| target.filter(|target| !target.dynamic))
            .flatten()
            .and_then(|target| {
                let text = target.text.trim_end_matches('/');
                if layout.target.is_some() || sources.len() > 1 || target.text.ends_with('/') {
                    self.context.resolve_from(text, dir)
                } else {
                    let folder = text.rsplit_once('/').map_or(".", |(folder, _)| folder);
                    self.context
                        .resolve_from(if folder.is_empty() { "/" } else { folder }, dir)
                }
            });
        // `rsync --remove-source-files`: the files copied from a source, at any depth, are
        // deleted (its folders stay).
        if layout.removes_sources {
            facts.classes.insert(Class::Delete);
        }
        for word in sources {
            let from = match &link_folder {
                Some(folder) if !word.text.starts_with(['/', '~']) => Some(folder.as_str()),
                _ => dir,
            };
            // ...and shows what it points to under a new name: a link to a key is the key.
            if source_role == Role::Change {
                facts.files.push(self.file(word, from, Role::Read));
            }
            let mut file = self.file(word, from, source_role);
            if layout.removes_sources && !is_remote_operand(&word.text) {
                file.role = Role::Change;
                file.tree = true;
                file.file_only = true;
            }
            facts.files.push(file);
        }
        for word in &layout.reads {
            facts.files.push(self.file(word, dir, Role::Read));
        }
        for word in &layout.writes {
            facts.files.push(self.file(word, dir, Role::Change));
        }
        if let Some(target) = target {
            facts.files.push(self.file(target, dir, Role::Change));
            if !(target.dynamic || target.glob.is_some() || is_remote_operand(&target.text)) {
                for source in sources.iter().filter(|source| !source.dynamic) {
                    let Some(named) = source
                        .text
                        .trim_end_matches('/')
                        .rsplit('/')
                        .next()
                        .filter(|named| !named.is_empty() && !matches!(*named, "." | ".."))
                    else {
                        continue;
                    };
                    let inside = format!("{}/{named}", target.text.trim_end_matches('/'));
                    facts
                        .files
                        .push(self.path(&inside, false, dir, Role::Change));
                }
            }
        }
        self.option_values(arguments, dir, facts);
    }

    /// A program the project runs, told where to write (`--out DIR`, `--output=FILE`,
    /// `-o FILE`): that place is changed, whatever the program is.
    pub(super) fn output_options(
        &self,
        arguments: &[Word],
        dir: Option<&str>,
        facts: &mut SegmentFacts,
    ) {
        for word in option_value_words(arguments, OUTPUT_OPTIONS) {
            facts.files.push(self.file(&word, dir, Role::Change));
        }
    }

    /// A build told where to write (`npm run build -- --outDir /var/www`, `gcc -o
    /// /usr/local/bin/x`, `cargo build --target-dir …`) changes that place, also when the
    /// option is passed on after `--` to the project's script.
    pub(super) fn build_outputs(
        &self,
        name: &str,
        arguments: &[Word],
        dir: Option<&str>,
        facts: &mut SegmentFacts,
    ) {
        let after = arguments
            .iter()
            .position(|word| word.text == "--")
            .map_or(&[][..], |at| &arguments[at + 1..]);
        for part in [arguments, after] {
            for word in option_value_words(part, OUTPUT_OPTIONS) {
                facts.files.push(self.file(&word, dir, Role::Change));
            }
        }
        // Hugo's, MkDocs' and Jekyll's `-d DIR` is where they write the site
        // (`--cleanDestinationDir` empties it first).
        // Sphinx writes into its last operand (`sphinx-build -b html docs/source OUT`).
        if name == "sphinx-build" {
            let given = operands(arguments);
            if let [_, .., out] = given.as_slice() {
                facts.files.push(self.file(out, dir, Role::Change));
            }
        }
        if matches!(name, "hugo" | "mkdocs" | "jekyll") {
            for pair in arguments.windows(2).filter(|pair| pair[0].text == "-d") {
                facts.files.push(self.file(&pair[1], dir, Role::Change));
            }
        }
    }

    pub(super) fn operands_read(&self, arguments: &[Word], cwd: &Cwd, facts: &mut SegmentFacts) {
        for word in operands(arguments) {
            facts
                .files
                .push(self.file(word, cwd.as_deref(), Role::Read));
        }
    }

    /// Whether the facts of a command read a file of the user's own outside the work area
    /// (`cat ~/.config/app/settings.json`, `Get-Content $env:APPDATA\…`) or one that cannot
    /// be placed: what it prints may hold the user's secrets.
    pub(super) fn reads_own_files(&self, printed: &[SegmentFacts]) -> bool {
        printed.iter().any(|facts| {
            facts.files.iter().any(|file| {
                file.role == Role::Read
                    && match file.path.as_deref() {
                        None => true,
                        Some(path) => {
                            !self.inside_work_area(path)
                                && self
                                    .context
                                    .home()
                                    .is_some_and(|home| below(path, home).is_some())
                        }
                    }
            })
        })
    }

    /// Inside the project or a temporary directory.
    pub(super) fn inside_work_area(&self, path: &str) -> bool {
        self.context
            .project()
            .is_some_and(|project| below(path, project).is_some())
            || self
                .context
                .temp_dirs()
                .into_iter()
                .flatten()
                .any(|tmp| below(path, tmp).is_some())
    }

    /// Resolves a word to a file reference.
    pub(super) fn file(&self, word: &Word, cwd: Option<&str>, role: Role) -> FileRef {
        // `{}` is what `find -exec` puts there: whatever it found below its place, or, when
        // that cannot be told, anything.
        if word.text == "{}" && !word.dynamic {
            if let Some(found) = &self.found {
                return entry_of(found, role);
            }
        }
        // A process substitution read (`diff <(sort a) <(sort b)`) is a pipe of
        // `/dev/fd`, no file of the disk; its commands are segments of their own. (A
        // script run from one is judged by the runner: code that arrives at run time.)
        if word.dynamic && word.text == "/dev/fd/…" && role == Role::Read {
            return FileRef {
                path: Some("/dev/fd".to_string()),
                tree: true,
                file_only: false,
                role,
            };
        }
        // `%APPDATA%\x` is a variable to `cmd` on Windows: where it points is not known.
        if self.context.on_windows()
            && words::cmd_variable(&word.text)
            && self.context.folder_variable(&word.text).is_none()
        {
            return FileRef {
                path: None,
                tree: false,
                file_only: false,
                role,
            };
        }
        if word.dynamic || word.text.contains("{}") {
            // `$HOME/.ssh/id_rsa`: the home is known even if the shell computes it.
            if let Some(text) = self
                .known_variables(&word.text, cwd)
                .filter(|_| word.dynamic)
            {
                // `rm -rf $TEMP/*`: a glob in the place the variable names.
                if word.wild {
                    let text = match self.context.on_windows() {
                        true => text.replace('\\', "/"),
                        false => text,
                    };
                    return self.glob_file(&text, cwd, role);
                }
                return self.path(&text, false, cwd, role);
            }
            // `"$LOG"` after `LOG=$(ls -t logs/*.log | head -1)`: an entry of `logs`.
            if let Some(place) = super::listed::variable(word).and_then(|name| {
                self.listed
                    .iter()
                    .rev()
                    .find(|(known, _)| known == name)
                    .map(|(_, place)| place)
            }) {
                return entry_of(place, role);
            }
            return FileRef {
                path: None,
                tree: false,
                file_only: false,
                role,
            };
        }
        if let Some(glob) = &word.glob {
            // On Windows `.\.env*` is `./.env*`: the glob is read with `/` between names.
            let windows = (self.context.on_windows() && word.text.contains('\\'))
                .then(|| word.text.replace('\\', "/"))
                .and_then(|text| Some((crate::matcher::shell::compile_glob(&text)?, text)));
            let (glob, text) = match &windows {
                Some((glob, text)) => (glob, text.as_str()),
                None => (glob, word.text.as_str()),
            };
            // `cat .env*`, `rg KEY config/*.key`: a read of the credential file it may
            // stand for.
            if let Some(credential) = (role == Role::Read)
                .then(|| globs::credential_glob(text, glob))
                .flatten()
            {
                return self.path(&credential, false, cwd, role);
            }
            return self.glob_file(text, cwd, role);
        }
        self.path(&word.text, false, cwd, role)
    }

    /// `text` with `$HOME`, `$PWD` (the working directory where the word is read), a
    /// variable holding a credential file's path ([`CREDENTIAL_FILE_VARIABLES`]) and the
    /// temporary folder (`$TMPDIR`; Windows' `$TEMP`) in place, when those are known;
    /// `None` when anything else in it is computed.
    pub(super) fn known_variables(&self, text: &str, cwd: Option<&str>) -> Option<String> {
        // `$(git rev-parse --show-toplevel)`: the project, the work tree the call is in.
        let toplevel;
        let text = match text.contains(TOPLEVEL) {
            true => {
                toplevel = text.replace(TOPLEVEL, self.context.project()?);
                toplevel.as_str()
            }
            false => text,
        };
        let mut replaced = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find('$') {
            replaced.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            let (name, used) = match after.strip_prefix('{') {
                Some(braced) => match braced.split_once('}') {
                    Some((name, _)) => (name, name.len() + 2),
                    None => return None,
                },
                None => {
                    let end = after
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(after.len());
                    (&after[..end], end)
                }
            };
            let windows = self.context.on_windows();
            let whole = replaced.is_empty() && after[used..].is_empty();
            match name {
                "HOME" => replaced.push_str(self.context.home()?),
                "PWD" => replaced.push_str(cwd?),
                // The temporary folder: Windows' (Git Bash's `$TEMP`, PowerShell's
                // `$env:TEMP`) lies in the home, and is written so only at a word's start.
                "TEMP" | "TMP" if windows && replaced.is_empty() => replaced.push_str(WINDOWS_TEMP),
                "TMPDIR" if !windows => replaced.push_str(TMP_DIRS[0]),
                // Variables whose value is a credential file's path (`curl -F f=@$KUBECONFIG
                // …`, `cat $GOOGLE_APPLICATION_CREDENTIALS`): wherever it lies, it is read as
                // the file its tool keeps by default.
                _ if whole => replaced.push_str(
                    CREDENTIAL_FILE_VARIABLES
                        .iter()
                        .find(|(variable, _)| *variable == name)?
                        .1,
                ),
                _ => return None,
            }
            rest = &after[used..];
        }
        replaced.push_str(rest);
        (!replaced.contains(['`', '…'])).then_some(replaced)
    }

    pub(super) fn path(&self, text: &str, dynamic: bool, cwd: Option<&str>, role: Role) -> FileRef {
        FileRef {
            path: if dynamic {
                None
            } else {
                self.context.resolve_from(text, cwd)
            },
            tree: false,
            file_only: false,
            role,
        }
    }

    /// What a segment's redirections read and write; `true` when one is a connection to
    /// another machine (bash's `/dev/tcp/HOST/PORT`: no file; to this machine it only talks
    /// to a local port, `echo > /dev/tcp/localhost/5432` probes it).
    pub(super) fn redirections(
        &self,
        segment: &Segment,
        cwd: Option<&str>,
        facts: &mut SegmentFacts,
    ) -> bool {
        let mut connects_out = false;
        for (target, writes) in &segment.redirections {
            if let Some(local) = remote::network_redirection(target) {
                if local {
                    facts.classes.insert(Class::ReadOnly);
                } else {
                    facts.classes.insert(Class::Network);
                    connects_out = true;
                }
                continue;
            }
            let role = if *writes { Role::Change } else { Role::Read };
            if *writes {
                facts.classes.insert(Class::Write);
            }
            facts.files.push(self.file(target, cwd, role));
        }
        connects_out
    }

    /// A glob stands for the directory before its first glob character and what is
    /// below it.
    pub(super) fn glob_file(&self, text: &str, cwd: Option<&str>, role: Role) -> FileRef {
        let first_glob = text.find(['*', '?', '[']).unwrap_or(text.len());
        // `rm *.log`, `rm -rf build/*.egg-info`: inside the project or a temporary folder,
        // a changed glob whose wildcards are all in its last name, and whose name has
        // literal text and no leading dot, stands for some entries of its folder, never the
        // folder itself (nor `.git`, `.env`…): it is judged as a name in that folder. `*`,
        // `.*` and `*.*` stand for the whole folder, and so does any glob elsewhere.
        let last_slash = text.rfind('/');
        let some_entries = role == Role::Change
            && last_slash.is_none_or(|slash| slash < first_glob)
            && words::names_some_entries(&text[last_slash.map_or(0, |slash| slash + 1)..]);
        if some_entries {
            let path = self.context.resolve_from(text, cwd);
            if path
                .as_deref()
                .and_then(|path| path.rsplit_once('/'))
                .is_some_and(|(folder, _)| self.inside_work_area(folder))
            {
                return FileRef {
                    path,
                    tree: false,
                    file_only: false,
                    role,
                };
            }
        }
        // `rm ~/Downloads/*.dmg`: a delete of files only, of a glob whose wildcards are all
        // in its last name and which names some entries there (as above), is a delete of
        // files in that folder, wherever it is (never of the folder, nor of what a folder
        // in it holds). `*`, `.*`, `*.*` and `.env*` still stand for the whole folder.
        if self.deleting_files && some_entries {
            return FileRef {
                path: self.context.resolve_from(text, cwd),
                tree: false,
                file_only: true,
                role,
            };
        }
        // `rm -rf ~/Downloads/pandoc-3.1*`: the same glob changed with what it holds stands
        // for those entries and their content, never for the folder nor its other entries;
        // but not in a hidden folder (`~/.ssh/id*`, `~/.config/gh/h*`), where a name's
        // literal part says too little of what it may reach.
        if some_entries
            && last_slash.is_some()
            && !text
                .split('/')
                .any(|part| part.starts_with('.') && part.len() > 2)
        {
            return FileRef {
                path: self.context.resolve_from(text, cwd),
                tree: true,
                file_only: false,
                role,
            };
        }
        let directory = match text[..first_glob].rfind('/') {
            Some(0) => "/",
            Some(slash) => &text[..slash],
            None => ".",
        };
        FileRef {
            path: self.context.resolve_from(directory, cwd),
            tree: true,
            file_only: false,
            role,
        }
    }

    /// Credential material read, credential directories read, start-up files changed.
    ///
    /// A command that copies or archives whole folders (`tar c`, `zip -r`, `cp -r`,
    /// `rsync`) reads what a credential folder holds: that is credential access, where
    /// listing or searching it is looking for credentials.
    pub(super) fn check_files(&self, facts: &mut SegmentFacts, copies: TreeCopy) {
        facts.credential.clear();
        for file in &facts.files {
            let Some(path) = &file.path else {
                facts.credential.push(false);
                continue;
            };
            // For one file (not a glob) both sides test the same path, and the restricting
            // side also tries the lists' patterns in lower case on a Windows path (these
            // lists only ever restrict). A glob keeps the allowing side's reading: the
            // pattern must cover all it may expand to.
            let side = if file.tree {
                crate::matcher::Side::Allow
            } else {
                crate::matcher::Side::Restrict
            };
            let matches = |patterns: &crate::matcher::path::PathList| {
                patterns.any_resolved(path, file.extent(), side, self.context, false)
            };
            // A whole folder copied or archived reads all it holds: one that holds a
            // credential folder or file below it (`cp -r ~ /tmp/x` holds `~/.ssh`) takes credentials
            // along with the rest: asked (`credential_search`), where the credential folder
            // itself copied is refused.
            // Credential files named by their place count too (`~/.codex` holds
            // `~/.codex/auth.json`); patterns that may match anywhere (`**/.env`) name no
            // place and do not make every folder copied hold credentials.
            let holds_credentials = || {
                copies != TreeCopy::No
                    && [&self.table.credential_dirs, &self.table.credentials]
                        .iter()
                        .any(|list| {
                            list.any_resolved(
                                path,
                                crate::matcher::path::Extent::Tree,
                                crate::matcher::Side::Restrict,
                                self.context,
                                false,
                            )
                        })
            };
            let credential = !file.tree && matches(&self.table.credentials);
            facts.credential.push(credential);
            match file.role {
                Role::Read => {
                    if credential {
                        facts.classes.insert(Class::CredentialAccess);
                    } else if matches(&self.table.credential_dirs) {
                        facts.classes.insert(if copies != TreeCopy::No {
                            Class::CredentialAccess
                        } else {
                            Class::CredentialSearch
                        });
                    } else if holds_credentials() {
                        facts.classes.insert(Class::CredentialSearch);
                    }
                }
                Role::Change => {
                    if !file.tree && matches(&self.table.startup) {
                        facts.classes.insert(Class::Persistence);
                    }
                    if copies == TreeCopy::Archives
                        && (credential || matches(&self.table.credential_dirs))
                    {
                        facts.classes.insert(Class::CredentialAccess);
                    } else if copies == TreeCopy::Archives && holds_credentials() {
                        facts.classes.insert(Class::CredentialSearch);
                    }
                }
                Role::Workdir => {}
            }
        }
    }

    /// Files git prints from its history: `git show REV:PATH`, `git cat-file -p REV:PATH`,
    /// and the paths after `--` of `git show`, `git log -p`, `git diff` and `git stash show
    /// -p`: their contents as
    /// committed, read like the files themselves (`git show HEAD:.env` reads `.env`). A
    /// `REV:PATH` is relative to the top of the work tree (the project), `REV:./PATH` to
    /// the working directory.
    pub(super) fn git_history_reads(
        &self,
        arguments: &[Word],
        dir: Option<&str>,
        facts: &mut SegmentFacts,
    ) {
        let mut at = 0;
        while let Some(word) = arguments.get(at) {
            match word.text.as_str() {
                "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" => at += 2,
                text if text.starts_with('-') => at += 1,
                _ => break,
            }
        }
        let Some((subcommand, rest)) = arguments.get(at..).and_then(<[Word]>::split_first) else {
            return;
        };
        let patches = rest.iter().any(|word| {
            matches!(
                word.text.as_str(),
                "-p" | "-u" | "--patch" | "--patch-with-stat"
            ) || word.text.starts_with("-L")
        });
        let (revisions, paths) = match rest.iter().position(|word| word.text == "--") {
            Some(dash) => (&rest[..dash], &rest[dash + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        let only_names = rest.iter().any(|word| {
            matches!(
                word.text.as_str(),
                "--stat"
                    | "--name-only"
                    | "--name-status"
                    | "--quiet"
                    | "--shortstat"
                    | "--numstat"
            )
        });
        let (blobs, after_dashes) = match subcommand.text.as_str() {
            "show" | "cat-file" => (true, subcommand.text == "show"),
            "log" | "whatchanged" => (false, patches),
            // `git diff main -- .env`, `git stash show -p -- .env.local`: their changes.
            "diff" => (false, !only_names),
            "stash" if rest.first().is_some_and(|word| word.text == "show") => (false, patches),
            _ => return,
        };
        if blobs {
            for word in revisions.iter().filter(|word| !word.text.starts_with('-')) {
                let Some((_, path)) = word.text.split_once(':') else {
                    continue;
                };
                let base = if path.starts_with("./") || path.starts_with("../") {
                    dir
                } else {
                    self.context.project().or(dir)
                };
                facts
                    .files
                    .push(self.path(path, word.dynamic, base, Role::Read));
            }
        }
        if after_dashes {
            for word in paths {
                facts.files.push(self.file(word, dir, Role::Read));
            }
        }
    }
}

/// An entry of what a listing found (`find`'s `{}`, a variable set from `ls` or `find`),
/// as `role` uses it. "Some entry below" keeps a filtered `find … -delete` from counting as
/// deleting its whole place; what is read may be any entry there, named like a credential
/// too (`find ~/.ssh -name 'id_*' -exec cat {} \;`).
fn entry_of(found: &FileRef, role: Role) -> FileRef {
    let path = match (role, found.path.as_deref()) {
        (Role::Read, Some(path)) => path
            .strip_suffix("/\u{1}")
            .map(|parent| if parent.is_empty() { "/" } else { parent })
            .unwrap_or(path),
        (_, path) => path.unwrap_or_default(),
    };
    FileRef {
        path: found.path.as_ref().map(|_| path.to_owned()),
        role,
        tree: found.tree,
        file_only: false,
    }
}

/// Whether the command deletes files only, never a folder or what one holds: `unlink`,
/// and `rm` without `-r`, `-R` or `--recursive` (which GNU takes abbreviated, down to
/// `--r`; `rm -d` removes a folder only when it is empty). A computed word before `--` may
/// be any option, unless it goes on as a path (`$HOME/x`).
pub(super) fn deletes_files_only(name: &str, arguments: &[Word]) -> bool {
    match name {
        "unlink" => true,
        "rm" => {
            for word in arguments {
                if word.dynamic && !word.text.contains('/') {
                    return false;
                }
                match word.text.as_str() {
                    "--" => return true,
                    long if long.starts_with("--r") => return false,
                    long if long.starts_with("--") => {}
                    short if short.starts_with('-') && short.contains(['r', 'R']) => return false,
                    _ => {}
                }
            }
            true
        }
        _ => false,
    }
}
