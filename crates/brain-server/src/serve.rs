//! Opening the store and serving the front door on a bound listener.

use std::sync::Arc;

use anyhow::{Context, bail};
use axum::Router;
use axum::serve::{ListenerExt, TapIo};
use brain_core::store::{Store, StoreSettings};
use brain_store_postgres::PgStore;
use brain_store_sqlite::SqliteStore;
use tokio::net::{TcpListener, TcpStream};
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
        "sqlite" => {
            let store = SqliteStore::connect(url, settings)
                .await
                .context("cannot open the SQLite database at DATABASE_URL")?;
            store.migrate().await.context("cannot apply migrations")?;
            Ok(Arc::new(store))
        }
        _ => bail!("DATABASE_URL must start with sqlite:// or postgres://"),
    }
}

/// A listener whose every accepted socket has `TCP_NODELAY` set.
pub fn with_nodelay(listener: TcpListener) -> TapIo<TcpListener, fn(&mut TcpStream)> {
    listener.tap_io(set_nodelay as fn(&mut TcpStream))
}

fn set_nodelay(tcp: &mut TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::warn!(error = %e, "could not set TCP_NODELAY");
    }
}

/// Serve `app` until `shutdown` is cancelled. Every accepted socket gets
/// `TCP_NODELAY`: without it, each streamed MCP reply waits ~40 ms for the
/// peer's delayed ACK (Nagle), on every call.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    axum::serve(with_nodelay(listener), app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::serve::Listener;

    #[tokio::test]
    async fn accepted_sockets_have_nodelay() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut listener = with_nodelay(listener);
        let client = tokio::spawn(tokio::net::TcpStream::connect(addr));
        let (io, _) = listener.accept().await;
        assert!(
            io.nodelay().unwrap(),
            "accepted socket must have TCP_NODELAY"
        );
        client.await.unwrap().unwrap();
    }
}
