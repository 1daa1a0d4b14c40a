//! The SQL of opening and attaching to sessions, and of the briefing.

use crate::dialect::Cols;
use brain_core::error::StoreError;
use brain_core::ids::{SessionId, SlotName, TenantId};
use brain_core::memory::Brief;
use brain_core::model::{Focus, Session, SessionStatus, now_micros};
use brain_core::receipt::GENESIS_HASH;
use brain_core::store::{BriefingSources, FocusRef, NamedBody, RecentSession};
use brain_store_sqlx::sql::rows;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, Row};

use crate::db;
use crate::ledger::ENSURE_PROJECT;

/// The columns the session insert of `open_session` writes, in the order it
/// binds them, ending with `opened_tail`'s seven (the portable insert is
/// `brain_store_sqlx::sql::Sql::session_insert`).
const SESSION_INSERT_COLUMNS: &str = "tenant_id, session_id, project, client_key, kind, bound_slot, \
     started_focus_revision, status, opened_at, last_activity_at, opened_by_kind, opened_by_subject, \
     opened_by_role, opened_by_credential";

pub(crate) type PgQuery<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

/// The last seven of `SESSION_INSERT_COLUMNS`: status, times and who opened it.
pub(crate) fn opened_tail<'q>(q: PgQuery<'q>, s: &Session) -> PgQuery<'q> {
    // Bound as copies, so a statement can outlive the session it was built
    // from (a group commit runs it from its own task).
    q.bind(s.status.as_str())
        .bind(s.opened_at)
        .bind(s.last_activity_at)
        .bind(s.opened_by.kind.as_str())
        .bind(s.opened_by.subject.clone())
        .bind(s.opened_by.role.as_str())
        .bind(s.opened_by.credential_id.clone())
}

/// Open a session in one statement: create its tenant, project and bound
/// slot when missing, insert it at the base focus revision as it stands, and
/// return that revision with the bound slot's body.
pub(crate) async fn open_session(
    conn: &mut PgConnection,
    tenant: &TenantId,
    s: &mut Session,
) -> Result<Option<Focus>, StoreError> {
    // A project or slot created by this very statement is not visible to its
    // subqueries; both read as empty at revision 0, which is what they are.
    // Built once: the statement is the same for every start.
    static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "{ENSURE_PROJECT}, \
         ensure_s AS (INSERT INTO focus_bodies (tenant_id, project, slot) SELECT $1, $3, $5 \
                      WHERE $5 IS NOT NULL ON CONFLICT DO NOTHING) \
         INSERT INTO sessions ({SESSION_INSERT_COLUMNS}) \
         VALUES ($1, $6, $3, $7, $8, $5, \
           COALESCE((SELECT revision FROM focus_bodies WHERE tenant_id = $1 AND project = $3 AND slot = ''), 0), \
           $9, $10, $11, $12, $13, $14, $15) \
         RETURNING started_focus_revision, \
           (SELECT body FROM focus_bodies WHERE tenant_id = $1 AND project = $3 AND slot = $5) AS body, \
           (SELECT revision FROM focus_bodies WHERE tenant_id = $1 AND project = $3 AND slot = $5) AS revision, \
           (SELECT updated_at FROM focus_bodies WHERE tenant_id = $1 AND project = $3 AND slot = $5) AS updated_at, \
           (SELECT updated_by_session FROM focus_bodies WHERE tenant_id = $1 AND project = $3 AND slot = $5) AS updated_by_session"
        )
    });
    let q = sqlx::query(SQL.as_str())
        .bind(tenant.as_str())
        .bind(GENESIS_HASH)
        .bind(s.project.as_str())
        .bind(now_micros())
        .bind(s.bound_slot.as_ref().map(SlotName::as_str))
        .bind(s.session_id.as_uuid())
        .bind(s.client_key.as_str())
        .bind(s.kind.as_str());
    let row = opened_tail(q, s).fetch_one(&mut *conn).await.map_err(db)?;
    s.started_focus_revision = row.try_get("started_focus_revision").map_err(db)?;
    if s.bound_slot.is_none() {
        return Ok(None);
    }
    // A slot this statement created has no row yet in its own snapshot.
    let revision: Option<i64> = row.try_get("revision").map_err(db)?;
    if revision.is_some() {
        rows::focus(&Cols::new(&row)).map(Some)
    } else {
        Ok(Some(Focus::empty()))
    }
}

