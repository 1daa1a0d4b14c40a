//! Recall (PostgreSQL full-text search), documents, history, listings,
//! receipt pages and daily briefs.

use crate::dialect::Cols;
use brain_core::error::StoreError;
use brain_core::ids::{ProjectKey, SessionId, SlotName, TenantId};
use brain_core::memory::{
    DayActivity, Document, DocumentKind, HistoryEntry, RecallHit, daily_brief_text,
};
use brain_core::model::{Revision, now_micros};
use brain_core::receipt::Receipt;
use brain_core::sql::rows;
use brain_core::store::{RecallQuery, ReceiptQuery, SessionDetail, SessionListQuery};
use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};
use std::sync::LazyLock;

use crate::{PgStore, db, ledger};

pub(crate) async fn recall(
    store: &PgStore,
    tenant: &TenantId,
    q: &RecallQuery,
) -> Result<Vec<RecallHit>, StoreError> {
    let mut tx = store.scoped(tenant).await?;
    let hits = recall_in(&mut tx, tenant, q).await?;
    tx.commit().await.map_err(db)?;
    Ok(hits)
}

/// What every recall filters on: kinds ($4), tags ($7), the inbox ($8), a
/// session's ledger ($9).
const RECALL_FILTERS: &str = "tenant_id = $1 AND project = $2 \
    AND (cardinality($4::text[]) = 0 OR kind = ANY($4)) AND tags @> $7::text[] \
    AND (NOT $8 OR (kind = 'todo' AND acknowledged_at IS NULL)) \
    AND ($9::uuid IS NULL OR session_id = $9)";

static RECALL_SEARCH: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {cols}, \
           ts_rank(search, query) / NULLIF(max(ts_rank(search, query)) OVER (), 0) AS rank, \
           ts_headline('simple', text, query, 'StartSel=«,StopSel=»,MaxWords=30,MinWords=8,MaxFragments=2') AS snippet \
         FROM artifacts, websearch_to_tsquery('simple', $3) AS query \
         WHERE {RECALL_FILTERS} AND search @@ query \
         ORDER BY rank DESC, created_at DESC, artifact_id LIMIT $5 OFFSET $6",
        cols = rows::ARTIFACT_COLUMNS
    )
});

/// A listing: newest first, every rank 1, the text's start as snippet, paged
/// by keyset ($10, $11: the previous page's last). The query ($3) is bound empty
/// and only typed here, so both shapes share their first nine parameters.
static RECALL_LIST: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {cols}, 1.0::real AS rank, \
           CASE WHEN char_length(text) > {n} THEN left(text, {n}) || '…' ELSE text END AS snippet \
         FROM artifacts WHERE {RECALL_FILTERS} AND $3::text = '' \
           AND ($10::timestamptz IS NULL OR (created_at, artifact_id) < ($10, $11::uuid)) \
         ORDER BY created_at DESC, artifact_id DESC LIMIT $5 OFFSET $6",
        cols = rows::ARTIFACT_COLUMNS,
        n = brain_core::memory::LIST_SNIPPET_CHARS,
    )
});

pub(crate) async fn recall_in(
    conn: &mut PgConnection,
    tenant: &TenantId,
    q: &RecallQuery,
) -> Result<Vec<RecallHit>, StoreError> {
    let kinds: Vec<&str> = q.kinds.iter().map(|k| k.as_str()).collect();
    let sql = if q.query.is_some() {
        &*RECALL_SEARCH
    } else {
        &*RECALL_LIST
    };
    let mut query = sqlx::query(sql)
        .bind(tenant.as_str())
        .bind(q.project.as_str())
        .bind(q.query.as_deref().unwrap_or(""))
        .bind(&kinds)
        .bind(q.limit)
        .bind(q.offset)
        .bind(&q.tags)
        .bind(q.inbox)
        .bind(q.session_id.map(|s| s.as_uuid()));
    if q.query.is_none() {
        query = query
            .bind(q.before.map(|(at, _)| at))
            .bind(q.before.map(|(_, id)| id.as_uuid()));
    }
    let found = query.fetch_all(&mut *conn).await.map_err(db)?;
    found
        .iter()
        .map(|r| {
            Ok(RecallHit {
                artifact: rows::artifact(&Cols(r))?,
                rank: f64::from(
                    r.try_get::<Option<f32>, _>("rank")
                        .map_err(db)?
                        .unwrap_or(1.0),
                ),
                snippet: r.try_get("snippet").map_err(db)?,
            })
        })
        .collect()
}

