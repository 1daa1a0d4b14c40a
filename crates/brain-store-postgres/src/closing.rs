//! Closing a session: end, relay and abandon, each one transaction running
//! steps 1–8 of SPEC §2.4 in order.

use brain_core::error::{DomainError, StoreError};
use brain_core::ids::{ArtifactId, ClientKey, TenantId};
use brain_core::model::{Caller, FocusOutcome, Session, SessionStatus, now_micros};
use brain_core::outcome::{AbandonResult, EndResult, RelayResult, as_replay, slot_after_relay};
use brain_core::receipt::ReceiptDraft;
use brain_core::requests::{AbandonRequest, EndRequest, OverrideGrant, RelayRequest};
use brain_core::rules::{self, CloseDecision, CloseKind};
use brain_core::store::{SlotView, Unattributed};
use serde_json::Value;
use sqlx::{PgConnection, Postgres, Row, Transaction};

use crate::lifecycle::{insert_session, load_focus, load_session, open_agent_sessions};
use crate::{PgStore, db, ledger, operators};

pub(crate) async fn end(
    store: &PgStore,
    caller: &Caller,
    req: EndRequest,
) -> Result<Value, StoreError> {
    close(store, caller, &req, None).await
}

pub(crate) async fn relay(
    store: &PgStore,
    caller: &Caller,
    req: RelayRequest,
) -> Result<Value, StoreError> {
    close(store, caller, &req.end, Some(&req.to_client_key)).await
}

/// A refusal: on a dry run the bare error (no receipt, nothing written),
/// otherwise the error after its receipt is committed.
async fn refuse<T>(
    tx: Transaction<'_, Postgres>,
    caller: &Caller,
    dry_run: bool,
    draft: ReceiptDraft,
    err: DomainError,
) -> Result<T, StoreError> {
    if dry_run {
        drop(tx);
        return Err(err.into());
    }
    ledger::refuse(tx, caller, draft, err).await
}

