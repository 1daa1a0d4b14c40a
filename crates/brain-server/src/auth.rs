//! Credentials: JWT validation into a typed [`Principal`] (SPEC §1, §4).
//!
//! Algorithms are pinned per key (HS256 for the shared secret; RS256/ES256 for
//! public keys), `exp`, `iss`, `aud` and `sub` are required, `nbf` is checked,
//! and `alg: none` never validates.

use std::sync::Arc;

use anyhow::{Context, bail};
use brain_core::ids::TenantId;
use brain_core::model::{Caller, CredentialKind, Role};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};

use crate::config::JwtConfig;
use crate::jwks::Jwks;

mod claims;
mod keys;
mod verified;

pub use claims::MAX_TOKEN_BYTES;
use claims::{
    Claims, LEEWAY_SECS, MAX_ISS_BYTES, MAX_JTI_BYTES, MAX_SUB_BYTES, RoleMap, claim_at, claim_ok,
};
pub(crate) use keys::keys_of_set;
use keys::load_public_keys;
use verified::{Remembered, Verified};

/// Who is calling, as authenticated by the front door. Inserted into request
/// extensions; tools read it from there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub tenant: TenantId,
    pub kind: CredentialKind,
    pub credential_id: String,
    pub subject: String,
    pub role: Role,
    pub token_id: Option<String>,
    /// Unix seconds after which the credential is no longer taken (a JWT's
    /// `exp` with the leeway); an open event stream ends then.
    pub valid_until: Option<i64>,
}

impl Principal {
    pub fn caller(&self, connection_id: Option<String>) -> Caller {
        self.caller_on(connection_id, None)
    }

    /// The caller on an MCP connection with its tracer session.
    pub fn caller_on(
        &self,
        connection_id: Option<String>,
        tracer_session: Option<brain_core::ids::SessionId>,
    ) -> Caller {
        Caller {
            tracer_session,
            tenant: self.tenant.clone(),
            kind: self.kind,
            credential_id: self.credential_id.clone(),
            subject: self.subject.clone(),
            role: self.role,
            connection_id,
            token_id: self.token_id.clone(),
        }
    }
}

/// The tracer session of the MCP connection a request came on, put in the
/// request's extensions by the connection registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tracer(pub brain_core::ids::SessionId);

pub(crate) struct PublicKey {
    kid: Option<String>,
    alg: Algorithm,
    key: DecodingKey,
}

/// A token that verified: its principal, the Unix seconds between which it
/// is taken (when it names them), and where its key came from.
type Checked = (Principal, Option<(i64, i64)>, Source);

/// Where a token's key came from, which says whose claims it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// brain's own HS256 secret (`brain token mint`): `tenant` and `role`.
    Secret,
    /// The organization's keys (a file, or its provider's JWKS URL): the
    /// claims where [`ClaimMapping`] says.
    Provider,
    /// Keys from `BRAIN_JWT_JWKS_URL`, fetched as of `generation`.
    Jwks { generation: u64 },
}

/// Why a credential was refused. Only logged at debug; the caller sees 401.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("no bearer token")]
    Missing,
    #[error("token rejected: {0}")]
    Invalid(String),
    /// Too many credentials being looked up in the database at once on this
    /// replica: try again (429, not 401: the token may well be good).
    #[error("too many credential lookups at once")]
    Busy,
    /// Signed with a key id the provider's set does not hold (yet).
    #[error("token rejected: no key with this key id")]
    UnknownKey,
}

pub struct Authenticator {
    hs256: Option<DecodingKey>,
    public: Vec<PublicKey>,
    issuer: String,
    audience: String,
    tenant_claim: String,
    role_claim: String,
    roles: RoleMap,
    jwks: Option<Arc<Jwks>>,
    jwks_issuer: String,
    jwks_audience: String,
    verified: Verified,
}

