//! A start, a remember and an end: each one call of its function
//! (`migrations/postgres/functions.sql`), the only form of these writes on
//! PostgreSQL. As the first statement of a write it runs in its own
//! statement's transaction, alone or in the tenant's group commit (one round
//! trip); after other statements, inside the write's transaction, which
//! commits it (a remember's call rides with that COMMIT).

use brain_core::error::StoreError;
use brain_core::ids::{SessionId, TenantId};
use brain_core::model::{Artifact, Caller, Focus, Session, now_micros};
use brain_core::receipt::{GENESIS_HASH, Receipt, ReceiptDraft};
use brain_core::store::BriefingSources;
use chrono::{DateTime, Utc};
use sqlx::Row;

use std::sync::Arc;

use crate::db;
use crate::group_commit::{Build, Groups};
use crate::kept_connections::Warm;
use crate::ledger::placed;
use crate::opening::PgQuery;

/// The receipt's fields after its project and session, in the functions'
/// order: who, what, and the three pieces of its canonical text. Bound as
/// copies, so a statement can outlive the call that built it (a group
/// commit runs it from its own task).
pub(crate) fn bind_receipt<'q>(
    q: PgQuery<'q>,
    r: &Receipt,
    frame: &brain_core::receipt::ReceiptFrame,
) -> PgQuery<'q> {
    q.bind(r.credential_kind.as_str())
        .bind(r.subject.clone())
        .bind(r.token_id.clone())
        .bind(r.connection_id.clone())
        .bind(r.elevated)
        .bind(r.outcome.clone())
        .bind(r.request_digest.clone())
        .bind(frame.before_prev.clone())
        .bind(frame.before_seq.clone())
        .bind(frame.after_seq.clone())
}

/// Where a one-call write runs: in the tenant's group commit, alone on a
/// connection of its own, or inside the write's open transaction (a start
/// only: a remember there waits for the COMMIT, [`remember_pending`]).
pub(crate) enum On<'a> {
    Group(Arc<Warm>, Arc<Groups>),
    Alone(Arc<Warm>),
    Open(&'a mut sqlx::PgConnection),
}

impl On<'_> {
    /// Run the call; its rows. Alone or grouped, its answer is its commit's.
    pub(crate) async fn run(
        self,
        tenant: &TenantId,
        build: Build,
    ) -> Result<Vec<sqlx::postgres::PgRow>, StoreError> {
        match self {
            On::Group(warm, groups) => groups.run(&warm, tenant.as_str(), build).await,
            On::Alone(warm) => crate::group_commit::alone(&warm, &build).await,
            On::Open(conn) => build().fetch_all(conn).await.map_err(db),
        }
    }
}

/// `brain_remember`: the project when `ensure`, the artifact, its receipt
/// (whose session is the artifact's). Into a known project it may join the
/// tenant's group commit ([`Groups`]); a project's first write runs alone,
/// since creating it may wait on another transaction that creates it too,
/// and must not do so while a batch holds the tenant's tip.
pub(crate) async fn remember(
    on: On<'_>,
    caller: &Caller,
    ensure: bool,
    a: &Artifact,
    draft: ReceiptDraft,
) -> Result<Receipt, StoreError> {
    let r = Receipt::unplaced(caller, draft, now_micros());
    let frame = r.frame();
    let (tenant, a, receipt) = (caller.tenant.clone(), a.clone(), r.clone());
    let build = move || {
        let q = sqlx::query(
            "SELECT seq, prev_hash, hash FROM brain_remember($1, $2, $3, $4, $5, $6, $7, $8, $9, \
             $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)",
        )
        .bind(tenant.as_str().to_owned())
        .bind(ensure)
        .bind(GENESIS_HASH)
        .bind(a.artifact_id.as_uuid())
        .bind(a.project.as_str().to_owned())
        .bind(a.kind.as_str())
        .bind(a.text.clone())
        .bind(a.tags.clone())
        .bind(a.created_at)
        .bind(receipt.receipt_id.as_uuid())
        .bind(receipt.at)
        .bind(receipt.tool.clone())
        .bind(receipt.session_id.map(|s| s.as_uuid()));
        bind_receipt(q, &receipt, &frame).bind(a.session_id.map(|s| s.as_uuid()))
    };
    let rows = on.run(&caller.tenant, Box::new(build)).await?;
    let row = rows
        .first()
        .ok_or_else(|| StoreError::Backend("brain_remember answered no row".into()))?;
    let (seq, prev, hash) = (
        row.try_get("seq").map_err(db)?,
        row.try_get("prev_hash").map_err(db)?,
        row.try_get("hash").map_err(db)?,
    );
    placed(r, seq, prev, hash)
}

