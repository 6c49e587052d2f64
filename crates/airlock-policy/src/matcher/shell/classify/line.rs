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
            self.substituted_token = substituted_token(segments, index);
            let judged = self.out.len();
            if let Some(next) = self.segment(segment, here, nesting) {
                moves.push((segment.depth, next));
            }
            self.substituted_token = None;
            // `phpunit --bootstrap <(curl -s https://…)`: the project's build or tests handed
            // a download as a file may load it as code.
            let handed_download = segment
                .words
                .iter()
                .any(|word| word.text.contains("/dev/fd/…"))
                && substitutions(segments, index).iter().any(feeds_code);
            if handed_download {
                for facts in &mut self.out[judged..] {
                    if facts.classes.contains(Class::Build) {
                        facts.classes.insert(Class::RemoteCode);
                    }
                }
            }
            // `curl -H "Authorization: Bearer $(gh auth token)" https://api.github.com/…`:
            // the token went to its own service, not to the agent.
            if std::mem::take(&mut self.token_to_own_api) {
                if let Some((_, printed)) = piped_from.clone() {
                    for facts in &mut self.out[printed] {
                        facts.classes = super::remove(facts.classes, Class::CredentialAccess);
                        if facts.classes.is_empty() {
                            facts.classes.insert(Class::ReadOnly);
                        }
                    }
                }
            }
            self.exported.extend(exported_assignments(segment));
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

/// The segments of the substitutions the segment at `index` holds: those right before it,
/// deeper than it.
fn substitutions(segments: &[Segment], index: usize) -> &[Segment] {
    let depth = segments[index].depth;
    let start = segments[..index]
        .iter()
        .rposition(|segment| segment.depth <= depth)
        .map_or(0, |at| at + 1);
    &segments[start..index]
}

/// The API hosts of the service whose token the one command substitution of the segment
/// at `index` prints: the segment right before it, one level deeper and alone there.
fn substituted_token(segments: &[Segment], index: usize) -> Option<&'static [&'static str]> {
    let segment = &segments[index];
    let held: usize = segment
        .words
        .iter()
        .map(|word| word.text.matches("$(…)").count())
        .sum();
    if held != 1 {
        return None;
    }
    match substitutions(segments, index) {
        [substitution] if substitution.depth == segment.depth + 1 => {
            own_api::printed_token_hosts(substitution)
        }
        _ => None,
    }
}

/// The variables a segment sets for the commands after it: `export NAME=VALUE…` or a
/// segment of assignments alone (`NAME=VALUE;`).
fn exported_assignments(segment: &Segment) -> Vec<Word> {
    let words = segment.words.as_slice();
    let assignments = match words.split_first() {
        Some((first, rest)) if !first.dynamic && first.text == "export" => rest,
        Some(_) if words.iter().all(|word| is_assignment(&word.text)) => words,
        _ => return Vec::new(),
    };
    assignments
        .iter()
        .filter(|word| is_assignment(&word.text))
        .cloned()
        .collect()
}
