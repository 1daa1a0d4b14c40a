//! Opening and attaching to sessions: start, bind, resume, and the briefing.

use brain_core::error::StoreError;
use brain_core::ids::{ProjectKey, SessionId, SlotName, TenantId};
use brain_core::model::{Caller, Focus, Session, SessionStatus};
use brain_core::requests::{BindRequest, ResumeRequest, StartRequest};
use brain_core::rules::CloseRecord;
use brain_core::store::{BindOutcome, RecentSession, SessionBriefing};
use sqlx::{PgConnection, Row};

use crate::ledger::slot_key;
use crate::{PgStore, db, rows};

/// Load a session of this tenant, locking its row when `lock` is set.
pub(crate) async fn load_session(
    conn: &mut PgConnection,
    tenant: &TenantId,
    id: SessionId,
    lock: bool,
) -> Result<Option<(Session, Option<CloseRecord>)>, StoreError> {
    let sql = format!(
        "SELECT {} FROM sessions WHERE tenant_id = $1 AND session_id = $2{}",
        rows::SESSION_COLUMNS,
        if lock { " FOR UPDATE" } else { "" }
    );
    let row = sqlx::query(&sql)
        .bind(tenant.as_str())
        .bind(id.as_uuid())
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?;
    row.as_ref().map(rows::session).transpose()
}

/// The base focus (`slot = None`) or a slot body; missing reads as empty at revision 0.
pub(crate) async fn load_focus(
    conn: &mut PgConnection,
    tenant: &TenantId,
    project: &ProjectKey,
    slot: Option<&SlotName>,
    lock: bool,
) -> Result<Focus, StoreError> {
    let sql = format!(
        "SELECT body, revision, updated_at, updated_by_session FROM focus_bodies \
         WHERE tenant_id = $1 AND project = $2 AND slot = $3{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    let row = sqlx::query(&sql)
        .bind(tenant.as_str())
        .bind(project.as_str())
        .bind(slot_key(slot))
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?;
    match row {
        Some(row) => rows::focus(&row),
        None => Ok(Focus::empty()),
    }
}

pub(crate) async fn insert_session(
    conn: &mut PgConnection,
    tenant: &TenantId,
    s: &Session,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO sessions (tenant_id, session_id, project, client_key, kind, bound_slot, \
         started_focus_revision, status, opened_at, last_activity_at, opened_by_kind, opened_by_subject, \
         opened_by_role, opened_by_credential) \
         VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14)",
    )
    .bind(tenant.as_str())
    .bind(s.session_id.as_uuid())
    .bind(s.project.as_str())
    .bind(s.client_key.as_str())
    .bind(s.kind.as_str())
    .bind(s.bound_slot.as_ref().map(SlotName::as_str))
    .bind(s.started_focus_revision)
    .bind(s.status.as_str())
    .bind(s.opened_at)
    .bind(s.last_activity_at)
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
    conn: &mut PgConnection,
    tenant: &TenantId,
    id: SessionId,
) -> Result<i64, StoreError> {
    sqlx::query_scalar("SELECT count(*) FROM artifacts WHERE tenant_id = $1 AND session_id = $2")
        .bind(tenant.as_str())
        .bind(id.as_uuid())
        .fetch_one(&mut *conn)
        .await
        .map_err(db)
}

pub(crate) async fn open_agent_sessions(
    conn: &mut PgConnection,
    tenant: &TenantId,
    project: &ProjectKey,
) -> Result<i64, StoreError> {
    sqlx::query_scalar(
        "SELECT count(*) FROM sessions WHERE tenant_id = $1 AND project = $2 \
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
    conn: &mut PgConnection,
    tenant: &TenantId,
    project: &ProjectKey,
    limit: i64,
) -> Result<Vec<RecentSession>, StoreError> {
    let found = sqlx::query(
        "SELECT session_id, status, summary, ended_at FROM sessions \
         WHERE tenant_id = $1 AND project = $2 AND kind = 'agent' AND status <> 'open' \
         ORDER BY ended_at DESC NULLS LAST, session_id LIMIT $3",
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
            ended_at: row.try_get("ended_at").map_err(db)?,
        });
    }
    Ok(out)
}

/// This client's newest other open agent session in the project.
pub(crate) async fn previous_open(
    conn: &mut PgConnection,
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
         WHERE tenant_id = $1 AND project = $2 AND client_key = $3 AND kind = 'agent' \
         AND status = 'open' AND session_id <> $4 ORDER BY opened_at DESC LIMIT 1",
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
            row.try_get("opened_at").map_err(db)?,
            row.try_get("last_activity_at").map_err(db)?,
        ))),
    }
}

pub(crate) async fn start(
    store: &PgStore,
    caller: &Caller,
    req: StartRequest,
) -> Result<SessionBriefing, StoreError> {
    brain_core::flow::start(
        crate::tx::Tx(store.scoped(&caller.tenant).await?),
        caller,
        req,
        store.settings.idle_secs,
    )
    .await
}

pub(crate) async fn bind(
    store: &PgStore,
    caller: &Caller,
    req: BindRequest,
) -> Result<BindOutcome, StoreError> {
    brain_core::flow::bind(
        crate::tx::Tx(store.scoped(&caller.tenant).await?),
        caller,
        &req,
    )
    .await
}

pub(crate) async fn set_binding(
    conn: &mut PgConnection,
    tenant: &TenantId,
    id: SessionId,
    slot: &SlotName,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE sessions SET bound_slot = $3, last_activity_at = $4 WHERE tenant_id = $1 AND session_id = $2",
    )
    .bind(tenant.as_str())
    .bind(id.as_uuid())
    .bind(slot.as_str())
    .bind(now)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(())
}

pub(crate) async fn touch_session(
    conn: &mut PgConnection,
    tenant: &TenantId,
    id: SessionId,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE sessions SET last_activity_at = $3 WHERE tenant_id = $1 AND session_id = $2",
    )
    .bind(tenant.as_str())
    .bind(id.as_uuid())
    .bind(now)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(())
}

/// Reattach to an open session: read-only apart from `last_activity_at`, so no receipt.
pub(crate) async fn resume(
    store: &PgStore,
    caller: &Caller,
    req: ResumeRequest,
) -> Result<SessionBriefing, StoreError> {
    brain_core::flow::resume(
        crate::tx::Tx(store.scoped(&caller.tenant).await?),
        caller,
        &req,
        store.settings.idle_secs,
    )
    .await
}
