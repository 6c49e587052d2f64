//! Commands that look at or change files' attributes and access lists, whose operands are
//! not all files: `xattr` (macOS: `-d NAME`, `-w NAME VALUE` precede the files) and
//! Windows' `icacls FILE /grant …`, `takeown /f FILE` and `attrib +r FILE`.

use super::*;

impl Judge<'_> {
    /// Judges `xattr`, `icacls` and `takeown`; `false` for any other command. Listing
    /// attributes or access lists reads the files; removing, writing or clearing them
    /// (`xattr -d com.apple.quarantine x`, `icacls x /grant Everyone:F`, `takeown /f x`)
    /// changes their permissions, judged by where the files lie, as `chmod`'s are.
    pub(super) fn attributes(
        &self,
        name: &str,
        arguments: &[Word],
        dir: Option<&str>,
        facts: &mut SegmentFacts,
    ) -> bool {
        let lower = name.to_ascii_lowercase();
        let (changes, files, recursive) = match lower.trim_end_matches(".exe") {
            "xattr" => xattr(arguments),
            "icacls" => icacls(arguments),
            "takeown" => takeown(arguments),
            "attrib" if self.context.on_windows() => attrib(arguments),
            _ => return false,
        };
        let (class, role) = if changes {
            (Class::Permissions, Role::Change)
        } else {
            (Class::ReadOnly, Role::Read)
        };
        facts.classes.insert(class);
        for word in files {
            let mut file = self.file(word, dir, role);
            file.tree |= recursive;
            facts.files.push(file);
        }
        true
    }
}

/// `xattr [-lrsvx] [-p|-d NAME] [-w NAME VALUE] [-c] FILE…`: whether it changes, its files,
/// whether it goes down folders (`-r`).
fn xattr(arguments: &[Word]) -> (bool, Vec<&Word>, bool) {
    let mut changes = false;
    let mut recursive = false;
    let mut skip = 0;
    let mut files = Vec::new();
    for word in arguments {
        let text = word.text.as_str();
        match text.strip_prefix('-').filter(|letters| !letters.is_empty()) {
            Some(letters) if !word.dynamic => {
                changes |= letters.contains(['d', 'w', 'c']);
                recursive |= letters.contains('r');
                // `-p NAME`, `-d NAME`, `-w NAME VALUE`: the name (and value) are no files.
                skip += usize::from(letters.contains(['p', 'd']))
                    + 2 * usize::from(letters.contains('w'));
            }
            _ if skip > 0 => skip -= 1,
            _ => files.push(word),
        }
    }
    (changes, files, recursive)
}

/// `icacls FILE [/grant …] [/T] …`, `icacls DIR /restore ACLFILE`: the file comes first;
/// any option but the listing ones (`/T`, `/C`, `/L`, `/Q`) changes its access list.
fn icacls(arguments: &[Word]) -> (bool, Vec<&Word>, bool) {
    let options: Vec<String> = arguments
        .iter()
        .skip(1)
        .filter(|word| word.text.starts_with('/'))
        .map(|word| word.text.to_ascii_lowercase())
        .collect();
    let changes = arguments.iter().any(|word| word.dynamic)
        || options
            .iter()
            .any(|option| !matches!(option.as_str(), "/t" | "/c" | "/l" | "/q"));
    let recursive = options.iter().any(|option| option == "/t");
    (changes, arguments.iter().take(1).collect(), recursive)
}

/// `takeown /f FILE [/r] [/d y] [/a]`: it makes the user (or the administrators) own it.
fn takeown(arguments: &[Word]) -> (bool, Vec<&Word>, bool) {
    let mut files = Vec::new();
    let mut recursive = false;
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        match word.text.to_ascii_lowercase().as_str() {
            "/f" => files.extend(words.next()),
            "/r" => recursive = true,
            "/d" | "/s" | "/u" | "/p" => {
                words.next();
            }
            _ => {}
        }
    }
    (true, files, recursive)
}

/// `attrib [+r|-r|+h|-h|…] FILE… [/s [/d]]`: attributes set or cleared change the files;
/// without, it lists them.
fn attrib(arguments: &[Word]) -> (bool, Vec<&Word>, bool) {
    let flag = |text: &str| {
        text.len() == 2
            && text.starts_with(['+', '-'])
            && text[1..].chars().all(|c| c.is_ascii_alphabetic())
    };
    let changes = arguments
        .iter()
        .any(|word| word.dynamic || flag(&word.text));
    let recursive = arguments
        .iter()
        .any(|word| word.text.eq_ignore_ascii_case("/s"));
    let files = arguments
        .iter()
        .filter(|word| !(flag(&word.text) || (word.text.starts_with('/') && word.text.len() == 2)))
        .collect();
    (changes, files, recursive)
}
