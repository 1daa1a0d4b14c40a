//! `brain token mint`: a development HS256 JWT with the claims brain reads.

use anyhow::{Context, bail};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::json;

use brain_core::ids::TenantId;
use brain_core::model::Role;

pub struct MintRequest<'a> {
    pub secret: &'a str,
    pub issuer: &'a str,
    pub audience: &'a str,
    pub tenant: &'a str,
    pub subject: &'a str,
    pub role: &'a str,
    pub ttl_secs: u64,
}

pub fn mint(r: &MintRequest<'_>) -> anyhow::Result<String> {
    TenantId::parse(r.tenant).map_err(|e| anyhow::anyhow!("--tenant: {}", e.message))?;
    if Role::parse(r.role).is_none() {
        bail!("--role must be agent, operator or relay");
    }
    if r.subject.trim().is_empty() {
        bail!("--sub must not be blank");
    }
    let now = chrono::Utc::now().timestamp();
    let claims = json!({
        "iss": r.issuer,
        "aud": r.audience,
        "sub": r.subject,
        "tenant": r.tenant,
        "role": r.role,
        "iat": now,
        "nbf": now,
        "exp": now + i64::try_from(r.ttl_secs).unwrap_or(i64::MAX / 2),
        "jti": uuid::Uuid::new_v4().simple().to_string(),
    });
    let key = EncodingKey::from_secret(r.secret.as_bytes()).context("invalid HS256 secret")?;
    encode(&Header::new(Algorithm::HS256), &claims, &key).context("cannot sign the token")
}
