//! What the two SQL stores share, written once: which statement runs with
//! which parameters, and how its rows become domain types. A store supplies
//! only its dialect: the statements' text ([`Sql`]) and how it binds and
//! reads brain's types ([`Conn`], [`Row`]) — PostgreSQL has `timestamptz`,
//! `uuid`, `jsonb` and `text[]`; SQLite stores integer microseconds and JSON
//! text. Nothing here knows a driver.
//!
//! - [`rows`]: the column lists and their mapping into domain types.
//! - [`briefs`]: the daily briefs.
//! - [`console`]: what operators read: the console, gauges, readiness.
//! - [`connections`]: the MCP connection registry and the expiry sweeps.
//! - [`reads`]: the tools' and audits' reads.
//! - [`recall`]: the recall statement, search or listing.
//! - [`sessions`]: the session, focus and document statements of a write.
//! - [`writes`]: the portable form of each write, one plain statement at a
//!   time (a store whose dialect fuses them overrides the [`SqlTx`] method).
//! - [`ops`]: the statements both stores run the same way.

pub mod briefs;
pub mod connections;
pub mod console;
pub mod export;
pub mod lifecycle;
pub mod ops;
pub mod reads;
pub mod recall;
pub mod rows;
pub mod sessions;
mod text;
mod tx;
mod write_port;
pub mod writes;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use brain_core::error::StoreError;
use brain_core::ids::{
    ArtifactId, ElevationId, ProjectKey, ReceiptId, SessionId, SlotName, TenantId,
};
use brain_core::store::StoreSettings;

pub use text::{PLANNED_PER_CALL, PortableWrites, Sql};
pub use tx::SqlTx;
pub use write_port::SqlWrite;

