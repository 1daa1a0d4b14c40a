//! Black-box: a tenant's recall owes nothing to other tenants' artifacts
//! (third hostile review, M4), and both stores read a query alike, on both
//! stores.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_testkit::app::{Client, ok, spawn_app, token};
use serde_json::{Value, json};

async fn remember(c: &Client, text: &str) {
    ok(
        c,
        "brain_remember",
        json!({"project": "p", "kind": "note", "text": text}),
    )
    .await;
}

/// (text, rank) of each hit, in order.
async fn recall(c: &Client, query: &str) -> Vec<(String, f64)> {
    let out = ok(c, "brain_recall", json!({"project": "p", "query": query})).await;
    out["results"]
        .as_array()
        .unwrap_or_else(|| panic!("{out}"))
        .iter()
        .map(|h: &Value| {
            (
                h["artifact"]["text"].as_str().unwrap().to_owned(),
                h["rank"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// SQLite's bm25 weighed a word by how common it was among every tenant's
/// artifacts: tenant B's rank for its own artifact fell from 1.0 to 0.19
/// once tenant A wrote 60 artifacts with that word (a side channel on what
/// others write). Ranks now come from the artifact's own text.
#[tokio::test]
async fn another_tenants_artifacts_do_not_move_my_ranks() {
    let app = spawn_app().await;
    let b = app.client(&token("globex", "b")).await;
    remember(&b, "the widget is blue").await;
    remember(&b, "the gizmo is red").await;
    let before = recall(&b, "widget or gizmo").await;
    assert_eq!(before.len(), 2, "{before:?}");
    let a = app.client(&token("acme", "a")).await;
    for i in 0..60 {
        remember(&a, &format!("widget number {i}")).await;
    }
    let after = recall(&b, "widget or gizmo").await;
    assert_eq!(after, before);
    assert!(after.iter().all(|(_, rank)| *rank == 1.0), "{after:?}");
}

/// A query of only exclusions lists the project's artifacts without the
/// word, on both stores (SQLite once found nothing: FTS5 cannot start with
/// NOT).
#[tokio::test]
async fn a_query_of_only_exclusions_reads_alike_on_both_stores() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "a")).await;
    remember(&c, "alpha one").await;
    remember(&c, "beta two").await;
    remember(&c, "gamma three").await;
    let other = app.client(&token("globex", "g")).await;
    remember(&other, "beta elsewhere").await;
    let mut texts: Vec<_> = recall(&c, "-alpha")
        .await
        .into_iter()
        .map(|h| h.0)
        .collect();
    texts.sort();
    assert_eq!(texts, ["beta two", "gamma three"]);
    let texts: Vec<_> = recall(&c, "beta -two")
        .await
        .into_iter()
        .map(|h| h.0)
        .collect();
    assert!(texts.is_empty(), "{texts:?}");
}

/// SQLite's search is brain's own matching of the window (its full-text
/// index read other projects' and tenants' rows between the window's), so
/// both stores read a query alike: whole words, case apart, accents kept
/// (PostgreSQL's `simple` configuration; SQLite's FTS5 folded them), `or`
/// between alternatives, an exclusion within its alternative, phrases in
/// a row.
#[tokio::test]
async fn both_stores_match_a_query_alike() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "a")).await;
    remember(&c, "Café au lait").await;
    remember(&c, "cafe racer").await;
    remember(&c, "big red cat").await;
    remember(&c, "red big dog").await;
    let other = app.client(&token("globex", "g")).await;
    remember(&other, "big red cat elsewhere").await;
    let texts = |hits: Vec<(String, f64)>| {
        let mut t: Vec<String> = hits.into_iter().map(|h| h.0).collect();
        t.sort();
        t
    };
    assert_eq!(texts(recall(&c, "café").await), ["Café au lait"]);
    assert_eq!(texts(recall(&c, "CAFE").await), ["cafe racer"]);
    assert_eq!(texts(recall(&c, "\"big red\"").await), ["big red cat"]);
    assert_eq!(
        texts(recall(&c, "cat or dog -big").await),
        ["big red cat"],
        "an exclusion belongs to its alternative"
    );
    assert_eq!(
        texts(recall(&c, "racer or \"red big\"").await),
        ["cafe racer", "red big dog"]
    );
}
