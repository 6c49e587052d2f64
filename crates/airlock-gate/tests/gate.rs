//! The gate's guarantees, tested through its API over a real SQLite file and a manual
//! clock (no HTTP here; the server's end-to-end tests cover the wire).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod gate {
    pub mod ambiguous;
    pub mod audit_pages;
    pub mod boundary;
    pub mod cache;
    pub mod guarantees;
    pub mod harness;
    pub mod redeeming;
}
