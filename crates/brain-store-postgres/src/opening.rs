//! The SQL of opening and attaching to sessions, and of the briefing.

use brain_core::error::StoreError;
use brain_core::ids::{SessionId, TenantId};
use brain_core::memory::Brief;
use brain_core::model::{Session, SessionStatus, now_micros};
use brain_core::store::{BriefingSources, FocusRef, NamedBody, RecentSession};
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, Row};

use crate::db;

pub(crate) type PgQuery<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

/// A start's last seven arguments: the session's status, times and who opened it.
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

/// Everything the briefing reads but its mission recall, in one statement
/// (`brain_briefing_sources`, which `brain_start` runs too).
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
    let mut out = BriefingSources::default();
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
                // The row is there, so it has a body: a NULL means functions
                // older than 0037 read a row that names its history row.
                out.base = FocusRef {
                    body: txt()?.ok_or_else(missing)?,
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
            "recent" => recent.push(recent_session(row, missing)?),
            _ => {}
        }
    }
    out.mental_models.sort_by(|a, b| a.name.cmp(&b.name));
    recent.sort_by_key(|(ord, _)| *ord);
    out.recent_sessions = recent.into_iter().map(|(_, r)| r).collect();
    Ok(out)
}

/// A `recent` row of the briefing's sources: its place in the list and the
/// session it names.
fn recent_session(
    row: &sqlx::postgres::PgRow,
    missing: impl Fn() -> StoreError,
) -> Result<(i64, RecentSession), StoreError> {
    let ord: i64 = row.try_get("ord").map_err(db)?;
    let status: Option<String> = row.try_get("k").map_err(db)?;
    let id: Option<uuid::Uuid> = row.try_get("id").map_err(db)?;
    let status = status
        .as_deref()
        .and_then(SessionStatus::parse)
        .ok_or_else(|| StoreError::Backend("stored status does not parse".into()))?;
    Ok((
        ord,
        RecentSession {
            session_id: SessionId::from_uuid(id.ok_or_else(missing)?),
            status,
            summary: row.try_get("txt").map_err(db)?,
            ended_at: row.try_get("t1").map_err(db)?,
        },
    ))
}
