//! A SQLite write transaction as `brain_core::flow` needs it: the SQL of
//! every `CloseTx` operation. `brain_core::writes` opens it and runs the flows.

use async_trait::async_trait;
use brain_core::error::StoreError;
use brain_core::flow::{CloseTx, FocusWrite};
use brain_core::ids::{ArtifactId, ProjectKey, SessionId, TenantId};
use brain_core::model::{ArtifactKind, Caller, Focus, FocusOutcome, Session};
use brain_core::receipt::{Receipt, ReceiptDraft};
use brain_core::sql::{BoxRow, Conn, Param, Sql};
use brain_core::store::{BriefingSources, LockedClose, Unattributed};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{Row, SqliteConnection};

use crate::batch::Member;

use crate::rows::micros;
use crate::{db, dialect, ledger};
use brain_core::sql::sessions;

/// A write transaction, as `brain_core::flow` needs it, for the tenant it
/// was opened for. SQLite has no row-level security: each statement filters
/// on `tenant_id`, and every operation refuses a tenant other than this one,
/// so a flow that passed the wrong one fails instead of crossing tenants.
/// `None`: the system scope of the expiry sweeps, which span tenants.
pub struct Tx(pub(crate) Member, pub(crate) Option<TenantId>);

#[async_trait]
impl Conn for Tx {
    fn sql(&self) -> &'static Sql {
        &crate::sql::SQL
    }
    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError> {
        dialect::execute(self.0.conn()?, sql, params).await
    }
    async fn fetch_all(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Vec<BoxRow>, StoreError> {
        dialect::fetch_all(self.0.conn()?, sql, params).await
    }
}

#[async_trait]
impl CloseTx for Tx {
    fn keeps_to(&self, tenant: &TenantId) -> Result<(), StoreError> {
        if self.1.as_ref().is_none_or(|own| own == tenant) {
            Ok(())
        } else {
            Err(StoreError::Backend(
                "a write transaction was asked for another tenant's rows".into(),
            ))
        }
    }

    async fn lock_close(
        &mut self,
        tenant: &TenantId,
        id: SessionId,
    ) -> Result<Option<LockedClose>, StoreError> {
        self.keeps_to(tenant)?;
        // SQLite runs one writer at a time, in process: these are function
        // calls, not round trips, and the write lock is already held.
        let Some((session, close_record)) = sessions::load_session(self, tenant, id, true).await?
        else {
            return Ok(None);
        };
        let target = sessions::load_focus(
            self,
            tenant,
            &session.project,
            session.bound_slot.as_ref(),
            true,
        )
        .await?;
        Ok(Some(LockedClose {
            session,
            close_record,
            target,
        }))
    }

    async fn close_counts(
        &mut self,
        tenant: &TenantId,
        session: &Session,
        until: DateTime<Utc>,
    ) -> Result<(Unattributed, i64), StoreError> {
        self.keeps_to(tenant)?;
        Ok((
            unattributed(self.0.conn()?, tenant, session, until).await?,
            sessions::open_agent_sessions(self, tenant, &session.project).await?,
        ))
    }

    async fn ensure_tenant(&mut self, tenant: &TenantId) -> Result<(), StoreError> {
        self.keeps_to(tenant)?;
        ledger::ensure_tenant(self.0.conn()?, tenant).await
    }

    async fn ensure_project(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
    ) -> Result<(), StoreError> {
        self.keeps_to(tenant)?;
        ledger::ensure_tenant(self.0.conn()?, tenant).await?;
        ledger::ensure_project(self.0.conn()?, tenant, project).await
    }

    async fn open_session(
        &mut self,
        tenant: &TenantId,
        session: &mut Session,
    ) -> Result<Option<Focus>, StoreError> {
        self.keeps_to(tenant)?;
        self.ensure_project(tenant, &session.project).await?;
        let project = session.project.clone();
        session.started_focus_revision = sessions::load_focus(self, tenant, &project, None, false)
            .await?
            .revision;
        let slot = match session.bound_slot.clone() {
            Some(name) => {
                sessions::ensure_slot(self, tenant, &project, &name).await?;
                Some(sessions::load_focus(self, tenant, &project, Some(&name), false).await?)
            }
            None => None,
        };
        sessions::insert_session(self, tenant, session).await?;
        Ok(slot)
    }

    async fn append_receipt(
        &mut self,
        caller: &Caller,
        draft: ReceiptDraft,
        history: Option<FocusWrite<'_>>,
    ) -> Result<Receipt, StoreError> {
        self.keeps_to(&caller.tenant)?;
        let receipt = ledger::append(self.0.conn()?, caller, draft).await?;
        if let Some(w) = history {
            record_focus_history(self.0.conn()?, &caller.tenant, w, receipt.seq).await?;
        }
        Ok(receipt)
    }

    async fn apply_close(
        &mut self,
        tenant: &TenantId,
        session: &Session,
        focus: Option<FocusWrite<'_>>,
        digest: &str,
        result: &Value,
    ) -> Result<(), StoreError> {
        self.keeps_to(tenant)?;
        if let Some(w) = focus {
            write_focus(self.0.conn()?, tenant, w).await?;
        }
        store_close(self.0.conn()?, tenant, session, digest, result).await
    }

