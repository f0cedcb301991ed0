//! Consistency tokens (`GenerateConsistencyToken` / `CheckConsistency`, behind `cbt
//! waitforreplication` and the clients' `WaitForReplication`). A local store has one replica,
//! so every write is replicated when acknowledged and a token is consistent as soon as issued.
//! What is checked is the token itself, as production checks it: one this server issued for
//! that table, else `INVALID_ARGUMENT`. Tokens carry their issue time and a keyed hash of
//! table and time, with a key drawn per process, so no issued token is stored (the server's
//! memory does not grow with calls); a token from before a restart is no longer recognised.

use std::hash::{BuildHasher, RandomState};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Issues and recognises this server's consistency tokens.
pub(crate) struct ConsistencyTokens {
    /// SipHash keys drawn at random for this process.
    key: RandomState,
}

/// Issue time (8 bytes) and keyed hash (8 bytes).
const TOKEN_BYTES: usize = 16;

impl ConsistencyTokens {
    /// Tokens under a fresh random key.
    pub(crate) fn new() -> ConsistencyTokens {
        ConsistencyTokens {
            key: RandomState::new(),
        }
    }

    fn tag(&self, table: &str, issued: i64) -> u64 {
        self.key.hash_one((table, issued))
    }

    /// A token for `table` (its id), issued at `issued` (microseconds).
    pub(crate) fn issue(&self, table: &str, issued: i64) -> String {
        let mut bytes = [0u8; TOKEN_BYTES];
        bytes[..8].copy_from_slice(&issued.to_be_bytes());
        bytes[8..].copy_from_slice(&self.tag(table, issued).to_be_bytes());
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Whether `token` is one this server issued for `table`.
    pub(crate) fn recognises(&self, table: &str, token: &str) -> bool {
        let Ok(bytes) = URL_SAFE_NO_PAD.decode(token) else {
            return false;
        };
        let Ok(bytes) = <[u8; TOKEN_BYTES]>::try_from(bytes.as_slice()) else {
            return false;
        };
        let (mut issued, mut tag) = ([0u8; 8], [0u8; 8]);
        issued.copy_from_slice(&bytes[..8]);
        tag.copy_from_slice(&bytes[8..]);
        self.tag(table, i64::from_be_bytes(issued)) == u64::from_be_bytes(tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_recognised_for_its_table_only() {
        let tokens = ConsistencyTokens::new();
        let token = tokens.issue("t", 1_234_567);
        assert!(tokens.recognises("t", &token));
        assert!(!tokens.recognises("u", &token));
        assert!(!tokens.recognises("t", ""));
        assert!(!tokens.recognises("t", "not a token"));
        assert!(!tokens.recognises("t", &format!("{token}AA")));
        // Another server (another key) does not recognise it.
        assert!(!ConsistencyTokens::new().recognises("t", &token));
        // A changed issue time breaks the tag.
        let mut bytes = URL_SAFE_NO_PAD.decode(&token).unwrap();
        bytes[7] ^= 1;
        assert!(!tokens.recognises("t", &URL_SAFE_NO_PAD.encode(bytes)));
    }
}
