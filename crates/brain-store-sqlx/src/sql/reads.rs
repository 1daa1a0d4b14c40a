//! The tools' and audits' reads, for every [`Scope`]d store: each one
//! statement or two in the tenant's read scope.

use async_trait::async_trait;

use super::sessions::{ledger_size, load_document, load_focus, load_session, slot_key};
use super::{Conn, Finish, Param, Scope, rows};
use brain_core::error::{DomainError, StoreError};
use brain_core::focus_cache::{FocusWithSlots, Look, Moment, Ticket};
use brain_core::ids::{ArtifactId, ClientKey, ProjectKey, SessionId, SlotName, TenantId};
use brain_core::memory::RecallHit;
use brain_core::memory::{Document, DocumentKind, HistoryEntry};
use brain_core::model::{Artifact, Focus, Revision, now_micros};
use brain_core::receipt::Receipt;
use brain_core::store::{
    FocusResource, Reads, RecallQuery, ReceiptQuery, SessionDetail, SessionListQuery,
    focus_and_slots,
};
use chrono::{DateTime, Utc};

#[async_trait]
impl<S: Scope> Reads for crate::SqlStore<S> {
    async fn focus_get(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
        slot: Option<&SlotName>,
    ) -> Result<Focus, StoreError> {
        let ticket = match self.focus_cache() {
            Some(cache) => match cache.one(tenant, project, slot).await {
                Look::Hit(focus) => return Ok(focus),
                Look::Miss(ticket) => ticket,
            },
            None => None,
        };
        // Marked on a connection of its own, before the read's transaction:
        // the mark's row locks last only for its own statement.
        let ticket = match ticket {
            Some(ticket) => {
                let secs = self.settings().focus_watch_secs;
                watched(&mut self.pooled().await?, tenant, project, secs, ticket).await?
            }
            None => None,
        };
        let mut c = self.tenant_scope(tenant).await?;
        let focus = load_focus(&mut c, tenant, project, slot, false).await?;
        c.finish().await?;
        if let (Some(cache), Some(ticket)) = (self.focus_cache(), ticket) {
            cache.keep_one(ticket, tenant, project, slot, &focus);
        }
        Ok(focus)
    }

    async fn session_get(
        &self,
        tenant: &TenantId,
        session_id: SessionId,
    ) -> Result<SessionDetail, StoreError> {
        let mut c = self.tenant_scope(tenant).await?;
        let (session, _) = load_session(&mut c, tenant, session_id, false)
            .await?
            .ok_or_else(DomainError::session_not_found)?;
        let ledger_size = ledger_size(&mut c, tenant, session_id).await?;
        c.finish().await?;
        Ok(SessionDetail {
            idle: session.is_idle(now_micros(), self.idle_secs()),
            session,
            ledger_size,
        })
    }

    async fn receipts(&self, tenant: &TenantId) -> Result<Vec<Receipt>, StoreError> {
        let mut c = self.tenant_scope(tenant).await?;
        let found = c.fetch_all(c.sql().receipts_all, &[tenant.into()]).await?;
        c.finish().await?;
        found.iter().map(|r| rows::receipt(r.as_ref())).collect()
    }

    async fn session_ledger(
        &self,
        tenant: &TenantId,
        session_id: SessionId,
        limit: i64,
    ) -> Result<Vec<Artifact>, StoreError> {
        let mut c = self.tenant_scope(tenant).await?;
        let params = [tenant.into(), session_id.into(), limit.into()];
        let found = c.fetch_all(c.sql().session_ledger, &params).await?;
        c.finish().await?;
        found.iter().map(|r| rows::artifact(r.as_ref())).collect()
    }

    async fn document_get(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
        kind: DocumentKind,
        name: &str,
    ) -> Result<Document, StoreError> {
        let mut c = self.tenant_scope(tenant).await?;
        let doc = load_document(&mut c, tenant, project, kind, name, false).await?;
        c.finish().await?;
        Ok(doc)
    }

    async fn focus_history(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
        slot: Option<&SlotName>,
        before: Option<Revision>,
        limit: i64,
    ) -> Result<Vec<HistoryEntry>, StoreError> {
        let mut c = self.tenant_scope(tenant).await?;
        let params = [
            tenant.into(),
            project.into(),
            slot_key(slot).into(),
            before.unwrap_or(i64::MAX).into(),
            (limit + 1).into(),
        ];
        let found = c.fetch_all(c.sql().focus_history, &params).await?;
        c.finish().await?;
        found
            .iter()
            .map(|r| {
                Ok(HistoryEntry {
                    revision: r.int("revision")?,
                    body: r.text("body")?,
                    session_id: SessionId::from_uuid(r.uuid("session_id")?),
                    receipt_seq: r.int("receipt_seq")?,
                    created_at: r.time("created_at")?,
                })
            })
            .collect()
    }

