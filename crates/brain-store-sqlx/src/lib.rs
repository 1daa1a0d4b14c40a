//! brain-store-sqlx: what brain's two SQL stores share, written once.
//!
//! - [`sql`]: which statement runs with which parameters, how rows become
//!   brain's types, the portable form of each write ([`sql::SqlTx`]) and the
//!   reads of every `brain_core` store trait, over a store's [`sql::Scope`].
//! - [`SqlStore`]: a [`sql::Scope`] as a `brain_core::store::Store`.
//! - Running the statements on any sqlx database: a store names its
//!   database's [`Dialect`], how brain's parameters bind and how the columns
//!   whose encoding differs (times, JSON, string lists, reals) read.
//! - [`lost`]: connections a database error broke.
#![forbid(unsafe_code)]

pub mod lost;
pub mod sql;
mod store;

pub use store::{Open, SqlStore};

use std::borrow::Borrow;
use std::marker::PhantomData;
use std::ops::DerefMut;

use crate::sql::{BoxRow, Conn, Finish, Param, Row, Sql};
use async_trait::async_trait;
use brain_core::error::StoreError;
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::query::Query;
use sqlx::{ColumnIndex, Database, Decode, Executor, IntoArguments, Pool, Type};
use uuid::Uuid;

/// A query of `DB` as `sqlx::query` makes it.
pub type DbQuery<'q, DB> = Query<'q, DB, <DB as Database>::Arguments<'q>>;

/// What a store tells of its database (on a marker type of its own).
pub trait Dialect: Send + Sync + 'static {
    type DB: Database + sqlx::database::HasStatementCache;
    /// The store's statement texts.
    fn sql() -> &'static Sql;
    /// Bind one parameter in this database's encoding.
    fn bind<'q>(
        q: DbQuery<'q, Self::DB>,
        p: Param<'q>,
    ) -> Result<DbQuery<'q, Self::DB>, StoreError>;
    fn rows_affected(done: &<Self::DB as Database>::QueryResult) -> u64;
    fn opt_time(row: &DbRow<Self>, col: &str) -> Result<Option<DateTime<Utc>>, StoreError>;
    fn opt_json(row: &DbRow<Self>, col: &str) -> Result<Option<Value>, StoreError>;
    fn opt_strings(row: &DbRow<Self>, col: &str) -> Result<Option<Vec<String>>, StoreError>;
    fn opt_real(row: &DbRow<Self>, col: &str) -> Result<Option<f64>, StoreError>;
}

/// A row of a dialect's database.
pub type DbRow<D> = <<D as Dialect>::DB as Database>::Row;
/// A connection of a dialect's database.
pub type DbConn<D> = <<D as Dialect>::DB as Database>::Connection;

/// A database error, told without its SQL; one that broke its connection
/// is remembered ([`lost`]).
pub fn db(e: sqlx::Error) -> StoreError {
    if let sqlx::Error::Database(d) = &e
        && d.message().starts_with("brain_project_cap")
    {
        return StoreError::Domain(brain_core::DomainError::project_cap());
    }
    if let sqlx::Error::Database(d) = &e
        && d.message().starts_with("brain_quota_exceeded")
    {
        // PostgreSQL's trigger says `usage=U quota=Q`; SQLite's cannot.
        let number = |key: &str| {
            d.message()
                .split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .and_then(|n| n.parse::<i64>().ok())
        };
        return StoreError::Domain(brain_core::DomainError::quota_exceeded(
            number("usage="),
            number("quota="),
        ));
    }
    lost::note(&e);
    StoreError::driver(e)
}

/// As [`db`], for the round trip that commits a write (an explicit
/// `COMMIT`, or a lone statement in its own transaction): a connection that
/// broke on it may have committed before it broke, so the caller is told
/// the outcome is unknown, not that nothing was written.
pub fn committing(e: sqlx::Error) -> StoreError {
    if lost::breaks_connection(&e) {
        lost::note(&e);
        tracing::error!(error = %e, "a commit went unanswered; its outcome is unknown");
        return StoreError::Domain(brain_core::DomainError::outcome_unknown());
    }
    db(e)
}

fn bound<'q, D: Dialect>(
    sql: &'q str,
    params: &[Param<'q>],
) -> Result<DbQuery<'q, D::DB>, StoreError> {
    let query = sqlx::query::<D::DB>(sql).persistent(!sql.starts_with(sql::PLANNED_PER_CALL));
    params.iter().try_fold(query, |q, p| D::bind(q, *p))
}