/// `brain_remember_pending`'s call, sent with the COMMIT.
pub(crate) const REMEMBER_PENDING: &str =
    "SELECT seq, prev_hash, hash FROM brain_remember_pending()";

/// `brain_remember`'s arguments, by name, for `brain_remember_pending`: a
/// remember inside a transaction that has begun runs with its COMMIT, so
/// the tenant's tip is not held while brain waits on that round trip. The
/// receipt's fields are those `brain_place_pending` reads.
pub(crate) fn remember_pending(
    caller: &Caller,
    ensure: bool,
    a: &Artifact,
    draft: ReceiptDraft,
) -> Result<(Receipt, String), StoreError> {
    let r = Receipt::unplaced(caller, draft, now_micros());
    let mut v = crate::ledger::pending(&r, None)?;
    v["ensure"] = ensure.into();
    v["genesis"] = GENESIS_HASH.into();
    v["artifact_id"] = serde_json::json!(a.artifact_id.as_uuid());
    v["kind"] = a.kind.as_str().into();
    v["text"] = a.text.as_str().into();
    v["tags"] = serde_json::json!(a.tags);
    v["created_at"] = brain_core::model::rfc3339(&a.created_at).into();
    v["artifact_session"] = serde_json::json!(a.session_id.map(|s| s.as_uuid()));
    Ok((r, v.to_string()))
}

/// `brain_start`: open the session (and the slot it binds), read its
/// briefing's sources, append its receipt. It joins the tenant's group
/// commit only in a known project without a bound slot: nothing the
/// statement creates that another transaction may be creating too.
pub(crate) async fn start(
    on: On<'_>,
    caller: &Caller,
    s: &mut Session,
    draft: ReceiptDraft,
) -> Result<(Option<Focus>, BriefingSources), StoreError> {
    let tenant: &TenantId = &caller.tenant;
    let r = Receipt::unplaced(caller, draft, now_micros());
    let frame = r.frame();
    let (t, opened, receipt) = (tenant.as_str().to_owned(), s.clone(), r.clone());
    let build = move || {
        let q = sqlx::query(
            "SELECT part, ord, k, name, txt, n, t1, t2, id FROM brain_start($1, $2, $3, $4, $5, \
             $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, \
             $23, $24, $25, $26, $27)",
        )
        .bind(t.clone())
        .bind(GENESIS_HASH)
        .bind(opened.project.as_str().to_owned())
        .bind(opened.bound_slot.as_ref().map(|n| n.as_str().to_owned()))
        .bind(opened.session_id.as_uuid())
        .bind(opened.client_key.as_str().to_owned())
        .bind(opened.kind.as_str());
        let q = crate::opening::opened_tail(q, &opened)
            .bind(receipt.receipt_id.as_uuid())
            .bind(receipt.at)
            .bind(receipt.tool.clone());
        bind_receipt(q, &receipt, &frame)
    };
    let rows = on.run(tenant, Box::new(build)).await?;
    let mut started = None;
    let mut slot = None;
    let mut place = None;
    for row in &rows {
        let part: String = row.try_get("part").map_err(db)?;
        match part.as_str() {
            "opened" => {
                started = Some(row.try_get::<i64, _>("n").map_err(db)?);
                let revision: Option<i64> = row.try_get("ord").map_err(db)?;
                slot = Some(match revision {
                    // A row at a revision has a body: refuse a NULL rather
                    // than answer an empty focus.
                    Some(revision) => Focus {
                        body: row
                            .try_get::<Option<String>, _>("txt")
                            .map_err(db)?
                            .ok_or_else(|| {
                                StoreError::Backend("the opened focus has no body".into())
                            })?,
                        revision,
                        updated_at: row.try_get::<Option<DateTime<Utc>>, _>("t1").map_err(db)?,
                        updated_by_session: row
                            .try_get::<Option<uuid::Uuid>, _>("id")
                            .map_err(db)?
                            .map(SessionId::from_uuid),
                    },
                    None => Focus::empty(),
                });
            }
            "receipt" => {
                place = Some((
                    row.try_get::<i64, _>("n").map_err(db)?,
                    row.try_get::<String, _>("k").map_err(db)?,
                    row.try_get::<String, _>("name").map_err(db)?,
                ));
            }
            _ => {}
        }
    }
    let (Some(started), Some((seq, prev, hash))) = (started, place) else {
        return Err(StoreError::Backend(
            "brain_start answered without its parts".into(),
        ));
    };
    placed(r, seq, prev, hash)?;
    s.started_focus_revision = started;
    let sources = crate::opening::sources_from(&rows)?;
    Ok((slot.filter(|_| s.bound_slot.is_some()), sources))
}