/// One statement parameter, in the types brain stores; each store encodes
/// them in its own column types.
#[derive(Debug, Clone, Copy)]
pub enum Param<'a> {
    Text(Option<&'a str>),
    Int(Option<i64>),
    Flag(bool),
    Uuid(Option<Uuid>),
    Time(Option<DateTime<Utc>>),
    Json(Option<&'a Value>),
    Strings(&'a [String]),
}

/// A result row. Every getter reads a nullable column; [`Row::text`] and the
/// other required forms call a missing value corruption.
pub trait Row: Send + Sync {
    fn opt_text(&self, col: &str) -> Result<Option<String>, StoreError>;
    fn opt_int(&self, col: &str) -> Result<Option<i64>, StoreError>;
    fn opt_real(&self, col: &str) -> Result<Option<f64>, StoreError>;
    fn opt_flag(&self, col: &str) -> Result<Option<bool>, StoreError>;
    fn opt_uuid(&self, col: &str) -> Result<Option<Uuid>, StoreError>;
    fn opt_time(&self, col: &str) -> Result<Option<DateTime<Utc>>, StoreError>;
    fn opt_json(&self, col: &str) -> Result<Option<Value>, StoreError>;
    fn opt_strings(&self, col: &str) -> Result<Option<Vec<String>>, StoreError>;

    fn text(&self, col: &str) -> Result<String, StoreError> {
        self.opt_text(col)?.ok_or_else(|| corrupt(col))
    }
    fn int(&self, col: &str) -> Result<i64, StoreError> {
        self.opt_int(col)?.ok_or_else(|| corrupt(col))
    }
    fn flag(&self, col: &str) -> Result<bool, StoreError> {
        self.opt_flag(col)?.ok_or_else(|| corrupt(col))
    }
    fn uuid(&self, col: &str) -> Result<Uuid, StoreError> {
        self.opt_uuid(col)?.ok_or_else(|| corrupt(col))
    }
    fn time(&self, col: &str) -> Result<DateTime<Utc>, StoreError> {
        self.opt_time(col)?.ok_or_else(|| corrupt(col))
    }
    fn strings(&self, col: &str) -> Result<Vec<String>, StoreError> {
        self.opt_strings(col)?.ok_or_else(|| corrupt(col))
    }
}

/// A boxed row, as [`Conn`] returns them.
pub type BoxRow = Box<dyn Row>;

/// A connection or transaction of one store, running one statement at a time.
#[async_trait]
pub trait Conn: Send {
    /// This store's statement texts.
    fn sql(&self) -> &'static Sql;
    /// Rows affected.
    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError>;
    async fn fetch_all(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Vec<BoxRow>, StoreError>;

    /// For a statement that returns at most one row.
    async fn fetch_optional(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Option<BoxRow>, StoreError> {
        Ok(self.fetch_all(sql, params).await?.into_iter().next())
    }

    /// For a statement that always returns one row.
    async fn fetch_one(&mut self, sql: &str, params: &[Param<'_>]) -> Result<BoxRow, StoreError> {
        self.fetch_optional(sql, params).await?.ok_or_else(|| {
            StoreError::Backend("a statement that returns a row returned none".into())
        })
    }
}

/// Ends a read: commits where the store's reads run in a transaction.
#[async_trait]
pub trait Finish {
    async fn finish(self) -> Result<(), StoreError>;
}

/// What a SQL store supplies: its write transactions ([`SqlTx`]) and the
/// connections of its reads. [`crate::SqlStore`] makes a `brain_core`
/// store of it.
#[async_trait]
pub trait Scope: Send + Sync + 'static {
    type Tx: SqlTx + 'static;
    type Read: Conn + Finish + 'static;
    type Pooled: Conn + 'static;
    /// A write transaction that sees and writes only `tenant`'s rows.
    async fn write_tx(&self, tenant: &TenantId) -> Result<Self::Tx, StoreError>;
    /// A connection for `tenant`'s reads: PostgreSQL's row-level security
    /// shows it only that tenant's rows; on SQLite each statement's filter is
    /// the wall.
    async fn tenant_scope(&self, tenant: &TenantId) -> Result<Self::Read, StoreError>;
    /// A connection across tenants: a lookup that finds out the tenant.
    async fn system_scope(&self) -> Result<Self::Read, StoreError>;
    /// A pooled connection outside any transaction, for a statement that
    /// scopes itself to its tenant.
    async fn pooled(&self) -> Result<Self::Pooled, StoreError>;
    /// A write transaction across tenants, for the sweeps of expiry.
    async fn system_write(&self) -> Result<Self::Tx, StoreError>;
    fn settings(&self) -> &StoreSettings;
    /// After this long without activity an open session reads as idle.
    fn idle_secs(&self) -> i64 {
        self.settings().idle_secs
    }
    /// Connections in the pool, and how many of them are idle.
    fn pool_gauges(&self) -> (u32, u32);
    /// This replica's memory of focus reads, when the store can tell it of
    /// every change (see [`brain_core::focus_cache`]).
    fn focus_cache(&self) -> Option<&brain_core::focus_cache::FocusCache> {
        None
    }
    /// After an end or relay committed `out`: tell this process's listeners.
    /// A database that notifies by itself (PostgreSQL's trigger) needs nothing.
    fn announce_close(&self, _tenant: &TenantId, _out: &Value) {}
    /// Close the pool after in-flight calls have finished.
    async fn close(&self);
    /// Hand every committed focus change, written on any replica, to
    /// `listener` from now on. Call once per process.
    async fn watch_focus(
        &self,
        listener: brain_core::feed::FocusListener,
    ) -> Result<(), StoreError>;
}

/// A stored value that no longer parses is corruption, not a caller error.
pub fn corrupt(what: &str) -> StoreError {
    StoreError::Backend(format!("stored {what} does not parse"))
}

impl<'a> From<&'a str> for Param<'a> {
    fn from(v: &'a str) -> Self {
        Param::Text(Some(v))
    }
}
impl<'a> From<&'a String> for Param<'a> {
    fn from(v: &'a String) -> Self {
        Param::Text(Some(v))
    }
}
impl<'a> From<Option<&'a str>> for Param<'a> {
    fn from(v: Option<&'a str>) -> Self {
        Param::Text(v)
    }
}
impl<'a> From<&'a Option<String>> for Param<'a> {
    fn from(v: &'a Option<String>) -> Self {
        Param::Text(v.as_deref())
    }
}
impl From<i64> for Param<'_> {
    fn from(v: i64) -> Self {
        Param::Int(Some(v))
    }
}
impl From<Option<i64>> for Param<'_> {
    fn from(v: Option<i64>) -> Self {
        Param::Int(v)
    }
}
impl From<bool> for Param<'_> {
    fn from(v: bool) -> Self {
        Param::Flag(v)
    }
}
impl From<Uuid> for Param<'_> {
    fn from(v: Uuid) -> Self {
        Param::Uuid(Some(v))
    }
}
impl From<Option<Uuid>> for Param<'_> {
    fn from(v: Option<Uuid>) -> Self {
        Param::Uuid(v)
    }
}
impl From<DateTime<Utc>> for Param<'_> {
    fn from(v: DateTime<Utc>) -> Self {
        Param::Time(Some(v))
    }
}
impl From<Option<DateTime<Utc>>> for Param<'_> {
    fn from(v: Option<DateTime<Utc>>) -> Self {
        Param::Time(v)
    }
}
impl<'a> From<&'a Value> for Param<'a> {
    fn from(v: &'a Value) -> Self {
        Param::Json(Some(v))
    }
}
impl<'a> From<Option<&'a Value>> for Param<'a> {
    fn from(v: Option<&'a Value>) -> Self {
        Param::Json(v)
    }
}
impl<'a> From<&'a [String]> for Param<'a> {
    fn from(v: &'a [String]) -> Self {
        Param::Strings(v)
    }
}
impl<'a> From<&'a TenantId> for Param<'a> {
    fn from(v: &'a TenantId) -> Self {
        Param::Text(Some(v.as_str()))
    }
}
impl<'a> From<&'a ProjectKey> for Param<'a> {
    fn from(v: &'a ProjectKey) -> Self {
        Param::Text(Some(v.as_str()))
    }
}
impl<'a> From<Option<&'a ProjectKey>> for Param<'a> {
    fn from(v: Option<&'a ProjectKey>) -> Self {
        Param::Text(v.map(ProjectKey::as_str))
    }
}
impl<'a> From<&'a SlotName> for Param<'a> {
    fn from(v: &'a SlotName) -> Self {
        Param::Text(Some(v.as_str()))
    }
}
impl From<SessionId> for Param<'_> {
    fn from(v: SessionId) -> Self {
        Param::Uuid(Some(v.as_uuid()))
    }
}
impl From<Option<SessionId>> for Param<'_> {
    fn from(v: Option<SessionId>) -> Self {
        Param::Uuid(v.map(|s| s.as_uuid()))
    }
}
impl From<ElevationId> for Param<'_> {
    fn from(v: ElevationId) -> Self {
        Param::Uuid(Some(v.as_uuid()))
    }
}
impl From<ArtifactId> for Param<'_> {
    fn from(v: ArtifactId) -> Self {
        Param::Uuid(Some(v.as_uuid()))
    }
}
impl From<ReceiptId> for Param<'_> {
    fn from(v: ReceiptId) -> Self {
        Param::Uuid(Some(v.as_uuid()))
    }
}
