//! `find` and searches aimed at credentials: what a `find` searches or changes, and when a
//! search pattern outside the project is hunting for secrets.

use super::*;

/// Whether a command that reads files prints nothing of what they hold: `grep -l`/`-L`/
/// `-c`/`-q` (names, counts, a status), `wc` (counts).
pub(super) fn prints_no_content(name: &str, arguments: &[Word]) -> bool {
    match name {
        "wc" => arguments
            .iter()
            .all(|word| !word.dynamic && !word.text.starts_with("--files0-from")),
        "grep" | "egrep" | "fgrep" | "rg" => arguments.iter().any(|word| {
            matches!(
                word.text.as_str(),
                "--files-with-matches"
                    | "--files-without-match"
                    | "--count"
                    | "--quiet"
                    | "--silent"
            ) || (word.text.starts_with('-')
                && !word.text.starts_with("--")
                && word.text[1..].chars().all(|c| c.is_ascii_alphabetic())
                && (word.text.contains(['l', 'c', 'q'])
                    // ripgrep's `-L` follows links.
                    || (name != "rg" && word.text.contains('L'))))
        }),
        _ => false,
    }
}

impl Judge<'_> {
    /// `find`: the places before the first expression are searched (or changed, with
    /// `-delete`); `-name`/`-path` patterns may be hunting for credentials.
    pub(super) fn find(
        &self,
        arguments: &[Word],
        dir: Option<&str>,
        texts: &[&str],
        facts: &mut SegmentFacts,
    ) {
        let role = if facts.classes.contains(Class::Delete) {
            Role::Change
        } else {
            Role::Read
        };
        let mut places = Vec::new();
        for word in arguments {
            if word.text.starts_with('-') || word.text == "(" || word.text == "!" {
                break;
            }
            let mut file = self.file(word, dir, role);
            file.tree = true;
            places.push(file);
        }
        if places.is_empty() {
            places.push(FileRef {
                path: dir.map(str::to_string),
                tree: true,
                file_only: false,
                role,
            });
        }
        // With a test that picks some entries (`-name`, `-mtime`…), `find` acts on what is
        // below its places, not on the places themselves: `find . -name '*.pyc' -delete`
        // keeps `.`. Without one (`-type f`, `-mindepth 1` pick everything), on all of them.
        let filtered = if role == Role::Change {
            narrowed(arguments)
        } else {
            // Listing names: any test makes it what lies below the places.
            arguments.iter().any(|word| {
                word.text.starts_with('-')
                    && !matches!(
                        word.text.as_str(),
                        "-delete"
                            | "-depth"
                            | "-d"
                            | "-print"
                            | "-print0"
                            | "-L"
                            | "-H"
                            | "-P"
                            | "-xdev"
                            | "-mount"
                            | "-ls"
                    )
                    && !word.text.starts_with("-maxdepth")
                    && !word.text.starts_with("-mindepth")
            })
        };
        if filtered {
            for place in &mut places {
                place.path = place.path.as_deref().map(any_child);
            }
        }
        let mut patterns = Vec::new();
        for pair in arguments.windows(2) {
            if matches!(
                pair[0].text.as_str(),
                "-name"
                    | "-iname"
                    | "-path"
                    | "-ipath"
                    | "-regex"
                    | "-iregex"
                    | "-wholename"
                    | "-lname"
            ) {
                patterns.push(pair[1].text.as_str());
            }
            if matches!(pair[0].text.as_str(), "-fprint" | "-fprintf" | "-fls") {
                facts.files.push(self.file(&pair[1], dir, Role::Change));
            }
        }
        // `find ~ -name 'id_*'`: a name pattern aimed at credential files' names (`id_*`
        // matches `id_rsa`) hunts for them as the name itself would.
        let aimed: Vec<String> = arguments
            .windows(2)
            .filter(|pair| matches!(pair[0].text.as_str(), "-name" | "-iname"))
            .filter_map(|pair| {
                let glob = globset::Glob::new(&pair[1].text).ok()?.compile_matcher();
                globs::credential_glob(&pair[1].text, &glob)
            })
            .collect();
        patterns.extend(aimed.iter().map(String::as_str));
        self.hunting(&patterns, texts, &places, facts);
        facts.files.extend(places);
    }

    /// When `segments[index]` is the command a `find … -exec` runs (the segments of a
    /// `find`'s commands come just before it): what its `{}` stands for.
    /// Only a `find` with one place that can be resolved says; a test (`-name`…) makes it
    /// what lies below the place, not the place itself.
    pub(super) fn found_by_find(
        &self,
        segments: &[Segment],
        index: usize,
        cwd: Option<&str>,
    ) -> Option<FileRef> {
        let words = &segments[index].words;
        let is_find = |segment: &&Segment| {
            segment
                .words
                .first()
                .is_some_and(|first| !first.dynamic && basename(&first.text) == "find")
        };
        // The next `find` after it, when that `find` runs exactly these words.
        let owner = segments[index + 1..].iter().find(is_find)?;
        let (_, arguments) = owner.words.split_first()?;
        let same = |command: &&[Word]| {
            command.len() == words.len() && command.iter().zip(words).all(|(a, b)| a.text == b.text)
        };
        if !crate::matcher::shell::find_exec_commands(arguments)
            .iter()
            .any(same)
        {
            return None;
        }
        self.find_place(arguments, cwd)
    }

    /// What a segment fed by the pipe of the `find` just before it reads its names from
    /// (`find src -name '*.py' -print0 | xargs -0 grep -l x`): what that `find` finds, when
    /// it has one place that can be resolved, only prints (no `-exec`, `-delete`,
    /// `-fprint`…), and the names cross the pipe NUL-separated.
    pub(super) fn piped_from_find(
        &self,
        segments: &[Segment],
        index: usize,
        cwd: Option<&str>,
    ) -> Option<FileRef> {
        let segment = &segments[index];
        let before = segments.get(index.checked_sub(1)?)?;
        if !segment.piped || before.depth != segment.depth {
            return None;
        }
        let (first, arguments) = before.words.split_first()?;
        if first.dynamic || basename(&first.text) != "find" {
            return None;
        }
        let acts = arguments.iter().any(|word| {
            word.dynamic
                || matches!(
                    word.text.as_str(),
                    "-exec"
                        | "-execdir"
                        | "-ok"
                        | "-okdir"
                        | "-delete"
                        | "-fprint"
                        | "-fprint0"
                        | "-fprintf"
                        | "-fls"
                        | "-L"
                        | "-follow"
                )
        });
        // Names cross the pipe whole only NUL-separated (`find … -print0 | xargs -0`): split
        // at blanks and newlines, a file named `a /etc/x` would name `/etc/x`.
        let whole_names = arguments.iter().any(|word| word.text == "-print0")
            && segment
                .words
                .iter()
                .any(|word| matches!(word.text.as_str(), "-0" | "--null"));
        if acts || !whole_names {
            return None;
        }
        self.find_place(arguments, cwd)
    }

    /// The one place a `find` searches (its operands before the first test), and below it
    /// what it finds: any entry when a test filters them, else the place and all below.
    fn find_place(&self, arguments: &[Word], cwd: Option<&str>) -> Option<FileRef> {
        let mut places = arguments.iter().take_while(|word| {
            !(word.text.starts_with('-') || word.text == "(" || word.text == "!")
        });
        let place = match (places.next(), places.next()) {
            (None, _) => cwd.map(str::to_string),
            (Some(word), None) => self.file(word, cwd, Role::Read).path,
            (Some(_), Some(_)) => None,
        }?;
        let filtered = narrowed(arguments);
        Some(FileRef {
            path: Some(if filtered { any_child(&place) } else { place }),
            tree: true,
            file_only: false,
            role: Role::Read,
        })
    }

    /// Search patterns naming credentials, aimed outside the project: hunting.
    pub(super) fn hunting(
        &self,
        patterns: &[&str],
        texts: &[&str],
        places: &[FileRef],
        facts: &mut SegmentFacts,
    ) {
        // A pattern shaped like a credential itself (`AKIA[0-9A-Z]{16}`, `ghp_…`, a private
        // key's block with the lines after it) prints the secrets it finds, wherever it
        // looks; listing or counting the files that hold them does not.
        if prints_matches(texts)
            && patterns
                .iter()
                .chain(&explicit_patterns(texts))
                .any(|pattern| key_shaped(pattern, texts))
        {
            facts.classes.insert(Class::CredentialSearch);
        }
        // Patterns given by option count as the operand's do (`grep -rn -e token ~/.config`).
        let explicit = explicit_patterns(texts);
        let looks_for_credentials = patterns.iter().chain(&explicit).any(|pattern| {
            let lower = pattern.to_ascii_lowercase();
            self.table
                .credential_words
                .iter()
                .any(|word| lower.contains(word.as_str()))
        });
        if !looks_for_credentials {
            return;
        }
        let outside = places.iter().any(|place| match &place.path {
            None => true,
            Some(path) => !self.inside_work_area(path),
        });
        if outside {
            facts.classes.insert(Class::CredentialSearch);
        }
    }

    /// `mdfind QUERY` searches Spotlight's index of the whole disk (`-onlyin DIR`: of one
    /// folder): its query and `-name` values are what it looks for, as `locate`'s pattern.
    pub(super) fn spotlight(
        &mut self,
        arguments: &[Word],
        dir: Option<&str>,
        facts: &mut SegmentFacts,
    ) {
        let mut patterns = Vec::new();
        let mut places = Vec::new();
        let mut words = arguments.iter();
        while let Some(word) = words.next() {
            match word.text.as_str() {
                "-onlyin" => places.extend(
                    words
                        .next()
                        .map(|folder| self.file(folder, dir, Role::Read)),
                ),
                "-name" => patterns.extend(words.next().map(|name| name.text.as_str())),
                "-s" | "-attr" => {
                    words.next();
                }
                text if text.starts_with('-') => {}
                text => patterns.push(text),
            }
        }
        if places.is_empty() {
            places.push(FileRef {
                path: Some("/".into()),
                tree: true,
                file_only: false,
                role: Role::Read,
            });
        }
        self.hunting(&patterns, &[], &places, facts);
        facts.files.extend(places);
    }

    /// `fd [OPTIONS] [PATTERN] [PATH…]`: its places are the operands after the pattern
    /// (or `--search-path`/`--base-directory`), else the folder it runs in; the pattern
    /// and `-e` extensions are what it looks for. A command it runs on what it finds
    /// (`-x`, `-X`) is not read here: unknown.
    pub(super) fn fd(&mut self, arguments: &[Word], dir: Option<&str>, facts: &mut SegmentFacts) {
        const VALUED: &[&str] = &[
            "-t",
            "--type",
            "-E",
            "--exclude",
            "-d",
            "--max-depth",
            "--min-depth",
            "--exact-depth",
            "-S",
            "--size",
            "--changed-within",
            "--changed-before",
            "-o",
            "--owner",
            "-j",
            "--threads",
            "-c",
            "--color",
            "--format",
            "--path-separator",
            "--max-results",
            "--and",
            "--ignore-file",
            "--batch-size",
        ];
        let mut patterns: Vec<String> = Vec::new();
        let mut places = Vec::new();
        let mut positional = 0;
        let mut words = arguments.iter();
        while let Some(word) = words.next() {
            let text = word.text.as_str();
            match text {
                "-x" | "--exec" | "-X" | "--exec-batch" => {
                    facts.classes.insert(Class::Unknown);
                    break;
                }
                "-e" | "--extension" => {
                    patterns.extend(words.next().map(|w| format!(".{}", w.text)));
                }
                "--search-path" | "--base-directory" => {
                    places.extend(
                        words
                            .next()
                            .map(|folder| self.file(folder, dir, Role::Read)),
                    );
                }
                _ if VALUED.contains(&text) => {
                    words.next();
                }
                _ if text.starts_with('-') => {}
                _ => {
                    if positional == 0 {
                        patterns.push(text.to_owned());
                    } else {
                        places.push(self.file(word, dir, Role::Read));
                    }
                    positional += 1;
                }
            }
        }
        if places.is_empty() {
            places.push(FileRef {
                path: dir.map(str::to_string),
                tree: true,
                file_only: false,
                role: Role::Read,
            });
        }
        for place in &mut places {
            place.tree = true;
        }
        let patterns: Vec<&str> = patterns.iter().map(String::as_str).collect();
        self.hunting(&patterns, &[], &places, facts);
        facts.files.extend(places);
    }
}

