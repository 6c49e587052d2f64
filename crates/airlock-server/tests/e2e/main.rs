//! End-to-end tests of the HTTP API: a real server on `127.0.0.1:0` over real SQLite files
//! in a temporary folder, driven over HTTP the way any client would. Each module pins one
//! concern; each test is named after what it pins (DESIGN.md §3 G1–G9, §6, §10.12).
//!
//! Nothing sleeps to wait for something to happen: waiting is a long-poll, an SSE read or
//! a bounded polling loop with a timeout; time that must pass is a manual clock.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    // The latency test prints its figure.
    clippy::print_stdout
)]

mod api_fuzz;
mod audit;
mod authority;
mod bad_input;
mod basics;
mod batches;
mod calls;
mod decisions;
mod durability;
mod edits;
mod exact_input;
mod exactly_once;
mod hooks;
mod identity;
mod matrix;
mod notify;
mod replay;
mod retries;
mod runtime;
mod secrets;
mod session_mode;
mod slack;
mod slack_fake;
mod story;
mod support;
mod telemetry;
mod votes;
