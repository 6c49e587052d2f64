//! Reliability of the real `airlock` binary, built with the `failpoints` feature:
//! crash tests at every durable step of the approval path and at random moments
//! (`crash.rs`), at a run's cancel, pause and resume (`cancel.rs`, `pause.rs`), at the redeem step with idempotency keys (`redeem.rs`), and a bounded soak under mixed load with memory sampled from /proc
//! (`soak.rs`). Run with
//! `cargo nextest run -p airlock-cli --features failpoints --test reliability`;
//! `AIRLOCK_CRASH_ROUNDS`, `AIRLOCK_CRASH_SEED` and `AIRLOCK_SOAK_SECS` make them longer.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]

#[path = "reliability/cancel.rs"]
mod cancel;
#[path = "common/captured.rs"]
mod captured;
#[path = "reliability/crash.rs"]
mod crash;
#[path = "reliability/node.rs"]
mod node;
#[path = "reliability/pause.rs"]
mod pause;
#[path = "reliability/redeem.rs"]
mod redeem;
#[path = "reliability/scenario.rs"]
mod scenario;
#[path = "reliability/soak.rs"]
mod soak;
