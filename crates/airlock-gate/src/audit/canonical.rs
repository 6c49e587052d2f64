//! The verifier's canonical JSON comes from `airlock-digest`: its fast path from stored
//! text (`text`), and the string escaping it shares with the general writer.

pub(crate) use airlock_digest::canonical::write_string;
pub(crate) use airlock_digest::text::{string_end, value_end, Canonicalizer};
