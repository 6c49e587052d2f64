//! Benchmarks and the corpora they run on.
//!
//! - [`corpus`] generates policies of any size and call traffic for them, so that every
//!   engine compared in BENCHMARKS.md sees the same rules and the same calls.
//! - [`engines`] encodes the corpus for airlock, `cedar-policy` and `regorus` behind one
//!   trait, so one harness measures all three.
//! - [`stats`] turns timing samples into the medians and tails the figures report.
//!
//! The `airlock-bench` binary (`src/bin/airlock-bench/`) runs the measurements and prints
//! the figures; `benches/policy_eval.rs` is the divan micro-benchmark of evaluation alone.

pub mod corpus;
pub mod engines;
pub mod stats;
