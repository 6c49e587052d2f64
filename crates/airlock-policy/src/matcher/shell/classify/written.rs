//! Text a command line writes into a file and what becomes of it in the same line.
//!
//! `echo 'cat ~/.kube/config' > /tmp/r.sh && sh /tmp/r.sh` runs what it wrote: the script
//! is judged as the command it runs. `printf '…curl … | sh…' > .husky/pre-commit` plants
//! a command in a file git runs later by itself: what the default policy would refuse of
//! it (credential reads and sends, downloaded code, an agent unchecked, persistence) joins
//! the line, as the `plants` matcher finds for the file tools. Code a tool loads by
//! itself (`conftest.py`, `build.rs`) is judged here too ([`classify_code`]).

use super::super::lex::{Segment, Word};
use super::super::{basename, SHELLS};
use super::words::is_local_url;
use super::{CommandFacts, Judge, Role, SegmentFacts};
use crate::classes::ClassTable;
use crate::classes::{Class, ClassSet};
use crate::context::Context;
use crate::matcher::planted;

/// What a planted command may bring into the line that writes it: the classes the
/// default policy refuses outright.
const REFUSED: &[Class] = &[
    Class::CredentialAccess,
    Class::RemoteCode,
    Class::UnsafeAgent,
    Class::Persistence,
];

/// Code longer than this is not read: it is `unknown`. Reading code is one pass over it.
const MAX_CODE_BYTES: usize = 4 * 1024 * 1024;

/// Judges code in another language that a tool loads by itself (`conftest.py`,
/// `build.rs`), as inline code (`python -c`) is judged: one segment, plus the command
/// lines its strings run.
pub fn classify_code(code: &str, table: &ClassTable, context: &Context) -> CommandFacts {
    let mut judge = Judge::new(table, context, false);
    let mut facts = SegmentFacts {
        text: "(code run when its file is loaded)".into(),
        ..SegmentFacts::default()
    };
    if code.len() > MAX_CODE_BYTES {
        facts.classes.insert(Class::Unknown);
    } else {
        judge.code(code, "", context.cwd(), 0, &mut facts);
    }
    judge.check_files(&mut facts, super::words::TreeCopy::No);
    let mut segments = vec![facts];
    segments.append(&mut judge.out);
    CommandFacts { segments }
}

/// Interpreters that run a file named as their first operand.
pub(super) const INTERPRETERS: &[&str] = &[
    "python", "python3", "python2", "node", "ruby", "perl", "php", "bun", "deno", "tsx", "ts-node",
    "lua", "Rscript",
];

