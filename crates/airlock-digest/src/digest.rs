//! The digests of DESIGN.md §6.3: every one is hex SHA-256 over RFC 8785 canonical JSON.
//!
//! - [`binding_digest`] binds an approval to the exact call a person saw (G2): the decision
//!   must echo it, so a call whose arguments, tool, agent, session or policy changed after
//!   the preview cannot ride on the old approval.
//! - [`audit_hash`] chains audit records (G8): each hash covers the previous one, so editing,
//!   deleting or reordering a record breaks every hash after it.
//! - [`json_digest`] is the building block, also used for the policy digest.
//!
//! Canonical JSON makes the digests independent of key order and whitespace, so any party
//! with the same values (another node, an external verifier) computes the same hex.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::canonical::to_canonical_bytes;

/// The `prev_hash` of the first audit record: 64 zeros.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Hex SHA-256 of the canonical JSON of `value`.
pub fn json_digest(value: &Value) -> String {
    sha256_hex(&to_canonical_bytes(value))
}

/// Everything an approval is bound to (DESIGN.md §6.3): ids, the exact arguments and the
/// digest of the policy in force.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    pub approval: &'a str,
    pub workspace: &'a str,
    pub agent: &'a str,
    /// `None` digests as JSON `null`, which is distinct from any session id.
    pub session: Option<&'a str>,
    pub tool: &'a str,
    /// The arguments as the tool will receive them. Secrets are redacted before storage,
    /// so callers pass the same (redacted) value at request and at decision time.
    pub arguments: &'a Value,
    /// The policy digest.
    pub policy: &'a str,
}

/// Hex SHA-256 of the canonical JSON of
/// `{approval, workspace, agent, session, tool, arguments, policy}`.
pub fn binding_digest(binding: &Binding) -> String {
    json_digest(&json!({
        "approval": binding.approval,
        "workspace": binding.workspace,
        "agent": binding.agent,
        "session": binding.session,
        "tool": binding.tool,
        "arguments": binding.arguments,
        "policy": binding.policy,
    }))
}

/// Hex SHA-256 of `prev_hash + "\n" + canonical JSON of the record without its hash`.
///
/// A top-level `hash` member, if the caller passes the stored record whole, is left out:
/// a record's hash cannot cover itself, and this lets a verifier hash records as read.
pub fn audit_hash(prev_hash: &str, record_without_hash: &Value) -> String {
    let canonical = match record_without_hash {
        Value::Object(members) if members.contains_key("hash") => {
            let mut members = members.clone();
            members.remove("hash");
            to_canonical_bytes(&Value::Object(members))
        }
        other => to_canonical_bytes(other),
    };
    let mut hasher = Sha256::new();
    hasher.update(prev_hash.as_bytes());
    hasher.update(b"\n");
    hasher.update(&canonical);
    hex::encode(hasher.finalize())
}

/// One audit record's members, as [`audit_record_hash`] takes them: `data` already as its
/// canonical JSON text (what the store keeps, so the verifier need not reorder it).
#[derive(Debug, Clone, Copy)]
pub struct AuditMembers<'a> {
    pub seq: u64,
    pub at: &'a str,
    pub actor: &'a str,
    pub kind: &'a str,
    pub subject: &'a str,
    pub canonical_data: &'a [u8],
    pub prev_hash: &'a str,
}

