//! Deleting a project or a whole tenant, for every [`Scope`]d store.

use async_trait::async_trait;
use serde_json::json;

use super::Scope;
use super::SqlTx;
use crate::error::StoreError;
use crate::ids::{ProjectKey, TenantId};
use crate::model::Caller;
use crate::store::Lifecycle;

#[async_trait]
impl<S: Scope> Lifecycle for S {
    async fn project_delete(
        &self,
        caller: &Caller,
        project: &ProjectKey,
    ) -> Result<(), StoreError> {
        let digest = crate::digest::request_digest(&json!({"project": project.as_str()}));
        let tx = self.write(&caller.tenant).await?;
        crate::flow::project_delete(tx, caller, project, &digest).await
    }

    async fn tenant_delete(&self, tenant: &TenantId) -> Result<bool, StoreError> {
        let mut tx = self.write(tenant).await?;
        let removed = super::writes::delete_tenant(&mut tx, tenant).await?;
        tx.commit(None).await?;
        Ok(removed)
    }
}
