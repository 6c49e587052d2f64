//! Inline code an interpreter is given on its command line (`python -c`, `py -3 -c`,
//! `node -e`, `deno eval`), and which names run Python.

use super::*;

/// Inline code of an interpreter: the word after `-c` (python), `-e` (node, ruby,
/// perl), `-r` (php), `--eval`/`-p` (node).
pub(super) fn inline_code<'w>(name: &str, arguments: &'w [Word]) -> Option<&'w Word> {
    // `deno eval '…'`: the code is the subcommand's operand.
    if name == "deno" {
        let mut operands = arguments.iter().filter(|word| !word.text.starts_with('-'));
        if operands.next().is_some_and(|word| word.text == "eval") {
            return operands.next();
        }
    }
    let flags: &[&str] = match name {
        _ if python_family(name) => &["-c"],
        "node" | "nodejs" | "bun" | "deno" | "tsx" | "ts-node" => {
            &["-e", "--eval", "-p", "--print"]
        }
        "ruby" | "perl" | "lua" => &[
            "-e", "-E", "-pe", "-ne", "-pie", "-lne", "-lpe", "-pi", "-i",
        ],
        "php" => &["-r"],
        "Rscript" | "julia" => &["-e"],
        "elixir" | "mix" => &["-e", "--eval"],
        _ => return None,
    };
    for (index, word) in arguments.iter().enumerate() {
        if flags.contains(&word.text.as_str()) {
            // `perl -pi -e '…'`: the code follows the last flag that takes it.
            let next = arguments.get(index + 1)?;
            if next.text.starts_with('-') && !next.dynamic {
                continue;
            }
            return Some(next);
        }
    }
    None
}

/// Whether `name` runs Python: `python`, `python3.12`, `pypy3`, Windows' launcher `py`
/// (`py -3 -c '…'`), with or without `.exe`.
pub(super) fn python_family(name: &str) -> bool {
    let name = name.strip_suffix(".exe").unwrap_or(name);
    let bare = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    matches!(bare, "python" | "pypy" | "py") && (bare != "py" || name == "py")
}
