//! Programs a line starts: one run by name or path, and the command line PowerShell's
//! `Start-Process` starts.

use super::{literal, parameter};
use crate::matcher::shell::powershell::{Token, Word};

/// A program run by name or path (`git status`, `npm.cmd run build`, `.\build.ps1`): its
/// words as given, the name without the `.exe`/`.cmd`/`.bat`/`.com` Windows adds.
pub(in crate::matcher::shell::powershell) fn program(first: &Token, rest: &[Token]) -> Vec<Word> {
    let mut name = first.word();
    if !name.text.contains(['\\', '/']) {
        let lower = name.text.to_ascii_lowercase();
        for suffix in [".exe", ".cmd", ".bat", ".com"] {
            if let Some(stem) = lower.strip_suffix(suffix) {
                name.text = stem.to_string();
                break;
            }
        }
        // A cmdlet (`Register-ScheduledTask`): PowerShell reads its name in any case, and
        // the classification lists cmdlets in lower case.
        let cmdlet = name.text.split_once('-').is_some_and(|(verb, noun)| {
            !verb.is_empty()
                && !noun.is_empty()
                && name
                    .text
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
        if cmdlet && !name.dynamic {
            name.text = name.text.to_ascii_lowercase();
        }
    }
    let mut words = vec![name];
    words.extend(rest.iter().map(Token::word));
    words
}

/// `Start-Process [-FilePath] X [[-ArgumentList] A,B] [-Wait] [-NoNewWindow]
/// [-WindowStyle S] [-WorkingDirectory D] [-Verb RunAs]`: the program it starts with its
/// arguments, as the command line it is (`-Verb RunAs` adds `sudo`: raised privileges).
/// `None` (the cmdlet stays unknown) for another user's credentials, redirected streams,
/// another verb, or a program that cannot be told.
pub(super) fn start_process(rest: &[Token]) -> Option<Vec<Word>> {
    let mut file: Option<&Token> = None;
    let mut arguments: Vec<&Token> = Vec::new();
    let mut elevated = false;
    let mut positional = 0;
    let mut index = 0;
    while let Some(token) = rest.get(index) {
        index += 1;
        if !token.is_parameter() {
            match positional {
                0 if file.is_none() => file = Some(token),
                _ => arguments.push(token),
            }
            positional += 1;
            continue;
        }
        let (name, inline) = parameter(token);
        let mut value = || {
            inline.clone().map_or_else(
                || {
                    let next = rest.get(index).filter(|next| !next.is_parameter());
                    index += usize::from(next.is_some());
                    next.cloned()
                },
                |text| {
                    Some(Token {
                        text,
                        pattern: None,
                        ..token.clone()
                    })
                },
            )
        };
        match name.as_str() {
            "filepath" | "path" | "pspath" | "file" => {
                file = Some(rest.get(index).filter(|_| inline.is_none())?);
                index += 1;
            }
            "argumentlist" | "args" | "arguments" => {
                // The list's items up to the next parameter (`'test','--no-build'`).
                while let Some(item) = rest.get(index).filter(|item| !item.is_parameter()) {
                    arguments.push(item);
                    index += 1;
                }
            }
            "verb" => {
                let verb = value()?;
                if !verb.text.eq_ignore_ascii_case("runas") {
                    return None;
                }
                elevated = true;
            }
            "windowstyle" | "workingdirectory" => {
                value()?;
            }
            "wait" | "nonewwindow" | "passthru" => {}
            _ => return None,
        }
    }
    let file = file?;
    if file.dynamic {
        return None;
    }
    // `Start-Process 'https://…'`: the address opened in the browser, as `start URL` is.
    let lower = file.text.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Some(vec![literal("start"), file.word()]);
    }
    let items: Vec<Token> = arguments
        .iter()
        .flat_map(|item| {
            // A list written without blanks reaches here as one word (`a,b`); a string
            // of several words is one command line the program splits.
            let text = item.text.as_str();
            let separated = if item.quoted {
                vec![text]
            } else {
                text.split(',').collect()
            };
            separated
                .into_iter()
                .flat_map(str::split_whitespace)
                .filter(|part| *part != ",")
                .map(|part| Token {
                    text: part.trim_matches(',').to_string(),
                    pattern: None,
                    ..(*item).clone()
                })
                .filter(|token| !token.text.is_empty())
                .collect::<Vec<_>>()
        })
        .collect();
    let mut words = if elevated {
        vec![literal("sudo")]
    } else {
        Vec::new()
    };
    words.extend(program(file, &items));
    Some(words)
}
