//! Opening and attaching to sessions: start, bind, resume, and the briefing.

use brain_core::error::StoreError;
use brain_core::ids::{ProjectKey, SessionId, SlotName, TenantId};
use brain_core::memory::{DocumentKind, any_word_query, parse_executive_state, top_missions};
use brain_core::model::{Caller, Focus, Session, SessionStatus, idle_since, now_micros};
use brain_core::requests::{BindRequest, ResumeRequest, StartRequest};
use brain_core::rules::{self, CloseRecord};
use brain_core::store::{
    BindOutcome, Briefing, FocusRef, MissionRecall, NamedBody, RecallQuery, RecentSession,
    Recovery, SessionBriefing, SlotView,
};
use sqlx::{Row, SqliteConnection};

use crate::ledger::{self, slot_key};
use crate::rows::micros;
use crate::{SqliteStore, db, memory, rows};

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
    row.as_ref().map(rows::session).transpose()
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
        Some(row) => rows::focus(&row),
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
         started_focus_revision, status, opened_at, last_activity_at, opened_by_kind, opened_by_subject) \
         VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)",
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
async fn briefing(
    store: &SqliteStore,
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    session: &Session,
    slot: Option<&SlotView>,
) -> Result<Briefing, StoreError> {
    let base = load_focus(conn, tenant, &session.project, None).await?;
    let open_sessions = open_agent_sessions(conn, tenant, &session.project).await?;
    let recent = sqlx::query(
        "SELECT session_id, status, summary, ended_at FROM sessions \
         WHERE tenant_id = ?1 AND project = ?2 AND kind = 'agent' AND status <> 'open' \
         ORDER BY ended_at DESC NULLS LAST, session_id LIMIT 5",
    )
    .bind(tenant.as_str())
    .bind(session.project.as_str())
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    let mut recent_sessions = Vec::with_capacity(recent.len());
    for row in &recent {
        let status: String = row.try_get("status").map_err(db)?;
        recent_sessions.push(RecentSession {
            session_id: SessionId::from_uuid(row.try_get("session_id").map_err(db)?),
            status: SessionStatus::parse(&status)
                .ok_or_else(|| StoreError::Backend("stored status does not parse".into()))?,
            summary: row.try_get("summary").map_err(db)?,
            ended_at: rows::opt_time(row, "ended_at")?,
        });
    }
    let previous = sqlx::query(
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
    let recovery = match previous {
        None => None,
        Some(row) => {
            let id = SessionId::from_uuid(row.try_get("session_id").map_err(db)?);
            let last = rows::time(&row, "last_activity_at")?;
            Some(Recovery {
                session_id: id,
                opened_at: rows::time(&row, "opened_at")?,
                last_activity_at: last,
                idle: idle_since(last, now_micros(), store.settings.idle_secs),
                ledger_size: ledger_size(conn, tenant, id).await?,
            })
        }
    };
    let project = &session.project;
    let exec_doc =
        memory::document_get_in(conn, tenant, project, DocumentKind::ExecutiveState, "").await?;
    let executive_state = (exec_doc.revision > 0)
        .then(|| parse_executive_state(&exec_doc.body).ok())
        .flatten();
    let mut recall = Vec::new();
    if let Some(state) = &executive_state {
        for mission in top_missions(state, 3) {
            let q = RecallQuery {
                project: project.clone(),
                query: any_word_query(&mission),
                kinds: Vec::new(),
                limit: 3,
                offset: 0,
            };
            let artifacts = memory::recall_in(conn, tenant, &q).await?;
            recall.push(MissionRecall { mission, artifacts });
        }
    }
    let sync = memory::document_get_in(conn, tenant, project, DocumentKind::SyncNote, "").await?;
    let mental_models = memory::mental_models_in(conn, tenant, project)
        .await?
        .into_iter()
        .map(|d| NamedBody {
            name: d.name,
            body: d.body,
        })
        .collect();
    Ok(Briefing {
        base_focus: FocusRef {
            body: base.body,
            revision: base.revision,
        },
        slot: slot.cloned(),
        executive_state,
        brief: memory::brief_in(conn, tenant, project).await?,
        mental_models,
        recall,
        inbox_count: memory::inbox_count_in(conn, tenant, project).await?,
        sync_note: (sync.revision > 0).then_some(sync.body),
        open_sessions,
        recent_sessions,
        recovery,
    })
}

fn slot_view(name: &SlotName, focus: Focus) -> SlotView {
    SlotView {
        name: name.clone(),
        body: focus.body,
        revision: focus.revision,
    }
}

pub(crate) async fn start(
    store: &SqliteStore,
    caller: &Caller,
    req: StartRequest,
) -> Result<SessionBriefing, StoreError> {
    let mut tx = store.write().await?;
    let tenant = &caller.tenant;
    ledger::ensure_tenant(&mut tx, tenant).await?;
    ledger::ensure_project(&mut tx, tenant, &req.project).await?;
    let base = load_focus(&mut tx, tenant, &req.project, None).await?;
    let slot = match &req.slot {
        Some(name) => {
            ledger::ensure_slot(&mut tx, tenant, &req.project, name).await?;
            let focus = load_focus(&mut tx, tenant, &req.project, Some(name)).await?;
            Some(slot_view(name, focus))
        }
        None => None,
    };
    let session = Session::open_agent(
        caller,
        req.project.clone(),
        req.client_key,
        req.slot,
        base.revision,
    );
    insert_session(&mut tx, tenant, &session).await?;
    let briefing = briefing(store, &mut tx, tenant, &session, slot.as_ref()).await?;
    ledger::append(
        &mut tx,
        caller,
        ledger::draft(
            "brain_session_start",
            Some(&session.project),
            Some(session.session_id),
            &req.digest,
            Ok(()),
        ),
    )
    .await?;
    tx.commit().await.map_err(db)?;
    Ok(SessionBriefing {
        session,
        briefing,
        slot,
    })
}

pub(crate) async fn bind(
    store: &SqliteStore,
    caller: &Caller,
    req: BindRequest,
) -> Result<BindOutcome, StoreError> {
    brain_core::flow::bind(crate::tx::Tx(store.write().await?), caller, &req).await
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

/// Reattach to an open session: read-only apart from `last_activity_at`, so no receipt.
pub(crate) async fn resume(
    store: &SqliteStore,
    caller: &Caller,
    req: ResumeRequest,
) -> Result<SessionBriefing, StoreError> {
    let mut tx = store.write().await?;
    let tenant = &caller.tenant;
    let loaded = load_session(&mut tx, tenant, req.session_id).await?;
    let mut session = rules::check_session(loaded.as_ref().map(|l| &l.0), &req.expected_client_key)
        .and_then(|s| rules::require_open(s).map(|()| s.clone()))?;
    session.last_activity_at = now_micros();
    sqlx::query(
        "UPDATE sessions SET last_activity_at = ?3 WHERE tenant_id = ?1 AND session_id = ?2",
    )
    .bind(tenant.as_str())
    .bind(session.session_id.as_uuid())
    .bind(micros(session.last_activity_at))
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    let slot = match &session.bound_slot {
        Some(name) => {
            let focus = load_focus(&mut tx, tenant, &session.project, Some(name)).await?;
            Some(slot_view(name, focus))
        }
        None => None,
    };
    let briefing = briefing(store, &mut tx, tenant, &session, slot.as_ref()).await?;
    tx.commit().await.map_err(db)?;
    Ok(SessionBriefing {
        session,
        briefing,
        slot,
    })
}
