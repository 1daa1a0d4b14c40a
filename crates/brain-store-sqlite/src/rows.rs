//! Timestamps are INTEGER microseconds: the conversions for the statements
//! not yet written once in `brain_core::sql`.

use brain_core::error::StoreError;
use brain_core::sql::Row;
use chrono::{DateTime, Utc};
use sqlx::sqlite::SqliteRow;

use crate::dialect::Cols;

pub(crate) fn micros(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

pub(crate) fn time(row: &SqliteRow, col: &str) -> Result<DateTime<Utc>, StoreError> {
    Cols(row).time(col)
}

pub(crate) fn opt_time(row: &SqliteRow, col: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
    Cols(row).opt_time(col)
}
