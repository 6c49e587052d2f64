//! Benchmarks and the corpora they run on.
//!
//! [`corpus`] generates policies of any size and call traffic for them, so that every engine
//! compared in BENCHMARKS.md sees the same rules and the same calls.

pub mod corpus;
