//! Identifiers and bearer tokens.
//!
//! Ids are a short type prefix plus a UUIDv7 (time-ordered, so listing by id is listing by
//! creation). Tokens are 32 random bytes; only their SHA-256 is ever stored.

use rand::RngCore;

/// A new id such as `apr_0193…`.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::now_v7().simple())
}

/// A new bearer token, `alk_` + 64 hex characters.
pub fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!("alk_{}", hex::encode(bytes))
}

/// What the store keeps of a token.
pub fn token_hash(token: &str) -> String {
    airlock_policy::digest::sha256_hex(token.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_their_prefix_and_are_unique() {
        let a = new_id("call");
        let b = new_id("call");
        assert!(a.starts_with("call_") && a.len() == 5 + 32, "{a}");
        assert_ne!(a, b);
    }

    #[test]
    fn tokens_are_random_and_hashed() {
        let token = new_token();
        assert!(token.starts_with("alk_") && token.len() == 68);
        assert_ne!(token, new_token());
        assert_eq!(token_hash(&token).len(), 64);
        assert_ne!(token_hash(&token), token);
    }
}