/// Everything the briefing reads but its mission recall, in one statement
/// (migration 0009's `brain_briefing_sources`, which `brain_start` runs too).
pub(crate) async fn briefing_sources(
    conn: &mut PgConnection,
    tenant: &TenantId,
    session: &Session,
) -> Result<BriefingSources, StoreError> {
    const SQL: &str = "SELECT part, ord, k, name, txt, n, t1, t2, id \
        FROM brain_briefing_sources($1, $2, $3, $4)";
    let found = sqlx::query(SQL)
        .bind(tenant.as_str())
        .bind(session.project.as_str())
        .bind(session.client_key.as_str())
        .bind(session.session_id.as_uuid())
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
    sources_from(&found)
}

/// The briefing's sources from rows of `brain_briefing_sources` (here, and
/// in `brain_start`'s answer); rows of other parts are not its.
pub(crate) fn sources_from(found: &[sqlx::postgres::PgRow]) -> Result<BriefingSources, StoreError> {
    let mut out = BriefingSources {
        base: FocusRef {
            body: String::new(),
            revision: 0,
        },
        previous_open: None,
        executive_state: None,
        sync_note: None,
        mental_models: Vec::new(),
        brief: None,
        inbox_count: 0,
        open_sessions: 0,
        recent_sessions: Vec::new(),
    };
    let mut recent = Vec::new();
    for row in found {
        let part: String = row.try_get("part").map_err(db)?;
        let txt = || row.try_get::<Option<String>, _>("txt").map_err(db);
        let n = || row.try_get::<Option<i64>, _>("n").map_err(db);
        let t1 = || row.try_get::<Option<DateTime<Utc>>, _>("t1").map_err(db);
        let id = || row.try_get::<Option<uuid::Uuid>, _>("id").map_err(db);
        let missing = || StoreError::Backend(format!("briefing part {part} lacks a column"));
        match part.as_str() {
            "base" => {
                out.base = FocusRef {
                    body: txt()?.unwrap_or_default(),
                    revision: n()?.unwrap_or(0),
                }
            }
            "prev" => {
                let t2: Option<DateTime<Utc>> = row.try_get("t2").map_err(db)?;
                out.previous_open = Some((
                    SessionId::from_uuid(id()?.ok_or_else(missing)?),
                    t1()?.ok_or_else(missing)?,
                    t2.ok_or_else(missing)?,
                    n()?.unwrap_or(0),
                ));
            }
            "doc" => {
                let kind: Option<String> = row.try_get("k").map_err(db)?;
                let body = txt()?.unwrap_or_default();
                match kind.as_deref() {
                    Some("executive_state") => out.executive_state = Some(body),
                    Some("sync_note") => out.sync_note = Some(body),
                    _ => out.mental_models.push(NamedBody {
                        name: row.try_get("name").map_err(db)?,
                        body,
                    }),
                }
            }
            "brief" => {
                out.brief = Some(Brief::at(
                    txt()?.unwrap_or_default(),
                    t1()?.ok_or_else(missing)?,
                    now_micros(),
                ));
            }
            "inbox" => out.inbox_count = n()?.unwrap_or(0),
            "open" => out.open_sessions = n()?.unwrap_or(0),
            "recent" => {
                let ord: i64 = row.try_get("ord").map_err(db)?;
                let status: Option<String> = row.try_get("k").map_err(db)?;
                recent.push((
                    ord,
                    RecentSession {
                        session_id: SessionId::from_uuid(id()?.ok_or_else(missing)?),
                        status: status
                            .as_deref()
                            .and_then(SessionStatus::parse)
                            .ok_or_else(|| {
                                StoreError::Backend("stored status does not parse".into())
                            })?,
                        summary: txt()?,
                        ended_at: t1()?,
                    },
                ));
            }
            _ => {}
        }
    }
    out.mental_models.sort_by(|a, b| a.name.cmp(&b.name));
    recent.sort_by_key(|(ord, _)| *ord);
    out.recent_sessions = recent.into_iter().map(|(_, r)| r).collect();
    Ok(out)
}
