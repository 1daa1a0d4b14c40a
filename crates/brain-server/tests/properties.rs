//! Property tests at the boundaries a client controls (SPEC §4): arbitrary tool
//! arguments, bearer tokens and Host/Origin headers against the real server
//! never panic it and never yield a 5xx. Case counts are bounded for CI
//! (`PROPTEST_CASES` raises them for a longer hunt).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_server::http::limits::LimitSettings;
use brain_testkit::app::{TestApp, jwt_config, spawn_app_limited, token, token_with};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use serde_json::{Map, Value, json};

/// One server per property, shared by its cases (one per case would dominate
/// the run), and dropped with its database when the property is done.
fn app() -> (tokio::runtime::Runtime, TestApp, String) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // Rate limits are tested elsewhere; here every case must reach the tools.
    let app = rt.block_on(spawn_app_limited(
        jwt_config(),
        LimitSettings {
            rate_per_sec: 100_000,
            max_connections_per_credential: 64,
            ..Default::default()
        },
    ));
    let conn = rt.block_on(brain_testkit::app::raw_connect(
        &format!("http://{}", app.addr),
        &token("acme", "fuzz"),
    ));
    (rt, app, conn)
}

/// Run `property` over `strategy` against one server, then drop the server and
/// its database before reporting, so a failing property leaves nothing behind.
fn check<S: Strategy>(
    default_cases: u32,
    strategy: S,
    property: impl Fn(&tokio::runtime::Runtime, &TestApp, &str, S::Value) -> Result<(), TestCaseError>,
) {
    let (rt, app, conn) = app();
    let outcome =
        TestRunner::new(cases(default_cases)).run(&strategy, |v| property(&rt, &app, &conn, v));
    drop(app);
    drop(rt);
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

fn cases(default: u32) -> ProptestConfig {
    let n = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases: n,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

const TOOLS: &[&str] = &[
    "brain_session_start",
    "brain_session_bind",
    "brain_session_resume",
    "brain_session_end",
    "brain_session_relay",
    "brain_session_abandon",
    "brain_remember",
    "brain_recall",
    "brain_focus_get",
    "brain_focus_history",
    "brain_session_get",
    "brain_session_list",
    "brain_receipts",
    "brain_document_get",
    "brain_document_put",
    "brain_todo_ack",
];

const FIELDS: &[&str] = &[
    "project",
    "client_key",
    "slot",
    "session_id",
    "expected_client_key",
    "summary",
    "next_focus",
    "expected_focus_revision",
    "nothing_to_capture_reason",
    "allow_focus_shrink",
    "dry_run",
    "confirm",
    "reason",
    "to_client_key",
    "kind",
    "text",
    "tags",
    "query",
    "limit",
    "kinds",
    "before",
    "status",
    "since_seq",
    "document",
    "name",
    "body",
    "expected_revision",
    "artifact_ids",
    "note",
];

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("p".to_owned()),
        Just("sess_00000000000000000000000000000000".to_owned()),
        Just("_mcp".to_owned()),
        "[a-z0-9._/-]{1,12}",
        any::<String>(),
        "\\PC{0,40}",
        "[\\x00-\\x1f]{1,4}",
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1.0e300f64..1.0e300).prop_map(|f| json!(f)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Arguments that are mostly well-named, so decoding goes deep, with junk
/// values and the odd unknown field.
fn arguments() -> impl Strategy<Value = Map<String, Value>> {
    let field = prop_oneof![
        9 => prop::sample::select(FIELDS).prop_map(str::to_owned),
        1 => text(),
    ];
    prop::collection::btree_map(field, json_value(), 0..8).prop_map(|m| m.into_iter().collect())
}

/// Any arguments to any tool: a result or a tool error below 500, never a
/// protocol-level failure or a 5xx.
#[test]
fn tool_arguments_never_yield_a_5xx() {
    check(
        96,
        (prop::sample::select(TOOLS), arguments()),
        |rt, app, conn, (tool, args)| {
            let base = format!("http://{}", app.addr);
            let (status, msg) = rt.block_on(brain_testkit::app::raw_rpc(
                &base,
                &token("acme", "fuzz"),
                conn,
                "tools/call",
                json!({"name": tool, "arguments": Value::Object(args.clone())}),
            ));
            prop_assert!(status < 500, "HTTP {status} for {tool} {args:?}: {msg}");
            let result = &msg["result"];
            prop_assert!(
                result.is_object(),
                "no tool result for {tool} {args:?}: {msg}"
            );
            if result["isError"] == json!(true) {
                let code = result["structuredContent"]["error"]["status"]
                    .as_u64()
                    .unwrap_or(0);
                prop_assert!((400..500).contains(&code), "{tool} {args:?}: {msg}");
            }
            Ok(())
        },
    );
}

/// Any bearer value and any claims: 401 (or a working call), never a 5xx.
#[test]
fn tokens_never_yield_a_5xx() {
    let claim_names = prop::sample::select(
        &[
            "iss", "aud", "sub", "tenant", "role", "exp", "nbf", "iat", "jti",
        ][..],
    );
    check(
        96,
        (
            any::<String>(),
            prop::collection::btree_map(claim_names, json_value(), 0..6),
        ),
        |rt, app, _, (raw, claims)| {
            let patch: Map<String, Value> =
                claims.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            for bearer in [raw.clone(), token_with(Value::Object(patch.clone()))] {
                let status = rt.block_on(async {
                    let Ok(value) =
                        reqwest::header::HeaderValue::from_str(&format!("Bearer {bearer}"))
                    else {
                        return 401;
                    };
                    reqwest::Client::new()
                        .post(app.mcp_url())
                        .header("authorization", value)
                        .header("accept", "application/json, text/event-stream")
                        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
                        .send()
                        .await
                        .unwrap()
                        .status()
                        .as_u16()
                });
                prop_assert!(status < 500, "HTTP {status} for claims {patch:?}");
            }
            Ok(())
        },
    );
}

/// Any Host and Origin: 403 or on to authentication, never a 5xx, and a
/// Host with userinfo never passes.
#[test]
fn host_and_origin_never_yield_a_5xx() {
    check(
        96,
        ("\\PC{0,40}", proptest::option::of("\\PC{0,40}")),
        |rt, app, _, (host, origin)| {
            let status = rt.block_on(async {
                let Ok(h) = reqwest::header::HeaderValue::from_str(&host) else {
                    return 403;
                };
                let mut req = reqwest::Client::new()
                    .post(app.mcp_url())
                    .header("host", h)
                    .json(&json!({}));
                if let Some(o) = &origin {
                    let Ok(o) = reqwest::header::HeaderValue::from_str(o) else {
                        return 403;
                    };
                    req = req.header("origin", o);
                }
                match req.send().await {
                    Ok(r) => r.status().as_u16(),
                    // hyper refuses some Host values before brain sees them.
                    Err(_) => 400,
                }
            });
            prop_assert!(
                status < 500,
                "HTTP {status} for Host {host:?} Origin {origin:?}"
            );
            if host.contains('@') {
                prop_assert!(
                    status == 403 || status == 400,
                    "userinfo passed: {host:?} → {status}"
                );
            }
            Ok(())
        },
    );
}
