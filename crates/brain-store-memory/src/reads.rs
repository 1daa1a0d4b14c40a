//! The tools' and audits' reads over the maps, as the SQL stores answer them.

use async_trait::async_trait;

use brain_core::error::{DomainError, StoreError};
use brain_core::ids::{ProjectKey, SessionId, SlotName, TenantId};
use brain_core::memory::{Document, DocumentKind, HistoryEntry, RecallHit};
use brain_core::model::{Artifact, Focus, Revision, now_micros};
use brain_core::receipt::Receipt;
use brain_core::store::{
    FocusResource, LISTING_WINDOW, Reads, RecallQuery, ReceiptQuery, SessionDetail,
    SessionListQuery,
};
use brain_core::writes::Backend;

use crate::MemoryStore;
use crate::tables::focus_key;

fn page<T>(items: impl Iterator<Item = T>, limit: i64) -> Vec<T> {
    items.take(usize::try_from(limit).unwrap_or(0)).collect()
}

#[async_trait]
impl Reads for MemoryStore {
    async fn focus_get(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
        slot: Option<&SlotName>,
    ) -> Result<Focus, StoreError> {
        Ok(self.read(tenant, |t| t.focus_of(project, slot)).await)
    }

    async fn session_get(
        &self,
        tenant: &TenantId,
        session_id: SessionId,
    ) -> Result<SessionDetail, StoreError> {
        let idle_secs = self.idle_secs();
        self.read(tenant, |t| {
            let (session, _) = t
                .sessions
                .get(&session_id)
                .ok_or_else(DomainError::session_not_found)?;
            Ok(SessionDetail {
                idle: session.is_idle(now_micros(), idle_secs),
                session: session.clone(),
                ledger_size: t.ledger_size(session_id),
            })
        })
        .await
    }

    async fn receipts(&self, tenant: &TenantId) -> Result<Vec<Receipt>, StoreError> {
        Ok(self.read(tenant, |t| t.receipts.clone()).await)
    }

    async fn session_ledger(
        &self,
        tenant: &TenantId,
        session_id: SessionId,
        limit: i64,
    ) -> Result<Vec<Artifact>, StoreError> {
        self.read(tenant, |t| {
            let mut held: Vec<&Artifact> = t
                .artifacts
                .iter()
                .filter(|a| a.session_id == Some(session_id))
                .collect();
            held.sort_by_key(|a| (a.created_at, a.artifact_id));
            Ok(page(held.into_iter().cloned(), limit))
        })
        .await
    }

    async fn document_get(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
        kind: DocumentKind,
        name: &str,
    ) -> Result<Document, StoreError> {
        Ok(self.read(tenant, |t| t.document(project, kind, name)).await)
    }

    async fn focus_history(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
        slot: Option<&SlotName>,
        before: Option<Revision>,
        limit: i64,
    ) -> Result<Vec<HistoryEntry>, StoreError> {
        let key = focus_key(project, slot);
        let below = before.unwrap_or(i64::MAX);
        self.read(tenant, |t| {
            let newest_first = t
                .history
                .range((key.clone(), 0)..(key.clone(), below))
                .rev()
                .map(|((_, revision), h)| HistoryEntry {
                    revision: *revision,
                    body: h.body.clone(),
                    session_id: h.session_id,
                    receipt_seq: h.receipt_seq,
                    created_at: h.created_at,
                });
            Ok(page(newest_first, limit + 1))
        })
        .await
    }

    async fn session_list(
        &self,
        tenant: &TenantId,
        q: &SessionListQuery,
    ) -> Result<Vec<SessionDetail>, StoreError> {
        let idle_secs = self.idle_secs();
        self.read(tenant, |t| {
            // As the SQL stores: a filtered page reads at most twice the
            // window (its end was read first and bounds it), an unfiltered one
            // reads on as far as its page needs.
            let cap = match q.filtered() {
                true => 2 * LISTING_WINDOW,
                false => i64::MAX,
            };
            let found = t
                .session_window(q, cap)
                .into_iter()
                .filter(|s| q.slot.is_none() || s.bound_slot == q.slot)
                .filter(|s| q.client_key.as_ref().is_none_or(|k| &s.client_key == k));
            let now = now_micros();
            let details = found.map(|s| SessionDetail {
                idle: s.is_idle(now, idle_secs),
                session: s.clone(),
                ledger_size: t.ledger_size(s.session_id),
            });
            Ok(page(details, q.limit))
        })
        .await
    }

