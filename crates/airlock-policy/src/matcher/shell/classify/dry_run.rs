//! Dry runs (`git push --dry-run`, `git clean -n`, `rsync -n`): what a command still does
//! with the option that makes it change nothing.

use super::*;

/// A dry run's classes: what it still does (`dry`) where the command's own and its
/// options' would be; an option that runs other code or needs more power keeps its class.
#[cold]
pub(super) fn dry_run_classes(
    facts: &mut SegmentFacts,
    before: ClassSet,
    dry: ClassSet,
    options: ClassSet,
) {
    facts.classes = before;
    facts.classes.extend(dry);
    facts.classes.extend(options.intersection(ClassSet::of(&[
        Class::Unknown,
        Class::Privilege,
        Class::CredentialAccess,
        Class::CredentialSearch,
        Class::UnsafeAgent,
    ])));
}

/// What a dry run names (the files from `mark` on) it only reads; a copy to a host only
/// talks to it.
#[cold]
pub(super) fn dry_run_reads(facts: &mut SegmentFacts, mark: usize, before: ClassSet) {
    for file in &mut facts.files[mark..] {
        if file.role == Role::Change {
            file.role = Role::Read;
        }
    }
    for class in [Class::Write, Class::Delete, Class::Network, Class::Discard] {
        if !before.contains(class) {
            facts.classes = remove(facts.classes, class);
        }
    }
}
