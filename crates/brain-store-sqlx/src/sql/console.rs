//! What operators read, for every [`Scope`]d store: the console's projects
//! with their activity, an operator's own elevation targets and mental-model
//! names (SPEC §4 `/brain-admin/`), `/metrics` gauges and readiness.

use async_trait::async_trait;
use chrono::Duration;

use super::{Conn, Finish, Scope};
use brain_core::error::StoreError;
use brain_core::ids::{ProjectKey, TenantId};
use brain_core::model::{Caller, now_micros};
use brain_core::store::{
    OperatorReads, OperatorTargets, ProjectQuery, ProjectSummary, StoreStats, TenantUsage,
};

#[async_trait]
impl<S: Scope> OperatorReads for crate::SqlStore<S> {
    async fn projects(
        &self,
        tenant: &TenantId,
        q: &ProjectQuery<'_>,
    ) -> Result<Vec<ProjectSummary>, StoreError> {
        let idle_before = now_micros() - Duration::seconds(self.idle_secs());
        let mut c = self.tenant_scope(tenant).await?;
        let params = [
            tenant.into(),
            q.search.into(),
            idle_before.into(),
            q.limit.into(),
            ProjectKey::TRACERS.into(),
            ProjectKey::RUNTIME.into(),
            q.prefix.into(),
            q.after.into(),
        ];
        let found = c.fetch_all(c.sql().projects, &params).await?;
        c.finish().await?;
        let mut out = Vec::with_capacity(found.len());
        for r in found {
            let row = (
                r.text("project")?,
                r.int("base_revision")?,
                r.int("slots")?,
                r.int("open_sessions")?,
                r.int("idle_sessions")?,
                r.opt_int("last_active_micros")?,
            );
            out.extend(ProjectSummary::from_row(row));
        }
        Ok(out)
    }

    async fn operator_targets(&self, caller: &Caller) -> Result<OperatorTargets, StoreError> {
        let mut c = self.tenant_scope(&caller.tenant).await?;
        let params = [(&caller.tenant).into(), (&caller.credential_id).into()];
        let connections = c.fetch_all(c.sql().operator_connections, &params).await?;
        let sessions = c.fetch_all(c.sql().operator_sessions, &params).await?;
        c.finish().await?;
        let connections = connections
            .iter()
            .map(|r| r.text("connection_id"))
            .collect::<Result<_, _>>()?;
        let sessions = sessions
            .iter()
            .map(|r| Ok((r.uuid("session_id")?, r.text("project")?)))
            .collect::<Result<_, StoreError>>()?;
        Ok(OperatorTargets::from_rows(connections, sessions))
    }

    async fn mental_model_names(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
    ) -> Result<Vec<String>, StoreError> {
        let mut c = self.tenant_scope(tenant).await?;
        let params = [tenant.into(), project.into()];
        let found = c.fetch_all(c.sql().mental_model_names, &params).await?;
        c.finish().await?;
        found.iter().map(|r| r.text("name")).collect()
    }

    /// One statement on a pooled connection, in no scope: it reads nothing.
    async fn ping(&self) -> Result<(), StoreError> {
        let mut c = self.pooled().await?;
        c.fetch_one(c.sql().ping, &[]).await?;
        Ok(())
    }

    /// System scope: the gauges count across tenants.
    async fn stats(&self) -> Result<StoreStats, StoreError> {
        let mut c = self.system_scope().await?;
        let row = c.fetch_one(c.sql().gauges, &[]).await?;
        c.finish().await?;
        let (pool_size, pool_idle) = self.pool_gauges();
        Ok(StoreStats {
            open_sessions: row.int("open_sessions")?,
            open_connections: row.int("open_connections")?,
            pool_size,
            pool_idle,
            focus_memory: self.focus_cache().map(|c| c.stats()),
            tenants_near_quota: row.int("tenants_near_quota")?,
            largest_usage_bytes: row.int("largest_usage")?,
            quota_bytes: row.int("quota_bytes")?,
        })
    }

    async fn tenant_usage(&self, tenant: &TenantId) -> Result<TenantUsage, StoreError> {
        let mut c = self.tenant_scope(tenant).await?;
        let row = c.fetch_one(c.sql().tenant_usage, &[tenant.into()]).await?;
        c.finish().await?;
        Ok(TenantUsage {
            bytes: row.int("bytes")?,
            quota_bytes: row.int("quota_bytes")?,
        })
    }

    async fn set_tenant_quota(&self, bytes: i64) -> Result<(), StoreError> {
        let mut c = self.system_scope().await?;
        c.execute(c.sql().set_tenant_quota, &[bytes.max(0).into()])
            .await?;
        c.finish().await
    }
}
