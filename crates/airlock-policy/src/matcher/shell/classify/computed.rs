//! Values the shell computes while a line runs: the variables a line sets from a
//! command's output (a command later run from one may run what a download brought), and
//! modes that make a file runnable.

use super::super::basename;
use super::super::lex::{Segment, Word};

/// `chmod +x f`, `chmod 755 f`, `chmod u=rwx f`: a mode that lets a file run.
pub(super) fn makes_executable(words: &[Word]) -> bool {
    let Some((first, arguments)) = words.split_first() else {
        return false;
    };
    basename(&first.text) == "chmod"
        && arguments
            .iter()
            .filter(|word| !word.text.starts_with("--"))
            .any(|word| {
                let mode = word.text.as_str();
                let symbolic = mode.split(',').any(|clause| {
                    clause.split_once(['+', '=']).is_some_and(|(who, what)| {
                        who.chars().all(|c| "ugoa".contains(c)) && what.contains('x')
                    })
                });
                let octal = (3..=4).contains(&mode.len())
                    && mode.chars().all(|c| c.is_ascii_digit() && c < '8')
                    && mode
                        .chars()
                        .rev()
                        .take(3)
                        .any(|c| (c as u8 - b'0') & 1 == 1);
                symbolic || octal
            })
}

/// The variable a command word reads whole (`$CMD`, `${CMD}`, `${CMD:-…}`), if it is one.
pub(super) fn variable_name(text: &str) -> Option<&str> {
    let name = match text.strip_prefix("${") {
        Some(braced) => {
            let inner = braced.strip_suffix('}')?;
            inner.strip_suffix(":-…").unwrap_or(inner)
        }
        None => text.strip_prefix('$')?,
    };
    let plain = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    plain.then_some(name)
}

/// The variables `segments` set to a value computed by a command (`X=$(…)`, `` X=`…` ``,
/// `read X`, `mapfile X`, `for X in $(…)`), or copied from one of those (`Y=$X`).
pub(super) fn computed_variables(segments: &[Segment]) -> Vec<String> {
    let mut computed: Vec<String> = Vec::new();
    let mut copies: Vec<(String, String)> = Vec::new();
    for segment in segments {
        let words = &segment.words;
        for word in words {
            if let Some((name, value)) = word.text.split_once('=') {
                let name = name.trim_end_matches('+');
                let is_name =
                    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if is_name && word.dynamic {
                    if value.contains("$(") || value.contains('`') {
                        computed.push(name.to_owned());
                    } else {
                        copies.push((name.to_owned(), value.to_owned()));
                    }
                }
            }
        }
        // After the keywords that start a loop or a branch (`while read X`).
        let skip = words
            .iter()
            .take_while(|word| crate::matcher::shell::KEYWORDS.contains(&word.text.as_str()))
            .count();
        let words = &words[skip..];
        match words.first().map(|word| word.text.as_str()) {
            Some("read" | "mapfile" | "readarray") => computed.extend(
                words[1..]
                    .iter()
                    .filter(|word| !word.text.starts_with('-'))
                    .map(|word| word.text.clone()),
            ),
            Some("for")
                if words.get(2).is_some_and(|word| word.text == "in")
                    && words[3..].iter().any(|word| word.dynamic) =>
            {
                computed.push(words[1].text.clone());
            }
            _ => {}
        }
    }
    // `Y=$X` after `X=$(…)`: Y holds the same output.
    loop {
        let before = computed.len();
        for (name, value) in &copies {
            let reads = |known: &String| {
                value.contains(&format!("${known}")) || value.contains(&format!("${{{known}"))
            };
            if !computed.contains(name) && computed.iter().any(reads) {
                computed.push(name.clone());
            }
        }
        if computed.len() == before {
            break;
        }
    }
    computed
}
