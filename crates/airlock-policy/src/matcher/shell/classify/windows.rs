//! Windows' own tools, where their words say more than the class table can: a registry
//! value written under a key that Windows reads to start programs on its own (at log-on,
//! at boot, in place of another program) is persistence, whichever tool writes it (`reg
//! add`, PowerShell's `Set-ItemProperty`/`New-ItemProperty`); `wmic`, which the table reads
//! as a look, changes things with some of its verbs. `findstr` is Windows' `grep`, with
//! options written `/x`.

use super::super::lex::Word;
use super::{FileRef, Judge, Role, SegmentFacts};
use crate::classes::Class;

impl Judge<'_> {
    /// `findstr [/options] [/c:TEXT | /g:FILE] [TEXT] [FILES…]`: a search that reads the
    /// files named (with `/s` everything below them), `/g:` and `/f:` files too (the
    /// files an `/f:` list names cannot be known, so it is a read of an unknown place).
    /// Without files it filters what is piped into it. A search for credential words in
    /// a place outside the work area is looking for credentials, as `grep`'s is.
    pub(super) fn findstr(&self, arguments: &[Word], dir: Option<&str>, facts: &mut SegmentFacts) {
        facts.classes.insert(Class::ReadOnly);
        let mut patterns: Vec<&str> = Vec::new();
        let mut named_pattern = false;
        let mut recursive = false;
        let mut operands = Vec::new();
        for word in arguments {
            let Some(option) = findstr_option(&word.text).filter(|_| !word.dynamic) else {
                operands.push(word);
                continue;
            };
            let (letter, value) = option;
            match (letter.as_str(), value) {
                ("c", Some(text)) => {
                    patterns.push(text);
                    named_pattern = true;
                }
                ("g", Some(file)) => {
                    named_pattern = true;
                    facts.files.push(self.path(file, false, dir, Role::Read));
                }
                ("f", Some(_)) => facts.files.push(FileRef {
                    path: None,
                    tree: false,
                    file_only: false,
                    role: Role::Read,
                }),
                ("d", Some(folders)) => {
                    for folder in folders.split([';', ',']).filter(|f| !f.is_empty()) {
                        let mut place = self.path(folder, false, dir, Role::Read);
                        place.tree = true;
                        facts.files.push(place);
                    }
                }
                ("s", None) => recursive = true,
                _ => {}
            }
        }
        let files = match (named_pattern, operands.split_first()) {
            (false, Some((pattern, files))) => {
                patterns.push(&pattern.text);
                files
            }
            _ => &operands[..],
        };
        let mut searched = Vec::new();
        for word in files {
            let mut file = self.file(word, dir, Role::Read);
            file.tree |= recursive;
            searched.push(file.clone());
            facts.files.push(file);
        }
        self.hunting(&patterns, &[], &searched, facts);
    }
}

/// A `findstr` option (`/n`, `-i`, `/c:text`, `/off`): its letters in lower case and the
/// value after its `:`; `None` for an operand. Options are one to three letters, so a
/// path such as `/c/Users/x` or `/tmp` is an operand.
fn findstr_option(text: &str) -> Option<(String, Option<&str>)> {
    let rest = text.strip_prefix(['/', '-'])?;
    let (letters, value) = match rest.split_once(':') {
        Some((letters, value)) => (letters, Some(value)),
        None => (rest, None),
    };
    let known = (1..=3).contains(&letters.len())
        && letters.chars().all(|c| c.is_ascii_alphabetic())
        || letters.eq_ignore_ascii_case("offline");
    known.then(|| (letters.to_ascii_lowercase(), value))
}

