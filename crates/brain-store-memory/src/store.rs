//! The rest of `brain_core::store::Store` over the maps (elevations listed,
//! the connection registry, the lifecycle), so the behaviour story every
//! store must pass runs on this one too. What a
//! server keeps for operators and clients beyond the story (shared tokens,
//! export and import, quotas, the console's lists) the memory store does not
//! keep: those calls answer a backend error that says so.

use async_trait::async_trait;
use chrono::Duration;

use brain_core::error::StoreError;
use brain_core::feed::FocusListener;
use brain_core::ids::{ProjectKey, SessionId, TenantId};
use brain_core::model::{Caller, CredentialKind, Role, now_micros};
use brain_core::operators::{Elevation, SharedToken};
use brain_core::store::{
    ConnectionRecord, ConnectionStore, CredentialStore, Lifecycle, OperatorReads, OperatorTargets,
    Portable, ProjectQuery, ProjectSummary, Store, StoreStats, TenantUsage,
};
use brain_core::writes::Backend;

use crate::MemoryStore;
use crate::tables::Tables;

fn not_kept(what: &str) -> StoreError {
    StoreError::Backend(format!("the memory store does not keep {what}"))
}

impl MemoryStore {
    /// `f` over the tenant's committed rows (none: empty tables).
    pub(crate) async fn read<R>(&self, tenant: &TenantId, f: impl FnOnce(&Tables) -> R) -> R {
        let all = self.tenants.lock().await;
        match all.get(tenant) {
            Some(rows) => f(rows),
            None => f(&Tables::default()),
        }
    }
}

#[async_trait]
impl CredentialStore for MemoryStore {
    async fn elevation_list(&self, caller: &Caller) -> Result<Vec<Elevation>, StoreError> {
        let now = now_micros();
        self.read(&caller.tenant, |t| {
            // One on a connection that has closed ended with it.
            let open = |id: &String| t.connections.get(id).is_none_or(|c| !c.closed);
            let live = t.elevations.iter().filter(|(held_by, e)| {
                held_by == &caller.credential_id
                    && e.revoked_at.is_none()
                    && e.expires_at > now
                    && e.mcp_session_id.as_ref().is_none_or(open)
            });
            Ok(live.map(|(_, e)| e.clone()).collect())
        })
        .await
    }
    async fn shared_token_create(
        &self,
        _tenant: &TenantId,
        _name: &str,
    ) -> Result<(SharedToken, String), StoreError> {
        Err(not_kept("shared tokens"))
    }
    async fn shared_token_revoke(
        &self,
        _tenant: &TenantId,
        _name: &str,
    ) -> Result<SharedToken, StoreError> {
        Err(not_kept("shared tokens"))
    }
    async fn shared_token_list(&self, _tenant: &TenantId) -> Result<Vec<SharedToken>, StoreError> {
        Ok(Vec::new())
    }
    async fn shared_token_find(
        &self,
        _token_hash: &str,
    ) -> Result<Option<(TenantId, SharedToken)>, StoreError> {
        Ok(None)
    }
    async fn shared_token_exists(&self) -> Result<bool, StoreError> {
        Ok(false)
    }
}