    async fn session_list(
        &self,
        tenant: &TenantId,
        q: &SessionListQuery,
    ) -> Result<Vec<SessionDetail>, StoreError> {
        let mut c = self.tenant_scope(tenant).await?;
        let mut params = session_window_params(tenant, q);
        params.extend::<[Param<'_>; 5]>([
            q.limit.into(),
            q.slot.as_ref().map(SlotName::as_str).into(),
            q.client_key.as_ref().map(ClientKey::as_str).into(),
            q.from.map(|a| a.0).into(),
            q.from.map(|a| a.1.as_uuid()).unwrap_or_default().into(),
        ]);
        let sql = match q.filtered() {
            true => c.sql().session_list_window,
            false => c.sql().session_list,
        };
        let found = c.fetch_all(sql, &params).await?;
        c.finish().await?;
        let now = now_micros();
        found
            .iter()
            .map(|r| {
                let (session, _) = rows::session(r.as_ref())?;
                Ok(SessionDetail {
                    idle: session.is_idle(now, self.idle_secs()),
                    session,
                    ledger_size: r.int("ledger_size")?,
                })
            })
            .collect()
    }

    async fn session_list_window_end(
        &self,
        tenant: &TenantId,
        q: &SessionListQuery,
    ) -> Result<Option<(DateTime<Utc>, SessionId)>, StoreError> {
        let mut c = self.tenant_scope(tenant).await?;
        let params = session_window_params(tenant, q);
        let found = c
            .fetch_optional(c.sql().session_list_window_end, &params)
            .await?;
        c.finish().await?;
        found
            .map(|r| {
                Ok((
                    r.time("opened_at")?,
                    SessionId::from_uuid(r.uuid("session_id")?),
                ))
            })
            .transpose()
    }

    async fn receipts_page(
        &self,
        tenant: &TenantId,
        q: &ReceiptQuery,
    ) -> Result<Vec<Receipt>, StoreError> {
        let mut c = self.tenant_scope(tenant).await?;
        let sql = match q.before_seq {
            Some(_) => c.sql().receipts_page_newest_first,
            None => c.sql().receipts_page,
        };
        // Both texts take their upper bound, exclusive, as the sixth parameter.
        let below = match (q.before_seq, q.until_seq.map(|u| u.saturating_add(1))) {
            (Some(b), Some(u)) => Some(b.min(u)),
            (b, u) => b.or(u),
        };
        let params: [Param; 6] = [
            tenant.into(),
            q.after_seq.into(),
            q.project.as_ref().into(),
            q.session_id.into(),
            q.limit.into(),
            below.into(),
        ];
        let found = c.fetch_all(sql, &params).await?;
        c.finish().await?;
        found.iter().map(|r| rows::receipt(r.as_ref())).collect()
    }

    async fn focus_resources(
        &self,
        tenant: &TenantId,
        after: Option<(&ProjectKey, Option<&SlotName>)>,
        limit: i64,
    ) -> Result<Vec<FocusResource>, StoreError> {
        let (p, s) = after.map_or(("", ""), |(p, s)| (p.as_str(), slot_key(s)));
        let mut c = self.tenant_scope(tenant).await?;
        let params = [
            tenant.into(),
            ProjectKey::TRACERS.into(),
            ProjectKey::RUNTIME.into(),
            p.into(),
            s.into(),
            limit.into(),
        ];
        let found = c.fetch_all(c.sql().focus_resources, &params).await?;
        c.finish().await?;
        let mut out = Vec::with_capacity(found.len());
        for r in found {
            let row = (r.text("project")?, r.text("slot")?, r.int("revision")?);
            out.extend(FocusResource::from_row(row));
        }
        Ok(out)
    }

    async fn focus_exists(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
        slot: Option<&SlotName>,
    ) -> Result<bool, StoreError> {
        let mut c = self.tenant_scope(tenant).await?;
        let params = [tenant.into(), project.into(), slot_key(slot).into()];
        let found = c.fetch_optional(c.sql().focus_exists, &params).await?;
        c.finish().await?;
        Ok(found.is_some())
    }

    async fn tenant_exists(&self, tenant: &TenantId) -> Result<bool, StoreError> {
        let mut c = self.tenant_scope(tenant).await?;
        let found = c
            .fetch_optional(c.sql().tenant_get, &[tenant.into()])
            .await?;
        c.finish().await?;
        Ok(found.is_some())
    }

    async fn ledger_tip(&self, tenant: &TenantId) -> Result<(i64, String), StoreError> {
        let mut c = self.tenant_scope(tenant).await?;
        let tip = c
            .fetch_optional(c.sql().ledger_tip, &[tenant.into()])
            .await?;
        c.finish().await?;
        match tip {
            Some(r) => Ok((r.int("seq")?, r.text("hash")?)),
            None => Ok((0, brain_core::receipt::GENESIS_HASH.to_owned())),
        }
    }

    async fn recall(
        &self,
        tenant: &TenantId,
        q: &RecallQuery,
    ) -> Result<Vec<RecallHit>, StoreError> {
        let mut c = self.tenant_scope(tenant).await?;
        let hits = super::recall::recall(&mut c, tenant, q).await?;
        c.finish().await?;
        Ok(hits)
    }

    async fn recall_window_end(
        &self,
        tenant: &TenantId,
        q: &RecallQuery,
    ) -> Result<Option<(DateTime<Utc>, ArtifactId)>, StoreError> {
        let mut c = self.tenant_scope(tenant).await?;
        let end = super::recall::window_end(&mut c, tenant, q).await?;
        c.finish().await?;
        Ok(end)
    }

    /// One statement on a pooled connection outside any transaction: the
    /// statement scopes itself to the tenant (PostgreSQL's function of
    /// migration 0008), so the read is one round trip (two when its answer
    /// is to be remembered: the mark first, [`watched`]).
    async fn focus_with_slots(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
    ) -> Result<FocusWithSlots, StoreError> {
        let ticket = match self.focus_cache() {
            Some(cache) => match cache.with_slots(tenant, project).await {
                Look::Hit(found) => return Ok(found),
                Look::Miss(ticket) => ticket,
            },
            None => None,
        };
        let mut c = self.pooled().await?;
        let ticket = match ticket {
            Some(ticket) => {
                let secs = self.settings().focus_watch_secs;
                watched(&mut c, tenant, project, secs, ticket).await?
            }
            None => None,
        };
        let params = [tenant.into(), project.into()];
        let found = c.fetch_all(c.sql().focus_with_slots, &params).await?;
        let found = focus_and_slots(
            found
                .iter()
                .map(|r| Ok((r.text("slot")?, rows::focus(r.as_ref())?))),
        )?;
        if let (Some(cache), Some(ticket)) = (self.focus_cache(), ticket) {
            cache.keep_with_slots(ticket, tenant, project, &found);
        }
        Ok(found)
    }
}