    async fn insert_artifact(
        &mut self,
        tenant: &TenantId,
        artifact: &brain_core::model::Artifact,
    ) -> Result<(), StoreError> {
        self.keeps_to(tenant)?;
        crate::artifacts::insert_artifact(self.0.conn()?, tenant, artifact).await
    }

    async fn briefing_sources(
        &mut self,
        tenant: &TenantId,
        session: &Session,
    ) -> Result<BriefingSources, StoreError> {
        self.keeps_to(tenant)?;
        crate::lifecycle::briefing_sources(self.0.conn()?, tenant, session).await
    }

    async fn recall(
        &mut self,
        tenant: &TenantId,
        q: &brain_core::store::RecallQuery,
    ) -> Result<Vec<brain_core::memory::RecallHit>, StoreError> {
        self.keeps_to(tenant)?;
        crate::memory::recall_in(self.0.conn()?, tenant, q).await
    }

    async fn artifact_states(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
        ids: &[ArtifactId],
    ) -> Result<Vec<(ArtifactId, ArtifactKind, bool)>, StoreError> {
        self.keeps_to(tenant)?;
        // At most 50 ids, in-process: one statement each is cheap here.
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let row: Option<(String, bool)> = sqlx::query_as(
                "SELECT kind, acknowledged_at IS NOT NULL FROM artifacts \
                 WHERE tenant_id = ?1 AND project = ?2 AND artifact_id = ?3",
            )
            .bind(tenant.as_str())
            .bind(project.as_str())
            .bind(id.as_uuid())
            .fetch_optional(self.0.conn()?)
            .await
            .map_err(db)?;
            if let Some((kind, ack)) = row
                && let Some(k) = ArtifactKind::parse(&kind)
            {
                out.push((*id, k, ack));
            }
        }
        Ok(out)
    }

    async fn acknowledge(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
        ids: &[ArtifactId],
        note: Option<&str>,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.keeps_to(tenant)?;
        for id in ids {
            sqlx::query(
                "UPDATE artifacts SET acknowledged_at = ?4, ack_note = ?5 \
                 WHERE tenant_id = ?1 AND project = ?2 AND artifact_id = ?3 \
                 AND kind = 'todo' AND acknowledged_at IS NULL",
            )
            .bind(tenant.as_str())
            .bind(project.as_str())
            .bind(id.as_uuid())
            .bind(micros(at))
            .bind(note)
            .execute(self.0.conn()?)
            .await
            .map_err(db)?;
        }
        Ok(())
    }

    async fn commit(self) -> Result<(), StoreError> {
        self.0.commit().await
    }

    async fn finish_read(self) -> Result<(), StoreError> {
        self.0.finish_read().await
    }
}

async fn write_focus(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    w: FocusWrite<'_>,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE focus_bodies SET body = ?4, revision = ?5, updated_at = ?6, updated_by_session = ?7 \
         WHERE tenant_id = ?1 AND project = ?2 AND slot = ?3",
    )
    .bind(tenant.as_str())
    .bind(w.session.project.as_str())
    .bind(ledger::slot_key(w.session.bound_slot.as_ref()))
    .bind(w.body)
    .bind(w.revision)
    .bind(micros(w.at))
    .bind(w.session.session_id.as_uuid())
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(())
}

async fn record_focus_history(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    w: FocusWrite<'_>,
    receipt_seq: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO focus_history (tenant_id, project, slot, revision, body, session_id, receipt_seq, created_at) \
         VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
    )
    .bind(tenant.as_str())
    .bind(w.session.project.as_str())
    .bind(ledger::slot_key(w.session.bound_slot.as_ref()))
    .bind(w.revision)
    .bind(w.body)
    .bind(w.session.session_id.as_uuid())
    .bind(receipt_seq)
    .bind(micros(w.at))
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(())
}

/// Persist the closed session with the digest and result of the call that closed it.
async fn store_close(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    s: &Session,
    digest: &str,
    result: &Value,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE sessions SET status = ?3, ended_at = ?4, last_activity_at = ?5, summary = ?6, \
         next_focus = ?7, nothing_to_capture_reason = ?8, focus_outcome = ?9, abandon_reason = ?10, \
         close_digest = ?11, close_result = ?12 WHERE tenant_id = ?1 AND session_id = ?2",
    )
    .bind(tenant.as_str())
    .bind(s.session_id.as_uuid())
    .bind(s.status.as_str())
    .bind(s.ended_at.map(micros))
    .bind(micros(s.last_activity_at))
    .bind(&s.summary)
    .bind(&s.next_focus)
    .bind(&s.nothing_to_capture_reason)
    .bind(s.focus_outcome.map(FocusOutcome::as_str))
    .bind(&s.abandon_reason)
    .bind(digest)
    .bind(result.to_string())
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(())
}

/// Artifacts of the project created during the session that belong to no ledger:
/// a measure, never a gate.
async fn unattributed(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    s: &Session,
    until: DateTime<Utc>,
) -> Result<Unattributed, StoreError> {
    let rows = sqlx::query(
        "SELECT artifact_id, count(*) OVER () AS n FROM artifacts \
         WHERE tenant_id = ?1 AND project = ?2 AND session_id IS NULL \
         AND created_at >= ?3 AND created_at <= ?4 ORDER BY created_at, artifact_id LIMIT 20",
    )
    .bind(tenant.as_str())
    .bind(s.project.as_str())
    .bind(micros(s.opened_at))
    .bind(micros(until))
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
