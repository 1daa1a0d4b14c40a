//! Black-box: tokens from an organization's identity provider, whose keys
//! come from its JWKS URL and rotate, beside brain's own HS256 tokens for
//! robots, each with its issuer and audience (both stores).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::response::IntoResponse;
use brain_server::config::{ClaimMapping, JwksConfig};
use brain_testkit::app::{TestApp, fixture, jwt_config, spawn_app_with, token_with};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

const IDP: &str = "https://idp.example.com/";
const IDP_AUDIENCE: &str = "brain-api";
const TENANT_CLAIM: &str = "https://example.com/claims/tenant";

/// The provider: the keys it publishes, whether it is up, and how often it
/// was asked.
#[derive(Clone, Default)]
struct Provider {
    published: Arc<Mutex<Vec<Jwk>>>,
    down: Arc<std::sync::atomic::AtomicBool>,
    fetches: Arc<AtomicU64>,
}

async fn jwks(State(p): State<Provider>) -> axum::response::Response {
    p.fetches.fetch_add(1, Ordering::SeqCst);
    if p.down.load(Ordering::SeqCst) {
        return (http::StatusCode::SERVICE_UNAVAILABLE, "down").into_response();
    }
    let set = JwkSet {
        keys: p.published.lock().unwrap().clone(),
    };
    (
        [(http::header::CACHE_CONTROL, "public, max-age=1")],
        axum::Json(set),
    )
        .into_response()
}

struct Key {
    kid: &'static str,
    alg: Algorithm,
    encoding: EncodingKey,
}

impl Key {
    fn rsa(kid: &'static str) -> Self {
        let pem = std::fs::read(fixture("rsa_private.pem")).unwrap();
        Self {
            kid,
            alg: Algorithm::RS256,
            encoding: EncodingKey::from_rsa_pem(&pem).unwrap(),
        }
    }

    fn ec(kid: &'static str) -> Self {
        let pem = std::fs::read(fixture("ec_private_pk8.pem")).unwrap();
        Self {
            kid,
            alg: Algorithm::ES256,
            encoding: EncodingKey::from_ec_pem(&pem).unwrap(),
        }
    }

    fn jwk(&self) -> Jwk {
        let mut jwk = Jwk::from_encoding_key(&self.encoding, self.alg).unwrap();
        jwk.common.key_id = Some(self.kid.to_owned());
        jwk
    }

    /// A provider token signed with this key, naming `kid`.
    fn sign_as(&self, kid: &str, claims: Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, &claims, &self.encoding).unwrap()
    }

    fn sign(&self, claims: Value) -> String {
        self.sign_as(self.kid, claims)
    }
}

fn person(groups: Value) -> Value {
    let now = chrono::Utc::now().timestamp();
    json!({"iss": IDP, "aud": IDP_AUDIENCE, "sub": "person-1", "exp": now + 600,
           TENANT_CLAIM: "acme", "groups": groups})
}

async fn provider_and_app() -> (Provider, TestApp) {
    let provider = Provider::default();
    let router = axum::Router::new()
        .route("/jwks", axum::routing::get(jwks))
        .with_state(provider.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/jwks",
        listener.local_addr().unwrap().port()
    );
    tokio::spawn(async move { axum::serve(listener, router).await });
    *provider.published.lock().unwrap() = vec![Key::rsa("k1").jwk()];
    let mut jwt = jwt_config();
    jwt.jwks = JwksConfig {
        jwks_url: Some(url),
        jwks_issuer: Some(IDP.into()),
        jwks_audience: Some(IDP_AUDIENCE.into()),
        jwks_min_refresh_secs: 1,
    };
    jwt.claims = ClaimMapping {
        tenant_claim: TENANT_CLAIM.into(),
        role_claim: "groups".into(),
        role_map: Some("brain-ops=operator".into()),
    };
    let app = spawn_app_with(jwt).await;
    (provider, app)
}

