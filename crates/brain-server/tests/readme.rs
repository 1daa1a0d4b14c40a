//! The commands of the README and docs/, run: every line of every ```sh block is either
//! executed here (in one shell, in order, against the servers the README's own
//! `serve` lines start) or named below as not runnable on this machine, with
//! the reason and what is checked instead. A new command in the README that
//! fails here, fails the suite.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use brain_testkit::TestDb;

/// Commands this test does not execute, and why.
const NOT_RUN: &[(&str, &str)] = &[
    (
        "scripts/test",
        "it is the command running this test; CI runs it from a fresh clone",
    ),
    (
        "cargo install",
        "a second full release build; the bin target `brain` of crates/brain-server is checked instead",
    ),
    (
        "cp .env.example",
        "part of the Compose path; .env.example is checked to exist",
    ),
    (
        "docker ",
        "no Docker engine on CI; tests/deploy_files.rs parses the compose file",
    ),
    (
        "kubectl ",
        "no cluster on CI; the manifests named are checked to exist",
    ),
];

/// The example database URLs the README uses, swapped for a test database:
/// brain's own unprivileged role, and a backup role that row-level security
/// does not bind.
const EXAMPLE_PG: &str = "postgres://brain:secret@db.internal:5432/brain";
const EXAMPLE_BACKUP: &str = "postgres://backup:secret@db.internal:5432/brain";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every command of every ```sh block, continuation lines joined.
fn commands(readme: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in readme.lines() {
        let t = line.trim_end();
        if !in_sh {
            in_sh = t == "```sh";
            continue;
        }
        if t == "```" {
            in_sh = false;
            continue;
        }
        if let Some(head) = t.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(t);
        let cmd = std::mem::take(&mut pending);
        let cmd = cmd.trim();
        if !cmd.is_empty() && !cmd.starts_with('#') {
            out.push(cmd.to_owned());
        }
    }
    out
}

/// A folder removed with everything in it when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!(
            "brain-readme-{tag}-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The README's commands, then those of each page of docs/ in name order.
fn all_commands() -> Vec<String> {
    let mut pages = vec![repo().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
        .iter()
        .flat_map(|p| commands(&std::fs::read_to_string(p).unwrap()))
        .collect()
}

#[tokio::test]
async fn every_readme_command_runs() {
    let cmds = all_commands();
    assert!(
        cmds.len() > 10,
        "README and docs commands not found: {cmds:?}"
    );

    let db = TestDb::create().await.unwrap();
    let work = TempDir::new("work");
    let bin = TempDir::new("bin");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_brain"), bin.path().join("brain")).unwrap();
    let dev_port = free_port();

    let mut script = String::from(
        "set -euo pipefail\nPIDS=''\ntrap 'for p in $PIDS; do kill $p 2>/dev/null || true; done; wait' EXIT\n\
         ready() { for _ in $(seq 1 300); do brain healthcheck --url http://127.0.0.1:$1/readyz >/dev/null 2>&1 && return 0; sleep 0.1; done; cat serve_$1.err; return 1; }\n",
    );
    let mut skipped = Vec::new();
    let mut servers = 0;
    for cmd in &cmds {
        if let Some((_, why)) = NOT_RUN.iter().find(|(p, _)| cmd.starts_with(p)) {
            skipped.push((cmd.clone(), *why));
            continue;
        }
        let cmd = cmd
            .replace("cargo run --release -p brain-server -- ", "brain ")
            .replace(EXAMPLE_PG, &db.url)
            .replace(EXAMPLE_BACKUP, &db.inspect_url)
            .replace("127.0.0.1:8080", &format!("127.0.0.1:{dev_port}"));
        script.push_str(&format!("echo \"+ \"{}\n", sh_quote(&cmd)));
        if cmd.contains("brain serve") {
            // The first server is the --dev one the later commands talk to; the
            // others only have to come up.
            let port = if servers == 0 { dev_port } else { free_port() };
            servers += 1;
            script.push_str(&format!(
                "{cmd} --listen 127.0.0.1:{port} >serve_{port}.out 2>serve_{port}.err &\nPIDS=\"$PIDS $!\"\nready {port}\n"
            ));
            if servers > 1 {
                script.push_str("kill $! && wait $! || true\n");
            }
        } else {
            script.push_str(&cmd);
            script.push('\n');
        }
    }
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(work.path())
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.path().display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("USER", "readme")
        .env_remove("DATABASE_URL")
        .env_remove("BRAIN_JWT_HS256_SECRET")
        .env_remove("BRAIN_JWT_PUBLIC_KEYS")
        .env_remove("BRAIN_LISTEN")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "a README command failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}\n--- script\n{script}"
    );

    // What the commands printed is what the README says they print.
    let client: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(work.path().join(format!("serve_{dev_port}.out"))).unwrap(),
    )
    .expect("serve --dev prints valid JSON alone on stdout");
    assert!(
        client["mcpServers"]["brain"]["headers"]["Authorization"]
            .as_str()
            .unwrap()
            .starts_with("Bearer brain_st_")
    );
    for expected in [
        "\"id\":\"elv_",   // the elevation grant answered with its id
        "brain_st_",       // a shared token was created and shown once
        "\n200\n",         // the elevation was revoked
        "OK tenant=dev",   // the restored backup's chain verifies
        "revoked ci-bots", // the shared token was revoked
    ] {
        assert!(
            stdout.contains(expected),
            "README output lacks {expected:?}\n{stdout}\n{stderr}"
        );
    }

    // What was not run is checked another way.
    let names: Vec<&str> = skipped.iter().map(|(c, _)| c.as_str()).collect();
    assert!(names.iter().any(|c| c.starts_with("scripts/test")));
    let manifest = std::fs::read_to_string(repo().join("crates/brain-server/Cargo.toml")).unwrap();
    assert!(manifest.contains("name = \"brain\""), "bin target brain");
    assert!(repo().join(".env.example").exists());
    for (cmd, _) in &skipped {
        for word in cmd.split_whitespace() {
            if word.starts_with("deploy/") {
                assert!(repo().join(word).exists(), "{cmd}: {word} is missing");
            }
        }
    }
}

#[test]
fn not_run_commands_are_few_and_named() {
    let skipped = all_commands()
        .into_iter()
        .filter(|c| NOT_RUN.iter().any(|(p, _)| c.starts_with(p)))
        .count();
    assert!(
        skipped <= 7,
        "{skipped} README and docs commands are not run"
    );
}
