//! Black-box: the HTTP front door (SPEC §4) — authentication and the JWT attack
//! matrix, connection binding, Host/Origin, body limit, metadata and health.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_server::config::JwtConfig;
use brain_testkit::app::{
    TestApp, count_rows, fixture, jwt_config, ok, spawn_app, spawn_app_with, token, token_signed,
    token_with,
};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use reqwest::StatusCode;
use serde_json::{Value, json};

const ACCEPT: &str = "application/json, text/event-stream";

fn initialize_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
}

fn post(app: &TestApp, token: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
    let mut r = reqwest::Client::new()
        .post(app.mcp_url())
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .json(body);
    if let Some(t) = token {
        r = r.bearer_auth(t);
    }
    r
}

/// A raw initialize; returns the connection id.
async fn connect(app: &TestApp, token: &str) -> String {
    let resp = post(app, Some(token), &initialize_body())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let id = resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let _ = resp.text().await;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let resp = post(app, Some(token), &note)
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    id
}

fn tools_list() -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
}

async fn with_connection(
    app: &TestApp,
    method: reqwest::Method,
    token: &str,
    id: &str,
) -> StatusCode {
    let mut r = reqwest::Client::new()
        .request(method.clone(), app.mcp_url())
        .bearer_auth(token)
        .header("accept", ACCEPT)
        .header("mcp-session-id", id)
        .header("mcp-protocol-version", "2025-11-25");
    if method == reqwest::Method::POST {
        r = r
            .header("content-type", "application/json")
            .json(&tools_list());
    }
    let resp = r.send().await.unwrap();
    resp.status()
}

fn alg_none(claims: &Value) -> String {
    use base64_url::encode as b64;
    format!(
        "{}.{}.",
        b64(&serde_json::to_vec(&json!({"alg": "none", "typ": "JWT"})).unwrap()),
        b64(&serde_json::to_vec(claims).unwrap())
    )
}

mod base64_url {
    /// Unpadded base64url, enough to forge `alg: none` tokens.
    pub fn encode(bytes: &[u8]) -> String {
        const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            let chars = chunk.len() + 1;
            for i in 0..chars {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            }
        }
        out
    }
}

#[tokio::test]
async fn missing_token_is_401_with_a_resource_metadata_challenge() {
    let app = spawn_app().await;
    let resp = post(&app, None, &initialize_body()).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let challenge = resp.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        challenge,
        format!(
            "Bearer resource_metadata=\"http://{}/.well-known/oauth-protected-resource/mcp\"",
            app.addr
        )
    );
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], json!("unauthenticated"));
}

#[tokio::test]
async fn jwt_attack_matrix_is_refused_and_nothing_is_done() {
    let app = spawn_app().await;
    let now = chrono::Utc::now().timestamp();
    let base = json!({"iss": "brain", "aud": "brain", "sub": "mallory", "tenant": "acme",
                      "exp": now + 3600, "iat": now});
    let cases: Vec<(&str, String)> = vec![
        ("alg none", alg_none(&base)),
        (
            "wrong key",
            token_signed(json!({}), "another-secret-another-secret-another-secret"),
        ),
        (
            "expired",
            token_with(json!({"exp": now - 3600, "iat": now - 7200, "nbf": now - 7200})),
        ),
        ("not yet valid", token_with(json!({"nbf": now + 3600}))),
        ("wrong aud", token_with(json!({"aud": "someone-else"}))),
        ("no aud", token_with(json!({"aud": null}))),
        ("wrong iss", token_with(json!({"iss": "evil"}))),
        ("no iss", token_with(json!({"iss": null}))),
        ("no sub", token_with(json!({"sub": null}))),
        ("no exp", token_with(json!({"exp": null}))),
        ("no tenant", token_with(json!({"tenant": null}))),
        ("bad tenant", token_with(json!({"tenant": "a b"}))),
        ("unknown role", token_with(json!({"role": "root"}))),
        ("garbage", "not.a.jwt".to_owned()),
    ];
    for (name, t) in &cases {
        let resp = post(&app, Some(t), &initialize_body())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "{name}");
        let challenge = resp.headers()["www-authenticate"].to_str().unwrap();
        assert!(
            challenge.contains("error=\"invalid_token\""),
            "{name}: {challenge}"
        );
    }
    assert_eq!(count_rows(&app, "mcp_connections").await, 0);
    assert_eq!(count_rows(&app, "receipts").await, 0);
    assert_eq!(count_rows(&app, "tenants").await, 0);
    // The control: a good token is accepted.
    let resp = post(&app, Some(&token("acme", "alice")), &initialize_body())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test]