/// [`audit_hash`] of the record with these members, written straight into the hash: no
/// `Value` of the record is built and `data` is not serialized again (the append path
/// hashes every record the gate writes).
pub fn audit_record_hash(members: &AuditMembers<'_>) -> String {
    use crate::canonical::write_string;
    // The members in canonical (UTF-16 key) order.
    let mut record = Vec::with_capacity(members.canonical_data.len() + 256);
    record.extend_from_slice(b"{\"actor\":");
    write_string(&mut record, members.actor);
    record.extend_from_slice(b",\"at\":");
    write_string(&mut record, members.at);
    record.extend_from_slice(b",\"data\":");
    record.extend_from_slice(members.canonical_data);
    record.extend_from_slice(b",\"kind\":");
    write_string(&mut record, members.kind);
    record.extend_from_slice(b",\"prev_hash\":");
    write_string(&mut record, members.prev_hash);
    record.extend_from_slice(b",\"seq\":");
    record.extend_from_slice(members.seq.to_string().as_bytes());
    record.extend_from_slice(b",\"subject\":");
    write_string(&mut record, members.subject);
    record.push(b'}');
    let mut hasher = Sha256::new();
    hasher.update(members.prev_hash.as_bytes());
    hasher.update(b"\n");
    hasher.update(&record);
    hex::encode(hasher.finalize())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    // Expected hex values were computed independently with Python:
    // hashlib.sha256(json.dumps(v, sort_keys=True, separators=(',', ':'),
    //                           ensure_ascii=False).encode()).hexdigest()

    #[test]
    fn sha256_known_answers() {
        let table: [(&[u8], &str); 2] = [
            (
                b"",
                "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            ),
            (
                b"abc",
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
        ];
        for (input, expected) in table {
            assert_eq!(sha256_hex(input), expected);
        }
    }

    #[test]
    fn json_digest_known_answer_and_key_order() {
        let expected = "688678b0a1866297caeb8f469320bd37db123a96de46561b70d251515536e0cb";
        let one: Value = serde_json::from_str(
            r#"{"tool": "email.send", "arguments": {"to": "bob@acme.test", "n": 3}}"#,
        )
        .unwrap();
        let other: Value = serde_json::from_str(
            r#"{"arguments":{"n":3,"to":"bob@acme.test"},"tool":"email.send"}"#,
        )
        .unwrap();
        assert_eq!(json_digest(&one), expected);
        assert_eq!(json_digest(&other), expected);
    }

    fn binding(session: Option<&str>, arguments: &Value) -> String {
        binding_digest(&Binding {
            approval: "apr_1",
            workspace: "ws_1",
            agent: "agt_1",
            session,
            tool: "email.send",
            arguments,
            policy: &"ab".repeat(32),
        })
    }

    #[test]
    fn binding_digest_known_answers() {
        let arguments = json!({"to": "bob@acme.test", "subject": "Hi"});
        assert_eq!(
            binding(Some("ses_1"), &arguments),
            "676c0aa46da44d246c0b2a04677af68430e364b33124657bcb3a58302bb1b99d"
        );
        // No session digests as `"session":null`.
        assert_eq!(
            binding(None, &arguments),
            "21e6508d086a2dbef09e82b654b9ca57a69599e32bc4bb0e6b35172b86c7db6d"
        );
    }

    #[test]
    fn binding_digest_changes_with_every_field() {
        let arguments = json!({"to": "bob@acme.test", "subject": "Hi"});
        let base = binding(Some("ses_1"), &arguments);
        assert_ne!(base, binding(Some("ses_2"), &arguments));
        assert_ne!(base, binding(Some(""), &arguments));
        assert_ne!(binding(None, &arguments), binding(Some(""), &arguments));
        assert_ne!(
            base,
            binding(
                Some("ses_1"),
                &json!({"to": "eve@evil.test", "subject": "Hi"})
            )
        );
        // Reordered arguments are the same call.
        let reordered: Value =
            serde_json::from_str(r#"{"subject":"Hi","to":"bob@acme.test"}"#).unwrap();
        assert_eq!(base, binding(Some("ses_1"), &reordered));
    }

    #[test]
    fn audit_chain_known_answers() {
        let first = json!({
            "seq": 1, "at": "2025-01-01T00:00:00Z", "actor": "policy", "kind": "call.decided",
            "subject": "call_1", "data": {"decision": "allow"}, "prev_hash": GENESIS_HASH,
        });
        let first_hash = audit_hash(GENESIS_HASH, &first);
        assert_eq!(
            first_hash,
            "900f9458d64bcf94b8d2925002267f0f2650ad29c96a4aa761bd8e98be86dbab"
        );

        let second = json!({
            "seq": 2, "at": "2025-01-01T00:00:01Z", "actor": "system", "kind": "approval.expired",
            "subject": "apr_1", "data": {}, "prev_hash": first_hash,
        });
        assert_eq!(
            audit_hash(&first_hash, &second),
            "7a32374c65f6e0613f92ce4c314be191331c2c1c193394dd116264adaea433e6"
        );
    }

    #[test]
    fn audit_hash_ignores_own_hash_member_and_depends_on_prev() {
        let record = json!({"seq": 1, "kind": "policy.updated"});
        let mut stored = record.clone();
        stored["hash"] = json!("whatever was stored");
        assert_eq!(
            audit_hash(GENESIS_HASH, &record),
            audit_hash(GENESIS_HASH, &stored)
        );
        assert_ne!(
            audit_hash(GENESIS_HASH, &record),
            audit_hash(&"1".repeat(64), &record)
        );
        assert_eq!(GENESIS_HASH.len(), 64);
        assert!(GENESIS_HASH.bytes().all(|byte| byte == b'0'));
    }

    #[test]
    fn audit_record_hash_is_audit_hash_of_the_record() {
        let datas = [
            json!({"b": 1, "a": {"z": [1.5, null, true], "é": "q\"\\\n"}, "😀": -7}),
            json!(null),
            json!("text"),
            json!({"call_id": "call_1", "arguments": {"command": "ls -la\tx"}, "n": 1e21}),
        ];
        for (n, data) in datas.iter().enumerate() {
            for (seq, at, actor, subject) in [
                (1u64, "2026-12-01T00:00:00Z", "agent:a", "call_1"),
                (u64::MAX, "t\u{1}", "user:\"x\"", "é😀\u{e000}"),
            ] {
                let prev = if n % 2 == 0 { GENESIS_HASH } else { "ab\ncd" };
                let record = json!({
                    "seq": seq, "at": at, "actor": actor, "kind": "call.allowed",
                    "subject": subject, "data": data, "prev_hash": prev,
                });
                let canonical = to_canonical_bytes(data);
                let members = AuditMembers {
                    seq,
                    at,
                    actor,
                    kind: "call.allowed",
                    subject,
                    canonical_data: &canonical,
                    prev_hash: prev,
                };
                assert_eq!(
                    audit_record_hash(&members),
                    audit_hash(prev, &record),
                    "{data}"
                );
            }
        }
    }
}