async fn close(
    store: &PgStore,
    caller: &Caller,
    req: &EndRequest,
    relay_to: Option<&str>,
) -> Result<Value, StoreError> {
    let kind = if relay_to.is_some() {
        CloseKind::Relay
    } else {
        CloseKind::End
    };
    let tool = match kind {
        CloseKind::End => "brain_session_end",
        CloseKind::Relay => "brain_session_relay",
    };
    let tenant = &caller.tenant;
    let mut tx = store.pool.begin().await.map_err(db)?;
    let loaded = load_session(&mut tx, tenant, req.session_id, true).await?;
    let project = loaded.as_ref().map(|l| l.0.project.clone());
    let draft = |outcome: Result<(), &DomainError>| {
        ledger::draft(
            tool,
            project.as_ref(),
            Some(req.session_id),
            &req.digest,
            outcome,
        )
    };

    // Steps 1–2.
    let (mut session, close_record) = match loaded.as_ref() {
        Some((s, c)) => match rules::check_session(Some(s), &req.expected_client_key) {
            Ok(_) => (s.clone(), c.clone()),
            Err(e) => return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await,
        },
        None => {
            let e = DomainError::session_not_found();
            return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await;
        }
    };
    // Step 3.
    match rules::check_open_or_replay(&session, close_record.as_ref(), &req.digest) {
        Ok(Some(stored)) => {
            let target = session.bound_slot.as_ref();
            let current = load_focus(&mut tx, tenant, &session.project, target, false).await?;
            return Ok(as_replay(stored, Some(&current)));
        }
        Ok(None) => {}
        Err(e) => return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await,
    }
    // Steps 4–7, against the current body, locked so that concurrent closers serialize here.
    let target = session.bound_slot.clone();
    let found = load_focus(&mut tx, tenant, &session.project, target.as_ref(), true).await?;
    // Only looked up when asked for; inside this transaction, so an elevation
    // revoked or expired before this point never counts.
    let grant = OverrideGrant {
        elevation_active: req.allow_focus_shrink
            && operators::elevation_active(&mut tx, caller, req.session_id).await?,
    };
    let authority = rules::may_override(caller, kind == CloseKind::Relay, grant);
    let outcome = match rules::decide_close(&session, req, kind, relay_to, authority, &found) {
        CloseDecision::Refuse(e) => {
            return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await;
        }
        decided => decided.outcome().unwrap_or(FocusOutcome::Conflict),
    };
    rules::close_session(&mut session, req, kind, outcome, now_micros());

    if req.dry_run {
        let unattributed = unattributed(&mut tx, tenant, &session).await?;
        let remaining = open_agent_sessions(&mut tx, tenant, &session.project).await? - 1;
        drop(tx);
        let end = EndResult::build(
            session,
            outcome,
            &found,
            &req.next_focus,
            true,
            unattributed,
            remaining,
        );
        return finish(kind, end, None, None);
    }

    // Step 8: apply, with the receipt, in this transaction.
    let mut d = draft(Ok(()));
    d.elevated = req.allow_focus_shrink && authority;
    d.outcome = rules::close_receipt_outcome(outcome).to_owned();
    let receipt = ledger::append(&mut tx, caller, d).await?;
    if outcome == FocusOutcome::Applied {
        write_focus(
            &mut tx,
            tenant,
            &session,
            &req.next_focus,
            found.revision + 1,
            receipt.seq,
        )
        .await?;
    }
    let (new_session, slot) = match (kind, outcome, &target, relay_to) {
        (
            CloseKind::Relay,
            FocusOutcome::Applied | FocusOutcome::Unchanged,
            Some(slot),
            Some(to),
        ) => {
            let to = ClientKey::parse("to_client_key", to)?;
            let base = load_focus(&mut tx, tenant, &session.project, None, false).await?;
            let next = Session::open_agent(
                caller,
                session.project.clone(),
                to,
                Some(slot.clone()),
                base.revision,
            );
            insert_session(&mut tx, tenant, &next).await?;
            (
                Some(next),
                Some(slot_after_relay(slot, outcome, &found, &req.next_focus)),
            )
        }
        (CloseKind::Relay, _, Some(slot), _) => (
            None,
            Some(slot_after_relay(slot, outcome, &found, &req.next_focus)),
        ),
        _ => (None, None),
    };
    let unattributed = unattributed(&mut tx, tenant, &session).await?;
    // Counted before this session's row is closed, so discount it.
    let remaining = open_agent_sessions(&mut tx, tenant, &session.project).await? - 1;
    let end = EndResult::build(
        session.clone(),
        outcome,
        &found,
        &req.next_focus,
        false,
        unattributed,
        remaining,
    );
    let result = finish(kind, end, new_session, slot)?;
    store_close(&mut tx, tenant, &session, &req.digest, &result).await?;
    tx.commit().await.map_err(db)?;
    Ok(result)
}

fn finish(
    kind: CloseKind,
    end: EndResult,
    new_session: Option<Session>,
    slot: Option<SlotView>,
) -> Result<Value, StoreError> {
    let value = match kind {
        CloseKind::End => serde_json::to_value(end),
        CloseKind::Relay => serde_json::to_value(RelayResult {
            end,
            new_session,
            slot,
        }),
    };
    value.map_err(StoreError::backend)
}

async fn write_focus(
    conn: &mut PgConnection,
    tenant: &TenantId,
    session: &Session,
    body: &str,
    revision: i64,
    receipt_seq: i64,
) -> Result<(), StoreError> {
    let slot = ledger::slot_key(session.bound_slot.as_ref());
    let now = now_micros();
    sqlx::query(
        "UPDATE focus_bodies SET body = $4, revision = $5, updated_at = $6, updated_by_session = $7 \
         WHERE tenant_id = $1 AND project = $2 AND slot = $3",
    )
    .bind(tenant.as_str())
    .bind(session.project.as_str())
    .bind(slot)
    .bind(body)
    .bind(revision)
    .bind(now)
    .bind(session.session_id.as_uuid())
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    sqlx::query(
        "INSERT INTO focus_history (tenant_id, project, slot, revision, body, session_id, receipt_seq, created_at) \
         VALUES ($1,$2,$3,$4,$5,$6,$7,$8)",
    )
    .bind(tenant.as_str())
    .bind(session.project.as_str())
    .bind(slot)
    .bind(revision)
    .bind(body)
    .bind(session.session_id.as_uuid())
    .bind(receipt_seq)
    .bind(now)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(())
}

