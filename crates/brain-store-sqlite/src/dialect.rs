//! SQLite's side of `brain_store_sqlx::sql`: times bind as INTEGER microseconds,
//! JSON values and string lists as JSON text, uuids as 16-byte blobs.
//! `brain_store_sqlx` runs the statements.

use brain_core::error::StoreError;
use brain_store_sqlx::sql::{Param, Sql, corrupt};
use brain_store_sqlx::{DbQuery, Dialect, db};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::sqlite::{SqliteQueryResult, SqliteRow};
use sqlx::{Row as _, Sqlite};

/// SQLite, as `brain_store_sqlx` runs brain's statements on it.
pub struct Lite;

/// Statements on a connection of its own: a pooled one for a read, outside
/// the writer's batches (it sees what has committed), or one borrowed from a
/// transaction.
pub type On<C> = brain_store_sqlx::On<Lite, C>;

fn json_text(row: &SqliteRow, col: &str) -> Result<Option<String>, StoreError> {
    row.try_get(col).map_err(db)
}

fn parsed<T: serde::de::DeserializeOwned>(
    v: Option<String>,
    col: &str,
) -> Result<Option<T>, StoreError> {
    v.map(|v| serde_json::from_str(&v).map_err(|_| corrupt(col)))
        .transpose()
}

impl Dialect for Lite {
    type DB = Sqlite;

    fn sql() -> &'static Sql {
        &crate::sql::SQL
    }

    fn bind<'q>(q: DbQuery<'q, Sqlite>, p: Param<'q>) -> Result<DbQuery<'q, Sqlite>, StoreError> {
        Ok(match p {
            Param::Text(v) => q.bind(v),
            Param::Int(v) => q.bind(v),
            Param::Flag(v) => q.bind(v),
            Param::Uuid(v) => q.bind(v),
            Param::Time(v) => q.bind(v.map(|t| t.timestamp_micros())),
            Param::Json(v) => q.bind(v.map(Value::to_string)),
            Param::Strings(v) => q.bind(serde_json::to_string(v).map_err(StoreError::backend)?),
        })
    }

    fn rows_affected(done: &SqliteQueryResult) -> u64 {
        done.rows_affected()
    }

    fn opt_time(row: &SqliteRow, col: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        let v: Option<i64> = row.try_get(col).map_err(db)?;
        v.map(|v| DateTime::from_timestamp_micros(v).ok_or_else(|| corrupt(col)))
            .transpose()
    }

    fn opt_json(row: &SqliteRow, col: &str) -> Result<Option<Value>, StoreError> {
        parsed(json_text(row, col)?, col)
    }

    fn opt_strings(row: &SqliteRow, col: &str) -> Result<Option<Vec<String>>, StoreError> {
        parsed(json_text(row, col)?, col)
    }

    fn opt_real(row: &SqliteRow, col: &str) -> Result<Option<f64>, StoreError> {
        row.try_get(col).map_err(db)
    }
}
