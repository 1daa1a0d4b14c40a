//! PostgreSQL's side of `brain_core::sql`: how brain's parameters bind
//! (`timestamptz`, `uuid`, `jsonb`, `text[]`) and how its columns read.

use std::borrow::Borrow;

use brain_core::error::StoreError;
use brain_core::sql::{BoxRow, Param, Row};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::Query;
use sqlx::{PgConnection, Postgres, Row as _};
use uuid::Uuid;

use crate::db;

fn bind<'q>(
    mut q: Query<'q, Postgres, PgArguments>,
    params: &[Param<'q>],
) -> Query<'q, Postgres, PgArguments> {
    for p in params {
        q = match *p {
            Param::Text(v) => q.bind(v),
            Param::Int(v) => q.bind(v),
            Param::Flag(v) => q.bind(v),
            Param::Uuid(v) => q.bind(v),
            Param::Time(v) => q.bind(v),
            Param::Json(v) => q.bind(v.map(sqlx::types::Json)),
            Param::Strings(v) => q.bind(v),
        };
    }
    q
}

pub(crate) async fn execute(
    conn: &mut PgConnection,
    sql: &str,
    params: &[Param<'_>],
) -> Result<u64, StoreError> {
    let done = bind(sqlx::query(sql), params)
        .execute(conn)
        .await
        .map_err(db)?;
    Ok(done.rows_affected())
}

pub(crate) async fn fetch_all(
    conn: &mut PgConnection,
    sql: &str,
    params: &[Param<'_>],
) -> Result<Vec<BoxRow>, StoreError> {
    let rows = bind(sqlx::query(sql), params)
        .fetch_all(conn)
        .await
        .map_err(db)?;
    Ok(rows
        .into_iter()
        .map(|r| Box::new(Cols(r)) as BoxRow)
        .collect())
}

/// A PostgreSQL row as `brain_core::sql` reads it.
/// Owned ([`BoxRow`]) or borrowed.
pub(crate) struct Cols<R>(pub(crate) R);

impl<R: Borrow<PgRow> + Send + Sync> Row for Cols<R> {
    fn opt_text(&self, col: &str) -> Result<Option<String>, StoreError> {
        self.0.borrow().try_get(col).map_err(db)
    }
    fn opt_int(&self, col: &str) -> Result<Option<i64>, StoreError> {
        self.0.borrow().try_get(col).map_err(db)
    }
    /// `real` (ts_rank's type) or `double precision`.
    fn opt_real(&self, col: &str) -> Result<Option<f64>, StoreError> {
        match self.0.borrow().try_get::<Option<f64>, _>(col) {
            Ok(v) => Ok(v),
            Err(_) => Ok(self
                .0
                .borrow()
                .try_get::<Option<f32>, _>(col)
                .map_err(db)?
                .map(f64::from)),
        }
    }
    fn opt_flag(&self, col: &str) -> Result<Option<bool>, StoreError> {
        self.0.borrow().try_get(col).map_err(db)
    }
    fn opt_uuid(&self, col: &str) -> Result<Option<Uuid>, StoreError> {
        self.0.borrow().try_get(col).map_err(db)
    }
    fn opt_time(&self, col: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        self.0.borrow().try_get(col).map_err(db)
    }
    fn opt_json(&self, col: &str) -> Result<Option<Value>, StoreError> {
        self.0.borrow().try_get(col).map_err(db)
    }
    fn opt_strings(&self, col: &str) -> Result<Option<Vec<String>>, StoreError> {
        self.0.borrow().try_get(col).map_err(db)
    }
}