/// Persist the closed session with the digest and result of the call that closed it.
async fn store_close(
    conn: &mut PgConnection,
    tenant: &TenantId,
    s: &Session,
    digest: &str,
    result: &Value,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE sessions SET status = $3, ended_at = $4, last_activity_at = $5, summary = $6, \
         next_focus = $7, nothing_to_capture_reason = $8, focus_outcome = $9, abandon_reason = $10, \
         close_digest = $11, close_result = $12 WHERE tenant_id = $1 AND session_id = $2",
    )
    .bind(tenant.as_str())
    .bind(s.session_id.as_uuid())
    .bind(s.status.as_str())
    .bind(s.ended_at)
    .bind(s.last_activity_at)
    .bind(&s.summary)
    .bind(&s.next_focus)
    .bind(&s.nothing_to_capture_reason)
    .bind(s.focus_outcome.map(FocusOutcome::as_str))
    .bind(&s.abandon_reason)
    .bind(digest)
    .bind(result)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(())
}

/// Artifacts of the project created during the session that belong to no ledger:
/// a measure, never a gate.
async fn unattributed(
    conn: &mut PgConnection,
    tenant: &TenantId,
    s: &Session,
) -> Result<Unattributed, StoreError> {
    let rows = sqlx::query(
        "SELECT artifact_id, count(*) OVER () AS n FROM artifacts \
         WHERE tenant_id = $1 AND project = $2 AND session_id IS NULL \
         AND created_at >= $3 AND created_at <= $4 ORDER BY created_at, artifact_id LIMIT 20",
    )
    .bind(tenant.as_str())
    .bind(s.project.as_str())
    .bind(s.opened_at)
    .bind(s.ended_at.unwrap_or_else(now_micros))
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    let count = match rows.first() {
        Some(r) => r.try_get("n").map_err(db)?,
        None => 0,
    };
    let ids = rows
        .iter()
        .map(|r| r.try_get("artifact_id").map(ArtifactId::from_uuid))
        .collect::<Result<_, _>>()
        .map_err(db)?;
    Ok(Unattributed { count, ids })
}

pub(crate) async fn abandon(
    store: &PgStore,
    caller: &Caller,
    req: AbandonRequest,
) -> Result<Value, StoreError> {
    const TOOL: &str = "brain_session_abandon";
    let tenant = &caller.tenant;
    let mut tx = store.pool.begin().await.map_err(db)?;
    let loaded = load_session(&mut tx, tenant, req.session_id, true).await?;
    let project = loaded.as_ref().map(|l| l.0.project.clone());
    let draft = |outcome: Result<(), &DomainError>| {
        ledger::draft(
            TOOL,
            project.as_ref(),
            Some(req.session_id),
            &req.digest,
            outcome,
        )
    };
    let (mut session, close_record): (Session, _) =
        match rules::check_session(loaded.as_ref().map(|l| &l.0), &req.expected_client_key) {
            Ok(s) => (s.clone(), loaded.as_ref().and_then(|l| l.1.clone())),
            Err(e) => return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await,
        };
    match rules::check_open_or_replay(&session, close_record.as_ref(), &req.digest) {
        Ok(Some(stored)) => return Ok(as_replay(stored, None)),
        Ok(None) => {}
        Err(e) => return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await,
    }
    if let Err(e) = rules::check_abandon(&req.reason, req.confirm, req.dry_run) {
        return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await;
    }
    let now = now_micros();
    session.status = SessionStatus::Abandoned;
    session.ended_at = Some(now);
    session.last_activity_at = now;
    session.abandon_reason = Some(req.reason.clone());
    let result = AbandonResult {
        session: session.clone(),
        replayed: false,
        dry_run: req.dry_run,
        would: req.dry_run.then_some("abandoned"),
    };
    let value = serde_json::to_value(result).map_err(StoreError::backend)?;
    if req.dry_run {
        return Ok(value);
    }
    ledger::append(&mut tx, caller, draft(Ok(()))).await?;
    store_close(&mut tx, tenant, &session, &req.digest, &value).await?;
    tx.commit().await.map_err(db)?;
    Ok(value)
}
