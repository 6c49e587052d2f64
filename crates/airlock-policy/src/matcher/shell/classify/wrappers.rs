//! The wrappers in front of the command a segment really runs (`sudo`, `env X=1`,
//! `timeout 10`, `xargs`, `uv run`, keywords, assignments), and what they add themselves:
//! privilege, secrets loaded, settings that run code or reveal secrets, another machine's
//! Docker.

use super::*;

/// A segment's command with its wrappers taken off, and what they said.
pub(super) struct Unwrapped<'s> {
    pub(super) words: &'s [Word],
    /// `xargs` feeds it its operands from standard input.
    pub(super) from_stdin: bool,
    /// It works on another machine's Docker (`DOCKER_HOST=ssh://…`).
    pub(super) remote_docker: bool,
}

impl Judge<'_> {
    /// Takes the wrappers off `segment`'s words, judging what each adds into `facts`.
    pub(super) fn unwrap<'s>(
        &mut self,
        segment: &'s Segment,
        cwd: &Cwd,
        nesting: usize,
        facts: &mut SegmentFacts,
    ) -> Unwrapped<'s> {
        let mut words = segment.words.as_slice();
        let mut from_stdin = false;
        let mut remote_docker = self.docker_elsewhere(segment);
        // (After the look at Docker's host: a segment's own exports hold for what follows.)
        self.note_exported(segment);
        self.in_runner = false;
        while let Some(inner) = strip_one_wrapper(words) {
            let Some(first) = words.first() else {
                break;
            };
            if is_runner(words) {
                if let Some(production) = loads_secrets(words, inner) {
                    self.secrets_loaded = Some(production || self.secrets_loaded == Some(true));
                }
                let own = &words[1..words.len() - inner.len()];
                if !first.dynamic && nix_fetches_expression(basename(&first.text), own) {
                    facts.classes.insert(Class::Install);
                }
                // What the runner's own options do (`uv run --with x` installs x).
                let texts: Vec<&str> = words[1..].iter().map(|word| word.text.as_str()).collect();
                let name = basename(&first.text);
                facts
                    .classes
                    .extend(self.table.option_classes(name, &texts));
                self.in_runner = true;
                words = inner;
                continue;
            }
            let prefix = is_assignment(&first.text) || KEYWORDS.contains(&first.text.as_str());
            // `DOCKER_HOST=ssh://deploy@prod docker compose up -d`: another machine's Docker.
            remote_docker |= is_assignment(&first.text)
                && programs::names_remote_docker(&first.text, first.dynamic);
            // `GIT_TRACE_REDACT=0`: git's traces then print the credentials they carry.
            if is_assignment(&first.text) && programs::assignment_reveals_secrets(&first.text) {
                facts.classes.insert(Class::CredentialAccess);
            }
            if is_assignment(&first.text)
                && programs::assignment_runs_code(&first.text)
                && (first.dynamic
                    || !programs::preloads_project_code(&first.text, self.context, cwd.as_deref()))
            {
                facts.classes.insert(Class::Unknown);
                // What it runs is judged too: `GIT_SSH_COMMAND='cat ~/.aws/credentials'`.
                if let Some((_, value)) = first.text.split_once('=').filter(|_| !first.dynamic) {
                    self.nested(value, cwd.as_deref(), nesting);
                }
            }
            // A wrapper with nothing after it is itself the command (`env` alone prints the
            // environment); assignments and keywords alone run nothing.
            if inner.is_empty() && !prefix {
                break;
            }
            match basename(&first.text) {
                "sudo" | "doas" | "chroot" | "nsenter" | "run0" if !prefix => {
                    facts.classes.insert(Class::Privilege)
                }
                "xargs" if !prefix => from_stdin = true,
                _ => {}
            }
            words = inner;
        }
        Unwrapped {
            words,
            from_stdin,
            remote_docker,
        }
    }
}