    async fn session_list_window_end(
        &self,
        tenant: &TenantId,
        q: &SessionListQuery,
    ) -> Result<Option<(chrono::DateTime<chrono::Utc>, brain_core::ids::SessionId)>, StoreError>
    {
        Ok(self
            .read(tenant, |t| {
                let window = t.session_window(q, LISTING_WINDOW);
                (window.len() as i64 == LISTING_WINDOW)
                    .then(|| window.last().map(|s| (s.opened_at, s.session_id)))
                    .flatten()
            })
            .await)
    }

    async fn receipts_page(
        &self,
        tenant: &TenantId,
        q: &ReceiptQuery,
    ) -> Result<Vec<Receipt>, StoreError> {
        self.read(tenant, |t| {
            let wanted = |r: &&Receipt| {
                r.seq > q.after_seq
                    && q.before_seq.is_none_or(|b| r.seq < b)
                    && q.until_seq.is_none_or(|u| r.seq <= u)
                    && q.project
                        .as_ref()
                        .is_none_or(|p| r.project.as_deref() == Some(p.as_str()))
                    && q.session_id.is_none_or(|s| r.session_id == Some(s))
            };
            let found = t.receipts.iter().filter(wanted).cloned();
            Ok(match q.before_seq {
                Some(_) => page(found.rev(), q.limit),
                None => page(found, q.limit),
            })
        })
        .await
    }

    async fn focus_resources(
        &self,
        tenant: &TenantId,
        after: Option<(&ProjectKey, Option<&SlotName>)>,
        limit: i64,
    ) -> Result<Vec<FocusResource>, StoreError> {
        let after = after.map(|(p, s)| focus_key(p, s));
        self.read(tenant, |t| {
            let listed = t
                .focus
                .iter()
                .filter(|((p, _), _)| !p.is_reserved())
                .filter(|(k, _)| after.as_ref().is_none_or(|a| *k > a))
                .filter_map(|((p, s), f)| {
                    FocusResource::from_row((p.as_str().to_owned(), s.clone(), f.revision))
                });
            Ok(page(listed, limit))
        })
        .await
    }

    async fn focus_exists(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
        slot: Option<&SlotName>,
    ) -> Result<bool, StoreError> {
        let key = focus_key(project, slot);
        Ok(self.read(tenant, |t| t.focus.contains_key(&key)).await)
    }

    async fn tenant_exists(&self, tenant: &TenantId) -> Result<bool, StoreError> {
        Ok(self.read(tenant, |t| t.provisioned).await)
    }

    async fn ledger_tip(&self, tenant: &TenantId) -> Result<(i64, String), StoreError> {
        Ok(self
            .read(tenant, |t| {
                let (seq, hash) = t.tip();
                (seq, hash.to_owned())
            })
            .await)
    }

    async fn recall(
        &self,
        tenant: &TenantId,
        q: &RecallQuery,
    ) -> Result<Vec<RecallHit>, StoreError> {
        Ok(self.read(tenant, |t| t.recall(q)).await)
    }

    async fn recall_window_end(
        &self,
        tenant: &TenantId,
        q: &RecallQuery,
    ) -> Result<Option<(chrono::DateTime<chrono::Utc>, brain_core::ids::ArtifactId)>, StoreError>
    {
        Ok(self.read(tenant, |t| t.recall_window_end(q)).await)
    }

    async fn focus_with_slots(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
    ) -> Result<(Focus, Vec<(SlotName, Revision)>), StoreError> {
        self.read(tenant, |t| {
            let slots = t
                .focus
                .range((project.clone(), String::new())..)
                .take_while(|((p, _), _)| p == project)
                .filter_map(|((_, s), f)| Some((SlotName::parse(s).ok()?, f.revision)));
            Ok((t.focus_of(project, None), page(slots, 200)))
        })
        .await
    }
}
