//! HMAC-SHA256 (RFC 2104) over `sha2`, the webhook signature header, and the signed
//! single-use links (`/l/{token}`).
//!
//! Webhook signature: `X-Airlock-Signature: sha256=<hex>` where `<hex>` is
//! HMAC-SHA256(key, `<X-Airlock-Timestamp>` + "." + raw body). The timestamp is unix
//! seconds; a receiver recomputes the MAC, compares in constant time and rejects old
//! timestamps (replays).
//!
//! Link token: `v1.<workspace>.<approval>.<user>.<expires unix s>.<nonce>.<hex MAC>`,
//! the MAC over everything before its dot, under the server's link key (generated on
//! first start, kept in the store). Ids are `[A-Za-z0-9_-]`, so the dots split it.

use crate::web::session::same_secret;
use jiff::Timestamp;
use sha2::{Digest, Sha256};

/// The name of the link key among the store's server secrets.
pub const LINK_KEY: &str = "link_signing_key";

const BLOCK: usize = 64;

/// HMAC-SHA256 of `message` under `key`.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.map(|k| k ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

/// The `X-Airlock-Signature` value for `body` sent at `timestamp` (unix seconds).
pub fn webhook_signature(key: &[u8], timestamp: i64, body: &[u8]) -> String {
    let mut message = format!("{timestamp}.").into_bytes();
    message.extend_from_slice(body);
    format!("sha256={}", hex::encode(hmac_sha256(key, &message)))
}

/// What a valid link says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkClaims {
    pub workspace: String,
    pub approval_id: String,
    pub user_id: String,
    pub expires_at: Timestamp,
    pub nonce: String,
}

/// Why a link is refused before the store is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkProblem {
    /// Not a link this server makes, or one whose signature does not verify.
    Invalid,
    /// Signed by us, but past its expiry.
    Expired,
}

fn plain_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 100
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
}

/// The token of a link; `None` when an id holds a character a token cannot carry.
pub fn link_token(key: &[u8], claims: &LinkClaims) -> Option<String> {
    let ids = [
        &claims.workspace,
        &claims.approval_id,
        &claims.user_id,
        &claims.nonce,
    ];
    if !ids.iter().all(|id| plain_id(id)) {
        return None;
    }
    let signed = format!(
        "v1.{}.{}.{}.{}.{}",
        claims.workspace,
        claims.approval_id,
        claims.user_id,
        claims.expires_at.as_second(),
        claims.nonce
    );
    let mac = hex::encode(hmac_sha256(key, signed.as_bytes()));
    Some(format!("{signed}.{mac}"))
}

/// Checks a token's signature, then its expiry against `now`.
pub fn verify_link(key: &[u8], token: &str, now: Timestamp) -> Result<LinkClaims, LinkProblem> {
    let (signed, mac) = token.rsplit_once('.').ok_or(LinkProblem::Invalid)?;
    let expected = hex::encode(hmac_sha256(key, signed.as_bytes()));
    if !same_secret(mac, &expected) {
        return Err(LinkProblem::Invalid);
    }
    let parts: Vec<&str> = signed.split('.').collect();
    let [version, workspace, approval_id, user_id, expires, nonce] = parts[..] else {
        return Err(LinkProblem::Invalid);
    };
    if version != "v1" {
        return Err(LinkProblem::Invalid);
    }
    let expires_at = expires
        .parse::<i64>()
        .ok()
        .and_then(|seconds| Timestamp::from_second(seconds).ok())
        .ok_or(LinkProblem::Invalid)?;
    if now >= expires_at {
        return Err(LinkProblem::Expired);
    }
    Ok(LinkClaims {
        workspace: workspace.to_owned(),
        approval_id: approval_id.to_owned(),
        user_id: user_id.to_owned(),
        expires_at,
        nonce: nonce.to_owned(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// RFC 4231 test cases 1, 2 and 6 (a key longer than the block).
    #[test]
    fn hmac_matches_rfc_4231() {
        let check = |key: &[u8], data: &[u8], expected: &str| {
            assert_eq!(hex::encode(hmac_sha256(key, data)), expected);
        };
        check(
            &[0x0b; 20],
            b"Hi There",
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
        );
        check(
            b"Jefe",
            b"what do ya want for nothing?",
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
        );
        check(
            &[0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First",
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
        );
    }

    #[test]
    fn webhook_signatures_cover_timestamp_and_body() {
        let signature = webhook_signature(b"k", 1700000000, b"{}");
        assert!(signature.starts_with("sha256=") && signature.len() == 7 + 64);
        assert_eq!(
            signature,
            format!(
                "sha256={}",
                hex::encode(hmac_sha256(b"k", b"1700000000.{}"))
            )
        );
        assert_ne!(signature, webhook_signature(b"k", 1700000001, b"{}"));
        assert_ne!(signature, webhook_signature(b"k", 1700000000, b"{ }"));
        assert_ne!(signature, webhook_signature(b"K", 1700000000, b"{}"));
    }

    fn claims() -> LinkClaims {
        LinkClaims {
            workspace: "ws_1".into(),
            approval_id: "apr_2".into(),
            user_id: "usr_3".into(),
            expires_at: Timestamp::from_second(2_000_000_000).unwrap(),
            nonce: "ntf_4".into(),
        }
    }

    #[test]
    fn links_verify_until_they_expire_and_not_when_altered() {
        let before = Timestamp::from_second(1_999_999_999).unwrap();
        let token = link_token(b"key", &claims()).unwrap();
        assert_eq!(verify_link(b"key", &token, before), Ok(claims()));
        assert_eq!(
            verify_link(b"key", &token, claims().expires_at),
            Err(LinkProblem::Expired)
        );
        assert_eq!(
            verify_link(b"other", &token, before),
            Err(LinkProblem::Invalid)
        );
        // Another user, a later expiry, a truncated MAC, garbage.
        for altered in [
            token.replace("usr_3", "usr_9"),
            token.replace("2000000000", "2000009999"),
            token[..token.len() - 1].to_owned(),
            "v1.x".to_owned(),
            String::new(),
        ] {
            assert_eq!(
                verify_link(b"key", &altered, before),
                Err(LinkProblem::Invalid),
                "{altered}"
            );
        }
        let mut odd = claims();
        odd.user_id = "usr.3".into();
        assert_eq!(link_token(b"key", &odd), None);
    }
}
