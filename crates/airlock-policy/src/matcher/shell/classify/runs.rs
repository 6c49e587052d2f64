//! What a command runs besides itself: a script, inline code in another language, code
//! kept to run later (aliases, traps, settings, package scripts) and command lines nested
//! in another (`sh -c`, here-strings, strings passed to `os.system`).

use super::*;

/// A shell given its script on the line: the script's commands are segments of their own,
/// judged where they work; the shell itself only reads, and works in no folder (it was
/// placed there as a build, the class a script run gets).
fn script_seen(facts: &mut SegmentFacts) {
    facts.classes = remove(facts.classes, Class::Build);
    if facts.classes.is_empty() {
        facts.classes.insert(Class::ReadOnly);
    }
    facts.files.retain(|file| file.role != Role::Workdir);
}

/// Inline code (or code read from standard input) that builds nothing works in no folder:
/// what it reads, writes or deletes was named from its text (`python3 -c "print(1)"` run
/// in the home only computes, as `expr` would). Code that may save through a library's
/// own call (`wb.save('x.xlsx')`, `df.to_excel(…)`, `img.save(…)`), which is not read as
/// a write, keeps working in its folder.
fn works_nowhere_unless_building(code: &str, facts: &mut SegmentFacts) {
    const SAVES: &[&str] = &[
        ".save(",
        ".to_",
        ".export(",
        "export_",
        ".store(",
        "imwrite",
        "writer",
        ".dump",
        "savez",
        ".persist(",
        ".output(",
        "extract",
    ];
    let lower = code.to_ascii_lowercase();
    if !facts.classes.intersects(ClassSet::of(&[
        Class::Build,
        Class::VcsLocal,
        Class::Install,
        Class::Discard,
    ])) && !SAVES.iter().any(|name| lower.contains(name))
    {
        facts.files.retain(|file| file.role != Role::Workdir);
    }
}