/// Whether a `find` has a test that picks some of the entries below its places (a name, a
/// path, a time, a size, an owner…). `-type`, `-mindepth`, `-maxdepth` and the actions
/// pick every file or every folder: `find . -type f -delete` empties the whole place, and
/// so does a negated test.
fn narrowed(arguments: &[Word]) -> bool {
    const TESTS: &[&str] = &[
        "-name",
        "-iname",
        "-path",
        "-ipath",
        "-wholename",
        "-iwholename",
        "-regex",
        "-iregex",
        "-lname",
        "-ilname",
        "-mtime",
        "-mmin",
        "-atime",
        "-amin",
        "-ctime",
        "-cmin",
        "-used",
        "-size",
        "-empty",
        "-user",
        "-group",
        "-uid",
        "-gid",
        "-nouser",
        "-nogroup",
        "-perm",
        "-links",
        "-inum",
        "-samefile",
        "-context",
        "-readable",
        "-writable",
        "-executable",
    ];
    // A negated test (`! -name '*.py'`, `-not -path './.git/*'`, `-not \( -name a -o -name
    // b \)`) picks all but a few.
    let mut negated_group: Option<usize> = None;
    let mut depth = 0usize;
    arguments.iter().enumerate().any(|(at, word)| {
        let text = word.text.as_str();
        let after_not = at
            .checked_sub(1)
            .is_some_and(|before| matches!(arguments[before].text.as_str(), "!" | "-not"));
        match text {
            "(" => {
                depth += 1;
                if after_not && negated_group.is_none() {
                    negated_group = Some(depth);
                }
                return false;
            }
            ")" => {
                if negated_group == Some(depth) {
                    negated_group = None;
                }
                depth = depth.saturating_sub(1);
                return false;
            }
            _ => {}
        }
        let negated = after_not || negated_group.is_some();
        !negated && (word.dynamic || TESTS.contains(&text) || text.starts_with("-newer"))
    })
}

