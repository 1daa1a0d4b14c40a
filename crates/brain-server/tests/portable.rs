//! Black-box: `brain export` and `brain import` move a tenant between the
//! stores. A tenant built on one store → export → import into the other →
//! export again is byte-identical, and back again; the imported server
//! answers the same reads, and its receipt chain verifies as it was.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use brain_testkit::app::{Client, ServerProcess, TestBackend, ok, spawn_app, token, token_with};
use brain_testkit::{TestDb, TestSqlite};
use serde_json::{Value, json};

fn brain(args: &[&str], url: &str) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_brain"))
        .args(args)
        .env("DATABASE_URL", url)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn export(url: &str, file: &Path) -> Vec<u8> {
    let (done, text) = brain(
        &["export", "--tenant", "acme", "-o", file.to_str().unwrap()],
        url,
    );
    assert!(done, "{text}");
    std::fs::read(file).unwrap()
}

fn import(url: &str, file: &Path) {
    let (done, text) = brain(
        &["import", "--tenant", "acme", "-i", file.to_str().unwrap()],
        url,
    );
    assert!(done && text.contains("imported tenant=acme"), "{text}");
}

/// A tenant with sessions (ended, bound to a slot, abandoned), artifacts with
/// tags and an acknowledgement, documents and a mental model, an elevation.
async fn story(c: &Client, op: &Client) {
    for (i, slot) in [None, Some("ui"), None].into_iter().enumerate() {
        let key = format!("k{i}");
        let s = ok(
            c,
            "brain_session_start",
            json!({"project": "web", "client_key": key}),
        )
        .await;
        let id = s["session"]["session_id"].clone();
        let mut rev = s["session"]["started_focus_revision"].as_i64().unwrap();
        if let Some(slot) = slot {
            let bound = ok(
                c,
                "brain_session_bind",
                json!({"session_id": id, "expected_client_key": key, "slot": slot}),
            )
            .await;
            rev = bound["slot"]["revision"].as_i64().unwrap();
        }
        ok(
            c,
            "brain_session_end",
            json!({"session_id": id, "expected_client_key": key,
                   "summary": format!("step {i} — ünïcode"), "next_focus": format!("plan {i}\nline two\n"),
                   "expected_focus_revision": rev}),
        )
        .await;
    }
    let gone = ok(
        c,
        "brain_session_start",
        json!({"project": "web", "client_key": "gone"}),
    )
    .await;
    ok(
        c,
        "brain_session_abandon",
        json!({"session_id": gone["session"]["session_id"], "expected_client_key": "gone",
               "reason": "superseded", "confirm": true}),
    )
    .await;
    let todo = ok(
        c,
        "brain_remember",
        json!({"project": "web", "kind": "todo", "text": "ship the exporter", "tags": ["io", "z"]}),
    )
    .await;
    ok(
        c,
        "brain_remember",
        json!({"project": "docs", "kind": "fact", "text": "the format is line-oriented JSON"}),
    )
    .await;
    ok(
        c,
        "brain_todo_ack",
        json!({"project": "web", "artifact_ids": [todo["artifact"]["artifact_id"]], "note": "done"}),
    )
    .await;
    ok(
        c,
        "brain_document_put",
        json!({"project": "web", "document": "sync_note", "body": "sync", "expected_revision": 0}),
    )
    .await;
    ok(
        op,
        "brain_document_put",
        json!({"project": "web", "document": "mental_model", "name": "arch", "body": "layers",
               "expected_revision": 0}),
    )
    .await;
    // An operator's session, elevated by the operator.
    ok(
        op,
        "brain_session_start",
        json!({"project": "ops", "client_key": "op"}),
    )
    .await;
}

