//! Canonical JSON (RFC 8785) and the digests over it, on any JSON: never a panic, the
//! canonical form is valid JSON and a fixed point, and the digest is that of its bytes.

#![no_main]

use airlock_policy::canonical::{to_canonical_bytes, to_canonical_string};
use airlock_policy::digest::{binding_digest, json_digest, sha256_hex, Binding};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|bytes: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
        return;
    };
    let canonical = to_canonical_string(&value);
    assert_eq!(canonical.as_bytes(), to_canonical_bytes(&value).as_slice());
    let reparsed: Value = match serde_json::from_str(&canonical) {
        Ok(reparsed) => reparsed,
        Err(error) => panic!("canonical form is not JSON ({error}): {canonical}"),
    };
    assert_eq!(
        to_canonical_string(&reparsed),
        canonical,
        "not a fixed point"
    );
    assert_eq!(json_digest(&value), sha256_hex(canonical.as_bytes()));
    let binding = Binding {
        approval: "apr_1",
        workspace: "wsp_1",
        agent: "agt_1",
        session: None,
        tool: "t",
        arguments: &value,
        policy: "p",
    };
    assert_eq!(binding_digest(&binding).len(), 64);
});