/// The text of credentials that announce themselves: access key ids and tokens by their
/// fixed prefixes (AWS, GitHub, GitLab, Slack, Stripe, Anthropic, OpenAI projects, Google
/// API keys, npm, Hugging Face).
const KEY_PREFIXES: &[&str] = &[
    "AKIA",
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xox[",
    "sk_live_",
    "rk_live_",
    "sk-ant-",
    "sk-proj-",
    "AIza",
    "npm_[",
    "hf_[",
    "eyJ[",
];

/// The first line of a private key's block: what follows it, printed, is the key.
const KEY_BLOCKS: &[&str] = &[
    "PRIVATE KEY",
    "BEGIN RSA",
    "BEGIN OPENSSH",
    "BEGIN EC",
    "BEGIN DSA",
    "BEGIN PGP PRIVATE",
    "BEGIN ENCRYPTED",
];

/// Whether a search pattern is shaped like a credential: a key's fixed prefix, a
/// connection string's key or an address's password, or a private key's first line
/// searched with the lines after it (`-A30`, `-C 5`).
pub(super) fn key_shaped(pattern: &str, texts: &[&str]) -> bool {
    if KEY_PREFIXES.iter().any(|prefix| pattern.contains(prefix)) {
        return true;
    }
    // A connection string's key (`AccountKey=`, `SharedAccessKey=`) or an address with a
    // user and password before its host (`postgres://[^ ]+:[^ ]+@`): what follows is one.
    if ["AccountKey=", "SharedAccessKey=", "SharedAccessSignature="]
        .iter()
        .any(|key| pattern.contains(key))
        || pattern
            .split_once("://")
            .is_some_and(|(_, rest)| rest.contains(':') && rest.contains('@'))
    {
        return true;
    }
    // A bearer token's value after the word (`Bearer [A-Za-z0-9._-]+`, `bearer\s+\S+`).
    let lower = pattern.to_ascii_lowercase();
    if lower.match_indices("bearer").any(|(at, _)| {
        let rest = lower[at + "bearer".len()..]
            .trim_start_matches([' ', ':', '=', '+', '*', '?'])
            .trim_start_matches("\\s")
            .trim_start_matches(['+', '*', '?', ' ']);
        rest.starts_with(['[', '(', '.']) || rest.starts_with("\\s") || rest.starts_with("\\w")
    }) {
        return true;
    }
    let upper = pattern.to_ascii_uppercase();
    KEY_BLOCKS.iter().any(|block| upper.contains(block)) && prints_context(texts)
}

/// Whether a search prints the lines it matches: not only the files' names (`-l`, `-L`),
/// counts (`-c`) or its status (`-q`).
fn prints_matches(texts: &[&str]) -> bool {
    !texts.iter().any(|text| {
        matches!(
            *text,
            "--files-with-matches"
                | "--files-without-match"
                | "--count"
                | "--count-matches"
                | "--quiet"
                | "--silent"
                | "--files"
        ) || (text.starts_with('-')
            && !text.starts_with("--")
            && text[1..].chars().all(|c| c.is_ascii_alphabetic())
            && text[1..].contains(['l', 'L', 'c', 'q']))
    })
}

/// Whether a search prints lines around each match (`-A 30`, `-C5`, `--after-context=9`).
fn prints_context(texts: &[&str]) -> bool {
    texts.iter().any(|text| {
        text.starts_with("--after-context")
            || text.starts_with("--context")
            || (text.len() >= 2
                && text.starts_with('-')
                && !text.starts_with("--")
                && (text[1..].starts_with(['A', 'C'])
                    || text[1..].chars().all(|c| c.is_ascii_digit())))
    })
}

/// The patterns a search is given by option (`-e PATTERN`, `--regexp=PATTERN`).
fn explicit_patterns<'t>(texts: &[&'t str]) -> Vec<&'t str> {
    let mut out = Vec::new();
    let mut words = texts.iter();
    while let Some(text) = words.next() {
        match *text {
            "-e" | "--regexp" => out.extend(words.next().copied()),
            _ => out.extend(text.strip_prefix("--regexp=")),
        }
    }
    out
}
