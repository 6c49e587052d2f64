//! A command line judged segment by segment, in order: the working folder each `cd` moves
//! to, what a pipe carries from one segment to the next (the environment, a listing, a
//! secret handed to a login), and the facts each segment adds.

use super::*;

impl Judge<'_> {
    pub(super) fn all(&mut self, segments: &[Segment], cwd: Cwd, nesting: usize) {
        if nesting > crate::matcher::shell::MAX_DEPTH {
            self.unknown("(nested too deeply)");
            return;
        }
        // `cd` effects by depth: a `cd` holds for what follows at its depth or deeper.
        let mut moves: Vec<(usize, Cwd)> = Vec::new();
        // The environment printed into the pipe this segment reads (`env | curl -d @- …`).
        let mut environment_piped = false;
        // The depths of substitutions that printed the environment, not yet taken by the
        // command holding them (a substitution comes before its command, one level deeper:
        // `curl -d "$(env | base64)" …`).
        let mut environment_substituted: Vec<usize> = Vec::new();
        // The facts of the last segment that printed the whole environment.
        let mut environment_printed: Option<std::ops::Range<usize>> = None;
        let mut listings = listed::Listings::default();
        // The segment before and its facts (what it prints into this one's pipe).
        let mut piped_from: Option<(usize, std::ops::Range<usize>)> = None;
        for (index, segment) in segments.iter().enumerate() {
            // `LOG=$(ls -t logs/*.log | head -1)`: `$LOG` is an entry of `logs`.
            let held = listings.held(segment);
            for name in listed::assigned(segment) {
                self.listed.retain(|(known, _)| *known != name);
            }
            if let (Some(place), Some(name)) = (held, listed::set_from_substitution(segment)) {
                self.listed.push((name, place));
            }
            environment_piped &= segment.piped;
            // `env | grep -E '^(LANG|DISPLAY)='`: only the named variables come out.
            // `env | cut -d= -f1`: only the names. `env | grep -i token`: the secrets.
            if let Some(printed) = environment_printed.take() {
                environment_piped &= self.environment_filtered(printed, segments, index);
            }
            let holds_environment = environment_substituted
                .iter()
                .any(|depth| *depth > segment.depth)
                && segment.words.iter().any(|word| word.text.contains("$(…)"));
            environment_substituted.retain(|depth| *depth <= segment.depth);
            while moves
                .last()
                .is_some_and(|(depth, _)| *depth > segment.depth)
            {
                moves.pop();
            }
            let here = moves
                .last()
                .map_or_else(|| cwd.clone(), |(_, cwd)| cwd.clone());
            self.found = self.found_by_find(segments, index, here.as_deref());
            self.piped_found = self.piped_from_find(segments, index, here.as_deref());
            let judged = self.out.len();
            if let Some(next) = self.segment(segment, here, nesting) {
                moves.push((segment.depth, next));
            }
            listings.note(segment, &self.out[judged..]);
            self.secret_handed_to_login(segments, piped_from.clone(), index);
            self.secrets_filtered(segments, piped_from.take(), index, judged);
            piped_from = Some((index, judged..self.out.len()));
            // What reads the whole environment from the pipe and sends it off this machine
            // sends every token in it.
            if environment_piped || holds_environment {
                for facts in &mut self.out[judged..] {
                    if facts.classes.contains(Class::Network) {
                        facts.classes.insert(Class::CredentialAccess);
                    }
                }
            }
            // What holds the environment in its words prints it on (`echo "$(env)" | …`).
            // A container's or pod's environment printed (`docker compose exec web env`).
            let container_dumps = environment::container_dumps_environment(segment);
            if container_dumps {
                for facts in &mut self.out[judged..] {
                    facts.classes.insert(Class::CredentialSearch);
                }
            }
            let dumps = dumps_environment(segment) || container_dumps;
            environment_piped |= dumps || holds_environment;
            if dumps {
                environment_printed = Some(judged..self.out.len());
                if segment.depth > 0 {
                    environment_substituted.push(segment.depth);
                }
            }
        }
    }
}
