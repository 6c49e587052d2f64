//! The policy engine's integration tests: one binary, one module per concern.
//!
//! - `tables`: the data-driven decision tables under `tests/data/` (policy + cases pairs).
//! - `load_errors`: every kind of load error, with its message and position.
//! - `properties`: proptest properties (never panics, deny is monotone, allow-only policies).
//! - `example`: the shipped `examples/policy.toml` and its cases.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod policy {
    pub mod classes;
    pub mod default;
    pub mod example;
    pub mod load_errors;
    pub mod prepared;
    pub mod properties;
    pub mod secrets_corpus;
    pub mod tables;
}