/// What an agent reads of the tenant.
async fn reads(c: &Client) -> Vec<Value> {
    let mut out = Vec::new();
    for (tool, args) in [
        ("brain_focus_get", json!({"project": "web"})),
        ("brain_focus_get", json!({"project": "web", "slot": "ui"})),
        ("brain_focus_history", json!({"project": "web"})),
        (
            "brain_recall",
            json!({"project": "web", "query": "exporter"}),
        ),
        (
            "brain_recall",
            json!({"project": "docs", "query": "format"}),
        ),
        ("brain_session_list", json!({"project": "web"})),
        (
            "brain_document_get",
            json!({"project": "web", "document": "sync_note"}),
        ),
        ("brain_receipts", json!({})),
    ] {
        let mut v = ok(c, tool, args).await;
        // Each store's search engine cuts its own snippet around the hits.
        if let Some(hits) = v["results"].as_array_mut() {
            for h in hits {
                h.as_object_mut().unwrap().remove("snippet");
            }
        }
        out.push(v);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_moves_between_the_stores_byte_for_byte() {
    // The original, on the store under test.
    let app = spawn_app().await;
    let c = app.client(&token("acme", "agent")).await;
    let op = app
        .client(&token_with(
            json!({"tenant": "acme", "sub": "alice", "role": "operator"}),
        ))
        .await;
    story(&c, &op).await;
    // Read from a connection that wrote nothing: receipts show every
    // connection as its fingerprint, as on the imported server.
    let original = reads(&app.client(&token("acme", "agent")).await).await;
    let dir = tempfile_dir();
    let first = export(app.db.url(), &dir.join("first.jsonl"));
    let text = String::from_utf8(first.clone()).unwrap();
    assert!(text.starts_with("{\"brain_export\":1,"), "{}", &text[..80]);
    let last = text.lines().last().unwrap();
    assert!(last.starts_with("{\"end\":true,\"rows\":"), "{last}");
    assert!(text.contains("\"table\":\"receipts\""));
    // Two exports of the same data are byte-identical.
    assert_eq!(export(app.db.url(), &dir.join("again.jsonl")), first);

    // Into the other store, and out again: the same bytes.
    let (other, back) = match &app.db {
        TestBackend::Postgres(_) => (
            TestBackend::Sqlite(TestSqlite::new()),
            TestBackend::Postgres(TestDb::create().await.unwrap()),
        ),
        TestBackend::Sqlite(_) => (
            TestBackend::Postgres(TestDb::create().await.unwrap()),
            TestBackend::Sqlite(TestSqlite::new()),
        ),
    };
    import(other.url(), &dir.join("first.jsonl"));
    let second = export(other.url(), &dir.join("second.jsonl"));
    assert_eq!(
        String::from_utf8(second.clone()).unwrap(),
        text,
        "an export after import differs"
    );
    let (verified, said) = brain(&["receipts", "verify", "--tenant", "acme"], other.url());
    assert!(verified, "{said}");
    // And back to a fresh database of the first store.
    import(back.url(), &dir.join("second.jsonl"));
    assert_eq!(export(back.url(), &dir.join("third.jsonl")), first);

    // The imported server answers the same reads.
    let srv = ServerProcess::start(env!("CARGO_BIN_EXE_brain"), &other, &[]).await;
    let moved = srv.client(&token("acme", "agent")).await;
    for (i, (got, want)) in reads(&moved).await.iter().zip(&original).enumerate() {
        assert_eq!(got, want, "read {i} differs after the move");
    }

    // A tenant that holds anything is refused, and nothing is merged (the
    // server's connections since are part of the tenant now).
    let held = export(other.url(), &dir.join("held.jsonl"));
    let (refused, said) = brain(
        &[
            "import",
            "--tenant",
            "acme",
            "-i",
            dir.join("first.jsonl").to_str().unwrap(),
        ],
        other.url(),
    );
    assert!(!refused && said.contains("already holds data"), "{said}");
    assert_eq!(export(other.url(), &dir.join("fourth.jsonl")), held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_export_imports_nothing() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "agent")).await;
    let op = app
        .client(&token_with(
            json!({"tenant": "acme", "sub": "alice", "role": "operator"}),
        ))
        .await;
    story(&c, &op).await;
    let dir = tempfile_dir();
    let text = String::from_utf8(export(app.db.url(), &dir.join("whole.jsonl"))).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let cut = lines[..lines.len() / 2].join("\n") + "\n";
    let forged = text.replacen("\"tenant_id\":\"acme\"", "\"tenant_id\":\"globex\"", 1);
    // Without the history row of web's base focus at revision 1, which the
    // focus row and the first end's session name (bodies are stored once),
    // the row count fixed so that only the reference is wrong.
    let mut dropped = 0;
    let unheld: Vec<String> = lines
        .iter()
        .filter_map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let r = &v["row"];
            if v["table"] == "focus_history"
                && r["project"] == "web"
                && r["slot"] == ""
                && r["revision"] == 1
            {
                dropped += 1;
                return None;
            }
            Some(match v["rows"].as_u64() {
                Some(n) if v["end"] == true => json!({"end": true, "rows": n - 1}).to_string(),
                _ => (*l).to_owned(),
            })
        })
        .collect();
    assert_eq!(dropped, 1, "the export holds web's revision 1 once");
    let unheld = unheld.join("\n") + "\n";
    for (name, body, says) in [
        ("cut.jsonl", cut.as_str(), "cut short"),
        ("forged.jsonl", forged.as_str(), "another tenant"),
        (
            "unheld.jsonl",
            unheld.as_str(),
            "names a focus revision the export does not hold",
        ),
        (
            "junk.jsonl",
            "{\"brain_export\":1,\"tenant\":\"acme\"}\nnot json\n",
            "not JSON",
        ),
    ] {
        let fresh = TestBackend::create().await;
        std::fs::write(dir.join(name), body).unwrap();
        let (done, said) = brain(
            &[
                "import",
                "--tenant",
                "acme",
                "-i",
                dir.join(name).to_str().unwrap(),
            ],
            fresh.url(),
        );
        assert!(!done && said.contains(says), "{name}: {said}");
        let (_, usage) = brain(&["receipts", "verify", "--tenant", "acme"], fresh.url());
        assert!(
            usage.contains("no tenant acme"),
            "{name} left a tenant: {usage}"
        );
    }
}

/// A directory for a test's export files, removed when the test ends
/// (passed or failed), so runs leave nothing behind.
struct Scratch(std::path::PathBuf);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempfile_dir() -> Scratch {
    let d = std::env::temp_dir().join(format!("brain-export-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}