impl Authenticator {
    pub fn from_config(cfg: &JwtConfig) -> anyhow::Result<Self> {
        let hs256 = match &cfg.hs256_secret {
            Some(s) if s.expose().len() < 32 => {
                bail!("BRAIN_JWT_HS256_SECRET must be at least 32 bytes")
            }
            Some(s) => Some(
                DecodingKey::from_secret(s.expose().as_bytes()).context("invalid HS256 secret")?,
            ),
            None => None,
        };
        let public = match &cfg.public_keys {
            Some(path) => load_public_keys(path)?,
            None => Vec::new(),
        };
        Ok(Self {
            hs256,
            public,
            issuer: cfg.issuer.clone(),
            audience: cfg.audience.clone(),
            jwks: match &cfg.jwks.jwks_url {
                Some(url) => Some(Arc::new(Jwks::new(
                    url,
                    std::time::Duration::from_secs(cfg.jwks.jwks_min_refresh_secs.max(1)),
                )?)),
                None => None,
            },
            jwks_issuer: cfg
                .jwks
                .jwks_issuer
                .clone()
                .unwrap_or_else(|| cfg.issuer.clone()),
            jwks_audience: cfg
                .jwks
                .jwks_audience
                .clone()
                .unwrap_or_else(|| cfg.audience.clone()),
            tenant_claim: cfg.claims.tenant_claim.clone(),
            role_claim: cfg.claims.role_claim.clone(),
            roles: RoleMap::parse(cfg.claims.role_map.as_deref())?,
            verified: Verified::default(),
        })
    }

    /// The required `iss`, advertised as the authorization server in resource metadata.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Whether any key is configured; `brain serve` refuses to start without one.
    pub fn is_configured(&self) -> bool {
        self.hs256.is_some() || !self.public.is_empty() || self.jwks.is_some()
    }

    /// The issuers whose tokens are taken (resource metadata's authorization servers).
    pub fn issuers(&self) -> Vec<String> {
        let mut out = vec![self.issuer.clone()];
        if self.jwks.is_some() && self.jwks_issuer != self.issuer {
            out.push(self.jwks_issuer.clone());
        }
        out
    }

    /// The provider's key set, when `BRAIN_JWT_JWKS_URL` names one.
    pub fn jwks(&self) -> Option<&Arc<Jwks>> {
        self.jwks.as_ref()
    }

    /// Fetch the provider's keys and keep them fresh until `shutdown` (no-op
    /// without `BRAIN_JWT_JWKS_URL`).
    pub async fn start(&self, shutdown: tokio_util::sync::CancellationToken) {
        if let Some(jwks) = &self.jwks {
            jwks.start(shutdown).await;
        }
    }

    fn validation(&self, alg: Algorithm, source: Source) -> Validation {
        let (issuer, audience) = match source {
            Source::Jwks { .. } => (&self.jwks_issuer, &self.jwks_audience),
            Source::Secret | Source::Provider => (&self.issuer, &self.audience),
        };
        let mut v = Validation::new(alg);
        v.algorithms = vec![alg];
        v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        v.set_issuer(&[issuer]);
        v.set_audience(&[audience]);
        v.validate_exp = true;
        v.validate_nbf = true;
        v.leeway = LEEWAY_SECS.unsigned_abs();
        v
    }

    pub async fn authenticate(&self, token: &str) -> Result<Principal, AuthError> {
        match self.authenticate_now(token) {
            // A key the provider's set does not hold yet (it rotated): fetch
            // the set again, within its flood bound, and try once more.
            Err(AuthError::UnknownKey) => match &self.jwks {
                Some(jwks) if jwks.refresh_for_unknown_kid().await => self.authenticate_now(token),
                _ => Err(AuthError::UnknownKey),
            },
            other => other,
        }
    }

    fn jwks_generation(&self) -> u64 {
        self.jwks.as_ref().map_or(0, |j| j.generation())
    }

