//! Public keys: from a file of PEM blocks or a JWK set.

use std::path::Path;

use anyhow::{Context, bail};
use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey};

use super::PublicKey;

pub(super) fn load_public_keys(path: &Path) -> anyhow::Result<Vec<PublicKey>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read BRAIN_JWT_PUBLIC_KEYS file {}", path.display()))?;
    let keys: Vec<PublicKey> = if text.trim_start().starts_with('{') {
        let set: JwkSet =
            serde_json::from_str(&text).context("BRAIN_JWT_PUBLIC_KEYS is not a JWKS")?;
        keys_of_set(&set)
    } else {
        pem_blocks(&text)
            .into_iter()
            .filter_map(|block| {
                if let Ok(key) = DecodingKey::from_rsa_pem(block.as_bytes()) {
                    Some(PublicKey {
                        kid: None,
                        alg: Algorithm::RS256,
                        key,
                    })
                } else {
                    DecodingKey::from_ec_pem(block.as_bytes())
                        .ok()
                        .map(|key| PublicKey {
                            kid: None,
                            alg: Algorithm::ES256,
                            key,
                        })
                }
            })
            .collect()
    };
    if keys.is_empty() {
        bail!("BRAIN_JWT_PUBLIC_KEYS holds no usable RS256 or ES256 public key");
    }
    Ok(keys)
}

/// The RS256 and ES256 keys of a JWK set (others are left out).
pub(crate) fn keys_of_set(set: &JwkSet) -> Vec<PublicKey> {
    set.keys
        .iter()
        .filter_map(|jwk| {
            let alg = match &jwk.algorithm {
                AlgorithmParameters::RSA(_) => Algorithm::RS256,
                AlgorithmParameters::EllipticCurve(_) => Algorithm::ES256,
                _ => return None,
            };
            let key = DecodingKey::from_jwk(jwk).ok()?;
            Some(PublicKey {
                kid: jwk.common.key_id.clone(),
                alg,
                key,
            })
        })
        .collect()
}

/// Split a file holding several PEM blocks.
fn pem_blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        if line.starts_with("-----BEGIN") {
            cur.clear();
        }
        cur.push_str(line);
        cur.push('\n');
        if line.starts_with("-----END") {
            out.push(std::mem::take(&mut cur));
        }
    }
    out
}
