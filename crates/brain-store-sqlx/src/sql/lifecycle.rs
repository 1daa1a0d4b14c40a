//! Deleting a project or a whole tenant, for every [`Scope`]d store.

use async_trait::async_trait;
use serde_json::json;

use super::Scope;
use super::SqlTx;
use brain_core::error::StoreError;
use brain_core::ids::{ProjectKey, TenantId};
use brain_core::model::Caller;
use brain_core::store::Lifecycle;

#[async_trait]
impl<S: Scope> Lifecycle for crate::SqlStore<S> {
    async fn project_delete(
        &self,
        caller: &Caller,
        project: &ProjectKey,
    ) -> Result<(), StoreError> {
        let digest = brain_core::digest::request_digest(&json!({"project": project.as_str()}));
        let tx = self.write_tx(&caller.tenant).await?;
        brain_core::flow::project_delete(super::SqlWrite(tx), caller, project, &digest).await
    }

    async fn tenant_delete(&self, tenant: &TenantId) -> Result<bool, StoreError> {
        let mut tx = self.write_tx(tenant).await?;
        let removed = super::writes::delete_tenant(&mut tx, tenant).await?;
        tx.commit(None).await?;
        Ok(removed)
    }
}
