//! The SQL of opening and attaching to sessions, and of the briefing.

use crate::dialect::On;
use brain_core::error::StoreError;
use brain_core::ids::{ProjectKey, SessionId, TenantId};
use brain_core::memory::{Document, DocumentKind};
use brain_core::model::{Session, SessionStatus};
use brain_core::sql::sessions;
use brain_core::store::{BriefingSources, FocusRef, NamedBody, RecentSession};
use sqlx::{Row, SqliteConnection};

use crate::memory::{brief_in, mental_models_in};

use crate::db;

/// SPEC §5 from its sources, as they stand inside this transaction.
/// The last `limit` closed agent sessions of a project, newest first.
pub(crate) async fn recent_closed(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    project: &ProjectKey,
    limit: i64,
) -> Result<Vec<RecentSession>, StoreError> {
    let found = sqlx::query(
        "SELECT session_id, status, summary, ended_at FROM sessions \
         WHERE tenant_id = ?1 AND project = ?2 AND kind = 'agent' AND status <> 'open' \
         ORDER BY ended_at DESC, session_id LIMIT ?3",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .bind(limit)
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    let mut out = Vec::with_capacity(found.len());
    for row in &found {
        let status: String = row.try_get("status").map_err(db)?;
        out.push(RecentSession {
            session_id: SessionId::from_uuid(row.try_get("session_id").map_err(db)?),
            status: SessionStatus::parse(&status)
                .ok_or_else(|| StoreError::Backend("stored status does not parse".into()))?,
            summary: row.try_get("summary").map_err(db)?,
            ended_at: crate::rows::opt_time(row, "ended_at")?,
        });
    }
    Ok(out)
}

/// This client's newest other open agent session in the project.
pub(crate) async fn previous_open(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    session: &Session,
) -> Result<
    Option<(
        SessionId,
        chrono::DateTime<chrono::Utc>,
        chrono::DateTime<chrono::Utc>,
    )>,
    StoreError,
> {
    let row = sqlx::query(
        "SELECT session_id, opened_at, last_activity_at FROM sessions \
         WHERE tenant_id = ?1 AND project = ?2 AND client_key = ?3 AND kind = 'agent' \
         AND status = 'open' AND session_id <> ?4 ORDER BY opened_at DESC LIMIT 1",
    )
    .bind(tenant.as_str())
    .bind(session.project.as_str())
    .bind(session.client_key.as_str())
    .bind(session.session_id.as_uuid())
    .fetch_optional(&mut *conn)
    .await
    .map_err(db)?;
    match row {
        None => Ok(None),
        Some(row) => Ok(Some((
            SessionId::from_uuid(row.try_get("session_id").map_err(db)?),
            crate::rows::time(&row, "opened_at")?,
            crate::rows::time(&row, "last_activity_at")?,
        ))),
    }
}

/// Everything the briefing reads but its mission recall. SQLite is in
/// process, so these are function calls, not round trips.
pub(crate) async fn briefing_sources(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    session: &Session,
) -> Result<BriefingSources, StoreError> {
    let project = &session.project;
    let mut c = On(&mut *conn);
    let base = sessions::load_focus(&mut c, tenant, project, None, false).await?;
    let previous_open = match previous_open(c.0, tenant, session).await? {
        None => None,
        Some((id, opened_at, last)) => Some((
            id,
            opened_at,
            last,
            sessions::ledger_size(&mut c, tenant, id).await?,
        )),
    };
    let written = |d: Document| (d.revision > 0).then_some(d.body);
    let exec = DocumentKind::ExecutiveState;
    let exec = sessions::load_document(&mut c, tenant, project, exec, "", false).await?;
    let sync = DocumentKind::SyncNote;
    let sync = sessions::load_document(&mut c, tenant, project, sync, "", false).await?;
    let mental_models = mental_models_in(c.0, tenant, project)
        .await?
        .into_iter()
        .map(|d| NamedBody {
            name: d.name,
            body: d.body,
        })
        .collect();
    Ok(BriefingSources {
        base: FocusRef {
            body: base.body,
            revision: base.revision,
        },
        previous_open,
        executive_state: written(exec),
        sync_note: written(sync),
        mental_models,
        brief: brief_in(c.0, tenant, project).await?,
        inbox_count: sessions::inbox_count(&mut c, tenant, project).await?,
        open_sessions: sessions::open_agent_sessions(&mut c, tenant, project).await?,
        recent_sessions: recent_closed(c.0, tenant, project, 5).await?,
    })
}
