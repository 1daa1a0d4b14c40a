//! The connection under a [`crate::tx::Tx`]: begun on its first statement,
//! and, for a write, with `BEGIN` and `COMMIT` sent by brain itself, so the
//! statement that places the write's receipt and the `COMMIT` travel in one
//! message and the write never holds the tenant's ledger tip across a round
//! trip (a group commit of remembers does, across its members': `group_commit.rs`).

use brain_core::error::StoreError;
use brain_core::ids::TenantId;
use std::sync::Arc;

use sqlx::pool::PoolConnection;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Postgres};

use crate::kept_connections::{Held, Warm};
use crate::{PgTx, db};

/// Where a transaction stands.
pub(crate) enum Link {
    /// No statement yet: where to begin, and for which tenant.
    Idle(Arc<Warm>, TenantId),
    /// A read scope, begun and ended by sqlx.
    Scope(PgTx),
    /// A write begun here: a transaction is open on this connection.
    Write(Open),
    /// Committed or rolled back.
    Done,
}

impl Link {
    /// The connection, its transaction begun (with the tenant's scope) if it
    /// was not yet.
    pub(crate) async fn conn(&mut self) -> Result<&mut PgConnection, StoreError> {
        if let Link::Idle(_, tenant) = self {
            let begin = crate::begin_statement(tenant)?;
            self.begin(&begin).await?;
        }
        match self {
            Link::Scope(t) => Ok(&mut **t),
            Link::Write(Open(Some(c), _)) => Ok(c.conn()),
            Link::Write(Open(None, _)) | Link::Idle(..) | Link::Done => Err(StoreError::Backend(
                "a transaction used after its end".into(),
            )),
        }
    }

    /// Begin `tenant`'s transaction with `first` (a simple query: no
    /// parameters) sent in the same message as `BEGIN` and the tenant's
    /// scope: the rows of all three. `None` when the transaction has begun
    /// already, or is another tenant's: then nothing was sent.
    pub(crate) async fn begin_with(
        &mut self,
        tenant: &TenantId,
        first: &str,
    ) -> Result<Option<Vec<PgRow>>, StoreError> {
        match self {
            Link::Idle(_, t) if t == tenant => {
                let sql = format!("{}; {first}", crate::begin_statement(tenant)?);
                self.begin(&sql).await.map(Some)
            }
            _ => Ok(None),
        }
    }

    /// From `Idle`: take a connection and send `sql`, which begins the
    /// transaction. Guarded before it is sent: a call dropped while it is in
    /// flight, or a statement that fails, rolls back instead of leaving the
    /// transaction open in the pool.
    ///
    /// A connection found dead by it (a restart, a failover) is replaced and
    /// `sql` sent once more: whatever it ran is rolled back with the lost
    /// connection, since only a `COMMIT` sent after it could keep it.
    async fn begin(&mut self, sql: &str) -> Result<Vec<PgRow>, StoreError> {
        let Link::Idle(warm, tenant) = self else {
            return Err(StoreError::Backend("a transaction begun twice".into()));
        };
        let (warm, tenant) = (warm.clone(), tenant.clone());
        match self.begin_once(&warm, sql).await {
            Err(e) if brain_store_sqlx::lost::breaks_connection(&e) => {
                brain_store_sqlx::lost::note(&e);
                *self = Link::Idle(warm.clone(), tenant);
                self.begin_once(&warm, sql).await.map_err(db)
            }
            begun => begun.map_err(db),
        }
    }

    async fn begin_once(&mut self, warm: &Arc<Warm>, sql: &str) -> Result<Vec<PgRow>, sqlx::Error> {
        let conn = warm.take().await?;
        *self = Link::Write(Open(Some(conn), warm.clone()));
        let Link::Write(Open(Some(c), _)) = self else {
            return Err(sqlx::Error::Configuration(
                "a transaction begun twice".into(),
            ));
        };
        let begun = raw(c.conn(), sql).await;
        if begun.is_err() {
            *self = Link::Done;
        }
        begun
    }

    /// Where connections come from, while no statement has run and the
    /// transaction is `tenant`'s.
    pub(crate) fn idle_pool(&self, tenant: &TenantId) -> Option<Arc<Warm>> {
        match self {
            Link::Idle(warm, t) if t == tenant => Some(warm.clone()),
            _ => None,
        }
    }

    /// Commit, running `last` (a statement without parameters) first in the
    /// same message: its rows, if any. Nothing to commit when nothing ran.
    pub(crate) async fn commit(&mut self, last: Option<&str>) -> Result<Vec<PgRow>, StoreError> {
        match std::mem::replace(self, Link::Done) {
            Link::Idle(..) | Link::Done => Ok(Vec::new()),
            Link::Scope(mut t) => {
                let rows = match last {
                    Some(last) => sqlx::Executor::fetch_all(&mut *t, sqlx::raw_sql(last))
                        .await
                        .map_err(db)?,
                    None => Vec::new(),
                };
                t.commit().await.map_err(brain_store_sqlx::committing)?;
                Ok(rows)
            }
            Link::Write(mut open) => {
                let Some(conn) = open.0.as_mut() else {
                    return Ok(Vec::new());
                };
                let conn = conn.conn();
                let sql = match last {
                    Some(last) => format!("{last}; COMMIT"),
                    None => "COMMIT".to_owned(),
                };
                // The guard stays on until the commit answered: an error or a
                // drop before that rolls back.
                let rows = raw(conn, &sql)
                    .await
                    .map_err(brain_store_sqlx::committing)?;
                // Committed, nothing open: kept for the next write.
                if let Some(held) = open.0.take() {
                    open.1.give(held);
                }
                Ok(rows)
            }
        }
    }
}

/// A connection with a write transaction open on it, and where it goes
/// back once committed. Dropped before its commit, the transaction is rolled
/// back before the connection goes back to sqlx's pool.
pub(crate) struct Open(Option<Held>, Arc<Warm>);

impl Drop for Open {
    fn drop(&mut self) {
        if let Some(held) = self.0.take() {
            roll_back(held.into_pooled());
        }
    }
}

/// Roll back whatever is open on `conn`, then return it to the pool; a
/// connection that cannot be rolled back within a few seconds (a statement
/// still waiting on a lock) is closed instead.
fn roll_back(mut conn: PoolConnection<Postgres>) {
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => {
            rt.spawn(async move {
                let undone = tokio::time::timeout(
                    std::time::Duration::from_secs(5),
                    raw(&mut conn, "ROLLBACK"),
                )
                .await;
                if !matches!(undone, Ok(Ok(_))) {
                    conn.close_on_drop();
                }
            });
        }
        // No runtime to return it to the pool with: close its socket.
        Err(_) => drop(conn.detach()),
    }
}

/// A simple query (several statements, no parameters): the rows of all.
/// Boxed with its lifetime named, which the `Send` bounds of the async
/// trait methods that await it need.
fn raw<'c>(
    conn: &'c mut PgConnection,
    sql: &'c str,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Vec<PgRow>, sqlx::Error>> + Send + 'c>>
{
    sqlx::Executor::fetch_all(conn, sqlx::raw_sql(sql))
}