/// `brain_end`: an end decided on `brain_peek_close`'s read, written only if
/// the session and its target body are as read (`read.found`, the body's
/// revision then) and, counted once both are held, so are the answer's
/// counts; `false`, with nothing written, when anything moved. A relay's
/// (`w.next_session`: its receiver's session) is `brain_relay`, which adds
/// that session once the close has written. It may always join the tenant's
/// group commit: it creates no project (the session's exists), and takes no
/// row another transaction holds (SKIP LOCKED), so it never waits while its
/// batch holds the tenant's tip.
pub(crate) async fn end(
    on: On<'_>,
    caller: &Caller,
    w: &brain_core::flow::CloseWrite<'_>,
    read: brain_core::flow::DecidedOn<'_>,
) -> Result<bool, StoreError> {
    use brain_core::model::FocusOutcome;
    let r = Receipt::unplaced(caller, w.receipt.clone(), now_micros());
    let frame = r.frame();
    let s = w.session.clone();
    let (digest, result, receipt) = (w.digest.to_owned(), w.result.clone(), r.clone());
    let tenant = caller.tenant.clone();
    let body = w.focus.map(|f| (f.body.to_owned(), f.at));
    let stored = w.next_focus;
    let (next_focus, next_focus_revision) = (stored.text.map(str::to_owned), stored.revision);
    let t = tenant.as_str().to_owned();
    // A relay's receiver, as session_insert's columns name it: brain_relay
    // inserts it once brain_end's close has written.
    let next = w.next_session.map(|n| {
        serde_json::json!({
            "session_id": n.session_id.as_uuid(),
            "client_key": n.client_key.as_str(),
            "kind": n.kind.as_str(),
            "bound_slot": n.bound_slot.as_ref().map(|b| b.as_str()),
            "started_focus_revision": n.started_focus_revision,
            "status": n.status.as_str(),
            "opened_at": n.opened_at,
            "last_activity_at": n.last_activity_at,
            "opened_by_kind": n.opened_by.kind.as_str(),
            "opened_by_subject": n.opened_by.subject,
            "opened_by_role": n.opened_by.role.as_str(),
            "opened_by_credential": n.opened_by.credential_id,
            "read_revision": n.read_revision,
        })
    });
    let (found, until, open_agents) = (read.found, read.until, read.open_agents);
    let unattributed = (
        read.unattributed.count,
        read.unattributed
            .ids
            .iter()
            .map(|a| a.as_uuid())
            .collect::<Vec<_>>(),
    );
    let build = move || {
        let q = match &next {
            None => sqlx::query(
                "SELECT seq, prev_hash, hash FROM brain_end($1, $2, $3, $4, $5, $6, $7, $8, $9, \
                 $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, \
                 $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37)",
            ),
            Some(next) => sqlx::query(
                "SELECT seq, prev_hash, hash FROM brain_relay($1, $2, $3, $4, $5, $6, $7, $8, \
                 $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, \
                 $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37, $38)",
            )
            .bind(next.clone()),
        };
        let q = q
            .bind(t.clone())
            .bind(s.session_id.as_uuid())
            .bind(s.bound_slot.as_ref().map(|n| n.as_str().to_owned()))
            .bind(s.read_revision)
            .bind(found)
            .bind(until)
            .bind(open_agents)
            .bind(unattributed.0)
            .bind(unattributed.1.clone())
            .bind(s.status.as_str())
            .bind(s.ended_at)
            .bind(s.last_activity_at)
            .bind(s.summary.clone())
            .bind(next_focus.clone())
            .bind(s.nothing_to_capture_reason.clone())
            .bind(s.focus_outcome.map(FocusOutcome::as_str))
            .bind(s.abandon_reason.clone())
            .bind(digest.clone())
            .bind(result.clone())
            .bind(s.project.as_str().to_owned())
            .bind(body.as_ref().map(|b| b.0.clone()))
            .bind(body.as_ref().map(|b| b.1))
            // p_change: not read since migration 0030 (subscribers hear
            // of the body after the commit, PgScope::announce_close).
            .bind(None::<String>)
            .bind(receipt.receipt_id.as_uuid())
            .bind(receipt.at)
            .bind(receipt.tool.clone());
        bind_receipt(q, &receipt, &frame).bind(next_focus_revision)
    };
    let rows = on.run(&tenant, Box::new(build)).await?;
    let Some(row) = rows.first() else {
        return Ok(false);
    };
    crate::ledger::placed_row(r, Some(row))?;
    Ok(true)
}
