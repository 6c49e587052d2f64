//! The `when` matchers of DESIGN.md §4.1, compiled once at load.

pub mod class;
pub mod domain;
pub mod local_data;
pub mod path;
pub mod planted;
pub mod shell;

/// Which way a matcher must lean when the input is compound or unclear.
///
/// INVARIANT: fail closed. An allow rule must prove that *every* part of the value is
/// covered (every segment of a compound command, every element of an array) and an
/// unparsable value never satisfies it. A deny or ask rule matches when *any* part matches,
/// and an unparsable value counts as a match, so doubt always lands on the stricter side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The rule's decision is `allow`: every part must match.
    Allow,
    /// The rule's decision is `deny` or `ask`: any part suffices.
    Restrict,
}
