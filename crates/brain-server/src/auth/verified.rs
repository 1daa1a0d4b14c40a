//! Tokens verified lately, remembered so a token is not verified again on
//! every request.

use std::collections::HashMap;
use std::sync::Mutex;

use super::Principal;

/// Tokens this replica has verified, so an agent's next call with the same
/// token skips the signature check and the claims' parsing (about 7 % of the
/// server's CPU on a `brain_focus_get`). Sound because a JWT's answer depends
/// only on its text, the keys (fixed for the process) and the clock: an entry
/// answers only inside the token's own `nbf`..`exp` window (with the same
/// leeway), and brain revokes no JWT (shared tokens, which can be revoked,
/// never pass here). Keyed by the SHA-256 of the token, so an entry holds no
/// secret, and at most [`MAX_VERIFIED`] entries are kept (an entry is at most
/// about 1 KB with the claim limits below, so 4-5 MB at worst); only a token
/// that verified gets one, so only a holder of a signing key can fill it.
#[derive(Default)]
pub(super) struct Verified(Mutex<HashMap<[u8; 32], Remembered>>);

pub(super) struct Remembered {
    pub(super) principal: Principal,
    /// For a token of the provider's JWKS: the set it verified against. A
    /// newer set may have dropped its key, so it is verified again.
    pub(super) jwks_generation: Option<u64>,
    /// Unix seconds from which, and until which, the token is taken.
    pub(super) from: i64,
    pub(super) until: i64,
}

/// At most this many verified tokens are remembered; when full, the expired
/// ones go, and if none has, all do (they are verified again on next use).
pub(super) const MAX_VERIFIED: usize = 4_096;

impl Verified {
    pub(super) fn key(token: &str) -> [u8; 32] {
        use sha2::Digest;
        sha2::Sha256::digest(token.as_bytes()).into()
    }

    pub(super) fn get(&self, key: &[u8; 32], now: i64, jwks_generation: u64) -> Option<Principal> {
        let map = self.lock();
        map.get(key)
            .filter(|r| r.from <= now && now <= r.until)
            .filter(|r| r.jwks_generation.is_none_or(|g| g == jwks_generation))
            .map(|r| r.principal.clone())
    }

    pub(super) fn put(&self, key: [u8; 32], remembered: Remembered, now: i64) {
        let mut map = self.lock();
        if map.len() >= MAX_VERIFIED {
            map.retain(|_, r| now <= r.until);
            if map.len() >= MAX_VERIFIED {
                map.clear();
            }
        }
        map.insert(key, remembered);
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Remembered>> {
        // Entries are inserted whole; a poisoned map is still consistent.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