/// The class `name arguments` adds to the table's: persistence for an autostart value
/// written; `unknown` (asked) for a `wmic` verb that runs a program or changes the system
/// (`process call create`, `… delete`, `… set`).
pub(super) fn classes(name: &str, arguments: &[Word]) -> Option<Class> {
    if writes_autostart(name, arguments) {
        return Some(Class::Persistence);
    }
    if reads_stored_credentials(name, arguments) {
        return Some(Class::CredentialAccess);
    }
    // `netsh wlan show profile name=X key=clear` prints the saved network's password (a
    // computed word may say so too).
    if name.strip_suffix(".exe").unwrap_or(name) == "netsh" {
        if arguments
            .iter()
            .any(|word| word.text.eq_ignore_ascii_case("key=clear"))
        {
            return Some(Class::CredentialAccess);
        }
        if arguments.iter().any(|word| word.dynamic) {
            return Some(Class::Unknown);
        }
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

/// Registry keys, lower case with `\` between names, whose values are stored credentials:
/// WinSCP's saved sessions (their passwords), VNC servers' passwords, the keys Windows'
/// ssh-agent holds, and the SAM and SECURITY hives (the machine's password hashes and
/// secrets).
const CREDENTIAL_KEYS: &[&str] = &[
    "\\winscp 2\\sessions",
    "\\orl\\winvnc3",
    "\\realvnc\\",
    "\\tightvnc\\",
    "\\openssh\\agent\\keys",
    "hklm\\sam",
    "hkey_local_machine\\sam",
    "hklm\\security",
    "hkey_local_machine\\security",
];

/// Whether `name arguments` reads registry values that hold stored credentials (`reg
/// query …\WinSCP 2\Sessions`, `Get-ItemProperty 'HKCU:\Software\…\Sessions\*'`, `reg
/// save HKLM\SAM`), or Winlogon's saved log-on password.
fn reads_stored_credentials(name: &str, arguments: &[Word]) -> bool {
    let reads = match name.strip_suffix(".exe").unwrap_or(name) {
        "reg" => arguments.first().is_some_and(|word| {
            matches!(
                word.text.to_ascii_lowercase().as_str(),
                "query" | "save" | "export" | "copy"
            )
        }),
        "get-itemproperty"
        | "gp"
        | "get-itempropertyvalue"
        | "gpv"
        | "get-childitem"
        | "gci"
        | "get-item"
        | "gi"
        | "dir"
        | "ls" => true,
        _ => false,
    };
    let keys: Vec<String> = arguments
        .iter()
        .map(|word| {
            word.text
                .replace('/', "\\")
                .replace(":\\", "\\")
                .to_ascii_lowercase()
        })
        .collect();
    reads
        && (keys.iter().any(|key| {
            CREDENTIAL_KEYS
                .iter()
                .any(|credential| key.contains(credential))
        }) || (keys.iter().any(|key| key.contains("\\winlogon"))
            && keys.iter().any(|key| key.contains("defaultpassword"))))
}

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

impl Judge<'_> {
    /// What the same line does where it may reach `cmd` on Windows: `type FILE` prints the
    /// file (judged as the read it may be), `findstr` is Windows' `grep`. `false` for any
    /// other command.
    pub(super) fn cmd_builtin(
        &self,
        name: &str,
        arguments: &[Word],
        cwd: &super::Cwd,
        facts: &mut SegmentFacts,
    ) -> bool {
        if name.eq_ignore_ascii_case("type") {
            facts.classes.insert(Class::ReadOnly);
            self.operands_read(arguments, cwd, facts);
        } else if name.eq_ignore_ascii_case("findstr") {
            self.findstr(arguments, cwd.as_deref(), facts);
        } else {
            return false;
        }
        true
    }
}

/// `cmd`'s `rmdir /s /q DIR` (also `rd`): DIR and everything below it, as `rm -rf DIR`;
/// its switches are no files (read as POSIX paths, `/s` would be a folder of the root).
/// `None` for any other command, or one without a `cmd` switch.
pub(super) fn cmd_rmdir_as_rm(first: &Word, arguments: &[Word]) -> Option<Vec<Word>> {
    let rmdir =
        !first.dynamic && matches!(first.text.to_ascii_lowercase().as_str(), "rmdir" | "rd");
    if !rmdir || !arguments.iter().any(|word| cmd_switch(&word.text)) {
        return None;
    }
    Some(
        [Word::literal("rm"), Word::literal("-rf")]
            .into_iter()
            .chain(
                arguments
                    .iter()
                    .filter(|word| !cmd_switch(&word.text))
                    .cloned(),
            )
            .collect(),
    )
}

/// A `cmd` switch of one letter (`/s`, `/Q`): what `rmdir /s /q DIR` is told, not a folder.
pub(super) fn cmd_switch(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 2 && bytes[0] == b'/' && bytes[1].is_ascii_alphabetic()
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
