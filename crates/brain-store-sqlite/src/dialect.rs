//! SQLite's side of `brain_core::sql`: times bind as INTEGER microseconds,
//! JSON values and string lists as JSON text, uuids as 16-byte blobs.

use std::borrow::Borrow;
use std::ops::DerefMut;

use async_trait::async_trait;
use brain_core::error::StoreError;
use brain_core::sql::{BoxRow, Conn, Finish, Param, Row, Sql, corrupt};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::query::Query;
use sqlx::sqlite::{SqliteArguments, SqliteRow};
use sqlx::{Row as _, Sqlite, SqliteConnection};
use uuid::Uuid;

use crate::db;

fn json_list(v: &[String]) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(StoreError::backend)
}

fn bind<'q>(
    mut q: Query<'q, Sqlite, SqliteArguments<'q>>,
    params: &[Param<'q>],
) -> Result<Query<'q, Sqlite, SqliteArguments<'q>>, StoreError> {
    for p in params {
        q = match *p {
            Param::Text(v) => q.bind(v),
            Param::Int(v) => q.bind(v),
            Param::Flag(v) => q.bind(v),
            Param::Uuid(v) => q.bind(v),
            Param::Time(v) => q.bind(v.map(|t| t.timestamp_micros())),
            Param::Json(v) => q.bind(v.map(Value::to_string)),
            Param::Strings(v) => q.bind(json_list(v)?),
        };
    }
    Ok(q)
}

pub(crate) async fn execute(
    conn: &mut SqliteConnection,
    sql: &str,
    params: &[Param<'_>],
) -> Result<u64, StoreError> {
    let done = bind(sqlx::query(sql), params)?
        .execute(conn)
        .await
        .map_err(db)?;
    Ok(done.rows_affected())
}

pub(crate) async fn fetch_all(
    conn: &mut SqliteConnection,
    sql: &str,
    params: &[Param<'_>],
) -> Result<Vec<BoxRow>, StoreError> {
    let rows = bind(sqlx::query(sql), params)?
        .fetch_all(conn)
        .await
        .map_err(db)?;
    Ok(rows
        .into_iter()
        .map(|r| Box::new(Cols(r)) as BoxRow)
        .collect())
}

/// Statements on a connection of its own: a pooled one for a read, outside
/// the writer's batches (it sees what has committed), or one borrowed from a
/// transaction.
pub struct On<C>(pub(crate) C);

#[async_trait]
impl<C: DerefMut<Target = SqliteConnection> + Send> Conn for On<C> {
    fn sql(&self) -> &'static Sql {
        &crate::sql::SQL
    }
    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError> {
        execute(&mut self.0, sql, params).await
    }
    async fn fetch_all(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Vec<BoxRow>, StoreError> {
        fetch_all(&mut self.0, sql, params).await
    }
}

#[async_trait]
impl<C: Send> Finish for On<C> {
    async fn finish(self) -> Result<(), StoreError> {
        Ok(())
    }
}

/// A SQLite row as `brain_core::sql` reads it.
/// Owned ([`BoxRow`]) or borrowed.
pub(crate) struct Cols<R>(pub(crate) R);

impl<R: Borrow<SqliteRow> + Send + Sync> Row for Cols<R> {
    fn opt_text(&self, col: &str) -> Result<Option<String>, StoreError> {
        self.0.borrow().try_get(col).map_err(db)
    }
    fn opt_int(&self, col: &str) -> Result<Option<i64>, StoreError> {
        self.0.borrow().try_get(col).map_err(db)
    }
    fn opt_real(&self, col: &str) -> Result<Option<f64>, StoreError> {
        self.0.borrow().try_get(col).map_err(db)
    }
    fn opt_flag(&self, col: &str) -> Result<Option<bool>, StoreError> {
        self.0.borrow().try_get(col).map_err(db)
    }
    fn opt_uuid(&self, col: &str) -> Result<Option<Uuid>, StoreError> {
        self.0.borrow().try_get(col).map_err(db)
    }
    fn opt_time(&self, col: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        let v: Option<i64> = self.0.borrow().try_get(col).map_err(db)?;
        v.map(|v| DateTime::from_timestamp_micros(v).ok_or_else(|| corrupt(col)))
            .transpose()
    }
    fn opt_json(&self, col: &str) -> Result<Option<Value>, StoreError> {
        let v: Option<String> = self.0.borrow().try_get(col).map_err(db)?;
        v.map(|v| serde_json::from_str(&v).map_err(|_| corrupt(col)))
            .transpose()
    }
    fn opt_strings(&self, col: &str) -> Result<Option<Vec<String>>, StoreError> {
        let v: Option<String> = self.0.borrow().try_get(col).map_err(db)?;
        v.map(|v| serde_json::from_str(&v).map_err(|_| corrupt(col)))
            .transpose()
    }
}