fn document(row: &PgRow) -> Result<Document, StoreError> {
    let kind: String = row.try_get("kind").map_err(db)?;
    Ok(Document {
        kind: DocumentKind::parse(&kind)
            .ok_or_else(|| StoreError::Backend("stored document kind does not parse".into()))?,
        name: row.try_get("name").map_err(db)?,
        body: row.try_get("body").map_err(db)?,
        revision: row.try_get("revision").map_err(db)?,
        updated_at: row.try_get("updated_at").map_err(db)?,
        updated_by: row.try_get("updated_by").map_err(db)?,
    })
}

pub(crate) async fn document_get_in(
    conn: &mut PgConnection,
    tenant: &TenantId,
    project: &ProjectKey,
    kind: DocumentKind,
    name: &str,
    lock: bool,
) -> Result<Document, StoreError> {
    let sql = format!(
        "SELECT kind, name, body, revision, updated_at, updated_by FROM documents \
         WHERE tenant_id = $1 AND project = $2 AND kind = $3 AND name = $4{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    let row = sqlx::query(&sql)
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
    store: &PgStore,
    tenant: &TenantId,
    project: &ProjectKey,
    kind: DocumentKind,
    name: &str,
) -> Result<Document, StoreError> {
    let mut tx = store.scoped(tenant).await?;
    let doc = document_get_in(&mut tx, tenant, project, kind, name, false).await?;
    tx.commit().await.map_err(db)?;
    Ok(doc)
}

pub(crate) async fn write_document(
    conn: &mut PgConnection,
    tenant: &TenantId,
    project: &ProjectKey,
    doc: &Document,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO documents (tenant_id, project, kind, name, body, revision, updated_at, updated_by) \
         VALUES ($1,$2,$3,$4,$5,$6,$7,$8) ON CONFLICT (tenant_id, project, kind, name) DO UPDATE \
         SET body = EXCLUDED.body, revision = EXCLUDED.revision, updated_at = EXCLUDED.updated_at, \
             updated_by = EXCLUDED.updated_by",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .bind(doc.kind.as_str())
    .bind(&doc.name)
    .bind(&doc.body)
    .bind(doc.revision)
    .bind(doc.updated_at)
    .bind(&doc.updated_by)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(())
}

pub(crate) async fn focus_history(
    store: &PgStore,
    tenant: &TenantId,
    project: &ProjectKey,
    slot: Option<&SlotName>,
    before: Option<Revision>,
    limit: i64,
) -> Result<Vec<HistoryEntry>, StoreError> {
    let mut tx = store.scoped(tenant).await?;
    let found = sqlx::query(
        "SELECT revision, body, session_id, receipt_seq, created_at FROM focus_history \
         WHERE tenant_id = $1 AND project = $2 AND slot = $3 AND revision < $4 \
         ORDER BY revision DESC LIMIT $5",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .bind(ledger::slot_key(slot))
    .bind(before.unwrap_or(i64::MAX))
    .bind(limit + 1)
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)?;
    found
        .iter()
        .map(|r| {
            Ok(HistoryEntry {
                revision: r.try_get("revision").map_err(db)?,
                body: r.try_get("body").map_err(db)?,
                session_id: SessionId::from_uuid(r.try_get("session_id").map_err(db)?),
                receipt_seq: r.try_get("receipt_seq").map_err(db)?,
                created_at: r.try_get("created_at").map_err(db)?,
            })
        })
        .collect()
}

pub(crate) async fn session_list(
    store: &PgStore,
    tenant: &TenantId,
    q: &SessionListQuery,
) -> Result<Vec<SessionDetail>, StoreError> {
    let sql = format!(
        "SELECT {}, (SELECT count(*) FROM artifacts a WHERE a.tenant_id = s.tenant_id \
           AND a.session_id = s.session_id) AS ledger_size \
         FROM sessions s WHERE tenant_id = $1 AND project = $2 AND kind = 'agent' \
         AND ($3::text IS NULL OR status = $3) \
         AND ($4::timestamptz IS NULL OR (opened_at, session_id) < ($4, $5)) \
         ORDER BY opened_at DESC, session_id DESC LIMIT $6",
        rows::SESSION_COLUMNS
    );
    let mut conn = store.scoped(tenant).await?;
    let found = sqlx::query(&sql)
        .bind(tenant.as_str())
        .bind(q.project.as_str())
        .bind(q.status.map(|s| s.as_str()))
        .bind(q.after.map(|a| a.0))
        .bind(q.after.map(|a| a.1.as_uuid()).unwrap_or_default())
        .bind(q.limit)
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
    conn.commit().await.map_err(db)?;
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
    store: &PgStore,
    tenant: &TenantId,
    q: &ReceiptQuery,
) -> Result<Vec<Receipt>, StoreError> {
    let sql = format!(
        "SELECT {} FROM receipts WHERE tenant_id = $1 AND seq > $2 \
         AND ($3::text IS NULL OR project = $3) AND ($4::uuid IS NULL OR session_id = $4) \
         AND ($6::bigint IS NULL OR seq < $6) ORDER BY seq {} LIMIT $5",
        rows::RECEIPT_COLUMNS,
        if q.before_seq.is_some() {
            "DESC"
        } else {
            "ASC"
        }
    );
    let mut tx = store.scoped(tenant).await?;
    let found = sqlx::query(&sql)
        .bind(tenant.as_str())
        .bind(q.after_seq)
        .bind(q.project.as_ref().map(ProjectKey::as_str))
        .bind(q.session_id.map(|s| s.as_uuid()))
        .bind(q.limit)
        .bind(q.before_seq)
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?;
    tx.commit().await.map_err(db)?;
    found.iter().map(|r| rows::receipt(&Cols(r))).collect()
}

pub(crate) async fn inbox_count_in(
    conn: &mut PgConnection,
    tenant: &TenantId,
    project: &ProjectKey,
) -> Result<i64, StoreError> {
    sqlx::query_scalar(
        "SELECT count(*) FROM artifacts WHERE tenant_id = $1 AND project = $2 \
         AND kind = 'todo' AND acknowledged_at IS NULL",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .fetch_one(&mut *conn)
    .await
    .map_err(db)
}

/// Today's brief for every project active in the last 24 h; `ON CONFLICT DO
/// NOTHING` on (tenant, project, day) makes the first replica's write the only one.
pub(crate) async fn generate_daily_briefs(
    store: &PgStore,
    now: DateTime<Utc>,
) -> Result<usize, StoreError> {
    let since = now - chrono::Duration::hours(24);
    let day = now.date_naive();
    // System scope, audited here: the scheduler looks across tenants only to
    // find which projects need a brief; each brief is written in its tenant's scope.
    let mut listing = store.system().await?;
    let active: Vec<(String, String)> = sqlx::query_as(
        "SELECT p.tenant_id, p.project FROM projects p \
         WHERE NOT EXISTS (SELECT 1 FROM daily_briefs b WHERE b.tenant_id = p.tenant_id \
                             AND b.project = p.project AND b.day = $2) \
           AND (EXISTS (SELECT 1 FROM sessions s WHERE s.tenant_id = p.tenant_id AND s.project = p.project \
                          AND s.kind = 'agent' AND s.last_activity_at >= $1) \
             OR EXISTS (SELECT 1 FROM artifacts a WHERE a.tenant_id = p.tenant_id AND a.project = p.project \
                          AND a.created_at >= $1))",
    )
    .bind(since)
    .bind(day)
    .fetch_all(&mut *listing)
    .await
    .map_err(db)?;
    listing.commit().await.map_err(db)?;
    let mut written = 0;
    for (tenant, project) in active {
        let (Ok(tenant), Ok(project)) = (TenantId::parse(&tenant), ProjectKey::parse(&project))
        else {
            continue;
        };
        let mut conn = store.scoped(&tenant).await?;
        let a = activity(&mut conn, &tenant, &project, since).await?;
        if a.is_empty() {
            continue;
        }
        let done = sqlx::query(
            "INSERT INTO daily_briefs (tenant_id, project, day, body, generated_at) \
             VALUES ($1,$2,$3,$4,$5) ON CONFLICT DO NOTHING",
        )
        .bind(tenant.as_str())
        .bind(project.as_str())
        .bind(day)
        .bind(daily_brief_text(&project, day, &a))
        .bind(now)
        .execute(&mut *conn)
        .await
        .map_err(db)?;
        conn.commit().await.map_err(db)?;
        written += usize::try_from(done.rows_affected()).unwrap_or(0);
    }
    Ok(written)
}

async fn activity(
    conn: &mut PgConnection,
    tenant: &TenantId,
    project: &ProjectKey,
    since: DateTime<Utc>,
) -> Result<DayActivity, StoreError> {
    let closed: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT status, summary FROM sessions WHERE tenant_id = $1 AND project = $2 AND kind = 'agent' \
         AND ended_at >= $3 ORDER BY ended_at, session_id",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .bind(since)
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    let focus: Vec<(String, i64)> = sqlx::query_as(
        "SELECT slot, revision FROM focus_history WHERE tenant_id = $1 AND project = $2 \
         AND created_at >= $3 ORDER BY created_at, slot, revision",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .bind(since)
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    let kinds: Vec<(String, i64)> = sqlx::query_as(
        "SELECT kind, count(*) FROM artifacts WHERE tenant_id = $1 AND project = $2 \
         AND created_at >= $3 GROUP BY kind ORDER BY kind",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .bind(since)
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    let open_sessions = crate::lifecycle::open_agent_sessions(conn, tenant, project).await?;
    Ok(DayActivity::from_rows(closed, focus, kinds, open_sessions))
}
