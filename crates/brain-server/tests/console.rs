//! The operator console (`/brain-admin/`, SPEC §4) in a real browser: Debian's
//! headless Chromium, driven through chromedriver (WebDriver), against the real
//! server on either store. Screenshots of each page go to
//! `<target>/console-screenshots/` (the README's copies live in `docs/`).
//!
//! Needs `chromium` and `chromium-driver` (scripts/test installs them).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Duration;

use brain_testkit::app::{TestApp, exec, ok, raw_connect, spawn_app, token, token_with};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";

struct Browser {
    client: Client,
    _driver: tokio::process::Child,
    /// chromedriver's and Chromium's temporary directory (their profile and
    /// sockets): chromedriver is killed when the test ends, before it would
    /// remove them, so the test removes the directory, last.
    _tmp: TempDir,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn browser() -> Browser {
    assert!(
        std::path::Path::new(CHROMEDRIVER).exists() && std::path::Path::new(CHROMIUM).exists(),
        "the console tests need Debian's chromium and chromium-driver \
         (apt-get install chromium chromium-driver; scripts/test installs them)"
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let tmp = std::env::temp_dir().join(format!("brain-console-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&tmp).unwrap();
    let driver = tokio::process::Command::new(CHROMEDRIVER)
        .arg(format!("--port={port}"))
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("chromedriver");
    let url = format!("http://127.0.0.1:{port}");
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({"binary": CHROMIUM, "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
               "--disable-dev-shm-usage", "--window-size=1280,1000"]}),
    );
    let mut last = None;
    for _ in 0..100 {
        match ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps.clone())
            .connect(&url)
            .await
        {
            Ok(client) => {
                return Browser {
                    client,
                    _driver: driver,
                    _tmp: TempDir(tmp),
                };
            }
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("chromedriver did not start: {last:?}");
}

fn shots() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let dir = target.join("console-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn shot(c: &Client, name: &str) {
    let png = c.screenshot().await.unwrap();
    std::fs::write(shots().join(format!("{name}.png")), png).unwrap();
}

/// Wait for an element whose text contains `text`.
async fn wait_text(c: &Client, css: &str, text: &str) -> String {
    for _ in 0..100 {
        if let Ok(e) = c.find(Locator::Css(css)).await
            && let Ok(t) = e.text().await
            && t.contains(text)
        {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let page = match c.find(Locator::Css("main")).await {
        Ok(m) => m.text().await.unwrap_or_default(),
        Err(_) => c.source().await.unwrap_or_default(),
    };
    panic!("no {css} containing {text:?}; the page says: {}", page);
}

async fn sign_in(c: &Client, app: &TestApp, token: &str) {
    c.goto(&app.url("/brain-admin/")).await.unwrap();
    c.execute("sessionStorage.clear(); location.hash = '';", vec![])
        .await
        .unwrap();
    c.goto(&app.url("/brain-admin/")).await.unwrap();
    let input = c.wait().for_element(Locator::Css("#token")).await.unwrap();
    // The token is long: set it directly rather than typing it key by key.
    c.execute(
        "document.getElementById('token').value = arguments[0];",
        vec![json!(token)],
    )
    .await
    .unwrap();
    let _ = input;
    c.find(Locator::Css("#signin"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// A project with three revisions of its base focus, a slot and a document.
async fn seed(app: &TestApp) {
    let agent = app.client(&token("acme", "agent")).await;
    let bodies = [
        "Ship the resources.\nKeep the chain linear.",
        "Ship the resources.\nKeep the chain linear.\nThen the console.",
        "Ship the console.\nKeep the chain linear.\nThen the benchmark.",
    ];
    for (i, body) in bodies.iter().enumerate() {
        let s = ok(
            &agent,
            "brain_session_start",
            json!({"project": "web", "client_key": "k"}),
        )
        .await;
        ok(
            &agent,
            "brain_session_end",
            json!({"session_id": s["session"]["session_id"], "expected_client_key": "k",
                   "summary": format!("step {}", i + 1), "next_focus": body,
                   "expected_focus_revision": i}),
        )
        .await;
    }
    ok(
        &agent,
        "brain_session_start",
        json!({"project": "web", "client_key": "k2", "slot": "ui"}),
    )
    .await;
    ok(
        &agent,
        "brain_document_put",
        json!({"project": "web", "document": "sync_note", "body": "ui slot is taken", "expected_revision": 0}),
    )
    .await;
    ok(
        &agent,
        "brain_session_start",
        json!({"project": "docs", "client_key": "k"}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_console_works_in_a_real_browser() {
    let app = spawn_app().await;
    seed(&app).await;
    let op = token_with(json!({"tenant": "acme", "sub": "ops", "role": "operator"}));
    // An open connection of the operator's own, to elevate from the console.
    let _conn = raw_connect(&format!("http://{}", app.addr), &op).await;

    // The page: strict CSP, no framing, no inline script.
    let page = reqwest::get(app.url("/brain-admin/")).await.unwrap();
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert_eq!(page.headers()["x-frame-options"], "DENY");
    let html = page.text().await.unwrap();
    assert!(!html.contains("<script>") && html.contains("src=\"/brain-admin/console.js\""));

    // The JSON routes: operators only, no caching, bad input a clear 422.
    let http = reqwest::Client::new();
    let get = |path: &str, t: &str| {
        http.get(app.url(path))
            .header("authorization", format!("Bearer {t}"))
            .send()
    };
    let r = get("/brain-admin/api/projects", &op).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "no-store");
    // The tenant's storage and its quota (the test server keeps the default).
    let listed: serde_json::Value = r.json().await.unwrap();
    assert!(listed["usage"]["bytes"].as_i64().unwrap() > 0, "{listed}");
    assert_eq!(listed["usage"]["quota_bytes"], 1_073_741_824, "{listed}");
    let agent = token("acme", "agent");
    for path in [
        "/brain-admin/api/projects",
        "/brain-admin/api/project?name=web",
        "/brain-admin/api/receipts",
        "/brain-admin/api/targets",
    ] {
        assert_eq!(get(path, &agent).await.unwrap().status(), 403, "{path}");
        let none = http.get(app.url(path)).send().await.unwrap();
        assert_eq!(none.status(), 401, "{path}");
    }
    let other_tenant = token_with(json!({"tenant": "other", "sub": "ops", "role": "operator"}));
    let theirs: serde_json::Value = get("/brain-admin/api/projects", &other_tenant)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        theirs["projects"],
        json!([]),
        "another tenant's operator sees none of acme's"
    );
    assert_eq!(theirs["usage"]["bytes"], 0, "nor its usage");
    assert_eq!(
        get("/brain-admin/api/projects?q=%00", &op)
            .await
            .unwrap()
            .status(),
        422
    );

    let b = browser().await;
    let c = &b.client;

    // An agent token is refused with the JSON routes' 403; nothing is kept.
    sign_in(c, &app, &token("acme", "agent")).await;
    wait_text(c, "#signin-error", "403").await;
    shot(c, "signin-refused").await;

    // Sign in as the operator: the projects list.
    sign_in(c, &app, &op).await;
    wait_text(c, "#projects", "web").await;
    let listed = wait_text(c, "#projects", "docs").await;
    assert!(listed.contains('3'), "web's base revision 3: {listed}");
    // Search narrows the list.
    c.find(Locator::Css("#search"))
        .await
        .unwrap()
        .send_keys("we")
        .await
        .unwrap();
    for _ in 0..50 {
        let t = c
            .find(Locator::Css("#projects"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if !t.contains("docs") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let t = c
        .find(Locator::Css("#projects"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(t.contains("web") && !t.contains("docs"), "{t}");
    shot(c, "projects").await;

    // A project: three revisions, each a rendered diff.
    c.goto(&app.url("/brain-admin/#/project/web"))
        .await
        .unwrap();
    wait_text(c, "#history", "revision 3").await;
    let revisions = c
        .find_all(Locator::Css("#history .revision"))
        .await
        .unwrap();
    assert_eq!(revisions.len(), 3);
    let added = c.find_all(Locator::Css("#rev-3 .diff .add")).await.unwrap();
    let removed = c.find_all(Locator::Css("#rev-3 .diff .del")).await.unwrap();
    assert!(added[0].text().await.unwrap().contains("Ship the console."));
    assert!(
        removed[0]
            .text()
            .await
            .unwrap()
            .contains("Ship the resources.")
    );
    wait_text(c, "#sessions", "step 3").await;
    // Each revision links to its session's receipts and to its own receipt.
    let links = c.find_all(Locator::Css("#rev-3 .meta a")).await.unwrap();
    let mut hrefs = Vec::new();
    for l in &links {
        hrefs.push(l.attr("href").await.unwrap().unwrap_or_default());
    }
    assert!(
        hrefs
            .iter()
            .any(|h| h.starts_with("#/receipts?session_id=sess_")),
        "{hrefs:?}"
    );
    assert!(hrefs.iter().any(|h| h == "#/receipts?since=5"), "{hrefs:?}");
    wait_text(c, "main", "ui slot is taken").await;
    // The slots card lists "ui" as a link to that slot's page.
    wait_text(c, "a[href='#/project/web/slot/ui']", "ui").await;
    shot(c, "project").await;

    // Deleting a project asks for its name typed again.
    c.goto(&app.url("/brain-admin/#/project/docs"))
        .await
        .unwrap();
    wait_text(c, "#delete-card", "Type docs to confirm").await;
    let button = c.find(Locator::Css("#delete-project")).await.unwrap();
    assert_eq!(
        button.attr("disabled").await.unwrap().as_deref(),
        Some("true")
    );
    c.find(Locator::Css("#delete-confirm"))
        .await
        .unwrap()
        .send_keys("docs")
        .await
        .unwrap();
    assert_eq!(button.attr("disabled").await.unwrap(), None);
    button.click().await.unwrap();
    let left = wait_text(c, "#projects", "web").await;
    assert!(!left.contains("docs"), "{left}");

    // Receipts: the chain verifies, then a tampered receipt shows its seq.
    c.goto(&app.url("/brain-admin/#/receipts")).await.unwrap();
    wait_text(c, "#receipts", "brain_session_end").await;
    c.find(Locator::Css("#verify"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(c, "#verify-result", "Chain OK").await;
    shot(c, "receipts").await;
    exec(
        &app,
        "UPDATE receipts SET outcome = 'forged' WHERE tenant_id = 'acme' AND seq = 2",
    )
    .await;
    c.find(Locator::Css("#verify"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(c, "#verify-result", "broken at seq 2").await;
    // The timeline now shows the forged receipt, marked.
    wait_text(c, "#receipts tr.broken", "forged").await;
    shot(c, "receipts-broken").await;

    // Elevations: grant on the operator's own connection, then revoke.
    c.goto(&app.url("/brain-admin/#/elevations")).await.unwrap();
    wait_text(c, "#target", "connection").await;
    c.find(Locator::Css("#reason"))
        .await
        .unwrap()
        .send_keys("shrink the web focus after review")
        .await
        .unwrap();
    c.find(Locator::Css("#grant"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(c, "#elevations", "shrink the web focus after review").await;
    shot(c, "elevations").await;
    c.find(Locator::Css("button[data-revoke]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(c, "#elevations", "No active elevations").await;

    // Sign out: the navigation, the operator's name and the button go.
    c.find(Locator::Css("#signout"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.wait().for_element(Locator::Css("#token")).await.unwrap();
    assert!(!nav_shown(c).await, "the navigation stays after sign-out");
    shot(c, "signed-out").await;

    // A link that carries a token signs nothing in by itself (third hostile
    // review, L3: anyone could send one for their own tenant): it asks.
    let link = app.url(&format!("/brain-admin/#token={op}"));
    c.goto("about:blank").await.unwrap();
    c.goto(&link).await.unwrap();
    wait_text(c, "#link-confirm", "ops @ acme (role operator)").await;
    assert_eq!(
        stored_tokens(c).await,
        0,
        "signed in before the operator said so"
    );
    assert!(!nav_shown(c).await);
    assert!(!c.current_url().await.unwrap().as_str().contains("token="));
    shot(c, "link-confirm").await;
    c.find(Locator::Css("#link-decline"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(c, "#signin-error", "The link was not used").await;
    assert_eq!(stored_tokens(c).await, 0);
    c.goto("about:blank").await.unwrap();
    c.goto(&link).await.unwrap();
    c.wait()
        .for_element(Locator::Css("#link-accept"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(c, "#projects", "web").await;
    assert!(nav_shown(c).await);
    wait_text(c, "#who", "ops @ acme").await;

    // An operator with nothing to elevate is told where a target comes from.
    let newcomer = token_with(json!({"tenant": "acme", "sub": "new-op", "role": "operator"}));
    sign_in(c, &app, &newcomer).await;
    wait_text(c, "#projects", "web").await;
    c.goto(&app.url("/brain-admin/#/elevations")).await.unwrap();
    wait_text(c, "#no-targets", "opened with this same operator token").await;
    shot(c, "elevations-no-target").await;

    b.client.close().await.unwrap();
}

async fn nav_shown(c: &Client) -> bool {
    c.find(Locator::Css("#nav"))
        .await
        .unwrap()
        .is_displayed()
        .await
        .unwrap()
}

async fn stored_tokens(c: &Client) -> u64 {
    c.execute("return sessionStorage.length;", vec![])
        .await
        .unwrap()
        .as_u64()
        .unwrap()
}
