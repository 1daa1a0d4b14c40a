//! Opening the store and serving the front door on a bound listener.

use std::sync::Arc;

use anyhow::{Context, bail};
use axum::Router;
use axum::serve::ListenerExt;
use brain_core::store::{Store, StoreSettings};
use brain_store_postgres::PgStore;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Open the store named by the URL's scheme and apply pending migrations.
pub async fn open_store(url: &str, settings: StoreSettings) -> anyhow::Result<Arc<dyn Store>> {
    let scheme = url.split_once("://").map(|(s, _)| s).unwrap_or("");
    match scheme {
        "postgres" | "postgresql" => {
            let store = PgStore::connect(url, settings)
                .await
                .context("cannot connect to PostgreSQL at DATABASE_URL")?;
            store.migrate().await.context("cannot apply migrations")?;
            Ok(Arc::new(store))
        }
        "sqlite" => bail!(
            "the embedded SQLite store is not available yet; set DATABASE_URL=postgres://… (see README)"
        ),
        _ => bail!("DATABASE_URL must start with postgres:// (or sqlite:// once the embedded store lands)"),
    }
}

/// Serve `app` until `shutdown` is cancelled. Every accepted socket gets
/// `TCP_NODELAY`: without it, each streamed MCP reply waits ~40 ms for the
/// peer's delayed ACK (Nagle), on every call.
pub async fn serve(listener: TcpListener, app: Router, shutdown: CancellationToken) -> std::io::Result<()> {
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::warn!(error = %e, "could not set TCP_NODELAY");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}
