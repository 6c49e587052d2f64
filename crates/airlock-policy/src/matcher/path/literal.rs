//! The plain text of a path pattern, used to answer without running its glob: the
//! directory a `dir/**` names, the shapes that are text around one `**` ([`Literal`]), and
//! the text every match must hold ([`needle`]).

/// The directory a pattern ending in `/**` names, when it is plain text.
pub(super) fn root_text(glob: &str) -> Option<String> {
    let directory = glob.strip_suffix("/**")?;
    let directory = if directory.is_empty() && glob.starts_with('/') {
        "/"
    } else {
        directory
    };
    (!directory.is_empty() && !directory.contains(['*', '?', '[', ']', '{', '}', '\\', ',']))
        .then(|| directory.to_string())
}

/// A glob that is plain text around at most one `**`, matched with string comparisons:
/// most patterns of the shipped lists are such (`{home}/.aws/credentials`, `**/.env`,
/// `{project}/**`), and a glob engine costs a candidate allocation per try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Literal {
    /// `a/b`: exactly this text.
    Exact(String),
    /// `a/b/**` (or `**` alone, empty): below this directory, at any depth.
    Below(String),
    /// `**/a/b`: this text, or it after a `/`.
    Ending(String),
}

impl Literal {
    /// Recognises the plain-text shapes of a normalised glob (relative, or absolute when
    /// `absolute`).
    pub(super) fn of(glob: &str, absolute: bool) -> Option<Literal> {
        let plain = |text: &str| {
            !text.is_empty()
                && text.starts_with('/') == absolute
                && !text.contains(['*', '?', '[', ']', '{', '}', '\\', ','])
        };
        if absolute && !glob.starts_with('/') {
            return None;
        }
        if glob == "**" && !absolute {
            return Some(Literal::Below(String::new()));
        }
        if let Some(directory) = glob.strip_suffix("/**") {
            return plain(directory).then(|| Literal::Below(directory.to_string()));
        }
        if let Some(ending) = glob.strip_prefix("**/").filter(|_| !absolute) {
            return plain(ending).then(|| Literal::Ending(ending.to_string()));
        }
        plain(glob).then(|| Literal::Exact(glob.to_string()))
    }

    /// Whether a non-empty relative path `rest` matches.
    pub(super) fn matches(&self, rest: &str) -> bool {
        match self {
            Literal::Exact(text) => rest == text,
            Literal::Below(directory) if directory.is_empty() => true,
            Literal::Below(directory) => rest
                .strip_prefix(directory.as_str())
                .is_some_and(|tail| tail.starts_with('/') && tail.len() > 1),
            Literal::Ending(text) => rest
                .strip_suffix(text.as_str())
                .is_some_and(|head| head.is_empty() || head.ends_with('/')),
        }
    }
}

/// The longest run of plain text that every string the glob matches must contain: text
/// outside `{…}` alternatives and `[…]` classes, between wildcards and escapes. A `/`
/// right after `**` is left out (`**/.env` also matches `.env`). `None` when no run is
/// two characters long.
pub(super) fn needle(glob: &str) -> Option<String> {
    let mut best = String::new();
    let mut run = String::new();
    let mut depth = 0usize;
    let mut chars = glob.chars().peekable();
    let mut after_globstar = false;
    while let Some(c) = chars.next() {
        let plain = depth == 0 && !matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | ',' | '\\');
        if plain && !(c == '/' && after_globstar) {
            run.push(c);
            after_globstar = false;
            continue;
        }
        if run.len() > best.len() {
            best = std::mem::take(&mut run);
        }
        run.clear();
        after_globstar = false;
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            '[' => {
                // A class is one character of a set: skip to its end.
                let mut first = true;
                for d in chars.by_ref() {
                    if d == ']' && !first {
                        break;
                    }
                    first = false;
                }
            }
            '\\' => {
                chars.next();
            }
            '*' if depth == 0 && chars.peek() == Some(&'*') => {
                chars.next();
                after_globstar = true;
            }
            _ => {}
        }
    }
    if run.len() > best.len() {
        best = run;
    }
    (best.chars().count() >= 2).then_some(best)
}
