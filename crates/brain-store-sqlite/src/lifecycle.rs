//! The SQL of opening and attaching to sessions, and of the briefing.

use crate::dialect::Cols;
use brain_core::error::StoreError;
use brain_core::ids::{ProjectKey, SessionId, SlotName, TenantId};
use brain_core::memory::{Document, DocumentKind};
use brain_core::model::{Focus, Session, SessionStatus};
use brain_core::rules::CloseRecord;
use brain_core::sql::rows;
use brain_core::store::{BriefingSources, FocusRef, NamedBody, RecentSession};
use sqlx::{Row, SqliteConnection};

use crate::memory::{brief_in, document_get_in, inbox_count_in, mental_models_in};

use crate::db;
use crate::ledger::slot_key;
use crate::rows::micros;

/// Load a session of this tenant. Writers already hold the database lock.
pub(crate) async fn load_session(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    id: SessionId,
) -> Result<Option<(Session, Option<CloseRecord>)>, StoreError> {
    let sql = format!(
        "SELECT {} FROM sessions WHERE tenant_id = ?1 AND session_id = ?2",
        rows::SESSION_COLUMNS
    );
    let row = sqlx::query(&sql)
        .bind(tenant.as_str())
        .bind(id.as_uuid())
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?;
    row.as_ref().map(|r| rows::session(&Cols(r))).transpose()
}

/// The base focus (`slot = None`) or a slot body; missing reads as empty at revision 0.
pub(crate) async fn load_focus(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    project: &ProjectKey,
    slot: Option<&SlotName>,
) -> Result<Focus, StoreError> {
    let row = sqlx::query(
        "SELECT body, revision, updated_at, updated_by_session FROM focus_bodies \
         WHERE tenant_id = ?1 AND project = ?2 AND slot = ?3",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .bind(slot_key(slot))
    .fetch_optional(&mut *conn)
    .await
    .map_err(db)?;
    match row {
        Some(row) => rows::focus(&Cols(&row)),
        None => Ok(Focus::empty()),
    }
}

pub(crate) async fn insert_session(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    s: &Session,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO sessions (tenant_id, session_id, project, client_key, kind, bound_slot, \
         started_focus_revision, status, opened_at, last_activity_at, opened_by_kind, opened_by_subject, \
         opened_by_role, opened_by_credential) \
         VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)",
    )
    .bind(tenant.as_str())
    .bind(s.session_id.as_uuid())
    .bind(s.project.as_str())
    .bind(s.client_key.as_str())
    .bind(s.kind.as_str())
    .bind(s.bound_slot.as_ref().map(SlotName::as_str))
    .bind(s.started_focus_revision)
    .bind(s.status.as_str())
    .bind(micros(s.opened_at))
    .bind(micros(s.last_activity_at))
    .bind(s.opened_by.kind.as_str())
    .bind(&s.opened_by.subject)
    .bind(s.opened_by.role.as_str())
    .bind(&s.opened_by.credential_id)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(())
}

pub(crate) async fn ledger_size(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    id: SessionId,
) -> Result<i64, StoreError> {
    sqlx::query_scalar("SELECT count(*) FROM artifacts WHERE tenant_id = ?1 AND session_id = ?2")
        .bind(tenant.as_str())
        .bind(id.as_uuid())
        .fetch_one(&mut *conn)
        .await
        .map_err(db)
}

pub(crate) async fn open_agent_sessions(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    project: &ProjectKey,
) -> Result<i64, StoreError> {
    sqlx::query_scalar(
        "SELECT count(*) FROM sessions WHERE tenant_id = ?1 AND project = ?2 \
         AND status = 'open' AND kind = 'agent'",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .fetch_one(&mut *conn)
    .await
    .map_err(db)
}

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
    let base = load_focus(conn, tenant, project, None).await?;
    let previous_open = match previous_open(conn, tenant, session).await? {
        None => None,
        Some((id, opened_at, last)) => {
            Some((id, opened_at, last, ledger_size(conn, tenant, id).await?))
        }
    };
    let written = |d: Document| (d.revision > 0).then_some(d.body);
    let exec = document_get_in(conn, tenant, project, DocumentKind::ExecutiveState, "").await?;
    let sync = document_get_in(conn, tenant, project, DocumentKind::SyncNote, "").await?;
    let mental_models = mental_models_in(conn, tenant, project)
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
        brief: brief_in(conn, tenant, project).await?,
        inbox_count: inbox_count_in(conn, tenant, project).await?,
        open_sessions: open_agent_sessions(conn, tenant, project).await?,
        recent_sessions: recent_closed(conn, tenant, project, 5).await?,
    })
}

pub(crate) async fn set_binding(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    id: SessionId,
    slot: &SlotName,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE sessions SET bound_slot = ?3, last_activity_at = ?4 WHERE tenant_id = ?1 AND session_id = ?2",
    )
    .bind(tenant.as_str())
    .bind(id.as_uuid())
    .bind(slot.as_str())
    .bind(micros(now))
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(())
}

pub(crate) async fn touch_session(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    id: SessionId,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE sessions SET last_activity_at = ?3 WHERE tenant_id = ?1 AND session_id = ?2",
    )
    .bind(tenant.as_str())
    .bind(id.as_uuid())
    .bind(micros(now))
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(())
}
