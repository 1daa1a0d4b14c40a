//! Black-box, both stores: an operator deletes a project (console route,
//! CLI) and a whole tenant (CLI). Nothing of a deleted project is readable
//! by any tool, resource, recall or the console; other projects and tenants
//! are untouched; the receipt chain still verifies, with one receipt more
//! naming who deleted it; deleting twice is a clear "not found".
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_testkit::app::{Client, TestApp, count_rows, ok, spawn_app, token, token_with};
use serde_json::{Value, json};

const SECRET: &str = "secretdoomed";

/// A project with a focus, a slot, sessions, artifacts and a document, all
/// carrying `marker`.
async fn fill(c: &Client, project: &str, marker: &str) -> String {
    let s = ok(
        c,
        "brain_session_start",
        json!({"project": project, "client_key": "k1"}),
    )
    .await;
    let id = s["session"]["session_id"].as_str().unwrap().to_owned();
    ok(
        c,
        "brain_session_end",
        json!({"session_id": id, "expected_client_key": "k1", "summary": format!("summary {marker}"),
               "next_focus": format!("focus {marker}"), "expected_focus_revision": 0}),
    )
    .await;
    let bound = ok(
        c,
        "brain_session_start",
        json!({"project": project, "client_key": "k2", "slot": "ui"}),
    )
    .await;
    ok(
        c,
        "brain_session_end",
        json!({"session_id": bound["session"]["session_id"], "expected_client_key": "k2",
               "summary": "slot", "next_focus": format!("slot {marker}"), "expected_focus_revision": 0}),
    )
    .await;
    ok(
        c,
        "brain_remember",
        json!({"project": project, "kind": "todo", "text": format!("todo {marker}")}),
    )
    .await;
    ok(
        c,
        "brain_document_put",
        json!({"project": project, "document": "sync_note", "body": format!("note {marker}"),
               "expected_revision": 0}),
    )
    .await;
    id
}

/// Everything an agent could read of `project`, as one text.
async fn everything(c: &Client, project: &str, session: &str) -> String {
    let calls = [
        ("brain_focus_get", json!({"project": project})),
        ("brain_focus_get", json!({"project": project, "slot": "ui"})),
        ("brain_focus_history", json!({"project": project})),
        ("brain_recall", json!({"project": project, "query": SECRET})),
        ("brain_recall", json!({"project": project})),
        (
            "brain_document_get",
            json!({"project": project, "document": "sync_note"}),
        ),
        ("brain_session_list", json!({"project": project})),
        ("brain_session_get", json!({"session_id": session})),
    ];
    let mut seen = String::new();
    for (tool, args) in calls {
        let r = brain_testkit::app::call(c, tool, args).await;
        seen.push_str(&serde_json::to_string(&r).unwrap());
    }
    for uri in [
        format!("brain://projects/{project}/focus"),
        format!("brain://projects/{project}/slots/ui"),
    ] {
        let r = c
            .read_resource(rmcp::model::ReadResourceRequestParams::new(uri))
            .await;
        seen.push_str(&format!("{r:?}"));
    }
    seen
}

async fn admin_delete(app: &TestApp, bearer: &str, body: Value) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(app.url("/brain-admin/api/project/delete"))
        .header("authorization", format!("Bearer {bearer}"))
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

