//! Lines other programs run, written for Windows' `cmd` or CMake, read as POSIX lines:
//! `cmd /c LINE` (backslashes kept as path separators, a batch file named bare found in
//! the folder `cmd` runs in) and `cmake -E COMMAND` (CMake's portable commands as the POSIX
//! ones they stand for).

use super::lex::Word;

/// Words joined into a POSIX line that reads them back as they are: each stays one word,
/// its backslashes path separators (Windows' tools keep them so), its wildcards wildcards.
fn join_kept<'w>(words: impl Iterator<Item = &'w str>) -> String {
    words
        .map(|text| {
            if text.contains(|c: char| c.is_whitespace() || "'\"$`;&|<>()".contains(c)) {
                let mut quoted = String::from("\"");
                for c in text.chars() {
                    if matches!(c, '"' | '\\' | '$' | '`') {
                        quoted.push('\\');
                    }
                    quoted.push(c);
                }
                quoted.push('"');
                quoted
            } else {
                text.replace('\\', "\\\\")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The POSIX line `cmake -E COMMAND ARGS…` stands for (`rm -rf x`, `remove_directory x` as
/// `rm -r x`, `copy_directory a b` as `cp -r a b`, `make_directory d` as `mkdir -p d`,
/// `chdir DIR cmd …` as `cd DIR && cmd …`); `None` for a command not read here
/// (`unknown`).
pub(in crate::matcher::shell) fn cmake_command(arguments: &[Word]) -> Option<Word> {
    let (option, rest) = arguments.split_first()?;
    let (command, operands) = rest.split_first()?;
    if option.text != "-E" || command.dynamic {
        return None;
    }
    let program: &[&str] = match command.text.as_str() {
        "rm" => &["rm"],
        "remove" => &["rm", "-f"],
        "remove_directory" => &["rm", "-rf"],
        "make_directory" => &["mkdir", "-p"],
        "copy" | "copy_if_different" => &["cp"],
        "copy_directory" | "copy_directory_if_different" => &["cp", "-r"],
        "rename" => &["mv"],
        "touch" | "touch_nocreate" => &["touch"],
        "create_symlink" => &["ln", "-s"],
        "create_hardlink" => &["ln"],
        "cat" => &["cat"],
        "echo" | "echo_append" => &["echo"],
        "env" => &["env"],
        "tar" => &["tar"],
        // The checksums and comparisons read what they are given; `time` runs it.
        "compare_files" | "sha1sum" | "sha256sum" | "sha512sum" | "md5sum" => &["cat"],
        "time" => &[],
        "true" | "capabilities" | "sleep" => &["true"],
        "chdir" => {
            let (folder, line) = operands.split_first()?;
            let text = format!(
                "cd {} && {}",
                join_kept(std::iter::once(folder.text.as_str())),
                join_kept(line.iter().map(|word| word.text.as_str()))
            );
            return Some(Word {
                text,
                dynamic: folder.dynamic || line.iter().any(|word| word.dynamic),
                glob: None,
                wild: false,
            });
        }
        _ => return None,
    };
    let words: Vec<&str> = program
        .iter()
        .copied()
        .chain(operands.iter().map(|word| word.text.as_str()))
        .collect();
    if words.is_empty() {
        return None;
    }
    Some(Word {
        text: join_kept(words.into_iter()),
        dynamic: operands.iter().any(|word| word.dynamic),
        glob: None,
        wild: false,
    })
}

/// The line `cmd /c LINE` (also `/k`, after options such as `/s /q`; any case) runs,
/// to be read as a command line: one word is a line of its own (`cmd /c "type a | more"`),
/// several are its words, each kept whole. `cmd` reads a backslash as a path separator,
/// never an escape, so backslashes are kept as written. `None` when it runs no line.
pub(in crate::matcher::shell) fn cmd_script(arguments: &[Word]) -> Option<Word> {
    let at = arguments.iter().position(|word| {
        // Git Bash's `cmd //c …`: the doubled slash keeps its path conversion off.
        matches!(
            word.text.to_ascii_lowercase().as_str(),
            "/c" | "/k" | "//c" | "//k"
        )
    })?;
    if arguments[..at]
        .iter()
        .any(|word| word.dynamic || !word.text.starts_with('/'))
    {
        return None;
    }
    let words = &arguments[at + 1..];
    let text = match words {
        [] => return None,
        [line] => line.text.replace('\\', "\\\\"),
        // Each word stays one word, its wildcards still wildcards (`dir /s *.kdbx`).
        words => join_kept(words.iter().map(|word| word.text.as_str())),
    };
    // `cmd /c build.bat`: cmd looks for a program in the folder it runs in first, so a
    // batch file named bare is the working tree's own script (`./build.bat`).
    let first = text.split_whitespace().next().unwrap_or_default();
    let text = if !first.contains(['/', '\\', ':', '"', '\''])
        && [".bat", ".cmd"].iter().any(|extension| {
            first.len() > extension.len()
                && first[first.len() - extension.len()..].eq_ignore_ascii_case(extension)
        }) {
        format!("./{text}")
    } else {
        text
    };
    Some(Word {
        text,
        dynamic: words.iter().any(|word| word.dynamic),
        glob: None,
        wild: false,
    })
}
