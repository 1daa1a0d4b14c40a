//! PostgreSQL's side of `brain_store_sqlx::sql`: how brain's parameters bind
//! (`timestamptz`, `uuid`, `jsonb`, `text[]`) and how the columns whose
//! encoding is PostgreSQL's read. `brain_store_sqlx` runs the statements.

use brain_core::error::StoreError;
use brain_store_sqlx::sql::{Param, Sql};
use brain_store_sqlx::{DbQuery, Dialect, db};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::postgres::{PgQueryResult, PgRow};
use sqlx::{Postgres, Row as _};

/// PostgreSQL, as `brain_store_sqlx` runs brain's statements on it.
pub struct Pg;

impl Dialect for Pg {
    type DB = Postgres;

    fn sql() -> &'static Sql {
        &crate::sql::SQL
    }

    fn bind<'q>(
        q: DbQuery<'q, Postgres>,
        p: Param<'q>,
    ) -> Result<DbQuery<'q, Postgres>, StoreError> {
        Ok(match p {
            Param::Text(v) => q.bind(v),
            Param::Int(v) => q.bind(v),
            Param::Flag(v) => q.bind(v),
            Param::Uuid(v) => q.bind(v),
            Param::Time(v) => q.bind(v),
            Param::Json(v) => q.bind(v.map(sqlx::types::Json)),
            Param::Strings(v) => q.bind(v),
        })
    }

    fn rows_affected(done: &PgQueryResult) -> u64 {
        done.rows_affected()
    }

    fn opt_time(row: &PgRow, col: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        row.try_get(col).map_err(db)
    }

    fn opt_json(row: &PgRow, col: &str) -> Result<Option<Value>, StoreError> {
        row.try_get(col).map_err(db)
    }

    fn opt_strings(row: &PgRow, col: &str) -> Result<Option<Vec<String>>, StoreError> {
        row.try_get(col).map_err(db)
    }

    /// `real`, ts_rank's type (the only real brain reads), else `double
    /// precision`.
    fn opt_real(row: &PgRow, col: &str) -> Result<Option<f64>, StoreError> {
        match row.try_get::<Option<f32>, _>(col) {
            Ok(v) => Ok(v.map(f64::from)),
            Err(_) => row.try_get(col).map_err(db),
        }
    }
}