/// The ticket of a read that may be remembered, once the project's focus
/// rows are watched for `secs` (their changes announced to every replica's
/// memory, `focus_watch`), in a statement before the read, outside any
/// transaction (`c` is a pooled connection); none when they could not be
/// marked now (an end holds one), and the read is answered unremembered. One
/// round trip more for a read the memory did not hold. A store that cannot
/// mark keeps nothing.
async fn watched<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    project: &ProjectKey,
    secs: u32,
    ticket: Ticket,
) -> Result<Option<Ticket>, StoreError> {
    let Some(watch) = c.sql().focus_watch else {
        return Ok(None);
    };
    // Counted from before the call: the database's own clock starts the
    // mark's time later than this, so the memory lets go first.
    let asked = Moment::now();
    let params = [tenant.into(), project.into(), i64::from(secs).into()];
    let row = c.fetch_one(watch, &params).await?;
    let Some(ms) = row.opt_int("trusted_ms")? else {
        return Ok(None);
    };
    let trusted = std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    Ok(Some(ticket.trusted_for(asked, trusted)))
}

/// What a session list's window is read by, first in every session-list
/// statement: tenant, project, status, and the cursor's key.
fn session_window_params<'a>(tenant: &'a TenantId, q: &'a SessionListQuery) -> Vec<Param<'a>> {
    vec![
        tenant.into(),
        (&q.project).into(),
        q.status.map(|s| s.as_str()).into(),
        q.after.map(|a| a.0).into(),
        q.after.map(|a| a.1.as_uuid()).unwrap_or_default().into(),
    ]
}
