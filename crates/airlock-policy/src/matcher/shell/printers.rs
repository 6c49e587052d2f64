//! Environment printers: commands whose output is shell code that only sets up the
//! environment (variables, `PATH`, functions, completions), made to be run with
//! `eval "$(brew shellenv)"`. Such an `eval` runs nothing beyond the printer, which is a
//! segment of its own and judged as itself; the `eval` of any other output is code
//! airlock cannot read.

use super::basename;
use super::lex::Word;

/// The printers, as a program name and the words that must follow it. Their output only
/// sets up the environment; a printer that runs the project's or anyone's code
/// (`direnv export` runs `.envrc`, `ssh-agent CMD` runs CMD) is not here.
const PRINTERS: &[&str] = &[
    "brew shellenv",
    "fnm env",
    "pyenv init",
    "pyenv virtualenv-init",
    "rbenv init",
    "nodenv init",
    "goenv init",
    "jenv init",
    "plenv init",
    "phpenv init",
    "dircolors",
    "starship init",
    "zoxide init",
    "atuin init",
    "mise activate",
    "mise env",
    "rtx activate",
    "direnv hook",
    "opam env",
    "luarocks path",
    "conda shell.bash hook",
    "conda shell.zsh hook",
    "conda shell.fish hook",
    "conda shell.posix hook",
    "micromamba shell hook",
    "minikube docker-env",
    "thefuck --alias",
    "fzf --bash",
    "fzf --zsh",
    "kubectl completion",
    "gh completion",
    "helm completion",
    "rustup completions",
    "uv generate-shell-completion",
    "pip completion",
    "npm completion",
    "docker completion",
    "poetry completions",
    "deno completions",
];

/// How a word shows the output of an environment printer (`"$(brew shellenv)"`, or with
/// backticks): computed, but known to be shell code that only sets up the environment.
pub(in crate::matcher::shell) const PRINTED_ENVIRONMENT: &str = "$(…printed environment…)";

/// Whether the command line `inside` a substitution is one environment printer: plain
/// words only (no quote, expansion, operator or redirection, so no second command), the
/// first a printer's name or path, the next ones its words.
pub(in crate::matcher::shell) fn prints_environment(inside: &str) -> bool {
    let plain = |c: char| c.is_ascii_alphanumeric() || " \t-_./~=".contains(c);
    if !inside.chars().all(plain) {
        return false;
    }
    let words: Vec<&str> = inside.split_whitespace().collect();
    let Some((first, rest)) = words.split_first() else {
        return false;
    };
    let name = basename(first);
    PRINTERS.iter().any(|printer| {
        let mut expected = printer.split(' ');
        expected.next() == Some(name)
            && expected
                .enumerate()
                .all(|(index, word)| rest.get(index) == Some(&word))
    })
}

/// `eval "$(PRINTER …)"`: its one argument is exactly an environment printer's output.
pub(super) fn evaluates_printer(arguments: &[Word]) -> bool {
    matches!(arguments, [word] if word.text == PRINTED_ENVIRONMENT)
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::classes::{Class, ClassTable};

    #[test]
    fn every_printer_is_a_look_by_itself() {
        let table = ClassTable::built_in().expect("the shipped class table parses");
        for printer in PRINTERS {
            let mut words = printer.split(' ');
            let name = words.next().expect("a printer has a name");
            let arguments: Vec<&str> = words.collect();
            let (classes, _) = table
                .lookup(name, &arguments)
                .unwrap_or_else(|| panic!("{printer} is not in the class table"));
            assert!(
                classes.contains(Class::ReadOnly) && classes.iter().count() == 1,
                "{printer}: {}",
                classes.describe()
            );
        }
    }
}