#[async_trait]
impl ConnectionStore for MemoryStore {
    async fn connection_get(
        &self,
        tenant: &TenantId,
        connection_id: &str,
    ) -> Result<Option<ConnectionRecord>, StoreError> {
        Ok(self
            .read(tenant, |t| {
                t.connections.get(connection_id).map(|c| ConnectionRecord {
                    tenant: tenant.clone(),
                    credential_kind: c.credential_kind,
                    credential_id: c.credential_id.clone(),
                    role: c.role,
                    closed: c.closed,
                    init_params: c.init_params.clone(),
                    tracer_session: Some(c.tracer),
                })
            })
            .await)
    }
    async fn connection_close(
        &self,
        tenant: &TenantId,
        connection_id: &str,
    ) -> Result<(), StoreError> {
        let mut all = self.tenants.lock().await;
        if let Some(c) = all
            .get_mut(tenant)
            .and_then(|t| t.connections.get_mut(connection_id))
        {
            c.closed = true;
        }
        Ok(())
    }
    async fn connection_open_count(
        &self,
        tenant: &TenantId,
        kind: CredentialKind,
        credential_id: &str,
        role: Role,
    ) -> Result<(i64, i64), StoreError> {
        let since = now_micros() - Duration::seconds(self.connection_idle_secs());
        let caller = Caller {
            tenant: tenant.clone(),
            kind,
            credential_id: credential_id.to_owned(),
            subject: String::new(),
            role,
            connection_id: None,
            token_id: None,
            tracer_session: None,
        };
        Ok(self
            .read(tenant, |t| t.open_connections(&caller, since))
            .await)
    }
    async fn connection_expire(&self) -> Result<Vec<(TenantId, String)>, StoreError> {
        Ok(Vec::new())
    }
    async fn session_started_on(
        &self,
        tenant: &TenantId,
        connection_id: &str,
    ) -> Result<Option<SessionId>, StoreError> {
        self.read(tenant, |t| {
            // As the SQL stores: the newer of the connection's start among
            // the tenant's 10,000 newest receipts and what it recorded.
            let started = t.receipts.iter().rev().take(10_000).find(|r| {
                r.connection_id.as_deref() == Some(connection_id)
                    && r.tool == "brain_session_start"
                    && r.outcome == "ok"
            });
            let found = started.and_then(|r| Some((r.session_id?, r.at)));
            let recorded = t.connections.get(connection_id).and_then(|c| c.started);
            Ok(match (found, recorded) {
                (Some(f), Some(r)) => Some(if r.1 > f.1 { r.0 } else { f.0 }),
                (f, r) => f.or(r).map(|(s, _)| s),
            })
        })
        .await
    }
    async fn connection_started(
        &self,
        tenant: &TenantId,
        connection_id: &str,
        session: SessionId,
    ) -> Result<(), StoreError> {
        let mut all = self.tenants.lock().await;
        if let Some(c) = all
            .get_mut(tenant)
            .and_then(|t| t.connections.get_mut(connection_id))
            && !c.closed
        {
            c.started = Some((session, now_micros()));
        }
        Ok(())
    }
    async fn runtime_expire(&self, _max_idle_secs: i64) -> Result<u64, StoreError> {
        Ok(0)
    }
}

#[async_trait]
impl OperatorReads for MemoryStore {
    async fn projects(
        &self,
        _tenant: &TenantId,
        _q: &ProjectQuery<'_>,
    ) -> Result<Vec<ProjectSummary>, StoreError> {
        Err(not_kept("the console's project list"))
    }
    async fn operator_targets(&self, _caller: &Caller) -> Result<OperatorTargets, StoreError> {
        Err(not_kept("the console's targets"))
    }
    async fn mental_model_names(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
    ) -> Result<Vec<String>, StoreError> {
        Ok(self
            .read(tenant, |t| {
                t.mental_models(project).map(|d| d.name.clone()).collect()
            })
            .await)
    }
    async fn ping(&self) -> Result<(), StoreError> {
        Ok(())
    }
    async fn stats(&self) -> Result<StoreStats, StoreError> {
        Ok(StoreStats::default())
    }
    async fn tenant_usage(&self, _tenant: &TenantId) -> Result<TenantUsage, StoreError> {
        Err(not_kept("usage"))
    }
    async fn set_tenant_quota(&self, _bytes: i64) -> Result<(), StoreError> {
        Err(not_kept("quotas"))
    }
}

#[async_trait]
impl Lifecycle for MemoryStore {
    async fn project_delete(
        &self,
        caller: &Caller,
        project: &ProjectKey,
    ) -> Result<(), StoreError> {
        let digest =
            brain_core::digest::request_digest(&serde_json::json!({"project": project.as_str()}));
        let tx = self.write(&caller.tenant).await?;
        brain_core::flow::project_delete(tx, caller, project, &digest).await
    }
    async fn tenant_delete(&self, tenant: &TenantId) -> Result<bool, StoreError> {
        Ok(self.tenants.lock().await.remove(tenant).is_some())
    }
}

#[async_trait]
impl Portable for MemoryStore {
    async fn export_tenant(
        &self,
        _tenant: &TenantId,
        _sink: &mut (dyn FnMut(serde_json::Value) -> Result<(), StoreError> + Send),
    ) -> Result<u64, StoreError> {
        Err(not_kept("export"))
    }
    async fn import_tenant(
        &self,
        _tenant: &TenantId,
        _lines: &mut (dyn Iterator<Item = Result<serde_json::Value, StoreError>> + Send),
    ) -> Result<u64, StoreError> {
        Err(not_kept("import"))
    }
}

#[async_trait]
impl Store for MemoryStore {
    async fn close(&self) {}
    /// Nothing listens in memory: no replica shares it.
    async fn watch_focus(&self, _listener: FocusListener) -> Result<(), StoreError> {
        Ok(())
    }
}