async fn public_keys_validate_rs256_and_es256_and_refuse_hs_rs_confusion() {
    let mut jwt: JwtConfig = jwt_config();
    jwt.hs256_secret = None;
    jwt.public_keys = Some(fixture("public_keys.pem"));
    let app = spawn_app_with(jwt).await;
    let now = chrono::Utc::now().timestamp();
    let claims = json!({"iss": "brain", "aud": "brain", "sub": "svc", "tenant": "acme",
                        "exp": now + 600, "iat": now});
    let rsa = std::fs::read(fixture("rsa_private.pem")).unwrap();
    let rs256 = encode(
        &Header::new(Algorithm::RS256),
        &claims,
        &EncodingKey::from_rsa_pem(&rsa).unwrap(),
    )
    .unwrap();
    let ec = std::fs::read(fixture("ec_private_pk8.pem")).unwrap();
    let es256 = encode(
        &Header::new(Algorithm::ES256),
        &claims,
        &EncodingKey::from_ec_pem(&ec).unwrap(),
    )
    .unwrap();
    for t in [&rs256, &es256] {
        let resp = post(&app, Some(t), &initialize_body())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
    }
    // HS256 signed with the public key's PEM as the HMAC secret: the classic confusion.
    let public_pem = std::fs::read(fixture("rsa_public.pem")).unwrap();
    let confused = encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(&public_pem).unwrap(),
    )
    .unwrap();
    let resp = post(&app, Some(&confused), &initialize_body())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    // RS256 header over an ES256 signature is refused too.
    let mut parts: Vec<&str> = es256.split('.').collect();
    let header = base64_url::encode(br#"{"alg":"RS256","typ":"JWT"}"#);
    parts[0] = &header;
    let resp = post(&app, Some(&parts.join(".")), &initialize_body())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_connection_belongs_to_the_credential_that_opened_it() {
    let app = spawn_app().await;
    let alice = token("acme", "alice");
    let bob = token("acme", "bob");
    let eve = token("globex", "alice");
    let id = connect(&app, &alice).await;
    assert_eq!(
        with_connection(&app, reqwest::Method::POST, &alice, &id).await,
        StatusCode::OK
    );
    for other in [&bob, &eve] {
        for m in [
            reqwest::Method::POST,
            reqwest::Method::GET,
            reqwest::Method::DELETE,
        ] {
            assert_eq!(
                with_connection(&app, m.clone(), other, &id).await,
                StatusCode::NOT_FOUND,
                "{m}"
            );
        }
    }
    // The owner's connection is untouched by those attempts.
    assert_eq!(
        with_connection(&app, reqwest::Method::POST, &alice, &id).await,
        StatusCode::OK
    );
    // A refreshed token for the same iss+sub keeps the connection.
    let refreshed = token_with(json!({"tenant": "acme", "sub": "alice"}));
    assert_eq!(
        with_connection(&app, reqwest::Method::POST, &refreshed, &id).await,
        StatusCode::OK
    );
    // DELETE of an unknown id is 404; the owner's DELETE closes it for good.
    let unknown = uuid_like();
    assert_eq!(
        with_connection(&app, reqwest::Method::DELETE, &alice, &unknown).await,
        StatusCode::NOT_FOUND
    );
    let del = with_connection(&app, reqwest::Method::DELETE, &alice, &id).await;
    assert!(del.is_success(), "{del}");
    assert_eq!(
        with_connection(&app, reqwest::Method::POST, &alice, &id).await,
        StatusCode::NOT_FOUND
    );
}

fn uuid_like() -> String {
    "3f1c2a9e-5b7d-4e8f-9a0b-1c2d3e4f5a6b".to_owned()
}

#[tokio::test]
async fn host_and_origin_are_checked_before_anything_else() {
    let app = spawn_app().await;
    let t = token("acme", "alice");
    let cases = [
        (Some("evil.example.com"), None, StatusCode::FORBIDDEN),
        (None, Some("http://evil.example.com"), StatusCode::FORBIDDEN),
        (None, Some("https://localhost:3000"), StatusCode::FORBIDDEN),
        (None, Some("http://localhost:3000"), StatusCode::OK),
        (Some("localhost:1234"), None, StatusCode::OK),
    ];
    for (host, origin, want) in cases {
        let mut r = post(&app, Some(&t), &initialize_body());
        if let Some(h) = host {
            r = r.header("host", h);
        }
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        assert_eq!(
            r.send().await.unwrap().status(),
            want,
            "{host:?} {origin:?}"
        );
    }
    // Forbidden even without a token: the guard runs first.
    let resp = post(&app, None, &initialize_body())
        .header("host", "evil.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn bodies_over_one_mebibyte_are_413_and_write_nothing() {
    let app = spawn_app().await;
    let t = token("acme", "alice");
    let id = connect(&app, &t).await;
    let big = "x".repeat((1 << 20) + 10);
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "brain_remember", "arguments": {"project": "p", "kind": "note", "text": big}}});
    let resp = post(&app, Some(&t), &body)
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(count_rows(&app, "artifacts").await, 0);
    assert_eq!(count_rows(&app, "receipts").await, 0);
}

