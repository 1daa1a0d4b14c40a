//! Recall (SQLite FTS5), documents, history, listings,
//! receipt pages and daily briefs.

use crate::dialect::Cols;
use brain_core::error::StoreError;
use brain_core::ids::{ProjectKey, SessionId, SlotName, TenantId};
use brain_core::memory::{
    Brief, DayActivity, Document, DocumentKind, HistoryEntry, RecallHit, daily_brief_text,
};
use brain_core::model::{Revision, now_micros};
use brain_core::receipt::Receipt;
use brain_core::sql::rows;
use brain_core::store::{RecallQuery, ReceiptQuery, SessionDetail, SessionListQuery};
use chrono::{DateTime, Utc};

use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use crate::rows::micros;
use crate::{SqliteStore, db, ledger};

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
                artifact: rows::artifact(&Cols(r))?,
                rank: r.try_get::<f64, _>("rank").map_err(db)?,
                snippet: r.try_get("snippet").map_err(db)?,
            })
        })
        .collect()
}

fn document(row: &SqliteRow) -> Result<Document, StoreError> {
    let kind: String = row.try_get("kind").map_err(db)?;
    Ok(Document {
        kind: DocumentKind::parse(&kind)
            .ok_or_else(|| StoreError::Backend("stored document kind does not parse".into()))?,
        name: row.try_get("name").map_err(db)?,
        body: row.try_get("body").map_err(db)?,
        revision: row.try_get("revision").map_err(db)?,
        updated_at: crate::rows::opt_time(row, "updated_at")?,
        updated_by: row.try_get("updated_by").map_err(db)?,
    })
}

