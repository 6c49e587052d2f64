//! What a pipe carries between cmdlets: the places a plain listing names, the files a
//! cmdlet that names none binds from its input, and filters that keep only names.

use super::{arguments, dynamic, parameter, Arguments};
use crate::matcher::shell::powershell::{escape_into, Input, Token, Word};

/// The places a plain `Get-ChildItem` lists (its operands and `-Path`/`-LiteralPath`
/// values, or the working directory), when every parameter is one known here.
pub(super) fn listed_places(rest: &[Token]) -> Input {
    let Arguments {
        mut operands,
        values,
        switches,
    } = arguments(rest);
    let known_switch = |name: &String| {
        matches!(
            name.as_str(),
            "recurse"
                | "force"
                | "file"
                | "directory"
                | "hidden"
                | "readonly"
                | "system"
                | "r"
                | "rec"
        )
    };
    if !switches.iter().all(known_switch) {
        return Input::Unknown;
    }
    let mut filter = None;
    let mut narrowed_otherwise = false;
    for (name, value) in values {
        match name.as_str() {
            "path" | "literalpath" => operands.push(value),
            "filter" => filter = Some(value),
            "include" | "exclude" | "depth" | "attributes" | "name" => narrowed_otherwise = true,
            _ => return Input::Unknown,
        }
    }
    if operands.is_empty() {
        operands.push(Token {
            text: ".".into(),
            ..Token::default()
        });
    }
    // `Get-ChildItem -Path $env:TEMP -Filter 'kiosk-*' | Remove-Item`: without `-Recurse`
    // the entries are those of each place that the filter's pattern names, as the unquoted
    // `$env:TEMP\kiosk-*` would; anything else stands for every entry.
    let recursive = switches
        .iter()
        .any(|name| matches!(name.as_str(), "recurse" | "r" | "rec"));
    if let Some(filter) = filter.filter(|filter| {
        !recursive
            && !narrowed_otherwise
            && !filter.dynamic
            && !filter.text.is_empty()
            && !filter.text.contains(['\\', '/', ':'])
            && filter.text.chars().any(|c| c != '*' && c != '?')
    }) {
        if operands
            .iter()
            .all(|place| !place.dynamic && place.pattern.is_none())
        {
            operands = operands
                .into_iter()
                .map(|place| {
                    let mut pattern = String::new();
                    for c in place.text.chars().chain(std::iter::once('\\')) {
                        escape_into(&mut pattern, c);
                    }
                    for c in filter.text.chars() {
                        if matches!(c, '*' | '?') {
                            pattern.push(c);
                        } else {
                            escape_into(&mut pattern, c);
                        }
                    }
                    Token {
                        text: format!("{}\\{}", place.text, filter.text),
                        pattern: Some(pattern),
                        ..place
                    }
                })
                .collect();
        }
    }
    Input::Places(operands)
}

/// The files a pipe hands a cmdlet that takes files and names none: the entries of the
/// places listed before it, or something unknown. Text handed to it names files too
/// (`'a.txt' | Get-Content`), so that is unknown as well.
pub(super) fn piped_files(input: &Input) -> Vec<Word> {
    match input {
        Input::Nothing => Vec::new(),
        Input::Places(places) => places
            .iter()
            .map(|place| {
                // A place written as a pattern (`build\*.log`, or filtered: `-Filter`)
                // already names the entries; a folder stands for what it holds.
                if place.pattern.is_some() {
                    return place.word();
                }
                let mut pattern = String::new();
                for c in place.text.chars() {
                    escape_into(&mut pattern, c);
                }
                pattern.push_str("/*");
                Token {
                    text: format!("{}/*", place.text),
                    pattern: Some(pattern),
                    dynamic: place.dynamic,
                    quoted: false,
                    here: false,
                }
                .word()
            })
            .collect(),
        Input::Text | Input::Unknown => vec![dynamic("$input")],
    }
}

/// Whether a filter's words keep one property, the name (`-ExpandProperty Name`, `Name`,
/// `-Property Key`): of the environment's items, no value.
pub(super) fn keeps_only_names(rest: &[Token]) -> bool {
    let mut kept = Vec::new();
    let mut index = 0;
    while let Some(token) = rest.get(index) {
        index += 1;
        if !token.is_parameter() {
            kept.push(token);
            continue;
        }
        let (name, inline) = parameter(token);
        match name.as_str() {
            "expandproperty" | "property" | "expand" | "p" | "e" => match inline {
                Some(_) => return false,
                None => kept.extend(rest.get(index)),
            },
            "unique" | "autosize" | "hidetableheaders" => continue,
            _ => return false,
        }
        index += 1;
    }
    kept.len() == 1
        && !kept[0].dynamic
        && matches!(kept[0].text.to_ascii_lowercase().as_str(), "name" | "key")
}
