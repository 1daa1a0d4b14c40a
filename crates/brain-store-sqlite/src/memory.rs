//! Recall (SQLite FTS5), documents, history, listings,
//! receipt pages and daily briefs.

use crate::dialect::Cols;
use brain_core::error::StoreError;
use brain_core::ids::TenantId;
use brain_core::memory::RecallHit;
use brain_core::sql::rows;
use brain_core::store::RecallQuery;

use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use crate::{SqliteStore, db};

pub(crate) async fn recall(
    store: &SqliteStore,
    tenant: &TenantId,
    q: &RecallQuery,
) -> Result<Vec<RecallHit>, StoreError> {
    let mut conn = store.pool.acquire().await.map_err(db)?;
    recall_in(&mut conn, tenant, q).await
}

pub(crate) async fn recall_in(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    q: &RecallQuery,
) -> Result<Vec<RecallHit>, StoreError> {
    let kinds: Vec<&str> = q.kinds.iter().map(|k| k.as_str()).collect();
    let Some(query) = &q.query else {
        return list_in(conn, tenant, q, &kinds).await;
    };
    let Some(matcher) = fts_query(query) else {
        return Ok(Vec::new());
    };
    // The rank is relative to the query's best match (1.0), over every match,
    // not just this page: comparable across pages and with PostgreSQL's.
    let sql = format!(
        "WITH hits AS MATERIALIZED ( \
           SELECT {cols}, -bm25(artifacts_fts) AS raw, a.created_at AS created, a.artifact_id AS aid, \
             snippet(artifacts_fts, 0, '«', '»', '…', 16) AS snippet \
           FROM artifacts_fts JOIN artifacts a ON a.rowid = artifacts_fts.rowid \
           WHERE artifacts_fts MATCH ?3 AND a.tenant_id = ?1 AND a.project = ?2 \
             AND {filters}) \
         SELECT *, CASE WHEN (SELECT max(raw) FROM hits) > 0 \
                        THEN raw / (SELECT max(raw) FROM hits) ELSE 1.0 END AS rank \
         FROM hits ORDER BY rank DESC, created DESC, aid LIMIT ?5 OFFSET ?6",
        cols = qualified_artifact_columns(),
        filters = RECALL_FILTERS,
    );
    let found = sqlx::query(&sql)
        .bind(tenant.as_str())
        .bind(q.project.as_str())
        .bind(matcher)
        .bind(serde_json::to_string(&kinds).map_err(StoreError::backend)?)
        .bind(q.limit)
        .bind(q.offset)
        .bind(serde_json::to_string(&q.tags).map_err(StoreError::backend)?)
        .bind(q.inbox)
        .bind(q.session_id.map(|s| s.as_uuid()))
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
    hits(&found)
}

/// What every recall filters on besides tenant and project: kinds (?4), tags
/// (?7), the inbox (?8), a session's ledger (?9).
const RECALL_FILTERS: &str = "(json_array_length(?4) = 0 OR a.kind IN (SELECT value FROM json_each(?4))) \
    AND NOT EXISTS (SELECT 1 FROM json_each(?7) w \
                    WHERE w.value NOT IN (SELECT t.value FROM json_each(a.tags) t)) \
    AND (NOT ?8 OR (a.kind = 'todo' AND a.acknowledged_at IS NULL)) \
    AND (?9 IS NULL OR a.session_id = ?9)";

fn qualified_artifact_columns() -> String {
    rows::ARTIFACT_COLUMNS
        .split(", ")
        .map(|c| format!("a.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A recall without a query: newest first, every rank 1, the text's start as
/// snippet, paged by keyset (?10, ?11: the previous page's last).
async fn list_in(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    q: &RecallQuery,
    kinds: &[&str],
) -> Result<Vec<RecallHit>, StoreError> {
    let sql = format!(
        "SELECT {cols}, 1.0 AS rank, \
           CASE WHEN length(a.text) > {n} THEN substr(a.text, 1, {n}) || '…' ELSE a.text END AS snippet \
         FROM artifacts a WHERE a.tenant_id = ?1 AND a.project = ?2 AND {filters} \
           AND (?10 IS NULL OR (a.created_at, a.artifact_id) < (?10, ?11)) \
         ORDER BY a.created_at DESC, a.artifact_id DESC LIMIT ?5 OFFSET ?6",
        cols = qualified_artifact_columns(),
        filters = RECALL_FILTERS,
        n = brain_core::memory::LIST_SNIPPET_CHARS,
    );
    let found = sqlx::query(&sql)
        .bind(tenant.as_str())
        .bind(q.project.as_str())
        .bind("")
        .bind(serde_json::to_string(kinds).map_err(StoreError::backend)?)
        .bind(q.limit)
        .bind(q.offset)
        .bind(serde_json::to_string(&q.tags).map_err(StoreError::backend)?)
        .bind(q.inbox)
        .bind(q.session_id.map(|s| s.as_uuid()))
        .bind(q.before.map(|(at, _)| at.timestamp_micros()))
        .bind(q.before.map(|(_, id)| id.as_uuid()))
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
    hits(&found)
}

fn hits(rows_found: &[SqliteRow]) -> Result<Vec<RecallHit>, StoreError> {
    rows_found
        .iter()
        .map(|r| {
            Ok(RecallHit {
                artifact: rows::artifact(&Cols::new(r))?,
                rank: r.try_get::<f64, _>("rank").map_err(db)?,
                snippet: r.try_get("snippet").map_err(db)?,
            })
        })
        .collect()
}

/// Web-search syntax for FTS5, like PostgreSQL's `websearch_to_tsquery`: words
/// are ANDed, `or` between words ORs them, a leading `-` excludes, "quotes" make
/// a phrase. Every term is quoted, so no input is an FTS5 syntax error.
fn fts_query(input: &str) -> Option<String> {
    let mut out: Vec<String> = Vec::new();
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
        let words: Vec<&str> = term
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        if words.is_empty() {
            continue;
        }
        if !negate && words.len() == 1 && words[0].eq_ignore_ascii_case("or") && !out.is_empty() {
            pending_or = true;
            continue;
        }
        let phrase = format!("\"{}\"", words.join(" "));
        let joiner = if out.is_empty() {
            ""
        } else if negate {
            " NOT "
        } else if pending_or {
            " OR "
        } else {
            " AND "
        };
        if negate && out.is_empty() {
            continue; // FTS5 cannot start with NOT
        }
        out.push(format!("{joiner}{phrase}"));
        pending_or = false;
    }
    (!out.is_empty()).then(|| out.concat())
}
