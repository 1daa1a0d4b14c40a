//! Keys from the organization's identity provider (`BRAIN_JWT_JWKS_URL`).
//!
//! Providers rotate their signing keys and publish them as a JWK set. The set
//! is fetched at start, kept, and fetched again when it expires (its
//! `Cache-Control: max-age`, within bounds) or when a token names a key id it
//! does not hold — but at most once per `min_interval` whatever tokens say, so
//! a flood of made-up `kid`s is not a flood of fetches. A provider that does
//! not answer leaves the keys it last gave in force; `/readyz` says so.

use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use anyhow::bail;
use jsonwebtoken::jwk::JwkSet;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::auth::{PublicKey, keys_of_set};

/// How long a set is kept when the provider says nothing of it.
const DEFAULT_MAX_AGE: Duration = Duration::from_secs(300);
/// The longest a set is kept, whatever the provider says.
const LONGEST_MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// The most bytes a provider's answer may hold.
const MAX_SET_BYTES: usize = 256 * 1024;

pub struct Jwks {
    url: String,
    http: reqwest::Client,
    min_interval: Duration,
    keys: RwLock<Arc<Vec<PublicKey>>>,
    state: Mutex<FetchState>,
    /// One fetch at a time; those who wait for it take its keys.
    fetching: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct FetchState {
    /// When a fetch was last tried (the flood bound counts from it).
    tried: Option<Instant>,
    /// When the keys held go stale.
    expires: Option<Instant>,
    fetched_at: Option<chrono::DateTime<chrono::Utc>>,
    last_error: Option<String>,
    fetches: u64,
}

impl Jwks {
    /// Keys at `url`: HTTPS, or HTTP to this machine only (a token's keys
    /// fetched in the clear could be swapped by anyone on the path).
    pub fn new(url: &str, min_interval: Duration) -> anyhow::Result<Self> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| anyhow::anyhow!("BRAIN_JWT_JWKS_URL is not a URL: {e}"))?;
        let local = matches!(
            parsed.host_str(),
            Some("localhost" | "127.0.0.1" | "[::1]" | "::1")
        );
        match parsed.scheme() {
            "https" => {}
            "http" if local => {}
            _ => bail!("BRAIN_JWT_JWKS_URL must be https:// (http:// only for localhost)"),
        }
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self {
            url: url.to_owned(),
            http,
            min_interval,
            keys: RwLock::new(Arc::new(Vec::new())),
            state: Mutex::new(FetchState::default()),
            fetching: tokio::sync::Mutex::new(()),
        })
    }

    /// How many sets have been fetched: a token verified against an older
    /// one is verified again.
    pub fn generation(&self) -> u64 {
        self.state().fetches
    }

    /// The keys held now.
    pub(crate) fn keys(&self) -> Arc<Vec<PublicKey>> {
        self.keys
            .read()
            .map_or_else(|e| e.into_inner().clone(), |k| k.clone())
    }

    fn state(&self) -> std::sync::MutexGuard<'_, FetchState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A token named a key this set does not hold: fetch again if the last
    /// try is at least `min_interval` old (or wait for a fetch under way).
    /// Whether the keys may have changed.
    pub async fn refresh_for_unknown_kid(&self) -> bool {
        let before = self.state().fetches;
        let _turn = self.fetching.lock().await;
        if self.state().fetches != before {
            return true; // fetched while this one waited
        }
        let recent = self
            .state()
            .tried
            .is_some_and(|t| t.elapsed() < self.min_interval);
        if recent {
            metrics::counter!("brain_jwks_fetches_skipped_total").increment(1);
            return false;
        }
        self.fetch().await.is_ok()
    }

    /// Fetch the set now (callers hold `fetching`, or are the only task).
    async fn fetch(&self) -> Result<(), String> {
        self.state().tried = Some(Instant::now());
        metrics::counter!("brain_jwks_fetches_total").increment(1);
        let result = self.fetch_set().await;
        let mut state = self.state();
        match result {
            Ok((keys, max_age)) => {
                if let Ok(mut held) = self.keys.write() {
                    *held = Arc::new(keys);
                }
                state.expires = Some(Instant::now() + max_age);
                state.fetched_at = Some(chrono::Utc::now());
                state.last_error = None;
                state.fetches += 1;
                Ok(())
            }
            Err(e) => {
                tracing::warn!(error = %e, "the identity provider's keys could not be fetched; the keys held stay in force");
                state.last_error = Some(e.clone());
                Err(e)
            }
        }
    }

    async fn fetch_set(&self) -> Result<(Vec<PublicKey>, Duration), String> {
        let resp = self
            .http
            .get(&self.url)
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|e| format!("cannot reach the JWKS URL: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!("the JWKS URL answered {}", resp.status()));
        }
        let max_age = max_age(resp.headers().get(http::header::CACHE_CONTROL))
            .unwrap_or(DEFAULT_MAX_AGE)
            .clamp(self.min_interval, LONGEST_MAX_AGE.max(self.min_interval));
        if resp
            .content_length()
            .is_some_and(|n| n > MAX_SET_BYTES as u64)
        {
            return Err("the JWK set is larger than 256 KiB".into());
        }
        let body = resp
            .bytes()
            .await
            .map_err(|e| format!("cannot read the JWK set: {e}"))?;
        if body.len() > MAX_SET_BYTES {
            return Err("the JWK set is larger than 256 KiB".into());
        }
        let set: JwkSet =
            serde_json::from_slice(&body).map_err(|e| format!("not a JWK set: {e}"))?;
        let keys = keys_of_set(&set);
        if keys.is_empty() {
            return Err("the JWK set holds no RS256 or ES256 key".into());
        }
        Ok((keys, max_age))
    }

    /// Fetch at start (a provider that is down does not stop the server),
    /// then again as each set expires, until `shutdown`.
    pub async fn start(self: &Arc<Self>, shutdown: CancellationToken) {
        {
            let _turn = self.fetching.lock().await;
            let _ = self.fetch().await;
        }
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                let wait = {
                    let s = me.state();
                    match (s.expires, &s.last_error) {
                        (_, Some(_)) | (None, _) => me.min_interval,
                        (Some(at), None) => at.saturating_duration_since(Instant::now()),
                    }
                };
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(wait.max(Duration::from_millis(200))) => {}
                }
                let _turn = me.fetching.lock().await;
                let due = me.state().expires.is_none_or(|at| at <= Instant::now())
                    || me.state().last_error.is_some();
                if due {
                    let _ = me.fetch().await;
                }
            }
        });
    }

    /// For `/readyz`: whether the keys are fresh, and the last error.
    pub fn status(&self) -> Value {
        let s = self.state();
        let stale = s.last_error.is_some() || s.expires.is_none_or(|at| at <= Instant::now());
        json!({
            "status": if s.fetched_at.is_none() { "no keys" } else if stale { "stale" } else { "ok" },
            "keys": self.keys().len(),
            "fetched_at": s.fetched_at.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
            "last_error": s.last_error,
        })
    }
}

