//! brain-store-postgres: brain on PostgreSQL with sqlx ([`PgStore`], a
//! `brain_core::store::Store`: brain_store_sqlx's `SqlStore` over this
//! crate's [`PgScope`]).
//!
//! What both SQL stores share is written once in `brain_store_sqlx` (which
//! statement, which parameters, row mapping, the portable writes, the reads,
//! running them on sqlx). This crate holds PostgreSQL's:
//! - [`sql`]: its statement texts.
//! - [`dialect`]: how brain's types bind and read (`timestamptz`, `uuid`,
//!   `jsonb`, `text[]`).
//! - [`tx`]: its write transaction, overriding the `SqlTx` writes it fuses
//!   into fewer round trips ([`opening`]: opening a session and the
//!   briefing; [`ledger`]: the receipt append under the ledger-tip lock).
//! - [`known_projects`]: the projects this process has seen committed.
//! - [`group_commit`]: group commit for one tenant's one-call writes.
//! - [`resources`]: the LISTEN task that hears every replica's applied ends,
//!   and the announcer that tells them of this replica's.
//!
//! Each mutation is one transaction that locks what it compares in a fixed
//! order — session row, then focus row, then the tenant's ledger tip — asks
//! brain-core to decide, applies the decision and its receipt, and commits.
#![forbid(unsafe_code)]

mod connection;
mod dialect;
mod focus_memory;
mod group_commit;
mod kept_connections;
mod known_projects;
mod ledger;
mod one_call_writes;
mod opening;
mod resources;
mod sql;
mod tx;

use std::time::Duration;

use async_trait::async_trait;
use brain_core::error::StoreError;
use brain_core::ids::TenantId;
use brain_core::store::StoreSettings;
use brain_store_sqlx::sql::Scope;
use std::str::FromStr;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

/// The migrations of `migrations/postgres`, embedded at build time.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

pub type PgTx = sqlx::Transaction<'static, sqlx::Postgres>;

/// brain on PostgreSQL: its [`PgScope`] as a `brain_core` store.
pub type PgStore = brain_store_sqlx::SqlStore<PgScope>;

#[async_trait]
impl brain_store_sqlx::Open for PgScope {
    async fn open(url: &str, settings: StoreSettings) -> Result<Self, StoreError> {
        Self::connect(url, settings).await
    }
}

/// How long a connection suspected dead may take to answer its ping.
const PING_LIMIT: Duration = Duration::from_secs(2);

#[derive(Clone)]
pub struct PgScope {
    pool: PgPool,
    settings: StoreSettings,
    known: std::sync::Arc<known_projects::KnownProjects>,
    groups: std::sync::Arc<group_commit::Groups>,
    /// Write connections kept between writes ([`kept_connections`]).
    warm: std::sync::Arc<kept_connections::Warm>,
    focus_memory: Option<focus_memory::FocusMemory>,
    /// Tells every replica's resource subscribers of this one's applied ends.
    announcer: resources::SharedAnnouncer,
}