/// Run one statement; rows affected.
pub async fn execute<D: Dialect>(
    conn: &mut DbConn<D>,
    sql: &str,
    params: &[Param<'_>],
) -> Result<u64, StoreError>
where
    for<'c> &'c mut DbConn<D>: Executor<'c, Database = D::DB>,
    for<'q> <D::DB as Database>::Arguments<'q>: IntoArguments<'q, D::DB>,
{
    let done = bound::<D>(sql, params)?.execute(conn).await.map_err(db)?;
    Ok(D::rows_affected(&done))
}

/// Run one statement; its rows.
pub async fn fetch_all<D: Dialect>(
    conn: &mut DbConn<D>,
    sql: &str,
    params: &[Param<'_>],
) -> Result<Vec<BoxRow>, StoreError>
where
    for<'c> &'c mut DbConn<D>: Executor<'c, Database = D::DB>,
    for<'q> <D::DB as Database>::Arguments<'q>: IntoArguments<'q, D::DB>,
    Cols<D, DbRow<D>>: Row,
{
    let rows = bound::<D>(sql, params)?.fetch_all(conn).await.map_err(db)?;
    Ok(rows
        .into_iter()
        .map(|r| Box::new(Cols::<D, _>::new(r)) as BoxRow)
        .collect())
}

/// A row of `DB` as [`sql`] reads it: owned (a [`BoxRow`]) or
/// borrowed.
pub struct Cols<D, R>(R, PhantomData<fn() -> D>);

impl<D, R> Cols<D, R> {
    pub fn new(row: R) -> Self {
        Self(row, PhantomData)
    }
}

impl<D, R> Row for Cols<D, R>
where
    D: Dialect,
    R: Borrow<DbRow<D>> + Send + Sync,
    for<'r> String: Decode<'r, D::DB> + Type<D::DB>,
    for<'r> i64: Decode<'r, D::DB> + Type<D::DB>,
    for<'r> bool: Decode<'r, D::DB> + Type<D::DB>,
    for<'r> Uuid: Decode<'r, D::DB> + Type<D::DB>,
    for<'a> &'a str: ColumnIndex<DbRow<D>>,
{
    fn opt_text(&self, col: &str) -> Result<Option<String>, StoreError> {
        sqlx::Row::try_get(self.0.borrow(), col).map_err(db)
    }
    fn opt_int(&self, col: &str) -> Result<Option<i64>, StoreError> {
        sqlx::Row::try_get(self.0.borrow(), col).map_err(db)
    }
    fn opt_real(&self, col: &str) -> Result<Option<f64>, StoreError> {
        D::opt_real(self.0.borrow(), col)
    }
    fn opt_flag(&self, col: &str) -> Result<Option<bool>, StoreError> {
        sqlx::Row::try_get(self.0.borrow(), col).map_err(db)
    }
    fn opt_uuid(&self, col: &str) -> Result<Option<Uuid>, StoreError> {
        sqlx::Row::try_get(self.0.borrow(), col).map_err(db)
    }
    fn opt_time(&self, col: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        D::opt_time(self.0.borrow(), col)
    }
    fn opt_json(&self, col: &str) -> Result<Option<Value>, StoreError> {
        D::opt_json(self.0.borrow(), col)
    }
    fn opt_strings(&self, col: &str) -> Result<Option<Vec<String>>, StoreError> {
        D::opt_strings(self.0.borrow(), col)
    }
}

/// Statements on a connection of its own: a pooled one, or one borrowed
/// from a transaction.
pub struct On<D, C>(pub C, PhantomData<fn() -> D>);

impl<D, C> On<D, C> {
    pub fn new(conn: C) -> Self {
        Self(conn, PhantomData)
    }
}

#[async_trait]
impl<D, C> Conn for On<D, C>
where
    D: Dialect,
    C: DerefMut<Target = DbConn<D>> + Send,
    for<'c> &'c mut DbConn<D>: Executor<'c, Database = D::DB>,
    for<'q> <D::DB as Database>::Arguments<'q>: IntoArguments<'q, D::DB>,
    Cols<D, DbRow<D>>: Row,
{
    fn sql(&self) -> &'static Sql {
        D::sql()
    }
    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError> {
        execute::<D>(&mut self.0, sql, params).await
    }
    async fn fetch_all(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Vec<BoxRow>, StoreError> {
        fetch_all::<D>(&mut self.0, sql, params).await
    }
}

/// A read on a connection of its own needs no ending.
#[async_trait]
impl<D, C: Send> Finish for On<D, C> {
    async fn finish(self) -> Result<(), StoreError> {
        Ok(())
    }
}

/// A pool's connections, and how many of them are idle.
pub fn pool_gauges<DB: Database>(pool: &Pool<DB>) -> (u32, u32) {
    let idle = u32::try_from(pool.num_idle()).unwrap_or(u32::MAX);
    (pool.size(), idle)
}
