//! Recall (PostgreSQL full-text search), documents, history, listings,
//! receipt pages and daily briefs.

use crate::dialect::Cols;
use brain_core::error::StoreError;
use brain_core::ids::TenantId;
use brain_core::memory::RecallHit;
use brain_core::sql::rows;
use brain_core::store::RecallQuery;
use sqlx::{PgConnection, Row};
use std::sync::LazyLock;

use crate::{PgStore, db};

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
                artifact: rows::artifact(&Cols::new(r))?,
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