impl PgScope {
    /// Connect with a bounded pool; fails fast when the database is unreachable.
    pub async fn connect(url: &str, settings: StoreSettings) -> Result<Self, StoreError> {
        let options = PgConnectOptions::from_str(url).map_err(|e| {
            StoreError::Backend(format!("DATABASE_URL is not a PostgreSQL URL: {e}"))
        })?;
        // One direct attempt first: the pool retries refused connections until its
        // acquire timeout and then reports only "pool timed out".
        let where_ = format!(
            "{}:{}/{}",
            options.get_host(),
            options.get_port(),
            options.get_database().unwrap_or("(default database)")
        );
        let probe = <sqlx::PgConnection as sqlx::Connection>::connect_with(&options)
            .await
            .map_err(|e| {
                StoreError::Backend(format!("cannot connect to {where_}: {}", reason(&e)))
            })?;
        let _ = sqlx::Connection::close(probe).await;
        let pool = PgPoolOptions::new()
            .max_connections(settings.pool_size.max(2))
            .acquire_timeout(Duration::from_secs(5))
            // sqlx already pings every connection as it returns to the pool
            // (writes skip even that: kept_connections.rs); a second ping on each acquire
            // is one more round trip per call (issue 11). Only a connection
            // that sat idle across a break seen since (a restart, a failover:
            // brain_store_sqlx::lost) is pinged, and dropped if it does not
            // answer, so a restart costs one failed request, not one per
            // pooled connection.
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if !brain_store_sqlx::lost::seen_within(meta.idle_for) {
                        return Ok(true);
                    }
                    // An error closes it hard (no goodbye on a socket that
                    // may never answer).
                    let ping = sqlx::Connection::ping(conn);
                    match tokio::time::timeout(PING_LIMIT, ping).await {
                        Ok(Ok(())) => Ok(true),
                        Ok(Err(e)) => Err(e),
                        Err(_) => Err(sqlx::Error::PoolTimedOut),
                    }
                })
            })
            .connect_with(options)
            .await
            .map_err(|e| {
                StoreError::Backend(format!("cannot connect to {where_}: {}", reason(&e)))
            })?;
        Ok(Self::from_pool(pool, settings))
    }

    pub fn from_pool(pool: PgPool, settings: StoreSettings) -> Self {
        Self {
            warm: kept_connections::Warm::new(pool.clone()),
            pool,
            settings,
            known: Default::default(),
            groups: Default::default(),
            focus_memory: None,
            announcer: Default::default(),
        }
    }

    /// Answer focus reads from this replica's memory when it is known to be
    /// current ([`brain_core::focus_cache`]): starts a LISTEN connection and
    /// a connection for fence markers. Needs migration 0010's trigger.
    pub fn remembering_focus(mut self) -> Self {
        self.focus_memory = Some(focus_memory::start(&self.pool));
        self
    }

    /// One-call writes' group commits (see `group_commit.rs`): batches of more than
    /// one write committed, and batches rolled back for a failed statement
    /// (their writes then ran alone).
    pub fn group_commits(&self) -> (u64, u64) {
        self.groups.counts()
    }

    /// One-call writes of `tenant` queued behind its running group commit.
    pub fn group_queued(&self, tenant: &TenantId) -> usize {
        self.groups.queued(tenant.as_str())
    }

    /// Focus reads that waited out their fence (its marker unheard in time)
    /// and asked the database.
    pub fn focus_fences_waited_out(&self) -> u64 {
        self.focus_memory
            .as_ref()
            .map_or(0, focus_memory::FocusMemory::fences_waited_out)
    }

    /// Projects and bytes in the memory of focus reads (none when off).
    pub fn focus_memory_size(&self) -> (usize, usize) {
        self.focus_memory
            .as_ref()
            .map_or((0, 0), |m| m.cache.size())
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// A transaction that sees and writes only `tenant`'s rows: row-level
    /// security's second wall (migration 0005) reads `brain.tenant`, set here
    /// transaction-locally in the same round trip as `BEGIN`.
    pub async fn scoped(&self, tenant: &TenantId) -> Result<PgTx, StoreError> {
        begin_scoped(&self.pool, tenant).await
    }

    /// Whether the connected role skips row-level security (a superuser or a
    /// role with BYPASSRLS), which leaves the second tenant wall down.
    pub async fn rls_bypassed(&self) -> Result<bool, StoreError> {
        sqlx::query_scalar(
            "SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(db)
    }

    /// Whether the database hashes a receipt's canonical text as brain-core
    /// does (`brain_receipt_hash`, `migrations/postgres/functions.sql`), tried on a fixed text
    /// with characters outside ASCII. A write checks the database's hash only
    /// after its commit, so a server that disagrees must not serve.
    pub async fn receipt_hash_agrees(&self) -> Result<bool, StoreError> {
        let frame = brain_core::receipt::ReceiptFrame {
            before_prev:
                r#"{"at":"2026-01-01T00:00:00.000001Z","note":"Grüße, 東京 ✓","prev_hash":""#
                    .to_owned(),
            before_seq: r#"","seq":"#.to_owned(),
            after_seq: r#","tool":"ü"}"#.to_owned(),
        };
        let prev = brain_core::receipt::GENESIS_HASH;
        let theirs: String = sqlx::query_scalar("SELECT brain_receipt_hash($1, $2, $3, $4, $5)")
            .bind(&frame.before_prev)
            .bind(prev)
            .bind(&frame.before_seq)
            .bind(42_i64)
            .bind(&frame.after_seq)
            .fetch_one(&self.pool)
            .await
            .map_err(db)?;
        Ok(theirs == frame.hash(prev, 42))
    }

    /// Whether the server's autovacuum is off. Then nothing refreshes the
    /// planner's statistics or removes dead rows: the generic plans of brain's
    /// prepared statements, made while its tables were small (sequential scans),
    /// are kept as the tables grow, and writes slow down with every session
    /// closed (issue 11's benchmark: 564 → 362 pairs/s after 8k artifacts).
    pub async fn autovacuum_off(&self) -> Result<bool, StoreError> {
        let on: String = sqlx::query_scalar("SELECT current_setting('autovacuum')")
            .fetch_one(&self.pool)
            .await
            .map_err(db)?;
        Ok(on != "on")
    }

    /// The isolation level the database gives brain's transactions, when it
    /// is not READ COMMITTED (a `default_transaction_isolation` set on the
    /// database, the role or the URL). brain's writes are made for READ
    /// COMMITTED: a conditional write sees what committed before its
    /// statement, and a locked end counts the sessions the ends before it
    /// left open. Under REPEATABLE READ or SERIALIZABLE those counts go
    /// stale and concurrent ends fail with serialization errors.
    pub async fn isolation_not_read_committed(&self) -> Result<Option<String>, StoreError> {
        let level: String =
            sqlx::query_scalar("SELECT current_setting('default_transaction_isolation')")
                .fetch_one(&self.pool)
                .await
                .map_err(db)?;
        Ok((level != "read committed").then_some(level))
    }

    /// A transaction in the system scope: it sees every tenant. Used only for
    /// work that spans tenants by design — metrics gauges, the shared-token
    /// lookup (which finds the tenant), the expiry sweep and the daily-brief
    /// scheduler — each marked at its call site.
    pub async fn system(&self) -> Result<PgTx, StoreError> {
        begin_again_if_lost(
            &self.pool,
            "BEGIN; SELECT set_config('brain.scope', 'system', true)",
        )
        .await
    }

    /// Apply pending migrations (idempotent; safe from several replicas at once,
    /// sqlx takes an advisory lock).
    pub async fn migrate(&self) -> Result<(), StoreError> {
        // A mistyped URL against a trusting server lands in a maintenance
        // database; brain's schema never goes there.
        let name: String = sqlx::query_scalar("SELECT current_database()")
            .fetch_one(&self.pool)
            .await
            .map_err(db)?;
        if is_maintenance_database(&name) {
            return Err(StoreError::Backend(format!(
                "refusing to migrate into the maintenance database {name:?}; \
                 create a database for brain (CREATE DATABASE brain) and name it in DATABASE_URL"
            )));
        }
        MIGRATOR.run(&self.pool).await.map_err(StoreError::backend)
    }
}

/// A transaction on `pool` that sees and writes only `tenant`'s rows (see
/// [`PgScope::scoped`]).
pub(crate) async fn begin_scoped(pool: &PgPool, tenant: &TenantId) -> Result<PgTx, StoreError> {
    begin_again_if_lost(pool, &begin_statement(tenant)?).await
}

/// A transaction begun with `begin` (no `COMMIT` in it). One that meets a
/// connection found dead (a restart, a failover) begins again on another:
/// nothing ran on the dead one that could have committed, and sqlx now pings
/// the others that sat idle across the break (brain_store_sqlx::lost).
async fn begin_again_if_lost(pool: &PgPool, begin: &str) -> Result<PgTx, StoreError> {
    match pool.begin_with(begin.to_owned()).await {
        Err(e) if brain_store_sqlx::lost::breaks_connection(&e) => {
            brain_store_sqlx::lost::note(&e);
            pool.begin_with(begin.to_owned()).await.map_err(db)
        }
        begun => begun.map_err(db),
    }
}

/// `BEGIN` and the tenant's scope, as one simple query. No parallel
/// workers in it: each statement reads a bounded part of one tenant's rows,
/// and a parallel plan made a client's call start worker processes of its
/// own; under row security PostgreSQL planned a session list's unread
/// status branches as parallel scans and launched their workers (20-137 ms
/// a list, against 1.2-12 ms without, a review measured). Set per
/// transaction, so a pooler between brain and PostgreSQL sees no startup
/// parameter.
pub(crate) fn begin_statement(tenant: &TenantId) -> Result<String, StoreError> {
    let t = tenant_literal(tenant)?;
    Ok(format!(
        "BEGIN; SELECT set_config('brain.tenant', '{t}', true), \
         set_config('max_parallel_workers_per_gather', '0', true)"
    ))
}

/// The tenant id, checked to be safe to write into a statement between
/// single quotes: a simple query takes no parameters. A TenantId holds only
/// [A-Za-z0-9._/-]; this holds any other value off, whatever TenantId
/// comes to allow.
pub(crate) fn tenant_literal(tenant: &TenantId) -> Result<&str, StoreError> {
    let t = tenant.as_str();
    if !t
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'/' | b'-'))
    {
        return Err(StoreError::Backend("tenant id outside its charset".into()));
    }
    Ok(t)
}

