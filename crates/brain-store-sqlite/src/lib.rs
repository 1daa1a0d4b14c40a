//! brain-store-sqlite: brain on SQLite with sqlx, the embedded default
//! ([`SqliteStore`], a `brain_core::store::Store`: brain_store_sqlx's
//! `SqlStore` over this crate's [`SqliteScope`]).
//!
//! What both SQL stores share is written once in `brain_store_sqlx` (which
//! statement, which parameters, row mapping, the portable writes SQLite runs
//! as they are, the reads, running them on sqlx). This crate holds SQLite's:
//! - [`sql`]: its statement texts.
//! - [`dialect`]: how brain's types bind and read (integer microseconds, JSON
//!   text).
//! - [`tx`]: its write transaction, a member of a [`group_commit`]: group commit of
//!   the one writer's transaction.
//!
//! Each mutation runs in a savepoint of the one writer's `BEGIN IMMEDIATE`
//! transaction: the write lock is held up front, so compare-and-swap can
//! neither deadlock nor lose an update; brain-core decides, the decision and
//! its receipt are applied, and mutations that queued behind each other share
//! one commit ([`group_commit`]). The file runs in WAL mode (readers never wait for
//! the writer) with `synchronous = FULL`, and no call is answered before its
//! commit, so an acknowledged call survives a crash.
#![forbid(unsafe_code)]

mod dialect;
mod group_commit;
#[cfg(test)]
mod search_checks;
mod sql;
mod tx;

use std::str::FromStr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use brain_core::error::StoreError;
use brain_core::feed::{FocusChange, FocusListener};
use brain_core::ids::TenantId;
use brain_core::store::StoreSettings;
use brain_store_sqlx::sql::Scope;
use serde_json::Value;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

/// The migrations of `migrations/sqlite`, embedded at build time.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/sqlite");

/// brain on SQLite: its [`SqliteScope`] as a `brain_core` store.
pub type SqliteStore = brain_store_sqlx::SqlStore<SqliteScope>;

#[async_trait]
impl brain_store_sqlx::Open for SqliteScope {
    async fn open(url: &str, settings: StoreSettings) -> Result<Self, StoreError> {
        Self::connect(url, settings).await
    }
}

#[derive(Clone)]
pub struct SqliteScope {
    pool: SqlitePool,
    /// One connection for write transactions: SQLite has one writer anyway,
    /// and queueing here wakes the next writer the moment the last is done,
    /// where `BEGIN IMMEDIATE` on many connections would wait in SQLite's
    /// busy handler, whose sleeps grow to 100 ms (the long tail under load).
    writer: Arc<group_commit::Writer>,
    settings: StoreSettings,
    /// SQLite has one process writing: focus changes go to these directly.
    listeners: Arc<RwLock<Vec<FocusListener>>>,
}

impl SqliteScope {
    /// Open (creating if missing) the database file named by a `sqlite://` URL.
    pub async fn connect(url: &str, settings: StoreSettings) -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::from_str(url)
            .map_err(StoreError::backend)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .acquire_timeout(Duration::from_secs(10))
            // An in-process file does not hang up; each ping is a hop to the
            // connection's worker thread.
            .test_before_acquire(false)
            .connect_with(options.clone())
            .await
            .map_err(StoreError::backend)?;
        let writer = Arc::new(group_commit::Writer::open(&options).await?);
        Ok(Self {
            pool,
            writer,
            settings,
            listeners: Arc::default(),
        })
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Start a write transaction holding the write lock from its first statement.
    /// Writes that queue behind each other share one commit (`batch`).
    pub(crate) async fn writer_member(&self) -> Result<group_commit::Member, StoreError> {
        self.writer.begin().await
    }

    /// Tell the listeners about the body an end or relay wrote, after its commit.
    pub(crate) fn announce(&self, change: Option<FocusChange>) {
        let Some(change) = change else { return };
        let listeners = match self.listeners.read() {
            Ok(l) => l.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        for l in listeners {
            l(change.clone());
        }
    }

    /// Apply pending migrations (idempotent).
    pub async fn migrate(&self) -> Result<(), StoreError> {
        MIGRATOR.run(&self.pool).await.map_err(StoreError::backend)
    }
}

/// sqlx errors become backend errors; their text stays on the server side.
pub(crate) use brain_store_sqlx::db;

/// The writes run `brain_core::flow` on the one writer's transaction; the
/// tenant wall is each statement's `tenant_id`, the transaction's own.
/// Reads take a pooled connection of their own, outside the writer.
#[async_trait]
impl Scope for SqliteScope {
    type Tx = tx::Tx;
    type Read = dialect::On<sqlx::pool::PoolConnection<sqlx::Sqlite>>;
    type Pooled = Self::Read;

    async fn write_tx(&self, tenant: &TenantId) -> Result<tx::Tx, StoreError> {
        Ok(tx::Tx(self.writer_member().await?, tenant.clone()))
    }

    /// SQLite has no NOTIFY: the listeners hear of a body an end or relay
    /// wrote from here, after its commit.
    fn announce_close(&self, tenant: &TenantId, out: &Value) {
        self.announce(FocusChange::from_close(tenant, out));
    }

    async fn tenant_scope(&self, _tenant: &TenantId) -> Result<Self::Read, StoreError> {
        self.system_scope().await
    }

    async fn system_scope(&self) -> Result<Self::Read, StoreError> {
        Ok(dialect::On::new(self.pool.acquire().await.map_err(db)?))
    }

    async fn pooled(&self) -> Result<Self::Read, StoreError> {
        self.system_scope().await
    }

    async fn system_write(&self) -> Result<tx::Tx, StoreError> {
        Ok(tx::Tx(self.writer_member().await?, TenantId::across()))
    }

    fn settings(&self) -> &StoreSettings {
        &self.settings
    }

    fn pool_gauges(&self) -> (u32, u32) {
        brain_store_sqlx::pool_gauges(&self.pool)
    }

    async fn close(&self) {
        self.writer.flush().await;
        self.pool.close().await;
    }

    async fn watch_focus(&self, listener: FocusListener) -> Result<(), StoreError> {
        match self.listeners.write() {
            Ok(mut l) => l.push(listener),
            Err(poisoned) => poisoned.into_inner().push(listener),
        }
        Ok(())
    }
}