/// `max-age` of a `Cache-Control` header (`no-store`/`no-cache`: zero, so the
/// lower bound applies).
fn max_age(header: Option<&http::HeaderValue>) -> Option<Duration> {
    let text = header?.to_str().ok()?;
    let mut out = None;
    for directive in text.split(',').map(str::trim) {
        let lower = directive.to_ascii_lowercase();
        if lower == "no-store" || lower == "no-cache" {
            return Some(Duration::ZERO);
        }
        if let Some(secs) = lower.strip_prefix("max-age=") {
            out = secs
                .trim_matches('"')
                .parse::<u64>()
                .ok()
                .map(Duration::from_secs);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_control_gives_the_max_age() {
        let h = |s: &str| http::HeaderValue::from_str(s).unwrap();
        assert_eq!(
            max_age(Some(&h("public, max-age=600"))),
            Some(Duration::from_secs(600))
        );
        assert_eq!(max_age(Some(&h("no-store"))), Some(Duration::ZERO));
        assert_eq!(max_age(Some(&h("public"))), None);
        assert_eq!(max_age(None), None);
    }

    #[test]
    fn keys_come_over_https_or_from_this_machine() {
        let m = Duration::from_secs(60);
        assert!(Jwks::new("https://idp.example.com/jwks", m).is_ok());
        assert!(Jwks::new("http://localhost:8081/jwks", m).is_ok());
        assert!(Jwks::new("http://127.0.0.1:8081/jwks", m).is_ok());
        assert!(Jwks::new("http://idp.example.com/jwks", m).is_err());
        assert!(Jwks::new("ftp://idp.example.com/jwks", m).is_err());
        assert!(Jwks::new("not a url", m).is_err());
    }
}
