//! `brain serve --dev`: the one-command local start. The HS256 secret is
//! generated once and kept beside the database (mode 0600), so tokens printed
//! on one start keep working on the next.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use serde_json::json;

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

/// Print an MCP client configuration with a fresh token: the JSON alone on
/// stdout (so it can be redirected into a file), the words around it on stderr.
pub fn print_client_config(cfg: &ServeConfig, addr: SocketAddr) -> anyhow::Result<()> {
    let Some(secret) = &cfg.jwt.hs256_secret else {
        return Ok(());
    };
    let subject = std::env::var("USER").unwrap_or_else(|_| "dev".to_owned());
    let token = crate::token::mint(&crate::token::MintRequest {
        secret: secret.expose(),
        issuer: &cfg.jwt.issuer,
        audience: &cfg.jwt.audience,
        tenant: "dev",
        subject: if subject.trim().is_empty() {
            "dev"
        } else {
            &subject
        },
        role: "agent",
        ttl_secs: 7 * 24 * 3600,
    })?;
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
        "brain is running. Paste the JSON below (stdout) into your MCP client's configuration; \
         the token is valid 7 days, tenant \"dev\". Another token: brain token mint --tenant dev --sub NAME \
         (it finds {} by itself).",
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