    fn authenticate_now(&self, token: &str) -> Result<Principal, AuthError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(AuthError::Invalid("token too long".into()));
        }
        let now = chrono::Utc::now().timestamp();
        let key = Verified::key(token);
        if let Some(principal) = self.verified.get(&key, now, self.jwks_generation()) {
            return Ok(principal);
        }
        let (principal, window, source) = self.verify(token)?;
        if let Some((from, until)) = window {
            self.verified.put(
                key,
                Remembered {
                    principal: principal.clone(),
                    jwks_generation: match source {
                        Source::Jwks { generation } => Some(generation),
                        Source::Secret | Source::Provider => None,
                    },
                    from,
                    until,
                },
                now,
            );
        }
        Ok(principal)
    }

    /// The key that checks a token of `header`, and where it came from.
    fn key_for(&self, header: &jsonwebtoken::Header) -> Result<(DecodingKey, Source), AuthError> {
        let matches = |k: &&PublicKey| {
            k.alg == header.alg && (header.kid.is_none() || k.kid.is_none() || k.kid == header.kid)
        };
        match header.alg {
            Algorithm::HS256 => {
                if let Some(k) = &self.hs256 {
                    return Ok((k.clone(), Source::Secret));
                }
            }
            Algorithm::RS256 | Algorithm::ES256 => {
                if let Some(k) = self.public.iter().find(matches) {
                    return Ok((k.key.clone(), Source::Provider));
                }
                if let Some(jwks) = &self.jwks {
                    let generation = jwks.generation();
                    let keys = jwks.keys();
                    if let Some(k) = keys.iter().find(matches) {
                        return Ok((k.key.clone(), Source::Jwks { generation }));
                    }
                    return Err(AuthError::UnknownKey);
                }
            }
            _ => {}
        }
        Err(AuthError::Invalid(format!(
            "no key for algorithm {:?}",
            header.alg
        )))
    }

    /// Check the token's signature and claims: its principal, and the Unix
    /// seconds between which jsonwebtoken takes it (`nbf` and `exp` with the
    /// leeway), when it names them.
    fn verify(&self, token: &str) -> Result<Checked, AuthError> {
        let invalid = |e: &dyn std::fmt::Display| AuthError::Invalid(e.to_string());
        let header = decode_header(token).map_err(|e| invalid(&e))?;
        let (key, source) = self.key_for(&header)?;
        let data = decode::<Claims>(token, &key, &self.validation(header.alg, source))
            .map_err(|e| invalid(&e))?;
        let c = data.claims;
        if !claim_ok(&c.sub, MAX_SUB_BYTES) {
            return Err(AuthError::Invalid(
                "sub is empty, too long or holds controls".into(),
            ));
        }
        if !claim_ok(&c.iss, MAX_ISS_BYTES) {
            return Err(AuthError::Invalid(
                "iss is too long or holds controls".into(),
            ));
        }
        if c.jti
            .as_deref()
            .is_some_and(|j| !claim_ok(j, MAX_JTI_BYTES))
        {
            return Err(AuthError::Invalid(
                "jti is too long or holds controls".into(),
            ));
        }
        // A token issued in the future is a forged or mis-clocked one.
        if c.iat
            .is_some_and(|iat| iat > chrono::Utc::now().timestamp() + LEEWAY_SECS)
        {
            return Err(AuthError::Invalid("iat is in the future".into()));
        }
        // brain's own tokens carry `tenant` and `role`; the organization's
        // carry them where it says.
        let (tenant_claim, role_claim, roles) = match source {
            Source::Secret => ("tenant", "role", &RoleMap::default()),
            Source::Provider | Source::Jwks { .. } => (
                self.tenant_claim.as_str(),
                self.role_claim.as_str(),
                &self.roles,
            ),
        };
        let tenant = match claim_at(&c.other, tenant_claim) {
            Some(serde_json::Value::String(t)) => TenantId::parse(t).map_err(|e| invalid(&e))?,
            Some(serde_json::Value::Number(n)) if n.is_u64() || n.is_i64() => {
                TenantId::parse(&n.to_string()).map_err(|e| invalid(&e))?
            }
            Some(_) => {
                return Err(AuthError::Invalid(
                    "the tenant claim is not a string".into(),
                ));
            }
            None => return Err(AuthError::Invalid("no tenant claim".into())),
        };
        let role = roles.role(claim_at(&c.other, role_claim))?;
        // jsonwebtoken refuses when exp < now - leeway or nbf > now + leeway
        // (whole seconds); rounding exp down and nbf up keeps inside that.
        let window = c.exp.filter(|e| e.is_finite()).map(|exp| {
            let from = c
                .nbf
                .filter(|n| n.is_finite())
                .map_or(i64::MIN, |n| (n.ceil() as i64).saturating_sub(LEEWAY_SECS));
            (from, (exp.floor() as i64).saturating_add(LEEWAY_SECS))
        });
        let principal = Principal {
            tenant,
            kind: CredentialKind::Jwt,
            credential_id: format!("{}|{}", c.iss, c.sub),
            subject: c.sub,
            role,
            token_id: c.jti,
            valid_until: window.map(|(_, until)| until),
        };
        Ok((principal, window, source))
    }
}

