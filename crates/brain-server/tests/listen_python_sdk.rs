//! `subscriptions/listen` (protocol 2026-07-28) heard through the official
//! Python SDK's `Client.listen()`, across two real replicas on one
//! PostgreSQL: the script `tests/listen/two_replicas.py` listens on replica A
//! while another client writes on replica B, and checks tenant scoping and
//! the per-credential bound.
//!
//! The SDK (`mcp` 2.3.0 from PyPI) is installed once into a virtualenv under
//! `~/.cache/brain-listen` (or `BRAIN_TEST_PYTHON` names a Python that has it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use brain_testkit::TestDb;
use brain_testkit::app::{ServerProcess, TestBackend, token};

const SDK: &str = "mcp==2.3.0";

/// A Python with the SDK, installed on first use.
fn python() -> PathBuf {
    if let Ok(p) = std::env::var("BRAIN_TEST_PYTHON") {
        return PathBuf::from(p);
    }
    let home = std::env::var("HOME").expect("HOME");
    let venv = PathBuf::from(home).join(".cache/brain-listen/venv");
    let py = venv.join("bin/python");
    let has_sdk = |py: &PathBuf| {
        std::process::Command::new(py)
            .args(["-c", "import mcp.client.subscriptions"])
            .status()
            .is_ok_and(|s| s.success())
    };
    if !has_sdk(&py) {
        let made = std::process::Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .expect("python3 -m venv");
        assert!(
            made.success(),
            "python3 -m venv failed (needs python3-venv)"
        );
        let pip = std::process::Command::new(venv.join("bin/pip"))
            .args(["install", "-q", SDK])
            .status()
            .expect("pip");
        assert!(pip.success(), "pip install {SDK} failed");
    }
    assert!(has_sdk(&py), "{} lacks the SDK", py.display());
    py
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_python_sdk_hears_changes_made_on_another_replica() {
    let py = tokio::task::spawn_blocking(python).await.unwrap();
    let db = TestBackend::Postgres(TestDb::create().await.unwrap());
    let bin = env!("CARGO_BIN_EXE_brain");
    let a = ServerProcess::start(bin, &db, &[]).await;
    let b = ServerProcess::start(bin, &db, &[]).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/listen/two_replicas.py");
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        tokio::process::Command::new(py)
            .arg(script)
            .args([&a.base, &b.base])
            .args([
                token("acme", "alice"),
                token("acme", "bob"),
                token("other", "eve"),
                token("acme", "eve"),
            ])
            .output(),
    )
    .await
    .expect("the script finished within 120 s")
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for line in [
        "acknowledged: ['brain://projects/p/focus', 'brain://projects/p/slots/ui']",
        "replica A heard replica B's end",
        "the slot's change too",
        "another tenant listening to the same URI heard nothing",
        "a ninth stream of one credential is refused",
        "the same subject in another tenant keeps its own budget",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in\n{stdout}");
    }
}
