//! The deployment files are not run by CI (no Docker engine or cluster here),
//! so their shape is checked: they parse, and they agree with each other and
//! with the server's configuration.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_yaml_ng::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn yaml_docs(rel: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(&read(rel))
        .map(|d| serde::Deserialize::deserialize(d).unwrap_or_else(|e| panic!("{rel}: {e}")))
        .collect()
}

fn s<'a>(v: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(v, |v, k| match k.parse::<usize>() {
        Ok(i) => &v[i],
        Err(_) => &v[*k],
    })
}

/// Every `BRAIN_*` setting the server reads, from the README's configuration table.
/// The settings docs/reference.md lists (tests/docs.rs holds that list to
/// what the server reads).
fn known_settings() -> BTreeSet<String> {
    read("docs/reference.md")
        .lines()
        .filter(|l| l.starts_with("| `BRAIN_") || l.starts_with("| `DATABASE_URL"))
        .filter_map(|l| l.split('`').nth(1).map(str::to_owned))
        .collect()
}

#[test]
fn dockerfile_is_multi_stage_non_root_and_healthchecked() {
    let d = read("deploy/Dockerfile");
    assert!(
        d.matches("\nFROM ").count() + usize::from(d.starts_with("FROM ")) >= 2,
        "multi-stage"
    );
    // The dependency build comes before the sources are copied in.
    let deps = d
        .find("cargo build --release --locked -p brain-server \\")
        .expect("dependency layer");
    let sources = d.find("COPY crates crates").expect("source layer");
    assert!(deps < sources);
    assert!(d.contains("USER 10001"), "non-root");
    assert!(d.contains("ENTRYPOINT [\"brain\", \"serve\"]"));
    assert!(d.contains("HEALTHCHECK") && d.contains("/readyz"));
    // Every crate's manifest is copied for the dependency layer.
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            d.contains(&format!("COPY crates/{name}/Cargo.toml")),
            "{name}"
        );
    }
}

#[test]
fn compose_runs_brain_on_a_healthy_postgres() {
    let docs = yaml_docs("docker-compose.yml");
    let c = &docs[0];
    let pg = s(c, &["services", "postgres"]);
    assert!(s(pg, &["healthcheck", "test"]).is_sequence());
    let volume = s(pg, &["volumes", "0"]).as_str().unwrap();
    let named = volume.split(':').next().unwrap();
    assert!(
        !s(c, &["volumes", named]).is_string(),
        "named volume {named} declared"
    );
    assert!(c["volumes"].as_mapping().unwrap().contains_key(named));
    let brain = s(c, &["services", "brain"]);
    assert_eq!(
        s(brain, &["build", "dockerfile"]).as_str(),
        Some("deploy/Dockerfile")
    );
    assert!(root().join("deploy/Dockerfile").exists());
    assert_eq!(
        s(brain, &["depends_on", "postgres", "condition"]).as_str(),
        Some("service_healthy")
    );
    assert_eq!(s(brain, &["env_file"]).as_str(), Some(".env"));
    assert!(
        s(brain, &["environment", "DATABASE_URL"])
            .as_str()
            .unwrap()
            .starts_with("postgres://")
    );
    assert!(
        s(brain, &["ports"])
            .as_sequence()
            .unwrap()
            .iter()
            .any(|p| p.as_str() == Some("${HOST_PORT:-8080}:8080"))
    );
    assert!(s(brain, &["healthcheck", "test"]).is_sequence());
    // brain connects as the unprivileged role the init script creates, never
    // as the administrator (who would bypass row-level security).
    let url = s(brain, &["environment", "DATABASE_URL"]).as_str().unwrap();
    assert!(url.contains("${DB_APP_USER}") && !url.contains("POSTGRES_USER"));
    assert!(
        s(pg, &["volumes"])
            .as_sequence()
            .unwrap()
            .iter()
            .any(|v| v.as_str() == Some("./deploy/postgres:/docker-entrypoint-initdb.d:ro"))
    );
    // Every ${VAR} the file uses is defined in .env.example.
    let example = read(".env.example");
    let defined: BTreeSet<&str> = example
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    let text = read("docker-compose.yml");
    for part in text.split("${").skip(1) {
        let var = part.split('}').next().unwrap();
        // `${VAR:-default}` works without it.
        if var.contains(":-") {
            continue;
        }
        assert!(defined.contains(var), "{var} missing from .env.example");
    }
    let known = known_settings();
    for var in defined.iter().filter(|v| v.starts_with("BRAIN_")) {
        assert!(known.contains(*var), "{var} is not a setting brain reads");
    }
}