/// Extract the bearer token from an `Authorization` header value.
pub fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::verified::MAX_VERIFIED;
    use super::*;
    use crate::config::Secret;

    fn authenticator() -> Authenticator {
        Authenticator::from_config(&JwtConfig {
            hs256_secret: Some(Secret::new("unit-secret-unit-secret-unit-secret-0123")),
            public_keys: None,
            issuer: "brain".into(),
            audience: "brain".into(),
            claims: Default::default(),
            jwks: Default::default(),
        })
        .unwrap()
    }

    fn signed(claims: serde_json::Value) -> String {
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(Algorithm::HS256),
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(b"unit-secret-unit-secret-unit-secret-0123")
                .unwrap(),
        )
        .unwrap()
    }

    fn claims(sub: &str, exp: i64, nbf: i64) -> serde_json::Value {
        serde_json::json!({"iss": "brain", "aud": "brain", "sub": sub, "tenant": "acme",
                           "exp": exp, "nbf": nbf})
    }

    /// A verified token is remembered for its own nbf..exp window (with the
    /// leeway jsonwebtoken allows) and no longer: an entry past it answers
    /// nothing, and the token is checked again, and refused once expired.
    #[test]
    fn verified_tokens_are_remembered_only_inside_their_window() {
        let auth = authenticator();
        let now = chrono::Utc::now().timestamp();
        let token = signed(claims("agent-1", now + 600, now - 5));
        let first = auth.authenticate_now(&token).unwrap();
        let key = Verified::key(&token);
        {
            let map = auth.verified.lock();
            let r = map.get(&key).expect("remembered after it verified");
            assert_eq!(
                (r.from, r.until),
                (now - 5 - LEEWAY_SECS, now + 600 + LEEWAY_SECS)
            );
        }
        assert_eq!(auth.verified.get(&key, now, 0), Some(first.clone()));
        assert_eq!(auth.authenticate_now(&token).unwrap(), first);
        // Inside the window the memory answers, not a new verification.
        auth.verified
            .lock()
            .get_mut(&key)
            .unwrap()
            .principal
            .subject = "remembered".into();
        assert_eq!(auth.authenticate_now(&token).unwrap().subject, "remembered");
        // Past it the token is verified again and remembered afresh.
        auth.verified.lock().get_mut(&key).unwrap().until = now - 1;
        assert_eq!(auth.authenticate_now(&token).unwrap(), first);
        assert_eq!(
            auth.verified.lock().get(&key).map(|r| r.until),
            Some(now + 600 + LEEWAY_SECS)
        );
        assert_eq!(
            auth.verified.get(&key, now + 600 + LEEWAY_SECS + 1, 0),
            None
        );
        assert_eq!(auth.verified.get(&key, now - 5 - LEEWAY_SECS - 1, 0), None);

        // Expired beyond the leeway: never remembered, refused every time.
        let old = signed(claims("agent-2", now - LEEWAY_SECS - 5, now - 600));
        assert!(auth.authenticate_now(&old).is_err());
        assert!(auth.authenticate_now(&old).is_err());
        assert!(auth.verified.lock().get(&Verified::key(&old)).is_none());
    }

    /// Only a token whose signature verified is remembered: the same claims
    /// under another key, or a remembered token with one byte changed, are
    /// refused and leave nothing behind.
    #[test]
    fn only_verified_tokens_are_remembered() {
        let auth = authenticator();
        let now = chrono::Utc::now().timestamp();
        let good = signed(claims("agent-1", now + 600, now));
        auth.authenticate_now(&good).unwrap();
        let forged = jsonwebtoken::encode(
            &jsonwebtoken::Header::new(Algorithm::HS256),
            &claims("agent-1", now + 600, now),
            &jsonwebtoken::EncodingKey::from_secret(b"another-secret-another-secret-0123456")
                .unwrap(),
        )
        .unwrap();
        assert!(auth.authenticate_now(&forged).is_err());
        let mut tampered = good.clone().into_bytes();
        // A byte inside the signature (the last one holds padding bits).
        let i = tampered.len() - 10;
        tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        assert!(auth.authenticate_now(&tampered).is_err());
        assert_eq!(auth.verified.lock().len(), 1);
    }

    /// The memory stays bounded however many valid tokens a client presents.
    #[test]
    fn remembered_tokens_are_bounded() {
        let auth = authenticator();
        let now = chrono::Utc::now().timestamp();
        for i in 0..(MAX_VERIFIED + 10) {
            auth.authenticate_now(&signed(claims(&format!("agent-{i}"), now + 600, now)))
                .unwrap();
            assert!(auth.verified.lock().len() <= MAX_VERIFIED);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2_000))]

        /// Arbitrary bearer strings (and dotted three-part ones) never panic
        /// the JWT path and never authenticate.
        #[test]
        fn arbitrary_tokens_are_refused(raw in "\\PC{0,300}", a in "[A-Za-z0-9_-]{0,40}", b in "[A-Za-z0-9_-]{0,80}", c in "[A-Za-z0-9_-]{0,40}") {
            let auth = authenticator();
            proptest::prop_assert!(auth.authenticate_now(&raw).is_err());
            let dotted = format!("{a}.{b}.{c}");
            proptest::prop_assert!(auth.authenticate_now(&dotted).is_err());
            let _ = bearer(&raw);
        }
    }

    fn fixture(name: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../brain-testkit/fixtures")
            .join(name)
    }

    /// An authenticator taking the organization's RS256 key (the test
    /// fixture's) with this claim mapping, and brain's own HS256 secret.
    fn mapped(tenant_claim: &str, role_claim: &str, role_map: Option<&str>) -> Authenticator {
        Authenticator::from_config(&JwtConfig {
            hs256_secret: Some(Secret::new("unit-secret-unit-secret-unit-secret-0123")),
            public_keys: Some(fixture("rsa_public.pem")),
            issuer: "brain".into(),
            audience: "brain".into(),
            claims: crate::config::ClaimMapping {
                tenant_claim: tenant_claim.into(),
                role_claim: role_claim.into(),
                role_map: role_map.map(str::to_owned),
            },
            jwks: Default::default(),
        })
        .unwrap()
    }

    /// A token of an identity provider: the standard claims and `extra`.
    fn provider_token(extra: serde_json::Value) -> String {
        let now = chrono::Utc::now().timestamp();
        let mut c =
            serde_json::json!({"iss": "brain", "aud": "brain", "sub": "u1", "exp": now + 600});
        if let (Some(m), serde_json::Value::Object(e)) = (c.as_object_mut(), extra) {
            m.extend(e);
        }
        let pem = std::fs::read(fixture("rsa_private.pem")).unwrap();
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(Algorithm::RS256),
            &c,
            &jsonwebtoken::EncodingKey::from_rsa_pem(&pem).unwrap(),
        )
        .unwrap()
    }

    /// brain's own tokens (HS256, `brain token mint`) carry `tenant` and
    /// `role` whatever the mapping for the organization's tokens says.
    #[test]
    fn brains_own_tokens_keep_their_claims_under_a_mapping() {
        let auth = mapped("org.id", "groups", Some("admins=operator"));
        let now = chrono::Utc::now().timestamp();
        let own = signed(
            serde_json::json!({"iss": "brain", "aud": "brain", "sub": "ci",
            "exp": now + 600, "tenant": "acme", "role": "relay"}),
        );
        let p = auth.authenticate_now(&own).unwrap();
        assert_eq!((p.tenant.as_str(), p.role), ("acme", Role::Relay));
        // An own token cannot borrow the provider's mapping to become operator.
        let forged = signed(
            serde_json::json!({"iss": "brain", "aud": "brain", "sub": "ci",
            "exp": now + 600, "tenant": "acme", "groups": ["admins"]}),
        );
        assert_eq!(auth.authenticate_now(&forged).unwrap().role, Role::Agent);
    }

    #[test]
    fn the_tenant_is_found_where_the_provider_puts_it() {
        let ns = "https://example.com/claims/tenant";
        let cases = [
            (ns, serde_json::json!({ns: "acme"})),
            ("org.id", serde_json::json!({"org": {"id": "acme"}})),
            ("/org/id", serde_json::json!({"org": {"id": "acme"}})),
            ("org.id", serde_json::json!({"org": {"id": 4711}})),
        ];
        for (at, extra) in cases {
            let p = mapped(at, "role", None).authenticate_now(&provider_token(extra.clone()));
            let p = p.unwrap_or_else(|e| panic!("{at} in {extra}: {e}"));
            assert!(["acme", "4711"].contains(&p.tenant.as_str()), "{at}");
            assert_eq!(p.role, Role::Agent);
        }
        // Missing, or not a string: refused.
        let auth = mapped("org.id", "role", None);
        for extra in [
            serde_json::json!({"tenant": "acme"}),
            serde_json::json!({"org": {"id": {"deep": "acme"}}}),
            serde_json::json!({"org": {"id": "bad tenant!"}}),
        ] {
            assert!(auth.authenticate_now(&provider_token(extra)).is_err());
        }
    }

    #[test]
    fn the_providers_roles_map_to_brains_and_never_default_to_operator() {
        let auth = mapped(
            "tenant",
            "groups",
            Some("brain-admins=operator, ci-robots=relay"),
        );
        let role = |groups: serde_json::Value| {
            auth.authenticate_now(&provider_token(
                serde_json::json!({"tenant": "acme", "groups": groups}),
            ))
            .map(|p| p.role)
        };
        assert_eq!(
            role(serde_json::json!(["staff", "brain-admins"])).unwrap(),
            Role::Operator
        );
        assert_eq!(
            role(serde_json::json!(["ci-robots", "brain-admins"])).unwrap(),
            Role::Operator
        );
        assert_eq!(role(serde_json::json!("ci-robots")).unwrap(), Role::Relay);
        // Unmapped, empty, absent, or naming brain's role itself: agent.
        for g in [
            serde_json::json!(["staff"]),
            serde_json::json!([]),
            serde_json::Value::Null,
            serde_json::json!("operator"),
        ] {
            assert_eq!(role(g.clone()).unwrap(), Role::Agent, "{g}");
        }
        assert!(role(serde_json::json!({"not": "a list"})).is_err());
        // Without a map, the claim names brain's role or is refused.
        let plain = mapped("tenant", "role", None);
        let with = |r: serde_json::Value| {
            plain.authenticate_now(&provider_token(
                serde_json::json!({"tenant": "acme", "role": r}),
            ))
        };
        assert_eq!(
            with(serde_json::json!("operator")).unwrap().role,
            Role::Operator
        );
        assert!(with(serde_json::json!("admin")).is_err());
        assert!(with(serde_json::json!(["operator"])).is_err());
        // A map that names no role of brain's is a configuration error.
        assert!(RoleMap::parse(Some("admins=root")).is_err());
        assert!(RoleMap::parse(Some("admins")).is_err());
    }
}
