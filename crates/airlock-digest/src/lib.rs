//! The audit chain's arithmetic, shared by the policy engine, the store and the gate:
//!
//! - `canonical`: RFC 8785 canonical JSON, the one writer of it.
//! - `text`: the same canonical bytes written straight from JSON text (the audit
//!   verifier's fast path), with `canonical`'s escaping, key order and integer rule.
//! - `digest`: the digests of DESIGN.md §6.3 (binding, audit chain, policy), and the
//!   chain's first `prev_hash`.
//! - `ijson`: the input domain of RFC 8785 checked on JSON text (unique keys, numbers a
//!   double keeps exactly), so what is hashed is what was sent.
//!
//! It depends on nothing of airlock, so the store can chain audit records without
//! depending on the policy engine.

pub mod canonical;
pub mod digest;
pub mod ijson;
pub mod text;

pub use digest::{audit_hash, GENESIS_HASH};