#[test]
fn kubernetes_manifests_run_replicas_with_probes_secrets_and_migrations() {
    let mut by_kind = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(root().join("deploy/k8s")).unwrap() {
        let path = entry.unwrap().path();
        let rel = path
            .strip_prefix(root())
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        for doc in yaml_docs(&rel) {
            let kind = doc["kind"].as_str().unwrap().to_owned();
            by_kind.insert(kind, doc);
        }
    }
    for kind in ["Deployment", "Service", "Secret", "Job"] {
        assert!(by_kind.contains_key(kind), "{kind}");
    }
    let dep = &by_kind["Deployment"];
    assert!(s(dep, &["spec", "replicas"]).as_u64().unwrap() >= 2);
    let pod = s(dep, &["spec", "template", "spec"]);
    assert_eq!(
        s(pod, &["securityContext", "runAsNonRoot"]).as_bool(),
        Some(true)
    );
    let container = s(pod, &["containers", "0"]);
    assert_eq!(
        s(container, &["readinessProbe", "httpGet", "path"]).as_str(),
        Some("/readyz")
    );
    assert_eq!(
        s(container, &["livenessProbe", "httpGet", "path"]).as_str(),
        Some("/healthz")
    );
    // The Service selects the Deployment's pods.
    let labels = s(dep, &["spec", "template", "metadata", "labels"])
        .as_mapping()
        .unwrap();
    for (k, v) in s(&by_kind["Service"], &["spec", "selector"])
        .as_mapping()
        .unwrap()
    {
        assert_eq!(labels.get(k), Some(v), "selector {k:?}");
    }
    // Secrets referenced exist in the Secret, for the Deployment and the Job.
    let secret = &by_kind["Secret"];
    let secret_name = s(secret, &["metadata", "name"]).as_str().unwrap();
    let keys = s(secret, &["stringData"]).as_mapping().unwrap();
    let known = known_settings();
    let job_container = s(
        &by_kind["Job"],
        &["spec", "template", "spec", "containers", "0"],
    );
    assert!(
        s(job_container, &["command"])
            .as_sequence()
            .unwrap()
            .iter()
            .any(|a| a.as_str() == Some("migrate"))
    );
    let mut from_secret = BTreeSet::new();
    for c in [container, job_container] {
        for env in s(c, &["env"]).as_sequence().unwrap() {
            let name = env["name"].as_str().unwrap();
            assert!(known.contains(name), "{name} is not a setting brain reads");
            if let Some(r) = env.get("valueFrom").and_then(|v| v.get("secretKeyRef")) {
                assert_eq!(r["name"].as_str(), Some(secret_name));
                assert!(keys.contains_key(r["key"].as_str().unwrap()));
                from_secret.insert(name.to_owned());
            }
        }
    }
    assert!(from_secret.contains("DATABASE_URL") && from_secret.contains("BRAIN_JWT_HS256_SECRET"));
    // The migrate Job first creates the unprivileged role, from the Secret.
    let init = s(
        &by_kind["Job"],
        &["spec", "template", "spec", "initContainers", "0"],
    );
    let script = s(init, &["command", "2"]).as_str().unwrap();
    assert!(script.contains("NOSUPERUSER NOBYPASSRLS"));
    for env in s(init, &["env"]).as_sequence().unwrap() {
        let key = env["valueFrom"]["secretKeyRef"]["key"].as_str().unwrap();
        assert!(keys.contains_key(key), "{key} missing from the Secret");
    }
}

/// The Compose init script, run for real against the test server: it makes a
/// role that owns its database, is bound by row-level security, and can run
/// brain's migrations; running it twice changes nothing.
#[tokio::test]
async fn the_role_script_makes_an_unprivileged_owner() {
    let admin = brain_testkit::db::admin_url();
    let role = format!("brain_role_{}", uuid::Uuid::new_v4().simple());
    let opts: sqlx::postgres::PgConnectOptions = admin.parse().unwrap();
    let password = admin
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split_once('@'))
        .and_then(|(creds, _)| creds.split_once(':'))
        .map_or(String::new(), |(_, pw)| pw.to_owned());
    let run = || {
        std::process::Command::new("sh")
            .arg(root().join("deploy/postgres/10-brain-role.sh"))
            .env("POSTGRES_USER", opts.get_username())
            .env("PGHOST", opts.get_host())
            .env("PGPORT", opts.get_port().to_string())
            .env("PGPASSWORD", &password)
            .env("DB_APP_USER", &role)
            .env("DB_APP_PASSWORD", "pw")
            .env("DB_APP_NAME", &role)
            .output()
            .unwrap()
    };
    for _ in 0..2 {
        let out = run();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let url = format!(
        "postgres://{role}:pw@{}:{}/{role}",
        opts.get_host(),
        opts.get_port()
    );
    let store = brain_store_postgres::PgStore::connect(&url, Default::default())
        .await
        .unwrap();
    store.migrate().await.unwrap();
    assert!(!store.rls_bypassed().await.unwrap());
    store.pool().close().await;
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&admin)
        .await
        .unwrap();
    sqlx::query(&format!("DROP DATABASE {role} WITH (FORCE)"))
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::query(&format!("DROP ROLE {role}"))
        .execute(&mut conn)
        .await
        .unwrap();
}