#[tokio::test]
async fn bad_protocol_version_is_400() {
    let app = spawn_app().await;
    let t = token("acme", "alice");
    let id = connect(&app, &t).await;
    let resp = post(&app, Some(&t), &tools_list())
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "1999-01-01")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn metadata_health_and_security_headers() {
    let app = spawn_app().await;
    let http = reqwest::Client::new();
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let resp = http.get(app.url(path)).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
        let v: Value = resp.json().await.unwrap();
        assert_eq!(v["resource"], json!(format!("http://{}/mcp", app.addr)));
        assert_eq!(v["bearer_methods_supported"], json!(["header"]));
        assert!(
            v["authorization_servers"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
        );
    }
    assert_eq!(
        http.get(app.url("/healthz")).send().await.unwrap().status(),
        StatusCode::OK
    );
    let ready = http.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    assert_eq!(
        ready.json::<Value>().await.unwrap()["database"],
        json!("ok")
    );
}

#[tokio::test]
async fn tool_calls_work_over_a_raw_session_and_record_the_connection() {
    let app = spawn_app().await;
    let t = token("acme", "alice");
    let c = app.client(&t).await;
    let s = ok(
        &c,
        "brain_session_start",
        json!({"project": "p", "client_key": "k"}),
    )
    .await;
    assert_eq!(
        s["session"]["opened_by"],
        json!({"kind": "jwt", "subject": "alice"})
    );
    let receipts = app
        .store
        .receipts(&brain_core::ids::TenantId::parse("acme").unwrap())
        .await
        .unwrap();
    let conn = receipts[0]
        .connection_id
        .clone()
        .expect("receipt names the connection");
    assert_eq!(count_rows(&app, "mcp_connections").await, 1);
    assert!(!conn.is_empty());
    assert!(receipts[0].token_id.is_some(), "the jti is recorded");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn the_requested_store_is_the_one_under_test() {
    let app = spawn_app().await;
    let want_sqlite = std::env::var("BRAIN_TEST_STORE").as_deref() == Ok("sqlite");
    assert_eq!(app.db.url().starts_with("sqlite://"), want_sqlite);
}
