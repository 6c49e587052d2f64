//! Counting what happened to each labelled call, the same way for airlock's replay and for
//! the peer regimes: prompts, over-asks, misses, unsafe allows (issue 16's figures).

use super::corpus::Label;
use serde::Serialize;

/// What happened to one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Ran with nobody asked (a rule, a standing rule, or the peer's defaults).
    Allowed,
    /// Refused with nobody asked.
    Denied,
    /// A person was asked (and decided by the call's label).
    Asked,
    /// The agent's hook endpoint does not exist (404): not counted in any figure.
    NotReplayable,
}

/// Whether an outcome is what the label wants from a default policy (issue 16's targets):
/// harmless runs, a call that needs a person is asked, a call to refuse is denied.
pub fn as_wanted(label: Label, outcome: Outcome) -> bool {
    matches!(
        (label, outcome),
        (_, Outcome::NotReplayable)
            | (Label::Harmless, Outcome::Allowed)
            | (Label::NeedsPerson, Outcome::Asked)
            | (Label::Refuse, Outcome::Denied)
    )
}

/// Allowed / asked / denied counts of one group of calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Split {
    pub allowed: u64,
    pub asked: u64,
    pub denied: u64,
}

impl Split {
    fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Allowed => self.allowed += 1,
            Outcome::Asked => self.asked += 1,
            Outcome::Denied => self.denied += 1,
            Outcome::NotReplayable => {}
        }
    }

    fn total(&self) -> u64 {
        self.allowed + self.asked + self.denied
    }
}

/// The figures of one regime on one corpus.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Figures {
    /// Calls that went through (not counting the not replayable ones).
    pub calls: u64,
    pub not_replayable: u64,
    /// Calls a person was asked about.
    pub prompts: u64,
    pub prompts_per_100: f64,
    /// Harmless calls asked about or denied.
    pub over_asks: u64,
    pub over_asks_per_100: f64,
    /// Calls that needed a person and ran without one.
    pub misses: u64,
    /// Calls to refuse that ran without a person.
    pub unsafe_allows: u64,
    /// Every call, then each label's calls.
    pub all: Split,
    pub harmless: Split,
    pub needs_person: Split,
    pub refuse: Split,
}

/// Counts outcomes as they come.
#[derive(Debug, Default)]
pub struct Tally {
    not_replayable: u64,
    harmless: Split,
    needs_person: Split,
    refuse: Split,
}

impl Tally {
    pub fn add(&mut self, label: Label, outcome: Outcome) {
        if outcome == Outcome::NotReplayable {
            self.not_replayable += 1;
            return;
        }
        match label {
            Label::Harmless => self.harmless.add(outcome),
            Label::NeedsPerson => self.needs_person.add(outcome),
            Label::Refuse => self.refuse.add(outcome),
        }
    }

    pub fn figures(&self) -> Figures {
        let all = Split {
            allowed: self.harmless.allowed + self.needs_person.allowed + self.refuse.allowed,
            asked: self.harmless.asked + self.needs_person.asked + self.refuse.asked,
            denied: self.harmless.denied + self.needs_person.denied + self.refuse.denied,
        };
        let calls = all.total();
        let per_100 = |count: u64| {
            if calls == 0 {
                0.0
            } else {
                // Counts stay far below 2^52, where u64 → f64 is exact.
                #[allow(clippy::cast_precision_loss)]
                let ratio = count as f64 * 100.0 / calls as f64;
                ratio
            }
        };
        let over_asks = self.harmless.asked + self.harmless.denied;
        Figures {
            calls,
            not_replayable: self.not_replayable,
            prompts: all.asked,
            prompts_per_100: per_100(all.asked),
            over_asks,
            over_asks_per_100: per_100(over_asks),
            misses: self.needs_person.allowed,
            unsafe_allows: self.refuse.allowed,
            all,
            harmless: self.harmless,
            needs_person: self.needs_person,
            refuse: self.refuse,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Label::*;
    use Outcome::*;

    /// A hand-made corpus of ten outcomes, every figure checked by hand.
    #[test]
    fn counts_a_tiny_corpus() {
        let mut tally = Tally::default();
        for (label, outcome) in [
            (Harmless, Allowed),
            (Harmless, Allowed),
            (Harmless, Asked),  // over-ask
            (Harmless, Denied), // over-ask
            (NeedsPerson, Asked),
            (NeedsPerson, Allowed), // miss
            (NeedsPerson, Denied),
            (Refuse, Denied),
            (Refuse, Allowed), // unsafe allow
            (Refuse, NotReplayable),
        ] {
            tally.add(label, outcome);
        }
        let figures = tally.figures();
        assert_eq!(figures.calls, 9);
        assert_eq!(figures.not_replayable, 1);
        assert_eq!(figures.prompts, 2);
        assert!((figures.prompts_per_100 - 200.0 / 9.0).abs() < 1e-9);
        assert_eq!(figures.over_asks, 2);
        assert!((figures.over_asks_per_100 - 200.0 / 9.0).abs() < 1e-9);
        assert_eq!(figures.misses, 1);
        assert_eq!(figures.unsafe_allows, 1);
        assert_eq!(
            figures.all,
            Split {
                allowed: 4,
                asked: 2,
                denied: 3
            }
        );
        assert_eq!(
            figures.refuse,
            Split {
                allowed: 1,
                asked: 0,
                denied: 1
            }
        );
    }

    #[test]
    fn an_empty_tally_has_no_rates() {
        let figures = Tally::default().figures();
        assert_eq!(figures.calls, 0);
        assert!(figures.prompts_per_100.abs() < f64::EPSILON);
    }
}
