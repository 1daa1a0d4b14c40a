//! Opening the store and serving the front door on a bound listener.

use std::sync::Arc;

use std::time::Duration;

use anyhow::{Context, bail};
use axum::Router;
use brain_core::store::{Store, StoreSettings};
use brain_store_postgres::PgStore;
use brain_store_sqlite::SqliteStore;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Open the store named by the URL's scheme and apply pending migrations.
pub async fn open_store(url: &str, settings: StoreSettings) -> anyhow::Result<Arc<dyn Store>> {
    let scheme = url.split_once("://").map(|(s, _)| s).unwrap_or("");
    match scheme {
        "postgres" | "postgresql" => {
            let remember_focus = settings.remember_focus;
            let store = PgStore::connect(url, settings)
                .await
                .context("cannot connect to PostgreSQL at DATABASE_URL")?;
            store.migrate().await.context("cannot apply migrations")?;
            if !store
                .receipt_hash_agrees()
                .await
                .context("cannot check the database's receipt hashing")?
            {
                anyhow::bail!(
                    "PostgreSQL hashes a receipt's text differently from brain (is the \
                     database's encoding UTF8?): refusing to serve, receipts would not verify"
                );
            }
            if let Some(level) = store
                .isolation_not_read_committed()
                .await
                .context("cannot read the database's isolation level")?
            {
                anyhow::bail!(
                    "PostgreSQL gives brain's transactions the isolation level {level:?}; brain's \
                     writes are made for \"read committed\" and would answer stale counts or fail \
                     under it: refusing to serve; set it back for brain's role (ALTER ROLE ... SET \
                     default_transaction_isolation = 'read committed'; docs/deploy.md)"
                );
            }
            if store.rls_bypassed().await.unwrap_or(false) {
                tracing::warn!(
                    "the database role is a superuser or has BYPASSRLS: row-level security, the \
                     second tenant wall, is not in force; run brain as an unprivileged role \
                     (docs/deploy.md, The database role)"
                );
            }
            if store.autovacuum_off().await.unwrap_or(false) {
                tracing::warn!(
                    "PostgreSQL's autovacuum is off: nothing refreshes the planner's statistics \
                     or removes dead rows, so writes slow down as the tables grow; turn it on, \
                     or run VACUUM ANALYZE regularly (docs/performance.md)"
                );
            }
            Ok(Arc::new(if remember_focus {
                PgStore::new(store.0.remembering_focus())
            } else {
                store
            }))
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

/// How the front door treats sockets (SPEC §4: hostile clients cannot exhaust it).
#[derive(Debug, Clone, Copy)]
pub struct SocketLimits {
    /// Sockets served at once; at the cap, new ones wait in the kernel's backlog.
    pub max_sockets: usize,
    /// A client that has not sent a request's headers by then is disconnected.
    pub header_timeout: Duration,
    /// A write of an answer that the peer lets make no progress for this long
    /// fails, and the connection is dropped ([`crate::stall`]).
    pub write_stall: Duration,
}

impl Default for SocketLimits {
    fn default() -> Self {
        Self {
            max_sockets: 4_096,
            header_timeout: Duration::from_secs(10),
            write_stall: Duration::from_secs(30),
        }
    }
}

/// Raise this process's open-file limit to the hard limit, and keep the socket
/// cap under it (leaving room for the database pool, logs and migrations).
pub fn fit_socket_cap(wanted: usize) -> usize {
    let limit = rlimit::increase_nofile_limit(u64::MAX).unwrap_or(1_024);
    let room = usize::try_from(limit.saturating_sub(128)).unwrap_or(usize::MAX);
    wanted.min(room).max(16)
}

fn set_nodelay(tcp: &TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::warn!(error = %e, "could not set TCP_NODELAY");
    }
}

/// Serve `app` until `shutdown` is cancelled, then wait for open connections
/// to finish. Every accepted socket gets `TCP_NODELAY` (without it each
/// streamed MCP reply waits ~40 ms for the peer's delayed ACK), a header-read
/// timeout, a bound on how long a write may wait for the peer, and a slot
/// under the socket cap.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: CancellationToken,
    limits: SocketLimits,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_sockets.max(1)));
    let graceful = GracefulShutdown::new();
    loop {
        let slot = tokio::select! {
            s = slots.clone().acquire_owned() => match s {
                Ok(s) => s,
                Err(_) => break,
            },
            _ = shutdown.cancelled() => break,
        };
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => break,
        };
        set_nodelay(&stream);
        let app = app.clone();
        let watcher = graceful.watcher();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            // hyper 1.12 arms its header timer whenever it waits for a
            // request's head, at once on a new connection too, so it would
            // cut a silent socket by itself. The wait for a first byte stays
            // for shutdown: a socket that has sent nothing is dropped when
            // shutdown begins, where a connection handed to hyper would be
            // waited for until its deadline.
            let mut first = [0u8; 1];
            let first_byte = tokio::time::timeout(limits.header_timeout, stream.peek(&mut first));
            let arrived = tokio::select! {
                r = first_byte => matches!(r, Ok(Ok(n)) if n > 0),
                _ = stop.cancelled() => false,
            };
            if !arrived {
                drop(slot);
                return;
            }
            // HTTP/1.1 only. Its header deadline also closes a connection
            // that sits idle between requests; hyper's HTTP/2 server has no
            // such deadline, and its pings close only peers that do not
            // answer them, so a client that sent the HTTP/2 preface and then
            // only answered pings held its socket for good (a hostile
            // review). HTTP/2 belongs on the TLS proxy in front.
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout);
            let service = TowerToHyperService::new(app);
            let io = TokioIo::new(crate::stall::StallGuard::new(stream, limits.write_stall));
            let conn = builder.serve_connection(io, service);
            if let Err(e) = watcher.watch(conn).await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn accepted_sockets_have_nodelay() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(tokio::net::TcpStream::connect(addr));
        let (io, _) = listener.accept().await.unwrap();
        set_nodelay(&io);
        assert!(
            io.nodelay().unwrap(),
            "accepted socket must have TCP_NODELAY"
        );
        client.await.unwrap().unwrap();
    }
}