/// PostgreSQL's own databases, which must never receive brain's schema.
fn is_maintenance_database(name: &str) -> bool {
    name == "postgres" || name.starts_with("template")
}

/// A connection failure in an operator's words: the I/O cause (e.g.
/// "Connection refused") rather than sqlx's wrapper.
fn reason(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Io(io) => io.to_string(),
        sqlx::Error::Database(d) => d.message().to_owned(),
        other => other.to_string(),
    }
}

/// sqlx errors become backend errors; their text stays on the server side.
pub(crate) use brain_store_sqlx::db;

/// Writes and reads run in a transaction scoped to a tenant by row-level
/// security; a write's begins on its first statement.
#[async_trait]
impl Scope for PgScope {
    type Tx = tx::Tx;
    type Read = tx::Tx;

    async fn write_tx(&self, tenant: &TenantId) -> Result<tx::Tx, StoreError> {
        Ok(tx::Tx::lazy(
            self.warm.clone(),
            tenant.clone(),
            self.known.clone(),
            self.groups.clone(),
        ))
    }

    type Pooled = brain_store_sqlx::On<dialect::Pg, sqlx::pool::PoolConnection<sqlx::Postgres>>;

    async fn tenant_scope(&self, tenant: &TenantId) -> Result<tx::Tx, StoreError> {
        let scope = self.scoped(tenant).await?;
        Ok(tx::Tx::new(scope, tenant.clone(), self.known.clone()))
    }