impl Judge<'_> {
    /// Shells and interpreters: a script file, inline code, or code from stdin.
    pub(super) fn runner(
        &mut self,
        name: &str,
        arguments: &[Word],
        segment: &Segment,
        dir: Option<&str>,
        nesting: usize,
        facts: &mut SegmentFacts,
    ) {
        // `powershell -Command '…'`: the parent module made the script's commands
        // segments of their own (`powershell.rs`).
        if matches!(name, "powershell" | "pwsh")
            && crate::matcher::shell::powershell_script(arguments).is_some()
        {
            script_seen(facts);
            return;
        }
        // `powershell -File x.ps1`: the script named after `-File`; anything else (an
        // interactive shell, options not known here) cannot be seen.
        if matches!(name, "powershell" | "pwsh") {
            let file = arguments
                .windows(2)
                .find(|pair| matches!(pair[0].text.to_ascii_lowercase().as_str(), "-file" | "-f"))
                .map(|pair| &pair[1]);
            facts.classes = remove(facts.classes, Class::Build);
            match file {
                Some(word) if !word.dynamic => {
                    facts.classes.insert(Class::Build);
                    facts.files.push(self.file(word, dir, Role::Change));
                }
                _ => facts.classes.insert(Class::Unknown),
            }
            return;
        }
        // `cmd /c LINE` on Windows: the parent module made the line's commands segments of
        // their own. Elsewhere a program named `cmd` is nobody knows what.
        if name == "cmd" {
            match crate::matcher::shell::cmd_script(arguments) {
                Some(_) if self.context.on_windows() => script_seen(facts),
                _ => {
                    facts.classes = remove(facts.classes, Class::Build);
                    facts.classes.insert(Class::Unknown);
                }
            }
            return;
        }
        let is_shell = SHELLS.contains(&name) || matches!(name, "source" | ".");
        // `sh -c '…'`: the parent module already made the script's commands segments of
        // their own; the shell itself does nothing more.
        if is_shell && crate::matcher::shell::shell_script(arguments).is_some() {
            script_seen(facts);
            return;
        }
        if !is_shell {
            if let Some(code) = inline_code(name, arguments) {
                facts.classes = remove(facts.classes, Class::Build);
                // Code holding only variables of known value (`open('$HOME/.x')`) is read
                // with their values; any other computed code is nobody knows what.
                let text = match code.dynamic {
                    false => std::borrow::Cow::Borrowed(code.text.as_str()),
                    true => match self.known_variables(&code.text, dir) {
                        Some(text) => std::borrow::Cow::Owned(text),
                        None => {
                            facts.classes.insert(self.hidden_code());
                            return;
                        }
                    },
                };
                self.code(&text, name, dir, nesting, facts);
                works_nowhere_unless_building(&text, facts);
                // The files it is given after its code are read (`perl -ne '…' FILE`), or
                // changed where it edits them in place (`perl -0pi -e '…' FILE`).
                if let Some(at) = arguments.iter().position(|word| std::ptr::eq(word, code)) {
                    let named = facts.files.len();
                    self.operands_read_after(&arguments[at + 1..], dir, facts);
                    // Its switches may follow the code too (`perl -e '…' -i FILE`).
                    let texts: Vec<&str> = arguments
                        .iter()
                        .enumerate()
                        .filter(|(index, _)| *index != at)
                        .map(|(_, word)| word.text.as_str())
                        .collect();
                    if self
                        .table
                        .option_classes(name, &texts)
                        .contains(Class::Write)
                    {
                        for file in &mut facts.files[named..] {
                            file.role = Role::Change;
                        }
                    }
                }
                return;
            }
            // `python -m pytest` and friends were classified by the table; the module's
            // operands are files it reads (`python3 -m base64 FILE`).
            if let Some(at) = arguments.iter().position(|word| word.text == "-m") {
                self.operands_read_after(arguments.get(at + 2..).unwrap_or_default(), dir, facts);
                return;
            }
        }
        // A lone `-` names standard input as the script: the words after it are the
        // script's arguments (`python - "$out" <<'PY'`), not a script file.
        let mut positionals = arguments
            .iter()
            .filter(|word| !word.text.starts_with('-') || word.text == "-");
        // `deno run x.ts`, `bun run x.ts`, `mix run x.exs`: the script follows `run`.
        let script = match positionals.next() {
            Some(word) if word.text == "run" && matches!(name, "deno" | "bun" | "mix") => {
                positionals.next()
            }
            first => first,
        }
        .filter(|word| word.text != "-")
        // `bash -s ARG…`, `sh -es -- -y`: the script is read from standard input, and the
        // words after the options are its arguments.
        .filter(|_| !(is_shell && reads_script_from_stdin(arguments)));
        // The arguments of a script read from standard input name what it may open
        // (`python - ~/.ssh/id_ed25519 <<'PY' … open(sys.argv[1]) …`): the written-out ones
        // are read as files.
        if script.is_none() {
            let after = arguments
                .iter()
                .position(|word| word.text == "-")
                .map(|at| at + 1)
                .or_else(|| (is_shell && reads_script_from_stdin(arguments)).then_some(0));
            if let Some(after) = after {
                let literal: Vec<Word> = arguments[after..]
                    .iter()
                    .filter(|word| !word.dynamic)
                    .cloned()
                    .collect();
                self.operands_read_after(&literal, dir, facts);
            }
        }
        // `source "$HOME/.cargo/env"`: the home is known even if the shell computes it.
        let known = script
            .filter(|word| word.dynamic)
            .and_then(|word| self.known_variables(&word.text, dir))
            .map(|text| Word::literal(&text));
        let script = known.as_ref().or(script);
        // Sourcing a toolchain's environment script from the home (`~/.cargo/env`,
        // `~/.nvm/nvm.sh`) or the person's own shell start-up file only sets up the
        // environment every new terminal gets.
        if matches!(name, "source" | ".")
            && script.is_some_and(|word| !word.dynamic && self.sets_up_environment(&word.text, dir))
        {
            facts.classes = remove(facts.classes, Class::Build);
            facts.classes.insert(Class::ReadOnly);
            return;
        }
        // `php -l x.php`: PHP's syntax check reads its files and runs none of them.
        if name == "php"
            && arguments
                .iter()
                .any(|word| matches!(word.text.as_str(), "-l" | "--syntax-check"))
            && arguments
                .iter()
                .all(|word| !word.dynamic && !matches!(word.text.as_str(), "-r" | "-a" | "-S"))
        {
            facts.classes = remove(facts.classes, Class::Build);
            facts.classes.insert(Class::ReadOnly);
            for word in arguments.iter().filter(|word| !word.text.starts_with('-')) {
                facts.files.push(self.file(word, dir, Role::Read));
            }
            return;
        }
        // `bash -n x.sh`, `sh -n`, `zsh -n`: the script is read for its syntax, never run.
        if is_shell
            && name != "source"
            && name != "."
            && arguments
                .iter()
                .take_while(|word| word.text.starts_with('-') && word.text != "--")
                .any(|word| {
                    word.text == "--noexec"
                        || (!word.text.starts_with("--")
                            && word.text.contains('n')
                            && word.text[1..].chars().all(|c| c.is_ascii_alphabetic()))
                })
        {
            if let Some(word) = script.filter(|word| !word.dynamic) {
                facts.classes = remove(facts.classes, Class::Build);
                facts.classes.insert(Class::ReadOnly);
                facts.files.push(self.file(word, dir, Role::Read));
                return;
            }
        }
        match script {
            Some(word) if word.dynamic => {
                // `source <(curl …)`, `bash "$SCRIPT"`.
                facts.classes = remove(facts.classes, Class::Build);
                facts.classes.insert(self.hidden_code());
            }
            // `deno run https://…/x.ts`: code fetched and run, as `curl … | sh` is;
            // `deno run npm:cowsay`: a package fetched and run, as `npx` is.
            Some(word) if is_url(&word.text) => {
                facts.classes = remove(facts.classes, Class::Build);
                facts.classes.insert(Class::RemoteCode);
            }
            Some(word) if word.text.starts_with("npm:") || word.text.starts_with("jsr:") => {
                facts.classes = remove(facts.classes, Class::Build);
                facts.classes.insert(Class::Install);
            }
            Some(word) => {
                facts.classes.insert(Class::Build);
                facts.files.push(self.file(word, dir, Role::Change));
                self.output_options(arguments, dir, facts);
                // What the script is handed (`python sign.py ~/.ssh/id_rsa`, `node x.js
                // --profile=~/.config/google-chrome`) is what it may open: the written-out
                // words are read as files, as `./sign.sh ~/.ssh/id_rsa` has them read.
                if let Some(at) = arguments
                    .iter()
                    .position(|argument| std::ptr::eq(argument, word))
                {
                    self.script_arguments_read(&arguments[at + 1..], dir, facts);
                }
            }
            // Only options (`python3 --version`, `node -v`): the table has judged it.
            None if !arguments.is_empty()
                && !segment.piped
                && segment.here_text.is_none()
                && !arguments
                    .iter()
                    .any(|word| matches!(word.text.as_str(), "-" | "-s" | "-i")) =>
            {
                if facts.classes == ClassSet::of(&[Class::Build]) {
                    facts.classes = ClassSet::of(&[Class::Unknown]);
                }
            }
            None => {
                facts.classes = remove(facts.classes, Class::Build);
                match &segment.here_text {
                    Some(Some(text)) if is_shell => {
                        if facts.classes.is_empty() {
                            facts.classes.insert(Class::ReadOnly);
                        }
                        self.nested(text, dir, nesting);
                    }
                    Some(Some(text)) => self.code(text, name, dir, nesting, facts),
                    Some(None) => facts.classes.insert(Class::Unknown),
                    None if segment.piped => facts.classes.insert(self.hidden_code()),
                    None => facts.classes.insert(Class::Unknown),
                }
                if let Some(Some(text)) = &segment.here_text {
                    works_nowhere_unless_building(text, facts);
                }
            }
        }
    }

    /// A script's written-out arguments, read as files: its operands, and the values of
    /// its `--option=VALUE` words written as paths (`/…`, `~/…`, `./…`, `C:\\…`); computed
    /// ones when their variables are known.
    pub(super) fn script_arguments_read(
        &self,
        words: &[Word],
        dir: Option<&str>,
        facts: &mut SegmentFacts,
    ) {
        for word in words {
            // A word the shell computes counts when its variables are known (`"$HOME/.ssh/
            // id_rsa"`); one that could be anything (`"$1"`) is the script's data.
            let known;
            let text = if word.dynamic {
                match self.known_variables(&word.text, dir) {
                    Some(text) => {
                        known = text;
                        known.as_str()
                    }
                    None => continue,
                }
            } else {
                word.text.as_str()
            };
            let value = match text.strip_prefix("--") {
                Some(option) => match option.split_once('=') {
                    Some((_, value)) if looks_like_path(value) => value,
                    _ => continue,
                },
                None if text.starts_with('-') => continue,
                None => text,
            };
            facts
                .files
                .push(self.file(&Word::literal(value), dir, Role::Read));
        }
    }

    /// The words that are not options, read as files (a word computed at run time is a
    /// place nobody knows).
    fn operands_read_after(&self, words: &[Word], dir: Option<&str>, facts: &mut SegmentFacts) {
        for word in words.iter().filter(|word| !word.text.starts_with('-')) {
            facts.files.push(self.file(word, dir, Role::Read));
        }
    }

    /// Whether `path` is a toolchain's environment script in the home, or a shell
    /// start-up file there.
    fn sets_up_environment(&self, path: &str, dir: Option<&str>) -> bool {
        const SCRIPTS: &[&str] = &[
            ".cargo/env",
            ".nvm/nvm.sh",
            ".sdkman/bin/sdkman-init.sh",
            ".ghcup/env",
            ".local/bin/env",
            ".deno/env",
            ".rye/env",
            ".bashrc",
            ".bash_profile",
            ".profile",
            ".zshrc",
            ".zprofile",
            ".zshenv",
        ];
        let (Some(home), Some(path)) = (self.context.home(), self.context.resolve_from(path, dir))
        else {
            return false;
        };
        crate::matcher::path::below(&path, home).is_some_and(|rest| SCRIPTS.contains(&rest))
    }

    /// Code the command line cannot show: `remote_code` when something downloads or
    /// decodes, else `unknown`.
    pub(super) fn hidden_code(&self) -> Class {
        if self.sources {
            Class::RemoteCode
        } else {
            Class::Unknown
        }
    }

    /// Inline code in another language, run by `interpreter` (its language's, when known:
    /// `python3`, `node`; `""` for none).
    pub(super) fn code(
        &mut self,
        text: &str,
        interpreter: &str,
        dir: Option<&str>,
        nesting: usize,
        facts: &mut SegmentFacts,
    ) {
        let found = code::inspect_in(text, code::Language::of_interpreter(interpreter));
        facts.classes.extend(found.classes);
        for (path, role) in &found.paths {
            // A pattern the code expands (`glob.glob('~/.ssh/*')`) stands for its folder
            // and what is below it, as the same glob on a command line does.
            facts.files.push(if path.contains(['*', '?', '[']) {
                self.glob_file(path, dir, *role)
            } else {
                self.path(path, false, dir, *role)
            });
        }
        if found
            .classes
            .intersects(ClassSet::of(&[Class::Write, Class::Delete]))
            && found.paths.is_empty()
        {
            facts.files.push(FileRef {
                path: None,
                tree: false,
                file_only: false,
                role: Role::Change,
            });
        }
        for command in &found.commands {
            self.nested(command, dir, nesting);
        }
    }

    /// Code a command keeps to run: an alias's text and a trap's command run later in the
    /// same shell; a build file from outside the project, or from standard input (`make -f
    /// /dev/stdin <<< …`), holds recipes nobody has read.
    pub(super) fn kept_code(
        &mut self,
        name: &str,
        arguments: &[Word],
        cwd: Option<&str>,
        nesting: usize,
        facts: &mut SegmentFacts,
    ) {
        // `npm pkg set scripts.lint="eslint ."`: package.json given scripts, which run when
        // named (`npm run lint`) or by npm itself (`postinstall`): judged as the lines
        // they are, as a package.json written with them is.
        let pkg_set = matches!(name, "npm" | "pnpm")
            && arguments.len() > 2
            && arguments[0].text == "pkg"
            && arguments[1].text == "set"
            && arguments.iter().all(|word| !word.dynamic);
        let mut code = |judge: &mut Self, word: &Word, text: &str| {
            if word.dynamic {
                facts.classes.insert(Class::Unknown);
            } else {
                judge.nested(text, cwd, nesting);
            }
        };
        match name {
            _ if pkg_set => {
                for word in &arguments[2..] {
                    if let Some((key, value)) = word.text.split_once('=') {
                        if key.starts_with("scripts.") {
                            code(self, word, value);
                        }
                    }
                }
            }
            "alias" => {
                for word in arguments {
                    if let Some((_, value)) = word.text.split_once('=') {
                        code(self, word, value);
                    }
                }
            }
            // `export GIT_SSH_COMMAND='…'`: the setting's command runs later.
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                for word in arguments {
                    if programs::assignment_runs_code(&word.text) {
                        if let Some((_, value)) = word.text.split_once('=') {
                            code(self, word, value);
                        }
                    }
                }
            }
            // `git -c core.pager='…' log`, `git config core.sshCommand '…'`: git runs the
            // value through a shell; `ext::` remotes run a command of their own.
            "git" => {
                for (word, value) in git::git_settings_that_run(arguments) {
                    code(self, word, &value);
                }
                for word in arguments {
                    if let Some(command) = word.text.strip_prefix("ext::") {
                        code(self, word, &command.replace("% ", " "));
                    }
                }
            }
            // `npm pkg set scripts.pretest='…'`: a script the next `npm test` runs.
            "npm" | "pnpm"
                if arguments
                    .iter()
                    .take(2)
                    .map(|word| word.text.as_str())
                    .eq(["pkg", "set"]) =>
            {
                for word in &arguments[2..] {
                    if let Some((key, value)) = word.text.split_once('=') {
                        if key.starts_with("scripts.") {
                            code(self, word, value);
                        }
                    }
                }
            }
            "trap" => {
                if let Some(word) = arguments.iter().find(|word| !word.text.starts_with('-')) {
                    code(self, word, &word.text);
                }
            }
            _ => {
                let Some(options) = build_file_options(name) else {
                    return;
                };
                for file in words::option_value_words(arguments, options) {
                    if file.dynamic
                        || matches!(file.text.as_str(), "-" | "/dev/stdin" | "/dev/fd/0")
                    {
                        facts.classes.insert(Class::Unknown);
                    } else {
                        facts.files.push(self.file(&file, cwd, Role::Change));
                    }
                }
            }
        }
        if pkg_set {
            facts.classes = remove(facts.classes, Class::Unknown);
            facts.classes.insert(Class::Write);
            facts
                .files
                .push(self.file(&Word::literal("package.json"), cwd, Role::Change));
        }
    }

    /// A command line found inside another (a here-string into a shell, a string passed
    /// to `os.system`): its segments join the command's.
    pub(super) fn nested(&mut self, text: &str, dir: Option<&str>, nesting: usize) {
        let segments = match parse_command(text, nesting + 1) {
            Ok(segments) => segments,
            Err(LexError::TooDeep) => vec![Segment::unknowable()],
            Err(_) => crude_segments(text),
        };
        if any_feeds_code(&segments) {
            self.sources = true;
        }
        self.computed
            .extend(super::computed::computed_variables(&segments));
        self.all(&segments, dir.map(str::to_string), nesting + 1);
    }
}