fn cli(app: &TestApp, args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_brain"))
        .args(args)
        .env("DATABASE_URL", app.db.url())
        .env("USER", "ops-shell")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_project_is_gone_and_the_rest_is_untouched() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "agent")).await;
    let doomed = fill(&c, "doomed", SECRET).await;
    let kept = fill(&c, "kept", "keptmarker").await;
    let other = app.client(&token("globex", "agent")).await;
    let theirs = fill(&other, "doomed", SECRET).await;
    assert!(everything(&c, "doomed", &doomed).await.contains(SECRET));
    let (_, before) = cli(&app, &["tenant", "usage", "--tenant", "acme"]);
    let kept_before = everything(&c, "kept", &kept).await;
    let theirs_before = everything(&other, "doomed", &theirs).await;

    // Only an operator deletes, and only with the name typed again.
    let op = token_with(json!({"tenant": "acme", "sub": "alice", "role": "operator"}));
    let agent = token("acme", "agent");
    let body = json!({"name": "doomed", "confirm": "doomed"});
    assert_eq!(admin_delete(&app, &agent, body.clone()).await.0, 403);
    let (status, e) = admin_delete(&app, &op, json!({"name": "doomed", "confirm": "doome"})).await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (428, Some("confirm_required")),
        "{e}"
    );
    assert!(everything(&c, "doomed", &doomed).await.contains(SECRET));

    let (status, done) = admin_delete(&app, &op, body.clone()).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["deleted"], "doomed");

    // Nothing of it is readable, by any tool or resource.
    let seen = everything(&c, "doomed", &doomed).await;
    assert!(!seen.contains(SECRET), "{seen}");
    for table in [
        "focus_history",
        "focus_bodies",
        "sessions",
        "artifacts",
        "documents",
        "projects",
    ] {
        let n = count_rows(
            &app,
            &format!("{table} WHERE tenant_id = 'acme' AND project = 'doomed'"),
        )
        .await;
        assert_eq!(n, 0, "{table} still holds rows of the deleted project");
    }
    // Nor by the console.
    let listed: Value = reqwest::Client::new()
        .get(app.url("/brain-admin/api/projects"))
        .header("authorization", format!("Bearer {op}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = listed["projects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["project"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["kept"], "{listed}");
    // The rest is as it was: the other project, the other tenant's namesake.
    assert_eq!(everything(&c, "kept", &kept).await, kept_before);
    assert_eq!(everything(&other, "doomed", &theirs).await, theirs_before);
    // The tenant holds fewer bytes.
    let (_, after) = cli(&app, &["tenant", "usage", "--tenant", "acme"]);
    assert_ne!(before, after);

    // The chain verifies, its newest receipt says who deleted what.
    let (verified, text) = cli(&app, &["receipts", "verify", "--tenant", "acme"]);
    assert!(verified && text.starts_with("OK tenant=acme"), "{text}");
    let receipts = ok(
        &c,
        "brain_receipts",
        json!({"project": "doomed", "before_seq": 9_007_199_254_740_992_i64}),
    )
    .await;
    let last = receipts["receipts"]
        .as_array()
        .unwrap()
        .first()
        .unwrap()
        .clone();
    assert_eq!(last["tool"], "project_deleted", "{receipts}");
    assert_eq!(last["subject"], "alice", "{last}");

    // Twice: not found.
    let (status, e) = admin_delete(&app, &op, body).await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (404, Some("not_found")),
        "{e}"
    );

    // The CLI deletes too, and names the shell's user.
    let (deleted, text) = cli(
        &app,
        &["project", "delete", "--tenant", "acme", "--project", "kept"],
    );
    assert!(deleted, "{text}");
    assert!(!everything(&c, "kept", &kept).await.contains("keptmarker"));
    let (again, text) = cli(
        &app,
        &["project", "delete", "--tenant", "acme", "--project", "kept"],
    );
    assert!(!again && text.contains("no such project"), "{text}");
    let (verified, text) = cli(&app, &["receipts", "verify", "--tenant", "acme"]);
    assert!(verified, "{text}");
    let receipts = ok(
        &c,
        "brain_receipts",
        json!({"project": "kept", "before_seq": 9_007_199_254_740_992_i64}),
    )
    .await;
    let last = receipts["receipts"][0].clone();
    assert_eq!(
        (
            last["tool"].as_str(),
            last["subject"].as_str(),
            last["credential_kind"].as_str()
        ),
        (Some("project_deleted"), Some("ops-shell"), Some("cli")),
        "{last}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_tenant_leaves_nothing_and_others_stay() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "agent")).await;
    fill(&c, "p", SECRET).await;
    let other = app.client(&token("globex", "agent")).await;
    let theirs = fill(&other, "p", "globexmarker").await;
    let theirs_before = everything(&other, "p", &theirs).await;

    let (deleted, text) = cli(
        &app,
        &["tenant", "delete", "--tenant", "acme", "--confirm", "acm"],
    );
    assert!(!deleted && text.contains("--confirm"), "{text}");
    let (deleted, text) = cli(
        &app,
        &["tenant", "delete", "--tenant", "acme", "--confirm", "acme"],
    );
    assert!(deleted, "{text}");
    for table in [
        "tenants",
        "receipts",
        "receipt_heads",
        "sessions",
        "artifacts",
        "focus_history",
        "documents",
        "mcp_connections",
        "tenant_usage",
    ] {
        let n = count_rows(&app, &format!("{table} WHERE tenant_id = 'acme'")).await;
        assert_eq!(n, 0, "{table} still holds the deleted tenant's rows");
    }
    let (verified, text) = cli(&app, &["receipts", "verify", "--tenant", "acme"]);
    assert!(!verified && text.contains("no tenant acme"), "{text}");
    let (deleted, text) = cli(
        &app,
        &["tenant", "delete", "--tenant", "acme", "--confirm", "acme"],
    );
    assert!(!deleted && text.contains("no tenant acme"), "{text}");
    assert_eq!(everything(&other, "p", &theirs).await, theirs_before);
    let (verified, text) = cli(&app, &["receipts", "verify", "--tenant", "globex"]);
    assert!(verified, "{text}");
}
