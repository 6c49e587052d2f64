//! Wire types shared by every airlock crate.
//!
//! This crate owns the vocabulary of ../shared/DESIGN.md §2 as Rust types: the ordered
//! [`Decision`], the tool [`Risk`] classes, the agent [`Mode`]s and the [`Verdict`] that the
//! policy engine returns. It knows nothing about storage, HTTP or policy parsing; every other
//! crate depends on it, it depends on none of them.

mod decision;

pub use decision::{DecidedBy, Decision, Mode, Risk, SecretFinding, Verdict};
