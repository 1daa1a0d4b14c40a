//! `brain serve --dev`: the one-command local start. The HS256 secret is
//! generated once and kept beside the database (mode 0600), so tokens printed
//! on one start keep working on the next.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use serde_json::json;

use brain_core::ids::TenantId;
use brain_core::store::Store;

use crate::config::{Secret, ServeConfig};

/// The file of a `sqlite://` URL, when it names one.
fn sqlite_path(database_url: &str) -> Option<&str> {
    database_url
        .strip_prefix("sqlite://")
        .or_else(|| database_url.strip_prefix("sqlite:"))
        .map(|rest| rest.split('?').next().unwrap_or(rest))
        .filter(|p| !p.is_empty() && !p.contains(":memory:") && *p != "memory")
}

/// Whether the URL names a SQLite file that does not exist yet.
pub fn sqlite_file_missing(database_url: &str) -> bool {
    sqlite_path(database_url).is_some_and(|p| !std::path::Path::new(p).exists())
}

/// Where the dev secret lives: beside a SQLite file, else in the working folder.
pub fn secret_path(database_url: &str) -> PathBuf {
    match sqlite_path(database_url) {
        Some(path) => PathBuf::from(format!("{path}.secret")),
        None => PathBuf::from("brain-dev.secret"),
    }
}

/// The dev secret, when `serve --dev` has written one beside this database.
pub fn existing_secret(database_url: &str) -> anyhow::Result<Option<Secret>> {
    let path = secret_path(database_url);
    match std::fs::read_to_string(&path) {
        Ok(s) => Ok(Some(Secret::new(s.trim()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Read the dev secret, creating it on first use.
pub fn secret(database_url: &str) -> anyhow::Result<Secret> {
    let path = secret_path(database_url);
    if let Ok(existing) = std::fs::read_to_string(&path) {
        let existing = existing.trim();
        if existing.len() >= 32 {
            return Ok(Secret::new(existing));
        }
    }
    let generated = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut f = options
        .open(&path)
        .with_context(|| format!("cannot write the dev secret to {}", path.display()))?;
    f.write_all(generated.as_bytes())?;
    tracing::info!(path = %path.display(), "generated a development HS256 secret");
    Ok(Secret::new(generated))
}

/// Where the dev agent's shared token is kept: beside the secret.
fn agent_token_path(database_url: &str) -> PathBuf {
    let mut p = secret_path(database_url).into_os_string();
    p.push(".agent-token");
    PathBuf::from(p)
}

/// The dev agent's shared token: the one kept beside the database while it is
/// still live, else a new one (kept there, mode 0600). A shared token does
/// not expire (a JWT did, after 7 days, and the printed configuration with
/// it) and is an agent's: it can never override a guard.
async fn agent_token(store: &dyn Store, database_url: &str) -> anyhow::Result<String> {
    let path = agent_token_path(database_url);
    if let Ok(kept) = std::fs::read_to_string(&path) {
        let kept = kept.trim();
        let hash = brain_core::operators::shared_token_hash(kept);
        if store.shared_token_find(&hash).await?.is_some() {
            return Ok(kept.to_owned());
        }
    }
    let tenant = TenantId::parse(DEV_TENANT)?;
    // The one kept beside the database is gone: earlier dev agents' tokens
    // (whose secret nobody holds any more) are revoked, so starts do not pile
    // up live credentials.
    for old in store.shared_token_list(&tenant).await? {
        if old.name.starts_with("dev-agent-") && old.revoked_at.is_none() {
            store.shared_token_revoke(&tenant, &old.name).await?;
        }
    }
    let name = format!("dev-agent-{}", chrono::Utc::now().timestamp_micros());
    let (_, secret) = store.shared_token_create(&tenant, &name).await?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut f = options
        .open(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    f.write_all(secret.as_bytes())?;
    tracing::info!(path = %path.display(), token = %name, "created the development agent's shared token");
    Ok(secret)
}

/// The tenant `serve --dev` prints a configuration for.
const DEV_TENANT: &str = "dev";

/// Print an MCP client configuration: the JSON alone on stdout (so it can be
/// redirected into a file), the words around it on stderr. Its credential is
/// the dev agent's shared token, which keeps working across restarts and
/// does not expire.
pub async fn print_client_config(
    cfg: &ServeConfig,
    addr: SocketAddr,
    store: &dyn Store,
) -> anyhow::Result<()> {
    if cfg.jwt.hs256_secret.is_none() {
        return Ok(());
    }
    let token = agent_token(store, &cfg.database.url).await?;
    let url = match &cfg.public_url {
        Some(u) => format!("{}/mcp", u.trim_end_matches('/')),
        None => format!("http://{addr}/mcp"),
    };
    let config = json!({
        "mcpServers": {
            "brain": {
                "type": "http",
                "url": url,
                "headers": {"Authorization": format!("Bearer {token}")}
            }
        }
    });
    let text = serde_json::to_string_pretty(&config)?;
    eprintln!(
        "brain is running. Paste the JSON below (stdout) into your MCP client's configuration: \
         tenant \"{DEV_TENANT}\", an agent's shared token that does not expire (kept in {}; \
         revoke it with brain token shared revoke --tenant {DEV_TENANT} --name NAME). An operator's \
         token: brain token mint --tenant {DEV_TENANT} --sub NAME --role operator (it finds {} by \
         itself). No network credential at all: brain stdio --tenant {DEV_TENANT}.",
        agent_token_path(&cfg.database.url).display(),
        secret_path(&cfg.database.url).display()
    );
    println!("{text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_sits_beside_the_database() {
        assert_eq!(
            secret_path("sqlite://./brain.db"),
            PathBuf::from("./brain.db.secret")
        );
        assert_eq!(
            secret_path("sqlite:///var/lib/brain/b.db?mode=rwc"),
            PathBuf::from("/var/lib/brain/b.db.secret")
        );
        assert_eq!(
            secret_path("sqlite::memory:"),
            PathBuf::from("brain-dev.secret")
        );
        assert_eq!(
            secret_path("postgres://x/y"),
            PathBuf::from("brain-dev.secret")
        );
    }
}
