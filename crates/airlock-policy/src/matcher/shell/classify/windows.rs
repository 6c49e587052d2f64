//! Windows' own tools, where their words say more than the class table can: a registry
//! value written under a key that Windows reads to start programs on its own (at log-on,
//! at boot, in place of another program) is persistence, whichever tool writes it (`reg
//! add`, PowerShell's `Set-ItemProperty`/`New-ItemProperty`); `wmic`, which the table reads
//! as a look, changes things with some of its verbs.

use super::super::lex::Word;
use crate::classes::Class;

/// The class `name arguments` adds to the table's: persistence for an autostart value
/// written; `unknown` (asked) for a `wmic` verb that runs a program or changes the system
/// (`process call create`, `… delete`, `… set`).
pub(super) fn classes(name: &str, arguments: &[Word]) -> Option<Class> {
    if writes_autostart(name, arguments) {
        return Some(Class::Persistence);
    }
    let changes = matches!(name.strip_suffix(".exe").unwrap_or(name), "wmic")
        && arguments.iter().any(|word| {
            word.dynamic
                || matches!(
                    word.text.to_ascii_lowercase().as_str(),
                    "call" | "create" | "delete" | "set"
                )
        });
    changes.then_some(Class::Unknown)
}

/// Keys, lower case with `\` between names, below which a value starts a program later:
/// the Run and RunOnce keys (also under `Policies\Explorer`), Winlogon's shell and
/// user-init, and Image File Execution Options (a "debugger" run instead of a program).
const AUTOSTART_KEYS: &[&str] = &[
    "\\currentversion\\run",
    "\\currentversion\\policies\\explorer\\run",
    "\\currentversion\\winlogon",
    "\\image file execution options\\",
    "\\currentversion\\explorer\\shell folders",
    "\\currentversion\\explorer\\user shell folders",
];

/// Whether `name arguments` writes a registry value that starts a program later.
fn writes_autostart(name: &str, arguments: &[Word]) -> bool {
    let writes = match name.strip_suffix(".exe").unwrap_or(name) {
        "reg" => arguments.first().is_some_and(|word| {
            matches!(
                word.text.to_ascii_lowercase().as_str(),
                "add" | "import" | "copy"
            )
        }),
        "set-itemproperty" | "new-itemproperty" | "sp" | "new-item" | "ni" => true,
        _ => false,
    };
    writes
        && arguments.iter().any(|word| {
            let key = word.text.replace('/', "\\").to_ascii_lowercase();
            AUTOSTART_KEYS
                .iter()
                .any(|autostart| key.contains(autostart))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Word> {
        line.split_whitespace().map(Word::literal).collect()
    }

    #[test]
    fn autostart_keys_written_are_persistence() {
        for (name, line, expected) in [
            (
                "reg",
                r"add HKCU\Software\Microsoft\Windows\CurrentVersion\Run /v A /d x.exe /f",
                true,
            ),
            (
                "reg",
                r"add HKCU\Software\Microsoft\Windows\CurrentVersion\RunOnce /v A /d x /f",
                true,
            ),
            (
                "reg",
                r"query HKCU\Software\Microsoft\Windows\CurrentVersion\Run",
                false,
            ),
            ("reg", r"add HKCU\Software\MyApp /v Theme /d dark /f", false),
            (
                "set-itemproperty",
                r"-Path HKCU:\Software\Microsoft\Windows\CurrentVersion\Run -Name A -Value x",
                true,
            ),
            (
                "reg",
                r"add HKLM\SOFTWARE\Microsoft\Windows_NT\CurrentVersion\Image_File_Execution_Options\sethc.exe",
                false,
            ),
            (
                "get-itemproperty",
                r"HKCU:\Software\Microsoft\Windows\CurrentVersion\Run",
                false,
            ),
        ] {
            assert_eq!(
                writes_autostart(name, &words(line)),
                expected,
                "{name} {line}"
            );
        }
    }

    #[test]
    fn wmic_looks_unless_its_verb_changes_something() {
        for (line, expected) in [
            ("logicaldisk get size,freespace,caption", None),
            ("path win32_pnpentity get name,status", None),
            ("process call create calc.exe", Some(Class::Unknown)),
            ("shadowcopy delete /nointeractive", Some(Class::Unknown)),
            (
                "computersystem where name='pc' set AutomaticManagedPagefile=False",
                Some(Class::Unknown),
            ),
        ] {
            assert_eq!(classes("wmic", &words(line)), expected, "wmic {line}");
        }
    }
}