/// `make CC='sh -c "…"'`: a variable given a shell line, which the recipes run.
pub(super) fn make_variable_runs(name: &str, arguments: &[Word]) -> bool {
    matches!(name, "make" | "gmake")
        && arguments.iter().any(|word| {
            word.text.split_once('=').is_some_and(|(variable, value)| {
                !variable.starts_with('-')
                    && (value.contains([';', '|', '&', '`', '>', '<'])
                        || value.contains("$(")
                        || SHELLS
                            .iter()
                            .any(|shell| value.starts_with(&format!("{shell} -c"))))
            })
        })
}

/// The notebook whose cells a command runs: `papermill IN OUT -p k v`, `jupyter execute
/// NB`, `jupyter nbconvert --execute NB` (a conversion without `--execute` runs nothing).
fn notebook_run<'w>(name: &str, arguments: &'w [Word]) -> Option<&'w Word> {
    let (options_with_values, rest): (&[&str], &[Word]) = match name {
        "papermill" => (
            &[
                "-f",
                "--parameters_file",
                "-y",
                "--parameters_yaml",
                "-b",
                "--parameters_base64",
                "-k",
                "--kernel",
                "-l",
                "--language",
                "--cwd",
                "--log-level",
                "--engine",
                "--execution-timeout",
                "--start-timeout",
                "--prepare-only",
            ],
            arguments,
        ),
        "jupyter" => {
            let (subcommand, rest) = arguments.split_first()?;
            let executes = match subcommand.text.as_str() {
                "execute" => true,
                "nbconvert" => rest.iter().any(|word| word.text == "--execute"),
                _ => false,
            };
            if !executes {
                return None;
            }
            (
                &[
                    "--to",
                    "--output",
                    "--output-dir",
                    "--template",
                    "--kernel",
                    "--config",
                ],
                rest,
            )
        }
        _ => return None,
    };
    let mut index = 0;
    while let Some(word) = rest.get(index) {
        index += 1;
        let text = word.text.as_str();
        if !text.starts_with('-') || text == "-" {
            return Some(word);
        }
        if matches!(text, "-p" | "--parameters" | "-r" | "--parameters_raw") {
            index += 2;
        } else if options_with_values.contains(&text) {
            index += 1;
        }
    }
    None
}

