//! The command classification, table-driven: `tests/data/classes.txt` holds one command
//! per line with the classes it must get (the union over its segments), judged in a
//! project at `/home/dev/app` with home `/home/dev`.
//!
//! Format: `class[,class…] | command`; `#` starts a comment line. `-` for no class.

use airlock_policy::classes::{Class, ClassSet, ClassTable};
use airlock_policy::context::Context;
use airlock_policy::matcher::shell::classify::classify;
use std::path::PathBuf;

pub const CWD: &str = "/home/dev/app";
pub const HOME: &str = "/home/dev";

fn classes_of(command: &str) -> ClassSet {
    let table = ClassTable::built_in().unwrap();
    let context = Context::new(Some(CWD), Some(CWD), Some(HOME));
    let facts = classify(command, &table, &context);
    let mut all = ClassSet::EMPTY;
    for segment in &facts.segments {
        all.extend(segment.classes);
    }
    without_read_only(all)
}

/// `read_only` only counts when it is all there is: `cat ~/.ssh/id_rsa` is
/// `credential_access`, whatever else `cat` is.
fn without_read_only(classes: ClassSet) -> ClassSet {
    if classes == ClassSet::of(&[Class::ReadOnly]) {
        return classes;
    }
    let mut out = ClassSet::EMPTY;
    for class in classes.iter().filter(|class| *class != Class::ReadOnly) {
        out.insert(class);
    }
    out
}

#[test]
fn every_command_gets_its_classes() {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/classes.txt");
    let text = std::fs::read_to_string(&file).unwrap();
    let mut failures = Vec::new();
    let mut count = 0;
    for (number, line) in text.lines().enumerate() {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((expected, command)) = line.split_once(" | ") else {
            panic!("classes.txt:{}: no ` | `", number + 1);
        };
        count += 1;
        let command = command.replace("\\n", "\n");
        let got = classes_of(&command);
        let want = expected.trim();
        let mut wanted = ClassSet::EMPTY;
        if want != "-" {
            for name in want.split(',') {
                let class = Class::from_name(name.trim())
                    .unwrap_or_else(|| panic!("classes.txt:{}: unknown class {name}", number + 1));
                wanted.insert(class);
            }
        }
        let wanted = without_read_only(wanted);
        if got != wanted {
            failures.push(format!(
                "classes.txt:{}: `{command}`: expected {want}, got {}",
                number + 1,
                got.describe()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(count >= 300, "only {count} commands");
}
