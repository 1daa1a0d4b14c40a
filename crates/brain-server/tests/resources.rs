//! Black-box: focus bodies as MCP resources, and change notifications to
//! subscribers (SPEC §2.11), on either store with one server. The same across
//! two replicas on one PostgreSQL is in `replicas.rs`.
// resources/subscribe is the protocol the server speaks to 2025-era clients.
#![allow(clippy::unwrap_used, clippy::expect_used, deprecated)]

use std::time::Duration;

use brain_testkit::app::{ok, spawn_app, token, watching_client};
use rmcp::model::{ReadResourceRequestParams, ResourceContents, SubscribeRequestParams};
use serde_json::{Value, json};

/// The next URI a watcher hears, if any within `within`.
async fn heard(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
    within: Duration,
) -> Option<String> {
    tokio::time::timeout(within, rx.recv()).await.ok().flatten()
}

fn text_and_meta(r: &rmcp::model::ReadResourceResult) -> (String, Value) {
    match &r.contents[0] {
        ResourceContents::TextResourceContents { text, meta, .. } => (
            text.clone(),
            serde_json::to_value(meta.clone().unwrap().0).unwrap(),
        ),
        other => panic!("not text: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn subscribers_hear_focus_changes_in_their_tenant_only() {
    let app = spawn_app().await;
    let alice = token("acme", "alice");
    let writer = app.client(&token("acme", "bob")).await;
    let (watcher, mut rx) = watching_client(&app.mcp_url(), &alice).await;
    let (eve, mut eve_rx) = watching_client(&app.mcp_url(), &token("other", "eve")).await;

    let caps = watcher
        .peer_info()
        .unwrap()
        .capabilities
        .resources
        .clone()
        .unwrap();
    assert_eq!(caps.subscribe, Some(true));

    // Both tenants have a project "p"; acme's also has a slot "ui".
    let s = ok(
        &writer,
        "brain_session_start",
        json!({"project": "p", "client_key": "w"}),
    )
    .await;
    let bound = ok(
        &writer,
        "brain_session_start",
        json!({"project": "p", "client_key": "w2", "slot": "ui"}),
    )
    .await;
    let e = ok(
        &eve,
        "brain_session_start",
        json!({"project": "p", "client_key": "e"}),
    )
    .await;

    // Listing: acme sees its base focus and slot, never the server's own projects.
    let listed = watcher.list_all_resources().await.unwrap();
    let uris: Vec<&str> = listed.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        ["brain://projects/p/focus", "brain://projects/p/slots/ui"]
    );
    let templates = watcher.list_resource_templates(None).await.unwrap();
    assert_eq!(templates.resource_templates.len(), 2);

    let focus = "brain://projects/p/focus";
    let slot = "brain://projects/p/slots/ui";
    for uri in [focus, slot] {
        watcher
            .subscribe(SubscribeRequestParams::new(uri))
            .await
            .unwrap();
    }
    eve.subscribe(SubscribeRequestParams::new(focus))
        .await
        .unwrap();

    // Malformed and unknown URIs are refused alike, and nothing is subscribed.
    for bad in [
        "brain://projects/nope/focus",
        "brain://projects/p/slots/nope",
        "brain://projects/_mcp/focus",
        "file:///etc/passwd",
        "brain://projects/p/../focus",
    ] {
        let err = watcher
            .subscribe(SubscribeRequestParams::new(bad))
            .await
            .expect_err(bad);
        assert!(
            err.to_string().contains("-32002") || err.to_string().contains("no such resource"),
            "{bad}: {err}"
        );
        assert!(
            watcher
                .read_resource(ReadResourceRequestParams::new(bad))
                .await
                .is_err()
        );
    }

    // bob ends his unbound session: alice hears the base focus, eve nothing.
    let end = ok(
        &writer,
        "brain_session_end",
        json!({"session_id": s["session"]["session_id"], "expected_client_key": "w",
               "summary": "s", "next_focus": "ship the resources", "expected_focus_revision": 0}),
    )
    .await;
    assert_eq!(end["focus_outcome"], "applied");
    assert_eq!(
        heard(&mut rx, Duration::from_secs(1)).await.as_deref(),
        Some(focus)
    );
    let read = watcher
        .read_resource(ReadResourceRequestParams::new(focus))
        .await
        .unwrap();
    let (text, meta) = text_and_meta(&read);
    assert_eq!(text, "ship the resources");
    assert_eq!(meta["revision"], 1);
    assert_eq!(meta["updated_by_session"], s["session"]["session_id"]);

    // The bound session's end changes the slot: alice hears the slot's URI.
    ok(
        &writer,
        "brain_session_end",
        json!({"session_id": bound["session"]["session_id"], "expected_client_key": "w2",
               "summary": "s", "next_focus": "ui work", "expected_focus_revision": 0}),
    )
    .await;
    assert_eq!(
        heard(&mut rx, Duration::from_secs(1)).await.as_deref(),
        Some(slot)
    );

    // eve heard nothing of acme's project "p" — and does hear her own.
    assert_eq!(eve_rx.try_recv().ok(), None);
    ok(
        &eve,
        "brain_session_end",
        json!({"session_id": e["session"]["session_id"], "expected_client_key": "e",
               "summary": "s", "next_focus": "eve's own", "expected_focus_revision": 0}),
    )
    .await;
    assert_eq!(
        heard(&mut eve_rx, Duration::from_secs(1)).await.as_deref(),
        Some(focus)
    );
    assert_eq!(
        rx.try_recv().ok(),
        None,
        "acme heard another tenant's change"
    );

    // A conflict or a dry run writes no body and announces nothing; after
    // unsubscribing, a real change is not heard either.
    let s2 = ok(
        &writer,
        "brain_session_start",
        json!({"project": "p", "client_key": "w"}),
    )
    .await;
    let stale = ok(
        &writer,
        "brain_session_end",
        json!({"session_id": s2["session"]["session_id"], "expected_client_key": "w",
               "summary": "s", "next_focus": "a stale proposal of the plan", "expected_focus_revision": 0}),
    )
    .await;
    assert_eq!(stale["focus_outcome"], "conflict");
    watcher
        .unsubscribe(rmcp::model::UnsubscribeRequestParams::new(focus))
        .await
        .unwrap();
    let s3 = ok(
        &writer,
        "brain_session_start",
        json!({"project": "p", "client_key": "w"}),
    )
    .await;
    ok(
        &writer,
        "brain_session_end",
        json!({"session_id": s3["session"]["session_id"], "expected_client_key": "w",
               "summary": "s", "next_focus": "ship the resources, then the console", "expected_focus_revision": 1}),
    )
    .await;
    assert_eq!(heard(&mut rx, Duration::from_millis(500)).await, None);
}

/// A subscription whose connection closed without the registry hearing of it
/// (the client just went away) is dropped by the sweep's prune, not kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_of_closed_transports_are_pruned() {
    use rmcp::ServiceExt;

    let backend = brain_testkit::app::TestBackend::create().await;
    let store = backend.open().await;
    let tenant = brain_core::ids::TenantId::parse("acme").unwrap();
    let handler =
        brain_server::mcp::BrainMcp::local(store.clone(), brain_server::stdio::principal(tenant));
    let subs = handler.subscriptions();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn(async move {
        let running = handler.serve(server_io).await.unwrap();
        let _ = running.waiting().await;
    });
    let client = ().serve(client_io).await.unwrap();
    ok(
        &client,
        "brain_session_start",
        json!({"project": "p", "client_key": "k"}),
    )
    .await;
    client
        .subscribe(SubscribeRequestParams::new("brain://projects/p/focus"))
        .await
        .unwrap();
    assert_eq!(subs.len(), 1);
    assert_eq!(subs.prune_closed(), 0, "an open transport is kept");
    // The client goes away: no unsubscribe, no DELETE.
    drop(client);
    let _ = tokio::time::timeout(Duration::from_secs(5), server).await;
    assert_eq!(subs.prune_closed(), 1);
    assert!(subs.is_empty());
    store.close().await;
}
