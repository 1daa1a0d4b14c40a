//! SQLite's side of `brain_store_sqlx::sql`: times bind as INTEGER microseconds,
//! JSON values and string lists as JSON text, uuids as 16-byte blobs.
//! `brain_store_sqlx` runs the statements.

use brain_core::error::StoreError;
use brain_core::search_words;
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

    fn search_terms(query: &str) -> Option<String> {
        fts_query(query)
    }
}

/// Web-search syntax for FTS5, like PostgreSQL's `websearch_to_tsquery`: words
/// are ANDed, `or` between words ORs them, a leading `-` excludes, "quotes" make
/// a phrase. Every term is quoted, so no input is an FTS5 syntax error. The
/// result follows recall_search's scope token: ` AND text : (…)` for what
/// must match, then ` NOT text : …` for each exclusion, so a query of only
/// exclusions lists the project's artifacts without them, as PostgreSQL does.
pub(crate) fn fts_query(input: &str) -> Option<String> {
    let mut wanted: Vec<String> = Vec::new();
    let mut excluded: Vec<String> = Vec::new();
    let mut pending_or = false;
    let mut rest = input;
    while !rest.trim_start().is_empty() {
        rest = rest.trim_start();
        let (negate, body) = match rest.strip_prefix('-') {
            Some(b) => (true, b),
            None => (false, rest),
        };
        let (term, next) = if let Some(q) = body.strip_prefix('"') {
            match q.find('"') {
                Some(i) => (&q[..i], &q[i + 1..]),
                None => (q, ""),
            }
        } else {
            let end = body.find(char::is_whitespace).unwrap_or(body.len());
            (&body[..end], &body[end..])
        };
        rest = next;
        // brain's words are unicode61's tokens (brain_core::search_words),
        // so a phrase holds no more tokens than the query's counted words.
        let words: Vec<&str> = search_words::words(term).collect();
        if words.is_empty() {
            continue;
        }
        if !negate && words.len() == 1 && words[0].eq_ignore_ascii_case("or") && !wanted.is_empty()
        {
            pending_or = true;
            continue;
        }
        let phrase = format!("\"{}\"", words.join(" "));
        if negate {
            excluded.push(phrase);
            continue;
        }
        let joiner = match (wanted.is_empty(), pending_or) {
            (true, _) => "",
            (false, true) => " OR ",
            (false, false) => " AND ",
        };
        wanted.push(format!("{joiner}{phrase}"));
        pending_or = false;
    }
    if wanted.is_empty() && excluded.is_empty() {
        return None;
    }
    let mut out = String::new();
    if !wanted.is_empty() {
        out.push_str(&format!(" AND text : ({})", wanted.concat()));
    }
    for phrase in excluded {
        out.push_str(&format!(" NOT text : {phrase}"));
    }
    Some(out)
}

#[cfg(test)]
mod fts_query_tests {
    use super::fts_query;

    #[test]
    fn terms_follow_the_scope_token() {
        assert_eq!(
            fts_query("alpha beta").unwrap(),
            r#" AND text : ("alpha" AND "beta")"#
        );
        assert_eq!(
            fts_query("alpha or beta").unwrap(),
            r#" AND text : ("alpha" OR "beta")"#
        );
        assert_eq!(
            fts_query("alpha -beta \"gamma delta\"").unwrap(),
            r#" AND text : ("alpha" AND "gamma delta") NOT text : "beta""#
        );
        // Only exclusions: the scope's artifacts without them (as PostgreSQL).
        assert_eq!(fts_query("-alpha").unwrap(), r#" NOT text : "alpha""#);
        assert_eq!(fts_query(" -- !! "), None);
        // Quotes and FTS5 syntax in the input stay inside quoted phrases.
        assert_eq!(
            fts_query("fts_scope:x").unwrap(),
            r#" AND text : ("fts scope x")"#
        );
    }
}