    async fn system_scope(&self) -> Result<tx::Tx, StoreError> {
        let scope = self.system().await?;
        Ok(tx::Tx::new(scope, TenantId::across(), self.known.clone()))
    }

    async fn pooled(&self) -> Result<Self::Pooled, StoreError> {
        Ok(brain_store_sqlx::On::new(
            self.pool.acquire().await.map_err(db)?,
        ))
    }

    async fn system_write(&self) -> Result<tx::Tx, StoreError> {
        self.system_scope().await
    }

    fn settings(&self) -> &StoreSettings {
        &self.settings
    }

    fn pool_gauges(&self) -> (u32, u32) {
        brain_store_sqlx::pool_gauges(&self.pool)
    }

    fn focus_cache(&self) -> Option<&brain_core::focus_cache::FocusCache> {
        self.focus_memory.as_ref().map(|m| &*m.cache)
    }

    /// After its commit, not in it (`resources.rs` says why).
    fn announce_close(&self, tenant: &TenantId, out: &serde_json::Value) {
        if let Some(change) = brain_core::feed::FocusChange::from_close(tenant, out) {
            self.announcer.announce(&self.pool, &change);
        }
    }

    async fn close(&self) {
        self.warm.drain();
        self.pool.close().await;
    }

    async fn watch_focus(
        &self,
        listener: brain_core::feed::FocusListener,
    ) -> Result<(), StoreError> {
        match &self.focus_memory {
            // Its listener hears brain_focus too: no second connection.
            Some(memory) => {
                memory.subscribe(listener).await;
                Ok(())
            }
            None => resources::watch(self, listener).await,
        }
    }
}