/// The literal text a command prints (`echo`, `printf`) or copies from a here-document
/// (`cat <<EOF`, `tee f <<EOF`); `None` when it is computed at run time or there is none.
fn literal_output(words: &[Word], segment: &Segment) -> Option<String> {
    let (first, arguments) = words.split_first()?;
    if first.dynamic {
        return None;
    }
    match basename(&first.text) {
        "echo" => {
            let text: Vec<&str> = arguments
                .iter()
                .skip_while(|word| {
                    word.text.len() > 1
                        && word.text.starts_with('-')
                        && word.text[1..].chars().all(|c| matches!(c, 'n' | 'e' | 'E'))
                })
                .map(|word| (!word.dynamic).then_some(word.text.as_str()))
                .collect::<Option<_>>()?;
            Some(unescape(&text.join(" ")) + "\n")
        }
        "printf" => {
            let text: Vec<&str> = arguments
                .iter()
                .skip_while(|word| word.text == "--")
                .map(|word| (!word.dynamic).then_some(word.text.as_str()))
                .collect::<Option<_>>()?;
            Some(unescape(&text.join("\n")))
        }
        "cat" | "tee" => match &segment.here_text {
            Some(Some(text)) => Some(text.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// The name `curl -O` and `wget` save a URL's body under: its path's last name, without
/// the query (`https://bootstrap.pypa.io/get-pip.py` is `get-pip.py`).
fn url_file_name(url: &str) -> Option<&str> {
    let lower = url.get(..8)?.to_ascii_lowercase();
    let rest = if lower.starts_with("https://") {
        &url[8..]
    } else if lower.starts_with("http://") || lower.starts_with("ftp://") {
        &url[lower.find("//")? + 2..]
    } else {
        return None;
    };
    let path = rest.split(['?', '#']).next()?;
    let (_, name) = path.rsplit_once('/')?;
    (!name.is_empty() && name != "." && name != "..").then_some(name)
}

/// `\n`, `\t` and `\\` as `printf` and `echo -e` read them.
fn unescape(text: &str) -> String {
    text.replace("\\n", "\n")
        .replace("\\t", "\t")
        .replace("\\\\", "\\")
}

/// The file a command runs as a script, and whether as shell (else as code):
/// `sh f`, `bash -x f`, `. f`, `source f`, `python f`, `./f`.
fn script_run(words: &[Word]) -> Option<(&Word, bool)> {
    let (first, arguments) = words.split_first()?;
    if first.dynamic {
        return None;
    }
    if first.text.contains('/') {
        return Some((first, true));
    }
    let name = basename(&first.text);
    let shell = SHELLS.contains(&name) || matches!(name, "source" | ".");
    if !shell && !INTERPRETERS.contains(&name) {
        return None;
    }
    let mut operands = arguments.iter().skip_while(|word| {
        word.text.starts_with('-') && !matches!(word.text.as_str(), "-c" | "-e" | "-m" | "-")
    });
    let operand = operands.next()?;
    (!operand.text.starts_with('-') && !operand.dynamic).then_some((operand, shell))
}

impl Judge<'_> {
    /// Records the text `segment` writes into files, and judges what it plants in a file
    /// that runs later by itself.
    pub(super) fn note_written(
        &mut self,
        words: &[Word],
        segment: &Segment,
        cwd: Option<&str>,
        nesting: usize,
    ) {
        let Some(text) = literal_output(words, segment) else {
            return;
        };
        let mut targets: Vec<&Word> = segment
            .redirections
            .iter()
            .filter(|(_, writes)| *writes)
            .map(|(word, _)| word)
            .collect();
        if words
            .first()
            .is_some_and(|first| basename(&first.text) == "tee")
        {
            targets.extend(words[1..].iter().filter(|word| !word.text.starts_with('-')));
        }
        for target in targets {
            let Some(path) = self.file(target, cwd, Role::Change).path else {
                continue;
            };
            if nesting <= super::super::MAX_DEPTH {
                let facts = planted::planted(&path, &text, self.table, self.context);
                let refused = ClassSet::of(REFUSED);
                for found in facts.segments {
                    let classes = found.classes.intersection(refused);
                    if !classes.is_empty() {
                        self.out.push(SegmentFacts {
                            text: format!("(written into {path}) {}", found.text),
                            classes,
                            ..SegmentFacts::default()
                        });
                    }
                }
            }
            self.written.push((path, text.clone()));
        }
    }

    /// Records the files a fetch from another machine writes (`curl -o f URL`, `curl -O
    /// URL`, `wget URL`, `curl URL > f`): a later segment that runs one runs what it got.
    pub(super) fn note_downloaded(
        &mut self,
        words: &[Word],
        segment: &Segment,
        facts: &SegmentFacts,
        cwd: Option<&str>,
    ) {
        let Some(first) = words.first() else {
            return;
        };
        self.note_extracted(words, segment, cwd);
        let fetcher = matches!(
            basename(&first.text),
            "curl" | "wget" | "aria2c" | "fetch" | "http" | "https" | "xh"
        );
        // (A fetch from this machine only, the project's own server, is no download.)
        let fetches =
            facts.classes.contains(Class::Fetch) || facts.classes.contains(Class::Network);
        let elsewhere = words[1..].iter().any(|word| {
            let lower = word
                .text
                .get(..8)
                .unwrap_or(&word.text)
                .to_ascii_lowercase();
            let url = ["http://", "https://", "ftp://"]
                .iter()
                .any(|scheme| lower.starts_with(scheme));
            word.dynamic || (url && !is_local_url(&word.text))
        });
        if first.dynamic || !fetcher || !fetches || !elsewhere {
            return;
        }
        for file in &facts.files {
            let (Role::Change, Some(path)) = (file.role, &file.path) else {
                continue;
            };
            if file.tree {
                // `curl -O URL`, `wget URL`: saved under the URL's last name, in `path`.
                for url in &words[1..] {
                    if let Some(name) = url_file_name(&url.text).filter(|_| !url.dynamic) {
                        self.downloaded
                            .push(format!("{}/{name}", path.trim_end_matches('/')));
                    }
                }
            } else {
                self.downloaded.push(path.clone());
            }
        }
        for (target, writes) in &segment.redirections {
            if *writes {
                if let Some(path) = self.file(target, cwd, Role::Change).path {
                    self.downloaded.push(path);
                }
            }
        }
    }

    /// `tar -xzf x.tgz -C .tools/bin`, `unzip x.zip -d vendor/tool`, `curl … | tar xz -C
    /// DIR`: an archive this line downloaded unpacked into a folder it names (not the
    /// working folder itself): what lies there came with the download.
    fn note_extracted(&mut self, words: &[Word], segment: &Segment, cwd: Option<&str>) {
        let Some((first, arguments)) = words.split_first() else {
            return;
        };
        let Some((archive, folder)) = extraction(first, arguments) else {
            return;
        };
        let from_download = match archive {
            // (`"/tmp/${TARBALL}"` on a line that downloads: the name it downloaded to.)
            Some(word) if word.dynamic => self.sources,
            Some(word) if word.text != "-" => self
                .file(word, cwd, Role::Read)
                .path
                .is_some_and(|path| self.downloaded.contains(&path)),
            _ => segment.piped && self.sources,
        };
        let Some(folder) = folder.and_then(|word| self.file(word, cwd, Role::Change).path) else {
            return;
        };
        if from_download && Some(folder.as_str()) != cwd {
            self.extracted.push(folder);
        }
    }

    /// Judges a script this line wrote before it runs it, as what it runs; one it
    /// downloaded runs code fetched at run time.
    pub(super) fn run_written(&mut self, words: &[Word], cwd: Option<&str>, nesting: usize) {
        let Some((file, shell)) = script_run(words) else {
            return;
        };
        let Some(path) = self.file(file, cwd, Role::Read).path else {
            return;
        };
        let unpacked = self
            .extracted
            .iter()
            .any(|folder| crate::matcher::path::below(&path, folder).is_some());
        if self.downloaded.contains(&path) || unpacked {
            self.out.push(SegmentFacts {
                text: format!("(runs {path}, which this line downloaded)"),
                classes: ClassSet::of(&[Class::RemoteCode]),
                ..SegmentFacts::default()
            });
            return;
        }
        let Some((_, text)) = self
            .written
            .iter()
            .rev()
            .find(|(written, _)| *written == path)
        else {
            return;
        };
        let text = text.clone();
        let code = !shell
            || text.lines().next().is_some_and(|line| {
                line.starts_with("#!")
                    && INTERPRETERS
                        .iter()
                        .any(|interpreter| line.contains(interpreter))
            });
        if code {
            let mut facts = SegmentFacts {
                text: format!("(the code written into {path})"),
                ..SegmentFacts::default()
            };
            // A `.py` or `.js` file is Python's or JavaScript's, whatever runs it.
            let interpreter = match path.rsplit_once('.').map(|(_, suffix)| suffix) {
                Some("py") => "python",
                Some("js" | "mjs" | "cjs" | "ts" | "mts") => "node",
                _ => "",
            };
            self.code(&text, interpreter, cwd, nesting, &mut facts);
            self.check_files(&mut facts, super::words::TreeCopy::No);
            self.out.push(facts);
        } else {
            self.nested(&text, cwd, nesting);
        }
    }
}

impl Judge<'_> {
    /// The archive `tar -x`/`unzip` extracts is read, wherever it lies (`unzip
    /// ~/Downloads/data.zip -d data/`): only where it extracts to is written. One from
    /// outside the project extracted at the project's top may hold `.git/` (its hooks): that
    /// is written too.
    pub(super) fn archive_read(
        &self,
        first: &Word,
        arguments: &[Word],
        cwd: Option<&str>,
        files: &mut Vec<super::FileRef>,
    ) {
        let Some((Some(archive), folder)) = extraction(first, arguments) else {
            return;
        };
        let Some(path) = self.file(archive, cwd, Role::Read).path else {
            return;
        };
        for file in files.iter_mut() {
            if file.path.as_deref() == Some(path.as_str()) && file.role == Role::Change {
                file.role = Role::Read;
                file.tree = false;
            }
        }
        let target = match folder {
            Some(folder) => self.file(folder, cwd, Role::Change).path,
            None => cwd.map(str::to_owned),
        };
        if let (Some(project), Some(target)) = (self.context.project(), target) {
            if target == project && !self.in_project(&path) {
                files.push(super::FileRef {
                    path: Some(format!("{project}/.git/hooks")),
                    tree: true,
                    file_only: false,
                    role: Role::Change,
                });
            }
        }
    }
}

/// What `tar -x`/`unzip` (`first`, `arguments`) extracts: the archive word (after `-f`, or
/// unzip's first operand; `None` when it comes from the pipe) and the folder it is told to
/// extract into (`-C`/`--directory`, `-d`); `None` for any other command.
pub(super) fn extraction<'w>(
    first: &Word,
    arguments: &'w [Word],
) -> Option<(Option<&'w Word>, Option<&'w Word>)> {
    match basename(&first.text) {
        "tar" | "bsdtar" | "gtar" => {
            let extracts = arguments.first().is_some_and(|word| {
                word.text == "--extract"
                    || (!word.text.starts_with("--")
                        && word.text.trim_start_matches('-').contains('x'))
            });
            if !extracts {
                return None;
            }
            let value_of = |names: &[&str]| {
                arguments.iter().enumerate().find_map(|(at, word)| {
                    if names.contains(&word.text.as_str()) {
                        return arguments.get(at + 1);
                    }
                    None
                })
            };
            // The archive: after `-f` (alone or ending a cluster: `-xzf x.tgz`,
            // `xzf x.tgz`), or the pipe.
            let archive = arguments.iter().enumerate().find_map(|(at, word)| {
                let cluster = !word.text.starts_with("--") && word.text.ends_with('f');
                (cluster
                    && word
                        .text
                        .trim_start_matches('-')
                        .chars()
                        .all(|c| c.is_ascii_alphabetic()))
                .then(|| arguments.get(at + 1))
                .flatten()
            });
            Some((archive, value_of(&["-C", "--directory"])))
        }
        "unzip" => Some((
            arguments.iter().find(|word| !word.text.starts_with('-')),
            arguments
                .windows(2)
                .find(|pair| pair[0].text == "-d")
                .map(|pair| &pair[1]),
        )),
        _ => None,
    }
}