impl Judge<'_> {
    /// A notebook run ([`notebook_run`]) runs its cells as a script: one fetched by its URL
    /// is code downloaded and run; a file is run where it lies, as `python FILE` is.
    pub(super) fn notebook(
        &self,
        name: &str,
        arguments: &[Word],
        dir: Option<&str>,
        facts: &mut SegmentFacts,
    ) {
        let Some(notebook) = notebook_run(name, arguments) else {
            return;
        };
        if notebook.dynamic {
            facts.classes.insert(self.hidden_code());
        } else if is_url(&notebook.text) {
            facts.classes.insert(Class::RemoteCode);
        } else {
            facts.files.push(self.file(notebook, dir, Role::Change));
        }
    }
}

/// `bash -s -- --yes < x.sh`, `cat x.sh | bash`, `python3 - a < x.py`: a shell or
/// interpreter whose script comes from standard input, given it by a redirection or by
/// `cat` printing one file into the pipe, as the command that names that file (`bash
/// x.sh --yes`, `python3 x.py a`), so the script is judged as every named run is. `None`
/// when the script is named, inline, or a here-document or here-string.
pub(super) fn stdin_script(words: &[Word], segment: &Segment) -> Option<Vec<Word>> {
    let (first, arguments) = words.split_first()?;
    let name = basename(&first.text);
    let shell = SHELLS.contains(&name);
    if first.dynamic
        || !(shell || super::written::INTERPRETERS.contains(&name))
        || segment.here_text.is_some()
        || inline_code(name, arguments).is_some()
        || arguments.iter().any(|word| word.text == "-m")
    {
        return None;
    }
    let file = segment
        .redirections
        .iter()
        .rev()
        .find(|(_, written)| !written)
        .map(|(word, _)| word)
        .or(segment.piped_file.as_ref().filter(|_| segment.piped))?;
    let from_stdin = shell && reads_script_from_stdin(arguments);
    let options = arguments
        .iter()
        .take_while(|word| word.text.starts_with('-') && !matches!(word.text.as_str(), "-" | "--"))
        .count();
    let mut rest = &arguments[options..];
    match rest.first().map(|word| word.text.as_str()) {
        Some("-" | "--") => rest = &rest[1..],
        Some(_) if !from_stdin => return None,
        _ => {}
    }
    let mut rewritten = vec![first.clone()];
    for option in &arguments[..options] {
        let mut option = option.clone();
        if from_stdin && !option.text.starts_with("--") {
            option.text = option.text.replace('s', "");
            if option.text == "-" {
                continue;
            }
        }
        rewritten.push(option);
    }
    rewritten.push(file.clone());
    rewritten.extend(rest.iter().cloned());
    Some(rewritten)
}

/// A shell's options before its first operand hold `-s` (alone or in a cluster such as
/// `-es`): the script comes from standard input.
fn reads_script_from_stdin(arguments: &[Word]) -> bool {
    arguments
        .iter()
        .take_while(|word| word.text.starts_with('-') && word.text != "--")
        .any(|word| {
            let option = &word.text[1..];
            !word.dynamic
                && !option.starts_with('-')
                && option.contains('s')
                && option.chars().all(|c| c.is_ascii_alphabetic())
        })
}

/// A value written as a path: absolute, from the home, relative with `./` or `../`, or a
/// Windows drive's.
fn looks_like_path(value: &str) -> bool {
    value.starts_with(['/', '~'])
        || value.starts_with("./")
        || value.starts_with("../")
        || value.as_bytes().get(1) == Some(&b':')
}
