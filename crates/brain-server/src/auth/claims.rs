//! A token's claims: where the tenant and role are found, the provider's
//! role map, and the bounds on the identities a token may carry.

use std::collections::HashMap;

use anyhow::Context;
use brain_core::model::Role;
use serde::Deserialize;

use super::AuthError;

#[derive(Debug, Deserialize)]
pub(super) struct Claims {
    pub(super) iss: String,
    pub(super) sub: String,
    pub(super) jti: Option<String>,
    pub(super) iat: Option<i64>,
    // Checked by jsonwebtoken; read here only to bound how long a verified
    // token is remembered ([`Verified`]).
    pub(super) exp: Option<f64>,
    pub(super) nbf: Option<f64>,
    /// Every other claim: the tenant and the role are found here where
    /// [`ClaimMapping`] says.
    #[serde(flatten)]
    pub(super) other: serde_json::Map<String, serde_json::Value>,
}

/// The claim `at` names in `claims`: a top-level name (namespaced names hold
/// dots and slashes), else a JSON pointer (`/a/b`), else a dotted path (`a.b`).
pub(super) fn claim_at<'a>(
    claims: &'a serde_json::Map<String, serde_json::Value>,
    at: &str,
) -> Option<&'a serde_json::Value> {
    if let Some(v) = claims.get(at) {
        return Some(v);
    }
    if let Some(pointer) = at.strip_prefix('/') {
        let mut parts = pointer.splitn(2, '/');
        let first = parts.next()?.replace("~1", "/").replace("~0", "~");
        let rest = parts.next().map(|r| format!("/{r}")).unwrap_or_default();
        return claims.get(&first)?.pointer(&rest);
    }
    let mut parts = at.split('.');
    let mut v = claims.get(parts.next()?)?;
    for p in parts {
        v = v.get(p)?;
    }
    Some(v)
}

/// The provider's roles or groups (`name=role,…`) as brain's roles.
#[derive(Debug, Clone, Default)]
pub(super) struct RoleMap(Option<HashMap<String, Role>>);

impl RoleMap {
    pub(super) fn parse(spec: Option<&str>) -> anyhow::Result<Self> {
        let Some(spec) = spec.map(str::trim).filter(|s| !s.is_empty()) else {
            return Ok(Self(None));
        };
        let mut map = HashMap::new();
        for pair in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (from, to) = pair
                .rsplit_once('=')
                .with_context(|| format!("BRAIN_JWT_ROLE_MAP: {pair:?} is not name=role"))?;
            let role = Role::parse(to.trim()).with_context(|| {
                format!("BRAIN_JWT_ROLE_MAP: {to:?} is not agent, operator or relay")
            })?;
            map.insert(from.trim().to_owned(), role);
        }
        Ok(Self(Some(map)))
    }

    /// The role a token's role claim gives. With a map: the highest mapped
    /// value (operator, then relay), `agent` when none is mapped. Without:
    /// the claim names brain's role, or is absent.
    pub(super) fn role(&self, claim: Option<&serde_json::Value>) -> Result<Role, AuthError> {
        let values: Vec<&str> = match claim {
            None | Some(serde_json::Value::Null) => Vec::new(),
            Some(serde_json::Value::String(s)) => vec![s.as_str()],
            Some(serde_json::Value::Array(a)) if self.0.is_some() => {
                a.iter().filter_map(serde_json::Value::as_str).collect()
            }
            Some(_) => return Err(AuthError::Invalid("the role claim is not a string".into())),
        };
        match &self.0 {
            Some(map) => {
                let mapped: Vec<Role> =
                    values.iter().filter_map(|v| map.get(*v)).copied().collect();
                Ok([Role::Operator, Role::Relay]
                    .into_iter()
                    .find(|r| mapped.contains(r))
                    .unwrap_or(Role::Agent))
            }
            None => match values.as_slice() {
                [] => Ok(Role::Agent),
                [one] => Role::parse(one).ok_or_else(|| AuthError::Invalid("unknown role".into())),
                _ => Err(AuthError::Invalid("unknown role".into())),
            },
        }
    }
}

/// Claim limits: identities end up in receipts, logs and database rows, so a
/// token may not carry an unbounded or control-laden one.
pub(super) const MAX_SUB_BYTES: usize = 256;
pub(super) const MAX_ISS_BYTES: usize = 256;
pub(super) const MAX_JTI_BYTES: usize = 128;
/// A bearer token longer than this is refused before it is parsed.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// Clock skew allowed on `exp`, `nbf` and `iat`.
pub(super) const LEEWAY_SECS: i64 = 30;

pub(super) fn claim_ok(value: &str, max: usize) -> bool {
    !value.trim().is_empty()
        && value.len() <= max
        && value.chars().all(brain_core::text::is_identifier_char)
}
