//! What the classification table says of a command, before its words are read for more:
//! the longest entry that matches (a package manager's script named with a colon, a Python
//! module run as the command it also is, a tool installed into the project), and what a
//! program's own reads and secret outputs change of it.

use super::*;

impl Judge<'_> {
    /// The classes the table gives `name` with `arguments`, and the argument words its
    /// entry used; `installed` is the tool a relative path names when the table knows it
    /// (`.venv/bin/pip install`).
    pub(super) fn table_classes(
        &self,
        name: &str,
        first: &Word,
        arguments: &[Word],
        installed: Option<(&str, (ClassSet, usize))>,
    ) -> (ClassSet, usize) {
        let texts: Vec<&str> = arguments.iter().map(|word| word.text.as_str()).collect();
        // `pnpm build:shared`, `yarn test:unit`: a script named with a colon, which no
        // command of theirs is, run without `run`, as `pnpm run build:shared`.
        let scripted: Vec<&str> = if matches!(name, "pnpm" | "yarn")
            && texts
                .iter()
                .find(|text| !text.starts_with('-'))
                .is_some_and(|text| text.contains(':'))
        {
            std::iter::once("run")
                .chain(texts.iter().copied())
                .collect()
        } else {
            Vec::new()
        };
        let looked_up = if scripted.is_empty() {
            self.table.lookup(name, &texts)
        } else {
            self.table
                .lookup(name, &scripted)
                .map(|(classes, used)| (classes, used.saturating_sub(1)))
        };
        // `python -m twine upload dist/*`: a module the table does not list under `python
        // -m` but knows as a command of its own runs as that command does, also run by a
        // virtual environment's interpreter (`.venv/bin/python -m pip install x`).
        let module_run =
            |tool: &str, found: Option<(ClassSet, usize)>| match (found, texts.as_slice()) {
                (None | Some((_, 0)), ["-m", module, rest @ ..])
                    if (tool.starts_with("python") || tool == "py") && self.table.knows(module) =>
                {
                    self.table
                        .lookup(module, rest)
                        .map(|(classes, used)| (classes, used + 2))
                        .or(found)
                }
                (found, _) => found,
            };
        let looked_up = module_run(name, looked_up);
        let installed = installed.map(|(tool, found)| {
            let found = module_run(tool, Some(found)).unwrap_or(found);
            (tool, found)
        });
        let (classes, used) = match installed {
            Some((_, found)) => found,
            None => match looked_up {
                Some(found) => found,
                None if self.in_runner && !first.text.contains(['/', '\\']) => {
                    (ClassSet::of(&[Class::Build]), 0)
                }
                None => (ClassSet::of(&[Class::Unknown]), 0),
            },
        };
        // A cloud CLI's read (`aws s3 ls`, `gcloud … list`, `az … show`) only looks.
        let classes = if used == 0
            && classes == ClassSet::of(&[Class::Deploy])
            && matches!(name, "aws" | "gcloud" | "az")
            && cloud::reads_only(name, arguments)
        {
            ClassSet::of(&[Class::ReadOnly])
        } else {
            classes
        };
        let classes = if programs::agent_reads_only(name, &texts)
            || programs::osascript_only_notifies(name, &texts)
        {
            ClassSet::of(&[Class::ReadOnly])
        } else {
            classes
        };
        let classes = if cloud::prints_secret_output(name, &texts) {
            let mut secret = classes;
            secret.insert(Class::CredentialAccess);
            secret
        } else {
            classes
        };
        (classes, used)
    }
}