pub(crate) async fn document_get_in(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    project: &ProjectKey,
    kind: DocumentKind,
    name: &str,
) -> Result<Document, StoreError> {
    let row = sqlx::query(
        "SELECT kind, name, body, revision, updated_at, updated_by FROM documents \
         WHERE tenant_id = ?1 AND project = ?2 AND kind = ?3 AND name = ?4",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .bind(kind.as_str())
    .bind(name)
    .fetch_optional(&mut *conn)
    .await
    .map_err(db)?;
    match row {
        Some(r) => document(&r),
        None => Ok(Document::empty(kind, name)),
    }
}

pub(crate) async fn document_get(
    store: &SqliteStore,
    tenant: &TenantId,
    project: &ProjectKey,
    kind: DocumentKind,
    name: &str,
) -> Result<Document, StoreError> {
    let mut conn = store.pool.acquire().await.map_err(db)?;
    document_get_in(&mut conn, tenant, project, kind, name).await
}

pub(crate) async fn mental_models_in(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    project: &ProjectKey,
) -> Result<Vec<Document>, StoreError> {
    let found = sqlx::query(
        "SELECT kind, name, body, revision, updated_at, updated_by FROM documents \
         WHERE tenant_id = ?1 AND project = ?2 AND kind = 'mental_model' ORDER BY name",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    found.iter().map(document).collect()
}

pub(crate) async fn write_document(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    project: &ProjectKey,
    doc: &Document,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO documents (tenant_id, project, kind, name, body, revision, updated_at, updated_by) \
         VALUES (?1,?2,?3,?4,?5,?6,?7,?8) ON CONFLICT (tenant_id, project, kind, name) DO UPDATE \
         SET body = EXCLUDED.body, revision = EXCLUDED.revision, updated_at = EXCLUDED.updated_at, \
             updated_by = EXCLUDED.updated_by",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .bind(doc.kind.as_str())
    .bind(&doc.name)
    .bind(&doc.body)
    .bind(doc.revision)
    .bind(doc.updated_at.map(micros))
    .bind(&doc.updated_by)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(())
}

pub(crate) async fn focus_history(
    store: &SqliteStore,
    tenant: &TenantId,
    project: &ProjectKey,
    slot: Option<&SlotName>,
    before: Option<Revision>,
    limit: i64,
) -> Result<Vec<HistoryEntry>, StoreError> {
    let found = sqlx::query(
        "SELECT revision, body, session_id, receipt_seq, created_at FROM focus_history \
         WHERE tenant_id = ?1 AND project = ?2 AND slot = ?3 AND revision < ?4 \
         ORDER BY revision DESC LIMIT ?5",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .bind(ledger::slot_key(slot))
    .bind(before.unwrap_or(i64::MAX))
    .bind(limit + 1)
    .fetch_all(&store.pool)
    .await
    .map_err(db)?;
    found
        .iter()
        .map(|r| {
            Ok(HistoryEntry {
                revision: r.try_get("revision").map_err(db)?,
                body: r.try_get("body").map_err(db)?,
                session_id: SessionId::from_uuid(r.try_get("session_id").map_err(db)?),
                receipt_seq: r.try_get("receipt_seq").map_err(db)?,
                created_at: crate::rows::time(r, "created_at")?,
            })
        })
        .collect()
}

pub(crate) async fn session_list(
    store: &SqliteStore,
    tenant: &TenantId,
    q: &SessionListQuery,
) -> Result<Vec<SessionDetail>, StoreError> {
    let sql = format!(
        "SELECT {}, (SELECT count(*) FROM artifacts a WHERE a.tenant_id = s.tenant_id \
           AND a.session_id = s.session_id) AS ledger_size \
         FROM sessions s WHERE tenant_id = ?1 AND project = ?2 AND kind = 'agent' \
         AND (?3 IS NULL OR status = ?3) \
         AND (?4 IS NULL OR (opened_at, session_id) < (?4, ?5)) \
         ORDER BY opened_at DESC, session_id DESC LIMIT ?6",
        rows::SESSION_COLUMNS
    );
    let mut conn = store.pool.acquire().await.map_err(db)?;
    let found = sqlx::query(&sql)
        .bind(tenant.as_str())
        .bind(q.project.as_str())
        .bind(q.status.map(|s| s.as_str()))
        .bind(q.after.map(|a| micros(a.0)))
        .bind(q.after.map(|a| a.1.as_uuid()).unwrap_or_default())
        .bind(q.limit)
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
    let now = now_micros();
    let mut out = Vec::with_capacity(found.len());
    for r in &found {
        let (session, _) = rows::session(&Cols(r))?;
        let ledger_size: i64 = r.try_get("ledger_size").map_err(db)?;
        out.push(SessionDetail {
            idle: session.is_idle(now, store.settings.idle_secs),
            session,
            ledger_size,
        });
    }
    Ok(out)
}

pub(crate) async fn receipts_page(
    store: &SqliteStore,
    tenant: &TenantId,
    q: &ReceiptQuery,
) -> Result<Vec<Receipt>, StoreError> {
    let sql = format!(
        "SELECT {} FROM receipts WHERE tenant_id = ?1 AND seq > ?2 \
         AND (?3 IS NULL OR project = ?3) AND (?4 IS NULL OR session_id = ?4) \
         AND (?6 IS NULL OR seq < ?6) ORDER BY seq {} LIMIT ?5",
        rows::RECEIPT_COLUMNS,
        if q.before_seq.is_some() {
            "DESC"
        } else {
            "ASC"
        }
    );
    let found = sqlx::query(&sql)
        .bind(tenant.as_str())
        .bind(q.after_seq)
        .bind(q.project.as_ref().map(ProjectKey::as_str))
        .bind(q.session_id.map(|s| s.as_uuid()))
        .bind(q.limit)
        .bind(q.before_seq)
        .fetch_all(&store.pool)
        .await
        .map_err(db)?;
    found.iter().map(|r| rows::receipt(&Cols(r))).collect()
}

pub(crate) async fn brief_in(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    project: &ProjectKey,
) -> Result<Option<Brief>, StoreError> {
    let row = sqlx::query(
        "SELECT body, generated_at FROM daily_briefs WHERE tenant_id = ?1 AND project = ?2 \
         ORDER BY day DESC LIMIT 1",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .fetch_optional(&mut *conn)
    .await
    .map_err(db)?;
    let Some(row) = row else { return Ok(None) };
    let generated_at = crate::rows::time(&row, "generated_at")?;
    Ok(Some(Brief::at(
        row.try_get("body").map_err(db)?,
        generated_at,
        now_micros(),
    )))
}

pub(crate) async fn inbox_count_in(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    project: &ProjectKey,
) -> Result<i64, StoreError> {
    sqlx::query_scalar(
        "SELECT count(*) FROM artifacts WHERE tenant_id = ?1 AND project = ?2 \
         AND kind = 'todo' AND acknowledged_at IS NULL",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .fetch_one(&mut *conn)
    .await
    .map_err(db)
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

/// Today's brief for every project active in the last 24 h; `ON CONFLICT DO
/// NOTHING` on (tenant, project, day) makes the first replica's write the only one.
pub(crate) async fn generate_daily_briefs(
    store: &SqliteStore,
    now: DateTime<Utc>,
) -> Result<usize, StoreError> {
    let since = now - chrono::Duration::hours(24);
    let day = now.date_naive();
    let active: Vec<(String, String)> = sqlx::query_as(
        "SELECT p.tenant_id, p.project FROM projects p \
         WHERE NOT EXISTS (SELECT 1 FROM daily_briefs b WHERE b.tenant_id = p.tenant_id \
                             AND b.project = p.project AND b.day = ?2) \
           AND (EXISTS (SELECT 1 FROM sessions s WHERE s.tenant_id = p.tenant_id AND s.project = p.project \
                          AND s.kind = 'agent' AND s.last_activity_at >= ?1) \
             OR EXISTS (SELECT 1 FROM artifacts a WHERE a.tenant_id = p.tenant_id AND a.project = p.project \
                          AND a.created_at >= ?1))",
    )
    .bind(micros(since))
    .bind(day.to_string())
    .fetch_all(&store.pool)
    .await
    .map_err(db)?;
    let mut written = 0;
    for (tenant, project) in active {
        let (Ok(tenant), Ok(project)) = (TenantId::parse(&tenant), ProjectKey::parse(&project))
        else {
            continue;
        };
        // Read and written in one write, through the writer's queue.
        let mut tx = store.write_tx().await?;
        let a = activity(tx.conn()?, &tenant, &project, since).await?;
        if a.is_empty() {
            continue;
        }
        let done = sqlx::query(
            "INSERT INTO daily_briefs (tenant_id, project, day, body, generated_at) \
             VALUES (?1,?2,?3,?4,?5) ON CONFLICT DO NOTHING",
        )
        .bind(tenant.as_str())
        .bind(project.as_str())
        .bind(day.to_string())
        .bind(daily_brief_text(&project, day, &a))
        .bind(micros(now))
        .execute(tx.conn()?)
        .await
        .map_err(db)?;
        tx.commit().await?;
        written += usize::try_from(done.rows_affected()).unwrap_or(0);
    }
    Ok(written)
}

async fn activity(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    project: &ProjectKey,
    since: DateTime<Utc>,
) -> Result<DayActivity, StoreError> {
    let closed: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT status, summary FROM sessions WHERE tenant_id = ?1 AND project = ?2 AND kind = 'agent' \
         AND ended_at >= ?3 ORDER BY ended_at, session_id",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .bind(micros(since))
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    let focus: Vec<(String, i64)> = sqlx::query_as(
        "SELECT slot, revision FROM focus_history WHERE tenant_id = ?1 AND project = ?2 \
         AND created_at >= ?3 ORDER BY created_at, slot, revision",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .bind(micros(since))
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    let kinds: Vec<(String, i64)> = sqlx::query_as(
        "SELECT kind, count(*) FROM artifacts WHERE tenant_id = ?1 AND project = ?2 \
         AND created_at >= ?3 GROUP BY kind ORDER BY kind",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .bind(micros(since))
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    let open_sessions = crate::lifecycle::open_agent_sessions(conn, tenant, project).await?;
    Ok(DayActivity::from_rows(closed, focus, kinds, open_sessions))
}