/// The status an `initialize` with `token` gets.
async fn status(app: &TestApp, token: &str) -> u16 {
    reqwest::Client::new()
        .post(app.mcp_url())
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "idp", "version": "0"}}}),
        )
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Wait (at most 10 s) until `token` gets `want`.
async fn until_status(app: &TestApp, token: &str, want: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = status(app, token).await;
        if got == want {
            return;
        }
        assert!(Instant::now() < deadline, "still {got}, waiting for {want}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotated_keys_verify_and_retired_ones_stop() {
    let (provider, app) = provider_and_app().await;
    let (k1, k2) = (Key::rsa("k1"), Key::ec("k2"));
    let old = k1.sign(person(json!(["staff"])));
    assert_eq!(status(&app, &old).await, 200);
    // The provider adds k2: a token naming it makes brain fetch the set again.
    *provider.published.lock().unwrap() = vec![k1.jwk(), k2.jwk()];
    let new = k2.sign(person(json!(["staff"])));
    until_status(&app, &new, 200).await;
    assert_eq!(status(&app, &old).await, 200, "k1 is still published");
    // k1 leaves the set: its tokens stop once brain has the new set, though
    // brain remembered this one as verified.
    *provider.published.lock().unwrap() = vec![k2.jwk()];
    until_status(&app, &old, 401).await;
    assert_eq!(status(&app, &new).await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn made_up_key_ids_do_not_become_a_flood_of_fetches() {
    let (provider, app) = provider_and_app().await;
    let k1 = Key::rsa("k1");
    let before = provider.fetches.load(Ordering::SeqCst);
    let started = Instant::now();
    let mut refused = 0;
    for i in 0..60 {
        let t = k1.sign_as(&format!("made-up-{i}"), person(json!([])));
        if status(&app, &t).await == 401 {
            refused += 1;
        }
    }
    let fetched = provider.fetches.load(Ordering::SeqCst) - before;
    let secs = started.elapsed().as_secs();
    assert_eq!(refused, 60);
    // At most one fetch per second (the minimum interval), plus the
    // refresher's own as each set expires: never one per token.
    assert!(
        fetched <= 2 * (secs + 1),
        "{fetched} fetches in {secs} s for 60 tokens"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_outage_keeps_the_keys_held_and_readyz_says_so() {
    let (provider, app) = provider_and_app().await;
    let t = Key::rsa("k1").sign(person(json!([])));
    assert_eq!(status(&app, &t).await, 200);
    provider.down.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(10);
    let ready = loop {
        let r: Value = reqwest::get(app.url("/readyz"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        // The keys also read stale once their max-age passes, before the
        // refresh that fails has recorded its error: wait for both.
        if r["jwks"]["status"] == "stale" && r["jwks"]["last_error"].is_string() {
            break r;
        }
        assert!(
            Instant::now() < deadline,
            "readyz never said the keys were stale: {r}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(ready["status"], "ready");
    assert!(
        ready["jwks"]["last_error"]
            .as_str()
            .unwrap()
            .contains("503"),
        "{ready}"
    );
    // Tokens of the keys held keep working while the provider is down.
    let fresh = Key::rsa("k1").sign(person(json!(["brain-ops"])));
    assert_eq!(status(&app, &fresh).await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_issuer_has_its_audience_and_claims() {
    let (_provider, app) = provider_and_app().await;
    let k1 = Key::rsa("k1");
    // brain's own robots: HS256, brain's issuer and audience, `tenant`.
    let robot = token_with(json!({"tenant": "acme", "sub": "ci", "role": "relay"}));
    assert_eq!(status(&app, &robot).await, 200);
    // An issuer with the other's audience, or the other's issuer: refused.
    let now = chrono::Utc::now().timestamp();
    let mut wrong_aud = person(json!([]));
    wrong_aud["aud"] = json!("brain");
    assert_eq!(status(&app, &k1.sign(wrong_aud)).await, 401);
    let hs_as_idp =
        token_with(json!({"tenant": "acme", "sub": "ci", "iss": IDP, "aud": IDP_AUDIENCE}));
    assert_eq!(status(&app, &hs_as_idp).await, 401);
    // The provider's tokens: the tenant where the mapping says, or refused.
    let no_tenant = k1.sign(
        json!({"iss": IDP, "aud": IDP_AUDIENCE, "sub": "p", "exp": now + 600,
        "tenant": "acme"}),
    );
    assert_eq!(status(&app, &no_tenant).await, 401);
    // Groups mapped to operator make an operator; others an agent.
    let admin = |token: &str| {
        let url = app.url("/brain-admin/elevations");
        let token = token.to_owned();
        async move {
            reqwest::Client::new()
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(
        admin(&k1.sign(person(json!(["staff", "brain-ops"])))).await,
        200
    );
    assert_eq!(admin(&k1.sign(person(json!(["staff"])))).await, 403);
    assert_eq!(
        admin(&k1.sign(person(json!("operator")))).await,
        403,
        "unmapped is never operator"
    );
}
